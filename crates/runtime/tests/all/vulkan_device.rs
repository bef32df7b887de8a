//! Vulkan devices opened through the runtime by name (lavapipe in CI), with the validation layers
//! (on with `RTX_VULKAN_VALIDATION=1`) reporting nothing. The devices' own tests are
//! crates/hal-vulkan/tests/all/vulkan_device.rs.
//!
//! Without a Vulkan device the test skips (`rtx_test_support::skip`; a failure under `CI=true`).

use rtx_hal::backend::DeviceBackend;
use rtx_hal_vulkan::DeviceOptions;
use rtx_test_support::vulkan::{assert_validation_silent, device};

/// Contexts that name the same Vulkan device share one logical device while any of them uses it,
/// as `local-task` contexts share the worker pool; another name opens another.
#[test]
fn devices_opened_by_the_same_name_are_one_device() {
    if device(DeviceOptions::default()).is_none() {
        return;
    }
    let runtime = rtx_runtime::Runtime::new();
    let backend = |device: &rtx_hal::device::Device| device.backend() as *const dyn DeviceBackend as *const u8;
    let (first, again) = (runtime.open_device("vulkan").unwrap(), runtime.open_device("vulkan").unwrap());
    assert_eq!(backend(&first), backend(&again), "`vulkan` twice is one device");
    let by_index = runtime.open_device("vulkan://0").unwrap();
    assert_ne!(backend(&first), backend(&by_index), "another name, another device");
    let other_runtime = rtx_runtime::Runtime::new().open_device("vulkan").unwrap();
    assert_ne!(backend(&first), backend(&other_runtime), "runtimes do not share devices");
    drop((first, again, by_index, other_runtime));
    assert_validation_silent();
}
