//! Tensors through the C API, exercised from Rust through the exported functions: buffer views
//! (creation checks, accessors, copies out), async values holding them, a context's device, and
//! `rtx_context_invoke` running the tensor programs of `tests/fixtures/hal_run` (iree-compile 3.13
//! for vmvx, embedded ELF and system ELF) with buffer views in and out.

use crate::common::{code, error_of, invoke, load_file, new_context, ok, release_all, take};

use std::ffi::{c_void, CStr};
use std::ptr;
use std::sync::Arc;

use rtx::ffi::async_value::*;
use rtx::ffi::buffer_view::*;
use rtx::ffi::context::*;
use rtx::ffi::device::*;
use rtx::ffi::error::*;
use rtx::ffi::handle;
use rtx::ffi::invocation::*;
use rtx::ffi::module::*;

use rtx_status_code_t::*;

const F32: u32 = 0x2100_0020;
const I32: u32 = 0x1000_0020;
const I4: u32 = 0x1000_0004;
const FORMATS: [&str; 3] = ["vmvx", "embedded", "system"];

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn i32_bytes(values: &[i32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// A new buffer view (the caller releases it).
fn view(element_type: u32, shape: &[i64], bytes: &[u8]) -> *mut rtx_buffer_view_t {
    let mut out = ptr::null_mut();
    // SAFETY: arrays of the stated lengths and a writable out-pointer.
    ok(unsafe {
        rtx_buffer_view_new(element_type, shape.as_ptr(), shape.len(), bytes.as_ptr().cast(), bytes.len(), &mut out)
    });
    assert!(!out.is_null());
    out
}

/// What `rtx_buffer_view_new` says about these arguments: (code, message), out left untouched.
fn refused(
    element_type: u32,
    shape: *const i64,
    rank: usize,
    data: *const u8,
    length: usize,
) -> (rtx_status_code_t, String) {
    let sentinel = 0x5a5a as *mut rtx_buffer_view_t;
    let mut out = sentinel;
    // SAFETY: non-null arrays are of the stated lengths; `out` is writable.
    let error = unsafe { rtx_buffer_view_new(element_type, shape, rank, data.cast(), length, &mut out) };
    assert_eq!(out, sentinel, "out_view must be written only on success");
    take(error).expect("the call fails")
}

/// Element type, shape and bytes of a view.
type Contents = (u32, Vec<i64>, Vec<u8>);

/// Element type, shape and bytes of a view, read through the C accessors.
fn contents(view: *const rtx_buffer_view_t) -> Contents {
    // SAFETY: a live view; the buffer has room for the byte length.
    unsafe {
        let rank = rtx_buffer_view_rank(view);
        let shape = (0..rank).map(|i| rtx_buffer_view_dim(view, i)).collect();
        assert_eq!(rtx_buffer_view_dim(view, rank), -1, "a dimension past the rank is -1");
        let mut bytes = vec![0u8; rtx_buffer_view_byte_length(view)];
        ok(rtx_buffer_view_copy_data(view, bytes.as_mut_ptr().cast(), bytes.len()));
        (rtx_buffer_view_element_type(view), shape, bytes)
    }
}

/// How many references the view has: C handles, async values and VM refs share one count.
fn references(view: *const rtx_buffer_view_t) -> usize {
    // SAFETY: `view` is a live handle.
    let view = unsafe { handle::clone(view, "references", "view") }.unwrap();
    Arc::strong_count(&view) - 1
}

fn load(name: &str, format: &str) -> *mut rtx_module_t {
    load_file(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/hal_run/{name}_{format}.vmfb")),
    )
}

/// A context on `spec` with the local-sync device and the programs compiled for `format`.
fn tensor_context(spec: &CStr, format: &str) -> *mut rtx_context_t {
    module_context(spec, "programs", format, c"local-sync")
}

/// A context on `spec` with `device` and `<name>_<format>.vmfb`.
fn module_context(spec: &CStr, name: &str, format: &str, device: &CStr) -> *mut rtx_context_t {
    let context = new_context(spec);
    let module = load(name, format);
    // SAFETY: live handles; the context keeps its own reference to the module.
    unsafe {
        ok(rtx_context_add_device(context, device.as_ptr()));
        ok(rtx_context_add_module(context, module));
        rtx_module_release(module);
    }
    context
}

/// Calls `function` with tensor arguments and returns each tensor result's contents.
fn call(
    context: *mut rtx_context_t,
    function: &str,
    views: &[*mut rtx_buffer_view_t],
    num_results: usize,
) -> Vec<Contents> {
    // SAFETY: live views; every handle made here is released here.
    unsafe {
        let args: Vec<_> = views.iter().map(|&v| rtx_async_value_new_buffer_view(v)).collect();
        let results = invoke(context, function, &args, num_results);
        let out = results.iter().map(|&r| {
            assert_eq!(rtx_async_value_type(r), rtx_value_type_t::RTX_VALUE_TYPE_BUFFER_VIEW, "{function}");
            let view = get_view(r);
            let contents = contents(view);
            rtx_buffer_view_release(view);
            contents
        });
        let out = out.collect();
        release_all(&results);
        release_all(&args);
        out
    }
}

fn get_view(value: *mut rtx_async_value_t) -> *mut rtx_buffer_view_t {
    let mut view = ptr::null_mut();
    // SAFETY: a live value and a writable out-pointer.
    ok(unsafe { rtx_async_value_get_buffer_view(value, &mut view) });
    view
}

#[test]
fn a_buffer_view_holds_a_copy_of_the_host_data_with_its_type_and_shape() {
    let values: Vec<f32> = (0..6).map(|i| i as f32 * 1.5 - 2.0).collect();
    let mut bytes = f32_bytes(&values);
    let v = view(F32, &[2, 3], &bytes);
    bytes.fill(0); // the view copied them
    assert_eq!(contents(v), (F32, vec![2, 3], f32_bytes(&values)));
    // SAFETY: a live view; the borrowed data has byte_length bytes while it lives.
    unsafe {
        assert_eq!(rtx_buffer_view_byte_length(v), 24);
        let data = std::slice::from_raw_parts(rtx_buffer_view_data(v).cast::<u8>(), 24);
        assert_eq!(data, f32_bytes(&values).as_slice());
        assert_eq!(references(v), 1);
        assert_eq!(rtx_buffer_view_retain(v), v);
        assert_eq!(references(v), 2);
        rtx_buffer_view_release(v);
        rtx_buffer_view_release(v);
    }

    // Rank 0 (one element, NULL shape allowed), an empty tensor (NULL data allowed) and packed
    // sub-byte elements.
    let scalar = {
        let mut out = ptr::null_mut();
        let bytes = i32_bytes(&[7]);
        // SAFETY: NULL shape with rank 0, 4 readable bytes, writable out.
        ok(unsafe { rtx_buffer_view_new(I32, ptr::null(), 0, bytes.as_ptr().cast(), 4, &mut out) });
        out
    };
    assert_eq!(contents(scalar), (I32, vec![], i32_bytes(&[7])));
    let empty = {
        let mut out = ptr::null_mut();
        // SAFETY: a shape of one dimension, no data, writable out.
        ok(unsafe { rtx_buffer_view_new(F32, [0i64].as_ptr(), 1, ptr::null(), 0, &mut out) });
        out
    };
    assert_eq!(contents(empty), (F32, vec![0], vec![]));
    // SAFETY: an empty view copies nothing, even to NULL.
    ok(unsafe { rtx_buffer_view_copy_data(empty, ptr::null_mut(), 0) });
    let nibbles = view(I4, &[3], &[0x21, 0x03]);
    assert_eq!(contents(nibbles), (I4, vec![3], vec![0x21, 0x03]));
    // SAFETY: handles owned here.
    unsafe {
        rtx_buffer_view_release(scalar);
        rtx_buffer_view_release(empty);
        rtx_buffer_view_release(nibbles);
    }
}

/// The messages of errors that must all be INVALID_ARGUMENT.
fn invalid_argument_messages(errors: impl IntoIterator<Item = *mut rtx_error_t>) -> Vec<String> {
    errors
        .into_iter()
        .map(|error| {
            let (status, message) = take(error).expect("refused");
            assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT, "{message}");
            message
        })
        .collect()
}

/// `rtx_buffer_view_info` says in one call what the accessors say; it checks its arguments and
/// the caller's struct size, writing nothing when it refuses.
#[test]
fn buffer_view_info_gives_what_the_accessors_give() {
    let cases = [view(F32, &[2, 3], &f32_bytes(&[0.5; 6])), view(I32, &[], &i32_bytes(&[7])), view(F32, &[4, 0], &[])];
    for v in cases {
        let mut info = rtx_buffer_view_info_t {
            struct_size: std::mem::size_of::<rtx_buffer_view_info_t>(),
            element_type: 0,
            rank: 99,
            shape: ptr::null(),
            data: ptr::null(),
            byte_length: 99,
        };
        // SAFETY: a live view and a writable struct of the declared size.
        ok(unsafe { rtx_buffer_view_info(v, &mut info) });
        let (element_type, shape, bytes) = contents(v);
        assert_eq!((info.element_type, info.rank, info.byte_length), (element_type, shape.len(), bytes.len()));
        // SAFETY: `rank` dimensions at `shape` and the data, borrowed from the live view.
        unsafe {
            assert_eq!(std::slice::from_raw_parts(info.shape, info.rank), shape.as_slice());
            assert_eq!(info.data, rtx_buffer_view_data(v));
            if info.byte_length > 0 {
                assert_eq!(std::slice::from_raw_parts(info.data.cast::<u8>(), info.byte_length), bytes.as_slice());
            }
        }
    }
    let mut small = rtx_buffer_view_info_t {
        struct_size: 8,
        element_type: 5,
        rank: 5,
        shape: ptr::null(),
        data: ptr::null(),
        byte_length: 5,
    };
    // SAFETY: NULL where the function checks for it; live handles elsewhere.
    let refusals = unsafe {
        [
            rtx_buffer_view_info(cases[0], &mut small),
            rtx_buffer_view_info(ptr::null(), &mut small),
            rtx_buffer_view_info(cases[0], ptr::null_mut()),
        ]
    };
    let messages = invalid_argument_messages(refusals);
    assert!(messages[0].starts_with("rtx_buffer_view_info: out->struct_size is 8"), "{}", messages[0]);
    assert_eq!(
        messages[1..],
        ["rtx_buffer_view_info: argument 'view' is NULL", "rtx_buffer_view_info: argument 'out' is NULL"]
    );
    assert_eq!((small.element_type, small.rank, small.byte_length), (5, 5, 5), "nothing written");
    for v in cases {
        // SAFETY: the test's reference.
        unsafe { rtx_buffer_view_release(v) };
    }
}

#[test]
fn buffer_view_creation_names_what_is_wrong() {
    let bytes = [0u8; 64];
    let shape = [2i64, 3];
    let (status, message) = refused(F32, shape.as_ptr(), 2, bytes.as_ptr(), 20);
    assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
    assert!(message.contains("shape [2, 3] of f32 (0x21000020) needs 24 bytes, but 20 were given"), "{message}");
    let (status, message) = refused(F32, [2i64, -3].as_ptr(), 2, bytes.as_ptr(), 24);
    assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
    assert!(message.contains("dimension 1 of shape [2, -3] is negative"), "{message}");
    let (status, message) = refused(0x2100_0000, shape.as_ptr(), 2, bytes.as_ptr(), 0);
    assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
    assert!(message.contains("element type 0x21000000 has no size"), "{message}");
    let (status, message) = refused(F32, ptr::null(), 2, bytes.as_ptr(), 24);
    assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
    assert!(message.contains("'shape' is NULL but rank is 2"), "{message}");
    let (status, message) = refused(F32, shape.as_ptr(), 2, ptr::null(), 24);
    assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
    assert!(message.contains("'data' is NULL but byte_length is 24"), "{message}");
    let (status, message) = refused(F32, [i64::MAX, i64::MAX].as_ptr(), 2, bytes.as_ptr(), 24);
    assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
    assert!(message.contains("too large"), "{message}");
    // SAFETY: a NULL out-pointer is refused before anything is read.
    let error = unsafe { rtx_buffer_view_new(F32, shape.as_ptr(), 2, bytes.as_ptr().cast(), 24, ptr::null_mut()) };
    assert_eq!(code(error), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));
}

