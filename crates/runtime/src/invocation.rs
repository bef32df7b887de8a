//! Calling a VM function with async values in and out, without blocking.
//!
//! One call is a small state machine, [`Call`], moved between the work queue and the waiter lists
//! of the values it waits for, never parked on a thread:
//!
//! 1. [`start`] checks the arguments against the function, creates the typed result promises and
//!    joins the arguments (`run_when_ready`);
//! 2. once they are all available, a task on the context's queue converts them to VM values and
//!    starts the invocation;
//! 3. each `Step::Wait(value)` attaches `and_then` to `value`, which queues the next slice;
//! 4. `Step::Done` fulfils the results; any error (an error argument, a type mismatch, a
//!    `vm.fail`, cancellation) becomes every result's error.
//!
//! Arguments and results follow the function's calling convention: `i`/`I`/`f`/`F` are values
//! holding i32/i64/f32/f64, `r` (a ref) a tensor: a value holding an `Arc<BufferView>`. Arguments
//! are only read, never consumed.
//!
//! A `coarse-fences` function (compiled with `--iree-execution-model=async-external`) returns
//! once its work is queued; its results are ready when its signal fence is. The caller passes
//! either its declared arguments only (the call supplies the fences, and its results become
//! available when the signal is reached) or two more async values: the wait fence (the call
//! starts once it is available; an error fails the call) and the signal fence, an unavailable
//! value that can become a chain, which the program's work sets (or fails), so that hosts can
//! order their own work after it without reading the results.
//!
//! Queued work and waiters hold the host context only weakly (a task owning the context that owns
//! its queue would be a cycle); a call whose context is gone by the time it would run ends with
//! CANCELLED results.

use std::sync::{Arc, Weak};

use super::context::{place_argument, VmFunction};
use rtx_hal::buffer_view::BufferView;
use rtx_hal::device::Allocator;
use rtx_hal::fence::{Fence, Reached};
use rtx_host::{join, AsyncValueRef, Chain, Diagnostic, HostContext, RcAsyncValue, ResultExt, StatusCode};
use rtx_vm::abi::ValueKind;
use rtx_vm::context::{FunctionHandle, VmContext};
use rtx_vm::interpreter::{Invocation, Step};
use rtx_vm::refs::Ref;
use rtx_vm::value::Value;

/// Starts a call of `function` on `host`'s queue; see the module documentation. The caller
/// checked the number of arguments ([`Function::check_arguments`](super::Function::check_arguments));
/// fails at once, starting nothing, when an explicit signal fence cannot become a chain.
/// `done`, when given (an unavailable value that can become a chain), becomes a chain once the
/// results are all set, or the call's error: how a caller learns that a function without
/// results failed.
pub(super) fn start(
    host: &Arc<HostContext>,
    vm: &VmContext,
    function: &VmFunction,
    arguments: &[RcAsyncValue],
    device_allocator: Option<&Allocator>,
    done: Option<RcAsyncValue>,
) -> Result<Vec<RcAsyncValue>, Diagnostic> {
    let declared = function.declared_arguments();
    let with_fences = arguments.len() != declared;
    let fences = if with_fences {
        let (wait, signal) = (&arguments[declared], &arguments[declared + 1]);
        // The signal is the program's to set: the call must not wait for it.
        if !signal.can_take::<Chain>() {
            return Err(Diagnostic::new(
                StatusCode::InvalidArgument,
                format!(
                    "the signal fence of `{}` (argument {}) must be an unavailable value that can become a \
                     chain, but it is {}",
                    function.handle.full_name,
                    declared + 1,
                    if signal.is_available() {
                        format!("available ({})", held_type(signal))
                    } else {
                        format!("a promise for {}", held_type(signal))
                    }
                ),
            ));
        }
        Fences::Explicit { wait: wait.clone(), signal: signal.clone() }
    } else if function.handle.model.fence_arguments() > 0 {
        Fences::Implicit
    } else {
        Fences::None
    };
    let waited_for = &arguments[..declared + usize::from(with_fences)];
    let results: Vec<(ValueKind, RcAsyncValue)> =
        function.results.iter().map(|&kind| (kind, result_promise(kind))).collect();
    let promises = results.iter().map(|(_, promise)| promise.clone()).collect();
    let call = Call {
        host: Arc::downgrade(host),
        vm: vm.clone(),
        function: function.handle.clone(),
        arguments: function.arguments[..declared].to_vec(),
        results,
        done,
        fences,
        signal: None,
        device_allocator: device_allocator.cloned(),
        stage: Stage::Arguments(waited_for.to_vec()),
    };
    join::run_when_ready(waited_for, move || call.schedule());
    Ok(promises)
}

