//! Tensor inputs and outputs against the oracle: every line of tests/fixtures/hal_io/
//! invocations.txt ran an identity function through IREE 3.13's `iree-run-module`
//! (scripts/regen-hal-io-fixtures.sh recorded its exit status, stdout, stderr and written files).
//! Since the function returns its inputs, rtx reproduces the run without executing anything:
//! it parses each `--input` with `rtx::hal::tensor_io`, and prints, writes or compares those
//! tensors as the results. Every byte must match; error lines must match after IREE's source
//! location and before the function declaration it appends.
//!
//! With `RTX_CHECK_FIXTURES=1` and the IREE tools at hand, the fixtures are also regenerated into
//! a scratch directory and compared, so a stale fixture fails.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use rtx::hal::tensor_io::{
    c_trim, compare_results, parse_tensor, read_npy_inputs, write_output_file, Equality, EqualityMode, HostTensor,
    InputFiles, OutputSpec, ResultValue,
};
use rtx::host::Diagnostic;

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

/// `CODE; message; annotations...` as IREE joins a status and its annotations.
fn status_line(error: &Diagnostic, annotations: &[String]) -> String {
    let mut parts = vec![error.code.to_string()];
    if !error.message.is_empty() {
        parts.push(error.message.clone());
    }
    parts.extend(annotations.iter().cloned());
    parts.join("; ")
}

/// What rtx does with one `--input` of a function whose arguments are all tensors.
fn parse_input(text: &str, files: &mut InputFiles) -> Result<Vec<ResultValue>, Diagnostic> {
    let text = c_trim(text);
    if text.is_empty() {
        return Err(Diagnostic::new(rtx::host::StatusCode::InvalidArgument, "no value specified for input"));
    }
    if text == "(null)" || text == "(ignored)" {
        return Ok(vec![ResultValue::Empty]);
    }
    if text.starts_with(['@', '+', '*']) {
        return Ok(read_npy_inputs(text, files)?.into_iter().map(ResultValue::Tensor).collect());
    }
    Ok(vec![ResultValue::Tensor(parse_tensor(text, files)?)])
}

fn parse_all(texts: &[&str], context: &str) -> Result<Vec<ResultValue>, String> {
    let mut files = InputFiles::relative_to(fixtures().join("data"));
    let mut values = Vec::new();
    for text in texts {
        let parsed = parse_input(text, &mut files)
            .map_err(|error| status_line(&error, &[format!("parsing input `{}`", c_trim(text)), context.to_owned()]))?;
        values.extend(parsed);
    }
    Ok(values)
}

fn tensor(value: &ResultValue) -> &HostTensor {
    match value {
        ResultValue::Tensor(tensor) => tensor,
        other => panic!("identity functions return tensors, not {other:?}"),
    }
}

/// What a replay produced: exit status, stdout, the status line (if it failed) and the files it
/// wrote (name, bytes).
type Replay = (i32, String, Option<String>, Vec<(String, Vec<u8>)>);

