//! Running BEF functions: the dataflow executor for async functions ([`dataflow`]), plans for
//! async functions made only of pure kernels ([`plan`]), a straight-line interpreter for sync
//! functions ([`interpreter`]), and a BEF file as the kernel layer's `Program` ([`function`]), so
//! that kernels, the runtime and the `rtx bef-exec` command call its functions through
//! `rtx_kernel::ProgramFunction`.

mod dataflow;
mod function;
mod interpreter;
mod plan;
mod spans;

pub(crate) use plan::Plan;
pub(crate) use spans::KernelSpans;

use std::any::Any;

use rtx_host::work_queue::panic_message;
use rtx_host::StatusCode;
use rtx_kernel::KernelError;

/// The error of kernel `name`, which panicked with `payload`: a bug in the kernel, reported as
/// its error rather than unwinding through the executor (which would leave its results unset).
fn panicked(name: &str, payload: &(dyn Any + Send)) -> KernelError {
    KernelError::new(StatusCode::Panic, format!("kernel `{name}` panicked: {}", panic_message(payload)))
}

#[cfg(test)]
mod tests;
