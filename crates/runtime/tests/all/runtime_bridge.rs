//! The bridge between a context's BEF graphs and its VM modules: `rtx.vm.call` calls functions
//! that iree-compile 3.13 compiled (tests/fixtures/bridge, tests/fixtures/hal_run/async.mlir),
//! and a compiled program imports a BEF function. Each pipeline is checked against its parts run
//! one by one through the same runtime API.

use std::sync::{Arc, Mutex};

use rtx_bef::format::DType;
use rtx_bef::reader::BefImage;
use rtx_bef::{mlir_to_bef, WriteOptions};
use rtx_hal::buffer_view::BufferView;
use rtx_host::{AsyncValueRef, RcAsyncValue, StatusCode};
use rtx_kernel::tensor::{DenseHostTensor, TensorShape};
use rtx_mlir::{parse_text_with, ParseOptions};
use rtx_runtime::bridge::tensors::{tensor_to_view, view_to_tensor};
use rtx_runtime::{Context, Module, Runtime};
use rtx_test_support::{assert_fixtures_fresh, fixtures_dir};

fn fixture(path: &str) -> Module {
    Module::load_file(fixtures_dir().join(path)).expect("the fixture loads")
}

/// The BEF module `name` made from the MLIR `text`.
fn bef_module(name: &str, text: &str) -> Module {
    let parse = ParseOptions { file_name: Some(format!("{name}.mlir")), ..ParseOptions::default() };
    let bef = mlir_to_bef(&parse_text_with(text, &parse).expect("parses"), &WriteOptions::default()).expect("BEF");
    Module::Bef { name: name.into(), image: Arc::new(BefImage::from_bytes(&bef).expect("a BEF image")) }
}

/// A context on `queue` with the CPU device and the `bridge` module (`bridge.scale`).
fn context(queue: &str) -> Context {
    let context = Runtime::new().context_with(rtx_runtime::ContextOptions::from_spec(queue).unwrap()).unwrap();
    context.add_device("local-task").unwrap();
    context.add_module(&fixture("bridge/bridge.vmfb")).unwrap();
    context
}

fn tensor(context: &Context, dims: &[i64], values: &[f32]) -> DenseHostTensor {
    let tensor = DenseHostTensor::new_zeroed(context.host(), DType::F32, TensorShape::from_dims(dims).unwrap());
    let tensor = tensor.unwrap();
    tensor.set_values(values).unwrap();
    tensor
}

fn value<T: Send + Sync + 'static>(payload: T) -> RcAsyncValue {
    AsyncValueRef::available(payload).into_untyped()
}

fn invoke(context: &Context, name: &str, arguments: &[RcAsyncValue]) -> Vec<RcAsyncValue> {
    let results = context.invoke(&context.function(name).unwrap(), arguments).unwrap();
    context.await_values(&results).unwrap();
    results
}

fn floats(value: &RcAsyncValue) -> Vec<f32> {
    match value.get_error() {
        Some(error) => panic!("an error: {error}"),
        None => value.try_get::<DenseHostTensor>().unwrap().values::<f32>().unwrap(),
    }
}

/// `scale_then_add(x, k)`: `bridge.scale(x, k) + x`, the scaling in the compiled program, the
/// sum a kernel; `add` is the sum alone.
const PIPELINE: &str = r#"
func.func @scale_then_add(%x: !tfrt_tensor.tensor, %k: f32) -> !tfrt_tensor.tensor {
  %y = "rtx.vm.call"(%x, %k) {callee = "bridge.scale"} : (!tfrt_tensor.tensor, f32) -> !tfrt_tensor.tensor
  %z = "nn.add.f32"(%y, %x) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor) -> !tfrt_tensor.tensor
  tfrt.return %z : !tfrt_tensor.tensor
}

func.func @add(%a: !tfrt_tensor.tensor, %b: !tfrt_tensor.tensor) -> !tfrt_tensor.tensor {
  %z = "nn.add.f32"(%a, %b) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor) -> !tfrt_tensor.tensor
  tfrt.return %z : !tfrt_tensor.tensor
}

