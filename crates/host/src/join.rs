//! Waiting for several values at once: a continuation (`run_when_ready`) or a blocked host
//! thread (`block_until_ready`).

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use super::async_value::RcAsyncValue;

/// Runs `callback` once every value in `values` is available (errors count as available).
///
/// No value pending: runs at once. One pending: a plain `and_then`. More: one shared counter,
/// decremented by each value's continuation; the last one runs the callback, on its thread.
pub fn run_when_ready<F: FnOnce() + Send + 'static>(values: &[RcAsyncValue], callback: F) {
    // Availability is final, so a value seen available here stays so: with one value pending,
    // waiting on it alone is enough.
    let mut pending = values.iter().filter(|v| !v.is_available());
    match (pending.next(), pending.next()) {
        (None, _) => callback(),
        (Some(only), None) => only.and_then(callback),
        _ => {
            // Count every value, not a snapshot of the pending ones: those available by now
            // arrive inline, so the count is right however the race with their setters goes.
            let join =
                Arc::new(Join { remaining: AtomicUsize::new(values.len()), callback: UnsafeCell::new(Some(callback)) });
            for value in values {
                let join = Arc::clone(&join);
                value.and_then(move || join.arrive());
            }
        }
    }
}

struct Join<F> {
    remaining: AtomicUsize,
    callback: UnsafeCell<Option<F>>,
}

// SAFETY: the callback is taken by exactly one thread, the one whose decrement reaches zero.
unsafe impl<F: Send> Sync for Join<F> {}

impl<F: FnOnce()> Join<F> {
    fn arrive(&self) {
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            // SAFETY: only the last arrival gets here, and it happens after every other arrival.
            if let Some(callback) = unsafe { (*self.callback.get()).take() } {
                callback();
            }
        }
    }
}

/// Blocks the calling thread until every value is available. For host threads only: a queue
/// worker must never block (use [`HostContext::await_values`](super::HostContext::await_values)
/// or `and_then` instead).
///
/// A mutex and condvar, not `thread::park`: parking needs `thread::current()`, whose handle for a
/// host's main thread std never frees, and C hosts run valgrind on exactly that thread.
pub fn block_until_ready(values: &[RcAsyncValue]) {
    if values.iter().all(RcAsyncValue::is_available) {
        return;
    }
    let latch = Arc::new(Latch { remaining: Mutex::new(values.len()), done: Condvar::new() });
    for value in values {
        let latch = Arc::clone(&latch);
        value.and_then(move || latch.count_down());
    }
    let mut remaining = latch.remaining.lock().unwrap_or_else(PoisonError::into_inner);
    while *remaining != 0 {
        remaining = latch.done.wait(remaining).unwrap_or_else(PoisonError::into_inner);
    }
}

struct Latch {
    remaining: Mutex<usize>,
    done: Condvar,
}

impl Latch {
    fn count_down(&self) {
        let mut remaining = self.remaining.lock().unwrap_or_else(PoisonError::into_inner);
        *remaining -= 1;
        if *remaining == 0 {
            self.done.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AsyncValueRef;
    use std::thread;

    #[test]
    fn run_when_ready_runs_once_after_the_last_value() {
        let values: Vec<AsyncValueRef<i32>> = (0..3).map(|_| AsyncValueRef::unconstructed()).collect();
        let mut untyped: Vec<RcAsyncValue> = values.iter().map(|v| v.as_untyped().clone()).collect();
        untyped.push(AsyncValueRef::available(0i32).into_untyped());
        let runs = Arc::new(AtomicUsize::new(0));
        let r = Arc::clone(&runs);
        run_when_ready(&untyped, move || {
            r.fetch_add(1, Ordering::SeqCst);
        });
        values[2].emplace(1).unwrap();
        values[0].set_error(crate::Diagnostic::cancelled()).unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 0);
        values[1].emplace(3).unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn run_when_ready_with_nothing_pending_runs_inline() {
        let runs = Arc::new(AtomicUsize::new(0));
        let r = Arc::clone(&runs);
        run_when_ready(&[], move || {
            r.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn block_until_ready_wakes_when_another_thread_sets_the_values() {
        let (a, b) = (AsyncValueRef::<i32>::unconstructed(), AsyncValueRef::<i32>::unconstructed());
        let (a2, b2) = (a.clone(), b.clone());
        let setter = thread::spawn(move || {
            a2.emplace(1).unwrap();
            b2.emplace(2).unwrap();
        });
        block_until_ready(&[a.as_untyped().clone(), b.as_untyped().clone()]);
        assert_eq!((*a.get(), *b.get()), (1, 2));
        setter.join().unwrap();
    }
}