#[test]
fn a_too_small_output_buffer_is_out_of_range_and_left_untouched() {
    let v = view(I32, &[4], &i32_bytes(&[1, 2, 3, 4]));
    let mut out = [0xEEu8; 15];
    // SAFETY: `out` has 15 writable bytes.
    let (status, message) = take(unsafe { rtx_buffer_view_copy_data(v, out.as_mut_ptr().cast(), out.len()) }).unwrap();
    assert_eq!(status, RTX_STATUS_CODE_OUT_OF_RANGE);
    assert!(message.contains("the view has 16 bytes but 'out' has room for 15"), "{message}");
    assert_eq!(out, [0xEE; 15], "nothing was copied");
    let mut large = [0xEEu8; 20];
    // SAFETY: `large` has 20 writable bytes.
    ok(unsafe { rtx_buffer_view_copy_data(v, large.as_mut_ptr().cast(), large.len()) });
    assert_eq!(&large[..16], i32_bytes(&[1, 2, 3, 4]).as_slice());
    assert_eq!(&large[16..], [0xEE; 4], "bytes past the data are left as they were");
    // SAFETY: NULL out with data to copy is refused.
    let error = unsafe { rtx_buffer_view_copy_data(v, ptr::null_mut(), 16) };
    assert_eq!(code(error), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));
    // SAFETY: the view is owned here.
    unsafe { rtx_buffer_view_release(v) };
}

