//! The integration tests of rtx-runtime, in one binary.

mod hal_backend;
mod hal_model;
mod hal_run;
mod nn_kernels;
mod onnx_import;
mod runtime_bef;
mod runtime_bridge;
mod vulkan_device;
