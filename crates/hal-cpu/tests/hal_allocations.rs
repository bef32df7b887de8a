//! On `local-task` as on `local-sync`, running a command buffer allocates nothing per command:
//! `local-task`'s jobs, the parts of a group and the submitter's local memory are kept from one
//! execution to the next. Executing one of 48 commands (dispatches of several workgroups alone and
//! in groups, direct and indirect, fills and copies in pieces and whole) allocates exactly as much
//! as executing one of a single dispatch, and both compute what they should. Recording allocates
//! nothing per command either, as a program that records a command buffer on every step of a loop
//! does: a list keeps its dispatches' constants and bindings in storage of its own, which the
//! device hands to its next list. One test in its own process: the allocation count is
//! process-wide.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use rtx_hal::backend::{DeviceBackend, QueueFences};
use rtx_hal::buffer::{memory_type, usage, Buffer};
use rtx_hal::command_buffer::{BufferRange, BufferSource, CommandBuffer, Workgroups};
use rtx_hal::executable::Executable;
use rtx_hal::fence::Fence;
use rtx_hal_cpu::device::{DeviceKind, LocalDevice};
use rtx_test_support::fixtures_dir;

/// Counts every allocation, reallocation included, of every thread.
struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Elements each negation covers: four workgroups of 4096.
const N: usize = 4 * 4096;

fn range(buffer: &Buffer) -> BufferRange {
    BufferRange { source: BufferSource::Direct(buffer.clone()), offset: 0, length: -1 }
}

fn negate(commands: &CommandBuffer, negate: &Executable, from: &Buffer, to: &Buffer) {
    negate_over(commands, negate, Workgroups::Fixed([N.div_ceil(4096) as u32, 1, 1]), from, to);
}

fn negate_over(commands: &CommandBuffer, negate: &Executable, grid: Workgroups, from: &Buffer, to: &Buffer) {
    commands.dispatch(negate, 0, grid, &[N as u32, 0], &[range(from), range(to)]).unwrap();
}

/// Creates a command buffer, records into it with `record`, finalizes and releases it; returns
/// the allocations that took.
fn recording(device: &LocalDevice, record: &dyn Fn(&CommandBuffer)) -> usize {
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    let commands = device.create_command_buffer(0, 0).unwrap();
    record(&commands);
    commands.finalize().unwrap();
    drop(commands);
    ALLOCATIONS.load(Ordering::SeqCst) - before
}

/// Executes `commands` and waits; returns the allocations that took.
fn execute(device: &LocalDevice, commands: &CommandBuffer) -> usize {
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    let signal = Fence::new();
    device.queue_execute(&QueueFences { wait: None, signal: &signal }, Some(commands), &[]).unwrap();
    signal.wait().unwrap();
    drop(signal);
    ALLOCATIONS.load(Ordering::SeqCst) - before
}

fn f32s(buffer: &Buffer) -> Vec<f32> {
    buffer.to_vec().unwrap().chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect()
}

#[test]
fn recording_and_executing_a_command_buffer_allocate_nothing_per_command() {
    for kind in [DeviceKind::LocalTask, DeviceKind::LocalSync] {
        allocates_nothing_per_command(LocalDevice::with_workers(kind, 2), kind);
    }
}

fn allocates_nothing_per_command(device: LocalDevice, kind: DeviceKind) {
    let path = fixtures_dir().join("hal/dynamic.embedded-elf-x86_64.so");
    let executable = device.create_executable("embedded-elf-x86_64", &std::fs::read(path).unwrap(), &[]).unwrap();
    let allocate = |bytes: usize| device.allocator().allocate(memory_type::CPU, usage::CPU, bytes as i64).unwrap();
    // Buffer 4 takes fills of four pieces.
    let buffers: Vec<Buffer> = (0..6).map(|i| allocate(if i == 4 { 16 * N } else { 4 * N })).collect();
    let input: Vec<f32> = (0..N).map(|i| i as f32 - 100.5).collect();
    buffers[0].write(0, &input.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    // The grid of the indirect negations, 4 bytes into its buffer.
    let counts = allocate(16);
    counts.write(0, &[0, 4, 1, 1].map(u32::to_le_bytes).concat()).unwrap();
    let indirect = || Workgroups::Indirect(BufferRange { offset: 4, length: 12, ..range(&counts) });

    let record_one = |one: &CommandBuffer| negate(one, &executable, &buffers[0], &buffers[1]);
    // 48 commands: groups of three negations (each of 4 workgroups) beside a fill of 256 KiB (in
    // pieces) or a small copy (whole), and negations alone (the last of each round with its grid
    // read from a buffer), barriers between.
    let record_many = |many: &CommandBuffer| {
        for round in 0..6 {
            negate(many, &executable, &buffers[0], &buffers[2]);
            negate(many, &executable, &buffers[0], &buffers[3]);
            negate(many, &executable, &buffers[0], &buffers[5]);
            if round % 2 == 0 {
                many.fill(range(&buffers[4]), 0x3f80_0000, 4).unwrap();
            } else {
                let small = |buffer: &Buffer| BufferRange { length: 64, ..range(buffer) };
                many.copy(small(&buffers[0]), small(&buffers[4])).unwrap();
            }
            many.barrier().unwrap();
            negate(many, &executable, &buffers[2], &buffers[1]);
            many.barrier().unwrap();
            negate_over(many, &executable, indirect(), &buffers[1], &buffers[5]);
            many.barrier().unwrap();
        }
    };

    // The first lists grow the storage that the device keeps for later ones.
    for _ in 0..3 {
        recording(&device, &record_many);
    }
    let fewest_recording = |record: &dyn Fn(&CommandBuffer)| (0..5).map(|_| recording(&device, record)).min().unwrap();
    let (one, many) = (fewest_recording(&record_one), fewest_recording(&record_many));
    assert_eq!(many, one, "{kind:?}: recording 48 commands allocated {many} times, one dispatch {one}");

    let one = device.create_command_buffer(0, 0).unwrap();
    record_one(&one);
    one.finalize().unwrap();
    let many = device.create_command_buffer(0, 0).unwrap();
    record_many(&many);
    many.finalize().unwrap();

    // The first executions keep what later ones reuse: jobs, arenas, local memory.
    for _ in 0..3 {
        execute(&device, &one);
        execute(&device, &many);
    }
    // The fewest of a few: a worker descheduled while it holds a job can make one execution take
    // a job of its own, as a submitter on another thread would.
    let fewest = |commands: &CommandBuffer| (0..5).map(|_| execute(&device, commands)).min().unwrap();
    let (alone, all) = (fewest(&one), fewest(&many));
    assert_eq!(all, alone, "{kind:?}: 48 commands allocated {all} times, one dispatch {alone}");

    // The last round: buffer 2 the input negated, 1 that negated back, 5 that negated again.
    let negated: Vec<f32> = input.iter().map(|v| -v).collect();
    assert_eq!((f32s(&buffers[2]), f32s(&buffers[1]), f32s(&buffers[5])), (negated.clone(), input.clone(), negated));
    let filled = f32s(&buffers[4]);
    assert_eq!(filled[..16], input[..16], "the last round copies into the filled buffer");
    assert!(filled[16..].iter().all(|&v| v == 1.0), "the fill's 1.0s stay past the copy");
}