#[test]
fn null_buffer_views_are_invalid_arguments_or_ignored() {
    // SAFETY: every function is called with NULL where a handle is expected.
    unsafe {
        let mut byte = 0u8;
        let error = rtx_buffer_view_copy_data(ptr::null(), (&mut byte as *mut u8).cast::<c_void>(), 1);
        assert_eq!(code(error), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));
        assert_eq!(rtx_buffer_view_element_type(ptr::null()), 0);
        assert_eq!(rtx_buffer_view_rank(ptr::null()), 0);
        assert_eq!(rtx_buffer_view_dim(ptr::null(), 0), -1);
        assert_eq!(rtx_buffer_view_byte_length(ptr::null()), 0);
        assert!(rtx_buffer_view_data(ptr::null()).is_null());
        assert!(rtx_buffer_view_retain(ptr::null_mut()).is_null());
        rtx_buffer_view_release(ptr::null_mut());
        assert!(rtx_async_value_new_buffer_view(ptr::null_mut()).is_null());

        let value = rtx_async_value_new_unavailable();
        let (status, message) = take(rtx_async_value_set_buffer_view(value, ptr::null_mut())).unwrap();
        assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
        assert!(message.contains("'view' is NULL"), "{message}");
        let v = view(F32, &[1], &f32_bytes(&[1.0]));
        assert_eq!(code(rtx_async_value_set_buffer_view(ptr::null_mut(), v)), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));
        let mut out = ptr::null_mut();
        assert_eq!(
            code(rtx_async_value_get_buffer_view(ptr::null(), &mut out)),
            Some(RTX_STATUS_CODE_INVALID_ARGUMENT)
        );
        assert_eq!(
            code(rtx_async_value_get_buffer_view(value, ptr::null_mut())),
            Some(RTX_STATUS_CODE_INVALID_ARGUMENT)
        );
        assert_eq!(references(v), 1, "failed calls took no reference");
        rtx_buffer_view_release(v);
        rtx_async_value_release(value);

        assert_eq!(
            code(rtx_context_add_device(ptr::null_mut(), c"local-sync".as_ptr())),
            Some(RTX_STATUS_CODE_INVALID_ARGUMENT)
        );
        let context = new_context(c"s");
        assert_eq!(code(rtx_context_add_device(context, ptr::null())), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));
        rtx_context_release(context);
    }
}

#[test]
fn async_values_hold_buffer_views_and_share_their_reference_count() {
    let v = view(F32, &[2], &f32_bytes(&[1.0, -1.0]));
    // SAFETY: handles created and released here.
    unsafe {
        let value = rtx_async_value_new_buffer_view(v);
        assert_eq!(references(v), 2, "the value holds a reference of its own");
        assert_eq!(rtx_async_value_type(value), rtx_value_type_t::RTX_VALUE_TYPE_BUFFER_VIEW);
        let read = get_view(value);
        assert_eq!(read, v, "the same view comes back, not a copy");
        assert_eq!(references(v), 3);
        rtx_buffer_view_release(read);

        // A buffer view is not a scalar, and a scalar is not a buffer view.
        let mut scalar = 0f32;
        assert_eq!(code(rtx_async_value_get_f32(value, &mut scalar)), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));
        let number = rtx_async_value_new_i32(5);
        let mut out = ptr::null_mut();
        let (status, message) = take(rtx_async_value_get_buffer_view(number, &mut out)).unwrap();
        assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
        assert!(message.contains("the value holds i32, not a buffer view"), "{message}");
        assert!(out.is_null());

        // Promises: unavailable is FAILED_PRECONDITION, then set once.
        let promise = rtx_async_value_new_unavailable();
        assert_eq!(code(rtx_async_value_get_buffer_view(promise, &mut out)), Some(RTX_STATUS_CODE_FAILED_PRECONDITION));
        ok(rtx_async_value_set_buffer_view(promise, v));
        assert_eq!(code(rtx_async_value_set_buffer_view(promise, v)), Some(RTX_STATUS_CODE_FAILED_PRECONDITION));
        assert_eq!(references(v), 3);
        // An error value's error comes back unchanged.
        let failed = rtx_async_value_new_error(RTX_STATUS_CODE_DATA_LOSS as u32, c"no tensor".as_ptr());
        let (status, message) = take(rtx_async_value_get_buffer_view(failed, &mut out)).unwrap();
        assert_eq!((status, message.as_str()), (RTX_STATUS_CODE_DATA_LOSS, "no tensor"));

        // Released in any order: the view outlives the values and the values the view handle.
        release_all(&[value, number, failed]);
        assert_eq!(references(v), 2);
        rtx_buffer_view_release(v);
        let read = get_view(promise);
        assert_eq!(contents(read), (F32, vec![2], f32_bytes(&[1.0, -1.0])));
        rtx_async_value_release(promise);
        assert_eq!(references(read), 1);
        rtx_buffer_view_release(read);
    }
}

#[test]
fn modules_that_import_hal_need_a_device_and_devices_are_checked() {
    let context = new_context(c"s");
    let module = load("programs", "vmvx");
    // SAFETY: handles created and released here.
    unsafe {
        let (status, message) = take(rtx_context_add_module(context, module)).unwrap();
        assert_eq!(status, RTX_STATUS_CODE_FAILED_PRECONDITION);
        assert!(message.contains("module `module` runs tensor programs (it imports `hal`)"), "{message}");
        assert!(message.contains("has no device: add one (e.g. \"local-sync\") before adding it"), "{message}");

        let (status, message) = take(rtx_context_add_device(context, c"cuda".as_ptr())).unwrap();
        assert_eq!(status, RTX_STATUS_CODE_NOT_FOUND);
        assert!(message.contains("no device `cuda`") && message.contains("local-sync"), "{message}");
        ok(rtx_context_add_device(context, c"local-sync://".as_ptr()));
        let (status, message) = take(rtx_context_add_device(context, c"local-sync".as_ptr())).unwrap();
        assert_eq!(status, RTX_STATUS_CODE_ALREADY_EXISTS);
        assert!(message.contains("already has a device"), "{message}");

        ok(rtx_context_add_module(context, module));
        rtx_module_release(module);
        rtx_context_release(context);
    }
}

