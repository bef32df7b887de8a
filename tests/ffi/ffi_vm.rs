//! The VM half of the C API, exercised from Rust through the exported functions: loading modules,
//! reflection, `rtx_context_invoke` with async values in and out, and native modules written
//! against the C callback types.

use crate::common::{code, error_of, invoke, load_file, new_context, ok, release_all, take};

use std::ffi::{c_void, CStr, CString};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};

use rtx::ffi::async_value::*;
use rtx::ffi::context::*;
use rtx::ffi::error::*;
use rtx::ffi::invocation::*;
use rtx::ffi::module::*;
use rtx::ffi::native_module::*;

use rtx_status_code_t::*;
use rtx_test_support::{fixture_dir, fixtures};
use rtx_value_kind_t::*;

fn fixture(name: &str) -> CString {
    CString::new(fixture_dir("").join(name).to_str().unwrap()).unwrap()
}

fn load(name: &str) -> *mut rtx_module_t {
    load_file(&fixture_dir("").join(name))
}

/// A context (of `spec`) with the fixture `name` added.
fn context_with(spec: &CStr, name: &str) -> *mut rtx_context_t {
    let context = new_context(spec);
    let module = load(name);
    // SAFETY: live handles; the context keeps its own reference to the module.
    unsafe {
        ok(rtx_context_add_module(context, module));
        rtx_module_release(module);
    }
    context
}

fn get_i32(value: *mut rtx_async_value_t) -> i32 {
    let mut out = 0;
    // SAFETY: a live value and a writable out-parameter.
    ok(unsafe { rtx_async_value_get_i32(value, &mut out) });
    out
}

fn get_i64(value: *mut rtx_async_value_t) -> i64 {
    let mut out = 0;
    // SAFETY: as above.
    ok(unsafe { rtx_async_value_get_i64(value, &mut out) });
    out
}

fn c(text: *const std::ffi::c_char) -> String {
    assert!(!text.is_null());
    // SAFETY: a NUL-terminated string from the library.
    unsafe { CStr::from_ptr(text) }.to_str().unwrap().to_owned()
}

fn kinds(pointer: *const rtx_value_kind_t, count: usize) -> Vec<rtx_value_kind_t> {
    if count == 0 {
        assert!(pointer.is_null());
        return Vec::new();
    }
    // SAFETY: `count` kinds borrowed from a live module.
    unsafe { std::slice::from_raw_parts(pointer, count) }.to_vec()
}

fn signature_struct() -> rtx_function_signature_t {
    rtx_function_signature_t {
        struct_size: std::mem::size_of::<rtx_function_signature_t>(),
        name: ptr::null(),
        calling_convention: ptr::null(),
        declaration: ptr::null(),
        num_arguments: 0,
        argument_kinds: ptr::null(),
        num_results: 0,
        result_kinds: ptr::null(),
    }
}

#[test]
fn every_fixture_loads_from_file_and_memory_and_lists_its_exports() {
    for path in fixtures() {
        let rust = rtx::vm::Module::load_file(&path).unwrap();
        let c_path = CString::new(path.to_str().unwrap()).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let (mut from_file, mut from_memory) = (ptr::null_mut(), ptr::null_mut());
        // SAFETY: valid paths, bytes and out pointers; handles released at the end.
        unsafe {
            ok(rtx_module_load_file(c_path.as_ptr(), &mut from_file));
            ok(rtx_module_load_memory(bytes.as_ptr(), bytes.len(), &mut from_memory));
            drop(bytes);
            for module in [from_file, from_memory] {
                assert_eq!(c(rtx_module_name(module)), rust.name(), "{}", path.display());
                let count = rtx_module_function_count(module);
                assert_eq!(count, rust.exported_functions().len());
                for (index, export) in rust.exported_functions().iter().enumerate() {
                    assert_eq!(c(rtx_module_function_name(module, index)), export.local_name);
                    let mut signature = signature_struct();
                    ok(rtx_module_function_signature(module, index, &mut signature));
                    assert_eq!(c(signature.name), export.local_name);
                    let cconv = rust.export_signature(export).and_then(|s| s.calling_convention.clone());
                    assert_eq!(c(signature.calling_convention), cconv.unwrap_or_default());
                }
                assert!(rtx_module_function_name(module, count).is_null());
                let mut signature = signature_struct();
                assert_eq!(
                    code(rtx_module_function_signature(module, count, &mut signature)),
                    Some(RTX_STATUS_CODE_OUT_OF_RANGE)
                );
            }
            assert_eq!(rtx_module_retain(from_file), from_file);
            rtx_module_release(from_file);
            rtx_module_release(from_file);
            rtx_module_release(from_memory);
        }
    }
}

