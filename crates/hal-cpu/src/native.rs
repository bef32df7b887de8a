//! Executables of native code (the llvm-cpu backend's `embedded-elf-x86_64` and
//! `system-elf-x86_64`): the loaded library's dispatch functions, called once per workgroup with
//! the bound buffers' addresses — on the submitting thread (`local-sync`, any dispatch of one
//! workgroup), or spread over the device's worker pool and the submitting thread (`local-task`),
//! each thread with its own workgroup local memory. Each export's workgroups are timed as they
//! run, so that a command buffer can keep work of a few microseconds on one thread.
//!
//! Trust: the VM program is verified, but an executable is machine code — as in IREE, a module's
//! executables are trusted to be what `iree-compile` made of its source, and the buffers the
//! program binds are trusted to have the sizes the code was compiled for.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bumpalo::Bump;

use super::executable::{place, Dispatch, ExecutableCode, ReadyWork};
use super::library::{Binding, DispatchError, ExecutableFormat, ExecutableLibrary, ImportFunction, PreparedDispatch};
use super::workers::{with_local_memory, Workers};
use rtx_host::{Diagnostic, StatusCode};

/// A loaded native executable.
pub struct NativeExecutable {
    library: ExecutableLibrary,
    names: Vec<String>,
    /// Where workgroups run in parallel; `None` runs them all on the submitting thread.
    pool: Option<Arc<Workers>>,
    /// How long each export's workgroups take.
    times: WorkgroupTimes,
}

impl fmt::Debug for NativeExecutable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NativeExecutable").field("library", &self.library.name()).field("exports", &self.names).finish()
    }
}

impl NativeExecutable {
    /// Loads `data` of `format`. Executables that import host functions cannot load: the CPU
    /// devices provide none (IREE's runtime provides none either; they come from plugins).
    pub fn load(
        format: ExecutableFormat,
        data: &[u8],
        constants: &[u32],
        pool: Option<Arc<Workers>>,
    ) -> Result<NativeExecutable, Diagnostic> {
        let no_imports = |_: &str| -> Option<ImportFunction> { None };
        // SAFETY: runs the executable's initializers and query function; executables are trusted
        // compiler output (see the module documentation).
        let library = unsafe { ExecutableLibrary::load(format, data, constants, &no_imports) }
            .map_err(|e| Diagnostic::new(StatusCode::InvalidArgument, format!("{} executable: {e}", format.name())))?;
        let names: Vec<String> = library.exports().iter().map(|export| export.name.clone()).collect();
        let times = WorkgroupTimes::new(names.len());
        Ok(NativeExecutable { library, names, pool, times })
    }
}

/// Per export, the nanoseconds one workgroup took, averaged over the dispatches timed so far (0
/// before the first). Threads dispatching the same export at once may lose one another's
/// update: it is an estimate.
struct WorkgroupTimes(Box<[AtomicU64]>);

impl WorkgroupTimes {
    fn new(exports: usize) -> WorkgroupTimes {
        WorkgroupTimes((0..exports).map(|_| AtomicU64::new(0)).collect())
    }

    /// How long `workgroups` of `export` are expected to take all together; `None` before the
    /// export has been timed.
    fn expected_nanos(&self, export: usize, workgroups: u64) -> Option<u64> {
        let nanos = self.0[export].load(Ordering::Relaxed);
        (nanos != 0).then(|| nanos.saturating_mul(workgroups))
    }

    /// Adds `workgroups` of `export` that took `nanos` to its average (a quarter of the weight
    /// going to the newest, so that one slow run moves it only so far).
    fn add(&self, export: usize, nanos: u64, workgroups: u64) {
        let each = (nanos / workgroups.max(1)).max(1);
        let average = &self.0[export];
        let before = average.load(Ordering::Relaxed);
        let after = if before == 0 { each } else { (3 * before + each) / 4 };
        average.store(after, Ordering::Relaxed);
    }

    fn add_since(&self, export: usize, started: Instant, workgroups: u64) {
        self.add(export, started.elapsed().as_nanos().try_into().unwrap_or(u64::MAX), workgroups);
    }
}

impl ExecutableCode for NativeExecutable {
    fn export_names(&self) -> &[String] {
        &self.names
    }

    fn dispatch(&self, dispatch: &Dispatch<'_>) -> Result<(), Diagnostic> {
        // Filled where it lies: a prepared dispatch (over a kilobyte of arguments) returned by
        // value was copied on every dispatch.
        let ready = &mut self.empty_ready(dispatch.export);
        self.prepare(&mut ready.dispatch, dispatch).map_err(|e| failed(&e))?;
        match &self.pool {
            Some(workers) if ready.workgroups() > 1 => {
                ready.dispatch.set_max_concurrency(workers.concurrency().min(255) as u8);
                let ready = &*ready;
                let run = |index, processor, memory: &mut [u8]| ready.run(index, processor, memory);
                let name = self.names.get(dispatch.export).map_or("", String::as_str);
                workers.run(ready.workgroups(), ready.local_memory(), &run, name)
            }
            // No pool (`local-sync`), or one workgroup or none: here, untimed.
            _ => with_local_memory(ready.local_memory(), |memory| {
                // SAFETY: the executable is trusted compiler output and the bindings are the
                // buffers the program bound for it (see the module documentation).
                unsafe { ready.dispatch.run_all_workgroups(memory) }.map_err(|e| failed(&e))
            }),
        }
    }

