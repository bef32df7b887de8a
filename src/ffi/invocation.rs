//! `rtx_context_invoke`: calls a VM function with async values in and out, without blocking.
//!
//! One call is a small state machine, [`Call`], moved between the work queue and the waiter lists
//! of the values it waits for, never parked on a thread:
//!
//! 1. `rtx_context_invoke` checks the function and counts, creates the typed result promises and
//!    joins the arguments (`run_when_ready`);
//! 2. once they are all available, a task on the context's queue converts them to VM values and
//!    starts the invocation;
//! 3. each `Step::Wait(value)` attaches `and_then` to `value`, which queues the next slice;
//! 4. `Step::Done` fulfils the results; any error (an error argument, a type mismatch, a
//!    `vm.fail`, cancellation) becomes every result's error.
//!
//! A `coarse-fences` function (compiled with `--iree-execution-model=async-external`) returns
//! once its work is queued; its results are ready when its signal fence is. The caller passes
//! either its declared arguments only (the call supplies the fences, and its results become
//! available when the signal is reached) or two more async values: the wait fence (the call
//! starts once it is available; an error fails the call) and the signal fence, an unavailable
//! chain promise that the program's work sets (or fails), so that hosts can order their own work
//! after it without reading the results.
//!
//! Queued work and waiters hold the host context only weakly (a task owning the context that owns
//! its queue would be a cycle); a call whose context is gone by the time it would run ends with
//! CANCELLED results.

use std::ffi::c_char;
use std::sync::{Arc, Weak};

use super::async_value::{borrow_all, rtx_async_value_t};
use super::buffer_view;
use super::context::rtx_context_t;
use super::error::rtx_error_t;
use super::handle;
use super::{c_str, catch_error, invalid_argument};
use crate::hal::buffer_view::BufferView;
use crate::hal::fence::{Fence, Reached};
use crate::host::{join, AsyncValueRef, Chain, Diagnostic, HostContext, RcAsyncValue, ResultExt, StatusCode};
use crate::vm::abi::plain_kinds;
use crate::vm::abi::{CallingConvention, ValueKind};
use crate::vm::context::{Context as VmContext, FunctionHandle};
use crate::vm::interpreter::{Invocation, Step};
use crate::vm::refs::Ref;
use crate::vm::value::Value;

/// The fences of a `coarse-fences` call.
enum Fences {
    /// A synchronous function.
    None,
    /// The caller passed only the declared arguments: no wait, a signal fence of our own.
    Implicit,
    /// The caller's wait and signal async values.
    Explicit { wait: RcAsyncValue, signal: RcAsyncValue },
}

