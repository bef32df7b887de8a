//! Tracing: spans of what the runtime does (kernels, VM calls, dispatches), recorded per thread
//! and written as Chrome trace-event JSON when the session ends — what Perfetto and
//! `chrome://tracing` open, and what `rtx profile` sums up.
//!
//! Off, an instrumented point costs one relaxed atomic load ([`is_on`]). On, a span takes the
//! time at its start and end and appends one event to its thread's buffer without a lock (see
//! `buffer`); a thread's first event of a session registers its buffer, the only locked step.
//! One session at a time per process ([`begin`], [`end`]).
//!
//! The same spans also feed TFRT's debug tracing sink, when asked ([`begin_scopes`]): a
//! `Scope:NAME` line as a span of an active [`Level`] opens and `End Scope` as it closes, kept
//! until [`end_scopes`] hands them over (`rtx bef-exec --enable_tracing`).

mod buffer;
mod chrome;
mod clock;
mod event;
mod sampler;
mod track;

use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::{Diagnostic, StatusCode};
use buffer::ThreadBuffer;
use clock::now;
use event::Event;
pub use event::{Args, Text, Value};
pub use track::Track;

/// What is recording: [`CHROME`] and the TFRT scope level (0: none) in the bits above it; the
/// one load every instrumented point pays.
static ON: AtomicU32 = AtomicU32::new(0);

/// The bit of [`ON`] that a Chrome trace session sets.
const CHROME: u32 = 1;

/// TFRT's scope lines while they are asked for.
static SCOPES: Mutex<String> = Mutex::new(String::new());

/// The current session's number (0 before the first): a span of an ended session is not kept.
static SESSION: AtomicU64 = AtomicU64::new(0);

/// The session being recorded, and the buffers of the threads that recorded in it.
static ACTIVE: Mutex<Option<Session>> = Mutex::new(None);

struct Session {
    path: PathBuf,
    number: u64,
    start: u64,
    buffers: Vec<Arc<ThreadBuffer>>,
    sampler: Option<sampler::Sampler>,
}

thread_local! {
    /// This thread's buffer for the session it last recorded in, which the session owns: it is
    /// freed when the session ends, whatever the thread does afterwards.
    static LOCAL: RefCell<Weak<ThreadBuffer>> = const { RefCell::new(Weak::new()) };
    /// This thread's track in every trace: threads numbered from 1 as they first record.
    static TID: u64 = next_track();
}

/// A track's number, new to the process (threads' and [`Track`]s' alike).
fn next_track() -> u64 {
    static TRACKS: AtomicU64 = AtomicU64::new(0);
    TRACKS.fetch_add(1, Ordering::Relaxed) + 1
}

/// What a span is of: its name in a trace (`cat`), and the TFRT tracing level that shows it as
/// a scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    /// What a driver runs: TFRT's `Bef Executor` and `Function: NAME` scopes.
    Driver,
    /// A call a host makes and waits for (`rtx run`'s and `rtx bench`'s), from its start to its
    /// results.
    Call,
    /// A BEF kernel.
    Kernel,
    /// Work a kernel queued to run beside it (a share of a convolution's output, say), named
    /// after the kernel.
    Task,
    /// A VM function call, bytecode or native (the HAL's included).
    Vm,
    /// A dispatch of the CPU devices.
    Dispatch,
    /// A host thread blocked until values are available or work is done (on a queue that runs
    /// work on the waiting thread, `s`, the work's spans nest in it).
    Wait,
    /// A device's run of one submission, timed by the device: its dispatches nest in it.
    Submission,
    /// A sample of counters (its arguments), not a span: a counter event in a trace.
    Counter,
    /// An op run through Core Runtime, eagerly or by `corert.executeop`: TFRT's
    /// `OP#op_handler=HANDLER#` scope.
    Op,
}

impl Category {
    pub fn name(self) -> &'static str {
        match self {
            Category::Driver => "driver",
            Category::Call => "call",
            Category::Kernel => "kernel",
            Category::Task => "task",
            Category::Vm => "vm",
            Category::Dispatch => "dispatch",
            Category::Wait => "wait",
            Category::Submission => "submission",
            Category::Counter => "counter",
            Category::Op => "op",
        }
    }

    /// The level from which TFRT's scope lines show it: the driver's scopes by default, kernels
    /// at `debug`, as TFRT's executor traces them; what TFRT does not trace, never.
    fn level(self) -> Option<Level> {
        match self {
            Category::Driver | Category::Op => Some(Level::Default),
            Category::Kernel => Some(Level::Debug),
            Category::Call
            | Category::Task
            | Category::Vm
            | Category::Dispatch
            | Category::Wait
            | Category::Submission
            | Category::Counter => None,
        }
    }
}

/// TFRT's tracing levels: what `--tracing_level` shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Default = 1,
    Verbose = 2,
    Debug = 3,
}

