//! `rtx import-onnx` then `rtx run` on the BEF file, and `rtx run` on the `.onnx` itself, as a
//! user runs a model. The importer's own
//! tests are crates/onnx/tests/all/onnx_import.rs, the imported models' runs against ONNX's
//! outputs crates/runtime/tests/all/onnx_import.rs.

use rtx_test_support::fixtures_dir;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    fixtures_dir().join("onnx")
}

fn rtx(arguments: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_rtx")).args(arguments).output().expect("rtx runs")
}

/// `rtx import-onnx` then `rtx run` on the BEF file, as a user runs a model: the outputs match
/// ONNX's (iree-run-module's `--expected_output` comparison), on both work queues.
#[test]
fn the_rtx_command_imports_and_runs_a_model() {
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("onnx_import");
    std::fs::create_dir_all(&scratch).unwrap();
    let folder = fixtures().join("tiny");
    let (model, bef) = (folder.join("gemm_matmul.onnx"), scratch.join("gemm_matmul.bef"));
    let output = rtx(&["import-onnx", model.to_str().unwrap(), "-o", bef.to_str().unwrap()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    for queue in ["s", "mstd"] {
        let output = rtx(&[
            "run",
            &format!("--module={}", bef.display()),
            &format!("--work_queue_type={queue}"),
            &format!("--input=@{}", folder.join("gemm_matmul.input_0.npy").display()),
            &format!("--expected_output=@{}", folder.join("gemm_matmul.output_0.npy").display()),
            "--expected_f32_threshold=1e-4",
        ]);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
        assert!(
            stdout.starts_with("EXEC @gemm_matmul\n[SUCCESS] all function outputs matched their expected values."),
            "{stdout}"
        );
    }
    // An input of another shape than the graph declares is refused naming the input.
    let output = rtx(&["run", &format!("--module={}", bef.display()), "--input=4x3xf32=1"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("INVALID_ARGUMENT; nn.expect_shape: input `x` has shape [4, 3], but the graph takes [3, 4]"),
        "{stderr}"
    );
    let mlir = scratch.join("gemm_matmul.mlir");
    assert!(rtx(&["import-onnx", model.to_str().unwrap(), "-o", mlir.to_str().unwrap()]).status.success());
    let text = std::fs::read_to_string(&mlir).unwrap();
    assert!(text.contains("func.func @gemm_matmul(%arg0: !tfrt_tensor.tensor) -> !tfrt_tensor.tensor"), "{text}");
    assert!(text.contains("\"nn.gemm.f32\""), "{text}");
    let wrong = rtx(&["import-onnx", model.to_str().unwrap(), "-o", scratch.join("x.txt").to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&wrong.stderr)
        .contains("the output's extension says its format: .mlir, .mlirbc or .bef"));
    let usage = rtx(&["import-onnx", "--help"]);
    assert!(String::from_utf8_lossy(&usage.stdout).starts_with("usage: rtx import-onnx IN.onnx -o OUT"));
}

/// `rtx run --module=model.onnx` imports the model in memory and runs its graph's function, with
/// the outputs ONNX computes; an operator rtx lacks is an error naming the node.
#[test]
fn the_rtx_command_runs_an_onnx_model_as_a_module() {
    let folder = fixtures().join("tiny");
    let output = rtx(&[
        "run",
        &format!("--module={}", folder.join("gemm_matmul.onnx").display()),
        &format!("--input=@{}", folder.join("gemm_matmul.input_0.npy").display()),
        &format!("--expected_output=@{}", folder.join("gemm_matmul.output_0.npy").display()),
        "--expected_f32_threshold=1e-4",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        stdout.starts_with("EXEC @gemm_matmul\n[SUCCESS] all function outputs matched their expected values."),
        "{stdout}"
    );
    let unsupported = fixtures().join("errors/unsupported_operator.onnx");
    let output = rtx(&["run", &format!("--module={}", unsupported.display())]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("UNIMPLEMENTED") && stderr.contains("node `the_frobnicate` (Frobnicate)"), "{stderr}");
}

/// Architectures as users export them (tests/fixtures/onnx/architectures.py: a transformer encoder
/// taking int64 token ids and a mask, a U-Net, MobileNet-style blocks) run from the command line
/// with onnxruntime's outputs.
#[test]
fn the_rtx_command_runs_architectures_with_onnxruntimes_outputs() {
    let folder = fixtures().join("architectures");
    for name in ["encoder", "unet", "mobilenet"] {
        let mut arguments = vec![format!("--module={}", folder.join(format!("{name}.onnx")).display())];
        for (kind, flag) in [("input", "--input"), ("output", "--expected_output")] {
            let files = (0..).map(|k| folder.join(format!("{name}.{kind}_{k}.npy"))).take_while(|p| p.exists());
            arguments.extend(files.map(|file| format!("{flag}=@{}", file.display())));
        }
        arguments.push("--expected_f32_threshold=1e-4".into());
        let output = rtx(&[&["run"], &arguments.iter().map(String::as_str).collect::<Vec<_>>()[..]].concat());
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{name}: {stdout}{}", String::from_utf8_lossy(&output.stderr));
        assert!(stdout.contains("[SUCCESS] all function outputs matched their expected values."), "{stdout}");
    }
}

/// Strings, sequences and optionals from the command line: numpy's `str` arrays in and out, a
/// sequence as an `np.savez` archive, an absent optional as `(null)`; outputs written by rtx
/// read back as numpy wrote the expected ones (tests/fixtures/onnx/generate.py, worked by hand).
#[test]
fn the_rtx_command_passes_strings_sequences_and_optionals() {
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("onnx_values");
    std::fs::create_dir_all(&scratch).unwrap();
    let file = |folder: &str, name: &str| fixtures().join(folder).join(name).display().to_string();
    let succeeded = |output: &std::process::Output| {
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
        assert!(stdout.contains("[SUCCESS] all function outputs matched their expected values."), "{stdout}");
    };
    let labels = format!("--module={}", file("strings", "labels.onnx"));
    let input = format!("--input=@{}", file("strings", "labels.input_0.npy"));
    succeeded(&rtx(&[
        "run",
        &labels,
        &input,
        &format!("--expected_output=@{}", file("strings", "labels.output_0.npy")),
        &format!("--expected_output=@{}", file("strings", "labels.output_1.npy")),
    ]));
    // rtx writes the bytes numpy writes for the same array of str.
    let written = scratch.join("joined.npy");
    let output = rtx(&["run", &labels, &input, &format!("--output=@{}", written.display()), "--output="]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(std::fs::read(&written).unwrap(), std::fs::read(file("strings", "labels.output_0.npy")).unwrap());
    let printed = rtx(&["run", &labels, &input]);
    let stdout = String::from_utf8_lossy(&printed.stdout);
    assert!(stdout.contains("result[0]: tensor of strings\n2xstring=\"<a!\" \">é?\"\n"), "{stdout}");

    let module = format!("--module={}", file("sequences", "insert_concat.onnx"));
    let parts = format!("--input=@{}", file("sequences", "insert_concat.input_0.npz"));
    let extra = format!("--input=@{}", file("sequences", "insert_concat.input_1.npy"));
    let expected = |k: &str| format!("--expected_output=@{}", file("sequences", &format!("insert_concat.output_{k}")));
    for (maybe, has) in [
        (format!("--input=@{}", file("sequences", "insert_concat.input_2.npy")), "2_given.npy"),
        ("--input=(null)".to_owned(), "2_absent.npy"),
    ] {
        succeeded(&rtx(&[
            "run",
            &module,
            &parts,
            &extra,
            &maybe,
            &expected("0.npz"),
            &expected("1.npy"),
            &expected(has),
        ]));
    }
    let grown = scratch.join("grown.npz");
    // The run with `maybe` absent, and these flags.
    let absent = |flags: &[&str]| rtx(&[&["run", &module, &parts, &extra, "--input=(null)"], flags].concat());
    let output = absent(&[&format!("--output=@{}", grown.display()), "--output=", "--output="]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    // What rtx wrote is what numpy wrote, read back by rtx's own comparison.
    let (joined, has) = (expected("1.npy"), expected("2_absent.npy"));
    succeeded(&absent(&[&format!("--expected_output=@{}", grown.display()), &joined, &has]));
    let printed = absent(&[]);
    let stdout = String::from_utf8_lossy(&printed.stdout);
    assert!(stdout.contains("result[0]: sequence of 3\n2xf32=1 2\n1xf32=3\n2xf32=4 5\nresult[1]"), "{stdout}");
    // A sequence asked for as an `.npy` file, and a sequence that differs, are errors.
    let output = absent(&["--output=@x.npy", "--output=", "--output="]);
    assert!(String::from_utf8_lossy(&output.stderr).contains("a sequence is written to a .npz file"), "{output:?}");
    let other = format!("--expected_output=@{}", file("sequences", "insert_concat.input_0.npz"));
    let output = absent(&[&other, &joined, &has]);
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("[FAILED] result[0]: a sequence of 3 tensors; expected 2"),
        "{output:?}"
    );
}
