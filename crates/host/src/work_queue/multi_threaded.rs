//! `mstd[:N[,M]]`: the thread-pool queue, TFRT's `MultiThreadedWorkQueue`.
//!
//! Two pools share one account of outstanding work:
//! - [`non_blocking`]: N workers with per-worker deques and work stealing, for tasks that never
//!   block (kernels, continuations). Workers that find nothing park; see that module.
//! - [`blocking`]: up to M threads started on demand, for tasks that may block; see that module.
//!
//! The account is one counter of tasks accepted but not finished, across both pools. A task's
//! children are counted before the task itself is uncounted, so the counter reaches zero only
//! when nothing is queued or running anywhere: `quiesce` waits for exactly that, on a condvar,
//! and dropping the queue waits for it before stopping the threads. TFRT instead counts only
//! while a quiesce is in progress, saving the shared counter's cache line on the fast path at the
//! price of a subtler protocol; next to a task's allocation and its own work, that line's
//! transfer is noise.
//!
//! Which queue, if any, the current thread works for is a thread-local: it lets `add_task` from a
//! worker go to that worker's own deque (LIFO, hot in cache), lets `await_values`/`quiesce` refuse
//! to block a worker, and lets the queue be dropped from one of its own threads without joining
//! itself.

mod blocking;
mod deque;
mod non_blocking;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Instant;

use self::deque::Worker;
use super::spec::{MAX_BLOCKING_THREADS, MAX_WORKERS};
use super::{refuse_on_own_thread, run_task};
use super::{Task, WorkQueue};
use crate::async_value::RcAsyncValue;
use crate::diagnostic::{Diagnostic, StatusCode};
use crate::join::block_until_ready;

/// A pool of N non-blocking workers plus up to M blocking threads. See the module docs.
pub struct MultiThreadedWorkQueue {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
}

/// Everything the pool's threads reach; they each hold an `Arc` of it, so a queue dropped from
/// one of its own threads stays alive until the last of them exits.
struct Shared {
    /// Tells this queue's threads from other queues' (see [`ROLE`]).
    id: u64,
    parallelism: usize,
    non_blocking: non_blocking::Pool,
    blocking: blocking::Pool,
    activity: Activity,
}

/// The account of outstanding work, and the wake-ups that depend on it. All accesses are SeqCst:
/// `task_done` and `wait_until_idle` form a Dekker pair (each writes one counter, then reads the
/// other), and the cost over weaker orderings is nil for read-modify-writes on x86.
struct Activity {
    /// Tasks accepted by either pool and not yet finished.
    pending: AtomicUsize,
    /// Threads in `wait_until_idle`: `task_done` takes the lock only when this is non-zero.
    quiescers: AtomicUsize,
    /// Set when the queue is dropped; workers exit once nothing is pending.
    shutdown: AtomicBool,
    idle_lock: Mutex<()>,
    idle: Condvar,
}

thread_local! {
    /// The multi-threaded queue this thread works for, if any: a thread belongs to one pool for
    /// its whole life.
    static ROLE: RefCell<Option<Role>> = const { RefCell::new(None) };
}

struct Role {
    queue: u64,
    /// The worker's own deque; `None` on blocking threads, whose tasks' children go through the
    /// injector.
    local: Option<Rc<Worker<Task>>>,
}

impl MultiThreadedWorkQueue {
    /// Starts `workers` non-blocking workers; blocking threads start on demand, at most
    /// `blocking_threads` at once.
    ///
    /// # Panics
    /// If a count is outside what a spec accepts (1..=1024 workers, 1..=4096 blocking threads) or
    /// the OS refuses a thread; [`try_new`](Self::try_new) reports those instead.
    pub fn new(workers: usize, blocking_threads: usize) -> MultiThreadedWorkQueue {
        MultiThreadedWorkQueue::try_new(workers, blocking_threads).unwrap_or_else(|error| panic!("{error}"))
    }

    /// As [`new`](Self::new), but a bad count is INVALID_ARGUMENT and a thread the OS refuses is
    /// RESOURCE_EXHAUSTED (with the threads started so far stopped again).
    pub fn try_new(workers: usize, blocking_threads: usize) -> Result<MultiThreadedWorkQueue, Diagnostic> {
        if !(1..=MAX_WORKERS).contains(&workers) || !(1..=MAX_BLOCKING_THREADS).contains(&blocking_threads) {
            return Err(Diagnostic::new(
                StatusCode::InvalidArgument,
                format!(
                    "a multi-threaded work queue needs 1..={MAX_WORKERS} workers and 1..={MAX_BLOCKING_THREADS} \
                     blocking threads, not {workers} and {blocking_threads}"
                ),
            ));
        }
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let (non_blocking, deques) = non_blocking::Pool::new(workers);
        let shared = Arc::new(Shared {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            parallelism: workers,
            non_blocking,
            blocking: blocking::Pool::new(blocking_threads),
            activity: Activity {
                pending: AtomicUsize::new(0),
                quiescers: AtomicUsize::new(0),
                shutdown: AtomicBool::new(false),
                idle_lock: Mutex::new(()),
                idle: Condvar::new(),
            },
        });
        let mut queue = MultiThreadedWorkQueue { shared, workers: Vec::with_capacity(workers) };
        for (index, deque) in deques.into_iter().enumerate() {
            let shared = Arc::clone(&queue.shared);
            let spawned = std::thread::Builder::new()
                .name(format!("rtx-mstd-{index}"))
                .spawn(move || non_blocking::worker_main(shared, index, deque));
            match spawned {
                Ok(handle) => queue.workers.push(handle),
                Err(error) => {
                    // Dropping the queue stops and joins the workers started so far.
                    drop(queue);
                    return Err(Diagnostic::new(
                        StatusCode::ResourceExhausted,
                        format!("could not start work queue worker {index} of {workers}: {error}"),
                    ));
                }
            }
        }
        Ok(queue)
    }
}

