//! Calling a BEF function with async values in and out, without blocking, as a VM function is
//! called ([`invocation`](super::invocation)):
//!
//! 1. [`start`] makes one indirect result value per function result and joins the arguments;
//! 2. once they are all available, a task on the context's queue checks the plain-typed ones
//!    (`i1`, `i32`, `i64`, `f32`, `f64`, `!tfrt.chain`) against the function's types, turns buffer
//!    views passed for tensor arguments into dense host tensors over the same bytes (how C hosts
//!    pass tensors, as `rtx_buffer_view_t`), and runs the function on the dataflow executor in a
//!    request of the context's host context;
//! 3. the results forward to what the executor returns, which kernels complete later.
//!
//! An error argument is passed on to the kernels that use it, so only the results that depend on
//! it become that error. An argument of the wrong type, a cancelled context or one released
//! before the task ran makes every result the error. Cancelling the context later skips the
//! kernels that have not started (their results become CANCELLED). Runtime errors reach the
//! results they poison; nothing is printed but what print kernels print (to standard output).
//!
//! Until the task runs, queued work holds the host context only weakly, as a VM call does; a
//! running request holds it until its kernels are done.

use std::sync::{Arc, Weak};

use super::bridge::tensors::{view_to_tensor, views_to_sequence, ViewSequence, TENSOR_TYPES};
use super::context::BefFunction;
use super::invocation::held_type;
use rtx_hal::buffer_view::BufferView;
use rtx_host::{
    join, AsyncValueRef, Chain, Diagnostic, HostContext, IndirectAsyncValue, RcAsyncValue, ResultExt, StatusCode,
};
use rtx_kernel::context::print_output;
use rtx_kernel::ExecutionContext;

/// Starts a call of `function` on `host`'s queue (the caller checked the argument count).
/// `done`, when given, becomes a chain once the function has run and its results are all
/// available, or the error that kept it from running.
pub(super) fn start(
    host: &Arc<HostContext>,
    function: &BefFunction,
    arguments: &[RcAsyncValue],
    done: Option<RcAsyncValue>,
) -> Result<Vec<RcAsyncValue>, Diagnostic> {
    let results: Vec<IndirectAsyncValue> =
        (0..function.function.num_results()).map(|_| IndirectAsyncValue::new()).collect();
    let values = results.iter().map(IndirectAsyncValue::value).collect();
    let call =
        Call { host: Arc::downgrade(host), function: function.clone(), arguments: arguments.to_vec(), results, done };
    join::run_when_ready(arguments, move || call.schedule());
    Ok(values)
}

/// One BEF call waiting for its arguments or its task.
struct Call {
    host: Weak<HostContext>,
    function: BefFunction,
    arguments: Vec<RcAsyncValue>,
    /// Emptied once forwarded.
    results: Vec<IndirectAsyncValue>,
    /// Becomes a chain once the results it returned are available; taken when the function runs.
    done: Option<RcAsyncValue>,
}

impl Call {
    fn schedule(self) {
        let Some(queue) = self.host.upgrade().map(|host| Arc::clone(host.work_queue())) else {
            return self.fail(released());
        };
        queue.add_task(Box::new(move || self.run()));
    }

    fn run(mut self) {
        let host = match self.host.upgrade() {
            None => return self.fail(released()),
            Some(host) if host.is_cancelled() => return self.fail(Diagnostic::cancelled()),
            Some(host) => host,
        };
        if let Err(error) = self.check_types().and_then(|()| self.tensors_from_views(&host)) {
            return self.fail(error);
        }
        // Errors reach the results they poison; the request reports them nowhere else.
        let request = ExecutionContext::with_handlers(host, Arc::new(|_: &Diagnostic| {}), Arc::new(print_output));
        let returned = self.function.function.execute(&request, &self.arguments);
        if let Some(done) = self.done.take() {
            join::run_when_ready(&returned, move || {
                let _ = done.emplace(Chain);
            });
        }
        for (result, value) in std::mem::take(&mut self.results).iter().zip(returned) {
            // The host may have set a result itself; its value stands.
            let _ = result.forward_to(value);
        }
    }

    /// Checks each available, non-error argument of a plain type against the type the function
    /// declares for it.
    fn check_types(&self) -> Result<(), Diagnostic> {
        let function = &self.function.function;
        for (index, (value, expected)) in self.arguments.iter().zip(function.argument_types()).enumerate() {
            if value.is_error() || holds(value, expected) != Some(false) {
                continue;
            }
            return Err(Diagnostic::new(
                StatusCode::InvalidArgument,
                format!("expected {expected} but the value holds {}", held_type(value)),
            ))
            .with_context(|| format!("argument {index} of `{}`", self.function.name));
        }
        Ok(())
    }

    /// Replaces each buffer view passed for a tensor argument by a tensor holding its elements,
    /// and each sequence of views by a sequence of such tensors.
    fn tensors_from_views(&mut self, host: &HostContext) -> Result<(), Diagnostic> {
        let types = self.function.function.argument_types();
        for (index, (value, expected)) in self.arguments.iter_mut().zip(types).enumerate() {
            if let Ok(views) = value.try_get::<ViewSequence>() {
                let sequence = views_to_sequence(host, views)
                    .with_context(|| format!("argument {index} of `{}`", self.function.name))?;
                *value = AsyncValueRef::available(sequence).into_untyped();
                continue;
            }
            let Ok(view) = value.try_get::<Arc<BufferView>>() else { continue };
            if TENSOR_TYPES.contains(&expected) {
                let tensor = view_to_tensor(host, view)
                    .with_context(|| format!("argument {index} of `{}`", self.function.name))?;
                *value = AsyncValueRef::available(tensor).into_untyped();
            }
        }
        Ok(())
    }

    fn fail(mut self, error: Diagnostic) {
        self.fail_all(&error);
    }

    fn fail_all(&mut self, error: &Diagnostic) {
        for result in std::mem::take(&mut self.results) {
            let _ = result.set_error(error.clone());
        }
        if let Some(done) = self.done.take() {
            let _ = done.set_error(error.clone());
        }
    }
}

/// A call dropped before it ran (its task deleted by a host queue shutting down) still completes
/// its results, so nobody waits for them forever.
impl Drop for Call {
    fn drop(&mut self) {
        let error = Diagnostic::new(
            StatusCode::Cancelled,
            format!("call to `{}` was dropped before it ran (its work queue shut down)", self.function.name),
        );
        self.fail_all(&error);
    }
}

fn released() -> Diagnostic {
    Diagnostic::new(StatusCode::Cancelled, "cancelled: the context was released before this call ran")
}

/// Whether `value` holds the BEF type `type_name`; `None` for types the runtime does not know
/// (kernels check those themselves).
fn holds(value: &RcAsyncValue, type_name: &str) -> Option<bool> {
    Some(match type_name {
        "i1" => value.is_type::<bool>(),
        "i32" => value.is_type::<i32>(),
        "i64" => value.is_type::<i64>(),
        "f32" => value.is_type::<f32>(),
        "f64" => value.is_type::<f64>(),
        "!tfrt.chain" => value.is_type::<Chain>(),
        _ => return None,
    })
}
