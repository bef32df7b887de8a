//! Tracing through the exported functions: a session from begin to end writes the trace, and
//! misuse is an error with the documented code. The only test of this binary that traces.

use crate::common::{ok, take};

use std::ffi::CString;
use std::ptr;

use rtx::ffi::error::rtx_status_code_t::*;
use rtx::ffi::tracing::*;

#[test]
fn a_session_writes_its_file_and_misuse_is_refused() {
    let missing = |error| take(error).expect("an error").0;
    // SAFETY: NULL is refused before it is read.
    assert_eq!(missing(unsafe { rtx_tracing_begin(ptr::null()) }), RTX_STATUS_CODE_INVALID_ARGUMENT);
    assert_eq!(missing(rtx_tracing_end()), RTX_STATUS_CODE_FAILED_PRECONDITION, "nothing to end");
    let path = std::env::temp_dir().join(format!("rtx-ffi-trace-{}.json", std::process::id()));
    let c_path = CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    ok(unsafe { rtx_tracing_begin(c_path.as_ptr()) });
    // SAFETY: as above.
    assert_eq!(missing(unsafe { rtx_tracing_begin(c_path.as_ptr()) }), RTX_STATUS_CODE_FAILED_PRECONDITION);
    ok(rtx_tracing_end());
    let text = std::fs::read_to_string(&path).expect("the trace was written");
    let _ = std::fs::remove_file(&path);
    assert!(text.starts_with("{\"traceEvents\":[") && text.contains("\"process_name\""), "{text}");
}
