//! `rtx::onnx` against independent truth: each hand-built model of `tests/fixtures/onnx/tiny`
//! and two light models of the onnx package (`light/`), imported, written as BEF, and run on the
//! single-threaded queue and on a pool, must give the outputs ONNX computes for them — its
//! reference evaluator's for the tiny models, the package's own reference outputs for the light
//! ones — within 1e-4 of each output's largest magnitude. `generate.py` beside the fixtures
//! writes them. Unsupported operators and corrupt files are errors, never panics. The other
//! light models, and all nine against IREE, are scripts/check-onnx-*.sh's (too slow for CI).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rtx::bef::{mlir_to_bef, WriteOptions};
use rtx::hal::tensor_io::HostTensor;
use rtx::hal::{element_type::ElementType, npy};
use rtx::host::{AsyncValueRef, RcAsyncValue};
use rtx::kernel::tensor::DenseHostTensor;
use rtx::onnx::{import, ImportError};
use rtx::runtime::bridge::tensors::{tensor_to_view, view_to_tensor};
use rtx::runtime::{Context, ContextOptions, Module, Runtime};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/onnx")
}

fn read_npy(path: &Path) -> HostTensor {
    npy::decode(&std::fs::read(path).unwrap()).unwrap().0
}

fn floats(tensor: &HostTensor) -> Vec<f32> {
    assert_eq!(tensor.element_type, ElementType::FLOAT_32);
    tensor.data.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// `tensor` as a dense host tensor in `context`'s memory.
fn dense_tensor(context: &Context, tensor: &HostTensor) -> DenseHostTensor {
    let value = rtx::hal::run_io::tensor_value(tensor.clone()).unwrap();
    let rtx::vm::value::Value::Ref(Some(view)) = &value else { panic!("a tensor is a buffer view") };
    view_to_tensor(context.host(), rtx::hal::buffer_view::deref(view).unwrap()).unwrap()
}

/// A dense host tensor's contents.
fn host_tensor(tensor: &DenseHostTensor) -> HostTensor {
    rtx::hal::run_io::host_tensor(&tensor_to_view(tensor).unwrap()).unwrap()
}

/// The BEF file `rtx import-onnx` writes for `model`.
fn bef(model: &Path) -> Vec<u8> {
    let module = import(Arc::new(std::fs::read(model).unwrap())).unwrap();
    mlir_to_bef(&module, &WriteOptions::default()).unwrap()
}

/// Runs function `name` of `bef` on `inputs` with a queue of `spec`.
fn run(bef: &[u8], name: &str, inputs: &[HostTensor], spec: &str) -> Vec<HostTensor> {
    let context: Context = Runtime::new().context_with(ContextOptions::from_spec(spec).unwrap()).unwrap();
    context.add_module(&Module::load_memory(bef).unwrap()).unwrap();
    let arguments: Vec<RcAsyncValue> =
        inputs.iter().map(|input| AsyncValueRef::available(dense_tensor(&context, input)).into()).collect();
    let results = context.invoke(&context.function(name).unwrap(), &arguments).unwrap();
    context.await_values(&results).unwrap();
    results
        .iter()
        .map(|r| match r.get_error() {
            Some(error) => panic!("{name} on {spec}: {error}"),
            None => host_tensor(r.try_get::<DenseHostTensor>().unwrap()),
        })
        .collect()
}

/// `ours` must have `expected`'s shape and values within 1e-4 of its largest magnitude.
fn assert_close(what: &str, ours: &HostTensor, expected: &HostTensor) {
    assert_eq!(ours.shape, expected.shape, "{what}: shape");
    let (ours, expected) = (floats(ours), floats(expected));
    let scale = expected.iter().fold(0f32, |m, v| m.max(v.abs())).max(f32::MIN_POSITIVE);
    for (i, (a, b)) in ours.iter().zip(&expected).enumerate() {
        assert!((a - b).abs() <= 1e-4 * scale, "{what}: element {i} is {a}, ONNX says {b} (scale {scale})");
    }
}

/// The files `NAME.KIND_0.npy`, `NAME.KIND_1.npy`, ... of `folder`.
fn numbered(folder: &Path, name: &str, kind: &str) -> Vec<HostTensor> {
    (0..)
        .map(|k| folder.join(format!("{name}.{kind}_{k}.npy")))
        .take_while(|p| p.exists())
        .map(|p| read_npy(&p))
        .collect()
}

#[test]
fn tiny_models_match_onnx_reference_evaluator() {
    let folder = fixtures().join("tiny");
    let mut models: Vec<PathBuf> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "onnx"))
        .collect();
    models.sort();
    assert!(models.len() >= 10, "the tiny models are missing: run tests/fixtures/onnx/generate.py");
    for model in models {
        let name = model.file_stem().unwrap().to_str().unwrap().to_owned();
        let (inputs, outputs) = (numbered(&folder, &name, "input"), numbered(&folder, &name, "output"));
        let bef = bef(&model);
        for spec in ["s", "mstd:2"] {
            let results = run(&bef, &name, &inputs, spec);
            assert_eq!(results.len(), outputs.len(), "{name}: number of outputs");
            for (k, (ours, expected)) in results.iter().zip(&outputs).enumerate() {
                assert_close(&format!("{name} output {k} on {spec}"), ours, expected);
            }
        }
    }
}