/// A new `done` value for [`start`] (and `bef_call::start`): unavailable, able to become a chain.
pub(crate) fn done_value() -> RcAsyncValue {
    AsyncValueRef::<Chain>::unconstructed().into_untyped()
}

/// The fences of a `coarse-fences` call.
enum Fences {
    /// A synchronous function.
    None,
    /// The caller passed only the declared arguments: no wait, a signal fence of our own.
    Implicit,
    /// The caller's wait and signal async values.
    Explicit { wait: RcAsyncValue, signal: RcAsyncValue },
}

/// Where a call is. Unboxed though `Running` is much the largest: a call spends its life in it,
/// and boxing it would allocate once more per call.
#[allow(clippy::large_enum_variant)]
enum Stage {
    /// Waiting for (or about to read) the host's argument values.
    Arguments(Vec<RcAsyncValue>),
    /// Running, between slices.
    Running(Invocation),
    /// The results are set.
    Finished,
}

/// One `rtx_context_invoke` in flight.
struct Call {
    host: Weak<HostContext>,
    vm: VmContext,
    function: FunctionHandle,
    arguments: Vec<ValueKind>,
    results: Vec<(ValueKind, RcAsyncValue)>,
    /// Becomes a chain after the results are set, or the call's error; taken when set.
    done: Option<RcAsyncValue>,
    fences: Fences,
    /// The fence the program signals when its results are ready.
    signal: Option<Arc<Fence>>,
    /// Where host tensors go for the context's device to use them.
    device_allocator: Option<Allocator>,
    stage: Stage,
}

impl Call {
    /// Queues the next slice on the context's work queue.
    fn schedule(self) {
        let Some(queue) = self.host.upgrade().map(|host| Arc::clone(host.work_queue())) else {
            return self.fail(released());
        };
        queue.add_task(Box::new(move || self.run_slice()));
    }

    /// One task's worth of work: start or resume the invocation and run it until it finishes or
    /// waits.
    fn run_slice(mut self) {
        match self.host.upgrade() {
            None => return self.fail(released()),
            Some(host) if host.is_cancelled() => return self.fail(Diagnostic::cancelled()),
            Some(_) => {}
        }
        let mut invocation = match std::mem::replace(&mut self.stage, Stage::Finished) {
            Stage::Arguments(values) => match self.begin(&values) {
                Ok(invocation) => invocation,
                Err(error) => return self.fail(error),
            },
            Stage::Running(invocation) => invocation,
            Stage::Finished => return,
        };
        loop {
            match invocation.run() {
                Ok(Step::Done(values)) => return self.when_signaled(values),
                Ok(Step::Wait(value)) if value.is_available() => continue,
                Ok(Step::Wait(value)) => {
                    self.stage = Stage::Running(invocation);
                    return value.and_then(move || self.schedule());
                }
                Err(error) => return self.fail(error),
            }
        }
    }

    /// Reads the arguments (all available by now, but for an explicit signal fence), adds the
    /// fences, and starts the invocation.
    fn begin(&mut self, values: &[RcAsyncValue]) -> Result<Invocation, Diagnostic> {
        let name = &self.function.full_name;
        let allocator = self.device_allocator.as_ref();
        let mut arguments = values
            .iter()
            .zip(&self.arguments)
            .enumerate()
            .map(|(index, (value, kind))| {
                argument(value, *kind)
                    .and_then(|argument| placed(argument, allocator))
                    .with_context(|| format!("argument {index} of `{name}`"))
            })
            .collect::<Result<Vec<Value>, Diagnostic>>()?;
        let signal = match &self.fences {
            Fences::None => None,
            Fences::Implicit => Some(Fence::new()),
            Fences::Explicit { wait, signal } => {
                if let Some(error) = wait.get_error() {
                    return Err(error.clone().context(format_args!("the wait fence of `{name}` failed")));
                }
                Some(Fence::from_point(signal.clone()))
            }
        };
        // The wait is over by now (the call waited for it), so the program gets no wait fence.
        self.signal = signal.map(|signal| with_signal(&mut arguments, signal));
        self.vm.begin(&self.function, arguments)
    }

