//! The HAL backend interface: what a device implementation provides so that the `hal` module,
//! buffer views, tensor I/O and the runtime work with it unchanged. `rtx-hal-cpu` (the CPU devices)
//! and `rtx-hal-vulkan` implement it. The `hal` module's ref types ([`Device`], [`Allocator`], [`Buffer`],
//! [`CommandBuffer`], [`Executable`]) each wrap one of these traits, so a program's refs are the
//! same whichever backend made them.
//!
//! Nothing here assumes host-addressable memory: a buffer's [`Memory`] is mapped for host access
//! only where its backend says it can be, and otherwise read and written through the device. Queue
//! operations take the fences they wait on and signal and may complete asynchronously: a backend
//! signals (or fails) the signal fence when the work is done, from whatever thread that happens on.

use std::any::Any;
use std::fmt::Debug;
use std::sync::Arc;

use super::buffer::Buffer;
use super::command_buffer::{BufferRange, CommandBuffer, TableEntry, Workgroups};
use super::device::Allocator;
use super::executable::Executable;
use super::fence::Fence;
use super::file::File;
use rtx_host::{Diagnostic, StatusCode};
use rtx_vm::buffer::ByteBuffer;

/// A device: its identity and capabilities, its memory, the executables it loads, and its queue.
pub trait DeviceBackend: Send + Sync + Debug {
    /// `hal.device.query.i64`: `Ok(value)` for a key the device knows, NOT_FOUND otherwise.
    fn query_i64(&self, category: &str, key: &str) -> Result<i64, Diagnostic>;

    /// The allocator buffers for this device come from.
    fn allocator(&self) -> &Allocator;

    /// Loads an executable of `format` from `data`, specialised with `constants`.
    fn create_executable(&self, format: &str, data: &[u8], constants: &[u32]) -> Result<Executable, Diagnostic>;

    /// An empty command buffer to record into. `binding_capacity` slots of a binding table may
    /// be named by its commands (a reusable command buffer gets its buffers at execution).
    fn create_command_buffer(&self, mode: u32, binding_capacity: u32) -> Result<CommandBuffer, Diagnostic>;

    /// A buffer whose memory is ready once `wait` is reached; `signal` says when.
    fn queue_alloca(
        &self,
        queue: &QueueFences<'_>,
        memory_types: u32,
        usage: u32,
        size: i64,
    ) -> Result<Arc<Buffer>, Diagnostic>;

    /// Releases `buffer`'s memory after `wait` (other holders of the buffer keep it alive).
    fn queue_dealloca(&self, queue: &QueueFences<'_>, buffer: &Buffer) -> Result<(), Diagnostic>;

    /// Runs `commands` (none: only orders the fences) once `wait` is reached, `table` supplying
    /// the buffers of its slots (copied where the work waits or the device keeps it).
    fn queue_execute(
        &self,
        queue: &QueueFences<'_>,
        commands: Option<&CommandBuffer>,
        table: &[TableEntry],
    ) -> Result<(), Diagnostic>;

    /// One transfer, as a command buffer of one command would run it.
    fn queue_transfer(&self, queue: &QueueFences<'_>, transfer: Transfer) -> Result<(), Diagnostic>;

    /// Copies `length` bytes of `file` from `file_offset` into `buffer` at `buffer_offset`.
    fn queue_read(
        &self,
        queue: &QueueFences<'_>,
        file: &File,
        file_offset: i64,
        buffer: &Buffer,
        buffer_offset: i64,
        length: i64,
    ) -> Result<(), Diagnostic>;

    /// Copies `length` bytes of `buffer` from `buffer_offset` into `file` at `file_offset`.
    fn queue_write(
        &self,
        queue: &QueueFences<'_>,
        buffer: &Buffer,
        buffer_offset: i64,
        file: &File,
        file_offset: i64,
        length: i64,
    ) -> Result<(), Diagnostic>;

    /// Starts whatever queued work the device holds back for batching.
    fn queue_flush(&self) -> Result<(), Diagnostic>;
}

/// What a queue operation waits on (none: nothing) and signals when it is done (or fails when it
/// fails). An error returned by the operation itself means it was not queued at all.
#[derive(Clone, Copy, Debug)]
pub struct QueueFences<'a> {
    pub wait: Option<&'a Fence>,
    pub signal: &'a Fence,
}

/// A transfer command: fill, copy, or an update from host bytes.
#[derive(Debug)]
pub enum Transfer {
    /// `target` filled with a 1, 2, 4 or 8-byte `pattern`.
    Fill { target: BufferRange, pattern: u64, pattern_length: usize },
    /// `source` into `target` (equal lengths).
    Copy { source: BufferRange, target: BufferRange },
    /// Host bytes from `source_offset` into `target`, read when the command runs.
    Update { source: Arc<ByteBuffer>, source_offset: usize, target: BufferRange },
}

/// Where a device's buffers come from.
pub trait AllocatorBackend: Send + Sync + Debug {
    /// Fresh zeroed memory of `length` bytes with at least `memory_types` and `usage`.
    fn allocate(&self, memory_types: u32, usage: u32, length: i64) -> Result<Buffer, Diagnostic>;

