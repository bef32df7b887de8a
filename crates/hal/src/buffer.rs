//! `!hal.buffer`: a range of device memory with the memory types and usage it was allocated
//! with. The memory is a backend's ([`Memory`]); on the CPU devices it is host memory.

use std::any::Any;
use std::sync::Arc;

use super::backend::Memory;
use super::byte_range;
use rtx_host::{Diagnostic, StatusCode};
use rtx_vm::refs::{Ref, RefObject};

/// `iree_hal_memory_type_t` bits (runtime/src/iree/hal/buffer.h).
pub mod memory_type {
    pub const OPTIMAL: u32 = 1 << 0;
    pub const HOST_VISIBLE: u32 = 1 << 1;
    pub const HOST_COHERENT: u32 = 1 << 2;
    pub const HOST_CACHED: u32 = 1 << 3;
    pub const HOST_LOCAL: u32 = 1 << 6 | HOST_VISIBLE | HOST_COHERENT;
    pub const DEVICE_VISIBLE: u32 = 1 << 4;
    pub const DEVICE_LOCAL: u32 = 1 << 5 | DEVICE_VISIBLE;
    /// What CPU memory is: every kind at once.
    pub const CPU: u32 = OPTIMAL | HOST_LOCAL | HOST_CACHED | DEVICE_LOCAL;
}

/// `iree_hal_buffer_usage_t` bits (runtime/src/iree/hal/buffer.h).
pub mod usage {
    pub const TRANSFER: u32 = 0b11;
    pub const DISPATCH_INDIRECT_PARAMETERS: u32 = 1 << 8;
    pub const DISPATCH_UNIFORM_READ: u32 = 1 << 9;
    pub const DISPATCH_STORAGE_WRITE: u32 = 1 << 11;
    pub const DISPATCH_STORAGE: u32 = 1 << 10 | DISPATCH_STORAGE_WRITE;
    pub const DISPATCH_IMAGE: u32 = 1 << 12 | 1 << 13;
    pub const SHARING: u32 = 0b1111 << 16;
    pub const SHARING_IMMUTABLE: u32 = 1 << 19;
    pub const MAPPING: u32 = 0b11111 << 24;
    /// Everything host memory supports.
    pub const CPU: u32 = TRANSFER
        | DISPATCH_INDIRECT_PARAMETERS
        | DISPATCH_UNIFORM_READ
        | DISPATCH_STORAGE
        | DISPATCH_IMAGE
        | SHARING
        | MAPPING;
}

/// A HAL buffer: `length` bytes from `offset` of a backend's memory, with the memory types and
/// usage it allows. Subspans share the memory; host access goes through [`Memory`]'s mapping or
/// transfers, never an assumed address.
#[derive(Clone, Debug)]
pub struct Buffer {
    memory: Arc<dyn Memory>,
    offset: usize,
    length: usize,
    memory_types: u32,
    usage: u32,
}

impl RefObject for Buffer {
    fn type_name(&self) -> &'static str {
        "hal.buffer"
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Buffer {
    /// The whole of `memory`.
    pub fn new(memory: Arc<dyn Memory>, memory_types: u32, usage: u32) -> Buffer {
        let length = memory.len();
        Buffer { memory, offset: 0, length, memory_types, usage }
    }

    /// Bytes `offset..offset + length` as a buffer of their own (shared memory), `length` -1
    /// meaning to the end.
    pub fn subspan(&self, offset: i64, length: i64) -> Result<Buffer, Diagnostic> {
        let (offset, length) = byte_range::check(offset, length, self.len()).map_err(|e| e.at("subspan"))?;
        Ok(Buffer { memory: self.memory.clone(), offset: self.offset + offset, length, ..*self })
    }

    pub fn len(&self) -> usize {
        self.length
    }

    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    pub fn memory_types(&self) -> u32 {
        self.memory_types
    }

    pub fn usage(&self) -> u32 {
        self.usage
    }

    /// The memory this buffer is a range of.
    pub fn memory(&self) -> &Arc<dyn Memory> {
        &self.memory
    }

    /// Whether this buffer is all that reaches its memory (no clone or subspan of it, no span of
    /// its host bytes): what a pool that hands buffers out again checks, with the exclusive
    /// access `&mut` gives, which keeps the answer until the pool gives the buffer out.
    pub fn holds_memory_alone(&mut self) -> bool {
        Arc::get_mut(&mut self.memory).is_some() && self.memory.mapping().is_none_or(|bytes| bytes.holds_memory_alone())
    }

    /// Makes this buffer the first `length` bytes of its memory, with `memory_types` and `usage`
    /// (OUT_OF_RANGE past the memory's end): how a pool hands out again a buffer object nothing
    /// else holds.
    pub fn reset(&mut self, length: usize, memory_types: u32, usage: u32) -> Result<(), Diagnostic> {
        let (_, length) = byte_range::check(0, length as i64, self.memory.len()).map_err(|e| e.at("reset"))?;
        (self.offset, self.length, self.memory_types, self.usage) = (0, length, memory_types, usage);
        Ok(())
    }

    /// Where the buffer starts in its memory.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Copies `out.len()` bytes from `offset` to the host, through a mapping or the device.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), Diagnostic> {
        self.check_host_range(offset, out.len())?;
        self.memory.read(self.offset + offset, out)
    }

    /// Copies `data` from the host to `offset`, through a mapping or the device.
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<(), Diagnostic> {
        self.check_host_range(offset, data.len())?;
        self.memory.write(self.offset + offset, data)
    }

    /// A copy of the whole buffer on the host.
    pub fn to_vec(&self) -> Result<Vec<u8>, Diagnostic> {
        let mut bytes = vec![0; self.length];
        self.read(0, &mut bytes)?;
        Ok(bytes)
    }

    fn check_host_range(&self, offset: usize, length: usize) -> Result<(), Diagnostic> {
        byte_range::check(offset as i64, length as i64, self.length).map_err(|e| e.at("host access"))?;
        Ok(())
    }

    pub fn into_ref(self) -> Ref {
        Ref::Object(Arc::new(self))
    }
}

/// The buffer a ref holds, or INVALID_ARGUMENT naming what was there.
#[inline]
pub fn deref(value: &Ref) -> Result<&Buffer, Diagnostic> {
    value.downcast::<Buffer>().ok_or_else(|| wrong_type("hal.buffer", value))
}

/// The error for a ref of the wrong type where `expected` was required.
#[cold]
pub fn wrong_type(expected: &str, found: &Ref) -> Diagnostic {
    Diagnostic::new(StatusCode::InvalidArgument, format!("ref is not a {expected} (it is a {})", found.type_name()))
}
