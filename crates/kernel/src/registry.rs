//! [`KernelRegistry`]: kernels and native functions by their TFRT names.

use std::collections::HashMap;
use std::sync::Arc;

use super::context::ExecutionContext;
use super::error::KernelError;
use super::frame::{KernelFrame, SyncKernelFrame};
use super::pure::PureKernel;
use rtx_host::RcAsyncValue;

/// A kernel of the dataflow executor: runs once its arguments are available (errors and
/// cancellation skip it), sets its results now or later.
pub type AsyncKernelFn = Arc<dyn Fn(&mut KernelFrame<'_>) -> Result<(), KernelError> + Send + Sync>;
/// A kernel of sync functions: reads plain values, writes plain values, before it returns.
pub type SyncKernelFn = Arc<dyn Fn(&mut SyncKernelFrame<'_>) -> Result<(), KernelError> + Send + Sync>;
/// A function implemented by the host and called by name from BEF (`tfrt.native` functions):
/// arguments (possibly unavailable), one result slot per declared result to fill.
pub type NativeFn = Arc<dyn Fn(&[RcAsyncValue], &mut [Option<RcAsyncValue>], &ExecutionContext) + Send + Sync>;

/// A registered kernel, of one of three kinds.
#[derive(Clone)]
pub enum Kernel {
    Async(AsyncKernelFn),
    Sync(SyncKernelFn),
    /// Runs in async and sync functions alike, and in plans (see [`super::pure`]).
    Pure(PureKernel),
}

/// Kernels and native functions by name. A BEF file resolves its kernel names against one when
/// it is opened; the registry may then be dropped or changed without affecting the file.
#[derive(Clone, Default)]
pub struct KernelRegistry {
    kernels: HashMap<String, Kernel>,
    native_functions: HashMap<String, NativeFn>,
}

impl KernelRegistry {
    /// An empty registry.
    pub fn new() -> KernelRegistry {
        KernelRegistry::default()
    }

    /// A registry with TFRT's core kernels (`tfrt.*`: constants, arithmetic, printing, chains,
    /// control flow, parallel loops).
    pub fn with_core_kernels() -> KernelRegistry {
        let mut registry = KernelRegistry::new();
        super::library::register_core_kernels(&mut registry);
        registry
    }

    /// A registry with the kernels model graphs run on: the core kernels, the tensor kernels and
    /// the `nn.*` layers — what a runtime context's BEF modules resolve against, before the
    /// host registers its own.
    pub fn with_model_kernels() -> KernelRegistry {
        let mut registry = KernelRegistry::with_core_kernels();
        super::library::tensor::register_tensor_kernels(&mut registry);
        super::library::nn::register_nn_kernels(&mut registry);
        super::library::onnx::register_onnx_kernels(&mut registry);
        registry
    }

    /// A registry with every kernel rtx has: the core kernels, TFRT's test kernels and native
    /// functions (`tfrt_test.*`, `vt.*`, `tfrt_tutorial.*`), the tensor kernels and the `nn.*`
    /// layers — what TFRT's `bef_executor` links in, and more.
    pub fn with_all_kernels() -> KernelRegistry {
        let mut registry = KernelRegistry::new();
        super::library::register_all_kernels(&mut registry);
        registry
    }

    /// Registers (or replaces) the async kernel `name`.
    pub fn add_kernel<F>(&mut self, name: &str, kernel: F)
    where
        F: Fn(&mut KernelFrame<'_>) -> Result<(), KernelError> + Send + Sync + 'static,
    {
        self.kernels.insert(name.to_owned(), Kernel::Async(Arc::new(kernel)));
    }

    /// Registers (or replaces) the sync kernel `name`.
    pub fn add_sync_kernel<F>(&mut self, name: &str, kernel: F)
    where
        F: Fn(&mut SyncKernelFrame<'_>) -> Result<(), KernelError> + Send + Sync + 'static,
    {
        self.kernels.insert(name.to_owned(), Kernel::Sync(Arc::new(kernel)));
    }

    /// Registers (or replaces) the pure kernel `name` (usually through [`crate::pure_kernel!`]).
    pub fn add_pure_kernel(&mut self, name: &str, kernel: PureKernel) {
        self.kernels.insert(name.to_owned(), Kernel::Pure(kernel));
    }

    /// Registers (or replaces) the native function `name`.
    pub fn add_native_function<F>(&mut self, name: &str, function: F)
    where
        F: Fn(&[RcAsyncValue], &mut [Option<RcAsyncValue>], &ExecutionContext) + Send + Sync + 'static,
    {
        self.native_functions.insert(name.to_owned(), Arc::new(function));
    }

    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernels.get(name)
    }

    pub fn native_function(&self, name: &str) -> Option<&NativeFn> {
        self.native_functions.get(name)
    }

    /// Registered kernel names, sorted (for listings and tests).
    pub fn kernel_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.kernels.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }
}

impl std::fmt::Debug for KernelRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelRegistry")
            .field("kernels", &self.kernels.len())
            .field("native_functions", &self.native_functions.len())
            .finish()
    }
}
