//! A function body: its registers, its kernel table and its results, decoded once at open and
//! verified so that the executor can trust every index in it.
//!
//! Body layout (offsets from the function's start in the functions section): `vbr location`,
//! `vbr #registers`, one `vbr` use count per register, `vbr #kernels`, per kernel `vbr
//! byte offset` (into the kernel list), `vbr #operands`, `vbr stream id`; one `vbr` register per
//! function result; padding to 4 bytes; then the kernel records (see [`KernelRecord`]). Kernel 0
//! is the pseudo kernel standing for the arguments: its result 0 is a pseudo register (one past
//! the last real one) used by every kernel without operands, its other results are the argument
//! registers.

use super::cursor::Cursor;
use super::error::BefError;
use crate::format::{KERNEL_ENTRY_ALIGNMENT, PSEUDO_KERNEL_CODE};
use rtx_kernel::record::{KernelRecord, Words};

/// One row of a function's kernel table.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KernelEntry {
    /// Byte offset of the record in the function's kernel list.
    pub offset: u32,
    /// How many argument registers must become available before the kernel runs.
    pub num_operands: u32,
    /// Kernels of one stream run one after another on one thread.
    pub stream: u32,
    /// Words the record takes (set once verified), so the executor reads it without re-parsing.
    pub words: u32,
}

/// A verified function body.
#[derive(Debug)]
pub(crate) struct FunctionBody {
    /// Offset of the function's location in the locations section.
    pub location: u32,
    /// Uses of each register (arguments of kernels and the function's results).
    pub register_uses: Box<[u32]>,
    pub kernels: Box<[KernelEntry]>,
    /// The register each function result comes from.
    pub results: Box<[u32]>,
    /// Absolute byte offset of the kernel list in the file.
    pub list_start: usize,
    /// For each register, the function results it is (an index into `returned_by`, `u32::MAX`
    /// for none): lets the executor forward results as their registers are set.
    pub returned: Box<[u32]>,
    /// Function result indices, grouped per returned register; see `returned`.
    pub returned_by: Box<[Box<[u32]>]>,
    /// Sync functions only: per kernel, the registers it uses last (cleared after it runs).
    pub retire: Box<[Box<[u32]>]>,
}

/// What a body is checked against.
pub(crate) struct Limits {
    pub kernel_codes: usize,
    pub functions: usize,
    pub attributes_len: usize,
    pub arguments: usize,
    pub results: usize,
    /// Sync functions run their kernels in order: each operand must be defined earlier.
    pub sync: bool,
}

impl FunctionBody {
    /// Decodes and verifies the body at `offset` of the functions section `section` (which
    /// starts at absolute offset `base`).
    pub(crate) fn read(section: &[u8], base: usize, offset: usize, limits: &Limits) -> Result<FunctionBody, BefError> {
        if offset >= section.len() {
            return Err(BefError::malformed(base, format!("function body offset {offset} is outside the section")));
        }
        let mut cursor = Cursor::at(section, base, offset);
        let location = cursor.vbr_u32("function location")?;
        let num_registers = cursor.count("register count")?;
        let register_uses =
            (0..num_registers).map(|_| cursor.vbr_u32("register use count")).collect::<Result<Box<[u32]>, _>>()?;
        let table_offset = cursor.offset();
        let num_kernels = cursor.count("kernel count")?;
        if num_kernels == 0 {
            return Err(BefError::malformed(table_offset, "a function needs at least its pseudo kernel"));
        }
        let kernels = (0..num_kernels)
            .map(|_| {
                Ok(KernelEntry {
                    offset: cursor.vbr_u32("kernel offset")?,
                    num_operands: cursor.vbr_u32("kernel operand count")?,
                    stream: cursor.vbr_u32("kernel stream id")?,
                    words: 0,
                })
            })
            .collect::<Result<Box<[KernelEntry]>, BefError>>()?;
        let results_offset = cursor.offset();
        let results =
            (0..limits.results).map(|_| cursor.vbr_u32("result register")).collect::<Result<Box<[u32]>, _>>()?;
        let list_pos = cursor.pos().next_multiple_of(KERNEL_ENTRY_ALIGNMENT);
        if list_pos > section.len() {
            return Err(cursor.error("the kernel list starts past the end of the section"));
        }
        let (returned, returned_by) = group_results(&results, num_registers, results_offset)?;
        let mut body = FunctionBody {
            location,
            register_uses,
            kernels,
            results,
            list_start: base + list_pos,
            returned,
            returned_by,
            retire: Box::new([]),
        };
        let records = body.verify(&section[list_pos..], limits)?;
        body.retire = if limits.sync { body.retirements(&records) } else { Box::new([]) };
        for (entry, record) in body.kernels.iter_mut().zip(&records) {
            entry.words = record.len_words() as u32;
        }
        Ok(body)
    }

