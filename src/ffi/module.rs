//! `rtx_module_t`: a loaded, verified module (`runtime::Module`: IREE VM bytecode, `.vmfb`, BEF,
//! `.bef`, recognised by their magic, or an ONNX model, `.onnx`, imported to BEF) and the reflection
//! of its exported functions as C strings. Immutable once loaded, so every function on it is
//! thread-safe.

use std::ffi::{c_char, CString};
use std::sync::Arc;

use super::context::rtx_context_t;
use super::error::rtx_error_t;
use super::handle::{self, Handle, OwnershipArc};
use super::{c_str, catch_error, catch_or, check_struct_size, invalid_argument};
use crate::host::{Diagnostic, ResultExt, StatusCode};
use crate::runtime::Module;
use crate::runtime::ValueKind;

/// The type of one argument or result of a function, as its calling convention declares it.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum rtx_value_kind_t {
    RTX_VALUE_KIND_I32 = 0,
    RTX_VALUE_KIND_I64 = 1,
    RTX_VALUE_KIND_F32 = 2,
    RTX_VALUE_KIND_F64 = 3,
    /// A reference. `rtx_context_invoke` passes and returns tensors there: async values holding
    /// buffer views (`rtx_async_value_new_buffer_view`); other refs (lists, buffers) not yet.
    RTX_VALUE_KIND_REF = 4,
}

impl From<ValueKind> for rtx_value_kind_t {
    fn from(kind: ValueKind) -> rtx_value_kind_t {
        match kind {
            ValueKind::I32 => rtx_value_kind_t::RTX_VALUE_KIND_I32,
            ValueKind::I64 => rtx_value_kind_t::RTX_VALUE_KIND_I64,
            ValueKind::F32 => rtx_value_kind_t::RTX_VALUE_KIND_F32,
            ValueKind::F64 => rtx_value_kind_t::RTX_VALUE_KIND_F64,
            ValueKind::Ref => rtx_value_kind_t::RTX_VALUE_KIND_REF,
        }
    }
}

/// Reflection of one exported function, computed at load time so C can borrow it.
struct ExportedFunction {
    name: CString,
    calling_convention: CString,
    declaration: Option<CString>,
    /// The kinds, or why the calling convention cannot be described as plain values.
    kinds: Result<(Vec<rtx_value_kind_t>, Vec<rtx_value_kind_t>), Diagnostic>,
}

/// What an `rtx_module_t` owns. Reference counted (`Arc`): `_retain`/`_release`.
pub struct ModuleHandle {
    pub(crate) module: Module,
    name: CString,
    functions: Vec<ExportedFunction>,
}

impl ModuleHandle {
    fn new(module: Module) -> ModuleHandle {
        let functions = module
            .exported_functions()
            .into_iter()
            .map(|export| ExportedFunction {
                name: c_string(&export.name),
                calling_convention: c_string(&export.calling_convention),
                declaration: export.declaration.as_deref().map(c_string),
                kinds: export.kinds.map(|(arguments, results)| {
                    (arguments.into_iter().map(Into::into).collect(), results.into_iter().map(Into::into).collect())
                }),
            })
            .collect();
        ModuleHandle { name: c_string(module.name()), module, functions }
    }
}

/// A C string of `text`; interior NULs (impossible in verified names, but cheap to rule out) are
/// shown as `\0` instead of cutting the string short.
fn c_string(text: &str) -> CString {
    CString::new(text.replace('\0', "\\0")).unwrap_or_default()
}

/// A loaded module: IREE VM bytecode or BEF. Opaque; reference counted; immutable, so every function on it is
/// thread-safe. A context that added it keeps it alive.
#[allow(non_camel_case_types)]
pub struct rtx_module {
    _private: [u8; 0],
}

/// The handle type C sees.
#[allow(non_camel_case_types)]
pub type rtx_module_t = rtx_module;

impl Handle for rtx_module {
    type RustType = ModuleHandle;
    type Ownership = OwnershipArc;
}

