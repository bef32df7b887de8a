//! TFRT's test native functions (`tfrt.native` functions found by name): `native_sink` (takes
//! anything, returns nothing), `native_async_sink` (a chain), `native_add` and
//! `native_async_add` (the sum of two `i32`, now or from a task), `native_error` (an error).
//! Arguments may still be unavailable when a native function is called: the adds wait for them.

use crate::KernelRegistry;
use rtx_host::{run_when_ready, AsyncValueRef, Chain, Diagnostic, RcAsyncValue, StatusCode};

/// Sets `results[0]` to the sum of the two `i32` arguments once both are available, adding in a
/// task when `in_task`.
fn add(
    arguments: &[RcAsyncValue],
    results: &mut [Option<RcAsyncValue>],
    host: &std::sync::Arc<rtx_host::HostContext>,
    in_task: bool,
) {
    let Some(slot) = results.first_mut() else { return };
    let [a, b] = arguments else {
        *slot = Some(RcAsyncValue::error(Diagnostic::new(
            StatusCode::InvalidArgument,
            format!("native add takes 2 arguments, not {}", arguments.len()),
        )));
        return;
    };
    let sum = AsyncValueRef::<i32>::unconstructed();
    *slot = Some(sum.as_untyped().clone());
    let (a, b, host) = (a.clone(), b.clone(), std::sync::Arc::clone(host));
    run_when_ready(&[a.clone(), b.clone()], move || {
        let value = match (a.try_get::<i32>(), b.try_get::<i32>()) {
            (Ok(a), Ok(b)) => a.wrapping_add(*b),
            (Err(error), _) | (_, Err(error)) => {
                let _ = sum.set_error(error.into_diagnostic());
                return;
            }
        };
        if in_task {
            host.work_queue().add_task(Box::new(move || {
                let _ = sum.emplace(value);
            }));
        } else {
            let _ = sum.emplace(value);
        }
    });
}

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_native_function("native_sink", |_, _, _| {});
    registry.add_native_function("native_async_sink", |_, results, _| {
        if let Some(slot) = results.first_mut() {
            *slot = Some(Chain::ready().into_untyped());
        }
    });
    registry.add_native_function("native_add", |arguments, results, context| {
        add(arguments, results, context.host(), false)
    });
    registry.add_native_function("native_async_add", |arguments, results, context| {
        add(arguments, results, context.host(), true)
    });
    registry.add_native_function("native_error", |_, results, _| {
        if let Some(slot) = results.first_mut() {
            *slot = Some(RcAsyncValue::error(Diagnostic::new(StatusCode::Internal, "something bad happened")));
        }
    });
}
