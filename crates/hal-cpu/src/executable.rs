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
use super::workers::{with_local_memory, Phase, Workers};
use rtx_hal::backend::ExecutableBackend;
use rtx_hal::byte_range::{self, OutOfRange};
use rtx_host::{tracing, Diagnostic};
use rtx_vm::buffer::ByteBuffer;

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
    bytes: &'a ByteBuffer,
    offset: usize,
    length: usize,
}

impl<'a> BoundBytes<'a> {
    /// The whole of `bytes`.
    pub fn whole(bytes: &'a ByteBuffer) -> BoundBytes<'a> {
        BoundBytes { bytes, offset: 0, length: bytes.len() }
    }

    /// `length` bytes from `offset` within this range; `-1` is the rest.
    #[inline]
    pub fn range(self, offset: i64, length: i64) -> Result<BoundBytes<'a>, OutOfRange> {
        let (offset, length) = byte_range::check(offset, length, self.length)?;
        Ok(BoundBytes { bytes: self.bytes, offset: self.offset + offset, length })
    }

    pub fn buffer(&self) -> &'a ByteBuffer {
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
    pub fn span(&self) -> Result<Arc<ByteBuffer>, Diagnostic> {
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

    /// ByteBuffer of local memory each thread running a workgroup needs.
    fn local_memory(&self) -> usize;

    /// How long all of its workgroups are expected to take, if known.
    fn expected_nanos(&self) -> Option<u64> {
        None
    }

    /// Runs workgroup `index` (X fastest) on processor `processor` with `memory` its own.
    fn run(&self, index: u64, processor: u32, memory: &mut [u8]) -> Result<(), Diagnostic>;

    /// Runs every workgroup in order, on this thread alone.
    fn run_all(&self, processor: u32, memory: &mut [u8]) -> Result<(), Diagnostic> {
        (0..self.workgroups()).try_for_each(|index| self.run(index, processor, memory))
    }
}

/// Work expected to take less than this all together runs on one thread, the one that finished
/// the work before it: handing work to another core and waiting for it to finish costs about a
/// microsecond on two cores. A GRU's time steps of two workgroups of 0.4 µs each ran in 0.83-0.88
/// ms per call this way against 0.98-1.09 ms spread (`local-task`, 2 cores).
const ALONE_NANOS: u64 = 2_000;

/// Runs `parts` on `workers` in phases, phase `i` being `parts[ends[i - 1]..ends[i]]`: the work
/// between two barriers of a command buffer, which the program lets run at once. The workgroups of
/// a phase share the threads (a dispatch of a few workgroups no longer leaves the other cores idle
/// until it ends: the next one's workgroups, or a fill's pieces, fill them), and the thread that
/// finishes a phase starts the next. A phase expected to take less than [`ALONE_NANOS`] runs on
/// that thread alone.
pub fn run_phases(parts: &[&dyn ReadyWork], ends: &[usize], workers: &Workers, arena: &Bump) -> Result<(), Diagnostic> {
    let _mode = FlushDenormals::enter();
    let mut starts = bumpalo::collections::Vec::with_capacity_in(parts.len(), arena);
    let mut total = 0u64;
    for part in parts {
        starts.push(total);
        total += part.workgroups();
    }
    let starts = starts.into_bump_slice();
    let mut phases = bumpalo::collections::Vec::with_capacity_in(ends.len(), arena);
    let mut first = 0;
    for &end in ends {
        let phase = &parts[first..end];
        let expected = phase.iter().try_fold(0u64, |sum, part| Some(sum.saturating_add(part.expected_nanos()?)));
        let end_workgroup = starts.get(end).copied().unwrap_or(total);
        phases.push(Phase { end: end_workgroup, alone: expected.is_some_and(|nanos| nanos < ALONE_NANOS) });
        first = end;
    }
    let local_memory = parts.iter().map(|part| part.local_memory()).max().unwrap_or(0);
    if !Phase::any_shared(&phases) {
        // As the pool would, but a part at a time: code that runs its own workgroups in a loop
        // does so.
        let processor = workers.concurrency() as u32 - 1;
        return with_local_memory(local_memory, |memory| {
            parts.iter().try_for_each(|part| part.run_all(processor, &mut memory[..part.local_memory()]))
        });
    }
    workers.run_phases(&phases, local_memory, &|index, processor, memory| {
        // The last part starting at or before `index`: it holds `index` (one of no workgroups
        // starts where the next does).
        let which = starts.partition_point(|&start| start <= index) - 1;
        parts[which].run(index - starts[which], processor, memory)
    })
}

/// A loaded CPU executable.
#[derive(Debug)]
pub struct LocalExecutable {
    code: Box<dyn ExecutableCode>,
    /// The exports' names, shared by the spans of their dispatches.
    span_names: Box<[Arc<str>]>,
}

impl LocalExecutable {
    pub fn new(code: Box<dyn ExecutableCode>) -> LocalExecutable {
        let span_names = code.export_names().iter().map(|name| Arc::from(name.as_str())).collect();
        LocalExecutable { code, span_names }
    }

    /// Runs a dispatch (its export ordinal checked by the caller).
    pub fn dispatch(&self, dispatch: &Dispatch<'_>) -> Result<(), Diagnostic> {
        let _mode = FlushDenormals::enter();
        if tracing::is_on() {
            return self.dispatch_traced(dispatch);
        }
        self.run(dispatch)
    }

    fn run(&self, dispatch: &Dispatch<'_>) -> Result<(), Diagnostic> {
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

    /// [`LocalExecutable::dispatch`] in a span named after the export: out of line, so that the
    /// span's drop glue is no cost of the untraced dispatch.
    #[cold]
    #[inline(never)]
    fn dispatch_traced(&self, dispatch: &Dispatch<'_>) -> Result<(), Diagnostic> {
        let name = || match self.span_names.get(dispatch.export) {
            Some(name) => tracing::Text::from(name),
            None => format!("export {}", dispatch.export).into(),
        };
        let args = || {
            let bytes: usize = dispatch.bindings.iter().map(|binding| binding.length).sum();
            tracing::Args::none()
                .with("workgroups", tracing::Value::Grid(dispatch.workgroup_count))
                .with("bytes bound", bytes as u64)
        };
        let _span = tracing::span(tracing::Category::Dispatch, name, args);
        self.run(dispatch)
    }

    /// The dispatch ready in `arena` to run beside others on `workers`; `None` where its code
    /// runs its workgroups only itself, and while dispatches are timed or traced (one by one, so
    /// that each time is its own).
    pub fn ready<'a>(
        &'a self,
        dispatch: &Dispatch<'_>,
        workers: &Workers,
        arena: &'a Bump,
    ) -> Result<Option<&'a dyn ReadyWork>, Diagnostic> {
        if dispatch_times::enabled() || tracing::is_on() {
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
