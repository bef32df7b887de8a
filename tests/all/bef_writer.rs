//! The `rtx translate --mlir-to-bef` command writes what `mlir_to_bef` writes, with or without the
//! optional sections, and names the file, line and column of what BEF cannot encode. The writer's
//! own tests are crates/bef/tests/all/bef_writer.rs.

use std::process::Command;

use rtx::bef::{mlir_to_bef, WriteOptions};

/// The program crates/bef/tests/all/bef_writer.rs derives the BEF of by hand.
const MAIN_42: &str = include_str!("../fixtures/bef/main_42.mlir");

/// What `mlir_to_bef` writes for `text` with `options`.
fn bef_with(text: &str, options: WriteOptions) -> Vec<u8> {
    mlir_to_bef(&rtx::mlir::parse_text(text).expect("test input parses"), &options).expect("writes")
}

fn bef(text: &str) -> Vec<u8> {
    bef_with(text, WriteOptions::default())
}

fn bef_without_optional_sections(text: &str) -> Vec<u8> {
    bef_with(text, WriteOptions { disable_optional_sections: true })
}

fn rtx(arguments: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rtx")).args(arguments).output().expect("rtx runs")
}

#[test]
fn the_translate_command_writes_what_the_library_writes() {
    let dir = std::env::temp_dir().join(format!("rtx-bef-writer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let input = dir.join("main.mlir");
    std::fs::write(&input, MAIN_42).expect("input written");
    let input = input.to_str().expect("utf-8 path");
    let output = dir.join("main.bef");
    let run = rtx(&["translate", "--mlir-to-bef", input, "-o", output.to_str().expect("utf-8 path")]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(std::fs::read(&output).expect("output"), bef(MAIN_42));
    let run = rtx(&["translate", "--mlir-to-bef", input, "--disable-optional-sections"]);
    assert_eq!(run.stdout, bef_without_optional_sections(MAIN_42));
    let run = rtx(&["translate", "--mlir-to-bef", input, "--disable-optional-sections=false"]);
    assert_eq!(run.stdout, bef(MAIN_42));
    let run = rtx(&["translate", "--mlir-to-bef", input, "--disable-optional-sections=maybe"]);
    assert!(!run.status.success());
    let bad = dir.join("bad.mlir");
    std::fs::write(
        &bad,
        "\"func.func\"() <{function_type = () -> (), sym_name = \"f\"}> ({\n  \"x.a\"() : () -> ()\n}) : () -> ()\n",
    )
    .expect("input written");
    let run = rtx(&["translate", "--mlir-to-bef", bad.to_str().expect("utf-8 path")]);
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("bad.mlir\":2:3: `x.a`: all functions need to have a tfrt.return"), "{stderr}");
    std::fs::remove_dir_all(&dir).expect("temp dir removed");
}
