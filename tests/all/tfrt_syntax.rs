//! TFRT's MLIR custom syntax through `rtx opt`. What each file under `tests/lit/opt/` prints is
//! checked by its own RUN and CHECK lines (`tests/all/lit.rs`); here, printing those files is a
//! fixpoint, and bytecode keeps what the text says. Custom spellings
//! build the same IR as their generic spellings, and errors name their line and column.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn rtx(arguments: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rtx"))
        .args(arguments)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rtx runs");
    child.stdin.take().expect("stdin").write_all(stdin).expect("writing stdin");
    child.wait_with_output().expect("rtx finishes")
}

/// `rtx opt ARGS` on `stdin`: its stdout, which must be a success.
fn opt(arguments: &[&str], stdin: &[u8]) -> String {
    let mut all = vec!["opt"];
    all.extend_from_slice(arguments);
    let output = rtx(&all, stdin);
    assert!(output.status.success(), "rtx {all:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("utf-8")
}

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lit/opt");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixture dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "mlir"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "fixtures missing in {}", dir.display());
    files
}

#[test]
fn printing_is_a_fixpoint_in_both_forms_and_with_locations() {
    for file in fixtures() {
        let source = std::fs::read(&file).expect("fixture");
        for flags in [&[][..], &["--mlir-print-op-generic"], &["--mlir-print-debuginfo"]] {
            let once = opt(flags, &source);
            let twice = opt(flags, once.as_bytes());
            assert!(once == twice, "{} {flags:?} is not a fixpoint:\n{once}\n---\n{twice}", file.display());
            // The other form reads back to the same program.
            let other =
                if flags.is_empty() { opt(&["--mlir-print-op-generic"], once.as_bytes()) } else { once.clone() };
            assert_eq!(opt(&[], other.as_bytes()), opt(&[], source.as_slice()), "{} {flags:?}", file.display());
        }
    }
}

#[test]
fn bytecode_keeps_what_the_custom_text_says() {
    let dir = std::env::temp_dir().join(format!("rtx-tfrt-syntax-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    for file in fixtures() {
        let bytecode = dir.join("out.mlirbc");
        let path = file.to_str().expect("path");
        let output = rtx(&["translate", "--mlir-to-mlirbc", path, "-o", bytecode.to_str().expect("path")], b"");
        assert!(output.status.success(), "{path}: {}", String::from_utf8_lossy(&output.stderr));
        for flags in [&["--mlir-print-debuginfo"][..], &[]] {
            let mut from_bytecode = flags.to_vec();
            from_bytecode.push(bytecode.to_str().expect("path"));
            let mut from_text = flags.to_vec();
            from_text.push(path);
            assert_eq!(opt(&from_bytecode, b""), opt(&from_text, b""), "{path} {flags:?}");
        }
    }
    std::fs::remove_dir_all(&dir).expect("removing temp dir");
}

/// The exact generic form (`print_generic`) of a parsed text.
fn ir_of(text: &str) -> String {
    let module = rtx::mlir::parse_text(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    rtx::mlir::print_generic(&module, rtx::mlir::PrintOptions { debuginfo: true }).expect("printable")
}

#[test]
fn custom_spellings_build_the_ops_their_generic_spellings_do() {
    let pairs: &[(&str, &str)] = &[
        (
            "%k = tfrt.constant.i32 42",
            r#"%k = "tfrt.constant.i32"() {value = 42 : i32} : () -> i32"#,
        ),
        (
            "%k = tfrt.constant.complex64 1.0, 2.0",
            r#"%k = "tfrt.constant.complex64"() {imaginary = 2.0 : f32, real = 1.0 : f32} : () -> complex<f32>"#,
        ),
        (
            "func.func private @f(i32) -> i32 attributes {tfrt.native}",
            r#""func.func"() <{function_type = (i32) -> i32, sym_name = "f", sym_visibility = "private"}> ({
            }) {tfrt.native} : () -> ()"#,
        ),
        (
            "func.func @g(%a: i1, %b: i32) -> i32 {\n  %r = tfrt.cond %a @t @f (%b) : (i32) -> (i32)\n  tfrt.return %r : i32\n}",
            r#""func.func"() <{function_type = (i1, i32) -> i32, sym_name = "g"}> ({
            ^bb0(%a: i1 loc(unknown), %b: i32 loc(unknown)):
              %r = "tfrt.cond"(%a, %b) {a_true_fn = @t, b_false_fn = @f} : (i1, i32) -> i32
              "tfrt.return"(%r) : (i32) -> ()
            }) : () -> ()"#,
        ),
        (
            "func.func @h(%a: i1, %b: i32) {\n  tfrt.if %a, %b : (i32) -> () {\n    tfrt.return\n  }\n  tfrt.return\n}",
            r#""func.func"() <{function_type = (i1, i32) -> (), sym_name = "h"}> ({
            ^bb0(%a: i1 loc(unknown), %b: i32 loc(unknown)):
              "tfrt.if"(%a, %b) ({
              ^bb0(%x: i32 loc(unknown)):
                "tfrt.return"() : () -> ()
              }, {
              ^bb0(%y: i32 loc(unknown)):
                "tfrt.return"() : () -> ()
              }) : (i1, i32) -> ()
              "tfrt.return"() : () -> ()
            }) : () -> ()"#,
        ),
        (
            "%w:2 = tfrt.while %c @body(%x, %y) parallel_iterations(2) : (i32, f32) -> (i32, f32)",
            r#"%w:2 = "tfrt.while"(%c, %x, %y) {body_fn = @body, parallel_iterations = 2 : i64} : (i1, i32, f32) -> (i32, f32)"#,
        ),
        (
            r#"%b = tfrt_test.benchmark "n"(%x : i32) max_count = 3, duration_secs = 1 { tfrt.return %x : i32 }"#,
            r#"%b = "tfrt_test.benchmark"(%x) ({
            ^bb0(%y: i32 loc(unknown)):
              "tfrt.return"(%y) : (i32) -> ()
            }) {duration_secs = 1 : i32, max_count = 3 : i32, name = "n", num_warmup_runs = 1 : i32} : (i32) -> !tfrt.chain"#,
        ),
    ];
    // Operands the snippets use, defined generically around them.
    let wrap = |body: &str| {
        format!("%c = \"test.c\"() : () -> i1\n%x = \"test.x\"() : () -> i32\n%y = \"test.y\"() : () -> f32\n{body}\n")
    };
    for (custom, generic) in pairs {
        assert_eq!(ir_of(&wrap(custom)), ir_of(&wrap(generic)), "{custom}");
    }
}

