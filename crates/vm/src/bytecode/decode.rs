//! Decoding one function's bytecode into instructions with typed operands.
//!
//! The decoder is driven entirely by the opcode table ([`super::isa`]): each instruction's operand
//! fields are read in encoding order, one [`DecodedOperand`] per field, so `operands[i]` belongs to
//! `instruction.operands[i]`. It checks only what it needs to find the next instruction (bounds,
//! known opcodes); whether a register is in range or a branch lands on a block is left to the
//! verifier, which has the function descriptor. That split keeps this layer usable for
//! disassembly of modules a verifier would reject.
//!
//! Byte layout (IREE 3.13's `bytecode_dispatch.c` decoders): little-endian and unaligned, except
//! that the list-shaped fields (branch operand remaps, variadic operand/result lists, call segment
//! sizes) first pad to a 2-byte boundary. The boundary is counted from the function start; function
//! bodies are 8-byte aligned inside `bytecode_data`, so that is the same parity IREE's interpreter
//! sees. Strings are *not* aligned: aligning them makes fixture functions decode to the wrong
//! length (checked by `crates/vm/tests/all/vm_decode.rs`, which needs every body consumed exactly).
//! The `br_table` case count is read unaligned too, as IREE's `VM_DecConstI16` does; it always
//! follows a remap list, which ends on an even offset, so the question never arises in practice.
//!
//! Every read is bounds-checked and every failure is a [`LoadError`] whose offset is the absolute
//! offset within the function's bytecode, so hostile bytecode cannot make the decoder panic.

use super::isa::{
    lookup, ElementType, ImmediateType, Instruction, InstructionKind, Opcode, OpcodeSet, Operand, OperandKind,
    RegisterBank,
};
use crate::LoadError;

/// Bit 15 of a register field: the register is in the ref bank.
pub const REF_REGISTER_BIT: u16 = 0x8000;
/// Bit 14 of a ref register field: last use, the instruction may move the reference.
pub const MOVE_BIT: u16 = 0x4000;
/// Ordinal bits of a ref register field.
pub const REF_ORDINAL_MASK: u16 = 0x3FFF;
/// Ordinal bits of an integer (i32-bank) register field.
pub const INT_ORDINAL_MASK: u16 = 0x7FFF;
/// Bit 31 of a function ordinal: the callee is an import, not an internal function.
pub const IMPORT_ORDINAL_BIT: u32 = 0x8000_0000;
/// Segment size of a `vm.call.variadic` argument that is not a variadic span.
pub const NON_VARIADIC_SEGMENT: u16 = 0xFFFF;

/// One register field, split into the parts the interpreter uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Register {
    /// The field as encoded.
    pub raw: u16,
    /// The bank: the table's bank for fixed fields; for mixed lists (`ElementType::Any`, branch
    /// remaps) bit 15 decides between [`RegisterBank::Ref`] and [`RegisterBank::I32`], since an
    /// i64 in such a list is only its low i32 register and cannot be told apart.
    pub bank: RegisterBank,
    /// Index into the bank's register file (for i64/f64, the even first register of the pair).
    pub ordinal: u16,
    /// The move bit of a ref register; always false for the integer banks.
    pub is_move: bool,
}

impl Register {
    /// A register field whose bank the encoding fixes.
    pub fn with_bank(raw: u16, bank: RegisterBank) -> Register {
        match bank {
            RegisterBank::Ref => Register { raw, bank, ordinal: raw & REF_ORDINAL_MASK, is_move: raw & MOVE_BIT != 0 },
            _ => Register { raw, bank, ordinal: raw & INT_ORDINAL_MASK, is_move: false },
        }
    }

    /// A register field from a mixed list, whose bank is bit 15.
    pub fn from_any(raw: u16) -> Register {
        let bank = if raw & REF_REGISTER_BIT != 0 { RegisterBank::Ref } else { RegisterBank::I32 };
        Register::with_bank(raw, bank)
    }

