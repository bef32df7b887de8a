//! The C ABI (src/ffi) driven from Rust, and include/rtx.h generated from it, in one binary.

mod common;
mod ffi_bef;
mod ffi_bridge;
mod ffi_contract;
mod ffi_tensor;
mod ffi_tracing;
mod ffi_vm;
mod ffi_vulkan;
mod header;
