//! Building a module in place: operations, blocks and regions appended to its arenas, for
//! producers other than the readers (which lay a whole file out at once). Values are numbered in
//! the order they are made, and every parent link is kept in step.

use super::{
    AttrId, Attribute, Block, BlockId, MlirContext, Module, OpId, OpName, OpNameId, Operation, Region, RegionId, Span,
    TypeId, Value, ValueDef, ValueId,
};

/// An operation for [`Module::add_op`].
pub struct NewOp<'a> {
    pub name: OpNameId,
    pub loc: AttrId,
    /// The attribute dictionary; a registered op's inherent attributes move to its properties.
    pub attrs: Option<AttrId>,
    pub operands: &'a [ValueId],
    pub result_types: &'a [TypeId],
    /// How many (empty) regions the op owns.
    pub num_regions: usize,
}

impl MlirContext {
    /// The string attribute holding `bytes` (of no particular type).
    pub fn intern_string_attr(&mut self, bytes: &[u8]) -> AttrId {
        let value = self.intern_str(bytes);
        self.intern_attr(Attribute::String { value, ty: None })
    }

    /// The operation name `full` (`dialect.op`), added if new; it counts as registered when rtx
    /// knows its schema or its dialect is one upstream registers.
    pub fn intern_op_name(&mut self, full: &[u8]) -> OpNameId {
        let full_sym = self.intern_str(full);
        if let Some(index) = self.op_names().iter().position(|name| name.full == full_sym) {
            return OpNameId(index as u32);
        }
        let (dialect_name, short) = match full.iter().position(|&b| b == b'.') {
            Some(i) => (&full[..i], &full[i + 1..]),
            None => (full, &full[full.len()..]),
        };
        let dialect = self.intern_dialect(&String::from_utf8_lossy(dialect_name));
        let short = self.intern_str(short);
        let registered = crate::ods::op_schema(full).is_some() || crate::ods::is_upstream_dialect_op(full);
        self.push_op_name(OpName { dialect, short, full: full_sym, registered })
    }
}

impl Module {
    fn new_values(&mut self, types: impl IntoIterator<Item = (TypeId, ValueDef, Option<AttrId>)>) -> Span {
        let start = self.values.len() as u32;
        self.values.extend(types.into_iter().map(|(ty, def, loc)| Value { ty, def, loc }));
        Span { start, len: self.values.len() as u32 - start }
    }

    /// A block with arguments of the given types and locations, in no region yet.
    pub fn add_block(&mut self, arguments: &[(TypeId, Option<AttrId>)]) -> BlockId {
        let block = BlockId(self.blocks.len() as u32);
        let arguments = self.new_values(
            arguments
                .iter()
                .enumerate()
                .map(|(i, &(ty, loc))| (ty, ValueDef::BlockArgument { block, index: i as u32 }, loc)),
        );
        self.blocks.push(Block { arguments, ops: Vec::new(), parent: None });
        block
    }

    /// An operation with its results and its empty regions, in no block yet.
    pub fn add_op(&mut self, op: NewOp<'_>) -> OpId {
        let id = OpId(self.ops.len() as u32);
        let (attrs, properties) = crate::ods::split_inherent(&mut self.context, op.name, op.attrs);
        let operands = Span { start: self.operand_pool.len() as u32, len: op.operands.len() as u32 };
        self.operand_pool.extend_from_slice(op.operands);
        let results = self.new_values(
            op.result_types
                .iter()
                .enumerate()
                .map(|(i, &ty)| (ty, ValueDef::OpResult { op: id, index: i as u32 }, None)),
        );
        let regions = Span { start: self.region_pool.len() as u32, len: op.num_regions as u32 };
        for _ in 0..op.num_regions {
            self.region_pool.push(RegionId(self.regions.len() as u32));
            self.regions.push(Region { blocks: Vec::new(), parent: Some(id) });
        }
        self.ops.push(Operation {
            name: op.name,
            loc: op.loc,
            attrs,
            properties,
            operands,
            results,
            successors: Span::default(),
            regions,
            isolated: false,
            parent: None,
        });
        id
    }

    /// Appends `op` (in no block yet) to `block`.
    pub fn append_op(&mut self, block: BlockId, op: OpId) {
        debug_assert!(self.op(op).parent.is_none(), "an op lives in one block");
        self.ops[op.0 as usize].parent = Some(block);
        self.blocks[block.0 as usize].ops.push(op);
    }

    /// Appends `block` (in no region yet) to `region`.
    pub fn append_block(&mut self, region: RegionId, block: BlockId) {
        debug_assert!(self.block(block).parent.is_none(), "a block lives in one region");
        self.blocks[block.0 as usize].parent = Some(region);
        self.regions[region.0 as usize].blocks.push(block);
    }
}