/// The inputs of `matmul` (4x8 and 8x4) and their product, computed here.
fn matmul_case() -> (Vec<f32>, Vec<f32>, [f32; 16]) {
    let a: Vec<f32> = (0..32).map(|i| (i % 7) as f32 - 3.0).collect();
    let b: Vec<f32> = (0..32).map(|i| (i % 5) as f32 * 0.5).collect();
    let mut product = [0f32; 16];
    for i in 0..4 {
        for j in 0..4 {
            product[i * 4 + j] = (0..8).map(|k| a[i * 8 + k] * b[k * 4 + j]).sum();
        }
    }
    (a, b, product)
}

#[test]
fn tensor_programs_run_through_invoke_on_every_format_and_queue() {
    let (a, b, product) = matmul_case();
    let x = [0.5f32, -1.0, 2.0, 1.0];
    // By hand: x · W + bias, then relu, with the constants in programs.mlir.
    let dense = [0.0f32, 2.5, 1.0];
    let sum_input: Vec<i32> = (1..=15).collect();
    for spec in [c"s", c"mstd:2,2"] {
        for format in FORMATS {
            let context = tensor_context(spec, format);
            let what = format!("{format} on {spec:?}");
            let (va, vb) = (view(F32, &[4, 8], &f32_bytes(&a)), view(F32, &[8, 4], &f32_bytes(&b)));
            assert_eq!(call(context, "matmul", &[va, vb], 1), [(F32, vec![4, 4], f32_bytes(&product))], "{what}");
            let vx = view(F32, &[1, 4], &f32_bytes(&x));
            assert_eq!(call(context, "module.dense_relu", &[vx], 1), [(F32, vec![1, 3], f32_bytes(&dense))], "{what}");
            let vs = view(I32, &[3, 5], &i32_bytes(&sum_input));
            assert_eq!(call(context, "sum", &[vs], 1), [(I32, vec![], i32_bytes(&[120]))], "{what}");
            // A tensor and a scalar in; a dynamic shape out.
            let input: Vec<f32> = (0..5).map(|i| i as f32 - 2.5).collect();
            let vd = view(F32, &[5], &f32_bytes(&input));
            // SAFETY: handles created and released here.
            unsafe {
                let args = [rtx_async_value_new_buffer_view(vd), rtx_async_value_new_f32(-2.0)];
                let results = invoke(context, "scale_dynamic", &args, 1);
                let out = get_view(results[0]);
                let expected: Vec<f32> = input.iter().map(|v| v * -2.0).collect();
                assert_eq!(contents(out), (F32, vec![5], f32_bytes(&expected)), "{what}");
                rtx_buffer_view_release(out);
                release_all(&results);
                release_all(&args);
                for v in [va, vb, vx, vs, vd] {
                    assert_eq!(references(v), 1, "the call let go of its argument ({what})");
                    rtx_buffer_view_release(v);
                }
                rtx_context_release(context);
            }
        }
    }
}

/// A `coarse-fences` function called with its declared arguments only: the call supplies the
/// fences and the results are available once the program's signal is reached.
#[test]
fn coarse_fences_functions_take_implicit_fences() {
    for format in FORMATS {
        for device in [c"local-sync", c"local-task"] {
            let context = module_context(c"mstd:2,2", "async", format, device);
            let x = view(I32, &[5], &i32_bytes(&[1, 2, 3, -4, 5]));
            // SAFETY: handles created here and released here.
            unsafe {
                let args = [rtx_async_value_new_buffer_view(x), rtx_async_value_new_i32(-3)];
                let results = invoke(context, "scale", &args, 1);
                let out = get_view(results[0]);
                assert_eq!(contents(out), (I32, vec![5], i32_bytes(&[-3, -6, -9, 12, -15])), "{format}");
                rtx_buffer_view_release(out);
                release_all(&results);
                release_all(&args);
                rtx_buffer_view_release(x);
                rtx_context_release(context);
            }
        }
    }
}

/// With explicit fences the call starts when the wait value is set and sets the caller's signal
/// promise (a chain) when the program's work is done; the results follow it.
#[test]
fn coarse_fences_functions_take_async_values_as_fences() {
    for format in FORMATS {
        let context = module_context(c"mstd:2,2", "async", format, c"local-task");
        let x = view(I32, &[3], &i32_bytes(&[7, -1, 0]));
        // SAFETY: handles created and released here.
        unsafe {
            let (wait, signal) = (rtx_async_value_new_unavailable(), rtx_async_value_new_unavailable());
            let args = [rtx_async_value_new_buffer_view(x), rtx_async_value_new_i32(4), wait, signal];
            let mut result = ptr::null_mut();
            ok(rtx_context_invoke(context, c"scale".as_ptr(), args.as_ptr(), 4, &mut result, 1));
            rtx_context_quiesce(context);
            assert!(!rtx_async_value_is_available(signal), "{format}: nothing runs before the wait");
            assert!(!rtx_async_value_is_available(result));
            ok(rtx_async_value_set_chain(wait));
            ok(rtx_async_value_await(context, &signal, 1));
            assert_eq!(rtx_async_value_type(signal), rtx_value_type_t::RTX_VALUE_TYPE_CHAIN, "{format}");
            ok(rtx_async_value_await(context, &result, 1));
            let out = get_view(result);
            assert_eq!(contents(out), (I32, vec![3], i32_bytes(&[28, -4, 0])), "{format}");
            rtx_buffer_view_release(out);
            release_all(&args);
            release_all(&[result]);
            rtx_buffer_view_release(x);
            rtx_context_release(context);
        }
    }
}

