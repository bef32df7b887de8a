//! [`ScalarModule`]: a VM module whose functions the host writes, on scalars (i32, i64, f32,
//! f64). Bytecode modules import them like IREE's `check` or `hal` functions, and hosts call
//! them with [`Context::invoke`](crate::Context::invoke). The C API's native modules are these,
//! with C callbacks behind [`ScalarFunctions`].
//!
//! Scalars only: a ref needs a handle type the host can hold, so a calling convention with a
//! ref or a variadic span is refused when the module is made.

use std::any::Any;
use std::sync::Arc;

use rtx_host::{Diagnostic, StatusCode};
use rtx_vm::abi::{plain_kinds, CallingConvention, ValueKind};
use rtx_vm::native::{Arg, Arguments, NativeFunction, NativeModule, NativeOutcome, NativeState};
use rtx_vm::value::Value;

/// One argument or result of a scalar function.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
}

impl Scalar {
    /// A zero of `kind`, which is never a ref (the module refuses refs).
    fn zero(kind: ValueKind) -> Scalar {
        match kind {
            ValueKind::I32 => Scalar::I32(0),
            ValueKind::I64 => Scalar::I64(0),
            ValueKind::F32 => Scalar::F32(0.0),
            ValueKind::F64 => Scalar::F64(0.0),
            ValueKind::Ref => unreachable!("scalar modules have no refs"),
        }
    }

    pub fn kind(self) -> ValueKind {
        match self {
            Scalar::I32(_) => ValueKind::I32,
            Scalar::I64(_) => ValueKind::I64,
            Scalar::F32(_) => ValueKind::F32,
            Scalar::F64(_) => ValueKind::F64,
        }
    }

    fn into_value(self) -> Value {
        match self {
            Scalar::I32(v) => Value::I32(v),
            Scalar::I64(v) => Value::I64(v),
            Scalar::F32(v) => Value::F32(v),
            Scalar::F64(v) => Value::F64(v),
        }
    }
}

/// What the host supplies: the functions' code and the state they keep per context.
pub trait ScalarFunctions: Send + Sync {
    /// One context's state, made when the module is added to it.
    fn create_state(&self) -> Result<Box<dyn Any + Send>, Diagnostic>;

    /// Runs function `index` of the module on `arguments`, which have the kinds its calling
    /// convention declares, writing `results`, which hold zeros of the declared kinds on entry.
    /// Calls for one context never overlap; calls for different contexts may.
    fn call(
        &self,
        state: &mut (dyn Any + Send),
        index: usize,
        arguments: &[Scalar],
        results: &mut [Scalar],
    ) -> Result<(), Diagnostic>;
}

/// A module of host functions on scalars; immutable and shared (`Arc`).
pub struct ScalarModule {
    name: String,
    version: u32,
    functions: Vec<NativeFunction>,
    kinds: Vec<(Vec<ValueKind>, Vec<ValueKind>)>,
    host: Arc<dyn ScalarFunctions>,
}

fn invalid(message: String) -> Diagnostic {
    Diagnostic::new(StatusCode::InvalidArgument, message)
}

