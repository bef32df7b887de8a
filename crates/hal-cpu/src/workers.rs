//! The worker threads of `local-task`: a small fork-join pool of our own, so that the threads'
//! whole lifetime is ours. They start with the pool and are joined when it goes away, and nothing
//! of them (no per-thread registry or epoch record, as rayon's crossbeam-epoch leaves) outlives
//! the join: a host that releases its devices leaves no thread and no allocation behind.
//!
//! A pool is shared: one `Arc<Workers>` may serve many devices, and several host threads may
//! dispatch onto it at once. Each submission is a job in a queue, run by the workers and by the
//! submitting thread itself, which helps with its own job and then waits until every claimed
//! workgroup has finished.
//!
//! A job is a sequence of phases (a command buffer's groups of dispatches between barriers), each
//! starting once the one before has finished. The thread that finishes the last workgroup of a
//! phase starts the next, and the threads stay in the job from one phase to the next: the
//! submitter does not hand out each phase as a job of its own, which every worker would have had
//! to notice, take a seat in and claim from, contending for the same few cache lines. On two
//! cores a helper started on a new job 0.7-5.6 µs after it was queued (ShuffleNet, MobileNetV2,
//! the encoder, ResNet-50), and on the next phase 0.2-0.3 µs after it moved; the submitter
//! also lays out all of a job's phases before it starts, instead of 1-3 µs between each two.
//!
//! A phase's workgroups are split into one contiguous block per thread (a lane), which the thread
//! claims a chunk at a time from the front; a thread whose lane is empty takes the back half of
//! the fullest other lane into its own. So each thread runs neighbouring workgroups, and the
//! submitter always starts at the front of the grid and the n-th helper at the n-th block: in a
//! model's chain of dispatches each thread tends to read what it wrote itself in the dispatch
//! before, from its own core's cache. Against one shared index claimed in turns (two cores, six
//! alternating rounds) this took ShuffleNet to 0.87 of its time and the encoder to 0.90,
//! SqueezeNet to 0.96; the larger models moved within the noise (0.95 to 1.03).
//!
//! A pool keeps its jobs and sets one up anew once nobody holds it any more, and lends an arena
//! for what a submitter lays out before its job: a model's hundreds of dispatches per call
//! allocate nothing, as on `local-sync`.
//!
//! A job runs on at most as many threads as the pool has workers, the submitter counted: a pool is
//! sized one worker per core, and a third thread on two cores only takes turns with the other two,
//! so a chunk whose thread is descheduled holds up the end of the dispatch for a time slice.

use std::any::Any;
use std::cell::Cell;
use std::collections::VecDeque;
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use bumpalo::Bump;
use crossbeam_utils::CachePadded;
use rtx_host::tracing;

use super::fpu;
use rtx_host::work_queue::panic_message;
use rtx_host::{Diagnostic, StatusCode};

/// One workgroup: `(index, processor, local memory)`. Processor ids of one job are distinct
/// among the threads running it at the same time and below [`Workers::concurrency`].
pub type Workgroup<'a> = dyn Fn(u64, u32, &mut [u8]) -> Result<(), Diagnostic> + Sync + 'a;

/// A pool of worker threads for spreading workgroups.
pub struct Workers {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    /// Lent by [`Workers::with_arena`]; empty while lent.
    arena: Mutex<Option<Bump>>,
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

/// How long a thread with no workgroups left to claim in a phase waits awake for the other
/// threads' last ones before it sleeps. That is at most one workgroup's time as a rule (claims
/// shrink towards the end of a phase), and a sleeping thread costs every phase a wake-up (tens of
/// microseconds on a virtual machine) before it takes part in the next, or before the program
/// goes on.
const WAIT_SPIN: std::time::Duration = std::time::Duration::from_millis(1);

/// How many times a thread waiting for the next phase looks at it before it starts yielding as
/// it looks (see [`WAIT_SPIN`]): a yield is a system call, and the thread saw the phase move half
/// a microsecond late on average (two cores; 0.2-0.3 µs with these looks first).
const PHASE_LOOKS: usize = 256;

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
    /// Jobs made so far, up to [`SPARE_JOBS`], each set up anew for a later `run` once nobody
    /// else holds it.
    spare: Vec<Arc<Job>>,
    stopping: bool,
}

/// How many jobs a pool keeps for reuse. A job is still held for a while after its `run`
/// returns (as the latest, by a worker about to look at it), so one submitter goes round two or
/// three; more are kept for submitters on several threads at once.
const SPARE_JOBS: usize = 8;

