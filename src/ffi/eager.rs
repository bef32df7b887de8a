//! Eager ops: `rtx_op_attrs_t`, the attributes of one op built by name, and
//! `rtx_context_execute_op`, which runs one op by name through a context's op handler (`cpu`
//! unless named) without blocking, as `rtx_context_invoke` runs a function.

use std::ffi::c_char;
use std::sync::{Arc, Mutex, PoisonError};

use super::async_value::rtx_async_value_t;
use super::buffer_view::rtx_buffer_view_t;
use super::context::rtx_context_t;
use super::error::rtx_error_t;
use super::handle::{self, Handle, OwnershipBox};
use super::{c_str, catch_error, catch_or};
use crate::host::{Diagnostic, ResultExt};
use crate::runtime::{DType, OpAttr, OpAttrs};

/// Attributes of an op, by name. Create with `rtx_op_attrs_new`, set with `rtx_op_attrs_set_*`,
/// pass to any number of `rtx_context_execute_op` calls (each keeps what the attributes were
/// then), free with `rtx_op_attrs_release`. Setting a name that is set already keeps the first
/// value, as TFRT's op attributes do. Not thread-safe while being set.
#[allow(non_camel_case_types)]
pub struct rtx_op_attrs {
    _private: [u8; 0],
}

/// The handle type C sees.
#[allow(non_camel_case_types)]
pub type rtx_op_attrs_t = rtx_op_attrs;

/// What an `rtx_op_attrs_t` owns: the attributes, shared with the calls that were given them.
pub struct CAttrs {
    attrs: Mutex<Arc<OpAttrs>>,
}

impl Handle for rtx_op_attrs {
    type RustType = CAttrs;
    type Ownership = OwnershipBox;
}

/// Creates an empty set of attributes; `*out` receives it (free it with `rtx_op_attrs_release`).
#[no_mangle]
pub unsafe extern "C" fn rtx_op_attrs_new(out: *mut *mut rtx_op_attrs_t) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_op_attrs_new";
        if out.is_null() {
            return Err(super::invalid_argument(format!("{FUNCTION}: argument 'out' is NULL")));
        }
        let attrs = CAttrs { attrs: Mutex::new(Arc::default()) };
        // SAFETY: `out` is non-null and writable by contract.
        unsafe { out.write(handle::box_to_handle(attrs)) };
        Ok(())
    })
}

/// Frees `attrs`; calls already given them keep what they hold. NULL does nothing.
#[no_mangle]
pub unsafe extern "C" fn rtx_op_attrs_release(attrs: *mut rtx_op_attrs_t) {
    // SAFETY: a non-null `attrs` is the caller's to free, once, by contract.
    catch_or((), || drop(unsafe { handle::take_box(attrs) }))
}

/// Sets attribute `name` of `attrs` to what `value` makes.
///
/// # Safety
/// `attrs` is NULL or live; `name` is NULL or NUL-terminated.
unsafe fn set(
    attrs: *mut rtx_op_attrs_t,
    name: *const c_char,
    function: &str,
    value: impl FnOnce() -> Result<OpAttr, Diagnostic>,
) -> *mut rtx_error_t {
    catch_error(|| {
        // SAFETY: forwarded from the caller.
        let attrs = unsafe { handle::borrow(attrs, function, "attrs") }?;
        // SAFETY: forwarded from the caller.
        let name = unsafe { c_str(name, function, "name") }?;
        let value = value().context(function)?;
        Arc::make_mut(&mut attrs.attrs.lock().unwrap_or_else(PoisonError::into_inner)).set(name, value);
        Ok(())
    })
}

/// The `count` elements at `values`, the argument named `argument` (NULL only when `count` is 0).
///
/// # Safety
/// A non-null `values` points to `count` readable elements that outlive `'a`.
unsafe fn elements<'a, T>(
    values: *const T,
    count: usize,
    function: &str,
    argument: &str,
) -> Result<&'a [T], Diagnostic> {
    if count == 0 {
        return Ok(&[]);
    }
    if values.is_null() {
        return Err(super::invalid_argument(format!(
            "{function}: argument '{argument}' is NULL but its count is {count}"
        )));
    }
    // SAFETY: non-null, `count` readable elements by contract.
    Ok(unsafe { std::slice::from_raw_parts(values, count) })
}

/// The `count` elements at `values` as an array attribute of `dtype`, each written by `bytes`.
///
/// # Safety
/// As [`elements`].
unsafe fn array<T: Copy, const N: usize>(
    values: *const T,
    count: usize,
    function: &str,
    dtype: DType,
    bytes: fn(T) -> [u8; N],
) -> Result<OpAttr, Diagnostic> {
    // SAFETY: forwarded from the caller.
    let elements = unsafe { elements(values, count, function, "values") }?;
    Ok(OpAttr::Array { dtype, bytes: elements.iter().flat_map(|&e| bytes(e)).collect() })
}