    /// Whether the value occupies an i32 register pair (i64, f64).
    pub fn is_pair(&self) -> bool {
        matches!(self.bank, RegisterBank::I64 | RegisterBank::F64)
    }
}

/// One (source, destination) pair of a branch's block-argument remap list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RegisterRemap {
    pub source: Register,
    pub destination: Register,
}

/// One `vm.br_table` case: where it goes and what it passes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BranchCase {
    /// Byte offset, from the function start, of the target block's marker.
    pub target: u32,
    pub remaps: Vec<RegisterRemap>,
}

/// The decoded value of one operand field.
#[derive(Debug, Clone, PartialEq)]
pub enum DecodedOperand<'a> {
    Register(Register),
    ImmediateI32(i32),
    ImmediateI64(i64),
    ImmediateF32(f32),
    ImmediateF64(f64),
    /// A u16 constant (the `vm.br_table` case count).
    ConstI16(u16),
    /// A function ordinal; `is_import` is bit 31, `ordinal` the rest.
    FunctionOrdinal {
        ordinal: u32,
        is_import: bool,
    },
    GlobalByteOffset(u32),
    GlobalRefOrdinal(u32),
    TypeId(u32),
    RodataOrdinal(u32),
    /// String bytes as encoded (not checked for UTF-8: the runtime only copies them into messages).
    String(&'a [u8]),
    /// Byte offset, from the function start, of the target block's marker.
    BranchTarget(u32),
    BranchOperands(Vec<RegisterRemap>),
    BranchTableCases(Vec<BranchCase>),
    /// The `segment_sizes` list of `vm.call.variadic[.yieldable]`: one u16 per callee argument,
    /// [`NON_VARIADIC_SEGMENT`] or a span's tuple count. The table types this field as an i32
    /// operand list (that is how isa.json spells it), but its entries are counts, not registers.
    SegmentSizes(Vec<u16>),
    /// A variadic operand or result list.
    Registers(Vec<Register>),
}

/// One instruction: where it starts, what it is, and its operands in encoding order.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedInstruction<'a> {
    /// Offset of the first opcode byte (the prefix, for extension ops) from the function start.
    pub offset: usize,
    /// Encoded size in bytes, padding included; the next instruction starts at `offset + length`.
    pub length: usize,
    pub instruction: &'static Instruction,
    pub operands: Vec<DecodedOperand<'a>>,
}

impl DecodedInstruction<'_> {
    /// The instruction as an [`Opcode`], for matching.
    #[inline]
    pub fn opcode(&self) -> Opcode {
        self.instruction.id
    }

    /// Every branch target the instruction names (`br`, `cond_br`, `br_table`, yieldable calls).
    pub fn branch_targets(&self) -> Vec<u32> {
        let mut targets = Vec::new();
        for operand in &self.operands {
            match operand {
                DecodedOperand::BranchTarget(target) => targets.push(*target),
                DecodedOperand::BranchTableCases(cases) => targets.extend(cases.iter().map(|case| case.target)),
                _ => {}
            }
        }
        targets
    }

    /// Every register field, including those in lists and remaps, in encoding order.
    pub fn registers(&self) -> Vec<Register> {
        let mut registers = Vec::new();
        let remaps = |registers: &mut Vec<Register>, remaps: &[RegisterRemap]| {
            for remap in remaps {
                registers.push(remap.source);
                registers.push(remap.destination);
            }
        };
        for operand in &self.operands {
            match operand {
                DecodedOperand::Register(register) => registers.push(*register),
                DecodedOperand::Registers(list) => registers.extend_from_slice(list),
                DecodedOperand::BranchOperands(list) => remaps(&mut registers, list),
                DecodedOperand::BranchTableCases(cases) => {
                    for case in cases {
                        remaps(&mut registers, &case.remaps);
                    }
                }
                _ => {}
            }
        }
        registers
    }
}

