//! `rtx_context_t`: a runtime context for C hosts — work queue, allocator, cancellation, a device
//! and module instances (`runtime::Context`). Contexts share the process-wide runtime's threads.

use std::ffi::c_char;
use std::sync::Arc;

use super::allocator::{rtx_allocator_callbacks_t, CAllocator};
use super::async_value::rtx_async_value_t;
use super::error::rtx_error_t;
use super::handle::{self, Handle, OwnershipArc};
use super::work_queue::{rtx_work_queue_callbacks_t, CWorkQueue};
use super::{c_str, catch_error, catch_or, check_struct_size, invalid_argument, Callback, UserData};
use crate::host::work_queue::WorkQueueSpec;
use crate::host::{Diagnostic, HostAllocator, ResultExt};
use crate::runtime::{Context, ContextOptions, QueueChoice, Runtime};

/// A context: work queue + allocator + cancellation, a device and the modules added to it.
/// Opaque; reference counted; every function on it is thread-safe.
#[allow(non_camel_case_types)]
pub struct rtx_context {
    _private: [u8; 0],
}

/// The handle type C sees.
#[allow(non_camel_case_types)]
pub type rtx_context_t = rtx_context;

impl Handle for rtx_context {
    type RustType = Context;
    type Ownership = OwnershipArc;
}

/// Options for `rtx_context_new`. Initialise with `rtx_context_options_init`, which sets
/// `struct_size`, so that a library newer than the header can tell which fields exist.
#[repr(C)]
#[allow(non_camel_case_types)]
pub struct rtx_context_options_t {
    /// `sizeof(rtx_context_options_t)` as the caller's header knows it.
    pub struct_size: usize,
    /// The work queue: `"s"` (single-threaded, the context's own: tasks run only inside
    /// await/quiesce), `"mstd"` (one worker per core), `"mstd:N"` or `"mstd:N,M"` (N workers, at
    /// most M blocking threads). NULL means `"mstd"`. Copied. Multi-threaded queues are shared:
    /// every live context of the process that names the same queue uses the same threads, which
    /// stop when the last such context is released.
    pub work_queue: *const c_char,
    /// A host-provided queue; when set, `work_queue` is ignored. Copied; its `destroy` runs when
    /// the context is freed.
    pub custom_work_queue: *const rtx_work_queue_callbacks_t,
    /// A host-provided allocator for the context's memory (tensors, its CPU device's buffers and
    /// transients, VM buffers, writable copies of constants); NULL means the system allocator,
    /// behind a cache that keeps up to 256 MiB of freed blocks of 64 KiB and more for reuse
    /// (a model's calls allocate the same sizes each time), freed with the context.
    /// Copied; its `destroy` runs when the last memory from it is returned.
    pub allocator: *const rtx_allocator_callbacks_t,
    /// The most bytes the context may hold from its allocator at once (with the default
    /// allocator, the freed blocks it keeps count); an allocation past it fails with
    /// RESOURCE_EXHAUSTED. 0 means no limit. A later field: a struct that ends before it has none.
    pub memory_limit: u64,
}

/// What a context's allocator has handed out for it (`rtx_context_memory_stats`).
#[repr(C)]
#[allow(non_camel_case_types)]
pub struct rtx_memory_stats_t {
    /// `sizeof(rtx_memory_stats_t)` as the caller's header knows it.
    pub struct_size: usize,
    /// Bytes held now: every tensor, device buffer, transient block and VM buffer of the context,
    /// and with the default allocator the freed blocks it keeps for reuse.
    pub bytes_in_use: u64,
    /// The most bytes held at once since the context was made.
    pub peak_bytes: u64,
    /// Blocks the allocator has handed out since the context was made.
    pub allocations: u64,
}

/// Fills `options` with the defaults (multi-threaded queue, the cached system allocator). NULL
/// does nothing.
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
                    memory_limit: 0,
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
        let options = unsafe { context_options(options, FUNCTION) }?;
        let context = Runtime::shared().context_with(options).context(FUNCTION)?;
        // SAFETY: checked non-null above; written only on success.
        unsafe { out_context.write(handle::to_handle(Arc::new(context))) };
        Ok(())
    })
}

