//! Barriers recorded in a Vulkan command buffer are real: with the validation layers' synchronization
//! checks on (`RTX_VULKAN_VALIDATION=sync`, set here before any Vulkan call), a copy that reads what a fill
//! just wrote is a reported hazard without `barrier()` between them and silent with it — and the
//! copy gives the filled bytes. One test in its own process: the layers' log is process-wide.
//!
//! Without a Vulkan device the test skips (`rtx_test_support::skip`; a failure under `CI=true`).

use rtx_hal::backend::{DeviceBackend, QueueFences};
use rtx_hal::buffer::{memory_type, usage, Buffer};
use rtx_hal::command_buffer::{BufferRange, BufferSource, MODE_ONE_SHOT};
use rtx_hal::fence::Fence;
use rtx_hal_vulkan::instance::Instance;
use rtx_hal_vulkan::{validation, DeviceOptions, VulkanDevice};
use rtx_test_support::deadline::within_deadline;

fn range(buffer: &Buffer) -> BufferRange {
    BufferRange { source: BufferSource::Direct(buffer.clone()), offset: 0, length: -1 }
}

/// Fills a buffer, copies it into another (with a barrier between or not) in one command buffer,
/// and returns the copy's bytes.
fn fill_then_copy(device: &VulkanDevice, with_barrier: bool) -> Vec<u8> {
    let allocate = || device.allocator().allocate(memory_type::DEVICE_LOCAL, usage::TRANSFER, 16).unwrap();
    let (source, target) = (allocate(), allocate());
    let commands = device.create_command_buffer(MODE_ONE_SHOT, 0).unwrap();
    commands.fill(range(&source), 0xA5A5_0102, 4).unwrap();
    if with_barrier {
        commands.barrier().unwrap();
    }
    commands.copy(range(&source), range(&target)).unwrap();
    commands.finalize().unwrap();
    let signal = Fence::new();
    device.queue_execute(&QueueFences { wait: None, signal: &signal }, Some(&commands), &[]).unwrap();
    signal.wait().unwrap();
    target.to_vec().unwrap()
}

#[test]
fn a_barrier_orders_a_fill_before_the_copy_that_reads_it() {
    within_deadline("a_barrier_orders_a_fill_before_the_copy_that_reads_it", || {
        // The only test of this process, so nothing else reads the environment meanwhile.
        std::env::set_var("RTX_VULKAN_VALIDATION", "sync");
        let Some(device) = rtx_test_support::vulkan::device(DeviceOptions::default()) else { return };
        let filled: Vec<u8> = [0x02, 0x01, 0xA5, 0xA5].repeat(4);
        assert_eq!(fill_then_copy(&device, true), filled);
        let (messages, _) = validation::messages();
        assert!(messages.is_empty(), "with a barrier the layers report nothing:\n{}", messages.join("\n"));
        fill_then_copy(&device, false);
        // Asked for, the layers are on, or no device would have opened.
        assert!(Instance::shared().unwrap().validation(), "a device opened without the validation layers asked for");
        let (messages, _) = validation::messages();
        assert!(
            messages.iter().any(|m| m.contains("SYNC-HAZARD-READ-AFTER-WRITE")),
            "without a barrier the copy's read of the fill's write is a hazard:\n{}",
            messages.join("\n")
        );
    });
}