    /// Finishes with `values` once the signal fence (if any) is reached: results of queued work
    /// are not readable before.
    fn when_signaled(mut self, values: Vec<Value>) {
        let Some(signal) = self.signal.take() else { return self.finish(values) };
        signal.clone().when_reached(move || match signal.reached() {
            Reached::Failed(error) => self.fail(error),
            _ => self.finish(values),
        });
    }

    fn finish(mut self, values: Vec<Value>) {
        if let Err(error) = check_result_count(&self.function, values.len(), self.results.len()) {
            return self.fail(error);
        }
        let results = std::mem::take(&mut self.results);
        for (index, ((kind, result), value)) in results.iter().zip(values).enumerate() {
            // The host may have set a result itself; its value stands.
            let _ = match (kind, value) {
                (ValueKind::I32, Value::I32(v)) => result.emplace(v),
                (ValueKind::I64, Value::I64(v)) => result.emplace(v),
                (ValueKind::F32, Value::F32(v)) => result.emplace(v),
                (ValueKind::F64, Value::F64(v)) => result.emplace(v),
                (ValueKind::Ref, Value::Ref(r)) => match result_view(&self.function, index, r) {
                    Ok(view) => result.emplace(view),
                    Err(error) => result.set_error(error),
                },
                (kind, value) => result.set_error(wrong_result(&self.function, index, *kind, &value)),
            };
        }
        if let Some(done) = self.done.take() {
            let _ = done.emplace(Chain);
        }
        self.stage = Stage::Finished;
    }

    /// Makes every result (not yet set) the error, and `done` and the caller's signal fence too:
    /// whoever waits on them must not wait forever.
    fn fail(mut self, error: Diagnostic) {
        self.fail_all(&error);
        self.stage = Stage::Finished;
    }

    fn fail_all(&mut self, error: &Diagnostic) {
        for (_, result) in std::mem::take(&mut self.results) {
            let _ = result.set_error(error.clone());
        }
        if let Some(done) = self.done.take() {
            let _ = done.set_error(error.clone());
        }
        if let Fences::Explicit { signal, .. } = &self.fences {
            if !signal.is_available() {
                let _ = signal.set_error(error.clone());
            }
        }
    }
}

/// A call dropped before it finished (its task was deleted by a host queue shutting down, say)
/// still completes its results, so nobody waits for them forever.
impl Drop for Call {
    fn drop(&mut self) {
        let error = Diagnostic::new(
            StatusCode::Cancelled,
            format!("call to `{}` was dropped before it finished (its work queue shut down)", self.function.full_name),
        );
        self.fail_all(&error);
    }
}

/// An argument the context's device can use: host tensors moved into a device's memory
/// ([`place_argument`]) when the device has memory of its own.
pub(super) fn placed(mut argument: Value, allocator: Option<&Allocator>) -> Result<Value, Diagnostic> {
    if let Some(allocator) = allocator {
        place_argument(&mut argument, allocator)?;
    }
    Ok(argument)
}

/// Appends a `coarse-fences` function's fences to its arguments: no wait fence (the call starts
/// once its arguments are there) and `signal`, which the caller waits on for the results.
pub(super) fn with_signal(arguments: &mut Vec<Value>, signal: Fence) -> Arc<Fence> {
    let signal = Arc::new(signal);
    arguments.extend([Value::Ref(None), Value::Ref(Some(Ref::Object(signal.clone())))]);
    signal
}

/// INTERNAL unless a function returned as many values as its calling convention declares.
pub(super) fn check_result_count(
    function: &FunctionHandle,
    returned: usize,
    declared: usize,
) -> Result<(), Diagnostic> {
    if returned == declared {
        return Ok(());
    }
    Err(Diagnostic::new(
        StatusCode::Internal,
        format!(
            "`{}` returned {returned} values but its calling convention `{}` declares {declared}",
            function.full_name, function.cconv
        ),
    ))
}

