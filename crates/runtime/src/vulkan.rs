//! Vulkan devices for hosts that choose one themselves (the C API's `rtx_vulkan_device_*`):
//! the physical devices there are, opening one, and adding it to contexts. Devices named by
//! URI (`vulkan://N`) go through [`Context::add_device`](crate::Context::add_device) instead.
//! A build without the `vulkan` feature has no Vulkan devices: each call says so
//! (UNIMPLEMENTED), and [`VulkanDevice`] has no values.

use std::sync::Arc;

use crate::Context;
use rtx_host::Diagnostic;

#[cfg(not(feature = "vulkan"))]
use crate::feature::left_out;
#[cfg(feature = "vulkan")]
pub use rtx_hal_vulkan::VulkanDevice;

/// An open Vulkan device; in a build without the `vulkan` feature, none can exist.
#[cfg(not(feature = "vulkan"))]
pub enum VulkanDevice {}

/// What a host sees of a physical device when choosing one.
#[derive(Clone, Debug)]
pub struct VulkanDeviceInfo {
    /// `VkPhysicalDeviceProperties::deviceName`.
    pub name: String,
    /// `VkPhysicalDeviceDriverProperties::driverName` (empty before Vulkan 1.2).
    pub driver: String,
    pub vendor_id: u32,
    pub device_id: u32,
    /// The API version the device offers (`VK_MAKE_API_VERSION` encoding).
    pub api_version: u32,
    /// `VkPhysicalDeviceIDProperties::deviceUUID`, stable across processes.
    pub uuid: [u8; 16],
    /// The size of the device-local memory heaps, together.
    pub device_local_bytes: u64,
}

/// Every physical device, usable or not; none where no Vulkan loader is installed.
pub fn physical_devices() -> Result<Vec<VulkanDeviceInfo>, Diagnostic> {
    #[cfg(feature = "vulkan")]
    {
        let infos = match rtx_hal_vulkan::devices() {
            Ok(infos) => infos,
            Err(rtx_hal_vulkan::VulkanError::NoLoader { .. }) => Vec::new(),
            Err(error) => return Err(error.into()),
        };
        Ok(infos
            .into_iter()
            .map(|info| VulkanDeviceInfo {
                name: info.name,
                driver: info.driver_name,
                vendor_id: info.vendor_id,
                device_id: info.device_id,
                api_version: info.api_version.0,
                uuid: info.uuid,
                device_local_bytes: info.device_local_bytes,
            })
            .collect())
    }
    #[cfg(not(feature = "vulkan"))]
    Err(left_out("vulkan", "listing Vulkan devices"))
}

/// Opens physical device `index` (in the order of [`physical_devices`]) with a compute queue.
/// NOT_FOUND for no such device; UNAVAILABLE where no Vulkan exists; FAILED_PRECONDITION (or the
/// driver's error) for a device rtx cannot run on, saying why.
pub fn open_index(index: usize) -> Result<Arc<VulkanDevice>, Diagnostic> {
    #[cfg(feature = "vulkan")]
    return open(rtx_hal_vulkan::DeviceSelector::Index(index));
    #[cfg(not(feature = "vulkan"))]
    Err(left_out("vulkan", format_args!("opening Vulkan device {index}")))
}

/// Opens the physical device whose `deviceUUID` is `uuid`, as [`open_index`] does.
pub fn open_uuid(uuid: [u8; 16]) -> Result<Arc<VulkanDevice>, Diagnostic> {
    #[cfg(feature = "vulkan")]
    return open(rtx_hal_vulkan::DeviceSelector::Uuid(uuid));
    #[cfg(not(feature = "vulkan"))]
    Err(left_out("vulkan", format_args!("opening Vulkan device {uuid:02x?}")))
}

#[cfg(feature = "vulkan")]
fn open(selector: rtx_hal_vulkan::DeviceSelector) -> Result<Arc<VulkanDevice>, Diagnostic> {
    Ok(Arc::new(VulkanDevice::open(selector, rtx_hal_vulkan::DeviceOptions::default())?))
}

impl Context {
    /// Makes `device` this context's device (see [`Context::add_hal_device`]).
    pub fn add_vulkan_device(&self, device: Arc<VulkanDevice>) -> Result<(), Diagnostic> {
        #[cfg(feature = "vulkan")]
        return self.add_hal_device(rtx_hal::device::Device::new(device));
        #[cfg(not(feature = "vulkan"))]
        match *device {}
    }
}
