//! `rtx_error_t`: the owned error object every fallible call returns (NULL means success).

use std::ffi::{c_char, CString};

use super::catch_or;
use super::handle::{self, Handle, OwnershipBox};
use crate::host::{Diagnostic, StatusCode};

/// Status codes (absl/IREE numbering). Returned values are always one of these; functions that
/// take a code accept any `uint32_t` and treat unknown values as `RTX_STATUS_CODE_UNKNOWN`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
pub enum rtx_status_code_t {
    RTX_STATUS_CODE_OK = 0,
    RTX_STATUS_CODE_CANCELLED = 1,
    RTX_STATUS_CODE_UNKNOWN = 2,
    RTX_STATUS_CODE_INVALID_ARGUMENT = 3,
    RTX_STATUS_CODE_DEADLINE_EXCEEDED = 4,
    RTX_STATUS_CODE_NOT_FOUND = 5,
    RTX_STATUS_CODE_ALREADY_EXISTS = 6,
    RTX_STATUS_CODE_PERMISSION_DENIED = 7,
    RTX_STATUS_CODE_RESOURCE_EXHAUSTED = 8,
    RTX_STATUS_CODE_FAILED_PRECONDITION = 9,
    RTX_STATUS_CODE_ABORTED = 10,
    RTX_STATUS_CODE_OUT_OF_RANGE = 11,
    RTX_STATUS_CODE_UNIMPLEMENTED = 12,
    RTX_STATUS_CODE_INTERNAL = 13,
    RTX_STATUS_CODE_UNAVAILABLE = 14,
    RTX_STATUS_CODE_DATA_LOSS = 15,
    RTX_STATUS_CODE_UNAUTHENTICATED = 16,
    /// Not done yet (a pending fence).
    RTX_STATUS_CODE_DEFERRED = 17,
    RTX_STATUS_CODE_INCOMPATIBLE = 18,
    /// A Rust panic was caught at the C boundary; the call did not complete.
    RTX_STATUS_CODE_PANIC = 100,
}

impl From<StatusCode> for rtx_status_code_t {
    fn from(code: StatusCode) -> rtx_status_code_t {
        use rtx_status_code_t::*;
        match code {
            StatusCode::Ok => RTX_STATUS_CODE_OK,
            StatusCode::Cancelled => RTX_STATUS_CODE_CANCELLED,
            StatusCode::Unknown => RTX_STATUS_CODE_UNKNOWN,
            StatusCode::InvalidArgument => RTX_STATUS_CODE_INVALID_ARGUMENT,
            StatusCode::DeadlineExceeded => RTX_STATUS_CODE_DEADLINE_EXCEEDED,
            StatusCode::NotFound => RTX_STATUS_CODE_NOT_FOUND,
            StatusCode::AlreadyExists => RTX_STATUS_CODE_ALREADY_EXISTS,
            StatusCode::PermissionDenied => RTX_STATUS_CODE_PERMISSION_DENIED,
            StatusCode::ResourceExhausted => RTX_STATUS_CODE_RESOURCE_EXHAUSTED,
            StatusCode::FailedPrecondition => RTX_STATUS_CODE_FAILED_PRECONDITION,
            StatusCode::Aborted => RTX_STATUS_CODE_ABORTED,
            StatusCode::OutOfRange => RTX_STATUS_CODE_OUT_OF_RANGE,
            StatusCode::Unimplemented => RTX_STATUS_CODE_UNIMPLEMENTED,
            StatusCode::Internal => RTX_STATUS_CODE_INTERNAL,
            StatusCode::Unavailable => RTX_STATUS_CODE_UNAVAILABLE,
            StatusCode::DataLoss => RTX_STATUS_CODE_DATA_LOSS,
            StatusCode::Unauthenticated => RTX_STATUS_CODE_UNAUTHENTICATED,
            StatusCode::Deferred => RTX_STATUS_CODE_DEFERRED,
            StatusCode::Incompatible => RTX_STATUS_CODE_INCOMPATIBLE,
            StatusCode::Panic => RTX_STATUS_CODE_PANIC,
        }
    }
}

/// An owned error: a status code and a NUL-terminated message ("where: what").
#[allow(non_camel_case_types)]
pub struct rtx_error {
    _private: [u8; 0],
}

/// The handle type C sees: `rtx_error_t*`, owned by the caller, freed with `rtx_error_delete`.
#[allow(non_camel_case_types)]
pub type rtx_error_t = rtx_error;

/// What an `rtx_error_t` owns: the diagnostic, and its text as C reads it. One owner (`Box`).
pub struct CError {
    diagnostic: Diagnostic,
    message: CString,
}

impl Handle for rtx_error {
    type RustType = CError;
    type Ownership = OwnershipBox;
}

