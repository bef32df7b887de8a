//! `rtx bef-exec`'s failures: exit status, stderr and stdout together. What it prints for programs
//! that run is checked by the lit-style files under `tests/lit/bef_exec/` (`tests/all/lit.rs`).

use std::process::Command;

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
