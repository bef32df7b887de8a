//! rtx: a runtime for compiled machine-learning programs, shipped as a C library.
//!
//! This crate is the C library (`ffi`) and the `rtx` command over the layer crates of the
//! workspace, which it re-exports under their layer names: [`host`] is the ground every other
//! layer stands on (AsyncValue, work queues, allocator, HostContext), [`runtime`] the API every
//! user goes through, and [`ffi`] the only place that knows C exists.
//!
//! Cargo features choose the parts: `vulkan`, `tfrt` and `onnx` (which implies `tfrt`), all on by
//! default. Without them the library is the VM and the CPU devices; the C functions of a part
//! left out return `RTX_STATUS_CODE_UNIMPLEMENTED` naming its feature.

#[cfg(feature = "tfrt")]
pub use rtx_bef as bef;
#[cfg(feature = "tfrt")]
pub use rtx_corert as corert;
pub use rtx_host as host;
pub use rtx_kernel as kernel;
pub use rtx_mlir as mlir;
#[cfg(feature = "onnx")]
pub use rtx_onnx as onnx;
pub use rtx_runtime as runtime;
pub use rtx_vm as vm;

pub mod ffi;

/// The HAL core with its backends: the CPU devices as `local`, Vulkan as `vulkan`.
pub mod hal {
    pub use rtx_hal::*;
    pub use rtx_hal_cpu as local;
    #[cfg(feature = "vulkan")]
    pub use rtx_hal_vulkan as vulkan;
}
