//! [`KernelError`]: what a kernel returns when it fails.

use crate::attribute::AttributeError;
use rtx_host::async_value::AccessError;
use rtx_host::{Diagnostic, StatusCode};

/// A kernel's failure. The executor reports it once, at the kernel's location, and makes it the
/// value of every result the kernel had not set. A plain message is an INTERNAL error, as in
/// TFRT; give a [`Diagnostic`] for another code.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.message)]
pub struct KernelError(pub Diagnostic);

impl KernelError {
    pub fn new(code: StatusCode, message: impl Into<String>) -> KernelError {
        KernelError(Diagnostic::new(code, message))
    }

    pub fn into_diagnostic(self) -> Diagnostic {
        self.0
    }
}

impl From<String> for KernelError {
    fn from(message: String) -> KernelError {
        KernelError::new(StatusCode::Internal, message)
    }
}

impl From<&str> for KernelError {
    fn from(message: &str) -> KernelError {
        KernelError::new(StatusCode::Internal, message)
    }
}

impl From<Diagnostic> for KernelError {
    fn from(diagnostic: Diagnostic) -> KernelError {
        KernelError(diagnostic)
    }
}

impl From<AttributeError> for KernelError {
    fn from(error: AttributeError) -> KernelError {
        KernelError::new(StatusCode::InvalidArgument, error.to_string())
    }
}

impl From<AccessError> for KernelError {
    fn from(error: AccessError) -> KernelError {
        KernelError(error.into_diagnostic())
    }
}
