//! [`Context`]: where programs run — a host context (work queue, allocator, cancellation), the
//! device its tensor programs use, and the instances of the modules added to it.

use std::sync::Arc;

use super::instance::Runtime;
use super::invocation::{self, plural};
use super::module::Module;
use crate::hal::device::DeviceKind;
use crate::hal::fence::Fence;
use crate::hal::module::HalModule;
use crate::host::work_queue::WorkQueueSpec;
use crate::host::{Diagnostic, HostAllocator, HostContext, RcAsyncValue, StatusCode, SystemAllocator, WorkQueue};
use crate::vm::abi::{plain_kinds, AbiModel, CallingConvention, ValueKind};
use crate::vm::context::{Context as VmContext, FunctionHandle};
use crate::vm::native::NativeModule;
use crate::vm::refs::Ref;
use crate::vm::value::Value;

/// The name of the native module that tensor programs import, and that a device provides.
pub const HAL_MODULE: &str = "hal";

/// Which work queue a new context runs on.
pub enum QueueChoice {
    /// A queue by its config string (`s`, `mstd`, `mstd:N,M`): multi-threaded ones are the
    /// runtime's, shared with its other contexts; a single-threaded one is the context's own.
    Spec(WorkQueueSpec),
    /// A queue the host provides (its own threads), the context's alone.
    Own(Arc<dyn WorkQueue>),
}

/// How [`Runtime::context_with`] builds a context.
pub struct ContextOptions {
    pub work_queue: QueueChoice,
    /// Where the runtime's bulk memory (buffers) comes from.
    pub allocator: Arc<dyn HostAllocator>,
}

impl ContextOptions {
    /// The defaults with the queue a config string names.
    pub fn from_spec(spec: &str) -> Result<ContextOptions, Diagnostic> {
        Ok(ContextOptions { work_queue: QueueChoice::Spec(WorkQueueSpec::parse(spec)?), ..ContextOptions::default() })
    }
}

impl Default for ContextOptions {
    /// The runtime's multi-threaded queue with one worker per core, and the system allocator.
    fn default() -> ContextOptions {
        let spec = WorkQueueSpec::parse("mstd").unwrap_or(WorkQueueSpec::SingleThreaded);
        ContextOptions { work_queue: QueueChoice::Spec(spec), allocator: Arc::new(SystemAllocator) }
    }
}

/// A context: made by a [`Runtime`]; thread-safe. Dropping the last handle waits for the
/// context's pending work, then runs its modules' `__deinit`.
pub struct Context {
    /// Declared first so that `__deinit` runs while the work queue still exists.
    vm: VmContext,
    /// Only this struct holds the `Arc` for good: queued work holds a `Weak` (see
    /// [`invocation`]), so the context, its queue and its threads go away on the thread that
    /// drops it.
    host: Arc<HostContext>,
    runtime: Runtime,
}

/// A function of a context, with the kinds of its arguments and results.
#[derive(Clone, Debug)]
pub struct Function {
    pub handle: FunctionHandle,
    /// Every argument the calling convention declares, fences of `coarse-fences` included.
    pub arguments: Vec<ValueKind>,
    pub results: Vec<ValueKind>,
}

impl Function {
    /// The name, `module.function`.
    pub fn name(&self) -> &str {
        &self.handle.full_name
    }

    /// How many arguments a caller supplies: all but the fences of a `coarse-fences` function,
    /// which the call can make itself.
    pub fn declared_arguments(&self) -> usize {
        self.arguments.len() - self.handle.model.fence_arguments()
    }

    /// Whether the function takes a wait and a signal fence after its declared arguments.
    pub fn takes_fences(&self) -> bool {
        self.handle.model == AbiModel::CoarseFences
    }

    /// Whether a call may pass `count` arguments: the declared ones, or (`coarse-fences`) those
    /// and the two fences.
    pub fn accepts_arguments(&self, count: usize) -> bool {
        count == self.declared_arguments() || (self.takes_fences() && count == self.declared_arguments() + 2)
    }

    /// What a call passes, for errors: `` `m.f` (calling convention `0i_i`) takes 1 argument``,
    /// with the fenced count for a `coarse-fences` function.
    pub fn describe_arguments(&self) -> String {
        let declared = self.declared_arguments();
        let fences = if self.takes_fences() {
            format!(" (coarse-fences: or {} with a wait and a signal fence)", declared + 2)
        } else {
            String::new()
        };
        format!(
            "`{}` (calling convention `{}`) takes {}{fences}",
            self.name(),
            self.handle.cconv,
            plural(declared, "argument")
        )
    }
}

impl Context {
    pub(super) fn new(runtime: Runtime, host: HostContext) -> Context {
        Context { vm: VmContext::new(), host: Arc::new(host), runtime }
    }

    /// The work queue, allocator and cancellation of this context.
    pub fn host(&self) -> &Arc<HostContext> {
        &self.host
    }

    /// The linked VM modules, for hosts that drive the VM directly.
    pub fn vm(&self) -> &VmContext {
        &self.vm
    }

