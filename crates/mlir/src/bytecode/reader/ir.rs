//! The IR section: operations, regions and blocks, value numbering and forward references,
//! use-list orders, and isolated regions in nested (lazily loadable) sections.
//!
//! Read lazily, an op whose isolated regions sit in a nested section (v2+) gets its regions but
//! no blocks, and the section is recorded as [`Pending`]; [`read_isolated`] reads it later. Such a
//! section is self-contained — its values are numbered from a fresh scope and its blocks are its
//! own — so reading it afterwards gives the same IR as reading it in place.

use super::cursor::Cursor;
use super::error::{ReadError, ReadErrorKind, Result};
use super::{properties, read_section, version, FileState, MAX_NESTING};
use crate::ir::{
    AttrId, Attribute, Block, BlockId, OpId, OpNameId, Operation, Properties, Region, RegionId, Span, TypeId,
    UseListOrder, Value, ValueDef, ValueId,
};

/// The value slots of one isolated scope: slot `i` (the number operands use) names a value.
struct Scope {
    slots: Vec<ValueId>,
}

/// The region being read: where its next defined value goes, and its blocks.
struct RegionFrame {
    next_slot: usize,
    end_slot: usize,
    first_block: u32,
    num_blocks: u32,
}

/// The isolated regions of `op`, stored in the nested IR section at `offset..offset + len` of the
/// file and not read yet; `depth` is the nesting depth of those regions.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pending {
    pub op: OpId,
    pub offset: usize,
    pub len: usize,
    pub depth: usize,
}

struct IrReader<'s, 'a> {
    state: &'s mut FileState<'a>,
    num_attrs: usize,
    num_types: usize,
    num_op_names: usize,
    unknown_loc: Option<AttrId>,
    /// The result types of the op being read (reused, so reading an op allocates nothing of its own).
    result_types: Vec<TypeId>,
    /// Whether nested isolated-region sections are left for later (and recorded in `pending`).
    lazy: bool,
    pending: Vec<Pending>,
    /// Where this read's values, operands and use-list orders start (what [`IrReader::finish`]
    /// checks).
    first_value: usize,
    first_operand: usize,
    first_use_list: usize,
}

impl<'s, 'a> IrReader<'s, 'a> {
    fn new(state: &'s mut FileState<'a>, lazy: bool) -> Self {
        // The file's tables: native properties may append made-up attributes after them, which no
        // index in the file can name.
        let num_attrs = state.num_file_attrs;
        let num_types = state.num_file_types;
        let num_op_names = state.module.context.op_names().len();
        let unknown_loc = state.module.context.attrs()[..num_attrs]
            .iter()
            .position(|a| matches!(a, Attribute::UnknownLoc))
            .map(|i| AttrId(i as u32));
        let first_value = state.module.values.len();
        let first_operand = state.module.operand_pool.len();
        let first_use_list = state.module.use_list_orders.len();
        IrReader {
            state,
            num_attrs,
            num_types,
            num_op_names,
            unknown_loc,
            result_types: Vec::new(),
            lazy,
            pending: Vec::new(),
            first_value,
            first_operand,
            first_use_list,
        }
    }
}

/// Reads the top-level IR section; with `lazy`, returns the isolated-region sections left unread.
pub(super) fn read_ir(state: &mut FileState<'_>, section: super::Section<'_>, lazy: bool) -> Result<Vec<Pending>> {
    // Every op takes at least 3 bytes (name, mask, location) and a typical one 8 to 20: reserve for
    // one per 8 bytes, which bounds the reservation by a small multiple of the section itself.
    let expected_ops = section.data.len() / 8;
    state.module.ops.reserve(expected_ops);
    state.module.operand_pool.reserve(expected_ops);
    state.module.values.reserve(expected_ops);
    let mut reader = IrReader::new(state, lazy);
    let mut c = section.cursor();
    let (num_ops, has_args) = c.varint_with_flag("top-level block header")?;
    if has_args {
        return Err(c.invalid("the top-level block has arguments"));
    }
    let num_ops = c.check_count(num_ops, "top-level op", 3, section.offset)?;
    let mut scope = Scope { slots: Vec::new() };
    let mut frame = RegionFrame { next_slot: 0, end_slot: 0, first_block: 0, num_blocks: 0 };
    for _ in 0..num_ops {
        let op = reader.read_op(&mut c, &mut scope, &mut frame, None, 0)?;
        reader.state.module.top_level.push(op);
    }
    c.expect_end("IR section")?;
    reader.finish(section.offset + section.data.len())
}

