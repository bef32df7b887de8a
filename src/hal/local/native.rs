//! Executables of native code (the llvm-cpu backend's `embedded-elf-x86_64` and
//! `system-elf-x86_64`): the loaded library's dispatch functions, called once per workgroup with
//! the bound buffers' addresses — on the submitting thread (`local-sync`, and any dispatch of one
//! workgroup), or spread over the device's worker pool and the submitting thread (`local-task`),
//! each thread with its own workgroup local memory.
//!
//! Trust: the VM program is verified, but an executable is machine code — as in IREE, a module's
//! executables are trusted to be what `iree-compile` made of its source, and the buffers the
//! program binds are trusted to have the sizes the code was compiled for.

use std::fmt;
use std::sync::Arc;

use bumpalo::Bump;

use super::executable::{place, Dispatch, ExecutableCode, ReadyWork};
use super::library::{Binding, DispatchError, ExecutableFormat, ExecutableLibrary, ImportFunction, PreparedDispatch};
use super::workers::{with_local_memory, Workers};
use crate::host::{Diagnostic, StatusCode};

/// A loaded native executable.
pub struct NativeExecutable {
    library: ExecutableLibrary,
    names: Vec<String>,
    /// Where workgroups run in parallel; `None` runs them all on the submitting thread.
    pool: Option<Arc<Workers>>,
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
        let names = library.exports().iter().map(|export| export.name.clone()).collect();
        Ok(NativeExecutable { library, names, pool })
    }
}

impl ExecutableCode for NativeExecutable {
    fn export_names(&self) -> &[String] {
        &self.names
    }

    fn dispatch(&self, dispatch: &Dispatch<'_>) -> Result<(), Diagnostic> {
        // Filled where it lies: a prepared dispatch (over a kilobyte of arguments) returned by
        // value was copied on every dispatch.
        let ready = &mut Ready(self.library.empty_dispatch());
        self.prepare(&mut ready.0, dispatch).map_err(|e| failed(&e))?;
        match &self.pool {
            // One workgroup (or none) is run here directly, as on `local-sync`.
            Some(workers) if ready.workgroups() > 1 => {
                ready.0.set_max_concurrency(workers.concurrency().min(255) as u8);
                let ready = &*ready;
                workers.run(ready.workgroups(), ready.local_memory(), &|index, processor, memory| {
                    ready.run(index, processor, memory)
                })
            }
            _ => with_local_memory(ready.local_memory(), |memory| {
                // SAFETY: the executable is trusted compiler output and the bindings are the
                // buffers the program bound for it (see the module documentation).
                unsafe { ready.0.run_all_workgroups(memory) }.map_err(|e| failed(&e))
            }),
        }
    }

    fn ready<'a>(
        &'a self,
        dispatch: &Dispatch<'_>,
        concurrency: usize,
        arena: &'a Bump,
    ) -> Result<Option<&'a dyn ReadyWork>, Diagnostic> {
        let ready = place(arena, || Ready(self.library.empty_dispatch()));
        self.prepare(&mut ready.0, dispatch).map_err(|e| failed(&e))?;
        ready.0.set_max_concurrency(concurrency.min(255) as u8);
        Ok(Some(ready))
    }
}

impl NativeExecutable {
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
struct Ready<'a>(PreparedDispatch<'a>);

impl ReadyWork for Ready<'_> {
    fn workgroups(&self) -> u64 {
        self.0.workgroup_count().iter().map(|&count| u64::from(count)).product()
    }

    fn local_memory(&self) -> usize {
        self.0.local_memory_size()
    }

    fn run(&self, index: u64, processor: u32, memory: &mut [u8]) -> Result<(), Diagnostic> {
        let [x, y, _] = self.0.workgroup_count().map(u64::from);
        let id = [(index % x) as u32, (index / x % y) as u32, (index / (x * y)) as u32];
        // SAFETY: the executable is trusted compiler output and the bindings are the buffers the
        // program bound for it; each thread running workgroups has its own `memory`.
        unsafe { self.0.run_workgroup(id, processor, memory) }.map_err(|e| failed(&e))
    }
}