/// Sets `name` to a 64-bit integer (ONNX's integer attributes: `axis`, `transB`).
#[no_mangle]
pub unsafe extern "C" fn rtx_op_attrs_set_i64(
    attrs: *mut rtx_op_attrs_t,
    name: *const c_char,
    value: i64,
) -> *mut rtx_error_t {
    // SAFETY: forwarded from the caller.
    unsafe { set(attrs, name, "rtx_op_attrs_set_i64", || Ok(OpAttr::I64(value))) }
}

/// Sets `name` to a 32-bit integer (TFRT's test ops: `axis`).
#[no_mangle]
pub unsafe extern "C" fn rtx_op_attrs_set_i32(
    attrs: *mut rtx_op_attrs_t,
    name: *const c_char,
    value: i32,
) -> *mut rtx_error_t {
    // SAFETY: forwarded from the caller.
    unsafe { set(attrs, name, "rtx_op_attrs_set_i32", || Ok(OpAttr::I32(value))) }
}

/// Sets `name` to a 32-bit float (ONNX's float attributes: `alpha`, `epsilon`).
#[no_mangle]
pub unsafe extern "C" fn rtx_op_attrs_set_f32(
    attrs: *mut rtx_op_attrs_t,
    name: *const c_char,
    value: f32,
) -> *mut rtx_error_t {
    // SAFETY: forwarded from the caller.
    unsafe { set(attrs, name, "rtx_op_attrs_set_f32", || Ok(OpAttr::F32(value))) }
}

/// Sets `name` to a 64-bit float.
#[no_mangle]
pub unsafe extern "C" fn rtx_op_attrs_set_f64(
    attrs: *mut rtx_op_attrs_t,
    name: *const c_char,
    value: f64,
) -> *mut rtx_error_t {
    // SAFETY: forwarded from the caller.
    unsafe { set(attrs, name, "rtx_op_attrs_set_f64", || Ok(OpAttr::F64(value))) }
}

/// Sets `name` to a boolean.
#[no_mangle]
pub unsafe extern "C" fn rtx_op_attrs_set_bool(
    attrs: *mut rtx_op_attrs_t,
    name: *const c_char,
    value: bool,
) -> *mut rtx_error_t {
    // SAFETY: forwarded from the caller.
    unsafe { set(attrs, name, "rtx_op_attrs_set_bool", || Ok(OpAttr::Bool(value))) }
}

/// Sets `name` to a copy of the NUL-terminated UTF-8 string `value`.
#[no_mangle]
pub unsafe extern "C" fn rtx_op_attrs_set_string(
    attrs: *mut rtx_op_attrs_t,
    name: *const c_char,
    value: *const c_char,
) -> *mut rtx_error_t {
    const FUNCTION: &str = "rtx_op_attrs_set_string";
    // SAFETY: forwarded from the caller.
    unsafe {
        set(attrs, name, FUNCTION, || {
            // SAFETY: a non-null `value` is NUL-terminated by contract.
            Ok(OpAttr::String(c_str(value, FUNCTION, "value")?.to_owned()))
        })
    }
}

/// Sets `name` to an element type, given as an IREE HAL element type code (as
/// `rtx_buffer_view_new` takes); INVALID_ARGUMENT for a code rtx's tensors do not hold.
#[no_mangle]
pub unsafe extern "C" fn rtx_op_attrs_set_dtype(
    attrs: *mut rtx_op_attrs_t,
    name: *const c_char,
    element_type: u32,
) -> *mut rtx_error_t {
    // SAFETY: forwarded from the caller.
    unsafe {
        set(attrs, name, "rtx_op_attrs_set_dtype", || {
            let element_type = crate::runtime::ElementType(element_type);
            Ok(OpAttr::DType(crate::runtime::bridge::tensors::dtype(element_type)?))
        })
    }
}

/// Sets `name` to a shape of `rank` dimensions at `dims` (-1 for one not known).
#[no_mangle]
pub unsafe extern "C" fn rtx_op_attrs_set_shape(
    attrs: *mut rtx_op_attrs_t,
    name: *const c_char,
    dims: *const i64,
    rank: usize,
) -> *mut rtx_error_t {
    const FUNCTION: &str = "rtx_op_attrs_set_shape";
    // SAFETY: forwarded from the caller.
    unsafe {
        set(attrs, name, FUNCTION, || {
            // SAFETY: `dims` points to `rank` elements by contract.
            Ok(OpAttr::Shape(Some(elements(dims, rank, FUNCTION, "dims")?.to_vec())))
        })
    }
}

