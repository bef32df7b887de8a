//! Running BEF functions: the dataflow executor for async functions ([`dataflow`]), a
//! straight-line interpreter for sync functions ([`interpreter`]), and [`Function`], the handle
//! kernels, the runtime and the `rtx bef-exec` command call them through.

mod dataflow;
mod function;
mod interpreter;

pub use function::Function;

#[cfg(test)]
mod tests;
