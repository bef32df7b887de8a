//! What tracing costs a call: each row times the same call traced (a session begun before the
//! round and ended after it, its file written outside the timing) against itself untraced in the
//! same run (`support::row`):
//!
//! - `traced/predict local-sync`: the digit classifier (models/digits/mlp.vmfb, `module.predict`
//!   on one 1x64 image, as a buffer view), a 3 µs call of eleven spans (the call's function, the HAL's queue
//!   operations and waits, three dispatches).
//! - `traced/predict local-task`: the same on the pool's device.
//! - `traced/mobilenet s`: tests/fixtures/onnx/architectures/mobilenet.onnx (a MobileNet-style
//!   stack of depthwise blocks, imported to a BEF graph) on one image, `s`: a span per kernel.
//!
//! `cargo bench --bench tracing [-- FILTER]`

mod support;

use std::path::PathBuf;

use rtx::bef::format::DType;
use rtx::host::tracing;
use rtx::host::{AsyncValueRef, RcAsyncValue};
use rtx::kernel::tensor::{DenseHostTensor, TensorShape};
use rtx::runtime::bridge::tensors::{tensor_to_view, view_to_tensor};
use rtx::runtime::{Context, ContextOptions, Module, Runtime};
use support::{per_call, row};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `calls` calls of `name` on `arguments` per round, waiting for each call's results.
fn round(context: &Context, name: &str, arguments: &[RcAsyncValue], calls: u64) -> f64 {
    let function = context.function(name).unwrap();
    per_call(calls, &mut || {
        let results = context.invoke(&function, arguments).unwrap();
        context.await_values(&results).unwrap();
        assert!(!results[0].is_error(), "{name} runs");
    })
}

/// A round of `run` in a trace session of its own.
fn traced(run: &mut dyn FnMut() -> f64) -> f64 {
    let path = std::env::temp_dir().join(format!("rtx-bench-tracing-{}.json", std::process::id()));
    tracing::begin(&path).unwrap();
    let time = run();
    tracing::end().unwrap();
    let _ = std::fs::remove_file(&path);
    time
}

fn bench(name: &str, context: &Context, function: &str, arguments: Vec<RcAsyncValue>, calls: u64) {
    let mut anchor = || round(context, function, &arguments, calls);
    let mut subject = || traced(&mut || round(context, function, &arguments, calls));
    row(name, "the same call untraced", &mut anchor, &mut subject);
}

fn main() {
    let wanted = support::filter();
    let runtime = Runtime::new();
    for device in ["local-sync", "local-task"] {
        let name = format!("traced/predict {device}");
        if !wanted(&name) {
            continue;
        }
        let context = runtime.context_with(ContextOptions::from_spec("s").unwrap()).unwrap();
        context.add_device(device).unwrap();
        context.add_module(&Module::load_file(root().join("models/digits/mlp.vmfb")).unwrap()).unwrap();
        let shape = TensorShape::new(vec![1, 64]).unwrap();
        let image = DenseHostTensor::new_zeroed(context.host(), DType::F32, shape).unwrap();
        image.fill(0.5f32).unwrap();
        let view = AsyncValueRef::available(tensor_to_view(&image).unwrap()).into_untyped();
        bench(&name, &context, "module.predict", vec![view], 2_000);
    }
    let name = "traced/mobilenet s";
    if wanted(name) {
        let models = root().join("tests/fixtures/onnx/architectures");
        let context = runtime.context_with(ContextOptions::from_spec("s").unwrap()).unwrap();
        context.add_module(&Module::load_file(models.join("mobilenet.onnx")).unwrap()).unwrap();
        let npy = std::fs::read(models.join("mobilenet.input_0.npy")).unwrap();
        let input = rtx::hal::npy::decode(&npy).unwrap().0;
        let rtx::vm::value::Value::Ref(Some(view)) = rtx::hal::run_io::tensor_value(input).unwrap() else {
            panic!("a tensor is a buffer view")
        };
        let image = view_to_tensor(context.host(), rtx::hal::buffer_view::deref(&view).unwrap()).unwrap();
        bench(name, &context, "mobilenet", vec![AsyncValueRef::available(image).into_untyped()], 2);
    }
}