/// Reads the isolated regions of `pending.op` from their nested section (the op's regions exist
/// and have no blocks yet); returns the sections nested in it that are left for later.
pub(super) fn read_isolated(state: &mut FileState<'_>, pending: Pending, lazy: bool) -> Result<Vec<Pending>> {
    let buffer = state.buffer.clone();
    let section =
        super::Section { data: &buffer[pending.offset..pending.offset + pending.len], offset: pending.offset };
    let regions = state.module.op_regions(pending.op).to_vec();
    let mut reader = IrReader::new(state, lazy);
    let mut c = section.cursor();
    let mut fresh = Scope { slots: Vec::new() };
    for region in regions {
        reader.read_region(&mut c, &mut fresh, region, pending.depth)?;
    }
    c.expect_end("isolated region section")?;
    reader.finish(section.offset + section.data.len())
}

impl IrReader<'_, '_> {
    #[inline(always)]
    fn attr(&self, c: &mut Cursor<'_>, what: &'static str) -> Result<AttrId> {
        Ok(AttrId(c.index(what, self.num_attrs)? as u32))
    }

    #[inline(always)]
    fn location(&self, c: &mut Cursor<'_>) -> Result<AttrId> {
        let offset = c.offset();
        let loc = self.attr(c, "location")?;
        let attr = self.state.module.context.attr(loc);
        if !(attr.is_location() || matches!(attr, Attribute::Text { .. } | Attribute::Custom { .. })) {
            return Err(ReadError::new(offset, ReadErrorKind::Invalid("location is not a location attribute".into())));
        }
        Ok(loc)
    }

    #[inline(always)]
    fn ty(&self, c: &mut Cursor<'_>) -> Result<TypeId> {
        Ok(TypeId(c.index("type", self.num_types)? as u32))
    }

    /// Gives the next slot of the current region to a new value.
    #[inline(always)]
    fn define(
        &mut self,
        c: &Cursor<'_>,
        scope: &Scope,
        frame: &mut RegionFrame,
        ty: TypeId,
        def: ValueDef,
        loc: Option<AttrId>,
    ) -> Result<ValueId> {
        if frame.next_slot >= frame.end_slot {
            return Err(c.invalid("more values defined than the region declared"));
        }
        let id = scope.slots[frame.next_slot];
        frame.next_slot += 1;
        self.state.module.values[id.0 as usize] = Value { ty, def, loc };
        Ok(id)
    }