/// Sets `name` to the `count` 64-bit integers at `values` (ONNX's `perm`, `pads`, `shape`).
#[no_mangle]
pub unsafe extern "C" fn rtx_op_attrs_set_i64_array(
    attrs: *mut rtx_op_attrs_t,
    name: *const c_char,
    values: *const i64,
    count: usize,
) -> *mut rtx_error_t {
    // SAFETY: forwarded from the caller; `values` points to `count` elements by contract.
    unsafe {
        set(attrs, name, "rtx_op_attrs_set_i64_array", || {
            array(values, count, "rtx_op_attrs_set_i64_array", DType::I64, i64::to_le_bytes)
        })
    }
}

/// Sets `name` to the `count` 32-bit integers at `values`.
#[no_mangle]
pub unsafe extern "C" fn rtx_op_attrs_set_i32_array(
    attrs: *mut rtx_op_attrs_t,
    name: *const c_char,
    values: *const i32,
    count: usize,
) -> *mut rtx_error_t {
    // SAFETY: forwarded from the caller; `values` points to `count` elements by contract.
    unsafe {
        set(attrs, name, "rtx_op_attrs_set_i32_array", || {
            array(values, count, "rtx_op_attrs_set_i32_array", DType::I32, i32::to_le_bytes)
        })
    }
}

/// Sets `name` to the `count` 32-bit floats at `values`.
#[no_mangle]
pub unsafe extern "C" fn rtx_op_attrs_set_f32_array(
    attrs: *mut rtx_op_attrs_t,
    name: *const c_char,
    values: *const f32,
    count: usize,
) -> *mut rtx_error_t {
    // SAFETY: forwarded from the caller; `values` points to `count` elements by contract.
    unsafe {
        set(attrs, name, "rtx_op_attrs_set_f32_array", || {
            array(values, count, "rtx_op_attrs_set_f32_array", DType::F32, f32::to_le_bytes)
        })
    }
}

/// Runs op `op_name` through the op handler registered as `op_handler` (NULL: `"cpu"`, which
/// every context has: TFRT's cpu ops, then every kernel of the context — the `nn.*` layers, the
/// `onnx.*` operators, the tensor kernels, the host's — run as a one-op function) on `num_args`
/// tensors, with `attrs` (NULL: none). Does not block: on success `results[0..num_results]`
/// receive new, unavailable values (owned by the caller; release each) that become the result
/// tensors — read them with `rtx_async_value_get_buffer_view` (or the string-tensor getters) —
/// or their errors, which name the op (a wrong element type or shape, an error argument).
///
/// Each argument is an async value holding a buffer view (`rtx_async_value_new_buffer_view`), a
/// string tensor, or a result of an earlier `rtx_context_execute_op` (possibly still
/// unavailable: ops chain without waiting). Arguments are only read.
///
/// Fails at once, writing nothing, when the handler or the op is unknown (NOT_FOUND,
/// UNIMPLEMENTED, naming them), or for NULL arguments. UNIMPLEMENTED in a build without the
/// `tfrt` feature. Thread-safe.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn rtx_context_execute_op(
    context: *mut rtx_context_t,
    op_handler: *const c_char,
    op_name: *const c_char,
    args: *const *mut rtx_async_value_t,
    num_args: usize,
    attrs: *const rtx_op_attrs_t,
    results: *mut *mut rtx_async_value_t,
    num_results: usize,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_context_execute_op";
        // SAFETY: forwarded from the caller.
        let context = unsafe { handle::borrow(context, FUNCTION, "context") }?;
        // SAFETY: forwarded from the caller.
        let (handler, op) = unsafe { names(op_handler, op_name, FUNCTION) }?;
        // SAFETY: the caller guarantees `num_args` readable handles at a non-null `args`.
        let arguments = unsafe { super::async_value::borrow_all(args, num_args, FUNCTION) }
            .map_err(|e| e.map_message(|message| message.replace("'values", "'args")))?;
        if results.is_null() && num_results != 0 {
            return Err(super::invalid_argument(format!(
                "{FUNCTION}: argument 'results' is NULL but num_results is {num_results}"
            )));
        }
        #[cfg(feature = "tfrt")]
        {
            // SAFETY: a non-null `attrs` is live by contract.
            let attrs = unsafe { handle::borrow_opt(attrs) }
                .map(|attrs| Arc::clone(&attrs.attrs.lock().unwrap_or_else(PoisonError::into_inner)));
            let values =
                context.execute_op_values(handler, op, &arguments, attrs.as_ref(), num_results).context(FUNCTION)?;
            for (index, value) in values.into_iter().enumerate() {
                // SAFETY: `results` has room for `num_results` handles by contract; each is a new
                // reference for the caller, written once nothing can fail any more.
                unsafe { results.add(index).write(handle::to_handle(value)) };
            }
            Ok(())
        }
        #[cfg(not(feature = "tfrt"))]
        {
            let _ = (context, handler, op, arguments, attrs);
            Err(crate::runtime::left_out("tfrt", format_args!("{FUNCTION} (eager ops run through Core Runtime)")))
        }
    })
}

