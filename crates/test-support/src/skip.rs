//! Skips: what a test could not check on this machine, said where a reader and the test command
//! both see it. A skipped Rust test still reads "ok" in the harness's report, and the harness
//! hides what a passing test prints, so a skip here writes its line past the harness (to the
//! process's own stdout) and appends it to the file `RTX_SKIP_LOG` names. scripts/test.sh names
//! that file, lists every line of it at the end of the run, and decides there whether a skip is
//! allowed (under `CI=true` none is, unless the run says up front why): the tests only report.
//!
//! A line reads `SKIP [need] where: why`; the C examples and the Python tests write the same
//! form, so one list holds every skip of a run.

use std::io::Write;
use std::path::Path;

/// What a test needs and this machine may lack: the `[need]` of a skip line, which is what a
/// run allows or refuses (`RTX_ALLOWED_SKIPS` in scripts/test.sh).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// A Vulkan loader and a device that opens (lavapipe will do).
    VulkanDevice,
    /// The Khronos validation layers, for tests whose point is what they report.
    VulkanValidation,
    /// A device limit that is finite, for tests that go past it.
    DeviceLimit,
    /// The IREE tools, and `RTX_CHECK_FIXTURES=1` asking for the checks against them.
    IreeTools,
    /// A `python3` to run a generator script with.
    Python3,
    /// A lit file's `-verify-diagnostics` RUN line, which the lit runner does not implement.
    VerifyDiagnostics,
}

impl Need {
    /// The name a skip line and `RTX_ALLOWED_SKIPS` use.
    pub fn name(self) -> &'static str {
        match self {
            Need::VulkanDevice => "vulkan-device",
            Need::VulkanValidation => "vulkan-validation",
            Need::DeviceLimit => "device-limit",
            Need::IreeTools => "iree-tools",
            Need::Python3 => "python3",
            Need::VerifyDiagnostics => "verify-diagnostics",
        }
    }
}

/// Reports that the running test did not check what it is for, because this machine lacks
/// `need`: the line `SKIP [need] <package> <test>: <why>`. The caller then returns.
pub fn skip(need: Need, why: impl std::fmt::Display) {
    let line = line(need, why);
    // Straight to the file descriptor: `print!` would be captured and hidden for a passing test.
    let _ = std::io::stdout().lock().write_all(line.as_bytes());
    if let Some(log) = std::env::var_os("RTX_SKIP_LOG") {
        append(Path::new(&log), &line);
    }
}

/// The skip line of the running test.
fn line(need: Need, why: impl std::fmt::Display) -> String {
    let current = std::thread::current();
    // libtest runs each test on a thread named after it; cargo names the package being tested.
    let test = current.name().unwrap_or("(unnamed thread)");
    let package = std::env::var("CARGO_PKG_NAME").unwrap_or_default();
    format!("SKIP [{}] {package} {test}: {why}\n", need.name())
}

/// Appends `line` to the log with one `write` to a file opened for appending, so that the lines
/// of concurrent tests and test binaries do not interleave.
fn append(log: &Path, line: &str) {
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .and_then(|mut file| file.write_all(line.as_bytes()));
    if let Err(error) = appended {
        panic!("{}: cannot record a skip in RTX_SKIP_LOG: {error}\n{line}", log.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A skip is a line in the log with its need, the test's name and the reason.
    #[test]
    fn a_skip_is_a_line_in_the_log() {
        let log = std::env::temp_dir().join(format!("rtx-skip-log-{}", std::process::id()));
        let _ = std::fs::remove_file(&log);
        append(&log, &line(Need::Python3, "no python3"));
        append(&log, &line(Need::VulkanDevice, "no loader"));
        let text = std::fs::read_to_string(&log).expect("the skip log was written");
        let _ = std::fs::remove_file(&log);
        let test = "rtx-test-support skip::tests::a_skip_is_a_line_in_the_log";
        assert_eq!(text, format!("SKIP [python3] {test}: no python3\nSKIP [vulkan-device] {test}: no loader\n"));
    }
}
