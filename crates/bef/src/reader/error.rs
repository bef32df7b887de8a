//! What can be wrong with a BEF file, always with the byte offset where it was found.

use rtx_host::{Diagnostic, Location, StatusCode};

/// A BEF file that cannot be opened: unreadable, truncated, corrupt, or naming a kernel or
/// native function the registry does not have.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BefError {
    #[error("reading `{path}`: {message}")]
    Io { path: String, message: String },
    #[error("not a BEF file: it does not start with the magic 0B EF")]
    NotBef,
    #[error("unknown BEF format version {0} (only version 0 exists)")]
    UnknownVersion(u8),
    /// The bytes do not hold what the format says they must.
    #[error("malformed BEF at byte {offset}: {what}")]
    Malformed { offset: usize, what: String },
    /// A kernel name that no registered kernel has; `location` is where the first use of it is.
    #[error("{location}: error: unknown kernel name '{name}'")]
    UnknownKernel { name: String, location: Location },
    #[error("native function '{0}' is not registered")]
    UnknownNativeFunction(String),
    #[error("this host is big-endian; BEF kernel records are little-endian words read in place")]
    BigEndianHost,
}

impl BefError {
    pub(crate) fn malformed(offset: usize, what: impl Into<String>) -> BefError {
        BefError::Malformed { offset, what: what.into() }
    }
}

impl From<BefError> for Diagnostic {
    /// An unknown kernel keeps its location (and TFRT's message); other errors are located in
    /// their message, by byte offset.
    fn from(error: BefError) -> Diagnostic {
        if let BefError::UnknownKernel { name, location } = error {
            return Diagnostic::new(StatusCode::NotFound, format!("unknown kernel name '{name}'"))
                .with_location(location);
        }
        let code = match &error {
            BefError::Io { .. } => StatusCode::NotFound,
            BefError::UnknownKernel { .. } | BefError::UnknownNativeFunction(_) => StatusCode::NotFound,
            BefError::BigEndianHost => StatusCode::Unimplemented,
            _ => StatusCode::InvalidArgument,
        };
        Diagnostic::new(code, error.to_string())
    }
}