/// The signature of one exported function (`rtx_module_function_signature`). Set `struct_size`
/// to `sizeof(rtx_function_signature_t)` before the call, so that a library newer than the
/// header writes only the fields the caller knows. Every pointer is borrowed from the module and
/// valid until it is released.
#[repr(C)]
#[allow(non_camel_case_types)]
pub struct rtx_function_signature_t {
    /// `sizeof(rtx_function_signature_t)` as the caller's header knows it (set by the caller).
    pub struct_size: usize,
    /// The export's name (as `rtx_module_function_name`).
    pub name: *const c_char,
    /// The calling convention string, e.g. `"0iI_f"`; `""` if the module declares none.
    pub calling_convention: *const c_char,
    /// The `iree.abi.declaration` reflection attribute (`"sync func @f(%input0: i32) -> ..."`), or
    /// NULL if the function has none.
    pub declaration: *const c_char,
    /// How many arguments the function takes.
    pub num_arguments: usize,
    /// `num_arguments` kinds (NULL when there are none).
    pub argument_kinds: *const rtx_value_kind_t,
    /// How many results the function returns.
    pub num_results: usize,
    /// `num_results` kinds (NULL when there are none).
    pub result_kinds: *const rtx_value_kind_t,
}

/// Writes a new module handle to `out` after checking `out` for NULL; `load` runs only then.
///
/// # Safety
/// A non-null `out` must be writable.
unsafe fn load_into(
    out: *mut *mut rtx_module_t,
    function: &str,
    load: impl FnOnce() -> Result<Module, Diagnostic>,
) -> Result<(), Diagnostic> {
    if out.is_null() {
        return Err(invalid_argument(format!("{function}: argument 'out_module' is NULL")));
    }
    let module = load().context(function)?;
    // SAFETY: checked non-null above; written only on success.
    unsafe { out.write(handle::to_handle(Arc::new(ModuleHandle::new(module)))) };
    Ok(())
}

/// Loads and verifies the module in the file at `path` (memory-mapped, not copied; the file must
/// not change while the module lives): IREE VM bytecode, BEF, or an ONNX model (by its `.onnx`
/// extension or its first bytes), which is imported to a BEF module named after the file, its
/// function named after the graph. Errors: NOT_FOUND / PERMISSION_DENIED / UNAVAILABLE when the
/// file cannot be read; INVALID_ARGUMENT (malformed), DATA_LOSS (truncated) or UNIMPLEMENTED
/// (unsupported feature) with the byte offset of the problem in the message (for ONNX, the node
/// and the operator); UNIMPLEMENTED for a BEF module in a build without the `tfrt` feature and an
/// ONNX model without `onnx`; INVALID_ARGUMENT for NULL arguments. `*out_module` is written only
/// on success; release it with `rtx_module_release`.
#[no_mangle]
pub unsafe extern "C" fn rtx_module_load_file(
    path: *const c_char,
    out_module: *mut *mut rtx_module_t,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_module_load_file";
        // SAFETY: a non-null path is NUL-terminated by contract.
        let path = unsafe { c_str(path, FUNCTION, "path") }?;
        // SAFETY: forwarded from the caller.
        unsafe { load_into(out_module, FUNCTION, || Module::load_file(path)) }
    })
}

/// Loads and verifies a module from `size` bytes at `data`, which are copied (the caller may free
/// them when the call returns). Errors as `rtx_module_load_file`; INVALID_ARGUMENT for NULL
/// `data` with a non-zero `size`.
#[no_mangle]
pub unsafe extern "C" fn rtx_module_load_memory(
    data: *const u8,
    size: usize,
    out_module: *mut *mut rtx_module_t,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_module_load_memory";
        if data.is_null() && size != 0 {
            return Err(invalid_argument(format!("{FUNCTION}: argument 'data' is NULL but size is {size}")));
        }
        let bytes: &[u8] = if size == 0 {
            &[]
        } else {
            // SAFETY: the caller guarantees `size` readable bytes at a non-null `data`.
            unsafe { std::slice::from_raw_parts(data, size) }
        };
        // SAFETY: forwarded from the caller.
        unsafe { load_into(out_module, FUNCTION, || Module::load_memory(bytes)) }
    })
}

/// Adds a reference and returns `module` (NULL stays NULL).
#[no_mangle]
pub unsafe extern "C" fn rtx_module_retain(module: *mut rtx_module_t) -> *mut rtx_module_t {
    // SAFETY: a non-null `module` is a live handle by contract.
    catch_or(module, || unsafe { handle::retain(module) })
}

/// Drops a reference; the last one (counting the contexts the module was added to) frees it.
/// NULL does nothing.
#[no_mangle]
pub unsafe extern "C" fn rtx_module_release(module: *mut rtx_module_t) {
    // SAFETY: the caller gives up one reference it owns.
    catch_or((), || unsafe { handle::release(module) })
}

/// The module's name (what imports and `"module.function"` names use). Borrowed: valid while
/// the module lives. `""` for NULL.
#[no_mangle]
pub unsafe extern "C" fn rtx_module_name(module: *const rtx_module_t) -> *const c_char {
    catch_or(c"".as_ptr(), || {
        // SAFETY: forwarded from the caller.
        unsafe { handle::borrow_opt(module) }.map_or(c"".as_ptr(), |m| m.name.as_ptr())
    })
}

