//! Work queues: where tasks and continuations run. Chosen by a config string, as in TFRT:
//!
//! - `s`: single-threaded. No threads; tasks run only when the host thread donates itself in
//!   `await_values` or `quiesce`. Deterministic, for tests and embedding.
//! - `mstd`, `mstd:N`, `mstd:N,M`: a non-blocking pool of N workers (default: one per core) with
//!   per-worker deques and work stealing, plus a blocking pool of up to M threads (default 256).
//!
//! Hosts may also plug in their own queue (`ffi::work_queue` adapts a C table of callbacks).

mod multi_threaded;
mod scoped;
mod single_threaded;
mod spec;
mod task;

pub use multi_threaded::MultiThreadedWorkQueue;
pub use scoped::ScopedWorkQueue;
pub use single_threaded::SingleThreadedWorkQueue;
pub use spec::{create_work_queue, WorkQueueSpec};
pub use task::{panic_message, refuse_on_own_thread, run_task};

use super::async_value::RcAsyncValue;
use super::diagnostic::Diagnostic;

/// A unit of work. Tasks must not block (use `add_blocking_task` for work that may).
pub type Task = Box<dyn FnOnce() + Send + 'static>;

/// The interface every queue implements (TFRT's `ConcurrentWorkQueue`).
///
/// All methods are thread-safe. A task may add tasks, set values and attach continuations; it
/// must not call `await_values` or `quiesce` (they fail with FAILED_PRECONDITION there, since a
/// worker waiting for the pool it belongs to could wait forever).
pub trait WorkQueue: Send + Sync {
    /// The config string's name: `s`, `mstd`, or a host-chosen name.
    fn name(&self) -> &str;

    /// Queues non-blocking work. Never fails: a queue that cannot hold more runs it inline.
    fn add_task(&self, task: Task);

    /// Queues work that may block (I/O, waiting on a device). With `allow_queuing == false` the
    /// task must start on a thread at once, and comes back as `Err` if no thread can take it.
    fn add_blocking_task(&self, task: Task, allow_queuing: bool) -> Result<(), Task>;

    /// Blocks the calling host thread until every value is available (errors included).
    /// Single-threaded queues run queued tasks meanwhile.
    fn await_values(&self, values: &[RcAsyncValue]) -> Result<(), Diagnostic>;

    /// Blocks until no task is queued or running, in either pool, including tasks that running
    /// tasks add.
    fn quiesce(&self) -> Result<(), Diagnostic>;

    /// How many tasks can make progress at once (worker threads; 1 for `s`).
    fn parallelism_level(&self) -> usize;

    /// Whether the calling thread is running a task of this queue.
    fn is_in_worker_thread(&self) -> bool;
}
