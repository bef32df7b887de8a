//! Transfers (fill, copy, update) recorded into a Vulkan command buffer, buffer ranges resolved
//! against a binding table. Fills whose range and pattern fit 4-byte words are `vkCmdFillBuffer`;
//! other fills and every update go through a staging buffer and a copy, which has no alignment
//! rules; copies between overlapping ranges of one buffer go through a temporary buffer.

use std::sync::Arc;

use gpu_allocator::MemoryLocation;

use super::memory::{copy, upload, DeviceBuffer, VulkanMemory};
use super::queue::Recording;
use rtx_hal::backend::Transfer;
use rtx_hal::buffer::Buffer;
use rtx_hal::byte_range;
use rtx_hal::command_buffer::{table_entry, BufferRange, BufferSource, TableEntry};
use rtx_host::{Diagnostic, StatusCode};

/// A resolved range: bytes `offset..offset + length` of a device buffer.
pub struct Bound {
    pub buffer: Arc<DeviceBuffer>,
    pub offset: u64,
    pub length: u64,
}

/// The device bytes `range` names, with `table` supplying slots.
pub fn resolve(range: &BufferRange, table: &[TableEntry]) -> Result<Bound, Diagnostic> {
    let (buffer, base, total, what): (&Buffer, usize, usize, String) = match &range.source {
        BufferSource::Direct(buffer) => (buffer, 0, buffer.len(), "buffer".into()),
        BufferSource::Slot(slot) => {
            let (entry, buffer) = table_entry(table, *slot)?;
            let (offset, length) = byte_range::check(entry.offset, entry.length, buffer.len())
                .map_err(|e| e.at(format_args!("binding table slot {slot} entry")))?;
            (buffer, offset, length, format!("binding table slot {slot}"))
        }
    };
    let (offset, length) = byte_range::check(range.offset, range.length, total).map_err(|e| e.at(&what))?;
    let memory = buffer.memory().as_any().downcast_ref::<VulkanMemory>().ok_or_else(|| {
        Diagnostic::new(StatusCode::InvalidArgument, format!("{what} is not memory of a Vulkan device"))
    })?;
    Ok(Bound {
        buffer: memory.buffer().clone(),
        offset: (buffer.offset() + base + offset) as u64,
        length: length as u64,
    })
}

/// Records `transfer` (its buffers resolved through `table`) for a device whose buffers are
/// `device`'s.
pub fn record(recording: &mut Recording<'_>, transfer: &Transfer, table: &[TableEntry]) -> Result<(), Diagnostic> {
    match transfer {
        Transfer::Fill { target, pattern, pattern_length } => {
            let target = resolve(target, table)?;
            same_device(recording, &target)?;
            fill(recording, &target, *pattern, *pattern_length)
        }
        Transfer::Copy { source, target } => {
            let (source, target) = (resolve(source, table)?, resolve(target, table)?);
            same_device(recording, &source)?;
            same_device(recording, &target)?;
            if source.length != target.length {
                return Err(Diagnostic::new(
                    StatusCode::InvalidArgument,
                    format!("copy of {} bytes into a range of {}", source.length, target.length),
                ));
            }
            copy_ranges(recording, &source, &target)
        }
        Transfer::Update { source, source_offset, target } => {
            let target = resolve(target, table)?;
            same_device(recording, &target)?;
            let bytes = source.read_bytes(*source_offset, target.length as usize)?;
            upload(recording, &bytes, &target.buffer, target.offset)
        }
    }
}

/// INVALID_ARGUMENT unless `bound` is memory of the recording's device.
pub fn same_device(recording: &Recording<'_>, bound: &Bound) -> Result<(), Diagnostic> {
    if bound.buffer.device().handle().handle() == recording.device().handle() {
        Ok(())
    } else {
        Err(Diagnostic::new(StatusCode::InvalidArgument, "buffer belongs to another Vulkan device"))
    }
}

fn fill(recording: &mut Recording<'_>, target: &Bound, pattern: u64, pattern_length: usize) -> Result<(), Diagnostic> {
    rtx_hal::command_buffer::check_pattern_length(pattern_length)?;
    if !target.length.is_multiple_of(pattern_length as u64) {
        return Err(Diagnostic::new(
            StatusCode::InvalidArgument,
            format!("fill length {} is not a multiple of the {pattern_length}-byte pattern", target.length),
        ));
    }
    let word = match pattern_length {
        1 => Some((pattern as u8 as u32) * 0x0101_0101),
        2 => Some((pattern as u16 as u32) * 0x0001_0001),
        4 => Some(pattern as u32),
        _ => None,
    };
    match word {
        Some(word) if target.offset.is_multiple_of(4) && target.length.is_multiple_of(4) => {
            if target.length > 0 {
                // SAFETY: a 4-byte-aligned range inside the live buffer.
                unsafe {
                    recording.device().cmd_fill_buffer(
                        recording.commands(),
                        target.buffer.handle(),
                        target.offset,
                        target.length,
                        word,
                    )
                };
            }
            Ok(())
        }
        _ => {
            let pattern = &pattern.to_le_bytes()[..pattern_length];
            let bytes: Vec<u8> = pattern.iter().copied().cycle().take(target.length as usize).collect();
            upload(recording, &bytes, &target.buffer, target.offset)
        }
    }
}

fn copy_ranges(recording: &mut Recording<'_>, source: &Bound, target: &Bound) -> Result<(), Diagnostic> {
    let overlap = Arc::ptr_eq(&source.buffer, &target.buffer)
        && source.offset < target.offset + target.length
        && target.offset < source.offset + source.length;
    if !overlap {
        copy(recording, &source.buffer, source.offset, &target.buffer, target.offset, source.length);
        return Ok(());
    }
    // Vulkan leaves overlapping copies undefined: through a temporary, as `memmove` would.
    let temporary = DeviceBuffer::new(source.buffer.device(), source.length, MemoryLocation::GpuOnly)?;
    copy(recording, &source.buffer, source.offset, &temporary, 0, source.length);
    recording.order();
    copy(recording, &temporary, 0, &target.buffer, target.offset, source.length);
    recording.keep(temporary);
    Ok(())
}