    fn read_op(
        &mut self,
        c: &mut Cursor<'_>,
        scope: &mut Scope,
        frame: &mut RegionFrame,
        parent: Option<BlockId>,
        depth: usize,
    ) -> Result<OpId> {
        let name = OpNameId(c.index("op name", self.num_op_names)? as u32);
        let mask_offset = c.offset();
        let mask = c.byte("op encoding mask")?;
        let version = self.state.version;
        if mask & 0x80 != 0
            || (mask & 0x20 != 0 && version < version::USE_LIST_ORDERING)
            || (mask & 0x40 != 0 && version < version::NATIVE_PROPERTIES)
        {
            return Err(ReadError::new(
                mask_offset,
                ReadErrorKind::Invalid(format!("bad op encoding mask {mask:#04x}")),
            ));
        }
        let loc = self.location(c)?;
        let attrs = if mask & 0x01 != 0 {
            let offset = c.offset();
            let dict = self.attr(c, "attribute dictionary")?;
            if !matches!(self.state.module.context.attr(dict), Attribute::Dictionary(_)) {
                return Err(ReadError::new(
                    offset,
                    ReadErrorKind::Invalid("op attributes are not a dictionary".into()),
                ));
            }
            Some(dict)
        } else {
            None
        };
        let properties = if mask & 0x40 != 0 {
            let offset = c.offset();
            let index = c.index("properties", self.state.properties.len())?;
            properties::decode(self.state, name, index, self.num_attrs).map_err(|e| {
                if e.offset == 0 {
                    ReadError::new(offset, e.kind)
                } else {
                    e
                }
            })?
        } else {
            Properties::None
        };
        let op = OpId(self.state.module.ops.len() as u32);
        let mut result_types = std::mem::take(&mut self.result_types);
        result_types.clear();
        if mask & 0x02 != 0 {
            let n = c.count("result count", 1)?;
            result_types.reserve(n);
            for _ in 0..n {
                result_types.push(self.ty(c)?);
            }
        }
        let operands_start = self.state.module.operand_pool.len() as u32;
        let mut num_operands = 0;
        if mask & 0x04 != 0 {
            let n = c.count("operand count", 1)?;
            for _ in 0..n {
                let slot = c.index("operand value", scope.slots.len())?;
                self.state.module.operand_pool.push(scope.slots[slot]);
            }
            num_operands = n as u32;
        }
        let successors_start = self.state.module.successor_pool.len() as u32;
        let mut num_successors = 0;
        if mask & 0x08 != 0 {
            let n = c.count("successor count", 1)?;
            for _ in 0..n {
                let index = c.index("successor block", frame.num_blocks as usize)?;
                self.state.module.successor_pool.push(BlockId(frame.first_block + index as u32));
            }
            num_successors = n as u32;
        }
        let results_start = if let Some(&first) = result_types.first() {
            // Results take consecutive slots, hence consecutive value ids.
            let first_id = self.define(c, scope, frame, first, ValueDef::OpResult { op, index: 0 }, None)?;
            for (index, &ty) in result_types.iter().enumerate().skip(1) {
                self.define(c, scope, frame, ty, ValueDef::OpResult { op, index: index as u32 }, None)?;
            }
            first_id.0
        } else {
            0
        };
        self.state.module.ops.push(Operation {
            name,
            loc,
            attrs,
            properties,
            operands: Span { start: operands_start, len: num_operands },
            results: Span { start: results_start, len: result_types.len() as u32 },
            successors: Span { start: successors_start, len: num_successors },
            regions: Span::default(),
            isolated: false,
            parent,
        });
        let num_results = result_types.len();
        self.result_types = result_types;
        if mask & 0x20 != 0 {
            self.read_use_lists(c, results_start, num_results)?;
        }
        if mask & 0x10 != 0 {
            let (num_regions, isolated) = c.varint_with_flag("region count")?;
            let num_regions = c.check_count(num_regions, "region", 1, c.offset())?;
            if depth >= MAX_NESTING {
                return Err(c.error(ReadErrorKind::TooDeep(MAX_NESTING)));
            }
            let start = self.state.module.region_pool.len();
            for _ in 0..num_regions {
                let region = RegionId(self.state.module.regions.len() as u32);
                self.state.module.regions.push(Region { blocks: Vec::new(), parent: Some(op) });
                self.state.module.region_pool.push(region);
            }
            let regions: Vec<RegionId> = self.state.module.region_pool[start..].to_vec();
            {
                let op = &mut self.state.module.ops[op.0 as usize];
                op.regions = Span { start: start as u32, len: num_regions as u32 };
                op.isolated = isolated;
            }
            if isolated && version >= version::LAZY_LOADING {
                let offset = c.offset();
                let (id, nested) = read_section(c)?;
                if id != 4 {
                    return Err(ReadError::new(
                        offset,
                        ReadErrorKind::Invalid(format!(
                            "expected an IR section for isolated regions, found section {id}"
                        )),
                    ));
                }
                if self.lazy {
                    self.pending.push(Pending { op, offset: nested.offset, len: nested.data.len(), depth: depth + 1 });
                } else {
                    let mut nc = nested.cursor();
                    let mut fresh = Scope { slots: Vec::new() };
                    for &region in &regions {
                        self.read_region(&mut nc, &mut fresh, region, depth + 1)?;
                    }
                    nc.expect_end("isolated region section")?;
                }
            } else if isolated {
                let mut fresh = Scope { slots: Vec::new() };
                for &region in &regions {
                    self.read_region(c, &mut fresh, region, depth + 1)?;
                }
            } else {
                for &region in &regions {
                    self.read_region(c, scope, region, depth + 1)?;
                }
            }
        }
        Ok(op)
    }

    fn read_region(&mut self, c: &mut Cursor<'_>, scope: &mut Scope, region: RegionId, depth: usize) -> Result<()> {
        let num_blocks = c.count("block count", 1)?;
        if num_blocks == 0 {
            return Ok(());
        }
        let offset = c.offset();
        let num_values = c.varint("region value count")?;
        // Each value is defined by at least one byte (a result type or a block argument).
        let num_values = c.check_count(num_values, "region value", 1, offset)?;
        let base = scope.slots.len();
        let first_value = self.state.module.values.len() as u32;
        let placeholder = Value { ty: TypeId(u32::MAX), def: ValueDef::Undefined, loc: None };
        self.state.module.values.resize(first_value as usize + num_values, placeholder);
        scope.slots.extend((0..num_values as u32).map(|i| ValueId(first_value + i)));
        let first_block = self.state.module.blocks.len() as u32;
        for _ in 0..num_blocks {
            self.state.module.blocks.push(Block { arguments: Span::default(), ops: Vec::new(), parent: Some(region) });
        }
        self.state.module.regions[region.0 as usize].blocks =
            (0..num_blocks as u32).map(|i| BlockId(first_block + i)).collect();
        let mut frame =
            RegionFrame { next_slot: base, end_slot: base + num_values, first_block, num_blocks: num_blocks as u32 };
        for b in 0..num_blocks as u32 {
            self.read_block(c, scope, &mut frame, BlockId(first_block + b), depth)?;
        }
        scope.slots.truncate(base);
        Ok(())
    }

