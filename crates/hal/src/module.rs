//! The `hal` VM module, version 7: the 58 functions IREE-compiled host programs import to drive a
//! device, with the calling conventions the compiler's imports carry (IREE 3.13
//! `runtime/src/iree/modules/hal/exports.inl`).
//!
//! Written once against the backend interface (`hal::backend`): every device operation goes to the
//! device's backend, which completes queue work by signalling its fences. `fence.await` on an
//! unreached fence suspends the calling invocation until the fence's continuation runs, so no
//! thread ever blocks on a fence.

use std::sync::Arc;

use smallvec::SmallVec;

use super::args::{text, Args};
use super::backend::{QueueFences, Transfer};
use super::buffer::{self, usage, Buffer};
use super::buffer_view::{self, BufferView, Shape};
use super::byte_range;
use super::command_buffer::{self, BufferRange, BufferSource, TableEntry, Workgroups};
use super::device::{self, Device};
use super::executable;
use super::fence::{self, Fence, Reached};
use super::file::{self, File};
use rtx_host::{AsyncValueRef, Diagnostic, StatusCode};
use rtx_vm::native::{Arguments, NativeFunction, NativeModule, NativeOutcome, NativeState};
use rtx_vm::refs::Ref;
use rtx_vm::value::Value;

/// The module's name, which compiled programs import it by.
const NAME: &str = "hal";

/// `IREE_HAL_MODULE_VERSION_0_7`.
pub const VERSION: u32 = 7;

/// Bindings one dispatch may take (`IREE_HAL_MODULE_MAX_DESCRIPTOR_BINDING_COUNT`).
const MAX_BINDINGS: usize = 32;

