//! Executor tests on files assembled by `bef::test_file`, with small kernels of their own. They
//! use the single-threaded queue and no threads, so Miri can run them.

use std::sync::{Arc, Mutex};

use crate::format::FunctionKind;
use crate::reader::BefFile;
use crate::test_file::{assemble, function, kernel, TestAttribute, TestFunction};
use rtx_host::{AsyncValueRef, Diagnostic, HostContext, RcAsyncValue, StatusCode};
use rtx_kernel::{ExecutionContext, KernelRegistry, Value};

/// A request on an `s` queue that records diagnostics and printed output.
struct Harness {
    context: ExecutionContext,
    errors: Arc<Mutex<Vec<Diagnostic>>>,
    log: Arc<Mutex<Vec<String>>>,
}

impl Harness {
    fn new() -> Harness {
        let host = Arc::new(HostContext::with_work_queue_spec("s").unwrap());
        let errors = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::new(Mutex::new(Vec::new()));
        let (e, l) = (Arc::clone(&errors), Arc::clone(&log));
        let context = ExecutionContext::with_handlers(
            host,
            Arc::new(move |d: &Diagnostic| e.lock().unwrap().push(d.clone())),
            Arc::new(move |text: &str| l.lock().unwrap().push(text.to_owned())),
        );
        Harness { context, errors, log }
    }

