//! Calling a function to completion whatever its ABI model. A `coarse-fences` function (compiled
//! with `--iree-execution-model=async-external`) returns as soon as its work is queued, so its
//! results are only ready when its signal fence is; this is how tools call it synchronously, as
//! IREE's do: no wait fence (null), a new signal fence, then a wait on it.

use std::sync::Arc;

use super::fence::Fence;
use crate::host::Diagnostic;
use crate::vm::abi::AbiModel;
use crate::vm::context::{Context, FunctionHandle};
use crate::vm::refs::Ref;
use crate::vm::value::Value;

/// How many of the function's arguments a caller supplies: all but the fences.
pub fn declared_arguments(function: &FunctionHandle, cconv_arguments: usize) -> usize {
    cconv_arguments.saturating_sub(function.model.fence_arguments())
}

/// Calls `function` with its declared `arguments` and returns its results once they are ready.
pub fn call_to_completion(
    context: &Context,
    function: &FunctionHandle,
    mut arguments: Vec<Value>,
) -> Result<Vec<Value>, Diagnostic> {
    if function.model != AbiModel::CoarseFences {
        return context.invoke(function, arguments);
    }
    let signal = Arc::new(Fence::new());
    arguments.push(Value::Ref(None));
    arguments.push(Value::Ref(Some(Ref::Object(signal.clone()))));
    let results = context.invoke(function, arguments)?;
    signal.wait().map_err(|error| error.map_message(|message| format!("{message}; waiting on finish fence")))?;
    Ok(results)
}