/// Runs op `op_name` as `rtx_context_execute_op` does on `num_args` buffer views and waits for it:
/// on success `results[0..num_results]` receive new buffer views (owned by the caller; release
/// each). The synchronous form, one call instead of values made, run, awaited, read and
/// released, for hosts that would block on the results anyway (the Python package's
/// `execute_op`). Every result must be a tensor of numbers. On failure nothing is written: the
/// error is the op's (naming it), or as `rtx_context_execute_op`'s. The arguments are only read.
/// FAILED_PRECONDITION on one of the context's worker threads. UNIMPLEMENTED in a build without
/// the `tfrt` feature. Thread-safe.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn rtx_context_call_op(
    context: *mut rtx_context_t,
    op_handler: *const c_char,
    op_name: *const c_char,
    args: *const *mut rtx_buffer_view_t,
    num_args: usize,
    attrs: *const rtx_op_attrs_t,
    results: *mut *mut rtx_buffer_view_t,
    num_results: usize,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_context_call_op";
        // SAFETY: forwarded from the caller.
        let context = unsafe { handle::borrow(context, FUNCTION, "context") }?;
        // SAFETY: forwarded from the caller.
        let (handler, op) = unsafe { names(op_handler, op_name, FUNCTION) }?;
        // SAFETY: the caller guarantees `num_args` readable handles at a non-null `args`.
        let arguments = unsafe { handle::clone_all(args, num_args, FUNCTION, "args") }?;
        if results.is_null() && num_results != 0 {
            return Err(super::invalid_argument(format!(
                "{FUNCTION}: argument 'results' is NULL but num_results is {num_results}"
            )));
        }
        #[cfg(feature = "tfrt")]
        {
            // SAFETY: a non-null `attrs` is live by contract.
            let attrs = unsafe { handle::borrow_opt(attrs) }
                .map(|attrs| Arc::clone(&attrs.attrs.lock().unwrap_or_else(PoisonError::into_inner)));
            let views = context.call_op(handler, op, &arguments, attrs.as_ref(), num_results)?;
            for (index, view) in views.into_iter().enumerate() {
                // SAFETY: `results` has room for `num_results` handles by contract; each is a new
                // reference for the caller, written once nothing can fail any more.
                unsafe { results.add(index).write(handle::to_handle(view)) };
            }
            Ok(())
        }
        #[cfg(not(feature = "tfrt"))]
        {
            let _ = (context, handler, op, arguments, attrs);
            Err(crate::runtime::left_out("tfrt", format_args!("{FUNCTION} (eager ops run through Core Runtime)")))
        }
    })
}

/// The op handler's name (NULL: `"cpu"`) and the op's.
///
/// # Safety
/// Each non-null pointer is NUL-terminated.
unsafe fn names<'a>(
    op_handler: *const c_char,
    op_name: *const c_char,
    function: &str,
) -> Result<(&'a str, &'a str), Diagnostic> {
    let handler = if op_handler.is_null() {
        "cpu"
    } else {
        // SAFETY: a non-null name is NUL-terminated by contract.
        unsafe { c_str(op_handler, function, "op_handler") }?
    };
    // SAFETY: a non-null name is NUL-terminated by contract.
    Ok((handler, unsafe { c_str(op_name, function, "op_name") }?))
}

/// Makes the BEF function `function` (named as for `rtx_context_invoke`, in a module added to the
/// context) the op `op_name` of the context's `cpu` handler, which `rtx_context_execute_op` and
/// BEF programs' `corert.executeop` then run: it takes a chain and tensor handles
/// (`!corert.tensorhandle`) and returns a chain and tensor handles. NOT_FOUND for an unknown
/// function; INVALID_ARGUMENT for a function of another signature or a VM function;
/// ALREADY_EXISTS for a name taken by a composite op or a kernel. UNIMPLEMENTED in a build
/// without the `tfrt` feature. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_register_composite_op(
    context: *mut rtx_context_t,
    op_name: *const c_char,
    function: *const c_char,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_context_register_composite_op";
        // SAFETY: forwarded from the caller.
        let context = unsafe { handle::borrow(context, FUNCTION, "context") }?;
        // SAFETY: non-null names are NUL-terminated by contract.
        let (name, function) =
            unsafe { (c_str(op_name, FUNCTION, "op_name")?, c_str(function, FUNCTION, "function")?) };
        #[cfg(feature = "tfrt")]
        return context.register_composite_op(name, function).context(FUNCTION);
        #[cfg(not(feature = "tfrt"))]
        {
            let _ = (context, name, function);
            Err(crate::runtime::left_out("tfrt", format_args!("{FUNCTION} (composite ops are BEF functions)")))
        }
    })
}
