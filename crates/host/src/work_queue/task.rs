//! Running one task: the single place where a panicking task is contained, shared by every queue
//! (ours and host-provided ones).

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};

use super::{Task, WorkQueue};
use crate::diagnostic::{Diagnostic, StatusCode};

/// Runs a task so that its panic stays its own: the thread (a pool worker, a host thread lent to
/// `s`, or a host queue's thread) and the queue's bookkeeping carry on.
pub fn run_task(task: Task) {
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(task)) {
        eprintln!("rtx: a task panicked: {}", panic_message(payload.as_ref()));
    }
}

/// The text of a panic payload (`panic!` with a literal or a formatted message).
pub fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(a panic payload that is not a string)")
}

/// The one check behind `await_values` and `quiesce`: a thread of the queue must not block on
/// it, since the work it would wait for may need this very thread (or its pool) to run.
pub fn refuse_on_own_thread<Q: WorkQueue + ?Sized>(queue: &Q, operation: &str) -> Result<(), Diagnostic> {
    if queue.is_in_worker_thread() {
        return Err(Diagnostic::new(
            StatusCode::FailedPrecondition,
            format!(
                "{operation} called from a thread of work queue '{}': it could wait forever for work \
                 that needs this thread; attach a continuation with and_then instead",
                queue.name()
            ),
        ));
    }
    Ok(())
}
