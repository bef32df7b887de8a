//! Dispatches recorded into Vulkan command buffers, driven through the HAL interface with an
//! executable of the Vulkan fixtures (elementwise `add`: three storage buffers, no constants):
//! workgroup counts given when recording or read from a buffer (indirect), and one reusable
//! command buffer run twice with different binding tables, each result checked against sums
//! computed by hand; dispatches past the device's workgroup-count limit or with a misaligned binding
//! offset refused with an error rather than handed to the driver. The validation layers (on
//! with `RTX_VULKAN_VALIDATION=1`, as the test command sets) must report nothing.
//!
//! Without a Vulkan device the tests skip (`rtx_test_support::skip`; a failure under `CI=true`).

use rtx_hal::backend::{DeviceBackend, QueueFences, Transfer};
use rtx_hal::buffer::{memory_type, usage, Buffer};
use rtx_hal::command_buffer::{BufferRange, BufferSource, CommandBuffer, TableEntry, Workgroups, MODE_ONE_SHOT};
use rtx_hal::executable::Executable;
use rtx_hal::fence::{Fence, Reached};
use rtx_hal_vulkan::executable_def::{FORMAT, IDENTIFIER};
use rtx_hal_vulkan::{DeviceOptions, VulkanDevice};
use rtx_host::StatusCode;
use rtx_vm::Module;

use rtx_test_support::deadline::within_deadline;
use rtx_test_support::fixtures_dir;
use rtx_test_support::skip::{skip, Need};
use rtx_test_support::vulkan::{assert_validation_silent, device};

/// The `add` executable of the elementwise fixture, loaded on `device`.
fn add_executable(device: &VulkanDevice) -> Executable {
    let path = fixtures_dir().join("vulkan/elementwise.vmfb");
    let module = Module::load_file(path).expect("fixture loads");
    let segment = module.rodata_segments().find(|s| s.data.starts_with(IDENTIFIER)).expect("one Vulkan executable");
    device.create_executable(FORMAT, segment.data, &[]).unwrap()
}

