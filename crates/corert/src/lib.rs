//! TFRT's Core Runtime on rtx: ops run one at a time by name — eagerly from a host, or from BEF
//! through `corert.executeop` — on the same kernels and threads as graphs.
//!
//! - A [`TensorHandle`] is the value ops take and give: a tensor that may still be computed, its
//!   [`TensorMetadata`] (element type and shape, often known before the data) and its device.
//! - An [`OpHandler`] runs ops by name: [`OpHandler::make_op`] prepares an op once and the
//!   [`CoreRuntimeOp`] it gives runs it without blocking. Handlers stack: the cpu handler
//!   ([`CpuOpHandler`]) falls back to another for ops it lacks, ending at [`NullOpHandler`];
//!   [`LoggingOpHandler`] wraps another and logs each dispatch; a BEF function is an op of its
//!   own ([`composite_op`]). A device's handler plugs in the same way.
//! - [`OpHandlers`] keeps a host context's handlers by the names programs ask for (`"cpu"`).
//! - [`OpAttrs`] are an op's attributes by name.
//! - [`register_kernels`] adds the `corert.*` kernels to a registry.

mod attrs;
mod composite;
mod cpu;
mod handle;
mod handler;
mod kernels;
mod logging;
mod metadata;
mod predicate;
mod print;
mod scalar;

pub use attrs::{OpAttr, OpAttrs};
pub use composite::composite_op;
pub use cpu::{CpuOp, CpuOpHandler, CpuOpRegistry, Dispatch, DispatchFn, MetadataFn, OpFlags};
pub use handle::{TensorHandle, HOST_DEVICE};
pub use handler::{CoreRuntimeOp, ErrorSink, NullOpHandler, OpHandler, OpHandlers, OpInvocation, OpOutcome};
pub use kernels::{register_kernels, FrozenOpAttrs, OpAttrsBuilder};
pub use logging::LoggingOpHandler;
pub use metadata::TensorMetadata;
pub use print::{handle_text, tensor_text};
pub use scalar::ScalarHostTensor;