/// `instruction` with the simplest operands its encoding allows (register 0 of each field's bank,
/// zero immediates and ordinals, empty lists, branches to offset 0), for tests that put every
/// instruction of the table through a consumer of decoded instructions.
#[cfg(test)]
pub(crate) fn sample(instruction: &'static Instruction) -> DecodedInstruction<'static> {
    let operand = |field: &Operand| match field.kind {
        OperandKind::Register { bank: RegisterBank::Ref, .. } => {
            DecodedOperand::Register(Register::with_bank(REF_REGISTER_BIT, RegisterBank::Ref))
        }
        OperandKind::Register { bank, .. } => DecodedOperand::Register(Register::with_bank(0, bank)),
        OperandKind::Immediate(ImmediateType::I32) => DecodedOperand::ImmediateI32(0),
        OperandKind::Immediate(ImmediateType::I64) => DecodedOperand::ImmediateI64(0),
        OperandKind::Immediate(ImmediateType::F32) => DecodedOperand::ImmediateF32(0.0),
        OperandKind::Immediate(ImmediateType::F64) => DecodedOperand::ImmediateF64(0.0),
        OperandKind::ConstI16 => DecodedOperand::ConstI16(0),
        OperandKind::FunctionOrdinal => DecodedOperand::FunctionOrdinal { ordinal: 0, is_import: true },
        OperandKind::GlobalByteOffset => DecodedOperand::GlobalByteOffset(0),
        OperandKind::GlobalRefOrdinal => DecodedOperand::GlobalRefOrdinal(0),
        OperandKind::TypeId => DecodedOperand::TypeId(0),
        OperandKind::RodataOrdinal => DecodedOperand::RodataOrdinal(0),
        OperandKind::String => DecodedOperand::String(b"sample"),
        OperandKind::BranchTarget => DecodedOperand::BranchTarget(0),
        OperandKind::BranchOperands => DecodedOperand::BranchOperands(Vec::new()),
        OperandKind::BranchTableCases => DecodedOperand::BranchTableCases(Vec::new()),
        OperandKind::VariadicOperands { .. } if field.name == "segment_sizes" => {
            DecodedOperand::SegmentSizes(Vec::new())
        }
        OperandKind::VariadicOperands { .. } | OperandKind::VariadicResults { .. } => {
            DecodedOperand::Registers(Vec::new())
        }
    };
    DecodedInstruction {
        offset: 8,
        length: 0,
        instruction,
        operands: instruction.operands.iter().map(operand).collect(),
    }
}

/// Decodes a whole function body; fails at the first malformed instruction.
pub fn decode_function(bytecode: &[u8]) -> Result<Vec<DecodedInstruction<'_>>, LoadError> {
    Decoder::new(bytecode).collect()
}

/// Decodes the instruction starting at `offset`.
pub fn decode_at(bytecode: &[u8], offset: usize) -> Result<DecodedInstruction<'_>, LoadError> {
    let mut reader = Reader { bytecode, pc: offset, start: offset, name: "instruction", field: None };
    let opcode = reader.u8("opcode")?;
    let mut instruction = lookup(OpcodeSet::Core, opcode).ok_or_else(|| {
        LoadError::malformed(offset, format!("unknown core opcode 0x{opcode:02X} at offset {offset}"))
    })?;
    if let InstructionKind::Prefix(set) = instruction.kind {
        reader.name = instruction.symbol;
        let extension = reader.u8("extension opcode")?;
        instruction = lookup(set, extension).ok_or_else(|| {
            LoadError::malformed(
                offset + 1,
                format!(
                    "unknown {set:?} opcode 0x{extension:02X} after prefix {} at offset {offset}",
                    instruction.symbol
                ),
            )
        })?;
    }
    reader.name = instruction.name;
    let mut operands = Vec::with_capacity(instruction.operands.len());
    let mut case_count = 0;
    for field in instruction.operands {
        let operand = reader.operand(field, case_count)?;
        if let DecodedOperand::ConstI16(value) = operand {
            case_count = value;
        }
        operands.push(operand);
    }
    Ok(DecodedInstruction { offset, length: reader.pc - offset, instruction, operands })
}

