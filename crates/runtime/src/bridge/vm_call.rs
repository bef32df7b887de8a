//! `rtx.vm.call`: the BEF kernel that calls a function of a VM module of the same context.
//!
//! ```mlir
//! %probabilities = "rtx.vm.call"(%image, %chain) {callee = "mlp.predict"}
//!     : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt_tensor.tensor
//! ```
//!
//! Operands are the function's declared arguments in order — dense host tensors for its `r`
//! (buffer view) arguments, `i32`/`i64`/`f32`/`f64` values for its scalars — and a last chain,
//! when given, is waited for and not passed. Results are the function's: tensors for buffer
//! views, scalars as they are. A tensor goes in as a view of its own bytes; a result view comes
//! back as a tensor over the program's buffer, no copy made on the CPU devices
//! ([`tensors`](super::tensors)).
//!
//! The call runs as [`Context::invoke`](crate::Context::invoke) runs one: on the work
//! queue, suspended (not blocking a worker) while the program waits, a `coarse-fences` function's
//! results set when its signal fence is reached. A wrong callee or operand count fails the kernel
//! at once; a VM error (`vm.fail`, a shape the program's asserts refuse, cancellation) becomes the
//! error of the kernel's results, with the VM's message and the kernel's location, so only the
//! kernels that depend on them are skipped.

use std::sync::{Arc, OnceLock};

use super::tensors::{tensor_to_view, view_to_tensor};
use crate::context::{vm_function, VmFunction};
use crate::invocation::{self, held_type, plural};
use rtx_hal::buffer_view::BufferView;
use rtx_hal::device::Allocator;
use rtx_host::{join, AsyncValueRef, Chain, Diagnostic, HostContext, RcAsyncValue, StatusCode};
use rtx_kernel::tensor::DenseHostTensor;
use rtx_kernel::{ErrorReporter, KernelError, KernelFrame, KernelRegistry};
use rtx_vm::abi::ValueKind;
use rtx_vm::context::WeakContext;

/// The kernel's name.
pub const VM_CALL: &str = "rtx.vm.call";

/// Registers [`VM_CALL`] in `registry`, calling into `vm` (held weakly: the context holds the
/// kernel) with host tensors placed where the device `allocator` (once set) can use them.
pub(crate) fn register(registry: &mut KernelRegistry, vm: WeakContext, allocator: Arc<OnceLock<Allocator>>) {
    registry.add_kernel(VM_CALL, move |frame| call(frame, &vm, &allocator));
}

fn call(frame: &mut KernelFrame<'_>, vm: &WeakContext, allocator: &OnceLock<Allocator>) -> Result<(), KernelError> {
    let callee = frame.named_attribute("callee")?.string()?;
    let vm = vm.upgrade().ok_or_else(|| {
        KernelError::new(StatusCode::Cancelled, format!("{VM_CALL}: the context of `{callee}` was released"))
    })?;
    let function = vm_function(&vm, callee).map_err(|e| e.context(format_args!("{VM_CALL}")))?;
    let arguments = arguments(frame, &function)?;
    if frame.num_results() != function.results.len() {
        return Err(mismatch(&function, "returns", plural(function.results.len(), "result"), frame.num_results()));
    }
    let done = invocation::done_value();
    let values = invocation::start(frame.host(), &vm, &function, &arguments, allocator.get(), Some(done.clone()))?;
    let results = (0..values.len()).map(|i| frame.allocate_indirect_result(i)).collect::<Result<Vec<_>, _>>()?;
    let (host, reporter) = (Arc::clone(frame.host()), frame.error_reporter());
    let kinds = function.results.clone();
    let mut waited = values.clone();
    waited.push(done.clone());
    join::run_when_ready(&waited, move || {
        // One report for the call, however many results it poisons (a call without results
        // reports its failure through `done`).
        let error = std::iter::once(&done)
            .chain(&values)
            .find_map(RcAsyncValue::get_error)
            .map(|error| reporter.report(error.clone()));
        for ((result, value), kind) in results.iter().zip(&values).zip(kinds) {
            let out = match &error {
                Some(error) => error.clone(),
                None => result_value(&host, &reporter, value, kind),
            };
            // The executor set nothing else on the kernel's own results.
            let _ = result.forward_to(out);
        }
    });
    Ok(())
}

/// The function's arguments from the kernel's operands: tensors as views of their bytes,
/// scalars as they are (the call checks their types). A last chain is not passed.
fn arguments(frame: &KernelFrame<'_>, function: &VmFunction) -> Result<Vec<RcAsyncValue>, KernelError> {
    let mut operands = frame.arguments();
    if let Some((last, rest)) = operands.split_last() {
        if last.is_type::<Chain>() && rest.len() == function.declared_arguments() {
            operands = rest;
        }
    }
    if operands.len() != function.declared_arguments() {
        let takes = plural(function.declared_arguments(), "argument");
        return Err(mismatch(function, "takes", takes, operands.len()));
    }
    operands
        .iter()
        .zip(&function.arguments)
        .enumerate()
        .map(|(index, (value, kind))| match kind {
            ValueKind::Ref => {
                let tensor = value.try_get::<DenseHostTensor>().map_err(|_| {
                    Diagnostic::new(
                        StatusCode::InvalidArgument,
                        format!(
                            "{VM_CALL}: argument {index} of `{}` is a buffer view, which a dense host tensor \
                             passes, but the operand holds {}",
                            function.handle.full_name,
                            held_type(value)
                        ),
                    )
                })?;
                Ok(AsyncValueRef::available(tensor_to_view(tensor)?).into_untyped())
            }
            _ => Ok(value.clone()),
        })
        .collect()
}

/// A result of the call as the graph sees it: a view as a host tensor, a scalar as it is.
fn result_value(host: &HostContext, reporter: &ErrorReporter, value: &RcAsyncValue, kind: ValueKind) -> RcAsyncValue {
    if kind != ValueKind::Ref {
        return value.clone();
    }
    let tensor = value
        .try_get::<Arc<BufferView>>()
        .map_err(|e| KernelError::from(e).0)
        .and_then(|view| view_to_tensor(host, view));
    match tensor {
        Ok(tensor) => AsyncValueRef::available(tensor).into_untyped(),
        Err(error) => reporter.report(error),
    }
}

/// `rtx.vm.call: `m.f` (calling convention `0r_r`) takes 1 argument, but the kernel has 2`.
fn mismatch(function: &VmFunction, verb: &str, expected: String, actual: usize) -> KernelError {
    let what = if verb == "takes" { "operands (less a last chain)" } else { "results" };
    KernelError::new(
        StatusCode::InvalidArgument,
        format!(
            "{VM_CALL}: `{}` (calling convention `{}`) {verb} {expected}, but the kernel has {actual} {what}",
            function.handle.full_name, function.handle.cconv
        ),
    )
}
