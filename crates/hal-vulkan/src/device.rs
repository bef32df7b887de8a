//! The Vulkan device as the HAL sees it: queries, its allocator, and queue operations. Queue work
//! whose wait fence the queue's own submissions signal is recorded and submitted at once, ordered
//! on the device; other work waits for its wait fence on the host (a continuation, never a blocked
//! thread) first. Its signal fence is signalled by the queue's waiter when the timeline passes it.

use std::sync::Arc;

use super::command_buffer;
use super::error::VulkanError;
use super::executable::VulkanExecutable;
use super::instance::Instance;
use super::logical_device::{DeviceOptions, DeviceSelector, LogicalDevice};
use super::memory::{copy, DeviceBuffer, VulkanAllocator};
use super::physical_device::{self, PhysicalDeviceInfo};
use super::transfer;
use rtx_hal::backend::{DeviceBackend, QueueFences, Transfer};
use rtx_hal::buffer::Buffer;
use rtx_hal::command_buffer::{command_list, BufferRange, BufferSource, CommandBuffer, SpareLists, TableEntry};
use rtx_hal::device::{glob_match, unknown_query, Allocator, Device};
use rtx_hal::executable::Executable;
use rtx_hal::fence::{after, Fence};
use rtx_hal::file::File;
use rtx_host::{Diagnostic, StatusCode};
use rtx_vm::buffer::ByteBuffer;

/// The executable format Vulkan devices run (SPIR-V in IREE's FlatBuffer).
pub const EXECUTABLE_FORMAT: &str = "vulkan-spirv-fb";

/// What `hal.device.id` queries match.
const DEVICE_ID: &str = "vulkan";

/// Every Vulkan physical device of this process's instance.
pub fn devices() -> Result<Vec<PhysicalDeviceInfo>, VulkanError> {
    let instance = Instance::shared()?;
    Ok(physical_device::enumerate(&instance)?.into_iter().map(|(_, info)| info).collect())
}

/// A Vulkan device.
#[derive(Debug)]
pub struct VulkanDevice {
    device: Arc<LogicalDevice>,
    allocator: Allocator,
    /// Storage of released command buffers, for the next ones.
    spare_lists: Arc<SpareLists>,
}

impl VulkanDevice {
    /// Opens the device `selector` names.
    pub fn open(selector: DeviceSelector, options: DeviceOptions) -> Result<VulkanDevice, VulkanError> {
        let device = LogicalDevice::open(Instance::shared()?, selector, options)?;
        let allocator = Allocator::new(Arc::new(VulkanAllocator::new(device.clone())));
        Ok(VulkanDevice { device, allocator, spare_lists: Arc::default() })
    }

    /// Opens the device a URI names (`vulkan`, `vulkan://N`, `vulkan://UUID`).
    pub fn open_uri(uri: &str, options: DeviceOptions) -> Result<VulkanDevice, Diagnostic> {
        Ok(VulkanDevice::open(DeviceSelector::parse(uri)?, options)?)
    }

    pub fn info(&self) -> &PhysicalDeviceInfo {
        self.device.info()
    }

    /// The device as the `hal` module holds it.
    pub fn into_device(self) -> Device {
        Device::new(Arc::new(self))
    }

    /// Runs `work` once `queue.wait` is reached — now, or from the fence's continuation — handing
    /// it the signal fence to finish; an error fails the signal fence (and is returned when the
    /// work ran now). A wait that this device's queue already orders (earlier submissions signal
    /// it) is left to the device: the work is submitted at once, chained on the GPU.
    fn enqueue(
        &self,
        queue: &QueueFences<'_>,
        work: impl FnOnce(&LogicalDevice, Fence) -> Result<(), Diagnostic> + Send + 'static,
    ) -> Result<(), Diagnostic> {
        let signal = queue.signal.clone();
        let run = {
            let device = self.device.clone();
            move |waited: Result<(), Diagnostic>| {
                let result = waited.and_then(|()| work(&device, signal.clone()));
                if let Err(error) = &result {
                    signal.fail(error);
                }
                result
            }
        };
        let wait = queue.wait.filter(|wait| !self.device.queue().orders_after(wait));
        after(wait, run)
    }

    /// Queue work that only signals `queue.signal` after `queue.wait` and the work before it.
    fn order(&self, queue: &QueueFences<'_>) -> Result<(), Diagnostic> {
        self.enqueue(queue, |device, signal| device.queue().signal_after_pending(signal))
    }

    /// Queue work of one transfer, its buffers resolved when it runs and held until the device
    /// is done with them (the transfer may hold their last references).
    fn submit_transfer(device: &LogicalDevice, transfer: Transfer, signal: Fence) -> Result<(), Diagnostic> {
        let mut recording = device.queue().begin()?;
        transfer::record(&mut recording, &transfer, &[])?;
        recording.keep(transfer);
        device.queue().submit(recording, None, Some(signal))?;
        Ok(())
    }
}

