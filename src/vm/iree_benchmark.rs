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

/// Runs `tool` for about `seconds` with `arguments` (`--device=...`, `--module=...`,
/// `--function=...`, `--input=...`) and returns its median real time per call, in nanoseconds.
pub fn time_per_call(tool: &Path, arguments: &[String], seconds: f64) -> Result<f64, IreeBenchmarkError> {
    let output = Command::new(tool)
        .args(arguments)
        .arg(format!("--benchmark_min_time={seconds}s"))
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
