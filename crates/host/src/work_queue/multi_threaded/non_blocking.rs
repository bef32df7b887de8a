//! The non-blocking pool: N workers, work stealing, and parking without lost wake-ups.
//!
//! Each worker owns a LIFO deque (`deque.rs`): a task's children run next on the same
//! core, while their inputs are still in cache (TFRT's deques make the same choice). Tasks from
//! outside the pool go to one shared `Injector`. A worker that runs dry takes a batch from the
//! injector, then steals half of some other worker's deque, starting at a random victim so that
//! idle workers do not all hit the same one, and visiting each deque once per round. Every
//! [`INJECTOR_CHECK_INTERVAL`] tasks a worker looks at the injector first, so outside work is not
//! starved by a deque that never runs dry.
//!
//! Parking protocol (Dekker-style, as TFRT's `EventCount`): a worker with nothing to do first
//! spins for [`SPIN`] (spin-loop hints, then a look at the queues, then a yield of its CPU), then
//! 1. announces itself in `sleepers` and issues a SeqCst fence,
//! 2. looks at every queue again, and leaves if it finds a task,
//! 3. otherwise sleeps on its own condvar until it is handed a wake-up.
//!
//! `add_task` pushes, issues a SeqCst fence, then reads `sleepers`; only if it is non-zero does it
//! take the lock, to wake the worker that went to sleep last or, when none sleeps yet, to post a
//! token that the next worker to take the lock spends on another look. The fences make the two
//! sides meet: either the worker's second look sees the task, or `add_task` sees the announcement
//! and wakes someone. So the fast path, with every worker busy, is a push, a fence and a load: no
//! lock, no syscall. A worker counts as a sleeper from the announcement until it leaves with a
//! task, so tokens posted while it looks again are never wasted on nobody; at worst one causes a
//! spurious look.
//!
//! A worker counts as spinning while it spins, and stops only once announced as a sleeper: a task
//! pushed meanwhile is one it will see, so `add_task` wakes nobody while any worker spins, and the
//! last spinner to find a task wakes a sleeper for whatever else came. And the last to sleep
//! wakes first (one condvar for all would wake them in the order they slept): it is the worker
//! that ran the latest work, whose cache still holds what the next task is likely to read.
//! Together they keep a chain of kernels, call after call, on one worker rather than handing
//! each call to the other, woken for nothing (an LSTM model: 0.86-0.93x its time on two workers,
//! convolutional models unchanged).

