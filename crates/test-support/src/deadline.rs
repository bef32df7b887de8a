//! Deadlines for the tests that wait on other threads: a lost wake-up or a deadlock then fails
//! the test with a message saying what did not finish, instead of hanging the run until CI's
//! time runs out with nothing said.

use std::sync::{mpsc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a wait may take before it counts as a hang: far beyond what any of these tests needs
/// on a loaded 2-core machine (seconds), so reaching it means something never happened.
pub const DEADLINE: Duration = Duration::from_secs(120);

/// Spins (yielding) until `done` holds; fails naming `what` if it does not within [`DEADLINE`].
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < DEADLINE, "{what}: still not so after {DEADLINE:?} (a hang)");
        std::thread::yield_now();
    }
}

/// Runs `body` on a thread of its own and returns what it returns; fails naming `what` if it has
/// not ended within [`DEADLINE`] (the thread is left behind: the test binary ends without it).
/// A panic of `body` is the caller's panic.
pub fn within_deadline<T: Send + 'static>(what: &str, body: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, ended) = mpsc::channel::<()>();
    let thread = std::thread::Builder::new()
        .name(what.to_owned())
        .spawn(move || {
            // Dropped when `body` returns or unwinds: either way the wait below ends.
            let _done = done;
            body()
        })
        .expect("a thread for the test body");
    if let Err(mpsc::RecvTimeoutError::Timeout) = ended.recv_timeout(DEADLINE) {
        panic!("{what}: not ended after {DEADLINE:?} (a hang)");
    }
    match thread.join() {
        Ok(value) => value,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// A `std::sync::Barrier` for one meeting of `count` threads, with the deadline: a thread that
/// never arrives fails the others' waits instead of hanging them.
pub struct Meeting {
    count: usize,
    arrived: Mutex<usize>,
    all_here: Condvar,
}

impl Meeting {
    pub fn new(count: usize) -> Meeting {
        Meeting { count, arrived: Mutex::new(0), all_here: Condvar::new() }
    }

    /// Arrives, and waits until all `count` have.
    pub fn wait(&self) {
        let mut arrived = self.arrived.lock().unwrap_or_else(PoisonError::into_inner);
        *arrived += 1;
        self.all_here.notify_all();
        let (arrived, waited) = self
            .all_here
            .wait_timeout_while(arrived, DEADLINE, |arrived| *arrived < self.count)
            .unwrap_or_else(PoisonError::into_inner);
        assert!(!waited.timed_out(), "only {} of {} threads met within {DEADLINE:?} (a hang)", *arrived, self.count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_that_ends_gives_its_value_and_its_panic() {
        assert_eq!(within_deadline("adds", || 2 + 2), 4);
        let panic = std::panic::catch_unwind(|| within_deadline("panics", || panic!("its own message")));
        assert_eq!(panic.unwrap_err().downcast_ref::<&str>(), Some(&"its own message"));
        let mut polls = 0;
        wait_until("the third poll", || {
            polls += 1;
            polls == 3
        });
        assert_eq!(polls, 3);
    }

    #[test]
    fn a_meeting_lets_everyone_go_once_all_have_arrived() {
        let meeting = std::sync::Arc::new(Meeting::new(3));
        let others: Vec<_> = (0..2)
            .map(|_| {
                let meeting = std::sync::Arc::clone(&meeting);
                std::thread::spawn(move || meeting.wait())
            })
            .collect();
        meeting.wait();
        others.into_iter().for_each(|thread| thread.join().unwrap());
        assert_eq!(*meeting.arrived.lock().unwrap(), 3);
    }
}