impl WorkQueue for MultiThreadedWorkQueue {
    fn name(&self) -> &str {
        "mstd"
    }

    /// From one of this queue's workers the task goes to that worker's deque; from anywhere else
    /// (a host thread, a blocking thread, another queue's worker) to the shared injector. The
    /// deques are unbounded, so the "full queue runs the task inline" case never arises.
    fn add_task(&self, task: Task) {
        let shared = &*self.shared;
        shared.activity.pending.fetch_add(1, Ordering::SeqCst);
        let mut task = Some(task);
        // A thread whose locals are being torn down has no role any more: `task` stays for the
        // injector.
        let _ = ROLE.try_with(|role| {
            if let Some(Role { queue, local: Some(local) }) = role.borrow().as_ref() {
                if *queue == shared.id {
                    local.push(task.take().expect("the task is still ours"));
                }
            }
        });
        if let Some(task) = task {
            shared.non_blocking.inject(task);
        }
        shared.non_blocking.wake_one_if_sleeping();
    }

    fn add_blocking_task(&self, task: Task, allow_queuing: bool) -> Result<(), Task> {
        blocking::Pool::add(&self.shared, task, allow_queuing)
    }

    fn await_values(&self, values: &[RcAsyncValue]) -> Result<(), Diagnostic> {
        refuse_on_own_thread(self, "await_values")?;
        // Results that come within a worker's spin are taken without sleeping: the wake-up
        // would cost tens of microseconds on a virtual machine, a small model's call a fifth of
        // its time. The thread yields between looks, leaving its CPU to the workers.
        let started = Instant::now();
        while !values.iter().all(RcAsyncValue::is_available) && started.elapsed() < non_blocking::SPIN {
            std::thread::yield_now();
        }
        block_until_ready(values);
        Ok(())
    }

    fn quiesce(&self) -> Result<(), Diagnostic> {
        refuse_on_own_thread(self, "quiesce")?;
        self.shared.activity.wait_until_idle();
        Ok(())
    }

    fn parallelism_level(&self) -> usize {
        self.shared.parallelism
    }

    fn is_in_worker_thread(&self) -> bool {
        self.shared.is_own_thread()
    }
}

/// Runs everything still queued, then stops and joins every thread. Dropped from one of its own
/// threads (a task held the last reference), the queue cannot wait for that task, which is still
/// running; it only tells the threads to exit once the work runs out, and detaches them.
impl Drop for MultiThreadedWorkQueue {
    fn drop(&mut self) {
        let on_own_thread = self.shared.is_own_thread();
        if !on_own_thread {
            self.shared.activity.wait_until_idle();
        }
        self.shared.activity.shutdown.store(true, Ordering::SeqCst);
        self.shared.non_blocking.wake_all();
        let blocking_threads = self.shared.blocking.shut_down();
        let threads = self.workers.drain(..).chain(blocking_threads);
        if on_own_thread {
            threads.for_each(drop);
        } else {
            for thread in threads {
                // Tasks' panics are caught where they run; a thread that still died has nothing
                // left for us to clean up.
                let _ = thread.join();
            }
        }
    }
}

impl Shared {
    fn is_own_thread(&self) -> bool {
        ROLE.try_with(|role| role.borrow().as_ref().is_some_and(|role| role.queue == self.id)).unwrap_or(false)
    }

    /// Runs one task of either pool and takes it off the account.
    fn run(&self, task: Task) {
        run_task(task);
        self.task_done();
    }

    /// Takes one finished task off the account, waking whoever waits for zero.
    fn task_done(&self) {
        let activity = &self.activity;
        if activity.pending.fetch_sub(1, Ordering::SeqCst) != 1 {
            return;
        }
        if activity.quiescers.load(Ordering::SeqCst) > 0 {
            // The lock orders this notify after a quiescer's last look at `pending`.
            let _guard = activity.idle_lock.lock().unwrap_or_else(PoisonError::into_inner);
            activity.idle.notify_all();
        }
        if activity.shutdown.load(Ordering::SeqCst) {
            // Parked workers of a queue dropped from its own thread exit now.
            self.non_blocking.wake_all();
        }
    }

    /// Whether the queue is dropped and its last task has finished: workers may exit.
    fn finished(&self) -> bool {
        self.activity.shutdown.load(Ordering::SeqCst) && self.activity.pending.load(Ordering::SeqCst) == 0
    }
}

impl Activity {
    /// Blocks until nothing is pending, sleeping on the condvar (woken by the last `task_done`).
    fn wait_until_idle(&self) {
        self.quiescers.fetch_add(1, Ordering::SeqCst);
        let mut guard = self.idle_lock.lock().unwrap_or_else(PoisonError::into_inner);
        while self.pending.load(Ordering::SeqCst) != 0 {
            guard = self.idle.wait(guard).unwrap_or_else(PoisonError::into_inner);
        }
        drop(guard);
        self.quiescers.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Marks the calling thread as working for `shared`'s queue until the guard drops.
fn enter_role(shared: &Shared, local: Option<Rc<Worker<Task>>>) -> RoleGuard {
    ROLE.with(|role| *role.borrow_mut() = Some(Role { queue: shared.id, local }));
    RoleGuard
}

struct RoleGuard;

impl Drop for RoleGuard {
    fn drop(&mut self) {
        // Ignore a thread whose locals are already gone: there is nothing left to clear.
        let _ = ROLE.try_with(|role| role.borrow_mut().take());
    }
}

#[cfg(test)]
mod tests;
