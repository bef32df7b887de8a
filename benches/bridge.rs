//! The cost of crossing between a kernel graph and a compiled module, each row beside an anchor
//! measured in the same run (`support::row`), on the `s` queue and `local-sync`, so that both run
//! on the calling thread:
//!
//! - `vm_call/predict`: the digit classifier (models/digits/mlp.vmfb, `module.predict` on one
//!   1x64 image) called from a BEF function through `rtx.vm.call`, the image a dense host tensor
//!   and the probabilities one back. Anchor: `Context::invoke` of `module.predict` itself with a
//!   buffer view, the result read as a view: the same VM call without the graph and the tensor
//!   conversions.
//!
//! `cargo bench --bench bridge [-- FILTER]`

mod support;

use std::hint::black_box;
use std::sync::Arc;

use rtx::bef::format::DType;
use rtx::bef::reader::BefImage;
use rtx::host::{AsyncValueRef, RcAsyncValue};
use rtx::kernel::tensor::{DenseHostTensor, TensorShape};
use rtx::runtime::bridge::tensors::tensor_to_view;
use rtx::runtime::{Context, ContextOptions, Module, Runtime};
use support::{per_call, row};

const CALLS: u64 = 2_000;

const GRAPH: &str = r#"
func.func @predict(%x: !tfrt_tensor.tensor) -> !tfrt_tensor.tensor {
  %p = "rtx.vm.call"(%x) {callee = "module.predict"} : (!tfrt_tensor.tensor) -> !tfrt_tensor.tensor
  tfrt.return %p : !tfrt_tensor.tensor
}
"#;

fn context() -> Context {
    let context = Runtime::new().context_with(ContextOptions::from_spec("s").unwrap()).unwrap();
    context.add_device("local-sync").unwrap();
    let models = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models/digits");
    context.add_module(&Module::load_file(models.join("mlp.vmfb")).unwrap()).unwrap();
    let module = rtx::mlir::read_any(GRAPH.as_bytes(), Some("bridge.mlir")).expect("the graph parses");
    let bef = rtx::bef::mlir_to_bef(&module, &rtx::bef::WriteOptions::default()).expect("the graph translates");
    let graph = Module::Bef { name: "graph".into(), image: Arc::new(BefImage::from_bytes(&bef).unwrap()) };
    context.add_module(&graph).unwrap();
    context
}

/// Calls `name` on `arguments` `CALLS` times, waiting for each call's results.
fn calls<'a>(context: &'a Context, name: &'a str, arguments: Vec<RcAsyncValue>) -> impl FnMut() -> f64 + 'a {
    let function = context.function(name).unwrap();
    move || {
        per_call(CALLS, &mut || {
            let results = context.invoke(&function, &arguments).unwrap();
            context.await_values(&results).unwrap();
            assert!(!results[0].is_error(), "{name} runs");
            black_box(results);
        })
    }
}

fn main() {
    let wanted = support::filter();
    let name = "vm_call/predict (ns per call)";
    if !wanted(name) {
        return;
    }
    let context = context();
    let image = DenseHostTensor::new_zeroed(context.host(), DType::F32, TensorShape::new(vec![1, 64]).unwrap());
    let image = image.unwrap();
    image.fill(0.5f32).unwrap();
    let view = AsyncValueRef::available(tensor_to_view(&image).unwrap()).into_untyped();
    let tensor = AsyncValueRef::available(image).into_untyped();
    let mut anchor = calls(&context, "module.predict", vec![view]);
    let mut subject = calls(&context, "graph.predict", vec![tensor]);
    row(name, "Context::invoke of module.predict", &mut anchor, &mut subject);
}
