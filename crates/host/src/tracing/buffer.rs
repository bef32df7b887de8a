//! A thread's events: appended by that thread alone without a lock, read by the collector at the
//! end of a session while the thread may still be appending. Chunks of events are allocated as
//! they are needed up to a bound; past it an event is dropped and counted, so that a long session
//! costs bounded memory.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::atomic::{AtomicI64, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use super::Event;

/// Events per chunk.
const CHUNK: usize = 4096;

/// Chunks per thread: at most `CHUNK * CHUNKS` (about a million) events a thread per session.
const CHUNKS: usize = 256;

/// Page-aligned, so that its pages can be made present at once (see [`populate`]).
#[repr(C, align(4096))]
struct Chunk([UnsafeCell<MaybeUninit<Event>>; CHUNK]);

/// One thread's (or one [`Track`](super::Track)'s) events of one session.
pub(crate) struct ThreadBuffer {
    pub(crate) tid: u64,
    pub(crate) thread_name: String,
    pub(crate) session: u64,
    /// What to add to the events' times to place them on the trace's clock: 0 for a thread; for
    /// a track of another clock the least bound given, `i64::MAX` before any.
    offset: AtomicI64,
    chunks: Box<[AtomicPtr<Chunk>]>,
    /// Events written and published: slots below it are initialized and never written again.
    len: AtomicUsize,
    dropped: AtomicU64,
}

// SAFETY: the slots are written only by `push`, which one writer at a time calls (the buffer's
// own thread, or the holder of its track's lock; others only read), each slot once, before `len` publishes it with
// Release; readers read only slots below `len` loaded with Acquire. Everything else is atomic.
unsafe impl Sync for ThreadBuffer {}

impl ThreadBuffer {
    pub(crate) fn new(tid: u64, thread_name: String, session: u64) -> ThreadBuffer {
        ThreadBuffer::with_offset(tid, thread_name, session, 0)
    }

    /// The buffer of a track of another clock: its offset is bounded as events come.
    pub(crate) fn for_track(tid: u64, name: String, session: u64) -> ThreadBuffer {
        ThreadBuffer::with_offset(tid, name, session, i64::MAX)
    }

    fn with_offset(tid: u64, thread_name: String, session: u64, offset: i64) -> ThreadBuffer {
        let chunks = (0..CHUNKS).map(|_| AtomicPtr::new(ptr::null_mut())).collect();
        let (offset, len, dropped) = (AtomicI64::new(offset), AtomicUsize::new(0), AtomicU64::new(0));
        ThreadBuffer { tid, thread_name, session, offset, chunks, len, dropped }
    }

    pub(crate) fn bound_offset(&self, offset: i64) {
        self.offset.fetch_min(offset, Ordering::Relaxed);
    }

    /// What places the events on the trace's clock (0 for a track given no bound).
    pub(crate) fn offset(&self) -> i64 {
        match self.offset.load(Ordering::Relaxed) {
            i64::MAX => 0,
            offset => offset,
        }
    }

    /// Appends `event`, or counts it dropped when the buffer is full. Called by one writer at a
    /// time (see the `Sync` impl).
    pub(crate) fn push(&self, event: Event) {
        let index = self.len.load(Ordering::Relaxed);
        if index >= CHUNK * CHUNKS {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let slot = &self.chunks[index / CHUNK];
        let mut chunk = slot.load(Ordering::Relaxed);
        if chunk.is_null() {
            // SAFETY: a chunk is an array of `MaybeUninit` cells, for which uninitialized memory
            // is a valid value (allocated in place: a chunk is too large for some stacks).
            let fresh: Box<Chunk> = unsafe { Box::<Chunk>::new_uninit().assume_init() };
            chunk = Box::into_raw(fresh);
            populate(chunk);
            slot.store(chunk, Ordering::Release);
        }
        // SAFETY: `chunk` is a live chunk of this buffer (freed only when the buffer drops), and
        // slot `index` is above `len`: no reader looks at it, and only this thread writes.
        unsafe { (*(*chunk).0[index % CHUNK].get()).write(event) };
        self.len.store(index + 1, Ordering::Release);
    }

    /// The events published so far, in the order they were appended.
    pub(crate) fn events(&self) -> impl Iterator<Item = &Event> {
        let len = self.len.load(Ordering::Acquire);
        (0..len).map(move |index| {
            let chunk = self.chunks[index / CHUNK].load(Ordering::Acquire);
            // SAFETY: `index` is below the published length, so its chunk was stored before the
            // slot was written and published, and the slot holds an event nobody writes again.
            unsafe { (*(*chunk).0[index % CHUNK].get()).assume_init_ref() }
        })
    }

    /// Events that did not fit.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Makes the chunk's pages present in one call: faulted in one by one as events fill them, they
/// cost a span as much again (a page fault every 50 events, microseconds each on a virtual
/// machine). Advice only: where the kernel cannot, the pages fault in as before.
fn populate(chunk: *mut Chunk) {
    #[cfg(all(target_os = "linux", not(miri)))]
    // SAFETY: the range is the chunk's own allocation, page-aligned by its type; the advice only
    // makes its pages present, writing nothing a reader could see.
    unsafe {
        libc::madvise(chunk.cast(), std::mem::size_of::<Chunk>(), libc::MADV_POPULATE_WRITE);
    }
    #[cfg(not(all(target_os = "linux", not(miri))))]
    let _ = chunk;
}

impl Drop for ThreadBuffer {
    fn drop(&mut self) {
        let len = *self.len.get_mut();
        for (c, slot) in self.chunks.iter_mut().enumerate() {
            let chunk = *slot.get_mut();
            if chunk.is_null() {
                continue;
            }
            // SAFETY: a non-null chunk came from `Box::into_raw` in `push` and is freed only here.
            let mut chunk = unsafe { Box::from_raw(chunk) };
            for cell in chunk.0.iter_mut().take(len.saturating_sub(c * CHUNK)) {
                // SAFETY: the slots below `len` were initialized by `push`; each is dropped once.
                unsafe { cell.get_mut().assume_init_drop() };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn event(n: u64) -> Event {
        Event {
            name: format!("e{n}").into(),
            category: crate::tracing::Category::Kernel,
            start: n,
            end: n + 1,
            args: crate::tracing::Args::none(),
        }
    }

    /// What a reader sees while the owner appends is a prefix of what was appended, across
    /// chunk boundaries; dropping the buffer frees every event (Miri checks for leaks).
    #[test]
    fn a_reader_sees_a_prefix_while_the_owner_appends() {
        let total = if cfg!(miri) { CHUNK as u64 + 10 } else { 5 * CHUNK as u64 };
        let buffer = Arc::new(ThreadBuffer::new(1, "owner".into(), 1));
        let owner = {
            let buffer = Arc::clone(&buffer);
            std::thread::spawn(move || (0..total).for_each(|n| buffer.push(event(n))))
        };
        for _ in 0..3 {
            for (n, seen) in buffer.events().enumerate() {
                assert_eq!(seen.start, n as u64);
            }
        }
        owner.join().unwrap();
        assert_eq!(buffer.events().count() as u64, total);
        assert_eq!(buffer.events().last().unwrap().name.as_str(), format!("e{}", total - 1));
        assert_eq!(buffer.dropped(), 0);
    }
}