func.func @independent(%x: !tfrt_tensor.tensor, %k: f32) -> (!tfrt_tensor.tensor, !tfrt_tensor.tensor) {
  %y = "rtx.vm.call"(%x, %k) {callee = "bridge.scale"} : (!tfrt_tensor.tensor, f32) -> !tfrt_tensor.tensor
  %z = "nn.relu.f32"(%y) : (!tfrt_tensor.tensor) -> !tfrt_tensor.tensor
  %w = "nn.add.f32"(%x, %x) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor) -> !tfrt_tensor.tensor
  tfrt.return %z, %w : !tfrt_tensor.tensor, !tfrt_tensor.tensor
}

func.func @two_results(%x: !tfrt_tensor.tensor) -> !tfrt_tensor.tensor {
  %y, %z = "rtx.vm.call"(%x) {callee = "bridge.scale"} : (!tfrt_tensor.tensor) -> (!tfrt_tensor.tensor, !tfrt_tensor.tensor)
  tfrt.return %y : !tfrt_tensor.tensor
}
"#;

#[test]
fn a_pipeline_through_a_compiled_function_gives_what_its_parts_give_one_by_one() {
    for queue in ["s", "mstd:2"] {
        let context = context(queue);
        context.add_module(&bef_module("graph", PIPELINE)).unwrap();
        let x = tensor(&context, &[4], &[1.5, -2.0, 3.25, 0.0]);
        let piped = invoke(&context, "graph.scale_then_add", &[value(x.clone()), value(3.0f32)]);
        let scaled = invoke(&context, "bridge.scale", &[value(tensor_to_view(&x).unwrap()), value(3.0f32)]);
        let scaled = view_to_tensor(context.host(), scaled[0].try_get::<Arc<BufferView>>().unwrap()).unwrap();
        let parts = invoke(&context, "graph.add", &[value(scaled), value(x)]);
        assert_eq!(floats(&piped[0]), floats(&parts[0]), "{queue}");
        assert_eq!(floats(&piped[0]), [6.0, -8.0, 13.0, 0.0], "{queue}: by hand, 3x + x");
    }
}

#[test]
fn a_compiled_functions_result_becomes_a_tensor_over_the_programs_own_buffer() {
    let context = context("s");
    let x = tensor(&context, &[4], &[1.0, 2.0, 3.0, 4.0]);
    let scaled = invoke(&context, "bridge.scale", &[value(tensor_to_view(&x).unwrap()), value(2.0f32)]);
    let view = scaled[0].try_get::<Arc<BufferView>>().unwrap();
    let tensor = view_to_tensor(context.host(), view).unwrap();
    let program_bytes = view.buffer().memory().mapping().unwrap().as_ptr().wrapping_add(view.buffer().offset());
    assert_eq!(tensor.buffer().as_ptr(), program_bytes, "no copy");
    drop((scaled, context));
    assert_eq!(tensor.values::<f32>().unwrap(), [2.0, 4.0, 6.0, 8.0], "the tensor keeps the buffer past its context");
}

#[test]
fn an_error_inside_the_compiled_function_reaches_only_the_graphs_dependants() {
    let context = context("mstd:2");
    context.add_module(&bef_module("graph", PIPELINE)).unwrap();
    let x = tensor(&context, &[4], &[1.0, 2.0, 3.0, 4.0]);
    let results = invoke(&context, "graph.independent", &[value(x), value(-1.0f32)]);
    let error = results[0].get_error().expect("the call's dependant is the error");
    assert!(error.message.contains("the scale must not be negative"), "the VM's message: {error}");
    assert_eq!(floats(&results[1]), [2.0, 4.0, 6.0, 8.0], "the independent kernel ran");
}

#[test]
fn a_result_count_that_does_not_fit_the_callee_is_a_clear_error() {
    let context = context("s");
    context.add_module(&bef_module("graph", PIPELINE)).unwrap();
    let x = tensor(&context, &[4], &[1.0; 4]);
    let results = invoke(&context, "graph.two_results", &[value(x)]);
    let error = results[0].get_error().expect("an error");
    assert_eq!(error.code, StatusCode::InvalidArgument);
    assert!(
        error.message.contains("`bridge.scale` (calling convention `0rf_r`) takes 2 arguments, but the kernel has 1"),
        "{error}"
    );
}

