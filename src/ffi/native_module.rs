//! `rtx_native_module_t`: a VM module whose functions are written in C. Bytecode modules import
//! them like IREE's `check` or `hal` functions, and hosts call them with `rtx_context_invoke`.
//!
//! A C native module is a runtime [`ScalarModule`] whose [`ScalarFunctions`] are the host's C
//! callbacks: scalars only (i32, i64, f32, f64, passed as `rtx_value_t`).

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use super::context::rtx_context_t;
use super::error::{self, rtx_error_t};
use super::handle::{self, Handle, OwnershipArc};
use super::module::rtx_value_kind_t;
use super::{c_str, catch_error, catch_or, check_struct_size, invalid_argument, UserData};
use crate::host::{Diagnostic, ResultExt, StatusCode};
use crate::runtime::{Scalar, ScalarFunctions, ScalarModule, ValueKind};

/// The payload of an `rtx_value_t`; which member is meaningful is the value's `kind`.
#[repr(C)]
#[derive(Clone, Copy)]
#[allow(non_camel_case_types)]
pub union rtx_value_union_t {
    pub i32: i32,
    pub i64: i64,
    pub f32: f32,
    pub f64: f64,
}

/// One scalar argument or result of a native function.
#[repr(C)]
#[derive(Clone, Copy)]
#[allow(non_camel_case_types)]
pub struct rtx_value_t {
    /// Which member of `value` holds the value; never `RTX_VALUE_KIND_REF` (not supported yet).
    pub kind: rtx_value_kind_t,
    pub value: rtx_value_union_t,
}

impl From<Scalar> for rtx_value_t {
    fn from(scalar: Scalar) -> rtx_value_t {
        // All eight payload bytes are initialised first, whatever the kind.
        let mut value = rtx_value_t { kind: scalar.kind().into(), value: rtx_value_union_t { i64: 0 } };
        match scalar {
            Scalar::I32(v) => value.value.i32 = v,
            Scalar::I64(v) => value.value.i64 = v,
            Scalar::F32(v) => value.value.f32 = v,
            Scalar::F64(v) => value.value.f64 = v,
        }
        value
    }
}

impl rtx_value_t {
    /// The scalar this holds, read as `kind` (the declared one: the host must not change it).
    fn to_scalar(self, kind: ValueKind) -> Scalar {
        // SAFETY (every read): all eight payload bytes are initialised (see `From<Scalar>`), and
        // every bit pattern is a valid i32/i64/f32/f64.
        unsafe {
            match kind {
                ValueKind::I32 => Scalar::I32(self.value.i32),
                ValueKind::I64 => Scalar::I64(self.value.i64),
                ValueKind::F32 => Scalar::F32(self.value.f32),
                ValueKind::F64 => Scalar::F64(self.value.f64),
                ValueKind::Ref => unreachable!("scalar modules have no refs"),
            }
        }
    }
}

/// A function of a native module. `args` holds `num_args` values and `results` room for
/// `num_results` values, both in calling-convention order (either is NULL when its count is 0).
/// Each `results[i].kind` is already set to the declared kind and its payload to zero: write the
/// member of that kind (`results[0].value.i32 = 42`), do not change `kind`. Return NULL on
/// success, or an error from `rtx_error_new` (rtx takes and frees it), which fails the calling
/// invocation with that code and message. `user_data` is the module's, `state` the one
/// `create_state` made for the calling context (NULL without `create_state`). Runs on any thread;
/// calls for one context never overlap, calls for different contexts may. Must not call into
/// the same context synchronously.
#[allow(non_camel_case_types)]
pub type rtx_native_function_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        state: *mut c_void,
        args: *const rtx_value_t,
        num_args: usize,
        results: *mut rtx_value_t,
        num_results: usize,
    ) -> *mut rtx_error_t,
>;

