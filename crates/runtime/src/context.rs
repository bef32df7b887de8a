//! [`Context`]: where programs run — a host context (work queue, allocator, cancellation), the
//! device its tensor programs use, the instances of the VM modules added to it, its BEF modules
//! and the kernels they resolve against.

use std::sync::{Arc, OnceLock};
#[cfg(feature = "tfrt")]
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

#[cfg(feature = "tfrt")]
use super::bef_call;
use super::blocking_call;
#[cfg(feature = "tfrt")]
use super::bridge;
#[cfg(feature = "tfrt")]
use super::bridge::bef_module::BefNativeModule;
#[cfg(not(feature = "tfrt"))]
use super::feature::left_out;
use super::instance::Runtime;
use super::invocation::{self, plural};
use super::module::Module;
#[cfg(feature = "tfrt")]
use rtx_bef::reader::BefFile;
use rtx_hal::buffer_view::BufferView;
use rtx_hal::device::{Allocator, Device};
use rtx_hal::fence::Fence;
use rtx_hal::module::HalModule;
use rtx_host::work_queue::{refuse_on_own_thread, WorkQueueSpec};
use rtx_host::{
    CachingAllocator, CountingAllocator, Diagnostic, HostAllocator, HostContext, MemoryStats, RcAsyncValue, StatusCode,
    SystemAllocator, WorkQueue,
};
#[cfg(feature = "tfrt")]
use rtx_kernel::KernelRegistry;
use rtx_kernel::{KernelError, KernelFrame};
use rtx_vm::abi::{plain_kinds, AbiModel, CallingConvention, ValueKind};
use rtx_vm::context::{FunctionHandle, VmContext};
use rtx_vm::native::NativeModule;
use rtx_vm::refs::Ref;
use rtx_vm::value::Value;

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
    /// Where the context's memory comes from — tensors, its device's buffers and transients, VM
    /// buffers, writable copies of constants: the host's allocator, used as given; `None` for the
    /// system allocator behind a cache of the large blocks freed (see [`CachingAllocator`]).
    pub allocator: Option<Arc<dyn HostAllocator>>,
    /// The most bytes the context may hold from its allocator at once (the default allocator's
    /// cached blocks included); a request past it fails with RESOURCE_EXHAUSTED. `None`: no limit.
    pub memory_limit: Option<usize>,
}

impl ContextOptions {
    /// The defaults with the queue a config string names.
    pub fn from_spec(spec: &str) -> Result<ContextOptions, Diagnostic> {
        Ok(ContextOptions { work_queue: QueueChoice::Spec(WorkQueueSpec::parse(spec)?), ..ContextOptions::default() })
    }
}

impl Default for ContextOptions {
    /// The runtime's multi-threaded queue with one worker per core, and the system allocator
    /// behind a cache of the large blocks freed (see [`CachingAllocator`]).
    fn default() -> ContextOptions {
        let spec = WorkQueueSpec::parse("mstd").unwrap_or(WorkQueueSpec::SingleThreaded);
        ContextOptions { work_queue: QueueChoice::Spec(spec), allocator: None, memory_limit: None }
    }
}

impl ContextOptions {
    /// The context's allocator as these options make it, and the counts of what it hands out.
    pub(super) fn memory(&self) -> (Arc<dyn HostAllocator>, Arc<CountingAllocator>) {
        let limit = self.memory_limit.unwrap_or(usize::MAX);
        match &self.allocator {
            Some(host) => {
                let counted = Arc::new(CountingAllocator::with_limit(Arc::clone(host), limit));
                (counted.clone(), counted)
            }
            None => {
                let counted = Arc::new(CountingAllocator::with_limit(Arc::new(SystemAllocator), limit));
                let cached = CachingAllocator::new(counted.clone(), CachingAllocator::DEFAULT_BUDGET);
                (Arc::new(cached), counted)
            }
        }
    }
}

