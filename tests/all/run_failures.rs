//! `rtx run` fails as `iree-run-module` fails: the same stdout and exit status for every class of
//! failing call (arity, element type, shape, rank, missing function, unparsable input, missing
//! file, `vm.fail` in the call, failing checks and expectations, bad flags); stderr may say more.
//!
//! Two sources of truth: the calls in tests/fixtures/run_failures/cases.txt with what
//! `iree-run-module` 3.13 printed for them (scripts/regen/run-failure-fixtures.sh; checked fresh
//! with `RTX_CHECK_FIXTURES=1`), and, when the IREE tools are at hand, calls generated here from
//! each exported function's declaration and run through both tools side by side.

use std::path::{Path, PathBuf};
use std::process::Command;

use rtx::vm::Module;
use rtx_test_support::iree_tools_or_skip;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A call: the fixture folder it runs in and the flags after the tool's name.
#[derive(Debug, Clone)]
struct Call {
    folder: String,
    flags: Vec<String>,
}

impl Call {
    fn new(folder: &str, flags: Vec<String>) -> Call {
        let mut flags = flags;
        if !flags.iter().any(|flag| flag.starts_with("--device=")) {
            flags.insert(0, "--device=local-sync".to_owned());
        }
        Call { folder: folder.to_owned(), flags }
    }
}

/// What a tool printed and how it exited.
#[derive(Debug, PartialEq)]
struct Outcome {
    status: i32,
    stdout: String,
    stderr: String,
}

fn run(program: &Path, prefix: &[&str], call: &Call) -> Outcome {
    let output = Command::new(program)
        .current_dir(fixtures().join(&call.folder))
        .args(prefix)
        .args(&call.flags)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", program.display()));
    Outcome {
        status: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn rtx_run(call: &Call) -> Outcome {
    run(Path::new(env!("CARGO_BIN_EXE_rtx")), &["run"], call)
}

/// The difference between `iree`'s and `rtx`'s outcome that matters (stdout, exit status, and
/// whether anything went to stderr), if any.
fn difference(call: &Call, iree: &Outcome, rtx: &Outcome) -> Option<String> {
    let same =
        iree.status == rtx.status && iree.stdout == rtx.stdout && iree.stderr.is_empty() == rtx.stderr.is_empty();
    (!same).then(|| {
        format!(
            "{} {}:\n  iree-run-module: exit {}\n{}{}  rtx run: exit {}\n{}{}",
            call.folder,
            call.flags.join(" "),
            iree.status,
            iree.stdout,
            iree.stderr,
            rtx.status,
            rtx.stdout,
            rtx.stderr
        )
    })
}

fn cases() -> Vec<Call> {
    let text = std::fs::read_to_string(fixtures().join("run_failures/cases.txt")).expect("cases.txt is readable");
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let mut fields = line.split_whitespace().map(str::to_owned);
            let folder = fields.next().expect("a folder");
            Call::new(&folder, fields.collect())
        })
        .collect()
}

