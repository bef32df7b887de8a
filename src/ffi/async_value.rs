//! `rtx_async_value_t`: AsyncValues for C hosts. A handle is the value's own address (no wrapper
//! allocation); `_retain`/`_release` are its reference count. Every function is thread-safe.

use std::ffi::c_char;
use std::sync::Arc;

use smallvec::SmallVec;

use super::buffer_view::rtx_buffer_view_t;
use super::context::rtx_context_t;
use super::error::rtx_error_t;
use super::handle::{self, Handle, OwnershipAsyncValue};
use super::{catch_error, catch_or, invalid_argument, message_arg, Callback, UserData};
use crate::host::{join, AsyncValueRef, Chain, Diagnostic, IndirectAsyncValue, RcAsyncValue, ResultExt, StatusCode};
use crate::runtime::bridge::tensors::ViewSequence;
use crate::runtime::{BufferView, DenseHostTensor, NoValue, Sequence, StringHostTensor, TensorShape};

/// An AsyncValue: unavailable, a concrete scalar/chain, or an error. Opaque; reference counted.
#[allow(non_camel_case_types)]
pub struct rtx_async_value {
    _private: [u8; 0],
}

/// The handle type C sees.
#[allow(non_camel_case_types)]
pub type rtx_async_value_t = rtx_async_value;

impl Handle for rtx_async_value {
    type RustType = RcAsyncValue;
    type Ownership = OwnershipAsyncValue;
}

/// What a value holds, as far as C can tell.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum rtx_value_type_t {
    /// Not available yet: the type is decided by whoever sets it.
    RTX_VALUE_TYPE_UNAVAILABLE = 0,
    RTX_VALUE_TYPE_ERROR = 1,
    RTX_VALUE_TYPE_I1 = 2,
    RTX_VALUE_TYPE_I32 = 3,
    RTX_VALUE_TYPE_I64 = 4,
    RTX_VALUE_TYPE_F32 = 5,
    RTX_VALUE_TYPE_F64 = 6,
    RTX_VALUE_TYPE_CHAIN = 7,
    /// A payload C has no accessor for (created by the runtime for its own use).
    RTX_VALUE_TYPE_OTHER = 8,
    /// A tensor (a buffer view, or a kernel graph's dense host tensor): read it with
    /// `rtx_async_value_get_buffer_view`.
    RTX_VALUE_TYPE_BUFFER_VIEW = 9,
    /// A sequence of tensors (an ONNX sequence): read it with
    /// `rtx_async_value_get_sequence_length` and `rtx_async_value_get_sequence_element`.
    RTX_VALUE_TYPE_SEQUENCE = 10,
    /// An empty optional (an ONNX optional without a value; one with a value is that value).
    RTX_VALUE_TYPE_NONE = 11,
    /// A tensor of strings (an ONNX STRING tensor): read it with
    /// `rtx_async_value_get_string_tensor_shape` and `rtx_async_value_get_string_tensor_element`.
    RTX_VALUE_TYPE_STRING_TENSOR = 12,
}

/// Borrows every handle of a C array, naming the first NULL one (`values[i]`).
///
/// # Safety
/// `values` must point to `count` handles (or be NULL with `count == 0`).
pub(crate) unsafe fn borrow_all(
    values: *const *mut rtx_async_value_t,
    count: usize,
    function: &str,
) -> Result<SmallVec<[RcAsyncValue; 4]>, Diagnostic> {
    // SAFETY: forwarded from the caller.
    unsafe { handle::clone_all(values, count, function, "values") }
}

fn new_available<T: Send + Sync + 'static>(payload: T) -> *mut rtx_async_value_t {
    catch_or(std::ptr::null_mut(), || handle::to_handle(AsyncValueRef::available(payload).into_untyped()))
}

/// # Safety
/// A non-null `value` must be a live value handle.
unsafe fn set<T: Send + Sync + 'static>(value: *mut rtx_async_value_t, payload: T, function: &str) -> *mut rtx_error_t {
    catch_error(|| {
        // SAFETY: forwarded from the caller.
        let value = unsafe { handle::borrow(value, function, "value") }?;
        value.emplace(payload).map_err(|e| e.into_diagnostic().context(function))
    })
}

