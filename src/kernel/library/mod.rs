//! TFRT's core kernels (`tfrt.*`), one module per family.

use super::KernelRegistry;

/// Registers every core kernel.
pub fn register_core_kernels(registry: &mut KernelRegistry) {
    let _ = registry;
}
