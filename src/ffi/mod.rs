//! The C ABI: every `extern "C"` function of `librtx`, one file per handle family.
//!
//! Rules every export follows (they are the README's "C API conventions"):
//! - its body runs inside [`catch_error`] or [`catch_or`], so a Rust panic becomes
//!   `RTX_STATUS_CODE_PANIC` (or the documented default) and never unwinds into C;
//! - every pointer is checked: a NULL handle gives INVALID_ARGUMENT, or does nothing in a
//!   function that cannot fail;
//! - out-parameters are written only on success;
//! - handles are converted only through the typed helpers of [`handle`], so one family's handle
//!   cannot be borrowed or freed as another's (rustls-ffi's idea).
//!
//! `include/rtx.h` is generated from this folder by cbindgen (`tests/ffi/header.rs`).
//!
//! # Safety (every `unsafe extern "C"` function here)
//! Each pointer argument is NULL or valid for what its documentation says: a handle created by
//! this library and not yet released, a NUL-terminated string, or storage for an out-parameter.
//! The functions check for NULL; they cannot check for dangling pointers. That one contract is
//! stated here instead of in a `# Safety` section per function, hence the lint allowance.
#![allow(clippy::missing_safety_doc)]

pub mod allocator;
pub mod async_value;
pub mod buffer_view;
pub mod context;
pub mod device;
pub mod eager;
pub mod error;
pub mod handle;
pub mod invocation;
pub mod kernel;
pub mod module;
pub mod native_module;
pub mod tracing;
pub mod version;
pub mod vulkan;
pub mod work_queue;

use std::ffi::{c_char, CStr};
use std::panic::{self, AssertUnwindSafe};

use crate::host::{Diagnostic, StatusCode};
use error::rtx_error_t;

/// Runs a fallible export: `Ok` becomes NULL, `Err` an owned `rtx_error_t`, a panic a PANIC error.
pub(crate) fn catch_error(body: impl FnOnce() -> Result<(), Diagnostic>) -> *mut rtx_error_t {
    match panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => std::ptr::null_mut(),
        Ok(Err(diagnostic)) => error::to_handle(diagnostic),
        Err(payload) => error::to_handle(panic_diagnostic(payload)),
    }
}

/// Runs an export that cannot report errors: a panic returns `default` instead of unwinding.
pub(crate) fn catch_or<T>(default: T, body: impl FnOnce() -> T) -> T {
    panic::catch_unwind(AssertUnwindSafe(body)).unwrap_or(default)
}

fn panic_diagnostic(payload: Box<dyn std::any::Any + Send>) -> Diagnostic {
    let what = crate::host::work_queue::panic_message(payload.as_ref());
    Diagnostic::new(StatusCode::Panic, format!("internal error (panic) inside rtx: {what}"))
}

pub(crate) fn invalid_argument(message: impl Into<String>) -> Diagnostic {
    Diagnostic::new(StatusCode::InvalidArgument, message)
}

/// Reads a NUL-terminated UTF-8 string argument.
///
/// # Safety
/// A non-null `ptr` must point to a NUL-terminated string.
pub(crate) unsafe fn c_str<'a>(ptr: *const c_char, function: &str, argument: &str) -> Result<&'a str, Diagnostic> {
    if ptr.is_null() {
        return Err(invalid_argument(format!("{function}: argument '{argument}' is NULL")));
    }
    // SAFETY: forwarded from the caller.
    unsafe { CStr::from_ptr(ptr) }
        .to_str()
        .map_err(|e| invalid_argument(format!("{function}: argument '{argument}' is not UTF-8 ({e})")))
}

/// Checks a caller-declared `struct_size` against the smallest version of the struct we know: a
/// larger one comes from a newer header and is fine (we read only the fields we know).
pub(crate) fn check_struct_size(declared: usize, known: usize, what: &str, function: &str) -> Result<(), Diagnostic> {
    if declared < known {
        return Err(invalid_argument(format!(
            "{function}: {what}->struct_size is {declared}, smaller than any version of the struct ({known}); \
             set it to sizeof the struct"
        )));
    }
    Ok(())
}

/// Reads a message argument: NULL is empty, invalid UTF-8 is replaced rather than rejected (a
/// message should never be lost for its encoding).
///
/// # Safety
/// A non-null `ptr` must point to a NUL-terminated string.
pub(crate) unsafe fn message_arg(ptr: *const c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: forwarded from the caller.
    unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
}

/// A C `void*` carried into closures that may run on another thread. The C API documents that
/// callbacks may run on any worker thread, so the host has agreed to this.
#[derive(Clone, Copy)]
pub(crate) struct UserData(pub(crate) *mut std::ffi::c_void);

// SAFETY: see the type's doc: sending it is part of the documented C contract.
unsafe impl Send for UserData {}
// SAFETY: as above.
unsafe impl Sync for UserData {}

/// A C callback with its user data, runnable from any thread.
#[derive(Clone, Copy)]
pub(crate) struct Callback {
    pub(crate) function: unsafe extern "C" fn(user_data: *mut std::ffi::c_void),
    pub(crate) user_data: UserData,
}

impl Callback {
    pub(crate) fn call(self) {
        // SAFETY: the host promised `function` is callable with its `user_data` from any thread.
        unsafe { (self.function)(self.user_data.0) }
    }
}
