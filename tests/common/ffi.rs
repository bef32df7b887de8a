//! Helpers for the tests that drive the C API from Rust.

use std::ffi::CStr;
use std::ptr;

use rtx::ffi::context::*;
use rtx::ffi::error::*;

/// Takes an error: its code and message, freeing it.
pub fn take(error: *mut rtx_error_t) -> Option<(rtx_status_code_t, String)> {
    if error.is_null() {
        return None;
    }
    // SAFETY: a non-null error from the library, freed once here.
    unsafe {
        let code = rtx_error_code(error);
        let message = CStr::from_ptr(rtx_error_message(error)).to_str().unwrap().to_string();
        rtx_error_delete(error);
        Some((code, message))
    }
}

pub fn code(error: *mut rtx_error_t) -> Option<rtx_status_code_t> {
    take(error).map(|(code, _)| code)
}

/// Asserts success.
pub fn ok(error: *mut rtx_error_t) {
    if let Some((code, message)) = take(error) {
        panic!("unexpected error {code:?}: {message}");
    }
}

/// A context on the work queue `spec`, with the other options at their defaults.
pub fn new_context(spec: &CStr) -> *mut rtx_context_t {
    let mut options = std::mem::MaybeUninit::<rtx_context_options_t>::uninit();
    let mut context = ptr::null_mut();
    // SAFETY: options initialised before use; out pointer valid.
    unsafe {
        rtx_context_options_init(options.as_mut_ptr());
        let mut options = options.assume_init();
        options.work_queue = spec.as_ptr();
        ok(rtx_context_new(&options, &mut context));
    }
    context
}
