//! Error information carried by error AsyncValues and returned through the C API.

use std::fmt;

/// The status codes, written once: each code's variant, number, the upper-case name IREE prints,
/// and its C constant. The numbers are those of absl/IREE (`iree_status_code_t`), so a `vm.fail`
/// status from a compiled program keeps its meaning; `Panic` is ours. `$callback!` receives the
/// list: [`StatusCode`] and its names come from here, and `ffi::error` derives its conversions
/// from it and checks its C enum (written out there, because cbindgen reads source, not macro
/// output) against it at compile time.
#[macro_export]
#[doc(hidden)]
macro_rules! status_code_list {
    ($callback:ident) => {
        $callback! {
            Ok = 0, "OK", RTX_STATUS_CODE_OK;
            Cancelled = 1, "CANCELLED", RTX_STATUS_CODE_CANCELLED;
            Unknown = 2, "UNKNOWN", RTX_STATUS_CODE_UNKNOWN;
            InvalidArgument = 3, "INVALID_ARGUMENT", RTX_STATUS_CODE_INVALID_ARGUMENT;
            DeadlineExceeded = 4, "DEADLINE_EXCEEDED", RTX_STATUS_CODE_DEADLINE_EXCEEDED;
            NotFound = 5, "NOT_FOUND", RTX_STATUS_CODE_NOT_FOUND;
            AlreadyExists = 6, "ALREADY_EXISTS", RTX_STATUS_CODE_ALREADY_EXISTS;
            PermissionDenied = 7, "PERMISSION_DENIED", RTX_STATUS_CODE_PERMISSION_DENIED;
            ResourceExhausted = 8, "RESOURCE_EXHAUSTED", RTX_STATUS_CODE_RESOURCE_EXHAUSTED;
            FailedPrecondition = 9, "FAILED_PRECONDITION", RTX_STATUS_CODE_FAILED_PRECONDITION;
            Aborted = 10, "ABORTED", RTX_STATUS_CODE_ABORTED;
            OutOfRange = 11, "OUT_OF_RANGE", RTX_STATUS_CODE_OUT_OF_RANGE;
            Unimplemented = 12, "UNIMPLEMENTED", RTX_STATUS_CODE_UNIMPLEMENTED;
            Internal = 13, "INTERNAL", RTX_STATUS_CODE_INTERNAL;
            Unavailable = 14, "UNAVAILABLE", RTX_STATUS_CODE_UNAVAILABLE;
            DataLoss = 15, "DATA_LOSS", RTX_STATUS_CODE_DATA_LOSS;
            Unauthenticated = 16, "UNAUTHENTICATED", RTX_STATUS_CODE_UNAUTHENTICATED;
            /// Not done yet: a pending fence (`hal.fence.query`), work that will complete later.
            Deferred = 17, "DEFERRED", RTX_STATUS_CODE_DEFERRED;
            Incompatible = 18, "INCOMPATIBLE", RTX_STATUS_CODE_INCOMPATIBLE;
            /// A Rust panic was caught at the C boundary; the operation did not complete.
            Panic = 100, "PANIC", RTX_STATUS_CODE_PANIC;
        }
    };
}

/// Defines [`StatusCode`] from [`status_code_list`].
macro_rules! define_status_code {
    ($($(#[$doc:meta])* $variant:ident = $number:literal, $name:literal, $c_name:ident;)*) => {
        /// Canonical status codes (absl/IREE numbering).
        #[repr(u32)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum StatusCode {
            $($(#[$doc])* $variant = $number,)*
        }

        impl StatusCode {
            /// The upper-case name IREE prints (`INVALID_ARGUMENT`), used in messages and by the C
            /// API.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(StatusCode::$variant => $name,)*
                }
            }

            /// The code with this number, if it is one we define.
            pub fn from_u32(code: u32) -> Option<StatusCode> {
                match code {
                    $($number => Some(StatusCode::$variant),)*
                    _ => None,
                }
            }
        }
    };
}
status_code_list!(define_status_code);

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

    pub fn with_location(mut self, location: Location) -> Diagnostic {
        self.location = Some(location);
        self
    }

    /// The same error (code and location kept) with `what` in front of its message, `"what:
    /// message"`: says where an error from deeper down surfaced.
    pub fn context(self, what: impl fmt::Display) -> Diagnostic {
        self.map_message(|message| format!("{what}: {message}"))
    }

    /// The same error (code and location kept) with its message rewritten by `rewrite`.
    pub fn map_message(self, rewrite: impl FnOnce(String) -> String) -> Diagnostic {
        Diagnostic { message: rewrite(self.message), ..self }
    }
}

/// [`Diagnostic::context`] for results.
pub trait ResultExt<T> {
    /// Prefixes the error's message with `what` (see [`Diagnostic::context`]).
    fn context(self, what: impl fmt::Display) -> Result<T, Diagnostic>;

    /// As [`context`](ResultExt::context), building the prefix only on error.
    fn with_context<D: fmt::Display>(self, what: impl FnOnce() -> D) -> Result<T, Diagnostic>;
}

impl<T, E: Into<Diagnostic>> ResultExt<T> for Result<T, E> {
    fn context(self, what: impl fmt::Display) -> Result<T, Diagnostic> {
        self.map_err(|error| error.into().context(what))
    }

    fn with_context<D: fmt::Display>(self, what: impl FnOnce() -> D) -> Result<T, Diagnostic> {
        self.map_err(|error| error.into().context(what()))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn located() -> Diagnostic {
        Diagnostic::new(StatusCode::NotFound, "no `f`").with_location(Location::new("m.mlir", 3, 7))
    }

    #[test]
    fn context_prefixes_the_message_and_keeps_code_and_location() {
        let error = located().context("rtx_context_invoke");
        assert_eq!(error.message, "rtx_context_invoke: no `f`");
        assert_eq!((error.code, error.location), (StatusCode::NotFound, Some(Location::new("m.mlir", 3, 7))));
        let error = located().map_message(|m| m.replace("`f`", "`g`"));
        assert_eq!((error.code, error.message.as_str()), (StatusCode::NotFound, "no `g`"));
    }

    #[test]
    fn result_context_touches_only_errors_and_builds_the_prefix_lazily() {
        let failed: Result<(), Diagnostic> = Err(located());
        assert_eq!(failed.clone().context("outer").unwrap_err().message, "outer: no `f`");
        assert_eq!(failed.with_context(|| format!("argument {}", 2)).unwrap_err().message, "argument 2: no `f`");
        let ok: Result<u8, Diagnostic> = Ok(1);
        assert_eq!(ok.with_context(|| -> String { unreachable!("built on success") }), Ok(1));
    }
}