/// The buffer view a ref result `index` of `function` holds; UNIMPLEMENTED for any other ref.
pub(super) fn result_view(
    function: &FunctionHandle,
    index: usize,
    r: Option<Ref>,
) -> Result<Arc<BufferView>, Diagnostic> {
    r.as_ref().and_then(BufferView::shared_from_ref).ok_or_else(|| {
        Diagnostic::new(
            StatusCode::Unimplemented,
            format!(
                "result {index} of `{}` is {}, which a host cannot be handed (of refs, only buffer views leave \
                 the runtime)",
                function.full_name,
                r.as_ref().map_or("a null ref".to_owned(), |r| format!("a `{}`", r.type_name()))
            ),
        )
    })
}

/// The error for result `index` of `function` holding another type than its calling convention's.
pub(super) fn wrong_result(function: &FunctionHandle, index: usize, kind: ValueKind, value: &Value) -> Diagnostic {
    Diagnostic::new(
        StatusCode::Internal,
        format!(
            "result {index} of `{}`: expected {} but the function returned {}",
            function.full_name,
            kind.name(),
            value.type_name()
        ),
    )
}

fn released() -> Diagnostic {
    Diagnostic::new(StatusCode::Cancelled, "cancelled: the context was released before this call ran")
}

/// The VM value of an available argument of `kind`: its own error if it is one, INVALID_ARGUMENT
/// if it holds another type.
fn argument(value: &RcAsyncValue, kind: ValueKind) -> Result<Value, Diagnostic> {
    if let Some(error) = value.get_error() {
        return Err(error.clone());
    }
    let read = match kind {
        ValueKind::I32 => value.try_get::<i32>().map(|v| Value::I32(*v)),
        ValueKind::I64 => value.try_get::<i64>().map(|v| Value::I64(*v)),
        ValueKind::F32 => value.try_get::<f32>().map(|v| Value::F32(*v)),
        ValueKind::F64 => value.try_get::<f64>().map(|v| Value::F64(*v)),
        ValueKind::Ref => {
            value.try_get::<Arc<BufferView>>().map(|v| Value::Ref(Some(BufferView::shared_to_ref(Arc::clone(v)))))
        }
    };
    let expected = match kind {
        ValueKind::Ref => "a buffer view (ref)",
        other => other.name(),
    };
    read.map_err(|_| {
        Diagnostic::new(
            StatusCode::InvalidArgument,
            format!("expected {expected} but the value holds {}", held_type(value)),
        )
    })
}

/// What a value holds, named as the calling convention names kinds.
pub fn held_type(value: &RcAsyncValue) -> &'static str {
    if value.is_type::<bool>() {
        "i1"
    } else if value.is_type::<i32>() {
        "i32"
    } else if value.is_type::<i64>() {
        "i64"
    } else if value.is_type::<f32>() {
        "f32"
    } else if value.is_type::<f64>() {
        "f64"
    } else if value.is_type::<Chain>() {
        "a chain"
    } else if value.is_type::<Arc<BufferView>>() {
        "a buffer view"
    } else {
        value.type_name()
    }
}

/// An unavailable result value that only a value of `kind` can fulfil.
fn result_promise(kind: ValueKind) -> RcAsyncValue {
    match kind {
        ValueKind::I32 => AsyncValueRef::<i32>::unconstructed().into_untyped(),
        ValueKind::I64 => AsyncValueRef::<i64>::unconstructed().into_untyped(),
        ValueKind::F32 => AsyncValueRef::<f32>::unconstructed().into_untyped(),
        ValueKind::F64 => AsyncValueRef::<f64>::unconstructed().into_untyped(),
        ValueKind::Ref => AsyncValueRef::<Arc<BufferView>>::unconstructed().into_untyped(),
    }
}

