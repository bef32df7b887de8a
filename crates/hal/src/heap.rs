//! Heap memory as HAL buffers: host memory (a `vm.buffer`), coherent and always mapped. It is
//! the CPU devices' memory — constants import from the module's rodata without a copy and
//! dispatches bind the same bytes as `!vm.buffer`s (VMVX) or raw addresses (compiled ELF code) —
//! and what host bytes become when a buffer view wraps them, whatever the device.

use std::any::Any;
use std::sync::Arc;

use crate::backend::{AllocatorBackend, Memory};
use crate::buffer::{memory_type, usage, Buffer};
use rtx_host::{Diagnostic, HostAllocator};
use rtx_vm::buffer::ByteBuffer;

/// Host memory behind a buffer is a `vm.buffer` (its own mapping), so a buffer's memory is the
/// same allocation the VM and the loaders see.
impl Memory for ByteBuffer {
    fn len(&self) -> usize {
        ByteBuffer::len(self)
    }

    fn mapping(&self) -> Option<&ByteBuffer> {
        Some(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The allocator of heap memory (the CPU devices'): blocks from a context's allocator, or the
/// process's.
#[derive(Clone, Default)]
pub struct HeapAllocator {
    allocator: Option<Arc<dyn HostAllocator>>,
}

impl std::fmt::Debug for HeapAllocator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeapAllocator").field("host_allocator", &self.allocator.is_some()).finish()
    }
}

impl HeapAllocator {
    /// Heap memory from `allocator` (a context's).
    pub fn new(allocator: Arc<dyn HostAllocator>) -> HeapAllocator {
        HeapAllocator { allocator: Some(allocator) }
    }

    /// `length` zeroed bytes, as a `vm.buffer` of this heap's memory.
    pub fn bytes(&self, length: i64) -> Result<Arc<ByteBuffer>, Diagnostic> {
        ByteBuffer::allocate(self.allocator.as_ref(), length, 64)
    }

    /// A buffer over `bytes` as they are. Read-only bytes give a buffer that only allows
    /// immutable use.
    pub fn wrap(bytes: Arc<ByteBuffer>, memory_types: u32, buffer_usage: u32) -> Buffer {
        let (memory_types, buffer_usage) = host_flags(bytes.is_mutable(), memory_types, buffer_usage);
        Buffer::new(bytes, memory_types, buffer_usage)
    }

    /// Makes `buffer` the first `length` bytes of its memory, with the memory types and usage
    /// [`wrap`](Self::wrap) gives: how a buffer object nothing else holds is handed out again.
    pub fn rewrap(buffer: &mut Buffer, length: usize, memory_types: u32, buffer_usage: u32) -> Result<(), Diagnostic> {
        let mutable = buffer.memory().mapping().is_some_and(ByteBuffer::is_mutable);
        let (memory_types, buffer_usage) = host_flags(mutable, memory_types, buffer_usage);
        buffer.reset(length, memory_types, buffer_usage)
    }
}

/// The memory types and usage of a buffer over host memory: all the CPU's, less mapping for
/// read-only bytes.
fn host_flags(mutable: bool, memory_types: u32, buffer_usage: u32) -> (u32, u32) {
    let buffer_usage = if mutable { buffer_usage | usage::CPU } else { buffer_usage | usage::CPU & !usage::MAPPING };
    (memory_types | memory_type::CPU, buffer_usage)
}

impl AllocatorBackend for HeapAllocator {
    /// The CPU runs on any memory the host addresses.
    fn can_use(&self, buffer: &Buffer) -> bool {
        buffer.memory().mapping().is_some()
    }

    fn allocate(&self, memory_types: u32, buffer_usage: u32, length: i64) -> Result<Buffer, Diagnostic> {
        let bytes = self
            .bytes(length)
            .map_err(|e| e.map_message(|message| format!("failed to allocate buffer of length {length}; {message}")))?;
        Ok(Buffer::new(bytes, memory_types | memory_type::CPU, buffer_usage | usage::CPU))
    }

    /// Host memory imports as it is: the program's rodata becomes the buffer, no copy — unless
    /// dispatches may write it. The compiler does tie results to constant operands (a sort or
    /// scatter in place), and the module's bytes are mapped read-only, so such constants get
    /// their own writable copy (once: programs import constants in `__init`).
    fn import(&self, bytes: Arc<ByteBuffer>, memory_types: u32, buffer_usage: u32) -> Result<Buffer, Diagnostic> {
        let bytes = if !bytes.is_mutable() && buffer_usage & usage::DISPATCH_STORAGE_WRITE != 0 {
            bytes.clone_range(self.allocator.as_ref(), 0, bytes.len() as i64, 64)?
        } else {
            bytes
        };
        Ok(HeapAllocator::wrap(bytes, memory_types, buffer_usage))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtx_host::StatusCode;

    #[test]
    fn subspans_share_memory_and_check_their_range() {
        let buffer = HeapAllocator::default().allocate(memory_type::DEVICE_LOCAL, usage::TRANSFER, 64).unwrap();
        let span = buffer.subspan(16, -1).unwrap();
        assert_eq!(span.len(), 48);
        span.write(0, &7i32.to_le_bytes()).unwrap();
        let mut read = [0; 4];
        buffer.read(16, &mut read).unwrap();
        assert_eq!(i32::from_le_bytes(read), 7);
        assert_eq!(buffer.memory().mapping().unwrap().load_i32(4).unwrap(), 7);
        assert_eq!(buffer.subspan(60, 5).unwrap_err().code, StatusCode::OutOfRange);
        assert_eq!(buffer.subspan(-1, 4).unwrap_err().code, StatusCode::OutOfRange);
        assert_eq!(span.read(46, &mut read).unwrap_err().code, StatusCode::OutOfRange);
        assert_eq!(buffer.memory_types() & memory_type::HOST_VISIBLE, memory_type::HOST_VISIBLE);
    }
}
