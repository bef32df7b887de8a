//! `!hal.command_buffer`: recorded device work (dispatches, copies, fills, updates, barriers),
//! executed by a queue. Buffers may be named directly or by a slot of the binding table that
//! `queue.execute.indirect` supplies, which lets a program record once (in `__init`) and replay
//! with new buffers on every call. How commands are recorded and run is the backend's
//! ([`CommandBufferBackend`]).

use std::any::Any;
use std::sync::{Arc, Mutex, PoisonError};

use super::backend::{CommandBufferBackend, Transfer};
use super::buffer::{wrong_type, Buffer};
use super::executable::Executable;
use rtx_host::{Diagnostic, StatusCode};
use rtx_vm::buffer::ByteBuffer;
use rtx_vm::refs::{Ref, RefObject};

/// `IREE_HAL_COMMAND_BUFFER_MODE_ONE_SHOT`.
pub const MODE_ONE_SHOT: u32 = 1;

/// Where a command's buffer comes from.
#[derive(Clone, Debug)]
pub enum BufferSource {
    /// A buffer given when recording.
    Direct(Buffer),
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

/// One binding-table entry: a buffer (or null) and its range.
#[derive(Clone, Debug)]
pub struct TableEntry {
    pub buffer: Option<Buffer>,
    pub offset: i64,
    pub length: i64,
}

/// Entry `slot` of `table` and its buffer: OUT_OF_RANGE past the table, INVALID_ARGUMENT for a
/// null entry.
pub fn table_entry(table: &[TableEntry], slot: u32) -> Result<(&TableEntry, &Buffer), Diagnostic> {
    let entry = table.get(slot as usize).ok_or_else(|| {
        Diagnostic::new(
            StatusCode::OutOfRange,
            format!("binding table slot {slot} out of range (the table has {} entries)", table.len()),
        )
    })?;
    let buffer = entry
        .buffer
        .as_ref()
        .ok_or_else(|| Diagnostic::new(StatusCode::InvalidArgument, format!("binding table slot {slot} is null")))?;
    Ok((entry, buffer))
}

/// A dispatch's grid: given when recording, or three u32s (12 bytes) read from a buffer when
/// executing.
#[derive(Debug)]
pub enum Workgroups {
    Fixed([u32; 3]),
    Indirect(BufferRange),
}

/// One recorded command.
#[derive(Debug)]
pub enum Command {
    Dispatch {
        executable: Executable,
        export: usize,
        workgroups: Workgroups,
        /// In [`Recorded::constants`].
        constants: Span,
        /// In [`Recorded::bindings`].
        bindings: Span,
    },
    Transfer(Transfer),
    /// Everything recorded before it runs (and its writes are visible) before everything after.
    Barrier,
}

/// Where a dispatch's constants or bindings lie in the storage its list shares among all of its
/// dispatches: recording one appends to that storage instead of allocating its own.
#[derive(Clone, Copy, Debug)]
pub struct Span {
    start: usize,
    len: usize,
}

/// The commands of a list, and the constants and bindings of its dispatches.
#[derive(Debug, Default)]
pub struct Recorded {
    commands: Vec<Command>,
    constants: Vec<u32>,
    bindings: Vec<BufferRange>,
}

impl Recorded {
    pub fn commands(&self) -> &[Command] {
        &self.commands
    }

    /// A dispatch's push constants.
    pub fn constants(&self, span: Span) -> &[u32] {
        &self.constants[span.start..span.start + span.len]
    }

    /// A dispatch's bindings.
    pub fn bindings(&self, span: Span) -> &[BufferRange] {
        &self.bindings[span.start..span.start + span.len]
    }

    /// The bytes its vectors hold.
    fn capacity_bytes(&self) -> usize {
        self.commands.capacity() * size_of::<Command>()
            + self.constants.capacity() * size_of::<u32>()
            + self.bindings.capacity() * size_of::<BufferRange>()
    }