/// A failed wait fence fails the results and the signal; a signal that cannot become a chain
/// is refused up front; a wrong count names both forms.
#[test]
fn coarse_fences_errors_reach_the_signal_and_bad_fences_are_refused() {
    let context = module_context(c"mstd:2,2", "async", "embedded", c"local-sync");
    let x = view(I32, &[1], &i32_bytes(&[1]));
    // SAFETY: handles created and released here.
    unsafe {
        let wait = rtx_async_value_new_error(RTX_STATUS_CODE_ABORTED as u32, c"producer failed".as_ptr());
        let signal = rtx_async_value_new_unavailable();
        let args = [rtx_async_value_new_buffer_view(x), rtx_async_value_new_i32(2), wait, signal];
        let results = invoke(context, "scale", &args, 1);
        ok(rtx_async_value_await(context, &signal, 1));
        for value in [results[0], signal] {
            let (code, message) = error_of(value);
            assert_eq!(code, RTX_STATUS_CODE_ABORTED);
            assert!(message.contains("the wait fence of `module.scale` failed: producer failed"), "{message}");
        }
        release_all(&results);

        let available = rtx_async_value_new_chain();
        let typed = rtx_async_value_new_i32(0);
        for (bad, what) in [(available, "available (a chain)"), (typed, "available (i32)")] {
            let args = [args[0], args[1], args[2], bad];
            let mut result = ptr::null_mut();
            let (code, message) =
                take(rtx_context_invoke(context, c"scale".as_ptr(), args.as_ptr(), 4, &mut result, 1)).unwrap();
            assert_eq!(code, RTX_STATUS_CODE_INVALID_ARGUMENT);
            assert!(message.contains("argument 3) must be an unavailable value"), "{message}");
            assert!(message.contains(what), "{message}");
            assert!(result.is_null());
        }
        let mut result = ptr::null_mut();
        let (code, message) =
            take(rtx_context_invoke(context, c"scale".as_ptr(), args.as_ptr(), 3, &mut result, 1)).unwrap();
        assert_eq!(code, RTX_STATUS_CODE_INVALID_ARGUMENT);
        assert!(
            message.contains("takes 2 arguments (coarse-fences: or 4 with a wait and a signal fence)"),
            "{message}"
        );
        release_all(&args);
        release_all(&[available, typed]);
        rtx_buffer_view_release(x);
        rtx_context_release(context);
    }
}

#[test]
fn an_argument_set_after_the_call_is_waited_for() {
    let context = tensor_context(c"mstd:2,2", "embedded");
    let v = view(F32, &[4], &f32_bytes(&[-1.0, 2.0, -3.5, 0.0]));
    // SAFETY: handles created and released here.
    unsafe {
        let promise = rtx_async_value_new_unavailable();
        let mut result = ptr::null_mut();
        ok(rtx_context_invoke(context, c"abs".as_ptr(), &promise, 1, &mut result, 1));
        rtx_context_quiesce(context);
        assert!(!rtx_async_value_is_available(result));
        ok(rtx_async_value_set_buffer_view(promise, v));
        ok(rtx_async_value_await(context, &result, 1));
        let out = get_view(result);
        assert_eq!(contents(out), (F32, vec![4], f32_bytes(&[1.0, 2.0, 3.5, 0.0])));
        rtx_buffer_view_release(out);
        release_all(&[promise, result]);
        rtx_buffer_view_release(v);
        rtx_context_release(context);
    }
}

#[test]
fn wrong_tensor_arguments_become_the_results_error() {
    let context = tensor_context(c"s", "vmvx");
    // SAFETY: handles created and released here.
    unsafe {
        // A scalar where a tensor goes.
        let number = rtx_async_value_new_i32(3);
        let results = invoke(context, "abs", &[number], 1);
        let (status, message) = error_of(results[0]);
        assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
        assert!(
            message.contains("argument 0 of `module.abs`: expected a buffer view (ref) but the value holds i32"),
            "{message}"
        );
        release_all(&results);

        // A tensor where a scalar goes.
        let v = view(F32, &[4], &f32_bytes(&[0.0; 4]));
        let tensor = rtx_async_value_new_buffer_view(v);
        let results = invoke(context, "scale_dynamic", &[tensor, tensor], 1);
        let (status, message) = error_of(results[0]);
        assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
        assert!(
            message.contains("argument 1 of `module.scale_dynamic`: expected f32 but the value holds a buffer view"),
            "{message}"
        );
        release_all(&results);

        // The program's own checks: element type and shape.
        let ints = view(I32, &[4], &i32_bytes(&[0; 4]));
        let wrong_type = rtx_async_value_new_buffer_view(ints);
        let results = invoke(context, "abs", &[wrong_type], 1);
        let (status, message) = error_of(results[0]);
        assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
        assert!(message.contains("input0 element type mismatch"), "{message}");
        release_all(&results);
        let five = view(F32, &[5], &f32_bytes(&[0.0; 5]));
        let wrong_shape = rtx_async_value_new_buffer_view(five);
        let results = invoke(context, "abs", &[wrong_shape], 1);
        let (status, message) = error_of(results[0]);
        assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
        assert!(message.contains("input0 shape dimension 0 mismatch; expected 4 but have 5"), "{message}");
        release_all(&results);

        // Wrong counts fail at once and write nothing.
        let mut result = ptr::null_mut();
        let error = rtx_context_invoke(context, c"abs".as_ptr(), [tensor, tensor].as_ptr(), 2, &mut result, 1);
        assert_eq!(code(error), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));
        assert!(result.is_null());

        release_all(&[number, tensor, wrong_type, wrong_shape]);
        for v in [v, ints, five] {
            assert_eq!(references(v), 1, "failed calls let go of their arguments");
            rtx_buffer_view_release(v);
        }
        rtx_context_release(context);
    }
}

#[test]
fn results_outlive_the_context_and_the_module() {
    let context = tensor_context(c"mstd:2,2", "system");
    let v = view(I32, &[2, 3], &i32_bytes(&[1, 2, 3, 4, 5, i32::MAX]));
    let w = view(I32, &[2, 3], &i32_bytes(&[10, 20, 30, 40, 50, 1]));
    // SAFETY: handles created and released here.
    unsafe {
        let args = [rtx_async_value_new_buffer_view(v), rtx_async_value_new_buffer_view(w)];
        let results = invoke(context, "add", &args, 1);
        rtx_context_release(context);
        release_all(&args);
        rtx_buffer_view_release(v);
        rtx_buffer_view_release(w);
        let out = get_view(results[0]);
        release_all(&results);
        assert_eq!(references(out), 1, "only the caller holds the result now");
        assert_eq!(contents(out), (I32, vec![2, 3], i32_bytes(&[11, 22, 33, 44, 55, i32::MIN])));
        rtx_buffer_view_release(out);
    }
}