/// An expected file: `$ command`, `exit status: N`, `--- stdout`, stdout, `--- stderr`, stderr.
fn recorded(n: usize) -> Outcome {
    let path = fixtures().join(format!("run_failures/expected/{n}.txt"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (_command, rest) = text.split_once('\n').expect("a command line");
    let (status, rest) = rest.split_once('\n').expect("a status line");
    let status = status.strip_prefix("exit status: ").and_then(|s| s.parse().ok()).expect("exit status: N");
    let rest = rest.strip_prefix("--- stdout\n").expect("--- stdout");
    let (stdout, stderr) = rest.split_once("--- stderr\n").expect("--- stderr");
    Outcome { status, stdout: stdout.to_owned(), stderr: stderr.to_owned() }
}

#[test]
fn rtx_run_fails_as_iree_run_module_did_on_every_recorded_case() {
    let cases = cases();
    assert!(cases.len() >= 40, "cases.txt has {} cases", cases.len());
    let failures: Vec<String> = cases
        .iter()
        .enumerate()
        .filter_map(|(index, call)| difference(call, &recorded(index + 1), &rtx_run(call)))
        .collect();
    assert!(failures.is_empty(), "{} of {} cases differ:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

#[test]
fn the_recorded_cases_cover_every_failure_class_and_most_fail() {
    let outcomes: Vec<Outcome> = (1..=cases().len()).map(recorded).collect();
    let failing = outcomes.iter().filter(|o| o.status != 0).count();
    assert!(failing * 10 >= outcomes.len() * 9, "only {failing} of {} recorded calls fail", outcomes.len());
    // Failures both before the call (nothing on stdout) and in it (after `EXEC @f`).
    assert!(outcomes.iter().any(|o| o.status == 1 && o.stdout.is_empty()));
    assert!(outcomes.iter().any(|o| o.status == 1 && o.stdout.starts_with("EXEC @")));
    for needle in [
        "expected 2 arguments but passed 1",
        "function expected fewer input values",
        "element type mismatch",
        "shape dimension 0 mismatch",
        "shape rank mismatch",
        "no function `nope` exported by module",
        "parsing value `abc` as i32",
        "failed to open file 'missing.vmfb'",
        "status check failed",
        "does not match the expected",
    ] {
        assert!(
            outcomes.iter().any(|o| o.stderr.contains(needle) || o.stdout.contains(needle)),
            "no case shows {needle:?}"
        );
    }
}

#[test]
fn recorded_cases_are_what_iree_run_module_prints_now() {
    if iree_tools_or_skip().is_none() {
        return;
    }
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let scratch = std::env::temp_dir().join(format!("rtx-run-failures-{}", std::process::id()));
    let status = Command::new(repo.join("scripts/regen/run-failure-fixtures.sh"))
        .arg("--out")
        .arg(&scratch)
        .status()
        .expect("the regeneration script runs");
    assert!(status.success(), "scripts/regen/run-failure-fixtures.sh failed");
    for n in 1..=cases().len() {
        let name = format!("expected/{n}.txt");
        let fresh = std::fs::read(scratch.join(&name)).expect("a regenerated file");
        let checked_in = std::fs::read(fixtures().join("run_failures").join(&name)).expect("a checked-in file");
        assert!(fresh == checked_in, "run_failures/{name} is stale: run scripts/regen/run-failure-fixtures.sh");
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

/// One argument of an exported function, from its `iree.abi.declaration`: a scalar type
/// (`i32`) or a tensor's shape (`?` for a dynamic dimension) and element type.
#[derive(Debug, Clone)]
enum Argument {
    Scalar(String),
    Tensor { shape: Vec<String>, element: String },
}

impl Argument {
    /// `%input0: tensor<4x?xf32>` or `%input1: i32`; `None` for anything else (lists, buffers).
    fn parse(text: &str) -> Option<Argument> {
        let (_, ty) = text.split_once(": ")?;
        let ty = ty.split(" {").next()?.trim();
        if let Some(inner) = ty.strip_prefix("tensor<").and_then(|t| t.strip_suffix('>')) {
            let mut parts: Vec<String> = inner.split('x').map(str::to_owned).collect();
            let element = parts.pop()?;
            return Some(Argument::Tensor { shape: parts, element });
        }
        matches!(ty, "i32" | "i64" | "f32" | "f64").then(|| Argument::Scalar(ty.to_owned()))
    }

    /// A value both tools accept for this argument (dynamic dimensions become 3).
    fn valid(&self) -> String {
        match self {
            Argument::Scalar(ty) if ty.starts_with('f') => "1.5".to_owned(),
            Argument::Scalar(_) => "2".to_owned(),
            Argument::Tensor { shape, element } => tensor(shape.iter().map(|d| dim(d)).collect(), element),
        }
    }

    /// Wrong inputs for this argument: element type, shape, rank, unparsable contents.
    fn wrong(&self) -> Vec<String> {
        match self {
            Argument::Scalar(_) => vec!["zz".to_owned(), "(null)".to_owned(), "2x2xf32=1".to_owned()],
            Argument::Tensor { shape, element } => {
                let dims: Vec<usize> = shape.iter().map(|d| dim(d)).collect();
                let other_element = if element == "f32" { "i32" } else { "f32" };
                let mut wrong =
                    vec![tensor(dims.clone(), other_element), format!("{}=1,zz", shape_text(&dims, element))];
                if let Some(first) = dims.first() {
                    let mut wider = dims.clone();
                    wider[0] = first + 1;
                    wrong.push(tensor(wider, element));
                }
                let mut deeper = vec![1];
                deeper.extend(&dims);
                wrong.push(tensor(deeper, element));
                wrong.push("7".to_owned());
                wrong
            }
        }
    }
}

fn dim(text: &str) -> usize {
    text.parse().unwrap_or(3)
}

fn shape_text(dims: &[usize], element: &str) -> String {
    dims.iter().map(|d| format!("{d}x")).collect::<String>() + element
}

fn tensor(dims: Vec<usize>, element: &str) -> String {
    format!("{}=1", shape_text(&dims, element))
}

/// Failing (and some succeeding) calls of every runnable export of `module`, made up from the
/// declarations: one input too few and too many, each argument wrong in turn, a missing `.npy`
/// file, a misspelt function name.
fn generated_calls(folder: &str, module: &str) -> Vec<Call> {
    let loaded = Module::load_file(fixtures().join(folder).join(module)).expect("a loadable fixture");
    let mut calls = Vec::new();
    for export in loaded.exported_functions() {
        let name = &export.local_name;
        if name.starts_with("__") || name.contains('$') {
            continue;
        }
        let Some(declaration) = loaded.export_signature(export).and_then(|s| s.attr("iree.abi.declaration")) else {
            continue;
        };
        let Some(arguments) = declaration
            .split_once('(')
            .and_then(|(_, rest)| rest.split_once(") ->").or_else(|| rest.rsplit_once(')')))
            .map(|(list, _)| list)
            .map(|list| list.split(", ").filter(|a| !a.is_empty()).map(Argument::parse).collect::<Option<Vec<_>>>())
        else {
            continue;
        };
        let Some(arguments) = arguments else { continue };
        let valid: Vec<String> = arguments.iter().map(Argument::valid).collect();
        let call = |function: &str, inputs: &[String]| {
            let mut flags = vec![format!("--module={module}"), format!("--function={function}")];
            flags.extend(inputs.iter().map(|input| format!("--input={input}")));
            Call::new(folder, flags)
        };
        if !valid.is_empty() {
            calls.push(call(name, &valid[..valid.len() - 1]));
        }
        calls.push(call(name, &[valid.clone(), vec!["1".to_owned()]].concat()));
        calls.push(call(&format!("{name}_"), &valid));
        for (index, argument) in arguments.iter().enumerate() {
            for wrong in argument.wrong() {
                let mut inputs = valid.clone();
                inputs[index] = wrong;
                calls.push(call(name, &inputs));
            }
            let mut inputs = valid.clone();
            inputs[index] = "@not_there.npy".to_owned();
            calls.push(call(name, &inputs));
        }
    }
    calls
}

#[test]
fn rtx_run_fails_as_iree_run_module_does_on_generated_calls() {
    let Some(tools) = iree_tools_or_skip() else { return };
    let iree = tools.join("iree-run-module");
    let modules = [
        ("hal_run", "programs_vmvx.vmfb"),
        ("hal_run", "programs_embedded.vmfb"),
        ("hal_run", "async_vmvx.vmfb"),
        ("vm", "calls.vmfb"),
        ("vm", "control_flow.vmfb"),
        ("vm", "float_math.vmfb"),
    ];
    let calls: Vec<Call> = modules.iter().flat_map(|(folder, module)| generated_calls(folder, module)).collect();
    assert!(calls.len() >= 200, "only {} generated calls", calls.len());
    let mut failing = 0;
    let mut differences = Vec::new();
    for call in &calls {
        let theirs = run(&iree, &[], call);
        failing += usize::from(theirs.status != 0);
        differences.extend(difference(call, &theirs, &rtx_run(call)));
    }
    assert!(failing * 2 >= calls.len(), "only {failing} of {} generated calls fail", calls.len());
    assert!(
        differences.is_empty(),
        "{} of {} calls differ:\n{}",
        differences.len(),
        calls.len(),
        differences.join("\n")
    );
}