/// A function's implementation: results now (all but one), or an outcome that may be pending
/// (`fence.await`, which suspends the caller on an unreached fence).
#[derive(Clone, Copy)]
enum Handler {
    Ready(fn(&mut HalState, &mut Args<'_>) -> Result<Out, Diagnostic>),
    Outcome(fn(&mut Args<'_>, &mut Vec<Value>) -> Result<NativeOutcome, Diagnostic>),
}

/// The results of a function that answers at once, held inline (no `hal` function returns more
/// than two) until they are pushed onto the caller's results.
enum Out {
    None,
    One(Value),
    Two(Value, Value),
}

impl Out {
    #[inline]
    fn push_onto(self, results: &mut Vec<Value>) {
        match self {
            Out::None => {}
            Out::One(value) => results.push(value),
            Out::Two(first, second) => results.extend([first, second]),
        }
    }
}

/// Name, calling convention and implementation of every function, sorted by name as IREE's
/// export table is.
const FUNCTIONS: [(&str, &str, Handler); 58] = [
    ("allocator.allocate", "0rIiiI_r", Handler::Ready(allocator_allocate)),
    ("allocator.import", "0riIiirII_r", Handler::Ready(allocator_import)),
    ("allocator.select", "0iiICrID_rI", Handler::Ready(allocator_select)),
    ("buffer.allocation.discard", "0r_i", Handler::Ready(buffer_allocation_discard)),
    ("buffer.allocation.is_terminal", "0r_i", Handler::Ready(buffer_allocation_is_terminal)),
    ("buffer.allocation.preserve", "0r_v", Handler::Ready(buffer_allocation_preserve)),
    ("buffer.assert", "0rrrIii_v", Handler::Ready(buffer_assert)),
    ("buffer.length", "0r_I", Handler::Ready(buffer_length)),
    ("buffer.load", "0rIi_i", Handler::Ready(buffer_load)),
    ("buffer.store", "0irIi_v", Handler::Ready(buffer_store)),
    ("buffer.subspan", "0rII_r", Handler::Ready(buffer_subspan)),
    ("buffer_view.assert", "0rriiCID_v", Handler::Ready(buffer_view_assert)),
    ("buffer_view.buffer", "0r_r", Handler::Ready(buffer_view_buffer)),
    ("buffer_view.create", "0rIIiiCID_r", Handler::Ready(buffer_view_create)),
    ("buffer_view.dim", "0ri_I", Handler::Ready(buffer_view_dim)),
    ("buffer_view.element_type", "0r_i", Handler::Ready(buffer_view_element_type)),
    ("buffer_view.encoding_type", "0r_i", Handler::Ready(buffer_view_encoding_type)),
    ("buffer_view.rank", "0r_i", Handler::Ready(buffer_view_rank)),
    ("buffer_view.trace", "0rCrD_v", Handler::Ready(buffer_view_trace)),
    ("channel.create", "0rIIrrii_r", Handler::Ready(collectives)),
    ("channel.rank_and_count", "0r_ii", Handler::Ready(collectives)),
    ("channel.split", "0riiI_r", Handler::Ready(collectives)),
    ("command_buffer.advise_buffer", "0rrIIIi_v", Handler::Ready(command_buffer_hint)),
    ("command_buffer.begin_debug_group", "0rr_v", Handler::Ready(command_buffer_hint)),
    ("command_buffer.collective", "0rriiiirrIIIII_v", Handler::Ready(collectives)),
    ("command_buffer.copy_buffer", "0riirIrIII_v", Handler::Ready(command_buffer_copy_buffer)),
    ("command_buffer.create", "0riiIi_r", Handler::Ready(command_buffer_create)),
    ("command_buffer.dispatch", "0rrIiiiICiDCiirIID_v", Handler::Ready(command_buffer_dispatch)),
    ("command_buffer.dispatch.indirect", "0rrIirIICiDCiirIID_v", Handler::Ready(command_buffer_dispatch_indirect)),
    ("command_buffer.end_debug_group", "0r_v", Handler::Ready(command_buffer_hint)),
    ("command_buffer.execution_barrier", "0riiI_v", Handler::Ready(command_buffer_execution_barrier)),
    ("command_buffer.fill_buffer", "0rrIIiIiI_v", Handler::Ready(command_buffer_fill_buffer)),
    ("command_buffer.finalize", "0r_v", Handler::Ready(command_buffer_finalize)),
    ("command_buffer.update_buffer", "0rrIrIIiI_v", Handler::Ready(command_buffer_update_buffer)),
    ("device.allocator", "0r_r", Handler::Ready(device_allocator)),
    ("device.query.i64", "0rrr_iI", Handler::Ready(device_query_i64)),
    ("device.queue.alloca", "0rIrrIiiII_r", Handler::Ready(queue_alloca)),
    ("device.queue.barrier", "0rIrrI_v", Handler::Ready(queue_barrier)),
    ("device.queue.copy", "0rIrrrIrIII_v", Handler::Ready(queue_copy)),
    ("device.queue.dealloca", "0rIrrrI_v", Handler::Ready(queue_dealloca)),
    ("device.queue.execute", "0rIrrrI_v", Handler::Ready(queue_execute)),
    ("device.queue.execute.indirect", "0rIrrrICrIID_v", Handler::Ready(queue_execute_indirect)),
    ("device.queue.fill", "0rIrrrIIIiI_v", Handler::Ready(queue_fill)),
    ("device.queue.flush", "0rI_v", Handler::Ready(queue_flush)),
    ("device.queue.read", "0rIrrrIrIII_v", Handler::Ready(queue_read)),
    ("device.queue.update", "0rIrrrIrIII_v", Handler::Ready(queue_update)),
    ("device.queue.write", "0rIrrrIrIII_v", Handler::Ready(queue_write)),
    ("devices.count", "0v_i", Handler::Ready(devices_count)),
    ("devices.get", "0i_r", Handler::Ready(devices_get)),
    ("ex.file.from_memory", "0rIirIIi_r", Handler::Ready(ex_file_from_memory)),
    ("executable.create", "0rIrrr_r", Handler::Ready(executable_create)),
    ("executable.lookup.function", "0rr_I", Handler::Ready(executable_lookup_function)),
    ("fence.await", "0iICrD_i", Handler::Outcome(fence_await)),
    ("fence.create", "0rI_r", Handler::Ready(fence_create)),
    ("fence.fail", "0ri_v", Handler::Ready(fence_fail)),
    ("fence.join", "0ICrD_r", Handler::Ready(fence_join)),
    ("fence.query", "0r_i", Handler::Ready(fence_query)),
    ("fence.signal", "0r_v", Handler::Ready(fence_signal)),
];

/// The `hal` module over a set of devices (one per context that adds it shares them).
pub struct HalModule {
    devices: Vec<Ref>,
    functions: Vec<NativeFunction>,
}

/// Per-context state: the devices the program enumerates, and the fences it made.
struct HalState {
    devices: Vec<Ref>,
    fences: fence::Pool,
}

impl HalModule {
    /// The module over `devices`, whatever their backends.
    pub fn new(devices: Vec<Device>) -> HalModule {
        HalModule {
            devices: devices.into_iter().map(Device::into_ref).collect(),
            functions: FUNCTIONS.iter().map(|(name, cconv, _)| NativeFunction::new(*name, *cconv)).collect(),
        }
    }
}

impl NativeModule for HalModule {
    fn name(&self) -> &str {
        NAME
    }

    fn version(&self) -> u32 {
        VERSION
    }

    fn functions(&self) -> &[NativeFunction] {
        &self.functions
    }

    /// The queue operations, the waits, and what allocates or loads: where a program's time
    /// goes. Recording a command or asking about a buffer takes less than its span would.
    fn traced(&self, ordinal: usize) -> bool {
        FUNCTIONS.get(ordinal).is_some_and(|(name, ..)| {
            name.starts_with("device.queue.")
                || matches!(*name, "fence.await" | "executable.create" | "allocator.allocate" | "allocator.import")
        })
    }

    fn create_state(&self) -> Result<NativeState, Diagnostic> {
        Ok(Box::new(HalState { devices: self.devices.clone(), fences: fence::Pool::default() }))
    }

    fn call(
        &self,
        state: &mut NativeState,
        ordinal: usize,
        arguments: Arguments<'_>,
        results: &mut Vec<Value>,
    ) -> Result<NativeOutcome, Diagnostic> {
        let state = state
            .downcast_mut::<HalState>()
            .ok_or_else(|| Diagnostic::new(StatusCode::Internal, "hal module state of another module"))?;
        let (name, _, handler) = FUNCTIONS
            .get(ordinal)
            .ok_or_else(|| Diagnostic::new(StatusCode::NotFound, format!("hal function {ordinal} does not exist")))?;
        let mut arguments = Args::new(NAME, name, arguments);
        match handler {
            Handler::Ready(function) => {
                function(state, &mut arguments)?.push_onto(results);
                Ok(NativeOutcome::Ready)
            }
            Handler::Outcome(function) => function(&mut arguments, results),
        }
    }
}

fn out(value: impl Into<Value>) -> Result<Out, Diagnostic> {
    Ok(Out::One(value.into()))
}

fn none() -> Result<Out, Diagnostic> {
    Ok(Out::None)
}

fn some(value: Ref) -> Value {
    Value::Ref(Some(value))
}

// -- allocator -----------------------------------------------------------------------------------

fn allocator_allocate(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let allocator = device::deref_allocator(a.r()?)?;
    let (_affinity, memory_types, buffer_usage, size) = (a.i64()?, a.i32()? as u32, a.i32()? as u32, a.i64()?);
    out(some(allocator.allocate(memory_types, buffer_usage, size)?.into_ref()))
}

fn allocator_import(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let allocator = device::deref_allocator(a.r()?)?;
    let (_is_try, _affinity, memory_types, buffer_usage) = (a.i32()?, a.i64()?, a.i32()? as u32, a.i32()? as u32);
    let source = a.bytes()?;
    let (offset, length) = (a.i64()?, a.i64()?);
    // IREE's -1 is the whole source (whatever the offset), and its error is INVALID_ARGUMENT.
    let available = source.len();
    let length = if length == -1 { available as i64 } else { length };
    let (offset, length) = byte_range::check(offset, length, available).map_err(|_| {
        Diagnostic::new(
            StatusCode::InvalidArgument,
            format!(
                "byte range out of bounds (requested {offset}-{} of available {available})",
                offset.wrapping_add(length).wrapping_sub(1)
            ),
        )
    })?;
    if !source.is_mutable() && buffer_usage & usage::SHARING_IMMUTABLE == 0 {
        return Err(Diagnostic::new(
            StatusCode::PermissionDenied,
            "source buffer is immutable and can only be imported for constant usage",
        ));
    }
    out(some(allocator.import(source.span(offset, length)?, memory_types, buffer_usage)?.into_ref()))
}

fn allocator_select(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let (_memory_types, _usage, _flags) = (a.i32()?, a.i32()?, a.i64()?);
    let count = a.span()?;
    let mut first = None;
    for _ in 0..count {
        let (device, affinity) = (a.r()?, a.i64()?);
        device::deref(device)?;
        first.get_or_insert((device.clone(), affinity));
    }
    // Devices are not told apart by their memory yet: the first candidate is as good as any.
    let (device, affinity) = first
        .ok_or_else(|| Diagnostic::new(StatusCode::InvalidArgument, "allocator.select needs at least one device"))?;
    Ok(Out::Two(some(device), Value::I64(affinity)))
}

// -- buffer --------------------------------------------------------------------------------------

// Memory is freed when its last buffer goes, so every buffer counts as its allocation's only
// user: discarding it is always terminal and the program deallocates (`queue.dealloca`).
fn buffer_allocation_discard(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    buffer::deref(a.r()?)?;
    out(Value::I32(1))
}

fn buffer_allocation_is_terminal(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    buffer::deref(a.r()?)?;
    out(Value::I32(1))
}

fn buffer_allocation_preserve(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    buffer::deref(a.r()?)?;
    none()
}

fn buffer_assert(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let buffer = buffer::deref(a.r()?)?;
    // The value's name is only read for a message: asserts run on every call.
    let name = a.bytes()?;
    device::deref_allocator(a.r()?)?;
    let (minimum_length, memory_types, buffer_usage) = (a.i64()?, a.i32()? as u32, a.i32()? as u32);
    let length = buffer.len() as i64;
    if length < minimum_length {
        return Err(Diagnostic::new(
            StatusCode::InvalidArgument,
            format!("{} buffer byte length {length} less than expected minimum {minimum_length}", text(name)),
        ));
    }
    if buffer.memory_types() & memory_types != memory_types {
        return Err(Diagnostic::new(
            StatusCode::PermissionDenied,
            format!(
                "{} buffer memory type is not compatible; buffer has {:08X}, operation requires {memory_types:08X}",
                text(name),
                buffer.memory_types()
            ),
        ));
    }
    if buffer.usage() & buffer_usage != buffer_usage {
        return Err(Diagnostic::new(
            StatusCode::PermissionDenied,
            format!(
                "{} requested usage was not specified when the buffer was allocated; buffer allows {:08X}, \
                 operation requires {buffer_usage:08X}",
                text(name),
                buffer.usage()
            ),
        ));
    }
    none()
}

fn buffer_length(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    out(Value::I64(buffer::deref(a.r()?)?.len() as i64))
}

fn buffer_load(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let buffer = buffer::deref(a.r()?)?;
    let (offset, length) = (a.i64()?, a.i32()?);
    small_range(buffer, offset, length, "load")?;
    let mut value = [0u8; 4];
    buffer.read(offset as usize, &mut value[..length as usize])?;
    out(Value::I32(i32::from_le_bytes(value)))
}

fn buffer_store(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let value = a.i32()?;
    let buffer = buffer::deref(a.r()?)?;
    let (offset, length) = (a.i64()?, a.i32()?);
    small_range(buffer, offset, length, "store")?;
    buffer.write(offset as usize, &value.to_le_bytes()[..length as usize])?;
    none()
}

/// Checks the range of a `buffer.load`/`buffer.store` of at most 4 bytes as IREE does.
fn small_range(buffer: &Buffer, offset: i64, length: i32, what: &str) -> Result<(), Diagnostic> {
    if !(0..=4).contains(&length) {
        return Err(Diagnostic::new(
            StatusCode::InvalidArgument,
            format!("{what} length byte count {length} exceeds max"),
        ));
    }
    let total = buffer.len() as i64;
    if offset < 0 || offset + i64::from(length) > total {
        return Err(Diagnostic::new(
            StatusCode::OutOfRange,
            format!("{what} out of bounds (offset={offset}, length={length} into max {total})"),
        ));
    }
    Ok(())
}

fn buffer_subspan(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let buffer = buffer::deref(a.r()?)?;
    let (offset, length) = (a.i64()?, a.i64()?);
    out(some(buffer.subspan(offset, length)?.into_ref()))
}

// -- buffer_view ---------------------------------------------------------------------------------

fn buffer_view_assert(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let view = buffer_view::deref(a.r()?)?;
    let name = a.bytes()?;
    let (element_type, encoding) = (a.i32()? as u32, a.i32()? as u32);
    a.with_i64_span(|shape| view.check(element_type, encoding, shape))?
        .map_err(|e| e.map_message(|message| format!("{} {message}", text(name))))?;
    none()
}

fn buffer_view_buffer(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    out(some(buffer_view::deref(a.r()?)?.buffer_ref().clone()))
}

fn buffer_view_create(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let buffer_ref = a.r()?;
    let buffer = buffer::deref(buffer_ref)?;
    let (offset, length, element_type, encoding) = (a.i64()?, a.i64()?, a.i32()? as u32, a.i32()? as u32);
    let shape: Shape = a.i64_span()?;
    let source = if offset != 0 || length != buffer.len() as i64 {
        buffer
            .subspan(offset, length)
            .map_err(|e| {
                e.map_message(|message| {
                    format!(
                        "invalid subspan of an existing buffer (source_offset={offset}, length={length}); {message}"
                    )
                })
            })?
            .into_ref()
    } else {
        buffer_ref.clone()
    };
    out(some(BufferView::new(source, shape, element_type, encoding)?.into_ref()))
}

fn buffer_view_dim(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let view = buffer_view::deref(a.r()?)?;
    let index = a.i32()?;
    let dim = usize::try_from(index).ok().and_then(|i| view.shape().get(i)).ok_or_else(|| {
        Diagnostic::new(
            StatusCode::OutOfRange,
            format!("dimension {index} out of range of a rank {} buffer view", view.shape().len()),
        )
    })?;
    out(Value::I64(*dim))
}

fn buffer_view_element_type(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    out(Value::I32(buffer_view::deref(a.r()?)?.element_type() as i32))
}

fn buffer_view_encoding_type(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    out(Value::I32(buffer_view::deref(a.r()?)?.encoding() as i32))
}

fn buffer_view_rank(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    out(Value::I32(buffer_view::deref(a.r()?)?.shape().len() as i32))
}

/// Tracing hook (`--iree-hal-instrument-...`): the views are checked, nothing is recorded (rtx
/// has no trace sink).
fn buffer_view_trace(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    a.bytes()?;
    for _ in 0..a.span()? {
        buffer_view::deref(a.r()?)?;
    }
    none()
}

// -- channels and collectives --------------------------------------------------------------------

fn collectives(_: &mut HalState, _: &mut Args<'_>) -> Result<Out, Diagnostic> {
    Err(Diagnostic::new(
        StatusCode::Unimplemented,
        "collective channels need a multi-device transport; the CPU devices run one device",
    ))
}

// -- command_buffer ------------------------------------------------------------------------------

/// Debug groups and buffer advice are hints a CPU device has no use for; the command buffer is
/// still checked.
fn command_buffer_hint(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    command_buffer::deref(a.r()?)?;
    none()
}

/// A buffer operand given as (slot, ref-or-null, offset, length).
fn range(slot: i32, buffer: Option<&Ref>, offset: i64, length: i64) -> Result<BufferRange, Diagnostic> {
    let source = match buffer {
        Some(buffer) => BufferSource::Direct(buffer::deref(buffer)?.clone()),
        None => BufferSource::Slot(slot as u32),
    };
    Ok(BufferRange { source, offset, length })
}

fn command_buffer_copy_buffer(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let cmd = command_buffer::deref(a.r()?)?;
    let (source_slot, target_slot) = (a.i32()?, a.i32()?);
    let (source, source_offset) = (a.opt_ref()?, a.i64()?);
    let (target, target_offset) = (a.opt_ref()?, a.i64()?);
    let (length, _flags) = (a.i64()?, a.i64()?);
    cmd.copy(range(source_slot, source, source_offset, length)?, range(target_slot, target, target_offset, length)?)?;
    none()
}

fn command_buffer_create(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let device = device::deref(a.r()?)?;
    let (modes, _categories, _affinity, binding_capacity) = (a.i32()? as u32, a.i32()?, a.i64()?, a.i32()?);
    out(some(device.backend().create_command_buffer(modes, binding_capacity.max(0) as u32)?.into_ref()))
}

/// Constants and bindings of up to this many each (all a compiled dispatch has, as a rule) are
/// read onto the stack: the list copies them into storage it keeps, so recording a dispatch
/// allocates nothing.
const OPERANDS_ON_STACK: usize = 8;

/// Reads the constants and bindings spans shared by both dispatch forms and hands them to
/// `record` (from this frame: the spans are not moved out of it).
fn with_dispatch_operands(
    a: &mut Args<'_>,
    record: impl FnOnce(&[u32], &[BufferRange]) -> Result<(), Diagnostic>,
) -> Result<(), Diagnostic> {
    let mut constants = SmallVec::<[u32; OPERANDS_ON_STACK]>::new();
    for _ in 0..a.span()? {
        constants.push(a.i32()? as u32);
    }
    let count = a.span()?;
    if count > MAX_BINDINGS {
        return Err(Diagnostic::new(StatusCode::OutOfRange, format!("binding count {count} > {MAX_BINDINGS}")));
    }
    let mut bindings = SmallVec::<[BufferRange; OPERANDS_ON_STACK]>::with_capacity(count);
    for _ in 0..count {
        let (_reserved, slot, buffer, offset, length) = (a.i32()?, a.i32()?, a.opt_ref()?, a.i64()?, a.i64()?);
        bindings.push(range(slot, buffer, offset, length)?);
    }
    record(&constants, &bindings)
}

fn workgroup_count(x: i32, y: i32, z: i32) -> Result<[u32; 3], Diagnostic> {
    match (u32::try_from(x), u32::try_from(y), u32::try_from(z)) {
        (Ok(x), Ok(y), Ok(z)) => Ok([x, y, z]),
        _ => Err(Diagnostic::new(StatusCode::InvalidArgument, format!("negative workgroup count {x}x{y}x{z}"))),
    }
}

fn export_ordinal(function: i64) -> Result<usize, Diagnostic> {
    usize::try_from(function)
        .map_err(|_| Diagnostic::new(StatusCode::InvalidArgument, format!("invalid executable function {function}")))
}

fn command_buffer_dispatch(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let cmd = command_buffer::deref(a.r()?)?;
    let executable = executable::deref(a.r()?)?;
    let export = export_ordinal(a.i64()?)?;
    let count = workgroup_count(a.i32()?, a.i32()?, a.i32()?)?;
    let _flags = a.i64()?;
    with_dispatch_operands(a, |constants, bindings| {
        cmd.dispatch(executable, export, Workgroups::Fixed(count), constants, bindings)
    })?;
    none()
}

fn command_buffer_dispatch_indirect(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let cmd = command_buffer::deref(a.r()?)?;
    let executable = executable::deref(a.r()?)?;
    let export = export_ordinal(a.i64()?)?;
    let (slot, buffer, offset, _flags) = (a.i32()?, a.opt_ref()?, a.i64()?, a.i64()?);
    with_dispatch_operands(a, |constants, bindings| {
        let workgroups = Workgroups::Indirect(range(slot, buffer, offset, 12)?);
        cmd.dispatch(executable, export, workgroups, constants, bindings)
    })?;
    none()
}

fn command_buffer_execution_barrier(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let cmd = command_buffer::deref(a.r()?)?;
    let (_source_stages, _target_stages, _flags) = (a.i32()?, a.i32()?, a.i64()?);
    cmd.barrier()?;
    none()
}

fn command_buffer_fill_buffer(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let cmd = command_buffer::deref(a.r()?)?;
    let (target, offset, length, slot) = (a.opt_ref()?, a.i64()?, a.i64()?, a.i32()?);
    let (pattern, pattern_length, _flags) = (a.i64()?, a.i32()?, a.i64()?);
    cmd.fill(range(slot, target, offset, length)?, pattern as u64, pattern_length.max(0) as usize)?;
    none()
}

fn command_buffer_finalize(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    command_buffer::deref(a.r()?)?.finalize()?;
    none()
}

fn command_buffer_update_buffer(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let cmd = command_buffer::deref(a.r()?)?;
    let (source, source_offset) = (a.bytes()?, a.i64()?);
    let (target, target_offset, length, slot, _flags) = (a.opt_ref()?, a.i64()?, a.i64()?, a.i32()?, a.i64()?);
    let source_offset = update_source_offset(source_offset)?;
    cmd.update(source.clone(), source_offset, range(slot, target, target_offset, length)?)?;
    none()
}

// -- device --------------------------------------------------------------------------------------

fn device_allocator(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    out(some(device::deref(a.r()?)?.allocator().clone()))
}

fn device_query_i64(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let device = device::deref(a.r()?)?;
    let (category, key) = (a.string()?, a.string()?);
    // An unknown key is an answer (ok = 0), not a failure of the call.
    Ok(match device.backend().query_i64(&category, &key) {
        Ok(value) => Out::Two(Value::I32(1), Value::I64(value)),
        Err(_) => Out::Two(Value::I32(0), Value::I64(0)),
    })
}

/// The device, wait and signal fences every queue operation starts with (and its affinity, which
/// one queue ignores). Always inlined, as the readers are.
#[inline(always)]
fn queue_operands<'a>(a: &mut Args<'a>) -> Result<(&'a Device, Option<&'a Fence>, &'a Fence), Diagnostic> {
    let device = device::deref(a.r()?)?;
    let _affinity = a.i64()?;
    let wait = a.opt_ref()?.map(fence::deref).transpose()?;
    Ok((device, wait, fence::deref(a.r()?)?))
}

fn queue_alloca(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let (device, wait, signal) = queue_operands(a)?;
    let (pool, memory_types, buffer_usage, size, _flags) =
        (a.i64()?, a.i32()? as u32, a.i32()? as u32, a.i64()?, a.i64()?);
    if pool != 0 {
        return Err(Diagnostic::new(StatusCode::InvalidArgument, format!("pool {pool}: only pool 0 exists")));
    }
    let buffer = device.backend().queue_alloca(&QueueFences { wait, signal }, memory_types, buffer_usage, size)?;
    out(some(Ref::Object(buffer)))
}

fn queue_barrier(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let (device, wait, signal) = queue_operands(a)?;
    let _flags = a.i64()?;
    device.backend().queue_execute(&QueueFences { wait, signal }, None, &[])?;
    none()
}

/// A whole-buffer operand of a queue transfer, as a range.
fn direct(buffer: &Ref, offset: i64, length: i64) -> Result<BufferRange, Diagnostic> {
    Ok(BufferRange { source: BufferSource::Direct(buffer::deref(buffer)?.clone()), offset, length })
}

fn queue_copy(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let (device, wait, signal) = queue_operands(a)?;
    let (source, source_offset) = (a.r()?, a.i64()?);
    let (target, target_offset) = (a.r()?, a.i64()?);
    let (length, _flags) = (a.i64()?, a.i64()?);
    let transfer = Transfer::Copy {
        source: direct(source, source_offset, length)?,
        target: direct(target, target_offset, length)?,
    };
    device.backend().queue_transfer(&QueueFences { wait, signal }, transfer)?;
    none()
}

fn queue_dealloca(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let (device, wait, signal) = queue_operands(a)?;
    let buffer = buffer::deref(a.r()?)?;
    let _flags = a.i64()?;
    device.backend().queue_dealloca(&QueueFences { wait, signal }, buffer)?;
    none()
}

fn queue_execute(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let (device, wait, signal) = queue_operands(a)?;
    let cmd = a.opt_ref()?.map(command_buffer::deref).transpose()?;
    let _flags = a.i64()?;
    device.backend().queue_execute(&QueueFences { wait, signal }, cmd, &[])?;
    none()
}

fn queue_execute_indirect(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let (device, wait, signal) = queue_operands(a)?;
    let cmd = a.opt_ref()?.map(command_buffer::deref).transpose()?;
    let _flags = a.i64()?;
    // A table of a few entries (a program's transient buffers) is built on the stack.
    let count = a.span()?;
    let mut table = SmallVec::<[TableEntry; 8]>::with_capacity(count);
    for _ in 0..count {
        let (buffer, offset, length) = (a.opt_ref()?, a.i64()?, a.i64()?);
        table.push(TableEntry { buffer: buffer.map(buffer::deref).transpose()?.cloned(), offset, length });
    }
    device.backend().queue_execute(&QueueFences { wait, signal }, cmd, &table)?;
    none()
}

fn queue_fill(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let (device, wait, signal) = queue_operands(a)?;
    let target = a.r()?;
    let (offset, length, pattern, pattern_length, _flags) = (a.i64()?, a.i64()?, a.i64()?, a.i32()?, a.i64()?);
    let pattern_length = pattern_length.max(0) as usize;
    command_buffer::check_pattern_length(pattern_length)?;
    let transfer = Transfer::Fill { target: direct(target, offset, length)?, pattern: pattern as u64, pattern_length };
    device.backend().queue_transfer(&QueueFences { wait, signal }, transfer)?;
    none()
}

fn queue_flush(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let device = device::deref(a.r()?)?;
    let _affinity = a.i64()?;
    device.backend().queue_flush()?;
    none()
}

fn queue_read(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let (device, wait, signal) = queue_operands(a)?;
    let (source, source_offset) = (file::deref(a.r()?)?, a.i64()?);
    let (target, target_offset) = (buffer::deref(a.r()?)?, a.i64()?);
    let (length, _flags) = (a.i64()?, a.i64()?);
    let queue = QueueFences { wait, signal };
    device.backend().queue_read(&queue, source, source_offset, target, target_offset, length)?;
    none()
}

fn queue_update(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let (device, wait, signal) = queue_operands(a)?;
    let (source, source_offset) = (a.bytes()?.clone(), a.i64()?);
    let (target, target_offset) = (a.r()?, a.i64()?);
    let (length, _flags) = (a.i64()?, a.i64()?);
    let source_offset = update_source_offset(source_offset)?;
    let transfer = Transfer::Update { source, source_offset, target: direct(target, target_offset, length)? };
    device.backend().queue_transfer(&QueueFences { wait, signal }, transfer)?;
    none()
}

/// An update's offset into its host source, which must not be negative.
fn update_source_offset(offset: i64) -> Result<usize, Diagnostic> {
    usize::try_from(offset)
        .map_err(|_| Diagnostic::new(StatusCode::OutOfRange, format!("negative update source offset {offset}")))
}

fn queue_write(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let (device, wait, signal) = queue_operands(a)?;
    let (source, source_offset) = (buffer::deref(a.r()?)?, a.i64()?);
    let (target, target_offset) = (file::deref(a.r()?)?, a.i64()?);
    let (length, _flags) = (a.i64()?, a.i64()?);
    let queue = QueueFences { wait, signal };
    device.backend().queue_write(&queue, source, source_offset, target, target_offset, length)?;
    none()
}

// -- devices, files, executables -----------------------------------------------------------------

fn devices_count(state: &mut HalState, _: &mut Args<'_>) -> Result<Out, Diagnostic> {
    out(Value::I32(state.devices.len() as i32))
}

fn devices_get(state: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let index = a.i32()?;
    let device = usize::try_from(index).ok().and_then(|i| state.devices.get(i)).ok_or_else(|| {
        Diagnostic::new(
            StatusCode::OutOfRange,
            format!("device {index} out of range (the context has {})", state.devices.len()),
        )
    })?;
    out(some(device.clone()))
}

fn ex_file_from_memory(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    device::deref(a.r()?)?;
    let (_affinity, _access) = (a.i64()?, a.i32()?);
    let source = a.bytes()?;
    let (offset, length, _flags) = (a.i64()?, a.i64()?, a.i32()?);
    let (Ok(offset), Ok(length)) = (usize::try_from(offset), usize::try_from(length)) else {
        return Err(Diagnostic::new(StatusCode::OutOfRange, format!("file range {offset}+{length} is negative")));
    };
    out(some(File::new(source.span(offset, length)?).into_ref()))
}

fn executable_create(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let device = device::deref(a.r()?)?;
    let _affinity = a.i64()?;
    let format = a.string()?;
    let data = a.bytes()?.to_vec();
    let constants = match a.opt_ref()? {
        None => Vec::new(),
        Some(buffer) => {
            let bytes = buffer.as_buffer().ok_or_else(|| buffer::wrong_type("vm.buffer", buffer))?.to_vec();
            bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
        }
    };
    out(some(device.backend().create_executable(&format, &data, &constants)?.into_ref()))
}

/// Export names up to this long are looked up from the stack: a program whose loop records its
/// dispatches looks one up for each of them.
const NAME_ON_STACK: usize = 256;

fn executable_lookup_function(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let executable = executable::deref(a.r()?)?;
    let name = a.bytes()?;
    let mut on_stack = [0u8; NAME_ON_STACK];
    let ordinal = match on_stack.get_mut(..name.len()) {
        Some(bytes) => {
            name.read_into(0, bytes)?;
            executable.lookup(bytes)?
        }
        None => executable.lookup(&name.to_vec())?,
    };
    out(Value::I64(ordinal as i64))
}

// -- fences --------------------------------------------------------------------------------------

/// The non-null fences of a span, all checked before the first is returned (a span is read
/// twice rather than collected: awaits and joins run several times per call).
fn fences<'a>(a: &mut Args<'a>) -> Result<impl Iterator<Item = &'a Fence>, Diagnostic> {
    let count = a.span()?;
    let mut again = a.clone();
    for _ in 0..count {
        a.opt_ref()?.map(fence::deref).transpose()?;
    }
    // Every value was read without error above.
    Ok((0..count).filter_map(move |_| again.opt_ref().ok().flatten().and_then(|value| fence::deref(value).ok())))
}

/// `fence.await(timeout_millis, flags, fences...) -> status`: OK once every fence is reached, or
/// DEADLINE_EXCEEDED as a value for a zero timeout on an unreached fence; otherwise the caller
/// suspends until every fence is reached or one failed. A failure fails the call with the
/// fence's error, as IREE's does: what failed the queue work (a dispatch's error, say) reaches
/// the caller instead of a status code the program turns into a message of its own.
fn fence_await(a: &mut Args<'_>, results: &mut Vec<Value>) -> Result<NativeOutcome, Diagnostic> {
    let (timeout, _flags) = (a.i32()?, a.i64()?);
    fence::note_wait();
    let joined = Fence::join(fences(a)?);
    match joined.reached() {
        Reached::No if timeout == 0 => {
            results.push(Value::I32(StatusCode::DeadlineExceeded as i32));
            Ok(NativeOutcome::Ready)
        }
        Reached::No => {
            let results = AsyncValueRef::<Vec<Value>>::unconstructed();
            let done = results.clone();
            let joined = Arc::new(joined);
            let fence = joined.clone();
            joined.when_reached(move || {
                let _ = match fence.reached() {
                    Reached::Failed(error) => done.set_error(error),
                    _ => done.emplace(vec![Value::I32(StatusCode::Ok as i32)]),
                };
            });
            Ok(NativeOutcome::Pending(results))
        }
        Reached::Failed(error) => Err(error),
        Reached::Yes => {
            results.push(Value::I32(StatusCode::Ok as i32));
            Ok(NativeOutcome::Ready)
        }
    }
}

fn fence_create(state: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    device::deref(a.r()?)?;
    let _flags = a.i64()?;
    out(some(state.fences.make(Fence::new())))
}

fn fence_fail(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let fence = fence::deref(a.r()?)?;
    let status = a.i32()?;
    let code = StatusCode::from_u32(status as u32).unwrap_or(StatusCode::Unknown);
    fence.fail(&Diagnostic::new(code, "fence failed by the program"));
    none()
}

fn fence_join(state: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    let _flags = a.i64()?;
    let joined = Fence::join(fences(a)?);
    out(some(state.fences.make(joined)))
}

fn fence_query(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    out(Value::I32(fence::status_code(&fence::deref(a.r()?)?.reached()) as i32))
}

fn fence_signal(_: &mut HalState, a: &mut Args<'_>) -> Result<Out, Diagnostic> {
    fence::deref(a.r()?)?.signal();
    none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exports_are_sorted_and_complete() {
        let names: Vec<&str> = FUNCTIONS.iter().map(|(name, _, _)| *name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        for (name, cconv, _) in FUNCTIONS {
            assert!(rtx_vm::abi::CallingConvention::parse(cconv).is_ok(), "{name}: {cconv}");
        }
    }
}