    fn run(&self, file: &Arc<BefFile>, name: &str, arguments: &[RcAsyncValue]) -> Vec<RcAsyncValue> {
        let results = file.function_named(name).unwrap().execute(&self.context, arguments);
        self.context.host().await_values(&results).unwrap();
        self.context.host().quiesce().unwrap();
        results
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

/// `t.const` (i32 attribute), `t.add`, `t.fail` (always fails), `t.log` (prints its string
/// attribute, passes its first argument on or makes an i32 0), `t.later` (its i32 argument,
/// set by a queued task), `t.cancel`, `t.panic` (panics, having allocated its result when it
/// has an argument), `t.sync_panic`.
fn registry() -> KernelRegistry {
    let mut registry = KernelRegistry::new();
    registry.add_kernel("t.const", |f| {
        let value = f.scalar_attribute::<i32>(0)?;
        f.emplace_result(0, value)
    });
    registry.add_kernel("t.add", |f| {
        let sum = f.get::<i32>(0)?.wrapping_add(*f.get::<i32>(1)?);
        f.emplace_result(0, sum)
    });
    registry.add_kernel("t.fail", |_| Err("something bad happened".into()));
    registry.add_kernel("t.log", |f| {
        f.context().print(f.string_attribute(0)?);
        match f.arguments().first() {
            Some(value) => f.set_result(0, value.clone()),
            None => f.emplace_result(0, 0i32),
        }
    });
    registry.add_kernel("t.later", |f| {
        let value = *f.get::<i32>(0)?;
        let result = f.allocate_result::<i32>(0)?;
        f.host().work_queue().add_task(Box::new(move || result.emplace(value).unwrap()));
        Ok(())
    });
    registry.add_kernel("t.cancel", |f| {
        f.context().cancel();
        f.emplace_result(0, 0i32)
    });
    registry.add_kernel("t.panic", |f| {
        if !f.arguments().is_empty() {
            f.allocate_result::<i32>(0)?;
        }
        panic!("boom")
    });
    registry.add_sync_kernel("t.sync_panic", |_| panic!("sync boom"));
    registry.add_sync_kernel("t.sync_add", |f| {
        let sum = f.get::<i32>(0)? + f.get::<i32>(1)?;
        f.set_result(0, sum)
    });
    registry
}

fn open(functions: &[TestFunction]) -> Arc<BefFile> {
    BefFile::from_bytes(&assemble(functions), &registry()).unwrap()
}

fn i32_of(value: &RcAsyncValue) -> i32 {
    *value.try_get::<i32>().unwrap()
}

fn log_kernel(text: &str, arguments: &[u32], result: u32) -> crate::test_file::TestKernel {
    kernel("t.log", arguments, &[result]).attribute(TestAttribute::string(text))
}

#[test]
fn a_chain_of_adds_computes_its_result() {
    let mut f = function("f", &["i32"], &["i32"]);
    let mut last = 0;
    for i in 0..20 {
        f = f.kernel(kernel("t.add", &[last, 0], &[i + 1]));
        last = i + 1;
    }
    let file = open(&[f.returns(&[last])]);
    let harness = Harness::new();
    let results = harness.run(&file, "f", &[AsyncValueRef::available(2i32).into_untyped()]);
    assert_eq!(i32_of(&results[0]), 42);
    assert!(harness.errors.lock().unwrap().is_empty());
}

#[test]
fn ready_kernels_of_one_stream_run_last_ready_first() {
    // a, b, c have no operands, so the pseudo kernel readies them in order; the last one runs
    // first. d depends on a, so it runs right after a.
    let file = open(&[function("f", &[], &[])
        .kernel(log_kernel("a", &[], 0))
        .kernel(log_kernel("b", &[], 1))
        .kernel(log_kernel("c", &[], 2))
        .kernel(log_kernel("d", &[0], 3))]);
    let harness = Harness::new();
    harness.run(&file, "f", &[]);
    assert_eq!(harness.log(), ["c", "b", "a", "d"]);
}

#[test]
fn other_streams_become_tasks_that_run_after_the_current_stream() {
    // b is on stream 1: queued as a task (on `s` it waits for the host to donate its thread),
    // so a, its user c, and d all run before it.
    let file = open(&[function("f", &[], &[])
        .kernel(log_kernel("a", &[], 0))
        .kernel(log_kernel("b", &[], 1).stream(1))
        .kernel(log_kernel("c", &[0], 2))
        .kernel(log_kernel("d", &[2], 3))]);
    let harness = Harness::new();
    file.function_named("f").unwrap().execute(&harness.context, &[]);
    assert_eq!(harness.log(), ["a", "c", "d"], "the other stream waits in the queue");
    harness.context.host().quiesce().unwrap();
    assert_eq!(harness.log(), ["a", "c", "d", "b"]);
}

#[test]
fn an_error_skips_only_its_dependants_and_is_reported_once() {
    let file = open(&[function("f", &[], &["i32", "i32", "i32"])
        .kernel(kernel("t.fail", &[], &[0]))
        .kernel(log_kernel("skipped", &[0], 1))
        .kernel(log_kernel("runs", &[], 2))
        .kernel(log_kernel("also skipped", &[1], 3))
        .returns(&[3, 2, 0])]);
    let harness = Harness::new();
    let results = harness.run(&file, "f", &[]);
    assert_eq!(harness.log(), ["runs"]);
    assert_eq!(results[0].get_error().unwrap().message, "something bad happened");
    assert_eq!(i32_of(&results[1]), 0);
    assert!(results[2].is_error());
    let errors = harness.errors.lock().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(
        rtx_kernel::format_runtime_error(&errors[0]),
        "test.mlir:2:3: error: runtime error: something bad happened"
    );
    assert_eq!(errors[0].code, StatusCode::Internal);
}

#[test]
fn a_panicking_kernel_fails_its_results_and_the_rest_runs() {
    let file = open(&[function("f", &["i32"], &["i32", "i32", "i32"])
        .kernel(kernel("t.panic", &[], &[1]))
        .kernel(log_kernel("skipped", &[1], 2))
        .kernel(kernel("t.panic", &[0], &[3]))
        .kernel(log_kernel("runs", &[], 4))
        .returns(&[2, 3, 4])]);
    let harness = Harness::new();
    // Awaited at all: a result left unset would never be available.
    let results = harness.run(&file, "f", &[AsyncValueRef::available(1i32).into_untyped()]);
    assert_eq!(harness.log(), ["runs"]);
    assert_eq!(results[0].get_error().unwrap().message, "kernel `t.panic` panicked: boom");
    assert_eq!(results[1].get_error().unwrap().message, "kernel `t.panic` panicked: boom", "an allocated result");
    assert_eq!(i32_of(&results[2]), 0);
    assert_eq!(results[0].get_error().unwrap().code, StatusCode::Panic);
    assert_eq!(harness.errors.lock().unwrap().len(), 2, "each panic reported once");
    // A sync function's panicking kernel is its error, at the kernel's location.
    let file = open(&[function("s", &[], &["i32"])
        .kind(FunctionKind::Sync)
        .kernel(kernel("t.sync_panic", &[], &[0]))
        .returns(&[0])]);
    let error = file.function_named("s").unwrap().execute_sync(&harness.context, &[]).unwrap_err();
    assert_eq!(error.message, "kernel `t.sync_panic` panicked: sync boom");
    assert_eq!(error.location.unwrap().to_string(), "test.mlir:2:3");
}

#[test]
fn cancelling_skips_every_kernel_that_has_not_started() {
    let file = open(&[function("f", &[], &["i32", "i32"])
        .kernel(kernel("t.cancel", &[], &[0]))
        .kernel(log_kernel("after", &[0], 1))
        .returns(&[1, 0])]);
    let harness = Harness::new();
    let results = harness.run(&file, "f", &[]);
    assert!(harness.log().is_empty());
    assert_eq!(results[0].get_error().unwrap().message, "Cancelled");
    assert_eq!(i32_of(&results[1]), 0, "the kernel that cancelled finished");
    assert!(harness.errors.lock().unwrap().is_empty(), "cancellation is not reported as an error");
}

#[test]
fn unavailable_results_continue_when_they_are_set() {
    let file = open(&[function("f", &["i32"], &["i32"])
        .kernel(kernel("t.later", &[0], &[1]))
        .kernel(kernel("t.add", &[1, 1], &[2]))
        .kernel(kernel("t.later", &[2], &[3]))
        .returns(&[3])]);
    let harness = Harness::new();
    let results =
        file.function_named("f").unwrap().execute(&harness.context, &[AsyncValueRef::available(4).into_untyped()]);
    assert!(!results[0].is_available(), "t.later's task has not run");
    harness.context.host().await_values(&results).unwrap();
    assert_eq!(i32_of(&results[0]), 8);
}

#[test]
fn unavailable_arguments_are_waited_for() {
    let file = open(&[function("f", &["i32", "i32"], &["i32"]).kernel(kernel("t.add", &[0, 1], &[2])).returns(&[2])]);
    let harness = Harness::new();
    let (a, b) = (AsyncValueRef::<i32>::unconstructed(), AsyncValueRef::<i32>::unconstructed());
    let results = file.function_named("f").unwrap().execute(&harness.context, &[a.clone().into(), b.clone().into()]);
    b.emplace(40).unwrap();
    assert!(!results[0].is_available());
    a.emplace(2).unwrap();
    assert_eq!(i32_of(&results[0]), 42);
}

#[test]
fn arguments_may_be_returned_directly_and_results_more_than_once() {
    let file = open(&[function("f", &["i32"], &["i32", "i32", "i32"])
        .kernel(kernel("t.add", &[0, 0], &[1]))
        .returns(&[0, 1, 1])]);
    let harness = Harness::new();
    let results = harness.run(&file, "f", &[AsyncValueRef::available(3).into_untyped()]);
    assert_eq!(results.iter().map(i32_of).collect::<Vec<_>>(), [3, 6, 6]);
    assert!(results.iter().all(RcAsyncValue::is_indirect), "results are indirect values");
}

#[test]
fn a_wrong_argument_count_fails_every_result() {
    let file = open(&[function("f", &["i32"], &["i32"]).returns(&[0])]);
    let results = file.function_named("f").unwrap().execute(&Harness::new().context, &[]);
    assert_eq!(results[0].get_error().unwrap().message, "'f' takes 1 arguments but was given 0");
}

#[test]
fn a_kernel_asking_for_a_missing_attribute_fails_with_its_name() {
    let file = open(&[function("f", &[], &["i32"]).kernel(kernel("t.const", &[], &[0])).returns(&[0])]);
    let harness = Harness::new();
    let results = harness.run(&file, "f", &[]);
    assert_eq!(results[0].get_error().unwrap().message, "kernel `t.const` asks for attribute 0 but has 0");
}

#[test]
fn sync_functions_run_in_order_on_plain_values() {
    let file = open(&[
        function("s", &["i32", "i32"], &["i32", "i32"])
            .kind(FunctionKind::Sync)
            .kernel(kernel("t.sync_add", &[0, 1], &[2]))
            .kernel(kernel("t.sync_add", &[2, 2], &[3]))
            .returns(&[3, 0]),
        function("a", &[], &["i32"])
            .kernel(kernel("t.const", &[], &[0]).attribute(TestAttribute::i32(1)))
            .returns(&[0]),
    ]);
    let harness = Harness::new();
    let s = file.function_named("s").unwrap();
    let results = s.execute_sync(&harness.context, &[Value::from(2), Value::from(3)]).unwrap();
    assert_eq!((results[0].get::<i32>(), results[1].get::<i32>()), (Some(&10), Some(&2)));
    // Called with async values, it runs once they are available.
    let later = AsyncValueRef::<i32>::unconstructed();
    let results = s.execute(&harness.context, &[later.clone().into(), AsyncValueRef::available(1).into_untyped()]);
    later.emplace(4).unwrap();
    assert_eq!(i32_of(&results[0]), 10);
    let error = file.function_named("a").unwrap().execute_sync(&harness.context, &[]).unwrap_err();
    assert!(error.message.contains("not a sync function"), "{error}");
}

#[test]
fn an_async_kernel_in_a_sync_function_is_an_error_at_its_location() {
    let file = open(&[function("s", &[], &["i32"])
        .kind(FunctionKind::Sync)
        .kernel(kernel("t.const", &[], &[0]).attribute(TestAttribute::i32(1)))
        .returns(&[0])]);
    let error = file.function_named("s").unwrap().execute_sync(&Harness::new().context, &[]).unwrap_err();
    assert_eq!(error.location.unwrap().to_string(), "test.mlir:2:3");
}

#[test]
fn native_functions_get_the_arguments_and_fill_the_results() {
    let bytes = assemble(&[
        function("native_add", &["i32", "i32"], &["i32"]).kind(FunctionKind::Native),
        function("f", &[], &["i32"])
            .kernel(kernel("t.const", &[], &[0]).attribute(TestAttribute::i32(5)))
            .kernel(kernel("t.call", &[0, 0], &[1]).function(0))
            .returns(&[1]),
    ]);
    let mut registry = registry();
    registry.add_native_function("native_add", |arguments, results, _| {
        let sum = arguments.iter().map(|a| *a.try_get::<i32>().unwrap()).sum::<i32>();
        results[0] = Some(AsyncValueRef::available(sum).into_untyped());
    });
    registry.add_kernel("t.call", |f| {
        let callee = f.function(0)?;
        for (i, value) in callee.execute(f.context(), f.arguments()).into_iter().enumerate() {
            f.set_result(i, value)?;
        }
        Ok(())
    });
    let file = BefFile::from_bytes(&bytes, &registry).unwrap();
    let results = Harness::new().run(&file, "f", &[]);
    assert_eq!(i32_of(&results[0]), 10);
}

/// The test kernels and the core ones, whose scalar kernels are pure.
fn open_with_core(functions: &[TestFunction]) -> Arc<BefFile> {
    let mut registry = registry();
    rtx_kernel::library::register_core_kernels(&mut registry);
    BefFile::from_bytes(&assemble(functions), &registry).unwrap()
}

/// Whether `name`'s first call built a plan.
fn has_plan(file: &Arc<BefFile>, name: &str) -> bool {
    let index = file.function_index(name).unwrap();
    file.plan_cell(index).get().expect("the function ran").is_some()
}

fn i32_constant(value: i32, result: u32) -> crate::test_file::TestKernel {
    kernel("tfrt.constant.i32", &[], &[result]).attribute(TestAttribute::i32(value))
}

#[test]
fn a_function_of_pure_kernels_runs_as_a_plan() {
    // x = 7: q, r = (x * 3 + 5) divmod 4 = 26 divmod 4; x <= 5; (f64)(i64)... through casts.
    let file = open_with_core(&[function("f", &["i32", "i64"], &["i32", "i32", "i1", "f64", "!tfrt.chain"])
        .kernel(i32_constant(3, 2))
        .kernel(i32_constant(5, 3))
        .kernel(i32_constant(4, 4))
        .kernel(kernel("tfrt.mul.i32", &[0, 2], &[5]))
        .kernel(kernel("tfrt.add.i32", &[5, 3], &[6]))
        .kernel(kernel("tfrt.div.i32", &[6, 4], &[7, 8]))
        .kernel(kernel("tfrt.lessequal.i32", &[0, 3], &[9]))
        .kernel(kernel("tfrt.cast.i64_to_f64", &[1], &[10]))
        .kernel(kernel("tfrt.merge.chains", &[7, 9, 10], &[11]))
        .returns(&[7, 8, 9, 10, 11])]);
    let harness = Harness::new();
    let arguments = [AsyncValueRef::available(7i32).into_untyped(), AsyncValueRef::available(-3i64).into_untyped()];
    let results = harness.run(&file, "f", &arguments);
    assert!(has_plan(&file, "f"));
    assert_eq!((i32_of(&results[0]), i32_of(&results[1])), (6, 2));
    assert_eq!(results[2].try_get::<bool>().unwrap(), &false);
    assert_eq!(results[3].try_get::<f64>().unwrap(), &-3.0);
    assert!(results[4].is_type::<rtx_host::Chain>());
    assert!(harness.errors.lock().unwrap().is_empty());
}

#[test]
fn a_failing_pure_kernel_is_reported_once_by_the_dataflow_executor() {
    let file = open_with_core(&[function("f", &["i32"], &["i32", "i32"])
        .kernel(i32_constant(0, 1))
        .kernel(kernel("tfrt.add.i32", &[0, 0], &[2]))
        .kernel(kernel("tfrt.div.i32", &[0, 1], &[3, 4]))
        .returns(&[2, 4])]);
    let harness = Harness::new();
    let results = harness.run(&file, "f", &[AsyncValueRef::available(5i32).into_untyped()]);
    assert!(has_plan(&file, "f"));
    assert_eq!(i32_of(&results[0]), 10, "what does not depend on the failure is computed");
    assert_eq!(results[1].get_error().unwrap().message, "Divide by zero");
    let errors = harness.errors.lock().unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].location.as_ref().unwrap().to_string(), "test.mlir:4:3");
}

