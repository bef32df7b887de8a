//! `s`: the queue with no threads of its own.
//!
//! Tasks wait in a mutex-guarded FIFO until a host thread lends itself, in `await_values` (which
//! runs tasks until the awaited values are available) or `quiesce` (which runs them until none is
//! left). That makes execution order a function of the program alone, which is what tests, golden
//! outputs and embedders that own every thread want.
//!
//! Design choices:
//! - One task is taken per lock, not a batch as TFRT does: an awaiting thread may then return the
//!   moment its values are ready, leaving the rest queued in order, and the cost is one
//!   uncontended lock per task.
//! - A thread with nothing to run sleeps on one condvar shared by everything that can change what
//!   it waits for: a new task (`notify_one`, since any waiting thread can run it), an awaited
//!   value becoming available and the last running task finishing (`notify_all`, since only a
//!   particular waiter cares). Nobody spins.
//! - "Is this thread running a task of this queue?" is a thread-local stack of queue ids, so
//!   several queues may live in one process and one queue's task may drive another queue.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use super::{refuse_on_own_thread, run_task, Task, WorkQueue};
use crate::async_value::RcAsyncValue;
use crate::diagnostic::Diagnostic;

/// A work queue that runs tasks only on host threads that wait on it. See the module docs.
pub struct SingleThreadedWorkQueue {
    id: u64,
    shared: Arc<Shared>,
}

/// What continuations attached by `await_values` need to reach after the call has returned, hence
/// shared.
struct Shared {
    state: Mutex<State>,
    /// Waited on by threads in `await_values`/`quiesce` that have nothing to run.
    changed: Condvar,
}

struct State {
    queue: VecDeque<Task>,
    /// Tasks being run right now (by any host thread); `quiesce` waits for them too, since they
    /// may add more.
    running: usize,
    /// Threads asleep on `changed`: lets `add_task` skip the notify when nobody listens.
    waiting: usize,
}

impl SingleThreadedWorkQueue {
    pub fn new() -> SingleThreadedWorkQueue {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        SingleThreadedWorkQueue {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            shared: Arc::new(Shared {
                state: Mutex::new(State { queue: VecDeque::new(), running: 0, waiting: 0 }),
                changed: Condvar::new(),
            }),
        }
    }

    /// Lends this thread to the queue until `done` holds, running queued tasks in FIFO order and
    /// sleeping when there are none.
    fn run_until(&self, mut done: impl FnMut(&State) -> bool) {
        let shared = &*self.shared;
        let mut state = shared.lock();
        loop {
            if done(&state) {
                break;
            }
            if let Some(task) = state.queue.pop_front() {
                state.running += 1;
                drop(state);
                self.run_marked(task);
                state = shared.lock();
                state.running -= 1;
                if state.running == 0 && state.queue.is_empty() && state.waiting > 0 {
                    // A quiescing thread elsewhere may be waiting for exactly this.
                    shared.changed.notify_all();
                }
                continue;
            }
            state.waiting += 1;
            state = shared.changed.wait(state).unwrap_or_else(PoisonError::into_inner);
            state.waiting -= 1;
        }
        // A `notify_one` for a new task may have woken us rather than another waiter, and we are
        // leaving without running it: pass the wake-up on.
        if !state.queue.is_empty() && state.waiting > 0 {
            shared.changed.notify_one();
        }
    }

    /// Runs one task with this queue marked as running on this thread.
    fn run_marked(&self, task: Task) {
        RUNNING_QUEUES.with(|ids| ids.borrow_mut().push(self.id));
        run_task(task);
        RUNNING_QUEUES.with(|ids| ids.borrow_mut().pop());
    }
}

impl Default for SingleThreadedWorkQueue {
    fn default() -> SingleThreadedWorkQueue {
        SingleThreadedWorkQueue::new()
    }
}

impl Shared {
    /// Locks the state. A poisoned lock is taken over: tasks run outside it, so a panic can only
    /// come from our own bookkeeping, which leaves the state consistent.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl WorkQueue for SingleThreadedWorkQueue {
    fn name(&self) -> &str {
        "s"
    }

