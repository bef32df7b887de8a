//! Contexts: an ordered set of modules linked together, each with its own state.
//!
//! Adding a module checks its dependencies against the modules already present, resolves each
//! import (by full name, newest module first, with the exact calling-convention string), creates
//! its state and runs its `__init`. Dropping the context runs `__deinit` in reverse order.
//!
//! Thread safety: a `VmContext` is `Send + Sync` and cheap to clone (clones share the modules and
//! their state). Every slice of execution holds the context's lock, so invocations on one context
//! never run at the same time; an invocation suspended on an async value releases the lock, and
//! others may run before it resumes (as with IREE's coroutines). Native functions must not invoke
//! their own context synchronously from inside a call. Separate contexts run fully in parallel,
//! even when they share `Arc<Module>`s.

use std::sync::{Arc, Mutex, MutexGuard, Weak};

use super::abi::declaration::MODEL_ATTR;
use super::abi::AbiModel;
use super::buffer::ByteBuffer;
use super::interpreter::{self, Invocation, Stack};
use super::module::Module;
use super::native::{NativeInstance, NativeModule, NativeState};
use super::refs::Ref;
use super::value::Value;
use rtx_host::{Diagnostic, HostAllocator, StatusCode};

/// Where an import resolved to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resolved {
    Bytecode { instance: u32, function: u32 },
    Native { instance: u32, function: u32 },
}

/// A module as added to a context.
pub(crate) enum Instance {
    Bytecode { module: Arc<Module>, imports: Box<[Option<Resolved>]> },
    Native(NativeInstance),
}

impl Instance {
    pub(crate) fn name(&self) -> &str {
        match self {
            Instance::Bytecode { module, .. } => module.name(),
            Instance::Native(native) => native.name(),
        }
    }

    fn version(&self) -> u32 {
        match self {
            Instance::Bytecode { module, .. } => module.version(),
            Instance::Native(native) => native.version(),
        }
    }

    /// Finds an exported function by name, with its calling convention.
    fn export(&self, instance: u32, name: &str) -> Option<(Resolved, String, AbiModel)> {
        match self {
            Instance::Bytecode { module, .. } => {
                let export = module.lookup_export(name)?;
                let signature = module.function_signatures().get(export.internal_ordinal as usize)?;
                let cconv = signature.calling_convention.clone().unwrap_or_default();
                // An unknown model is the caller's business (they may pass fences of their own),
                // as in IREE's tools: only `coarse-fences` changes how a call is made.
                let model = AbiModel::from_attr(signature.attr(MODEL_ATTR)).unwrap_or_default();
                Some((Resolved::Bytecode { instance, function: export.internal_ordinal }, cconv, model))
            }
            Instance::Native(native) => {
                let (ordinal, function) = native.functions().iter().enumerate().find(|(_, f)| f.name == name)?;
                let target = Resolved::Native { instance, function: ordinal as u32 };
                Some((target, function.cconv.clone(), AbiModel::Sync))
            }
        }
    }
}

/// Per-context state of a bytecode module: its globals, and the rodata buffers handed out so far
/// (so `vm.const.ref.rodata` retains one buffer rather than creating one per execution).
pub(crate) struct BytecodeState {
    /// Where `vm.buffer.alloc` and `vm.buffer.clone` take memory from: the context's allocator.
    pub allocator: Option<Arc<dyn HostAllocator>>,
    pub rwdata: Vec<u8>,
    pub refs: Vec<Option<Ref>>,
    pub rodata: Vec<Option<Arc<ByteBuffer>>>,
}

pub(crate) enum State {
    Bytecode(BytecodeState),
    Native(NativeState),
}

/// The modules of a context and their states, kept apart so the interpreter can read the one
/// while writing the other.
pub(crate) struct Linked {
    pub instances: Vec<Instance>,
    pub states: Vec<State>,
    /// The branch budget every new invocation starts with (see [`VmContext::set_budget`]).
    pub budget: u64,
    /// Register stacks of finished invocations, reused by the next ones.
    pub spare_stacks: Vec<Stack>,
    /// What the modules' buffers are allocated from; the process allocator when `None`.
    pub allocator: Option<Arc<dyn HostAllocator>>,
}

impl Default for Linked {
    fn default() -> Linked {
        Linked {
            instances: Vec::new(),
            states: Vec::new(),
            budget: interpreter::UNLIMITED,
            spare_stacks: Vec::new(),
            allocator: None,
        }
    }
}

/// A function found in a context, ready to invoke.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionHandle {
    pub(crate) target: Resolved,
    /// `module.name`.
    pub full_name: String,
    pub cconv: String,
    /// How the function is called: `coarse-fences` functions take a wait and a signal fence after
    /// their declared arguments.
    pub model: AbiModel,
}

/// A set of linked modules with their state. See the module documentation for thread safety.
#[derive(Clone, Default)]
pub struct VmContext {
    linked: Arc<Mutex<Linked>>,
}

