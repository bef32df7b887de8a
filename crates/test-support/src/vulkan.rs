//! The Vulkan tests' device and validation checks.

use crate::skip::{skip, Need};
use rtx_hal_vulkan::{validation, DeviceOptions, DeviceSelector, VulkanDevice};

/// The first Vulkan device opened with `options`, or `None` after a skip where none opens.
pub fn device(options: DeviceOptions) -> Option<VulkanDevice> {
    VulkanDevice::open(DeviceSelector::First, options)
        .map_err(|error| skip(Need::VulkanDevice, format_args!("no Vulkan device opens: {error}")))
        .ok()
}

/// Fails on anything the validation layers said in this process.
pub fn assert_validation_silent() {
    let (messages, dropped) = validation::messages();
    assert!(messages.is_empty(), "validation layers reported ({dropped} more not kept):\n{}", messages.join("\n"));
}
