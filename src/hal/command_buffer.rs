//! `!hal.command_buffer`: recorded device work (dispatches, copies, fills, updates, barriers),
//! executed by a queue. Buffers may be named directly or by a slot of the binding table that
//! `queue.execute.indirect` supplies, which lets a program record once (in `__init`) and replay
//! with new buffers on every call.

use std::any::Any;
use std::sync::{Arc, Mutex, PoisonError};

use super::buffer::{self, wrong_type};
use super::executable::{self, BoundBytes, Dispatch};
use crate::host::{Diagnostic, StatusCode};
use crate::vm::buffer::Buffer as Bytes;
use crate::vm::refs::{Ref, RefObject};

/// `IREE_HAL_COMMAND_BUFFER_MODE_ONE_SHOT`.
pub const MODE_ONE_SHOT: u32 = 1;

/// Where a command's buffer comes from.
#[derive(Clone, Debug)]
pub enum BufferSource {
    /// A `hal.buffer` ref given when recording.
    Direct(Ref),
    /// Slot of the binding table given at execution.
    Slot(u32),
}

/// A buffer range a command uses; `length` -1 means to the end.
#[derive(Clone, Debug)]
pub struct BufferRange {
    pub source: BufferSource,
    pub offset: i64,
    pub length: i64,
}

/// One binding-table entry: a `hal.buffer` ref (or null) and its range.
#[derive(Clone, Debug)]
pub struct TableEntry {
    pub buffer: Option<Ref>,
    pub offset: i64,
    pub length: i64,
}

/// A dispatch's grid: given when recording, or three u32s (12 bytes) read from a buffer when
/// executing.
#[derive(Debug)]
pub enum Workgroups {
    Fixed([u32; 3]),
    Indirect(BufferRange),
}

#[derive(Debug)]
enum Command {
    Dispatch { executable: Ref, export: usize, workgroups: Workgroups, constants: Vec<u32>, bindings: Vec<BufferRange> },
    Fill { target: BufferRange, pattern: u64, pattern_length: usize },
    Copy { source: BufferRange, target: BufferRange },
    Update { source: Arc<Bytes>, source_offset: usize, target: BufferRange },
}

#[derive(Debug, Default)]
struct Recording {
    commands: Vec<Command>,
    finalized: bool,
}

/// A command buffer.
#[derive(Debug)]
pub struct CommandBuffer {
    mode: u32,
    binding_capacity: u32,
    recording: Mutex<Recording>,
}

