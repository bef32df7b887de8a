//! What the writer asks of an MLIR module, in TFRT's terms: the top-level module, ops by name,
//! an op's attributes as one name-sorted dictionary (properties and discardable attributes
//! together, as MLIR's `getAttrs` gives them), symbols, value uses, and locations for messages.

use std::borrow::Cow;

use super::error::{Site, WriteError};
use rtx_mlir::ir::{AttrId, Attribute, BlockId, Module, OpId, Properties, RegionId, ValueDef, ValueId};
use rtx_mlir::text::print::print_location;

/// The ops the writer treats specially, by name.
pub(super) const RETURN: &str = "tfrt.return";
pub(super) const FUNC: &str = "func.func";
const MODULE: &str = "builtin.module";
/// Marks a nested module whose ops are not kernels but a unit handed to kernels by symbol.
const COMPILED: &str = "tfrt.compiled";

pub(super) struct Program<'m> {
    pub(super) module: &'m Module,
    /// The `builtin.module` the file holds.
    pub(super) top: OpId,
}

impl<'m> Program<'m> {
    pub(super) fn new(module: &'m Module) -> Result<Program<'m>, WriteError> {
        match module.top_level.as_slice() {
            [top] if module.op_name(*top) == MODULE => Ok(Program { module, top: *top }),
            _ => Err(WriteError::NotOneModule),
        }
    }

    pub(super) fn name(&self, op: OpId) -> Cow<'m, str> {
        self.module.op_name(op)
    }

    pub(super) fn is(&self, op: OpId, name: &str) -> bool {
        let ctx = &self.module.context;
        ctx.str_bytes(ctx.op_name(self.module.op(op).name).full) == name.as_bytes()
    }

    /// The op's attributes sorted by name, properties included.
    pub(super) fn attributes(&self, op: OpId) -> Vec<(&'m [u8], AttrId)> {
        let ctx = &self.module.context;
        let operation = self.module.op(op);
        let dictionaries = [
            match operation.properties {
                Properties::Dict(dict) => Some(dict),
                _ => None,
            },
            operation.attrs,
        ];
        let mut attributes = Vec::new();
        for dict in dictionaries.into_iter().flatten() {
            if let Attribute::Dictionary(entries) = ctx.attr(dict) {
                attributes.extend(entries.iter().map(|&(name, value)| (self.string(name), value)));
            }
        }
        attributes.sort_by(|a, b| a.0.cmp(b.0));
        attributes
    }

    pub(super) fn attribute(&self, op: OpId, name: &str) -> Option<AttrId> {
        self.attributes(op).into_iter().find(|(n, _)| *n == name.as_bytes()).map(|(_, value)| value)
    }

    /// The bytes of a string attribute (empty for anything else).
    pub(super) fn string(&self, attr: AttrId) -> &'m [u8] {
        let ctx = &self.module.context;
        match ctx.attr(attr) {
            Attribute::String { value, .. } => ctx.str_bytes(*value),
            _ => &[],
        }
    }

    /// The op's `sym_name`.
    pub(super) fn symbol_name(&self, op: OpId) -> Option<&'m [u8]> {
        self.attribute(op, "sym_name").map(|name| self.string(name))
    }

    pub(super) fn is_compiled_module(&self, op: OpId) -> bool {
        self.is(op, MODULE) && self.attribute(op, COMPILED).is_some()
    }

    /// The nearest `builtin.module` around `op` (the op itself excluded).
    pub(super) fn enclosing_module(&self, op: OpId) -> Option<OpId> {
        let mut current = self.parent_op(op)?;
        while !self.is(current, MODULE) {
            current = self.parent_op(current)?;
        }
        Some(current)
    }

    pub(super) fn is_in_compiled_module(&self, op: OpId) -> bool {
        let mut current = Some(op).filter(|&op| self.is(op, MODULE)).or_else(|| self.enclosing_module(op));
        while let Some(module) = current {
            if self.is_compiled_module(module) {
                return true;
            }
            current = self.enclosing_module(module);
        }
        false
    }

    pub(super) fn parent_op(&self, op: OpId) -> Option<OpId> {
        let block = self.module.op(op).parent?;
        self.module.region(self.module.block(block).parent?).parent
    }

    /// The region holding `op`.
    pub(super) fn op_region(&self, op: OpId) -> Option<RegionId> {
        self.module.block(self.module.op(op).parent?).parent
    }

    /// The region a value is defined in.
    pub(super) fn value_region(&self, value: ValueId) -> Option<RegionId> {
        match self.module.value(value).def {
            ValueDef::OpResult { op, .. } => self.op_region(op),
            ValueDef::BlockArgument { block, .. } => self.module.block(block).parent,
            ValueDef::Undefined => None,
        }
    }

    /// The op a symbol reference names, looked up from the top-level module as MLIR's
    /// `SymbolTable::lookupSymbolIn` does: the root among its ops, each nested name inside the
    /// module found before.
    pub(super) fn lookup_symbol(&self, root: &[u8], nested: &[&[u8]]) -> Option<OpId> {
        let mut table = self.top;
        let mut found = None;
        for name in std::iter::once(root).chain(nested.iter().copied()) {
            if found.is_some() {
                table = found.filter(|&op| self.is(op, MODULE))?;
            }
            let block = self.single_block(*self.module.op_regions(table).first()?)?;
            found = Some(
                *self.module.block(block).ops.iter().find(|&&op| self.symbol_name(op).is_some_and(|n| n == name))?,
            );
        }
        found
    }

    /// The only block of a region, if it has exactly one.
    pub(super) fn single_block(&self, region: RegionId) -> Option<BlockId> {
        match self.module.region(region).blocks.as_slice() {
            [block] => Some(*block),
            _ => None,
        }
    }

    /// Where `op` is, for an error message.
    pub(super) fn site(&self, op: OpId) -> Site {
        Site { op: self.name(op).into_owned(), location: print_location(self.module, self.module.op(op).loc) }
    }

    /// Every op, nested ones before the op that holds them (MLIR's post-order walk), leaving out
    /// the top-level module itself and `tfrt.compiled` modules with everything inside them.
    pub(super) fn post_order(&self) -> Vec<OpId> {
        let mut order = Vec::with_capacity(self.module.ops.len());
        // (op, whether its regions have been pushed already)
        let mut stack: Vec<(OpId, bool)> = vec![(self.top, false)];
        while let Some((op, expanded)) = stack.pop() {
            if expanded {
                if op != self.top {
                    order.push(op);
                }
                continue;
            }
            if self.is_compiled_module(op) {
                continue;
            }
            stack.push((op, true));
            for &region in self.module.op_regions(op).iter().rev() {
                for &block in self.module.region(region).blocks.iter().rev() {
                    stack.extend(self.module.block(block).ops.iter().rev().map(|&op| (op, false)));
                }
            }
        }
        order
    }
}
