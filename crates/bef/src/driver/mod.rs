//! TFRT's `bef_executor` test driver as a library: runs the zero-argument functions of a BEF file
//! (or the named ones) one by one and prints what TFRT's driver prints, so that the `rtx
//! bef-exec` command and embedders produce the same text.
//!
//! For each function, in function-index order: `--- Not running 'f' because it has arguments.`,
//! or `--- Running 'f':`, then the kernels' output, then `'f' returned v1,v2` when it has results
//! (i1/i32/i64 as integers, f32/f64 as C's `%e`, other types as `TYPE value`, errors as
//! `<<error: MESSAGE>>`, with `, code: CODE` under `print_error_code`). The work queue is
//! quiesced after each function. Runtime errors are checked against the `expected-error`
//! comments of the source file they point into (see [`expected`]).

pub(crate) mod expected;

use std::sync::{Arc, Mutex, PoisonError};

use super::format::FunctionKind;
use super::reader::BefFile;
use expected::ExpectedDiagnostics;
use rtx_host::tracing::{self, Category};
use rtx_host::{Diagnostic, HostContext, RcAsyncValue};
use rtx_kernel::library::print::c_exponent;
use rtx_kernel::ProgramFunction;
use rtx_kernel::{ExecutionContext, OutputHandler, Value};

/// Which functions to run and how to print results.
#[derive(Clone, Debug, Default)]
pub struct DriverOptions {
    /// Run these, in this order (every function when empty).
    pub functions: Vec<String>,
    /// Run this one first (once, even if listed in `functions`).
    pub test_init_function: Option<String>,
    /// Print error codes with error results.
    pub print_error_code: bool,
}

/// Runs files as TFRT's driver does; see the module documentation.
pub struct Driver {
    host: Arc<HostContext>,
    output: OutputHandler,
    errors: OutputHandler,
    expected: Arc<Mutex<ExpectedDiagnostics>>,
}

impl Driver {
    /// A driver on `host` that writes results and kernel output with `output`, and diagnostics
    /// (one line each, with its newline) with `errors`.
    pub fn new(host: Arc<HostContext>, output: OutputHandler, errors: OutputHandler) -> Driver {
        Driver { host, output, errors, expected: Arc::default() }
    }

    /// Reports a runtime error (or a load error with a location, such as an unknown kernel).
    pub fn report(&self, diagnostic: &Diagnostic, message: &str) {
        let unexpected = self.expected.lock().unwrap_or_else(PoisonError::into_inner).check(diagnostic, message);
        if let Some(line) = unexpected {
            (self.errors)(&format!("{line}\n"));
        }
    }

    /// Runs the chosen functions of `file`. Fails, running nothing, when a named function does
    /// not exist.
    pub fn run(&self, file: &Arc<BefFile>, options: &DriverOptions) -> Result<(), String> {
        let _executor = tracing::span(Category::Driver, || "Bef Executor", tracing::Args::none);
        let find = |name: &str| file.function_named(name).ok_or_else(|| format!("couldn't find function {name}"));
        let chosen = if options.functions.is_empty() {
            file.functions()
        } else {
            options.functions.iter().map(|name| find(name)).collect::<Result<_, _>>()?
        };
        let init = options.test_init_function.as_deref().and_then(|name| file.function_named(name));
        if let Some(init) = &init {
            self.run_function(file, init, options.print_error_code);
        }
        let is_init = |f: &ProgramFunction| init.as_ref().is_some_and(|i| i.name() == f.name());
        for function in chosen.iter().filter(|f| !is_init(f)) {
            self.run_function(file, function, options.print_error_code);
        }
        Ok(())
    }

    /// Whether every runtime error was expected and every expected one happened; reports the
    /// misses.
    pub fn verify(&self) -> bool {
        let expected = self.expected.lock().unwrap_or_else(PoisonError::into_inner);
        expected.verify(&mut |line| (self.errors)(&format!("{line}\n")))
    }

