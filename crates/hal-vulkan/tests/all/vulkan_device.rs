//! Vulkan devices on whatever Vulkan driver the machine has (lavapipe in CI): enumeration and what
//! it reports, buffers reached through a mapping and through staging, queue transfers checked
//! against hand-computed bytes, fences completed by the queue's timeline, and the validation
//! layers (on with `RTX_VULKAN_VALIDATION=1`, as the test command sets) reporting nothing. Devices
//! opened by name through the runtime are crates/runtime/tests/all/vulkan_device.rs's.
//!
//! Without a Vulkan device each test skips (`rtx_test_support::skip`; a failure under `CI=true`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rtx_hal::backend::{DeviceBackend, QueueFences, Transfer};
use rtx_hal::buffer::{memory_type, usage, Buffer};
use rtx_hal::command_buffer::{BufferRange, BufferSource};
use rtx_hal::fence::{Fence, Reached};
use rtx_hal::file::File;
use rtx_hal_vulkan::{DeviceOptions, DeviceType, VulkanDevice};
use rtx_host::StatusCode;
use rtx_vm::buffer::ByteBuffer;

use rtx_test_support::deadline::within_deadline;
use rtx_test_support::vulkan::{assert_validation_silent, device};

fn mapped() -> DeviceOptions {
    DeviceOptions::default()
}

fn staged() -> DeviceOptions {
    DeviceOptions { stage_device_local: true, ..DeviceOptions::default() }
}

fn whole(buffer: &Buffer, offset: i64, length: i64) -> BufferRange {
    BufferRange { source: BufferSource::Direct(buffer.clone()), offset, length }
}

/// Runs one transfer with no wait and waits for its fence.
fn transfer(device: &VulkanDevice, transfer: Transfer) {
    let signal = Fence::new();
    device.queue_transfer(&QueueFences { wait: None, signal: &signal }, transfer).unwrap();
    signal.wait().unwrap();
}

#[test]
fn enumeration_reports_each_device_with_sane_limits() {
    within_deadline("enumeration_reports_each_device_with_sane_limits", || {
        let Some(_open) = device(mapped()) else { return };
        let devices = rtx_hal_vulkan::devices().unwrap();
        assert!(!devices.is_empty());
        for (index, info) in devices.iter().enumerate() {
            assert_eq!(info.index, index);
            assert!(!info.name.is_empty());
            assert_ne!(info.uuid, [0; 16], "{}: a device UUID", info.name);
            let limits = &info.limits;
            // The minimums the Vulkan specification requires of every device.
            assert!(limits.max_workgroup_invocations >= 128, "{limits:?}");
            assert!(limits.max_workgroup_size[0] >= 128 && limits.max_workgroup_size[1] >= 128, "{limits:?}");
            assert!(limits.max_workgroup_size[2] >= 64, "{limits:?}");
            assert!(limits.max_workgroup_count.iter().all(|&n| n >= 65535), "{limits:?}");
            assert!(limits.max_push_constants_size >= 128, "{limits:?}");
            assert!(limits.max_storage_buffer_range >= 1 << 27, "{limits:?}");
            let alignment = limits.min_storage_buffer_offset_alignment;
            assert!(alignment.is_power_of_two() && alignment <= 256, "{limits:?}");
            assert!(info.features.subgroup_size.is_power_of_two(), "{:?}", info.features);
            if let Some((min, max)) = info.features.subgroup_size_range {
                assert!(min <= info.features.subgroup_size && info.features.subgroup_size <= max);
            }
            if info.driver_name == "llvmpipe" {
                // Lavapipe: Mesa's vendor id, a CPU device, Vulkan 1.3 with timeline semaphores.
                assert_eq!(info.vendor_id, 0x10005);
                assert_eq!(info.device_type, DeviceType::Cpu);
                assert!(info.name.starts_with("llvmpipe"), "{}", info.name);
                assert!(info.api_version.to_string().starts_with("1.3."), "{}", info.api_version);
                assert!(info.features.timeline_semaphore && info.features.shader_int64);
                assert!(info.unusable_reason().is_none());
            }
        }
        let first = &devices[0];
        let by_uuid = VulkanDevice::open_uri(&format!("vulkan://{}", first.uuid_string()), mapped()).unwrap();
        assert_eq!(by_uuid.info().uuid, first.uuid);
        let by_index = VulkanDevice::open_uri("vulkan://0", mapped()).unwrap();
        assert_eq!(by_index.info().name, first.name);
        let missing = VulkanDevice::open_uri(&format!("vulkan://{}", devices.len()), mapped()).unwrap_err();
        assert_eq!(missing.code, StatusCode::NotFound);
        assert!(missing.message.contains(&format!("no Vulkan device {}", devices.len())), "{}", missing.message);
        let bad = VulkanDevice::open_uri("vulkan://gpu", mapped()).unwrap_err();
        assert_eq!(bad.code, StatusCode::InvalidArgument);
        assert_eq!(by_index.query_i64("hal.device.id", "vulkan*").unwrap(), 1);
        assert_eq!(by_index.query_i64("hal.executable.format", "vulkan-spirv-fb").unwrap(), 1);
        assert_eq!(by_index.query_i64("hal.device.id", "local*").unwrap(), 0);
        drop((by_uuid, by_index));
        assert_validation_silent();
    });
}