/// One exported function of a native module (`rtx_native_module_options_t::functions`).
#[repr(C)]
#[derive(Clone, Copy)]
#[allow(non_camel_case_types)]
pub struct rtx_native_function_t {
    /// The name without the module prefix (`"add"` for `mymod.add`); may contain `.`. Copied.
    pub name: *const c_char,
    /// The calling convention exactly as compilers write it in imports (`"0ii_i"`, `"0v_i"`,
    /// `"0i_v"`): import resolution compares the strings byte for byte. Scalars only (`i`, `I`,
    /// `f`, `F`). Copied.
    pub cconv: *const c_char,
    /// Required.
    pub function: rtx_native_function_fn,
}

/// Options for `rtx_native_module_new`. Initialise with `rtx_native_module_options_init`, which
/// sets `struct_size` and clears every other field.
#[repr(C)]
#[allow(non_camel_case_types)]
pub struct rtx_native_module_options_t {
    /// `sizeof(rtx_native_module_options_t)` as the caller's header knows it.
    pub struct_size: usize,
    /// The module name imports use before the first `.`; non-empty, without `.`. Copied.
    pub name: *const c_char,
    /// Compared against a bytecode module's minimum version of this dependency.
    pub version: u32,
    /// `num_functions` functions; a function's index here is its ordinal. Copied.
    pub functions: *const rtx_native_function_t,
    pub num_functions: usize,
    /// Passed to every callback.
    pub user_data: *mut c_void,
    /// Optional. Runs exactly once, when the last reference to the module is gone (the handle
    /// and every context it was added to), after every `destroy_state`. Not run when
    /// `rtx_native_module_new` fails: then `user_data` stays the caller's.
    pub destroy: Option<unsafe extern "C" fn(user_data: *mut c_void)>,
    /// Optional. Creates the module's state for one context, when the module is added to it;
    /// writes it to `*out_state` and returns NULL, or returns an error (from `rtx_error_new`)
    /// that fails `rtx_context_add_native_module`.
    pub create_state:
        Option<unsafe extern "C" fn(user_data: *mut c_void, out_state: *mut *mut c_void) -> *mut rtx_error_t>,
    /// Optional. Frees a state from `create_state` when its context is freed.
    pub destroy_state: Option<unsafe extern "C" fn(user_data: *mut c_void, state: *mut c_void)>,
}

/// The host's callbacks and `user_data`, shared by the module and every state it created, so that
/// `destroy` runs after the last of them.
struct HostCallbacks {
    user_data: UserData,
    destroy: Option<unsafe extern "C" fn(user_data: *mut c_void)>,
    create_state: Option<unsafe extern "C" fn(user_data: *mut c_void, out_state: *mut *mut c_void) -> *mut rtx_error_t>,
    destroy_state: Option<unsafe extern "C" fn(user_data: *mut c_void, state: *mut c_void)>,
}

impl Drop for HostCallbacks {
    fn drop(&mut self) {
        if let Some(destroy) = self.destroy {
            // SAFETY: the host's destroy callback, run once with its own user data.
            unsafe { destroy(self.user_data.0) };
        }
    }
}

/// One context's state of a C native module.
struct CState {
    state: UserData,
    host: Arc<HostCallbacks>,
}

impl Drop for CState {
    fn drop(&mut self) {
        if let Some(destroy_state) = self.host.destroy_state {
            // SAFETY: a state from the host's create_state, freed once.
            unsafe { destroy_state(self.host.user_data.0, self.state.0) };
        }
    }
}

/// The host's C code behind a [`ScalarModule`].
struct CFunctions {
    name: String,
    /// The table's functions, each checked non-null when the module was made.
    functions: Vec<rtx_native_function_fn>,
    host: Arc<HostCallbacks>,
}

impl ScalarFunctions for CFunctions {
    fn create_state(&self) -> Result<Box<dyn std::any::Any + Send>, Diagnostic> {
        let mut state = std::ptr::null_mut();
        if let Some(create_state) = self.host.create_state {
            // SAFETY: the host's callback with its own user data and a writable out-pointer.
            let error = unsafe { create_state(self.host.user_data.0, &mut state) };
            // SAFETY: the host returned NULL or an error it owned; we take it over.
            if let Some(error) = unsafe { error::take(error) } {
                return Err(error.context(format_args!("native module `{}`: create_state failed", self.name)));
            }
        }
        Ok(Box::new(CState { state: UserData(state), host: Arc::clone(&self.host) }))
    }

