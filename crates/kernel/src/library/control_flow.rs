//! Control flow: `tfrt.call`, `tfrt.if`/`tfrt.cond`, `tfrt.case`, `tfrt.while`,
//! `tfrt.repeat.i32`, `tfrt.once`. Bodies are BEF functions the kernel refers to; loops carry
//! their values from one iteration's results to the next one's arguments without waiting for
//! them, and the kernel's results are indirect values forwarded when the loop ends.

use std::sync::atomic::{AtomicBool, Ordering};

use super::set_results;
use crate::function::ProgramFunction;
use crate::{ExecutionContext, KernelError, KernelFrame, KernelRegistry};
use rtx_host::{join, IndirectAsyncValue, RcAsyncValue};

/// `tfrt.repeat.i32` runs this many iterations before it waits for the first loop value, so a
/// long loop of asynchronous bodies does not unroll in one go.
const REPEAT_BLOCK: i32 = 32;

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("tfrt.call", |f| {
        let results = f.function(0)?.execute(f.context(), f.arguments());
        set_results(f, results)
    });
    // ProgramFunction 0 runs when the i1 condition is true, function 1 otherwise.
    for name in ["tfrt.if", "tfrt.cond"] {
        registry.add_kernel(name, |f| {
            let branch = f.function(if *f.get::<bool>(0)? { 0 } else { 1 })?;
            let results = branch.execute(f.context(), &f.arguments()[1..]);
            set_results(f, results)
        });
    }
    // An index out of range takes the last branch, as TensorFlow's case does.
    registry.add_kernel("tfrt.case", |f| {
        let index = *f.get::<i32>(0)?;
        let branches = f.num_functions();
        if branches == 0 {
            return Err("tfrt.case needs at least one branch".into());
        }
        let chosen = usize::try_from(index).ok().filter(|&i| i < branches).unwrap_or(branches - 1);
        let results = f.function(chosen)?.execute(f.context(), &f.arguments()[1..]);
        set_results(f, results)
    });
    registry.add_kernel("tfrt.while", tfrt_while);
    registry.add_kernel("tfrt.repeat.i32", repeat);
    registry.add_kernel("tfrt.once", once);
}

fn forward_all(results: &[IndirectAsyncValue], values: Vec<RcAsyncValue>) {
    for (result, value) in results.iter().zip(values) {
        let _ = result.forward_to(value);
    }
}

/// `%r = tfrt.while %cond @body(%args) parallel_iterations(n)`: while the condition holds,
/// `args, cond = body(args)`. Attribute 0 is `parallel_iterations`: above one, each iteration
/// starts in a task as soon as its condition is known.
fn tfrt_while(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let parallel = frame.scalar_attribute::<i64>(0)? > 1;
    let body = frame.function(0)?;
    if body.num_arguments() + 1 != frame.num_arguments() || body.num_results() != frame.num_results() + 1 {
        return Err(format!(
            "tfrt.while's body takes {} values and returns {}, but the loop carries {}",
            body.num_arguments(),
            body.num_results(),
            frame.num_results()
        )
        .into());
    }
    let condition = frame.argument(0)?.clone();
    let arguments = frame.arguments()[1..].to_vec();
    let results = frame.allocate_indirect_results()?;
    let looping = Loop { context: frame.context().clone(), body, results };
    looping.iterate(condition, arguments, parallel);
    Ok(())
}

/// A `tfrt.while` in progress.
struct Loop {
    context: ExecutionContext,
    body: ProgramFunction,
    results: Vec<IndirectAsyncValue>,
}

impl Loop {
    /// Runs iterations while their conditions are available; otherwise resumes (in a task, so
    /// the stack does not grow with the iterations) when the condition is.
    fn iterate(self, mut condition: RcAsyncValue, mut arguments: Vec<RcAsyncValue>, parallel: bool) {
        loop {
            match condition.try_get::<bool>() {
                Ok(true) => {}
                Ok(false) => return forward_all(&self.results, arguments),
                Err(_) => return self.fail(condition, arguments),
            }
            let mut next = if parallel {
                self.body.execute_in_task(&self.context, &arguments)
            } else {
                self.body.execute(&self.context, &arguments)
            };
            condition = next.pop().expect("the body returns the condition last");
            arguments = next;
            if !condition.is_available() {
                let pending = condition.clone();
                pending.and_then(move || {
                    let host = std::sync::Arc::clone(self.context.host());
                    host.work_queue().add_task(Box::new(move || self.iterate(condition, arguments, parallel)));
                });
                return;
            }
        }
    }

    /// The condition is an error (or not an i1): once the loop values settle, every result is
    /// that error.
    fn fail(self, condition: RcAsyncValue, arguments: Vec<RcAsyncValue>) {
        let error = if condition.is_error() {
            condition
        } else {
            RcAsyncValue::error(rtx_host::Diagnostic::new(
                rtx_host::StatusCode::InvalidArgument,
                format!("tfrt.while's condition is {}, not an i1", condition.type_name()),
            ))
        };
        let waited = arguments.clone();
        join::run_when_ready(&waited, move || {
            drop(arguments);
            forward_all(&self.results, vec![error; self.results.len()]);
        });
    }
}

/// `%r = tfrt.repeat.i32 %n, %args { body }`: `args = body(args)`, `n` times, checking for
/// cancellation before each iteration.
fn repeat(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let count = *frame.get::<i32>(0)?;
    let body = frame.function(0)?;
    if body.num_arguments() + 1 != frame.num_arguments() || body.num_results() != body.num_arguments() {
        return Err("tfrt.repeat.i32's body must take and return the loop values".into());
    }
    let arguments = frame.arguments()[1..].to_vec();
    let results = frame.allocate_indirect_results()?;
    repeat_block(0, count, frame.context().clone(), body, arguments, results);
    Ok(())
}

fn repeat_block(
    start: i32,
    count: i32,
    context: ExecutionContext,
    body: ProgramFunction,
    mut arguments: Vec<RcAsyncValue>,
    results: Vec<IndirectAsyncValue>,
) {
    // Without loop values there is nothing to wait on between blocks.
    let block = if arguments.is_empty() { count } else { REPEAT_BLOCK };
    let end = count.min(start.saturating_add(block));
    for _ in start..end {
        if let Some(cancelled) = context.cancel_value() {
            return forward_all(&results, vec![cancelled; results.len()]);
        }
        arguments = body.execute(&context, &arguments);
    }
    if end >= count {
        return forward_all(&results, arguments);
    }
    let first = arguments[0].clone();
    first.and_then(move || repeat_block(end, count, context, body, arguments, results));
}

/// The results `tfrt.once` shares within a request.
struct Once {
    started: AtomicBool,
    results: Vec<IndirectAsyncValue>,
}

/// `%r = tfrt.once @f(%args)`: runs `f` the first time the kernel runs in a request; every run
/// returns those results.
fn once(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let function = frame.function(0)?;
    let key = format!("tfrt.once @{}", function.name());
    let results = function.num_results();
    let shared = frame.context().resource(&key, || Once {
        started: AtomicBool::new(false),
        results: (0..results).map(|_| IndirectAsyncValue::new()).collect(),
    })?;
    if !shared.started.swap(true, Ordering::AcqRel) {
        forward_all(&shared.results, function.execute(frame.context(), frame.arguments()));
    }
    set_results(frame, shared.results.iter().map(|r| r.value()).collect())
}