    fn read_block(
        &mut self,
        c: &mut Cursor<'_>,
        scope: &mut Scope,
        frame: &mut RegionFrame,
        block: BlockId,
        depth: usize,
    ) -> Result<()> {
        let (num_ops, has_args) = c.varint_with_flag("block header")?;
        let num_ops = c.check_count(num_ops, "op", 3, c.offset())?;
        if has_args {
            let n = c.count("block argument count", 1)?;
            let mut first = None;
            for index in 0..n as u32 {
                let (ty, loc) = if self.state.version >= version::ELIDE_UNKNOWN_BLOCK_ARG_LOCATION {
                    let offset = c.offset();
                    let (ty, has_loc) = c.varint_with_flag("block argument type")?;
                    if ty >= self.num_types as u64 {
                        return Err(ReadError::new(
                            offset,
                            ReadErrorKind::IndexOutOfRange { what: "type", index: ty, limit: self.num_types as u64 },
                        ));
                    }
                    let loc = if has_loc { Some(self.location(c)?) } else { self.unknown_loc };
                    (TypeId(ty as u32), loc)
                } else {
                    let ty = self.ty(c)?;
                    (ty, Some(self.location(c)?))
                };
                let id = self.define(c, scope, frame, ty, ValueDef::BlockArgument { block, index }, loc)?;
                first.get_or_insert(id);
            }
            self.state.module.blocks[block.0 as usize].arguments =
                Span { start: first.map_or(0, |v| v.0), len: n as u32 };
            if self.state.version >= version::USE_LIST_ORDERING {
                let flag = c.byte("block use-list flag")?;
                if flag != 0 {
                    self.read_use_lists(c, first.map_or(0, |v| v.0), n)?;
                }
            }
        }
        let mut ops = Vec::with_capacity(num_ops);
        for _ in 0..num_ops {
            ops.push(self.read_op(c, scope, frame, Some(block), depth)?);
        }
        self.state.module.blocks[block.0 as usize].ops = ops;
        Ok(())
    }

    /// Use-list records for the `len` values starting at `first`.
    fn read_use_lists(&mut self, c: &mut Cursor<'_>, first: u32, len: usize) -> Result<()> {
        let count = if len > 1 { c.count("use-list count", 2)? } else { 1 };
        if count > len {
            return Err(c.invalid("more use-list records than values"));
        }
        for _ in 0..count {
            let index = if len > 1 { c.index("use-list value", len)? } else { 0 };
            let (k, is_pairs) = c.varint_with_flag("use-list size")?;
            let k = c.check_count(k, "use-list index", 1, c.offset())?;
            let indices = (0..k)
                .map(|_| {
                    let offset = c.offset();
                    let v = c.varint("use-list index")?;
                    u32::try_from(v)
                        .map_err(|_| ReadError::new(offset, ReadErrorKind::Invalid("use-list index too large".into())))
                })
                .collect::<Result<Box<[u32]>>>()?;
            self.state.module.use_list_orders.push(UseListOrder {
                value: ValueId(first + index as u32),
                is_pairs,
                indices,
            });
        }
        Ok(())
    }

    /// Final checks of what this read added: every used value was defined; use-list orders fit
    /// their values' uses. (Values are only used inside the section that defines them, so the
    /// uses counted here are all their uses.)
    fn finish(self, end: usize) -> Result<Vec<Pending>> {
        let module = &self.state.module;
        let first = self.first_value;
        // Walking the operands touches values all over the arena: only needed when some value
        // was never defined (one use of it is an error) or use-list orders need use counts.
        let undefined = module.values[first..].iter().any(|v| v.def == ValueDef::Undefined);
        if !undefined && module.use_list_orders.len() == self.first_use_list {
            return Ok(self.pending);
        }
        let mut uses = vec![0u32; module.values.len() - first];
        for &value in &module.operand_pool[self.first_operand..] {
            if module.values[value.0 as usize].def == ValueDef::Undefined {
                return Err(ReadError::new(
                    end,
                    ReadErrorKind::Invalid(format!(
                        "value {} is used but never defined (unresolved forward reference)",
                        value.0
                    )),
                ));
            }
            uses[value.0 as usize - first] += 1;
        }
        for order in &module.use_list_orders[self.first_use_list..] {
            let n = uses[order.value.0 as usize - first];
            let fits = if order.is_pairs {
                order.indices.len() % 2 == 0 && order.indices.iter().all(|&i| i < n)
            } else {
                order.indices.len() == n as usize && {
                    let mut seen = vec![false; n as usize];
                    order.indices.iter().all(|&i| i < n && !std::mem::replace(&mut seen[i as usize], true))
                }
            };
            if !fits {
                return Err(ReadError::new(
                    end,
                    ReadErrorKind::Invalid(format!(
                        "use-list order of value {} does not match its {n} uses",
                        order.value.0
                    )),
                ));
            }
        }
        Ok(self.pending)
    }
}
