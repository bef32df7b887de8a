//! `rtx_native_module_t`: a VM module whose functions are written in C. Bytecode modules import
//! them like IREE's `check` or `hal` functions, and hosts call them with `rtx_context_invoke`.
//!
//! Scalars only for now (i32, i64, f32, f64, passed as `rtx_value_t`): refs need the handle
//! types of the HAL layer, so a calling convention with a ref or a variadic span is rejected when
//! the module is created.

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use super::context::rtx_context_t;
use super::error::{self, rtx_error_t};
use super::handle::{self, Handle, OwnershipArc};
use super::module::rtx_value_kind_t;
use super::{c_str, catch_error, catch_or, check_struct_size, invalid_argument, UserData};
use crate::host::{Diagnostic, ResultExt, StatusCode};
use crate::vm::abi::plain_kinds;
use crate::vm::abi::{CallingConvention, ValueKind};
use crate::vm::native::{Arg, Arguments, NativeFunction, NativeModule, NativeOutcome, NativeState};
use crate::vm::value::Value;

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

impl rtx_value_t {
    /// A zero of `kind` (all eight payload bytes initialised).
    fn zero(kind: ValueKind) -> rtx_value_t {
        rtx_value_t { kind: kind.into(), value: rtx_value_union_t { i64: 0 } }
    }