    /// Appends `items` to `storage`, giving where they lie.
    fn append<T: Clone>(storage: &mut Vec<T>, items: &[T]) -> Span {
        let start = storage.len();
        storage.extend_from_slice(items);
        Span { start, len: items.len() }
    }
}

/// The buffer ranges a transfer names.
fn transfer_ranges(transfer: &Transfer) -> [Option<&BufferRange>; 2] {
    match transfer {
        Transfer::Fill { target, .. } | Transfer::Update { target, .. } => [Some(target), None],
        Transfer::Copy { source, target } => [Some(source), Some(target)],
    }
}

/// Which executables a device's command buffers may dispatch: INVALID_ARGUMENT for another
/// device's.
pub type ExecutableCheck = Box<dyn Fn(&Executable) -> Result<(), Diagnostic> + Send + Sync>;

/// A command buffer whose commands are kept as recorded until the queue runs them, when the
/// binding table's buffers are known: the command buffers of the CPU and Vulkan devices.
/// Recording checks what it can (finalized, slots within the binding capacity, the executable
/// the device's).
pub struct CommandList {
    binding_capacity: u32,
    accepts: ExecutableCheck,
    state: Mutex<ListState>,
    /// Where the list's storage goes when it is released.
    spares: Arc<SpareLists>,
}

/// The storage of released command lists, kept by a device for the next lists it makes: a
/// program that records a command buffer on every step of a loop (an RNN's time steps) then
/// records into memory it already has, instead of growing new vectors each time.
#[derive(Debug, Default)]
pub struct SpareLists(Mutex<Vec<Recorded>>);

/// How many released lists a device keeps.
const SPARE_LISTS: usize = 4;

/// A released list's storage is kept only if it is no larger than this, so that what a device
/// keeps stays small (a large list is typically recorded once and replayed): a few hundred
/// commands.
const SPARE_BYTES: usize = 64 * 1024;

impl SpareLists {
    fn take(&self) -> Recorded {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).pop().unwrap_or_default()
    }

    /// Keeps `recorded`'s storage, emptied (its buffers and executables released now), if it is
    /// small and there is room.
    fn give_back(&self, mut recorded: Recorded) {
        if recorded.capacity_bytes() > SPARE_BYTES {
            return;
        }
        recorded.commands.clear();
        recorded.constants.clear();
        recorded.bindings.clear();
        let mut spares = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if spares.len() < SPARE_LISTS {
            spares.push(recorded);
        }
    }
}

impl Drop for CommandList {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        self.spares.give_back(std::mem::take(&mut state.recorded));
    }
}

impl std::fmt::Debug for CommandList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandList").field("binding_capacity", &self.binding_capacity).finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct ListState {
    recorded: Recorded,
    finalized: bool,
}

impl CommandList {
    /// An empty list, its storage one of `spares` if there is one.
    pub fn new(binding_capacity: u32, accepts: ExecutableCheck, spares: &Arc<SpareLists>) -> CommandList {
        let state = ListState { recorded: spares.take(), finalized: false };
        CommandList { binding_capacity, accepts, state: Mutex::new(state), spares: spares.clone() }
    }