/// `scores` is a `coarse-fences` function: its results are ready when its signal fence is.
const FENCED: &str = r#"
func.func @scores(%x: !tfrt_tensor.tensor, %w: !tfrt_tensor.tensor) -> (!tfrt_tensor.tensor, !tfrt_tensor.tensor) {
  %p, %total = "rtx.vm.call"(%x, %w) {callee = "module.scores"} : (!tfrt_tensor.tensor, !tfrt_tensor.tensor) -> (!tfrt_tensor.tensor, !tfrt_tensor.tensor)
  %doubled = "nn.add.f32"(%total, %total) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor) -> !tfrt_tensor.tensor
  tfrt.return %p, %doubled : !tfrt_tensor.tensor, !tfrt_tensor.tensor
}
"#;

#[test]
fn a_coarse_fences_functions_results_feed_the_graph_when_its_fence_signals() {
    let context = context("mstd:2");
    context.add_module(&fixture("hal_run/async_embedded.vmfb")).unwrap();
    context.add_module(&bef_module("graph", FENCED)).unwrap();
    assert!(context.function("module.scores").unwrap().takes_fences());
    let x = tensor(&context, &[2, 3], &[1.0, 0.0, -1.0, 0.5, 0.25, 2.0]);
    let w = tensor(&context, &[3, 4], &[0.5, -1.0, 2.0, 0.0, 1.0, 1.0, -0.5, 0.25, 0.0, 3.0, 1.0, -2.0]);
    let piped = invoke(&context, "graph.scores", &[value(x.clone()), value(w.clone())]);
    let views = [&x, &w].map(|t| value(tensor_to_view(t).unwrap()));
    let direct = invoke(&context, "module.scores", &views);
    let direct: Vec<DenseHostTensor> = direct
        .iter()
        .map(|v| view_to_tensor(context.host(), v.try_get::<Arc<BufferView>>().unwrap()).unwrap())
        .collect();
    assert_eq!(floats(&piped[0]), direct[0].values::<f32>().unwrap());
    let total = direct[1].values::<f32>().unwrap()[0];
    assert_eq!(floats(&piped[1]), [total + total]);
    // The logits sum by hand: x times w, every entry added up.
    let logits: f32 = (0..2)
        .flat_map(|i| (0..4).map(move |j| (i, j)))
        .map(|(i, j)| {
            (0..3).map(|k| x.values::<f32>().unwrap()[i * 3 + k] * w.values::<f32>().unwrap()[k * 4 + j]).sum::<f32>()
        })
        .sum();
    assert!((total - logits).abs() < 1e-5, "{total} vs {logits}");
}

#[test]
fn cancelling_the_context_cancels_a_call_that_has_not_started() {
    let context = context("mstd:2");
    let pending = Arc::new(Mutex::new(None));
    let parked = Arc::clone(&pending);
    context
        .register_kernel("test.later", move |frame| {
            *parked.lock().unwrap() = Some(frame.allocate_result::<DenseHostTensor>(0)?);
            Ok(())
        })
        .unwrap();
    let graph = r#"
func.func @later(%k: f32) -> !tfrt_tensor.tensor {
  %x = "test.later"() : () -> !tfrt_tensor.tensor
  %y = "rtx.vm.call"(%x, %k) {callee = "bridge.scale"} : (!tfrt_tensor.tensor, f32) -> !tfrt_tensor.tensor
  tfrt.return %y : !tfrt_tensor.tensor
}
"#;
    context.add_module(&bef_module("graph", graph)).unwrap();
    let results = context.invoke(&context.function("graph.later").unwrap(), &[value(1.0f32)]).unwrap();
    let mut later = None;
    rtx_test_support::deadline::wait_until("test.later's pending result", || {
        later = pending.lock().unwrap().take();
        later.is_some()
    });
    let later = later.unwrap();
    context.host().cancel();
    later.emplace(tensor(&context, &[4], &[1.0; 4])).unwrap();
    context.await_values(&results).unwrap();
    assert_eq!(results[0].get_error().expect("cancelled").code, StatusCode::Cancelled);
}

