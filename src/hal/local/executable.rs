//! Executables on the CPU: what the loaders (VMVX, native ELF) produce, run over bound host
//! memory one dispatch at a time, or with the other work of a group (no barrier between) as one
//! job.

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use bumpalo::Bump;

use super::dispatch_times;
use super::fpu::FlushDenormals;
use super::workers::Workers;
use crate::hal::backend::ExecutableBackend;
use crate::hal::byte_range::{self, OutOfRange};
use crate::host::Diagnostic;
use crate::vm::buffer::Buffer as Bytes;

/// One dispatch: the grid, the push constants and the bound memory, in binding order.
pub struct Dispatch<'a> {
    pub export: usize,
    pub workgroup_count: [u32; 3],
    pub constants: &'a [u32],
    pub bindings: &'a [BoundBytes<'a>],
}

/// `length` bytes of a buffer from `offset`, bounds-checked: a binding as the command buffer
/// resolved it, borrowed rather than made into a span (which allocates) for every dispatch.
#[derive(Clone, Copy)]
pub struct BoundBytes<'a> {
    bytes: &'a Bytes,
    offset: usize,
    length: usize,
}

impl<'a> BoundBytes<'a> {
    /// The whole of `bytes`.
    pub fn whole(bytes: &'a Bytes) -> BoundBytes<'a> {
        BoundBytes { bytes, offset: 0, length: bytes.len() }
    }

    /// `length` bytes from `offset` within this range; `-1` is the rest.
    #[inline]
    pub fn range(self, offset: i64, length: i64) -> Result<BoundBytes<'a>, OutOfRange> {
        let (offset, length) = byte_range::check(offset, length, self.length)?;
        Ok(BoundBytes { bytes: self.bytes, offset: self.offset + offset, length })
    }

    pub fn buffer(&self) -> &'a Bytes {
        self.bytes
    }

    pub fn offset(&self) -> i64 {
        self.offset as i64
    }

    pub fn len(&self) -> usize {
        self.length
    }

    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    /// The first byte, for native code; writable unless the memory is read-only (rodata bound
    /// where the program does not write: writable imports are copies, `allocator.import`).
    pub fn address(&self) -> *mut u8 {
        let base = self.bytes.as_mut_ptr().unwrap_or(self.bytes.as_ptr().cast_mut());
        base.wrapping_add(self.offset)
    }

    /// The range as a buffer of its own (a span sharing the memory).
    pub fn span(&self) -> Result<Arc<Bytes>, Diagnostic> {
        self.bytes.span(self.offset, self.length)
    }

    /// Copies the range's first `out.len()` bytes into `out`.
    pub fn read(&self, out: &mut [u8]) -> Result<(), Diagnostic> {
        self.range(0, out.len() as i64).map_err(|e| e.at(format_args!("reading {} bytes", out.len())))?;
        self.bytes.read_into(self.offset, out)
    }
}

/// What a loader produces: dispatch functions by ordinal.
pub trait ExecutableCode: Send + Sync + fmt::Debug {
    /// Export names, by ordinal (the name `hal.executable.lookup.function` finds).
    fn export_names(&self) -> &[String];

    /// Runs every workgroup of one dispatch.
    fn dispatch(&self, dispatch: &Dispatch<'_>) -> Result<(), Diagnostic>;

    /// The dispatch made ready in `arena` (see [`place`]) for its workgroups to run on any of
    /// `concurrency` threads, beside other dispatches' workgroups; `None` where this code runs a
    /// dispatch's workgroups only itself (VMVX: one VM context).
    fn ready<'a>(
        &'a self,
        _dispatch: &Dispatch<'_>,
        _concurrency: usize,
        _arena: &'a Bump,
    ) -> Result<Option<&'a dyn ReadyWork>, Diagnostic> {
        Ok(None)
    }
}

/// Makes work in `arena`, where a group's parts are laid out. The arena's memory is reused from
/// one group to the next (so that a dispatch allocates nothing) without running destructors:
/// only work that needs none may go there, which this checks as it compiles.
pub fn place<'a, W: ReadyWork + 'a>(arena: &'a Bump, make: impl FnOnce() -> W) -> &'a mut W {
    const { assert!(!std::mem::needs_drop::<W>(), "work placed in an arena is never dropped") };
    arena.alloc_with(make)
}

/// Work cut into workgroups that any thread may run, in any order: a dispatch, or a fill or copy
/// in pieces. The form in which the commands of a group (no barrier between them) share the
/// worker pool.
pub trait ReadyWork: Sync {
    fn workgroups(&self) -> u64;

    /// Bytes of local memory each thread running a workgroup needs.
    fn local_memory(&self) -> usize;

    /// Runs workgroup `index` (X fastest) on processor `processor` with `memory` its own.
    fn run(&self, index: u64, processor: u32, memory: &mut [u8]) -> Result<(), Diagnostic>;
}

/// Runs the workgroups of independent work (no barrier between, so the program lets it run at
/// once) as one job on `workers`: a dispatch of a few workgroups no longer leaves the other cores
/// idle until it ends, the next one's workgroups (or a fill's pieces) fill them.
pub fn run_together(work: &[&dyn ReadyWork], workers: &Workers, arena: &Bump) -> Result<(), Diagnostic> {
    let _mode = FlushDenormals::enter();
    let mut starts = bumpalo::collections::Vec::with_capacity_in(work.len(), arena);
    let mut total = 0u64;
    for part in work {
        starts.push(total);
        total += part.workgroups();
    }
    let starts = starts.into_bump_slice();
    let local_memory = work.iter().map(|part| part.local_memory()).max().unwrap_or(0);
    workers.run(total, local_memory, &|index, processor, memory| {
        // The last part starting at or before `index`: it holds `index` (one of no workgroups
        // starts where the next does).
        let which = starts.partition_point(|&start| start <= index) - 1;
        work[which].run(index - starts[which], processor, memory)
    })
}

/// A loaded CPU executable.
#[derive(Debug)]
pub struct LocalExecutable {
    code: Box<dyn ExecutableCode>,
}

impl LocalExecutable {
    pub fn new(code: Box<dyn ExecutableCode>) -> LocalExecutable {
        LocalExecutable { code }
    }

    /// Runs a dispatch (its export ordinal checked by the caller).
    pub fn dispatch(&self, dispatch: &Dispatch<'_>) -> Result<(), Diagnostic> {
        let _mode = FlushDenormals::enter();
        if !dispatch_times::enabled() {
            return self.code.dispatch(dispatch);
        }
        let started = Instant::now();
        let result = self.code.dispatch(dispatch);
        if let Some(export) = self.code.export_names().get(dispatch.export) {
            dispatch_times::record(export, started.elapsed());
        }
        result
    }

    /// The dispatch ready in `arena` to run beside others on `workers`; `None` where its code
    /// runs its workgroups only itself, and while dispatches are timed (one by one, so that each
    /// time is its own).
    pub fn ready<'a>(
        &'a self,
        dispatch: &Dispatch<'_>,
        workers: &Workers,
        arena: &'a Bump,
    ) -> Result<Option<&'a dyn ReadyWork>, Diagnostic> {
        if dispatch_times::enabled() {
            return Ok(None);
        }
        self.code.ready(dispatch, workers.concurrency(), arena)
    }
}

impl ExecutableBackend for LocalExecutable {
    fn export_names(&self) -> &[String] {
        self.code.export_names()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