    fn add_task(&self, task: Task) {
        let mut state = self.shared.lock();
        state.queue.push_back(task);
        if state.waiting > 0 {
            self.shared.changed.notify_one();
        }
    }

    /// Blocking tasks share the one queue: they can only run on a host thread that waits anyway.
    /// Without queuing there is no thread to start one on, so the task comes back.
    fn add_blocking_task(&self, task: Task, allow_queuing: bool) -> Result<(), Task> {
        if !allow_queuing {
            return Err(task);
        }
        self.add_task(task);
        Ok(())
    }

    fn await_values(&self, values: &[RcAsyncValue]) -> Result<(), Diagnostic> {
        refuse_on_own_thread(self, "await_values")?;
        let pending: Vec<&RcAsyncValue> = values.iter().filter(|v| !v.is_available()).collect();
        if pending.is_empty() {
            return Ok(());
        }
        let remaining = Arc::new(AtomicUsize::new(pending.len()));
        for value in pending {
            let remaining = Arc::clone(&remaining);
            let shared = Arc::clone(&self.shared);
            value.and_then(move || {
                if remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
                    // Taking the lock orders this wake-up after the waiter's last look at
                    // `remaining`, so it cannot be lost; values are often set by another OS thread.
                    let state = shared.lock();
                    if state.waiting > 0 {
                        shared.changed.notify_all();
                    }
                }
            });
        }
        self.run_until(|_| remaining.load(Ordering::Acquire) == 0);
        Ok(())
    }

    fn quiesce(&self) -> Result<(), Diagnostic> {
        refuse_on_own_thread(self, "quiesce")?;
        self.run_until(|state| state.queue.is_empty() && state.running == 0);
        Ok(())
    }

    fn parallelism_level(&self) -> usize {
        1
    }

    fn is_in_worker_thread(&self) -> bool {
        RUNNING_QUEUES.with(|ids| ids.borrow().contains(&self.id))
    }
}

/// Queued tasks are run, not dropped: a task may hold the only way to fulfil a promise someone
/// still waits on. Nothing can be running: every caller of `await_values`/`quiesce` borrows the
/// queue, so it cannot be dropped under them.
impl Drop for SingleThreadedWorkQueue {
    fn drop(&mut self) {
        if !self.is_in_worker_thread() {
            self.run_until(|state| state.queue.is_empty() && state.running == 0);
        }
    }
}