/// # Safety
/// A non-null `value` must be a live value handle; a non-null `out` must be writable.
unsafe fn get<T: Copy + 'static>(value: *const rtx_async_value_t, out: *mut T, function: &str) -> *mut rtx_error_t {
    catch_error(|| {
        // SAFETY: forwarded from the caller.
        let value = unsafe { handle::borrow(value, function, "value") }?;
        if out.is_null() {
            return Err(invalid_argument(format!("{function}: argument 'out' is NULL")));
        }
        let payload = *value.try_get::<T>().map_err(|e| match e {
            // The value's own error goes back unchanged, so C sees the producer's code and message.
            crate::host::async_value::AccessError::IsError(diagnostic) => diagnostic,
            other => other.into_diagnostic().context(function),
        })?;
        // SAFETY: `out` is non-null and writable by contract; written only on success.
        unsafe { out.write(payload) };
        Ok(())
    })
}

/// A new available `i1` (boolean) value. Never NULL: like every rtx allocation, running out of
/// memory aborts the process (Rust's allocation-failure policy).
#[no_mangle]
pub extern "C" fn rtx_async_value_new_i1(value: bool) -> *mut rtx_async_value_t {
    new_available(value)
}

/// A new available `i32` value.
#[no_mangle]
pub extern "C" fn rtx_async_value_new_i32(value: i32) -> *mut rtx_async_value_t {
    new_available(value)
}

/// A new available `i64` value.
#[no_mangle]
pub extern "C" fn rtx_async_value_new_i64(value: i64) -> *mut rtx_async_value_t {
    new_available(value)
}

/// A new available `f32` value.
#[no_mangle]
pub extern "C" fn rtx_async_value_new_f32(value: f32) -> *mut rtx_async_value_t {
    new_available(value)
}

/// A new available `f64` value.
#[no_mangle]
pub extern "C" fn rtx_async_value_new_f64(value: f64) -> *mut rtx_async_value_t {
    new_available(value)
}

/// A new available chain (an ordering token without data).
#[no_mangle]
pub extern "C" fn rtx_async_value_new_chain() -> *mut rtx_async_value_t {
    new_available(Chain)
}

/// A new available value holding `view` (a tensor), for a tensor argument of
/// `rtx_context_invoke`. The value takes a reference of its own: the caller keeps (and still
/// releases) `view`. NULL if `view` is NULL.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_new_buffer_view(view: *mut rtx_buffer_view_t) -> *mut rtx_async_value_t {
    catch_or(std::ptr::null_mut(), || {
        // SAFETY: forwarded from the caller.
        let Ok(view) = (unsafe { handle::clone(view, "", "") }) else { return std::ptr::null_mut() };
        handle::to_handle(AsyncValueRef::available(view).into_untyped())
    })
}

/// A new available sequence of the tensors `views[0..count]` (an ONNX sequence), for an argument
/// of `rtx_context_invoke` to a kernel graph that takes one. The value takes a reference of its
/// own to each view: the caller keeps (and still releases) them. NULL if a view is NULL, or
/// `views` is NULL while `count` is not 0.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_new_sequence(
    views: *const *mut rtx_buffer_view_t,
    count: usize,
) -> *mut rtx_async_value_t {
    catch_or(std::ptr::null_mut(), || {
        if views.is_null() && count > 0 {
            return std::ptr::null_mut();
        }
        let mut held = Vec::with_capacity(count);
        for i in 0..count {
            // SAFETY: `views` points to `count` handles by contract.
            let Ok(view) = (unsafe { handle::clone(*views.add(i), "", "") }) else { return std::ptr::null_mut() };
            held.push(view);
        }
        handle::to_handle(AsyncValueRef::available(ViewSequence(held)).into_untyped())
    })
}

/// A new available empty optional (an ONNX optional without a value), for an argument of
/// `rtx_context_invoke`. An optional that holds a value is passed as that value.
#[no_mangle]
pub extern "C" fn rtx_async_value_new_none() -> *mut rtx_async_value_t {
    new_available(NoValue)
}

