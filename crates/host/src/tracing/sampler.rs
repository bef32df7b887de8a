//! Counters in a trace: a thread of the session's samples, every [`PERIOD`], the AsyncValues made
//! while tracing that are still alive and the process's resident memory, as counter events on its
//! own track (Perfetto draws each as a graph).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::{record, Args, Category, Event};
use crate::async_value::TRACED_ALIVE;

/// How often the counters are read.
const PERIOD: Duration = Duration::from_millis(10);

/// The sampling thread of a session.
pub(super) struct Sampler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Sampler {
    /// Starts sampling for `session`; `None` where no thread can be started (the trace then has
    /// no counters).
    pub(super) fn start(session: u64) -> Option<Sampler> {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("rtx-trace-count".into())
            .spawn(move || {
                while !stopped.load(Ordering::Acquire) {
                    sample(session);
                    std::thread::sleep(PERIOD);
                }
                sample(session);
            })
            .ok()?;
        Some(Sampler { stop, thread: Some(thread) })
    }
}

impl Drop for Sampler {
    /// Takes a last sample and waits for the thread.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn sample(session: u64) {
    let now = super::now();
    let counter = |name: &'static str, args: Args| Event {
        name: name.into(),
        category: Category::Counter,
        start: now,
        end: now,
        args,
    };
    let alive = TRACED_ALIVE.load(Ordering::Relaxed).max(0) as u64;
    record(session, counter("async values", Args::none().with("alive", alive)));
    if let Some(bytes) = resident_bytes() {
        record(session, counter("memory", Args::none().with("resident bytes", bytes)));
    }
}

/// The process's resident memory, where the system says (Linux's `/proc/self/statm`).
fn resident_bytes() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
        let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
        // SAFETY: sysconf reads a configuration value; it has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        Some(pages * u64::try_from(page).ok()?)
    }
    #[cfg(not(target_os = "linux"))]
    None
}