thread_local! {
    /// Ids of the single-threaded queues whose tasks this thread is running, innermost last.
    static RUNNING_QUEUES: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::async_value::AsyncValueRef;
    use crate::StatusCode;
    use rtx_test_support::deadline::within_deadline;
    use std::sync::atomic::AtomicBool;
    use std::thread;

    fn recorder() -> (Arc<Mutex<Vec<usize>>>, impl Fn(usize) -> Task) {
        let log = Arc::new(Mutex::new(Vec::new()));
        let log2 = Arc::clone(&log);
        (log, move |i| {
            let log = Arc::clone(&log2);
            Box::new(move || log.lock().unwrap().push(i)) as Task
        })
    }

    #[test]
    fn tasks_run_only_when_a_host_thread_lends_itself_in_fifo_order() {
        let queue = SingleThreadedWorkQueue::new();
        let (log, record) = recorder();
        for i in 0..10 {
            queue.add_task(record(i));
        }
        assert!(log.lock().unwrap().is_empty());
        queue.quiesce().unwrap();
        assert_eq!(*log.lock().unwrap(), (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn quiesce_runs_tasks_added_by_tasks() {
        let queue = Arc::new(SingleThreadedWorkQueue::new());
        let count = Arc::new(AtomicUsize::new(0));
        fn spawn_tree(queue: Arc<SingleThreadedWorkQueue>, count: Arc<AtomicUsize>, depth: u32) {
            let q = Arc::clone(&queue);
            queue.add_task(Box::new(move || {
                count.fetch_add(1, Ordering::Relaxed);
                if depth > 0 {
                    spawn_tree(Arc::clone(&q), Arc::clone(&count), depth - 1);
                    spawn_tree(q, count, depth - 1);
                }
            }));
        }
        spawn_tree(Arc::clone(&queue), Arc::clone(&count), 5);
        queue.quiesce().unwrap();
        assert_eq!(count.load(Ordering::Relaxed), 63);
    }

    #[test]
    fn await_runs_tasks_until_values_are_available_and_no_further() {
        let queue = SingleThreadedWorkQueue::new();
        let value = AsyncValueRef::<i32>::unconstructed();
        let (log, record) = recorder();
        queue.add_task(record(0));
        let v = value.clone();
        queue.add_task(Box::new(move || v.emplace(7).unwrap()));
        queue.add_task(record(2));
        queue.await_values(&[value.clone().into_untyped()]).unwrap();
        assert_eq!(*value.get(), 7);
        assert_eq!(*log.lock().unwrap(), vec![0]);
        queue.quiesce().unwrap();
        assert_eq!(*log.lock().unwrap(), vec![0, 2]);
    }

    #[test]
    fn await_on_available_values_returns_at_once() {
        let queue = SingleThreadedWorkQueue::new();
        let (log, record) = recorder();
        queue.add_task(record(0));
        queue.await_values(&[]).unwrap();
        queue.await_values(&[AsyncValueRef::available(1u8).into_untyped()]).unwrap();
        assert!(log.lock().unwrap().is_empty());
    }

    #[test]
    fn await_blocks_on_the_condvar_for_a_value_set_by_another_os_thread() {
        within_deadline("await_blocks_on_the_condvar_for_a_value_set_by_another_os_thread", || {
            let queue = SingleThreadedWorkQueue::new();
            let value = AsyncValueRef::<u64>::unconstructed();
            let setter = {
                let value = value.clone();
                let shared = Arc::clone(&queue.shared);
                thread::spawn(move || {
                    // Set the value only once the awaiting thread sleeps on the condvar: if it spun
                    // instead, this would never happen and the test would hang.
                    while shared.lock().waiting == 0 {
                        thread::yield_now();
                    }
                    value.emplace(11).unwrap();
                })
            };
            queue.await_values(&[value.clone().into_untyped()]).unwrap();
            assert_eq!(*value.get(), 11);
            setter.join().unwrap();
        });
    }

    #[test]
    fn a_task_added_from_another_thread_wakes_an_awaiting_thread() {
        within_deadline("a_task_added_from_another_thread_wakes_an_awaiting_thread", || {
            let queue = Arc::new(SingleThreadedWorkQueue::new());
            let value = AsyncValueRef::<u32>::unconstructed();
            let adder = {
                let queue = Arc::clone(&queue);
                let value = value.clone();
                thread::spawn(move || {
                    while queue.shared.lock().waiting == 0 {
                        thread::yield_now();
                    }
                    queue.add_task(Box::new(move || value.emplace(5).unwrap()));
                })
            };
            queue.await_values(&[value.clone().into_untyped()]).unwrap();
            assert_eq!(*value.get(), 5);
            adder.join().unwrap();
        });
    }

    #[test]
    fn await_and_quiesce_fail_inside_a_task_of_the_same_queue() {
        let queue = Arc::new(SingleThreadedWorkQueue::new());
        let results = Arc::new(Mutex::new(Vec::new()));
        let (q, r) = (Arc::clone(&queue), Arc::clone(&results));
        queue.add_task(Box::new(move || {
            let value = AsyncValueRef::<i32>::unconstructed().into_untyped();
            r.lock().unwrap().push(q.await_values(&[value]).unwrap_err());
            r.lock().unwrap().push(q.quiesce().unwrap_err());
        }));
        queue.quiesce().unwrap();
        let results = results.lock().unwrap();
        assert_eq!(results.len(), 2);
        for error in results.iter() {
            assert_eq!(error.code, StatusCode::FailedPrecondition);
            assert!(error.message.contains("thread of work queue 's'"), "{}", error.message);
        }
    }

    #[test]
    fn is_in_worker_thread_only_inside_own_tasks_even_when_queues_nest() {
        let outer = Arc::new(SingleThreadedWorkQueue::new());
        let inner = Arc::new(SingleThreadedWorkQueue::new());
        assert!(!outer.is_in_worker_thread());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (o, i, s) = (Arc::clone(&outer), Arc::clone(&inner), Arc::clone(&seen));
        outer.add_task(Box::new(move || {
            s.lock().unwrap().push((o.is_in_worker_thread(), i.is_in_worker_thread()));
            let (o2, i2, s2) = (Arc::clone(&o), Arc::clone(&i), Arc::clone(&s));
            i.add_task(Box::new(move || {
                s2.lock().unwrap().push((o2.is_in_worker_thread(), i2.is_in_worker_thread()));
            }));
            // Driving another queue from inside a task is allowed.
            i.quiesce().unwrap();
            s.lock().unwrap().push((o.is_in_worker_thread(), i.is_in_worker_thread()));
        }));
        outer.quiesce().unwrap();
        assert_eq!(*seen.lock().unwrap(), vec![(true, false), (true, true), (true, false)]);
        assert!(!outer.is_in_worker_thread());
    }

    #[test]
    fn blocking_tasks_queue_but_cannot_start_at_once() {
        let queue = SingleThreadedWorkQueue::new();
        let ran = Arc::new(AtomicBool::new(false));
        let r = Arc::clone(&ran);
        let refused = queue.add_blocking_task(Box::new(move || r.store(true, Ordering::Relaxed)), false);
        let task = refused.expect_err("no thread can start a task at once");
        assert!(queue.add_blocking_task(task, true).is_ok());
        assert!(!ran.load(Ordering::Relaxed));
        queue.quiesce().unwrap();
        assert!(ran.load(Ordering::Relaxed));
    }

    #[test]
    fn a_panicking_task_does_not_stop_the_others() {
        let queue = SingleThreadedWorkQueue::new();
        let (log, record) = recorder();
        queue.add_task(record(0));
        queue.add_task(Box::new(|| panic!("deliberate test panic")));
        queue.add_task(record(2));
        queue.quiesce().unwrap();
        assert_eq!(*log.lock().unwrap(), vec![0, 2]);
    }

    #[test]
    fn drop_runs_queued_tasks() {
        let (log, record) = recorder();
        {
            let queue = SingleThreadedWorkQueue::new();
            queue.add_task(record(1));
            queue.add_task(record(2));
        }
        assert_eq!(*log.lock().unwrap(), vec![1, 2]);
    }

    #[test]
    fn two_host_threads_can_drive_one_queue() {
        let queue = Arc::new(SingleThreadedWorkQueue::new());
        let n = if cfg!(miri) { 20 } else { 2000 };
        let count = Arc::new(AtomicUsize::new(0));
        let values: Vec<AsyncValueRef<usize>> = (0..2).map(|_| AsyncValueRef::unconstructed()).collect();
        for i in 0..n {
            let count = Arc::clone(&count);
            let last = values[i % 2].clone();
            let is_last = i >= n - 2;
            queue.add_task(Box::new(move || {
                count.fetch_add(1, Ordering::Relaxed);
                if is_last {
                    last.emplace(i).unwrap();
                }
            }));
        }
        let drivers: Vec<_> = values
            .iter()
            .map(|value| {
                let queue = Arc::clone(&queue);
                let value = value.clone().into_untyped();
                thread::spawn(move || queue.await_values(&[value]).unwrap())
            })
            .collect();
        for driver in drivers {
            driver.join().unwrap();
        }
        queue.quiesce().unwrap();
        assert_eq!(count.load(Ordering::Relaxed), n);
    }
}