/// How many functions the module exports. 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn rtx_module_function_count(module: *const rtx_module_t) -> usize {
    // SAFETY: forwarded from the caller.
    catch_or(0, || unsafe { handle::borrow_opt(module) }.map_or(0, |m| m.functions.len()))
}

/// The name of exported function `index` (0 ≤ index < `rtx_module_function_count`), without the
/// module prefix. Borrowed: valid while the module lives. NULL if `module` is NULL or `index` is
/// out of range.
#[no_mangle]
pub unsafe extern "C" fn rtx_module_function_name(module: *const rtx_module_t, index: usize) -> *const c_char {
    catch_or(std::ptr::null(), || {
        // SAFETY: forwarded from the caller.
        let Some(module) = (unsafe { handle::borrow_opt(module) }) else { return std::ptr::null() };
        module.functions.get(index).map_or(std::ptr::null(), |f| f.name.as_ptr())
    })
}

/// Describes exported function `index`: its calling convention, ABI declaration and the kinds of
/// its arguments and results. `out->struct_size` must be set by the caller. INVALID_ARGUMENT for
/// NULL arguments or a too-small `struct_size`, OUT_OF_RANGE for a bad `index`, UNIMPLEMENTED or
/// INVALID_ARGUMENT when the calling convention cannot be described (a variadic span, a malformed
/// string). `*out` is written only on success.
#[no_mangle]
pub unsafe extern "C" fn rtx_module_function_signature(
    module: *const rtx_module_t,
    index: usize,
    out: *mut rtx_function_signature_t,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_module_function_signature";
        // SAFETY: forwarded from the caller.
        let module = unsafe { handle::borrow(module, FUNCTION, "module") }?;
        // SAFETY: reading `struct_size` first is valid for any version of the struct.
        let Some(struct_size) = (unsafe { out.cast::<usize>().as_ref() }).copied() else {
            return Err(invalid_argument(format!("{FUNCTION}: argument 'out' is NULL")));
        };
        check_struct_size(struct_size, std::mem::size_of::<rtx_function_signature_t>(), "out", FUNCTION)?;
        let count = module.functions.len();
        let function = module.functions.get(index).ok_or_else(|| {
            Diagnostic::new(
                StatusCode::OutOfRange,
                format!(
                    "{FUNCTION}: index {index} is out of range; `{}` exports {count} functions",
                    module.module.name()
                ),
            )
        })?;
        let (arguments, results) = function.kinds.as_ref().map_err(|e| e.clone().context(FUNCTION))?;
        let array = |kinds: &[rtx_value_kind_t]| if kinds.is_empty() { std::ptr::null() } else { kinds.as_ptr() };
        let signature = rtx_function_signature_t {
            struct_size,
            name: function.name.as_ptr(),
            calling_convention: function.calling_convention.as_ptr(),
            declaration: function.declaration.as_ref().map_or(std::ptr::null(), |d| d.as_ptr()),
            num_arguments: arguments.len(),
            argument_kinds: array(arguments),
            num_results: results.len(),
            result_kinds: array(results),
        };
        // SAFETY: `out` is non-null and at least as large as this version of the struct.
        unsafe { out.write(signature) };
        Ok(())
    })
}

/// Adds `module` to the context. A VM module: checks its dependencies against the modules added
/// before it, resolves its imports (by name and exact calling convention), creates its state and
/// runs its `__init` on the calling thread. A BEF module: binds its kernel names to the
/// context's kernels (the core `tfrt.*` ones and those registered with
/// `rtx_context_register_kernel` so far); NOT_FOUND names an unknown kernel and, in the error's
/// message, the source location of its first use. The context keeps a reference to the module. Errors:
/// ALREADY_EXISTS (a module of that name is there), NOT_FOUND (a missing dependency or import),
/// `__init`'s own failure; FAILED_PRECONDITION for a module that imports `hal` (compiled from
/// tensor code) when the context has no device (`rtx_context_add_device`); INVALID_ARGUMENT for
/// NULL arguments. On failure the context is left as it was.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_add_module(
    context: *mut rtx_context_t,
    module: *mut rtx_module_t,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_context_add_module";
        // SAFETY: forwarded from the caller.
        let context = unsafe { handle::borrow(context, FUNCTION, "context") }?;
        // SAFETY: forwarded from the caller.
        let module = unsafe { handle::borrow(module, FUNCTION, "module") }?;
        context.add_module(&module.module).context(FUNCTION)
    })
}
