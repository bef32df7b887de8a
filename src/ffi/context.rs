//! `rtx_context_t`: a host context (work queue, allocator, cancellation) for C hosts. Later
//! layers hang kernels, devices and module instances off the same handle.

use std::ffi::c_char;
use std::mem::ManuallyDrop;
use std::sync::Arc;

use super::allocator::{rtx_allocator_callbacks_t, CAllocator};
use super::async_value::{into_handle, rtx_async_value_t};
use super::error::rtx_error_t;
use super::work_queue::{rtx_work_queue_callbacks_t, CWorkQueue};
use super::{c_str, catch_error, catch_or, check_struct_size, invalid_argument, non_null, Callback, UserData};
use crate::host::work_queue::create_work_queue;
use crate::host::{Diagnostic, HostAllocator, HostContext, StatusCode, SystemAllocator, WorkQueue};

/// What an `rtx_context_t` owns. Reference counted (`Arc`): `_retain`/`_release`.
pub struct Context {
    /// The VM modules added with `rtx_context_add_module` / `rtx_context_add_native_module`.
    /// Declared first so that `__deinit` runs while the work queue still exists.
    pub(crate) vm: crate::vm::context::Context,
    /// Only this struct holds the `Arc` for good: queued work holds a `Weak` (see
    /// `ffi::invocation`), so the context, its queue and its threads go away on the host thread
    /// that releases the last reference.
    pub(crate) host: Arc<HostContext>,
}

impl Context {
    fn new(host: HostContext) -> Context {
        Context { vm: crate::vm::context::Context::new(), host: Arc::new(host) }
    }
}

/// Waits for the queue's pending work before anything is freed: a running task may hold a
/// short-lived strong reference to the host context (upgraded from its `Weak`), and the last
/// reference must not be dropped on a worker thread, which would have to detach the queue's
/// threads instead of joining them. Then the VM context runs its modules' `__deinit`.
impl Drop for Context {
    fn drop(&mut self) {
        // Fails only on one of the queue's own workers, where waiting would never end.
        let _ = self.host.quiesce();
    }
}

/// A context: work queue + allocator + cancellation, the device added with
/// `rtx_context_add_device` and the instances of the modules added to it. Opaque; reference
/// counted; every function on it is thread-safe.
#[allow(non_camel_case_types)]
pub struct rtx_context {
    _private: [u8; 0],
}

/// The handle type C sees.
#[allow(non_camel_case_types)]
pub type rtx_context_t = rtx_context;

/// Options for `rtx_context_new`. Initialise with `rtx_context_options_init`, which sets
/// `struct_size`, so that a library newer than the header can tell which fields exist.
#[repr(C)]
#[allow(non_camel_case_types)]
pub struct rtx_context_options_t {
    /// `sizeof(rtx_context_options_t)` as the caller's header knows it.
    pub struct_size: usize,
    /// The work queue: `"s"` (single-threaded: tasks run only inside await/quiesce), `"mstd"`
    /// (one worker per core), `"mstd:N"` or `"mstd:N,M"` (N workers, at most M blocking
    /// threads). NULL means `"mstd"`. Copied.
    pub work_queue: *const c_char,
    /// A host-provided queue; when set, `work_queue` is ignored. Copied; its `destroy` runs when
    /// the context is freed.
    pub custom_work_queue: *const rtx_work_queue_callbacks_t,
    /// A host-provided allocator for the runtime's bulk memory; NULL means the system allocator.
    /// Copied; its `destroy` runs when the last memory from it is returned.
    pub allocator: *const rtx_allocator_callbacks_t,
}

/// Borrows a context handle, or names the NULL argument.
///
/// # Safety
/// A non-null `context` must be a live context handle.
pub(crate) unsafe fn borrow(
    context: *const rtx_context_t,
    function: &str,
) -> Result<ManuallyDrop<Arc<Context>>, Diagnostic> {
    // SAFETY: forwarded from the caller; only used to check for NULL.
    unsafe { non_null(context, function, "context") }?;
    // SAFETY: a live handle is a pointer from `Arc::into_raw`; ManuallyDrop keeps the count.
    Ok(ManuallyDrop::new(unsafe { Arc::from_raw(context as *const Context) }))
}

