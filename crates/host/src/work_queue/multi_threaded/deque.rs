//! The non-blocking pool's deques: one mutex-guarded `VecDeque` per worker, plus an injector for
//! tasks from outside the pool.
//!
//! Why not a lock-free Chase-Lev deque (crossbeam-deque)? Its buffers are reclaimed through
//! crossbeam-epoch, whose global lists stay allocated behind tagged pointers at exit: a C host
//! that runs valgrind on its program sees "possibly lost" blocks it cannot fix, and Miri could
//! only check a stand-in. A per-worker mutex is uncontended except while a thief steals (TFRT's
//! deques also take a mutex for outside pushes and steals), tasks are coarse next to a lock, and
//! this way Miri and valgrind check the code that ships.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

fn lock<T>(queue: &Mutex<VecDeque<T>>) -> MutexGuard<'_, VecDeque<T>> {
    queue.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Takes the oldest item and moves about half of the rest to `dest`, so a thief does not come
/// back for every task. The source lock is released before `dest`'s is taken: two workers
/// stealing from each other cannot deadlock.
fn steal_half<T>(source: &Mutex<VecDeque<T>>, dest: &Worker<T>) -> Option<T> {
    let (first, batch) = {
        let mut source = lock(source);
        let first = source.pop_front()?;
        let take = source.len() / 2;
        (first, source.drain(..take).collect::<Vec<T>>())
    };
    if !batch.is_empty() {
        lock(&dest.0).extend(batch);
    }
    Some(first)
}

/// A worker's own deque: LIFO for its owner (a task's children run next, while their inputs are
/// in cache), FIFO for thieves (they take the oldest work, the likeliest to be large).
pub(super) struct Worker<T>(Arc<Mutex<VecDeque<T>>>);

impl<T> Worker<T> {
    pub(super) fn new_lifo() -> Worker<T> {
        Worker(Arc::new(Mutex::new(VecDeque::new())))
    }

    pub(super) fn stealer(&self) -> Stealer<T> {
        Stealer(Arc::clone(&self.0))
    }

    pub(super) fn push(&self, item: T) {
        lock(&self.0).push_back(item);
    }

    pub(super) fn pop(&self) -> Option<T> {
        lock(&self.0).pop_back()
    }
}

/// Another worker's handle on a deque, for stealing.
pub(super) struct Stealer<T>(Arc<Mutex<VecDeque<T>>>);

impl<T> Stealer<T> {
    pub(super) fn steal_batch_and_pop(&self, dest: &Worker<T>) -> Option<T> {
        steal_half(&self.0, dest)
    }
}

/// Tasks added from outside the pool, taken FIFO by whichever worker looks first.
pub(super) struct Injector<T>(Mutex<VecDeque<T>>);

impl<T> Injector<T> {
    pub(super) fn new() -> Injector<T> {
        Injector(Mutex::new(VecDeque::new()))
    }

    pub(super) fn push(&self, item: T) {
        lock(&self.0).push_back(item);
    }

    pub(super) fn steal_batch_and_pop(&self, dest: &Worker<T>) -> Option<T> {
        steal_half(&self.0, dest)
    }
}
