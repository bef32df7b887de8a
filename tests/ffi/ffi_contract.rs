//! The C API's contract, exercised from Rust through the exported functions: NULL handling,
//! error codes and messages, out-parameters untouched on failure, custom queues and allocators.

use std::ffi::{c_void, CStr};
use std::ptr;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

use rtx::ffi::allocator::rtx_allocator_callbacks_t;
use rtx::ffi::async_value::*;
use rtx::ffi::context::*;
use rtx::ffi::error::*;
use rtx::ffi::work_queue::*;

use crate::common::{code, new_context, take};

use rtx_status_code_t::*;

#[test]
fn scalars_round_trip_and_type_mismatches_are_invalid_argument() {
    // SAFETY: every handle below is created and released here.
    unsafe {
        let i32_value = rtx_async_value_new_i32(-5);
        let mut out = 0i32;
        assert_eq!(take(rtx_async_value_get_i32(i32_value, &mut out)), None);
        assert_eq!(out, -5);
        let mut wrong = 1.5f64;
        assert_eq!(code(rtx_async_value_get_f64(i32_value, &mut wrong)), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));
        assert_eq!(wrong, 1.5, "out-parameters are written only on success");
        assert_eq!(rtx_async_value_type(i32_value), rtx_value_type_t::RTX_VALUE_TYPE_I32);
        rtx_async_value_release(i32_value);

        let flag = rtx_async_value_new_i1(true);
        let mut b = false;
        assert_eq!(take(rtx_async_value_get_i1(flag, &mut b)), None);
        assert!(b);
        rtx_async_value_release(flag);
        let chain = rtx_async_value_new_chain();
        assert_eq!(rtx_async_value_type(chain), rtx_value_type_t::RTX_VALUE_TYPE_CHAIN);
        rtx_async_value_release(chain);
    }
}

#[test]
fn promises_are_set_once_and_unavailable_reads_are_failed_precondition() {
    // SAFETY: handles created and released here.
    unsafe {
        let promise = rtx_async_value_new_unavailable();
        let mut out = 0f32;
        assert_eq!(code(rtx_async_value_get_f32(promise, &mut out)), Some(RTX_STATUS_CODE_FAILED_PRECONDITION));
        assert!(!rtx_async_value_is_available(promise));
        assert_eq!(take(rtx_async_value_set_f32(promise, 2.5)), None);
        let (status, message) = take(rtx_async_value_set_f32(promise, 3.5)).unwrap();
        assert_eq!(status, RTX_STATUS_CODE_FAILED_PRECONDITION);
        assert!(message.contains("rtx_async_value_set_f32") && message.contains("already set"), "{message}");
        assert_eq!(take(rtx_async_value_get_f32(promise, &mut out)), None);
        assert_eq!(out, 2.5);
        rtx_async_value_release(promise);
    }
}

#[test]
fn errors_keep_their_code_and_message() {
    // SAFETY: handles created and released here.
    unsafe {
        let value = rtx_async_value_new_unavailable();
        rtx_async_value_set_error(value, c"disk on fire".as_ptr());
        assert!(rtx_async_value_is_error(value));
        let mut out = 0i64;
        assert_eq!(
            take(rtx_async_value_get_i64(value, &mut out)),
            Some((RTX_STATUS_CODE_INTERNAL, "disk on fire".into()))
        );
        assert_eq!(take(rtx_async_value_get_error(value)), Some((RTX_STATUS_CODE_INTERNAL, "disk on fire".into())));
        rtx_async_value_release(value);
        let coded = rtx_async_value_new_error(RTX_STATUS_CODE_NOT_FOUND as u32, c"no such thing".as_ptr());
        assert_eq!(take(rtx_async_value_get_error(coded)), Some((RTX_STATUS_CODE_NOT_FOUND, "no such thing".into())));
        rtx_async_value_release(coded);
        let odd = rtx_async_value_new_error(12345, ptr::null());
        assert_eq!(take(rtx_async_value_get_error(odd)), Some((RTX_STATUS_CODE_UNKNOWN, String::new())));
        rtx_async_value_release(odd);
        assert_eq!(CStr::from_ptr(rtx_status_code_name(3)).to_str().unwrap(), "INVALID_ARGUMENT");
        assert_eq!(CStr::from_ptr(rtx_status_code_name(777)).to_str().unwrap(), "UNKNOWN");
    }
}

