//! The Vulkan tests' device and validation checks.

use rtx_hal_vulkan::{validation, DeviceOptions, DeviceSelector, VulkanDevice};

/// The first Vulkan device opened with `options`, or `None` after a loud skip message where there
/// is none — a failure instead under `RTX_REQUIRE_VULKAN=1` (CI).
pub fn device(options: DeviceOptions) -> Option<VulkanDevice> {
    match VulkanDevice::open(DeviceSelector::First, options) {
        Ok(device) => Some(device),
        Err(error) => {
            if std::env::var("RTX_REQUIRE_VULKAN").as_deref() == Ok("1") {
                panic!("RTX_REQUIRE_VULKAN=1 but no Vulkan device opens: {error}");
            }
            eprintln!("!!! SKIP: no Vulkan device: {error}");
            None
        }
    }
}

/// Fails on anything the validation layers said in this process.
pub fn assert_validation_silent() {
    let (messages, dropped) = validation::messages();
    assert!(messages.is_empty(), "validation layers reported ({dropped} more not kept):\n{}", messages.join("\n"));
}
