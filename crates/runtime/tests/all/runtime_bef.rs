//! BEF modules through the runtime API: loaded by magic, kernel names resolved when added to a
//! context (its core kernels and the host's), functions found by name and invoked with async
//! values as VM functions are. That c-examples/bef_kernel.bef is what `rtx translate` makes of its
//! source is tests/all/runtime_bef.rs's, at the repository root.

use std::sync::{Arc, Mutex};

use rtx_bef::{mlir_to_bef, WriteOptions};
use rtx_host::{AsyncValueRef, Diagnostic, RcAsyncValue, StatusCode};
use rtx_mlir::{parse_text_with, ParseOptions};
use rtx_runtime::{Context, ContextOptions, Module, Runtime};

/// `add` (two i32 arguments), `scale` (`my.scale.i32` with an i64 `factor` attribute) and
/// `later` (`my.later.i32`, whose result the test sets, then one add).
const PROGRAM: &str = r#"
func.func @add(%a: i32, %b: i32) -> i32 {
  %c = tfrt.add.i32 %a, %b
  tfrt.return %c : i32
}

func.func @scale(%x: i32) -> i32 {
  %y = "my.scale.i32"(%x) {factor = 3 : i64} : (i32) -> i32
  tfrt.return %y : i32
}

func.func @later() -> i32 {
  %x = "my.later.i32"() : () -> i32
  %y = tfrt.add.i32 %x, %x
  tfrt.return %y : i32
}
"#;

fn bef(text: &str, options: &WriteOptions) -> Vec<u8> {
    let parse = ParseOptions { file_name: Some("program.mlir".into()), ..ParseOptions::default() };
    mlir_to_bef(&parse_text_with(text, &parse).expect("the program parses"), options).expect("writes BEF")
}

fn module() -> Module {
    Module::load_memory(&bef(PROGRAM, &WriteOptions::default())).expect("loads")
}

/// A context on the multi-threaded queue (kernels run on worker threads) with `my.scale.i32`
/// and `my.later.i32`, whose pending results land in `pending`.
fn context_with_kernels(options: ContextOptions) -> (Context, Arc<Mutex<Vec<AsyncValueRef<i32>>>>) {
    let context = Runtime::new().context_with(options).unwrap();
    context
        .register_kernel("my.scale.i32", |frame| {
            let factor = frame.named_attribute("factor")?.scalar::<i64>()?;
            let x = i64::from(*frame.get::<i32>(0)?);
            let scaled = i32::try_from(x * factor).map_err(|_| "my.scale.i32 overflows")?;
            frame.emplace_result(0, scaled)
        })
        .unwrap();
    let pending = Arc::new(Mutex::new(Vec::new()));
    let parked = Arc::clone(&pending);
    context
        .register_kernel("my.later.i32", move |frame| {
            parked.lock().unwrap().push(frame.allocate_result::<i32>(0)?);
            Ok(())
        })
        .unwrap();
    context.add_module(&module()).unwrap();
    (context, pending)
}

fn i32_value(v: i32) -> RcAsyncValue {
    AsyncValueRef::available(v).into_untyped()
}

fn invoke(context: &Context, name: &str, arguments: &[RcAsyncValue]) -> Vec<RcAsyncValue> {
    let results = context.invoke(&context.function(name).unwrap(), arguments).unwrap();
    context.await_values(&results).unwrap();
    results
}

fn error_of(value: &RcAsyncValue) -> &Diagnostic {
    value.get_error().expect("an error result")
}

#[test]
fn a_bef_function_runs_on_available_arguments_and_its_kernels_read_attributes_by_name() {
    let (context, _) = context_with_kernels(ContextOptions::default());
    let sum = invoke(&context, "bef.add", &[i32_value(2), i32_value(40)]);
    assert_eq!(sum[0].try_get::<i32>().ok(), Some(&42));
    // A bare name refers to the most recently added module.
    let scaled = invoke(&context, "scale", &[i32_value(14)]);
    assert_eq!(scaled[0].try_get::<i32>().ok(), Some(&42));
}

#[test]
fn a_call_waits_for_unavailable_arguments_without_a_thread() {
    let (context, _) = context_with_kernels(ContextOptions::default());
    let later = AsyncValueRef::<i32>::unconstructed();
    let results = context.invoke(&context.function("bef.add").unwrap(), &[i32_value(1), later.as_untyped().clone()]);
    let results = results.unwrap();
    context.host().quiesce().unwrap();
    assert!(!results[0].is_available(), "the call waits for its argument");
    later.emplace(41).unwrap();
    context.await_values(&results).unwrap();
    assert_eq!(results[0].try_get::<i32>().ok(), Some(&42));
}

