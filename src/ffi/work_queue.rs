//! Host-provided work queues: a C table of callbacks adapted to the `WorkQueue` trait.
//!
//! The host only has to run tasks: rtx counts the tasks it handed out, so `quiesce`, `await` and
//! "am I on a worker?" work without the host implementing them. The host's threads must run
//! every task it is given (with `rtx_task_run`), since nothing else will.

use std::cell::Cell;
use std::ffi::{c_char, c_void};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use super::handle::{self, Handle, OwnershipBox};
use super::{catch_or, check_struct_size, invalid_argument, message_arg};
use crate::host::work_queue::{refuse_on_own_thread, run_task};
use crate::host::{join, Diagnostic, RcAsyncValue, Task, WorkQueue};

/// Callbacks of a host-provided work queue (`rtx_context_options_t::custom_work_queue`).
#[repr(C)]
#[allow(non_camel_case_types)]
pub struct rtx_work_queue_callbacks_t {
    /// `sizeof(rtx_work_queue_callbacks_t)` as the caller's header knows it.
    pub struct_size: usize,
    /// Passed to every callback.
    pub user_data: *mut c_void,
    /// The queue's name for messages (copied); NULL means "custom".
    pub name: *const c_char,
    /// How many tasks the queue runs at once (reported by `rtx_context_parallelism`); 0 means 1.
    pub parallelism: u32,
    /// Required. Takes ownership of `task`; the queue must eventually call `rtx_task_run(task)`
    /// (or `rtx_task_delete(task)` if it shuts down) exactly once, on any thread, and must not
    /// block the caller.
    pub add_task: Option<unsafe extern "C" fn(user_data: *mut c_void, task: *mut rtx_task_t)>,
    /// Optional. Like `add_task` for work that may block. Returns false to refuse the task (it
    /// then stays the caller's); with `allow_queuing` false it must refuse unless a thread can
    /// start it at once. NULL means blocking work is refused.
    pub add_blocking_task:
        Option<unsafe extern "C" fn(user_data: *mut c_void, task: *mut rtx_task_t, allow_queuing: bool) -> bool>,
    /// Optional. Called once when the context is freed, after every task handed out has finished.
    pub destroy: Option<unsafe extern "C" fn(user_data: *mut c_void)>,
}

/// A unit of work handed to a host queue. Opaque; consumed by `rtx_task_run` or `rtx_task_delete`.
#[allow(non_camel_case_types)]
pub struct rtx_task {
    _private: [u8; 0],
}

/// The handle type C sees.
#[allow(non_camel_case_types)]
pub type rtx_task_t = rtx_task;

/// What an `rtx_task_t` owns: the task and the count of its queue's outstanding tasks. One owner
/// (`Box`): the host until it runs or deletes the task.
pub struct HostTask {
    task: Task,
    tracker: Arc<Tracker>,
}

impl Handle for rtx_task {
    type RustType = HostTask;
    type Ownership = OwnershipBox;
}

/// Counts the tasks a queue handed to the host that have not finished, for quiesce.
struct Tracker {
    outstanding: Mutex<usize>,
    idle: Condvar,
}

impl Tracker {
    fn started(&self) {
        *self.outstanding.lock().unwrap_or_else(PoisonError::into_inner) += 1;
    }

    fn finished(&self) {
        let mut outstanding = self.outstanding.lock().unwrap_or_else(PoisonError::into_inner);
        *outstanding -= 1;
        if *outstanding == 0 {
            self.idle.notify_all();
        }
    }