impl DeviceBackend for VulkanDevice {
    fn query_i64(&self, category: &str, key: &str) -> Result<i64, Diagnostic> {
        match (category, key) {
            ("hal.device.id", pattern) => Ok(glob_match(pattern, DEVICE_ID) as i64),
            ("hal.executable.format", format) => Ok(glob_match(format, EXECUTABLE_FORMAT) as i64),
            ("hal.device" | "hal.dispatch", "concurrency") => Ok(1),
            _ => Err(unknown_query(category, key)),
        }
    }

    fn allocator(&self) -> &Allocator {
        &self.allocator
    }

    fn create_executable(&self, format: &str, data: &[u8], constants: &[u32]) -> Result<Executable, Diagnostic> {
        if format != EXECUTABLE_FORMAT {
            return Err(Diagnostic::new(
                StatusCode::NotFound,
                format!("no executable loader for format `{format}` (Vulkan devices load {EXECUTABLE_FORMAT})"),
            ));
        }
        Ok(Executable::new(Arc::new(VulkanExecutable::load(&self.device, data, constants)?)))
    }

    fn create_command_buffer(&self, _mode: u32, binding_capacity: u32) -> Result<CommandBuffer, Diagnostic> {
        Ok(CommandBuffer::new(Arc::new(command_buffer::new(self.device.clone(), binding_capacity, &self.spare_lists))))
    }

    /// The memory is allocated at once; the queue orders the signal after the wait.
    fn queue_alloca(
        &self,
        queue: &QueueFences<'_>,
        memory_types: u32,
        usage: u32,
        size: i64,
    ) -> Result<Arc<Buffer>, Diagnostic> {
        let buffer = self.allocator.allocate(memory_types, usage, size)?;
        self.order(queue)?;
        Ok(Arc::new(buffer))
    }

    /// The memory goes with the buffer's last reference (submissions using it hold one); the
    /// queue only orders the signal.
    fn queue_dealloca(&self, queue: &QueueFences<'_>, _buffer: &Buffer) -> Result<(), Diagnostic> {
        self.order(queue)
    }

    /// The commands are recorded into a Vulkan command buffer once `wait` is reached, with the
    /// table's buffers; the submission holds the command buffer and the table until it is done.
    fn queue_execute(
        &self,
        queue: &QueueFences<'_>,
        commands: Option<&CommandBuffer>,
        table: &[TableEntry],
    ) -> Result<(), Diagnostic> {
        let Some(commands) = commands else {
            return self.order(queue);
        };
        command_list(commands)?;
        let (commands, table) = (commands.clone(), table.to_vec());
        self.enqueue(queue, move |device, signal| {
            let mut recording = device.queue().begin()?;
            command_buffer::record(command_list(&commands)?, &mut recording, &table)?;
            recording.keep(commands);
            recording.keep(table);
            device.queue().submit(recording, None, Some(signal))?;
            Ok(())
        })
    }

    fn queue_transfer(&self, queue: &QueueFences<'_>, transfer: Transfer) -> Result<(), Diagnostic> {
        self.enqueue(queue, move |device, signal| VulkanDevice::submit_transfer(device, transfer, signal))
    }

    /// A file's bytes are host memory: an update from them.
    fn queue_read(
        &self,
        queue: &QueueFences<'_>,
        file: &File,
        file_offset: i64,
        buffer: &Buffer,
        buffer_offset: i64,
        length: i64,
    ) -> Result<(), Diagnostic> {
        let source_offset = usize::try_from(file_offset)
            .map_err(|_| Diagnostic::new(StatusCode::OutOfRange, format!("file offset {file_offset} is negative")))?;
        let transfer = Transfer::Update {
            source: file.bytes().clone(),
            source_offset,
            target: BufferRange { source: BufferSource::Direct(buffer.clone()), offset: buffer_offset, length },
        };
        self.queue_transfer(queue, transfer)
    }

    /// A copy into a staging buffer, whose bytes the host copies into the file once the device is
    /// done.
    fn queue_write(
        &self,
        queue: &QueueFences<'_>,
        buffer: &Buffer,
        buffer_offset: i64,
        file: &File,
        file_offset: i64,
        length: i64,
    ) -> Result<(), Diagnostic> {
        let (buffer, target) = (buffer.clone(), file.bytes().clone());
        self.enqueue(queue, move |device, signal| {
            let range = BufferRange { source: BufferSource::Direct(buffer), offset: buffer_offset, length };
            let source = transfer::resolve(&range, &[])?;
            let staging =
                DeviceBuffer::new(source.buffer.device(), source.length, gpu_allocator::MemoryLocation::GpuToCpu)?;
            let mut recording = device.queue().begin()?;
            copy(&recording, &source.buffer, source.offset, &staging, 0, source.length);
            recording.keep(staging.clone());
            // The queue may hold the last reference to the buffer read.
            recording.keep(source.buffer);
            let length = source.length as usize;
            let then = Box::new(move || {
                let bytes = ByteBuffer::from_bytes(&staging.read_back(length)?)?;
                ByteBuffer::copy(&bytes, 0, &target, file_offset, length as i64)
            });
            device.queue().submit(recording, Some(then), Some(signal))?;
            Ok(())
        })
    }

    /// Work is submitted as it is queued: there is nothing to flush.
    fn queue_flush(&self) -> Result<(), Diagnostic> {
        Ok(())
    }
}