#[test]
fn a_kernel_result_set_later_completes_the_call() {
    let (context, pending) = context_with_kernels(ContextOptions::default());
    let results = context.invoke(&context.function("bef.later").unwrap(), &[]).unwrap();
    context.host().quiesce().unwrap();
    assert!(!results[0].is_available());
    let value = pending.lock().unwrap().pop().expect("the kernel ran");
    value.emplace(21).unwrap();
    context.await_values(&results).unwrap();
    assert_eq!(results[0].try_get::<i32>().ok(), Some(&42));
}

/// `done` waits for results a kernel sets after the function has run, and is never an error
/// then; it is the error when the call cannot run.
#[test]
fn done_follows_the_results_set_after_the_function_ran() {
    let (context, pending) = context_with_kernels(ContextOptions::default());
    let (results, done) = context.invoke_with_done(&context.function("bef.later").unwrap(), &[]).unwrap();
    context.host().quiesce().unwrap();
    assert!(!done.is_available(), "the result is not set yet");
    pending.lock().unwrap().pop().expect("the kernel ran").emplace(21).unwrap();
    context.await_values(std::slice::from_ref(&done)).unwrap();
    assert!(!done.is_error(), "{:?}", done.get_error());
    assert_eq!(results[0].try_get::<i32>().ok(), Some(&42));

    let mistyped = AsyncValueRef::available(1.5f32).into_untyped();
    let (_, done) = context.invoke_with_done(&context.function("bef.add").unwrap(), &[i32_value(1), mistyped]).unwrap();
    context.await_values(std::slice::from_ref(&done)).unwrap();
    assert_eq!(error_of(&done).code, StatusCode::InvalidArgument);
}

#[test]
fn errors_reach_the_results_with_their_code_and_kernel_location() {
    let (context, _) = context_with_kernels(ContextOptions::default());
    let failed = RcAsyncValue::error(Diagnostic::new(StatusCode::DataLoss, "the host's input is gone"));
    let passed_on = invoke(&context, "bef.add", &[i32_value(1), failed]);
    assert_eq!(error_of(&passed_on[0]).code, StatusCode::DataLoss);
    assert_eq!(error_of(&passed_on[0]).message, "the host's input is gone");

    let overflow = invoke(&context, "bef.scale", &[i32_value(i32::MAX)]);
    let error = error_of(&overflow[0]);
    assert_eq!((error.code, error.message.as_str()), (StatusCode::Internal, "my.scale.i32 overflows"));
    assert_eq!(error.location.as_ref().map(ToString::to_string).as_deref(), Some("program.mlir:8:8"));

    let mistyped = invoke(&context, "bef.add", &[i32_value(1), AsyncValueRef::available(1.5f32).into_untyped()]);
    let error = error_of(&mistyped[0]);
    assert_eq!(error.code, StatusCode::InvalidArgument);
    assert_eq!(error.message, "argument 1 of `bef.add`: expected i32 but the value holds f32");
}

#[test]
fn a_wrong_number_of_arguments_starts_nothing_and_says_what_the_function_takes() {
    let (context, _) = context_with_kernels(ContextOptions::default());
    let error = context.invoke(&context.function("bef.add").unwrap(), &[i32_value(1)]).unwrap_err();
    assert_eq!(error.code, StatusCode::InvalidArgument);
    assert_eq!(error.message, "`bef.add` (BEF `(i32, i32) -> (i32)`) takes 2 arguments, but the call passes 1");
    let missing = context.function("bef.nope").unwrap_err();
    assert_eq!(
        (missing.code, missing.message.as_str()),
        (StatusCode::NotFound, "BEF module `bef` has no function `nope`")
    );
}

#[test]
fn an_unknown_kernel_fails_add_module_with_its_name_and_location_until_it_is_registered() {
    let context = Runtime::new().context().unwrap();
    let module = module();
    let error = context.add_module(&module).unwrap_err();
    assert_eq!(error.code, StatusCode::NotFound);
    assert_eq!(error.message, "unknown kernel name 'my.scale.i32'; adding BEF module `bef`");
    assert_eq!(error.location.as_ref().map(ToString::to_string).as_deref(), Some("program.mlir:8:8"));
    assert!(context.function("bef.add").is_err(), "a failed add leaves the context as it was");

    context.register_kernel("my.scale.i32", |_| Ok(())).unwrap();
    context.register_kernel("my.later.i32", |_| Ok(())).unwrap();
    context.add_module(&module).unwrap();
    let again = context.add_module(&module).unwrap_err();
    assert_eq!(again.code, StatusCode::AlreadyExists);
}

