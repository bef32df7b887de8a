//! Running BEF functions: the dataflow executor for async functions ([`dataflow`]), plans for
//! async functions made only of pure kernels ([`plan`]), a straight-line interpreter for sync
//! functions ([`interpreter`]), and [`Function`], the handle kernels, the runtime and the
//! `rtx bef-exec` command call them through.

mod dataflow;
mod function;
mod interpreter;
mod plan;

pub use function::Function;
pub(crate) use plan::Plan;

#[cfg(test)]
mod tests;
