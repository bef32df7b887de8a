//! A submission that holds the last reference to a Vulkan device releases it before the
//! submission's fence is reached: a host that waits for the fence and then exits must not race the
//! queue's thread destroying the device and the instance (which unloads the validation layers).
//! One test in its own process: the instance is shared by every device of the process.
//!
//! Without a Vulkan device the test skips (`rtx_test_support::skip`; a failure under `CI=true`).

use std::sync::Arc;

use rtx_hal::backend::{DeviceBackend, QueueFences, Transfer};
use rtx_hal::buffer::{memory_type, usage};
use rtx_hal::command_buffer::{BufferRange, BufferSource};
use rtx_hal::fence::Fence;
use rtx_hal_vulkan::instance::Instance;
use rtx_hal_vulkan::DeviceOptions;
use rtx_test_support::deadline::within_deadline;

#[test]
fn the_device_is_gone_when_the_fence_of_its_last_submission_is_reached() {
    within_deadline("the_device_is_gone_when_the_fence_of_its_last_submission_is_reached", || {
        for round in 0..20 {
            let Some(device) = rtx_test_support::vulkan::device(DeviceOptions::default()) else { return };
            let instance = Arc::downgrade(&Instance::shared().unwrap());
            let buffer = device.allocator().allocate(memory_type::DEVICE_LOCAL, usage::TRANSFER, 1 << 20).unwrap();
            let target = BufferRange { source: BufferSource::Direct(buffer), offset: 0, length: -1 };
            let fill = Transfer::Fill { target, pattern: 1, pattern_length: 4 };
            let (wait, signal) = (Fence::new(), Fence::new());
            device.queue_transfer(&QueueFences { wait: Some(&wait), signal: &signal }, fill).unwrap();
            // The queued fill now holds the only reference to the buffer, and so to the device.
            drop(device);
            wait.signal();
            signal.wait().unwrap();
            assert!(
                instance.upgrade().is_none(),
                "round {round}: the instance outlived the fence of its last submission"
            );
        }
        rtx_test_support::vulkan::assert_validation_silent();
        // The instance is gone, the loader's code is not: a thread that called into a driver may run
        // the driver's thread-exit destructors after the last device (crates/hal-vulkan/src/libraries.rs).
        // SAFETY: `RTLD_NOLOAD` only looks the library up; the reference taken is given back.
        let loader = unsafe { libc::dlopen(c"libvulkan.so.1".as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
        assert!(!loader.is_null(), "the Vulkan loader was unloaded with the last instance");
        // SAFETY: `loader` came from `dlopen`.
        unsafe { libc::dlclose(loader) };
    });
}
