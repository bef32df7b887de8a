//! Executables of native code (the llvm-cpu backend's `embedded-elf-x86_64` and
//! `system-elf-x86_64`): the loaded library's dispatch functions, called once per workgroup on the
//! submitting thread with the bound buffers' addresses.
//!
//! Trust: the VM program is verified, but an executable is machine code — as in IREE, a module's
//! executables are trusted to be what `iree-compile` made of its source, and the buffers the
//! program binds are trusted to have the sizes the code was compiled for.

use std::fmt;

use super::library::{Binding, ExecutableFormat, ExecutableLibrary, ImportFunction};
use crate::hal::executable::{Dispatch, ExecutableCode};
use crate::host::{Diagnostic, StatusCode};

/// A loaded native executable.
pub struct NativeExecutable {
    library: ExecutableLibrary,
    names: Vec<String>,
}

impl fmt::Debug for NativeExecutable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NativeExecutable").field("library", &self.library.name()).field("exports", &self.names).finish()
    }
}

impl NativeExecutable {
    /// Loads `data` of `format`. Executables that import host functions cannot load: the CPU
    /// devices provide none (IREE's runtime provides none either; they come from plugins).
    pub fn load(format: ExecutableFormat, data: &[u8], constants: &[u32]) -> Result<NativeExecutable, Diagnostic> {
        let no_imports = |_: &str| -> Option<ImportFunction> { None };
        // SAFETY: runs the executable's initializers and query function; executables are trusted
        // compiler output (see the module documentation).
        let library = unsafe { ExecutableLibrary::load(format, data, constants, &no_imports) }
            .map_err(|e| Diagnostic::new(StatusCode::InvalidArgument, format!("{} executable: {e}", format.name())))?;
        let names = library.exports().iter().map(|export| export.name.clone()).collect();
        Ok(NativeExecutable { library, names })
    }
}

impl ExecutableCode for NativeExecutable {
    fn export_names(&self) -> &[String] {
        &self.names
    }

    fn dispatch(&self, dispatch: &Dispatch<'_>) -> Result<(), Diagnostic> {
        let bindings: Vec<Binding<'_>> = dispatch
            .bindings
            .iter()
            .map(|bytes| {
                // Constants imported from rodata are read-only memory the code only reads.
                let address = bytes.as_mut_ptr().unwrap_or(bytes.as_ptr().cast_mut());
                // SAFETY: `bytes` is held by the dispatch for as long as the code runs; the same
                // memory bound twice (at different offsets) is what dispatches do.
                unsafe { Binding::from_raw_parts(address, bytes.len()) }
            })
            .collect();
        let failed = |e: super::library::DispatchError| Diagnostic::new(StatusCode::Internal, e.to_string());
        let prepared = self
            .library
            .prepare_dispatch(dispatch.export, dispatch.workgroup_count, dispatch.constants, &bindings)
            .map_err(failed)?;
        let mut local_memory = vec![0u8; prepared.local_memory_size()];
        // SAFETY: the executable is trusted compiler output and the bindings are the buffers the
        // program bound for it (see the module documentation).
        unsafe { prepared.run_all_workgroups(&mut local_memory) }.map_err(failed)
    }
}
