//! Error information carried by error AsyncValues and returned through the C API.

use std::fmt;

/// Canonical status codes. The numbers are those of absl/IREE (`iree_status_code_t`), so a
/// `vm.fail` status from a compiled program keeps its meaning; `Panic` is ours.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StatusCode {
    Ok = 0,
    Cancelled = 1,
    Unknown = 2,
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    AlreadyExists = 6,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    FailedPrecondition = 9,
    Aborted = 10,
    OutOfRange = 11,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    DataLoss = 15,
    Unauthenticated = 16,
    /// Not done yet: a pending fence (`hal.fence.query`), work that will complete later.
    Deferred = 17,
    Incompatible = 18,
    /// A Rust panic was caught at the C boundary; the operation did not complete.
    Panic = 100,
}

impl StatusCode {
    /// The upper-case name IREE prints (`INVALID_ARGUMENT`), used in messages and by the C API.
    pub fn as_str(self) -> &'static str {
        match self {
            StatusCode::Ok => "OK",
            StatusCode::Cancelled => "CANCELLED",
            StatusCode::Unknown => "UNKNOWN",
            StatusCode::InvalidArgument => "INVALID_ARGUMENT",
            StatusCode::DeadlineExceeded => "DEADLINE_EXCEEDED",
            StatusCode::NotFound => "NOT_FOUND",
            StatusCode::AlreadyExists => "ALREADY_EXISTS",
            StatusCode::PermissionDenied => "PERMISSION_DENIED",
            StatusCode::ResourceExhausted => "RESOURCE_EXHAUSTED",
            StatusCode::FailedPrecondition => "FAILED_PRECONDITION",
            StatusCode::Aborted => "ABORTED",
            StatusCode::OutOfRange => "OUT_OF_RANGE",
            StatusCode::Unimplemented => "UNIMPLEMENTED",
            StatusCode::Internal => "INTERNAL",
            StatusCode::Unavailable => "UNAVAILABLE",
            StatusCode::DataLoss => "DATA_LOSS",
            StatusCode::Unauthenticated => "UNAUTHENTICATED",
            StatusCode::Deferred => "DEFERRED",
            StatusCode::Incompatible => "INCOMPATIBLE",
            StatusCode::Panic => "PANIC",
        }
    }

    /// The code with this number, if it is one we define.
    pub fn from_u32(code: u32) -> Option<StatusCode> {
        use StatusCode::*;
        const ALL: [StatusCode; 20] = [
            Ok,
            Cancelled,
            Unknown,
            InvalidArgument,
            DeadlineExceeded,
            NotFound,
            AlreadyExists,
            PermissionDenied,
            ResourceExhausted,
            FailedPrecondition,
            Aborted,
            OutOfRange,
            Unimplemented,
            Internal,
            Unavailable,
            DataLoss,
            Unauthenticated,
            Deferred,
            Incompatible,
            Panic,
        ];
        ALL.into_iter().find(|c| *c as u32 == code)
    }
}

impl fmt::Display for StatusCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where an error arose: a source file (an MLIR file, a `.vmfb`'s debug database, a C caller)
/// and a position in it. Line and column are 1-based; 0 means unknown.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Location {
    pub file: String,
    pub line: u32,
    pub column: u32,
}

impl Location {
    pub fn new(file: impl Into<String>, line: u32, column: u32) -> Location {
        Location { file: file.into(), line, column }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (0, _) => write!(f, "{}", self.file),
            (line, 0) => write!(f, "{}:{line}", self.file),
            (line, column) => write!(f, "{}:{line}:{column}", self.file),
        }
    }
}

/// The error payload of an error AsyncValue and of every fallible C call: a status code, a message
/// that says what was wrong, and optionally where.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    pub code: StatusCode,
    pub message: String,
    pub location: Option<Location>,
}

impl Diagnostic {
    pub fn new(code: StatusCode, message: impl Into<String>) -> Diagnostic {
        Diagnostic { code, message: message.into(), location: None }
    }

    /// The error that pending work observes once its context has been cancelled.
    pub fn cancelled() -> Diagnostic {
        Diagnostic::new(StatusCode::Cancelled, "cancelled: the context was cancelled before this work ran")
    }

    /// The same error with `what` (a function, an argument, a file) before its message:
    /// `what: message`.
    pub fn context(self, what: impl fmt::Display) -> Diagnostic {
        Diagnostic { message: format!("{what}: {}", self.message), ..self }
    }

    pub fn with_location(mut self, location: Location) -> Diagnostic {
        self.location = Some(location);
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(location) = &self.location {
            write!(f, "{location}: ")?;
        }
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for Diagnostic {}