#[test]
fn signature_of_cast_f32_has_its_cconv_declaration_and_kinds() {
    let module = load("float_math.vmfb");
    // SAFETY: a live module; the signature's pointers are read before it is released.
    unsafe {
        let index = (0..rtx_module_function_count(module))
            .find(|&i| c(rtx_module_function_name(module, i)) == "cast_f32")
            .expect("float_math exports cast_f32");
        let mut signature = signature_struct();
        ok(rtx_module_function_signature(module, index, &mut signature));
        assert_eq!(c(signature.calling_convention), "0f_iiI");
        assert_eq!(
            c(signature.declaration),
            "sync func @cast_f32(%input0: f32) -> (%output0: i32, %output1: i32, %output2: i64)"
        );
        assert_eq!(kinds(signature.argument_kinds, signature.num_arguments), [RTX_VALUE_KIND_F32]);
        assert_eq!(
            kinds(signature.result_kinds, signature.num_results),
            [RTX_VALUE_KIND_I32, RTX_VALUE_KIND_I32, RTX_VALUE_KIND_I64]
        );

        // Three results of two types through async values.
        let context = new_context(c"s");
        ok(rtx_context_add_module(context, module));
        let arg = rtx_async_value_new_f32(-3.7);
        let results = invoke(context, "module.cast_f32", &[arg], 3);
        assert_eq!((get_i32(results[0]), get_i32(results[1]), get_i64(results[2])), (-4, -4, -4));
        release_all(&results);
        rtx_async_value_release(arg);
        rtx_context_release(context);
        rtx_module_release(module);
    }
}

#[test]
fn signature_rejects_a_small_struct_size_and_nulls() {
    let module = load("control_flow.vmfb");
    // SAFETY: a live module; NULLs are what is being tested.
    unsafe {
        let mut signature = signature_struct();
        signature.struct_size = 8;
        let (status, message) = take(rtx_module_function_signature(module, 0, &mut signature)).unwrap();
        assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
        assert!(message.contains("struct_size is 8"), "{message}");
        assert!(signature.name.is_null(), "out-parameters are written only on success");
        assert_eq!(
            code(rtx_module_function_signature(module, 0, ptr::null_mut())),
            Some(RTX_STATUS_CODE_INVALID_ARGUMENT)
        );
        assert_eq!(
            code(rtx_module_function_signature(ptr::null(), 0, &mut signature_struct())),
            Some(RTX_STATUS_CODE_INVALID_ARGUMENT)
        );
        rtx_module_release(module);
    }
}

#[test]
fn sum_to_n_and_collatz_steps_run_on_both_queue_kinds() {
    for spec in [c"s", c"mstd:2,2"] {
        let context = context_with(spec, "control_flow.vmfb");
        // SAFETY: handles created and released here.
        unsafe {
            let ten = rtx_async_value_new_i32(10);
            let results = invoke(context, "sum_to_n", &[ten], 1);
            assert_eq!(get_i32(results[0]), 45, "{spec:?}");
            release_all(&results);
            let start = rtx_async_value_new_i64(27);
            let results = invoke(context, "module.collatz_steps", &[start], 1);
            assert_eq!(get_i32(results[0]), 111, "{spec:?}");
            release_all(&results);
            release_all(&[ten, start]);
            rtx_context_release(context);
        }
    }
}

#[test]
fn many_concurrent_invocations_all_complete() {
    let context = context_with(c"mstd:4,4", "control_flow.vmfb");
    // SAFETY: handles created and released here.
    unsafe {
        let args: Vec<_> = (0..64).map(|n| rtx_async_value_new_i32(n)).collect();
        let mut results = vec![ptr::null_mut(); args.len()];
        for (arg, result) in args.iter().zip(results.iter_mut()) {
            ok(rtx_context_invoke(context, c"sum_to_n".as_ptr(), arg, 1, result, 1));
        }
        ok(rtx_async_value_await(context, results.as_ptr(), results.len()));
        for (n, &result) in results.iter().enumerate() {
            let n = n as i32;
            assert_eq!(get_i32(result), n * (n - 1) / 2);
        }
        release_all(&results);
        release_all(&args);
        rtx_context_release(context);
    }
}

#[test]
fn an_unavailable_argument_delays_the_call_until_it_is_set() {
    for spec in [c"s", c"mstd:2,2"] {
        let context = context_with(spec, "control_flow.vmfb");
        // SAFETY: handles created and released here.
        unsafe {
            let arg = rtx_async_value_new_unavailable();
            let mut result = ptr::null_mut();
            ok(rtx_context_invoke(context, c"sum_to_n".as_ptr(), &arg, 1, &mut result, 1));
            assert!(!result.is_null());
            rtx_context_quiesce(context);
            assert!(!rtx_async_value_is_available(result), "the call waits for its argument");
            ok(rtx_async_value_set_i32(arg, 5));
            ok(rtx_async_value_await(context, &result, 1));
            assert_eq!(get_i32(result), 10);
            release_all(&[arg, result]);
            rtx_context_release(context);
        }
    }
}

