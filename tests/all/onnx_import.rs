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
