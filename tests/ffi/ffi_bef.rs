//! The C kernel API exercised from Rust through the exported functions: a kernel that misuses
//! its frame gets an error result naming the mistake, never a crash; NULLs are refused.
//! `c-examples/bef_kernel.c` is the well-behaved C program.

use crate::common::{error_of, invoke, load_file, new_context, ok, release_all, take};

use std::ffi::{c_void, CString};
use std::path::Path;
use std::ptr;

use rtx::ffi::async_value::*;
use rtx::ffi::context::*;
use rtx::ffi::kernel::*;
use rtx::ffi::module::*;

use rtx::ffi::error::rtx_status_code_t::*;

/// Where `my.scale.i32` is in the source of `bef_kernel.bef`, as located errors start.
const KERNEL: &str = "c-examples/bef_kernel.mlir:7:13";

/// Result 5 of a kernel with one result.
unsafe extern "C" fn sets_result_out_of_range(frame: *mut rtx_kernel_frame_t, _: *mut c_void) {
    // SAFETY: the frame is live during the call.
    unsafe { rtx_kernel_frame_set_result(frame, 5, rtx_async_value_new_i32(1)) };
}

unsafe extern "C" fn sets_null_result(frame: *mut rtx_kernel_frame_t, _: *mut c_void) {
    // SAFETY: the frame is live during the call.
    unsafe { rtx_kernel_frame_set_result(frame, 0, ptr::null_mut()) };
}

/// Reads its argument out of range (NULL) and leaves its result unset.
unsafe extern "C" fn leaves_result_unset(frame: *mut rtx_kernel_frame_t, _: *mut c_void) {
    // SAFETY: the frame is live during the call.
    unsafe {
        assert_eq!(rtx_kernel_frame_num_args(frame), 1);
        assert!(!rtx_kernel_frame_arg(frame, 0).is_null());
        assert!(rtx_kernel_frame_arg(frame, 1).is_null());
    }
}

/// Reports the error of reading a missing attribute.
unsafe extern "C" fn reads_missing_attribute(frame: *mut rtx_kernel_frame_t, _: *mut c_void) {
    let mut out = 0i64;
    // SAFETY: the frame is live during the call.
    let error = unsafe { rtx_kernel_frame_attr_i64(frame, c"nope".as_ptr(), &mut out) };
    let (code, message) = take(error).expect("no attribute `nope`");
    assert_eq!(code, RTX_STATUS_CODE_NOT_FOUND);
    let message = CString::new(message).unwrap();
    // SAFETY: as above.
    unsafe { rtx_kernel_frame_report_error(frame, message.as_ptr()) };
}

/// Runs `bef_kernel.scale_plus_two(1)` with `kernel` as `my.scale.i32`; the result's error.
fn error_with(kernel: rtx_kernel_fn) -> (rtx::ffi::error::rtx_status_code_t, String) {
    let context = new_context(c"mstd:2");
    let module = load_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join("c-examples/bef_kernel.bef"));
    // SAFETY: live handles; the kernel ignores its NULL user data.
    unsafe {
        ok(rtx_context_register_kernel(context, c"my.scale.i32".as_ptr(), kernel, ptr::null_mut()));
        ok(rtx_context_add_module(context, module));
    }
    let argument = rtx_async_value_new_i32(1);
    let results = invoke(context, "scale_plus_two", &[argument], 1);
    let error = error_of(results[0]);
    release_all(&[results[0], argument]);
    // SAFETY: references the test owns.
    unsafe {
        rtx_module_release(module);
        rtx_context_release(context);
    }
    error
}

#[test]
fn a_kernel_that_misuses_its_frame_gets_an_error_result_naming_the_mistake() {
    let (code, message) = error_with(Some(sets_result_out_of_range));
    assert_eq!(code, RTX_STATUS_CODE_INVALID_ARGUMENT);
    assert_eq!(
        message,
        format!("{KERNEL}: {}", "rtx_kernel_frame_set_result: kernel `my.scale.i32` asks for result 5 but has 1")
    );
    let (code, message) = error_with(Some(sets_null_result));
    assert_eq!(code, RTX_STATUS_CODE_INVALID_ARGUMENT);
    assert_eq!(message, format!("{KERNEL}: {}", "rtx_kernel_frame_set_result: argument 'value' is NULL"));
    let (code, message) = error_with(Some(leaves_result_unset));
    assert_eq!(code, RTX_STATUS_CODE_INTERNAL);
    assert_eq!(message, format!("{KERNEL}: {}", "kernel `my.scale.i32` did not set its result 0"));
    let (code, message) = error_with(Some(reads_missing_attribute));
    assert_eq!(code, RTX_STATUS_CODE_INTERNAL);
    assert_eq!(
        message,
        format!("{KERNEL}: {}", "rtx_kernel_frame_attr_i64: kernel `my.scale.i32` has no attribute named `nope`")
    );
}

#[test]
fn null_arguments_are_refused_or_ignored_as_documented() {
    let context = new_context(c"s");
    // SAFETY: NULLs where the API allows them; the context is live.
    unsafe {
        let (code, message) =
            take(rtx_context_register_kernel(context, ptr::null(), Some(leaves_result_unset), ptr::null_mut()))
                .unwrap();
        assert_eq!(
            (code, message.as_str()),
            (RTX_STATUS_CODE_INVALID_ARGUMENT, "rtx_context_register_kernel: argument 'name' is NULL")
        );
        let (_, message) = take(rtx_context_register_kernel(context, c"k".as_ptr(), None, ptr::null_mut())).unwrap();
        assert_eq!(message, "rtx_context_register_kernel: argument 'fn' is NULL");
        assert_eq!(rtx_kernel_frame_num_args(ptr::null()), 0);
        assert_eq!(rtx_kernel_frame_num_results(ptr::null()), 0);
        assert!(rtx_kernel_frame_arg(ptr::null(), 0).is_null());
        rtx_kernel_frame_report_error(ptr::null_mut(), c"ignored".as_ptr());
        // A NULL frame still takes the value's reference (valgrind and the count would see a leak).
        let value = rtx_async_value_new_i32(1);
        rtx_async_value_retain(value);
        rtx_kernel_frame_set_result(ptr::null_mut(), 0, value);
        rtx_async_value_release(value);
        let mut out = 0.0f64;
        let (code, message) = take(rtx_kernel_frame_attr_f64(ptr::null(), c"x".as_ptr(), &mut out)).unwrap();
        assert_eq!(
            (code, message.as_str()),
            (RTX_STATUS_CODE_INVALID_ARGUMENT, "rtx_kernel_frame_attr_f64: argument 'frame' is NULL")
        );
        rtx_context_release(context);
    }
}
