//! Device memory: `VkBuffer`s placed by gpu-allocator, and the HAL's [`Memory`] and
//! [`AllocatorBackend`] over them. Memory the host can map is read and written through the
//! mapping (flushed and invalidated where it is not coherent); other memory through a staging
//! buffer and a one-shot copy on the queue.

use std::any::Any;
use std::ptr::NonNull;
use std::sync::Arc;

use ash::vk;
use gpu_allocator::vulkan::{Allocation, AllocationCreateDesc, AllocationScheme};
use gpu_allocator::MemoryLocation;

use super::error::VulkanError;
use super::logical_device::LogicalDevice;
use rtx_hal::backend::{read_mapped, write_mapped, AllocatorBackend, Memory};
use rtx_hal::buffer::{memory_type, usage, Buffer};
use rtx_host::{Diagnostic, StatusCode};
use rtx_vm::buffer::ByteBuffer;

/// One `VkBuffer` with its memory. Freed when the last holder (a HAL buffer, a mapping, a
/// submission) lets go.
pub struct DeviceBuffer {
    device: Arc<LogicalDevice>,
    buffer: vk::Buffer,
    /// Taken when freed.
    allocation: Option<Allocation>,
    size: u64,
}

impl std::fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer").field("size", &self.size).field("mapped", &self.mapped().is_some()).finish()
    }
}

// SAFETY: the allocation's mapped pointer is only read (to hand out the mapping); Vulkan
// handles may be used from any thread with the external synchronisation the queue provides.
unsafe impl Send for DeviceBuffer {}
// SAFETY: as above.
unsafe impl Sync for DeviceBuffer {}

/// What every buffer may be used for: transfers both ways and every kind of dispatch binding.
const BUFFER_USAGE: vk::BufferUsageFlags = vk::BufferUsageFlags::from_raw(
    vk::BufferUsageFlags::TRANSFER_SRC.as_raw()
        | vk::BufferUsageFlags::TRANSFER_DST.as_raw()
        | vk::BufferUsageFlags::STORAGE_BUFFER.as_raw()
        | vk::BufferUsageFlags::UNIFORM_BUFFER.as_raw()
        | vk::BufferUsageFlags::INDIRECT_BUFFER.as_raw(),
);

impl DeviceBuffer {
    /// A buffer of at least `size` bytes in memory of `location`.
    pub fn new(
        device: &Arc<LogicalDevice>,
        size: u64,
        location: MemoryLocation,
    ) -> Result<Arc<DeviceBuffer>, Diagnostic> {
        // Vulkan has no empty buffers, and fills cover whole 4-byte words.
        let vk_size = size.max(1).next_multiple_of(4);
        let info =
            vk::BufferCreateInfo::default().size(vk_size).usage(BUFFER_USAGE).sharing_mode(vk::SharingMode::EXCLUSIVE);
        let vk_device = device.handle();
        // SAFETY: the device is live.
        let buffer = unsafe { vk_device.create_buffer(&info, None) }.map_err(VulkanError::call("vkCreateBuffer"))?;
        // Freed on every early return below.
        let mut made = DeviceBuffer { device: device.clone(), buffer, allocation: None, size };
        // SAFETY: `buffer` is live.
        let requirements = unsafe { vk_device.get_buffer_memory_requirements(buffer) };
        let allocation = device
            .allocator()
            .as_mut()
            .expect("the allocator lives while buffers do")
            .allocate(&AllocationCreateDesc {
                name: "rtx buffer",
                requirements,
                location,
                linear: true,
                allocation_scheme: AllocationScheme::GpuAllocatorManaged,
            })
            .map_err(|source| VulkanError::Allocation { size, source })?;
        // SAFETY: the allocation satisfies the buffer's requirements and is bound once.
        let bound = unsafe { vk_device.bind_buffer_memory(buffer, allocation.memory(), allocation.offset()) };
        made.allocation = Some(allocation);
        bound.map_err(VulkanError::call("vkBindBufferMemory"))?;
        Ok(Arc::new(made))
    }

    pub fn handle(&self) -> vk::Buffer {
        self.buffer
    }

