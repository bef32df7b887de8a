//! `rtx bench`: repeated in-process calls, timed beside `iree-benchmark-module`.

use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

use rtx::hal::local::dispatch_times;
use rtx::vm::iree_benchmark::{self, MinTime};

use crate::flags::Flags;
use crate::prepare;

/// `rtx bench`, traced with `--trace=FILE.json`; with `--profile`, traced (to that file, or to
/// a file of its own removed afterwards) and followed by the trace's `rtx profile` table.
pub fn profiled(flags: &Flags) -> Result<ExitCode, String> {
    if !flags.has("profile") {
        return crate::traced(flags.last("trace"), || bench(flags));
    }
    let kept = flags.last("trace").map(std::path::PathBuf::from);
    let path =
        kept.clone().unwrap_or_else(|| std::env::temp_dir().join(format!("rtx-bench-{}.json", std::process::id())));
    let code = crate::traced(path.to_str(), || bench(flags));
    let summary = crate::profile::summary(&path);
    if kept.is_none() {
        let _ = std::fs::remove_file(&path);
    }
    let code = code?;
    // A reader that went away early (`| head`) is not a failure of the command.
    let _ = writeln!(
        std::io::stdout(),
        "\nprofile of the run (module load, warm-up and every timed call):\n{}",
        summary?.trim_end()
    );
    Ok(code)
}

pub fn bench(flags: &Flags) -> Result<ExitCode, String> {
    flags.only(&[
        "module",
        "function",
        "input",
        "device",
        "task_topology_group_count",
        "benchmark_min_time",
        "rounds",
        "no_iree",
        "work_queue_type",
        "dispatch_times",
        "trace",
        "profile",
        "trace_cost",
    ])?;
    let trace_cost = flags.has("trace_cost");
    if trace_cost && (flags.has("trace") || flags.has("profile")) {
        return Err("--trace_cost traces rounds of its own: it takes no --trace or --profile".to_owned());
    }
    let min_time = match flags.last("benchmark_min_time") {
        Some(text) => MinTime::parse(text).ok_or_else(|| format!("bad --benchmark_min_time `{text}`"))?,
        None => MinTime::Seconds(1.0),
    };
    let rounds: usize = match flags.last("rounds") {
        Some(text) => text.parse().map_err(|_| format!("bad --rounds `{text}`"))?,
        None => 5,
    }
    .max(1);
    if flags.has("dispatch_times") {
        dispatch_times::enable();
    }
    let prepared = prepare(flags)?;
    let call = || prepared.call();
    call().map_err(|e| format!("{}: {}", e.code, e.message))?;
    // A BEF module (a kernel graph) has no IREE counterpart to time beside it.
    #[cfg(feature = "tfrt")]
    let bef = matches!(prepared.call, crate::Call::Bef { .. });
    #[cfg(not(feature = "tfrt"))]
    let bef = false;
    let iree = if flags.has("no_iree") || bef { None } else { iree_benchmark::find_iree_benchmark_module() };
    let rounds = if iree.is_some() || trace_cost { rounds } else { 1 };
    // Each round's share: a time is split between the rounds, a call count is made in each.
    let round = match min_time {
        MinTime::Seconds(seconds) => MinTime::Seconds(seconds / rounds as f64),
        calls => calls,
    };
    // A round is timed as iree-benchmark-module times its run: the mean time per call over the
    // whole round (a median of short batches would drop the slow ones that a busy machine causes,
    // which IREE's mean keeps). The clock is read after batches of ~1 ms, or after exactly the
    // calls asked for.
    let batch = match round {
        MinTime::Seconds(_) => calibrate_batch(call),
        MinTime::Calls(calls) => calls,
    };
    // Only the timed calls' dispatches count (the warm-up call's fault in their memory).
    dispatch_times::take();
    let measure = || {
        let started = Instant::now();
        let mut calls = 0;
        loop {
            for _ in 0..batch {
                let _ = call();
            }
            calls += batch;
            match round {
                MinTime::Seconds(seconds) if started.elapsed().as_secs_f64() < seconds => {}
                _ => return (started.elapsed().as_nanos() as f64 / calls as f64, calls),
            }
        }
    };
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    let mut traced = Vec::new();
    let mut total_calls = 0;
    for _ in 0..rounds {
        // Alternate with IREE's own benchmark on the same module and inputs, so both see the same
        // machine state (PERFORMANCE.md), and report the median of each and their ratio.
        if let Some(tool) = &iree {
            theirs.push(run_iree_benchmark(tool, flags, round)?);
        }
        let (time, calls) = measure();
        ours.push(time);
        total_calls += calls;
        if trace_cost {
            traced.push(measure_traced(&measure)?);
        }
    }
    let median = |samples: &mut Vec<f64>| {
        samples.sort_by(f64::total_cmp);
        samples[samples.len() / 2]
    };
    let our_median = median(&mut ours);
    if !theirs.is_empty() {
        let their_median = median(&mut theirs);
        println!(
            "iree-benchmark-module: median {their_median:.0} ns per call; rtx/IREE = {:.2}",
            our_median / their_median
        );
    }
    if !traced.is_empty() {
        let traced_median = median(&mut traced);
        println!("traced: median {traced_median:.0} ns per call; traced/untraced = {:.3}", traced_median / our_median);
    }
    println!("{}: median {:.0} ns per call ({total_calls} calls)", prepared.name, our_median);
    if flags.has("dispatch_times") {
        print_dispatch_times(total_calls);
    }
    Ok(ExitCode::SUCCESS)
}

