//! `rtx_context_invoke` and `rtx_context_invoke_with_done`: call a function with async values in
//! and out, without blocking (`runtime::Context::invoke`, whose documentation describes the
//! call's life); `rtx_context_call`: call it with buffer views in and out and wait
//! (`runtime::Context::call_tensors`).

use std::ffi::c_char;

use super::async_value::{borrow_all, rtx_async_value_t};
use super::buffer_view::rtx_buffer_view_t;
use super::context::rtx_context_t;
use super::error::rtx_error_t;
use super::handle;
use super::{c_str, catch_error, invalid_argument};
use crate::host::{Diagnostic, ResultExt};
use crate::runtime::invocation::plural;
use crate::runtime::Function;

/// Calls `function` (`"module.function"`, or a bare name looked up in the most recently added
/// bytecode or BEF module) with `num_args` argument values, without blocking: the call runs on the
/// context's work queue once every argument is available (they may be unavailable now).
///
/// A BEF function takes and returns the values its types say (`i32`... as scalars, `!tfrt.chain`
/// as chains); an error argument is passed on only to the kernels that use it, so results that
/// do not depend on it still become available, and a kernel's error reaches the results that
/// depend on it with the kernel's source location.
///
/// Arguments and results of a VM function follow its calling convention: `i`/`I`/`f`/`F` are i32/i64/
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
    // SAFETY: forwarded from the caller, who upholds `rtx_context_invoke`'s contract.
    unsafe { invoke("rtx_context_invoke", context, function, args, num_args, results, num_results, None) }
}

/// As `rtx_context_invoke`, and on success `*done` receives one more new, unavailable value
/// (owned by the caller; release it) that becomes a chain once the call has finished — a VM
/// function's results all set, a BEF function run and its results all available — or the error
/// that failed the call. A function without results reports its failure only there. NULL `done`
/// is INVALID_ARGUMENT; `*done` is written only on success.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_invoke_with_done(
    context: *mut rtx_context_t,
    function: *const c_char,
    args: *const *mut rtx_async_value_t,
    num_args: usize,
    results: *mut *mut rtx_async_value_t,
    num_results: usize,
    done: *mut *mut rtx_async_value_t,
) -> *mut rtx_error_t {
    const FUNCTION: &str = "rtx_context_invoke_with_done";
    if done.is_null() {
        return catch_error(|| Err(invalid_argument(format!("{FUNCTION}: argument 'done' is NULL"))));
    }
    // SAFETY: forwarded from the caller, who upholds this function's contract; `done` is not NULL.
    unsafe { invoke(FUNCTION, context, function, args, num_args, results, num_results, Some(done)) }
}

/// Calls `function` (named as for `rtx_context_invoke`) with `num_args` tensors and waits for
/// its tensor results: the synchronous form of `rtx_context_invoke` for functions whose declared
/// arguments and results are all tensors (`r`), with buffer views in and out and no async values
/// — one call instead of values made, invoked, awaited, read and released, for hosts that would
/// block on the results anyway (the Python package's `invoke`).
///
/// A bytecode function runs on the calling thread, as IREE's bindings run it, whatever the
/// context's work queue (its dispatches still go to the device: inline on `local-sync`, to the
/// CPU workers on `local-task`); a `coarse-fences` function gets its own fences and is waited
/// for. A BEF function runs on the context's queue, as `rtx_context_invoke` runs it, while this
/// thread waits (on `"s"` it runs the queue's work meanwhile). The arguments are only read: the
/// caller keeps and releases them.
///
/// On success `results[0..num_results]` receive new buffer views (owned by the caller; release
/// each). On failure nothing is written and the error is what the results of
/// `rtx_context_invoke` would carry, with the same code and message (a `vm.fail`'s status and
/// text with the failing location, the program's INVALID_ARGUMENT for a wrong element type or
/// shape, UNIMPLEMENTED for a ref result that is not a buffer view); and INVALID_ARGUMENT for
/// NULL arguments, `num_args`/`num_results` that differ from the function's declared counts, or a
/// function taking or returning a scalar (call it with `rtx_context_invoke`); NOT_FOUND for no
/// such function; CANCELLED for a cancelled context; FAILED_PRECONDITION on one of the context's
/// worker threads, which must not block. The lookup and count errors name this function; the
/// call's own errors do not, as the results of `rtx_context_invoke` do not. Thread-safe: calls
/// of one context's bytecode functions take turns on its VM state, as slices of
/// `rtx_context_invoke` calls do.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_call(
    context: *mut rtx_context_t,
    function: *const c_char,
    args: *const *mut rtx_buffer_view_t,
    num_args: usize,
    results: *mut *mut rtx_buffer_view_t,
    num_results: usize,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_context_call";
        // SAFETY: forwarded from the caller.
        let context = unsafe { handle::borrow(context, FUNCTION, "context") }?;
        // SAFETY: a non-null name is NUL-terminated by contract.
        let name = unsafe { c_str(function, FUNCTION, "function") }?;
        let function = context.function(name).context(FUNCTION)?;
        check_counts(FUNCTION, &function, num_args == function.declared_arguments(), num_args, num_results, results)?;
        // SAFETY: the caller guarantees `num_args` readable handles at a non-null `args`.
        let arguments = unsafe { handle::clone_all(args, num_args, FUNCTION, "args") }?;
        let views = context.call_tensors(&function, &arguments)?;
        for (index, view) in views.into_iter().enumerate() {
            // SAFETY: `results` has room for `num_results` handles by contract (as many as the
            // function returns, checked above); each is a new reference for the caller.
            unsafe { results.add(index).write(handle::to_handle(view)) };
        }
        Ok(())
    })
}

