//! Kernels: the operations BEF functions are made of, registered by their TFRT names — TFRT's
//! kernel layer, below the BEF executor: nothing here reads a BEF file.
//!
//! - [`KernelRegistry`] maps names to kernels (Rust closures or functions) and native functions;
//!   a BEF file resolves its kernel names against one when it is opened.
//! - [`KernelFrame`] is what an async kernel sees: its arguments (available values), its
//!   attributes (decoded from the file by the kind the kernel expects, bounds-checked), the
//!   functions it refers to, its result slots, its location for diagnostics and the
//!   [`ExecutionContext`] (host context, cancellation, output). [`SyncKernelFrame`] is the same
//!   for kernels of sync functions, over plain [`Value`]s.
//! - [`pure`] kernels (scalar operations with no effect but their results) are defined once and
//!   run in async functions, sync functions, and plans: async functions made only of them, run
//!   as straight-line code.
//! - A kernel returns `Err(KernelError)` to fail: the executor reports the error once, at the
//!   kernel's location, and makes it the value of the results the kernel did not set.
//! - [`library`] holds TFRT's kernels, one module per family: the core ones, the test kernels
//!   and the tensor kernels.
//! - A kernel reads its record ([`record`]) through the [`Program`] it belongs to: attributes
//!   ([`attribute`] views over the program's attributes section, in [`DType`]s), locations,
//!   and the [`ProgramFunction`]s it refers to. `rtx-bef` implements [`Program`] for a BEF file.
//! - [`tensor`] holds the host tensor and shape types the tensor kernels pass around.
//! - [`derived`] keeps what kernels derive from a program's constants (weights in another
//!   layout) from one call to the next.
//!
//! A kernel that adds one to an `i32`:
//!
//! ```
//! use rtx_kernel::KernelRegistry;
//!
//! let mut registry = KernelRegistry::new();
//! registry.add_kernel("my.increment.i32", |frame| {
//!     let x = *frame.get::<i32>(0)?;
//!     frame.emplace_result(0, x.checked_add(1).ok_or("overflow")?)
//! });
//! ```

pub mod attribute;
pub mod context;
pub mod derived;
pub mod dtype;
pub(crate) mod error;
pub(crate) mod frame;
pub(crate) mod function;
pub mod library;
pub mod pure;
pub mod record;
pub(crate) mod registry;
pub mod tensor;
pub(crate) mod value;
pub mod vbr;

pub use attribute::{Attribute, AttributeError, Scalar};
pub use context::{cancelled_error, format_runtime_error, DiagnosticHandler, ExecutionContext, OutputHandler};
pub use dtype::DType;
pub use error::KernelError;
pub use frame::{ErrorReporter, KernelFrame, KernelSite, SyncKernelFrame};
pub use function::{Program, ProgramFunction};
pub use pure::{PureKernel, ScalarType};
pub use record::KernelRecord;
pub use registry::{AsyncKernelFn, Kernel, KernelRegistry, NativeFn, SyncKernelFn};
pub use value::Value;
