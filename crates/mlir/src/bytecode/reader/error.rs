//! Errors of the bytecode reader. Every error names the byte offset (from the start of the file)
//! where reading failed.

/// A bytecode file that rtx cannot read, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("MLIR bytecode: at byte {offset}: {kind}")]
pub struct ReadError {
    pub offset: usize,
    pub kind: ReadErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadErrorKind {
    #[error("not MLIR bytecode (bad magic number)")]
    BadMagic,
    #[error("unexpected end of data while reading {0}")]
    Truncated(&'static str),
    #[error("bytecode version {0} is newer than the newest supported version 6")]
    UnsupportedVersion(u64),
    #[error("{what} index {index} is out of range (there are {limit})")]
    IndexOutOfRange { what: &'static str, index: u64, limit: u64 },
    #[error("{what} count {count} exceeds what the remaining {remaining} bytes can hold")]
    CountTooLarge { what: &'static str, count: u64, remaining: usize },
    #[error("bad alignment {0} (must be a power of two, at most 2^32)")]
    BadAlignment(u64),
    #[error("bad padding byte {0:#04x} (expected 0xcb)")]
    BadPadding(u8),
    #[error("{0} unexpected trailing bytes in {1}")]
    TrailingBytes(usize, &'static str),
    #[error("invalid section id {0}")]
    BadSectionId(u8),
    #[error("duplicate section {0}")]
    DuplicateSection(&'static str),
    #[error("missing required section {0}")]
    MissingSection(&'static str),
    #[error("attributes and types refer to each other in a cycle")]
    Cycle,
    #[error("nesting deeper than {0} levels")]
    TooDeep(usize),
    #[error("{0}")]
    Invalid(String),
}

impl ReadError {
    pub fn new(offset: usize, kind: ReadErrorKind) -> Self {
        Self { offset, kind }
    }
}

pub type Result<T> = std::result::Result<T, ReadError>;
