//! `rtx_kernel_frame_t`: kernels written in C for the BEF modules of a context
//! (`runtime::Context::register_kernel`), and what such a kernel sees of the kernel it runs for:
//! its arguments, its attributes by name, its result slots.
//!
//! A frame lives only for the kernel call it is passed to: it is the Rust `KernelFrame` on the
//! executor's stack, lent to C, never owned by it, so it is no reference-counted handle family.
//! Functions that cannot return an error ignore a NULL frame; `rtx_kernel_frame_set_result`
//! with a bad index or a NULL value reports the mistake as the kernel's error instead.

use std::ffi::{c_char, c_void};

use super::async_value::rtx_async_value_t;
use super::context::rtx_context_t;
use super::error::rtx_error_t;
use super::handle;
use super::{c_str, catch_error, catch_or, invalid_argument, message_arg, UserData};
use crate::host::{Diagnostic, ResultExt};
use crate::runtime::kernel::{Attribute, AttributeError, KernelError, KernelFrame};

/// What a C kernel is passed: valid only during the call. Opaque.
#[allow(non_camel_case_types)]
pub struct rtx_kernel_frame {
    _private: [u8; 0],
}

/// The frame type C sees.
#[allow(non_camel_case_types)]
pub type rtx_kernel_frame_t = rtx_kernel_frame;

/// A kernel written in C. It runs once every argument is available (a kernel with an error
/// argument is skipped, its results become that error), on any of the context's threads — a
/// worker of its work queue or the thread that made its last argument available — and may run
/// for several calls at once: `user_data` must be safe to share between threads. It must not
/// block (no `rtx_async_value_await`): a result computed later is an unavailable value
/// (`rtx_async_value_new_unavailable`) set when ready. It sets each result with
/// `rtx_kernel_frame_set_result` or fails with `rtx_kernel_frame_report_error`; a result left
/// unset becomes an INTERNAL error naming the kernel.
#[allow(non_camel_case_types)]
pub type rtx_kernel_fn = Option<unsafe extern "C" fn(frame: *mut rtx_kernel_frame_t, user_data: *mut c_void)>;

/// A registered C kernel with its user data.
struct CKernel {
    function: unsafe extern "C" fn(frame: *mut rtx_kernel_frame_t, user_data: *mut c_void),
    user_data: UserData,
}

impl CKernel {
    fn call(&self, frame: &mut KernelFrame<'_>) {
        let raw = std::ptr::from_mut(frame).cast::<rtx_kernel_frame_t>();
        // SAFETY: the host promised `function` is callable with its `user_data` from any thread;
        // `raw` is valid for the call.
        unsafe { (self.function)(raw, self.user_data.0) }
    }
}

/// The frame behind a pointer C was given.
///
/// # Safety
/// A non-null `frame` must be the pointer passed to a kernel that is still running, and no other
/// reference to the frame may be in use.
unsafe fn frame_mut<'f>(frame: *mut rtx_kernel_frame_t) -> Option<&'f mut KernelFrame<'f>> {
    // SAFETY: the frame outlives the kernel call (caller's contract). The inner lifetime is
    // shortened to the call; through `&mut` only owned values (results) are written, never
    // borrowed data that could outlive the frame.
    unsafe { frame.cast::<KernelFrame<'f>>().as_mut() }
}

/// # Safety
/// As [`frame_mut`].
unsafe fn frame_ref<'f>(frame: *const rtx_kernel_frame_t) -> Option<&'f KernelFrame<'f>> {
    // SAFETY: as in `frame_mut`; read-only.
    unsafe { frame.cast::<KernelFrame<'f>>().as_ref() }
}

/// # Safety
/// As [`frame_mut`].
unsafe fn frame_arg<'f>(frame: *const rtx_kernel_frame_t, function: &str) -> Result<&'f KernelFrame<'f>, Diagnostic> {
    // SAFETY: forwarded from the caller.
    unsafe { frame_ref(frame) }.ok_or_else(|| invalid_argument(format!("{function}: argument 'frame' is NULL")))
}

