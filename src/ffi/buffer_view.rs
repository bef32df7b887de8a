//! `rtx_buffer_view_t`: a tensor for C hosts — element type, shape and host bytes, the C face of
//! the HAL's `!hal.buffer_view`. It is what `rtx_context_invoke` passes for a function's tensor
//! (`r`) arguments and returns for its tensor results, inside async values.
//!
//! A handle is the `Arc<BufferView>` itself (no wrapper allocation), so the VM's ref to the same
//! view and the C handle share one reference count. Immutable once created (shape, type and
//! length never change), so every function on it is thread-safe.

use std::ffi::c_void;
use std::sync::Arc;

use super::error::rtx_error_t;
use super::handle::{self, Handle, OwnershipArc};
use super::{catch_error, catch_or, check_struct_size, invalid_argument};
use crate::host::{Diagnostic, ResultExt, StatusCode};
use crate::runtime::BufferView;

/// A tensor: element type, shape and a dense row-major copy of host data. Opaque; reference
/// counted; immutable, so every function on it is thread-safe.
#[allow(non_camel_case_types)]
pub struct rtx_buffer_view {
    _private: [u8; 0],
}

/// The handle type C sees.
#[allow(non_camel_case_types)]
pub type rtx_buffer_view_t = rtx_buffer_view;

impl Handle for rtx_buffer_view {
    type RustType = BufferView;
    type Ownership = OwnershipArc;
}

/// Creates a buffer view of `rank` dimensions `shape[0..rank]` (row-major, outermost first) whose
/// elements are of `element_type`, an IREE HAL element type code (`(numerical type << 24) | bit
/// count`: f32 is 0x21000020, i32 0x10000020, si8 0x11000008, i1 0x13000008, f16 0x21000010),
/// from a copy of `byte_length` bytes at `data` (the caller may free them when the call returns).
/// `byte_length` must be exactly what the shape needs: element count × bits per element / 8,
/// rounded up (sub-byte elements are packed). `shape` may be NULL when `rank` is 0 (a scalar
/// tensor of one element), `data` when `byte_length` is 0.
///
/// Errors (INVALID_ARGUMENT, the message naming the argument and the numbers): NULL `out_view`,
/// NULL `shape` with a non-zero `rank`, NULL `data` with a non-zero `byte_length`, a negative
/// dimension, an element type whose bit count is 0, a `byte_length` different from what the shape
/// needs. RESOURCE_EXHAUSTED when the memory cannot be allocated. `*out_view` is written only on
/// success; release it with `rtx_buffer_view_release`.
#[no_mangle]
pub unsafe extern "C" fn rtx_buffer_view_new(
    element_type: u32,
    shape: *const i64,
    rank: usize,
    data: *const c_void,
    byte_length: usize,
    out_view: *mut *mut rtx_buffer_view_t,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_buffer_view_new";
        if out_view.is_null() {
            return Err(invalid_argument(format!("{FUNCTION}: argument 'out_view' is NULL")));
        }
        let shape: &[i64] = match (shape.is_null(), rank) {
            (_, 0) => &[],
            (true, rank) => {
                return Err(invalid_argument(format!("{FUNCTION}: argument 'shape' is NULL but rank is {rank}")))
            }
            // SAFETY: the caller guarantees `rank` readable dimensions at a non-null `shape`.
            (false, rank) => unsafe { std::slice::from_raw_parts(shape, rank) },
        };
        let bytes: &[u8] = match (data.is_null(), byte_length) {
            (_, 0) => &[],
            (true, length) => {
                return Err(invalid_argument(format!(
                    "{FUNCTION}: argument 'data' is NULL but byte_length is {length}"
                )))
            }
            // SAFETY: the caller guarantees `byte_length` readable bytes at a non-null `data`.
            (false, length) => unsafe { std::slice::from_raw_parts(data.cast::<u8>(), length) },
        };
        let view = BufferView::from_host(shape.to_vec(), element_type, bytes).context(FUNCTION)?;
        // SAFETY: checked non-null above; written only on success.
        unsafe { out_view.write(handle::to_handle(Arc::new(view))) };
        Ok(())
    })
}

/// Adds a reference and returns `view` (NULL stays NULL).
#[no_mangle]
pub unsafe extern "C" fn rtx_buffer_view_retain(view: *mut rtx_buffer_view_t) -> *mut rtx_buffer_view_t {
    // SAFETY: a non-null `view` is a live handle by contract.
    catch_or(view, || unsafe { handle::retain(view) })
}

/// Drops a reference; the last one (counting the async values and running programs that hold
/// the view) frees it. NULL does nothing.
#[no_mangle]
pub unsafe extern "C" fn rtx_buffer_view_release(view: *mut rtx_buffer_view_t) {
    // SAFETY: the caller gives up one reference it owns.
    catch_or((), || unsafe { handle::release(view) })
}

/// The element type code (e.g. 0x21000020 for f32). 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn rtx_buffer_view_element_type(view: *const rtx_buffer_view_t) -> u32 {
    // SAFETY: forwarded from the caller.
    catch_or(0, || unsafe { handle::borrow_opt(view) }.map_or(0, |v| v.element_type()))
}

/// The number of dimensions (0 for a scalar tensor). 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn rtx_buffer_view_rank(view: *const rtx_buffer_view_t) -> usize {
    // SAFETY: forwarded from the caller.
    catch_or(0, || unsafe { handle::borrow_opt(view) }.map_or(0, |v| v.shape().len()))
}

