//! `rtx bef-exec` against the FileCheck fixtures in `tests/fixtures/bef_exec/`: each `// RUN:`
//! line of a fixture (`rtx bef-exec FLAGS %s [2>&1] | FileCheck %s [FLAGS]`) runs the command and
//! pipes its output into LLVM's FileCheck with the fixture as the check file; the command must
//! exit 0. Skipped, with a note, where FileCheck is not installed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const FILECHECK: &str = "/usr/lib/llvm-15/bin/FileCheck";

/// One RUN line, split at the pipe.
struct Run {
    flags: Vec<String>,
    with_stderr: bool,
    check_flags: Vec<String>,
}

fn runs(fixture: &Path) -> Vec<Run> {
    let text = std::fs::read_to_string(fixture).unwrap();
    text.lines()
        .filter_map(|line| line.trim_start().strip_prefix("// RUN:"))
        .map(|line| {
            let (command, check) = line.split_once('|').expect("a RUN line pipes into FileCheck");
            let words: Vec<&str> = command.split_whitespace().collect();
            assert_eq!(&words[..2], ["rtx", "bef-exec"], "{line}");
            let with_stderr = words.contains(&"2>&1");
            let flags = words[2..].iter().filter(|w| !matches!(**w, "%s" | "2>&1")).map(|w| w.to_string()).collect();
            let check_words: Vec<&str> = check.split_whitespace().collect();
            assert_eq!(check_words[..2], ["FileCheck", "%s"], "{line}");
            Run { flags, with_stderr, check_flags: check_words[2..].iter().map(|w| w.to_string()).collect() }
        })
        .collect()
}

fn check(fixture: &Path, run: &Run) -> Result<(), String> {
    let output =
        Command::new(env!("CARGO_BIN_EXE_rtx")).arg("bef-exec").args(&run.flags).arg(fixture).output().unwrap();
    let mut text = output.stdout.clone();
    if run.with_stderr {
        text.extend(&output.stderr);
    }
    if !output.status.success() {
        return Err(format!(
            "rtx bef-exec {:?} exited with {}:\n{}{}",
            run.flags,
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let mut filecheck = Command::new(FILECHECK)
        .arg(fixture)
        .args(&run.check_flags)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    filecheck.stdin.take().unwrap().write_all(&text).unwrap();
    let result = filecheck.wait_with_output().unwrap();
    if result.status.success() {
        Ok(())
    } else {
        Err(format!("FileCheck {:?} failed:\n{}", run.check_flags, String::from_utf8_lossy(&result.stderr)))
    }
}

#[test]
fn every_fixture_passes_its_run_lines() {
    if !Path::new(FILECHECK).exists() {
        eprintln!("skipping: {FILECHECK} is not installed");
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bef_exec");
    let mut fixtures: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    fixtures.retain(|p| p.extension().is_some_and(|e| e == "mlir"));
    fixtures.sort();
    assert!(fixtures.len() >= 4, "fixtures are missing from {}", dir.display());
    let mut failures = Vec::new();
    for fixture in &fixtures {
        let runs = runs(fixture);
        assert!(!runs.is_empty(), "{} has no RUN line", fixture.display());
        for run in &runs {
            if let Err(message) = check(fixture, run) {
                failures.push(format!("{}: {message}", fixture.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn an_unexpected_runtime_error_fails_the_run_and_names_its_location() {
    let dir = std::env::temp_dir().join(format!("rtx-bef-exec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("unexpected.mlir");
    std::fs::write(
        &file,
        "func.func @f() -> i32 {\n  %x = tfrt.constant.i32 1\n  %z = tfrt.constant.i32 0\n  %q, %r = tfrt.div.i32 %x, %z\n  tfrt.return %q : i32\n}\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_rtx")).args(["bef-exec"]).arg(&file).output().unwrap();
    assert!(!output.status.success());
    // The column is the parser's choice of where an op starts; the line is the op's.
    let stderr = String::from_utf8_lossy(&output.stderr);
    let location = format!("{}:4:", file.display());
    assert!(stderr.starts_with(&location) && stderr.ends_with(": error: runtime error: Divide by zero\n"), "{stderr}");
    assert!(String::from_utf8_lossy(&output.stdout).ends_with("'f' returned <<error: Divide by zero>>\n"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unknown_kernel_is_reported_at_its_use() {
    let dir = std::env::temp_dir().join(format!("rtx-bef-exec-unknown-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("unknown.mlir");
    std::fs::write(&file, "func.func @f() {\n  \"foo.bar\"() : () -> ()\n  tfrt.return\n}\n").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_rtx")).args(["bef-exec"]).arg(&file).output().unwrap();
    assert!(!output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!("{}:2:3: error: unknown kernel name 'foo.bar'\n", file.display())
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