/// A new available tensor of strings (an ONNX STRING tensor) of shape `dims[0..rank]`, for an
/// argument of `rtx_context_invoke` to a kernel graph that takes one. Its `count` elements, in
/// row-major order, are `strings[i]` of `lengths[i]` bytes each (UTF-8, not NUL-terminated; a
/// string of length 0 may be NULL); they are copied. NULL if `dims` is NULL while `rank` is not 0,
/// `strings` or `lengths` is NULL while `count` is not 0, a dimension is negative, `count` is not
/// the shape's number of elements, a string is NULL with a length, or a string is not UTF-8.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_new_string_tensor(
    dims: *const i64,
    rank: usize,
    strings: *const *const c_char,
    lengths: *const usize,
    count: usize,
) -> *mut rtx_async_value_t {
    catch_or(std::ptr::null_mut(), || {
        if (dims.is_null() && rank > 0) || ((strings.is_null() || lengths.is_null()) && count > 0) {
            return std::ptr::null_mut();
        }
        // SAFETY: `dims` points to `rank` dimensions by contract (or is unused when 0).
        let dims = if rank == 0 { Vec::new() } else { unsafe { std::slice::from_raw_parts(dims, rank) }.to_vec() };
        let Ok(shape) = TensorShape::new(dims) else { return std::ptr::null_mut() };
        if shape.num_elements() != i64::try_from(count).ok() {
            return std::ptr::null_mut();
        }
        let mut held = Vec::new();
        if held.try_reserve_exact(count).is_err() {
            return std::ptr::null_mut();
        }
        for i in 0..count {
            // SAFETY: `strings` and `lengths` point to `count` entries by contract.
            let (data, length) = unsafe { (*strings.add(i), *lengths.add(i)) };
            let bytes = match (data.is_null(), length) {
                (_, 0) => &[][..],
                (true, _) => return std::ptr::null_mut(),
                // SAFETY: `data` points to `length` readable bytes by contract.
                (false, length) => unsafe { std::slice::from_raw_parts(data.cast::<u8>(), length) },
            };
            let Ok(text) = std::str::from_utf8(bytes) else { return std::ptr::null_mut() };
            held.push(text.to_owned());
        }
        match StringHostTensor::new(shape, held) {
            Ok(tensor) => new_available(tensor),
            Err(_) => std::ptr::null_mut(),
        }
    })
}

/// A new unavailable value (a promise). Any `rtx_async_value_set_*` makes it available with that
/// type; `rtx_async_value_set_error` makes it an error.
#[no_mangle]
pub extern "C" fn rtx_async_value_new_unavailable() -> *mut rtx_async_value_t {
    catch_or(std::ptr::null_mut(), || handle::to_handle(RcAsyncValue::unavailable_slot()))
}

/// A new unavailable value that is completed by forwarding it to another value
/// (`rtx_async_value_forward`), e.g. a result whose producer is not known yet.
#[no_mangle]
pub extern "C" fn rtx_async_value_new_indirect() -> *mut rtx_async_value_t {
    catch_or(std::ptr::null_mut(), || handle::to_handle(IndirectAsyncValue::new().value()))
}

/// A new error value with `code` (an `RTX_STATUS_CODE_*`) and `message` (copied; NULL = empty).
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_new_error(code: u32, message: *const c_char) -> *mut rtx_async_value_t {
    catch_or(std::ptr::null_mut(), || {
        // SAFETY: a non-null message is NUL-terminated by contract.
        let message = unsafe { message_arg(message) };
        handle::to_handle(RcAsyncValue::error(Diagnostic::new(
            StatusCode::from_u32(code).unwrap_or(StatusCode::Unknown),
            message,
        )))
    })
}

/// Makes an unavailable value an available `i1`. FAILED_PRECONDITION if it is already available
/// (or being set by another thread); INVALID_ARGUMENT if `value` is NULL or was created for
/// another type. Waiters run on this thread before the call returns.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_set_i1(value: *mut rtx_async_value_t, v: bool) -> *mut rtx_error_t {
    // SAFETY: forwarded from the caller.
    unsafe { set(value, v, "rtx_async_value_set_i1") }
}

/// As `rtx_async_value_set_i1`, for `i32`.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_set_i32(value: *mut rtx_async_value_t, v: i32) -> *mut rtx_error_t {
    // SAFETY: forwarded from the caller.
    unsafe { set(value, v, "rtx_async_value_set_i32") }
}

