//! TFRT's core kernels (`tfrt.*`), one module per family: [`scalar`] (constants, arithmetic,
//! comparisons, casts), [`print`], [`chain`] (chains and aliases), [`control_flow`] (calls,
//! conditionals, loops, `once`) and [`parallel`] (`parallel_for`, `parallel_call`); beside them
//! the tensor kernels ([`tensor`]) and the layers of neural networks ([`nn`]).
//!
//! As in TFRT, a kernel may be given one more argument than it reads when that argument is a
//! chain (`tfrt.print.i32 %x, %ch`): the executor has already waited for it.

pub(crate) mod chain;
pub(crate) mod control_flow;
pub(crate) mod nn;
pub mod onnx;
pub(crate) mod parallel;
pub mod print;
pub(crate) mod scalar;
pub(crate) mod tensor;
pub(crate) mod testing;

use super::{KernelError, KernelFrame, KernelRegistry};

/// Registers every core kernel.
pub fn register_core_kernels(registry: &mut KernelRegistry) {
    scalar::register(registry);
    print::register(registry);
    chain::register(registry);
    control_flow::register(registry);
    parallel::register(registry);
}

/// Registers every kernel rtx knows: the core ones, TFRT's test kernels, the tensor kernels and
/// the neural-network layers.
pub fn register_all_kernels(registry: &mut KernelRegistry) {
    register_core_kernels(registry);
    testing::register_test_kernels(registry);
    tensor::register_tensor_kernels(registry);
    nn::register_nn_kernels(registry);
    onnx::register_onnx_kernels(registry);
}

/// Sets each result of `frame` to the corresponding value.
pub(crate) fn set_results(frame: &mut KernelFrame<'_>, values: Vec<rtx_host::RcAsyncValue>) -> Result<(), KernelError> {
    for (i, value) in values.into_iter().enumerate() {
        frame.set_result(i, value)?;
    }
    Ok(())
}
