//! Tracing from C: one process-wide session at a time, written as Chrome trace-event JSON (what
//! Perfetto and `chrome://tracing` open, and `rtx profile` sums up) when it ends.

use std::ffi::c_char;

use super::error::rtx_error_t;
use super::{c_str, catch_error};
use crate::host::tracing;

/// Starts recording spans of what the runtime does in this process — BEF kernels, VM function
/// calls (native ones included), the CPU devices' dispatches — to be written to `path` by
/// `rtx_tracing_end`. The file is created now. Errors: FAILED_PRECONDITION while a session is
/// active; INVALID_ARGUMENT for a NULL `path` or one that cannot be written.
#[no_mangle]
pub unsafe extern "C" fn rtx_tracing_begin(path: *const c_char) -> *mut rtx_error_t {
    catch_error(|| {
        // SAFETY: a non-null path is NUL-terminated by contract.
        let path = unsafe { c_str(path, "rtx_tracing_begin", "path") }?;
        tracing::begin(path)
    })
}

/// Stops recording and writes the trace. Spans still open then (work in flight on other
/// threads) are not in it. Errors: FAILED_PRECONDITION when no session is active; INTERNAL when
/// the file cannot be written.
#[no_mangle]
pub extern "C" fn rtx_tracing_end() -> *mut rtx_error_t {
    catch_error(|| tracing::end().map(drop))
}