/// New buffers read as zeros, and bytes written at an offset read back, whether the host maps
/// the memory or reaches it through staging copies.
#[test]
fn buffers_round_trip_bytes_mapped_and_staged() {
    within_deadline("buffers_round_trip_bytes_mapped_and_staged", || {
        for options in [mapped(), staged()] {
            let Some(device) = device(options) else { return };
            let allocator = device.allocator();
            let buffer = allocator.allocate(memory_type::DEVICE_LOCAL, usage::TRANSFER, 37).unwrap();
            assert_eq!(buffer.len(), 37);
            // Device-local memory is mapped where the device makes it host-visible (integrated GPUs,
            // lavapipe) unless the options stage it; a discrete GPU's is reached through staging.
            let mapped = buffer.memory().mapping().is_some();
            assert!(!(mapped && options.stage_device_local), "staged options never map device-local memory");
            assert_eq!(buffer.memory_types() & memory_type::HOST_VISIBLE != 0, mapped);
            assert_eq!(buffer.to_vec().unwrap(), vec![0; 37], "fresh memory is zeroed");
            let data: Vec<u8> = (1..=21).collect();
            buffer.write(5, &data).unwrap();
            let mut expected = vec![0; 37];
            expected[5..26].copy_from_slice(&data);
            assert_eq!(buffer.to_vec().unwrap(), expected);
            let mut middle = [0; 3];
            buffer.subspan(6, 10).unwrap().read(1, &mut middle).unwrap();
            assert_eq!(middle, [3, 4, 5]);
            assert_eq!(buffer.write(30, &[0; 8]).unwrap_err().code, StatusCode::OutOfRange);

            let host =
                allocator.allocate(memory_type::HOST_VISIBLE | memory_type::HOST_CACHED, usage::MAPPING, 8).unwrap();
            assert!(host.memory().mapping().is_some(), "host-visible memory is mapped");
            host.write(0, &[9; 8]).unwrap();
            assert_eq!(host.to_vec().unwrap(), [9; 8]);

            let imported =
                allocator.import(ByteBuffer::from_bytes(&[4, 3, 2, 1]).unwrap(), memory_type::DEVICE_LOCAL, 0).unwrap();
            assert_eq!(imported.to_vec().unwrap(), [4, 3, 2, 1]);
            assert!(allocator.allocate(memory_type::DEVICE_LOCAL, 0, 0).unwrap().to_vec().unwrap().is_empty());
            assert_eq!(
                allocator.allocate(memory_type::DEVICE_LOCAL, 0, -1).unwrap_err().code,
                StatusCode::InvalidArgument
            );
        }
        assert_validation_silent();
    });
}