/// Calls `function` through `rtx_context_call` and returns each result's contents, or the error.
fn call_now(
    context: *mut rtx_context_t,
    function: &CStr,
    views: &[*mut rtx_buffer_view_t],
    num_results: usize,
) -> Result<Vec<Contents>, (rtx_status_code_t, String)> {
    let sentinel = 0x5a5a as *mut rtx_buffer_view_t;
    let mut results = vec![sentinel; num_results];
    // SAFETY: live views, room for `num_results` handles; each result written is released here.
    let error = unsafe {
        rtx_context_call(context, function.as_ptr(), views.as_ptr(), views.len(), results.as_mut_ptr(), num_results)
    };
    if let Some(failure) = take(error) {
        assert!(results.iter().all(|&r| r == sentinel), "results are written only on success");
        return Err(failure);
    }
    Ok(results
        .into_iter()
        .map(|view| {
            let out = contents(view);
            // SAFETY: the caller's new reference.
            unsafe { rtx_buffer_view_release(view) };
            out
        })
        .collect())
}

/// `rtx_context_call` gives what `rtx_context_invoke` gives (hand-computed values), on every
/// format and queue, and lets go of its arguments.
#[test]
fn tensor_programs_run_through_call_on_every_format_and_queue() {
    let (a, b, product) = matmul_case();
    let sum_input: Vec<i32> = (1..=15).collect();
    for spec in [c"s", c"mstd:2,2"] {
        for format in FORMATS {
            let context = tensor_context(spec, format);
            let what = format!("{format} on {spec:?}");
            let (va, vb) = (view(F32, &[4, 8], &f32_bytes(&a)), view(F32, &[8, 4], &f32_bytes(&b)));
            assert_eq!(
                call_now(context, c"matmul", &[va, vb], 1),
                Ok(vec![(F32, vec![4, 4], f32_bytes(&product))]),
                "{what}"
            );
            let vx = view(F32, &[1, 4], &f32_bytes(&[0.5, -1.0, 2.0, 1.0]));
            // By hand: x · W + bias, then relu, with the constants in programs.mlir.
            let dense = (F32, vec![1, 3], f32_bytes(&[0.0, 2.5, 1.0]));
            assert_eq!(call_now(context, c"module.dense_relu", &[vx], 1), Ok(vec![dense]), "{what}");
            let vs = view(I32, &[3, 5], &i32_bytes(&sum_input));
            assert_eq!(call_now(context, c"sum", &[vs], 1), Ok(vec![(I32, vec![], i32_bytes(&[120]))]), "{what}");
            for v in [va, vb, vx, vs] {
                assert_eq!(references(v), 1, "the call let go of its argument ({what})");
                // SAFETY: the test's reference.
                unsafe { rtx_buffer_view_release(v) };
            }
            // SAFETY: the test's reference.
            unsafe { rtx_context_release(context) };
        }
    }
}

/// A `coarse-fences` function gets its own fences and its results once its signal is reached.
#[test]
fn call_waits_for_a_coarse_fences_functions_signal() {
    for device in [c"local-sync", c"local-task"] {
        let context = module_context(c"mstd:2,2", "async", "embedded", device);
        let x = view(F32, &[2, 3], &f32_bytes(&[1.0, 0.0, 0.0, 0.0, 1.0, 0.0]));
        let w = view(F32, &[3, 4], &f32_bytes(&[0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]));
        // By hand: the logits are all 0 in row 0 and all 1 in row 1, so each row's softmax is
        // uniform, and the logits sum to 4.
        let expected = vec![(F32, vec![2, 4], f32_bytes(&[0.25; 8])), (F32, vec![], f32_bytes(&[4.0]))];
        assert_eq!(call_now(context, c"scores", &[x, w], 2), Ok(expected), "{device:?}");
        // Views cannot be fences: the call takes the declared arguments only.
        let (status, message) = call_now(context, c"scores", &[x, w, x, w], 2).unwrap_err();
        assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
        assert!(message.starts_with("rtx_context_call: `module.scores`"), "{message}");
        assert!(message.contains("num_args = 4"), "{message}");
        // SAFETY: the test's references.
        unsafe {
            rtx_buffer_view_release(x);
            rtx_buffer_view_release(w);
            rtx_context_release(context);
        }
    }
}

/// The call fails with what `rtx_context_invoke`'s results would carry, and refuses what it
/// cannot pass or return, writing nothing.
#[test]
fn call_reports_the_programs_errors_and_refuses_what_is_not_a_tensor() {
    let context = tensor_context(c"s", "vmvx");
    let ints = view(I32, &[4], &i32_bytes(&[0; 4]));
    let five = view(F32, &[5], &f32_bytes(&[0.0; 5]));
    let four = view(F32, &[4], &f32_bytes(&[-1.0, 2.0, -3.5, 0.0]));
    // The program's own checks, as in `wrong_tensor_arguments_become_the_results_error`.
    let (status, message) = call_now(context, c"abs", &[ints], 1).unwrap_err();
    assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
    assert!(message.contains("input0 element type mismatch"), "{message}");
    let (status, message) = call_now(context, c"abs", &[five], 1).unwrap_err();
    assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
    assert!(message.contains("input0 shape dimension 0 mismatch; expected 4 but have 5"), "{message}");
    // A view for a scalar argument: what `invoke` says of it.
    let (status, message) = call_now(context, c"scale_dynamic", &[four, four], 1).unwrap_err();
    assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
    assert_eq!(message, "argument 1 of `module.scale_dynamic`: expected f32 but the value holds a buffer view");
    // Lookup and counts name the entry point.
    let (status, message) = call_now(context, c"absent", &[four], 1).unwrap_err();
    assert_eq!(status, RTX_STATUS_CODE_NOT_FOUND);
    assert!(message.starts_with("rtx_context_call: "), "{message}");
    let (status, message) = call_now(context, c"abs", &[four], 2).unwrap_err();
    assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
    assert!(message.contains("num_args = 1 and num_results = 2"), "{message}");
    assert_eq!(call_now(context, c"abs", &[four], 1), Ok(vec![(F32, vec![4], f32_bytes(&[1.0, 2.0, 3.5, 0.0]))]));
    // NULL handles and arrays.
    let mut out = ptr::null_mut();
    let null_view = ptr::null_mut::<rtx_buffer_view_t>();
    // SAFETY: NULL where the function checks for it; live handles elsewhere.
    let refusals = unsafe {
        [
            rtx_context_call(ptr::null_mut(), c"abs".as_ptr(), &four, 1, &mut out, 1),
            rtx_context_call(context, ptr::null(), &four, 1, &mut out, 1),
            rtx_context_call(context, c"abs".as_ptr(), ptr::null(), 1, &mut out, 1),
            rtx_context_call(context, c"abs".as_ptr(), &null_view, 1, &mut out, 1),
            rtx_context_call(context, c"abs".as_ptr(), &four, 1, ptr::null_mut(), 1),
        ]
    };
    let messages = invalid_argument_messages(refusals);
    assert_eq!(
        messages,
        [
            "rtx_context_call: argument 'context' is NULL",
            "rtx_context_call: argument 'function' is NULL",
            "rtx_context_call: argument 'args' is NULL but count is 1",
            "rtx_context_call: argument 'args[0]' is NULL",
            "rtx_context_call: argument 'results' is NULL but num_results is 1",
        ]
    );
    assert!(out.is_null(), "nothing is written on failure");
    for v in [ints, five, four] {
        assert_eq!(references(v), 1, "failed calls let go of their arguments");
        // SAFETY: the test's reference.
        unsafe { rtx_buffer_view_release(v) };
    }
    // SAFETY: the test's reference.
    unsafe { rtx_context_release(context) };
}