/// As `rtx_async_value_set_i1`, for `i64`.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_set_i64(value: *mut rtx_async_value_t, v: i64) -> *mut rtx_error_t {
    // SAFETY: forwarded from the caller.
    unsafe { set(value, v, "rtx_async_value_set_i64") }
}

/// As `rtx_async_value_set_i1`, for `f32`.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_set_f32(value: *mut rtx_async_value_t, v: f32) -> *mut rtx_error_t {
    // SAFETY: forwarded from the caller.
    unsafe { set(value, v, "rtx_async_value_set_f32") }
}

/// As `rtx_async_value_set_i1`, for `f64`.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_set_f64(value: *mut rtx_async_value_t, v: f64) -> *mut rtx_error_t {
    // SAFETY: forwarded from the caller.
    unsafe { set(value, v, "rtx_async_value_set_f64") }
}

/// As `rtx_async_value_set_i1`, making the value an available chain.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_set_chain(value: *mut rtx_async_value_t) -> *mut rtx_error_t {
    // SAFETY: forwarded from the caller.
    unsafe { set(value, Chain, "rtx_async_value_set_chain") }
}

/// As `rtx_async_value_set_i1`, making the value hold `view` (a tensor). The value takes a
/// reference of its own: the caller keeps (and still releases) `view`. INVALID_ARGUMENT for a
/// NULL `view`.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_set_buffer_view(
    value: *mut rtx_async_value_t,
    view: *mut rtx_buffer_view_t,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_async_value_set_buffer_view";
        // SAFETY: forwarded from the caller.
        let view = unsafe { handle::clone(view, FUNCTION, "view") }?;
        // SAFETY: forwarded from the caller.
        let error = unsafe { set(value, view, FUNCTION) };
        // SAFETY: NULL or an error `set` just returned, taken over once.
        unsafe { super::error::take(error) }.map_or(Ok(()), Err)
    })
}

/// Makes an unavailable value an error with code `RTX_STATUS_CODE_INTERNAL` and `message`
/// (copied; NULL = empty). Does nothing if `value` is NULL or already available; use
/// `rtx_async_value_set_error_code` to learn whether it took effect.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_set_error(value: *mut rtx_async_value_t, message: *const c_char) {
    // SAFETY: forwarded from the caller.
    let error = unsafe { rtx_async_value_set_error_code(value, StatusCode::Internal as u32, message) };
    // SAFETY: `error` is NULL or ours to free.
    unsafe { super::error::rtx_error_delete(error) };
}

/// Makes an unavailable value an error with `code` and `message` (copied; NULL = empty).
/// FAILED_PRECONDITION if the value is already available.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_set_error_code(
    value: *mut rtx_async_value_t,
    code: u32,
    message: *const c_char,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_async_value_set_error_code";
        // SAFETY: forwarded from the caller.
        let value = unsafe { handle::borrow(value, FUNCTION, "value") }?;
        // SAFETY: a non-null message is NUL-terminated by contract.
        let message = unsafe { message_arg(message) };
        let code = StatusCode::from_u32(code).unwrap_or(StatusCode::Unknown);
        value.set_error(Diagnostic::new(code, message)).map_err(|e| e.into_diagnostic().context(FUNCTION))
    })
}

/// Completes an indirect value (`rtx_async_value_new_indirect`) as an alias of `target`, now or
/// when `target` becomes available. INVALID_ARGUMENT if `indirect` is not an indirect value or
/// `target` is `indirect` itself; FAILED_PRECONDITION if it was already forwarded.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_forward(
    indirect: *mut rtx_async_value_t,
    target: *mut rtx_async_value_t,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_async_value_forward";
        // SAFETY: forwarded from the caller.
        let indirect = unsafe { handle::borrow(indirect, FUNCTION, "indirect") }?;
        // SAFETY: forwarded from the caller.
        let target = unsafe { handle::borrow(target, FUNCTION, "target") }?;
        if !indirect.is_indirect() {
            return Err(invalid_argument(format!(
                "{FUNCTION}: 'indirect' was not created by rtx_async_value_new_indirect"
            )));
        }
        indirect.forward_indirect((*target).clone()).map_err(|e| e.into_diagnostic().context(FUNCTION))
    })
}