    /// The VM value this holds when it is of `kind`.
    fn to_value(self, kind: ValueKind) -> Value {
        // SAFETY (every read): all eight payload bytes are initialised (see `zero`), and every bit
        // pattern is a valid i32/i64/f32/f64.
        unsafe {
            match kind {
                ValueKind::I32 => Value::I32(self.value.i32),
                ValueKind::I64 => Value::I64(self.value.i64),
                ValueKind::F32 => Value::F32(self.value.f32),
                ValueKind::F64 => Value::F64(self.value.f64),
                ValueKind::Ref => unreachable!("C native modules have no ref results"),
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

/// A C function with its parsed calling convention.
struct Entry {
    function: unsafe extern "C" fn(
        user_data: *mut c_void,
        state: *mut c_void,
        args: *const rtx_value_t,
        num_args: usize,
        results: *mut rtx_value_t,
        num_results: usize,
    ) -> *mut rtx_error_t,
    arguments: Vec<ValueKind>,
    results: Vec<ValueKind>,
}

/// What an `rtx_native_module_t` owns. Reference counted (`Arc`): `_retain`/`_release`.
pub struct CNativeModule {
    name: String,
    version: u32,
    functions: Vec<NativeFunction>,
    entries: Vec<Entry>,
    host: Arc<HostCallbacks>,
}

impl NativeModule for CNativeModule {
    fn name(&self) -> &str {
        &self.name
    }

    fn version(&self) -> u32 {
        self.version
    }

    fn functions(&self) -> &[NativeFunction] {
        &self.functions
    }

    fn create_state(&self) -> Result<NativeState, Diagnostic> {
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
        state: &mut NativeState,
        ordinal: usize,
        arguments: Arguments<'_>,
        values: &mut Vec<Value>,
    ) -> Result<NativeOutcome, Diagnostic> {
        let (Some(entry), Some(function)) = (self.entries.get(ordinal), self.functions.get(ordinal)) else {
            return Err(Diagnostic::new(
                StatusCode::Internal,
                format!("native module `{}` has no function {ordinal}", self.name),
            ));
        };
        // Named only in errors: formatting it on every call would allocate.
        let full_name = || format!("{}.{}", self.name, function.name);
        if arguments.len() != entry.arguments.len() {
            return Err(invalid_argument(format!(
                "`{}` (calling convention `{}`) takes {} arguments, got {}",
                full_name(),
                function.cconv,
                entry.arguments.len(),
                arguments.len()
            )));
        }
        let args = arguments
            .iter()
            .zip(&entry.arguments)
            .enumerate()
            .map(|(index, (value, &kind))| {
                let mut arg = rtx_value_t::zero(kind);
                match (kind, value) {
                    (ValueKind::I32, Arg::I32(v)) => arg.value.i32 = v,
                    (ValueKind::I64, Arg::I64(v)) => arg.value.i64 = v,
                    (ValueKind::F32, Arg::F32(v)) => arg.value.f32 = v,
                    (ValueKind::F64, Arg::F64(v)) => arg.value.f64 = v,
                    _ => {
                        return Err(invalid_argument(format!(
                            "argument {index} of `{}`: expected {} but got {}",
                            full_name(),
                            kind.name(),
                            value.type_name()
                        )))
                    }
                }
                Ok(arg)
            })
            .collect::<Result<Vec<rtx_value_t>, Diagnostic>>()?;
        let mut results: Vec<rtx_value_t> = entry.results.iter().map(|&kind| rtx_value_t::zero(kind)).collect();
        let state = state.downcast_mut::<CState>().map_or(std::ptr::null_mut(), |s| s.state.0);
        let args_ptr = if args.is_empty() { std::ptr::null() } else { args.as_ptr() };
        let results_ptr = if results.is_empty() { std::ptr::null_mut() } else { results.as_mut_ptr() };
        // SAFETY: the host's function with its user data and state, `args.len()` readable values
        // and `results.len()` writable ones, as its documentation promises.
        let error =
            unsafe { (entry.function)(self.host.user_data.0, state, args_ptr, args.len(), results_ptr, results.len()) };
        // SAFETY: the host returned NULL or an error it owned; we take it over.
        if let Some(error) = unsafe { error::take(error) } {
            return Err(error.context(format_args!("`{}`", full_name())));
        }
        values.extend(results.iter().zip(&entry.results).map(|(result, &kind)| result.to_value(kind)));
        Ok(NativeOutcome::Ready)
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
    type RustType = CNativeModule;
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
        if name.is_empty() || name.contains('.') {
            return Err(invalid_argument(format!(
                "{FUNCTION}: module name `{name}` must be non-empty and contain no `.` (imports split on the first `.`)"
            )));
        }
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
        let mut functions: Vec<NativeFunction> = Vec::with_capacity(table.len());
        let mut entries = Vec::with_capacity(table.len());
        for (index, function) in table.iter().enumerate() {
            let (native, entry) = parse_function(name, index, function, &functions)?;
            functions.push(native);
            entries.push(entry);
        }
        let host = Arc::new(HostCallbacks {
            user_data: UserData(options.user_data),
            destroy: options.destroy,
            create_state: options.create_state,
            destroy_state: options.destroy_state,
        });
        let module = CNativeModule { name: name.to_owned(), version: options.version, functions, entries, host };
        // SAFETY: checked non-null above; written only on success.
        unsafe { out_module.write(handle::to_handle(Arc::new(module))) };
        Ok(())
    })
}

/// Checks and copies entry `index` of a C function table.
fn parse_function(
    module: &str,
    index: usize,
    function: &rtx_native_function_t,
    earlier: &[NativeFunction],
) -> Result<(NativeFunction, Entry), Diagnostic> {
    const FUNCTION: &str = "rtx_native_module_new";
    let field = |name: &str| format!("options->functions[{index}].{name}");
    // SAFETY: a non-null name is NUL-terminated by contract.
    let name = unsafe { c_str(function.name, FUNCTION, &field("name")) }?;
    let fail =
        |message: String| invalid_argument(format!("{FUNCTION}: function {index} (`{module}.{name}`): {message}"));
    if name.is_empty() {
        return Err(invalid_argument(format!("{FUNCTION}: {} is empty", field("name"))));
    }
    if earlier.iter().any(|f| f.name == name) {
        return Err(fail("a function of that name comes earlier in the table".into()));
    }
    // SAFETY: a non-null cconv is NUL-terminated by contract.
    let text = unsafe { c_str(function.cconv, FUNCTION, &field("cconv")) }?;
    let Some(pointer) = function.function else {
        return Err(invalid_argument(format!("{FUNCTION}: {} is NULL", field("function"))));
    };
    let cconv = CallingConvention::parse(text).map_err(|e| fail(e.to_string()))?;
    let (Some(arguments), Some(results)) = (plain_kinds(&cconv.arguments), plain_kinds(&cconv.results)) else {
        return Err(fail(format!(
            "calling convention `{text}` has a variadic span, which C native functions cannot take yet"
        )));
    };
    if arguments.contains(&ValueKind::Ref) || results.contains(&ValueKind::Ref) {
        return Err(fail(format!(
            "calling convention `{text}` has a ref; C native functions take scalars only until the HAL's handle types exist"
        )));
    }
    let canonical = cconv.to_string();
    if canonical != text {
        return Err(fail(format!(
            "write calling convention `{text}` as `{canonical}`, the form compilers put in imports (they are matched exactly)"
        )));
    }
    Ok((NativeFunction::new(name, text), Entry { function: pointer, arguments, results }))
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
        let module: Arc<dyn NativeModule> = unsafe { handle::clone(module, FUNCTION, "module") }?;
        context.add_native_module(module).context(FUNCTION)
    })
}
