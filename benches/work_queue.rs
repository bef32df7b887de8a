//! Work-queue costs, each row beside an anchor measured in the same run (`support::row`):
//!
//! - `round_trip`: hand one task to the queue and block the host thread until its result is
//!   available. Anchor: the same through `std::sync::mpsc` to a dedicated thread and back.
//! - `throughput`: one host thread adds 10 000 small tasks, then waits until all have run.
//!   Anchor: a minimal pool of the same width, a `Mutex<VecDeque>` + `Condvar` shared by its
//!   threads, with the same completion signal.
//!
//! `cargo bench --bench work_queue [-- FILTER]`

mod support;

use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Instant;

use rtx::host::work_queue::create_work_queue;
use rtx::host::{AsyncValueRef, Task, WorkQueue};
use support::{per_call, row};

const ROUND_TRIPS: u64 = 2_000;
const TASKS: usize = 10_000;

/// Counts finished tasks; the one that finishes the batch wakes the host thread.
struct Batch {
    finished: AtomicUsize,
    done: Mutex<bool>,
    signal: Condvar,
}

impl Batch {
    fn new() -> Arc<Batch> {
        Arc::new(Batch { finished: AtomicUsize::new(0), done: Mutex::new(false), signal: Condvar::new() })
    }

    fn task_finished(&self) {
        if self.finished.fetch_add(1, Ordering::AcqRel) + 1 == TASKS {
            *self.done.lock().unwrap() = true;
            self.signal.notify_all();
        }
    }

    fn wait(&self) {
        let mut done = self.done.lock().unwrap();
        while !*done {
            done = self.signal.wait(done).unwrap();
        }
    }
}

/// The queued tasks and the "shutting down" flag, with the condvar idle threads wait on.
type PoolState = (Mutex<(VecDeque<Task>, bool)>, Condvar);

/// The anchor pool: the simplest correct design, one shared queue under one lock.
struct SimplePool {
    queue: Arc<PoolState>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl SimplePool {
    fn new(width: usize) -> SimplePool {
        let queue: Arc<PoolState> = Arc::default();
        let threads = (0..width)
            .map(|_| {
                let queue = Arc::clone(&queue);
                thread::spawn(move || loop {
                    let task = {
                        let mut state = queue.0.lock().unwrap();
                        loop {
                            if let Some(task) = state.0.pop_front() {
                                break task;
                            }
                            if state.1 {
                                return;
                            }
                            state = queue.1.wait(state).unwrap();
                        }
                    };
                    task();
                })
            })
            .collect();
        SimplePool { queue, threads }
    }

    fn add(&self, task: Task) {
        self.queue.0.lock().unwrap().0.push_back(task);
        self.queue.1.notify_one();
    }
}

impl Drop for SimplePool {
    fn drop(&mut self) {
        self.queue.0.lock().unwrap().1 = true;
        self.queue.1.notify_all();
        self.threads.drain(..).for_each(|t| t.join().unwrap());
    }
}

fn throughput_round(add: &dyn Fn(Task)) -> f64 {
    let batch = Batch::new();
    let start = Instant::now();
    for _ in 0..TASKS {
        let batch = Arc::clone(&batch);
        add(Box::new(move || batch.task_finished()));
    }
    batch.wait();
    start.elapsed().as_nanos() as f64 / TASKS as f64
}

fn main() {
    let wanted = support::filter();
    println!("{} alternating rounds; medians; ratio = rtx / anchor", support::ROUNDS);

    for spec in ["s", "mstd:1", "mstd:2"] {
        if !wanted(&format!("round_trip {spec}")) {
            continue;
        }
        let queue = create_work_queue(spec).unwrap();
        let (to_thread, inbox) = mpsc::channel::<(u64, mpsc::Sender<u64>)>();
        let echo = thread::spawn(move || inbox.into_iter().for_each(|(n, reply)| reply.send(n + 1).unwrap()));
        let mut n = 0u64;
        row(
            &format!("round_trip {spec}"),
            "mpsc to a thread and back",
            &mut || {
                per_call(ROUND_TRIPS, &mut || {
                    let (reply, answer) = mpsc::channel();
                    to_thread.send((black_box(n), reply)).unwrap();
                    n = answer.recv().unwrap();
                })
            },
            &mut || {
                per_call(ROUND_TRIPS, &mut || {
                    let value = AsyncValueRef::<u64>::unconstructed();
                    let producer = value.clone();
                    queue.add_task(Box::new(move || producer.emplace(1).unwrap()));
                    queue.await_values(&[value.as_untyped().clone()]).unwrap();
                })
            },
        );
        drop(to_thread);
        echo.join().unwrap();
    }

    for (spec, width) in [("mstd:1", 1), ("mstd:2", 2)] {
        if !wanted(&format!("throughput {spec}")) {
            continue;
        }
        let queue: Arc<dyn WorkQueue> = create_work_queue(spec).unwrap();
        let pool = SimplePool::new(width);
        row(
            &format!("throughput {spec} (per task)"),
            &format!("Mutex<VecDeque> pool of {width}"),
            &mut || throughput_round(&|task| pool.add(task)),
            &mut || throughput_round(&|task| queue.add_task(task)),
        );
    }
}
