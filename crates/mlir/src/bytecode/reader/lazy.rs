//! A module read with its isolated-region sections left for later: opening a large program to
//! look at one function (or only at its top-level symbols) costs the tables and the top level, not
//! every body. Upstream's `BytecodeReader` offers the same through `materialize`/`finalize`.

use super::ir::{self, Pending};
use super::{FileState, ReadError};
use crate::ir::{Module, OpId};

/// A module whose ops with lazily loadable regions have those regions (they exist, with no
/// blocks) not read yet. [`LazyModule::materialize`] reads one op's; [`LazyModule::finish`] reads
/// the rest and gives the [`Module`], the same one [`super::read_bytecode`] gives.
pub struct LazyModule {
    /// The file's tables and the IR read so far; `bytes` is empty between reads.
    state: FileState<'static>,
    pending: Vec<Pending>,
}

impl LazyModule {
    pub(super) fn new(state: FileState<'static>, pending: Vec<Pending>) -> Self {
        Self { state, pending }
    }

    /// The module as read so far: ops listed by [`LazyModule::pending`] have empty regions.
    pub fn module(&self) -> &Module {
        &self.state.module
    }

    /// The ops whose isolated regions are not read yet, in file order of those discovered so far
    /// (materializing an op can reveal more, nested in it).
    pub fn pending(&self) -> impl ExactSizeIterator<Item = OpId> + '_ {
        self.pending.iter().map(|p| p.op)
    }

    pub fn is_pending(&self, op: OpId) -> bool {
        self.pending.iter().any(|p| p.op == op)
    }

    /// Reads the regions of `op` if they are pending (ops with isolated regions nested in them
    /// become pending in turn); does nothing for any other op. On error the op stays pending and
    /// the module is as it was before the call.
    pub fn materialize(&mut self, op: OpId) -> Result<(), ReadError> {
        let Some(index) = self.pending.iter().position(|p| p.op == op) else {
            return Ok(());
        };
        let nested = self.read(self.pending[index], true)?;
        self.pending.remove(index);
        self.pending.extend(nested);
        Ok(())
    }

    /// Reads every pending region (including those nested in them) and returns the module.
    pub fn finish(mut self) -> Result<Module, ReadError> {
        while let Some(pending) = self.pending.pop() {
            let nested = self.read(pending, false)?;
            debug_assert!(nested.is_empty(), "an eager read leaves nothing pending");
        }
        Ok(self.state.module)
    }

    /// Reads one pending section over the file's bytes; a failed read is undone.
    fn read(&mut self, pending: Pending, lazy: bool) -> Result<Vec<Pending>, ReadError> {
        let buffer = self.state.buffer.clone();
        let mut state = std::mem::take(&mut self.state).rebind(&buffer);
        let before = Lengths::of(&state.module);
        let result = ir::read_isolated(&mut state, pending, lazy);
        if result.is_err() {
            before.restore(&mut state.module, pending.op);
        }
        self.state = state.rebind(&[]);
        result
    }
}

/// The arena sizes before a read, to undo a failed one (a read only appends, and fills in the
/// blocks of the op's regions).
struct Lengths([usize; 9]);

impl Lengths {
    fn of(m: &Module) -> Self {
        Self([
            m.ops.len(),
            m.blocks.len(),
            m.regions.len(),
            m.values.len(),
            m.operand_pool.len(),
            m.successor_pool.len(),
            m.region_pool.len(),
            m.use_list_orders.len(),
            m.opaque_properties.len(),
        ])
    }

    fn restore(&self, m: &mut Module, op: OpId) {
        let [ops, blocks, regions, values, operands, successors, region_pool, use_lists, opaque] = self.0;
        m.ops.truncate(ops);
        m.blocks.truncate(blocks);
        m.regions.truncate(regions);
        m.values.truncate(values);
        m.operand_pool.truncate(operands);
        m.successor_pool.truncate(successors);
        m.region_pool.truncate(region_pool);
        m.use_list_orders.truncate(use_lists);
        m.opaque_properties.truncate(opaque);
        for region in m.op_regions(op).to_vec() {
            m.regions[region.0 as usize].blocks.clear();
        }
    }
}
