//! Bytecode calling host (native) modules through a context: plain and yieldable imports,
//! optional imports, the built-in `check` module, link-time errors, run budgets, and the
//! invocation suspending on a pending async value without blocking a thread.
//!
//! The module is tests/fixtures/vm/loader/native_calls.vmfb (source in loader/src, compiled by
//! iree-compile 3.13 through scripts/regen/vm-fixtures.sh).

use std::sync::{Arc, Mutex};

use rtx_hal::check::CheckModule;
use rtx_host::{AsyncValueRef, Diagnostic, StatusCode};
use rtx_test_support::fixture_dir;
use rtx_vm::context::VmContext;
use rtx_vm::interpreter::Step;
use rtx_vm::native::{Arguments, NativeFunction, NativeModule, NativeOutcome, NativeState};
use rtx_vm::value::Value;
use rtx_vm::Module;

/// Calls of `host.later` waiting for the test to answer: the argument and the result promise.
type Pending = Arc<Mutex<Vec<(i32, AsyncValueRef<Vec<Value>>)>>>;

/// The `host` module the fixture imports. `later` doubles its argument asynchronously: the
/// result promise is kept in `pending` for the test to fulfil.
struct Host {
    functions: Vec<NativeFunction>,
    pending: Pending,
    /// When set, `later` answers at once instead of leaving a promise.
    immediate: bool,
}

impl Host {
    fn new(add_cconv: &str) -> Host {
        Host {
            functions: vec![
                NativeFunction::new("add", add_cconv),
                NativeFunction::new("scale", "0If_If"),
                NativeFunction::new("later", "0i_i"),
            ],
            pending: Arc::default(),
            immediate: true,
        }
    }
}

impl NativeModule for Host {
    fn name(&self) -> &str {
        "host"
    }

    fn functions(&self) -> &[NativeFunction] {
        &self.functions
    }

    fn create_state(&self) -> Result<NativeState, Diagnostic> {
        Ok(Box::new(0u32))
    }

    fn call(
        &self,
        state: &mut NativeState,
        ordinal: usize,
        arguments: Arguments<'_>,
        results: &mut Vec<Value>,
    ) -> Result<NativeOutcome, Diagnostic> {
        *state.downcast_mut::<u32>().expect("our state") += 1;
        let arguments = arguments.to_values();
        let mut ready = |values: &[Value]| {
            results.extend_from_slice(values);
            Ok(NativeOutcome::Ready)
        };
        match (ordinal, &arguments[..]) {
            (0, [Value::I32(a), Value::I32(b)]) if a.checked_add(*b).is_none() => {
                Err(Diagnostic::new(StatusCode::OutOfRange, "host.add overflowed"))
            }
            (0, [Value::I32(a), Value::I32(b)]) => ready(&[Value::I32(a + b)]),
            (1, [Value::I64(a), Value::F32(f)]) => ready(&[Value::I64(a * 2), Value::F32(f * 2.0)]),
            (2, [Value::I32(a)]) if self.immediate => ready(&[Value::I32(a * 2)]),
            (2, [Value::I32(a)]) => {
                let promise = AsyncValueRef::unconstructed();
                self.pending.lock().unwrap().push((*a, promise.clone()));
                Ok(NativeOutcome::Pending(promise))
            }
            _ => Err(Diagnostic::new(StatusCode::InvalidArgument, "unexpected call")),
        }
    }
}

fn module() -> Arc<Module> {
    Arc::new(Module::load_file(fixture_dir("loader/native_calls.vmfb")).expect("fixture loads"))
}

fn context_with(host: Host) -> (VmContext, CheckModule) {
    let context = VmContext::new();
    let check = CheckModule::new();
    context.add_native_module(Arc::new(host)).expect("host module");
    context.add_native_module(Arc::new(check.clone())).expect("check module");
    context.add_module(module()).expect("bytecode module links");
    (context, check)
}

fn call(context: &VmContext, name: &str, arguments: Vec<Value>) -> Result<Vec<Value>, Diagnostic> {
    let function = context.lookup(name)?;
    context.invoke(&function, arguments)
}

