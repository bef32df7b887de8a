//! The one error type of the `.vmfb` loader. Every rejection names the byte offset in the file where
//! the problem was found, so a user holding a hex dump (or `iree-dump-module`) can find it.

use rtx_host::{Diagnostic, StatusCode};

/// A module could not be loaded: where in the file (absolute byte offset, counted from the first
/// byte of the `.vmfb`, ZIP header included) and what was wrong.
///
/// The status code travels with the error because the C API reports it: a malformed file is
/// `INVALID_ARGUMENT`, a file that ends before what its own headers promise is `DATA_LOSS`, and a
/// well-formed file that needs something this runtime does not have (a newer bytecode version, a
/// compression scheme) is `UNIMPLEMENTED`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("offset {offset}: {message}")]
pub struct LoadError {
    pub offset: usize,
    pub message: String,
    pub code: StatusCode,
}

impl LoadError {
    /// The bytes are there but do not form a valid module.
    pub fn malformed(offset: usize, message: impl Into<String>) -> LoadError {
        LoadError { offset, message: message.into(), code: StatusCode::InvalidArgument }
    }

    /// The file ends before something its headers or offsets say is there (a cut-off download or
    /// copy looks like this, hence `DATA_LOSS` rather than `INVALID_ARGUMENT`).
    pub fn truncated(offset: usize, message: impl Into<String>) -> LoadError {
        LoadError { offset, message: message.into(), code: StatusCode::DataLoss }
    }

    /// The module is well formed but asks for something this runtime does not implement.
    pub fn unsupported(offset: usize, message: impl Into<String>) -> LoadError {
        LoadError { offset, message: message.into(), code: StatusCode::Unimplemented }
    }

    /// The file could not be read at all; there is no meaningful offset, so it is 0.
    pub fn io(path: &std::path::Path, error: &std::io::Error) -> LoadError {
        let code = match error.kind() {
            std::io::ErrorKind::NotFound => StatusCode::NotFound,
            std::io::ErrorKind::PermissionDenied => StatusCode::PermissionDenied,
            _ => StatusCode::Unavailable,
        };
        LoadError { offset: 0, message: format!("cannot read `{}`: {error}", path.display()), code }
    }
}

impl From<LoadError> for Diagnostic {
    fn from(error: LoadError) -> Diagnostic {
        Diagnostic::new(error.code, format!("loading VM module: {error}"))
    }
}