    fn call(
        &self,
        state: &mut (dyn std::any::Any + Send),
        index: usize,
        arguments: &[Scalar],
        results: &mut [Scalar],
    ) -> Result<(), Diagnostic> {
        let Some(function) = self.functions[index] else {
            return Err(Diagnostic::new(StatusCode::Internal, format!("`{}` function {index} is NULL", self.name)));
        };
        let args: Vec<rtx_value_t> = arguments.iter().map(|&a| a.into()).collect();
        let mut values: Vec<rtx_value_t> = results.iter().map(|&r| r.into()).collect();
        let state = state.downcast_mut::<CState>().map_or(std::ptr::null_mut(), |s| s.state.0);
        let args_ptr = if args.is_empty() { std::ptr::null() } else { args.as_ptr() };
        let results_ptr = if values.is_empty() { std::ptr::null_mut() } else { values.as_mut_ptr() };
        // SAFETY: the host's function with its user data and state, `args.len()` readable values
        // and `values.len()` writable ones, as its documentation promises.
        let error = unsafe { function(self.host.user_data.0, state, args_ptr, args.len(), results_ptr, values.len()) };
        // SAFETY: the host returned NULL or an error it owned; we take it over.
        if let Some(error) = unsafe { error::take(error) } {
            return Err(error);
        }
        for (result, value) in results.iter_mut().zip(values) {
            *result = value.to_scalar(result.kind());
        }
        Ok(())
    }
}

/// A native module written in C. Opaque; reference counted; immutable, so every function on it
/// is thread-safe. A context it was added to keeps it alive.
#[allow(non_camel_case_types)]
pub struct rtx_native_module {
    _private: [u8; 0],
}

/// The handle type C sees.
#[allow(non_camel_case_types)]
pub type rtx_native_module_t = rtx_native_module;

impl Handle for rtx_native_module {
    type RustType = ScalarModule;
    type Ownership = OwnershipArc;
}

/// Sets `struct_size` and clears every other field (no functions, no callbacks). NULL does
/// nothing.
#[no_mangle]
pub unsafe extern "C" fn rtx_native_module_options_init(options: *mut rtx_native_module_options_t) {
    catch_or((), || {
        if !options.is_null() {
            // SAFETY: a non-null `options` points to writable storage of the struct's size.
            unsafe {
                options.write(rtx_native_module_options_t {
                    struct_size: std::mem::size_of::<rtx_native_module_options_t>(),
                    name: std::ptr::null(),
                    version: 0,
                    functions: std::ptr::null(),
                    num_functions: 0,
                    user_data: std::ptr::null_mut(),
                    destroy: None,
                    create_state: None,
                    destroy_state: None,
                })
            };
        }
    })
}