    pub fn device(&self) -> &Arc<LogicalDevice> {
        &self.device
    }

    fn allocation(&self) -> &Allocation {
        self.allocation.as_ref().expect("allocated until dropped")
    }

    /// Where the host sees the memory, if it can.
    pub fn mapped(&self) -> Option<NonNull<u8>> {
        self.allocation.as_ref()?.mapped_ptr().map(NonNull::cast)
    }

    /// The first `length` bytes of a mapped staging buffer the device finished writing (its
    /// submission's timeline value passed), invalidated first.
    pub fn read_back(&self, length: usize) -> Result<Vec<u8>, Diagnostic> {
        let mapped = self.mapped().ok_or_else(staging_not_mapped)?;
        let length = length.min(self.size as usize);
        self.invalidate(0, length as u64)?;
        // SAFETY: the mapping holds the buffer's `size` bytes; the device is done writing them
        // (the caller's contract) and the host only reads.
        Ok(unsafe { std::slice::from_raw_parts(mapped.as_ptr(), length) }.to_vec())
    }

    fn properties(&self) -> vk::MemoryPropertyFlags {
        self.allocation().memory_properties()
    }

    /// Makes host writes to `offset..offset + length` visible to the device.
    pub fn flush(&self, offset: u64, length: u64) -> Result<(), Diagnostic> {
        if let Some(range) = self.non_coherent_range(offset, length) {
            // SAFETY: the range lies in this buffer's mapped memory object.
            unsafe { self.device.handle().flush_mapped_memory_ranges(&[range]) }
                .map_err(VulkanError::call("vkFlushMappedMemoryRanges"))?;
        }
        Ok(())
    }

    /// Makes device writes to `offset..offset + length` visible to the host.
    pub fn invalidate(&self, offset: u64, length: u64) -> Result<(), Diagnostic> {
        if let Some(range) = self.non_coherent_range(offset, length) {
            // SAFETY: as above.
            unsafe { self.device.handle().invalidate_mapped_memory_ranges(&[range]) }
                .map_err(VulkanError::call("vkInvalidateMappedMemoryRanges"))?;
        }
        Ok(())
    }

    /// The memory range covering `offset..offset + length` widened to the device's
    /// non-coherent atom size, for mapped memory that is not coherent; `None` otherwise.
    fn non_coherent_range(&self, offset: u64, length: u64) -> Option<vk::MappedMemoryRange<'static>> {
        if self.mapped().is_none() || self.properties().contains(vk::MemoryPropertyFlags::HOST_COHERENT) {
            return None;
        }
        let allocation = self.allocation();
        let atom = self.device.info().limits.non_coherent_atom_size.max(1);
        let start = allocation.offset() + offset;
        let aligned_start = start / atom * atom;
        let aligned_end = (start + length).next_multiple_of(atom);
        // Past the allocation the widened range may run past the memory object: to its end.
        let size = if aligned_end > allocation.offset() + allocation.size() {
            vk::WHOLE_SIZE
        } else {
            aligned_end - aligned_start
        };
        // SAFETY: reading the handle of the live allocation.
        let memory = unsafe { allocation.memory() };
        Some(vk::MappedMemoryRange::default().memory(memory).offset(aligned_start).size(size))
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: the last holder is gone: no submission uses the buffer any more.
        unsafe { self.device.handle().destroy_buffer(self.buffer, None) };
        if let Some(allocation) = self.allocation.take() {
            if let Some(allocator) = self.device.allocator().as_mut() {
                // An allocation gpu-allocator handed out is always its to free.
                let _ = allocator.free(allocation);
            }
        }
    }
}

/// A HAL buffer's memory on a Vulkan device.
#[derive(Debug)]
pub struct VulkanMemory {
    buffer: Arc<DeviceBuffer>,
    length: usize,
    /// The host's view, where it has one.
    mapping: Option<Arc<ByteBuffer>>,
}

impl VulkanMemory {
    pub fn buffer(&self) -> &Arc<DeviceBuffer> {
        &self.buffer
    }

