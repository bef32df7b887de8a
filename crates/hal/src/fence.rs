//! `!hal.fence`: a set of points on device timelines, built on AsyncValue. Each point is a value
//! (a chain) that becomes available when the queue work it stands for is done (or an error when
//! that work failed); waiting is `run_when_ready`, never a blocked worker. A point may be a C
//! host's own promise, which is how `coarse-fences` calls surface their fences as async values.
//!
//! A new fence makes its point only when something needs one (a waiter, a clone or a join of a
//! fence not yet reached): a fence signalled first, as every fence of an inline queue is, makes
//! none unless asked for its points (then an available one). Clones and joins of such fences are
//! new fences reached already, with no point either.

use std::any::Any;
use std::cell::Cell;
use std::sync::atomic::{fence as memory_fence, AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use super::buffer::wrong_type;
use rtx_host::{block_until_ready, run_when_ready, AsyncValueRef, Chain, Diagnostic, RcAsyncValue, StatusCode};
use rtx_vm::refs::{Ref, RefObject};

/// A HAL fence. Clones share the points (queue work keeps its fences this way).
#[derive(Debug)]
pub struct Fence {
    points: Points,
}

/// A fence's points: most fences have one, kept inline (no allocation beyond the point's own).
#[derive(Debug)]
enum Points {
    /// A new fence's one point, not made yet.
    Later(Later),
    One(RcAsyncValue),
    Many(Arc<[RcAsyncValue]>),
}

/// The point of a new fence, made when first needed. Signalling before then only sets
/// `signalled`; whoever makes the point afterwards sets it reached. Each side writes its part,
/// then (after a sequentially consistent fence) reads the other's, so at least one of them sees
/// both and the point cannot be left unreached.
#[derive(Debug, Default)]
struct Later {
    point: OnceLock<RcAsyncValue>,
    signalled: AtomicBool,
}

impl Later {
    /// Whether the fence was signalled while nothing had made its point: reached, for good.
    fn reached_without_point(&self) -> bool {
        self.point.get().is_none() && self.signalled.load(Ordering::Acquire)
    }

    fn point(&self) -> &RcAsyncValue {
        let point = self.point.get_or_init(|| AsyncValueRef::<Chain>::unconstructed().into_untyped());
        memory_fence(Ordering::SeqCst);
        if self.signalled.load(Ordering::Relaxed) && !point.is_available() {
            // A point failed or signalled in between stays as it was set.
            let _ = point.emplace(Chain);
        }
        point
    }

    fn signal(&self) {
        self.signalled.store(true, Ordering::Relaxed);
        memory_fence(Ordering::SeqCst);
        if let Some(point) = self.point.get() {
            if !point.is_available() {
                let _ = point.emplace(Chain);
            }
        }
    }
}

impl Clone for Fence {
    /// A clone of a new fence shares its point, which is made for it, unless the fence is reached
    /// already: then the clone is a new reached fence (nothing can change either any more).
    fn clone(&self) -> Fence {
        let points = match &self.points {
            Points::Later(later) if later.reached_without_point() => return Fence::reached_already(),
            Points::Later(later) => Points::One(later.point().clone()),
            Points::One(point) => Points::One(point.clone()),
            Points::Many(points) => Points::Many(points.clone()),
        };
        Fence { points }
    }
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
    /// One new, unsignaled point (`hal.fence.create`), made when first needed.
    pub fn new() -> Fence {
        Fence { points: Points::Later(Later::default()) }
    }

    /// A fence with one point that someone else made: reached when `point` is available (failed
    /// if it is an error), and signaling it sets it to a chain. A C host passes its promises
    /// this way; whether they can take a chain is checked by the caller.
    pub fn from_point(point: RcAsyncValue) -> Fence {
        Fence { points: Points::One(point) }
    }

    /// A fence reached from the start: what a join of reached fences is.
    fn reached_already() -> Fence {
        Fence { points: Points::Later(Later { point: OnceLock::new(), signalled: AtomicBool::new(true) }) }
    }

    /// A fence that is reached when all of `fences` are (`hal.fence.join`).
    ///
    /// Points already reached add nothing to the condition, and signalling or failing a fence
    /// skips them, so the join keeps only the others, and is a new reached fence when none is
    /// left: on an inline queue the fences a program joins are mostly reached by then, and such
    /// a join allocates nothing.
    pub fn join<'a>(fences: impl IntoIterator<Item = &'a Fence>) -> Fence {
        let mut fences = fences.into_iter();
        let (first, second) = match (fences.next(), fences.next()) {
            (Some(only), None) => return only.clone(),
            pair => pair,
        };
        let mut open = first
            .into_iter()
            .chain(second)
            .chain(fences)
            .filter(|fence| !matches!(&fence.points, Points::Later(later) if later.reached_without_point()))
            .flat_map(Fence::points)
            .filter(|point| !point.is_concrete());
        let points = match (open.next(), open.next()) {
            (None, _) => return Fence::reached_already(),
            (Some(only), None) => Points::One(only.clone()),
            (Some(first), Some(second)) => Points::Many([first, second].into_iter().chain(open).cloned().collect()),
        };
        Fence { points }
    }

    /// Marks every point reached (`hal.fence.signal`, and queue work completing).
    pub fn signal(&self) {
        if let Points::Later(later) = &self.points {
            return later.signal();
        }
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
            Points::Later(later) => std::slice::from_ref(later.point()),
            Points::One(point) => std::slice::from_ref(point),
            Points::Many(points) => points,
        }
    }

    /// Whether every point is reached, or the first failure.
    pub fn reached(&self) -> Reached {
        if let Points::Later(later) = &self.points {
            match later.point.get() {
                None if later.signalled.load(Ordering::Acquire) => return Reached::Yes,
                None => return Reached::No,
                Some(_) => {}
            }
        }
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
        note_wait();
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

/// The fences of one context's `hal` module, handed out again by `fence.create` and `fence.join`
/// once nothing else holds them: a program makes several per call, and a recycled one costs no
/// allocation. It is the module state's, and goes with it.
#[derive(Debug, Default)]
pub struct Pool {
    fences: Vec<Arc<Fence>>,
    /// Where the search for an idle fence starts: after the one handed out last, so fences
    /// dropped in the order they were made are found at once.
    next: usize,
}

impl Pool {
    /// The most fences listed; past it, new fences are not listed (they go with their last
    /// holder).
    pub const LIMIT: usize = 64;

    /// `fence` as a ref, in a listed fence object nothing else holds where there is one.
    pub fn make(&mut self, fence: Fence) -> Ref {
        let count = self.fences.len();
        let start = self.next.min(count);
        for index in (start..count).chain(0..start) {
            let listed = &mut self.fences[index];
            // The count first: a fence in use is passed over without a write.
            if Arc::strong_count(listed) == 1 {
                if let Some(idle) = Arc::get_mut(listed) {
                    *idle = fence;
                    self.next = index + 1;
                    return Ref::Object(listed.clone());
                }
            }
        }
        let made = Arc::new(fence);
        if count < Self::LIMIT {
            self.fences.push(made.clone());
            self.next = count + 1;
        }
        Ref::Object(made)
    }
}

thread_local! {
    /// Whether this thread has waited on a fence since it last asked [`waited_since_asked`]. A
    /// new thread counts as having waited.
    static WAITED: Cell<bool> = const { Cell::new(true) };
}

/// Notes that the calling thread waits on fences (`hal.fence.await`, [`Fence::wait`]).
pub fn note_wait() {
    WAITED.set(true);
}

/// Whether the calling thread has waited on a fence since it last asked. A queue asks as work is
/// submitted: a thread that submits again without having waited goes on recording while its work
/// runs, and its next work may run on another thread meanwhile.
pub fn waited_since_asked() -> bool {
    WAITED.replace(false)
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
#[inline]
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

    #[test]
    fn a_fence_signalled_before_anything_waits_on_it_makes_no_point() {
        let (a, b) = (Fence::new(), Fence::new());
        assert_eq!(a.reached(), Reached::No);
        a.signal();
        b.signal();
        assert_eq!(a.reached(), Reached::Yes);
        let unmade = |fence: &Fence| matches!(&fence.points, Points::Later(later) if later.point.get().is_none());
        assert!(unmade(&a) && unmade(&b), "signalling and asking whether reached make no point");
        assert!(a.points()[0].is_available() && !a.points()[0].is_error(), "asked for, it is made reached");
        a.fail(&Diagnostic::new(StatusCode::Aborted, "too late"));
        assert_eq!(a.reached(), Reached::Yes, "reached stays reached");
        assert_eq!(a.clone().reached(), Reached::Yes);
        assert_eq!(Fence::join([&a, &b]).reached(), Reached::Yes);
        let ran = Arc::new(AtomicBool::new(false));
        let flag = ran.clone();
        a.when_reached(move || flag.store(true, Ordering::SeqCst));
        assert!(ran.load(Ordering::SeqCst), "a waiter on a reached fence runs at once");
    }

    #[test]
    fn a_new_fences_point_made_for_a_waiter_or_a_clone_is_reached_by_its_signal() {
        let fence = Fence::new();
        let clone = fence.clone();
        let ran = Arc::new(AtomicBool::new(false));
        let flag = ran.clone();
        fence.when_reached(move || flag.store(true, Ordering::SeqCst));
        assert_eq!(clone.reached(), Reached::No);
        fence.signal();
        assert!(ran.load(Ordering::SeqCst));
        assert_eq!(clone.reached(), Reached::Yes, "the clone shares the point");
        assert!(clone.points()[0].ptr_eq(&fence.points()[0]));

        let failed = Fence::new();
        let waiter = failed.clone();
        failed.fail(&Diagnostic::new(StatusCode::Aborted, "device lost"));
        failed.signal();
        assert_eq!(status_code(&waiter.reached()), StatusCode::Aborted, "failed stays failed");
        let unwatched = Fence::new();
        unwatched.fail(&Diagnostic::new(StatusCode::DataLoss, "lost"));
        assert_eq!(status_code(&unwatched.reached()), StatusCode::DataLoss, "a failure makes the point");
    }

    #[test]
    fn joins_and_clones_of_fences_signalled_without_a_point_make_none() {
        let (a, b, open) = (Fence::new(), Fence::new(), Fence::new());
        a.signal();
        b.signal();
        let unmade = |fence: &Fence| matches!(&fence.points, Points::Later(later) if later.point.get().is_none());
        let (joined, clone) = (Fence::join([&a, &b]), a.clone());
        assert!([&a, &b, &joined, &clone].into_iter().all(unmade), "no point anywhere");
        assert_eq!((joined.reached(), clone.reached()), (Reached::Yes, Reached::Yes));
        joined.fail(&Diagnostic::new(StatusCode::Aborted, "too late"));
        assert_eq!(joined.reached(), Reached::Yes, "a reached join stays reached");
        let waits = Fence::join([&a, &open, &b]);
        assert_eq!(waits.points().len(), 1, "only the open fence's point");
        assert_eq!(waits.reached(), Reached::No);
        open.signal();
        assert_eq!(waits.reached(), Reached::Yes);
    }

    fn address(value: &Ref) -> *const Fence {
        deref(value).unwrap()
    }

    #[test]
    fn a_pooled_fence_is_handed_out_again_only_once_nothing_holds_it_and_starts_unreached() {
        let mut pool = Pool::default();
        let first = pool.make(Fence::new());
        let at = address(&first);
        deref(&first).unwrap().signal();
        let second = pool.make(Fence::new());
        assert_ne!(address(&second), at, "a fence still held is not handed out again");
        let held = first.clone();
        drop(first);
        assert_ne!(address(&pool.make(Fence::new())), at, "a clone of the ref holds it too");
        drop(held);
        let again = pool.make(Fence::new());
        assert_eq!(address(&again), at, "the fence object is recycled");
        assert_eq!(deref(&again).unwrap().reached(), Reached::No, "as the new fence it was made for");
        drop(second);
    }

    #[test]
    fn a_waiter_on_a_recycled_fences_old_point_is_not_reached_by_its_new_use() {
        let mut pool = Pool::default();
        let old = pool.make(Fence::new());
        let at = address(&old);
        let flag = Arc::new(AtomicBool::new(false));
        let waiter = deref(&old).unwrap().clone();
        let seen = flag.clone();
        deref(&old).unwrap().when_reached(move || seen.store(true, Ordering::SeqCst));
        drop(old);
        let new = pool.make(Fence::new());
        assert_eq!(address(&new), at);
        deref(&new).unwrap().signal();
        assert_eq!(waiter.reached(), Reached::No, "the old point is not the new fence's");
        assert!(!flag.load(Ordering::SeqCst));
        waiter.signal();
        assert!(flag.load(Ordering::SeqCst), "the old point is still the old fence's");
    }

    #[test]
    fn past_the_limit_new_fences_are_not_listed() {
        let mut pool = Pool::default();
        let held: Vec<Ref> = (0..=Pool::LIMIT).map(|_| pool.make(Fence::new())).collect();
        assert_eq!(pool.fences.len(), Pool::LIMIT);
        let unlisted = address(&held[Pool::LIMIT]);
        let listed = address(&held[3]);
        drop(held);
        let made: Vec<Ref> = (0..Pool::LIMIT).map(|_| pool.make(Fence::new())).collect();
        let addresses: Vec<*const Fence> = made.iter().map(address).collect();
        assert!(addresses.contains(&listed) && !addresses.contains(&unlisted), "the listed ones, all recycled");
    }

    /// A waiter arriving on another thread while the fence is signalled always runs: whichever
    /// side comes second sees the other's write.
    #[test]
    fn a_signal_racing_a_new_waiter_is_never_lost() {
        for _ in 0..2000 {
            let fence = Arc::new(Fence::new());
            let ran = Arc::new(AtomicBool::new(false));
            let (waiting, flag) = (fence.clone(), ran.clone());
            let waiter = std::thread::spawn(move || waiting.when_reached(move || flag.store(true, Ordering::SeqCst)));
            fence.signal();
            waiter.join().unwrap();
            assert!(ran.load(Ordering::SeqCst));
            assert_eq!(fence.reached(), Reached::Yes);
        }
    }
}