/// Creates a native module from `options` (everything is copied; the callbacks and `user_data`
/// are kept). INVALID_ARGUMENT, naming the offending function, for NULL arguments, a
/// `struct_size` smaller than the first version of the struct, an empty name or one with a `.`,
/// a duplicate or empty function name, a NULL `function`, or a calling convention that is
/// malformed (the message gives the byte offset), not in the form compilers write (the message
/// gives that form), or has a ref or a variadic span (not supported for C modules yet).
/// `*out_module` is written only on success; release it with `rtx_native_module_release`.
#[no_mangle]
pub unsafe extern "C" fn rtx_native_module_new(
    options: *const rtx_native_module_options_t,
    out_module: *mut *mut rtx_native_module_t,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_native_module_new";
        // SAFETY: reading `struct_size` first is valid for any version of the struct.
        let Some(struct_size) = (unsafe { options.cast::<usize>().as_ref() }).copied() else {
            return Err(invalid_argument(format!("{FUNCTION}: argument 'options' is NULL")));
        };
        check_struct_size(struct_size, std::mem::size_of::<rtx_native_module_options_t>(), "options", FUNCTION)?;
        if out_module.is_null() {
            return Err(invalid_argument(format!("{FUNCTION}: argument 'out_module' is NULL")));
        }
        // SAFETY: the struct is at least as large as this version of it.
        let options = unsafe { &*options };
        // SAFETY: a non-null name is NUL-terminated by contract.
        let name = unsafe { c_str(options.name, FUNCTION, "options->name") }?;
        let table: &[rtx_native_function_t] = match (options.functions.is_null(), options.num_functions) {
            (_, 0) => &[],
            (true, count) => {
                return Err(invalid_argument(format!(
                    "{FUNCTION}: options->functions is NULL but options->num_functions is {count}"
                )))
            }
            // SAFETY: the caller guarantees `num_functions` readable entries.
            (false, count) => unsafe { std::slice::from_raw_parts(options.functions, count) },
        };
        let mut names = Vec::with_capacity(table.len());
        let mut functions = Vec::with_capacity(table.len());
        for (index, function) in table.iter().enumerate() {
            let field = |name: &str| format!("options->functions[{index}].{name}");
            // SAFETY: non-null strings are NUL-terminated by contract.
            let function_name = unsafe { c_str(function.name, FUNCTION, &field("name")) }?;
            // SAFETY: as above.
            let cconv = unsafe { c_str(function.cconv, FUNCTION, &field("cconv")) }?;
            if function.function.is_none() {
                return Err(invalid_argument(format!("{FUNCTION}: {} is NULL", field("function"))));
            }
            names.push((function_name, cconv));
            functions.push(function.function);
        }
        // The callbacks are taken over (and `destroy` armed) only once the table is valid.
        let code = || -> Arc<dyn ScalarFunctions> {
            let host = Arc::new(HostCallbacks {
                user_data: UserData(options.user_data),
                destroy: options.destroy,
                create_state: options.create_state,
                destroy_state: options.destroy_state,
            });
            Arc::new(CFunctions { name: name.to_owned(), functions, host })
        };
        let module = ScalarModule::new(name, options.version, &names, code).context(FUNCTION)?;
        // SAFETY: checked non-null above; written only on success.
        unsafe { out_module.write(handle::to_handle(Arc::new(module))) };
        Ok(())
    })
}

/// Adds a reference and returns `module` (NULL stays NULL).
#[no_mangle]
pub unsafe extern "C" fn rtx_native_module_retain(module: *mut rtx_native_module_t) -> *mut rtx_native_module_t {
    // SAFETY: a non-null `module` is a live handle by contract.
    catch_or(module, || unsafe { handle::retain(module) })
}

/// Drops a reference; the last one (counting the contexts the module was added to) frees it and
/// runs its `destroy` callback. NULL does nothing.
#[no_mangle]
pub unsafe extern "C" fn rtx_native_module_release(module: *mut rtx_native_module_t) {
    // SAFETY: the caller gives up one reference it owns.
    catch_or((), || unsafe { handle::release(module) })
}

/// Adds a native module to the context's VM context, creating its state for this context
/// (`create_state`). Modules added afterwards can import its functions, and
/// `rtx_context_invoke(context, "name.function", ...)` calls them directly. The context keeps a
/// reference to the module. ALREADY_EXISTS if a module of that name is there; `create_state`'s
/// error; INVALID_ARGUMENT for NULL arguments.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_add_native_module(
    context: *mut rtx_context_t,
    module: *mut rtx_native_module_t,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_context_add_native_module";
        // SAFETY: forwarded from the caller.
        let context = unsafe { handle::borrow(context, FUNCTION, "context") }?;
        // SAFETY: forwarded from the caller.
        let module: Arc<ScalarModule> = unsafe { handle::clone(module, FUNCTION, "module") }?;
        context.add_native_module(module).context(FUNCTION)
    })
}
