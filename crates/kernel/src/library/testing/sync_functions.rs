//! Kernels that run a sync function to completion and return its results:
//! `tfrt_test.invoke_sync_function.i32_i32.{i32,i32_i32}` runs it in the caller's request,
//! `tfrt_test.sync_function_runner.i32_i32.{i32,i32_i32}` in a request of its own (TFRT's
//! `SyncFunctionRunner`), so that cancelling one does not cancel the other. Both take two i32
//! operands and the function as `fn`, and return its one or two i32 results.

use std::sync::Arc;

use crate::{ExecutionContext, KernelError, KernelFrame, KernelRegistry, Value};
use rtx_host::Diagnostic;

/// Which request the function runs in.
#[derive(Clone, Copy)]
enum Request {
    Callers,
    Own,
}

fn invoke(frame: &mut KernelFrame<'_>, results: usize, request: Request) -> Result<(), KernelError> {
    let arguments = [Value::from(*frame.get::<i32>(0)?), Value::from(*frame.get::<i32>(1)?)];
    let function = frame.function(0)?;
    if function.num_arguments() != arguments.len() || function.num_results() != results {
        return Err(format!(
            "Invalid signature for function {}. Expected {} arguments and {results} results, but get {} arguments \
             and {} results",
            function.name(),
            arguments.len(),
            function.num_arguments(),
            function.num_results()
        )
        .into());
    }
    let context = match request {
        Request::Callers => frame.context().clone(),
        Request::Own => {
            let caller = frame.context().clone();
            ExecutionContext::with_handlers(
                Arc::clone(frame.host()),
                Arc::new(move |diagnostic: &Diagnostic| caller.emit_error(diagnostic)),
                frame.context().output_handler(),
            )
        }
    };
    let values = function.execute_sync(&context, &arguments)?;
    for (i, value) in values.iter().enumerate() {
        let value =
            *value.get::<i32>().ok_or_else(|| format!("result {i} of function {} is not an i32", function.name()))?;
        frame.emplace_result(i, value)?;
    }
    Ok(())
}

pub(crate) fn register(registry: &mut KernelRegistry) {
    for (suffix, results) in [("i32", 1), ("i32_i32", 2)] {
        registry.add_kernel(&format!("tfrt_test.invoke_sync_function.i32_i32.{suffix}"), move |f| {
            invoke(f, results, Request::Callers)
        });
        registry.add_kernel(&format!("tfrt_test.sync_function_runner.i32_i32.{suffix}"), move |f| {
            invoke(f, results, Request::Own)
        });
    }
}
