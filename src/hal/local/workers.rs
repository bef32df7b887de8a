//! The worker threads of `local-task`: a small fork-join pool of our own, so that the threads'
//! whole lifetime is ours. They start with the pool and are joined when it goes away, and nothing
//! of them (no per-thread registry or epoch record, as rayon's crossbeam-epoch leaves) outlives
//! the join: a host that releases its devices leaves no thread and no allocation behind.
//!
//! A pool is shared: one `Arc<Workers>` may serve many devices, and several host threads may
//! dispatch onto it at once. Each dispatch is a job in a queue; its workgroups are claimed a chunk
//! at a time through an atomic index by the workers and by the submitting thread itself, which helps
//! with its own job and then waits until every claimed workgroup has finished.
//!
//! A job runs on at most as many threads as the pool has workers, the submitter counted: a pool is
//! sized one worker per core, and a third thread on two cores only takes turns with the other two,
//! so a chunk whose thread is descheduled holds up the end of the dispatch for a time slice.

use std::any::Any;
use std::collections::VecDeque;
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use crossbeam_utils::CachePadded;

use super::fpu;
use crate::host::work_queue::panic_message;
use crate::host::{Diagnostic, StatusCode};

/// One workgroup: `(index, processor, local memory)`. Processor ids of one job are distinct
/// among the threads running it at the same time and below [`Workers::concurrency`].
pub type Workgroup<'a> = dyn Fn(u64, u32, &mut [u8]) -> Result<(), Diagnostic> + Sync + 'a;

/// A pool of worker threads for spreading workgroups.
pub struct Workers {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

/// What the workers and the submitting threads share.
struct Shared {
    state: Mutex<State>,
    /// Signalled when a job is queued or the pool stops.
    wake: Condvar,
    /// Jobs queued so far: a worker that has just run out of work watches it for a while before
    /// it sleeps (see [`SPIN`]).
    queued: AtomicU64,
    /// Workers watching `queued`: a submitter does not wake a sleeping worker for a seat one of
    /// them will take.
    spinning: AtomicUsize,
    /// The job queued last (`State::latest`, which holds it), published before `queued` moves:
    /// the workers watching `queued` take their seats in it without the lock. On many cores they
    /// all see a job at once, and taking turns on the lock (some of them asleep in the kernel by
    /// then) delayed the last helper of a dispatch by tens of microseconds.
    latest: AtomicPtr<Job>,
    /// Workers between reading `latest` and holding a reference of their own to its job: a job
    /// no longer the latest is dropped only once none is (see [`Shared::publish`]).
    readers: AtomicUsize,
}

/// How long a worker that has run out of work looks for the next job before it sleeps. A model
/// runs its dispatches back to back, a few microseconds of interpreter work apart: a worker still
/// awake takes the next one at once, where a sleeping one costs its submitter a wake-up (a
/// system call, and tens of microseconds before the worker runs on a virtual machine) every
/// dispatch. The worker yields as it looks, so a thread with work on its core runs first.
const SPIN: std::time::Duration = std::time::Duration::from_micros(100);

/// How long a submitter with no workgroups left to claim waits awake for the other threads' last
/// ones before it sleeps. That is at most one workgroup's time as a rule (claims shrink towards
/// the end of a job), and a sleeping submitter costs every dispatch a wake-up (tens of
/// microseconds on a virtual machine) before the program goes on.
const WAIT_SPIN: std::time::Duration = std::time::Duration::from_millis(1);

#[derive(Default)]
struct State {
    /// Jobs with workgroups left to claim (exhausted ones are dropped by the next worker to look).
    jobs: VecDeque<Arc<Job>>,
    /// Workers waiting on `wake`: a submitter wakes only as many as its job can use.
    sleeping: usize,
    /// The job `Shared::latest` points to, and those it pointed to that a worker may still be
    /// reading.
    latest: Option<Arc<Job>>,
    retired: Vec<Arc<Job>>,
    stopping: bool,
}

/// The most workers a pool starts, as IREE's task executor (`IREE_TASK_EXECUTOR_MAX_WORKER_COUNT`).
pub const MAX_THREADS: usize = 64;

impl Workers {
    /// `count` workers (at least one, at most [`MAX_THREADS`]), or `None` when threads cannot be
    /// started (the device then runs workgroups inline).
    pub fn new(count: usize) -> Option<Workers> {
        let count = count.clamp(1, MAX_THREADS);
        let shared = Arc::new(Shared {
            state: Mutex::default(),
            wake: Condvar::new(),
            queued: AtomicU64::new(0),
            spinning: AtomicUsize::new(0),
            latest: AtomicPtr::new(std::ptr::null_mut()),
            readers: AtomicUsize::new(0),
        });
        let mut workers = Workers { shared, threads: Vec::with_capacity(count) };
        for index in 0..count {
            let shared = workers.shared.clone();
            let processor = index as u32;
            // On failure `workers` drops on return, joining the threads already started.
            let spawned = std::thread::Builder::new()
                .name(format!("rtx-local-task-{index}"))
                .spawn(move || work(&shared, processor))
                .ok()?;
            workers.threads.push(spawned);
        }
        Some(workers)
    }

