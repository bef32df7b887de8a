//! TFRT's sync-function test kernels (`tfrt_test.invoke_sync_function`,
//! `tfrt_test.sync_function_runner`) calling sync functions of a BEF file.

use std::sync::Arc;

use rtx_bef::reader::BefFile;
use rtx_bef::{mlir_to_bef, WriteOptions};
use rtx_host::{Diagnostic, HostContext, RcAsyncValue, StatusCode};
use rtx_kernel::{ExecutionContext, KernelRegistry};

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
    let results = file.function_named(name).unwrap().execute(&context, &arguments);
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