/// A context: made by a [`Runtime`]; thread-safe. Dropping the last handle waits for the
/// context's pending work, then runs its modules' `__deinit`.
pub struct Context {
    /// Declared first so that `__deinit` runs while the work queue still exists.
    vm: VmContext,
    /// The BEF modules added, their kernel names resolved against `kernels`.
    #[cfg(feature = "tfrt")]
    bef: RwLock<BefModules>,
    /// What BEF modules added from now on resolve their kernel names against: TFRT's core
    /// kernels, the tensor kernels, the `nn.*` layers and those the host registered.
    #[cfg(feature = "tfrt")]
    pub(super) kernels: Arc<RwLock<KernelRegistry>>,
    /// The request eager ops run in and the ops prepared for them.
    #[cfg(feature = "tfrt")]
    pub(super) eager: super::eager::Eager,
    /// Only this struct holds the `Arc` for good: queued work holds a `Weak` (see
    /// [`invocation`]), so the context, its queue and its threads go away on the thread that
    /// drops it.
    host: Arc<HostContext>,
    runtime: Runtime,
    /// The allocator of the context's device, once it has one: host tensors passed to its
    /// functions are placed where the device can use them.
    device_allocator: Arc<OnceLock<Allocator>>,
    /// What the context's allocator has handed out.
    memory: Arc<CountingAllocator>,
}

/// The BEF modules of a context.
#[cfg(feature = "tfrt")]
#[derive(Default)]
struct BefModules {
    modules: Vec<(Arc<str>, Arc<BefFile>)>,
    /// The position of the most recently added module of any format when it is a BEF one (a
    /// bare function name refers to it).
    latest: Option<usize>,
}

/// A function of a context: a VM function or a BEF function, called the same way.
#[derive(Clone, Debug)]
pub struct Function {
    target: Target,
}

#[derive(Clone, Debug)]
enum Target {
    Vm(VmFunction),
    #[cfg(feature = "tfrt")]
    Bef(BefFunction),
}

/// A VM function with the kinds of its arguments and results.
#[derive(Clone, Debug)]
pub struct VmFunction {
    pub handle: FunctionHandle,
    /// Every argument the calling convention declares, fences of `coarse-fences` included.
    pub arguments: Vec<ValueKind>,
    pub results: Vec<ValueKind>,
}

impl VmFunction {
    /// How many arguments a caller supplies: all but the fences of a `coarse-fences` function.
    pub fn declared_arguments(&self) -> usize {
        self.arguments.len() - self.handle.model.fence_arguments()
    }
}

/// A function of a BEF module added to the context.
#[cfg(feature = "tfrt")]
#[derive(Clone, Debug)]
pub(super) struct BefFunction {
    /// `module.function`.
    pub(super) name: String,
    pub(super) function: rtx_kernel::ProgramFunction,
}

impl Function {
    /// The BEF function this is, if it is one.
    #[cfg(feature = "tfrt")]
    pub(super) fn bef(&self) -> Option<&rtx_kernel::ProgramFunction> {
        match &self.target {
            Target::Bef(bef) => Some(&bef.function),
            Target::Vm(_) => None,
        }
    }

    /// The name, `module.function`.
    pub fn name(&self) -> &str {
        match &self.target {
            Target::Vm(f) => &f.handle.full_name,
            #[cfg(feature = "tfrt")]
            Target::Bef(f) => &f.name,
        }
    }

    /// The VM function, for hosts and tools that drive the VM with its own values.
    pub fn as_vm(&self) -> Option<&VmFunction> {
        match &self.target {
            Target::Vm(f) => Some(f),
            #[cfg(feature = "tfrt")]
            Target::Bef(_) => None,
        }
    }

    /// How many arguments a caller supplies: all but the fences of a `coarse-fences` function,
    /// which the call can make itself.
    pub fn declared_arguments(&self) -> usize {
        match &self.target {
            Target::Vm(f) => f.declared_arguments(),
            #[cfg(feature = "tfrt")]
            Target::Bef(f) => f.function.num_arguments(),
        }
    }

    pub fn num_results(&self) -> usize {
        match &self.target {
            Target::Vm(f) => f.results.len(),
            #[cfg(feature = "tfrt")]
            Target::Bef(f) => f.function.num_results(),
        }
    }

    /// Whether the function takes a wait and a signal fence after its declared arguments.
    pub fn takes_fences(&self) -> bool {
        matches!(&self.target, Target::Vm(f) if f.handle.model == AbiModel::CoarseFences)
    }