/// A context that does not keep it alive, for what the context itself holds (a kernel that
/// calls into it): holding a [`VmContext`] there would be a cycle that is never freed.
#[derive(Clone, Default)]
pub struct WeakContext {
    linked: Weak<Mutex<Linked>>,
}

impl WeakContext {
    /// The context, unless its last handle was dropped.
    pub fn upgrade(&self) -> Option<VmContext> {
        self.linked.upgrade().map(|linked| VmContext { linked })
    }
}

impl std::fmt::Debug for VmContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.lock().instances.iter().map(|i| i.name().to_owned()).collect();
        f.debug_struct("VmContext").field("modules", &names).finish()
    }
}

impl VmContext {
    pub fn new() -> VmContext {
        VmContext::default()
    }

    /// A context whose modules allocate their buffers (`vm.buffer.alloc`, `vm.buffer.clone`) from
    /// `allocator`.
    pub fn with_allocator(allocator: Arc<dyn HostAllocator>) -> VmContext {
        let linked = Linked { allocator: Some(allocator), ..Linked::default() };
        VmContext { linked: Arc::new(Mutex::new(linked)) }
    }

    /// A handle that does not keep the context alive.
    pub fn downgrade(&self) -> WeakContext {
        WeakContext { linked: Arc::downgrade(&self.linked) }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Linked> {
        // A panic while holding the lock can only come from a bug in a native module; the state
        // it protects stays structurally valid, so later calls may proceed.
        self.linked.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Bounds every invocation this context starts from now on, `__init` and `__deinit`
    /// included: each backward branch taken (a loop iteration) and each call spends one unit,
    /// and an invocation that runs out fails with `DEADLINE_EXCEEDED`. For hosts that run
    /// untrusted modules; [`interpreter::UNLIMITED`] (the default) is never counted down.
    pub fn set_budget(&self, budget: u64) {
        self.lock().budget = budget;
    }

    /// The names of the modules added so far, in order.
    pub fn module_names(&self) -> Vec<String> {
        self.lock().instances.iter().map(|i| i.name().to_owned()).collect()
    }

    /// Adds a native module; its state is created now.
    pub fn add_native_module(&self, module: Arc<dyn NativeModule>) -> Result<(), Diagnostic> {
        let mut linked = self.lock();
        if linked.instances.iter().any(|i| i.name() == module.name()) {
            return Err(Diagnostic::new(
                StatusCode::AlreadyExists,
                format!("a module named `{}` is already in this context", module.name()),
            ));
        }
        let state = module.create_state()?;
        linked.instances.push(Instance::Native(NativeInstance::new(module)));
        linked.states.push(State::Native(state));
        Ok(())
    }

    /// Adds a bytecode module: checks dependencies, resolves imports, creates state, runs
    /// `__init`. On any failure the context is left as it was.
    pub fn add_module(&self, module: Arc<Module>) -> Result<(), Diagnostic> {
        let instance = {
            let mut linked = self.lock();
            if linked.instances.iter().any(|i| i.name() == module.name()) {
                return Err(Diagnostic::new(
                    StatusCode::AlreadyExists,
                    format!("a module named `{}` is already in this context", module.name()),
                ));
            }
            let imports = resolve_imports(&linked.instances, &module)?;
            let state = BytecodeState {
                allocator: linked.allocator.clone(),
                rwdata: filled(module.module_state().global_bytes_capacity as usize, 0, "global bytes")?,
                refs: filled(module.module_state().global_ref_count as usize, None, "global refs")?,
                rodata: filled(module.rodata_segment_count(), None, "rodata buffers")?,
            };
            linked.instances.push(Instance::Bytecode { module: module.clone(), imports });
            linked.states.push(State::Bytecode(state));
            linked.instances.len() - 1
        };
        if let Some(export) = module.lookup_export("__init") {
            let target = Resolved::Bytecode { instance: instance as u32, function: export.internal_ordinal };
            if let Err(error) = interpreter::call(self, target, Vec::new()) {
                let mut linked = self.lock();
                linked.instances.truncate(instance);
                linked.states.truncate(instance);
                return Err(error.context(format_args!("`{}.__init` failed", module.name())));
            }
        }
        Ok(())
    }

    /// Finds `name` (`module.function`, or a bare function name looked up in the most recently
    /// added bytecode module, as `iree-run-module` does).
    pub fn lookup(&self, name: &str) -> Result<FunctionHandle, Diagnostic> {
        let linked = self.lock();
        let found = match name.split_once('.') {
            Some((module, function)) if linked.instances.iter().any(|i| i.name() == module) => linked
                .instances
                .iter()
                .enumerate()
                .rev()
                .find(|(_, i)| i.name() == module)
                .and_then(|(index, i)| i.export(index as u32, function).map(|f| (i.name(), function, f))),
            _ => linked
                .instances
                .iter()
                .enumerate()
                .rev()
                .find(|(_, i)| matches!(i, Instance::Bytecode { .. }))
                .and_then(|(index, i)| i.export(index as u32, name).map(|f| (i.name(), name, f))),
        };
        match found {
            Some((module, function, (target, cconv, model))) => {
                Ok(FunctionHandle { target, full_name: format!("{module}.{function}"), cconv, model })
            }
            None => Err(Diagnostic::new(
                StatusCode::NotFound,
                format!("function `{name}` not found in the context's modules ({})", names(&linked.instances)),
            )),
        }
    }

    /// Starts an invocation of `function` with `arguments`; run it with [`Invocation::run`].
    pub fn begin(&self, function: &FunctionHandle, arguments: Vec<Value>) -> Result<Invocation, Diagnostic> {
        Invocation::new(self.clone(), function.target, arguments)
    }

    /// Invokes `function` and waits for its results; the calling thread blocks only while the
    /// program waits on an async value.
    pub fn invoke(&self, function: &FunctionHandle, arguments: Vec<Value>) -> Result<Vec<Value>, Diagnostic> {
        interpreter::call(self, function.target, arguments)
    }
}

impl Drop for VmContext {
    /// The last clone runs every bytecode module's `__deinit`, newest first. Errors have no
    /// caller to go to and are dropped; a `__deinit` that fails leaves nothing to undo.
    fn drop(&mut self) {
        if Arc::strong_count(&self.linked) != 1 {
            return;
        }
        let deinits: Vec<Resolved> = {
            let linked = self.lock();
            linked
                .instances
                .iter()
                .enumerate()
                .rev()
                .filter_map(|(index, instance)| match instance {
                    Instance::Bytecode { module, .. } => module
                        .lookup_export("__deinit")
                        .map(|e| Resolved::Bytecode { instance: index as u32, function: e.internal_ordinal }),
                    Instance::Native(_) => None,
                })
                .collect()
        };
        for target in deinits {
            let _ = interpreter::call(self, target, Vec::new());
        }
    }
}

/// `count` copies of `value`, or `RESOURCE_EXHAUSTED`: the sizes come from the module file, and a
/// hostile one must not abort the host by asking for gigabytes of state.
fn filled<T: Clone>(count: usize, value: T, what: &str) -> Result<Vec<T>, Diagnostic> {
    let mut items = Vec::new();
    items.try_reserve_exact(count).map_err(|_| {
        Diagnostic::new(StatusCode::ResourceExhausted, format!("cannot allocate module state: {count} {what}"))
    })?;
    items.resize(count, value);
    Ok(items)
}

fn names(instances: &[Instance]) -> String {
    let names: Vec<&str> = instances.iter().map(Instance::name).collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

fn resolve_imports(instances: &[Instance], module: &Module) -> Result<Box<[Option<Resolved>]>, Diagnostic> {
    for dependency in module.dependencies() {
        match instances.iter().rev().find(|i| i.name() == dependency.name) {
            Some(found) if found.version() >= dependency.minimum_version => {}
            Some(found) if !dependency.is_optional() => {
                return Err(Diagnostic::new(
                    StatusCode::FailedPrecondition,
                    format!(
                        "module `{}` needs `{}` version >= {}, but the context has version {}",
                        module.name(),
                        dependency.name,
                        dependency.minimum_version,
                        found.version()
                    ),
                ))
            }
            None if !dependency.is_optional() => {
                return Err(Diagnostic::new(
                    StatusCode::NotFound,
                    format!(
                        "module `{}` depends on module `{}`, which is not in the context (it has: {})",
                        module.name(),
                        dependency.name,
                        names(instances)
                    ),
                ))
            }
            _ => {}
        }
    }
    module
        .imported_functions()
        .iter()
        .map(|import| {
            let (module_name, function) = import.full_name.split_once('.').unwrap_or((import.full_name.as_str(), ""));
            let expected = import.signature.as_ref().and_then(|s| s.calling_convention.as_deref()).unwrap_or("");
            let found = instances
                .iter()
                .enumerate()
                .rev()
                .filter(|(_, i)| i.name() == module_name)
                .find_map(|(index, i)| i.export(index as u32, function));
            match found {
                Some((target, cconv, _)) if cconv == expected => Ok(Some(target)),
                Some((_, cconv, _)) => Err(Diagnostic::new(
                    StatusCode::Internal,
                    format!(
                        "import `{}` of module `{}`: signature mismatch: the import expects `{expected}` but the \
                         exporting module declares `{cconv}`",
                        import.full_name,
                        module.name()
                    ),
                )),
                None if import.is_optional() => Ok(None),
                None => Err(Diagnostic::new(
                    StatusCode::NotFound,
                    format!(
                        "required import `{}` of module `{}` was not found in the context's modules ({})",
                        import.full_name,
                        module.name(),
                        names(instances)
                    ),
                )),
            }
        })
        .collect()
}
