//! `HostContext`: what every piece of running work needs from its host — a work queue, an
//! allocator, a cancellation signal and a place for shared resources.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::allocator::{CachingAllocator, HostAllocator};
use super::async_value::{AsyncValueRef, RcAsyncValue};
use super::buffer::HostBuffer;
use super::chain::Chain;
use super::diagnostic::Diagnostic;
use super::tracing;
use super::work_queue::{create_work_queue, Task, WorkQueue};

/// The host side of an execution: shared by every kernel, VM call and device of one rtx context.
///
/// Thread-safe. Cancellation is sticky until [`restart`](Self::restart): `cancel` turns the
/// cancellation value into a CANCELLED error, which executors check before running work and which
/// [`enqueue_work`](Self::enqueue_work) reports instead of running the closure.
pub struct HostContext {
    work_queue: Arc<dyn WorkQueue>,
    allocator: Arc<dyn HostAllocator>,
    /// Checked on hot paths, so a plain flag beside the value. Shared (not the whole context) with
    /// queued tasks: a task owning the context that owns its queue would be a cycle.
    cancelled: Arc<AtomicBool>,
    cancel_value: Mutex<AsyncValueRef<Chain>>,
    resources: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl HostContext {
    pub fn new(work_queue: Arc<dyn WorkQueue>, allocator: Arc<dyn HostAllocator>) -> HostContext {
        HostContext {
            work_queue,
            allocator,
            cancelled: Arc::new(AtomicBool::new(false)),
            cancel_value: Mutex::new(AsyncValueRef::unconstructed()),
            resources: Mutex::new(HashMap::new()),
        }
    }

    /// A context with the queue a config string names (`s`, `mstd`, `mstd:N,M`) and the system
    /// allocator behind a cache of the large blocks freed (see [`CachingAllocator`]).
    pub fn with_work_queue_spec(spec: &str) -> Result<HostContext, Diagnostic> {
        Ok(HostContext::new(create_work_queue(spec)?, Arc::new(CachingAllocator::default())))
    }

    pub fn work_queue(&self) -> &Arc<dyn WorkQueue> {
        &self.work_queue
    }

    pub fn allocator(&self) -> &Arc<dyn HostAllocator> {
        &self.allocator
    }

    /// A zeroed block of host memory from this context's allocator.
    pub fn allocate_buffer(&self, len: usize, align: usize) -> Result<HostBuffer, Diagnostic> {
        HostBuffer::new_zeroed(Arc::clone(&self.allocator), len, align)
    }

    /// Runs `work` on the non-blocking pool and returns its result as a value. If the context is
    /// cancelled before the task starts, the value becomes the CANCELLED error and `work` is
    /// dropped unrun.
    pub fn enqueue_work<T, F>(&self, work: F) -> AsyncValueRef<T>
    where
        T: Send + Sync + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (result, task) = self.producer(work);
        self.work_queue.add_task(task);
        result
    }

