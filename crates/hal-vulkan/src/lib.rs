//! Vulkan devices, on `ash` with the loader opened at run time: the instance (with the validation
//! layers where they are installed), physical devices and what they offer, a logical device with
//! a compute queue whose timeline semaphore completes the HAL's fences, device memory from
//! gpu-allocator (mapped where the host can see it, staged otherwise), and queue transfers.
//! Executables: the `vulkan-spirv-fb` format (`executable_def`, `spirv`) and the pipelines made
//! from it (`pipeline`), loaded by devices (`executable`); command buffers kept as recorded and
//! turned into Vulkan command buffers when the queue executes them (`command_buffer`).

pub(crate) mod command_buffer;
pub(crate) mod device;
pub(crate) mod error;
pub(crate) mod executable;
pub mod executable_def;
pub mod instance;
#[cfg(target_os = "linux")]
mod libraries;
pub(crate) mod logical_device;
pub(crate) mod memory;
pub(crate) mod physical_device;
pub mod pipeline;
pub(crate) mod queue;
pub(crate) mod spirv;
pub(crate) mod timestamps;
pub(crate) mod transfer;
pub mod validation;

pub use device::{devices, VulkanDevice};
pub use error::VulkanError;
pub use logical_device::{DeviceOptions, DeviceSelector};
pub use physical_device::{ApiVersion, ComputeLimits, DeviceType, Features, PhysicalDeviceInfo};