/// Registers the kernel `name`, implemented by `fn` with `user_data`, for the BEF modules added
/// to `context` from now on (modules added before resolved their kernel names already, and an
/// unknown name fails `rtx_context_add_module`). `user_data` stays the caller's and must live as
/// long as the context. Errors: ALREADY_EXISTS when `name` is taken (a core `tfrt.*` kernel or
/// an earlier registration); INVALID_ARGUMENT for NULL arguments or an empty or non-UTF-8 name;
/// UNIMPLEMENTED in a build without the `tfrt` feature (it has no BEF modules to run kernels in).
#[no_mangle]
pub unsafe extern "C" fn rtx_context_register_kernel(
    context: *mut rtx_context_t,
    name: *const c_char,
    r#fn: rtx_kernel_fn,
    user_data: *mut c_void,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_context_register_kernel";
        // SAFETY: forwarded from the caller.
        let context = unsafe { handle::borrow(context, FUNCTION, "context") }?;
        // SAFETY: a non-null name is NUL-terminated by contract.
        let name = unsafe { c_str(name, FUNCTION, "name") }?;
        let function = r#fn.ok_or_else(|| invalid_argument(format!("{FUNCTION}: argument 'fn' is NULL")))?;
        let kernel = CKernel { function, user_data: UserData(user_data) };
        context
            .register_kernel(name, move |frame| {
                kernel.call(frame);
                Ok(())
            })
            .context(FUNCTION)
    })
}

/// How many arguments the kernel has. 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn rtx_kernel_frame_num_args(frame: *const rtx_kernel_frame_t) -> usize {
    // SAFETY: forwarded from the caller.
    catch_or(0, || unsafe { frame_ref(frame) }.map_or(0, |f| f.num_arguments()))
}

/// Argument `index`, an available value (a scalar, chain or buffer view: read it with
/// `rtx_async_value_get_*`). Borrowed: valid during the kernel call; retain it to keep it
/// longer. NULL for a NULL frame or an index out of range.
#[no_mangle]
pub unsafe extern "C" fn rtx_kernel_frame_arg(
    frame: *const rtx_kernel_frame_t,
    index: usize,
) -> *mut rtx_async_value_t {
    catch_or(std::ptr::null_mut(), || {
        // SAFETY: forwarded from the caller.
        let Some(frame) = (unsafe { frame_ref(frame) }) else { return std::ptr::null_mut() };
        frame.arguments().get(index).map_or(std::ptr::null_mut(), handle::lend)
    })
}

/// How many results the kernel has. 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn rtx_kernel_frame_num_results(frame: *const rtx_kernel_frame_t) -> usize {
    // SAFETY: forwarded from the caller.
    catch_or(0, || unsafe { frame_ref(frame) }.map_or(0, |f| f.num_results()))
}

/// Sets result `index` to `value` (available now, or later for an unavailable one), replacing
/// what was set before. Takes the caller's reference to `value` in every case. A NULL `value`
/// or an index out of range is reported as the kernel's error (INVALID_ARGUMENT, on the
/// results not set yet); a NULL frame releases `value` and does nothing else.
#[no_mangle]
pub unsafe extern "C" fn rtx_kernel_frame_set_result(
    frame: *mut rtx_kernel_frame_t,
    index: usize,
    value: *mut rtx_async_value_t,
) {
    catch_or((), || {
        const FUNCTION: &str = "rtx_kernel_frame_set_result";
        // SAFETY: the caller gives up the reference a non-null `value` owns.
        let owned = unsafe { handle::take(value) };
        // SAFETY: forwarded from the caller.
        let Some(frame) = (unsafe { frame_mut(frame) }) else { return };
        let outcome = match owned {
            Some(value) => frame.set_result(index, value).map_err(KernelError::into_diagnostic),
            None => Err(invalid_argument("argument 'value' is NULL")),
        };
        if let Err(error) = outcome.context(FUNCTION) {
            frame.report_error(error);
        }
    })
}

/// Fails the kernel with `message` (INTERNAL): every result not set yet becomes the error, at the
/// kernel's location. NULL `message` is an empty message; a NULL frame does nothing.
#[no_mangle]
pub unsafe extern "C" fn rtx_kernel_frame_report_error(frame: *mut rtx_kernel_frame_t, message: *const c_char) {
    catch_or((), || {
        // SAFETY: a non-null message is NUL-terminated by contract.
        let message = unsafe { message_arg(message) };
        // SAFETY: forwarded from the caller.
        if let Some(frame) = unsafe { frame_mut(frame) } {
            frame.report_error(message);
        }
    })
}