#[test]
fn vm_fail_becomes_every_results_error_with_its_status_and_message() {
    let context = context_with(c"mstd:2,2", "failures.vmfb");
    // SAFETY: handles created and released here.
    unsafe {
        let zero = rtx_async_value_new_i32(0);
        let results = invoke(context, "module.assert_positive", &[zero], 1);
        assert!(rtx_async_value_is_error(results[0]));
        let (status, message) = error_of(results[0]);
        assert_eq!(status, RTX_STATUS_CODE_FAILED_PRECONDITION);
        assert!(message.contains("x must be positive"), "{message}");
        let mut out = 7;
        assert_eq!(code(rtx_async_value_get_i32(results[0], &mut out)), Some(RTX_STATUS_CODE_FAILED_PRECONDITION));
        assert_eq!(out, 7);
        release_all(&results);

        let three = rtx_async_value_new_i32(3);
        let results = invoke(context, "assert_positive", &[three], 1);
        assert_eq!(get_i32(results[0]), 6);
        release_all(&results);
        release_all(&[zero, three]);
        rtx_context_release(context);
    }
}

#[test]
fn done_reports_the_failure_of_a_function_without_results() {
    for spec in [c"s", c"mstd:2,2"] {
        let context = context_with(spec, "failures.vmfb");
        // SAFETY: handles created and released here.
        unsafe {
            let minus_two = rtx_async_value_new_i32(-2);
            let mut done = ptr::null_mut();
            ok(rtx_context_invoke_with_done(
                context,
                c"require_positive".as_ptr(),
                &minus_two,
                1,
                ptr::null_mut(),
                0,
                &mut done,
            ));
            ok(rtx_async_value_await(context, &done, 1));
            let (status, message) = error_of(done);
            assert_eq!(status, RTX_STATUS_CODE_FAILED_PRECONDITION);
            assert!(message.contains("x must be positive"), "{message}");
            release_all(&[done]);

            // A call that succeeds: `done` is a chain, after the results.
            let three = rtx_async_value_new_i32(3);
            ok(rtx_context_invoke_with_done(
                context,
                c"require_positive".as_ptr(),
                &three,
                1,
                ptr::null_mut(),
                0,
                &mut done,
            ));
            ok(rtx_async_value_await(context, &done, 1));
            assert!(rtx_async_value_is_available(done) && !rtx_async_value_is_error(done));
            release_all(&[done]);
            let mut result = ptr::null_mut();
            ok(rtx_context_invoke_with_done(
                context,
                c"assert_positive".as_ptr(),
                &three,
                1,
                &mut result,
                1,
                &mut done,
            ));
            ok(rtx_async_value_await(context, &done, 1));
            assert!(!rtx_async_value_is_error(done));
            assert_eq!(get_i32(result), 6, "the results are set before `done`");
            release_all(&[done, result]);

            let (status, message) = take(rtx_context_invoke_with_done(
                context,
                c"require_positive".as_ptr(),
                &three,
                1,
                ptr::null_mut(),
                0,
                ptr::null_mut(),
            ))
            .unwrap();
            assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
            assert!(message.contains("'done' is NULL"), "{message}");
            release_all(&[minus_two, three]);
            rtx_context_release(context);
        }
    }
}

#[test]
fn wrong_counts_and_unknown_functions_fail_at_once_naming_what_was_expected() {
    let context = context_with(c"s", "control_flow.vmfb");
    // SAFETY: handles created and released here.
    unsafe {
        let one = rtx_async_value_new_i32(1);
        let args = [one, one];
        let mut results = [ptr::null_mut(); 2];
        let (status, message) =
            take(rtx_context_invoke(context, c"sum_to_n".as_ptr(), args.as_ptr(), 2, results.as_mut_ptr(), 1)).unwrap();
        assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
        assert!(message.contains("takes 1 argument and returns 1 result"), "{message}");
        assert!(message.contains("num_args = 2"), "{message}");
        assert!(results.iter().all(|r| r.is_null()), "nothing is written on failure");
        let (status, message) =
            take(rtx_context_invoke(context, c"sum_to_n".as_ptr(), args.as_ptr(), 1, results.as_mut_ptr(), 2)).unwrap();
        assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
        assert!(message.contains("num_results = 2"), "{message}");
        assert!(results.iter().all(|r| r.is_null()));

        let (status, message) =
            take(rtx_context_invoke(context, c"no_such".as_ptr(), args.as_ptr(), 1, results.as_mut_ptr(), 1)).unwrap();
        assert_eq!(status, RTX_STATUS_CODE_NOT_FOUND);
        assert!(message.contains("no_such"), "{message}");
        release_all(&[one]);
        rtx_context_release(context);
    }
}

