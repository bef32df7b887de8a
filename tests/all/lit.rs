//! Runs lit-style test files: each `.mlir` under `tests/lit/` carries `// RUN:` lines, shell
//! pipelines that call `rtx` and LLVM's `FileCheck`/`not`, and the `CHECK` lines those pipelines
//! are matched against — the way TFRT and MLIR write their tests, so a reader of either knows
//! ours at a glance.
//!
//! Substitutions, as LLVM's lit makes them: `%s` the test file, `%S` its folder, `%t` a scratch
//! path of the test's own. A RUN line that names `%s.bef` gets the file compiled to BEF first
//! (`rtx translate --mlir-to-bef`), as TFRT's build does for its tests. Pipelines run under
//! `bash -o pipefail`, as lit runs them.
//!
//! `RTX_LIT_SUITE=DIR[:DIR...]` also runs the `.mlir` files of other folders — a checkout of
//! TFRT's `mlir_tests`, say — with TFRT's tool names standing for ours (`bef_executor[_lite]` and
//! `bef_executor_debug_tracing` are `rtx bef-exec`, `tfrt_translate` is `rtx translate`,
//! `tfrt_opt` is `rtx opt`). Files whose RUN lines ask for `-verify-diagnostics`, which this
//! runner does not implement, are skipped (`rtx_test_support::skip`). A file without a RUN line
//! fails, as it is unresolved for lit. Those files are not ours and are
//! never copied here; the variable is for checking rtx against them locally.

use rtx_test_support::mlir_files;
use rtx_test_support::skip::{skip, Need};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

const LLVM_BIN: &str = "/usr/lib/llvm-15/bin";

/// How one test file ended.
enum Outcome {
    Passed,
    Skipped(Need, &'static str),
    Failed(String),
}

struct Runner {
    rtx: PathBuf,
    scratch: PathBuf,
}

impl Runner {
    /// The tool a RUN line's word stands for, or `None` when the word is not a tool name.
    fn tool(&self, word: &str) -> Option<String> {
        let rtx = self.rtx.display();
        Some(match word {
            "rtx" => format!("{rtx}"),
            "bef_executor" | "bef_executor_lite" | "bef_executor_debug_tracing" => format!("{rtx} bef-exec"),
            "tfrt_translate" => format!("{rtx} translate"),
            "tfrt_opt" => format!("{rtx} opt"),
            "FileCheck" | "not" => format!("{LLVM_BIN}/{word}"),
            _ => return None,
        })
    }

    fn run_file(&self, file: &Path, index: usize) -> Outcome {
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(e) => return Outcome::Failed(format!("reading it: {e}")),
        };
        let commands = run_lines(&text);
        if commands.is_empty() {
            return Outcome::Failed("no RUN line: nothing to run (lit reports such a file as unresolved)".to_owned());
        }
        if commands.iter().any(|c| c.contains("-verify-diagnostics")) {
            return Outcome::Skipped(Need::VerifyDiagnostics, "a RUN line asks for -verify-diagnostics");
        }
        let scratch = self.scratch.join(format!("{index}"));
        if let Err(e) = std::fs::create_dir_all(&scratch) {
            return Outcome::Failed(format!("creating {}: {e}", scratch.display()));
        }
        let tmp = scratch.join(file.file_name().unwrap_or_default()).with_extension("tmp");
        let (source, folder, tmp) = (file.display().to_string(), parent(file), tmp.display().to_string());
        if commands.iter().any(|c| c.contains("%s.bef")) {
            let bef = format!("{tmp}.bef");
            let made = Command::new(&self.rtx).args(["translate", "--mlir-to-bef", &source, "-o", &bef]).output();
            match made {
                Ok(out) if out.status.success() => {}
                Ok(out) => {
                    return Outcome::Failed(format!(
                        "rtx translate --mlir-to-bef failed:\n{}",
                        String::from_utf8_lossy(&out.stderr)
                    ))
                }
                Err(e) => return Outcome::Failed(format!("running rtx: {e}")),
            }
        }
        for command in &commands {
            let substituted = command
                .replace("%s.bef", &format!("{tmp}.bef"))
                .replace("%s", &source)
                .replace("%S", &folder)
                .replace("%t", &tmp);
            let line: Vec<String> =
                substituted.split(' ').map(|word| self.tool(word).unwrap_or_else(|| word.to_owned())).collect();
            let line = line.join(" ");
            let out = Command::new("bash").args(["-o", "pipefail", "-c", &line]).current_dir(&folder).output();
            match out {
                Ok(out) if out.status.success() => {}
                Ok(out) => {
                    return Outcome::Failed(format!(
                        "RUN: {command}\n$ {line}\nexit status {}\n--- stdout\n{}--- stderr\n{}",
                        out.status,
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    ))
                }
                Err(e) => return Outcome::Failed(format!("running bash: {e}")),
            }
        }
        Outcome::Passed
    }
}