/// # Safety
/// As for `rtx_context_new`'s `options`.
unsafe fn context_options(options: *const rtx_context_options_t, function: &str) -> Result<ContextOptions, Diagnostic> {
    // SAFETY: reading `struct_size` first is valid for any version of the struct.
    let Some(struct_size) = (unsafe { options.cast::<usize>().as_ref() }).copied() else {
        return Ok(ContextOptions::default());
    };
    // The first version of the struct ended before `memory_limit`.
    let first_version = std::mem::offset_of!(rtx_context_options_t, memory_limit);
    check_struct_size(struct_size, first_version, "options", function)?;
    let has_memory_limit = struct_size >= std::mem::size_of::<rtx_context_options_t>();
    // SAFETY: the struct is at least as large as its first version, which holds the first three
    // fields; the later one is read only where the caller's struct has it. Each is read through
    // its own place, with no reference made to the whole struct, which may be shorter.
    let (queue_spec, queue_table, allocator_table, memory_limit) = unsafe {
        (
            (&raw const (*options).work_queue).read(),
            (&raw const (*options).custom_work_queue).read(),
            (&raw const (*options).allocator).read(),
            if has_memory_limit { (&raw const (*options).memory_limit).read() } else { 0 },
        )
    };
    // SAFETY (both tables): a non-null table pointer is readable by contract.
    let allocator_table = unsafe { allocator_table.as_ref() };
    let queue_table = unsafe { queue_table.as_ref() };
    // Everything that can fail happens before any host callback table is taken over, so that a
    // failed call never runs the host's `destroy` callbacks.
    // SAFETY: readable by contract (above).
    let allocator = allocator_table.map(|table| unsafe { CAllocator::new(table, function) }).transpose()?;
    let work_queue = match queue_table {
        Some(table) => {
            // SAFETY: readable by contract (above).
            let mut queue = unsafe { CWorkQueue::new(table, function) }?;
            queue.arm_destroy(table);
            QueueChoice::Own(Arc::new(queue))
        }
        None if queue_spec.is_null() => ContextOptions::default().work_queue,
        // SAFETY: a non-null spec is NUL-terminated by contract.
        None => QueueChoice::Spec(
            WorkQueueSpec::parse(unsafe { c_str(queue_spec, function, "options->work_queue") }?).context(function)?,
        ),
    };
    let allocator = match (allocator, allocator_table) {
        (Some(mut c_allocator), Some(table)) => {
            c_allocator.arm_destroy(table);
            Some(Arc::new(c_allocator) as Arc<dyn HostAllocator>)
        }
        _ => None,
    };
    let memory_limit = (memory_limit != 0).then(|| usize::try_from(memory_limit).unwrap_or(usize::MAX));
    Ok(ContextOptions { work_queue, allocator, memory_limit })
}

/// Adds a reference and returns `context` (NULL stays NULL).
#[no_mangle]
pub unsafe extern "C" fn rtx_context_retain(context: *mut rtx_context_t) -> *mut rtx_context_t {
    // SAFETY: a non-null `context` is a live handle by contract.
    catch_or(context, || unsafe { handle::retain(context) })
}

/// Drops a reference. The last one waits for the context's pending work (quiesce), stops its
/// threads and frees it. NULL does nothing.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_release(context: *mut rtx_context_t) {
    // SAFETY: the caller gives up one reference it owns.
    catch_or((), || unsafe { handle::release(context) })
}

/// Waits until none of this context's work is queued or running, including work that running
/// work adds (contexts share the process's worker threads; other contexts' work is not waited
/// for). Called from one of the worker threads it returns at once (it would wait for itself).
/// NULL does nothing.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_quiesce(context: *mut rtx_context_t) {
    catch_or((), || {
        // SAFETY: forwarded from the caller.
        if let Some(context) = unsafe { handle::borrow_opt(context) } {
            // The only failure is being called from a worker, documented as returning at once.
            let _ = context.host().quiesce();
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
        if let Some(context) = unsafe { handle::borrow_opt(context) } {
            context.host().cancel();
        }
    })
}