#[test]
fn plain_native_calls_pass_every_scalar_width() {
    let (context, _) = context_with(Host::new("0ii_i"));
    assert_eq!(call(&context, "add_then_later", vec![Value::I32(2), Value::I32(3)]).unwrap(), vec![Value::I32(10)]);
    let big = (1i64 << 33) + 1;
    assert_eq!(
        call(&context, "scale", vec![Value::I64(big), Value::F32(1.5)]).unwrap(),
        vec![Value::I64(big * 2), Value::F32(3.0)]
    );
    // A native error fails the invocation with its status and message, located in the caller.
    let error = call(&context, "add_then_later", vec![Value::I32(i32::MAX), Value::I32(1)]).unwrap_err();
    assert_eq!((error.code, error.message.as_str()), (StatusCode::OutOfRange, "host.add overflowed"));
    assert!(error.location.is_some(), "{error:?}");
}

#[test]
fn a_pending_native_result_suspends_the_invocation_until_it_is_set() {
    let mut host = Host::new("0ii_i");
    host.immediate = false;
    let pending = host.pending.clone();
    let (context, _) = context_with(host);
    let function = context.lookup("native_calls.add_then_later").unwrap();
    let mut invocation = context.begin(&function, vec![Value::I32(20), Value::I32(1)]).unwrap();
    let Step::Wait(waiting) = invocation.run().unwrap() else { panic!("host.later is pending") };
    assert!(!waiting.is_available());
    // While suspended, the context serves other invocations.
    assert_eq!(call(&context, "scale", vec![Value::I64(1), Value::F32(1.0)]).unwrap()[0], Value::I64(2));
    let (argument, promise) = pending.lock().unwrap().pop().expect("one pending call");
    assert_eq!(argument, 21);
    // Still waiting: running again reports the same wait.
    assert!(matches!(invocation.run().unwrap(), Step::Wait(_)));
    promise.emplace(vec![Value::I32(argument * 2)]).unwrap();
    match invocation.run().unwrap() {
        Step::Done(results) => assert_eq!(results, vec![Value::I32(42)]),
        Step::Wait(_) => panic!("the value is available"),
    }
    assert!(invocation.run().is_err(), "a finished invocation does not run again");
}

#[test]
fn blocking_invoke_waits_for_a_result_set_on_another_thread() {
    let mut host = Host::new("0ii_i");
    host.immediate = false;
    let pending = host.pending.clone();
    let (context, _) = context_with(host);
    let setter = std::thread::spawn(move || {
        let mut call = None;
        rtx_test_support::deadline::wait_until("the host call's pending result", || {
            call = pending.lock().unwrap().pop();
            call.is_some()
        });
        let (argument, promise) = call.unwrap();
        promise.emplace(vec![Value::I32(argument * 2)]).unwrap();
    });
    assert_eq!(call(&context, "add_then_later", vec![Value::I32(4), Value::I32(5)]).unwrap(), vec![Value::I32(18)]);
    setter.join().unwrap();
}

#[test]
fn an_error_delivered_to_a_pending_call_fails_the_invocation() {
    let mut host = Host::new("0ii_i");
    host.immediate = false;
    let pending = host.pending.clone();
    let (context, _) = context_with(host);
    let function = context.lookup("add_then_later").unwrap();
    let mut invocation = context.begin(&function, vec![Value::I32(1), Value::I32(1)]).unwrap();
    assert!(matches!(invocation.run().unwrap(), Step::Wait(_)));
    let (_, promise) = pending.lock().unwrap().pop().unwrap();
    promise.as_untyped().set_error(Diagnostic::new(StatusCode::Aborted, "device lost")).unwrap();
    let error = invocation.run().unwrap_err();
    assert_eq!((error.code, error.message.as_str()), (StatusCode::Aborted, "device lost"));
}

#[test]
fn optional_imports_may_stay_unresolved() {
    let (context, _) = context_with(Host::new("0ii_i"));
    assert_eq!(call(&context, "call_missing", vec![Value::I32(1)]).unwrap(), vec![Value::I32(-1)]);
}