    /// OUT_OF_RANGE for a range of a command being recorded that names a slot past the binding
    /// capacity.
    fn check_slots<'r>(&self, ranges: impl Iterator<Item = &'r BufferRange>) -> Result<(), Diagnostic> {
        for range in ranges {
            if let BufferSource::Slot(slot) = range.source {
                if slot >= self.binding_capacity {
                    return Err(Diagnostic::new(
                        StatusCode::OutOfRange,
                        format!("binding table slot {slot} out of range (capacity {})", self.binding_capacity),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Appends the command `make` gives, with the list's storage for its parts:
    /// FAILED_PRECONDITION once finalized, else the error of `slots` (its ranges checked).
    fn record(
        &self,
        slots: Result<(), Diagnostic>,
        make: impl FnOnce(&mut Recorded) -> Command,
    ) -> Result<(), Diagnostic> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.finalized {
            return Err(Diagnostic::new(StatusCode::FailedPrecondition, "command buffer is finalized"));
        }
        slots?;
        let command = make(&mut state.recorded);
        state.recorded.commands.push(command);
        Ok(())
    }

    /// Runs `run` over what the finalized list holds (FAILED_PRECONDITION before).
    pub fn with_commands<R>(&self, run: impl FnOnce(&Recorded) -> Result<R, Diagnostic>) -> Result<R, Diagnostic> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if !state.finalized {
            return Err(Diagnostic::new(StatusCode::FailedPrecondition, "command buffer must be finalized to execute"));
        }
        run(&state.recorded)
    }
}

impl CommandBufferBackend for CommandList {
    fn dispatch(
        &self,
        executable: &Executable,
        export: usize,
        workgroups: Workgroups,
        constants: &[u32],
        bindings: &[BufferRange],
    ) -> Result<(), Diagnostic> {
        (self.accepts)(executable)?;
        executable.check_export(export)?;
        let indirect = match &workgroups {
            Workgroups::Indirect(range) => Some(range),
            Workgroups::Fixed(_) => None,
        };
        let slots = self.check_slots(bindings.iter().chain(indirect));
        self.record(slots, |recorded| {
            let constants = Recorded::append(&mut recorded.constants, constants);
            let bindings = Recorded::append(&mut recorded.bindings, bindings);
            Command::Dispatch { executable: executable.clone(), export, workgroups, constants, bindings }
        })
    }

    fn transfer(&self, transfer: Transfer) -> Result<(), Diagnostic> {
        let slots = self.check_slots(transfer_ranges(&transfer).into_iter().flatten());
        self.record(slots, |_| Command::Transfer(transfer))
    }

    fn barrier(&self) -> Result<(), Diagnostic> {
        self.record(Ok(()), |_| Command::Barrier)
    }

    /// Ends recording: FAILED_PRECONDITION the second time.
    fn finalize(&self) -> Result<(), Diagnostic> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.finalized {
            return Err(Diagnostic::new(StatusCode::FailedPrecondition, "command buffer is already finalized"));
        }
        state.finalized = true;
        Ok(())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The command list behind `commands`, or INVALID_ARGUMENT for a command buffer of another kind.
pub fn command_list(commands: &CommandBuffer) -> Result<&CommandList, Diagnostic> {
    commands.backend().as_any().downcast_ref::<CommandList>().ok_or_else(|| {
        Diagnostic::new(StatusCode::InvalidArgument, "command buffer was not made by a device that keeps command lists")
    })
}

/// A command buffer.
#[derive(Clone, Debug)]
pub struct CommandBuffer {
    backend: Arc<dyn CommandBufferBackend>,
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
    pub fn new(backend: Arc<dyn CommandBufferBackend>) -> CommandBuffer {
        CommandBuffer { backend }
    }

    pub fn backend(&self) -> &dyn CommandBufferBackend {
        &*self.backend
    }

    pub fn dispatch(
        &self,
        executable: &Executable,
        export: usize,
        workgroups: Workgroups,
        constants: &[u32],
        bindings: &[BufferRange],
    ) -> Result<(), Diagnostic> {
        self.backend.dispatch(executable, export, workgroups, constants, bindings)
    }

    /// Records a fill of `target` with a 1, 2, 4 or 8-byte pattern.
    pub fn fill(&self, target: BufferRange, pattern: u64, pattern_length: usize) -> Result<(), Diagnostic> {
        check_pattern_length(pattern_length)?;
        self.backend.transfer(Transfer::Fill { target, pattern, pattern_length })
    }

    pub fn copy(&self, source: BufferRange, target: BufferRange) -> Result<(), Diagnostic> {
        self.backend.transfer(Transfer::Copy { source, target })
    }

    /// Records a copy of host bytes (a `vm.buffer`) into `target`, taken at execution.
    pub fn update(&self, source: Arc<ByteBuffer>, source_offset: usize, target: BufferRange) -> Result<(), Diagnostic> {
        self.backend.transfer(Transfer::Update { source, source_offset, target })
    }

    pub fn barrier(&self) -> Result<(), Diagnostic> {
        self.backend.barrier()
    }

    pub fn finalize(&self) -> Result<(), Diagnostic> {
        self.backend.finalize()
    }

    pub fn into_ref(self) -> Ref {
        Ref::Object(Arc::new(self))
    }
}

/// A fill pattern is 1, 2, 4 or 8 bytes: INVALID_ARGUMENT otherwise.
pub fn check_pattern_length(pattern_length: usize) -> Result<(), Diagnostic> {
    if [1, 2, 4, 8].contains(&pattern_length) {
        Ok(())
    } else {
        Err(Diagnostic::new(
            StatusCode::InvalidArgument,
            format!("fill pattern length {pattern_length} is not 1, 2, 4 or 8 bytes"),
        ))
    }
}

/// The command buffer a ref holds, or INVALID_ARGUMENT naming what was there.
#[inline]
pub fn deref(value: &Ref) -> Result<&CommandBuffer, Diagnostic> {
    value.downcast::<CommandBuffer>().ok_or_else(|| wrong_type("hal.command_buffer", value))
}
