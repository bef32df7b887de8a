//! `!hal.executable`: the compiled dispatch functions of one `hal.executable` op, loaded by the
//! device from the bytes the program passes to `hal.executable.create` (the format string says
//! which loader).

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use super::buffer::wrong_type;
use super::local::fpu::FlushDenormals;
use crate::host::{Diagnostic, StatusCode};
use crate::vm::buffer::Buffer as Bytes;
use crate::vm::refs::{Ref, RefObject};

/// One dispatch: the grid, the push constants and the bound memory, in binding order.
pub struct Dispatch<'a> {
    pub export: usize,
    pub workgroup_count: [u32; 3],
    pub constants: &'a [u32],
    pub bindings: &'a [Arc<Bytes>],
}

/// What a loader produces: dispatch functions by ordinal.
pub trait ExecutableCode: Send + Sync + fmt::Debug {
    /// Export names, by ordinal (the name `hal.executable.lookup.function` finds).
    fn export_names(&self) -> &[String];

    /// Runs every workgroup of one dispatch.
    fn dispatch(&self, dispatch: &Dispatch<'_>) -> Result<(), Diagnostic>;
}

/// A loaded executable.
#[derive(Debug)]
pub struct Executable {
    code: Box<dyn ExecutableCode>,
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
    pub fn new(code: Box<dyn ExecutableCode>) -> Executable {
        Executable { code }
    }

    /// The ordinal of export `name` (`hal.executable.lookup.function`).
    pub fn lookup(&self, name: &str) -> Result<usize, Diagnostic> {
        self.code
            .export_names()
            .iter()
            .position(|n| n == name)
            .ok_or_else(|| Diagnostic::new(StatusCode::NotFound, format!("executable has no export named `{name}`")))
    }

    /// Runs a dispatch after checking the export ordinal.
    pub fn dispatch(&self, dispatch: &Dispatch<'_>) -> Result<(), Diagnostic> {
        let count = self.code.export_names().len();
        if dispatch.export >= count {
            return Err(Diagnostic::new(
                StatusCode::OutOfRange,
                format!("export ordinal {} out of range (the executable has {count})", dispatch.export),
            ));
        }
        let _mode = FlushDenormals::enter();
        self.code.dispatch(dispatch)
    }

    pub fn into_ref(self) -> Ref {
        Ref::Object(Arc::new(self))
    }
}

/// The executable a ref holds, or INVALID_ARGUMENT naming what was there.
pub fn deref(value: &Ref) -> Result<&Executable, Diagnostic> {
    value.downcast::<Executable>().ok_or_else(|| wrong_type("hal.executable", value))
}