/// Dimension `index` (0 ≤ index < `rtx_buffer_view_rank`), never negative. -1 if `view` is NULL
/// or `index` is out of range.
#[no_mangle]
pub unsafe extern "C" fn rtx_buffer_view_dim(view: *const rtx_buffer_view_t, index: usize) -> i64 {
    catch_or(-1, || {
        // SAFETY: forwarded from the caller.
        unsafe { handle::borrow_opt(view) }.map_or(-1, |v| v.shape().get(index).copied().unwrap_or(-1))
    })
}

/// The length of the view's data in bytes (what `rtx_buffer_view_copy_data` writes). 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn rtx_buffer_view_byte_length(view: *const rtx_buffer_view_t) -> usize {
    // SAFETY: forwarded from the caller.
    catch_or(0, || unsafe { handle::borrow_opt(view) }.map_or(0, |v| v.buffer().len()))
}

/// The view's data, borrowed: `rtx_buffer_view_byte_length` bytes, valid while the view lives,
/// dense row-major, little-endian. Read only; do not read it while a call that was given the
/// view as an argument is still running (a program may write its arguments in place). Any
/// pointer (not to be read) when the length is 0; NULL for NULL, and where the view's memory is
/// not host-addressable (`rtx_buffer_view_copy_data` reads it then).
#[no_mangle]
pub unsafe extern "C" fn rtx_buffer_view_data(view: *const rtx_buffer_view_t) -> *const c_void {
    catch_or(std::ptr::null(), || {
        // SAFETY: forwarded from the caller.
        unsafe { handle::borrow_opt(view) }.map_or(std::ptr::null(), host_data)
    })
}

/// The address of a view's bytes, or NULL where the host cannot address them.
fn host_data(view: &BufferView) -> *const c_void {
    let buffer = view.buffer();
    buffer.memory().mapping().map_or(std::ptr::null(), |bytes| bytes.as_ptr().wrapping_add(buffer.offset()).cast())
}

/// Everything a host reads to wrap a view's memory, from one call (`rtx_buffer_view_info`). The
/// caller sets `struct_size` to `sizeof(rtx_buffer_view_info_t)` before the call, so that a
/// library newer than the header can tell which fields it may write.
#[repr(C)]
#[allow(non_camel_case_types)]
pub struct rtx_buffer_view_info_t {
    /// `sizeof(rtx_buffer_view_info_t)` as the caller's header knows it.
    pub struct_size: usize,
    /// As `rtx_buffer_view_element_type`.
    pub element_type: u32,
    /// As `rtx_buffer_view_rank`.
    pub rank: usize,
    /// The `rank` dimensions, borrowed: valid while the view lives (any pointer, not to be read,
    /// when `rank` is 0).
    pub shape: *const i64,
    /// As `rtx_buffer_view_data`: borrowed, NULL where the host cannot address the memory.
    pub data: *const c_void,
    /// As `rtx_buffer_view_byte_length`.
    pub byte_length: usize,
}

/// Fills `*out` with the view's element type, shape, data and byte length: what
/// `rtx_buffer_view_element_type`, `_rank`, `_dim`, `_data` and `_byte_length` say, in one call
/// (a binding that wraps each result pays for every crossing). INVALID_ARGUMENT for a NULL
/// argument or a `struct_size` smaller than the first version of the struct; `*out` is written
/// only on success.
#[no_mangle]
pub unsafe extern "C" fn rtx_buffer_view_info(
    view: *const rtx_buffer_view_t,
    out: *mut rtx_buffer_view_info_t,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_buffer_view_info";
        // SAFETY: forwarded from the caller.
        let view = unsafe { handle::borrow(view, FUNCTION, "view") }?;
        if out.is_null() {
            return Err(invalid_argument(format!("{FUNCTION}: argument 'out' is NULL")));
        }
        // SAFETY: a non-null `out` points to a struct of at least `struct_size` bytes, whose
        // first field is `struct_size`.
        let declared = unsafe { out.cast::<usize>().read() };
        check_struct_size(declared, std::mem::size_of::<rtx_buffer_view_info_t>(), "out", FUNCTION)?;
        let info = rtx_buffer_view_info_t {
            struct_size: declared,
            element_type: view.element_type(),
            rank: view.shape().len(),
            shape: view.shape().as_ptr(),
            data: host_data(view),
            byte_length: view.buffer().len(),
        };
        // SAFETY: `out` holds at least this version of the struct (checked above).
        unsafe { out.write(info) };
        Ok(())
    })
}

/// Copies the view's data (`rtx_buffer_view_byte_length` bytes) to `out`, which has room for
/// `capacity` bytes; the bytes past the data are left as they were. OUT_OF_RANGE, writing
/// nothing, if `capacity` is smaller than the data (the message gives both sizes);
/// INVALID_ARGUMENT for a NULL `view`, or a NULL `out` with data to copy.
#[no_mangle]
pub unsafe extern "C" fn rtx_buffer_view_copy_data(
    view: *const rtx_buffer_view_t,
    out: *mut c_void,
    capacity: usize,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_buffer_view_copy_data";
        // SAFETY: forwarded from the caller.
        let view = unsafe { handle::borrow(view, FUNCTION, "view") }?;
        let length = view.buffer().len();
        if length == 0 {
            return Ok(());
        }
        if out.is_null() {
            return Err(invalid_argument(format!(
                "{FUNCTION}: argument 'out' is NULL but the view has {length} bytes"
            )));
        }
        if capacity < length {
            return Err(Diagnostic::new(
                StatusCode::OutOfRange,
                format!(
                    "{FUNCTION}: the view has {length} bytes but 'out' has room for {capacity} (capacity); \
                     nothing was copied"
                ),
            ));
        }
        let bytes = view.to_vec().context(FUNCTION)?;
        // SAFETY: `out` is non-null with room for `capacity >= bytes.len()` bytes by contract, and
        // cannot overlap the freshly made copy.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.cast::<u8>(), bytes.len()) };
        Ok(())
    })
}
