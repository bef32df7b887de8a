//! `rtx_onnx::import` refuses what it cannot import with clear errors, never panics: corrupt and
//! truncated files are decode errors, unsupported operators and element types name their node. The
//! imported models run against ONNX's outputs in crates/runtime/tests/all/onnx_import.rs.

use std::path::PathBuf;
use std::sync::Arc;

use rtx_onnx::{import, ImportError};
use rtx_test_support::fixtures_dir;

fn fixtures() -> PathBuf {
    fixtures_dir().join("onnx")
}

fn import_error(bytes: &[u8]) -> String {
    match import(Arc::new(bytes.to_vec())) {
        Ok(_) => panic!("imported"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn corrupt_and_truncated_files_are_decode_errors() {
    let model = std::fs::read(fixtures().join("light/squeezenet.onnx")).unwrap();
    for cut in [1, 7, 100, model.len() / 2, model.len() - 1] {
        let message = import_error(&model[..cut]);
        assert!(message.starts_with("not a valid ONNX model"), "cut at {cut}: {message}");
    }
    let mut flipped = model.clone();
    for (i, byte) in flipped.iter_mut().enumerate().step_by(97) {
        *byte ^= (i % 251) as u8 | 1;
    }
    // Corruption may still decode as some protobuf; it must fail cleanly either way.
    let _ = import(Arc::new(flipped));
    assert!(import_error(b"\x89PNG\r\n\x1a\n").starts_with("not a valid ONNX model"));
    assert_eq!(import_error(b""), "the model has no graph");
}

#[test]
fn unsupported_operators_and_types_name_their_node() {
    let model = std::fs::read(fixtures().join("tiny/gemm_matmul.onnx")).unwrap();
    // The same bytes with the op type `MatMul` renamed: protobuf strings keep their length.
    let renamed = replace(&model, b"MatMul", b"MatMux");
    let message = import_error(&renamed);
    assert!(message.contains("(MatMux): the operator `MatMux` is not supported"), "{message}");
    assert!(matches!(import(Arc::new(renamed)), Err(ImportError::Unsupported { .. })));
}

#[test]
fn models_rtx_cannot_run_are_clear_errors() {
    let folder = fixtures().join("errors");
    let error = |name: &str| import_error(&std::fs::read(folder.join(format!("{name}.onnx"))).unwrap());
    // Fills larger than memory (`fill_overflows`, `fill_too_large`) import, and fail when they run
    // (crates/runtime/tests/all/onnx_import.rs).
    assert_eq!(error("float8_input"), "graph input `s`: FLOAT8E4M3FN elements are not supported");
    assert_eq!(
        error("unsupported_operator"),
        "node `the_frobnicate` (Frobnicate): the operator domain `com.example` is not supported"
    );
}

fn replace(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let at = bytes.windows(from.len()).position(|w| w == from).expect("the pattern is in the model");
    let mut out = bytes.to_vec();
    out[at..at + to.len()].copy_from_slice(to);
    out
}

/// STRING tensors: the graph input passes as it is (its declared shape checked), the initializer
/// and the `Constant` are made by `tfrt_sht.create_tensor`, a STRING tensor attribute is the
/// aggregate of strings `<name>.strings` beside a number tensor attribute of its own name; a
/// string initializer whose strings are not its shape's count is an error naming it.
#[test]
fn string_tensors_import_as_string_host_tensors() {
    let bytes = std::fs::read(fixtures().join("strings/labels.onnx")).unwrap();
    let module = import(Arc::new(bytes)).unwrap();
    let text = rtx_mlir::print_asm(&module, rtx_mlir::AsmOptions::default()).unwrap();
    assert_eq!(text.matches("tfrt_sht.create_tensor").count(), 2, "{text}");
    assert_eq!(text.matches("nn.expect_shape").count(), 1, "{text}");
    assert!(text.contains("keys_tensor.strings = [\"<a!\", \"<b!\"]"), "{text}");
    assert!(text.contains("values_tensor = dense<[1, 2]> : tensor<2xi64>"), "{text}");
    let error = import_error(&std::fs::read(fixtures().join("errors/miscounted_strings.onnx")).unwrap());
    assert_eq!(error, "initializer `w`: 2 strings for shape [3]");
}

/// `model`'s import as MLIR's generic text.
fn imported_text(model: &str) -> String {
    let bytes = std::fs::read(fixtures().join(model)).unwrap();
    rtx_mlir::text::print::print_generic(&import(Arc::new(bytes)).unwrap(), Default::default()).unwrap()
}

/// What fuses into a convolution and what does not (the results against ONNX's reference
/// evaluator are crates/runtime's `tiny_models_match_onnx_reference_evaluator`).
#[test]
fn convolutions_absorb_the_nodes_that_only_rescale_shift_add_or_clamp_them() {
    let text = imported_text("tiny/conv_fusion.onnx");
    let mut counts = std::collections::BTreeMap::new();
    for line in text.lines() {
        if let Some(name) = line.split('"').nth(1).filter(|name| name.starts_with("nn.") || name.starts_with("onnx.")) {
            *counts.entry(name).or_insert(0) += 1;
        }
    }
    let count = |name: &str| counts.get(name).copied().unwrap_or(0);
    assert_eq!(count("nn.conv2d.f32"), 10, "{counts:?}");
    // Batch norms, per-channel Mul/Add/Sub/Div, the residual Add, Clip and LeakyRelu all fold.
    for gone in ["nn.batch_norm.f32", "nn.sub.f32", "nn.div.f32", "nn.clip.f32", "onnx.LeakyRelu"] {
        assert_eq!(count(gone), 0, "{gone}: {counts:?}");
    }
    // Left alone: the Relu of a result also returned, the Sum after an activation, the Add of a
    // broadcast tensor, the Mul that broadcasts an excitation, the Sigmoid read by an Add.
    let left = ["nn.relu.f32", "nn.add.f32", "nn.mul.f32", "nn.sigmoid.f32"].map(count);
    assert_eq!(left, [1, 3, 1, 1], "{counts:?}");
    for activation in ["\"relu\"", "\"clip\"", "\"leaky_relu\"", "\"sigmoid\"", "\"swish\""] {
        assert!(text.contains(activation), "no {activation} epilogue");
    }
}

/// Batch norms that follow no convolution become per-channel affine layers with what fuses after
/// them (results: crates/runtime's `tiny_models_match_onnx_reference_evaluator`).
#[test]
fn batch_norms_after_no_convolution_absorb_their_scale_shift_residual_and_activation() {
    let text = imported_text("tiny/affine_fusion.onnx");
    let count = |needle: &str| text.matches(needle).count();
    assert_eq!(count("\"nn.channel_affine.f32\""), 3, "{text}");
    // Mul, Add and Relu fold into the first; the residual Add and Clip into the second; the
    // Relu of a result read twice stays; a batch norm of a matrix stays one.
    for gone in ["\"nn.mul.f32\"", "\"nn.add.f32\"", "\"nn.clip.f32\""] {
        assert_eq!(count(gone), 0, "{gone}: {text}");
    }
    assert_eq!(count("\"nn.relu.f32\""), 1, "{text}");
    assert_eq!(count("\"nn.batch_norm.f32\""), 1, "{text}");
    assert_eq!([count("\"relu\""), count("\"clip\"")], [1, 1], "{text}");
}

/// What fuses into a MatMul and what does not, and which layer normalisations run as
/// `nn.layer_norm.f32` (results: crates/runtime's `tiny_models_match_onnx_reference_evaluator`).
#[test]
fn matrix_products_absorb_their_bias_residual_and_activation() {
    let text = imported_text("tiny/linear_fusion.onnx");
    let count = |needle: &str| text.matches(needle).count();
    assert_eq!(count("\"nn.matmul.f32\""), 7, "{text}");
    // Left alone: the Add of the product read twice, the Add of a bias that is not per column,
    // the bias Add after a residual.
    assert_eq!(count("\"nn.add.f32\""), 3, "{text}");
    for fused in ["\"gelu\"", "\"gelu_tanh\"", "\"relu\""] {
        assert_eq!(count(fused), 1, "{fused}: {text}");
    }
    assert_eq!(count("onnx.Gelu"), 0, "{text}");
    assert_eq!(count("\"nn.layer_norm.f32\""), 2, "{text}");
    assert_eq!(count("\"onnx.LayerNormalization\""), 1, "{text}");
}