    /// The runtime this context was made by.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Gives the context the device named by `uri` to run tensor programs on: `local-sync` (the
    /// CPU, every dispatch inline on the calling thread) or `local-task` (workgroups spread over
    /// the runtime's worker threads); `local-sync://` and `local-task://` too. This adds the
    /// `hal` module over the device, so it comes before modules compiled from tensor code. One
    /// device per context: ALREADY_EXISTS for a second one; NOT_FOUND for an unknown name.
    pub fn add_device(&self, uri: &str) -> Result<(), Diagnostic> {
        let kind = DeviceKind::parse(uri)?;
        if self.has_device() {
            return Err(Diagnostic::new(
                StatusCode::AlreadyExists,
                format!(
                    "the context already has a device (its `{HAL_MODULE}` module); rtx runs a context's tensor \
                     programs on one device"
                ),
            ));
        }
        self.vm.add_native_module(Arc::new(HalModule::new(vec![self.runtime.device(kind)])))
    }

    fn has_device(&self) -> bool {
        self.vm.module_names().iter().any(|m| m == HAL_MODULE)
    }

    /// Adds `module`: checks its dependencies against the modules added before it, resolves its
    /// imports, creates its state and runs its `__init`. A module that imports `hal` needs a
    /// device first (FAILED_PRECONDITION otherwise). On failure the context is as it was.
    pub fn add_module(&self, module: &Module) -> Result<(), Diagnostic> {
        match module {
            Module::Vm(module) => {
                if needs_device(module) && !self.has_device() {
                    return Err(Diagnostic::new(
                        StatusCode::FailedPrecondition,
                        format!(
                            "module `{}` runs tensor programs (it imports `{HAL_MODULE}`), but the context has no \
                             device: add one (e.g. \"local-sync\") before adding it",
                            module.name()
                        ),
                    ));
                }
                self.vm.add_module(Arc::clone(module))
            }
        }
    }

    /// Adds a module implemented by the host; modules added afterwards can import its functions.
    pub fn add_native_module(&self, module: Arc<dyn NativeModule>) -> Result<(), Diagnostic> {
        self.vm.add_native_module(module)
    }

    /// Finds `name` (`module.function`, or a bare name in the most recently added bytecode
    /// module) and the kinds of its arguments and results.
    pub fn function(&self, name: &str) -> Result<Function, Diagnostic> {
        let handle = self.vm.lookup(name)?;
        let cconv = CallingConvention::parse(&handle.cconv).map_err(|e| {
            Diagnostic::new(
                StatusCode::InvalidArgument,
                format!("`{}` has an unusable calling convention: {e}", handle.full_name),
            )
        })?;
        let (Some(arguments), Some(results)) = (plain_kinds(&cconv.arguments), plain_kinds(&cconv.results)) else {
            return Err(Diagnostic::new(
                StatusCode::InvalidArgument,
                format!(
                    "`{}` (calling convention `{}`) takes a variadic span, which only imports can",
                    handle.full_name, handle.cconv
                ),
            ));
        };
        Ok(Function { handle, arguments, results })
    }

    /// Calls `function` without blocking: the call runs on the context's work queue once every
    /// argument is available, and the returned values (one per result, unavailable at first)
    /// become its results or its error. See [`invocation`] for what each argument may be.
    pub fn invoke(&self, function: &Function, arguments: &[RcAsyncValue]) -> Result<Vec<RcAsyncValue>, Diagnostic> {
        invocation::start(&self.host, &self.vm, function, arguments)
    }

    /// Calls `function` with VM values on the calling thread and returns once its results are
    /// ready, waiting on the signal fence of a `coarse-fences` function as IREE's tools do.
    /// What the tools use; hosts that must not block use [`invoke`](Self::invoke).
    pub fn call(&self, function: &FunctionHandle, mut arguments: Vec<Value>) -> Result<Vec<Value>, Diagnostic> {
        if function.model != AbiModel::CoarseFences {
            return self.vm.invoke(function, arguments);
        }
        // No wait fence (null), a new signal fence, then a wait on it.
        let signal = Arc::new(Fence::new());
        arguments.push(Value::Ref(None));
        arguments.push(Value::Ref(Some(Ref::Object(signal.clone()))));
        let results = self.vm.invoke(function, arguments)?;
        signal.wait().map_err(|error| error.map_message(|message| format!("{message}; waiting on finish fence")))?;
        Ok(results)
    }

    /// Blocks a host thread (not one of the queue's) until every value is available.
    pub fn await_values(&self, values: &[RcAsyncValue]) -> Result<(), Diagnostic> {
        self.host.await_values(values)
    }
}

/// Waits for the context's pending work before anything is freed: a running task may hold a
/// short-lived strong reference to the host context (upgraded from its `Weak`), and the last one
/// must not be dropped on a worker thread. Then the VM context runs its modules' `__deinit`.
impl Drop for Context {
    fn drop(&mut self) {
        // Fails only on one of the queue's own workers, where waiting would never end.
        let _ = self.host.quiesce();
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("host", &self.host).field("vm", &self.vm).finish()
    }
}

/// Whether `module` imports `hal` (it was compiled from tensor code).
fn needs_device(module: &crate::vm::Module) -> bool {
    module.dependencies().iter().any(|d| d.name == HAL_MODULE && !d.is_optional())
        || module.imported_functions().iter().any(|import| {
            import.full_name.split_once('.').is_some_and(|(m, _)| m == HAL_MODULE) && !import.is_optional()
        })
}
