//! One context's share of a multi-threaded queue that several contexts use. Contexts of one
//! runtime share its worker threads (a host that opens many contexts must not get a pool per
//! context), but each context's `quiesce` must wait for its own work only: this view counts the
//! tasks added through it and waits for that count to reach zero.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use super::{refuse_on_own_thread, Task, WorkQueue};
use crate::async_value::RcAsyncValue;
use crate::diagnostic::Diagnostic;

/// A view of a shared multi-threaded queue that counts the tasks added through it.
///
/// Only for queues whose `quiesce` merely waits (multi-threaded ones): a single-threaded queue
/// runs its tasks inside `quiesce`, which this view does not do.
pub struct ScopedWorkQueue {
    shared: Arc<dyn WorkQueue>,
    pending: Arc<Pending>,
}

/// How many of the view's tasks are queued or running.
#[derive(Default)]
struct Pending {
    count: AtomicUsize,
    lock: Mutex<()>,
    idle: Condvar,
}

/// Takes a task off the account when it has run or has been dropped unrun (a queue shutting
/// down), panics included.
struct Ticket(Arc<Pending>);

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            // Taking the lock orders this wake-up after a waiter's check of the count.
            let _guard = self.0.lock.lock().unwrap_or_else(PoisonError::into_inner);
            self.0.idle.notify_all();
        }
    }
}

impl ScopedWorkQueue {
    pub fn new(shared: Arc<dyn WorkQueue>) -> ScopedWorkQueue {
        ScopedWorkQueue { shared, pending: Arc::default() }
    }

    fn counted(&self, task: Task) -> Task {
        self.pending.count.fetch_add(1, Ordering::AcqRel);
        let ticket = Ticket(Arc::clone(&self.pending));
        Box::new(move || {
            let _ticket = ticket;
            task();
        })
    }
}

impl WorkQueue for ScopedWorkQueue {
    fn name(&self) -> &str {
        self.shared.name()
    }

    fn add_task(&self, task: Task) {
        self.shared.add_task(self.counted(task));
    }

    fn add_blocking_task(&self, task: Task, allow_queuing: bool) -> Result<(), Task> {
        self.shared.add_blocking_task(self.counted(task), allow_queuing)
    }

    fn await_values(&self, values: &[RcAsyncValue]) -> Result<(), Diagnostic> {
        self.shared.await_values(values)
    }

    fn quiesce(&self) -> Result<(), Diagnostic> {
        refuse_on_own_thread(self, "quiesce")?;
        let mut guard = self.pending.lock.lock().unwrap_or_else(PoisonError::into_inner);
        while self.pending.count.load(Ordering::Acquire) != 0 {
            guard = self.pending.idle.wait(guard).unwrap_or_else(PoisonError::into_inner);
        }
        Ok(())
    }

    fn parallelism_level(&self) -> usize {
        self.shared.parallelism_level()
    }

    fn is_in_worker_thread(&self) -> bool {
        self.shared.is_in_worker_thread()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::work_queue::create_work_queue;
    use rtx_test_support::deadline::{wait_until, within_deadline};
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    #[test]
    fn quiesce_waits_for_the_views_own_tasks_and_not_for_other_views() {
        within_deadline("quiesce_waits_for_the_views_own_tasks_and_not_for_other_views", || {
            let shared = create_work_queue("mstd:2,2").unwrap();
            let ours = ScopedWorkQueue::new(Arc::clone(&shared));
            let theirs = ScopedWorkQueue::new(Arc::clone(&shared));
            let release = Arc::new(AtomicBool::new(false));
            // A task of the other view that runs until the test lets it go.
            let gate = Arc::clone(&release);
            theirs.add_task(Box::new(move || {
                while !gate.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }));
            let done = Arc::new(AtomicUsize::new(0));
            for _ in 0..50 {
                let done = Arc::clone(&done);
                ours.add_task(Box::new(move || {
                    done.fetch_add(1, Ordering::SeqCst);
                }));
            }
            ours.quiesce().unwrap();
            assert_eq!(done.load(Ordering::SeqCst), 50);
            release.store(true, Ordering::Release);
            theirs.quiesce().unwrap();
        });
    }

    #[test]
    fn a_panicking_or_refused_task_still_leaves_the_account() {
        let shared = create_work_queue("mstd:1,1").unwrap();
        let view = ScopedWorkQueue::new(shared);
        view.add_task(Box::new(|| panic!("task panics on purpose")));
        view.quiesce().unwrap();
        // A refused blocking task comes back; dropping it unrun takes it off the account too.
        // The pool's one blocking thread is held by a task that has started, so another task
        // that may not queue is refused.
        let (blocker, started) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let (gate, running) = (Arc::clone(&blocker), Arc::clone(&started));
        view.add_blocking_task(
            Box::new(move || {
                running.store(true, Ordering::Release);
                while !gate.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }),
            true,
        )
        .ok()
        .unwrap();
        wait_until("the blocking task starts", || started.load(Ordering::Acquire));
        let refused = view.add_blocking_task(Box::new(|| {}), false);
        assert!(refused.is_err(), "the pool's one blocking thread is busy");
        drop(refused);
        blocker.store(true, Ordering::Release);
        view.quiesce().unwrap();
    }

    #[test]
    fn quiesce_on_a_worker_of_the_shared_queue_is_refused() {
        let shared = create_work_queue("mstd:1,1").unwrap();
        let view = Arc::new(ScopedWorkQueue::new(shared));
        let outcome = Arc::new(Mutex::new(None));
        let (inner, seen) = (Arc::clone(&view), Arc::clone(&outcome));
        view.add_task(Box::new(move || {
            *seen.lock().unwrap() = Some(inner.quiesce().is_err());
        }));
        view.quiesce().unwrap();
        assert_eq!(*outcome.lock().unwrap(), Some(true));
    }
}