/// Where a call is.
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
    fences: Fences,
    /// The fence the program signals when its results are ready.
    signal: Option<Arc<Fence>>,
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
        let mut arguments = values
            .iter()
            .zip(&self.arguments)
            .enumerate()
            .map(|(index, (value, kind))| {
                argument(value, *kind).with_context(|| format!("argument {index} of `{name}`"))
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
        if let Some(signal) = signal {
            let signal = Arc::new(signal);
            // The wait is over by now (the call waited for it), so the program gets no wait fence.
            arguments.extend([Value::Ref(None), Value::Ref(Some(Ref::Object(signal.clone())))]);
            self.signal = Some(signal);
        }
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
        if values.len() != self.results.len() {
            let message = format!(
                "`{}` returned {} values but its calling convention `{}` declares {}",
                self.function.full_name,
                values.len(),
                self.function.cconv,
                self.results.len()
            );
            return self.fail(Diagnostic::new(StatusCode::Internal, message));
        }
        let results = std::mem::take(&mut self.results);
        for (index, ((kind, result), value)) in results.iter().zip(values).enumerate() {
            // The host may have set a result itself; its value stands.
            let _ = match (kind, value) {
                (ValueKind::I32, Value::I32(v)) => result.emplace(v),
                (ValueKind::I64, Value::I64(v)) => result.emplace(v),
                (ValueKind::F32, Value::F32(v)) => result.emplace(v),
                (ValueKind::F64, Value::F64(v)) => result.emplace(v),
                (ValueKind::Ref, Value::Ref(r)) => match r.as_ref().and_then(buffer_view::from_ref) {
                    Some(view) => result.emplace(view),
                    None => result.set_error(Diagnostic::new(
                        StatusCode::Unimplemented,
                        format!(
                            "result {index} of `{}` is {}, which C async values cannot hold (of refs, only \
                             buffer views cross the C API)",
                            self.function.full_name,
                            r.as_ref().map_or("a null ref".to_owned(), |r| format!("a `{}`", r.type_name()))
                        ),
                    )),
                },
                (kind, value) => result.set_error(Diagnostic::new(
                    StatusCode::Internal,
                    format!(
                        "result {index} of `{}`: expected {} but the function returned {}",
                        self.function.full_name,
                        kind.name(),
                        value.type_name()
                    ),
                )),
            };
        }
        self.stage = Stage::Finished;
    }

    /// Makes every result (not yet set) the error, and the caller's signal fence too: whoever
    /// waits on it must not wait forever.
    fn fail(mut self, error: Diagnostic) {
        self.fail_all(&error);
        self.stage = Stage::Finished;
    }

    fn fail_all(&mut self, error: &Diagnostic) {
        for (_, result) in std::mem::take(&mut self.results) {
            let _ = result.set_error(error.clone());
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
            value.try_get::<Arc<BufferView>>().map(|v| Value::Ref(Some(buffer_view::to_ref(Arc::clone(v)))))
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

/// What a value holds, in C's terms.
pub(crate) fn held_type(value: &RcAsyncValue) -> &'static str {
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

fn plural(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

/// Calls `function` (`"module.function"`, or a bare name looked up in the most recently added
/// bytecode module) with `num_args` argument values, without blocking: the call runs on the
/// context's work queue once every argument is available (they may be unavailable now).
///
/// Arguments and results follow the function's calling convention: `i`/`I`/`f`/`F` are i32/i64/
/// f32/f64 values, `r` (a ref) is a tensor: an async value holding a buffer view
/// (`rtx_async_value_new_buffer_view`). Modules that take tensors import `hal`, so the context
/// needs a device (`rtx_context_add_device`) before they are added.
///
/// A `coarse-fences` function (`iree.abi.model`, from `--iree-execution-model=async-external`)
/// takes its declared arguments, then optionally two more: a wait fence, any async value (the
/// call starts once it is available; an error fails the call), and a signal fence, an unavailable
/// value from `rtx_async_value_new_unavailable` that becomes a chain when the program's queued
/// work is done, or that work's error. Without them the call makes its own. Either way the
/// results become available only once the signal is reached.
///
/// On success `results[0..num_results]` receive new, unavailable values (owned by the caller;
/// release each) that become the function's results — scalars, or for `r` results a buffer view
/// (`rtx_async_value_get_buffer_view`) — or, if the call fails, errors: every result gets the
/// same error, carrying the `vm.fail` status code and message and the failing location; an error
/// argument is passed on (its code, the message naming the argument); an argument of the wrong
/// type (an i32 for a tensor, a buffer view for an f32) gives INVALID_ARGUMENT; a tensor whose
/// element type or shape the function does not accept gives the program's own INVALID_ARGUMENT
/// (`input0 shape dimension 0 mismatch; ...`); a ref result that is not a buffer view (a list, a
/// null ref) gives UNIMPLEMENTED for that result; a cancelled or released context gives
/// CANCELLED. The arguments are only read, never consumed: a buffer view passed in stays the
/// caller's.
///
/// Fails at once, writing nothing to `results`, with NOT_FOUND when there is no such function,
/// and INVALID_ARGUMENT for NULL arguments or `num_args`/`num_results` that differ from the
/// function's calling convention. Thread-safe; the name lookup shares the VM context's lock, so
/// it waits while a slice of this context's VM code runs elsewhere.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_invoke(
    context: *mut rtx_context_t,
    function: *const c_char,
    args: *const *mut rtx_async_value_t,
    num_args: usize,
    results: *mut *mut rtx_async_value_t,
    num_results: usize,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_context_invoke";
        // SAFETY: forwarded from the caller.
        let context = unsafe { handle::borrow(context, FUNCTION, "context") }?;
        // SAFETY: a non-null name is NUL-terminated by contract.
        let name = unsafe { c_str(function, FUNCTION, "function") }?;
        let handle = context.vm.lookup(name).context(FUNCTION)?;
        let (mut argument_kinds, result_kinds) = signature(&handle)?;
        let declared = argument_kinds.len() - handle.model.fence_arguments();
        let with_fences = handle.model.fence_arguments() > 0 && num_args == argument_kinds.len();
        if !with_fences {
            argument_kinds.truncate(declared);
        }
        if num_args != argument_kinds.len() || num_results != result_kinds.len() {
            let fences = if declared == argument_kinds.len() && handle.model.fence_arguments() == 0 {
                String::new()
            } else {
                format!(" (coarse-fences: or {} with a wait and a signal fence)", declared + 2)
            };
            return Err(invalid_argument(format!(
                "{FUNCTION}: `{}` (calling convention `{}`) takes {}{fences} and returns {}, but the call \
                 passes num_args = {num_args} and num_results = {num_results}",
                handle.full_name,
                handle.cconv,
                plural(declared, "argument"),
                plural(result_kinds.len(), "result"),
            )));
        }
        // SAFETY: the caller guarantees `num_args` readable handles at a non-null `args`.
        let mut arguments = unsafe { borrow_all(args, num_args, FUNCTION) }
            .map_err(|e| e.map_message(|message| message.replace("'values", "'args")))?;
        if results.is_null() && num_results != 0 {
            return Err(invalid_argument(format!(
                "{FUNCTION}: argument 'results' is NULL but num_results is {num_results}"
            )));
        }
        let fences = if with_fences {
            argument_kinds.truncate(declared);
            // The signal is the program's to set: the call must not wait for it.
            let signal = arguments.pop().expect("num_args counts the fences");
            if !signal.can_take::<Chain>() {
                return Err(invalid_argument(format!(
                    "{FUNCTION}: the signal fence of `{}` (argument {}) must be an unavailable value that can \
                     become a chain (rtx_async_value_new_unavailable), but it is {}",
                    handle.full_name,
                    declared + 1,
                    if signal.is_available() {
                        format!("available ({})", held_type(&signal))
                    } else {
                        format!("a promise for {}", held_type(&signal))
                    }
                )));
            }
            let wait = arguments.last().expect("num_args counts the fences").clone();
            Fences::Explicit { wait, signal }
        } else if handle.model.fence_arguments() > 0 {
            Fences::Implicit
        } else {
            Fences::None
        };
        let promises: Vec<(ValueKind, RcAsyncValue)> =
            result_kinds.iter().map(|&kind| (kind, result_promise(kind))).collect();
        for (index, (_, promise)) in promises.iter().enumerate() {
            // SAFETY: `results` has room for `num_results` handles by contract; each is a new
            // reference for the caller. Written only now, when nothing can fail any more.
            unsafe { results.add(index).write(handle::to_handle(promise.clone())) };
        }
        let call = Call {
            host: Arc::downgrade(&context.host),
            vm: context.vm.clone(),
            function: handle,
            arguments: argument_kinds,
            results: promises,
            fences,
            signal: None,
            stage: Stage::Arguments(arguments.clone()),
        };
        join::run_when_ready(&arguments, move || call.schedule());
        Ok(())
    })
}

/// The argument and result kinds of a function the C API can call (scalars and refs; refs are
/// buffer views, checked per value when the call runs).
fn signature(handle: &FunctionHandle) -> Result<(Vec<ValueKind>, Vec<ValueKind>), Diagnostic> {
    const FUNCTION: &str = "rtx_context_invoke";
    let name = &handle.full_name;
    let cconv = CallingConvention::parse(&handle.cconv).map_err(|e| {
        Diagnostic::new(
            StatusCode::InvalidArgument,
            format!("{FUNCTION}: `{name}` has an unusable calling convention: {e}"),
        )
    })?;
    let (Some(arguments), Some(results)) = (plain_kinds(&cconv.arguments), plain_kinds(&cconv.results)) else {
        return Err(invalid_argument(format!(
            "{FUNCTION}: `{name}` (calling convention `{}`) takes a variadic span, which only imports can",
            handle.cconv
        )));
    };
    Ok((arguments, results))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::async_value::{rtx_async_value_get_i32, rtx_async_value_release};
    use crate::ffi::context::{rtx_context_new, rtx_context_release};
    use crate::host::AsyncValueRef;
    use crate::vm::native::{NativeFunction, NativeModule, NativeOutcome, NativeState};
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

        fn call(&self, _: &mut NativeState, _: usize, _: &[Value]) -> Result<NativeOutcome, Diagnostic> {
            let value = AsyncValueRef::unconstructed();
            *self.pending.lock().unwrap() = Some(value.clone());
            Ok(NativeOutcome::Pending(value))
        }
    }

    #[test]
    fn a_call_suspended_on_an_async_native_result_resumes_from_the_queue() {
        let pending = Arc::new(Mutex::new(None));
        let module = Later { functions: vec![NativeFunction::new("value", "0v_i")], pending: Arc::clone(&pending) };
        let mut handle = std::ptr::null_mut();
        // SAFETY: NULL options (defaults) and a valid out pointer; every handle is released below.
        unsafe {
            assert!(rtx_context_new(std::ptr::null(), &mut handle).is_null());
            let context = handle::borrow(handle, "test", "context").unwrap();
            context.vm.add_native_module(Arc::new(module)).unwrap();
            let mut result = std::ptr::null_mut();
            let error = rtx_context_invoke(handle, c"later.value".as_ptr(), std::ptr::null(), 0, &mut result, 1);
            assert!(error.is_null());
            let promise = loop {
                if let Some(promise) = pending.lock().unwrap().take() {
                    break promise;
                }
                std::thread::yield_now();
            };
            context.host.quiesce().unwrap();
            let borrowed = handle::borrow(result, "test", "result").unwrap();
            assert!(!borrowed.is_available(), "the call waits for the native result without a worker");
            promise.emplace(vec![Value::I32(42)]).unwrap();
            context.host.await_values(&[(*borrowed).clone()]).unwrap();
            let mut out = 0;
            assert!(rtx_async_value_get_i32(result, &mut out).is_null());
            assert_eq!(out, 42);
            rtx_async_value_release(result);
            rtx_context_release(handle);
        }
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

        fn call(&self, _: &mut NativeState, ordinal: usize, arguments: &[Value]) -> Result<NativeOutcome, Diagnostic> {
            let result = match ordinal {
                0 => arguments[0].clone(),
                1 => Value::Ref(Some(crate::vm::refs::Ref::Buffer(crate::vm::buffer::Buffer::from_bytes(&[1, 2])?))),
                _ => Value::Ref(None),
            };
            Ok(NativeOutcome::Ready(vec![result]))
        }
    }

    #[test]
    fn a_buffer_view_goes_through_the_vm_as_itself_and_other_refs_are_unimplemented() {
        use crate::ffi::async_value::{
            rtx_async_value_get_buffer_view, rtx_async_value_get_error, rtx_async_value_new_buffer_view,
        };
        use crate::ffi::buffer_view::{rtx_buffer_view_new, rtx_buffer_view_release};
        use crate::ffi::error::{rtx_error_code, rtx_error_delete, rtx_error_message, rtx_status_code_t};
        let functions = ["echo", "buffer", "null"].iter().zip(["0r_r", "0v_r", "0v_r"]);
        let module = Refs { functions: functions.map(|(name, cconv)| NativeFunction::new(*name, cconv)).collect() };
        let mut handle = std::ptr::null_mut();
        // SAFETY: NULL options (defaults) and valid out pointers; every handle is released below.
        unsafe {
            assert!(rtx_context_new(std::ptr::null(), &mut handle).is_null());
            let context = handle::borrow(handle, "test", "context").unwrap();
            context.vm.add_native_module(Arc::new(module)).unwrap();
            let mut view = std::ptr::null_mut();
            let data = [0u8; 4];
            let shape = [1i64];
            let error = rtx_buffer_view_new(0x2100_0020, shape.as_ptr(), 1, data.as_ptr().cast(), 4, &mut view);
            assert!(error.is_null());
            let argument = rtx_async_value_new_buffer_view(view);
            let mut results = [std::ptr::null_mut(); 3];
            assert!(rtx_context_invoke(handle, c"refs.echo".as_ptr(), &argument, 1, &mut results[0], 1).is_null());
            assert!(
                rtx_context_invoke(handle, c"refs.buffer".as_ptr(), std::ptr::null(), 0, &mut results[1], 1).is_null()
            );
            assert!(
                rtx_context_invoke(handle, c"refs.null".as_ptr(), std::ptr::null(), 0, &mut results[2], 1).is_null()
            );
            let values: Vec<RcAsyncValue> = results.iter().map(|&r| handle::clone(r, "test", "r").unwrap()).collect();
            context.host.await_values(&values).unwrap();
            drop(values);
            let mut echoed = std::ptr::null_mut();
            assert!(rtx_async_value_get_buffer_view(results[0], &mut echoed).is_null());
            assert_eq!(echoed, view, "the VM passed the view itself, not a copy");
            for (result, what) in [(results[1], "a `vm.buffer`"), (results[2], "a null ref")] {
                let error = rtx_async_value_get_error(result);
                assert_eq!(rtx_error_code(error), rtx_status_code_t::RTX_STATUS_CODE_UNIMPLEMENTED);
                let message = std::ffi::CStr::from_ptr(rtx_error_message(error)).to_str().unwrap().to_owned();
                assert!(message.contains("result 0 of `refs."), "{message}");
                assert!(message.contains(&format!("is {what}, which C async values cannot hold")), "{message}");
                rtx_error_delete(error);
            }
            for value in results.into_iter().chain([argument]) {
                rtx_async_value_release(value);
            }
            rtx_buffer_view_release(echoed);
            rtx_buffer_view_release(view);
            rtx_context_release(handle);
        }
    }
}