    /// The number of worker threads.
    pub fn threads(&self) -> usize {
        self.threads.len()
    }

    /// The bound of the processor ids a job's workgroups see: the workers' and the submitter's.
    pub fn concurrency(&self) -> usize {
        self.threads.len() + 1
    }

    /// Runs `workgroup` for every index in `0..count`, spread over the workers and this thread,
    /// each thread with its own `local_memory` bytes. Returns once every workgroup has finished,
    /// or the first error: a workgroup's error (or panic, as INTERNAL) stops the job, and
    /// workgroups not yet started are skipped.
    pub fn run(&self, count: u64, local_memory: usize, workgroup: &Workgroup<'_>) -> Result<(), Diagnostic> {
        // SAFETY: only the lifetime is erased. `workgroup` is called for claimed indices below
        // `count` only, and this function returns after `wait`, i.e. after every such call has
        // returned; a worker that still holds the job afterwards claims nothing below `count`.
        let erased = unsafe { std::mem::transmute::<*const Workgroup<'_>, *const Workgroup<'static>>(workgroup) };
        let job = Arc::new(Job {
            workgroup: erased,
            count,
            chunk: (count / (8 * self.concurrency() as u64)).max(1),
            threads: self.threads.len() as u64,
            seats: AtomicIsize::new(self.threads.len() as isize - 1),
            local_memory,
            next: CachePadded::new(AtomicU64::new(0)),
            finished: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            error: Mutex::new(None),
            done: Mutex::new(Done::default()),
            done_signal: Condvar::new(),
        });
        if count > 1 {
            // The submitter works too, so one worker fewer keeps as many threads busy as the pool
            // has (one per core, usually) instead of overcommitting the cores.
            self.shared.submit(&job, self.threads.len() - 1);
        }
        let mut memory = vec![0u8; local_memory];
        job.claim_and_run(self.threads.len() as u32, &mut memory);
        job.wait();
        let error = job.error.lock().unwrap_or_else(PoisonError::into_inner).take();
        error.map_or(Ok(()), Err)
    }
}

impl fmt::Debug for Workers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workers").field("threads", &self.threads.len()).finish()
    }
}