/// True if the value is concrete or an error. False for NULL.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_is_available(value: *const rtx_async_value_t) -> bool {
    // SAFETY: forwarded from the caller.
    catch_or(false, || unsafe { handle::borrow_opt(value) }.is_some_and(|v| v.is_available()))
}

/// True if the value is an error. False for NULL.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_is_error(value: *const rtx_async_value_t) -> bool {
    // SAFETY: forwarded from the caller.
    catch_or(false, || unsafe { handle::borrow_opt(value) }.is_some_and(|v| v.is_error()))
}

/// What the value holds now. `RTX_VALUE_TYPE_UNAVAILABLE` for NULL.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_type(value: *const rtx_async_value_t) -> rtx_value_type_t {
    use rtx_value_type_t::*;
    catch_or(RTX_VALUE_TYPE_UNAVAILABLE, || {
        // SAFETY: forwarded from the caller.
        let Some(value) = (unsafe { handle::borrow_opt(value) }) else { return RTX_VALUE_TYPE_UNAVAILABLE };
        if !value.is_available() {
            RTX_VALUE_TYPE_UNAVAILABLE
        } else if value.is_error() {
            RTX_VALUE_TYPE_ERROR
        } else if value.is_type::<bool>() {
            RTX_VALUE_TYPE_I1
        } else if value.is_type::<i32>() {
            RTX_VALUE_TYPE_I32
        } else if value.is_type::<i64>() {
            RTX_VALUE_TYPE_I64
        } else if value.is_type::<f32>() {
            RTX_VALUE_TYPE_F32
        } else if value.is_type::<f64>() {
            RTX_VALUE_TYPE_F64
        } else if value.is_type::<Chain>() {
            RTX_VALUE_TYPE_CHAIN
        } else if value.is_type::<Arc<BufferView>>() || value.is_type::<DenseHostTensor>() {
            RTX_VALUE_TYPE_BUFFER_VIEW
        } else if value.is_type::<Sequence>() || value.is_type::<ViewSequence>() {
            RTX_VALUE_TYPE_SEQUENCE
        } else if value.is_type::<NoValue>() {
            RTX_VALUE_TYPE_NONE
        } else if value.is_type::<StringHostTensor>() {
            RTX_VALUE_TYPE_STRING_TENSOR
        } else {
            RTX_VALUE_TYPE_OTHER
        }
    })
}

/// Reads an `i1`. Returns the value's own error if it is one, FAILED_PRECONDITION if it is not
/// available yet, INVALID_ARGUMENT if it holds another type or an argument is NULL. `*out` is
/// written only on success.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_get_i1(value: *const rtx_async_value_t, out: *mut bool) -> *mut rtx_error_t {
    // SAFETY: forwarded from the caller.
    unsafe { get(value, out, "rtx_async_value_get_i1") }
}

/// As `rtx_async_value_get_i1`, for `i32`.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_get_i32(value: *const rtx_async_value_t, out: *mut i32) -> *mut rtx_error_t {
    // SAFETY: forwarded from the caller.
    unsafe { get(value, out, "rtx_async_value_get_i32") }
}

/// As `rtx_async_value_get_i1`, for `i64`.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_get_i64(value: *const rtx_async_value_t, out: *mut i64) -> *mut rtx_error_t {
    // SAFETY: forwarded from the caller.
    unsafe { get(value, out, "rtx_async_value_get_i64") }
}

/// As `rtx_async_value_get_i1`, for `f32`.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_get_f32(value: *const rtx_async_value_t, out: *mut f32) -> *mut rtx_error_t {
    // SAFETY: forwarded from the caller.
    unsafe { get(value, out, "rtx_async_value_get_f32") }
}

/// As `rtx_async_value_get_i1`, for `f64`.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_get_f64(value: *const rtx_async_value_t, out: *mut f64) -> *mut rtx_error_t {
    // SAFETY: forwarded from the caller.
    unsafe { get(value, out, "rtx_async_value_get_f64") }
}