#[test]
fn errors_name_file_line_and_column() {
    let cases: &[(&str, &str)] = &[
        (
            "func.func @f() {\n  %x = tfrt.frobnicate.i32 1\n}",
            "<stdin>:2:8: error: unknown custom operation 'tfrt.frobnicate.i32'",
        ),
        (
            "func.func @f(%a: i32) {\n  %x = tfrt.add.i32 %a\n}",
            "<stdin>:2:8: error: 1 operands present, but expected 2",
        ),
        (
            "func.func @f(%a: f32, %c: !tfrt.chain) {\n  %x = tfrt.print.i32 %a, %c\n}",
            "<stdin>:2:23: error: use of value '%a' expects a different type",
        ),
        (
            "func.func @f(%a: i32) {\n  %r = tfrt.if %a : () -> (i32) {\n    tfrt.return\n  }\n}",
            "<stdin>:5:1: error: expected 'else' in 'tfrt.if' with result values",
        ),
        ("%x = tfrt.constant.i32 1.5", "<stdin>:1:24: error: floating point value not valid for an integer type"),
        ("tfrt.repeat.i32 {\n}", "<stdin>:1:17: error: expected the trip count of 'tfrt.repeat.i32'"),
    ];
    for (text, expected) in cases {
        let output = rtx(&["opt", "-allow-unregistered-dialect", "-"], text.as_bytes());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{text}: {stderr}");
        assert!(stderr.starts_with(expected), "{text}:\n{stderr}\nexpected: {expected}");
        assert!(output.stdout.is_empty(), "{text}");
    }
}

#[test]
fn generic_and_debuginfo_flags_print_as_upstream() {
    let text = "func.func @f(%a: i32) -> i32 {\n  %x = tfrt.add.i32 %a, %a loc(\"sum\")\n  tfrt.return %x : i32\n}\n";
    assert_eq!(
        opt(&["--mlir-print-op-generic"], text.as_bytes()),
        "\"builtin.module\"() ({\n  \"func.func\"() <{function_type = (i32) -> i32, sym_name = \"f\"}> ({\n  ^bb0(%arg0: i32):\n    %0 = \"tfrt.add.i32\"(%arg0, %arg0) : (i32, i32) -> i32\n    \"tfrt.return\"(%0) : (i32) -> ()\n  }) : () -> ()\n}) : () -> ()\n"
    );
    assert_eq!(
        opt(&["-mlir-print-debuginfo"], text.as_bytes()),
        "module {\n  func.func @f(%arg0: i32 loc(\"<stdin>\":1:14)) -> i32 {\n    %0 = tfrt.add.i32 %arg0, %arg0 loc(\"sum\")\n    tfrt.return %0 : i32 loc(\"<stdin>\":3:3)\n  } loc(\"<stdin>\":1:1)\n} loc(\"<stdin>\":0:0)\n"
    );
}