/// `1 argument`, `2 arguments`.
pub fn plural(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Runtime;
    use rtx_vm::native::{Arguments, NativeFunction, NativeModule, NativeOutcome, NativeState};
    use std::sync::Mutex;

    /// `later.value() -> i32`, whose result the test supplies after the call suspended.
    struct Later {
        functions: Vec<NativeFunction>,
        pending: Arc<Mutex<Option<AsyncValueRef<Vec<Value>>>>>,
    }

    impl NativeModule for Later {
        fn name(&self) -> &str {
            "later"
        }

        fn functions(&self) -> &[NativeFunction] {
            &self.functions
        }

        fn call(
            &self,
            _: &mut NativeState,
            _: usize,
            _: Arguments<'_>,
            _: &mut Vec<Value>,
        ) -> Result<NativeOutcome, Diagnostic> {
            let value = AsyncValueRef::unconstructed();
            *self.pending.lock().unwrap() = Some(value.clone());
            Ok(NativeOutcome::Pending(value))
        }
    }

    #[test]
    fn a_call_suspended_on_an_async_native_result_resumes_from_the_queue() {
        let pending = Arc::new(Mutex::new(None));
        let module = Later { functions: vec![NativeFunction::new("value", "0v_i")], pending: Arc::clone(&pending) };
        let context = Runtime::new().context().unwrap();
        context.add_native_module(Arc::new(module)).unwrap();
        let function = context.function("later.value").unwrap();
        let results = context.invoke(&function, &[]).unwrap();
        let mut promise = None;
        rtx_test_support::deadline::wait_until("the native function's pending result", || {
            promise = pending.lock().unwrap().take();
            promise.is_some()
        });
        let promise = promise.unwrap();
        context.host().quiesce().unwrap();
        assert!(!results[0].is_available(), "the call waits for the native result without a worker");
        promise.emplace(vec![Value::I32(42)]).unwrap();
        context.await_values(&results).unwrap();
        assert_eq!(results[0].try_get::<i32>().ok(), Some(&42));
    }

    /// `refs.echo(r) -> r` returns its argument, `refs.buffer() -> r` a `vm.buffer`, `refs.null()
    /// -> r` a null ref.
    struct Refs {
        functions: Vec<NativeFunction>,
    }

    impl NativeModule for Refs {
        fn name(&self) -> &str {
            "refs"
        }

        fn functions(&self) -> &[NativeFunction] {
            &self.functions
        }

        fn call(
            &self,
            _: &mut NativeState,
            ordinal: usize,
            arguments: Arguments<'_>,
            results: &mut Vec<Value>,
        ) -> Result<NativeOutcome, Diagnostic> {
            results.push(match (ordinal, arguments.get(0)) {
                (0, Some(argument)) => argument.to_value(),
                (1, _) => Value::Ref(Some(Ref::Buffer(rtx_vm::buffer::ByteBuffer::from_bytes(&[1, 2])?))),
                _ => Value::Ref(None),
            });
            Ok(NativeOutcome::Ready)
        }
    }

    #[test]
    fn a_buffer_view_goes_through_the_vm_as_itself_and_other_refs_are_unimplemented() {
        let functions = ["echo", "buffer", "null"].iter().zip(["0r_r", "0v_r", "0v_r"]);
        let module = Refs { functions: functions.map(|(name, cconv)| NativeFunction::new(*name, cconv)).collect() };
        let context = Runtime::new().context().unwrap();
        context.add_native_module(Arc::new(module)).unwrap();
        let view = Arc::new(BufferView::from_host(vec![1], 0x2100_0020, &[0; 4]).unwrap());
        let argument = AsyncValueRef::available(Arc::clone(&view)).into_untyped();
        let mut results = Vec::new();
        for (name, arguments) in [("refs.echo", vec![argument]), ("refs.buffer", vec![]), ("refs.null", vec![])] {
            results.extend(context.invoke(&context.function(name).unwrap(), &arguments).unwrap());
        }
        context.await_values(&results).unwrap();
        let echoed = results[0].try_get::<Arc<BufferView>>().unwrap();
        assert!(Arc::ptr_eq(echoed, &view), "the VM passed the view itself, not a copy");
        for (result, what) in [(&results[1], "a `vm.buffer`"), (&results[2], "a null ref")] {
            let error = result.get_error().unwrap();
            assert_eq!(error.code, StatusCode::Unimplemented);
            assert!(error.message.contains("result 0 of `refs."), "{}", error.message);
            assert!(error.message.contains(&format!("is {what}, which a host cannot be handed")), "{}", error.message);
        }
    }

    #[test]
    fn a_wrong_number_of_arguments_starts_nothing_and_says_what_the_function_takes() {
        let module = Refs { functions: vec![NativeFunction::new("echo", "0r_r")] };
        let context = Runtime::new().context().unwrap();
        context.add_native_module(Arc::new(module)).unwrap();
        let error = context.invoke(&context.function("refs.echo").unwrap(), &[]).unwrap_err();
        assert_eq!(error.code, StatusCode::InvalidArgument);
        assert!(error.message.contains("takes 1 argument, but the call passes 0"), "{}", error.message);
    }
}
