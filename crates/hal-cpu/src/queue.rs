//! The thread a `local-task` device runs pipelined queue work on. A host thread that submits one
//! command buffer after another without waiting in between (a recurrent model records a command
//! buffer per time step) would otherwise record, run, record, run; with the runs here, it records
//! the next while this thread runs the one before, and the steps after the first, which wait on
//! it, follow here as its continuations.
//!
//! The thread starts with the first work handed to it and ends with the device: the device's drop
//! lets it finish what was queued (the fences it signals may still be waited on) and joins it.

use std::collections::VecDeque;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

type Task = Box<dyn FnOnce() + Send>;

/// A device's queue thread, started when first used.
#[derive(Debug, Default)]
pub struct QueueThread {
    started: Mutex<Option<Started>>,
}

#[derive(Debug)]
struct Started {
    shared: Arc<Shared>,
    handle: JoinHandle<()>,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    queued: Condvar,
}

/// How long the thread looks for new work before it sleeps: a host recording time steps hands it
/// the next within microseconds, which a wake-up from sleep would cost again.
const LOOK: Duration = Duration::from_micros(50);

#[derive(Default)]
struct Queue {
    tasks: VecDeque<Task>,
    stopping: bool,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

impl QueueThread {
    /// Queues `task` to run on the thread after those queued before it, starting the thread if
    /// needed. Gives the task back if the thread cannot be started.
    pub fn run(&self, task: Task) -> Result<(), Task> {
        let mut started = self.started.lock().unwrap_or_else(PoisonError::into_inner);
        if started.is_none() {
            let shared = Arc::new(Shared::default());
            let serving = shared.clone();
            let Ok(handle) = std::thread::Builder::new().name("rtx-local-queue".into()).spawn(move || serve(&serving))
            else {
                return Err(task);
            };
            *started = Some(Started { shared, handle });
        }
        let shared = &started.as_ref().expect("started above").shared;
        shared.queue.lock().unwrap_or_else(PoisonError::into_inner).tasks.push_back(task);
        shared.queued.notify_one();
        Ok(())
    }

    /// The thread's id, once started.
    #[cfg(test)]
    pub fn thread_id(&self) -> Option<std::thread::ThreadId> {
        let started = self.started.lock().unwrap_or_else(PoisonError::into_inner);
        started.as_ref().map(|started| started.handle.thread().id())
    }
}

/// Runs tasks in order until the device stops it and nothing is left, looking for [`LOOK`]
/// before each sleep.
fn serve(shared: &Shared) {
    let mut queue = shared.queue.lock().unwrap_or_else(PoisonError::into_inner);
    let mut looking_until = None;
    loop {
        if let Some(task) = queue.tasks.pop_front() {
            drop(queue);
            // The device's tasks fail their fence on a panic of their work; what runs from a
            // fence's continuations here must not end the thread either.
            let _ = panic::catch_unwind(AssertUnwindSafe(task));
            queue = shared.queue.lock().unwrap_or_else(PoisonError::into_inner);
            looking_until = None;
        } else if queue.stopping {
            return;
        } else if Instant::now() < *looking_until.get_or_insert_with(|| Instant::now() + LOOK) {
            drop(queue);
            std::thread::yield_now();
            queue = shared.queue.lock().unwrap_or_else(PoisonError::into_inner);
        } else {
            queue = shared.queued.wait(queue).unwrap_or_else(PoisonError::into_inner);
            looking_until = None;
        }
    }
}

impl Drop for QueueThread {
    /// Lets the thread finish the queued tasks, then joins it; a drop on the thread itself (a
    /// task held the device's last reference) leaves it to end on its own once its queue is done.
    fn drop(&mut self) {
        let started = self.started.get_mut().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(Started { shared, handle }) = started {
            shared.queue.lock().unwrap_or_else(PoisonError::into_inner).stopping = true;
            shared.queued.notify_one();
            if handle.thread().id() != std::thread::current().id() {
                // Tasks' panics are caught: the thread ends normally.
                let _ = handle.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn tasks_run_in_order_on_one_other_thread_and_the_drop_waits_for_them() {
        let queue = QueueThread::default();
        assert_eq!(queue.thread_id(), None, "started when first used");
        let (sender, received) = mpsc::channel();
        for index in 0..100 {
            let sender = sender.clone();
            let task: Task = Box::new(move || {
                std::thread::sleep(std::time::Duration::from_micros(if index == 0 { 2000 } else { 0 }));
                sender.send((index, std::thread::current().id())).unwrap();
            });
            queue.run(task).map_err(|_| "started").unwrap();
        }
        let id = queue.thread_id().unwrap();
        assert_ne!(id, std::thread::current().id());
        drop(queue);
        drop(sender);
        let ran: Vec<_> = received.iter().collect();
        assert_eq!(ran.iter().map(|&(index, _)| index).collect::<Vec<_>>(), (0..100).collect::<Vec<_>>());
        assert!(ran.iter().all(|&(_, thread)| thread == id));
    }
}