#[test]
fn a_wrong_type_or_error_argument_becomes_the_results_error() {
    let context = context_with(c"mstd:2,2", "control_flow.vmfb");
    // SAFETY: handles created and released here.
    unsafe {
        let float = rtx_async_value_new_f32(1.0);
        let results = invoke(context, "sum_to_n", &[float], 1);
        let (status, message) = error_of(results[0]);
        assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
        assert!(message.contains("argument 0 of `module.sum_to_n`: expected i32"), "{message}");
        assert!(message.contains("f32"), "{message}");
        release_all(&results);

        let failed = rtx_async_value_new_error(RTX_STATUS_CODE_DATA_LOSS as u32, c"upstream broke".as_ptr());
        let results = invoke(context, "sum_to_n", &[failed], 1);
        let (status, message) = error_of(results[0]);
        assert_eq!(status, RTX_STATUS_CODE_DATA_LOSS);
        assert!(message.contains("upstream broke"), "{message}");
        release_all(&results);
        release_all(&[float, failed]);
        rtx_context_release(context);
    }
}

#[test]
fn a_cancelled_context_cancels_pending_calls() {
    let context = context_with(c"s", "control_flow.vmfb");
    // SAFETY: handles created and released here.
    unsafe {
        let arg = rtx_async_value_new_i32(4);
        let mut result = ptr::null_mut();
        ok(rtx_context_invoke(context, c"sum_to_n".as_ptr(), &arg, 1, &mut result, 1));
        rtx_context_cancel(context);
        ok(rtx_async_value_await(context, &result, 1));
        assert_eq!(error_of(result).0, RTX_STATUS_CODE_CANCELLED);
        rtx_async_value_release(result);

        rtx_context_restart(context);
        let results = invoke(context, "sum_to_n", &[arg], 1);
        assert_eq!(get_i32(results[0]), 6);
        release_all(&results);
        rtx_async_value_release(arg);
        rtx_context_release(context);
    }
}

#[test]
fn releasing_the_context_first_still_completes_the_results() {
    // SAFETY: handles created and released here.
    unsafe {
        let context = context_with(c"s", "control_flow.vmfb");
        let arg = rtx_async_value_new_unavailable();
        let mut result = ptr::null_mut();
        ok(rtx_context_invoke(context, c"sum_to_n".as_ptr(), &arg, 1, &mut result, 1));
        rtx_context_release(context);
        ok(rtx_async_value_set_i32(arg, 3));
        assert_eq!(error_of(result).0, RTX_STATUS_CODE_CANCELLED);
        release_all(&[arg, result]);
    }
}

#[test]
fn modules_are_refused_twice_and_nulls_are_invalid_arguments() {
    let context = new_context(c"s");
    let module = load("control_flow.vmfb");
    // SAFETY: NULLs are what is being tested; live handles released at the end.
    unsafe {
        ok(rtx_context_add_module(context, module));
        assert_eq!(code(rtx_context_add_module(context, module)), Some(RTX_STATUS_CODE_ALREADY_EXISTS));
        assert_eq!(code(rtx_context_add_module(ptr::null_mut(), module)), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));
        assert_eq!(code(rtx_context_add_module(context, ptr::null_mut())), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));

        let mut out = ptr::null_mut();
        assert_eq!(code(rtx_module_load_file(ptr::null(), &mut out)), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));
        assert_eq!(
            code(rtx_module_load_file(fixture("control_flow.vmfb").as_ptr(), ptr::null_mut())),
            Some(RTX_STATUS_CODE_INVALID_ARGUMENT)
        );
        assert_eq!(code(rtx_module_load_memory(ptr::null(), 4, &mut out)), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));
        assert_eq!(code(rtx_module_load_memory(ptr::null(), 0, &mut out)), Some(RTX_STATUS_CODE_DATA_LOSS));
        let (status, message) = take(rtx_module_load_file(c"/no/such/file.vmfb".as_ptr(), &mut out)).unwrap();
        assert_eq!(status, RTX_STATUS_CODE_NOT_FOUND);
        assert!(message.contains("/no/such/file.vmfb"), "{message}");
        assert!(out.is_null());

        assert_eq!(c(rtx_module_name(ptr::null())), "");
        assert_eq!(rtx_module_function_count(ptr::null()), 0);
        assert!(rtx_module_function_name(ptr::null(), 0).is_null());
        assert!(rtx_module_retain(ptr::null_mut()).is_null());
        rtx_module_release(ptr::null_mut());

        let arg = rtx_async_value_new_i32(1);
        let mut result = ptr::null_mut();
        let invoke = |context, function, args, num_args, results, num_results| {
            code(rtx_context_invoke(context, function, args, num_args, results, num_results))
        };
        let name = c"sum_to_n".as_ptr();
        let invalid = Some(RTX_STATUS_CODE_INVALID_ARGUMENT);
        assert_eq!(invoke(ptr::null_mut(), name, &arg, 1, &mut result, 1), invalid);
        assert_eq!(invoke(context, ptr::null(), &arg, 1, &mut result, 1), invalid);
        assert_eq!(invoke(context, name, ptr::null(), 1, &mut result, 1), invalid);
        let null_arg: *mut rtx_async_value_t = ptr::null_mut();
        let (status, message) = take(rtx_context_invoke(context, name, &null_arg, 1, &mut result, 1)).unwrap();
        assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
        assert!(message.contains("'args[0]' is NULL"), "{message}");
        assert_eq!(invoke(context, name, &arg, 1, ptr::null_mut(), 1), invalid);
        assert!(result.is_null());
        rtx_async_value_release(arg);
        rtx_module_release(module);
        rtx_context_release(context);
    }
}