impl State {
    /// A job that nobody else holds, kept from before, else a new one (kept if there is room),
    /// `set_up` before anyone else can see it.
    fn reuse_or_make(&mut self, lanes: usize, set_up: impl FnOnce(&mut Job)) -> Arc<Job> {
        for kept in &mut self.spare {
            // Unique: every other holder has dropped it, with Acquire, so whatever they did to it
            // happened before this.
            if let Some(job) = Arc::get_mut(kept) {
                set_up(job);
                return kept.clone();
            }
        }
        let mut job = Job::new(lanes);
        set_up(&mut job);
        let job = Arc::new(job);
        if self.spare.len() < SPARE_JOBS {
            self.spare.push(job.clone());
        }
        job
    }
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
        let mut workers = Workers { shared, threads: Vec::with_capacity(count), arena: Mutex::default() };
        for index in 0..count {
            let shared = workers.shared.clone();
            let processor = index as u32;
            // On failure `workers` drops on return, joining the threads already started.
            // Within the 15 bytes Linux keeps of a thread's name: what debuggers and traces show.
            let spawned = std::thread::Builder::new()
                .name(format!("local-task-{index}"))
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

    /// Lends this pool's arena, emptied, for what a submitter lays out before its job (the parts
    /// of a group of commands). The arena keeps its memory from one job to the next, so that a
    /// dispatch allocates nothing; a submitter on another thread meanwhile gets one of its own.
    pub fn with_arena<R>(&self, lay_out: impl FnOnce(&Bump) -> R) -> R {
        let lent = self.arena.lock().unwrap_or_else(PoisonError::into_inner).take();
        let mut arena = lent.unwrap_or_default();
        arena.reset();
        let result = lay_out(&arena);
        *self.arena.lock().unwrap_or_else(PoisonError::into_inner) = Some(arena);
        result
    }

    /// Runs `workgroup` for every index in `0..count`, spread over the workers and this thread,
    /// each thread with its own `local_memory` bytes. Returns once every workgroup has finished,
    /// or the first error: a workgroup's error (or panic, as INTERNAL) stops the job, and
    /// workgroups not yet started are skipped.
    /// While tracing, each thread's share of the workgroups is a span named `name`.
    pub fn run(
        &self,
        count: u64,
        local_memory: usize,
        workgroup: &Workgroup<'_>,
        name: &str,
    ) -> Result<(), Diagnostic> {
        let name = tracing::is_on().then(|| Arc::from(name));
        self.run_job(&[Phase { end: count, alone: false }], local_memory, workgroup, name)
    }

    /// As [`Workers::run`] over `0..` the last phase's end, a phase at a time: each phase's
    /// workgroups start once every one before them has finished. The thread that finishes a phase
    /// starts the next, so the threads go from one phase to the next without the submitter
    /// handing each out as a job of its own. `phases` are in order of their ends.
    pub fn run_phases(
        &self,
        phases: &[Phase],
        local_memory: usize,
        workgroup: &Workgroup<'_>,
    ) -> Result<(), Diagnostic> {
        self.run_job(phases, local_memory, workgroup, None)
    }

    /// [`Workers::run_phases`], each thread's share a tracing span named `name` where given.
    fn run_job(
        &self,
        phases: &[Phase],
        local_memory: usize,
        workgroup: &Workgroup<'_>,
        name: Option<Arc<str>>,
    ) -> Result<(), Diagnostic> {
        let processor = self.threads.len() as u32;
        if !Phase::any_shared(phases) {
            // Not worth a job: no other thread would take part.
            let count = phases.last().map_or(0, |last| last.end);
            return with_local_memory(local_memory, |memory| {
                (0..count).try_for_each(|index| run_workgroup(workgroup, index, processor, memory))
            });
        }
        // SAFETY: only the lifetime is erased. `workgroup` is called for claimed indices of the
        // job only, and this function returns after the job's last phase has completed, i.e.
        // after every such call has returned; a worker that still holds the job afterwards claims
        // nothing, and the job is set up anew (under the pool's lock, with no other holder) before
        // reuse.
        let erased = unsafe { std::mem::transmute::<*const Workgroup<'_>, *const Workgroup<'static>>(workgroup) };
        let job = self.shared.submit(erased, phases, local_memory, self.threads.len(), name);
        with_local_memory(local_memory, |memory| job.work_traced(processor, 0, memory));
        let error = job.error.lock().unwrap_or_else(PoisonError::into_inner).take();
        error.map_or(Ok(()), Err)
    }
}

/// Part of a job (see [`Workers::run_phases`]): the workgroups from the end of the phase before
/// up to `end`. An `alone` one runs whole on the thread that finishes the phase before it (the
/// submitter, for the first): for work of a few microseconds, handing workgroups to other cores
/// costs more than it saves. So does a phase of one workgroup or none, which always runs so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Phase {
    pub end: u64,
    pub alone: bool,
}

impl Phase {
    /// Whether any of `phases` has workgroups for other threads: else [`Workers::run_phases`]
    /// runs them all on the submitting thread, without a job.
    pub fn any_shared(phases: &[Phase]) -> bool {
        let mut start = 0;
        phases.iter().any(|phase| {
            let shared = !phase.runs_alone(start);
            start = phase.end;
            shared
        })
    }

    /// Whether the phase, starting at workgroup `start`, runs on one thread: marked so, or of one
    /// workgroup or none.
    fn runs_alone(&self, start: u64) -> bool {
        self.alone || self.end.saturating_sub(start) <= 1
    }
}

impl fmt::Debug for Workers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workers").field("threads", &self.threads.len()).finish()
    }
}

impl Drop for Workers {
    /// Tells the workers to stop and joins them. This never runs on a worker: workers only run
    /// workgroups of a [`Workers::run_phases`] call, whose caller holds the pool.
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