    /// Whether a call may pass `count` arguments: the declared ones, or (`coarse-fences`) those
    /// and the two fences.
    pub fn accepts_arguments(&self, count: usize) -> bool {
        count == self.declared_arguments() || (self.takes_fences() && count == self.declared_arguments() + 2)
    }

    /// What a call passes, for errors: `` `m.f` (calling convention `0i_i`) takes 1 argument``,
    /// with the fenced count for a `coarse-fences` function; `` `m.f` (BEF `(i32) -> (i32)`)
    /// takes 1 argument`` for a BEF function.
    pub fn describe_arguments(&self) -> String {
        let declared = self.declared_arguments();
        let fences = if self.takes_fences() {
            format!(" (coarse-fences: or {} with a wait and a signal fence)", declared + 2)
        } else {
            String::new()
        };
        let signature = match &self.target {
            Target::Vm(f) => format!("calling convention `{}`", f.handle.cconv),
            #[cfg(feature = "tfrt")]
            Target::Bef(f) => format!(
                "BEF `({}) -> ({})`",
                f.function.argument_types().join(", "),
                f.function.result_types().join(", ")
            ),
        };
        format!("`{}` ({signature}) takes {}{fences}", self.name(), plural(declared, "argument"))
    }

    /// Fails (INVALID_ARGUMENT, with [`describe_arguments`](Self::describe_arguments)) unless a
    /// call may pass `count` arguments.
    pub fn check_arguments(&self, count: usize) -> Result<(), Diagnostic> {
        if self.accepts_arguments(count) {
            return Ok(());
        }
        Err(Diagnostic::new(
            StatusCode::InvalidArgument,
            format!("{}, but the call passes {count}", self.describe_arguments()),
        ))
    }
}

/// The kernels a context's BEF modules resolve against before the host adds its own: the model
/// kernels and Core Runtime's.
#[cfg(feature = "tfrt")]
fn model_kernels() -> KernelRegistry {
    let mut registry = KernelRegistry::with_model_kernels();
    rtx_corert::register_kernels(&mut registry);
    registry
}

impl Context {
    /// A context over `host`, whose allocator hands out what `memory` counts.
    pub(super) fn new(runtime: Runtime, host: HostContext, memory: Arc<CountingAllocator>) -> Context {
        let context = Context {
            vm: VmContext::with_allocator(Arc::clone(host.allocator())),
            #[cfg(feature = "tfrt")]
            bef: RwLock::default(),
            #[cfg(feature = "tfrt")]
            kernels: Arc::new(RwLock::new(model_kernels())),
            #[cfg(feature = "tfrt")]
            eager: super::eager::Eager::default(),
            host: Arc::new(host),
            runtime,
            device_allocator: Arc::default(),
            memory,
        };
        #[cfg(feature = "tfrt")]
        context.register_bridge_kernels(&mut write(&context.kernels));
        #[cfg(feature = "tfrt")]
        super::eager::register_cpu_handler(&context.host, &context.kernels, &context.eager);
        context
    }

