//! Kernels that run a sync function to completion and return its results:
//! `tfrt_test.invoke_sync_function.i32_i32.{i32,i32_i32}` runs it in the caller's request,
//! `tfrt_test.sync_function_runner.i32_i32.{i32,i32_i32}` in a request of its own (TFRT's
//! `SyncFunctionRunner`), so that cancelling one does not cancel the other. Both take two i32
//! operands and the function as `fn`, and return its one or two i32 results.

use std::sync::Arc;

use crate::kernel::{ExecutionContext, KernelError, KernelFrame, KernelRegistry, Value};
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bef::executor::Function;
    use crate::bef::reader::BefFile;
    use crate::bef::{mlir_to_bef, WriteOptions};
    use rtx_host::{HostContext, RcAsyncValue, StatusCode};

    /// A sync function of the kernel's arguments, then one that cancels the request it runs in
    /// (and returns its first argument), each run by both kernels; the add after them shows
    /// whether the caller's request was cancelled.
    const PROGRAM: &str = r#"
func.func @difference(%a: i32, %b: i32) -> i32 attributes {tfrt.sync} {
  %d = "t.minus"(%a, %b) : (i32, i32) -> i32
  tfrt.return %d : i32
}

func.func @cancels(%a: i32, %b: i32) -> i32 attributes {tfrt.sync} {
  %d = "t.cancel"(%a) : (i32) -> i32
  tfrt.return %d : i32
}

func.func @invoke(%a: i32, %b: i32) -> (i32, i32) {
  %d = "tfrt_test.invoke_sync_function.i32_i32.i32"(%a, %b) {fn = @difference} : (i32, i32) -> i32
  %c = "tfrt_test.invoke_sync_function.i32_i32.i32"(%d, %b) {fn = @cancels} : (i32, i32) -> i32
  %after = tfrt.add.i32 %c, %d
  tfrt.return %d, %after : i32, i32
}

func.func @runner(%a: i32, %b: i32) -> (i32, i32) {
  %d = "tfrt_test.sync_function_runner.i32_i32.i32"(%a, %b) {fn = @difference} : (i32, i32) -> i32
  %c = "tfrt_test.sync_function_runner.i32_i32.i32"(%d, %b) {fn = @cancels} : (i32, i32) -> i32
  %after = tfrt.add.i32 %c, %d
  tfrt.return %d, %after : i32, i32
}
"#;

    fn run(name: &str) -> Vec<RcAsyncValue> {
        let mut registry = KernelRegistry::with_all_kernels();
        registry.add_sync_kernel("t.minus", |f| {
            let difference = f.get::<i32>(0)? - f.get::<i32>(1)?;
            f.set_result(0, difference)
        });
        registry.add_sync_kernel("t.cancel", |f| {
            f.context().cancel();
            let value = *f.get::<i32>(0)?;
            f.set_result(0, value)
        });
        let module = rtx_mlir::parse_text(PROGRAM).unwrap();
        let file = BefFile::from_bytes(&mlir_to_bef(&module, &WriteOptions::default()).unwrap(), &registry).unwrap();
        let host = Arc::new(HostContext::with_work_queue_spec("s").unwrap());
        let context =
            ExecutionContext::with_handlers(Arc::clone(&host), Arc::new(|_: &Diagnostic| {}), Arc::new(|_: &str| {}));
        let arguments = [7i32, 3].map(|x| rtx_host::AsyncValueRef::available(x).into_untyped());
        let results = Function::lookup(&file, name).unwrap().execute(&context, &arguments);
        host.await_values(&results).unwrap();
        results
    }

    #[test]
    fn the_function_gets_the_kernels_arguments_in_order() {
        for name in ["invoke", "runner"] {
            assert_eq!(*run(name)[0].try_get::<i32>().unwrap(), 4, "{name}");
        }
    }

    #[test]
    fn only_the_runner_keeps_the_callers_request_apart() {
        let invoked = run("invoke");
        assert_eq!(invoked[1].get_error().unwrap().code, StatusCode::Cancelled, "the caller's request was cancelled");
        assert_eq!(*run("runner")[1].try_get::<i32>().unwrap(), 8);
    }
}