/// Reads a tensor: writes a new reference to the value's buffer view to `*out_view` (release it
/// with `rtx_buffer_view_release`; it stays valid after the value is released). A dense host
/// tensor (a BEF function's result) gives a view of its own bytes. Errors as
/// `rtx_async_value_get_i1`: the value's own error, FAILED_PRECONDITION if it is not available
/// yet, INVALID_ARGUMENT if it holds something else (the message says what) or an argument is
/// NULL. `*out_view` is written only on success.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_get_buffer_view(
    value: *const rtx_async_value_t,
    out_view: *mut *mut rtx_buffer_view_t,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_async_value_get_buffer_view";
        // SAFETY: forwarded from the caller.
        let value = unsafe { handle::borrow(value, FUNCTION, "value") }?;
        if out_view.is_null() {
            return Err(invalid_argument(format!("{FUNCTION}: argument 'out_view' is NULL")));
        }
        // A kernel graph's dense host tensor crosses as a view of its own bytes.
        if let Ok(tensor) = value.try_get::<DenseHostTensor>() {
            let view = crate::runtime::bridge::tensors::tensor_to_view(tensor).context(FUNCTION)?;
            // SAFETY: `out_view` is non-null and writable by contract; written only on success.
            unsafe { out_view.write(handle::to_handle(view)) };
            return Ok(());
        }
        let view = value.try_get::<Arc<BufferView>>().map_err(|e| match e {
            // The value's own error goes back unchanged, so C sees the producer's code and message.
            crate::host::async_value::AccessError::IsError(diagnostic) => diagnostic,
            crate::host::async_value::AccessError::WrongType { .. } => invalid_argument(format!(
                "{FUNCTION}: the value holds {}, not a buffer view",
                crate::runtime::invocation::held_type(&value)
            )),
            other => other.into_diagnostic().context(FUNCTION),
        })?;
        // SAFETY: `out_view` is non-null and writable by contract; written only on success.
        unsafe { out_view.write(handle::to_handle(Arc::clone(view))) };
        Ok(())
    })
}

/// The tensors of a sequence value (`RTX_VALUE_TYPE_SEQUENCE`), as buffer views.
fn sequence_views(value: &RcAsyncValue, function: &str) -> Result<Vec<Arc<BufferView>>, Diagnostic> {
    if let Ok(sequence) = value.try_get::<Sequence>() {
        return sequence
            .tensors
            .iter()
            .map(|t| crate::runtime::bridge::tensors::tensor_to_view(t).context(function))
            .collect();
    }
    held::<ViewSequence>(value, function, "a sequence").map(|views| views.0.clone())
}

/// The `T` that `value` holds (`what`, as errors name it): the value's own error, or
/// INVALID_ARGUMENT naming what it holds instead.
fn held<'v, T: 'static>(value: &'v RcAsyncValue, function: &str, what: &str) -> Result<&'v T, Diagnostic> {
    match value.try_get::<T>() {
        Ok(payload) => Ok(payload),
        Err(crate::host::async_value::AccessError::IsError(diagnostic)) => Err(diagnostic),
        Err(crate::host::async_value::AccessError::WrongType { .. }) => Err(invalid_argument(format!(
            "{function}: the value holds {}, not {what}",
            crate::runtime::invocation::held_type(value)
        ))),
        Err(other) => Err(other.into_diagnostic().context(function)),
    }
}

/// Reads the length of a sequence (`RTX_VALUE_TYPE_SEQUENCE`) into `*out`. Errors as
/// `rtx_async_value_get_i1`: the value's own error, FAILED_PRECONDITION if it is not available
/// yet, INVALID_ARGUMENT if it holds something else or an argument is NULL. `*out` is written
/// only on success.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_get_sequence_length(
    value: *const rtx_async_value_t,
    out: *mut usize,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_async_value_get_sequence_length";
        // SAFETY: forwarded from the caller.
        let value = unsafe { handle::borrow(value, FUNCTION, "value") }?;
        if out.is_null() {
            return Err(invalid_argument(format!("{FUNCTION}: argument 'out' is NULL")));
        }
        let length = match value.try_get::<Sequence>() {
            Ok(sequence) => sequence.tensors.len(),
            Err(_) => sequence_views(&value, FUNCTION)?.len(),
        };
        // SAFETY: `out` is non-null and writable by contract; written only on success.
        unsafe { out.write(length) };
        Ok(())
    })
}