#[test]
fn a_kernel_name_is_registered_once_and_never_over_a_core_kernel() {
    let context = Runtime::new().context().unwrap();
    context.register_kernel("my.k", |_| Ok(())).unwrap();
    for name in ["my.k", "tfrt.add.i32"] {
        let error = context.register_kernel(name, |_| Ok(())).unwrap_err();
        assert_eq!(error.code, StatusCode::AlreadyExists, "{name}");
        assert_eq!(error.message, format!("a kernel named `{name}` is already registered in this context"));
    }
    assert_eq!(context.register_kernel("", |_| Ok(())).unwrap_err().code, StatusCode::InvalidArgument);
}

#[test]
fn attributes_by_name_need_the_attribute_names_section() {
    let context = Runtime::new().context().unwrap();
    context
        .register_kernel("my.scale.i32", |frame| {
            frame.emplace_result(0, frame.named_attribute("factor")?.scalar::<i64>()? as i32)
        })
        .unwrap();
    context.register_kernel("my.later.i32", |_| Ok(())).unwrap();
    let bytes = bef(PROGRAM, &WriteOptions { disable_optional_sections: true });
    context.add_module(&Module::load_memory(&bytes).unwrap()).unwrap();
    let results = invoke(&context, "bef.scale", &[i32_value(1)]);
    let error = error_of(&results[0]);
    assert_eq!(error.code, StatusCode::InvalidArgument);
    assert!(error.message.starts_with("the BEF file has no attribute-names section"), "{}", error.message);
}

#[test]
fn cancelling_the_context_skips_the_kernels_that_have_not_started() {
    let (context, pending) = context_with_kernels(ContextOptions::default());
    let results = context.invoke(&context.function("bef.later").unwrap(), &[]).unwrap();
    context.host().quiesce().unwrap();
    context.host().cancel();
    pending.lock().unwrap().pop().expect("the kernel ran").emplace(21).unwrap();
    context.await_values(&results).unwrap();
    assert_eq!(error_of(&results[0]).code, StatusCode::Cancelled, "the add after the cancellation did not run");

    let after = invoke(&context, "bef.add", &[i32_value(1), i32_value(2)]);
    assert_eq!(error_of(&after[0]).code, StatusCode::Cancelled, "calls on a cancelled context do not start");
}

#[test]
fn a_bef_module_exports_its_named_functions_with_their_types() {
    let exports = module().exported_functions();
    let names: Vec<&str> = exports.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["add", "scale", "later"]);
    assert_eq!(exports[0].declaration.as_deref(), Some("@add(i32, i32) -> (i32)"));
    assert_eq!(exports[0].calling_convention, "");
    let (arguments, results) = exports[0].kinds.as_ref().unwrap();
    assert_eq!((arguments.len(), results.len()), (2, 1));

    let chained = bef(
        "func.func @f(%c: !tfrt.chain) -> !tfrt.chain {\n  tfrt.return %c : !tfrt.chain\n}\n",
        &WriteOptions::default(),
    );
    let export = &Module::load_memory(&chained).unwrap().exported_functions()[0];
    assert_eq!(export.kinds.as_ref().unwrap_err().code, StatusCode::Unimplemented);
}

#[test]
fn a_bef_file_loads_by_its_magic_and_is_named_by_its_stem() {
    let dir = std::env::temp_dir().join(format!("rtx-runtime-bef-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("scaler.bef");
    std::fs::write(&path, bef(PROGRAM, &WriteOptions::default())).unwrap();
    let module = Module::load_file(&path).unwrap();
    assert_eq!(module.name(), "scaler");
    let (context, _) = context_with_kernels(ContextOptions::from_spec("s").unwrap());
    context.add_module(&module).unwrap();
    let sum = invoke(&context, "scaler.add", &[i32_value(40), i32_value(2)]);
    assert_eq!(sum[0].try_get::<i32>().ok(), Some(&42));
    std::fs::remove_dir_all(&dir).unwrap();
}
