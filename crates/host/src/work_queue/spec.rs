//! The config string that picks a work queue (`s`, `mstd`, `mstd:N`, `mstd:N,M`), as TFRT's
//! `bef_executor --work_queue_type` spells it.
//!
//! Parsing is strict on purpose: a typo such as `mstd:8 ` or `mstd:0` would otherwise give a
//! silently different (or deadlocking) queue, so anything that is not exactly one of the accepted
//! forms is an INVALID_ARGUMENT that quotes the string and lists what is accepted.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use super::{MultiThreadedWorkQueue, SingleThreadedWorkQueue, WorkQueue};
use crate::diagnostic::{Diagnostic, StatusCode};

/// The most non-blocking workers a spec may ask for; more than this is a typo, not a machine.
pub const MAX_WORKERS: usize = 1024;
/// The most blocking threads a spec may ask for.
pub const MAX_BLOCKING_THREADS: usize = 4096;
/// Blocking threads when the spec does not say (TFRT's default).
pub const DEFAULT_BLOCKING_THREADS: usize = 256;

const ACCEPTED: &str = "accepted: \"s\", \"mstd\", \"mstd:N\" or \"mstd:N,M\" with N workers in 1..=1024 \
                        (default: one per core) and M blocking threads in 1..=4096 (default 256)";

/// A parsed work queue config string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WorkQueueSpec {
    /// `s`: no threads; the host thread runs tasks while it waits.
    SingleThreaded,
    /// `mstd[:N[,M]]`: N non-blocking workers and at most M blocking threads.
    MultiThreaded { workers: usize, blocking_threads: usize },
}

impl WorkQueueSpec {
    /// Parses a config string; see the module documentation for what is accepted.
    pub fn parse(spec: &str) -> Result<WorkQueueSpec, Diagnostic> {
        let invalid = |why: &str| {
            Diagnostic::new(StatusCode::InvalidArgument, format!("invalid work queue spec {spec:?}: {why}; {ACCEPTED}"))
        };
        if spec == "s" {
            return Ok(WorkQueueSpec::SingleThreaded);
        }
        if spec == "mstd" {
            return Ok(WorkQueueSpec::MultiThreaded {
                workers: default_workers(),
                blocking_threads: DEFAULT_BLOCKING_THREADS,
            });
        }
        let Some(args) = spec.strip_prefix("mstd:") else {
            return Err(invalid("unknown queue name"));
        };
        let mut parts = args.split(',');
        let workers = parse_count(parts.next().unwrap_or(""), MAX_WORKERS)
            .ok_or_else(|| invalid("N (workers) must be an integer in 1..=1024"))?;
        let blocking_threads = match parts.next() {
            None => DEFAULT_BLOCKING_THREADS,
            Some(text) => parse_count(text, MAX_BLOCKING_THREADS)
                .ok_or_else(|| invalid("M (blocking threads) must be an integer in 1..=4096"))?,
        };
        if parts.next().is_some() {
            return Err(invalid("too many arguments"));
        }
        Ok(WorkQueueSpec::MultiThreaded { workers, blocking_threads })
    }

    /// Builds the queue this spec describes, starting its worker threads. Fails only if the OS
    /// refuses a thread (RESOURCE_EXHAUSTED), or for counts that `parse` would not produce.
    pub fn create(self) -> Result<Arc<dyn WorkQueue>, Diagnostic> {
        Ok(match self {
            WorkQueueSpec::SingleThreaded => Arc::new(SingleThreadedWorkQueue::new()),
            WorkQueueSpec::MultiThreaded { workers, blocking_threads } => {
                Arc::new(MultiThreadedWorkQueue::try_new(workers, blocking_threads)?)
            }
        })
    }
}

impl FromStr for WorkQueueSpec {
    type Err = Diagnostic;
    fn from_str(spec: &str) -> Result<WorkQueueSpec, Diagnostic> {
        WorkQueueSpec::parse(spec)
    }
}

/// The canonical form, with defaults spelled out (`mstd:8,256`): what a log should record.
impl fmt::Display for WorkQueueSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkQueueSpec::SingleThreaded => f.write_str("s"),
            WorkQueueSpec::MultiThreaded { workers, blocking_threads } => {
                write!(f, "mstd:{workers},{blocking_threads}")
            }
        }
    }
}

/// Parses and builds a queue in one step: what a C host's `rtx_host_context_create` calls.
pub fn create_work_queue(spec: &str) -> Result<Arc<dyn WorkQueue>, Diagnostic> {
    WorkQueueSpec::parse(spec)?.create()
}