/// Reads tensor `index` of a sequence (`RTX_VALUE_TYPE_SEQUENCE`): writes a new reference to its
/// buffer view to `*out_view` (release it with `rtx_buffer_view_release`), as
/// `rtx_async_value_get_buffer_view` does for a tensor. Errors as
/// `rtx_async_value_get_sequence_length`, and OUT_OF_RANGE for an index past the end.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_get_sequence_element(
    value: *const rtx_async_value_t,
    index: usize,
    out_view: *mut *mut rtx_buffer_view_t,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_async_value_get_sequence_element";
        // SAFETY: forwarded from the caller.
        let value = unsafe { handle::borrow(value, FUNCTION, "value") }?;
        if out_view.is_null() {
            return Err(invalid_argument(format!("{FUNCTION}: argument 'out_view' is NULL")));
        }
        let view = match value.try_get::<Sequence>() {
            Ok(sequence) => sequence
                .tensors
                .get(index)
                .map(|t| crate::runtime::bridge::tensors::tensor_to_view(t).context(FUNCTION))
                .transpose()?,
            Err(_) => sequence_views(&value, FUNCTION)?.get(index).cloned(),
        };
        let view = view.ok_or_else(|| {
            Diagnostic::new(StatusCode::OutOfRange, format!("{FUNCTION}: index {index} is past the sequence's end"))
        })?;
        // SAFETY: `out_view` is non-null and writable by contract; written only on success.
        unsafe { out_view.write(handle::to_handle(view)) };
        Ok(())
    })
}

/// The tensor of strings `value` holds (`RTX_VALUE_TYPE_STRING_TENSOR`).
fn string_tensor<'v>(value: &'v RcAsyncValue, function: &str) -> Result<&'v StringHostTensor, Diagnostic> {
    held(value, function, "a tensor of strings")
}

/// Reads the shape of a tensor of strings (`RTX_VALUE_TYPE_STRING_TENSOR`): its rank into
/// `*out_rank` and, when `out_dims` is not NULL, its dimensions into `out_dims[0..rank]`, which
/// has room for `capacity` (INVALID_ARGUMENT if fewer than the rank: call with `out_dims` NULL to
/// learn it). Errors as `rtx_async_value_get_i1`: the value's own error, FAILED_PRECONDITION if it
/// is not available yet, INVALID_ARGUMENT if it holds something else or `value` or `out_rank` is
/// NULL. Nothing is written on error.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_get_string_tensor_shape(
    value: *const rtx_async_value_t,
    out_rank: *mut usize,
    out_dims: *mut i64,
    capacity: usize,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_async_value_get_string_tensor_shape";
        // SAFETY: forwarded from the caller.
        let value = unsafe { handle::borrow(value, FUNCTION, "value") }?;
        if out_rank.is_null() {
            return Err(invalid_argument(format!("{FUNCTION}: argument 'out_rank' is NULL")));
        }
        let tensor = string_tensor(&value, FUNCTION)?;
        let dims = tensor.shape().dims();
        if !out_dims.is_null() {
            if capacity < dims.len() {
                return Err(invalid_argument(format!(
                    "{FUNCTION}: argument 'capacity' is {capacity}, less than the rank {}",
                    dims.len()
                )));
            }
            // SAFETY: `out_dims` has room for `capacity` >= rank dimensions by contract.
            unsafe { std::ptr::copy_nonoverlapping(dims.as_ptr(), out_dims, dims.len()) };
        }
        // SAFETY: `out_rank` is non-null and writable by contract.
        unsafe { out_rank.write(dims.len()) };
        Ok(())
    })
}

/// Reads element `index` (row-major) of a tensor of strings (`RTX_VALUE_TYPE_STRING_TENSOR`):
/// `*out_data` points to its UTF-8 bytes (not NUL-terminated), which the value owns and keeps
/// while the caller holds it, and `*out_length` is their number. Errors as
/// `rtx_async_value_get_string_tensor_shape`, INVALID_ARGUMENT if an out pointer is NULL, and
/// OUT_OF_RANGE for an index past the end.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_get_string_tensor_element(
    value: *const rtx_async_value_t,
    index: usize,
    out_data: *mut *const c_char,
    out_length: *mut usize,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_async_value_get_string_tensor_element";
        // SAFETY: forwarded from the caller.
        let value = unsafe { handle::borrow(value, FUNCTION, "value") }?;
        if out_data.is_null() {
            return Err(invalid_argument(format!("{FUNCTION}: argument 'out_data' is NULL")));
        }
        if out_length.is_null() {
            return Err(invalid_argument(format!("{FUNCTION}: argument 'out_length' is NULL")));
        }
        // The value's own element, which lives as long as the value.
        let tensor = string_tensor(&value, FUNCTION)?;
        let count = tensor.strings().len();
        let text = tensor.strings().get(index).ok_or_else(|| {
            Diagnostic::new(StatusCode::OutOfRange, format!("{FUNCTION}: index {index} is past the {count} strings"))
        })?;
        // SAFETY: both are non-null and writable by contract; written only on success.
        unsafe {
            out_data.write(text.as_ptr().cast());
            out_length.write(text.len());
        }
        Ok(())
    })
}