    pub(crate) fn num_registers(&self) -> usize {
        self.register_uses.len()
    }

    /// The record of kernel `k` in `list` (the bytes from `list_start` on).
    #[inline]
    pub(crate) fn record<'a>(&self, list: &'a [u8], k: usize) -> KernelRecord<'a> {
        let entry = self.kernels[k];
        let start = entry.offset as usize;
        KernelRecord::verified(Words::new(&list[start..start + entry.words as usize * 4]))
    }

    /// Checks every record and the dataflow graph they describe: indices in range, each
    /// register defined once, use counts and ready counts matching the records, no cycle.
    fn verify<'a>(&self, list: &'a [u8], limits: &Limits) -> Result<Vec<KernelRecord<'a>>, BefError> {
        let at = |k: usize| self.list_start + self.kernels[k].offset as usize;
        let bad = |k: usize, what: String| BefError::malformed(at(k), format!("kernel {k}: {what}"));
        let num_registers = self.num_registers();
        let pseudo_register = num_registers as u32;
        let mut records = Vec::with_capacity(self.kernels.len());
        for (k, entry) in self.kernels.iter().enumerate() {
            let offset = entry.offset as usize;
            if !offset.is_multiple_of(4) || offset >= list.len() {
                return Err(bad(k, format!("record offset {offset} is unaligned or outside the kernel list")));
            }
            let record = KernelRecord::parse(Words::new(&list[offset..]))
                .ok_or_else(|| bad(k, "the record runs past the end of the section".to_owned()))?;
            let is_pseudo = record.code() == PSEUDO_KERNEL_CODE;
            if is_pseudo != (k == 0) {
                return Err(bad(k, "the pseudo kernel must be kernel 0, and only it".to_owned()));
            }
            if k == 0 {
                if record.num_arguments() + record.num_attributes() + record.num_functions() != 0
                    || record.num_results() != limits.arguments + 1
                    || record.results().get(0) != pseudo_register
                {
                    return Err(bad(
                        0,
                        format!(
                        "the pseudo kernel must have no operands and {} results, the first register {pseudo_register}",
                        limits.arguments + 1
                    ),
                    ));
                }
            } else {
                if record.code() as usize >= limits.kernel_codes {
                    return Err(bad(k, format!("kernel code {} is not in the kernel table", record.code())));
                }
                if record.num_arguments() != entry.num_operands as usize {
                    return Err(bad(
                        k,
                        format!(
                            "{} argument registers but {} operands in the kernel table",
                            record.num_arguments(),
                            entry.num_operands
                        ),
                    ));
                }
            }
            if let Some(r) = record.arguments().iter().find(|&r| r >= pseudo_register) {
                return Err(bad(k, format!("argument register {r} of {num_registers}")));
            }
            if let Some(a) = record.attributes().iter().find(|&a| a as usize >= limits.attributes_len) {
                return Err(bad(k, format!("attribute offset {a} is outside the attributes section")));
            }
            if let Some(f) = record.functions().iter().find(|&f| f as usize >= limits.functions) {
                return Err(bad(k, format!("function index {f} of {}", limits.functions)));
            }
            if let Some(u) = record.users().iter().find(|&u| u == 0 || u as usize >= self.kernels.len()) {
                return Err(bad(k, format!("user kernel {u} is not one of kernels 1..{}", self.kernels.len())));
            }
            records.push(record);
        }
        self.verify_graph(&records, &bad)?;
        if limits.sync {
            self.verify_order(&records, &bad)?;
        }
        Ok(records)
    }

    /// Sync functions run kernels in file order: every operand must come from an earlier one.
    fn verify_order(
        &self,
        records: &[KernelRecord<'_>],
        bad: &dyn Fn(usize, String) -> BefError,
    ) -> Result<(), BefError> {
        let mut defined = vec![false; self.num_registers() + 1];
        for (k, record) in records.iter().enumerate() {
            if let Some(r) = record.arguments().iter().find(|&r| !defined[r as usize]) {
                return Err(bad(k, format!("register {r} is used before the kernel defining it (sync function)")));
            }
            for r in record.results().iter() {
                defined[r as usize] = true;
            }
        }
        Ok(())
    }

    /// For each kernel, the registers whose last use it is (never the returned ones).
    fn retirements(&self, records: &[KernelRecord<'_>]) -> Box<[Box<[u32]>]> {
        let mut last = vec![usize::MAX; self.num_registers()];
        for (k, record) in records.iter().enumerate() {
            for r in record.arguments().iter() {
                last[r as usize] = k;
            }
        }
        let mut retire = vec![Vec::new(); records.len()];
        for (r, &k) in last.iter().enumerate() {
            if k != usize::MAX && self.returned[r] == u32::MAX {
                retire[k].push(r as u32);
            }
        }
        retire.into_iter().map(Vec::into_boxed_slice).collect()
    }

    fn verify_graph(
        &self,
        records: &[KernelRecord<'_>],
        bad: &dyn Fn(usize, String) -> BefError,
    ) -> Result<(), BefError> {
        let num_registers = self.num_registers();
        // The kernel defining each register (the pseudo register included).
        let mut definer = vec![u32::MAX; num_registers + 1];
        for (k, record) in records.iter().enumerate() {
            for r in record.results().iter() {
                let slot = definer
                    .get_mut(r as usize)
                    .filter(|_| r as usize != num_registers || k == 0)
                    .ok_or_else(|| bad(k, format!("result register {r} of {num_registers}")))?;
                if *slot != u32::MAX {
                    return Err(bad(k, format!("register {r} is already defined by kernel {slot}")));
                }
                *slot = k as u32;
            }
        }
        // Uses counted from the records must be what the register table says.
        let mut uses = vec![0u32; num_registers];
        for r in records.iter().flat_map(|record| record.arguments().iter()).chain(self.results.iter().copied()) {
            uses[r as usize] += 1;
        }
        for (r, (&declared, &counted)) in self.register_uses.iter().zip(&uses).enumerate() {
            if declared != counted {
                return Err(BefError::malformed(
                    self.list_start,
                    format!("register {r} declares {declared} uses but the kernels and results use it {counted} times"),
                ));
            }
            if counted > 0 && definer[r] == u32::MAX {
                return Err(BefError::malformed(self.list_start, format!("register {r} is used but never defined")));
            }
        }
        // Each kernel must be listed as a user exactly once per argument (once by the pseudo
        // register when it has none): those lists drive its ready count.
        let mut listed: Vec<Vec<u32>> = vec![Vec::new(); records.len()];
        for record in records {
            let users = record.users();
            let mut next = 0;
            for (i, r) in record.results().iter().enumerate() {
                for u in users.slice(next, record.num_users(i)).iter() {
                    listed[u as usize].push(r);
                }
                next += record.num_users(i);
            }
        }
        for (k, record) in records.iter().enumerate().skip(1) {
            let mut expected: Vec<u32> = record.arguments().iter().collect();
            if expected.is_empty() {
                expected.push(num_registers as u32);
            }
            expected.sort_unstable();
            listed[k].sort_unstable();
            if expected != listed[k] {
                return Err(bad(
                    k,
                    format!("it is listed as a user of registers {:?} but its operands are {:?}", listed[k], expected),
                ));
            }
        }
        // Running the graph once in dependency order must reach every kernel: no cycle.
        let mut pending: Vec<usize> = records.iter().map(|r| r.num_arguments().max(1)).collect();
        let mut ready = vec![0usize];
        let mut reached = 0;
        while let Some(k) = ready.pop() {
            reached += 1;
            for u in records[k].users().iter() {
                pending[u as usize] -= 1;
                if pending[u as usize] == 0 {
                    ready.push(u as usize);
                }
            }
        }
        if reached != records.len() {
            return Err(BefError::malformed(
                self.list_start,
                format!("{} of {} kernels wait on a cycle and could never run", records.len() - reached, records.len()),
            ));
        }
        Ok(())
    }
}

/// For each register, which function results it provides.
#[allow(clippy::type_complexity)]
fn group_results(
    results: &[u32],
    num_registers: usize,
    at: usize,
) -> Result<(Box<[u32]>, Box<[Box<[u32]>]>), BefError> {
    let mut returned = vec![u32::MAX; num_registers];
    let mut groups: Vec<Vec<u32>> = Vec::new();
    for (i, &r) in results.iter().enumerate() {
        let slot = returned
            .get_mut(r as usize)
            .ok_or_else(|| BefError::malformed(at, format!("result {i} names register {r} of {num_registers}")))?;
        if *slot == u32::MAX {
            *slot = groups.len() as u32;
            groups.push(Vec::new());
        }
        groups[*slot as usize].push(i as u32);
    }
    Ok((returned.into_boxed_slice(), groups.into_iter().map(Vec::into_boxed_slice).collect()))
}