impl Level {
    /// `default`, `verbose` or `debug`, as TFRT's flag spells them.
    pub fn parse(name: &str) -> Option<Level> {
        match name {
            "default" => Some(Level::Default),
            "verbose" => Some(Level::Verbose),
            "debug" => Some(Level::Debug),
            _ => None,
        }
    }
}

/// Whether spans are being recorded now.
#[inline]
pub fn is_on() -> bool {
    ON.load(Ordering::Relaxed) != 0
}

/// Starts keeping TFRT's scope lines of the spans of `level` and below (instead of any kept
/// until now).
pub fn begin_scopes(level: Level) {
    SCOPES.lock().unwrap_or_else(PoisonError::into_inner).clear();
    let _ = ON.fetch_update(Ordering::Release, Ordering::Relaxed, |on| Some(on & CHROME | (level as u32) << 1));
}

/// Stops keeping scope lines, and returns those kept.
pub fn end_scopes() -> String {
    ON.fetch_and(CHROME, Ordering::Release);
    std::mem::take(&mut *SCOPES.lock().unwrap_or_else(PoisonError::into_inner))
}

/// Appends a scope line when spans of `level` are shown now; whether it did.
fn scope_line(level: Level, line: impl FnOnce() -> String) -> bool {
    if ON.load(Ordering::Relaxed) >> 1 < level as u32 {
        return false;
    }
    let mut scopes = SCOPES.lock().unwrap_or_else(PoisonError::into_inner);
    scopes.push_str(&line());
    scopes.push('\n');
    true
}

/// This thread's track (0 once its locals are being destroyed).
fn tid() -> u64 {
    TID.try_with(|tid| *tid).unwrap_or(0)
}

/// The time on the trace's clock, in nanoseconds: what a [`Track`] of another clock is set
/// against.
pub fn timestamp() -> u64 {
    now()
}

/// The Chrome session recording now (0: none), for what is recorded later on its behalf (a
/// device's timestamps, read once the device is done).
pub fn session() -> u64 {
    if ON.load(Ordering::Relaxed) & CHROME == 0 {
        return 0;
    }
    SESSION.load(Ordering::Relaxed)
}

/// Starts recording, to be written to `path` by [`end`]; `FAILED_PRECONDITION` while a session
/// is active. The file is created now, so that a path that cannot be written fails here.
pub fn begin(path: impl Into<PathBuf>) -> Result<(), Diagnostic> {
    let path = path.into();
    let mut active = ACTIVE.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(session) = active.as_ref() {
        return Err(Diagnostic::new(
            StatusCode::FailedPrecondition,
            format!("tracing is already active (to {}); end it first", session.path.display()),
        ));
    }
    std::fs::File::create(&path).map_err(|error| {
        Diagnostic::new(StatusCode::InvalidArgument, format!("cannot write the trace {}: {error}", path.display()))
    })?;
    clock::calibrate();
    let number = SESSION.fetch_add(1, Ordering::Relaxed) + 1;
    *active = Some(Session { path, number, start: now(), buffers: Vec::new(), sampler: None });
    ON.fetch_or(CHROME, Ordering::Release);
    drop(active);
    // Started once the session is active, so that its first sample is kept.
    let sampler = sampler::Sampler::start(number);
    // (Unless the session ended meanwhile: the sampler then stops as it drops.)
    if let Some(session) = ACTIVE.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
        if session.number == number {
            session.sampler = sampler;
        }
    }
    Ok(())
}

/// What [`end`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// Spans.
    pub events: usize,
    /// Counter samples.
    pub samples: usize,
    /// Events that did not fit a thread's bounded buffer.
    pub dropped: u64,
}

/// Stops recording and writes the session's events; `FAILED_PRECONDITION` when none is active.
/// Spans still open on other threads when it ends are not in the file.
pub fn end() -> Result<Written, Diagnostic> {
    // The counters' last sample is taken while the session is still active.
    let sampler = ACTIVE.lock().unwrap_or_else(PoisonError::into_inner).as_mut().and_then(|s| s.sampler.take());
    drop(sampler);
    let session = {
        let mut active = ACTIVE.lock().unwrap_or_else(PoisonError::into_inner);
        let session = active
            .take()
            .ok_or_else(|| Diagnostic::new(StatusCode::FailedPrecondition, "tracing is not active: nothing to end"))?;
        ON.fetch_and(!CHROME, Ordering::Release);
        session
    };
    let written = chrome::write(&session.path, session.start, &session.buffers).map_err(|error| {
        Diagnostic::new(StatusCode::Internal, format!("writing the trace {}: {error}", session.path.display()))
    })?;
    Ok(Written { events: written.spans, samples: written.samples, dropped: written.dropped })
}

