//! Calling a function with tensors in and out and waiting for it, for hosts that would block on
//! the results anyway (`rtx_context_call`, Python's `invoke`): the synchronous form of
//! [`Context::invoke`](super::Context::invoke), one step instead of async values made, joined,
//! awaited and read.
//!
//! A VM function runs on the calling thread, as IREE's own bindings run it: no task is queued
//! and no thread hands the call to another, whatever the context's queue (its dispatches still
//! go to the device: inline on `local-sync`, to the worker pool on `local-task`). A BEF function
//! needs the dataflow executor, so it runs on the context's queue as `invoke` runs it, and the
//! caller waits. The errors are those the results of `invoke` would carry, with the same codes
//! and messages.

use std::sync::Arc;

#[cfg(feature = "tfrt")]
use super::bef_call;
#[cfg(feature = "tfrt")]
use super::bridge::tensors::tensor_to_view;
#[cfg(feature = "tfrt")]
use super::context::BefFunction;
use super::context::VmFunction;
#[cfg(feature = "tfrt")]
use super::invocation::held_type;
use super::invocation::{check_result_count, placed, result_view, with_signal, wrong_result};
use rtx_hal::buffer_view::BufferView;
use rtx_hal::device::Allocator;
use rtx_hal::fence::Fence;
#[cfg(feature = "tfrt")]
use rtx_host::{AsyncValueRef, HostContext, RcAsyncValue};
use rtx_host::{Diagnostic, ResultExt, StatusCode};
#[cfg(feature = "tfrt")]
use rtx_kernel::tensor::DenseHostTensor;
use rtx_vm::abi::ValueKind;
use rtx_vm::context::VmContext;
use rtx_vm::value::Value;

/// Runs `function` of `vm` on the calling thread with `views` as its declared arguments (the
/// caller checked their number) and returns its results, waiting for the signal fence of a
/// `coarse-fences` function (the call makes its own fences, as `invoke` does without them).
pub(super) fn call_vm(
    vm: &VmContext,
    function: &VmFunction,
    views: &[Arc<BufferView>],
    device_allocator: Option<&Allocator>,
) -> Result<Vec<Arc<BufferView>>, Diagnostic> {
    let handle = &function.handle;
    let name = &handle.full_name;
    if let Some((index, kind)) = function.results.iter().enumerate().find(|(_, &kind)| kind != ValueKind::Ref) {
        return Err(not_a_tensor(format!("result {index} of `{name}` is {}", kind.name())));
    }
    let mut arguments = views
        .iter()
        .zip(&function.arguments)
        .enumerate()
        .map(|(index, (view, &kind))| {
            let argument = match kind {
                ValueKind::Ref => Ok(Value::Ref(Some(BufferView::shared_to_ref(Arc::clone(view))))),
                // What `invoke` says of a buffer view passed for a scalar.
                other => Err(Diagnostic::new(
                    StatusCode::InvalidArgument,
                    format!("expected {} but the value holds a buffer view", other.name()),
                )),
            };
            argument
                .and_then(|argument| placed(argument, device_allocator))
                .with_context(|| format!("argument {index} of `{name}`"))
        })
        .collect::<Result<Vec<Value>, Diagnostic>>()?;
    let signal = (handle.model.fence_arguments() > 0).then(|| with_signal(&mut arguments, Fence::new()));
    let values = vm.invoke(handle, arguments)?;
    if let Some(signal) = signal {
        signal.wait()?;
    }
    check_result_count(handle, values.len(), function.results.len())?;
    values
        .into_iter()
        .enumerate()
        .map(|(index, value)| match value {
            Value::Ref(r) => result_view(handle, index, r),
            other => Err(wrong_result(handle, index, ValueKind::Ref, &other)),
        })
        .collect()
}

/// Runs the BEF `function` on `host`'s queue with `views` for its arguments (the caller checked
/// their number), waits for it, and returns its results, each a tensor.
#[cfg(feature = "tfrt")]
pub(super) fn call_bef(
    host: &Arc<HostContext>,
    function: &BefFunction,
    views: &[Arc<BufferView>],
) -> Result<Vec<Arc<BufferView>>, Diagnostic> {
    let arguments: Vec<RcAsyncValue> =
        views.iter().map(|view| AsyncValueRef::available(Arc::clone(view)).into_untyped()).collect();
    let results = bef_call::start(host, function, &arguments, None)?;
    host.await_values(&results)?;
    results
        .iter()
        .enumerate()
        .map(|(index, value)| {
            if let Some(error) = value.get_error() {
                return Err(error.clone());
            }
            if let Ok(tensor) = value.try_get::<DenseHostTensor>() {
                return tensor_to_view(tensor);
            }
            value
                .try_get::<Arc<BufferView>>()
                .map(Arc::clone)
                .map_err(|_| not_a_tensor(format!("result {index} of `{}` is {}", function.name, held_type(value))))
        })
        .collect()
}

/// INVALID_ARGUMENT for a function that returns something else than tensors: `what` says which
/// result and what it is.
fn not_a_tensor(what: String) -> Diagnostic {
    Diagnostic::new(
        StatusCode::InvalidArgument,
        format!("{what}, not a tensor; call the function with async values (invoke)"),
    )
}
