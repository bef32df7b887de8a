//! The non-blocking pool's deques: crossbeam-deque's, except under Miri.
//!
//! crossbeam-deque frees its buffers through crossbeam-epoch, which Miri cannot check as is: its
//! intrusive lists break the default Stacked Borrows model, and its global garbage, reachable
//! only through integers, reads as leaks (crossbeam tests itself with Tree Borrows; upstream
//! issue crossbeam-rs/crossbeam#545). So under Miri a mutex-guarded stand-in with the same
//! interface takes its place: Miri then checks what is ours (the parking protocol, the task
//! accounting, shutdown), with its default model and its leak checker on, and crossbeam's own
//! Miri runs cover crossbeam. `Steal` is crossbeam's either way; it is a plain enum.

pub(super) use crossbeam_deque::Steal;
#[cfg(not(miri))]
pub(super) use crossbeam_deque::{Injector, Stealer, Worker};
#[cfg(miri)]
pub(super) use stand_in::{Injector, Stealer, Worker};

#[cfg(miri)]
mod stand_in {
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

    use super::Steal;

    fn lock<T>(queue: &Mutex<VecDeque<T>>) -> MutexGuard<'_, VecDeque<T>> {
        queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the oldest item and, like crossbeam, moves about half of the rest to `dest`. The
    /// source lock is released before `dest`'s is taken, so two workers stealing from each other
    /// cannot deadlock.
    fn steal_half<T>(source: &Mutex<VecDeque<T>>, dest: &Worker<T>) -> Steal<T> {
        let (first, batch) = {
            let mut source = lock(source);
            let Some(first) = source.pop_front() else { return Steal::Empty };
            let take = source.len() / 2;
            (first, source.drain(..take).collect::<Vec<T>>())
        };
        lock(&dest.0).extend(batch);
        Steal::Success(first)
    }

    /// LIFO for its owner, as `crossbeam_deque::Worker::new_lifo`: the owner pushes and pops at
    /// the back, thieves take from the front.
    pub struct Worker<T>(Arc<Mutex<VecDeque<T>>>);

    impl<T> Worker<T> {
        pub fn new_lifo() -> Worker<T> {
            Worker(Arc::new(Mutex::new(VecDeque::new())))
        }

        pub fn stealer(&self) -> Stealer<T> {
            Stealer(Arc::clone(&self.0))
        }

        pub fn push(&self, item: T) {
            lock(&self.0).push_back(item);
        }

        pub fn pop(&self) -> Option<T> {
            lock(&self.0).pop_back()
        }
    }

    pub struct Stealer<T>(Arc<Mutex<VecDeque<T>>>);

    impl<T> Stealer<T> {
        pub fn steal_batch_and_pop(&self, dest: &Worker<T>) -> Steal<T> {
            steal_half(&self.0, dest)
        }
    }

    pub struct Injector<T>(Mutex<VecDeque<T>>);

    impl<T> Injector<T> {
        pub fn new() -> Injector<T> {
            Injector(Mutex::new(VecDeque::new()))
        }

        pub fn push(&self, item: T) {
            lock(&self.0).push_back(item);
        }

        pub fn steal_batch_and_pop(&self, dest: &Worker<T>) -> Steal<T> {
            steal_half(&self.0, dest)
        }
    }
}
