//! Command buffers on the CPU: commands are recorded as they come and replayed in order on the
//! queue's thread, with buffers resolved to host memory at execution.

use smallvec::SmallVec;

use super::executable::{BoundBytes, Dispatch, LocalExecutable};
use crate::hal::backend::Transfer;
use crate::hal::buffer::Buffer;
use crate::hal::command_buffer::{
    table_entry, BufferRange, BufferSource, Command, CommandList, ExecutableCheck, TableEntry, Workgroups,
};
use crate::hal::executable::Executable;
use crate::host::{Diagnostic, StatusCode};
use crate::vm::buffer::Buffer as Bytes;

/// A command buffer of the CPU devices: they dispatch only their own executables.
pub fn new(binding_capacity: u32) -> CommandList {
    let accepts: ExecutableCheck = Box::new(|executable| local_executable(executable).map(drop));
    CommandList::new(binding_capacity, accepts)
}

/// Runs the recorded commands in order with `table` resolving slot references and `memory`
/// giving each buffer's bytes. Barriers order nothing here: commands run in recording order.
pub fn execute(list: &CommandList, table: &[TableEntry], memory: MemoryAccess) -> Result<(), Diagnostic> {
    list.with_commands(|commands| {
        for command in commands {
            match command {
                Command::Dispatch { executable, export, workgroups, constants, bindings } => {
                    let workgroup_count = match workgroups {
                        Workgroups::Fixed(count) => *count,
                        Workgroups::Indirect(range) => {
                            let bytes = resolve(range, table, memory)?.span()?;
                            [0, 1, 2]
                                .map(|i| bytes.load_i32(i).map(|v| v as u32))
                                .into_iter()
                                .collect::<Result<Vec<_>, _>>()?
                                .try_into()
                                .expect("three counts")
                        }
                    };
                    let export = executable.check_export(*export)?;
                    with_bound(bindings, table, memory, |bound| {
                        local_executable(executable)?.dispatch(&Dispatch {
                            export,
                            workgroup_count,
                            constants,
                            bindings: bound,
                        })
                    })?;
                }
                Command::Transfer(transfer) => run_transfer(transfer, table, memory)?,
                Command::Barrier => {}
            }
        }
        Ok(())
    })
}

/// Bindings of up to this many buffers (all a compiled dispatch has, as a rule) are resolved on
/// the stack.
const BINDINGS_ON_STACK: usize = 8;

/// Runs `run` with `bindings` resolved: on the stack when there are few, so a dispatch allocates
/// nothing.
fn with_bound<'a>(
    bindings: &'a [BufferRange],
    table: &'a [TableEntry],
    memory: MemoryAccess,
    run: impl FnOnce(&[BoundBytes<'a>]) -> Result<(), Diagnostic>,
) -> Result<(), Diagnostic> {
    let mut bound = SmallVec::<[BoundBytes<'a>; BINDINGS_ON_STACK]>::with_capacity(bindings.len());
    for range in bindings {
        bound.push(resolve(range, table, memory)?);
    }
    run(&bound)
}

/// The CPU code of an executable, or INVALID_ARGUMENT for another backend's.
fn local_executable(executable: &Executable) -> Result<&LocalExecutable, Diagnostic> {
    executable.backend().as_any().downcast_ref::<LocalExecutable>().ok_or_else(|| {
        Diagnostic::new(StatusCode::InvalidArgument, "executable was loaded by another device than a CPU device")
    })
}

/// Runs a fill, copy or update at once (queue order is the caller's).
pub fn run_transfer(transfer: &Transfer, table: &[TableEntry], memory: MemoryAccess) -> Result<(), Diagnostic> {
    match transfer {
        Transfer::Fill { target, pattern, pattern_length } => {
            let target = resolve(target, table, memory)?;
            // SAFETY: as for copies below, queue order keeps everything else off the range.
            unsafe { target.buffer().fill_ordered(target.offset(), target.len() as i64, *pattern, *pattern_length) }
        }
        Transfer::Copy { source, target } => {
            let (source, target) = (resolve(source, table, memory)?, resolve(target, table, memory)?);
            if source.len() != target.len() {
                return Err(Diagnostic::new(
                    StatusCode::InvalidArgument,
                    format!("copy of {} bytes into a range of {}", source.len(), target.len()),
                ));
            }
            // SAFETY: queue work runs in submission order; nothing else touches its buffers
            // meanwhile (as for dispatches).
            unsafe {
                Bytes::copy_ordered(
                    source.buffer(),
                    source.offset(),
                    target.buffer(),
                    target.offset(),
                    source.len() as i64,
                )
            }
        }
        Transfer::Update { source, source_offset, target } => {
            let target = resolve(target, table, memory)?;
            // The source is a host buffer the program may still be touching: byte moves.
            Bytes::copy(source, *source_offset as i64, target.buffer(), target.offset(), target.len() as i64)
        }
    }
}

/// How commands reach a buffer's bytes: as the processor running them addresses its memory. The
/// CPU devices' is [`host_bytes`]; a device whose memory the host cannot map but whose work runs
/// on the CPU (a test device, an emulator) brings its own.
pub type MemoryAccess = for<'b> fn(&'b Buffer) -> Result<BoundBytes<'b>, Diagnostic>;

/// A buffer's bytes in host memory: all of the CPU devices' buffers have them.
pub fn host_bytes(buffer: &Buffer) -> Result<BoundBytes<'_>, Diagnostic> {
    let memory = buffer.memory().mapping().ok_or_else(|| {
        Diagnostic::new(StatusCode::InvalidArgument, "buffer memory is not host memory, which the CPU devices run on")
    })?;
    BoundBytes::whole(memory).range(buffer.offset() as i64, buffer.len() as i64).map_err(|e| e.at("buffer memory"))
}

