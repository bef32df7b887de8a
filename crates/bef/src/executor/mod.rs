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

#[cfg(test)]
mod tests;
