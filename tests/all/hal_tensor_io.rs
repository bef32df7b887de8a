//! Tensor inputs and outputs against the oracle: every line of tests/fixtures/hal_io/
//! invocations.txt ran an identity function through IREE 3.13's `iree-run-module`
//! (scripts/regen/hal-io-fixtures.sh recorded its exit status, stdout, stderr and written files).
//! `rtx run` runs the same module with the same flags in a fresh copy of the input files: every
//! byte of stdout and of the written files must match, and error lines must match after IREE's
//! source location and before the function declaration it appends.
//!
//! With `RTX_CHECK_FIXTURES=1` and the IREE tools at hand, the fixtures are also regenerated into
//! a scratch directory and compared, so a stale fixture fails.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hal_io")
}

struct Invocation {
    line: usize,
    function: String,
    flags: Vec<String>,
    /// `expected/<module>.<function>.<n>`, without the `.txt`.
    stem: String,
}

fn invocations() -> Vec<Invocation> {
    let text = fs::read_to_string(fixtures().join("invocations.txt")).expect("invocations.txt");
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut invocations = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let fields: Vec<String> = line.split('|').map(|field| field.trim().to_owned()).collect();
        assert!(fields.len() >= 2, "invocations.txt:{}: expected `<module> | <function> | flags...`", index + 1);
        let key = format!("{}.{}", fields[0], fields[1]);
        let n = counts.entry(key.clone()).or_default();
        *n += 1;
        invocations.push(Invocation {
            line: index + 1,
            function: fields[1].clone(),
            flags: fields[2..].to_vec(),
            stem: format!("{key}.{n}"),
        });
    }
    invocations
}

/// A recorded run: exit status, stdout, stderr.
fn recorded(stem: &str) -> (i32, String, String) {
    let text = fs::read_to_string(fixtures().join("expected").join(format!("{stem}.txt"))).expect(stem);
    let status_line = text.lines().nth(1).expect("exit status line");
    let status = status_line.strip_prefix("exit status: ").expect("exit status").parse().expect("status number");
    let (_, rest) = text.split_once("--- stdout\n").expect("stdout header");
    let (stdout, stderr) = rest.split_once("--- stderr\n").expect("stderr header");
    (status, stdout.to_owned(), stderr.to_owned())
}

/// IREE's error line without its leading `file:line: ` and trailing declaration.
fn iree_status(stderr: &str) -> String {
    let line = stderr.lines().next().unwrap_or("");
    let line = line.split("; `sync func").next().unwrap_or(line);
    let first = line.split(';').next().unwrap_or("");
    match first.rfind(": ") {
        Some(at) => line[at + 2..].to_owned(),
        None => line.to_owned(),
    }
}

/// What a run produced: exit status, stdout, the status line (if it failed) and the files it
/// wrote (name, bytes).
type Run = (i32, String, Option<String>, Vec<(String, Vec<u8>)>);

/// Runs `rtx run` as the recording ran `iree-run-module`: in a fresh copy of data/ holding the
/// module.
fn run(invocation: &Invocation, scratch: &Path) -> Run {
    let module = invocation.stem.split('.').next().expect("module name");
    let _ = fs::remove_dir_all(scratch);
    fs::create_dir_all(scratch).expect("scratch directory");
    for entry in fs::read_dir(fixtures().join("data")).expect("data/") {
        let path = entry.expect("entry").path();
        fs::copy(&path, scratch.join(path.file_name().expect("file name"))).expect("copy input");
    }
    fs::copy(fixtures().join(format!("{module}.vmfb")), scratch.join(format!("{module}.vmfb"))).expect("copy module");
    let output = Command::new(env!("CARGO_BIN_EXE_rtx"))
        .current_dir(scratch)
        .arg("run")
        .arg("--device=local-sync")
        .arg(format!("--module={module}.vmfb"))
        .arg(format!("--function={}", invocation.function))
        .args(&invocation.flags)
        .output()
        .expect("rtx runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let mut written = Vec::new();
    for entry in fs::read_dir(scratch).expect("scratch") {
        let path = entry.expect("entry").path();
        let name = path.file_name().expect("name").to_string_lossy().into_owned();
        if name.starts_with("out") {
            written.push((name, fs::read(&path).expect("written output")));
        }
    }
    written.sort();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        (!stderr.is_empty()).then(|| iree_status(&stderr)),
        written,
    )
}

