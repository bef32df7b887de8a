//! The IR section: ops, regions, blocks and values, numbered the way the reader expects (a value's
//! number is its slot in the scope of the nearest isolated region: a region's values follow those
//! of all enclosing regions of the same scope, in block order, arguments before results), with
//! regions of isolated ops in nested sections from version 2 on, use-list orders from version 3,
//! and the properties table they index from version 5.

use foldhash::{HashMap, HashMapExt};

use super::emitter::Emitter;
use super::error::WriteError;
use super::numbering::{
    self, block, op, op_name, operands, region, regions, successors, value, value_run, AttrKey, NativeItem, Plan,
    PropsPlan, Result,
};
use super::version;
use crate::bytecode::reader::MAX_NESTING;
use crate::ir::{Attribute, BlockId, Module, OpId, RegionId, UseListOrder, ValueId};

const UNNUMBERED: u32 = u32::MAX;

pub(super) struct IrWriter<'a> {
    m: &'a Module,
    plan: &'a Plan,
    version: u32,
    /// Each value's number in its isolated scope (set when its region is entered).
    numbers: Vec<u32>,
    use_lists: HashMap<ValueId, Vec<&'a UseListOrder>>,
    /// Serialized properties entries (size-prefixed), deduplicated.
    pub properties: Vec<Vec<u8>>,
    properties_index: HashMap<Vec<u8>, u64>,
    /// The op being written's properties, then its size-prefixed entry: reused from op to op, so
    /// properties already in the table cost no allocation.
    blob: Emitter,
    entry: Emitter,
}

impl<'a> IrWriter<'a> {
    pub fn new(m: &'a Module, plan: &'a Plan, version: u32) -> Result<Self> {
        let mut use_lists: HashMap<ValueId, Vec<&UseListOrder>> = HashMap::new();
        if version >= version::USE_LIST_ORDERING {
            for order in &m.use_list_orders {
                use_lists.entry(order.value).or_default().push(order);
            }
        }
        Ok(Self {
            m,
            plan,
            version,
            numbers: vec![UNNUMBERED; m.values.len()],
            use_lists,
            properties: Vec::new(),
            properties_index: HashMap::new(),
            blob: Emitter::new(),
            entry: Emitter::new(),
        })
    }

    /// The IR section, written into `e`: the top-level ops as one block without arguments.
    pub fn write(&mut self, e: &mut Emitter) -> Result<()> {
        let section = e.begin_section();
        e.varint_with_flag(self.m.top_level.len() as u64, false);
        for &top in &self.m.top_level {
            if op(self.m, top)?.results.len > 0 {
                return Err(WriteError::TopLevelResults(op_name(self.m, top)));
            }
            self.op(e, top, None, 0, 0)?;
        }
        e.end_section(4, section);
        Ok(())
    }

