//! [`Function`]: one function of an open BEF file, callable with async values or plain values.

use std::sync::Arc;

use super::{dataflow, interpreter, Plan};
use crate::bef::format::FunctionKind;
use crate::bef::reader::{BefFile, FunctionInfo};
use crate::kernel::{ExecutionContext, Value};
use rtx_host::{join, Diagnostic, IndirectAsyncValue, RcAsyncValue, StatusCode};

/// A function of a BEF file (named, or a region body). Cheap to clone; keeps its file alive.
#[derive(Clone)]
pub struct Function {
    file: Arc<BefFile>,
    index: usize,
}

impl Function {
    /// Function `index` of `file`; indices come from verified kernel records or the index.
    pub(crate) fn new(file: Arc<BefFile>, index: usize) -> Function {
        debug_assert!(index < file.num_functions());
        Function { file, index }
    }

    /// The function named `name` in `file`.
    pub fn lookup(file: &Arc<BefFile>, name: &str) -> Option<Function> {
        file.function_index(name).map(|index| Function::new(Arc::clone(file), index))
    }

    /// Every function of `file`, in the order of the function index (region bodies included,
    /// with empty names).
    pub fn all(file: &Arc<BefFile>) -> Vec<Function> {
        (0..file.num_functions()).map(|index| Function::new(Arc::clone(file), index)).collect()
    }

    pub fn file(&self) -> &Arc<BefFile> {
        &self.file
    }

    pub fn info(&self) -> &FunctionInfo {
        self.file.function_info(self.index).expect("function indices are verified")
    }

    pub fn name(&self) -> &str {
        &self.info().name
    }

    pub fn kind(&self) -> FunctionKind {
        self.info().kind
    }

    pub fn num_arguments(&self) -> usize {
        self.info().arguments.len()
    }

    pub fn num_results(&self) -> usize {
        self.info().results.len()
    }

    /// Where the function is defined (unknown for native functions).
    pub fn location(&self) -> crate::bef::reader::BefLocation {
        match &self.info().body {
            Some(body) => self.file.location(body.location),
            None => crate::bef::reader::BefLocation::Unknown,
        }
    }

    /// The argument types as the file names them (`i32`, `!tfrt.chain`).
    pub fn argument_types(&self) -> Vec<&str> {
        self.info().arguments.iter().map(|&t| self.file.type_name(t)).collect()
    }

    pub fn result_types(&self) -> Vec<&str> {
        self.info().results.iter().map(|&t| self.file.type_name(t)).collect()
    }

    /// Runs the function on `arguments` (which may be unavailable) and returns one value per
    /// result, unavailable until computed. Never blocks: kernels run on this thread until they
    /// wait, the rest continues on the threads that make values available and on the work queue.
    pub fn execute(&self, context: &ExecutionContext, arguments: &[RcAsyncValue]) -> Vec<RcAsyncValue> {
        if arguments.len() != self.num_arguments() {
            let error = RcAsyncValue::error(self.arity_error(arguments.len()));
            return vec![error; self.num_results()];
        }
        let info = self.info();
        match (info.kind, &info.body, self.file.native_function(self.index)) {
            (FunctionKind::Async, Some(body), _) => {
                match self.plan(info, context).and_then(|plan| plan.run(context, arguments)) {
                    Some(results) => results,
                    None => dataflow::execute(&self.file, body, context, arguments),
                }
            }
            (FunctionKind::Native, _, Some(native)) => {
                let mut results = vec![None; info.results.len()];
                native(arguments, &mut results, context);
                results
                    .into_iter()
                    .enumerate()
                    .map(|(i, r)| r.unwrap_or_else(|| RcAsyncValue::error(self.unset_result(i))))
                    .collect()
            }
            _ => self.execute_sync_async(context, arguments),
        }
    }

    /// The function's plan, built on its first call. Two first calls racing both build one and
    /// the first stored wins, so no caller waits for another's build.
    fn plan(&self, info: &FunctionInfo, context: &ExecutionContext) -> Option<&Plan> {
        let cell = self.file.plan_cell(self.index);
        if cell.get().is_none() {
            let _ = cell.set(Plan::build(&self.file, info, context));
        }
        cell.get().and_then(Option::as_ref)
    }

    /// Like [`execute`](Self::execute), but the whole run starts in a task on the work queue, so
    /// the caller never runs any of its kernels (parallel loop iterations).
    pub fn execute_in_task(&self, context: &ExecutionContext, arguments: &[RcAsyncValue]) -> Vec<RcAsyncValue> {
        let results: Vec<IndirectAsyncValue> = (0..self.num_results()).map(|_| IndirectAsyncValue::new()).collect();
        let values = results.iter().map(|r| r.value()).collect();
        let (function, task_context, owned) = (self.clone(), context.clone(), arguments.to_vec());
        context.host().work_queue().add_task(Box::new(move || {
            for (result, value) in results.iter().zip(function.execute(&task_context, &owned)) {
                let _ = result.forward_to(value);
            }
        }));
        values
    }

    /// Runs a sync function on plain values, on this thread. Async functions are refused.
    pub fn execute_sync(&self, context: &ExecutionContext, arguments: &[Value]) -> Result<Vec<Value>, Diagnostic> {
        if arguments.len() != self.num_arguments() {
            return Err(self.arity_error(arguments.len()));
        }
        match (&self.info().body, self.kind()) {
            (Some(body), FunctionKind::Sync) => interpreter::execute(&self.file, body, context, arguments),
            _ => Err(Diagnostic::new(
                StatusCode::InvalidArgument,
                format!("'{}' is not a sync function; call it with async values", self.name()),
            )),
        }
    }

    /// A sync function called with async values: once they are all available it runs on the
    /// thread that made the last one so.
    fn execute_sync_async(&self, context: &ExecutionContext, arguments: &[RcAsyncValue]) -> Vec<RcAsyncValue> {
        let results: Vec<IndirectAsyncValue> = (0..self.num_results()).map(|_| IndirectAsyncValue::new()).collect();
        let values = results.iter().map(|r| r.value()).collect();
        let (function, context, owned) = (self.clone(), context.clone(), arguments.to_vec());
        join::run_when_ready(arguments, move || {
            let outcome = match owned.iter().find_map(|a| a.get_error()) {
                Some(error) => Err(error.clone()),
                None => {
                    let plain: Vec<Value> = owned.into_iter().map(Value::from_async).collect();
                    function.execute_sync(&context, &plain)
                }
            };
            match outcome {
                Ok(values) => {
                    for (result, value) in results.iter().zip(values) {
                        let _ = result.forward_to(value.into_async());
                    }
                }
                Err(error) => {
                    let error = RcAsyncValue::error(error);
                    for result in &results {
                        let _ = result.forward_to(error.clone());
                    }
                }
            }
        });
        values
    }

    fn arity_error(&self, given: usize) -> Diagnostic {
        Diagnostic::new(
            StatusCode::InvalidArgument,
            format!("'{}' takes {} arguments but was given {given}", self.name(), self.num_arguments()),
        )
    }

    fn unset_result(&self, i: usize) -> Diagnostic {
        Diagnostic::new(StatusCode::Internal, format!("native function '{}' did not set result {i}", self.name()))
    }
}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Function").field("name", &self.name()).field("kind", &self.kind()).finish()
    }
}
