//! `rtx_onnx` against independent truth: each hand-built model of `tests/fixtures/onnx/tiny`
//! and two light models of the onnx package (`light/`), imported, written as BEF, and run on the
//! single-threaded queue and on a pool, must give the outputs ONNX computes for them — its
//! reference evaluator's for the tiny models, the package's own reference outputs for the light
//! ones — within 1e-4 of each output's largest magnitude. `generate.py` beside the fixtures
//! writes them. That unsupported operators and corrupt files are errors, never panics, is
//! crates/onnx/tests/all/onnx_import.rs's; `rtx import-onnx` is tests/all/onnx_import.rs's. The
//! other light models, and all nine against IREE, are scripts/check-onnx-*.sh's (too slow for CI).
//! `architectures/` holds models built as users build them, with onnxruntime's outputs.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rtx_bef::{mlir_to_bef, WriteOptions};
use rtx_hal::tensor_io::HostTensor;
use rtx_hal::{element_type::ElementType, npy};
use rtx_host::{AsyncValueRef, Diagnostic, RcAsyncValue, StatusCode};
use rtx_kernel::tensor::DenseHostTensor;
use rtx_onnx::import;
use rtx_runtime::bridge::tensors::{tensor_to_view, view_to_tensor};
use rtx_runtime::{Context, ContextOptions, Module, Runtime};
use rtx_test_support::fixtures_dir;

fn fixtures() -> PathBuf {
    fixtures_dir().join("onnx")
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
    let value = rtx_hal::run_io::tensor_value(tensor.clone()).unwrap();
    let rtx_vm::value::Value::Ref(Some(view)) = &value else { panic!("a tensor is a buffer view") };
    view_to_tensor(context.host(), rtx_hal::buffer_view::deref(view).unwrap()).unwrap()
}

/// A dense host tensor's contents.
fn host_tensor(tensor: &DenseHostTensor) -> HostTensor {
    rtx_hal::run_io::host_tensor(&tensor_to_view(tensor).unwrap()).unwrap()
}

/// The BEF file `rtx import-onnx` writes for `model`.
fn bef(model: &Path) -> Vec<u8> {
    let module = import(Arc::new(std::fs::read(model).unwrap())).unwrap();
    mlir_to_bef(&module, &WriteOptions::default()).unwrap()
}

/// Runs function `name` of `bef` on `inputs` with a queue of `spec`.
fn run(bef: &[u8], name: &str, inputs: &[HostTensor], spec: &str) -> Vec<HostTensor> {
    run_module(&Module::load_memory(bef).unwrap(), name, inputs, spec)
}

/// Runs function `name` of `module` on `inputs` with a queue of `spec`.
fn run_module(module: &Module, name: &str, inputs: &[HostTensor], spec: &str) -> Vec<HostTensor> {
    try_run(module, name, inputs, spec).unwrap_or_else(|error| panic!("{name} on {spec}: {error}"))
}

