//! `rtx run` against `iree-run-module`: every invocation in tests/fixtures/vm/invocations.txt is
//! run through the `rtx` binary and its exit status, stdout and stderr are compared with what
//! `iree-run-module` 3.13 printed for the same module and flags (tests/fixtures/vm/expected).
//!
//! Each invocation runs three times: as shipped (loops as machine code where the platform has the
//! loop compiler), with compiled code entered at every block (`RTX_VM_JIT=all`, so straight-line
//! code goes through the compiler too), and interpreted only (`RTX_VM_JIT=0`).
//!
//! Two deliberate differences, checked precisely rather than skipped:
//! * Integer division by zero and `MIN / -1`: IREE's runtime dies of SIGFPE (exit status 136, 128
//!   plus the signal, as a shell reports it; nothing on stderr); rtx fails the call with `INVALID_ARGUMENT` and exit status 1, after the
//!   same stdout.
//! * Errors raised by the runtime rather than by `vm.fail` (a list index out of range): IREE
//!   prefixes the message with its C source file and line; rtx prints `<vm>:0` there. Everything
//!   after that prefix (status, message, annotations) must match.

use rtx_test_support::{fixture_dir, invocations};
use std::process::Command;

fn split_expected(text: &str) -> (i32, String, String) {
    let mut lines = text.splitn(2, '\n');
    let _command = lines.next();
    let rest = lines.next().expect("expected file has a body");
    let (status, rest) = rest.split_once('\n').expect("status line");
    let status = status.strip_prefix("exit status: ").expect("status line").parse().expect("status number");
    let rest = rest.strip_prefix("--- stdout\n").expect("stdout header");
    let (stdout, stderr) = rest.split_once("--- stderr\n").expect("stderr header");
    (status, stdout.to_owned(), stderr.to_owned())
}

/// The part of an IREE status line after its `file:line: ` prefix.
fn after_location(line: &str) -> &str {
    line.split_once(": ").map_or(line, |(_, rest)| rest)
}

#[test]
fn rtx_run_prints_what_iree_run_module_printed() {
    let mut failures = Vec::new();
    let invocations = invocations();
    assert!(invocations.len() >= 150, "the fixture set has {} invocations", invocations.len());
    for (mode, invocation) in ["loops", "all", "0"].iter().flat_map(|mode| invocations.iter().map(move |i| (mode, i))) {
        let expected = std::fs::read_to_string(fixture_dir("expected").join(&invocation.expected))
            .unwrap_or_else(|e| panic!("{}: {e}", invocation.expected));
        let (status, stdout, stderr) = split_expected(&expected);
        let output = Command::new(env!("CARGO_BIN_EXE_rtx"))
            .current_dir(fixture_dir(""))
            .env("RTX_VM_JIT", mode)
            .arg("run")
            .arg("--device=local-sync")
            .arg(format!("--module={}.vmfb", invocation.module))
            .arg(format!("--function={}", invocation.function))
            .args(&invocation.flags)
            .output()
            .expect("rtx runs");
        let got_status = output.status.code().unwrap_or(-1);
        let got_stdout = String::from_utf8_lossy(&output.stdout);
        let got_stderr = String::from_utf8_lossy(&output.stderr);
        // SIGFPE is signal 8.
        let ok = if status == 128 + 8 {
            got_status == 1
                && got_stdout == stdout
                && got_stderr.starts_with("<vm>:0: INVALID_ARGUMENT; integer division")
                && got_stderr.contains(&format!("invoking function '{}'", invocation.function))
        } else if stderr.starts_with("<vm>:0: ") || stderr.is_empty() {
            got_status == status && got_stdout == stdout && got_stderr == stderr
        } else {
            got_status == status && got_stdout == stdout && after_location(&got_stderr) == after_location(&stderr)
        };
        if !ok {
            failures.push(format!(
                "invocations.txt:{} ({}, RTX_VM_JIT={mode}): expected status {status}\n{stdout}{stderr}got status {got_status}\n{got_stdout}{got_stderr}",
                invocation.line, invocation.expected
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} invocations differ:\n{}",
        failures.len(),
        invocations.len() * 3,
        failures.join("\n")
    );
}