/// A round of `measure` traced (to a file of its own, removed afterwards): its time per call.
fn measure_traced(measure: &dyn Fn() -> (f64, u64)) -> Result<f64, String> {
    let path = std::env::temp_dir().join(format!("rtx-trace-cost-{}.json", std::process::id()));
    rtx::host::tracing::begin(&path).map_err(|error| error.message)?;
    let (time, _) = measure();
    let ended = rtx::host::tracing::end();
    let _ = std::fs::remove_file(&path);
    ended.map_err(|error| error.message)?;
    Ok(time)
}

/// The CPU devices' time per export over the timed calls, most first: what each call spent in it
/// and in how many dispatches, beside what `iree-profile statistics` reports of IREE's.
fn print_dispatch_times(calls: u64) {
    let times = dispatch_times::take();
    let all: f64 = times.iter().map(|time| time.total.as_secs_f64()).sum();
    println!("dispatches per call on the CPU devices, by export:");
    for time in times {
        let total = time.total.as_secs_f64();
        println!(
            "  {}: {} per call, {:.1} µs per call ({:.1} %)",
            time.export,
            time.count as f64 / calls as f64,
            total * 1e6 / calls as f64,
            100.0 * total / all
        );
    }
}

/// The number of calls that take about a millisecond.
fn calibrate_batch<T>(call: impl Fn() -> T) -> u64 {
    let mut batch = 1u64;
    loop {
        let start = Instant::now();
        for _ in 0..batch {
            let _ = call();
        }
        if start.elapsed().as_secs_f64() > 1e-3 || batch >= 1 << 30 {
            return batch;
        }
        batch *= 2;
    }
}

/// One `iree-benchmark-module` run of the same call; its median real time per call in ns.
fn run_iree_benchmark(tool: &std::path::Path, flags: &Flags, min_time: MinTime) -> Result<f64, String> {
    let mut arguments = vec![format!("--device={}", flags.last("device").unwrap_or("local-sync"))];
    if let Some(count) = flags.last("task_topology_group_count") {
        arguments.push(format!("--task_topology_group_count={count}"));
    }
    arguments.extend(flags.all("module").into_iter().map(|module| format!("--module={module}")));
    arguments.push(format!("--function={}", flags.last("function").unwrap_or_default()));
    arguments.extend(flags.all("input").into_iter().map(|input| format!("--input={input}")));
    iree_benchmark::time_per_call(tool, &arguments, min_time).map_err(|e| e.to_string())
}