    /// A buffer over host `bytes` (rodata, host data): without a copy where the device can use
    /// host memory as it is, a copy otherwise. Writable dispatch usage of read-only bytes needs a
    /// copy everywhere.
    fn import(&self, bytes: Arc<ByteBuffer>, memory_types: u32, usage: u32) -> Result<Buffer, Diagnostic>;

    /// Whether the device's commands can use `buffer`'s memory as it is (host memory on the
    /// CPU, a device's own memory on a GPU).
    fn can_use(&self, buffer: &Buffer) -> bool;
}

/// The memory behind buffers: one allocation, shared by every buffer (and subspan) of it.
pub trait Memory: Send + Sync + Debug + Any {
    fn len(&self) -> usize;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The memory as the host addresses it, when the host can (a mapping of the whole
    /// allocation); `None` where only the device can, and `read`/`write` go through it.
    fn mapping(&self) -> Option<&ByteBuffer>;

    /// Makes device writes to `offset..offset + length` visible to the host's mapping; nothing to
    /// do for coherent memory.
    fn invalidate(&self, _offset: usize, _length: usize) -> Result<(), Diagnostic> {
        Ok(())
    }

    /// Makes host writes through the mapping to `offset..offset + length` visible to the device;
    /// nothing to do for coherent memory.
    fn flush(&self, _offset: usize, _length: usize) -> Result<(), Diagnostic> {
        Ok(())
    }

    /// Copies `out.len()` bytes from `offset` to the host: through the mapping where there is
    /// one. Backends whose memory the host cannot map implement this with a device transfer.
    fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), Diagnostic> {
        read_mapped(self, offset, out)
    }

    /// Copies `data` to `offset` from the host: through the mapping where there is one.
    /// Backends whose memory the host cannot map implement this with a device transfer.
    fn write(&self, offset: usize, data: &[u8]) -> Result<(), Diagnostic> {
        write_mapped(self, offset, data)
    }

    fn as_any(&self) -> &dyn Any;
}

/// [`Memory::read`] through the mapping, invalidating first: the default, for backends whose
/// memory is mapped only sometimes to call where it is.
pub fn read_mapped<M: Memory + ?Sized>(memory: &M, offset: usize, out: &mut [u8]) -> Result<(), Diagnostic> {
    let mapping = memory.mapping().ok_or_else(|| not_mappable("read"))?;
    memory.invalidate(offset, out.len())?;
    out.copy_from_slice(&mapping.read_bytes(offset, out.len())?);
    Ok(())
}

/// [`Memory::write`] through the mapping, flushing after: the default, for backends whose memory
/// is mapped only sometimes to call where it is.
pub fn write_mapped<M: Memory + ?Sized>(memory: &M, offset: usize, data: &[u8]) -> Result<(), Diagnostic> {
    let mapping = memory.mapping().ok_or_else(|| not_mappable("written"))?;
    ByteBuffer::copy(&*ByteBuffer::from_bytes(data)?, 0, mapping, offset as i64, data.len() as i64)?;
    memory.flush(offset, data.len())
}

fn not_mappable(what: &str) -> Diagnostic {
    Diagnostic::new(
        StatusCode::Unimplemented,
        format!("buffer memory is not host-visible and its backend has no transfer for it to be {what} by the host"),
    )
}

/// Recorded device work. Recording checks what it can (finalized, slots within the binding
/// capacity); the device's queue runs it.
pub trait CommandBufferBackend: Send + Sync + Debug {
    fn dispatch(
        &self,
        executable: &Executable,
        export: usize,
        workgroups: Workgroups,
        constants: &[u32],
        bindings: &[BufferRange],
    ) -> Result<(), Diagnostic>;

    /// Records a fill, copy or update.
    fn transfer(&self, transfer: Transfer) -> Result<(), Diagnostic>;

    /// Orders everything recorded before it before everything after.
    fn barrier(&self) -> Result<(), Diagnostic>;

    /// Ends recording; only a finalized command buffer executes.
    fn finalize(&self) -> Result<(), Diagnostic>;

    fn as_any(&self) -> &dyn Any;
}

/// Loaded dispatch functions, by ordinal.
pub trait ExecutableBackend: Send + Sync + Debug {
    /// Export names, by ordinal (the name `hal.executable.lookup.function` finds).
    fn export_names(&self) -> &[String];

    fn as_any(&self) -> &dyn Any;
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::buffer::{memory_type, usage};
    use crate::buffer_view::{BufferView, DENSE_ROW_MAJOR};
    use crate::element_type::ElementType;
    use crate::run_io::host_tensor;

    /// Memory only a device reaches: no mapping, every host access a transfer (here a copy out of
    /// or into storage the host never addresses), counted.
    #[derive(Debug)]
    struct DeviceOnly {
        storage: Mutex<Vec<u8>>,
        transfers: Mutex<Vec<(&'static str, usize, usize)>>,
    }