    /// Registers the kernels that reach this context's VM modules (`rtx.vm.call`, see
    /// [`bridge::vm_call`]) in `registry`: the context's own has them; a tool that binds BEF
    /// files to a registry of its own adds them there.
    #[cfg(feature = "tfrt")]
    pub fn register_bridge_kernels(&self, registry: &mut KernelRegistry) {
        bridge::vm_call::register(registry, self.vm.downgrade(), Arc::clone(&self.device_allocator));
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
    /// CPU, every dispatch inline on the calling thread), `local-task` (workgroups spread over
    /// the runtime's worker threads; `local-sync://` and `local-task://` too), or a Vulkan device
    /// (`vulkan` for the first usable one, `vulkan://N`, `vulkan://UUID`). This adds the `hal`
    /// module over the device, so it comes before modules compiled from tensor code. One device
    /// per context: ALREADY_EXISTS for a second one; NOT_FOUND for an unknown name.
    pub fn add_device(&self, uri: &str) -> Result<(), Diagnostic> {
        self.add_hal_device(self.runtime.open_device_allocating_from(uri, self.host.allocator())?)
    }

    /// What the context's allocator has handed out for it: bytes held now (with the default
    /// allocator, freed blocks kept for reuse among them), the most held at once, and the number
    /// of blocks handed out.
    pub fn memory_stats(&self) -> MemoryStats {
        self.memory.stats()
    }

    /// As [`Context::add_device`], with a device of any backend (`hal::backend`).
    pub fn add_hal_device(&self, device: Device) -> Result<(), Diagnostic> {
        if self.has_device() {
            return Err(Diagnostic::new(
                StatusCode::AlreadyExists,
                format!(
                    "the context already has a device (its `{HAL_MODULE}` module); rtx runs a context's tensor \
                     programs on one device"
                ),
            ));
        }
        let allocator = device.backend().allocator().clone();
        self.vm.add_native_module(Arc::new(HalModule::new(vec![device])))?;
        // Only this method sets it, after the check above that there was no device.
        let _ = self.device_allocator.set(allocator);
        Ok(())
    }

    fn has_device(&self) -> bool {
        self.vm.module_names().iter().any(|m| m == HAL_MODULE)
    }

    /// Adds `module`. A VM module: checks its dependencies against the modules added before
    /// it, resolves its imports, creates its state and runs its `__init`; one that imports `hal`
    /// needs a device first (FAILED_PRECONDITION otherwise). A BEF module: resolves its kernel
    /// names against the context's kernels (TFRT's core and tensor kernels, the `nn.*` layers and
    /// those registered so far), NOT_FOUND naming an unknown kernel and where it is first used.
    /// ALREADY_EXISTS for a second module of one name. On failure the context is as it was.
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
                #[cfg(feature = "tfrt")]
                let mut bef = write(&self.bef);
                #[cfg(feature = "tfrt")]
                if bef.modules.iter().any(|(name, _)| **name == *module.name()) {
                    return Err(already_exists(module.name()));
                }
                self.vm.add_module(Arc::clone(module))?;
                #[cfg(feature = "tfrt")]
                {
                    bef.latest = None;
                }
                Ok(())
            }
            #[cfg(feature = "tfrt")]
            Module::Bef { name, image } => {
                let mut bef = write(&self.bef);
                if bef.modules.iter().any(|(n, _)| n == name) || self.vm.module_names().iter().any(|n| **n == **name) {
                    return Err(already_exists(name));
                }
                let file = BefFile::bind(image, &read(&self.kernels)).map_err(|e| {
                    Diagnostic::from(e).map_message(|message| format!("{message}; adding BEF module `{name}`"))
                })?;
                bef.latest = Some(bef.modules.len());
                bef.modules.push((Arc::clone(name), file));
                Ok(())
            }
        }
    }

    /// Registers the kernel `name` for the BEF modules added from now on (those added before
    /// resolved their names already). It runs on any of the context's threads, once its
    /// arguments are available, and sets its results now or later (see [`KernelFrame`]).
    /// ALREADY_EXISTS when `name` is taken (by a kernel the context starts with or an earlier
    /// registration); INVALID_ARGUMENT for an empty name; UNIMPLEMENTED in a build without the
    /// `tfrt` feature, which has no BEF modules to run kernels in.
    pub fn register_kernel<F>(&self, name: &str, kernel: F) -> Result<(), Diagnostic>
    where
        F: Fn(&mut KernelFrame<'_>) -> Result<(), KernelError> + Send + Sync + 'static,
    {
        if name.is_empty() {
            return Err(Diagnostic::new(StatusCode::InvalidArgument, "a kernel name must not be empty"));
        }
        #[cfg(not(feature = "tfrt"))]
        {
            drop(kernel);
            Err(left_out("tfrt", format_args!("registering kernel `{name}` (kernels run in BEF modules)")))
        }
        #[cfg(feature = "tfrt")]
        {
            let mut kernels = write(&self.kernels);
            if kernels.kernel(name).is_some() {
                return Err(Diagnostic::new(
                    StatusCode::AlreadyExists,
                    format!("a kernel named `{name}` is already registered in this context"),
                ));
            }
            kernels.add_kernel(name, kernel);
            Ok(())
        }
    }

    /// Lets VM modules added from now on import the functions of the BEF module `name` (added
    /// before) by name, `name.function`, as functions of a native module (see
    /// `bridge::bef_module`). NOT_FOUND when no BEF module has that name; UNIMPLEMENTED in a
    /// build without the `tfrt` feature.
    pub fn add_bef_native_module(&self, name: &str) -> Result<(), Diagnostic> {
        #[cfg(not(feature = "tfrt"))]
        return Err(left_out("tfrt", format_args!("the BEF module `{name}`")));
        #[cfg(feature = "tfrt")]
        {
            let file = read(&self.bef).modules.iter().find(|(n, _)| **n == *name).map(|(_, file)| Arc::clone(file));
            let file = file.ok_or_else(|| {
                Diagnostic::new(StatusCode::NotFound, format!("the context has no BEF module named `{name}`"))
            })?;
            self.vm.add_native_module(Arc::new(BefNativeModule::new(name, &file, &self.host)))
        }
    }

    /// Adds a module implemented by the host; modules added afterwards can import its functions.
    pub fn add_native_module(&self, module: Arc<dyn NativeModule>) -> Result<(), Diagnostic> {
        self.vm.add_native_module(module)
    }

    /// Finds `name` (`module.function`, or a bare name in the most recently added bytecode or
    /// BEF module) and the kinds of its arguments and results.
    pub fn function(&self, name: &str) -> Result<Function, Diagnostic> {
        #[cfg(feature = "tfrt")]
        if let Some(function) = self.bef_function(name)? {
            return Ok(Function { target: Target::Bef(function) });
        }
        Ok(Function { target: Target::Vm(vm_function(&self.vm, name)?) })
    }

    /// The BEF function `name` refers to; `None` when it names no BEF module (then it is the
    /// VM's to look up), NOT_FOUND when the module has no such function.
    #[cfg(feature = "tfrt")]
    fn bef_function(&self, name: &str) -> Result<Option<BefFunction>, Diagnostic> {
        let bef = read(&self.bef);
        let (module, function) = match name.split_once('.') {
            Some((module, function)) if bef.modules.iter().any(|(n, _)| **n == *module) => (module, function),
            // A VM module's function, even when a BEF module was added last.
            Some((module, _)) if self.vm.module_names().iter().any(|n| n == module) => return Ok(None),
            _ => match bef.latest {
                Some(latest) => (&*bef.modules[latest].0, name),
                None => return Ok(None),
            },
        };
        let (_, file) = bef.modules.iter().find(|(n, _)| **n == *module).expect("found above");
        let found = file.function_named(function).ok_or_else(|| {
            Diagnostic::new(StatusCode::NotFound, format!("BEF module `{module}` has no function `{function}`"))
        })?;
        Ok(Some(BefFunction { name: format!("{module}.{function}"), function: found }))
    }

    /// Calls `function` without blocking: the call runs on the context's work queue once every
    /// argument is available, and the returned values (one per result, unavailable at first)
    /// become its results or its error. See [`invocation`] for what each argument may be.
    pub fn invoke(&self, function: &Function, arguments: &[RcAsyncValue]) -> Result<Vec<RcAsyncValue>, Diagnostic> {
        self.start(function, arguments, None)
    }

    /// As [`invoke`](Self::invoke), with one more value, `done`: a chain once the call has
    /// finished — a VM function's results all set, a BEF function run and its results all
    /// available — or the error that failed the call. The one way to learn that a function
    /// without results failed.
    pub fn invoke_with_done(
        &self,
        function: &Function,
        arguments: &[RcAsyncValue],
    ) -> Result<(Vec<RcAsyncValue>, RcAsyncValue), Diagnostic> {
        let done = invocation::done_value();
        let results = self.start(function, arguments, Some(done.clone()))?;
        Ok((results, done))
    }

    /// Both: only a caller that asked for `done` pays for it.
    fn start(
        &self,
        function: &Function,
        arguments: &[RcAsyncValue],
        done: Option<RcAsyncValue>,
    ) -> Result<Vec<RcAsyncValue>, Diagnostic> {
        function.check_arguments(arguments.len())?;
        match &function.target {
            Target::Vm(vm) => invocation::start(&self.host, &self.vm, vm, arguments, self.device_allocator.get(), done),
            #[cfg(feature = "tfrt")]
            Target::Bef(bef) => bef_call::start(&self.host, bef, arguments, done),
        }
    }

    /// Calls `function` with tensors for its declared arguments and returns its results, each a
    /// tensor, once they are ready: the synchronous form of [`invoke`](Self::invoke) for hosts
    /// that would wait anyway. A VM function runs on the calling thread (see
    /// [`blocking_call`]); the errors are those `invoke`'s results would carry. Fails with
    /// INVALID_ARGUMENT for a wrong number of arguments or a function taking or returning
    /// something else than tensors, CANCELLED for a cancelled context, and FAILED_PRECONDITION
    /// on a thread of the context's queue, which must not block.
    pub fn call_tensors(
        &self,
        function: &Function,
        arguments: &[Arc<BufferView>],
    ) -> Result<Vec<Arc<BufferView>>, Diagnostic> {
        if arguments.len() != function.declared_arguments() {
            return Err(Diagnostic::new(
                StatusCode::InvalidArgument,
                format!("{}, but the call passes {}", function.describe_arguments(), arguments.len()),
            ));
        }
        refuse_on_own_thread(&**self.host.work_queue(), "call_tensors")?;
        if self.host.is_cancelled() {
            return Err(Diagnostic::cancelled());
        }
        match &function.target {
            Target::Vm(vm) => blocking_call::call_vm(&self.vm, vm, arguments, self.device_allocator.get()),
            #[cfg(feature = "tfrt")]
            Target::Bef(bef) => blocking_call::call_bef(&self.host, bef, arguments),
        }
    }

    /// Calls `function` with VM values on the calling thread and returns once its results are
    /// ready, waiting on the signal fence of a `coarse-fences` function as IREE's tools do.
    /// What the tools use; hosts that must not block use [`invoke`](Self::invoke).
    pub fn call(&self, function: &FunctionHandle, mut arguments: Vec<Value>) -> Result<Vec<Value>, Diagnostic> {
        self.place_arguments(&mut arguments)?;
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

    /// Moves the buffer views among `arguments` that the context's device cannot use as they are
    /// (host tensors given to a Vulkan device) into its memory, as [`call`](Self::call) does on
    /// every call: a caller that passes the same inputs many times places them once.
    pub fn place_arguments(&self, arguments: &mut [Value]) -> Result<(), Diagnostic> {
        if let Some(allocator) = self.device_allocator.get() {
            for argument in arguments {
                place_argument(argument, allocator)?;
            }
        }
        Ok(())
    }

    /// Blocks a host thread (not one of the queue's) until every value is available.
    pub fn await_values(&self, values: &[RcAsyncValue]) -> Result<(), Diagnostic> {
        self.host.await_values(values)
    }
}

/// Waits for the context's pending work before anything is freed: a running task may hold a
/// short-lived strong reference to the host context (upgraded from its `Weak`), and the last one
/// must not be dropped on a worker thread. Then the VM context runs its modules' `__deinit`.
/// Replaces a buffer view argument whose buffer the device cannot use by one over a copy in the
/// device's memory (a host tensor given to a program on a GPU), as IREE's tools allocate inputs
/// on the device.
pub(super) fn place_argument(argument: &mut Value, allocator: &Allocator) -> Result<(), Diagnostic> {
    if let Value::Ref(Some(value)) = argument {
        if let Some(view) = BufferView::shared_from_ref(value) {
            *value = BufferView::shared_to_ref(BufferView::adopted_by(&view, allocator)?);
        }
    }
    Ok(())
}

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

/// The VM function `name` of `vm` (`module.function`, or a bare name in the most recently added
/// bytecode module) with the kinds of its arguments and results.
pub(super) fn vm_function(vm: &VmContext, name: &str) -> Result<VmFunction, Diagnostic> {
    let handle = vm.lookup(name)?;
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
    Ok(VmFunction { handle, arguments, results })
}

#[cfg(feature = "tfrt")]
fn already_exists(name: &str) -> Diagnostic {
    Diagnostic::new(StatusCode::AlreadyExists, format!("a module named `{name}` is already in this context"))
}

#[cfg(feature = "tfrt")]
fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(feature = "tfrt")]
fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

/// Whether `module` imports `hal` (it was compiled from tensor code).
fn needs_device(module: &rtx_vm::Module) -> bool {
    module.dependencies().iter().any(|d| d.name == HAL_MODULE && !d.is_optional())
        || module.imported_functions().iter().any(|import| {
            import.full_name.split_once('.').is_some_and(|(m, _)| m == HAL_MODULE) && !import.is_optional()
        })
}
