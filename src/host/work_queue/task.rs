//! Running one task: the single place where a panicking task is contained, shared by every queue
//! (ours and host-provided ones).

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};

use super::Task;

/// Runs a task so that its panic stays its own: the thread (a pool worker, a host thread lent to
/// `s`, or a host queue's thread) and the queue's bookkeeping carry on.
pub(crate) fn run_task(task: Task) {
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(task)) {
        eprintln!("rtx: a task panicked: {}", panic_message(payload.as_ref()));
    }
}

/// The text of a panic payload (`panic!` with a literal or a formatted message).
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(a panic payload that is not a string)")
}