/// The bytes a range names, with the table applied.
fn resolve<'a>(
    range: &'a BufferRange,
    table: &'a [TableEntry],
    memory: MemoryAccess,
) -> Result<BoundBytes<'a>, Diagnostic> {
    match &range.source {
        BufferSource::Direct(buffer) => memory(buffer)?.range(range.offset, range.length).map_err(|e| e.at("buffer")),
        BufferSource::Slot(slot) => {
            let (entry, buffer) = table_entry(table, *slot)?;
            memory(buffer)?
                .range(entry.offset, entry.length)
                .map_err(|e| e.at(format_args!("binding table slot {slot} entry")))?
                .range(range.offset, range.length)
                .map_err(|e| e.at(format_args!("binding table slot {slot}")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hal::local::memory::HostAllocator;

    fn host_buffer(bytes: &[u8]) -> Buffer {
        HostAllocator::wrap(Bytes::from_bytes(bytes).unwrap(), 0, 0)
    }

    /// Few bindings are resolved on the stack, many on the heap, none to nothing: each the range
    /// `resolve` gives, and an unresolvable one an error.
    #[test]
    fn bindings_resolve_alike_however_many_there_are() {
        let data = host_buffer(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
        let table = [TableEntry { buffer: Some(data.clone()), offset: 0, length: -1 }];
        let range = |i: usize| BufferRange { source: BufferSource::Slot(0), offset: i as i64, length: 1 };
        for count in [0, 1, 3, BINDINGS_ON_STACK, BINDINGS_ON_STACK + 1, 12] {
            let bindings: Vec<BufferRange> = (0..count).map(range).collect();
            let mut seen = Vec::new();
            with_bound(&bindings, &table, host_bytes, |bound| {
                seen = bound.iter().map(|b| b.span().unwrap().to_vec()).collect();
                Ok(())
            })
            .unwrap();
            assert_eq!(seen, (0..count as u8).map(|i| vec![i]).collect::<Vec<_>>(), "{count} bindings");
        }
        for count in [3, BINDINGS_ON_STACK + 2] {
            let mut bindings: Vec<BufferRange> = (0..count).map(range).collect();
            bindings[count - 1] = BufferRange { source: BufferSource::Slot(1), offset: 0, length: 1 };
            let error = with_bound(&bindings, &table, host_bytes, |_| panic!("not run")).unwrap_err();
            assert_eq!(error.message, "binding table slot 1 out of range (the table has 1 entries)");
        }
    }

    /// Ranges resolve without copying: direct and through the table, offsets adding up, `-1` the
    /// rest, and every way out of bounds refused with the sizes involved.
    #[test]
    fn ranges_resolve_within_their_buffers_and_tables() {
        let data = host_buffer(&[0, 1, 2, 3, 4, 5, 6, 7]);
        let direct = BufferRange { source: BufferSource::Direct(data.clone()), offset: 2, length: -1 };
        let bound = resolve(&direct, &[], host_bytes).unwrap();
        assert_eq!((bound.offset(), bound.len()), (2, 6));
        assert_eq!(bound.span().unwrap().to_vec(), [2, 3, 4, 5, 6, 7]);
        let table = [
            TableEntry { buffer: Some(data.clone()), offset: 4, length: 4 },
            TableEntry { buffer: None, offset: 0, length: 0 },
        ];
        let slot = BufferRange { source: BufferSource::Slot(0), offset: 1, length: 2 };
        let bound = resolve(&slot, &table, host_bytes).unwrap();
        assert_eq!(bound.span().unwrap().to_vec(), [5, 6]);
        assert_eq!(bound.address(), resolve(&direct, &[], host_bytes).unwrap().address().wrapping_add(3));
        let message = |range: BufferRange| resolve(&range, &table, host_bytes).err().unwrap().message;
        assert_eq!(
            message(BufferRange { source: BufferSource::Slot(0), offset: 3, length: 2 }),
            "binding table slot 0: range 3+2 out of range of 4 bytes"
        );
        let bad_entry = [TableEntry { buffer: Some(data.clone()), offset: 4, length: 8 }];
        assert_eq!(
            resolve(&BufferRange { source: BufferSource::Slot(0), offset: 0, length: -1 }, &bad_entry, host_bytes)
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
            message(BufferRange { source: BufferSource::Direct(data.clone()), offset: -1, length: 1 }),
            "buffer: range -1+1 out of range of 8 bytes"
        );
        let span = data.subspan(2, 4).unwrap();
        let rest = BufferRange { source: BufferSource::Direct(span.clone()), offset: 1, length: -1 };
        assert_eq!(
            resolve(&rest, &[], host_bytes).unwrap().span().unwrap().to_vec(),
            [3, 4, 5],
            "a subspan's range starts at its offset"
        );
        assert_eq!(
            message(BufferRange { source: BufferSource::Direct(span), offset: 2, length: 3 }),
            "buffer: range 2+3 out of range of 4 bytes",
            "a subspan's range ends where it does, not where its memory does"
        );
    }
}
