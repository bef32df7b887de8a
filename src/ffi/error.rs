//! `rtx_error_t`: the owned error object every fallible call returns (NULL means success).

use std::ffi::{c_char, CStr, CString};

use super::catch_or;
use super::handle::{self, Handle, OwnershipBox};
use crate::host::status_code_list;
use crate::host::{Diagnostic, StatusCode};

// Written out because cbindgen reads source, not macro output; `c_status_codes` below checks it
// against the one list.
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

/// The C side of the one status code list (`host::status_code_list`): the conversion
/// from `StatusCode` and the NUL-terminated names. A compile-time check, an exhaustive match over
/// the C enum, fails the build when the enum above lacks a code of the list, has one more, or
/// numbers one differently.
macro_rules! c_status_codes {
    ($($(#[$doc:meta])* $variant:ident = $number:literal, $name:literal, $c_name:ident;)*) => {
        impl From<StatusCode> for rtx_status_code_t {
            fn from(code: StatusCode) -> rtx_status_code_t {
                match code {
                    $(StatusCode::$variant => rtx_status_code_t::$c_name,)*
                }
            }
        }

        const _: () = {
            const fn number(code: rtx_status_code_t) -> u32 {
                match code {
                    $(rtx_status_code_t::$c_name => $number,)*
                }
            }
            $(assert!(number(rtx_status_code_t::$c_name) == rtx_status_code_t::$c_name as u32);)*
        };

        /// The name of `code` as a C string (static storage).
        fn c_name(code: StatusCode) -> &'static CStr {
            match code {
                $(StatusCode::$variant => {
                    const NAME: &CStr = c_literal(concat!($name, "\0"));
                    NAME
                })*
            }
        }
    };
}
status_code_list!(c_status_codes);

/// A C string from a literal that ends in its NUL, checked at compile time.
const fn c_literal(text: &'static str) -> &'static CStr {
    match CStr::from_bytes_with_nul(text.as_bytes()) {
        Ok(text) => text,
        Err(_) => panic!("a status code name has an interior NUL"),
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
        let code = match StatusCode::from_u32(code) {
            None | Some(StatusCode::Ok) => StatusCode::Unknown,
            Some(code) => code,
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
    catch_or(c"UNKNOWN".as_ptr(), || StatusCode::from_u32(code).map_or(c"UNKNOWN", c_name).as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `iree_status_code_t` and `iree_status_code_string` (IREE's `iree/base/status.h`), and our
    /// own PANIC.
    const IREE_CODES: [(u32, &str); 20] = [
        (0, "OK"),
        (1, "CANCELLED"),
        (2, "UNKNOWN"),
        (3, "INVALID_ARGUMENT"),
        (4, "DEADLINE_EXCEEDED"),
        (5, "NOT_FOUND"),
        (6, "ALREADY_EXISTS"),
        (7, "PERMISSION_DENIED"),
        (8, "RESOURCE_EXHAUSTED"),
        (9, "FAILED_PRECONDITION"),
        (10, "ABORTED"),
        (11, "OUT_OF_RANGE"),
        (12, "UNIMPLEMENTED"),
        (13, "INTERNAL"),
        (14, "UNAVAILABLE"),
        (15, "DATA_LOSS"),
        (16, "UNAUTHENTICATED"),
        (17, "DEFERRED"),
        (18, "INCOMPATIBLE"),
        (100, "PANIC"),
    ];

    #[test]
    fn every_code_keeps_irees_number_and_name_in_rust_and_in_c() {
        for (number, name) in IREE_CODES {
            let code = StatusCode::from_u32(number).unwrap();
            assert_eq!((code as u32, code.as_str()), (number, name));
            assert_eq!(rtx_status_code_t::from(code) as u32, number, "{name}");
            // SAFETY: the names have static storage.
            assert_eq!(unsafe { CStr::from_ptr(rtx_status_code_name(number)) }.to_str(), Ok(name));
        }
        for number in [19, 99, 101, u32::MAX] {
            assert_eq!(StatusCode::from_u32(number), None);
            // SAFETY: as above.
            assert_eq!(unsafe { CStr::from_ptr(rtx_status_code_name(number)) }.to_str(), Ok("UNKNOWN"));
        }
    }
}
