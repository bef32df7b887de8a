//! `tfrt_test.benchmark`: runs a one-result function again and again (each run in a task, the
//! next one once the previous result is available) until `max_count` timed runs or
//! `duration_secs` of wall time, after `num_warmup_runs` untimed ones, then prints TFRT's `BM:`
//! summary: total wall time, run count, wall and CPU time percentiles, CPU utilization.
//! Attributes, in name order: `duration_secs`, `max_count`, `name`, `num_warmup_runs`.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::function::ProgramFunction;
use crate::library::print::c_exponent;
use crate::{ExecutionContext, KernelError, KernelFrame, KernelRegistry};
use rtx_host::{AsyncValueRef, Chain, RcAsyncValue};

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("tfrt_test.benchmark", benchmark);
}

/// CPU time this process has used.
fn process_cpu_time() -> Duration {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid timespec to write; the clock id is a constant the OS defines.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut now) };
    if status != 0 {
        return Duration::ZERO;
    }
    Duration::new(u64::try_from(now.tv_sec).unwrap_or(0), u32::try_from(now.tv_nsec).unwrap_or(0))
}

/// Timings of one benchmark.
pub struct BenchmarkStats {
    name: String,
    warmup_runs: u32,
    max_count: u32,
    duration: Duration,
    started: u32,
    run_start: (Instant, Duration),
    total_wall: Duration,
    total_cpu: Duration,
    wall: Vec<Duration>,
    cpu: Vec<Duration>,
}

impl BenchmarkStats {
    pub fn new(name: &str, warmup_runs: u32, max_count: u32, duration: Duration) -> BenchmarkStats {
        BenchmarkStats {
            name: name.to_owned(),
            warmup_runs,
            max_count,
            duration,
            started: 0,
            run_start: (Instant::now(), Duration::ZERO),
            total_wall: Duration::ZERO,
            total_cpu: Duration::ZERO,
            wall: Vec::new(),
            cpu: Vec::new(),
        }
    }

    /// Starts a run. The CPU clock is a system call, so it is read outside the wall-time window
    /// (first here, last in [`stop_run`](Self::stop_run)).
    pub fn start_run(&mut self) {
        self.started += 1;
        let cpu = process_cpu_time();
        self.run_start = (Instant::now(), cpu);
    }

    /// Ends the run started last; warm-up runs are not recorded.
    pub fn stop_run(&mut self) {
        if self.started <= self.warmup_runs {
            return;
        }
        let wall = self.run_start.0.elapsed();
        self.record(wall, process_cpu_time().saturating_sub(self.run_start.1));
    }

    fn record(&mut self, wall: Duration, cpu: Duration) {
        self.wall.push(wall);
        self.cpu.push(cpu);
        self.total_wall += wall;
        self.total_cpu += cpu;
    }

    /// Whether another run is due: fewer than `max_count` timed runs and less than `duration`.
    pub fn more_runs(&self) -> bool {
        self.started < self.max_count.saturating_add(self.warmup_runs) && self.total_wall < self.duration
    }

    /// The `BM:` lines TFRT prints (empty when no run was timed).
    pub fn summary(&mut self) -> String {
        if self.wall.is_empty() {
            return String::new();
        }
        self.wall.sort_unstable();
        self.cpu.sort_unstable();
        // The element at `len * p`, as TFRT picks it.
        let at =
            |times: &[Duration], p: f64| times[((times.len() as f64 * p) as usize).min(times.len() - 1)].as_nanos();
        let utilization = self.total_cpu.as_nanos() as f64 * 100.0 / self.total_wall.as_nanos().max(1) as f64;
        let prefix = format!("BM:{}:", self.name);
        let lines = [
            format!("Duration(ns): {}", self.total_wall.as_nanos()),
            format!("Count: {}", self.wall.len()),
            format!("Time Min(ns): {}", self.wall[0].as_nanos()),
            format!("Time 50%(ns): {}", at(&self.wall, 0.5)),
            format!("Time 95%(ns): {}", at(&self.wall, 0.95)),
            format!("Time 99%(ns): {}", at(&self.wall, 0.99)),
            format!("CPU Min(ns): {}", self.cpu[0].as_nanos()),
            format!("CPU 50%(ns): {}", at(&self.cpu, 0.5)),
            format!("CPU 95%(ns): {}", at(&self.cpu, 0.95)),
            format!("CPU 99%(ns): {}", at(&self.cpu, 0.99)),
            format!("CPU utilization(percent): {}", c_exponent(utilization)),
        ];
        lines.iter().map(|line| format!("{prefix}{line}\n")).collect()
    }
}