#[test]
fn unavailable_or_mistyped_arguments_take_the_dataflow_path() {
    let file = open_with_core(&[function("f", &["i32"], &["i32"])
        .kernel(kernel("tfrt.add.i32", &[0, 0], &[1]))
        .returns(&[1])]);
    let harness = Harness::new();
    let later = AsyncValueRef::<i32>::unconstructed();
    let function = file.function_named("f").unwrap();
    let results = function.execute(&harness.context, &[later.clone().into()]);
    assert!(!results[0].is_available());
    later.emplace(21).unwrap();
    harness.context.host().await_values(&results).unwrap();
    assert_eq!(i32_of(&results[0]), 42);
    assert!(has_plan(&file, "f"));
    let results = harness.run(&file, "f", &[AsyncValueRef::available(1i64).into_untyped()]);
    assert!(results[0].get_error().unwrap().message.contains("i64"), "{:?}", results[0].get_error());
    assert_eq!(harness.errors.lock().unwrap().len(), 1);
}

#[test]
fn functions_a_plan_cannot_express_run_in_the_dataflow_executor() {
    let file = open_with_core(&[
        // An effect (t.log) among pure kernels.
        function("effect", &["i32"], &["i32"])
            .kernel(kernel("tfrt.add.i32", &[0, 0], &[1]))
            .kernel(log_kernel("seen", &[1], 2))
            .returns(&[2]),
        // A register of one type read as another: the dataflow executor reports it.
        function("mistyped", &[], &["i32"])
            .kernel(kernel("tfrt.constant.i64", &[], &[0]).attribute(TestAttribute::i64(1)))
            .kernel(kernel("tfrt.add.i32", &[0, 0], &[1]))
            .returns(&[1]),
        // An operand defined by a later kernel: valid dataflow, not straight-line code.
        function("forward", &["i32"], &["i32"])
            .kernel(kernel("tfrt.add.i32", &[2, 0], &[1]))
            .kernel(kernel("tfrt.add.i32", &[0, 0], &[2]))
            .returns(&[1]),
    ]);
    let harness = Harness::new();
    let two = [AsyncValueRef::available(2i32).into_untyped()];
    assert_eq!(i32_of(&harness.run(&file, "effect", &two)[0]), 4);
    assert_eq!(harness.log(), ["seen"]);
    assert!(harness.run(&file, "mistyped", &[])[0].is_error());
    assert_eq!(harness.errors.lock().unwrap().len(), 1);
    assert_eq!(i32_of(&harness.run(&file, "forward", &two)[0]), 6);
    for name in ["effect", "mistyped", "forward"] {
        assert!(!has_plan(&file, name), "{name}");
    }
}