    /// Like [`enqueue_work`](Self::enqueue_work), for work that may block. Fails (returning the
    /// error as the value) if the blocking pool cannot take it.
    pub fn enqueue_blocking_work<T, F>(&self, work: F) -> AsyncValueRef<T>
    where
        T: Send + Sync + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (result, task) = self.producer(work);
        if self.work_queue.add_blocking_task(task, true).is_err() {
            let _ = result.set_error(Diagnostic::new(
                super::StatusCode::ResourceExhausted,
                format!("work queue '{}' refused a blocking task", self.work_queue.name()),
            ));
        }
        result
    }

    /// Queues a host's own task (one that owns what it needs and reports nothing back): on the
    /// non-blocking pool, or on the blocking pool when `blocking`. CANCELLED, and the task is not
    /// queued, when the context is cancelled; RESOURCE_EXHAUSTED when the queue cannot take
    /// blocking work.
    pub fn enqueue_task(&self, task: Task, blocking: bool) -> Result<(), Diagnostic> {
        if self.is_cancelled() {
            return Err(Diagnostic::new(super::StatusCode::Cancelled, "the context is cancelled; work was not queued"));
        }
        if !blocking {
            self.work_queue.add_task(task);
            return Ok(());
        }
        self.work_queue.add_blocking_task(task, true).map_err(|_refused| {
            Diagnostic::new(
                super::StatusCode::ResourceExhausted,
                format!("work queue '{}' cannot take blocking work", self.work_queue.name()),
            )
        })
    }

    /// `size` bytes aligned to `align` from the context's allocator: INVALID_ARGUMENT for a zero
    /// size or an alignment that is not a power of two, RESOURCE_EXHAUSTED when the allocator has
    /// no memory. Give them back with the allocator's `deallocate` and the same size and align.
    pub fn allocate(&self, size: usize, align: usize) -> Result<std::ptr::NonNull<u8>, Diagnostic> {
        if size == 0 || !align.is_power_of_two() || std::alloc::Layout::from_size_align(size, align).is_err() {
            return Err(Diagnostic::new(
                super::StatusCode::InvalidArgument,
                format!(
                    "size {size} with alignment {align} is not allocatable (size must be non-zero, alignment a power \
                     of two)"
                ),
            ));
        }
        self.allocator.allocate(size, align).ok_or_else(|| {
            Diagnostic::new(
                super::StatusCode::ResourceExhausted,
                format!("the allocator has no {size} bytes aligned to {align}"),
            )
        })
    }

    /// A promise for `work`'s result and the task that fulfils it: with the result, or with the
    /// CANCELLED error if the context is cancelled by the time the task runs.
    fn producer<T, F>(&self, work: F) -> (AsyncValueRef<T>, Task)
    where
        T: Send + Sync + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let result = AsyncValueRef::<T>::unconstructed();
        let producer = result.clone();
        let cancelled = Arc::clone(&self.cancelled);
        let task: Task = Box::new(move || {
            let outcome = if cancelled.load(Ordering::Acquire) {
                producer.set_error(Diagnostic::cancelled())
            } else {
                producer.emplace(work())
            };
            debug_assert!(outcome.is_ok(), "a task's result is set only by that task");
        });
        (result, task)
    }

    /// Blocks a host thread until every value is available (see [`WorkQueue::await_values`]).
    pub fn await_values(&self, values: &[RcAsyncValue]) -> Result<(), Diagnostic> {
        let _span = tracing::span(
            tracing::Category::Wait,
            || "await values",
            || tracing::Args::none().with("values", values.len() as u64),
        );
        self.work_queue.await_values(values)
    }

    /// Blocks until no work is pending (see [`WorkQueue::quiesce`]).
    pub fn quiesce(&self) -> Result<(), Diagnostic> {
        let _span = tracing::span(tracing::Category::Wait, || "quiesce", tracing::Args::none);
        self.work_queue.quiesce()
    }

    pub fn parallelism_level(&self) -> usize {
        self.work_queue.parallelism_level()
    }

    pub fn is_in_worker_thread(&self) -> bool {
        self.work_queue.is_in_worker_thread()
    }

    /// Cancels pending work: the cancellation value becomes a CANCELLED error (running its
    /// continuations) and [`is_cancelled`](Self::is_cancelled) turns true. Idempotent.
    pub fn cancel(&self) {
        let value = self.lock_cancel_value();
        self.cancelled.store(true, Ordering::Release);
        // Already an error when cancelled twice: nothing more to do.
        let _ = value.set_error(Diagnostic::cancelled());
    }

    /// Clears a cancellation so the context can run work again.
    pub fn restart(&self) {
        let mut value = self.lock_cancel_value();
        if value.is_available() {
            *value = AsyncValueRef::unconstructed();
        }
        self.cancelled.store(false, Ordering::Release);
    }

    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    /// The cancellation value: unavailable until [`cancel`](Self::cancel), then a CANCELLED error.
    /// Attach `and_then` to it to react to cancellation.
    pub fn cancel_value(&self) -> RcAsyncValue {
        self.lock_cancel_value().as_untyped().clone()
    }

    /// The per-context instance of `T`, created by `make` on first use (TFRT's SharedContext):
    /// caches, device handles, anything kernels share.
    pub fn resource<T: Send + Sync + 'static>(&self, make: impl FnOnce() -> T) -> Arc<T> {
        let mut resources = self.resources.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = resources.entry(TypeId::of::<T>()).or_insert_with(|| Arc::new(make()));
        Arc::clone(entry).downcast::<T>().unwrap_or_else(|_| unreachable!("resources are keyed by their TypeId"))
    }

    fn lock_cancel_value(&self) -> MutexGuard<'_, AsyncValueRef<Chain>> {
        self.cancel_value.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl std::fmt::Debug for HostContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostContext")
            .field("work_queue", &self.work_queue.name())
            .field("parallelism", &self.parallelism_level())
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CountingAllocator, StatusCode};
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn enqueued_work_produces_its_value_on_both_queue_kinds() {
        for spec in ["s", "mstd:2,2"] {
            let host = HostContext::with_work_queue_spec(spec).unwrap();
            let values: Vec<_> = (0..20).map(|i| host.enqueue_work(move || i * 2)).collect();
            let blocking = host.enqueue_blocking_work(|| "done");
            let mut all: Vec<RcAsyncValue> = values.iter().map(|v| v.as_untyped().clone()).collect();
            all.push(blocking.as_untyped().clone());
            host.await_values(&all).unwrap();
            assert_eq!(values.iter().map(|v| *v.get()).sum::<i32>(), 380, "{spec}");
            assert_eq!(*blocking.get(), "done");
        }
    }

    #[test]
    fn pending_work_observes_cancellation_and_restart_clears_it() {
        let host = HostContext::with_work_queue_spec("s").unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let r = Arc::clone(&ran);
        let pending = host.enqueue_work(move || r.fetch_add(1, Ordering::SeqCst));
        let cancel_value = host.cancel_value();
        let observed = Arc::new(AtomicUsize::new(0));
        let o = Arc::clone(&observed);
        cancel_value.and_then(move || {
            o.fetch_add(1, Ordering::SeqCst);
        });
        host.cancel();
        host.cancel();
        assert!(host.is_cancelled());
        assert_eq!(observed.load(Ordering::SeqCst), 1, "cancellation continuations run once");
        host.quiesce().unwrap();
        assert_eq!(pending.get_error().unwrap().code, StatusCode::Cancelled);
        assert_eq!(ran.load(Ordering::SeqCst), 0, "cancelled work does not run");
        assert_eq!(cancel_value.get_error().unwrap().code, StatusCode::Cancelled);

        host.restart();
        assert!(!host.is_cancelled() && !host.cancel_value().is_available());
        let after = host.enqueue_work(|| 5);
        host.await_values(&[after.as_untyped().clone()]).unwrap();
        assert_eq!(*after.get(), 5);
    }

    #[test]
    fn resources_are_created_once_per_context() {
        let host = HostContext::with_work_queue_spec("s").unwrap();
        let made = AtomicUsize::new(0);
        let first = host.resource(|| {
            made.fetch_add(1, Ordering::SeqCst);
            String::from("cache")
        });
        let second = host.resource::<String>(|| unreachable!("already created"));
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(*host.resource(|| 7u8), 7);
        assert_eq!(made.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn dropping_a_context_with_queued_work_frees_everything() {
        // Miri's leak check is the judge: a queued task that owned its context would keep the
        // context, its queue and itself alive.
        let host = HostContext::with_work_queue_spec("s").unwrap();
        let result = host.enqueue_work(|| 1);
        drop(host);
        assert_eq!(*result.get(), 1, "dropping an s queue runs what it still holds");
    }

    #[test]
    fn buffers_come_from_the_context_allocator() {
        let counting = Arc::new(CountingAllocator::default());
        let host = HostContext::new(create_work_queue("s").unwrap(), counting.clone());
        let buffer = host.allocate_buffer(4096, 64).unwrap();
        assert_eq!(counting.live_bytes(), 64 + 4096, "a 64-byte header, then the data");
        drop(buffer);
        drop(host);
        assert_eq!(counting.live_allocations(), 0);
    }

    #[test]
    fn a_hosts_task_is_refused_while_cancelled_and_runs_after_restart() {
        let host = HostContext::with_work_queue_spec("mstd:1,1").unwrap();
        host.cancel();
        let error = host.enqueue_task(Box::new(|| {}), false).unwrap_err();
        assert_eq!(error.code, StatusCode::Cancelled);
        host.restart();
        let ran = Arc::new(AtomicUsize::new(0));
        for blocking in [false, true] {
            let ran = Arc::clone(&ran);
            let task = move || {
                ran.fetch_add(1, Ordering::SeqCst);
            };
            host.enqueue_task(Box::new(task), blocking).unwrap();
        }
        host.quiesce().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn allocation_requests_are_checked_before_the_allocator_sees_them() {
        let host = HostContext::with_work_queue_spec("s").unwrap();
        for (size, align) in [(0, 8), (16, 3), (16, 0)] {
            assert_eq!(host.allocate(size, align).unwrap_err().code, StatusCode::InvalidArgument, "{size} {align}");
        }
        let ptr = host.allocate(64, 16).unwrap();
        assert_eq!(ptr.as_ptr() as usize % 16, 0);
        // SAFETY: returned to the allocator it came from, with its size and alignment.
        unsafe { host.allocator().deallocate(ptr, 64, 16) };
    }
}