#[test]
fn corrupt_bytes_fail_with_the_offset_of_the_problem() {
    let bytes = std::fs::read(fixture_dir("control_flow.vmfb")).unwrap();
    let mut out = ptr::null_mut();
    // SAFETY: valid buffers and out pointers.
    unsafe {
        let (status, message) = take(rtx_module_load_memory(bytes.as_ptr(), 16, &mut out)).unwrap();
        assert!(matches!(status, RTX_STATUS_CODE_DATA_LOSS | RTX_STATUS_CODE_INVALID_ARGUMENT), "{status:?}");
        assert!(message.contains("offset "), "{message}");
        let garbage = [0xAB_u8; 256];
        let (status, message) = take(rtx_module_load_memory(garbage.as_ptr(), garbage.len(), &mut out)).unwrap();
        assert!(matches!(status, RTX_STATUS_CODE_DATA_LOSS | RTX_STATUS_CODE_INVALID_ARGUMENT), "{status:?}");
        assert!(message.starts_with("rtx_module_load_memory: loading VM module: offset "), "{message}");
    }
    assert!(out.is_null());
}

// --- native modules written against the C callback types ---

static DESTROYED: AtomicUsize = AtomicUsize::new(0);
static STATES_CREATED: AtomicUsize = AtomicUsize::new(0);
static STATES_DESTROYED: AtomicUsize = AtomicUsize::new(0);

/// `native.scale(i64, f64) -> (f64, i32)`: x * factor (the user data) + state counter; the i32
/// is how often this state was called.
unsafe extern "C" fn scale(
    user_data: *mut c_void,
    state: *mut c_void,
    args: *const rtx_value_t,
    num_args: usize,
    results: *mut rtx_value_t,
    num_results: usize,
) -> *mut rtx_error_t {
    // SAFETY: the documented contract of rtx_native_function_fn.
    unsafe {
        assert_eq!((num_args, num_results), (2, 2));
        let args = std::slice::from_raw_parts(args, num_args);
        let results = std::slice::from_raw_parts_mut(results, num_results);
        assert_eq!((args[0].kind, args[1].kind), (RTX_VALUE_KIND_I64, RTX_VALUE_KIND_F64));
        assert_eq!((results[0].kind, results[1].kind), (RTX_VALUE_KIND_F64, RTX_VALUE_KIND_I32));
        let factor = *(user_data as *const f64);
        let calls = &mut *(state as *mut i32);
        *calls += 1;
        results[0].value.f64 = args[0].value.i64 as f64 * factor + args[1].value.f64;
        results[1].value.i32 = *calls;
    }
    ptr::null_mut()
}

/// `native.refuse(i32) -> ()`: fails with the argument as status code.
unsafe extern "C" fn refuse(
    _user_data: *mut c_void,
    _state: *mut c_void,
    args: *const rtx_value_t,
    _num_args: usize,
    _results: *mut rtx_value_t,
    _num_results: usize,
) -> *mut rtx_error_t {
    // SAFETY: one argument by the calling convention; the message is a C string.
    unsafe { rtx_error_new((*args).value.i32 as u32, c"refused on purpose".as_ptr()) }
}

unsafe extern "C" fn create_state(_user_data: *mut c_void, out_state: *mut *mut c_void) -> *mut rtx_error_t {
    STATES_CREATED.fetch_add(1, Ordering::SeqCst);
    // SAFETY: a writable out-pointer.
    unsafe { out_state.write(Box::into_raw(Box::new(0i32)).cast()) };
    ptr::null_mut()
}

