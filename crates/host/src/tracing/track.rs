//! Tracks of their own for work that no host thread runs — a device queue's — timed by another
//! clock (the device's timestamps). Events are recorded by whoever learns of them, once the
//! device is done, in that clock's nanoseconds; the trace places them by the clock's offset from
//! its own, bounded as events arrive (see [`Track::bound_offset`]).

use std::sync::{Arc, Mutex, PoisonError, Weak};

use super::buffer::ThreadBuffer;
use super::{next_track, register, Args, Category, Event, Text};

/// A track named for what runs on it ("Vulkan queue").
pub struct Track {
    tid: u64,
    name: String,
    /// The buffer of the session last recorded in, which the session owns. Events are appended
    /// under the lock: the buffer has one writer at a time.
    current: Mutex<Weak<ThreadBuffer>>,
}

impl Track {
    pub fn new(name: impl Into<String>) -> Track {
        Track { tid: next_track(), name: name.into(), current: Mutex::new(Weak::new()) }
    }

    /// Records a span of `session` (what [`super::session`] said when the work was started;
    /// nothing once it has ended) from `start` to `end` on the track's clock.
    pub fn record(&self, session: u64, category: Category, name: Text, args: Args, start: u64, end: u64) {
        self.with_buffer(session, |buffer| buffer.push(Event { name, category, start, end, args }));
    }

    /// Says that the track's clock plus `offset` nanoseconds is at most the trace's clock (an
    /// event seen done on the trace's clock at `t` that ended at `e` on the track's gives
    /// `t - e`): the trace places the session's events by the least offset given, the closest to
    /// the true one.
    pub fn bound_offset(&self, session: u64, offset: i64) {
        self.with_buffer(session, |buffer| buffer.bound_offset(offset));
    }

    fn with_buffer(&self, session: u64, use_buffer: impl FnOnce(&ThreadBuffer)) {
        if session == 0 {
            return;
        }
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        let buffer = match current.upgrade().filter(|buffer| buffer.session == session) {
            Some(buffer) => buffer,
            None => {
                let make = || ThreadBuffer::for_track(self.tid, self.name.clone(), session);
                let Some(buffer) = register(session, make) else { return };
                *current = Arc::downgrade(&buffer);
                buffer
            }
        };
        use_buffer(&buffer);
    }
}
