//! `!hal.buffer`: device memory. The CPU devices' memory is host memory, so a HAL buffer is a span
//! of a `vm.buffer` plus the memory types and usage it was allocated with: constants import from
//! the module's rodata without a copy, and dispatches bind the same bytes as `!vm.buffer`s (VMVX)
//! or raw addresses (compiled ELF code).

use std::any::Any;
use std::sync::Arc;

use super::byte_range;
use crate::host::{Diagnostic, StatusCode};
use crate::vm::buffer::Buffer as Bytes;
use crate::vm::refs::{Ref, RefObject};

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

/// A HAL buffer.
#[derive(Debug)]
pub struct Buffer {
    bytes: Arc<Bytes>,
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
    /// Fresh zeroed memory of `length` bytes.
    pub fn allocate(memory_types: u32, usage: u32, length: i64) -> Result<Buffer, Diagnostic> {
        let bytes = Bytes::allocate(length, 64)
            .map_err(|e| e.map_message(|message| format!("failed to allocate buffer of length {length}; {message}")))?;
        Ok(Buffer { bytes, memory_types: memory_types | memory_type::CPU, usage: usage | usage::CPU })
    }

    /// Wraps existing bytes (host data, imported rodata) without copying. Read-only bytes give a
    /// buffer that only allows immutable use.
    pub fn wrap(bytes: Arc<Bytes>, memory_types: u32, usage: u32) -> Buffer {
        let usage = if bytes.is_mutable() { usage | usage::CPU } else { usage | usage::CPU & !usage::MAPPING };
        Buffer { bytes, memory_types: memory_types | memory_type::CPU, usage }
    }

    /// Bytes `offset..offset + length` as a buffer of their own (shared memory), `length` -1
    /// meaning to the end.
    pub fn subspan(&self, offset: i64, length: i64) -> Result<Buffer, Diagnostic> {
        let (offset, length) = byte_range::check(offset, length, self.len()).map_err(|e| e.at("subspan"))?;
        let bytes =
            if offset == 0 && length == self.len() { self.bytes.clone() } else { self.bytes.span(offset, length)? };
        Ok(Buffer { bytes, ..*self })
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub fn memory_types(&self) -> u32 {
        self.memory_types
    }

    pub fn usage(&self) -> u32 {
        self.usage
    }

    /// The memory, as the VM sees it.
    pub fn bytes(&self) -> &Arc<Bytes> {
        &self.bytes
    }

    pub fn into_ref(self) -> Ref {
        Ref::Object(Arc::new(self))
    }
}

/// The buffer a ref holds, or INVALID_ARGUMENT naming what was there.
pub fn deref(value: &Ref) -> Result<&Buffer, Diagnostic> {
    value.downcast::<Buffer>().ok_or_else(|| wrong_type("hal.buffer", value))
}

/// The error for a ref of the wrong type where `expected` was required.
pub fn wrong_type(expected: &str, found: &Ref) -> Diagnostic {
    Diagnostic::new(StatusCode::InvalidArgument, format!("ref is not a {expected} (it is a {})", found.type_name()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subspans_share_memory_and_check_their_range() {
        let buffer = Buffer::allocate(memory_type::DEVICE_LOCAL, usage::TRANSFER, 64).unwrap();
        let span = buffer.subspan(16, -1).unwrap();
        assert_eq!(span.len(), 48);
        span.bytes().store_i32(0, 7).unwrap();
        assert_eq!(buffer.bytes().load_i32(4).unwrap(), 7);
        assert_eq!(buffer.subspan(60, 5).unwrap_err().code, StatusCode::OutOfRange);
        assert_eq!(buffer.subspan(-1, 4).unwrap_err().code, StatusCode::OutOfRange);
        assert_eq!(buffer.memory_types() & memory_type::HOST_VISIBLE, memory_type::HOST_VISIBLE);
    }
}
