//! [`ProgramFunction`]: a function kernels call (`@callee`, a region body) and hosts look up, and
//! [`Program`], what it belongs to. The kernel layer defines both and the BEF executor
//! implements `Program` for a BEF file, as TFRT's `Function` sits in host_context below its
//! executor: kernels such as `tfrt.if` or `tfrt.parallel_for` call functions without knowing
//! how they are stored or run.

use std::sync::Arc;

use crate::attribute::AttributeError;
use crate::context::ExecutionContext;
use crate::record::KernelRecord;
use crate::value::Value;
use rtx_host::{join, Diagnostic, IndirectAsyncValue, Location, RcAsyncValue};

/// What a kernel record belongs to: the attributes, locations and names its frame reads, and
/// the functions it refers to by index. Immutable and shared (`Arc`); functions keep it alive.
pub trait Program: Send + Sync + 'static {
    /// The bytes every attribute offset of a kernel record points into.
    fn attributes_section(&self) -> &[u8];

    /// What keeps the attributes section alive, for tensors that borrow its bytes.
    fn attributes_owner(&self) -> Arc<dyn Send + Sync>;

    /// What kernels derived from the program's constants, kept for later calls.
    fn derived(&self) -> &crate::derived::DerivedCache;

    /// The position among `record`'s attributes of the one named `name`.
    fn attribute_position(&self, record: KernelRecord<'_>, name: &str) -> Result<Option<usize>, AttributeError>;

    /// The source location a record's `location` word refers to.
    fn location(&self, location: u32) -> Location;

    /// The name location (`loc("name")`) a record's `location` word refers to, TFRT's debug info.
    fn debug_name(&self, location: u32) -> Option<String>;

    /// The registered name of a record's kernel `code`.
    fn kernel_name(&self, code: u32) -> &str;

    fn num_functions(&self) -> usize;

    /// ProgramFunction `index`'s name (empty for region bodies).
    fn function_name(&self, index: usize) -> &str;

    /// How many arguments and results function `index` has.
    fn function_arity(&self, index: usize) -> (usize, usize);

    /// ProgramFunction `index`'s argument and result types, as the program names them (`i32`,
    /// `!tfrt.chain`).
    fn function_types(&self, index: usize) -> (Vec<&str>, Vec<&str>);

    /// Runs function `index` on `arguments` (which may be unavailable); see [`ProgramFunction::execute`].
    fn execute(
        self: Arc<Self>,
        index: usize,
        context: &ExecutionContext,
        arguments: &[RcAsyncValue],
    ) -> Vec<RcAsyncValue>;

    /// Runs function `index` on plain values, on this thread; see [`ProgramFunction::execute_sync`].
    fn execute_sync(
        self: Arc<Self>,
        index: usize,
        context: &ExecutionContext,
        arguments: &[Value],
    ) -> Result<Vec<Value>, Diagnostic>;
}

/// A function of a [`Program`]: TFRT's `Function`, named for what it belongs to so that it is not
/// mistaken for the runtime's function of a context. Cheap to clone; keeps its program alive.
#[derive(Clone)]
pub struct ProgramFunction {
    program: Arc<dyn Program>,
    index: usize,
}

impl ProgramFunction {
    /// ProgramFunction `index` of `program`; indices come from verified kernel records or the
    /// program's own index.
    pub fn new(program: Arc<dyn Program>, index: usize) -> ProgramFunction {
        debug_assert!(index < program.num_functions());
        ProgramFunction { program, index }
    }

    pub fn program(&self) -> &Arc<dyn Program> {
        &self.program
    }

    /// The function's position in its program.
    pub fn index(&self) -> usize {
        self.index
    }

    pub fn name(&self) -> &str {
        self.program.function_name(self.index)
    }

    /// The argument types as the program names them (`i32`, `!tfrt.chain`).
    pub fn argument_types(&self) -> Vec<&str> {
        self.program.function_types(self.index).0
    }

    pub fn result_types(&self) -> Vec<&str> {
        self.program.function_types(self.index).1
    }

    pub fn num_arguments(&self) -> usize {
        self.program.function_arity(self.index).0
    }

    pub fn num_results(&self) -> usize {
        self.program.function_arity(self.index).1
    }

    /// Runs the function on `arguments` (which may be unavailable) and returns one value per
    /// result, unavailable until computed. Never blocks: kernels run on this thread until they
    /// wait, the rest continues on the threads that make values available and on the work queue.
    pub fn execute(&self, context: &ExecutionContext, arguments: &[RcAsyncValue]) -> Vec<RcAsyncValue> {
        Arc::clone(&self.program).execute(self.index, context, arguments)
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
        Arc::clone(&self.program).execute_sync(self.index, context, arguments)
    }

    /// Runs a sync function on async values: once they are all available it runs on the thread
    /// that made the last one so, and its results (or the first argument's error) become the
    /// returned values.
    pub fn execute_sync_when_ready(&self, context: &ExecutionContext, arguments: &[RcAsyncValue]) -> Vec<RcAsyncValue> {
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
}

impl std::fmt::Debug for ProgramFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgramFunction").field("name", &self.name()).field("index", &self.index).finish()
    }
}