fn positive_attribute(frame: &KernelFrame<'_>, i: usize, what: &str) -> Result<u32, KernelError> {
    let value = frame.scalar_attribute::<i32>(i)?;
    u32::try_from(value).map_err(|_| format!("tfrt_test.benchmark's {what} is {value}, not a count").into())
}

fn benchmark(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let body = frame.function(0)?;
    if body.num_results() != 1 {
        return Err("Benchmark op requires the input function have exactly one return value".into());
    }
    let duration = Duration::from_secs(positive_attribute(frame, 0, "duration_secs")?.into());
    let max_count = positive_attribute(frame, 1, "max_count")?;
    let name = frame.string_attribute(2)?;
    let warmup = positive_attribute(frame, 3, "num_warmup_runs")?;
    let runner = Arc::new(Runner {
        stats: Mutex::new(BenchmarkStats::new(name, warmup, max_count, duration)),
        body,
        arguments: frame.arguments().to_vec(),
        context: frame.context().clone(),
        done: frame.allocate_result::<Chain>(0)?,
    });
    runner.start_run();
    Ok(())
}

/// A benchmark in progress.
struct Runner {
    stats: Mutex<BenchmarkStats>,
    body: ProgramFunction,
    arguments: Vec<RcAsyncValue>,
    context: ExecutionContext,
    done: AsyncValueRef<Chain>,
}

impl Runner {
    fn stats(&self) -> std::sync::MutexGuard<'_, BenchmarkStats> {
        self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn start_run(self: Arc<Self>) {
        self.stats().start_run();
        let host = Arc::clone(self.context.host());
        host.work_queue().add_task(Box::new(move || {
            let result = self.body.execute(&self.context, &self.arguments).pop();
            let Some(result) = result else { return self.finish() };
            let waited = result.clone();
            waited.and_then(move || {
                drop(result);
                self.stats().stop_run();
                if self.stats().more_runs() {
                    self.start_run();
                } else {
                    self.finish();
                }
            });
        }));
    }

    fn finish(&self) {
        let summary = self.stats().summary();
        self.context.print(&summary);
        let _ = self.done.emplace(Chain);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_reports_tfrts_percentiles_of_timed_runs() {
        let mut stats = BenchmarkStats::new("add", 1, 4, Duration::from_secs(10));
        stats.started = 1; // the warm-up run
        for (wall, cpu) in [(40, 20), (10, 5), (30, 15), (20, 10)] {
            stats.started += 1;
            stats.record(Duration::from_nanos(wall), Duration::from_nanos(cpu));
        }
        let summary = stats.summary();
        let lines: Vec<&str> = summary.lines().collect();
        assert_eq!(lines[0], "BM:add:Duration(ns): 100");
        assert_eq!(lines[1], "BM:add:Count: 4");
        assert_eq!(lines[2], "BM:add:Time Min(ns): 10");
        // Index len * p of the sorted times: 4 * 0.5 = 2, 4 * 0.95 = 3.
        assert_eq!(lines[3], "BM:add:Time 50%(ns): 30");
        assert_eq!(lines[4], "BM:add:Time 95%(ns): 40");
        assert_eq!(lines[7], "BM:add:CPU 50%(ns): 15");
        assert_eq!(lines[10], "BM:add:CPU utilization(percent): 5.000000e+01");
        assert!(!stats.more_runs(), "four timed runs after one warm-up reach max_count");
    }
}