    fn op(&mut self, e: &mut Emitter, id: OpId, parent: Option<RegionId>, next_base: u32, depth: usize) -> Result<()> {
        let m = self.m;
        let o = op(m, id)?;
        let plan = self.plan.ops[id.0 as usize].ok_or_else(|| numbering::malformed("op not planned"))?;
        e.varint(self.plan.op_name_index(o.name)?);
        let mask_at = e.len();
        e.byte(0);
        let mut mask = 0u8;
        e.varint(self.plan.attr_index(AttrKey::Module(o.loc))?);
        if let Some(attrs) = plan.attrs {
            mask |= 0x01;
            e.varint(self.plan.attr_index(attrs)?);
        }
        if self.version >= version::NATIVE_PROPERTIES && self.properties_blob(plan.props)? {
            mask |= 0x40;
            let index = self.intern_properties();
            e.varint(index);
        }
        let results = value_run(m, o.results)?;
        if !results.is_empty() {
            mask |= 0x02;
            e.varint(results.len() as u64);
            for v in results.clone() {
                e.varint(self.plan.type_index(value(m, ValueId(v))?.ty)?);
            }
        }
        let operand_list = operands(m, o)?;
        if !operand_list.is_empty() {
            mask |= 0x04;
            e.varint(operand_list.len() as u64);
            for &v in operand_list {
                match self.numbers.get(v.0 as usize) {
                    Some(&n) if n != UNNUMBERED => e.varint(u64::from(n)),
                    _ => return Err(WriteError::ValueNotVisible(op_name(m, id))),
                }
            }
        }
        let succ = successors(m, o)?;
        if !succ.is_empty() {
            mask |= 0x08;
            e.varint(succ.len() as u64);
            let blocks = match parent {
                Some(r) => &region(m, r)?.blocks[..],
                None => &[],
            };
            for b in succ {
                let index = blocks
                    .iter()
                    .position(|x| x == b)
                    .ok_or_else(|| WriteError::SuccessorOutsideRegion(op_name(m, id)))?;
                e.varint(index as u64);
            }
        }
        if self.use_list_records(e, results.start, results.len())? {
            mask |= 0x20;
        }
        let op_regions = regions(m, o)?;
        if !op_regions.is_empty() {
            mask |= 0x10;
        }
        e.set_byte(mask_at, mask);
        if op_regions.is_empty() {
            return Ok(());
        }
        if depth >= MAX_NESTING {
            return Err(WriteError::TooDeep(MAX_NESTING));
        }
        let isolated = self.plan.isolated[id.0 as usize];
        e.varint_with_flag(op_regions.len() as u64, isolated);
        if isolated && self.version >= version::LAZY_LOADING {
            let section = e.begin_section();
            for &r in op_regions {
                self.region(e, r, 0, depth + 1)?;
            }
            e.end_section(4, section);
        } else {
            let base = if isolated { 0 } else { next_base };
            for &r in op_regions {
                self.region(e, r, base, depth + 1)?;
            }
        }
        Ok(())
    }

    fn region(&mut self, e: &mut Emitter, id: RegionId, base: u32, depth: usize) -> Result<()> {
        let m = self.m;
        let blocks = &region(m, id)?.blocks;
        if blocks.is_empty() {
            e.varint(0);
            return Ok(());
        }
        // Number every value of the region first: later blocks may be referred to before they are
        // written (forward references), and nested regions see all of them.
        let mut next = base;
        for &b in blocks {
            let blk = block(m, b)?;
            for v in value_run(m, blk.arguments)? {
                self.numbers[v as usize] = next;
                next += 1;
            }
            for &o in &blk.ops {
                for v in value_run(m, op(m, o)?.results)? {
                    self.numbers[v as usize] = next;
                    next += 1;
                }
            }
        }
        e.varint(blocks.len() as u64);
        e.varint(u64::from(next - base));
        for &b in blocks {
            self.block(e, b, id, next, depth)?;
        }
        Ok(())
    }

    fn block(&mut self, e: &mut Emitter, id: BlockId, parent: RegionId, next_base: u32, depth: usize) -> Result<()> {
        let m = self.m;
        let blk = block(m, id)?;
        let args = value_run(m, blk.arguments)?;
        e.varint_with_flag(blk.ops.len() as u64, !args.is_empty());
        if !args.is_empty() {
            e.varint(args.len() as u64);
            for v in args.clone() {
                let arg = value(m, ValueId(v))?;
                let ty = self.plan.type_index(arg.ty)?;
                let loc =
                    arg.loc.filter(|&l| !matches!(m.context.attrs().get(l.0 as usize), Some(Attribute::UnknownLoc)));
                if self.version >= version::ELIDE_UNKNOWN_BLOCK_ARG_LOCATION {
                    e.varint_with_flag(ty, loc.is_some());
                    if let Some(loc) = loc {
                        e.varint(self.plan.attr_index(AttrKey::Module(loc))?);
                    }
                } else {
                    e.varint(ty);
                    let loc = match arg.loc {
                        Some(loc) => AttrKey::Module(loc),
                        None => self.plan.unknown_loc.ok_or_else(|| numbering::malformed("no UnknownLoc numbered"))?,
                    };
                    e.varint(self.plan.attr_index(loc)?);
                }
            }
            if self.version >= version::USE_LIST_ORDERING {
                let flag_at = e.len();
                e.byte(0);
                if self.use_list_records(e, args.start, args.len())? {
                    e.set_byte(flag_at, 0x20);
                }
            }
        }
        for &o in &blk.ops {
            self.op(e, o, Some(parent), next_base, depth)?;
        }
        Ok(())
    }