unsafe extern "C" fn destroy_state(_user_data: *mut c_void, state: *mut c_void) {
    STATES_DESTROYED.fetch_add(1, Ordering::SeqCst);
    // SAFETY: the box from create_state, freed once.
    drop(unsafe { Box::from_raw(state.cast::<i32>()) });
}

unsafe extern "C" fn destroy(user_data: *mut c_void) {
    DESTROYED.fetch_add(1, Ordering::SeqCst);
    // SAFETY: the box the test leaked as user data.
    drop(unsafe { Box::from_raw(user_data.cast::<f64>()) });
}

/// Counts the `destroy` calls of modules that must never be created.
static REFUSED_DESTROYED: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn counted_destroy(_user_data: *mut c_void) {
    REFUSED_DESTROYED.fetch_add(1, Ordering::SeqCst);
}

fn native_options(functions: &[rtx_native_function_t], user_data: *mut c_void) -> rtx_native_module_options_t {
    let mut options = std::mem::MaybeUninit::uninit();
    // SAFETY: init writes the whole struct.
    let mut options = unsafe {
        rtx_native_module_options_init(options.as_mut_ptr());
        options.assume_init()
    };
    options.name = c"native".as_ptr();
    options.version = 3;
    options.functions = functions.as_ptr();
    options.num_functions = functions.len();
    options.user_data = user_data;
    options
}

#[test]
fn a_c_native_module_is_called_through_invoke_with_per_context_state() {
    let functions = [
        rtx_native_function_t { name: c"scale".as_ptr(), cconv: c"0IF_Fi".as_ptr(), function: Some(scale) },
        rtx_native_function_t { name: c"refuse".as_ptr(), cconv: c"0i_v".as_ptr(), function: Some(refuse) },
    ];
    let factor = Box::into_raw(Box::new(2.5f64)).cast::<c_void>();
    let mut options = native_options(&functions, factor);
    options.destroy = Some(destroy);
    options.create_state = Some(create_state);
    options.destroy_state = Some(destroy_state);
    let mut module = ptr::null_mut();
    // SAFETY: handles created and released here.
    unsafe {
        ok(rtx_native_module_new(&options, &mut module));
        let (first, second) = (new_context(c"mstd:2,2"), new_context(c"s"));
        ok(rtx_context_add_native_module(first, module));
        ok(rtx_context_add_native_module(second, module));
        assert_eq!(code(rtx_context_add_native_module(second, module)), Some(RTX_STATUS_CODE_ALREADY_EXISTS));
        // The refused add is turned away before any state is created.
        assert_eq!(STATES_CREATED.load(Ordering::SeqCst), 2);
        assert_eq!(STATES_DESTROYED.load(Ordering::SeqCst), 0);
        rtx_native_module_release(module);

        let (x, y) = (rtx_async_value_new_i64(4), rtx_async_value_new_f64(0.5));
        for expected_calls in 1..=2 {
            let results = invoke(first, "native.scale", &[x, y], 2);
            let mut product = 0.0;
            ok(rtx_async_value_get_f64(results[0], &mut product));
            assert_eq!(product, 10.5);
            assert_eq!(get_i32(results[1]), expected_calls, "the first context's state counts its calls");
            release_all(&results);
        }
        let results = invoke(second, "native.scale", &[x, y], 2);
        assert_eq!(get_i32(results[1]), 1, "each context has its own state");
        release_all(&results);

        let nine = rtx_async_value_new_i32(RTX_STATUS_CODE_FAILED_PRECONDITION as i32);
        let mut none = ptr::null_mut();
        ok(rtx_context_invoke(first, c"native.refuse".as_ptr(), &nine, 1, &mut none, 0));
        // No results to wait for: quiescing runs the call.
        rtx_context_quiesce(first);
        let wrong = invoke(first, "native.scale", &[y, y], 2);
        let (status, message) = error_of(wrong[0]);
        assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
        assert!(message.contains("expected i64"), "{message}");
        release_all(&wrong);
        release_all(&[x, y, nine]);

        rtx_context_release(first);
        assert_eq!(STATES_DESTROYED.load(Ordering::SeqCst), 1);
        assert_eq!(DESTROYED.load(Ordering::SeqCst), 0, "the second context still holds the module");
        rtx_context_release(second);
        assert_eq!(STATES_DESTROYED.load(Ordering::SeqCst), 2);
        assert_eq!(DESTROYED.load(Ordering::SeqCst), 1, "destroy runs once, after the last owner");
    }
}

