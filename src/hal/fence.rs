//! `!hal.fence`: a set of points on device timelines, built on AsyncValue. Each point is a value
//! (a chain) that becomes available when the queue work it stands for is done (or an error when
//! that work failed); waiting is `run_when_ready`, never a blocked worker. A point may be a C
//! host's own promise, which is how `coarse-fences` calls surface their fences as async values.

use std::any::Any;
use std::sync::Arc;

use super::buffer::wrong_type;
use crate::host::{block_until_ready, run_when_ready, AsyncValueRef, Chain, Diagnostic, RcAsyncValue, StatusCode};
use crate::vm::refs::{Ref, RefObject};

/// A HAL fence. Clones share the points (queue work keeps its fences this way).
#[derive(Clone, Debug)]
pub struct Fence {
    points: Points,
}

/// A fence's points: most fences have one, kept inline (no allocation beyond the point's own).
#[derive(Clone, Debug)]
enum Points {
    One(RcAsyncValue),
    Many(Arc<[RcAsyncValue]>),
}

impl RefObject for Fence {
    fn type_name(&self) -> &'static str {
        "hal.fence"
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// What a point's state says to `fence.query` and `fence.await`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reached {
    Yes,
    No,
    Failed(Diagnostic),
}

impl Fence {
    /// One new, unsignaled point (`hal.fence.create`).
    pub fn new() -> Fence {
        Fence::from_point(AsyncValueRef::<Chain>::unconstructed().into_untyped())
    }

    /// A fence with one point that someone else made: reached when `point` is available (failed
    /// if it is an error), and signaling it sets it to a chain. A C host passes its promises
    /// this way; whether they can take a chain is checked by the caller.
    pub fn from_point(point: RcAsyncValue) -> Fence {
        Fence { points: Points::One(point) }
    }

    /// A fence that is reached when all of `fences` are (`hal.fence.join`).
    ///
    /// Points already reached add nothing to the condition, and signalling or failing a fence
    /// skips them, so the join keeps only the others (one reached point stands for all when none
    /// is left): on an inline queue the fences a program joins are mostly reached by then, and
    /// such a join allocates nothing.
    pub fn join<'a>(fences: impl IntoIterator<Item = &'a Fence>) -> Fence {
        let mut fences = fences.into_iter();
        let (first, second) = match (fences.next(), fences.next()) {
            (Some(only), None) => return only.clone(),
            pair => pair,
        };
        let (mut reached, mut first_open, mut open) = (None, None, Vec::new());
        for point in first.into_iter().chain(second).chain(fences).flat_map(Fence::points) {
            if point.is_concrete() {
                reached.get_or_insert(point);
            } else if let Some(earlier) = first_open.replace(point) {
                if open.is_empty() {
                    open.push(earlier.clone());
                }
                open.push(point.clone());
            }
        }
        let points = match (first_open.or(reached), open.is_empty()) {
            (Some(point), true) => Points::One(point.clone()),
            _ => Points::Many(open.into()),
        };
        Fence { points }
    }

    /// Marks every point reached (`hal.fence.signal`, and queue work completing).
    pub fn signal(&self) {
        for point in self.points() {
            if !point.is_available() {
                // A point set by someone else in between stays as they set it.
                let _ = point.emplace(Chain);
            }
        }
    }

    /// Fails every unreached point (`hal.fence.fail`, and queue work failing).
    pub fn fail(&self, diagnostic: &Diagnostic) {
        for point in self.points() {
            if !point.is_available() {
                let _ = point.set_error(diagnostic.clone());
            }
        }
    }

    /// The points: the values the fence is reached with.
    pub fn points(&self) -> &[RcAsyncValue] {
        match &self.points {
            Points::One(point) => std::slice::from_ref(point),
            Points::Many(points) => points,
        }
    }

    /// Whether every point is reached, or the first failure.
    pub fn reached(&self) -> Reached {
        let mut all = true;
        for point in self.points() {
            if let Some(error) = point.get_error() {
                return Reached::Failed(error.clone());
            }
            all &= point.is_available();
        }
        if all {
            Reached::Yes
        } else {
            Reached::No
        }
    }

    /// Runs `then` once every point is available (reached or failed), on the thread that makes
    /// the last one so, or at once.
    pub fn when_reached(&self, then: impl FnOnce() + Send + 'static) {
        run_when_ready(self.points(), then);
    }

    /// Blocks the calling thread until every point is available: for tools and hosts outside the
    /// runtime's threads only.
    pub fn wait(&self) -> Result<(), Diagnostic> {
        block_until_ready(self.points());
        match self.reached() {
            Reached::Failed(error) => Err(error),
            _ => Ok(()),
        }
    }

    pub fn into_ref(self) -> Ref {
        Ref::Object(Arc::new(self))
    }
}