/// Functions with scalar arguments or results are the async API's: the call names the first
/// such value. A function without arguments or results is called like any other.
#[test]
fn call_refuses_functions_with_scalars() {
    let context = module_context(c"s", "checks", "embedded", c"local-sync");
    assert_eq!(call_now(context, c"add_ok", &[], 0), Ok(vec![]));
    // SAFETY: the test's reference.
    unsafe { rtx_context_release(context) };

    let context = module_context(c"s", "async", "vmvx", c"local-sync");
    let x = view(I32, &[2], &i32_bytes(&[1, 2]));
    let (status, message) = call_now(context, c"scale", &[x, x], 1).unwrap_err();
    assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
    assert_eq!(message, "argument 1 of `module.scale`: expected i32 but the value holds a buffer view");
    // SAFETY: the test's reference.
    unsafe { rtx_context_release(context) };

    let context = new_context(c"s");
    let module =
        load_file(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vm/integer_math.vmfb"));
    // SAFETY: live handles; the context keeps its own reference to the module.
    unsafe {
        ok(rtx_context_add_module(context, module));
        rtx_module_release(module);
    }
    let (status, message) = call_now(context, c"add_i32", &[x, x], 1).unwrap_err();
    assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
    assert_eq!(
        message,
        "result 0 of `module.add_i32` is i32, not a tensor; call the function with async values (invoke)"
    );
    // SAFETY: the test's references.
    unsafe {
        rtx_buffer_view_release(x);
        rtx_context_release(context);
    }
}

/// A cancelled context runs nothing; a worker thread of the context's queue must not block.
#[test]
fn call_refuses_a_cancelled_context_and_worker_threads() {
    struct Job {
        context: *mut rtx_context_t,
        view: *mut rtx_buffer_view_t,
        outcome: std::sync::mpsc::Sender<Option<(rtx_status_code_t, String)>>,
    }
    unsafe extern "C" fn on_worker(user_data: *mut c_void) {
        // SAFETY: the `Job` boxed below, run once.
        let job = unsafe { Box::from_raw(user_data.cast::<Job>()) };
        let mut out = ptr::null_mut();
        // SAFETY: live handles owned by the test, which waits for this job.
        let error = unsafe { rtx_context_call(job.context, c"abs".as_ptr(), &job.view, 1, &mut out, 1) };
        job.outcome.send(take(error)).expect("the test waits");
    }
    let context = tensor_context(c"mstd:2,2", "embedded");
    let v = view(F32, &[4], &f32_bytes(&[1.0, -1.0, 2.0, -2.0]));
    let (sender, receiver) = std::sync::mpsc::channel();
    let job = Box::into_raw(Box::new(Job { context, view: v, outcome: sender }));
    // SAFETY: a live context; the job frees itself.
    ok(unsafe { rtx_context_enqueue(context, Some(on_worker), job.cast()) });
    let (status, message) = receiver.recv().expect("the job ran").expect("refused");
    assert_eq!(status, RTX_STATUS_CODE_FAILED_PRECONDITION);
    assert!(message.contains("called from a thread of work queue"), "{message}");

    // SAFETY: live handles.
    unsafe { rtx_context_cancel(context) };
    let (status, _) = call_now(context, c"abs", &[v], 1).unwrap_err();
    assert_eq!(status, RTX_STATUS_CODE_CANCELLED);
    // SAFETY: the test's references.
    unsafe {
        rtx_buffer_view_release(v);
        rtx_context_release(context);
    }
}

/// ONNX sequences and empty optionals as async values: a sequence holds its own reference to each
/// view and gives them back by index; an empty optional says so.
#[test]
fn sequences_and_empty_optionals_cross_as_values() {
    let (a, b) = (view(F32, &[2], &f32_bytes(&[1.0, 2.0])), view(I32, &[], &i32_bytes(&[7])));
    let sequence = unsafe { rtx_async_value_new_sequence([a, b].as_ptr(), 2) };
    assert!(!sequence.is_null());
    assert_eq!(references(a), 2, "the sequence holds a reference of its own");
    unsafe { rtx_buffer_view_release(a) };
    unsafe { rtx_buffer_view_release(b) };
    assert_eq!(unsafe { rtx_async_value_type(sequence) }, rtx_value_type_t::RTX_VALUE_TYPE_SEQUENCE);
    let mut length = 0usize;
    ok(unsafe { rtx_async_value_get_sequence_length(sequence, &mut length) });
    assert_eq!(length, 2);
    let mut element = ptr::null_mut();
    ok(unsafe { rtx_async_value_get_sequence_element(sequence, 1, &mut element) });
    assert_eq!(contents(element), (I32, vec![], i32_bytes(&[7])));
    unsafe { rtx_buffer_view_release(element) };
    let past = unsafe { rtx_async_value_get_sequence_element(sequence, 2, &mut element) };
    assert_eq!(code(past), Some(RTX_STATUS_CODE_OUT_OF_RANGE));
    let empty = unsafe { rtx_async_value_new_sequence(ptr::null(), 0) };
    ok(unsafe { rtx_async_value_get_sequence_length(empty, &mut length) });
    assert_eq!(length, 0);
    assert!(unsafe { rtx_async_value_new_sequence(ptr::null(), 1) }.is_null());
    let none = rtx_async_value_new_none();
    assert_eq!(unsafe { rtx_async_value_type(none) }, rtx_value_type_t::RTX_VALUE_TYPE_NONE);
    let not_a_sequence = unsafe { rtx_async_value_get_sequence_length(none, &mut length) };
    assert_eq!(code(not_a_sequence), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));
    release_all(&[sequence, empty, none]);
}