    fn wait_idle(&self) {
        let mut outstanding = self.outstanding.lock().unwrap_or_else(PoisonError::into_inner);
        while *outstanding != 0 {
            outstanding = self.idle.wait(outstanding).unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn id(self: &Arc<Self>) -> usize {
        Arc::as_ptr(self) as usize
    }
}

thread_local! {
    /// The tracker id of the host queue whose task this thread is running (0: none).
    static RUNNING: Cell<usize> = const { Cell::new(0) };
}

/// `WorkQueue` over a C callback table.
pub(crate) struct CWorkQueue {
    user_data: *mut c_void,
    name: String,
    parallelism: usize,
    add_task: unsafe extern "C" fn(*mut c_void, *mut rtx_task_t),
    add_blocking_task: Option<unsafe extern "C" fn(*mut c_void, *mut rtx_task_t, bool) -> bool>,
    destroy: Option<unsafe extern "C" fn(*mut c_void)>,
    tracker: Arc<Tracker>,
}

// SAFETY: the C contract says the callbacks may be called from any thread.
unsafe impl Send for CWorkQueue {}
// SAFETY: as above.
unsafe impl Sync for CWorkQueue {}

impl CWorkQueue {
    /// # Safety
    /// `table` must be a readable callback table of at least `table.struct_size` bytes.
    pub(crate) unsafe fn new(table: &rtx_work_queue_callbacks_t, function: &str) -> Result<CWorkQueue, Diagnostic> {
        check_struct_size(
            table.struct_size,
            std::mem::size_of::<rtx_work_queue_callbacks_t>(),
            "custom_work_queue",
            function,
        )?;
        let add_task = table
            .add_task
            .ok_or_else(|| invalid_argument(format!("{function}: custom_work_queue->add_task is NULL")))?;
        // SAFETY: a non-null name is NUL-terminated by contract.
        let name = match unsafe { message_arg(table.name) } {
            name if name.is_empty() => "custom".to_string(),
            name => name,
        };
        Ok(CWorkQueue {
            user_data: table.user_data,
            name,
            parallelism: table.parallelism.max(1) as usize,
            add_task,
            add_blocking_task: table.add_blocking_task,
            // Armed by `arm_destroy` once the context exists, so a failed `rtx_context_new`
            // leaves the host's queue entirely the host's.
            destroy: None,
            tracker: Arc::new(Tracker { outstanding: Mutex::new(0), idle: Condvar::new() }),
        })
    }

    /// From now on the queue is rtx's: its `destroy` runs when the context is freed.
    pub(crate) fn arm_destroy(&mut self, table: &rtx_work_queue_callbacks_t) {
        self.destroy = table.destroy;
    }

    fn wrap(&self, task: Task) -> *mut rtx_task_t {
        self.tracker.started();
        handle::box_to_handle(HostTask { task, tracker: Arc::clone(&self.tracker) })
    }
}

impl WorkQueue for CWorkQueue {
    fn name(&self) -> &str {
        &self.name
    }

    fn add_task(&self, task: Task) {
        let handle = self.wrap(task);
        // SAFETY: the host's callback takes ownership of the task handle.
        unsafe { (self.add_task)(self.user_data, handle) };
    }

    fn add_blocking_task(&self, task: Task, allow_queuing: bool) -> Result<(), Task> {
        let Some(add_blocking_task) = self.add_blocking_task else { return Err(task) };
        let handle = self.wrap(task);
        // SAFETY: the host takes the task when it returns true and leaves it to us otherwise.
        if unsafe { add_blocking_task(self.user_data, handle, allow_queuing) } {
            return Ok(());
        }
        // SAFETY: refused, so the handle is still ours and unconsumed.
        let refused = unsafe { handle::take_box(handle) }.expect("`wrap` never returns NULL");
        refused.tracker.finished();
        Err(refused.task)
    }

    fn await_values(&self, values: &[RcAsyncValue]) -> Result<(), Diagnostic> {
        refuse_on_own_thread(self, "await")?;
        join::block_until_ready(values);
        Ok(())
    }

    fn quiesce(&self) -> Result<(), Diagnostic> {
        refuse_on_own_thread(self, "quiesce")?;
        self.tracker.wait_idle();
        Ok(())
    }

    fn parallelism_level(&self) -> usize {
        self.parallelism
    }

    fn is_in_worker_thread(&self) -> bool {
        RUNNING.with(|running| running.get() == self.tracker.id())
    }
}

impl Drop for CWorkQueue {
    fn drop(&mut self) {
        if !self.is_in_worker_thread() {
            self.tracker.wait_idle();
        }
        if let Some(destroy) = self.destroy {
            // SAFETY: called once, after the last task we handed out finished.
            unsafe { destroy(self.user_data) };
        }
    }
}

/// Runs a task handed to a host queue, then frees it. Call exactly once per task, from any
/// thread. NULL does nothing.
#[no_mangle]
pub unsafe extern "C" fn rtx_task_run(task: *mut rtx_task_t) {
    catch_or((), || {
        // SAFETY: the host passes each task it was given exactly once.
        let Some(HostTask { task, tracker }) = (unsafe { handle::take_box(task) }) else { return };
        let outer = RUNNING.with(|running| running.replace(tracker.id()));
        run_task(task);
        RUNNING.with(|running| running.set(outer));
        tracker.finished();
    })
}

/// Frees a task without running it, for a queue that shuts down with work left. Whatever the
/// task would have produced is never produced. NULL does nothing.
#[no_mangle]
pub unsafe extern "C" fn rtx_task_delete(task: *mut rtx_task_t) {
    catch_or((), || {
        // SAFETY: the host passes each task it was given exactly once.
        if let Some(task) = unsafe { handle::take_box(task) } {
            task.tracker.finished();
        }
    })
}