#[test]
fn a_native_error_fails_the_calls_results_with_its_code() {
    let functions = [rtx_native_function_t {
        name: c"refuse".as_ptr(),
        cconv: c"0i_i".as_ptr(),
        function: Some(refuse_with_result),
    }];
    let options = native_options(&functions, ptr::null_mut());
    let mut module = ptr::null_mut();
    // SAFETY: handles created and released here.
    unsafe {
        ok(rtx_native_module_new(&options, &mut module));
        let context = new_context(c"s");
        ok(rtx_context_add_native_module(context, module));
        rtx_native_module_release(module);
        let code_arg = rtx_async_value_new_i32(RTX_STATUS_CODE_RESOURCE_EXHAUSTED as i32);
        let results = invoke(context, "native.refuse", &[code_arg], 1);
        let (status, message) = error_of(results[0]);
        assert_eq!(status, RTX_STATUS_CODE_RESOURCE_EXHAUSTED);
        assert!(message.contains("`native.refuse`: refused on purpose"), "{message}");
        release_all(&results);
        rtx_async_value_release(code_arg);
        rtx_context_release(context);
    }
}

unsafe extern "C" fn refuse_with_result(
    user_data: *mut c_void,
    state: *mut c_void,
    args: *const rtx_value_t,
    num_args: usize,
    results: *mut rtx_value_t,
    num_results: usize,
) -> *mut rtx_error_t {
    // SAFETY: forwarded.
    unsafe { refuse(user_data, state, args, num_args, results, num_results) }
}

unsafe extern "C" fn never_called(
    _: *mut c_void,
    _: *mut c_void,
    _: *const rtx_value_t,
    _: usize,
    _: *mut rtx_value_t,
    _: usize,
) -> *mut rtx_error_t {
    unreachable!("rejected modules are never called")
}

#[test]
fn native_modules_with_refs_spans_or_odd_cconvs_are_rejected_at_creation() {
    let cases: [(&CStr, &str); 6] = [
        (c"0r_i", "has a ref"),
        (c"0i_r", "has a ref"),
        (c"0CiD_v", "variadic span"),
        (c"0i", "as `0i_v`"),
        (c"1i_i", "byte 0"),
        (c"0ix_i", "byte 2"),
    ];
    for (cconv, expected) in cases {
        let functions =
            [rtx_native_function_t { name: c"f".as_ptr(), cconv: cconv.as_ptr(), function: Some(never_called) }];
        // A refused table takes over nothing: `destroy` stays the caller's to run.
        let mut options = native_options(&functions, ptr::null_mut());
        options.destroy = Some(counted_destroy);
        let mut module = ptr::null_mut();
        // SAFETY: valid options and out pointer.
        let (status, message) = take(unsafe { rtx_native_module_new(&options, &mut module) }).unwrap();
        assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT, "{cconv:?}");
        assert!(message.contains("`native.f`") && message.contains(expected), "{cconv:?}: {message}");
        assert!(module.is_null());
        assert_eq!(REFUSED_DESTROYED.load(Ordering::SeqCst), 0, "{cconv:?}: destroy ran for a refused module");
    }

    // SAFETY: NULLs and bad tables are what is being tested.
    unsafe {
        let good = rtx_native_function_t { name: c"f".as_ptr(), cconv: c"0i_i".as_ptr(), function: Some(never_called) };
        let mut module = ptr::null_mut();
        let invalid = Some(RTX_STATUS_CODE_INVALID_ARGUMENT);
        assert_eq!(code(rtx_native_module_new(ptr::null(), &mut module)), invalid);
        let options = native_options(std::slice::from_ref(&good), ptr::null_mut());
        assert_eq!(code(rtx_native_module_new(&options, ptr::null_mut())), invalid);
        let mut small = native_options(&[], ptr::null_mut());
        small.struct_size = 4;
        assert_eq!(code(rtx_native_module_new(&small, &mut module)), invalid);
        for name in [c"", c"a.b"] {
            let mut named = native_options(&[], ptr::null_mut());
            named.name = name.as_ptr();
            assert_eq!(code(rtx_native_module_new(&named, &mut module)), invalid);
        }
        let mut no_table = native_options(&[], ptr::null_mut());
        no_table.functions = ptr::null();
        no_table.num_functions = 2;
        assert_eq!(code(rtx_native_module_new(&no_table, &mut module)), invalid);
        let twice = [good, rtx_native_function_t { ..good }];
        let (_, message) = take(rtx_native_module_new(&native_options(&twice, ptr::null_mut()), &mut module)).unwrap();
        assert!(message.contains("function 1 (`native.f`)"), "{message}");
        let null_function = [rtx_native_function_t { function: None, ..good }];
        let (_, message) =
            take(rtx_native_module_new(&native_options(&null_function, ptr::null_mut()), &mut module)).unwrap();
        assert!(message.contains("options->functions[0].function is NULL"), "{message}");
        let null_name = [rtx_native_function_t { name: ptr::null(), ..good }];
        assert_eq!(code(rtx_native_module_new(&native_options(&null_name, ptr::null_mut()), &mut module)), invalid);
        assert!(module.is_null());

        assert_eq!(code(rtx_context_add_native_module(ptr::null_mut(), ptr::null_mut())), invalid);
        let context = new_context(c"s");
        assert_eq!(code(rtx_context_add_native_module(context, ptr::null_mut())), invalid);
        rtx_context_release(context);
        assert!(rtx_native_module_retain(ptr::null_mut()).is_null());
        rtx_native_module_release(ptr::null_mut());
        rtx_native_module_options_init(ptr::null_mut());
    }
}