/// ONNX's backend tests feed a light model arange(n).reshape(shape) / n.
fn backend_test_input(shape: &[usize]) -> HostTensor {
    let n: usize = shape.iter().product();
    let data = (0..n).flat_map(|i| (i as f32 / n as f32).to_le_bytes()).collect();
    HostTensor { shape: shape.to_vec(), element_type: ElementType::FLOAT_32, data }
}

#[test]
fn light_models_match_onnx_reference_outputs() {
    let folder = fixtures().join("light");
    // The function names are the graphs' names, as iree-import-onnx gives them.
    for (model, function) in [("squeezenet", "squeezenet_old"), ("shufflenet", "shufflenet")] {
        let bef = bef(&folder.join(format!("{model}.onnx")));
        let expected = read_npy(&folder.join(format!("{model}.output_0.npy")));
        let input = backend_test_input(&[1, 3, 224, 224]);
        for spec in ["s", "mstd:2"] {
            let results = run(&bef, function, std::slice::from_ref(&input), spec);
            assert_close(&format!("{model} on {spec}"), &results[0], &expected);
        }
    }
}

#[test]
fn weights_are_read_in_place_from_the_bef_file() {
    let bef = bef(&fixtures().join("tiny/constant_output.onnx"));
    let context = Runtime::new().context_with(ContextOptions::from_spec("s").unwrap()).unwrap();
    context.add_module(&Module::load_memory(&bef).unwrap()).unwrap();
    let function = context.function("constant_output").unwrap();
    let input = read_npy(&fixtures().join("tiny/constant_output.input_0.npy"));
    let call = || {
        let x: RcAsyncValue = AsyncValueRef::available(dense_tensor(&context, &input)).into();
        let results = context.invoke(&function, &[x]).unwrap();
        context.await_values(&results).unwrap();
        results[0].try_get::<DenseHostTensor>().unwrap().clone()
    };
    let (first, second) = (call(), call());
    // Both calls return the attribute's bytes themselves, read-only.
    assert_eq!(first.buffer().as_ptr(), second.buffer().as_ptr());
    assert!(first.buffer().is_read_only());
    assert_eq!(first.fill(0f32).unwrap_err().code, rtx::host::StatusCode::FailedPrecondition);
    let expected = read_npy(&fixtures().join("tiny/constant_output.output_0.npy"));
    assert_close("the weight", &host_tensor(&first), &expected);
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
    assert!(matches!(import(Arc::new(renamed)), Err(ImportError::Node { .. })));
}

#[test]
fn models_rtx_cannot_run_are_clear_errors() {
    let folder = fixtures().join("errors");
    let error = |name: &str| import_error(&std::fs::read(folder.join(format!("{name}.onnx"))).unwrap());
    assert_eq!(
        error("fill_overflows"),
        "node `huge` (ConstantOfShape): a constant of shape [2147483648, 2147483648] does not fit in memory"
    );
    assert_eq!(
        error("fill_too_large"),
        "node `huge` (ConstantOfShape): a constant of shape [33554432, 33554432] does not fit in memory"
    );
    assert_eq!(error("integer_input"), "graph input `i` holds I64 elements, not f32");
    assert_eq!(error("unsupported_operator"), "node `the_erf` (Erf): the operator `Erf` is not supported");
}

fn replace(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let at = bytes.windows(from.len()).position(|w| w == from).expect("the pattern is in the model");
    let mut out = bytes.to_vec();
    out[at..at + to.len()].copy_from_slice(to);
    out
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