/// Fills with every pattern size at aligned and unaligned ranges, copies (overlapping too) and
/// updates give the bytes worked out by hand.
#[test]
fn queue_transfers_give_hand_computed_bytes() {
    within_deadline("queue_transfers_give_hand_computed_bytes", || {
        for options in [mapped(), staged()] {
            let Some(device) = device(options) else { return };
            let allocator = device.allocator();
            let a = allocator.allocate(memory_type::DEVICE_LOCAL, usage::TRANSFER, 24).unwrap();
            let fill = |offset, length, pattern, pattern_length| Transfer::Fill {
                target: whole(&a, offset, length),
                pattern,
                pattern_length,
            };
            transfer(&device, fill(0, 8, 0xAB, 1)); // aligned: vkCmdFillBuffer
            transfer(&device, fill(9, 3, 0x7F, 1)); // unaligned: staged
            transfer(&device, fill(12, 4, 0x1234, 2));
            transfer(&device, fill(16, 8, 0x0102_0304_0506_0708, 8));
            assert_eq!(
                a.to_vec().unwrap(),
                [
                    0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0, 0x7F, 0x7F, 0x7F, 0x34, 0x12, 0x34, 0x12, 8, 7,
                    6, 5, 4, 3, 2, 1
                ]
            );
            let bad = Fence::new();
            let error = device
                .queue_transfer(&QueueFences { wait: None, signal: &bad }, fill(0, 6, 0x1234_5678, 4))
                .unwrap_err();
            assert_eq!(error.code, StatusCode::InvalidArgument);
            assert_eq!(bad.reached(), Reached::Failed(error), "the signal fence carries the failure");

            let b = allocator.allocate(memory_type::DEVICE_LOCAL, usage::TRANSFER, 8).unwrap();
            transfer(&device, Transfer::Copy { source: whole(&a, 13, 5), target: whole(&b, 1, 5) });
            assert_eq!(b.to_vec().unwrap(), [0, 0x12, 0x34, 0x12, 8, 7, 0, 0]);
            // Overlapping ranges of one buffer copy as memmove does.
            transfer(&device, Transfer::Copy { source: whole(&b, 1, 5), target: whole(&b, 3, 5) });
            assert_eq!(b.to_vec().unwrap(), [0, 0x12, 0x34, 0x12, 0x34, 0x12, 8, 7]);

            let source = ByteBuffer::from_bytes(&[10, 20, 30, 40, 50]).unwrap();
            transfer(&device, Transfer::Update { source, source_offset: 1, target: whole(&b, 2, 3) });
            assert_eq!(b.to_vec().unwrap(), [0, 0x12, 20, 30, 40, 0x12, 8, 7]);

            // A file in and out of a buffer through the queue.
            let file = File::new(ByteBuffer::from_bytes(&[1, 2, 3, 4, 5, 6]).unwrap());
            let signal = Fence::new();
            device.queue_read(&QueueFences { wait: None, signal: &signal }, &file, 2, &b, 0, 3).unwrap();
            signal.wait().unwrap();
            assert_eq!(b.to_vec().unwrap()[..4], [3, 4, 5, 30]);
            let signal = Fence::new();
            device.queue_write(&QueueFences { wait: None, signal: &signal }, &b, 5, &file, 0, 3).unwrap();
            signal.wait().unwrap();
            assert_eq!(file.bytes().to_vec(), [0x12, 8, 7, 4, 5, 6]);
        }
        assert_validation_silent();
    });
}

/// Queue work waits for its wait fence without blocking the caller, and its signal fence is
/// completed by the timeline's waiter, not by the thread that queued it.
#[test]
fn fences_complete_asynchronously_in_queue_order() {
    within_deadline("fences_complete_asynchronously_in_queue_order", || {
        let Some(device) = device(mapped()) else { return };
        let gate = Fence::new();
        let allocated = Fence::new();
        let buffer = device
            .queue_alloca(&QueueFences { wait: Some(&gate), signal: &allocated }, memory_type::DEVICE_LOCAL, 0, 16)
            .unwrap();
        let filled = Fence::new();
        let fill = Transfer::Fill { target: whole(&buffer, 0, 16), pattern: 0x5A, pattern_length: 1 };
        device.queue_transfer(&QueueFences { wait: Some(&allocated), signal: &filled }, fill).unwrap();
        let released = Fence::new();
        device.queue_dealloca(&QueueFences { wait: Some(&filled), signal: &released }, &buffer).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        for fence in [&allocated, &filled, &released] {
            assert_eq!(fence.reached(), Reached::No, "nothing runs before the gate opens");
        }
        let signaller = Arc::new(std::sync::Mutex::new(None));
        let seen = signaller.clone();
        released.when_reached(move || *seen.lock().unwrap() = Some(std::thread::current().id()));
        gate.signal();
        let deadline = Instant::now() + Duration::from_secs(30);
        while released.reached() == Reached::No {
            assert!(Instant::now() < deadline, "the queue never finished");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(released.reached(), Reached::Yes);
        assert_eq!(buffer.to_vec().unwrap(), [0x5A; 16]);
        assert_ne!(*signaller.lock().unwrap(), Some(std::thread::current().id()), "the waiter thread signals");

        let failed = Fence::new();
        failed.fail(&rtx_host::Diagnostic::new(StatusCode::Aborted, "upstream failed"));
        let after = Fence::new();
        let _ = device.queue_execute(&QueueFences { wait: Some(&failed), signal: &after }, None, &[]);
        assert!(matches!(after.reached(), Reached::Failed(e) if e.code == StatusCode::Aborted));
        drop(device);
        assert_validation_silent();
    });
}
