//! Composite ops: a BEF function run as an op (`corert.make_composite_op`). It takes a chain and
//! tensor handles and returns a chain and tensor handles; its results become the op's.

use rtx_host::{AsyncValueRef, Chain, Diagnostic, IndirectAsyncValue, RcAsyncValue, StatusCode};
use rtx_kernel::ProgramFunction;

use crate::handle::TensorHandle;
use crate::handler::{CoreRuntimeOp, OpOutcome};
use crate::metadata::TensorMetadata;

const TENSOR_HANDLE: &str = "!corert.tensorhandle";

/// `function` as an op; its every argument and result but the first (a chain) must be a tensor
/// handle.
pub fn composite_op(function: ProgramFunction) -> Result<CoreRuntimeOp, Diagnostic> {
    // A chain first, then tensor handles, in and out.
    let wrong = |what: &str, types: Vec<&str>| {
        let chain = types.first().copied();
        if chain != Some("!tfrt.chain") {
            let found = chain.map_or_else(|| "nothing".to_owned(), |t| format!("a {t}"));
            return Some(format!("its first {what} is {found}, not a !tfrt.chain"));
        }
        let (i, t) = types.iter().enumerate().skip(1).find(|(_, t)| **t != TENSOR_HANDLE)?;
        Some(format!(
            "its {what} {} is a {t}; after the leading chain, a composite op takes and returns only {TENSOR_HANDLE}",
            i - 1
        ))
    };
    let wrong = wrong("argument", function.argument_types()).or_else(|| wrong("result", function.result_types()));
    if let Some(what) = wrong {
        return Err(Diagnostic::new(StatusCode::InvalidArgument, format!("composite op @{}: {what}", function.name())));
    }
    let name = function.name().to_owned();
    Ok(CoreRuntimeOp::new(&name, "composite", move |invocation| {
        let chain = invocation.chain.clone().unwrap_or_else(|| Chain::ready().into_untyped());
        let mut arguments = vec![chain];
        arguments.extend(invocation.arguments.iter().map(|h| AsyncValueRef::available(h.clone()).into_untyped()));
        let mut values = function.execute(invocation.context, &arguments).into_iter();
        let chain = values.next();
        let mut results: Vec<TensorHandle> = values.map(handle_of).collect();
        if results.len() != invocation.num_results {
            let error = Diagnostic::new(
                StatusCode::InvalidArgument,
                format!(
                    "composite op @{} returns {} tensors, not {}",
                    function.name(),
                    results.len(),
                    invocation.num_results
                ),
            );
            (invocation.errors)(&error);
            results = vec![TensorHandle::error(error); invocation.num_results];
        }
        OpOutcome { results, chain: invocation.chain.as_ref().and(chain) }
    }))
}

/// A handle for a function result: the handle itself once it is there, or one that follows it.
fn handle_of(value: RcAsyncValue) -> TensorHandle {
    if let Some(error) = value.get_error() {
        return TensorHandle::error(error.clone());
    }
    if let Ok(handle) = value.try_get::<TensorHandle>() {
        return handle.clone();
    }
    if value.is_available() {
        return TensorHandle::error(Diagnostic::new(
            StatusCode::InvalidArgument,
            format!("a composite op returned a {}, not a tensor handle", value.type_name()),
        ));
    }
    let metadata = AsyncValueRef::<TensorMetadata>::unconstructed();
    let tensor = IndirectAsyncValue::new();
    let (known, data, source) = (metadata.clone(), tensor.clone(), value.clone());
    value.and_then(move || {
        let handle = handle_of(source);
        let _ = data.forward_indirect(handle.tensor().clone());
        let from = handle.async_metadata();
        from.as_untyped().clone().and_then(move || {
            let _ = match from.as_untyped().get_error() {
                Some(error) => known.as_untyped().set_error(error.clone()),
                None => known.emplace(from.get().clone()),
            };
        });
    });
    TensorHandle::host(metadata, tensor.value())
}