use std::rc::Rc;
use std::sync::atomic::{fence, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use std::time::{Duration, Instant};

use super::deque::{Injector, Stealer, Worker};
use super::{enter_role, Shared, Task};

/// How long a worker that ran dry keeps looking for work before it parks (and a host thread
/// awaiting results keeps looking at them before it sleeps). A kernel graph hands its workers a
/// kernel's tasks every few dozen microseconds; a worker parked between two kernels misses the
/// start of the next by a wake-up, tens of microseconds on a virtual machine.
pub(super) const SPIN: Duration = Duration::from_micros(50);

/// Spin-loop hints between two looks at the queues while spinning: a look takes the other
/// workers' locks, which their owners need.
const SPIN_HINTS: usize = 32;

pub(super) struct Pool {
    injector: Injector<Task>,
    stealers: Box<[Stealer<Task>]>,
    /// Workers between the announcement and leaving the parking protocol (tests read it to see
    /// that idle workers park).
    pub(super) sleepers: AtomicUsize,
    /// Workers looking for work between tasks before they park: each will see a task pushed
    /// now, so `add_task` wakes nobody while one spins.
    spinning: AtomicUsize,
    parking: Mutex<Parking>,
    /// One per worker, which waits on its own.
    wakes: Box<[Condvar]>,
}

/// Who sleeps and who has been woken, under `Pool::parking`.
struct Parking {
    /// Workers waiting on their condvar, in the order they began to wait.
    waiting: Vec<usize>,
    /// Per worker: handed a wake-up (and taken off `waiting`) since it began to wait.
    woken: Box<[bool]>,
    /// Wake-ups posted while no worker waited, at most one per worker: each buys a worker
    /// about to wait another look at the queues instead.
    tokens: usize,
}

impl Pool {
    /// The pool and the deques its workers will own, one each.
    pub(super) fn new(workers: usize) -> (Pool, Vec<Worker<Task>>) {
        let deques: Vec<Worker<Task>> = (0..workers).map(|_| Worker::new_lifo()).collect();
        let pool = Pool {
            injector: Injector::new(),
            stealers: deques.iter().map(Worker::stealer).collect(),
            sleepers: AtomicUsize::new(0),
            spinning: AtomicUsize::new(0),
            parking: Mutex::new(Parking {
                waiting: Vec::with_capacity(workers),
                woken: vec![false; workers].into(),
                tokens: 0,
            }),
            wakes: (0..workers).map(|_| Condvar::new()).collect(),
        };
        (pool, deques)
    }

    pub(super) fn inject(&self, task: Task) {
        self.injector.push(task);
    }

    /// The producer's half of the parking protocol; call after making a task visible.
    pub(super) fn wake_one_if_sleeping(&self) {
        fence(Ordering::SeqCst);
        if self.spinning.load(Ordering::Relaxed) > 0 || self.sleepers.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut parking = self.lock_parking();
        match parking.waiting.pop() {
            Some(worker) => {
                parking.woken[worker] = true;
                self.wakes[worker].notify_one();
            }
            None => parking.tokens = (parking.tokens + 1).min(self.stealers.len()),
        }
    }

    /// Wakes every parked worker to re-check its exit condition (shutdown).
    pub(super) fn wake_all(&self) {
        let _parking = self.lock_parking();
        for wake in self.wakes.iter() {
            wake.notify_one();
        }
    }

    /// Workers waiting on their condvars (tests wait for all of them to have gone that far).
    #[cfg(test)]
    pub(super) fn waiting(&self) -> usize {
        self.lock_parking().waiting.len()
    }

    fn lock_parking(&self) -> MutexGuard<'_, Parking> {
        self.parking.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn steal_injected(&self, local: &Worker<Task>) -> Option<Task> {
        self.injector.steal_batch_and_pop(local)
    }

    /// The worker's own deque first, then the injector, then the other workers' deques. `None`
    /// means every queue was seen empty.
    fn find_task(&self, me: usize, local: &Worker<Task>, rng: &mut XorShift) -> Option<Task> {
        if let Some(task) = local.pop().or_else(|| self.steal_injected(local)) {
            return Some(task);
        }
        let count = self.stealers.len();
        let start = rng.below(count);
        (0..count)
            .map(|offset| (start + offset) % count)
            .filter(|&victim| victim != me)
            .find_map(|victim| self.stealers[victim].steal_batch_and_pop(local))
    }

    /// The worker's half of the parking protocol. Returns a task, or `None` when the queue is
    /// finished and the worker should exit. The worker comes from spinning.
    fn park(&self, shared: &Shared, me: usize, local: &Worker<Task>, rng: &mut XorShift) -> Option<Task> {
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        self.spinning.fetch_sub(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let found = loop {
            if let Some(task) = self.find_task(me, local, rng) {
                break Some(task);
            }
            let mut parking = self.lock_parking();
            if parking.tokens > 0 {
                parking.tokens -= 1;
                continue;
            }
            // `finished` is checked under the lock that `wake_all` takes, so its wake-up cannot
            // slip in between the check and the wait.
            parking.waiting.push(me);
            while !parking.woken[me] && !shared.finished() {
                parking = self.wakes[me].wait(parking).unwrap_or_else(PoisonError::into_inner);
            }
            if !std::mem::take(&mut parking.woken[me]) {
                parking.waiting.retain(|&worker| worker != me);
                break None;
            }
        };
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        found
    }
}

/// How often (in tasks run) a worker looks at the injector before its own deque. The LIFO deque
/// alone would let a task that keeps re-adding itself starve everything injected from outside
/// on a one-worker pool; the odd interval keeps workers from checking in lockstep.
const INJECTOR_CHECK_INTERVAL: u32 = 61;

/// A non-blocking worker's life: run what it finds, spin a little, park, until the queue is
/// dropped and nothing is pending.
pub(super) fn worker_main(shared: Arc<Shared>, me: usize, local: Worker<Task>) {
    let local = Rc::new(local);
    let _role = enter_role(&shared, Some(Rc::clone(&local)));
    crate::async_value::cache_on_this_thread();
    let pool = &shared.non_blocking;
    let mut rng = XorShift::seeded(me);
    let mut ticks: u32 = 0;
    'work: loop {
        ticks = ticks.wrapping_add(1);
        let injected = if ticks.is_multiple_of(INJECTOR_CHECK_INTERVAL) { pool.steal_injected(&local) } else { None };
        if let Some(task) = injected.or_else(|| pool.find_task(me, &local, &mut rng)) {
            shared.run(task);
            continue;
        }
        let started = Instant::now();
        pool.spinning.fetch_add(1, Ordering::SeqCst);
        while started.elapsed() < SPIN {
            for _ in 0..SPIN_HINTS {
                std::hint::spin_loop();
            }
            if let Some(task) = pool.find_task(me, &local, &mut rng) {
                // Tasks pushed while this worker spun woke nobody: the last spinner to find
                // one wakes a sleeper for the others (which finds nothing when there are none).
                if pool.spinning.fetch_sub(1, Ordering::SeqCst) == 1 {
                    pool.wake_one_if_sleeping();
                }
                shared.run(task);
                continue 'work;
            }
            // A spinning worker gives its CPU to any thread that is ready to run: on a machine
            // with no spare core, the host thread woken for a call's results otherwise waits for
            // the end of the worker's time slice (an LSTM model's call lost a fifth of its time).
            std::thread::yield_now();
        }
        match pool.park(&shared, me, &local, &mut rng) {
            Some(task) => shared.run(task),
            None => break,
        }
    }
}

/// Picks steal victims. Quality hardly matters, speed and independence between workers do.
struct XorShift(u64);

impl XorShift {
    fn seeded(worker: usize) -> XorShift {
        // Odd multiplier spreads consecutive worker indices; `| 1` keeps the state non-zero.
        XorShift((worker as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn below(&mut self, bound: usize) -> usize {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        (x % bound as u64) as usize
    }
}
