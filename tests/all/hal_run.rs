//! `rtx run` and `rtx check` on the tensor programs of tests/fixtures/hal_run, for every CPU
//! executable format: what `iree-run-module` prints, every check reported, constants written in
//! place. The programs through the runtime API are crates/runtime/tests/all/hal_run.rs's.

use rtx_test_support::iree_tools_or_skip;

const FORMATS: [&str; 3] = ["vmvx", "embedded", "system"];

/// `rtx run` and `iree-run-module` on the same module and inputs print the same thing, for every
/// executable format (needs the IREE tools: `RTX_CHECK_FIXTURES=1`, as in scripts/test.sh).
#[test]
fn rtx_run_prints_what_iree_run_module_prints() {
    let Some(tools) = iree_tools_or_skip() else { return };
    let calls: [(&str, &[&str]); 11] = [
        ("programs", &["--function=scale_dynamic", "--input=4xf32=1e-40 -1e-20 1e-20 2", "--input=1e-20"]),
        ("programs", &["--function=abs", "--input=4xf32=-1 2.5 -0 nan"]),
        ("programs", &["--function=add", "--input=2x3xi32=[1 2 3][4 5 2147483647]", "--input=2x3xi32=1"]),
        (
            "programs",
            &[
                "--function=matmul",
                "--input=4x8xf32=[1 2 3 4 5 6 7 8][0 1 0 1 0 1 0 1][2 2 2 2 2 2 2 2][-1 0 1 0 -1 0 1 0]",
                "--input=8x4xf32=0.5",
            ],
        ),
        ("programs", &["--function=dense_relu", "--input=1x4xf32=0.5 -1 2 1"]),
        ("programs", &["--function=scale_dynamic", "--input=7xf32=1 2 3 4 5 6 7", "--input=-0.5"]),
        ("programs", &["--function=sum", "--input=3x5xi32=[1 2 3 4 5][6 7 8 9 10][11 12 13 14 15]"]),
        ("programs", &["--function=abs", "--input=5xf32=1"]),
        (
            "async",
            &["--function=scores", "--input=2x3xf32=[1 0 -1][0.5 2 1]", "--input=3x4xf32=[1 2 3 4][0 1 0 1][-1 0 1 2]"],
        ),
        ("async", &["--function=scale", "--input=6xi32=1 2 3 -4 5 2147483647", "--input=-3"]),
        ("async", &["--function=scale", "--input=5x2xi32=1", "--input=-3"]),
    ];
    let directory = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hal_run");
    for (format, device) in FORMATS.iter().flat_map(|f| ["local-sync", "local-task"].map(|d| (*f, d))) {
        for (module, call) in calls {
            let run = |program: std::path::PathBuf, first: Option<&str>| {
                let output = std::process::Command::new(program)
                    .current_dir(&directory)
                    .args(first)
                    .arg(format!("--device={device}"))
                    .arg(format!("--module={module}_{format}.vmfb"))
                    .args(call)
                    .output()
                    .expect("the tool runs");
                let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
                (output.status.success(), String::from_utf8_lossy(&output.stdout).into_owned(), stderr)
            };
            let (ours_ok, ours, our_errors) = run(env!("CARGO_BIN_EXE_rtx").into(), Some("run"));
            let (theirs_ok, theirs, their_errors) = run(tools.join("iree-run-module"), None);
            assert_eq!(
                (ours_ok, &ours),
                (theirs_ok, &theirs),
                "{format} {call:?}\nrtx: {our_errors}\nIREE: {their_errors}"
            );
        }
    }
}

/// `rtx check` runs every argument-less export as a test with the check module: the expectations
/// in src/checks.mlir pass or fail as written, with IREE's messages.
#[test]
fn rtx_check_reports_every_test() {
    let expected = "PASS add_ok
PASS near_ok
PASS scalar_ok
FAIL mismatch: Expected equality of these values. Contents does not match.
  lhs:
    2x2xi32=[1 4][9 16]
  rhs:
    2x2xi32=[1 4][9 15]
FAIL not_near: Expected near equality of these values. Contents does not match to tolerance parameters \
atol=0.0001, rtol=0. The first failure occurs at index 1 as the lhs value 0.5 differs from the rhs value 0.6 by \
1.000e-01.
  lhs:
    2xf32=1 0.5
  rhs:
    2xf32=1 0.6
3 passed, 2 failed
";
    for format in FORMATS {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_rtx"))
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/hal_run"))
            .args(["check", "--device=local-sync", &format!("--module=checks_{format}.vmfb")])
            .output()
            .expect("rtx runs");
        assert_eq!(String::from_utf8_lossy(&output.stdout), expected, "{format}");
        assert_eq!(output.status.code(), Some(1), "{format}: failures exit 1");
    }
}

/// A dispatch that sorts its constant operand in place (the compiler ties the result to the
/// imported constant): the constant must be writable memory, not the read-only mapped module.
#[test]
fn constants_written_in_place_get_writable_memory() {
    for format in FORMATS {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_rtx"))
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/hal_run"))
            .args([
                "run",
                "--device=local-sync",
                &format!("--module=in_place_{format}.vmfb"),
                "--function=sort_constant",
            ])
            .output()
            .expect("rtx runs");
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            "EXEC @sort_constant\nresult[0]: hal.buffer_view\n4xi32=0 1 2 3\n",
            "{format}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