#[test]
fn null_arguments_are_invalid_argument_or_ignored() {
    // SAFETY: NULL everywhere is the point; nothing is dereferenced.
    unsafe {
        let mut out = 0i32;
        let (status, message) = take(rtx_async_value_get_i32(ptr::null(), &mut out)).unwrap();
        assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
        assert!(message.contains("'value' is NULL"), "{message}");
        let value = rtx_async_value_new_i32(1);
        assert_eq!(code(rtx_async_value_get_i32(value, ptr::null_mut())), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));
        assert_eq!(code(rtx_async_value_set_i32(ptr::null_mut(), 1)), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));
        assert_eq!(code(rtx_context_new(ptr::null(), ptr::null_mut())), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));
        assert_eq!(code(rtx_async_value_await(ptr::null_mut(), &value, 1)), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));
        assert_eq!(
            code(rtx_context_enqueue(ptr::null_mut(), None, ptr::null_mut())),
            Some(RTX_STATUS_CODE_INVALID_ARGUMENT)
        );
        assert_eq!(rtx_error_code(ptr::null()), RTX_STATUS_CODE_OK);
        rtx_async_value_release(ptr::null_mut());
        rtx_async_value_and_then(ptr::null_mut(), None, ptr::null_mut());
        rtx_context_release(ptr::null_mut());
        rtx_context_quiesce(ptr::null_mut());
        rtx_context_cancel(ptr::null_mut());
        rtx_error_delete(ptr::null_mut());
        assert!(!rtx_async_value_is_available(ptr::null()));
        assert_eq!(rtx_context_parallelism(ptr::null()), 0);
        let context = new_context(c"s");
        assert_eq!(code(rtx_async_value_await(context, ptr::null(), 1)), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));
        let with_null = [value, ptr::null_mut()];
        let (_, message) = take(rtx_async_value_await(context, with_null.as_ptr(), 2)).unwrap();
        assert!(message.contains("values[1]"), "{message}");
        assert_eq!(code(rtx_async_value_await(context, ptr::null(), 0)), None);
        rtx_context_release(context);
        rtx_async_value_release(value);
    }
}

#[test]
fn bad_queue_specs_are_invalid_argument() {
    for spec in [c"", c"x", c"mstd:0", c"mstd:a", c"mstd:1,2,3", c"s:1"] {
        let mut options = std::mem::MaybeUninit::<rtx_context_options_t>::uninit();
        let mut context = ptr::null_mut();
        // SAFETY: options initialised; out pointer valid and checked untouched on failure.
        unsafe {
            rtx_context_options_init(options.as_mut_ptr());
            let mut options = options.assume_init();
            options.work_queue = spec.as_ptr();
            let (status, message) = take(rtx_context_new(&options, &mut context)).unwrap();
            assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT, "{spec:?}: {message}");
        }
        assert!(context.is_null(), "out_context untouched on failure");
    }
    let mut options = std::mem::MaybeUninit::<rtx_context_options_t>::uninit();
    // SAFETY: as above.
    unsafe {
        rtx_context_options_init(options.as_mut_ptr());
        let mut options = options.assume_init();
        options.struct_size = 8;
        let mut context = ptr::null_mut();
        assert_eq!(code(rtx_context_new(&options, &mut context)), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));
    }
}