/// As [`run_module`], the first result's error if a result is one. The function is called twice
/// in one context, and the second call (which reuses what kernels derived from the model's
/// weights on the first) must give the same results.
fn try_run(module: &Module, name: &str, inputs: &[HostTensor], spec: &str) -> Result<Vec<HostTensor>, Diagnostic> {
    let context: Context = Runtime::new().context_with(ContextOptions::from_spec(spec).unwrap()).unwrap();
    context.add_module(module).unwrap();
    let call = || -> Result<Vec<HostTensor>, Diagnostic> {
        let arguments: Vec<RcAsyncValue> =
            inputs.iter().map(|input| AsyncValueRef::available(dense_tensor(&context, input)).into()).collect();
        let results = context.invoke(&context.function(name).unwrap(), &arguments).unwrap();
        context.await_values(&results).unwrap();
        results
            .iter()
            .map(|r| match r.get_error() {
                Some(error) => Err(error.clone()),
                None => Ok(host_tensor(r.try_get::<DenseHostTensor>().unwrap())),
            })
            .collect()
    };
    let first = call()?;
    let second = call()?;
    assert!(
        first.len() == second.len() && first.iter().zip(&second).all(|(a, b)| a.shape == b.shape && a.data == b.data),
        "{name} on {spec}: a second call gave other results than the first"
    );
    Ok(second)
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

/// Architectures as users export them (`architectures.py` beside the fixtures: a transformer
/// encoder with int64 token ids and a mask, a U-Net, MobileNet-style blocks; symbolic batch and
/// sequence dimensions), loaded as `.onnx` modules, give onnxruntime's outputs.
#[test]
fn architectures_match_onnxruntime() {
    let folder = fixtures().join("architectures");
    for name in ["encoder", "unet", "mobilenet"] {
        let module = Module::load_file(folder.join(format!("{name}.onnx"))).unwrap();
        let (inputs, outputs) = (numbered(&folder, name, "input"), numbered(&folder, name, "output"));
        assert!(!inputs.is_empty() && !outputs.is_empty(), "{name}: run tests/fixtures/onnx/architectures.py");
        for spec in ["s", "mstd:2"] {
            let results = run_module(&module, name, &inputs, spec);
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
    assert_eq!(first.fill(0f32).unwrap_err().code, StatusCode::FailedPrecondition);
    let expected = read_npy(&fixtures().join("tiny/constant_output.output_0.npy"));
    assert_close("the weight", &host_tensor(&first), &expected);
}

#[test]
fn onnx_models_load_as_modules_from_files_and_from_memory() {
    let folder = fixtures().join("tiny");
    let model = folder.join("arithmetic.onnx");
    let (inputs, outputs) = (numbered(&folder, "arithmetic", "input"), numbered(&folder, "arithmetic", "output"));
    let from_file = Module::load_file(&model).unwrap();
    assert_eq!(from_file.name(), "arithmetic", "a file's module is named after its stem");
    let from_memory = Module::load_memory(&std::fs::read(&model).unwrap()).unwrap();
    assert_eq!(from_memory.name(), rtx_runtime::ONNX_MEMORY_MODULE_NAME);
    for module in [from_file, from_memory] {
        let names: Vec<String> = module.exported_functions().into_iter().map(|f| f.name).collect();
        assert_eq!(names, ["arithmetic"], "the function is named after the graph");
        let results = run_module(&module, "arithmetic", &inputs, "s");
        assert_close(&format!("arithmetic from {}", module.name()), &results[0], &outputs[0]);
    }
}

#[test]
fn onnx_models_that_fail_to_import_say_why_and_where() {
    let unsupported = fixtures().join("errors/unsupported_operator.onnx");
    let error = Module::load_file(&unsupported).unwrap_err();
    assert_eq!(error.code, StatusCode::Unimplemented, "{error}");
    assert!(error.message.contains("unsupported_operator.onnx`, an ONNX model: node"), "{error}");
    let truncated = std::fs::read(fixtures().join("tiny/arithmetic.onnx")).unwrap();
    let error = Module::load_memory(&truncated[..truncated.len() / 2]).unwrap_err();
    assert_eq!(error.code, StatusCode::InvalidArgument, "{error}");
    assert!(error.message.contains("the module, an ONNX model: not a valid ONNX model"), "{error}");
}

/// Weights saved as external data are read from the model's folder, as slices of the mapped
/// file; a model in memory has no folder, and data outside the folder, missing, or past the end
/// of its file is an error naming the initializer.
#[test]
fn external_data_is_read_from_the_models_folder() {
    let folder = fixtures().join("external");
    let (inputs, outputs) = (numbered(&folder, "weights", "input"), numbered(&folder, "weights", "output"));
    let module = Module::load_file(folder.join("weights.onnx")).unwrap();
    let results = run_module(&module, "external_weights", &inputs, "s");
    assert_close("external weights", &results[0], &outputs[0]);

    let error = Module::load_memory(&std::fs::read(folder.join("weights.onnx")).unwrap()).unwrap_err();
    assert_eq!(error.code, StatusCode::InvalidArgument, "{error}");
    assert!(
        error.message.contains(
            "initializer `w`: its data is in the external file `weights.bin`, which a model loaded from memory cannot name"
        ),
        "{error}"
    );
    for (model, says) in [
        ("outside", "its external data file `../tiny/arithmetic.onnx` is not a path inside the model's folder"),
        ("missing", "missing.bin` cannot be read"),
        ("past_the_end", "its external data (128 bytes at offset 64) lies outside `weights.bin` (128 bytes)"),
    ] {
        let error = Module::load_file(folder.join(format!("{model}.onnx"))).unwrap_err();
        assert_eq!(error.code, StatusCode::InvalidArgument, "{model}: {error}");
        assert!(error.message.contains("initializer `w`: ") && error.message.contains(says), "{model}: {error}");
    }
}

/// Sizes that arrive at run time — a fill's shape, Expand's shape, Tile's repeats, Pad's pads,
/// Range's limit, and constant fills too large to fold at import — may be hostile: each is an error naming the kernel, never an abort, a panic or
/// an allocation of what they claim (2^62 elements, 2^50, 2^63 after repeating).
#[test]
fn hostile_sizes_at_run_time_are_errors() {
    let folder = fixtures().join("errors");
    let i64s = |values: &[i64]| HostTensor {
        shape: vec![values.len()],
        element_type: ElementType::INT_64,
        data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
    };
    let x = f32s(&[2], &[1.0, 2.0]);
    let cases: Vec<(&str, Vec<HostTensor>, StatusCode, &str)> = vec![
        ("run_time_fill", vec![i64s(&[1 << 31, 1 << 31])], StatusCode::InvalidArgument, "onnx.ConstantOfShape: "),
        ("run_time_fill", vec![i64s(&[1 << 25, 1 << 25])], StatusCode::ResourceExhausted, "onnx.ConstantOfShape: "),
        ("run_time_fill", vec![i64s(&[-1, 3])], StatusCode::InvalidArgument, "holds a negative value"),
        ("run_time_expand", vec![x.clone(), i64s(&[1 << 25, 1 << 25])], StatusCode::InvalidArgument, "onnx.Expand: "),
        ("run_time_tile", vec![x.clone(), i64s(&[1 << 62])], StatusCode::InvalidArgument, "onnx.Tile: "),
        ("run_time_pad", vec![x.clone(), i64s(&[1 << 62, 0])], StatusCode::InvalidArgument, "onnx.Pad: "),
        ("run_time_range", vec![f32s(&[], &[1e30])], StatusCode::InvalidArgument, "onnx.Range: "),
        ("run_time_range", vec![f32s(&[], &[f32::NAN])], StatusCode::InvalidArgument, "onnx.Range: "),
    ];
    let fills: Vec<(&str, Vec<HostTensor>, StatusCode, &str)> = vec![
        ("fill_overflows", vec![x.clone()], StatusCode::InvalidArgument, "shape [2147483648, 2147483648] is too large"),
        ("fill_too_large", vec![x.clone()], StatusCode::ResourceExhausted, "onnx.ConstantOfShape: "),
    ];
    for (model, inputs, code, says) in cases.into_iter().chain(fills) {
        let module = Module::load_file(folder.join(format!("{model}.onnx"))).unwrap();
        let error = try_run(&module, model, &inputs, "s").expect_err(model);
        assert_eq!(error.code, code, "{model}: {error}");
        assert!(error.message.contains(says), "{model}: {error}");
    }
    // The same models on sizes that fit run.
    let module = Module::load_file(folder.join("run_time_range.onnx")).unwrap();
    let results = try_run(&module, "run_time_range", &[f32s(&[], &[3.0])], "s").unwrap();
    assert_eq!(floats(&results[0]), [0.0, 1.0, 2.0]);
}

/// Models that cannot be imported whatever operators rtx adds: a cycle, an input nothing
/// defines, an initializer whose shape claims 2^80 elements.
#[test]
fn malformed_graphs_are_errors_naming_the_node() {
    let folder = fixtures().join("errors");
    for (model, says) in [
        ("cycle", "node `first` (Relu): its input `z` is no graph input, initializer or earlier node's output"),
        (
            "missing_input",
            "node `adds` (Add): its input `nowhere` is no graph input, initializer or earlier node's output",
        ),
        ("huge_initializer", "initializer `w`: shape [1099511627776, 1099511627776] is not a valid shape"),
    ] {
        let error = Module::load_file(folder.join(format!("{model}.onnx"))).unwrap_err();
        assert_eq!(error.code, StatusCode::InvalidArgument, "{model}: {error}");
        assert!(error.message.contains(says), "{model}: {error}");
    }
}

fn f32s(shape: &[usize], values: &[f32]) -> HostTensor {
    let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    HostTensor { shape: shape.to_vec(), element_type: ElementType::FLOAT_32, data }
}

/// Control flow, computed by hand: `Loop` runs its body (a function of the module) three
/// times, carrying `y`, stacking each iteration's scan output, and reading `step` from the
/// outer scope; `If` runs the branch its condition picks on the outer tensors it reads and an
/// outer constant copied into it.
#[test]
fn control_flow_runs_subgraphs_as_functions() {
    let folder = fixtures().join("control");
    // The bodies are functions of the module named under the graph's: the graph's is the entry.
    let module = Module::load_file(folder.join("loop_scan.onnx")).unwrap();
    assert!(module.exported_functions().len() > 1);
    assert_eq!(module.entry_function().as_deref(), Some("loop_scan"));
    let looped = bef(&folder.join("loop_scan.onnx"));
    let branched = bef(&folder.join("if_captures.onnx"));
    let flag = |b: bool| HostTensor { shape: vec![], element_type: ElementType::BOOL_8, data: vec![u8::from(b)] };
    for spec in ["s", "mstd:2"] {
        let results = run(&looped, "loop_scan", &[f32s(&[2], &[1.0, 2.0]), f32s(&[2], &[10.0, 20.0])], spec);
        assert_close("loop y", &results[0], &f32s(&[2], &[31.0, 62.0]));
        assert_close("loop scan", &results[1], &f32s(&[3, 2], &[22.0, 44.0, 42.0, 84.0, 62.0, 124.0]));
        let (a, b) = (f32s(&[2], &[1.0, 2.0]), f32s(&[2], &[3.0, 4.0]));
        let taken = run(&branched, "if_captures", &[flag(true), a.clone(), b.clone()], spec);
        assert_close("then", &taken[0], &f32s(&[2], &[104.0, 106.0]));
        let other = run(&branched, "if_captures", &[flag(false), a, b], spec);
        assert_close("else", &other[0], &f32s(&[2], &[-2.0, -2.0]));
    }
}

/// The fuzz target's findings (`fuzz/fuzz_targets/onnx_model.rs`, `tests/fixtures/onnx/hostile/`),
/// run as it runs them: loaded from memory, each function called with a one-element f32 tensor
/// per argument. Each ends in the error it found missing: a reshape whose element count
/// overflows is refused at load, naming its node; a `Sub` given one input fails its call. A
/// finding added to the folder needs its outcome stated here.
#[test]
fn fuzzer_findings_end_in_errors() {
    let folder = fixtures().join("hostile");
    let mut models: Vec<PathBuf> = std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().path()).collect();
    models.sort();
    let names: Vec<String> =
        models.iter().map(|path| path.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["add_one_input.onnx", "reshape_overflow.onnx"], "each finding's outcome is stated below");
    let error = Module::load_memory(&std::fs::read(folder.join("reshape_overflow.onnx")).unwrap()).unwrap_err();
    assert_eq!(error.code, StatusCode::InvalidArgument, "{error}");
    assert!(error.message.contains("(Reshape): cannot reshape [3, 5, 6] to [0, 0, 9223372036854775807]"), "{error}");
    let module = Module::load_memory(&std::fs::read(folder.join("add_one_input.onnx")).unwrap()).unwrap();
    let functions = module.exported_functions();
    assert!(!functions.is_empty());
    for function in functions {
        let (arguments, _) = function.kinds.as_ref().unwrap();
        let inputs: Vec<HostTensor> = arguments.iter().map(|_| f32s(&[1], &[0.0])).collect();
        let error = try_run(&module, &function.name, &inputs, "s").expect_err(&function.name);
        assert_eq!(error.code, StatusCode::InvalidArgument, "{error}");
        assert!(error.message.contains("onnx.Sub: takes 2 inputs, not 1"), "{error}");
    }
}