/// ONNX string tensors as async values: made from a shape and UTF-8 bytes (copied), read back as
/// a shape and each element's bytes; wrong counts, NULLs and non-UTF-8 bytes make no value.
#[test]
fn string_tensors_cross_as_values() {
    let texts: [&[u8]; 3] = [b"ab", b"", "\u{e9}t\u{e9}".as_bytes()];
    let pointers: Vec<*const std::ffi::c_char> = texts.iter().map(|t| t.as_ptr().cast()).collect();
    let lengths: Vec<usize> = texts.iter().map(|t| t.len()).collect();
    let dims = [3i64, 1];
    let value = unsafe { rtx_async_value_new_string_tensor(dims.as_ptr(), 2, pointers.as_ptr(), lengths.as_ptr(), 3) };
    assert!(!value.is_null());
    assert_eq!(unsafe { rtx_async_value_type(value) }, rtx_value_type_t::RTX_VALUE_TYPE_STRING_TENSOR);
    let mut rank = 0usize;
    ok(unsafe { rtx_async_value_get_string_tensor_shape(value, &mut rank, ptr::null_mut(), 0) });
    assert_eq!(rank, 2);
    let mut read = [0i64; 2];
    let short = unsafe { rtx_async_value_get_string_tensor_shape(value, &mut rank, read.as_mut_ptr(), 1) };
    assert_eq!(code(short), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));
    ok(unsafe { rtx_async_value_get_string_tensor_shape(value, &mut rank, read.as_mut_ptr(), 2) });
    assert_eq!(read, dims);
    for (index, text) in texts.iter().enumerate() {
        let (mut data, mut length) = (ptr::null(), 0usize);
        ok(unsafe { rtx_async_value_get_string_tensor_element(value, index, &mut data, &mut length) });
        assert_eq!(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), length) }, *text);
    }
    let (mut data, mut length) = (ptr::null(), 0usize);
    let past = unsafe { rtx_async_value_get_string_tensor_element(value, 3, &mut data, &mut length) };
    assert_eq!(code(past), Some(RTX_STATUS_CODE_OUT_OF_RANGE));
    let no_length = unsafe { rtx_async_value_get_string_tensor_element(value, 0, &mut data, ptr::null_mut()) };
    assert_eq!(code(no_length), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));

    let scalar = unsafe { rtx_async_value_new_string_tensor(ptr::null(), 0, pointers.as_ptr(), lengths.as_ptr(), 1) };
    ok(unsafe { rtx_async_value_get_string_tensor_shape(scalar, &mut rank, ptr::null_mut(), 0) });
    assert_eq!(rank, 0);
    let empty = unsafe { rtx_async_value_new_string_tensor([0i64].as_ptr(), 1, ptr::null(), ptr::null(), 0) };
    assert!(!empty.is_null());
    let wrong_count =
        unsafe { rtx_async_value_new_string_tensor(dims.as_ptr(), 2, pointers.as_ptr(), lengths.as_ptr(), 2) };
    assert!(wrong_count.is_null());
    let negative =
        unsafe { rtx_async_value_new_string_tensor([-3i64].as_ptr(), 1, pointers.as_ptr(), lengths.as_ptr(), 3) };
    assert!(negative.is_null());
    let invalid = [0xFFu8];
    let not_utf8 = unsafe {
        rtx_async_value_new_string_tensor(ptr::null(), 0, [invalid.as_ptr().cast()].as_ptr(), [1].as_ptr(), 1)
    };
    assert!(not_utf8.is_null());
    let null_string =
        unsafe { rtx_async_value_new_string_tensor(ptr::null(), 0, [ptr::null()].as_ptr(), [1].as_ptr(), 1) };
    assert!(null_string.is_null());
    let none = rtx_async_value_new_none();
    let not_strings = unsafe { rtx_async_value_get_string_tensor_shape(none, &mut rank, ptr::null_mut(), 0) };
    assert_eq!(code(not_strings), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));
    release_all(&[value, scalar, empty, none]);
}

/// A host built against the first `rtx_context_options_t`, which ended before `memory_limit`,
/// passes a shorter struct: whatever its memory holds past that end is not read. The same bytes,
/// read as a limit of one byte by a caller of today's size, refuse the call's memory.
#[test]
fn an_older_options_struct_is_read_without_the_limit_it_lacks() {
    let (a, b, product) = matmul_case();
    let first_version = std::mem::offset_of!(rtx_context_options_t, memory_limit);
    for (struct_size, limited) in [(first_version, false), (size_of::<rtx_context_options_t>(), true)] {
        let mut options = std::mem::MaybeUninit::<rtx_context_options_t>::uninit();
        let mut context = ptr::null_mut();
        // SAFETY: options initialised before use (the struct is whole; only `struct_size` says
        // how much of it the library may read); out pointer valid.
        unsafe {
            rtx_context_options_init(options.as_mut_ptr());
            let mut options = options.assume_init();
            (options.struct_size, options.work_queue, options.memory_limit) = (struct_size, c"s".as_ptr(), 1);
            ok(rtx_context_new(&options, &mut context));
            ok(rtx_context_add_device(context, c"local-sync".as_ptr()));
            let module = load("programs", "vmvx");
            ok(rtx_context_add_module(context, module));
            rtx_module_release(module);
        }
        let (va, vb) = (view(F32, &[4, 8], &f32_bytes(&a)), view(F32, &[8, 4], &f32_bytes(&b)));
        if limited {
            // SAFETY: live views and context; every handle made here is released here.
            unsafe {
                let args = [rtx_async_value_new_buffer_view(va), rtx_async_value_new_buffer_view(vb)];
                let results = invoke(context, "matmul", &args, 1);
                let (status, message) = error_of(results[0]);
                assert_eq!(status, RTX_STATUS_CODE_RESOURCE_EXHAUSTED, "{message}");
                release_all(&results);
                release_all(&args);
            }
        } else {
            assert_eq!(call(context, "matmul", &[va, vb], 1), [(F32, vec![4, 4], f32_bytes(&product))]);
        }
        // SAFETY: references the test owns.
        unsafe {
            rtx_buffer_view_release(va);
            rtx_buffer_view_release(vb);
            rtx_context_release(context);
        }
    }
}