#[test]
fn a_trailing_chain_operand_orders_a_pure_kernel_without_being_read() {
    let file = open_with_core(&[function("f", &["i32", "!tfrt.chain"], &["i32"])
        .kernel(kernel("tfrt.add.i32", &[0, 0, 1], &[2]))
        .returns(&[2])]);
    let harness = Harness::new();
    let arguments = [AsyncValueRef::available(4i32).into_untyped(), rtx_host::Chain::ready().into_untyped()];
    assert_eq!(i32_of(&harness.run(&file, "f", &arguments)[0]), 8);
    assert!(has_plan(&file, "f"));
}

#[test]
fn pure_kernels_run_in_sync_functions() {
    let file = open_with_core(&[function("s", &["i32"], &["i32", "i1"])
        .kind(FunctionKind::Sync)
        .kernel(i32_constant(10, 1))
        .kernel(kernel("tfrt.minus.i32", &[1, 0], &[2]))
        .kernel(kernel("tfrt.equal.i32", &[2, 0], &[3]))
        .returns(&[2, 3])]);
    let harness = Harness::new();
    let s = file.function_named("s").unwrap();
    let results = s.execute_sync(&harness.context, &[Value::from(5)]).unwrap();
    assert_eq!((results[0].get::<i32>(), results[1].get::<bool>()), (Some(&5), Some(&true)));
    let error = s.execute_sync(&harness.context, &[Value::from(5i64)]).unwrap_err();
    assert_eq!(error.message, "argument 1 holds i64, not i32");
}