/// Fills `options` with the defaults (multi-threaded queue, system allocator). NULL does nothing.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_options_init(options: *mut rtx_context_options_t) {
    catch_or((), || {
        if !options.is_null() {
            // SAFETY: a non-null `options` points to writable storage of the struct's size.
            unsafe {
                options.write(rtx_context_options_t {
                    struct_size: std::mem::size_of::<rtx_context_options_t>(),
                    work_queue: c"mstd".as_ptr(),
                    custom_work_queue: std::ptr::null(),
                    allocator: std::ptr::null(),
                })
            };
        }
    })
}

/// Creates a context. `options` may be NULL for the defaults. INVALID_ARGUMENT for a NULL
/// `out_context`, a `struct_size` smaller than the first version of the struct, a bad queue spec
/// or incomplete callback tables. `*out_context` is written only on success.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_new(
    options: *const rtx_context_options_t,
    out_context: *mut *mut rtx_context_t,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_context_new";
        if out_context.is_null() {
            return Err(invalid_argument(format!("{FUNCTION}: argument 'out_context' is NULL")));
        }
        // SAFETY: a non-null `options` points to a struct of at least `struct_size` bytes,
        // checked before any field is read.
        let host = unsafe { host_from_options(options, FUNCTION) }?;
        let handle = Arc::into_raw(Arc::new(Context::new(host))) as *mut rtx_context_t;
        // SAFETY: checked non-null above; written only on success.
        unsafe { out_context.write(handle) };
        Ok(())
    })
}

/// # Safety
/// As for `rtx_context_new`'s `options`.
unsafe fn host_from_options(options: *const rtx_context_options_t, function: &str) -> Result<HostContext, Diagnostic> {
    // SAFETY: reading `struct_size` first is valid for any version of the struct.
    let Some(struct_size) = (unsafe { options.cast::<usize>().as_ref() }).copied() else {
        return Ok(HostContext::new(create_work_queue("mstd")?, Arc::new(SystemAllocator)));
    };
    check_struct_size(struct_size, std::mem::size_of::<rtx_context_options_t>(), "options", function)?;
    // SAFETY: the struct is at least as large as this version of it.
    let options = unsafe { &*options };
    // SAFETY (both tables): a non-null table pointer is readable by contract.
    let allocator_table = unsafe { options.allocator.as_ref() };
    let queue_table = unsafe { options.custom_work_queue.as_ref() };
    // Everything that can fail happens before any host callback table is taken over, so that a
    // failed call never runs the host's `destroy` callbacks.
    // SAFETY: readable by contract (above).
    let allocator = allocator_table.map(|table| unsafe { CAllocator::new(table, function) }).transpose()?;
    let work_queue: Arc<dyn WorkQueue> = match queue_table {
        Some(table) => {
            // SAFETY: readable by contract (above).
            let mut queue = unsafe { CWorkQueue::new(table, function) }?;
            queue.arm_destroy(table);
            Arc::new(queue)
        }
        None if options.work_queue.is_null() => create_work_queue("mstd")?,
        // SAFETY: a non-null spec is NUL-terminated by contract.
        None => create_work_queue(unsafe { c_str(options.work_queue, function, "options->work_queue") }?)
            .map_err(|e| Diagnostic::new(e.code, format!("{function}: {}", e.message)))?,
    };
    let allocator: Arc<dyn HostAllocator> = match (allocator, allocator_table) {
        (Some(mut c_allocator), Some(table)) => {
            c_allocator.arm_destroy(table);
            Arc::new(c_allocator)
        }
        _ => Arc::new(SystemAllocator),
    };
    Ok(HostContext::new(work_queue, allocator))
}

/// Adds a reference and returns `context` (NULL stays NULL).
#[no_mangle]
pub unsafe extern "C" fn rtx_context_retain(context: *mut rtx_context_t) -> *mut rtx_context_t {
    catch_or(context, || {
        if !context.is_null() {
            // SAFETY: a live handle from `Arc::into_raw`.
            unsafe { Arc::increment_strong_count(context as *const Context) };
        }
        context
    })
}