/// One worker per core the OS lets us use (cgroup quotas included), within the accepted range.
fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, MAX_WORKERS)
}

/// Digits only: `str::parse` would also take `+4`, which no spec should contain.
fn parse_count(text: &str, max: usize) -> Option<usize> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<usize>().ok().filter(|n| (1..=max).contains(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn multi(workers: usize, blocking_threads: usize) -> WorkQueueSpec {
        WorkQueueSpec::MultiThreaded { workers, blocking_threads }
    }

    /// The awaiting thread is woken by a waiter attached after the host's continuation, and
    /// waiters run in the order attached: the continuation has run when the await returns. The
    /// value is set well after the await starts waiting (an await that starts after the set
    /// returns at once); Miri's scheduler keeps no such timing, so there only the queue that
    /// runs its work inside the await is checked.
    #[test]
    fn a_continuation_attached_before_an_await_has_run_when_the_await_returns() {
        use crate::async_value::AsyncValueRef;
        use std::sync::atomic::{AtomicUsize, Ordering};
        let specs: &[&str] = if cfg!(miri) { &["s"] } else { &["s", "mstd:2"] };
        for &spec in specs {
            let queue = create_work_queue(spec).unwrap();
            let value = AsyncValueRef::<u32>::unconstructed();
            let ran = Arc::new(AtomicUsize::new(0));
            let counter = Arc::clone(&ran);
            value.and_then(move || {
                std::thread::sleep(std::time::Duration::from_millis(30));
                counter.fetch_add(1, Ordering::SeqCst);
            });
            let setter = {
                let value = value.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(std::time::Duration::from_millis(200));
                    value.emplace(7).unwrap();
                })
            };
            queue.await_values(&[value.clone().into_untyped()]).unwrap();
            assert_eq!(ran.load(Ordering::SeqCst), 1, "{spec}");
            setter.join().unwrap();
        }
    }

    #[test]
    fn accepts_every_documented_form() {
        assert_eq!(WorkQueueSpec::parse("s"), Ok(WorkQueueSpec::SingleThreaded));
        assert_eq!(WorkQueueSpec::parse("mstd"), Ok(multi(default_workers(), 256)));
        assert_eq!(WorkQueueSpec::parse("mstd:1"), Ok(multi(1, 256)));
        assert_eq!(WorkQueueSpec::parse("mstd:4"), Ok(multi(4, 256)));
        assert_eq!(WorkQueueSpec::parse("mstd:1024"), Ok(multi(1024, 256)));
        assert_eq!(WorkQueueSpec::parse("mstd:3,1"), Ok(multi(3, 1)));
        assert_eq!(WorkQueueSpec::parse("mstd:2,4096"), Ok(multi(2, 4096)));
        assert_eq!("mstd:07,8".parse::<WorkQueueSpec>(), Ok(multi(7, 8)));
    }

    #[test]
    fn rejects_everything_else_with_invalid_argument_quoting_the_spec() {
        let bad = [
            "",
            "x",
            "S",
            "s:1",
            " s",
            "s ",
            "mstd:",
            "mstd:0",
            "mstd:1025",
            "mstd:a",
            "mstd:a,b",
            "mstd:1,2,3",
            "mstd:1,",
            "mstd:,4",
            "mstd:1,0",
            "mstd:1,4097",
            "mstd: 1",
            "mstd:1 ",
            "mstd:+1",
            "mstd:-1",
            "mstd:99999999999999999999999",
            "mstd1",
            "mstd::1",
        ];
        for spec in bad {
            let error = WorkQueueSpec::parse(spec).expect_err(spec);
            assert_eq!(error.code, StatusCode::InvalidArgument, "{spec:?}");
            assert!(error.message.contains(&format!("{spec:?}")), "{spec:?}: {}", error.message);
            assert!(error.message.contains("accepted: \"s\", \"mstd\""), "{spec:?}: {}", error.message);
            assert!(create_work_queue(spec).is_err(), "{spec:?}");
        }
    }

    #[test]
    fn display_round_trips() {
        for spec in [WorkQueueSpec::SingleThreaded, multi(3, 7), multi(1, 4096)] {
            assert_eq!(WorkQueueSpec::parse(&spec.to_string()), Ok(spec));
        }
    }

    #[test]
    fn create_builds_the_named_queue() {
        let single = create_work_queue("s").unwrap();
        assert_eq!(single.name(), "s");
        assert_eq!(single.parallelism_level(), 1);
        let pool = create_work_queue("mstd:2,3").unwrap();
        assert_eq!(pool.name(), "mstd");
        assert_eq!(pool.parallelism_level(), 2);
    }
}