/// Clears a cancellation so the context accepts work again. NULL does nothing.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_restart(context: *mut rtx_context_t) {
    catch_or((), || {
        // SAFETY: forwarded from the caller.
        if let Some(context) = unsafe { handle::borrow_opt(context) } {
            context.host().restart();
        }
    })
}

/// True after `rtx_context_cancel` and before `rtx_context_restart`. False for NULL.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_is_cancelled(context: *const rtx_context_t) -> bool {
    // SAFETY: forwarded from the caller.
    catch_or(false, || unsafe { handle::borrow_opt(context) }.is_some_and(|c| c.host().is_cancelled()))
}

/// A new reference to the context's cancellation value: unavailable until the context is
/// cancelled, then a CANCELLED error (attach `rtx_async_value_and_then` to react). NULL for NULL.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_cancellation_value(context: *const rtx_context_t) -> *mut rtx_async_value_t {
    catch_or(std::ptr::null_mut(), || {
        // SAFETY: forwarded from the caller.
        unsafe { handle::borrow_opt(context) }
            .map_or(std::ptr::null_mut(), |c| handle::to_handle(c.host().cancel_value()))
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
        let context = unsafe { handle::borrow(context, function, "context") }?;
        let function_ptr = work.ok_or_else(|| invalid_argument(format!("{function}: argument 'work' is NULL")))?;
        let callback = Callback { function: function_ptr, user_data: UserData(user_data) };
        context.host().enqueue_task(Box::new(move || callback.call()), blocking).context(function)
    })
}

/// How many tasks can run at once (worker threads; 1 for `"s"`). 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_parallelism(context: *const rtx_context_t) -> u32 {
    catch_or(0, || {
        // SAFETY: forwarded from the caller.
        unsafe { handle::borrow_opt(context) }
            .map_or(0, |c| u32::try_from(c.host().parallelism_level()).unwrap_or(u32::MAX))
    })
}

/// True if the calling thread is running a task of this context's queue. False for NULL.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_is_in_worker_thread(context: *const rtx_context_t) -> bool {
    // SAFETY: forwarded from the caller.
    catch_or(false, || unsafe { handle::borrow_opt(context) }.is_some_and(|c| c.host().is_in_worker_thread()))
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
        let context = unsafe { handle::borrow(context, FUNCTION, "context") }?;
        if out_ptr.is_null() {
            return Err(invalid_argument(format!("{FUNCTION}: argument 'out_ptr' is NULL")));
        }
        let ptr = context.host().allocate(size, align).context(FUNCTION)?;
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
        let (Some(context), Some(ptr)) =
            (unsafe { handle::borrow_opt(context) }, std::ptr::NonNull::new(ptr.cast::<u8>()))
        else {
            return;
        };
        // SAFETY: the caller returns memory from this context's allocator with its size and align.
        unsafe { context.host().allocator().deallocate(ptr, size, align) };
    })
}

/// Writes what `context`'s allocator has handed out for it into `*out` (whose `struct_size` the
/// caller sets): bytes held now, the most held at once, and the blocks handed out. Every tensor,
/// device buffer, transient block and VM buffer of the context is counted. INVALID_ARGUMENT for
/// a NULL argument or a `struct_size` smaller than the struct.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_memory_stats(
    context: *const rtx_context_t,
    out: *mut rtx_memory_stats_t,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_context_memory_stats";
        // SAFETY: a non-null `context` is a live handle by contract.
        let context = unsafe { handle::borrow(context.cast_mut(), FUNCTION, "context") }?;
        if out.is_null() {
            return Err(invalid_argument(format!("{FUNCTION}: argument 'out' is NULL")));
        }
        // SAFETY: a non-null `out` points to a struct of at least `struct_size` bytes, whose
        // first field is `struct_size`.
        let declared = unsafe { out.cast::<usize>().read() };
        check_struct_size(declared, std::mem::size_of::<rtx_memory_stats_t>(), "out", FUNCTION)?;
        let stats = context.memory_stats();
        let stats = rtx_memory_stats_t {
            struct_size: declared,
            bytes_in_use: stats.bytes_in_use,
            peak_bytes: stats.peak_bytes,
            allocations: stats.allocations,
        };
        // SAFETY: `out` holds at least this version of the struct (checked above).
        unsafe { out.write(stats) };
        Ok(())
    })
}
