//! TFRT's test kernels (`tfrt_test.*`, `vt.*`, `tfrt_tutorial.*` and the test native functions),
//! which its test files use to exercise the executor: asynchronous results, errors reported
//! late, cancellation, value lifetimes, strings, benchmarks, sync functions run to completion.
//! One module per family; each prints exactly what TFRT's prints.

pub(crate) mod async_kernels;
pub(crate) mod atomic;
pub(crate) mod benchmark;
pub(crate) mod errors;
pub(crate) mod native;
pub(crate) mod simple;
pub(crate) mod strings;
pub(crate) mod sync_functions;
pub(crate) mod tutorial;
pub(crate) mod value_tracking;

use crate::KernelRegistry;

/// Registers every test kernel and test native function.
pub fn register_test_kernels(registry: &mut KernelRegistry) {
    async_kernels::register(registry);
    atomic::register(registry);
    benchmark::register(registry);
    errors::register(registry);
    native::register(registry);
    simple::register(registry);
    strings::register(registry);
    sync_functions::register(registry);
    tutorial::register(registry);
    value_tracking::register(registry);
}