/// Drops a reference. The last one waits for the context's pending work (quiesce), stops its
/// threads and frees it. NULL does nothing.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_release(context: *mut rtx_context_t) {
    catch_or((), || {
        if !context.is_null() {
            // SAFETY: the caller gives up one reference it owns.
            drop(unsafe { Arc::from_raw(context as *const Context) });
        }
    })
}

/// Waits until no work is queued or running on the context's queue, including work that running
/// work adds. Called from one of the context's own worker threads it returns at once (it would
/// wait for itself). NULL does nothing.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_quiesce(context: *mut rtx_context_t) {
    catch_or((), || {
        // SAFETY: forwarded from the caller.
        if let Ok(context) = unsafe { borrow(context, "") } {
            // The only failure is being called from a worker, documented as returning at once.
            let _ = context.host.quiesce();
        }
    })
}

/// Cancels the context: `rtx_context_enqueue*` refuses new work with CANCELLED, the runtime's own
/// pending work (kernels, VM calls) is skipped and its results become CANCELLED errors, and the
/// cancellation value (`rtx_context_cancellation_value`) becomes that error, running its
/// continuations. Work a host already queued with `rtx_context_enqueue*` still runs, because it
/// owns its `user_data`; it can check `rtx_context_is_cancelled`. Sticky until
/// `rtx_context_restart`. NULL does nothing.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_cancel(context: *mut rtx_context_t) {
    catch_or((), || {
        // SAFETY: forwarded from the caller.
        if let Ok(context) = unsafe { borrow(context, "") } {
            context.host.cancel();
        }
    })
}

/// Clears a cancellation so the context accepts work again. NULL does nothing.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_restart(context: *mut rtx_context_t) {
    catch_or((), || {
        // SAFETY: forwarded from the caller.
        if let Ok(context) = unsafe { borrow(context, "") } {
            context.host.restart();
        }
    })
}

/// True after `rtx_context_cancel` and before `rtx_context_restart`. False for NULL.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_is_cancelled(context: *const rtx_context_t) -> bool {
    // SAFETY: forwarded from the caller.
    catch_or(false, || unsafe { borrow(context, "") }.is_ok_and(|c| c.host.is_cancelled()))
}

/// A new reference to the context's cancellation value: unavailable until the context is
/// cancelled, then a CANCELLED error (attach `rtx_async_value_and_then` to react). NULL for NULL.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_cancellation_value(context: *const rtx_context_t) -> *mut rtx_async_value_t {
    catch_or(std::ptr::null_mut(), || {
        // SAFETY: forwarded from the caller.
        unsafe { borrow(context, "") }.map_or(std::ptr::null_mut(), |c| into_handle(c.host.cancel_value()))
    })
}

/// Queues `work(user_data)` on the non-blocking pool. `work` must not block. CANCELLED (and the
/// work is not queued) if the context is cancelled; INVALID_ARGUMENT for NULL `context`/`work`.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_enqueue(
    context: *mut rtx_context_t,
    work: Option<unsafe extern "C" fn(user_data: *mut std::ffi::c_void)>,
    user_data: *mut std::ffi::c_void,
) -> *mut rtx_error_t {
    // SAFETY: forwarded from the caller.
    unsafe { enqueue(context, work, user_data, "rtx_context_enqueue", false) }
}

/// Queues `work(user_data)` on the blocking pool (it may block). RESOURCE_EXHAUSTED if the queue
/// cannot take blocking work; otherwise as `rtx_context_enqueue`.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_enqueue_blocking(
    context: *mut rtx_context_t,
    work: Option<unsafe extern "C" fn(user_data: *mut std::ffi::c_void)>,
    user_data: *mut std::ffi::c_void,
) -> *mut rtx_error_t {
    // SAFETY: forwarded from the caller.
    unsafe { enqueue(context, work, user_data, "rtx_context_enqueue_blocking", true) }
}