/// Iterator over a function's instructions. After the first error it yields nothing more, since
/// the next instruction's start is unknown.
#[derive(Debug, Clone)]
pub struct Decoder<'a> {
    bytecode: &'a [u8],
    pc: usize,
    failed: bool,
}

impl<'a> Decoder<'a> {
    pub fn new(bytecode: &'a [u8]) -> Decoder<'a> {
        Decoder { bytecode, pc: 0, failed: false }
    }
}

impl<'a> Iterator for Decoder<'a> {
    type Item = Result<DecodedInstruction<'a>, LoadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pc >= self.bytecode.len() {
            return None;
        }
        let result = decode_at(self.bytecode, self.pc);
        match &result {
            Ok(decoded) => self.pc += decoded.length,
            Err(_) => self.failed = true,
        }
        Some(result)
    }
}

/// A bounds-checked cursor over one instruction. `name` (the mnemonic) and `field` (the operand
/// being read, if any) go into every error; the message is only formatted when a read fails, so
/// decoding valid bytecode does not allocate for it.
struct Reader<'a> {
    bytecode: &'a [u8],
    pc: usize,
    start: usize,
    name: &'static str,
    field: Option<&'static Operand>,
}

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize, what: &str) -> Result<&'a [u8], LoadError> {
        let available = self.bytecode.len().saturating_sub(self.pc);
        if available < len {
            let what = match self.field {
                Some(field) => format!("operand `{}` ({:?})", field.name, field.kind),
                None => what.to_owned(),
            };
            return Err(LoadError::truncated(
                self.pc,
                format!(
                    "{} at offset {}: {what} needs {len} bytes at offset {}, the function has {available} left",
                    self.name, self.start, self.pc
                ),
            ));
        }
        let bytes = &self.bytecode[self.pc..self.pc + len];
        self.pc += len;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], LoadError> {
        let mut array = [0; N];
        array.copy_from_slice(self.take(N, what)?);
        Ok(array)
    }

    fn u8(&mut self, what: &str) -> Result<u8, LoadError> {
        Ok(self.array::<1>(what)?[0])
    }

    fn u16(&mut self, what: &str) -> Result<u16, LoadError> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    fn u32(&mut self, what: &str) -> Result<u32, LoadError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64, LoadError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// Pads to a 2-byte boundary (from the function start). The pad byte's value is not checked:
    /// IREE's interpreter skips it without looking.
    fn align2(&mut self, what: &str) -> Result<(), LoadError> {
        if !self.pc.is_multiple_of(2) {
            self.take(1, what)?;
        }
        Ok(())
    }

    /// An aligned u16 count followed by that many u16 entries, checked to be all present before
    /// anything is allocated.
    fn u16_list(&mut self, what: &str) -> Result<Vec<u16>, LoadError> {
        self.align2(what)?;
        let count = usize::from(self.u16(what)?);
        let bytes = self.take(count * 2, what)?;
        Ok(bytes.chunks_exact(2).map(|pair| u16::from_le_bytes([pair[0], pair[1]])).collect())
    }

    fn remaps(&mut self, what: &str) -> Result<Vec<RegisterRemap>, LoadError> {
        self.align2(what)?;
        let count = usize::from(self.u16(what)?);
        let bytes = self.take(count * 4, what)?;
        Ok(bytes
            .chunks_exact(4)
            .map(|pair| RegisterRemap {
                source: Register::from_any(u16::from_le_bytes([pair[0], pair[1]])),
                destination: Register::from_any(u16::from_le_bytes([pair[2], pair[3]])),
            })
            .collect())
    }

    fn operand(&mut self, field: &'static Operand, case_count: u16) -> Result<DecodedOperand<'a>, LoadError> {
        self.field = Some(field);
        let what = "operand";
        Ok(match field.kind {
            OperandKind::Register { bank, .. } => DecodedOperand::Register(Register::with_bank(self.u16(what)?, bank)),
            OperandKind::Immediate(ImmediateType::I32) => DecodedOperand::ImmediateI32(self.u32(what)? as i32),
            OperandKind::Immediate(ImmediateType::F32) => DecodedOperand::ImmediateF32(f32::from_bits(self.u32(what)?)),
            OperandKind::Immediate(ImmediateType::I64) => DecodedOperand::ImmediateI64(self.u64(what)? as i64),
            OperandKind::Immediate(ImmediateType::F64) => DecodedOperand::ImmediateF64(f64::from_bits(self.u64(what)?)),
            OperandKind::ConstI16 => DecodedOperand::ConstI16(self.u16(what)?),
            OperandKind::FunctionOrdinal => {
                let raw = self.u32(what)?;
                DecodedOperand::FunctionOrdinal {
                    ordinal: raw & !IMPORT_ORDINAL_BIT,
                    is_import: raw & IMPORT_ORDINAL_BIT != 0,
                }
            }
            OperandKind::GlobalByteOffset => DecodedOperand::GlobalByteOffset(self.u32(what)?),
            OperandKind::GlobalRefOrdinal => DecodedOperand::GlobalRefOrdinal(self.u32(what)?),
            OperandKind::TypeId => DecodedOperand::TypeId(self.u32(what)?),
            OperandKind::RodataOrdinal => DecodedOperand::RodataOrdinal(self.u32(what)?),
            OperandKind::String => {
                let len = usize::from(self.u16(what)?);
                DecodedOperand::String(self.take(len, what)?)
            }
            OperandKind::BranchTarget => DecodedOperand::BranchTarget(self.u32(what)?),
            OperandKind::BranchOperands => DecodedOperand::BranchOperands(self.remaps(what)?),
            OperandKind::BranchTableCases => {
                let mut cases = Vec::new();
                for _ in 0..case_count {
                    let target = self.u32(what)?;
                    cases.push(BranchCase { target, remaps: self.remaps(what)? });
                }
                DecodedOperand::BranchTableCases(cases)
            }
            OperandKind::VariadicOperands { .. } if field.name == "segment_sizes" => {
                DecodedOperand::SegmentSizes(self.u16_list(what)?)
            }
            OperandKind::VariadicOperands { element, .. } | OperandKind::VariadicResults { element } => {
                let bank = match element {
                    ElementType::Any => None,
                    ElementType::I32 => Some(RegisterBank::I32),
                    ElementType::I64 => Some(RegisterBank::I64),
                    ElementType::F32 => Some(RegisterBank::F32),
                    ElementType::F64 => Some(RegisterBank::F64),
                    ElementType::Ref => Some(RegisterBank::Ref),
                };
                let list = self.u16_list(what)?;
                DecodedOperand::Registers(
                    list.into_iter()
                        .map(|raw| bank.map_or_else(|| Register::from_any(raw), |bank| Register::with_bank(raw, bank)))
                        .collect(),
                )
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bytecode::isa::find_by_name;
    use rtx_host::StatusCode;

    fn opcode(name: &str) -> u8 {
        find_by_name(name).unwrap_or_else(|| panic!("{name} not in table")).opcode
    }

    #[test]
    fn call_layout_from_the_notes() {
        // `vm.call @hal.buffer_view.buffer(%R0) -> %r4` (iree-notes §1.3) at offset 0: the list
        // starts at the odd offset 5, so one pad byte comes before its count.
        let bytes = [0x58, 0x03, 0x00, 0x00, 0x80, 0x00, 0x01, 0x00, 0x00, 0xC0, 0x01, 0x00, 0x04, 0x80];
        let call = decode_at(&bytes, 0).unwrap();
        assert_eq!((call.offset, call.length, call.instruction.name), (0, 14, "vm.call"));
        assert_eq!(call.operands[0], DecodedOperand::FunctionOrdinal { ordinal: 3, is_import: true });
        let moved = Register { raw: 0xC000, bank: RegisterBank::Ref, ordinal: 0, is_move: true };
        let result = Register { raw: 0x8004, bank: RegisterBank::Ref, ordinal: 4, is_move: false };
        assert_eq!(call.operands[1], DecodedOperand::Registers(vec![moved]));
        assert_eq!(call.operands[2], DecodedOperand::Registers(vec![result]));
        assert_eq!(call.registers(), [moved, result]);
        // Behind a Block marker the list starts at an even offset and there is no pad byte.
        let mut shifted = vec![0x79];
        shifted.extend_from_slice(&bytes[..5]);
        shifted.extend_from_slice(&bytes[6..]);
        let decoded = decode_function(&shifted).unwrap();
        assert_eq!(decoded[1].operands, call.operands);
        assert_eq!(decoded[1].length, 13);
    }

    #[test]
    fn immediates_are_little_endian_and_unaligned() {
        let mut bytes = vec![opcode("vm.const.i64")];
        bytes.extend_from_slice(&(-2i64).to_le_bytes());
        bytes.extend_from_slice(&[0x02, 0x00]);
        let decoded = decode_at(&bytes, 0).unwrap();
        assert_eq!(decoded.length, 11);
        assert_eq!(decoded.operands[0], DecodedOperand::ImmediateI64(-2));
        assert_eq!(decoded.operands[1], DecodedOperand::Register(Register::with_bank(2, RegisterBank::I64)));
        assert!(decoded.operands.iter().all(|operand| !matches!(operand, DecodedOperand::Registers(_))));
    }

    #[test]
    fn br_table_cases_follow_the_case_count() {
        // br_table %i0, default ^0(), cases [^0(%i1->%i2)]
        let mut bytes = vec![0x79, opcode("vm.br_table"), 0x00, 0x00];
        bytes.extend_from_slice(&0u32.to_le_bytes()); // default target, ends at 8
        bytes.extend_from_slice(&[0x00, 0x00]); // no default remaps (aligned at 8)
        bytes.extend_from_slice(&[0x01, 0x00]); // one case (unaligned field, here at 10)
        bytes.extend_from_slice(&0u32.to_le_bytes()); // case target, ends at 16
        bytes.extend_from_slice(&[0x01, 0x00, 0x01, 0x00, 0x02, 0x00]);
        let decoded = decode_function(&bytes).unwrap();
        let table = &decoded[1];
        assert_eq!(table.length, bytes.len() - 1);
        assert_eq!(table.branch_targets(), [0, 0]);
        let DecodedOperand::BranchTableCases(cases) = &table.operands[4] else { panic!("{table:?}") };
        assert_eq!(cases[0].remaps[0].destination.ordinal, 2);
    }

    #[test]
    fn errors_name_the_offset_and_the_operand() {
        let error = decode_function(&[0x79, opcode("vm.add.i32"), 0x00, 0x00, 0x01]).unwrap_err();
        assert_eq!((error.offset, error.code), (4, StatusCode::DataLoss));
        assert!(error.message.contains("vm.add.i32") && error.message.contains("`right`"), "{}", error.message);

        let error = decode_function(&[0x79, 0xE0]).unwrap_err();
        assert_eq!(error.offset, 2);
        assert!(error.message.contains("PrefixExtF32"), "{}", error.message);

        let error = decode_function(&[0x79, 0x89]).unwrap_err();
        assert_eq!((error.offset, error.code), (1, StatusCode::InvalidArgument));
        assert!(error.message.contains("0x89"), "{}", error.message);

        let error = decode_function(&[0xE1, 0xFF]).unwrap_err();
        assert_eq!(error.offset, 1);
        assert!(error.message.contains("ExtF64"), "{}", error.message);

        // A string whose length runs past the end.
        let error = decode_function(&[opcode("vm.fail"), 0x00, 0x00, 0x10, 0x00, b'x']).unwrap_err();
        assert!(error.message.contains("vm.fail") && error.message.contains("`message`"), "{}", error.message);
    }

    #[test]
    fn decoder_stops_after_an_error() {
        let mut decoder = Decoder::new(&[0x79, 0x89, 0x79]);
        assert!(matches!(decoder.next(), Some(Ok(_))));
        assert!(matches!(decoder.next(), Some(Err(_))));
        assert!(decoder.next().is_none());
    }
}