    /// Copies device bytes to the host through a staging buffer, waiting for the copy.
    fn read_staged(&self, offset: usize, out: &mut [u8]) -> Result<(), Diagnostic> {
        let device = self.buffer.device();
        let staging = DeviceBuffer::new(device, out.len() as u64, MemoryLocation::GpuToCpu)?;
        let mut recording = device.queue().begin()?;
        copy(&recording, &self.buffer, offset as u64, &staging, 0, out.len() as u64);
        recording.keep(staging.clone());
        let value = device.queue().submit(recording, None, None)?;
        device.queue().wait(value)?;
        out.copy_from_slice(&staging.read_back(out.len())?);
        Ok(())
    }

    /// Copies host bytes to the device through a staging buffer. The copy is queued, not waited
    /// for: the device reaches this memory only through the queue (dispatches, transfers, staged
    /// reads), and every submission starts with a barrier against the queue's earlier ones.
    fn write_staged(&self, offset: usize, data: &[u8]) -> Result<(), Diagnostic> {
        let device = self.buffer.device();
        let mut recording = device.queue().begin()?;
        upload(&mut recording, data, &self.buffer, offset as u64)?;
        device.queue().submit(recording, None, None)?;
        Ok(())
    }
}

fn staging_not_mapped() -> Diagnostic {
    Diagnostic::new(StatusCode::Internal, "the device gave a staging buffer memory the host cannot map")
}

/// Records a copy of `length` bytes between two buffers.
pub fn copy(
    recording: &super::queue::Recording<'_>,
    source: &DeviceBuffer,
    source_offset: u64,
    target: &DeviceBuffer,
    target_offset: u64,
    length: u64,
) {
    if length == 0 {
        return;
    }
    let region = vk::BufferCopy { src_offset: source_offset, dst_offset: target_offset, size: length };
    // SAFETY: both ranges lie within their buffers (callers check) and the buffers outlive the
    // submission (held by the recording or the HAL buffers the submission keeps).
    unsafe { recording.device().cmd_copy_buffer(recording.commands(), source.handle(), target.handle(), &[region]) };
}

/// Records a copy of host `data` into `target` at `offset` through a new staging buffer the
/// recording keeps.
pub fn upload(
    recording: &mut super::queue::Recording<'_>,
    data: &[u8],
    target: &Arc<DeviceBuffer>,
    offset: u64,
) -> Result<(), Diagnostic> {
    if data.is_empty() {
        return Ok(());
    }
    let staging = DeviceBuffer::new(target.device(), data.len() as u64, MemoryLocation::CpuToGpu)?;
    let mapped = staging.mapped().ok_or_else(staging_not_mapped)?;
    // SAFETY: the fresh staging buffer's mapping holds at least `data.len()` bytes nobody else
    // touches until the copy is submitted.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), mapped.as_ptr(), data.len()) };
    staging.flush(0, data.len() as u64)?;
    copy(recording, &staging, 0, target, offset, data.len() as u64);
    recording.keep(staging);
    Ok(())
}

impl Memory for VulkanMemory {
    fn len(&self) -> usize {
        self.length
    }

    fn mapping(&self) -> Option<&ByteBuffer> {
        self.mapping.as_deref()
    }

    fn invalidate(&self, offset: usize, length: usize) -> Result<(), Diagnostic> {
        self.buffer.invalidate(offset as u64, length as u64)
    }

    fn flush(&self, offset: usize, length: usize) -> Result<(), Diagnostic> {
        self.buffer.flush(offset as u64, length as u64)
    }

    fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), Diagnostic> {
        match self.mapping {
            Some(_) => read_mapped(self, offset, out),
            None => self.read_staged(offset, out),
        }
    }

    fn write(&self, offset: usize, data: &[u8]) -> Result<(), Diagnostic> {
        match self.mapping {
            Some(_) => write_mapped(self, offset, data),
            None => self.write_staged(offset, data),
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The allocator of a Vulkan device.
#[derive(Debug)]
pub struct VulkanAllocator {
    device: Arc<LogicalDevice>,
}

impl VulkanAllocator {
    pub fn new(device: Arc<LogicalDevice>) -> VulkanAllocator {
        VulkanAllocator { device }
    }
}

impl AllocatorBackend for VulkanAllocator {
    /// Only memory of this device: a dispatch binds its `VkBuffer`.
    fn can_use(&self, buffer: &Buffer) -> bool {
        buffer
            .memory()
            .as_any()
            .downcast_ref::<VulkanMemory>()
            .is_some_and(|memory| Arc::ptr_eq(memory.buffer().device(), &self.device))
    }

    /// Host-visible requests get memory the host maps (cached where asked, for reading back);
    /// others device-local memory, mapped anyway where it is host-visible unless the device
    /// stages device-local memory. Zeroed through the mapping, or by a fill on the queue.
    fn allocate(&self, memory_types: u32, buffer_usage: u32, length: i64) -> Result<Buffer, Diagnostic> {
        let length = usize::try_from(length)
            .map_err(|_| Diagnostic::new(StatusCode::InvalidArgument, format!("buffer length {length} is negative")))?;
        let host_visible = memory_types & memory_type::HOST_VISIBLE != 0;
        let location = match (host_visible, memory_types & memory_type::HOST_CACHED != 0) {
            (true, true) => MemoryLocation::GpuToCpu,
            (true, false) => MemoryLocation::CpuToGpu,
            (false, _) => MemoryLocation::GpuOnly,
        };
        let buffer = DeviceBuffer::new(&self.device, length as u64, location)?;
        let mapped = buffer.mapped().filter(|_| host_visible || !self.device.options().stage_device_local);
        let mapping = mapped.map(|start| {
            // SAFETY: the mapping covers the allocation (at least `length` bytes) for as long as
            // the buffer, which the owner holds, lives; Rust only touches it through the `ByteBuffer`.
            unsafe { ByteBuffer::from_mapping(start, length, buffer.clone()) }
        });
        let properties = buffer.properties();
        let memory = VulkanMemory { buffer, length, mapping };
        match &memory.mapping {
            Some(mapping) => {
                mapping.fill_i8(0, length as i64, 0)?;
                memory.flush(0, length)?;
            }
            None => zero(&memory.buffer)?,
        }
        let mut types = 0;
        if properties.contains(vk::MemoryPropertyFlags::DEVICE_LOCAL) {
            types |= memory_type::DEVICE_LOCAL;
        }
        let mut granted_usage = buffer_usage
            | usage::TRANSFER
            | usage::DISPATCH_STORAGE
            | usage::DISPATCH_UNIFORM_READ
            | usage::DISPATCH_INDIRECT_PARAMETERS;
        if memory.mapping.is_some() {
            types |= memory_type::HOST_VISIBLE;
            for (flag, bit) in [
                (vk::MemoryPropertyFlags::HOST_COHERENT, memory_type::HOST_COHERENT),
                (vk::MemoryPropertyFlags::HOST_CACHED, memory_type::HOST_CACHED),
            ] {
                if properties.contains(flag) {
                    types |= bit;
                }
            }
            granted_usage |= usage::MAPPING;
        } else {
            granted_usage &= !usage::MAPPING;
        }
        Ok(Buffer::new(Arc::new(memory), types, granted_usage))
    }

    /// Device memory is never the host's bytes: always a copy.
    fn import(&self, bytes: Arc<ByteBuffer>, memory_types: u32, buffer_usage: u32) -> Result<Buffer, Diagnostic> {
        let buffer = self.allocate(memory_types, buffer_usage, bytes.len() as i64)?;
        buffer.write(0, &bytes.to_vec())?;
        Ok(buffer)
    }
}

/// Zeroes `buffer` on the queue: everything that reaches unmapped memory goes through the queue
/// after it, so nothing waits for the fill.
fn zero(buffer: &Arc<DeviceBuffer>) -> Result<(), Diagnostic> {
    let device = buffer.device();
    let mut recording = device.queue().begin()?;
    // SAFETY: the whole of a live buffer, which the submission keeps alive.
    unsafe { recording.device().cmd_fill_buffer(recording.commands(), buffer.handle(), 0, vk::WHOLE_SIZE, 0) };
    recording.keep(buffer.clone());
    device.queue().submit(recording, None, None)?;
    Ok(())
}