    fn ready<'a>(
        &'a self,
        dispatch: &Dispatch<'_>,
        concurrency: usize,
        arena: &'a Bump,
    ) -> Result<Option<&'a dyn ReadyWork>, Diagnostic> {
        let ready = place(arena, || self.empty_ready(dispatch.export));
        self.prepare(&mut ready.dispatch, dispatch).map_err(|e| failed(&e))?;
        ready.dispatch.set_max_concurrency(concurrency.min(255) as u8);
        Ok(Some(ready))
    }
}

impl NativeExecutable {
    /// A dispatch of `export` (its ordinal checked by the caller) to be prepared.
    fn empty_ready(&self, export: usize) -> Ready<'_> {
        Ready { dispatch: self.library.empty_dispatch(), times: &self.times, export }
    }

    /// The dispatch's arguments checked against its export and fixed in `prepared`.
    #[inline(always)]
    fn prepare<'a>(
        &'a self,
        prepared: &mut PreparedDispatch<'a>,
        dispatch: &Dispatch<'_>,
    ) -> Result<(), DispatchError> {
        let bindings = dispatch.bindings.iter().map(|bound| {
            // SAFETY: the bound memory is held by the command buffer's table for as long as the
            // code runs; the same memory bound twice (at different offsets) is what dispatches do.
            unsafe { Binding::from_raw_parts(bound.address(), bound.len()) }
        });
        prepared.prepare(dispatch.export, dispatch.workgroup_count, dispatch.constants, bindings)
    }
}

fn failed(error: &DispatchError) -> Diagnostic {
    Diagnostic::new(StatusCode::Internal, error.to_string())
}

/// A dispatch of a native executable, its workgroups numbered X fastest. Made only here, from
/// the bindings the program bound (see the module documentation on trust).
struct Ready<'a> {
    dispatch: PreparedDispatch<'a>,
    /// Where the export's first workgroup adds its time.
    times: &'a WorkgroupTimes,
    export: usize,
}

impl Ready<'_> {
    /// # Safety
    /// The executable is trusted compiler output and the bindings are the buffers the program
    /// bound for it; each thread running workgroups has its own `memory`.
    unsafe fn run_workgroup(&self, index: u64, processor: u32, memory: &mut [u8]) -> Result<(), Diagnostic> {
        let [x, y, _] = self.dispatch.workgroup_count().map(u64::from);
        let id = [(index % x) as u32, (index / x % y) as u32, (index / (x * y)) as u32];
        // SAFETY: as this function's.
        unsafe { self.dispatch.run_workgroup(id, processor, memory) }.map_err(|e| failed(&e))
    }
}

impl ReadyWork for Ready<'_> {
    fn workgroups(&self) -> u64 {
        self.dispatch.workgroup_count().iter().map(|&count| u64::from(count)).product()
    }

    fn local_memory(&self) -> usize {
        self.dispatch.local_memory_size()
    }

    fn expected_nanos(&self) -> Option<u64> {
        self.times.expected_nanos(self.export, self.workgroups())
    }

    fn run(&self, index: u64, processor: u32, memory: &mut [u8]) -> Result<(), Diagnostic> {
        // SAFETY: made from the bindings the program bound (see the type); the caller gives
        // each thread its own memory.
        if index != 0 {
            return unsafe { self.run_workgroup(index, processor, memory) };
        }
        // The first workgroup is timed: one sample per dispatch, two clock reads.
        let started = Instant::now();
        // SAFETY: as above.
        let ran = unsafe { self.run_workgroup(index, processor, memory) };
        self.times.add_since(self.export, started, 1);
        ran
    }

    fn run_all(&self, _processor: u32, memory: &mut [u8]) -> Result<(), Diagnostic> {
        let started = Instant::now();
        // SAFETY: as for `run`; the library's loop gives every workgroup processor 0, which no
        // other thread is running this dispatch as.
        let ran = unsafe { self.dispatch.run_all_workgroups(memory) }.map_err(|e| failed(&e));
        self.times.add_since(self.export, started, self.workgroups());
        ran
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workgroup_times_average_per_export() {
        let times = WorkgroupTimes::new(2);
        assert_eq!(times.expected_nanos(0, 2), None, "never timed");
        times.add(0, 600, 2);
        assert_eq!(times.expected_nanos(0, 7), Some(2_100), "7 x 300 ns");
        assert_eq!(times.expected_nanos(1, 2), None, "each export has its own time");
        // One slow run moves the average a quarter of the way: 300 -> 1 725 ns a workgroup.
        times.add(0, 6_000, 1);
        assert_eq!(times.expected_nanos(0, 2), Some(3_450));
        // A run too fast to measure still counts as timed.
        times.add(1, 0, 4);
        assert_eq!(times.expected_nanos(1, 1000), Some(1000));
        assert_eq!(times.expected_nanos(1, u64::MAX), Some(u64::MAX), "no overflow");
    }
}