fn replay(invocation: &Invocation, scratch: &Path) -> Replay {
    let flags = |name: &str| -> Vec<&str> {
        invocation.flags.iter().filter_map(|flag| flag.strip_prefix(&format!("--{name}="))).collect()
    };
    let single = |name: &str| flags(name).last().map(|value| value.to_string());
    let results = match parse_all(&flags("input"), "parsing function inputs") {
        Ok(results) => results,
        Err(line) => return (1, String::new(), Some(line), Vec::new()),
    };
    let mut stdout = format!("EXEC @{}\n", invocation.function);
    let processing = "processing function outputs".to_owned();
    let max_element_count =
        single("output_max_element_count").map_or(1024, |text| text.parse::<i32>().expect("count") as isize as usize);
    let expected_outputs = flags("expected_output");
    if !expected_outputs.is_empty() {
        let defaults = Equality::default();
        let equality = Equality {
            mode: match single("equality_mode").as_deref() {
                Some("exact") => EqualityMode::Exact,
                _ => EqualityMode::Approximate,
            },
            f16_atol: single("expected_f16_threshold").map_or(defaults.f16_atol, |t| t.parse().unwrap()),
            bf16_atol: single("expected_bf16_threshold").map_or(defaults.bf16_atol, |t| t.parse().unwrap()),
            f32_atol: single("expected_f32_threshold").map_or(defaults.f32_atol, |t| t.parse().unwrap()),
            f64_atol: single("expected_f64_threshold").map_or(defaults.f64_atol, |t| t.parse().unwrap()),
            rtol: single("expected_rtol").map_or(defaults.rtol, |t| t.parse().unwrap()),
        };
        let expected = match parse_all(&expected_outputs, "parsing expected function outputs") {
            Ok(expected) => expected,
            Err(line) => return (1, stdout, Some(format!("{line}; {processing}")), Vec::new()),
        };
        let (matched, report) = compare_results(&expected, &results, &equality).expect("comparison");
        stdout.push_str(&report);
        return (if matched { 0 } else { 1 }, stdout, None, Vec::new());
    }
    let outputs = flags("output");
    if outputs.is_empty() {
        for (index, result) in results.iter().enumerate() {
            match tensor(result).format(max_element_count) {
                Ok(text) => stdout.push_str(&format!("result[{index}]: hal.buffer_view\n{text}\n")),
                Err(error) => {
                    let line = status_line(&error, &["printing results".to_owned(), processing]);
                    return (1, stdout, Some(line), Vec::new());
                }
            }
        }
        return (0, stdout, None, Vec::new());
    }
    let annotations = ["outputting results".to_owned(), processing];
    if outputs.len() != results.len() {
        let line = format!(
            "OUT_OF_RANGE; {} outputs specified but the provided variant list only has {} elements; {}",
            outputs.len(),
            results.len(),
            annotations.join("; ")
        );
        return (1, stdout, Some(line), Vec::new());
    }
    let mut written: Vec<String> = Vec::new();
    for (spec, result) in outputs.iter().zip(&results) {
        let outcome = OutputSpec::parse(spec).and_then(|spec| match spec {
            OutputSpec::Ignore => Ok(()),
            OutputSpec::Print => {
                stdout.push_str(&format!("hal.buffer_view\n{}\n", tensor(result).format(max_element_count)?));
                Ok(())
            }
            OutputSpec::File { path, append } => {
                let target = scratch.join(&path);
                write_output_file(target.to_str().expect("utf-8 path"), append, tensor(result))?;
                if !written.contains(&path) {
                    written.push(path);
                }
                Ok(())
            }
        });
        if let Err(error) = outcome {
            return (1, stdout, Some(status_line(&error, &annotations)), Vec::new());
        }
    }
    let written = written
        .into_iter()
        .map(|name| {
            let bytes = fs::read(scratch.join(&name)).expect("written output");
            (name, bytes)
        })
        .collect();
    (0, stdout, None, written)
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
        let (got_status, got_stdout, got_status_line, written) = replay(invocation, &scratch);
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
    if std::env::var("RTX_CHECK_FIXTURES").as_deref() != Ok("1") {
        println!("skipped the tensor I/O fixture regeneration check: RTX_CHECK_FIXTURES is not 1");
        return;
    }
    let scratch = std::env::temp_dir().join(format!("rtx-hal-io-fixtures-{}", std::process::id()));
    let _ = fs::remove_dir_all(&scratch);
    fs::create_dir_all(&scratch).expect("scratch directory");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/regen-hal-io-fixtures.sh");
    let output = Command::new(script).arg("--out").arg(&scratch).output().expect("run the script");
    assert!(output.status.success(), "regen-hal-io-fixtures.sh failed:\n{}", String::from_utf8_lossy(&output.stderr));
    let fresh = files_under(&scratch);
    let checked_in = files_under(&fixtures());
    let _ = fs::remove_dir_all(&scratch);
    assert_eq!(checked_in.keys().collect::<Vec<_>>(), fresh.keys().collect::<Vec<_>>(), "file sets differ");
    let stale: Vec<_> = fresh.iter().filter(|(name, bytes)| checked_in[*name] != **bytes).map(|(n, _)| n).collect();
    assert!(stale.is_empty(), "stale fixtures {stale:?}; run scripts/regen-hal-io-fixtures.sh");
}