impl Drop for Workers {
    /// Tells the workers to stop and joins them. This never runs on a worker: workers only run
    /// workgroups of a [`Workers::run`] call, whose caller holds the pool.
    fn drop(&mut self) {
        self.shared.lock().stopping = true;
        self.shared.wake.notify_all();
        for handle in self.threads.drain(..) {
            // A worker catches its workgroups' panics, so it cannot end with one.
            let _ = handle.join();
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `job` and wakes sleeping workers for its workgroups beyond the one the submitter
    /// starts on, at most `most`.
    fn submit(&self, job: &Arc<Job>, most: usize) {
        let mut state = self.lock();
        state.jobs.push_back(job.clone());
        self.publish(&mut state, job);
        // Release: a worker that sees the count move finds the job in `latest`.
        self.queued.fetch_add(1, Ordering::Release);
        let wanted = usize::try_from(job.count - 1).unwrap_or(usize::MAX).min(most);
        let helpers = wanted.saturating_sub(self.spinning.load(Ordering::Relaxed)).min(state.sleeping);
        drop(state);
        for _ in 0..helpers {
            self.wake.notify_one();
        }
    }

    /// Makes `job` the latest. The job it replaces is kept until no worker can be reading it:
    /// a worker counts itself in `readers` before it reads `latest` and out once it holds a
    /// reference, so when the count is seen at zero (all sequentially consistent) every worker
    /// that read a pointer stored before has its reference, and any later one reads `job` or a
    /// newer one. A count seen above zero leaves the replaced jobs to the next submission.
    fn publish(&self, state: &mut State, job: &Arc<Job>) {
        self.latest.store(Arc::as_ptr(job).cast_mut(), Ordering::SeqCst);
        state.retired.extend(state.latest.replace(job.clone()));
        if self.readers.load(Ordering::SeqCst) == 0 {
            state.retired.clear();
        }
    }

    /// The latest job, with a seat taken in it, if it has workgroups left and a seat free.
    fn take_latest(&self) -> Option<Arc<Job>> {
        self.readers.fetch_add(1, Ordering::SeqCst);
        let latest = self.latest.load(Ordering::SeqCst);
        let job = (!latest.is_null()).then(|| {
            // SAFETY: `latest` points to a job that `State::latest` or `State::retired` holds,
            // and `publish` drops none of them while this worker is counted in `readers`.
            unsafe {
                Arc::increment_strong_count(latest);
                Arc::from_raw(latest)
            }
        });
        self.readers.fetch_sub(1, Ordering::SeqCst);
        job.filter(|job| !job.exhausted() && job.take_seat())
    }

    /// The next job with workgroups left and a seat free, taking the seat, waiting for one
    /// (awake for [`SPIN`], then asleep); `None` when the pool stops. `seen` is the count of
    /// jobs queued when this worker last looked (under the lock or in `latest`): a worker back
    /// from a job watches the count without the lock while nothing new is queued.
    fn next_job(&self, seen: &mut u64) -> Option<Arc<Job>> {
        let until = std::time::Instant::now() + SPIN;
        if self.queued.load(Ordering::Acquire) == *seen {
            if let Some(job) = self.spin(seen, until) {
                return Some(job);
            }
        }
        let mut state = self.lock();
        // Past the deadline (the watch above ran out), `spin` returns at once.
        let mut spin_until = Some(until);
        loop {
            if state.stopping {
                return None;
            }
            while state.jobs.front().is_some_and(|job| job.exhausted()) {
                state.jobs.pop_front();
            }
            *seen = self.queued.load(Ordering::Acquire);
            if let Some(job) = state.jobs.iter().find(|job| !job.exhausted() && job.take_seat()) {
                return Some(job.clone());
            }
            if let Some(until) = spin_until.take() {
                drop(state);
                if let Some(job) = self.spin(seen, until) {
                    return Some(job);
                }
                // A job queued meanwhile (or the pool stopping, checked first) is found above;
                // past the deadline the worker sleeps.
                state = self.lock();
                if self.queued.load(Ordering::Acquire) != *seen {
                    spin_until = Some(until);
                }
                continue;
            }
            state.sleeping += 1;
            state = self.wake.wait(state).unwrap_or_else(PoisonError::into_inner);
            state.sleeping -= 1;
            spin_until = Some(std::time::Instant::now() + SPIN);
        }
    }

    /// Watches the count of queued jobs until it moves past `seen` or `until` passes, yielding so
    /// that a thread with work on this core runs first. Returns the latest job if it has a seat
    /// free; `None` sends the worker to the lock, which finds any other job (and sleeps).
    fn spin(&self, seen: &mut u64, until: std::time::Instant) -> Option<Arc<Job>> {
        self.spinning.fetch_add(1, Ordering::Relaxed);
        while self.queued.load(Ordering::Acquire) == *seen && std::time::Instant::now() < until {
            std::thread::yield_now();
        }
        // Before the lock: a submitter that takes it after this worker sleeps wakes it.
        self.spinning.fetch_sub(1, Ordering::Relaxed);
        let queued = self.queued.load(Ordering::Acquire);
        if queued == *seen {
            return None;
        }
        let job = self.take_latest()?;
        *seen = queued;
        Some(job)
    }
}

/// A worker thread's life: flush denormals (as IREE's workers do: they only run dispatches), then
/// help with queued jobs until the pool stops. Its local memory grows to the largest a job asks for
/// and is freed when the thread ends.
fn work(shared: &Shared, processor: u32) {
    fpu::flush_denormals_on_this_thread();
    let mut memory = Vec::new();
    let mut seen = 0;
    while let Some(job) = shared.next_job(&mut seen) {
        if memory.len() < job.local_memory {
            memory.resize(job.local_memory, 0);
        }
        job.claim_and_run(processor, &mut memory[..job.local_memory]);
    }
}

/// One `run` call: its workgroups, who has claimed and finished how many, and its first error.
struct Job {
    /// Borrowed from the `run` call, which outlives every call through it (see there).
    workgroup: *const Workgroup<'static>,
    count: u64,
    /// How many neighbouring workgroups one claim takes at most.
    chunk: u64,
    /// The pool's workers: claims shrink towards the end so that they all finish together.
    threads: u64,
    /// Workers that may still join (see the module documentation).
    seats: AtomicIsize,
    local_memory: usize,
    /// The next index to claim (`count` or past it once every workgroup is claimed). On a cache
    /// line of its own: every claim writes it.
    next: CachePadded<AtomicU64>,
    /// Workgroups run or skipped; the job is complete at `count`.
    finished: AtomicU64,
    /// Set by the first failure: later claims skip their workgroup.
    stopped: AtomicBool,
    error: Mutex<Option<Diagnostic>>,
    done: Mutex<Done>,
    done_signal: Condvar,
}

/// Whether a job is complete, and whether its submitter sleeps until it is (else completing it
/// signals nobody: a system call saved per dispatch).
#[derive(Default)]
struct Done {
    complete: bool,
    sleeping: bool,
}

// SAFETY: the pointee is `Sync` (so it may be called from any thread) and alive for every call
// made through it (see `Workers::run`); the other fields are thread-safe.
unsafe impl Send for Job {}
// SAFETY: as above.
unsafe impl Sync for Job {}

impl Job {
    fn exhausted(&self) -> bool {
        self.next.load(Ordering::Relaxed) >= self.count
    }

    fn take_seat(&self) -> bool {
        // One read-modify-write, never retried: every worker on many cores tries at once. Seats
        // only ever go down, so a count gone below zero stays a refusal.
        self.seats.fetch_sub(1, Ordering::Relaxed) > 0
    }

    /// Claims the next run of workgroups: `chunk` of them, fewer once what is left would not
    /// keep every thread busy for a few more claims (so no thread is left with a long run while
    /// the others wait at the end), `None` when none are left.
    fn claim(&self) -> Option<std::ops::Range<u64>> {
        if self.chunk == 1 {
            // One workgroup a claim (a job of few workgroups for its threads): one
            // read-modify-write, never retried, as every thread claims at once.
            let first = self.next.fetch_add(1, Ordering::Relaxed);
            return (first < self.count).then(|| first..first + 1);
        }
        let mut first = self.next.load(Ordering::Relaxed);
        loop {
            let left = self.count.checked_sub(first).filter(|&left| left > 0)?;
            let take = (left / (2 * self.threads)).clamp(1, self.chunk);
            match self.next.compare_exchange_weak(first, first + take, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return Some(first..first + take),
                Err(current) => first = current,
            }
        }
    }

    /// Claims and runs workgroups, a chunk of neighbours at a time, until none are left, then
    /// counts them finished all at once: the shared counters move once per chunk and once per
    /// thread instead of twice per workgroup (two threads passing their cache line back and
    /// forth), and a thread's workgroups touch neighbouring data. On a 512x512 matmul over two
    /// threads this took the pool from 1.04x to 1.01x the time of the rayon pool it replaced.
    fn claim_and_run(&self, processor: u32, memory: &mut [u8]) {
        let mut claimed = 0;
        while let Some(run) = self.claim() {
            claimed += run.end - run.start;
            for index in run {
                if self.stopped.load(Ordering::Relaxed) {
                    continue;
                }
                // SAFETY: `index` is below `count` and not yet counted as finished, so the `run`
                // call that owns the workgroup is still waiting (see `Workers::run`).
                let workgroup = unsafe { &*self.workgroup };
                let outcome = panic::catch_unwind(AssertUnwindSafe(|| workgroup(index, processor, memory)))
                    .unwrap_or_else(|payload| Err(panicked(index, payload.as_ref())));
                if let Err(error) = outcome {
                    self.fail(error);
                }
            }
        }
        // Release: the workgroups' writes happen before the submitter sees them finished.
        if claimed > 0 && self.finished.fetch_add(claimed, Ordering::AcqRel) + claimed == self.count {
            let mut done = self.done.lock().unwrap_or_else(PoisonError::into_inner);
            done.complete = true;
            if done.sleeping {
                self.done_signal.notify_all();
            }
        }
    }

    fn fail(&self, error: Diagnostic) {
        self.stopped.store(true, Ordering::Relaxed);
        self.error.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(error);
    }

    /// Waits until every workgroup has run or been skipped: awake for [`WAIT_SPIN`], then asleep.
    fn wait(&self) {
        let until = std::time::Instant::now() + WAIT_SPIN;
        while self.finished.load(Ordering::Acquire) < self.count {
            if std::time::Instant::now() >= until {
                let mut done = self.done.lock().unwrap_or_else(PoisonError::into_inner);
                while !done.complete {
                    done.sleeping = true;
                    done = self.done_signal.wait(done).unwrap_or_else(PoisonError::into_inner);
                }
                return;
            }
            std::thread::yield_now();
        }
    }
}

/// A panic in a workgroup as an error, so that neither the worker nor the submitter unwinds.
fn panicked(index: u64, payload: &(dyn Any + Send)) -> Diagnostic {
    Diagnostic::new(StatusCode::Internal, format!("workgroup {index} panicked: {}", panic_message(payload)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Barrier, Weak};

    /// Runs a job of as many workgroups as the pool has threads, which all block until every one
    /// of them has started: so that many threads run it at once (the submitter and the workers it
    /// wakes, one fewer than the pool has, or any worker awake anyway).
    fn all_at_once(workers: &Workers, each: impl Fn(u32) + Sync) {
        let count = workers.threads();
        let barrier = Barrier::new(count);
        workers
            .run(count as u64, 0, &|_, processor, _| {
                each(processor);
                barrier.wait();
                Ok(())
            })
            .unwrap();
    }

    /// The workers alive: each holds the shared state until its thread function returns.
    fn live_workers(workers: &Workers) -> usize {
        Arc::strong_count(&workers.shared) - 1
    }

    #[test]
    fn every_workgroup_runs_once_with_jobs_from_many_threads() {
        let workers = Workers::new(3).unwrap();
        std::thread::scope(|scope| {
            for submitter in 0..6u64 {
                let workers = &workers;
                scope.spawn(move || {
                    for round in 0..40u64 {
                        let count = 1 + (submitter * 97 + round * 31) % 300;
                        let runs: Vec<AtomicUsize> = (0..count).map(|_| AtomicUsize::new(0)).collect();
                        workers
                            .run(count, 16, &|index, _, _| {
                                runs[index as usize].fetch_add(1, Ordering::Relaxed);
                                Ok(())
                            })
                            .unwrap();
                        assert!(runs.iter().all(|r| r.load(Ordering::Relaxed) == 1), "job {submitter}/{round}");
                    }
                });
            }
        });
    }

    #[test]
    fn processor_ids_are_distinct_and_below_the_concurrency() {
        let workers = Workers::new(4).unwrap();
        assert_eq!((workers.threads(), workers.concurrency()), (4, 5));
        let seen = Mutex::new(Vec::new());
        all_at_once(&workers, |processor| seen.lock().unwrap().push(processor));
        let mut seen = seen.into_inner().unwrap();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 4, "four threads at once, each with its own id: {seen:?}");
        assert!(seen.iter().all(|&id| id < 5), "{seen:?}");
        assert!(seen.contains(&4), "the submitter's id is the one after the workers': {seen:?}");
    }

    #[test]
    fn a_job_runs_on_no_more_threads_than_the_pool_has_workers() {
        let workers = Workers::new(2).unwrap();
        let (running, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        // Back-to-back jobs: a worker that has just finished one is awake when the next is queued.
        for _ in 0..300 {
            workers
                .run(8, 0, &|_, _, _| {
                    most.fetch_max(running.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_micros(20));
                    running.fetch_sub(1, Ordering::SeqCst);
                    Ok(())
                })
                .unwrap();
        }
        assert_eq!(most.into_inner(), 2);
    }

    /// Jobs queued just before, as and just after a worker that has run out of work stops
    /// looking for one and goes to sleep: each still gets its helper (two workgroups that wait
    /// for each other fail rather than hang when one thread runs both).
    #[test]
    fn a_job_queued_as_a_worker_gives_up_looking_still_gets_a_helper() {
        let workers = Workers::new(2).unwrap();
        for round in 0..300u64 {
            std::thread::sleep(SPIN * (round % 30) as u32 / 15);
            let arrived = AtomicUsize::new(0);
            workers
                .run(2, 0, &|index, _, _| {
                    arrived.fetch_add(1, Ordering::SeqCst);
                    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
                    while arrived.load(Ordering::SeqCst) < 2 {
                        if std::time::Instant::now() > deadline {
                            return Err(Diagnostic::new(
                                StatusCode::Internal,
                                format!("round {round}: no helper for {index}"),
                            ));
                        }
                        std::thread::yield_now();
                    }
                    Ok(())
                })
                .unwrap();
        }
    }

    #[test]
    fn each_thread_has_its_own_local_memory() {
        let workers = Workers::new(3).unwrap();
        let barrier = Barrier::new(workers.threads());
        let sizes = Mutex::new(Vec::new());
        workers
            .run(workers.threads() as u64, 4, &|index, _, memory| {
                sizes.lock().unwrap().push(memory.len());
                memory.copy_from_slice(&(index as u32).to_le_bytes());
                // Every thread has written its own memory before any reads it back.
                barrier.wait();
                assert_eq!(memory, (index as u32).to_le_bytes(), "workgroup {index}'s memory was overwritten");
                Ok(())
            })
            .unwrap();
        assert_eq!(sizes.into_inner().unwrap(), [4, 4, 4]);
    }

    #[test]
    fn a_failing_workgroup_stops_its_job_and_is_returned() {
        let workers = Workers::new(2).unwrap();
        let ran = AtomicUsize::new(0);
        let error = workers
            .run(10_000, 0, &|index, _, _| {
                ran.fetch_add(1, Ordering::Relaxed);
                if index == 5 {
                    return Err(Diagnostic::new(StatusCode::OutOfRange, "workgroup 5 read past its binding"));
                }
                std::thread::sleep(std::time::Duration::from_micros(20));
                Ok(())
            })
            .unwrap_err();
        assert_eq!((error.code, error.message.as_str()), (StatusCode::OutOfRange, "workgroup 5 read past its binding"));
        assert!(ran.load(Ordering::Relaxed) < 10_000, "the workgroups after the failure were skipped");
        assert_eq!(workers.run(4, 0, &|_, _, _| Ok(())).map_err(|e| e.message), Ok(()), "the pool goes on");
    }

    #[test]
    fn a_panicking_workgroup_is_an_error_and_every_thread_survives() {
        let workers = Workers::new(3).unwrap();
        for panicking in 0..workers.threads() as u64 {
            // Workgroups wait for each other, so the panicking one runs on a worker or the
            // submitter while others are running.
            let barrier = Barrier::new(workers.threads());
            let error = workers
                .run(workers.threads() as u64, 0, &|index, _, _| {
                    barrier.wait();
                    if index == panicking {
                        panic!("kernel bug in {index}");
                    }
                    Ok(())
                })
                .unwrap_err();
            assert_eq!(error.code, StatusCode::Internal);
            assert_eq!(error.message, format!("workgroup {panicking} panicked: kernel bug in {panicking}"));
        }
        assert_eq!(live_workers(&workers), 3);
        let ran = AtomicUsize::new(0);
        all_at_once(&workers, |_| {
            ran.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(ran.into_inner(), 3, "the pool still runs jobs");
    }

    #[test]
    fn dropping_the_pool_ends_every_worker_thread() {
        let workers = Workers::new(4).unwrap();
        all_at_once(&workers, |_| {});
        let shared: Weak<Shared> = Arc::downgrade(&workers.shared);
        assert_eq!(live_workers(&workers), 4);
        drop(workers);
        assert!(shared.upgrade().is_none(), "drop returned after every worker's thread function did");
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri does not model the floating-point control register")]
    fn workers_are_named_and_flush_denormals() {
        let workers = Workers::new(2).unwrap();
        let submitter = std::thread::current().id();
        let on_workers = Mutex::new(Vec::new());
        all_at_once(&workers, |_| {
            if std::thread::current().id() != submitter {
                let product = std::hint::black_box(1e-20f32) * std::hint::black_box(1e-20f32);
                on_workers.lock().unwrap().push((std::thread::current().name().map(str::to_owned), product));
            }
        });
        let on_workers = on_workers.into_inner().unwrap();
        assert!(!on_workers.is_empty(), "a worker ran a workgroup");
        for (name, product) in on_workers {
            assert!(name.as_deref().is_some_and(|n| n.starts_with("rtx-local-task-")), "{name:?}");
            assert_eq!(product, 0.0);
        }
    }
}