#[test]
fn rtx_reads_prints_writes_and_compares_tensors_like_iree_run_module() {
    let invocations = invocations();
    assert!(invocations.len() >= 130, "the fixture set has {} invocations", invocations.len());
    let scratch_root = std::env::temp_dir().join(format!("rtx-hal-io-{}", std::process::id()));
    let mut failures = Vec::new();
    for invocation in &invocations {
        let scratch = scratch_root.join(&invocation.stem);
        fs::create_dir_all(&scratch).expect("scratch directory");
        let (status, stdout, stderr) = recorded(&invocation.stem);
        let (got_status, got_stdout, got_status_line, written) = run(invocation, &scratch);
        let expected_line = (!stderr.is_empty()).then(|| iree_status(&stderr));
        if (got_status, &got_stdout, &got_status_line) != (status, &stdout, &expected_line) {
            failures.push(format!(
                "invocations.txt:{} ({}):\n  expected {status} {stdout:?} {expected_line:?}\n  got      {got_status} {got_stdout:?} {got_status_line:?}",
                invocation.line, invocation.stem
            ));
        }
        for (name, bytes) in &written {
            let path = fixtures().join("expected").join(format!("{}.{name}", invocation.stem));
            let expected = fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            if *bytes != expected {
                failures.push(format!("invocations.txt:{}: {name} differs from {}", invocation.line, path.display()));
            }
        }
    }
    let _ = fs::remove_dir_all(&scratch_root);
    assert!(
        failures.is_empty(),
        "{} of {} invocations differ:\n{}",
        failures.len(),
        invocations.len(),
        failures.join("\n")
    );
}

#[test]
fn every_invocation_has_its_recording_and_no_other() {
    let mut expected = Vec::new();
    for invocation in invocations() {
        let text = fs::read_to_string(fixtures().join("expected").join(format!("{}.txt", invocation.stem)))
            .unwrap_or_else(|e| panic!("invocations.txt:{}: {e}", invocation.line));
        let mut command = format!(
            "$ iree-run-module --device=local-sync --module={}.vmfb --function={}",
            invocation.stem.split('.').next().expect("module"),
            invocation.function
        );
        for flag in &invocation.flags {
            command.push(' ');
            command.push_str(flag);
        }
        assert_eq!(text.lines().next(), Some(command.as_str()), "{} ran another command", invocation.stem);
        expected.push(format!("{}.txt", invocation.stem));
    }
    let mut on_disk: Vec<String> = fs::read_dir(fixtures().join("expected"))
        .expect("expected/")
        .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".txt"))
        .collect();
    on_disk.sort();
    expected.sort();
    assert_eq!(on_disk, expected, "expected/ holds one .txt per invocation");
}

fn files_under(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for dir in ["data", "expected"] {
        for entry in fs::read_dir(root.join(dir)).expect("fixture directory") {
            let path = entry.expect("entry").path();
            let name = path.strip_prefix(root).expect("under root").to_string_lossy().into_owned();
            files.insert(name, fs::read(&path).expect("readable"));
        }
    }
    files
}

#[test]
fn checked_in_fixtures_match_a_fresh_regeneration() {
    if rtx_test_support::iree_tools_or_skip().is_none() {
        return;
    }
    let scratch = std::env::temp_dir().join(format!("rtx-hal-io-fixtures-{}", std::process::id()));
    let _ = fs::remove_dir_all(&scratch);
    fs::create_dir_all(&scratch).expect("scratch directory");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/regen/hal-io-fixtures.sh");
    let output = Command::new(script).arg("--out").arg(&scratch).output().expect("run the script");
    assert!(output.status.success(), "regen/hal-io-fixtures.sh failed:\n{}", String::from_utf8_lossy(&output.stderr));
    let fresh = files_under(&scratch);
    let checked_in = files_under(&fixtures());
    let _ = fs::remove_dir_all(&scratch);
    assert_eq!(checked_in.keys().collect::<Vec<_>>(), fresh.keys().collect::<Vec<_>>(), "file sets differ");
    let stale: Vec<_> = fresh.iter().filter(|(name, bytes)| checked_in[*name] != **bytes).map(|(n, _)| n).collect();
    assert!(stale.is_empty(), "stale fixtures {stale:?}; run scripts/regen/hal-io-fixtures.sh");
}