fn f32s(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// A device buffer holding `bytes`.
fn buffer(device: &VulkanDevice, bytes: &[u8]) -> Buffer {
    let buffer = device
        .allocator()
        .allocate(memory_type::DEVICE_LOCAL, usage::TRANSFER | usage::DISPATCH_STORAGE, bytes.len() as i64)
        .unwrap();
    buffer.write(0, bytes).unwrap();
    buffer
}

fn direct(buffer: &Buffer) -> BufferRange {
    BufferRange { source: BufferSource::Direct(buffer.clone()), offset: 0, length: -1 }
}

fn slot(slot: u32) -> BufferRange {
    BufferRange { source: BufferSource::Slot(slot), offset: 0, length: -1 }
}

fn entry(buffer: &Buffer) -> TableEntry {
    TableEntry { buffer: Some(buffer.clone()), offset: 0, length: -1 }
}

fn execute(device: &VulkanDevice, commands: &CommandBuffer, table: Vec<TableEntry>) {
    let signal = Fence::new();
    device.queue_execute(&QueueFences { wait: None, signal: &signal }, Some(commands), &table).unwrap();
    signal.wait().unwrap();
}

#[test]
fn dispatches_with_fixed_and_indirect_workgroup_counts_compute_the_sums() {
    within_deadline("dispatches_with_fixed_and_indirect_workgroup_counts_compute_the_sums", || {
        let Some(device) = device(DeviceOptions::default()) else { return };
        let executable = add_executable(&device);
        let lhs = buffer(&device, &f32s(&[1.0, 2.0, 3.0, 4.0]));
        let rhs = buffer(&device, &f32s(&[10.0, 20.0, 30.0, 40.5]));
        let (fixed_out, indirect_out) = (buffer(&device, &[0; 16]), buffer(&device, &[0; 16]));
        let counts: Vec<u8> = [1u32, 1, 1].iter().flat_map(|c| c.to_le_bytes()).collect();
        let counts = buffer(&device, &counts);
        let commands = device.create_command_buffer(MODE_ONE_SHOT, 0).unwrap();
        let bindings = |out: &Buffer| vec![direct(&lhs), direct(&rhs), direct(out)];
        commands.dispatch(&executable, 0, Workgroups::Fixed([1, 1, 1]), &[], &bindings(&fixed_out)).unwrap();
        commands
            .dispatch(&executable, 0, Workgroups::Indirect(direct(&counts)), &[], &bindings(&indirect_out))
            .unwrap();
        commands.finalize().unwrap();
        execute(&device, &commands, Vec::new());
        let sums = f32s(&[11.0, 22.0, 33.0, 44.5]);
        assert_eq!(fixed_out.to_vec().unwrap(), sums);
        assert_eq!(indirect_out.to_vec().unwrap(), sums);
        // The device goes with the last of its objects: the layers report any Vulkan object left.
        drop((commands, executable, lhs, rhs, fixed_out, indirect_out, counts));
        drop(device);
        assert_validation_silent();
    });
}

#[test]
fn a_reusable_command_buffer_runs_with_each_tables_buffers() {
    within_deadline("a_reusable_command_buffer_runs_with_each_tables_buffers", || {
        let Some(device) = device(DeviceOptions::default()) else { return };
        let executable = add_executable(&device);
        let commands = device.create_command_buffer(0, 3).unwrap();
        commands.dispatch(&executable, 0, Workgroups::Fixed([1, 1, 1]), &[], &[slot(0), slot(1), slot(2)]).unwrap();
        commands.finalize().unwrap();
        for (lhs, rhs, sums) in [
            ([1.0, 2.0, 3.0, 4.0], [0.5, 0.5, 0.5, 0.5], [1.5, 2.5, 3.5, 4.5]),
            ([-1.0, 0.0, 8.0, 1e6], [1.0, -0.0, -8.0, 1.0], [0.0, 0.0, 0.0, 1_000_001.0]),
        ] {
            let (lhs, rhs, out) =
                (buffer(&device, &f32s(&lhs)), buffer(&device, &f32s(&rhs)), buffer(&device, &[0; 16]));
            execute(&device, &commands, vec![entry(&lhs), entry(&rhs), entry(&out)]);
            assert_eq!(out.to_vec().unwrap(), f32s(&sums));
        }
        let error = commands.dispatch(&executable, 0, Workgroups::Fixed([1, 1, 1]), &[], &[slot(3)]).unwrap_err();
        assert!(error.message.contains("finalized"), "{}", error.message);
        drop((commands, executable));
        drop(device);
        assert_validation_silent();
    });
}

#[test]
fn dispatches_outside_the_devices_limits_fail_before_reaching_it() {
    within_deadline("dispatches_outside_the_devices_limits_fail_before_reaching_it", || {
        let Some(device) = device(DeviceOptions::default()) else { return };
        let executable = add_executable(&device);
        let alignment = device.info().limits.min_storage_buffer_offset_alignment as i64;
        let data = buffer(&device, &vec![0; 64 + alignment as usize]);
        let run = |workgroups: Workgroups, first: BufferRange| {
            let commands = device.create_command_buffer(MODE_ONE_SHOT, 0).unwrap();
            commands.dispatch(&executable, 0, workgroups, &[], &[first, direct(&data), direct(&data)]).unwrap();
            commands.finalize().unwrap();
            let signal = Fence::new();
            let queued = device.queue_execute(&QueueFences { wait: None, signal: &signal }, Some(&commands), &[]);
            let error = queued.unwrap_err();
            assert_eq!(signal.wait().unwrap_err().code, error.code, "the signal fence fails with the error");
            error
        };
        // (A grid past the workgroup count limit runs in pieces: tests/all/vulkan_run.rs.)
        if alignment <= 1 {
            skip(Need::DeviceLimit, "a storage buffer offset alignment of 1: no offset is misaligned");
        } else {
            let misaligned =
                BufferRange { source: BufferSource::Direct(data.clone()), offset: alignment / 2, length: 16 };
            let error = run(Workgroups::Fixed([1, 1, 1]), misaligned);
            assert_eq!(error.code, rtx_host::StatusCode::InvalidArgument, "{}", error.message);
            assert!(
                error.message.contains(&format!("binding 0: offset {} is not a multiple", alignment / 2)),
                "{}",
                error.message
            );
        }
        drop((executable, data));
        drop(device);
        assert_validation_silent();
    });
}

/// A queued transfer holds its buffers until the device is done with them: the caller may drop
/// its last reference to the source and the target right after queueing (as compiled programs
/// do), and the copy still reads and writes live memory.
#[test]
fn queued_transfers_hold_their_buffers_until_done() {
    within_deadline("queued_transfers_hold_their_buffers_until_done", || {
        let Some(device) = device(DeviceOptions::default()) else { return };
        let bytes: Vec<u8> = (0..=255).cycle().take(1 << 16).collect();
        let (source, target, result) =
            (buffer(&device, &bytes), buffer(&device, &[0; 1 << 16]), buffer(&device, &[0; 1 << 16]));
        let (wait, copied, read) = (Fence::new(), Fence::new(), Fence::new());
        let transfer = Transfer::Copy { source: direct(&source), target: direct(&target) };
        device.queue_transfer(&QueueFences { wait: Some(&wait), signal: &copied }, transfer).unwrap();
        let transfer = Transfer::Copy { source: direct(&target), target: direct(&result) };
        device.queue_transfer(&QueueFences { wait: Some(&copied), signal: &read }, transfer).unwrap();
        drop((source, target));
        wait.signal();
        read.wait().unwrap();
        assert!(result.to_vec().unwrap() == bytes, "the copies through dropped buffers give the source's bytes");
        drop(result);
        drop(device);
        assert_validation_silent();
    });
}

/// Work waiting for a fence that an earlier submission of the same queue signals is chained on
/// the device: recorded and submitted at once, so a recording error comes back from the queue call
/// itself. Work waiting for a fence only the host signals waits for the host, and fails its own
/// fence when it runs.
#[test]
fn work_after_the_queues_own_submissions_is_submitted_at_once() {
    within_deadline("work_after_the_queues_own_submissions_is_submitted_at_once", || {
        let Some(device) = device(DeviceOptions::default()) else { return };
        let alignment = device.info().limits.min_storage_buffer_offset_alignment as i64;
        if alignment <= 1 {
            return skip(Need::DeviceLimit, "a storage buffer offset alignment of 1: no offset is misaligned");
        }
        let executable = add_executable(&device);
        let data = buffer(&device, &vec![0; 64 + alignment as usize]);
        let failing = device.create_command_buffer(MODE_ONE_SHOT, 0).unwrap();
        // A binding at an offset the device cannot bind: refused as the commands are recorded.
        let misaligned = BufferRange { source: BufferSource::Direct(data.clone()), offset: alignment / 2, length: 16 };
        let bindings = vec![misaligned, direct(&data), direct(&data)];
        failing.dispatch(&executable, 0, Workgroups::Fixed([1, 1, 1]), &[], &bindings).unwrap();
        failing.finalize().unwrap();

        let (host, after_host) = (Fence::new(), Fence::new());
        device.queue_execute(&QueueFences { wait: Some(&host), signal: &after_host }, Some(&failing), &[]).unwrap();
        assert_eq!(after_host.reached(), Reached::No, "nothing runs before the host signals");
        host.signal();
        assert_eq!(after_host.wait().unwrap_err().code, StatusCode::InvalidArgument);

        // A fill long enough to be on the device still when the next call looks at its fence.
        let large = device.allocator().allocate(memory_type::DEVICE_LOCAL, usage::TRANSFER, 64 << 20).unwrap();
        let (filled, after_fill) = (Fence::new(), Fence::new());
        let fill = Transfer::Fill { target: direct(&large), pattern: 7, pattern_length: 4 };
        device.queue_transfer(&QueueFences { wait: None, signal: &filled }, fill).unwrap();
        let queued =
            device.queue_execute(&QueueFences { wait: Some(&filled), signal: &after_fill }, Some(&failing), &[]);
        assert_eq!(queued.unwrap_err().code, StatusCode::InvalidArgument, "recorded at once, not after the fill");
        assert_eq!(after_fill.wait().unwrap_err().code, StatusCode::InvalidArgument);
        filled.wait().unwrap();
        drop((executable, data, failing, large));
        drop(device);
        assert_validation_silent();
    });
}