    /// The use-list records of the `len` values from `first`, as the module stores them; whether
    /// there were any.
    #[inline]
    fn use_list_records(&mut self, e: &mut Emitter, first: u32, len: usize) -> Result<bool> {
        if self.use_lists.is_empty() || len == 0 {
            return Ok(false);
        }
        self.write_use_list_records(e, first, len)
    }

    fn write_use_list_records(&mut self, e: &mut Emitter, first: u32, len: usize) -> Result<bool> {
        let mut records: Vec<(u32, &UseListOrder)> = Vec::new();
        for i in 0..len as u32 {
            if let Some(orders) = self.use_lists.get(&ValueId(first + i)) {
                records.extend(orders.iter().map(|&o| (i, o)));
            }
        }
        if records.is_empty() {
            return Ok(false);
        }
        if len > 1 {
            e.varint(records.len() as u64);
        }
        for (index, order) in records {
            if len > 1 {
                e.varint(u64::from(index));
            }
            e.varint_with_flag(order.indices.len() as u64, order.is_pairs);
            for &i in order.indices.iter() {
                e.varint(u64::from(i));
            }
        }
        Ok(true)
    }

    /// Encodes `props` into `self.blob`; whether the op has properties.
    fn properties_blob(&mut self, props: PropsPlan) -> Result<bool> {
        let e = &mut self.blob;
        e.clear();
        match props {
            PropsPlan::None => return Ok(false),
            PropsPlan::Dict(dict) => e.varint(self.plan.attr_index(AttrKey::Module(dict))?),
            PropsPlan::Native(index) => {
                for item in self.plan.native[index as usize].iter() {
                    match item {
                        NativeItem::Required(a) => e.varint(self.plan.attr_index(AttrKey::Module(*a))?),
                        NativeItem::Optional(None) => e.varint(0),
                        NativeItem::Optional(Some(a)) => {
                            e.varint_with_flag(self.plan.attr_index(AttrKey::Module(*a))?, true)
                        }
                        NativeItem::Segments(values) => sparse_array(e, values),
                        NativeItem::Varint(v) => e.varint(*v),
                        NativeItem::Bool(b) => e.byte(u8::from(*b)),
                    }
                }
            }
        }
        Ok(true)
    }

    /// The index of `self.blob`'s entry in the properties table, added if new.
    fn intern_properties(&mut self) -> u64 {
        self.entry.clear();
        self.entry.blob(self.blob.as_bytes());
        if let Some(&index) = self.properties_index.get(self.entry.as_bytes()) {
            return index;
        }
        let index = self.properties.len() as u64;
        self.properties.push(self.entry.as_bytes().to_vec());
        self.properties_index.insert(self.entry.as_bytes().to_vec(), index);
        index
    }
}

/// `writeSparseArray`: dense (`n` values) unless at most half the values are non-zero and the
/// last non-zero index is at most 256, then `(value << indexBits) | index` pairs.
fn sparse_array(e: &mut Emitter, values: &[i32]) {
    let non_zero = values.iter().filter(|&&v| v != 0).count();
    let last = values.iter().rposition(|&v| v != 0).unwrap_or(0);
    if last > 256 || non_zero > values.len() / 2 {
        e.varint_with_flag(values.len() as u64, false);
        for &v in values {
            e.varint(v as u64);
        }
        return;
    }
    e.varint_with_flag(non_zero as u64, true);
    if non_zero == 0 {
        return;
    }
    // ceil(log2(last + 1)): the bits needed to hold `last`.
    let bits = usize::BITS - last.leading_zeros();
    e.varint(u64::from(bits));
    for (index, &v) in values.iter().enumerate().take(last + 1) {
        if v != 0 {
            e.varint(((v as u64) << bits) | index as u64);
        }
    }
}
