//! The bridge between a context's BEF graphs and its VM modules, one currency (AsyncValues) on
//! both sides: [`vm_call`] (`rtx.vm.call`, a kernel calling a VM function) and [`bef_module`]
//! (a BEF module imported by VM modules as a native module), both passing dense host tensors as
//! buffer views through [`tensors`]; and [`host_values`], a graph's values as the tools read and
//! write them.

#[cfg(feature = "tfrt")]
pub(crate) mod bef_module;
#[cfg(feature = "tfrt")]
pub mod host_values;
pub mod tensors;
#[cfg(feature = "tfrt")]
pub(crate) mod vm_call;

#[cfg(feature = "tfrt")]
pub use vm_call::VM_CALL;
