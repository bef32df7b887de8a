//! TFRT's test kernels (`tfrt_test.*`, `vt.*`, `tfrt_tutorial.*` and the test native functions),
//! which its test files use to exercise the executor: asynchronous results, errors reported
//! late, cancellation, value lifetimes, strings, benchmarks, sync functions run to completion.
//! One module per family; each prints exactly what TFRT's prints.

pub mod async_kernels;
pub mod atomic;
pub mod benchmark;
pub mod errors;
pub mod native;
pub mod simple;
pub mod strings;
pub mod sync_functions;
pub mod tutorial;
pub mod value_tracking;

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