    /// Queues a job of `phases` (one at least with workgroups to share) with a lane for each of
    /// the pool's `threads` in each phase, and wakes sleeping workers for the workgroups of its
    /// largest phase beyond the one the submitter starts on. The job is one kept from before that
    /// nobody holds any more, if there is one.
    fn submit(
        &self,
        workgroup: *const Workgroup<'static>,
        phases: &[Phase],
        local_memory: usize,
        threads: usize,
        name: Option<Arc<str>>,
    ) -> Arc<Job> {
        let mut state = self.lock();
        // Dropped here too, not only by workers that look under the lock: workers that find
        // their jobs through `latest` would leave them queued, and held.
        while state.jobs.front().is_some_and(|job| job.exhausted()) {
            state.jobs.pop_front();
        }
        let job = state.reuse_or_make(threads, |job| job.set_up(workgroup, phases, local_memory, name));
        state.jobs.push_back(job.clone());
        self.publish(&mut state, &job);
        // Release: a worker that sees the count move finds the job in `latest`.
        self.queued.fetch_add(1, Ordering::Release);
        // The submitter works too, so one worker fewer keeps as many threads busy as the pool has
        // (one per core, usually) instead of overcommitting the cores.
        let largest = job.phases.iter().filter(|phase| !phase.alone).map(|phase| phase.end - phase.start).max();
        let wanted = usize::try_from(largest.unwrap_or(1) - 1).unwrap_or(usize::MAX).min(threads - 1);
        let helpers = wanted.saturating_sub(self.spinning.load(Ordering::Relaxed)).min(state.sleeping);
        drop(state);
        for _ in 0..helpers {
            self.wake.notify_one();
        }
        job
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

    /// The latest job and the lane of the seat taken in it, if it has workgroups left and a seat
    /// free.
    fn take_latest(&self) -> Option<(Arc<Job>, usize)> {
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
        job.filter(|job| !job.exhausted()).and_then(|job| job.take_seat().map(|lane| (job, lane)))
    }

    /// The next job with workgroups left and a seat free, taking the seat (whose lane comes with
    /// it), waiting for one (awake for [`SPIN`], then asleep); `None` when the pool stops. `seen`
    /// is the count of jobs queued when this worker last looked (under the lock or in `latest`):
    /// a worker back from a job watches the count without the lock while nothing new is queued.
    fn next_job(&self, seen: &mut u64) -> Option<(Arc<Job>, usize)> {
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
            let seat = state.jobs.iter().filter(|job| !job.exhausted()).find_map(|job| Some((job, job.take_seat()?)));
            if let Some((job, lane)) = seat {
                return Some((job.clone(), lane));
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
    fn spin(&self, seen: &mut u64, until: std::time::Instant) -> Option<(Arc<Job>, usize)> {
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
        let seat = self.take_latest()?;
        *seen = queued;
        Some(seat)
    }
}

thread_local! {
    /// The workgroup local memory of this thread where it runs workgroups itself, not as one of
    /// the workers (which keep theirs): kept from one dispatch to the next, so that a dispatch
    /// allocates none, on `local-sync` as on `local-task`.
    static LOCAL_MEMORY: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Runs `run` with `length` bytes of this thread's workgroup local memory (see [`LOCAL_MEMORY`]).
/// The bytes hold whatever the last workgroup left, as a worker's do. A call within `run`, or
/// one while the thread exits, gets memory of its own.
pub fn with_local_memory<R>(length: usize, run: impl FnOnce(&mut [u8]) -> R) -> R {
    let mut memory = LOCAL_MEMORY.try_with(Cell::take).unwrap_or_default();
    if memory.len() < length {
        memory.resize(length, 0);
    }
    let result = run(&mut memory[..length]);
    // Fails only while the thread exits: the memory is then freed here.
    let _ = LOCAL_MEMORY.try_with(|kept| kept.set(memory));
    result
}

/// A worker thread's life: flush denormals (as IREE's workers do: they only run dispatches), then
/// help with queued jobs until the pool stops. Its local memory grows to the largest a job asks for
/// and is freed when the thread ends.
fn work(shared: &Shared, processor: u32) {
    fpu::flush_denormals_on_this_thread();
    let mut memory = Vec::new();
    let mut seen = 0;
    while let Some((job, lane)) = shared.next_job(&mut seen) {
        if memory.len() < job.local_memory {
            memory.resize(job.local_memory, 0);
        }
        job.work_traced(processor, lane, &mut memory[..job.local_memory]);
    }
}

/// One `run_phases` call: its workgroups, who has claimed and finished how many, and its first
/// error. Set up anew for each call it serves (see [`State::reuse_or_make`]).
struct Job {
    /// Borrowed from the `run_phases` call, which outlives every call through it (see there).
    workgroup: *const Workgroup<'static>,
    phases: Vec<PhasePlan>,
    /// The phases before this one have no workgroups for other threads (see [`Job::exhausted`]).
    shared_until: usize,
    /// The pool's workers, and so the lanes of a phase: one per thread that may run the job.
    threads: u64,
    /// Workers that may still join (see the module documentation).
    seats: AtomicIsize,
    local_memory: usize,
    /// While tracing, the name of each thread's share of the job (a span).
    name: Option<Arc<str>>,
    /// Per phase, per thread, the units `front..back` of its block not yet claimed, as
    /// [`pack`]ed: the submitter's first, then one per seat in the order they are taken. Each on
    /// a cache line of its own: its thread writes it at every claim. Each phase has lanes of its
    /// own, so that a thread still looking at a phase that has completed finds nothing there to
    /// claim, never the next phase's workgroups.
    lanes: Vec<CachePadded<AtomicU64>>,
    /// Phases completed: the one of this index is running (all of them, once it is their count).
    completed: AtomicUsize,
    /// Workgroups run or skipped, over all phases: a phase completes as this reaches its end.
    finished: AtomicU64,
    /// Set by the first failure: later claims skip their workgroup.
    stopped: AtomicBool,
    error: Mutex<Option<Diagnostic>>,
    /// Threads asleep until `completed` moves (else moving it signals nobody: a system call
    /// saved per phase).
    sleeping: AtomicUsize,
    moved: Mutex<()>,
    moved_signal: Condvar,
}

/// A phase as its job runs it: its workgroups `start..end`, in units of `unit` workgroups (1
/// unless a lane's bounds would need more than 32 bits), of which a thread claims at most `chunk`
/// from its own lane at a time.
#[derive(Clone, Copy, Debug)]
struct PhasePlan {
    start: u64,
    end: u64,
    alone: bool,
    unit: u64,
    chunk: u64,
}

// SAFETY: the pointee is `Sync` (so it may be called from any thread) and alive for every call
// made through it (see `Workers::run_phases`); the other fields are thread-safe.
unsafe impl Send for Job {}
// SAFETY: as above.
unsafe impl Sync for Job {}

/// A lane's unclaimed units `front..back` in one word, so that its owner's claims from the front
/// and other threads' from the back are each one compare-and-swap.
fn pack(front: u64, back: u64) -> u64 {
    back << 32 | front
}

fn unpack(lane: u64) -> (u64, u64) {
    (lane & 0xffff_ffff, lane >> 32)
}

/// How many units a [`pack`]ed lane has left.
fn left(lane: u64) -> u64 {
    let (front, back) = unpack(lane);
    back.saturating_sub(front)
}

impl Job {
    /// A job with lanes for `threads` threads and no phases yet.
    fn new(threads: usize) -> Job {
        Job {
            // Never called: the job has no workgroups until it is set up.
            workgroup: &(|_, _, _: &mut [u8]| Ok(())) as &Workgroup<'static>,
            phases: Vec::new(),
            shared_until: 0,
            threads: threads as u64,
            seats: AtomicIsize::new(0),
            local_memory: 0,
            name: None,
            lanes: Vec::new(),
            completed: AtomicUsize::new(0),
            finished: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            error: Mutex::new(None),
            sleeping: AtomicUsize::new(0),
            moved: Mutex::new(()),
            moved_signal: Condvar::new(),
        }
    }

    /// Sets the job up for `phases` of `workgroup`, each lane of a phase a contiguous block
    /// (none for a phase that runs alone), with none claimed, no seat taken and no error.
    fn set_up(
        &mut self,
        workgroup: *const Workgroup<'static>,
        phases: &[Phase],
        local_memory: usize,
        name: Option<Arc<str>>,
    ) {
        self.name = name;
        let threads = self.threads;
        let lanes = phases.len() * threads as usize;
        if self.lanes.len() < lanes {
            self.lanes.resize_with(lanes, || CachePadded::new(AtomicU64::new(0)));
        }
        self.phases.clear();
        let mut start = 0;
        for (phase, lanes) in phases.iter().zip(self.lanes.chunks_exact_mut(threads as usize)) {
            let count = phase.end.saturating_sub(start);
            // Units of workgroups, so that a lane's bounds fit in 32 bits each.
            let unit = count.div_ceil(1 << 31).max(1);
            let units = count.div_ceil(unit);
            let alone = phase.runs_alone(start);
            for (lane, bounds) in (0..threads).zip(lanes) {
                let (front, back) = if alone { (0, 0) } else { (lane * units / threads, (lane + 1) * units / threads) };
                *bounds.get_mut() = pack(front, back);
            }
            let chunk = (units / (8 * threads)).max(1);
            self.phases.push(PhasePlan { start, end: start + count, alone, unit, chunk });
            start += count;
        }
        self.shared_until = self.phases.iter().rposition(|phase| !phase.alone).map_or(0, |last| last + 1);
        self.workgroup = workgroup;
        *self.seats.get_mut() = threads as isize - 1;
        self.local_memory = local_memory;
        *self.completed.get_mut() = 0;
        *self.finished.get_mut() = 0;
        *self.stopped.get_mut() = false;
        *self.error.get_mut().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// The lanes of phase `phase`.
    fn lanes(&self, phase: usize) -> &[CachePadded<AtomicU64>] {
        let threads = self.threads as usize;
        &self.lanes[phase * threads..(phase + 1) * threads]
    }

    /// Whether no phase, the running one or a later one, has workgroups left for another thread
    /// to claim.
    fn exhausted(&self) -> bool {
        let phase = self.completed.load(Ordering::Acquire);
        phase >= self.shared_until
            || phase + 1 == self.shared_until
                && self.lanes(phase).iter().all(|lane| left(lane.load(Ordering::Relaxed)) == 0)
    }

    /// Takes a seat, returning its lane (the submitter's is 0), or `None` when all are taken.
    fn take_seat(&self) -> Option<usize> {
        // One read-modify-write, never retried: every worker on many cores tries at once. Seats
        // only ever go down, so a count gone below zero stays a refusal.
        let free = self.seats.fetch_sub(1, Ordering::Relaxed);
        (free > 0).then(|| (self.threads - free as u64) as usize)
    }

    /// Claims the next run of workgroups of `phase` for the thread of `lane`: from the front of
    /// its own block, then, once that is empty, from the back half of the fullest other lane,
    /// which it moves into its own. `None` when no lane of the phase has any left.
    fn claim(&self, phase: usize, lane: usize) -> Option<std::ops::Range<u64>> {
        let (plan, lanes) = (&self.phases[phase], self.lanes(phase));
        loop {
            if let Some(units) = claim_front(&lanes[lane], plan.chunk) {
                let at = |units: u64| units.saturating_mul(plan.unit).saturating_add(plan.start).min(plan.end);
                return Some(at(units.start)..at(units.end));
            }
            steal_into(lanes, lane)?;
        }
    }

    /// Runs workgroups for the thread of `lane`, phase after phase, until the last has completed:
    /// claims of a chunk of neighbours at a time until none are left, counted finished all at
    /// once (the shared counter moves once per thread and phase instead of once per workgroup);
    /// then, if that finished the phase, starts the next, else waits for it.
    /// [`Job::work`] in a span named after the job, where it has a name.
    fn work_traced(&self, processor: u32, lane: usize, memory: &mut [u8]) {
        let _span = self.name.as_ref().map(|name| tracing::span(tracing::Category::Task, || name, tracing::Args::none));
        self.work(processor, lane, memory);
    }

    fn work(&self, processor: u32, lane: usize, memory: &mut [u8]) {
        let mut phase = self.completed.load(Ordering::Acquire);
        // The submitter starts the job (a worker cannot have taken a seat before it is queued).
        if lane == 0 && phase == 0 && self.phases.first().is_some_and(|first| first.alone) {
            phase = self.start_from(0, processor, memory);
        }
        while phase < self.phases.len() {
            let mut claimed = 0;
            while let Some(run) = self.claim(phase, lane) {
                claimed += run.end - run.start;
                self.run_claimed(run, processor, memory);
            }
            // Release: the workgroups' writes happen before the thread that completes the phase
            // (acquiring every count before its own) starts the next.
            if claimed > 0 && self.finished.fetch_add(claimed, Ordering::AcqRel) + claimed == self.phases[phase].end {
                phase = self.start_from(phase + 1, processor, memory);
            } else {
                phase = self.wait_past(phase);
            }
        }
    }

    /// Runs `indices`, skipping them once the job has stopped.
    fn run_claimed(&self, indices: std::ops::Range<u64>, processor: u32, memory: &mut [u8]) {
        for index in indices {
            if self.stopped.load(Ordering::Relaxed) {
                continue;
            }
            // SAFETY: `index` is a claimed workgroup of a phase not yet complete, so the
            // `run_phases` call that owns the workgroup is still waiting (see there).
            let workgroup = unsafe { &*self.workgroup };
            if let Err(error) = run_workgroup(workgroup, index, processor, memory) {
                self.fail(error);
            }
        }
    }

    /// Starts phase `phase`, every phase before it having completed: first runs it here if it
    /// runs alone (and so on with those after it), then lets the other threads at the next one.
    /// Returns the phase running now.
    fn start_from(&self, mut phase: usize, processor: u32, memory: &mut [u8]) -> usize {
        while let Some(plan) = self.phases.get(phase).filter(|plan| plan.alone) {
            self.run_claimed(plan.start..plan.end, processor, memory);
            self.finished.fetch_add(plan.end - plan.start, Ordering::Relaxed);
            phase += 1;
        }
        // Release: the phases' writes happen before any thread sees the phase move. Sequentially
        // consistent with `sleeping`: a thread that is about to sleep sees the move or is
        // counted (see `wait_past`).
        self.completed.store(phase, Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) > 0 {
            let _moved = self.moved.lock().unwrap_or_else(PoisonError::into_inner);
            self.moved_signal.notify_all();
        }
        phase
    }

    fn fail(&self, error: Diagnostic) {
        self.stopped.store(true, Ordering::Relaxed);
        self.error.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(error);
    }

    /// Waits until phase `phase` has completed, awake for [`WAIT_SPIN`], then asleep, and returns
    /// the phase running then.
    fn wait_past(&self, phase: usize) -> usize {
        let until = std::time::Instant::now() + WAIT_SPIN;
        for _ in 0..PHASE_LOOKS {
            let now = self.completed.load(Ordering::Acquire);
            if now != phase {
                return now;
            }
            std::hint::spin_loop();
        }
        loop {
            let now = self.completed.load(Ordering::Acquire);
            if now != phase {
                return now;
            }
            if std::time::Instant::now() >= until {
                let mut moved = self.moved.lock().unwrap_or_else(PoisonError::into_inner);
                self.sleeping.fetch_add(1, Ordering::SeqCst);
                while self.completed.load(Ordering::SeqCst) == phase {
                    moved = self.moved_signal.wait(moved).unwrap_or_else(PoisonError::into_inner);
                }
                self.sleeping.fetch_sub(1, Ordering::SeqCst);
                return self.completed.load(Ordering::Acquire);
            }
            std::thread::yield_now();
        }
    }
}

/// Claims units from the front of `lane`: `chunk` of them, fewer once half of what is left is
/// less, so that a thread that steals towards the end still finds some.
fn claim_front(lane: &AtomicU64, chunk: u64) -> Option<std::ops::Range<u64>> {
    let mut current = lane.load(Ordering::Relaxed);
    loop {
        let left = Some(left(current)).filter(|&left| left > 0)?;
        let (front, back) = unpack(current);
        let take = (left / 2).clamp(1, chunk);
        match lane.compare_exchange_weak(current, pack(front + take, back), Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return Some(front..front + take),
            Err(seen) => current = seen,
        }
    }
}

/// Moves the back half of the fullest of `lanes` other than `lane` (which is empty) into `lane`;
/// `None` when every other lane is empty. Only a lane's own thread stores into it, and only while
/// it is empty, where no other thread's compare-and-swap can succeed.
fn steal_into(lanes: &[CachePadded<AtomicU64>], lane: usize) -> Option<()> {
    loop {
        let (victim, current, left) = lanes
            .iter()
            .enumerate()
            .filter(|&(other, _)| other != lane)
            .map(|(other, victim)| {
                let current = victim.load(Ordering::Relaxed);
                (other, current, left(current))
            })
            .max_by_key(|&(_, _, left)| left)
            .filter(|&(_, _, left)| left > 0)?;
        let (front, back) = unpack(current);
        let take = left.div_ceil(2);
        let stolen =
            lanes[victim].compare_exchange(current, pack(front, back - take), Ordering::Relaxed, Ordering::Relaxed);
        if stolen.is_ok() {
            lanes[lane].store(pack(back - take, back), Ordering::Relaxed);
            return Some(());
        }
    }
}

/// Runs one workgroup, a panic in it as an error, so that neither the worker nor the submitter
/// unwinds.
fn run_workgroup(workgroup: &Workgroup<'_>, index: u64, processor: u32, memory: &mut [u8]) -> Result<(), Diagnostic> {
    panic::catch_unwind(AssertUnwindSafe(|| workgroup(index, processor, memory)))
        .unwrap_or_else(|payload| Err(panicked(index, payload.as_ref())))
}

fn panicked(index: u64, payload: &(dyn Any + Send)) -> Diagnostic {
    Diagnostic::new(StatusCode::Internal, format!("workgroup {index} panicked: {}", panic_message(payload)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtx_test_support::deadline::Meeting;
    use std::sync::Weak;

    /// Runs a job of as many workgroups as the pool has threads, which all block until every one
    /// of them has started (a [`Meeting`]: within a deadline, so a thread that never joins fails
    /// the job instead of hanging it): so that many threads run it at once (the submitter and the workers it
    /// wakes, one fewer than the pool has, or any worker awake anyway).
    fn all_at_once(workers: &Workers, each: impl Fn(u32) + Sync) {
        let count = workers.threads();
        let meeting = Meeting::new(count);
        workers
            .run(
                count as u64,
                0,
                &|_, processor, _| {
                    each(processor);
                    meeting.wait();
                    Ok(())
                },
                "test",
            )
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
                    for round in 0..if cfg!(miri) { 6 } else { 40 } {
                        let count = 1 + (submitter * 97 + round * 31) % 300;
                        let runs: Vec<AtomicUsize> = (0..count).map(|_| AtomicUsize::new(0)).collect();
                        workers
                            .run(
                                count,
                                16,
                                &|index, _, _| {
                                    runs[index as usize].fetch_add(1, Ordering::Relaxed);
                                    Ok(())
                                },
                                "test",
                            )
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
        for _ in 0..if cfg!(miri) { 30 } else { 300 } {
            workers
                .run(
                    8,
                    0,
                    &|_, _, _| {
                        most.fetch_max(running.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_micros(20));
                        running.fetch_sub(1, Ordering::SeqCst);
                        Ok(())
                    },
                    "test",
                )
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
        for round in 0..if cfg!(miri) { 30 } else { 300u64 } {
            std::thread::sleep(SPIN * (round % 30) as u32 / 15);
            let arrived = AtomicUsize::new(0);
            workers
                .run(
                    2,
                    0,
                    &|index, _, _| {
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
                    },
                    "test",
                )
                .unwrap();
        }
    }

    #[test]
    fn each_thread_has_its_own_local_memory() {
        let workers = Workers::new(3).unwrap();
        let meeting = Meeting::new(workers.threads());
        let sizes = Mutex::new(Vec::new());
        workers
            .run(
                workers.threads() as u64,
                4,
                &|index, _, memory| {
                    sizes.lock().unwrap().push(memory.len());
                    memory.copy_from_slice(&(index as u32).to_le_bytes());
                    // Every thread has written its own memory before any reads it back.
                    meeting.wait();
                    assert_eq!(memory, (index as u32).to_le_bytes(), "workgroup {index}'s memory was overwritten");
                    Ok(())
                },
                "test",
            )
            .unwrap();
        assert_eq!(sizes.into_inner().unwrap(), [4, 4, 4]);
    }

    /// The submitter runs its workgroups in the same memory from one job to the next, alone or
    /// with the workers, grown as a job asks for more; a call within it gets memory of its own.
    #[test]
    fn a_submitters_local_memory_is_kept_between_jobs() {
        let workers = Workers::new(2).unwrap();
        let submitter = workers.concurrency() as u32 - 1;
        let seen = Mutex::new(Vec::new());
        let jobs = [(1, 64), (1, 64), (5, 32), (0, 64), (3, 128), (1, 16)];
        for (job, &(count, length)) in jobs.iter().enumerate() {
            workers
                .run(
                    count,
                    length,
                    &|_, processor, memory| {
                        assert_eq!(memory.len(), length);
                        if processor == submitter {
                            seen.lock().unwrap().push((job, memory.as_ptr() as usize));
                        }
                        Ok(())
                    },
                    "test",
                )
                .unwrap();
        }
        // The memory moves only when a job needs more than every job before it. The submitter
        // grows it for each job, also one whose every workgroup the other worker took (a shared
        // job may leave it none), so what it needs comes from the jobs, not from what it ran.
        let seen = seen.into_inner().unwrap();
        let needed = |job: usize| jobs[..=job].iter().map(|&(_, length)| length).max().unwrap_or(0);
        for pair in seen.windows(2) {
            let [(before, at_before), (after, at_after)] = [pair[0], pair[1]];
            if needed(after) == needed(before) {
                assert_eq!(at_after, at_before, "job {after} after job {before}: {seen:?}");
            }
        }
        // A job of one workgroup runs on the submitter alone: jobs 0, 1 and 5 at least.
        let jobs_seen: Vec<usize> = seen.iter().map(|&(job, _)| job).collect();
        assert!([0, 1, 5].iter().all(|job| jobs_seen.contains(job)), "{seen:?}");
        let at = |job: usize| seen.iter().find(|&&(j, _)| j == job).map(|&(_, at)| at);
        assert_eq!(at(0), at(1), "a second job of the same size keeps the memory");
        with_local_memory(8, |outer| {
            with_local_memory(8, |inner| assert_ne!(outer.as_ptr(), inner.as_ptr()));
        });
    }

    /// Runs a two-thread job of `count` workgroups whose workgroup 0 (the submitter's first)
    /// waits until `release` says so of the others run so far, and returns the indices each
    /// thread ran, in order: the submitter's, then the helper's.
    fn runs_with_the_first_held(count: u64, release: impl Fn(&[u64]) -> bool + Sync) -> (Vec<u64>, Vec<u64>) {
        let workers = Workers::new(2).unwrap();
        let submitter = workers.threads() as u32;
        let ran = Mutex::new((Vec::new(), Vec::new()));
        workers
            .run(
                count,
                0,
                &|index, processor, _| {
                    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
                    while index == 0 && !release(&ran.lock().unwrap().1) {
                        if std::time::Instant::now() > deadline {
                            return Err(Diagnostic::new(
                                StatusCode::Internal,
                                "the helper never did what was waited for",
                            ));
                        }
                        std::thread::yield_now();
                    }
                    let mut ran = ran.lock().unwrap();
                    if processor == submitter { &mut ran.0 } else { &mut ran.1 }.push(index);
                    Ok(())
                },
                "test",
            )
            .unwrap();
        ran.into_inner().unwrap()
    }

    #[test]
    fn each_thread_starts_at_the_front_of_its_own_block() {
        // Two lanes of 32: the submitter's 0..32 and the helper's 32..64, claimed 4 at a time.
        let (submitter, helper) = runs_with_the_first_held(64, |helper| !helper.is_empty());
        assert_eq!(submitter[..4], [0, 1, 2, 3]);
        assert_eq!(helper[..4], [32, 33, 34, 35]);
        let mut all: Vec<u64> = submitter.into_iter().chain(helper).collect();
        all.sort_unstable();
        assert_eq!(all, (0..64).collect::<Vec<_>>());
    }

    #[test]
    fn a_thread_out_of_work_takes_the_back_half_of_the_fullest_lane() {
        // Lanes 0..4 and 4..8, claimed one at a time. The submitter holds 0 until the helper,
        // done with its own lane, has taken 2..4 of the 1..4 left in the submitter's.
        let (submitter, helper) = runs_with_the_first_held(8, |helper| helper.contains(&2));
        assert_eq!(helper[..5], [4, 5, 6, 7, 2]);
        assert_eq!(submitter[0], 0);
        let mut all: Vec<u64> = submitter.into_iter().chain(helper).collect();
        all.sort_unstable();
        assert_eq!(all, (0..8).collect::<Vec<_>>());
    }

    #[test]
    fn claims_cover_every_workgroup_once_even_past_32_bits() {
        fn noop(_: u64, _: u32, _: &mut [u8]) -> Result<(), Diagnostic> {
            Ok(())
        }
        let workgroup: &'static Workgroup<'static> = &noop;
        // Under Miri (100 times slower) one lane and an odd number of them only: thousands of
        // steals among 64 lanes took it over ten minutes, and [1, 2, 3] a minute.
        let threads: &[u64] = if cfg!(miri) { &[1, 3] } else { &[1, 2, 3, 16, MAX_THREADS as u64] };
        for count in [0, 1, 5, 100, 1 << 31, (1 << 31) + 1, 3 * u64::from(u32::MAX) + 7, u64::MAX] {
            for &threads in threads {
                let mut job = Job::new(threads as usize);
                job.set_up(workgroup, &[Phase { end: count, alone: false }], 0, None);
                let unit = job.phases[0].unit;
                let mut end = 0;
                for lane in job.lanes(0) {
                    let (front, back) = unpack(lane.load(Ordering::Relaxed));
                    assert!(front <= back && back <= u64::from(u32::MAX), "{count} over {threads}: {front}..{back}");
                    if count > 1 {
                        assert_eq!(front * unit, end, "{count} over {threads}: lanes are contiguous");
                        end = back.saturating_mul(unit).min(count);
                    }
                }
                if count <= 1 {
                    assert!(job.exhausted(), "{count}: a phase of one workgroup or none runs alone");
                    continue;
                }
                assert_eq!(end, count, "{count} over {threads}");
                // One thread claims its own lane, then every other one.
                let mut claims = std::iter::from_fn(|| job.claim(0, 0)).collect::<Vec<_>>();
                claims.sort_unstable_by_key(|claim| claim.start);
                let mut next = 0;
                for claim in claims {
                    assert!(
                        claim.start == next && claim.end > claim.start,
                        "{count} over {threads}: {claim:?} at {next}"
                    );
                    next = claim.end;
                }
                assert_eq!(next, count, "{count} over {threads}");
                assert!(job.exhausted());
            }
        }
    }

    /// Phases of one job: every workgroup runs once, each phase's only once every one before it
    /// has finished; one that runs alone runs on one thread; and a thread that waited for a phase
    /// long enough to sleep still takes part in the next (two workgroups that wait for each other
    /// fail rather than hang when one thread runs both).
    #[test]
    fn phases_run_in_order_and_a_sleeping_thread_joins_the_next() {
        let workers = Workers::new(3).unwrap();
        let counts: [u64; 9] = [5, 0, 1, 40, 2, 7, 1, 3, 2];
        let alone = [false, false, false, false, true, false, false, true, false];
        let phases: Vec<Phase> = counts
            .iter()
            .zip(alone)
            .scan(0, |end, (&count, alone)| {
                *end += count;
                Some(Phase { end: *end, alone })
            })
            .collect();
        let phase_of = |index: u64| phases.iter().position(|phase| index < phase.end).unwrap();
        // Under Miri (100 times slower) two rounds: the threads' waits are its clock's too.
        for round in 0..if cfg!(miri) { 2 } else { 30 } {
            let runs: Vec<AtomicUsize> = (0..phases.last().unwrap().end).map(|_| AtomicUsize::new(0)).collect();
            let (finished, processors) = (AtomicUsize::new(0), Mutex::new(vec![Vec::new(); phases.len()]));
            let arrived = AtomicUsize::new(0);
            workers
                .run_phases(&phases, 8, &|index, processor, memory| {
                    assert_eq!(memory.len(), 8);
                    let phase = phase_of(index);
                    let before = phase.checked_sub(1).map_or(0, |previous| phases[previous].end);
                    let done = finished.load(Ordering::SeqCst) as u64;
                    assert!(
                        done >= before,
                        "round {round}: workgroup {index} of phase {phase} ran with {done} finished"
                    );
                    processors.lock().unwrap()[phase].push(processor);
                    match phase {
                        // The last workgroup of phase 3 outlasts the others' wait awake.
                        3 if index == phases[3].end - 1 => std::thread::sleep(WAIT_SPIN * 3),
                        // Both of phase 8 wait for each other: two threads must be awake for it.
                        8 => {
                            arrived.fetch_add(1, Ordering::SeqCst);
                            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
                            while arrived.load(Ordering::SeqCst) < 2 {
                                if std::time::Instant::now() > deadline {
                                    return Err(Diagnostic::new(StatusCode::Internal, "phase 8 ran on one thread"));
                                }
                                std::thread::yield_now();
                            }
                        }
                        _ => {}
                    }
                    runs[index as usize].fetch_add(1, Ordering::SeqCst);
                    finished.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                })
                .unwrap();
            assert!(runs.iter().all(|runs| runs.load(Ordering::SeqCst) == 1), "round {round}");
            let processors = processors.into_inner().unwrap();
            for (phase, ran) in processors.iter().enumerate().filter(|&(phase, _)| alone[phase]) {
                assert!(ran.windows(2).all(|pair| pair[0] == pair[1]), "phase {phase} ran alone: {ran:?}");
            }
        }
    }

    /// A failure in one phase skips the workgroups of every later one, and is returned.
    #[test]
    fn a_failure_skips_the_later_phases() {
        let workers = Workers::new(2).unwrap();
        let phases = [Phase { end: 6, alone: false }, Phase { end: 7, alone: true }, Phase { end: 50, alone: false }];
        let ran = AtomicUsize::new(0);
        let error = workers
            .run_phases(&phases, 0, &|index, _, _| {
                ran.fetch_add(1, Ordering::SeqCst);
                if index == 2 {
                    return Err(Diagnostic::new(StatusCode::Internal, "workgroup 2 failed"));
                }
                Ok(())
            })
            .unwrap_err();
        assert_eq!(error.message, "workgroup 2 failed");
        assert!(ran.load(Ordering::SeqCst) <= 6, "{} ran", ran.load(Ordering::SeqCst));
    }

    #[test]
    fn a_failing_workgroup_stops_its_job_and_is_returned() {
        let workers = Workers::new(2).unwrap();
        let ran = AtomicUsize::new(0);
        let error = workers
            .run(
                10_000,
                0,
                &|index, _, _| {
                    ran.fetch_add(1, Ordering::Relaxed);
                    if index == 5 {
                        return Err(Diagnostic::new(StatusCode::OutOfRange, "workgroup 5 read past its binding"));
                    }
                    std::thread::sleep(std::time::Duration::from_micros(20));
                    Ok(())
                },
                "test",
            )
            .unwrap_err();
        assert_eq!((error.code, error.message.as_str()), (StatusCode::OutOfRange, "workgroup 5 read past its binding"));
        assert!(ran.load(Ordering::Relaxed) < 10_000, "the workgroups after the failure were skipped");
        // The jobs after it (the failed one among them, once it is reused) run every workgroup.
        for _ in 0..20 {
            let ran = AtomicUsize::new(0);
            let run = workers.run(
                100,
                0,
                &|_, _, _| {
                    ran.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                },
                "count",
            );
            assert_eq!((run.map_err(|e| e.message), ran.into_inner()), (Ok(()), 100), "the pool goes on");
        }
    }

    #[test]
    fn a_panicking_workgroup_is_an_error_and_every_thread_survives() {
        let workers = Workers::new(3).unwrap();
        for panicking in 0..workers.threads() as u64 {
            // Workgroups wait for each other, so the panicking one runs on a worker or the
            // submitter while others are running.
            let meeting = Meeting::new(workers.threads());
            let error = workers
                .run(
                    workers.threads() as u64,
                    0,
                    &|index, _, _| {
                        meeting.wait();
                        if index == panicking {
                            panic!("kernel bug in {index}");
                        }
                        Ok(())
                    },
                    "test",
                )
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
            assert!(name.as_deref().is_some_and(|n| n.starts_with("local-task-")), "{name:?}");
            assert_eq!(product, 0.0);
        }
    }
}
