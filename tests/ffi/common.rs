//! Helpers for the tests that drive the C API from Rust.

use std::ffi::{CStr, CString};
use std::path::Path;
use std::ptr;

use rtx::ffi::async_value::*;
use rtx::ffi::context::*;
use rtx::ffi::error::*;
use rtx::ffi::invocation::*;
use rtx::ffi::module::*;

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

/// Loads the module at `path` (the caller releases it).
pub fn load_file(path: &Path) -> *mut rtx_module_t {
    let path = CString::new(path.to_str().expect("UTF-8 path")).unwrap();
    let mut module = ptr::null_mut();
    // SAFETY: valid path and out pointer.
    ok(unsafe { rtx_module_load_file(path.as_ptr(), &mut module) });
    module
}

/// Invokes `function`, awaits the results and returns them (the caller releases them).
pub fn invoke(
    context: *mut rtx_context_t,
    function: &str,
    args: &[*mut rtx_async_value_t],
    num_results: usize,
) -> Vec<*mut rtx_async_value_t> {
    let name = CString::new(function).unwrap();
    let mut results = vec![ptr::null_mut(); num_results];
    // SAFETY: live handles and arrays of the stated sizes.
    unsafe {
        ok(rtx_context_invoke(context, name.as_ptr(), args.as_ptr(), args.len(), results.as_mut_ptr(), num_results));
        ok(rtx_async_value_await(context, results.as_ptr(), results.len()));
    }
    results
}

pub fn release_all(values: &[*mut rtx_async_value_t]) {
    for &value in values {
        // SAFETY: each is a reference the test owns.
        unsafe { rtx_async_value_release(value) };
    }
}

/// The error of an error value.
pub fn error_of(value: *mut rtx_async_value_t) -> (rtx_status_code_t, String) {
    // SAFETY: a live value.
    take(unsafe { rtx_async_value_get_error(value) }).expect("the value is an error")
}
