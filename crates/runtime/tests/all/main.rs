//! The integration tests of rtx-runtime, in one binary. Those of a part behind a feature are left
//! out of a build without it (`--no-default-features`); the unit tests check what such a build
//! answers instead.

#[cfg(feature = "onnx")]
mod eager_ops;
mod hal_backend;
mod hal_model;
mod hal_run;
#[cfg(feature = "onnx")]
mod memory;
#[cfg(feature = "tfrt")]
mod nn_kernels;
#[cfg(feature = "onnx")]
mod onnx_import;
#[cfg(feature = "tfrt")]
mod runtime_bef;
#[cfg(feature = "tfrt")]
mod runtime_bridge;
#[cfg(feature = "vulkan")]
mod vulkan_device;
