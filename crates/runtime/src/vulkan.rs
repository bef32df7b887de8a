//! Vulkan devices for hosts that choose one themselves (the C API's `rtx_vulkan_device_*`):
//! the physical devices there are, opening one, and adding it to contexts. Devices named by
//! URI (`vulkan://N`) go through [`Context::add_device`](crate::Context::add_device) instead.

use std::sync::Arc;

use crate::Context;
use rtx_hal::device::Device;
use rtx_hal_vulkan::VulkanError;
pub use rtx_hal_vulkan::{DeviceOptions, DeviceSelector, PhysicalDeviceInfo, VulkanDevice};
use rtx_host::Diagnostic;

/// Every physical device, usable or not; none where no Vulkan loader is installed.
pub fn physical_devices() -> Result<Vec<PhysicalDeviceInfo>, Diagnostic> {
    match rtx_hal_vulkan::devices() {
        Ok(infos) => Ok(infos),
        Err(VulkanError::NoLoader { .. }) => Ok(Vec::new()),
        Err(error) => Err(error.into()),
    }
}

/// Opens the device `selector` picks, with a compute queue. NOT_FOUND for no such device;
/// UNAVAILABLE where no Vulkan exists; FAILED_PRECONDITION (or the driver's error) for a device
/// rtx cannot run on, saying why.
pub fn open(selector: DeviceSelector, options: DeviceOptions) -> Result<Arc<VulkanDevice>, Diagnostic> {
    Ok(Arc::new(VulkanDevice::open(selector, options)?))
}

impl Context {
    /// Makes `device` this context's device (see [`Context::add_hal_device`]).
    pub fn add_vulkan_device(&self, device: Arc<VulkanDevice>) -> Result<(), Diagnostic> {
        self.add_hal_device(Device::new(device))
    }
}