/// Reads the attribute `name` of the kernel with `read`, for the `rtx_kernel_frame_attr_*`
/// functions.
///
/// # Safety
/// As [`frame_mut`]; `name` NULL or NUL-terminated.
unsafe fn read_attribute<'f, T>(
    frame: *const rtx_kernel_frame_t,
    name: *const c_char,
    function: &str,
    read: impl FnOnce(Attribute<'f>) -> Result<T, AttributeError>,
) -> Result<T, Diagnostic> {
    // SAFETY: forwarded from the caller.
    let frame: &'f KernelFrame<'f> = unsafe { frame_arg(frame, function) }?;
    // SAFETY: forwarded from the caller.
    let name = unsafe { c_str(name, function, "name") }?;
    let attribute = frame.named_attribute(name).map_err(KernelError::into_diagnostic).context(function)?;
    read(attribute).map_err(|e| KernelError::from(e).into_diagnostic()).context(function)
}

/// Writes `value` to the out-parameter `out`, or names it when NULL.
///
/// # Safety
/// A non-null `out` must be writable.
unsafe fn write_out<T>(out: *mut T, value: T, function: &str, argument: &str) -> Result<(), Diagnostic> {
    if out.is_null() {
        return Err(invalid_argument(format!("{function}: argument '{argument}' is NULL")));
    }
    // SAFETY: non-null and writable by contract.
    unsafe { out.write(value) };
    Ok(())
}

/// Reads the kernel's attribute `name` as an i64 (its eight bytes, as the kernel expects them).
/// Needs the BEF file's attribute-names section (written unless `--disable-optional-sections`):
/// without it INVALID_ARGUMENT saying so. NOT_FOUND when the kernel has no attribute `name`;
/// INVALID_ARGUMENT for NULL arguments. `*out` is written only on success.
#[no_mangle]
pub unsafe extern "C" fn rtx_kernel_frame_attr_i64(
    frame: *const rtx_kernel_frame_t,
    name: *const c_char,
    out: *mut i64,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_kernel_frame_attr_i64";
        // SAFETY: forwarded from the caller.
        let value = unsafe { read_attribute(frame, name, FUNCTION, |a| a.scalar::<i64>()) }?;
        // SAFETY: forwarded from the caller.
        unsafe { write_out(out, value, FUNCTION, "out") }
    })
}

/// Reads the kernel's attribute `name` as an f64; errors as `rtx_kernel_frame_attr_i64`.
#[no_mangle]
pub unsafe extern "C" fn rtx_kernel_frame_attr_f64(
    frame: *const rtx_kernel_frame_t,
    name: *const c_char,
    out: *mut f64,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_kernel_frame_attr_f64";
        // SAFETY: forwarded from the caller.
        let value = unsafe { read_attribute(frame, name, FUNCTION, |a| a.scalar::<f64>()) }?;
        // SAFETY: forwarded from the caller.
        unsafe { write_out(out, value, FUNCTION, "out") }
    })
}

/// Reads the kernel's string attribute `name`: `*data` gets its bytes (not NUL-terminated;
/// borrowed from the module, valid during the kernel call) and `*size` their count. Errors as
/// `rtx_kernel_frame_attr_i64`; both out-parameters are written only on success.
#[no_mangle]
pub unsafe extern "C" fn rtx_kernel_frame_attr_string(
    frame: *const rtx_kernel_frame_t,
    name: *const c_char,
    data: *mut *const c_char,
    size: *mut usize,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_kernel_frame_attr_string";
        for (pointer, argument) in [(data.is_null(), "data"), (size.is_null(), "size")] {
            if pointer {
                return Err(invalid_argument(format!("{FUNCTION}: argument '{argument}' is NULL")));
            }
        }
        // SAFETY: forwarded from the caller.
        let bytes = unsafe { read_attribute(frame, name, FUNCTION, |a| a.string_bytes()) }?;
        // SAFETY: both checked non-null above and writable by contract.
        unsafe {
            write_out(data, bytes.as_ptr().cast::<c_char>(), FUNCTION, "data")?;
            write_out(size, bytes.len(), FUNCTION, "size")
        }
    })
}