impl ScalarModule {
    /// The module `name` (what imports write before the first `.`) of `functions`, each a name
    /// and a calling convention exactly as compilers write it in imports (`"0ii_i"`: import
    /// resolution compares the strings byte for byte); a function's position is its index in
    /// [`ScalarFunctions::call`]. INVALID_ARGUMENT, naming the function, for an empty name or
    /// one with a `.`, a duplicate or empty function name, or a calling convention that is
    /// malformed (with the byte offset), not in the form compilers write (with that form), or
    /// that has a ref or a variadic span. `host` makes the functions' code, and is called only
    /// once the table is valid: a refused table takes over nothing of the host's.
    pub fn new(
        name: &str,
        version: u32,
        functions: &[(&str, &str)],
        host: impl FnOnce() -> Arc<dyn ScalarFunctions>,
    ) -> Result<ScalarModule, Diagnostic> {
        if name.is_empty() || name.contains('.') {
            return Err(invalid(format!(
                "module name `{name}` must be non-empty and contain no `.` (imports split on the first `.`)"
            )));
        }
        let mut natives: Vec<NativeFunction> = Vec::with_capacity(functions.len());
        let mut kinds = Vec::with_capacity(functions.len());
        for (index, &(function, cconv)) in functions.iter().enumerate() {
            let fail = |message: String| invalid(format!("function {index} (`{name}.{function}`): {message}"));
            if function.is_empty() {
                return Err(invalid(format!("function {index} has an empty name")));
            }
            if natives.iter().any(|f| f.name == function) {
                return Err(fail("a function of that name comes earlier in the table".into()));
            }
            let parsed = CallingConvention::parse(cconv).map_err(|e| fail(e.to_string()))?;
            let (Some(arguments), Some(results)) = (plain_kinds(&parsed.arguments), plain_kinds(&parsed.results))
            else {
                return Err(fail(format!(
                    "calling convention `{cconv}` has a variadic span, which scalar functions cannot take"
                )));
            };
            if arguments.contains(&ValueKind::Ref) || results.contains(&ValueKind::Ref) {
                return Err(fail(format!(
                    "calling convention `{cconv}` has a ref; host functions take scalars only until the HAL's handle types exist"
                )));
            }
            let canonical = parsed.to_string();
            if canonical != cconv {
                return Err(fail(format!(
                    "write calling convention `{cconv}` as `{canonical}`, the form compilers put in imports (they are matched exactly)"
                )));
            }
            natives.push(NativeFunction::new(function, cconv));
            kinds.push((arguments, results));
        }
        Ok(ScalarModule { name: name.to_owned(), version, functions: natives, kinds, host: host() })
    }
}

impl NativeModule for ScalarModule {
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
        self.host.create_state()
    }

    fn call(
        &self,
        state: &mut NativeState,
        ordinal: usize,
        arguments: Arguments<'_>,
        values: &mut Vec<Value>,
    ) -> Result<NativeOutcome, Diagnostic> {
        let (Some((argument_kinds, result_kinds)), Some(function)) =
            (self.kinds.get(ordinal), self.functions.get(ordinal))
        else {
            return Err(Diagnostic::new(
                StatusCode::Internal,
                format!("scalar module `{}` has no function {ordinal}", self.name),
            ));
        };
        // Named only in errors: formatting it on every call would allocate.
        let full_name = || format!("{}.{}", self.name, function.name);
        if arguments.len() != argument_kinds.len() {
            return Err(invalid(format!(
                "`{}` (calling convention `{}`) takes {} arguments, got {}",
                full_name(),
                function.cconv,
                argument_kinds.len(),
                arguments.len()
            )));
        }
        let scalars = arguments
            .iter()
            .zip(argument_kinds)
            .enumerate()
            .map(|(index, (value, &kind))| match (kind, value) {
                (ValueKind::I32, Arg::I32(v)) => Ok(Scalar::I32(v)),
                (ValueKind::I64, Arg::I64(v)) => Ok(Scalar::I64(v)),
                (ValueKind::F32, Arg::F32(v)) => Ok(Scalar::F32(v)),
                (ValueKind::F64, Arg::F64(v)) => Ok(Scalar::F64(v)),
                _ => Err(invalid(format!(
                    "argument {index} of `{}`: expected {} but got {}",
                    full_name(),
                    kind.name(),
                    value.type_name()
                ))),
            })
            .collect::<Result<Vec<Scalar>, Diagnostic>>()?;
        let mut results: Vec<Scalar> = result_kinds.iter().map(|&kind| Scalar::zero(kind)).collect();
        self.host
            .call(state.as_mut(), ordinal, &scalars, &mut results)
            .map_err(|e| e.context(format_args!("`{}`", full_name())))?;
        for (index, (result, &kind)) in results.iter().zip(result_kinds).enumerate() {
            if result.kind() != kind {
                return Err(Diagnostic::new(
                    StatusCode::Internal,
                    format!(
                        "`{}` set result {index} to {}, not the declared {}",
                        full_name(),
                        result.kind().name(),
                        kind.name()
                    ),
                ));
            }
        }
        values.extend(results.into_iter().map(Scalar::into_value));
        Ok(NativeOutcome::Ready)
    }
}