/// NULL if the value is not an error (or is NULL); otherwise an owned copy of its error, which
/// the caller frees with `rtx_error_delete`.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_get_error(value: *const rtx_async_value_t) -> *mut rtx_error_t {
    catch_or(std::ptr::null_mut(), || {
        // SAFETY: forwarded from the caller.
        match unsafe { handle::borrow_opt(value) } {
            Some(value) => value.get_error().cloned().map_or(std::ptr::null_mut(), super::error::to_handle),
            None => std::ptr::null_mut(),
        }
    })
}

/// Runs `callback(user_data)` exactly once when the value is available (concrete or error): at
/// once on this thread if it already is, else on the thread that sets it, before that setter
/// returns. Callbacks run in the order they were attached, so when an await is already waiting
/// as the value is set, the callbacks attached before it have run by the time it returns (an
/// await that starts after the value is set returns at once, while the setter may still be
/// running them). Does nothing if `value` or `callback` is NULL.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_and_then(
    value: *mut rtx_async_value_t,
    callback: Option<unsafe extern "C" fn(user_data: *mut std::ffi::c_void)>,
    user_data: *mut std::ffi::c_void,
) {
    catch_or((), || {
        // SAFETY: forwarded from the caller.
        let (Some(value), Some(function)) = (unsafe { handle::borrow_opt(value) }, callback) else { return };
        let callback = Callback { function, user_data: UserData(user_data) };
        value.and_then(move || callback.call());
    })
}

/// Runs `callback(user_data)` exactly once, when every one of the `count` values is available
/// (at once if they all are). Does nothing if `callback` is NULL, or if `values` is NULL or holds
/// a NULL while `count > 0`.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_run_when_ready(
    values: *const *mut rtx_async_value_t,
    count: usize,
    callback: Option<unsafe extern "C" fn(user_data: *mut std::ffi::c_void)>,
    user_data: *mut std::ffi::c_void,
) {
    catch_or((), || {
        let Some(function) = callback else { return };
        // SAFETY: forwarded from the caller.
        let Ok(values) = (unsafe { borrow_all(values, count, "") }) else { return };
        let callback = Callback { function, user_data: UserData(user_data) };
        join::run_when_ready(&values, move || callback.call());
    })
}

/// Blocks the calling thread until all `count` values are available (errors count as available:
/// the call still succeeds). Runs the context's queued work meanwhile when its queue is
/// single-threaded (`s`). FAILED_PRECONDITION when called from one of the context's worker
/// threads (it would wait for itself); INVALID_ARGUMENT for NULL arguments.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_await(
    context: *mut rtx_context_t,
    values: *const *mut rtx_async_value_t,
    count: usize,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_async_value_await";
        // SAFETY: forwarded from the caller.
        let context = unsafe { handle::borrow(context, FUNCTION, "context") }?;
        // SAFETY: forwarded from the caller.
        let values = unsafe { borrow_all(values, count, FUNCTION) }?;
        context.await_values(&values)
    })
}

/// Adds a reference and returns `value` (NULL stays NULL).
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_retain(value: *mut rtx_async_value_t) -> *mut rtx_async_value_t {
    // SAFETY: a non-null `value` is a live handle by contract.
    catch_or(value, || unsafe { handle::retain(value) })
}

/// Drops a reference; the last one frees the value. NULL does nothing.
#[no_mangle]
pub unsafe extern "C" fn rtx_async_value_release(value: *mut rtx_async_value_t) {
    // SAFETY: the caller gives up one reference it owns.
    catch_or((), || unsafe { handle::release(value) })
}