/// Both entry points: checks the call against the function, starts it, and writes the results
/// (and `done`) only once nothing can fail any more.
///
/// # Safety
/// As `rtx_context_invoke`'s contract; `done`, when given, is writable.
#[allow(clippy::too_many_arguments)]
unsafe fn invoke(
    name_of_entry: &'static str,
    context: *mut rtx_context_t,
    function: *const c_char,
    args: *const *mut rtx_async_value_t,
    num_args: usize,
    results: *mut *mut rtx_async_value_t,
    num_results: usize,
    done: Option<*mut *mut rtx_async_value_t>,
) -> *mut rtx_error_t {
    catch_error(|| {
        let entry = name_of_entry;
        // SAFETY: forwarded from the caller.
        let context = unsafe { handle::borrow(context, entry, "context") }?;
        // SAFETY: a non-null name is NUL-terminated by contract.
        let name = unsafe { c_str(function, entry, "function") }?;
        let function = context.function(name).context(entry)?;
        check_counts(entry, &function, function.accepts_arguments(num_args), num_args, num_results, results)?;
        // SAFETY: the caller guarantees `num_args` readable handles at a non-null `args`.
        let arguments = unsafe { borrow_all(args, num_args, entry) }
            .map_err(|e| e.map_message(|message| message.replace("'values", "'args")))?;
        let (promises, finished) = context.invoke_with_done(&function, &arguments).context(entry)?;
        for (index, promise) in promises.into_iter().enumerate() {
            // SAFETY: `results` has room for `num_results` handles by contract; each is a new
            // reference for the caller. Written only now, when nothing can fail any more.
            unsafe { results.add(index).write(handle::to_handle(promise)) };
        }
        if let Some(done) = done {
            // SAFETY: checked non-null by the entry point, writable by contract.
            unsafe { done.write(handle::to_handle(finished)) };
        }
        Ok(())
    })
}

/// INVALID_ARGUMENT, naming `entry`, unless the call passes arguments the function accepts
/// (`arguments_accepted`) and room for as many results as it returns.
fn check_counts<T>(
    entry: &str,
    function: &Function,
    arguments_accepted: bool,
    num_args: usize,
    num_results: usize,
    results: *mut *mut T,
) -> Result<(), Diagnostic> {
    if !arguments_accepted || num_results != function.num_results() {
        return Err(invalid_argument(format!(
            "{entry}: {} and returns {}, but the call passes num_args = {num_args} and num_results = {num_results}",
            function.describe_arguments(),
            plural(function.num_results(), "result"),
        )));
    }
    if results.is_null() && num_results != 0 {
        return Err(invalid_argument(format!("{entry}: argument 'results' is NULL but num_results is {num_results}")));
    }
    Ok(())
}