unsafe extern "C" fn bump(user_data: *mut c_void) {
    // SAFETY: user_data is the AtomicUsize the test passed.
    unsafe { &*(user_data as *const AtomicUsize) }.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn enqueue_await_cancel_and_restart_on_both_queue_kinds() {
    for spec in [c"s", c"mstd:2,2"] {
        let context = new_context(spec);
        let counter = AtomicUsize::new(0);
        let data = &counter as *const AtomicUsize as *mut c_void;
        // SAFETY: the context and counter outlive the tasks (quiesce below).
        unsafe {
            for _ in 0..10 {
                assert_eq!(take(rtx_context_enqueue(context, Some(bump), data)), None);
            }
            assert_eq!(take(rtx_context_enqueue_blocking(context, Some(bump), data)), None);
            rtx_context_quiesce(context);
            assert_eq!(counter.load(Ordering::SeqCst), 11, "{spec:?}");
            let cancel = rtx_context_cancellation_value(context);
            assert!(!rtx_async_value_is_available(cancel));
            rtx_context_cancel(context);
            assert!(rtx_context_is_cancelled(context));
            assert_eq!(code(rtx_async_value_get_error(cancel)), Some(RTX_STATUS_CODE_CANCELLED));
            assert_eq!(code(rtx_context_enqueue(context, Some(bump), data)), Some(RTX_STATUS_CODE_CANCELLED));
            rtx_context_restart(context);
            assert!(!rtx_context_is_cancelled(context));
            assert_eq!(take(rtx_context_enqueue(context, Some(bump), data)), None);
            rtx_context_quiesce(context);
            assert_eq!(counter.load(Ordering::SeqCst), 12);
            rtx_async_value_release(cancel);
            rtx_context_release(context);
        }
    }
}

struct CountingHost {
    live: AtomicIsize,
    destroyed: AtomicUsize,
}

unsafe extern "C" fn host_allocate(user_data: *mut c_void, size: usize, align: usize) -> *mut c_void {
    // SAFETY: user_data is the CountingHost; layout valid per the contract.
    unsafe {
        (*(user_data as *const CountingHost)).live.fetch_add(1, Ordering::SeqCst);
        std::alloc::alloc(std::alloc::Layout::from_size_align_unchecked(size, align)).cast()
    }
}

unsafe extern "C" fn host_deallocate(user_data: *mut c_void, ptr: *mut c_void, size: usize, align: usize) {
    // SAFETY: returning memory from host_allocate with its layout.
    unsafe {
        (*(user_data as *const CountingHost)).live.fetch_sub(1, Ordering::SeqCst);
        std::alloc::dealloc(ptr.cast(), std::alloc::Layout::from_size_align_unchecked(size, align));
    }
}

unsafe extern "C" fn host_destroy(user_data: *mut c_void) {
    // SAFETY: user_data is the CountingHost.
    unsafe { &*(user_data as *const CountingHost) }.destroyed.fetch_add(1, Ordering::SeqCst);
}

/// An allocator table whose callbacks count live blocks and `destroy` calls in `host`.
fn counting_allocator(host: &CountingHost) -> rtx_allocator_callbacks_t {
    rtx_allocator_callbacks_t {
        struct_size: std::mem::size_of::<rtx_allocator_callbacks_t>(),
        user_data: host as *const CountingHost as *mut c_void,
        allocate: Some(host_allocate),
        deallocate: Some(host_deallocate),
        destroy: Some(host_destroy),
    }
}

/// A host queue that runs each task on a new thread.
unsafe extern "C" fn host_add_task(user_data: *mut c_void, task: *mut rtx_task_t) {
    // SAFETY: user_data is the CountingHost (counts tasks in `live` here).
    unsafe { &*(user_data as *const CountingHost) }.live.fetch_add(1, Ordering::SeqCst);
    let task = task as usize;
    std::thread::spawn(move || {
        // SAFETY: each task is run exactly once.
        unsafe { rtx_task_run(task as *mut rtx_task_t) }
    });
}

#[test]
fn custom_queue_and_allocator_are_used_and_destroyed_once() {
    let allocator_host = CountingHost { live: AtomicIsize::new(0), destroyed: AtomicUsize::new(0) };
    let queue_host = CountingHost { live: AtomicIsize::new(0), destroyed: AtomicUsize::new(0) };
    let allocator = counting_allocator(&allocator_host);
    let queue = rtx_work_queue_callbacks_t {
        struct_size: std::mem::size_of::<rtx_work_queue_callbacks_t>(),
        user_data: &queue_host as *const CountingHost as *mut c_void,
        name: c"threads".as_ptr(),
        parallelism: 3,
        add_task: Some(host_add_task),
        add_blocking_task: None,
        destroy: Some(host_destroy),
    };
    let counter = AtomicUsize::new(0);
    // SAFETY: all pointers outlive the context, which is released before they go.
    unsafe {
        let mut options = std::mem::MaybeUninit::<rtx_context_options_t>::uninit();
        rtx_context_options_init(options.as_mut_ptr());
        let mut options = options.assume_init();
        options.custom_work_queue = &queue;
        options.allocator = &allocator;
        let mut context = ptr::null_mut();
        assert_eq!(take(rtx_context_new(&options, &mut context)), None);
        assert_eq!(rtx_context_parallelism(context), 3);
        for _ in 0..5 {
            assert_eq!(take(rtx_context_enqueue(context, Some(bump), &counter as *const _ as *mut c_void)), None);
        }
        assert_eq!(
            code(rtx_context_enqueue_blocking(context, Some(bump), &counter as *const _ as *mut c_void)),
            Some(RTX_STATUS_CODE_RESOURCE_EXHAUSTED),
            "a queue without add_blocking_task refuses blocking work"
        );
        rtx_context_quiesce(context);
        assert_eq!(counter.load(Ordering::SeqCst), 5);
        assert_eq!(queue_host.live.load(Ordering::SeqCst), 5);

        let mut block = ptr::null_mut();
        assert_eq!(take(rtx_context_allocate(context, 256, 64, &mut block)), None);
        assert_eq!(block as usize % 64, 0);
        assert_eq!(allocator_host.live.load(Ordering::SeqCst), 1);
        assert_eq!(code(rtx_context_allocate(context, 0, 8, &mut block)), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));
        assert_eq!(code(rtx_context_allocate(context, 8, 3, &mut block)), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));
        rtx_context_deallocate(context, block, 256, 64);
        assert_eq!(allocator_host.live.load(Ordering::SeqCst), 0);
        rtx_context_release(context);
    }
    assert_eq!(allocator_host.destroyed.load(Ordering::SeqCst), 1);
    assert_eq!(queue_host.destroyed.load(Ordering::SeqCst), 1);
}

