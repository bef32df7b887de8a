//! A BEF file as the kernel layer's [`Program`]: its functions run by the dataflow executor,
//! by a plan, by the sync interpreter, or by the host (native functions), and its attributes,
//! locations and kernel names read by frames. [`BefFile::function`] and friends hand out the
//! kernel layer's [`ProgramFunction`] handles.

use std::sync::Arc;

use super::{dataflow, interpreter, Plan};
use crate::format::FunctionKind;
use crate::reader::{BefFile, FunctionInfo};
use rtx_host::{tracing, Diagnostic, Location, RcAsyncValue, StatusCode};
use rtx_kernel::derived::DerivedCache;
use rtx_kernel::{AttributeError, ExecutionContext, KernelRecord, Program, ProgramFunction, Value};

impl BefFile {
    /// ProgramFunction `index` of this file; indices come from verified kernel records or the index.
    pub fn function(self: &Arc<Self>, index: usize) -> ProgramFunction {
        ProgramFunction::new(Arc::clone(self) as Arc<dyn Program>, index)
    }

    /// The function named `name`.
    pub fn function_named(self: &Arc<Self>, name: &str) -> Option<ProgramFunction> {
        self.function_index(name).map(|index| self.function(index))
    }

    /// Every function, in the order of the function index (region bodies included, with empty
    /// names).
    pub fn functions(self: &Arc<Self>) -> Vec<ProgramFunction> {
        (0..self.num_functions()).map(|index| self.function(index)).collect()
    }

    fn info(&self, index: usize) -> &FunctionInfo {
        self.function_info(index).expect("function indices are verified")
    }

    /// The function's plan, built on its first call. Two first calls racing both build one and
    /// the first stored wins, so no caller waits for another's build.
    fn plan(self: &Arc<Self>, index: usize, context: &ExecutionContext) -> Option<&Plan> {
        let cell = self.plan_cell(index);
        if cell.get().is_none() {
            let _ = cell.set(Plan::build(self, self.info(index), context));
        }
        cell.get().and_then(Option::as_ref)
    }

    fn arity_error(&self, index: usize, given: usize) -> Diagnostic {
        let info = self.info(index);
        Diagnostic::new(
            StatusCode::InvalidArgument,
            format!("'{}' takes {} arguments but was given {given}", info.name, info.arguments.len()),
        )
    }
}

impl Program for BefFile {
    fn attributes_section(&self) -> &[u8] {
        self.image().attributes_section()
    }

    fn attributes_owner(&self) -> Arc<dyn Send + Sync> {
        Arc::clone(self.image()) as Arc<dyn Send + Sync>
    }

    fn derived(&self) -> &DerivedCache {
        &self.derived
    }

    fn attribute_position(&self, record: KernelRecord<'_>, name: &str) -> Result<Option<usize>, AttributeError> {
        self.image().attribute_position(record, name)
    }

    fn location(&self, location: u32) -> Location {
        self.image().location(location).to_location()
    }

    fn debug_name(&self, location: u32) -> Option<String> {
        self.image().debug_name(location)
    }

    fn kernel_name(&self, code: u32) -> &str {
        self.image().kernel_name(code)
    }

    fn num_functions(&self) -> usize {
        self.image().num_functions()
    }

    fn function_name(&self, index: usize) -> &str {
        &self.info(index).name
    }

    fn function_arity(&self, index: usize) -> (usize, usize) {
        let info = self.info(index);
        (info.arguments.len(), info.results.len())
    }

    fn function_types(&self, index: usize) -> (Vec<&str>, Vec<&str>) {
        let info = self.info(index);
        let names = |types: &[u32]| types.iter().map(|&t| self.type_name(t)).collect();
        (names(&info.arguments), names(&info.results))
    }

    fn execute(
        self: Arc<Self>,
        index: usize,
        context: &ExecutionContext,
        arguments: &[RcAsyncValue],
    ) -> Vec<RcAsyncValue> {
        let info = self.info(index);
        if arguments.len() != info.arguments.len() {
            let error = RcAsyncValue::error(self.arity_error(index, arguments.len()));
            return vec![error; info.results.len()];
        }
        match (info.kind, &info.body, self.native_function(index)) {
            (FunctionKind::Async, Some(body), _) => {
                // A plan runs its kernels as straight-line code with no kernel of its own to
                // show: traced, the function runs on the dataflow executor, kernel by kernel.
                let plan = if tracing::is_on() { None } else { self.plan(index, context) };
                match plan.and_then(|plan| plan.run(context, arguments)) {
                    Some(results) => results,
                    None => dataflow::execute(&self, body, context, arguments),
                }
            }
            (FunctionKind::Native, _, Some(native)) => {
                let mut results = vec![None; info.results.len()];
                native(arguments, &mut results, context);
                let unset = |i| {
                    Diagnostic::new(
                        StatusCode::Internal,
                        format!("native function '{}' did not set result {i}", info.name),
                    )
                };
                results
                    .into_iter()
                    .enumerate()
                    .map(|(i, r)| r.unwrap_or_else(|| RcAsyncValue::error(unset(i))))
                    .collect()
            }
            _ => self.function(index).execute_sync_when_ready(context, arguments),
        }
    }

    fn execute_sync(
        self: Arc<Self>,
        index: usize,
        context: &ExecutionContext,
        arguments: &[Value],
    ) -> Result<Vec<Value>, Diagnostic> {
        let info = self.info(index);
        if arguments.len() != info.arguments.len() {
            return Err(self.arity_error(index, arguments.len()));
        }
        match (&info.body, info.kind) {
            (Some(body), FunctionKind::Sync) => interpreter::execute(&self, body, context, arguments),
            _ => Err(Diagnostic::new(
                StatusCode::InvalidArgument,
                format!("'{}' is not a sync function; call it with async values", info.name),
            )),
        }
    }
}
