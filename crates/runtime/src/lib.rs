//! The runtime: the public Rust API every user of rtx goes through — the C ABI (`ffi`) and the
//! `rtx` tool included. It ties the host runtime, the VM and the devices together:
//!
//! - a [`Runtime`] holds what its contexts share: the worker threads of their work queues and of
//!   their CPU devices;
//! - a [`Context`] owns a host context (queue, allocator, cancellation), a device and the
//!   instances of the modules added to it; [`Context::invoke`] calls a function without blocking
//!   and returns its results as async values;
//! - a [`Module`] is a loaded program, its format recognised by its first bytes: IREE VM
//!   bytecode, or a BEF file whose kernels (TFRT's core kernels and those registered with
//!   [`Context::register_kernel`]) are bound when it is added to a context.
//!
//! Classifying a digit with the MLP of `models/digits`, without blocking on the call:
//!
//! ```
//! use std::sync::{mpsc, Arc};
//!
//! use rtx_hal::buffer_view::BufferView;
//! use rtx_host::AsyncValueRef;
//! use rtx_runtime::{Module, Runtime};
//!
//! # fn main() -> Result<(), rtx_host::Diagnostic> {
//! let digits = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/digits");
//! let runtime = Runtime::new();
//! let context = runtime.context()?; // on the runtime's worker threads
//! context.add_device("local-task")?; // dispatches spread over the runtime's CPU workers
//! context.add_module(&Module::load_file(format!("{digits}/mlp.vmfb"))?)?;
//! let predict = context.function("predict")?;
//!
//! // An 8x8 image of a 3 (a NumPy file) as a tensor, in an available async value.
//! let bytes = std::fs::read(format!("{digits}/digit_3.npy")).expect("the sample image");
//! let (image, _) = rtx_hal::npy::decode(&bytes)?;
//! let shape = image.shape.iter().map(|&d| d as i64).collect();
//! let input = AsyncValueRef::available(Arc::new(BufferView::from_host(shape, image.element_type.0, &image.data)?));
//!
//! // The call runs on a worker thread; this one attaches a continuation and waits.
//! let results = context.invoke(&predict, &[input.into_untyped()])?;
//! let (ready, continuation_ran) = mpsc::channel();
//! results[0].and_then(move || ready.send(()).expect("the receiver waits"));
//! context.await_values(&results)?;
//! continuation_ran.recv().expect("the continuation ran");
//!
//! if let Some(error) = results[0].get_error() {
//!     return Err(error.clone());
//! }
//! let probabilities: Vec<f32> = results[0].try_get::<Arc<BufferView>>().expect("a tensor").to_vec()?
//!     .chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
//! let class = (0..10).max_by(|&a, &b| probabilities[a].total_cmp(&probabilities[b])).unwrap();
//! assert_eq!(class, 3);
//! # Ok(())
//! # }
//! ```

#[cfg(feature = "tfrt")]
mod bef_call;
mod blocking_call;
pub mod bridge;
mod context;
#[cfg(feature = "tfrt")]
mod eager;
mod feature;
mod instance;
pub mod invocation;
mod module;
mod scalar_module;
pub mod vulkan;

pub use context::{Context, ContextOptions, Function, QueueChoice, VmFunction, HAL_MODULE};
pub use feature::left_out;
pub use instance::Runtime;
pub use module::{ExportedFunction, Module, ModuleFormat, BEF_MEMORY_MODULE_NAME, ONNX_MEMORY_MODULE_NAME};
pub use scalar_module::{Scalar, ScalarFunctions, ScalarModule};

// The types of the layers below that this API hands out and takes.
pub use rtx_corert::{CoreRuntimeOp, OpAttr, OpAttrs, TensorHandle};
pub use rtx_hal::buffer_view::BufferView;
pub use rtx_hal::element_type::ElementType;
pub use rtx_kernel::library::onnx::{NoValue, Sequence};
pub use rtx_kernel::tensor::{DenseHostTensor, StringHostTensor, TensorShape};
pub use rtx_kernel::DType;
pub use rtx_vm::abi::ValueKind;

/// What a kernel registered with [`Context::register_kernel`] sees of its call (the kernel layer's
/// frames, errors and attribute views).
pub mod kernel {
    pub use rtx_kernel::attribute::{Attribute, AttributeError};
    pub use rtx_kernel::{KernelError, KernelFrame};
}
