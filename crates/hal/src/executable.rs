//! `!hal.executable`: the compiled dispatch functions of one `hal.executable` op, loaded by the
//! device from the bytes the program passes to `hal.executable.create` (the format string says
//! which loader). What runs them is the backend's ([`ExecutableBackend`]).

use std::any::Any;
use std::sync::Arc;

use super::backend::ExecutableBackend;
use super::buffer::wrong_type;
use rtx_host::{Diagnostic, StatusCode};
use rtx_vm::refs::{Ref, RefObject};

/// A loaded executable.
#[derive(Clone, Debug)]
pub struct Executable {
    backend: Arc<dyn ExecutableBackend>,
}

impl RefObject for Executable {
    fn type_name(&self) -> &'static str {
        "hal.executable"
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Executable {
    pub fn new(backend: Arc<dyn ExecutableBackend>) -> Executable {
        Executable { backend }
    }

    pub fn backend(&self) -> &dyn ExecutableBackend {
        &*self.backend
    }

    /// The ordinal of the export named by the bytes `name` (`hal.executable.lookup.function`,
    /// whose name is a program's byte buffer: compared as bytes, not checked as UTF-8 first).
    pub fn lookup(&self, name: &[u8]) -> Result<usize, Diagnostic> {
        self.backend.export_names().iter().position(|n| n.as_bytes() == name).ok_or_else(|| {
            let name = String::from_utf8_lossy(name);
            Diagnostic::new(StatusCode::NotFound, format!("executable has no export named `{name}`"))
        })
    }

    /// `export`, or OUT_OF_RANGE if the executable has no such ordinal.
    pub fn check_export(&self, export: usize) -> Result<usize, Diagnostic> {
        let count = self.backend.export_names().len();
        if export >= count {
            return Err(Diagnostic::new(
                StatusCode::OutOfRange,
                format!("export ordinal {export} out of range (the executable has {count})"),
            ));
        }
        Ok(export)
    }

    pub fn into_ref(self) -> Ref {
        Ref::Object(Arc::new(self))
    }
}

/// The executable a ref holds, or INVALID_ARGUMENT naming what was there.
#[inline]
pub fn deref(value: &Ref) -> Result<&Executable, Diagnostic> {
    value.downcast::<Executable>().ok_or_else(|| wrong_type("hal.executable", value))
}