fn parent(file: &Path) -> String {
    file.parent().map(|p| p.display().to_string()).unwrap_or_else(|| ".".to_owned())
}

/// The file's RUN commands, a trailing `\` joining a line to the next.
fn run_lines(text: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut pending = String::new();
    for line in text.lines() {
        let Some((_, rest)) = line.split_once("RUN:") else { continue };
        let rest = rest.trim();
        match rest.strip_suffix('\\') {
            Some(head) => {
                pending.push_str(head);
                pending.push(' ');
            }
            None => {
                pending.push_str(rest);
                commands.push(std::mem::take(&mut pending));
            }
        }
    }
    commands
}

#[test]
fn lit_files_pass() {
    assert!(
        Path::new(LLVM_BIN).join("FileCheck").exists(),
        "{LLVM_BIN}/FileCheck is missing: install the Debian package llvm-15-tools (scripts/setup/prereqs.sh test does)"
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    mlir_files(&root.join("tests/lit"), &mut files);
    assert!(!files.is_empty(), "no test files under tests/lit");
    if let Ok(suites) = std::env::var("RTX_LIT_SUITE") {
        for suite in suites.split(':').filter(|s| !s.is_empty()) {
            mlir_files(Path::new(suite), &mut files);
        }
    }
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lit");
    let _ = std::fs::remove_dir_all(&scratch);
    let runner = Runner { rtx: PathBuf::from(env!("CARGO_BIN_EXE_rtx")), scratch };

    let next = AtomicUsize::new(0);
    let outcomes = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(file) = files.get(index) else { break };
                let outcome = runner.run_file(file, index);
                outcomes.lock().unwrap().push((file.clone(), outcome));
            });
        }
    });
    let mut outcomes = outcomes.into_inner().unwrap();
    outcomes.sort_by(|a, b| a.0.cmp(&b.0));
    let (mut passed, mut skipped, mut failures) = (0, 0, Vec::new());
    for (file, outcome) in &outcomes {
        match outcome {
            Outcome::Passed => passed += 1,
            Outcome::Skipped(need, why) => {
                skipped += 1;
                skip(*need, format_args!("{}: {why}", file.display()));
            }
            Outcome::Failed(report) => failures.push(format!("FAILED {}\n{report}", file.display())),
        }
    }
    eprintln!("lit: {passed} passed, {skipped} skipped, {} failed", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(passed > 0, "no lit file ran: all {skipped} were skipped");
}

/// A file without a RUN line fails rather than passing unrun; one that asks for
/// `-verify-diagnostics` is a skip, and everything else is run.
#[test]
fn a_file_without_a_run_line_fails_the_runner() {
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lit-runner");
    std::fs::create_dir_all(&scratch).unwrap();
    let runner = Runner { rtx: PathBuf::from(env!("CARGO_BIN_EXE_rtx")), scratch: scratch.join("runs") };
    let file = |name: &str, text: &str| {
        let path = scratch.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let unrun = file("no_run.mlir", "// CHECK: anything\nfunc.func @f() { return }\n");
    assert!(matches!(runner.run_file(&unrun, 0), Outcome::Failed(report) if report.contains("no RUN line")));
    let verify = file("verify.mlir", "// RUN: rtx opt %s -verify-diagnostics\n");
    assert!(matches!(runner.run_file(&verify, 1), Outcome::Skipped(Need::VerifyDiagnostics, _)));
    let runs = file("runs.mlir", "// RUN: true\n");
    assert!(matches!(runner.run_file(&runs, 2), Outcome::Passed));
}