unsafe extern "C" fn set_forty_two(user_data: *mut c_void) {
    // SAFETY: user_data is a live promise handle owned by the test.
    let error = unsafe { rtx_async_value_set_i32(user_data as *mut rtx_async_value_t, 42) };
    assert!(error.is_null());
}

#[test]
fn await_runs_the_single_threaded_queue_and_and_then_sees_the_value() {
    let context = new_context(c"s");
    // SAFETY: handles created and released here; the task runs inside await.
    unsafe {
        let promise = rtx_async_value_new_unavailable();
        let seen = AtomicUsize::new(0);
        rtx_async_value_and_then(promise, Some(bump), &seen as *const _ as *mut c_void);
        assert_eq!(take(rtx_context_enqueue(context, Some(set_forty_two), promise as *mut c_void)), None);
        assert!(!rtx_async_value_is_available(promise), "the s queue runs nothing until the host donates itself");
        assert_eq!(take(rtx_async_value_await(context, &promise, 1)), None);
        let mut out = 0;
        assert_eq!(take(rtx_async_value_get_i32(promise, &mut out)), None);
        assert_eq!((out, seen.load(Ordering::SeqCst)), (42, 1));
        let indirect = rtx_async_value_new_indirect();
        assert_eq!(take(rtx_async_value_forward(indirect, promise)), None);
        assert_eq!(code(rtx_async_value_forward(promise, indirect)), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));
        assert_eq!(code(rtx_async_value_forward(indirect, promise)), Some(RTX_STATUS_CODE_FAILED_PRECONDITION));
        assert_eq!(take(rtx_async_value_get_i32(indirect, &mut out)), None);
        rtx_async_value_release(indirect);
        rtx_async_value_release(promise);
        rtx_context_release(context);
    }
}

#[test]
fn a_failed_context_new_leaves_the_host_tables_untouched() {
    let allocator_host = CountingHost { live: AtomicIsize::new(0), destroyed: AtomicUsize::new(0) };
    let allocator = counting_allocator(&allocator_host);
    // SAFETY: the table outlives the call; the context is never created.
    unsafe {
        let mut options = std::mem::MaybeUninit::<rtx_context_options_t>::uninit();
        rtx_context_options_init(options.as_mut_ptr());
        let mut options = options.assume_init();
        options.allocator = &allocator;
        options.work_queue = c"mstd:0".as_ptr();
        let mut context = ptr::null_mut();
        assert_eq!(code(rtx_context_new(&options, &mut context)), Some(RTX_STATUS_CODE_INVALID_ARGUMENT));
        assert!(context.is_null());
    }
    assert_eq!(allocator_host.destroyed.load(Ordering::SeqCst), 0, "rtx never took the allocator");
}

#[test]
fn setting_an_available_value_is_failed_precondition_whatever_its_type() {
    // SAFETY: handles created and released here.
    unsafe {
        let failed = rtx_async_value_new_error(RTX_STATUS_CODE_DATA_LOSS as u32, c"gone".as_ptr());
        let (status, message) = take(rtx_async_value_set_i32(failed, 1)).unwrap();
        assert_eq!(status, RTX_STATUS_CODE_FAILED_PRECONDITION, "{message}");
        let number = rtx_async_value_new_f64(1.0);
        assert_eq!(code(rtx_async_value_set_i1(number, true)), Some(RTX_STATUS_CODE_FAILED_PRECONDITION));
        let (status, message) = take(rtx_async_value_get_i32(number, &mut 0)).unwrap();
        assert_eq!(status, RTX_STATUS_CODE_INVALID_ARGUMENT);
        assert!(message.contains("expected i32, found f64"), "{message}");
        rtx_async_value_release(number);
        rtx_async_value_release(failed);
    }
}

#[test]
fn host_work_queued_before_cancel_still_runs_and_sees_the_cancellation() {
    let context = new_context(c"s");
    let counter = AtomicUsize::new(0);
    let data = &counter as *const AtomicUsize as *mut c_void;
    // SAFETY: the counter outlives the tasks, which run inside quiesce.
    unsafe {
        for _ in 0..3 {
            assert_eq!(take(rtx_context_enqueue(context, Some(bump), data)), None);
        }
        rtx_context_cancel(context);
        rtx_context_quiesce(context);
        assert_eq!(counter.load(Ordering::SeqCst), 3, "queued host work owns its user_data, so it runs");
        assert!(rtx_context_is_cancelled(context));
        rtx_context_release(context);
    }
}
