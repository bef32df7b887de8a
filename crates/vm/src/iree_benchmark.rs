//! IREE's own `iree-benchmark-module`, the anchor rtx's timings are read against (see
//! docs/PERFORMANCE.md): finding it, and timing one call with it. `rtx bench` and the benches
//! share this so that every comparison with IREE runs the tool the same way.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Why `iree-benchmark-module` gave no time.
#[derive(Debug, thiserror::Error)]
pub enum IreeBenchmarkError {
    #[error("running {tool}: {message}")]
    Spawn { tool: String, message: String },
    #[error("iree-benchmark-module gave no timing (exit {status:?}): {stderr}")]
    NoTiming { status: Option<i32>, stderr: String },
    #[error("iree-benchmark-module real_time `{0}`")]
    BadTime(String),
    #[error("iree-benchmark-module time unit `{0}`")]
    BadUnit(String),
}

/// `iree-benchmark-module` from the directory `RTX_IREE_TOOLS` names or from `PATH`, if there
/// is one.
pub fn find_iree_benchmark_module() -> Option<PathBuf> {
    let name = "iree-benchmark-module";
    let mut directories: Vec<PathBuf> = std::env::var_os("RTX_IREE_TOOLS").map(PathBuf::from).into_iter().collect();
    directories
        .extend(std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect::<Vec<_>>()).unwrap_or_default());
    directories.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

/// How long one measurement runs, as Google Benchmark's `--benchmark_min_time` gives it: a time
/// (`0.5`, `0.5s`), or an exact number of calls (`100x`), which makes instruction and allocation
/// counts per call exact under a profiler.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MinTime {
    Seconds(f64),
    Calls(u64),
}

impl MinTime {
    /// Reads `--benchmark_min_time`'s value; `None` if it is neither a non-negative time nor a
    /// positive call count.
    pub fn parse(text: &str) -> Option<MinTime> {
        if let Some(calls) = text.strip_suffix('x') {
            return calls.parse().ok().filter(|&calls| calls > 0).map(MinTime::Calls);
        }
        let seconds: f64 = text.strip_suffix('s').unwrap_or(text).parse().ok()?;
        (seconds >= 0.0).then_some(MinTime::Seconds(seconds))
    }
}

impl std::fmt::Display for MinTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MinTime::Seconds(seconds) => write!(f, "{seconds}s"),
            MinTime::Calls(calls) => write!(f, "{calls}x"),
        }
    }
}

/// Runs `tool` for `min_time` with `arguments` (`--device=...`, `--module=...`,
/// `--function=...`, `--input=...`) and returns its median real time per call, in nanoseconds.
pub fn time_per_call(tool: &Path, arguments: &[String], min_time: MinTime) -> Result<f64, IreeBenchmarkError> {
    let output = Command::new(tool)
        .args(arguments)
        .arg(format!("--benchmark_min_time={min_time}"))
        .arg("--benchmark_format=json")
        .output()
        .map_err(|e| IreeBenchmarkError::Spawn { tool: tool.display().to_string(), message: e.to_string() })?;
    let text = String::from_utf8_lossy(&output.stdout);
    let field = |name: &str| -> Option<&str> {
        let start = text.find(&format!("\"{name}\": "))? + name.len() + 4;
        let rest = &text[start..];
        Some(rest[..rest.find([',', '\n'])?].trim().trim_matches('"'))
    };
    let (Some(time), Some(unit)) = (field("real_time"), field("time_unit")) else {
        return Err(IreeBenchmarkError::NoTiming {
            status: output.status.code(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    };
    let time: f64 = time.parse().map_err(|_| IreeBenchmarkError::BadTime(time.to_owned()))?;
    let scale = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        other => return Err(IreeBenchmarkError::BadUnit(other.to_owned())),
    };
    Ok(time * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_time_reads_times_and_call_counts() {
        assert_eq!(MinTime::parse("1"), Some(MinTime::Seconds(1.0)));
        assert_eq!(MinTime::parse("0.25s"), Some(MinTime::Seconds(0.25)));
        assert_eq!(MinTime::parse("100x"), Some(MinTime::Calls(100)));
        assert_eq!(MinTime::Calls(100).to_string(), "100x");
        assert_eq!(MinTime::Seconds(0.5).to_string(), "0.5s");
        for bad in ["0x", "-1", "x", "1.5x", "s", "fast"] {
            assert_eq!(MinTime::parse(bad), None, "{bad}");
        }
    }
}