    impl Memory for DeviceOnly {
        fn len(&self) -> usize {
            self.storage.lock().unwrap().len()
        }

        fn mapping(&self) -> Option<&ByteBuffer> {
            None
        }

        fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), Diagnostic> {
            self.transfers.lock().unwrap().push(("read", offset, out.len()));
            out.copy_from_slice(&self.storage.lock().unwrap()[offset..offset + out.len()]);
            Ok(())
        }

        fn write(&self, offset: usize, data: &[u8]) -> Result<(), Diagnostic> {
            self.transfers.lock().unwrap().push(("write", offset, data.len()));
            self.storage.lock().unwrap()[offset..offset + data.len()].copy_from_slice(data);
            Ok(())
        }

        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    fn device_only(bytes: &[u8]) -> Arc<DeviceOnly> {
        Arc::new(DeviceOnly { storage: Mutex::new(bytes.to_vec()), transfers: Mutex::default() })
    }

    #[test]
    fn host_io_of_unmappable_memory_goes_through_its_transfers() {
        let words: Vec<u8> = [7i32, -1, 5, 9].iter().flat_map(|v| v.to_le_bytes()).collect();
        let memory = device_only(&words);
        let buffer = Buffer::new(memory.clone(), memory_type::DEVICE_LOCAL, usage::TRANSFER);
        let span = buffer.subspan(4, 8).unwrap();
        let view = BufferView::new(span.clone().into_ref(), vec![2], ElementType::INT_32.0, DENSE_ROW_MAJOR).unwrap();
        assert_eq!(host_tensor(&view).unwrap().format(16).unwrap(), "2xi32=-1 5");
        span.write(4, &3i32.to_le_bytes()).unwrap();
        assert_eq!(view.to_vec().unwrap(), [-1i32, 3].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>());
        assert_eq!(
            *memory.transfers.lock().unwrap(),
            [("read", 4, 8), ("write", 8, 4), ("read", 4, 8)],
            "reads and writes land at the subspan's offset in the memory"
        );
        let mut past_end = [0; 4];
        assert_eq!(span.read(6, &mut past_end).unwrap_err().code, StatusCode::OutOfRange);
        assert_eq!(memory.transfers.lock().unwrap().len(), 3, "out-of-range access reaches no transfer");
    }

    /// Host-visible memory that is not coherent: a mapping, and the flushes and invalidations
    /// asked of it.
    #[derive(Debug)]
    struct NonCoherent {
        mapping: Arc<ByteBuffer>,
        maintenance: Mutex<Vec<(&'static str, usize, usize)>>,
    }

    impl Memory for NonCoherent {
        fn len(&self) -> usize {
            self.mapping.len()
        }

        fn mapping(&self) -> Option<&ByteBuffer> {
            Some(&self.mapping)
        }

        fn invalidate(&self, offset: usize, length: usize) -> Result<(), Diagnostic> {
            self.maintenance.lock().unwrap().push(("invalidate", offset, length));
            Ok(())
        }

        fn flush(&self, offset: usize, length: usize) -> Result<(), Diagnostic> {
            self.maintenance.lock().unwrap().push(("flush", offset, length));
            Ok(())
        }

        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    #[test]
    fn mapped_host_io_invalidates_before_reading_and_flushes_after_writing() {
        let memory = Arc::new(NonCoherent {
            mapping: ByteBuffer::from_bytes(&[1, 2, 3, 4, 5, 6]).unwrap(),
            maintenance: Mutex::default(),
        });
        let buffer = Buffer::new(memory.clone(), memory_type::HOST_VISIBLE, usage::MAPPING).subspan(2, -1).unwrap();
        buffer.write(1, &[9, 9]).unwrap();
        let mut out = [0; 3];
        buffer.read(0, &mut out).unwrap();
        assert_eq!(out, [3, 9, 9]);
        assert_eq!(memory.mapping.to_vec(), [1, 2, 3, 9, 9, 6]);
        assert_eq!(*memory.maintenance.lock().unwrap(), [("flush", 3, 2), ("invalidate", 2, 3)]);
    }

    /// Memory without a mapping whose backend gave no transfers.
    #[derive(Debug)]
    struct Unreachable;

    impl Memory for Unreachable {
        fn len(&self) -> usize {
            4
        }

        fn mapping(&self) -> Option<&ByteBuffer> {
            None
        }

        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    #[test]
    fn host_io_without_mapping_or_transfer_is_refused() {
        let buffer = Buffer::new(Arc::new(Unreachable), memory_type::DEVICE_LOCAL, 0);
        let error = buffer.to_vec().unwrap_err();
        assert_eq!(error.code, StatusCode::Unimplemented);
        assert!(error.message.contains("not host-visible"), "{}", error.message);
        assert_eq!(buffer.write(0, &[1]).unwrap_err().code, StatusCode::Unimplemented);
    }
}
