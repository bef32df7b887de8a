//! Vulkan devices on `ash`, the Vulkan loader opened at run time.

pub mod executable_def;
pub mod pipeline;
pub mod spirv;