#[test]
fn check_failures_are_recorded_and_execution_continues() {
    let (context, check) = context_with(Host::new("0ii_i"));
    assert_eq!(call(&context, "checks", vec![Value::I32(3)]).unwrap(), vec![Value::I32(3)]);
    assert!(check.take_failures().is_empty());
    assert_eq!(call(&context, "checks", vec![Value::I32(0)]).unwrap(), vec![Value::I32(0)]);
    assert_eq!(check.take_failures(), vec!["Expected 0 to be nonzero.".to_owned()]);
    assert_eq!(call(&context, "checks", vec![Value::I32(7)]).unwrap(), vec![Value::I32(7)]);
    assert_eq!(check.take_failures(), vec!["Expected 1 to be zero.".to_owned()]);
    // Without the check module the calls are skipped.
    let context = VmContext::new();
    context.add_native_module(Arc::new(Host::new("0ii_i"))).unwrap();
    context.add_module(module()).unwrap();
    assert_eq!(call(&context, "checks", vec![Value::I32(0)]).unwrap(), vec![Value::I32(0)]);
}

#[test]
fn linking_checks_presence_and_exact_calling_conventions() {
    let context = VmContext::new();
    let error = context.add_module(module()).unwrap_err();
    assert_eq!(error.code, StatusCode::NotFound, "{error}");
    assert!(error.message.contains("host"), "{error}");
    assert!(context.module_names().is_empty(), "a failed add leaves the context unchanged");

    let context = VmContext::new();
    context.add_native_module(Arc::new(Host::new("0ii_I"))).unwrap();
    let error = context.add_module(module()).unwrap_err();
    assert_eq!(error.code, StatusCode::Internal);
    assert!(error.message.contains("signature mismatch") && error.message.contains("`0ii_i`"), "{error}");

    let (context, _) = context_with(Host::new("0ii_i"));
    assert_eq!(context.add_module(module()).unwrap_err().code, StatusCode::AlreadyExists);
    assert_eq!(context.lookup("nope").unwrap_err().code, StatusCode::NotFound);
}

#[test]
fn arguments_are_checked_against_the_calling_convention() {
    let (context, _) = context_with(Host::new("0ii_i"));
    let error = call(&context, "scale", vec![Value::I64(1)]).unwrap_err();
    assert_eq!(error.code, StatusCode::InvalidArgument);
    assert_eq!(error.message, "input list and function mismatch; expected 2 arguments but passed 1");
    let error = call(&context, "scale", vec![Value::I64(1), Value::I32(1)]).unwrap_err();
    assert!(error.message.contains("expected f32 but got i32"), "{error}");
}

#[test]
fn native_functions_can_be_called_directly() {
    let (context, _) = context_with(Host::new("0ii_i"));
    assert_eq!(call(&context, "host.add", vec![Value::I32(40), Value::I32(2)]).unwrap(), vec![Value::I32(42)]);
    let error = call(&context, "host.add", vec![Value::I32(40), Value::F32(2.0)]).unwrap_err();
    assert_eq!(error.message, "calling `host.add`: argument 1: expected i32 but got f32");
    let error = call(&context, "host.add", vec![Value::I32(40)]).unwrap_err();
    assert_eq!(error.message, "calling `host.add`: argument 1: missing (passed 1)");
    let error = call(&context, "check.expect_true", vec![Value::I32(1), Value::I32(2)]).unwrap_err();
    assert_eq!(error.message, "calling `check.expect_true`: 1 arguments more than the calling convention takes");
}

#[test]
fn a_budget_stops_long_loops_with_deadline_exceeded() {
    let context = VmContext::new();
    context.set_budget(1_000);
    let module = Module::load_file(fixture_dir("control_flow.vmfb")).unwrap();
    context.add_module(Arc::new(module)).unwrap();
    assert_eq!(call(&context, "sum_to_n", vec![Value::I32(100)]).unwrap(), vec![Value::I32(4950)]);
    let error = call(&context, "sum_to_n", vec![Value::I32(100_000)]).unwrap_err();
    assert_eq!(error.code, StatusCode::DeadlineExceeded, "{error}");
}