impl RefObject for CommandBuffer {
    fn type_name(&self) -> &'static str {
        "hal.command_buffer"
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl CommandBuffer {
    pub fn new(mode: u32, binding_capacity: u32) -> CommandBuffer {
        CommandBuffer { mode, binding_capacity, recording: Mutex::default() }
    }

    pub fn is_one_shot(&self) -> bool {
        self.mode & MODE_ONE_SHOT != 0
    }

    fn record(&self, command: Command) -> Result<(), Diagnostic> {
        let mut recording = self.recording.lock().unwrap_or_else(PoisonError::into_inner);
        if recording.finalized {
            return Err(Diagnostic::new(StatusCode::FailedPrecondition, "command buffer is finalized"));
        }
        for range in command_ranges(&command) {
            if let BufferSource::Slot(slot) = range.source {
                if slot >= self.binding_capacity {
                    return Err(Diagnostic::new(
                        StatusCode::OutOfRange,
                        format!("binding table slot {slot} out of range (capacity {})", self.binding_capacity),
                    ));
                }
            }
        }
        recording.commands.push(command);
        Ok(())
    }

    /// Records a dispatch; `executable` must be a `hal.executable`.
    pub fn dispatch(
        &self,
        executable: Ref,
        export: usize,
        workgroups: Workgroups,
        constants: Vec<u32>,
        bindings: Vec<BufferRange>,
    ) -> Result<(), Diagnostic> {
        executable::deref(&executable)?;
        self.record(Command::Dispatch { executable, export, workgroups, constants, bindings })
    }

    /// Records a fill of `target` with a 1, 2, 4 or 8-byte pattern.
    pub fn fill(&self, target: BufferRange, pattern: u64, pattern_length: usize) -> Result<(), Diagnostic> {
        if ![1, 2, 4, 8].contains(&pattern_length) {
            return Err(Diagnostic::new(
                StatusCode::InvalidArgument,
                format!("fill pattern length {pattern_length} is not 1, 2, 4 or 8 bytes"),
            ));
        }
        self.record(Command::Fill { target, pattern, pattern_length })
    }

    pub fn copy(&self, source: BufferRange, target: BufferRange) -> Result<(), Diagnostic> {
        self.record(Command::Copy { source, target })
    }

    /// Records a copy of host bytes (a `vm.buffer`) into `target`, taken at execution.
    pub fn update(&self, source: Arc<Bytes>, source_offset: usize, target: BufferRange) -> Result<(), Diagnostic> {
        self.record(Command::Update { source, source_offset, target })
    }

    /// Barriers order nothing here: commands execute in recording order.
    pub fn barrier(&self) -> Result<(), Diagnostic> {
        let recording = self.recording.lock().unwrap_or_else(PoisonError::into_inner);
        if recording.finalized {
            return Err(Diagnostic::new(StatusCode::FailedPrecondition, "command buffer is finalized"));
        }
        Ok(())
    }

    pub fn finalize(&self) -> Result<(), Diagnostic> {
        let mut recording = self.recording.lock().unwrap_or_else(PoisonError::into_inner);
        if recording.finalized {
            return Err(Diagnostic::new(StatusCode::FailedPrecondition, "command buffer is already finalized"));
        }
        recording.finalized = true;
        Ok(())
    }

    /// Runs the recorded commands in order with `table` resolving slot references.
    pub fn execute(&self, table: &[TableEntry]) -> Result<(), Diagnostic> {
        let recording = self.recording.lock().unwrap_or_else(PoisonError::into_inner);
        if !recording.finalized {
            return Err(Diagnostic::new(StatusCode::FailedPrecondition, "command buffer must be finalized to execute"));
        }
        // One allocation per execution for every dispatch's bindings.
        let mut bound = Vec::new();
        for command in &recording.commands {
            match command {
                Command::Dispatch { executable, export, workgroups, constants, bindings } => {
                    let workgroup_count = match workgroups {
                        Workgroups::Fixed(count) => *count,
                        Workgroups::Indirect(range) => {
                            let bytes = resolve(range, table)?.span()?;
                            [0, 1, 2]
                                .map(|i| bytes.load_i32(i).map(|v| v as u32))
                                .into_iter()
                                .collect::<Result<Vec<_>, _>>()?
                                .try_into()
                                .expect("three counts")
                        }
                    };
                    bound.clear();
                    for range in bindings {
                        bound.push(resolve(range, table)?);
                    }
                    executable::deref(executable)?.dispatch(&Dispatch {
                        export: *export,
                        workgroup_count,
                        constants,
                        bindings: &bound,
                    })?;
                }
                Command::Fill { target, pattern, pattern_length } => {
                    let target = resolve(target, table)?.span()?;
                    fill(&target, *pattern, *pattern_length)?;
                }
                Command::Copy { source, target } => {
                    let (source, target) = (resolve(source, table)?, resolve(target, table)?);
                    if source.len() != target.len() {
                        return Err(Diagnostic::new(
                            StatusCode::InvalidArgument,
                            format!("copy of {} bytes into a range of {}", source.len(), target.len()),
                        ));
                    }
                    // SAFETY: queue work runs in submission order; nothing else touches its
                    // buffers meanwhile (as for dispatches).
                    unsafe {
                        Bytes::copy_ordered(
                            source.buffer(),
                            source.offset(),
                            target.buffer(),
                            target.offset(),
                            source.len() as i64,
                        )
                    }?;
                }
                Command::Update { source, source_offset, target } => {
                    let target = resolve(target, table)?;
                    // The source is a host buffer the program may still be touching: byte moves.
                    Bytes::copy(source, *source_offset as i64, target.buffer(), target.offset(), target.len() as i64)?;
                }
            }
        }
        Ok(())
    }

    pub fn into_ref(self) -> Ref {
        Ref::Object(Arc::new(self))
    }
}

fn command_ranges(command: &Command) -> Vec<&BufferRange> {
    match command {
        Command::Dispatch { bindings, workgroups, .. } => {
            let mut ranges: Vec<&BufferRange> = bindings.iter().collect();
            if let Workgroups::Indirect(range) = workgroups {
                ranges.push(range);
            }
            ranges
        }
        Command::Fill { target, .. } | Command::Update { target, .. } => vec![target],
        Command::Copy { source, target } => vec![source, target],
    }
}

/// The bytes a range names, with the table applied.
fn resolve<'a>(range: &'a BufferRange, table: &'a [TableEntry]) -> Result<BoundBytes<'a>, Diagnostic> {
    match &range.source {
        BufferSource::Direct(buffer) => BoundBytes::whole(buffer::deref(buffer)?.bytes())
            .range(range.offset, range.length)
            .map_err(|e| e.at("buffer")),
        BufferSource::Slot(slot) => {
            let entry = table.get(*slot as usize).ok_or_else(|| {
                Diagnostic::new(
                    StatusCode::OutOfRange,
                    format!("binding table slot {slot} out of range (the table has {} entries)", table.len()),
                )
            })?;
            let buffer = entry.buffer.as_ref().ok_or_else(|| {
                Diagnostic::new(StatusCode::InvalidArgument, format!("binding table slot {slot} is null"))
            })?;
            BoundBytes::whole(buffer::deref(buffer)?.bytes())
                .range(entry.offset, entry.length)
                .map_err(|e| e.at(format_args!("binding table slot {slot} entry")))?
                .range(range.offset, range.length)
                .map_err(|e| e.at(format_args!("binding table slot {slot}")))
        }
    }
}

fn fill(target: &Bytes, pattern: u64, pattern_length: usize) -> Result<(), Diagnostic> {
    let length = target.len();
    if length % pattern_length != 0 {
        return Err(Diagnostic::new(
            StatusCode::InvalidArgument,
            format!("fill length {length} is not a multiple of the {pattern_length}-byte pattern"),
        ));
    }
    let count = (length / pattern_length) as i64;
    match pattern_length {
        1 => target.fill_i8(0, count, pattern as i8),
        2 => target.fill_i16(0, count, pattern as i16),
        4 => target.fill_i32(0, count, pattern as i32),
        _ => target.fill_i64(0, count, pattern as i64),
    }
}

/// The command buffer a ref holds, or INVALID_ARGUMENT naming what was there.
pub fn deref(value: &Ref) -> Result<&CommandBuffer, Diagnostic> {
    value.downcast::<CommandBuffer>().ok_or_else(|| wrong_type("hal.command_buffer", value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hal::buffer::Buffer;

    fn buffer_ref(bytes: &[u8]) -> Ref {
        Buffer::wrap(Bytes::from_bytes(bytes).unwrap(), 0, 0).into_ref()
    }

    /// Ranges resolve without copying: direct and through the table, offsets adding up, `-1` the
    /// rest, and every way out of bounds refused with the sizes involved.
    #[test]
    fn ranges_resolve_within_their_buffers_and_tables() {
        let data = buffer_ref(&[0, 1, 2, 3, 4, 5, 6, 7]);
        let direct = BufferRange { source: BufferSource::Direct(data.clone()), offset: 2, length: -1 };
        let bound = resolve(&direct, &[]).unwrap();
        assert_eq!((bound.offset(), bound.len()), (2, 6));
        assert_eq!(bound.span().unwrap().to_vec(), [2, 3, 4, 5, 6, 7]);
        let table = [
            TableEntry { buffer: Some(data.clone()), offset: 4, length: 4 },
            TableEntry { buffer: None, offset: 0, length: 0 },
        ];
        let slot = BufferRange { source: BufferSource::Slot(0), offset: 1, length: 2 };
        let bound = resolve(&slot, &table).unwrap();
        assert_eq!(bound.span().unwrap().to_vec(), [5, 6]);
        assert_eq!(bound.address(), resolve(&direct, &[]).unwrap().address().wrapping_add(3));
        let message = |range: BufferRange| resolve(&range, &table).err().unwrap().message;
        assert_eq!(
            message(BufferRange { source: BufferSource::Slot(0), offset: 3, length: 2 }),
            "binding table slot 0: range 3+2 out of range of 4 bytes"
        );
        let bad_entry = [TableEntry { buffer: Some(data.clone()), offset: 4, length: 8 }];
        assert_eq!(
            resolve(&BufferRange { source: BufferSource::Slot(0), offset: 0, length: -1 }, &bad_entry)
                .err()
                .unwrap()
                .message,
            "binding table slot 0 entry: range 4+8 out of range of 8 bytes"
        );
        assert_eq!(
            message(BufferRange { source: BufferSource::Slot(2), offset: 0, length: 1 }),
            "binding table slot 2 out of range (the table has 2 entries)"
        );
        assert_eq!(
            message(BufferRange { source: BufferSource::Slot(1), offset: 0, length: 1 }),
            "binding table slot 1 is null"
        );
        assert_eq!(
            message(BufferRange { source: BufferSource::Direct(data), offset: -1, length: 1 }),
            "buffer: range -1+1 out of range of 8 bytes"
        );
    }
}