    fn run_function(&self, file: &BefFile, function: &ProgramFunction, print_error_code: bool) {
        let name = function.name();
        if function.num_arguments() > 0 {
            (self.output)(&format!("--- Not running '{name}' because it has arguments.\n"));
            return;
        }
        if name.is_empty() {
            return;
        }
        (self.output)(&format!("--- Running '{name}':\n"));
        let _function = tracing::span(Category::Driver, || format!("Function: {name}"), tracing::Args::none);
        // A request per function: `tfrt.once` and cancellation do not carry over.
        let expected = Arc::clone(&self.expected);
        let errors = Arc::clone(&self.errors);
        let context = ExecutionContext::with_handlers(
            Arc::clone(&self.host),
            Arc::new(move |diagnostic: &Diagnostic| {
                let message = format!("runtime error: {}", diagnostic.message);
                let unexpected = expected.lock().unwrap_or_else(PoisonError::into_inner).check(diagnostic, &message);
                if let Some(line) = unexpected {
                    errors(&format!("{line}\n"));
                }
            }),
            Arc::clone(&self.output),
        );
        let types = function.result_types();
        let printed: Option<Vec<String>> =
            if file.function_info(function.index()).is_some_and(|info| info.kind == FunctionKind::Sync) {
                match function.execute_sync(&context, &[]) {
                    Err(error) => Some(vec![format!("<<error: {}>>", error.message)]),
                    Ok(values) => Some(values.iter().zip(&types).map(|(v, t)| format_value(t, v)).collect()),
                }
            } else {
                let results = function.execute(&context, &[]);
                // Only the `s` queue can fail here, and only on its own thread, which this is not.
                let _ = self.host.await_values(&results);
                Some(results.iter().zip(&types).map(|(r, t)| format_result(t, r, print_error_code)).collect())
            };
        if let Some(printed) = printed.filter(|p| !p.is_empty()) {
            (self.output)(&format!("'{name}' returned {}\n", printed.join(",")));
        }
        let _ = self.host.quiesce();
    }
}

/// A function result as TFRT's driver prints it.
pub fn format_result(type_name: &str, value: &RcAsyncValue, print_error_code: bool) -> String {
    if let Some(error) = value.get_error() {
        return match print_error_code {
            true => format!("<<error: {}, code: {}>>", error.message, error.code),
            false => format!("<<error: {}>>", error.message),
        };
    }
    let shown = match type_name {
        "i1" => value.try_get::<bool>().ok().map(|&v| i32::from(v).to_string()),
        "i32" => value.try_get::<i32>().ok().map(i32::to_string),
        "i64" => value.try_get::<i64>().ok().map(i64::to_string),
        "f32" => value.try_get::<f32>().ok().map(|&v| c_exponent(v.into())),
        "f64" => value.try_get::<f64>().ok().map(|&v| c_exponent(v)),
        _ => None,
    };
    shown.unwrap_or_else(|| format!("{type_name} value"))
}

/// A sync function's result as TFRT's driver prints it.
fn format_value(type_name: &str, value: &Value) -> String {
    format_result(type_name, &value.clone().into_async(), false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtx_host::{AsyncValueRef, Chain, StatusCode};

    #[test]
    fn results_print_as_tfrt_prints_them() {
        let of = |v: RcAsyncValue, t| format_result(t, &v, false);
        assert_eq!(of(AsyncValueRef::available(true).into_untyped(), "i1"), "1");
        assert_eq!(of(AsyncValueRef::available(-3i64).into_untyped(), "i64"), "-3");
        assert_eq!(of(AsyncValueRef::available(1.5f32).into_untyped(), "f32"), "1.500000e+00");
        assert_eq!(of(Chain::ready().into_untyped(), "!tfrt.chain"), "!tfrt.chain value");
        let error = RcAsyncValue::error(Diagnostic::new(StatusCode::Internal, "something bad happened"));
        assert_eq!(of(error.clone(), "i32"), "<<error: something bad happened>>");
        assert_eq!(format_result("i32", &error, true), "<<error: something bad happened, code: INTERNAL>>");
    }
}
