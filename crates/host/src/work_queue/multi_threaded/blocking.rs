//! The blocking pool: threads for tasks that may block (file I/O, waiting on a device), so they
//! never hold up a non-blocking worker.
//!
//! Threads start on demand, up to the limit M, and exit after [`IDLE_EXIT`] without work, so an
//! idle process keeps none. One mutex guards a FIFO of tasks and the thread counts: blocking
//! tasks are long by nature, so a lock per task is noise next to them, and one lock keeps
//! "is there an idle thread for this task?" a plain comparison. TFRT uses per-thread bounded
//! queues instead; an unbounded FIFO means a queued task is never handed back or run inline.
//!
//! `idle > queue.len()` means some idle thread is not yet claimed by a queued task: the new task
//! can be handed to it. Otherwise a new thread starts while below M. Only at M do tasks wait in
//! the queue (if the caller allows it), and a thread exits only when the queue is empty, so every
//! queued task always has a thread that will take it.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use super::{enter_role, run_task, Shared, Task};

/// How long a blocking thread waits for work before it exits (TFRT's choice too).
const IDLE_EXIT: Duration = Duration::from_secs(1);

pub(super) struct Pool {
    max_threads: usize,
    state: Mutex<State>,
    work: Condvar,
}

struct State {
    queue: VecDeque<Task>,
    /// Threads alive (running, idle, or started and about to look at the queue).
    threads: usize,
    /// Threads waiting on `work`.
    idle: usize,
    /// Handles of the threads started, for the final join; pruned of exited threads on each start.
    handles: Vec<JoinHandle<()>>,
    shutdown: bool,
}

impl Pool {
    pub(super) fn new(max_threads: usize) -> Pool {
        Pool {
            max_threads,
            state: Mutex::new(State {
                queue: VecDeque::new(),
                threads: 0,
                idle: 0,
                handles: Vec::new(),
                shutdown: false,
            }),
            work: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands the task to an idle thread, else to a new one, else (if allowed) queues it.
    pub(super) fn add(shared: &Arc<Shared>, task: Task, allow_queuing: bool) -> Result<(), Task> {
        let pool = &shared.blocking;
        let mut state = pool.lock();
        // Counted under the lock that taking the task needs, so the count always comes first.
        let accept = |state: &mut State, task: Task| {
            shared.activity.pending.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            state.queue.push_back(task);
        };
        if state.idle > state.queue.len() {
            accept(&mut state, task);
            pool.work.notify_one();
            return Ok(());
        }
        if state.threads < pool.max_threads {
            state.handles.retain(|handle| !handle.is_finished());
            let thread_shared = Arc::clone(shared);
            match std::thread::Builder::new()
                .name("rtx-mstd-block".to_owned())
                .spawn(move || thread_main(thread_shared))
            {
                Ok(handle) => {
                    state.threads += 1;
                    state.handles.push(handle);
                    // The new thread blocks on our lock and then finds the task.
                    accept(&mut state, task);
                    return Ok(());
                }
                // No new thread: with queuing allowed, a live one will get to the task.
                Err(_) if allow_queuing && state.threads > 0 => {}
                Err(_) => return Err(task),
            }
        }
        if !allow_queuing {
            return Err(task);
        }
        accept(&mut state, task);
        Ok(())
    }

    /// Tells the threads to exit once the queue is empty and returns their handles.
    pub(super) fn shut_down(&self) -> Vec<JoinHandle<()>> {
        let mut state = self.lock();
        state.shutdown = true;
        self.work.notify_all();
        std::mem::take(&mut state.handles)
    }
}

fn thread_main(shared: Arc<Shared>) {
    let _role = enter_role(&shared, None);
    crate::async_value::cache_on_this_thread();
    let pool = &shared.blocking;
    let mut state = pool.lock();
    loop {
        if let Some(task) = state.queue.pop_front() {
            drop(state);
            run_task(task);
            state = pool.lock();
            // Uncounted only under the lock, which this thread then holds until it waits as
            // idle: whoever sees the queue quiesced finds this thread free for a task that must
            // start at once.
            shared.task_done();
            continue;
        }
        if state.shutdown {
            break;
        }
        state.idle += 1;
        let (guard, wait) = pool.work.wait_timeout(state, IDLE_EXIT).unwrap_or_else(PoisonError::into_inner);
        state = guard;
        state.idle -= 1;
        if wait.timed_out() && state.queue.is_empty() {
            break;
        }
    }
    state.threads -= 1;
}