/// An open span: recorded when dropped, if the session it began in is still active. Made by
/// [`span`]; while tracing is off, empty and nothing computed for it, so that an instrumented
/// point costs a load and a test. Held inline: a span allocates nothing.
#[must_use = "a span records the time until it is dropped"]
pub struct Span(Option<Open>);

struct Open {
    /// The Chrome session the span began in (0: none).
    session: u64,
    /// The track of the thread it began on.
    tid: u64,
    /// Whether it opened a TFRT scope line, which its end closes.
    scope: bool,
    start: u64,
    name: Text,
    category: Category,
    args: Args,
}

/// A span of `category` named by `name`, with `args` shown beside it; both closures run only
/// while tracing is on.
#[inline(always)]
pub fn span<N: Into<Text>>(category: Category, name: impl FnOnce() -> N, args: impl FnOnce() -> Args) -> Span {
    let on = ON.load(Ordering::Relaxed);
    if on == 0 {
        return Span(None);
    }
    open(on, category, None, name, args)
}

/// As [`span`], for a span that TFRT's scope lines call `scope` rather than by its name: a BEF
/// kernel named in the trace after the ONNX node it came from is its kernel in those lines, as
/// TFRT's executor names it.
#[inline(always)]
pub fn span_as<N: Into<Text>>(
    category: Category,
    scope: &str,
    name: impl FnOnce() -> N,
    args: impl FnOnce() -> Args,
) -> Span {
    let on = ON.load(Ordering::Relaxed);
    if on == 0 {
        return Span(None);
    }
    open(on, category, Some(scope), name, args)
}

#[cold]
#[inline(never)]
fn open<N: Into<Text>>(
    on: u32,
    category: Category,
    scope: Option<&str>,
    name: impl FnOnce() -> N,
    args: impl FnOnce() -> Args,
) -> Span {
    let name = name().into();
    let scoped = scope.unwrap_or(name.as_str());
    let scope = category.level().is_some_and(|level| scope_line(level, || format!("Scope:{scoped}")));
    let (session, args) = if on & CHROME != 0 { (SESSION.load(Ordering::Relaxed), args()) } else { (0, Args::none()) };
    Span(Some(Open { session, tid: tid(), scope, start: now(), name, category, args }))
}

impl Drop for Span {
    #[inline(always)]
    fn drop(&mut self) {
        if let Some(open) = self.0.take() {
            close(open);
        }
    }
}

#[cold]
#[inline(never)]
fn close(open: Open) {
    let end = now();
    if open.scope {
        scope_line(Level::Default, || "End Scope".to_owned());
    }
    // A span that ends on another thread than it began on (a VM call resumed by another worker
    // after a wait) fits neither thread's track of nested spans: it is left out.
    if open.session != 0 && open.tid == tid() {
        let Open { session, name, category, start, args, .. } = open;
        record(session, Event { name, category, start, end, args });
    }
}

/// Appends `event` to this thread's buffer for `session`, registering a buffer on the thread's
/// first event of the session; dropped when the session has ended.
fn record(session: u64, event: Event) {
    // A span dropped while the thread's locals are being destroyed has no buffer to go to.
    let _ = LOCAL.try_with(|local| {
        let mut local = local.borrow_mut();
        let buffer = match local.upgrade().filter(|buffer| buffer.session == session) {
            Some(buffer) => buffer,
            None => {
                let Some(buffer) = register(session, || ThreadBuffer::new(tid(), thread_name(), session)) else {
                    return;
                };
                *local = Arc::downgrade(&buffer);
                buffer
            }
        };
        buffer.push(event);
    });
}

/// A new buffer for `session`, made by `make` and owned by the session; `None` when the session
/// has ended.
fn register(session: u64, make: impl FnOnce() -> ThreadBuffer) -> Option<Arc<ThreadBuffer>> {
    let mut active = ACTIVE.lock().unwrap_or_else(PoisonError::into_inner);
    let current = active.as_mut().filter(|current| current.number == session)?;
    let buffer = Arc::new(make());
    current.buffers.push(Arc::clone(&buffer));
    Some(buffer)
}

/// The system's name of the calling thread (what `std::thread::Builder::name` set, or the
/// process's name for its first thread), or its track number.
fn thread_name() -> String {
    #[cfg(unix)]
    {
        let mut name = [0 as libc::c_char; 64];
        // SAFETY: the buffer is writable for its length, which is passed; the name written is
        // NUL-terminated within it on success.
        let got = unsafe { libc::pthread_getname_np(libc::pthread_self(), name.as_mut_ptr(), name.len()) };
        if got == 0 {
            // SAFETY: on success the buffer holds a NUL-terminated string.
            let name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) };
            if !name.is_empty() {
                return name.to_string_lossy().into_owned();
            }
        }
    }
    format!("thread {}", tid())
}

#[cfg(test)]
mod tests;
