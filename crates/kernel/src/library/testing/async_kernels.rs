//! Asynchronous test kernels: results computed in work-queue tasks (`async_constant`,
//! `async_add`, `async_copy*`), bodies run in a task (`do.async`), sleeps on the blocking pool
//! (`usleep`, `blocking.usleep`), `quiesce`, `as_chain`, and errors reported from a task after
//! the kernel returned (`report_error_*`).

use std::time::Duration;

use crate::{KernelError, KernelFrame, KernelRegistry};
use rtx_host::{AsyncValueRef, Chain, HostContext};

/// Sleeps 1 to 10 milliseconds, chosen at random, to shuffle the order of concurrent work.
pub(crate) fn sleep_for_random_duration() {
    use std::hash::{BuildHasher, Hasher};
    let random = std::collections::hash_map::RandomState::new().build_hasher().finish();
    std::thread::sleep(Duration::from_millis(1 + random % 10));
}

/// Sets result 0 to what `work` computes in a task on the host's work queue.
fn enqueue_result<T, F>(frame: &mut KernelFrame<'_>, work: F) -> Result<(), KernelError>
where
    T: Send + Sync + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let value = frame.host().enqueue_work(work);
    frame.set_result(0, value.into_untyped())
}

/// Registers `name` as a kernel that copies its `T` argument in a task, after `delay`.
fn async_copy<T: Copy + Send + Sync + 'static>(registry: &mut KernelRegistry, name: &str, delay: fn()) {
    registry.add_kernel(name, move |f| {
        let value = *f.get::<T>(0)?;
        enqueue_result(f, move || {
            delay();
            value
        })
    });
}

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("tfrt_test.async_constant.i1", |f| {
        let value = f.scalar_attribute::<u8>(0)? != 0;
        enqueue_result(f, move || value)
    });
    registry.add_kernel("tfrt_test.async_constant.i32", |f| {
        let value = f.scalar_attribute::<i32>(0)?;
        enqueue_result(f, move || value)
    });
    registry.add_kernel("tfrt_test.async_add.i32", |f| {
        let (a, b) = (*f.get::<i32>(0)?, *f.get::<i32>(1)?);
        enqueue_result(f, move || a.wrapping_add(b))
    });
    async_copy::<i32>(registry, "tfrt_test.async_copy.i32", || {});
    async_copy::<i32>(registry, "tfrt_test.async_copy.with_delay.i32", sleep_for_random_duration);
    async_copy::<i64>(registry, "tfrt_test.async_copy.with_delay.i64", sleep_for_random_duration);
    // The same copy, with the result allocated first and set from the task.
    registry.add_kernel("tfrt_test.async_copy_2.i32", |f| {
        let value = *f.get::<i32>(0)?;
        let result = f.allocate_result::<i32>(0)?;
        f.host().work_queue().add_task(Box::new(move || {
            let _ = result.emplace(value);
        }));
        Ok(())
    });
    registry.add_kernel("tfrt_test.do.async", do_async);
    registry.add_kernel("tfrt_test.usleep", |f| {
        let micros = *f.get::<i32>(0)?;
        sleep_blocking(f, micros, None);
        Ok(())
    });
    registry.add_kernel("tfrt_test.blocking.usleep", |f| {
        let micros = *f.get::<i32>(0)?;
        let done = f.allocate_result::<Chain>(0)?;
        sleep_blocking(f, micros, Some(done));
        Ok(())
    });
    registry.add_kernel("tfrt_test.quiesce", |f| {
        f.host().quiesce()?;
        f.emplace_result(0, Chain)
    });
    // The executor runs a kernel once all its arguments are available: the chain is ready now.
    registry.add_kernel("tfrt_test.as_chain", |f| f.emplace_result(0, Chain));
    registry.add_kernel("tfrt_test.report_error_concrete_async", |f| {
        let input = *f.get::<i32>(0)?;
        let result = f.allocate_result::<i32>(0)?;
        let reporter = f.error_reporter();
        f.host().work_queue().add_task(Box::new(move || {
            if input == 0 {
                let _ = result.emplace(input);
            } else {
                let _ = result.set_error(reporter.report_diagnostic("something bad happened asynchronously"));
            }
        }));
        Ok(())
    });
    registry.add_kernel("tfrt_test.report_error_indirect_async", |f| {
        let input = *f.get::<i32>(0)?;
        let result = f.allocate_indirect_result(0)?;
        let reporter = f.error_reporter();
        f.host().work_queue().add_task(Box::new(move || {
            let _ = if input == 0 {
                result.forward_to(AsyncValueRef::available(0i32).into_untyped())
            } else {
                result.forward_to(reporter.report("something bad happened asynchronously"))
            };
        }));
        Ok(())
    });
    registry.add_kernel("tfrt_test.report_error_async", |f| {
        let result = f.allocate_result::<i32>(0)?;
        let reporter = f.error_reporter();
        f.host().work_queue().add_task(Box::new(move || {
            let _ = result.set_error(reporter.report_diagnostic("something bad happened asynchronously"));
        }));
        Ok(())
    });
}

/// `%r = tfrt_test.do.async %args { body }`: runs the body in a task; the results are indirect
/// values forwarded to the body's.
fn do_async(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let body = frame.function(0)?;
    if body.num_arguments() != frame.num_arguments() || body.num_results() != frame.num_results() {
        return Err(format!(
            "tfrt_test.do.async's body takes {} values and returns {}, but the kernel has {} and {}",
            body.num_arguments(),
            body.num_results(),
            frame.num_arguments(),
            frame.num_results()
        )
        .into());
    }
    let results = (0..frame.num_results()).map(|i| frame.allocate_indirect_result(i)).collect::<Result<Vec<_>, _>>()?;
    let arguments = frame.arguments().to_vec();
    let context = frame.context().clone();
    frame.host().work_queue().add_task(Box::new(move || {
        for (result, value) in results.iter().zip(body.execute(&context, &arguments)) {
            let _ = result.forward_to(value);
        }
    }));
    Ok(())
}

/// Sleeps `micros` on the blocking pool, then prints `Slept for N microseconds` and sets `done`.
/// A queue that refuses the task is reported on standard error (the kernel may have no result
/// to carry the error).
fn sleep_blocking(frame: &KernelFrame<'_>, micros: i32, done: Option<AsyncValueRef<Chain>>) {
    let host: &HostContext = frame.host();
    let context = frame.context().clone();
    let task = Box::new(move || {
        std::thread::sleep(Duration::from_micros(u64::try_from(micros).unwrap_or(0)));
        context.print(&format!("Slept for {micros} microseconds\n"));
        if let Some(done) = done {
            let _ = done.emplace(Chain);
        }
    });
    if host.work_queue().add_blocking_task(task, true).is_err() {
        eprintln!("Failed to enqueue blocking work. Maximum number of pending blocking tasks reached.");
    }
}