/// # Safety
/// As for `rtx_context_enqueue`.
unsafe fn enqueue(
    context: *mut rtx_context_t,
    work: Option<unsafe extern "C" fn(user_data: *mut std::ffi::c_void)>,
    user_data: *mut std::ffi::c_void,
    function: &str,
    blocking: bool,
) -> *mut rtx_error_t {
    catch_error(|| {
        // SAFETY: forwarded from the caller.
        let context = unsafe { borrow(context, function) }?;
        let function_ptr = work.ok_or_else(|| invalid_argument(format!("{function}: argument 'work' is NULL")))?;
        if context.host.is_cancelled() {
            return Err(Diagnostic::new(
                StatusCode::Cancelled,
                format!("{function}: the context is cancelled; work was not queued"),
            ));
        }
        let callback = Callback { function: function_ptr, user_data: UserData(user_data) };
        let queue = context.host.work_queue();
        let task = Box::new(move || callback.call());
        if !blocking {
            queue.add_task(task);
            return Ok(());
        }
        queue.add_blocking_task(task, true).map_err(|_refused| {
            Diagnostic::new(
                StatusCode::ResourceExhausted,
                format!("{function}: work queue '{}' cannot take blocking work", queue.name()),
            )
        })
    })
}

/// How many tasks can run at once (worker threads; 1 for `"s"`). 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_parallelism(context: *const rtx_context_t) -> u32 {
    catch_or(0, || {
        // SAFETY: forwarded from the caller.
        unsafe { borrow(context, "") }.map_or(0, |c| u32::try_from(c.host.parallelism_level()).unwrap_or(u32::MAX))
    })
}

/// True if the calling thread is running a task of this context's queue. False for NULL.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_is_in_worker_thread(context: *const rtx_context_t) -> bool {
    // SAFETY: forwarded from the caller.
    catch_or(false, || unsafe { borrow(context, "") }.is_ok_and(|c| c.host.is_in_worker_thread()))
}

/// Allocates `size` bytes aligned to `align` (a power of two) from the context's allocator.
/// INVALID_ARGUMENT for a zero size, a bad alignment or NULL arguments; RESOURCE_EXHAUSTED when
/// the allocator has no memory. Free with `rtx_context_deallocate` and the same size and align.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_allocate(
    context: *mut rtx_context_t,
    size: usize,
    align: usize,
    out_ptr: *mut *mut std::ffi::c_void,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_context_allocate";
        // SAFETY: forwarded from the caller.
        let context = unsafe { borrow(context, FUNCTION) }?;
        if out_ptr.is_null() {
            return Err(invalid_argument(format!("{FUNCTION}: argument 'out_ptr' is NULL")));
        }
        if size == 0 || !align.is_power_of_two() || std::alloc::Layout::from_size_align(size, align).is_err() {
            return Err(invalid_argument(format!(
                "{FUNCTION}: size {size} with alignment {align} is not allocatable (size must be non-zero, alignment a power of two)"
            )));
        }
        let ptr = context.host.allocator().allocate(size, align).ok_or_else(|| {
            Diagnostic::new(
                StatusCode::ResourceExhausted,
                format!("{FUNCTION}: the allocator has no {size} bytes aligned to {align}"),
            )
        })?;
        // SAFETY: checked non-null; written only on success.
        unsafe { out_ptr.write(ptr.as_ptr().cast()) };
        Ok(())
    })
}

/// Returns memory from `rtx_context_allocate` (same context, size and align). NULL does nothing.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_deallocate(
    context: *mut rtx_context_t,
    ptr: *mut std::ffi::c_void,
    size: usize,
    align: usize,
) {
    catch_or((), || {
        // SAFETY: forwarded from the caller.
        let (Ok(context), Some(ptr)) = (unsafe { borrow(context, "") }, std::ptr::NonNull::new(ptr.cast::<u8>()))
        else {
            return;
        };
        // SAFETY: the caller returns memory from this context's allocator with its size and align.
        unsafe { context.host.allocator().deallocate(ptr, size, align) };
    })
}