impl Default for Fence {
    fn default() -> Fence {
        Fence::new()
    }
}

/// Runs `then` once `wait` (none: nothing) is reached, given `Err` with the failure if it failed:
/// at once (its result returned) when the wait is over, otherwise from the fence's continuation
/// (its result dropped, so `then` leaves failures where they are seen: a signal fence). How queue
/// work waits without blocking a thread.
pub fn after(
    wait: Option<&Fence>,
    then: impl FnOnce(Result<(), Diagnostic>) -> Result<(), Diagnostic> + Send + 'static,
) -> Result<(), Diagnostic> {
    let Some(wait) = wait else { return then(Ok(())) };
    match wait.reached() {
        Reached::Yes => then(Ok(())),
        Reached::Failed(e) => then(Err(e)),
        Reached::No => {
            let waited = wait.clone();
            wait.when_reached(move || {
                let outcome = match waited.reached() {
                    Reached::Failed(e) => Err(e),
                    _ => Ok(()),
                };
                let _ = then(outcome);
            });
            Ok(())
        }
    }
}

/// The fence a ref holds, or INVALID_ARGUMENT naming what was there.
pub fn deref(value: &Ref) -> Result<&Fence, Diagnostic> {
    value.downcast::<Fence>().ok_or_else(|| wrong_type("hal.fence", value))
}

/// `fence.query`'s answer: OK, DEFERRED while pending, or the failure's code.
pub fn status_code(reached: &Reached) -> StatusCode {
    match reached {
        Reached::Yes => StatusCode::Ok,
        Reached::No => StatusCode::Deferred,
        Reached::Failed(error) => error.code,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn joins_are_reached_when_every_part_is() {
        let (a, b) = (Fence::new(), Fence::new());
        let joined = Fence::join([&a, &b]);
        let ran = Arc::new(AtomicBool::new(false));
        let flag = ran.clone();
        joined.when_reached(move || flag.store(true, Ordering::SeqCst));
        a.signal();
        assert_eq!(joined.reached(), Reached::No);
        assert!(!ran.load(Ordering::SeqCst));
        b.signal();
        assert_eq!(joined.reached(), Reached::Yes);
        assert!(ran.load(Ordering::SeqCst));
        assert_eq!(status_code(&joined.reached()), StatusCode::Ok);
    }

    #[test]
    fn joins_keep_only_what_is_not_yet_reached() {
        let (done, open, later) = (Fence::new(), Fence::new(), Fence::new());
        done.signal();
        let joined = Fence::join([&done, &open]);
        assert_eq!(joined.points().len(), 1, "the reached point is left out");
        assert_eq!(joined.reached(), Reached::No);
        joined.signal();
        assert_eq!(open.reached(), Reached::Yes, "signalling the join signals what it waits on");

        let all_done = Fence::join([&done, &open]);
        assert_eq!(all_done.reached(), Reached::Yes);
        assert_eq!(Fence::join([]).reached(), Reached::Yes, "nothing to wait for");

        let (a, b) = (Fence::new(), Fence::new());
        let three = Fence::join([&a, &done, &b]);
        assert_eq!(three.points().len(), 2);
        a.signal();
        assert_eq!(three.reached(), Reached::No, "still waits for the second open point");
        b.signal();
        assert_eq!(three.reached(), Reached::Yes);

        let failed = Fence::new();
        failed.fail(&Diagnostic::new(StatusCode::Aborted, "device lost"));
        let with_failure = Fence::join([&done, &failed, &later]);
        assert_eq!(status_code(&with_failure.reached()), StatusCode::Aborted, "a failed point is kept");
        with_failure.signal();
        assert_eq!(later.reached(), Reached::Yes);
        assert_eq!(status_code(&failed.reached()), StatusCode::Aborted, "failed stays failed");
    }

    #[test]
    fn failures_reach_waiters_and_queries() {
        let fence = Fence::new();
        assert_eq!(status_code(&fence.reached()), StatusCode::Deferred);
        fence.fail(&Diagnostic::new(StatusCode::Aborted, "device lost"));
        fence.signal(); // too late: failed stays failed
        assert_eq!(status_code(&fence.reached()), StatusCode::Aborted);
    }
}
