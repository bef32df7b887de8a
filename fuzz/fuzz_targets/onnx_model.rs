//! Arbitrary bytes as an ONNX model, loaded as users load one (`rtx::runtime::Module::load_memory`):
//! the protobuf decoder, the importer (each node lowered to `nn.*` or `onnx.<Op>` kernels,
//! constants and shapes folded), the BEF writer and reader; then, for what loads, every function
//! run on a single-threaded queue with a one-element f32 tensor per argument. Graphs without
//! inputs (the seeds of `onnx_seeds.py` turn each node-suite case's inputs into initializers)
//! run their kernels on whatever attributes, constants and shapes the mutations left. A watchdog
//! cancels the host context after 200 ms so that long runs end in `Cancelled` errors. Each input
//! must end in a value or an error, never a panic, hang, crash or huge allocation.

#![no_main]

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use rtx::host::{AsyncValueRef, RcAsyncValue};
use rtx::kernel::tensor::{DenseHostTensor, TensorShape};
use rtx::kernel::DType;
use rtx::runtime::{ContextOptions, Module, Runtime};

fuzz_target!(|data: &[u8]| {
    let Ok(module) = Module::load_memory(data) else { return };
    let options = ContextOptions::from_spec("s").expect("the s queue");
    let context = Runtime::new().context_with(options).expect("a context");
    if context.add_module(&module).is_err() {
        return;
    }
    let (done, finished) = mpsc::channel::<()>();
    let host = Arc::clone(context.host());
    let watchdog = std::thread::spawn(move || {
        if finished.recv_timeout(Duration::from_millis(200)).is_err() {
            host.cancel();
        }
    });
    for exported in module.exported_functions() {
        let Ok((arguments, _)) = &exported.kinds else { continue };
        let Ok(function) = context.function(&exported.name) else { continue };
        let arguments: Vec<RcAsyncValue> = arguments
            .iter()
            .map(|_| {
                let shape = TensorShape::new(vec![1]).expect("a shape of one element");
                let tensor = DenseHostTensor::new_zeroed(context.host(), DType::F32, shape).expect("4 bytes");
                AsyncValueRef::available(tensor).into()
            })
            .collect();
        if let Ok(results) = context.invoke(&function, &arguments) {
            let _ = context.await_values(&results);
        }
    }
    drop(done);
    watchdog.join().expect("the watchdog ends");
});