/// Hands `diagnostic` to C as a new owned error.
pub(crate) fn to_handle(diagnostic: Diagnostic) -> *mut rtx_error_t {
    let text = match &diagnostic.location {
        Some(location) => format!("{location}: {}", diagnostic.message),
        None => diagnostic.message.clone(),
    };
    // Interior NULs would cut the message short in C; show them instead.
    let message = CString::new(text.replace('\0', "\\0")).unwrap_or_default();
    handle::box_to_handle(CError { diagnostic, message })
}

/// Takes back an error a host returned to us (from a C native function, say): its diagnostic,
/// or `None` for NULL (no error).
///
/// # Safety
/// A non-null `error` must be an error from this library that the caller owns; it is freed here.
pub(crate) unsafe fn take(error: *mut rtx_error_t) -> Option<Diagnostic> {
    // SAFETY: forwarded from the caller.
    unsafe { handle::take_box(error) }.map(|error| error.diagnostic)
}

/// A new error with `code` (an `RTX_STATUS_CODE_*`; unknown numbers and `RTX_STATUS_CODE_OK`
/// become `RTX_STATUS_CODE_UNKNOWN`) and `message` (copied; NULL = empty), for host callbacks
/// that report failure, such as native module functions. Owned by the caller until returned to
/// rtx, which then frees it; otherwise free it with `rtx_error_delete`. Never NULL.
#[no_mangle]
pub unsafe extern "C" fn rtx_error_new(code: u32, message: *const c_char) -> *mut rtx_error_t {
    catch_or(std::ptr::null_mut(), || {
        // SAFETY: a non-null message is NUL-terminated by contract.
        let message = unsafe { super::message_arg(message) };
        let code = match status_from_c(code) {
            StatusCode::Ok => StatusCode::Unknown,
            code => code,
        };
        to_handle(Diagnostic::new(code, message))
    })
}

/// The status code of `error`; `RTX_STATUS_CODE_OK` for NULL (no error).
#[no_mangle]
pub unsafe extern "C" fn rtx_error_code(error: *const rtx_error_t) -> rtx_status_code_t {
    catch_or(rtx_status_code_t::RTX_STATUS_CODE_INTERNAL, || {
        // SAFETY: a non-null `error` is a live error from this library.
        match unsafe { handle::borrow_opt(error) } {
            Some(error) => error.diagnostic.code.into(),
            None => rtx_status_code_t::RTX_STATUS_CODE_OK,
        }
    })
}

/// The message of `error`: what was wrong and where. Borrowed: valid until `rtx_error_delete`.
/// Returns "" for NULL.
#[no_mangle]
pub unsafe extern "C" fn rtx_error_message(error: *const rtx_error_t) -> *const c_char {
    catch_or(c"".as_ptr(), || {
        // SAFETY: a non-null `error` is a live error from this library.
        match unsafe { handle::borrow_opt(error) } {
            Some(error) => error.message.as_ptr(),
            None => c"".as_ptr(),
        }
    })
}

/// Frees an error. NULL does nothing.
#[no_mangle]
pub unsafe extern "C" fn rtx_error_delete(error: *mut rtx_error_t) {
    // SAFETY: a non-null `error` is the caller's to free, once, by contract.
    catch_or((), || drop(unsafe { handle::take_box(error) }))
}

/// The upper-case name of a status code (`"INVALID_ARGUMENT"`); `"UNKNOWN"` for values that are
/// not codes. Static storage: never freed.
#[no_mangle]
pub extern "C" fn rtx_status_code_name(code: u32) -> *const c_char {
    catch_or(c"UNKNOWN".as_ptr(), || {
        let name = StatusCode::from_u32(code).map_or("UNKNOWN", StatusCode::as_str);
        STATUS_NAMES.iter().find(|n| n.to_bytes() == name.as_bytes()).map_or(c"UNKNOWN".as_ptr(), |n| n.as_ptr())
    })
}

const STATUS_NAMES: [&std::ffi::CStr; 20] = [
    c"OK",
    c"CANCELLED",
    c"UNKNOWN",
    c"INVALID_ARGUMENT",
    c"DEADLINE_EXCEEDED",
    c"NOT_FOUND",
    c"ALREADY_EXISTS",
    c"PERMISSION_DENIED",
    c"RESOURCE_EXHAUSTED",
    c"FAILED_PRECONDITION",
    c"ABORTED",
    c"OUT_OF_RANGE",
    c"UNIMPLEMENTED",
    c"INTERNAL",
    c"UNAVAILABLE",
    c"DATA_LOSS",
    c"UNAUTHENTICATED",
    c"DEFERRED",
    c"INCOMPATIBLE",
    c"PANIC",
];

/// A status code from its C number; unknown numbers become `Unknown`.
pub(crate) fn status_from_c(code: u32) -> StatusCode {
    StatusCode::from_u32(code).unwrap_or(StatusCode::Unknown)
}