/// `graph.double`, which tests/fixtures/bridge/imports.vmfb imports and calls twice.
const DOUBLE: &str = r#"
func.func @double(%x: !tfrt_tensor.tensor) -> !tfrt_tensor.tensor {
  %y = "nn.add.f32"(%x, %x) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor) -> !tfrt_tensor.tensor
  tfrt.return %y : !tfrt_tensor.tensor
}
"#;

#[test]
fn a_compiled_program_imports_a_bef_function_by_name() {
    for queue in ["s", "mstd:2"] {
        let context = context(queue);
        context.add_module(&bef_module("graph", DOUBLE)).unwrap();
        context.add_bef_native_module("graph").unwrap();
        context.add_module(&fixture("bridge/imports.vmfb")).unwrap();
        let x = tensor(&context, &[4], &[1.0, -2.5, 0.25, 8.0]);
        let results = invoke(&context, "imports.quadruple", &[value(tensor_to_view(&x).unwrap())]);
        let view = results[0].try_get::<Arc<BufferView>>().unwrap();
        assert_eq!(view_to_tensor(context.host(), view).unwrap().values::<f32>().unwrap(), [4.0, -10.0, 1.0, 32.0]);
    }
}

#[test]
fn a_bef_functions_error_fails_the_program_that_imported_it_with_the_graphs_message() {
    let failing = r#"
func.func @double(%x: !tfrt_tensor.tensor) -> !tfrt_tensor.tensor {
  %y = "nn.reshape"(%x) {shape = [5]} : (!tfrt_tensor.tensor) -> !tfrt_tensor.tensor
  tfrt.return %y : !tfrt_tensor.tensor
}
"#;
    let context = context("mstd:2");
    context.add_module(&bef_module("graph", failing)).unwrap();
    context.add_bef_native_module("graph").unwrap();
    context.add_module(&fixture("bridge/imports.vmfb")).unwrap();
    let x = tensor(&context, &[4], &[1.0; 4]);
    let results = invoke(&context, "imports.quadruple", &[value(tensor_to_view(&x).unwrap())]);
    let error = results[0].get_error().expect("the program fails");
    assert!(error.message.contains("nn.reshape"), "the graph's message: {error}");
    assert!(error.message.contains("result 0 of `graph.double` (a BEF function)"), "{error}");
}

#[test]
fn a_program_importing_a_missing_or_mistyped_bef_function_does_not_link() {
    let context = context("s");
    let error = context.add_bef_native_module("graph").unwrap_err();
    assert_eq!(error.code, StatusCode::NotFound);
    // `double` of two arguments has calling convention `0rr_r`, not the import's `0r_r`.
    let mistyped = r#"
func.func @double(%x: !tfrt_tensor.tensor, %y: !tfrt_tensor.tensor) -> !tfrt_tensor.tensor {
  tfrt.return %x : !tfrt_tensor.tensor
}
"#;
    context.add_module(&bef_module("graph", mistyped)).unwrap();
    context.add_bef_native_module("graph").unwrap();
    let error = context.add_module(&fixture("bridge/imports.vmfb")).unwrap_err();
    assert!(error.message.contains("graph.double"), "{error}");
}

#[test]
fn the_kernel_and_the_native_module_leave_no_cycle_that_keeps_a_context_alive() {
    let context = context("mstd:2");
    context.add_module(&bef_module("graph", DOUBLE)).unwrap();
    context.add_bef_native_module("graph").unwrap();
    context.add_module(&fixture("bridge/imports.vmfb")).unwrap();
    let vm = context.vm().downgrade();
    let x = tensor(&context, &[4], &[1.0; 4]);
    invoke(&context, "imports.quadruple", &[value(tensor_to_view(&x).unwrap())]);
    drop(context);
    assert!(vm.upgrade().is_none(), "the VM context went with the context");
}

#[test]
fn the_fixtures_are_what_their_script_makes() {
    let fixtures = fixtures_dir().join("bridge");
    assert_fixtures_fresh("regen/bridge-fixtures.sh", &fixtures, &[], &[]);
}