#[test]
fn rtx_error_new_never_makes_an_ok_error() {
    // SAFETY: errors created and freed here.
    unsafe {
        assert_eq!(take(rtx_error_new(0, ptr::null())), Some((RTX_STATUS_CODE_UNKNOWN, String::new())));
        assert_eq!(take(rtx_error_new(5, c"gone".as_ptr())), Some((RTX_STATUS_CODE_NOT_FOUND, "gone".into())));
    }
}

unsafe extern "C" fn host_add(
    _: *mut c_void,
    _: *mut c_void,
    args: *const rtx_value_t,
    _: usize,
    results: *mut rtx_value_t,
    _: usize,
) -> *mut rtx_error_t {
    // SAFETY: two i32 arguments and one i32 result by the calling convention `0ii_i`.
    unsafe { (*results).value.i32 = (*args).value.i32 + (*args.add(1)).value.i32 };
    ptr::null_mut()
}

unsafe extern "C" fn host_scale(
    _: *mut c_void,
    _: *mut c_void,
    args: *const rtx_value_t,
    _: usize,
    results: *mut rtx_value_t,
    _: usize,
) -> *mut rtx_error_t {
    // SAFETY: `0If_If`: an i64 and an f32 in, the same out.
    unsafe {
        (*results).value.i64 = (*args).value.i64 * 3;
        (*results.add(1)).value.f32 = (*args.add(1)).value.f32 * 0.5;
    }
    ptr::null_mut()
}

unsafe extern "C" fn host_later(
    _: *mut c_void,
    _: *mut c_void,
    args: *const rtx_value_t,
    _: usize,
    results: *mut rtx_value_t,
    _: usize,
) -> *mut rtx_error_t {
    // SAFETY: `0i_i`.
    unsafe { (*results).value.i32 = (*args).value.i32 * 2 };
    ptr::null_mut()
}

#[test]
fn bytecode_imports_resolve_to_a_c_native_module() {
    let functions = [
        rtx_native_function_t { name: c"add".as_ptr(), cconv: c"0ii_i".as_ptr(), function: Some(host_add) },
        rtx_native_function_t { name: c"scale".as_ptr(), cconv: c"0If_If".as_ptr(), function: Some(host_scale) },
        rtx_native_function_t { name: c"later".as_ptr(), cconv: c"0i_i".as_ptr(), function: Some(host_later) },
    ];
    let mut options = native_options(&functions, ptr::null_mut());
    options.name = c"host".as_ptr();
    let mut native = ptr::null_mut();
    let path = CString::new(fixture_dir("loader").join("native_calls.vmfb").to_str().unwrap()).unwrap();
    let mut module = ptr::null_mut();
    // SAFETY: handles created and released here.
    unsafe {
        ok(rtx_native_module_new(&options, &mut native));
        ok(rtx_module_load_file(path.as_ptr(), &mut module));
        let context = new_context(c"mstd:2,2");
        let (status, message) = take(rtx_context_add_module(context, module)).unwrap();
        assert_eq!(status, RTX_STATUS_CODE_NOT_FOUND, "{message}");
        assert!(message.contains("`host`"), "{message}");
        ok(rtx_context_add_native_module(context, native));
        ok(rtx_context_add_module(context, module));
        rtx_native_module_release(native);
        rtx_module_release(module);

        let (a, b) = (rtx_async_value_new_i32(2), rtx_async_value_new_i32(3));
        let results = invoke(context, "add_then_later", &[a, b], 1);
        assert_eq!(get_i32(results[0]), 10);
        release_all(&results);
        let (x, f) = (rtx_async_value_new_i64(7), rtx_async_value_new_f32(3.0));
        let results = invoke(context, "native_calls.scale", &[x, f], 2);
        let mut scaled = 0.0f32;
        ok(rtx_async_value_get_f32(results[1], &mut scaled));
        assert_eq!((get_i64(results[0]), scaled), (21, 1.5));
        release_all(&results);
        release_all(&[a, b, x, f]);
        rtx_context_release(context);
    }
}
