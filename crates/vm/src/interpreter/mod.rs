//! The bytecode interpreter: invocations, frames and the dispatch loop.
//!
//! An [`Invocation`] owns its whole stack (frames plus two register stacks, one of i32 words and
//! one of refs) on the heap, so it can stop at a pending async value and resume later on any
//! thread without blocking one meanwhile. Each step holds the context's lock; see
//! [`crate::context`] for what that means for concurrency.

mod call;
mod coalesce;
mod cold;
mod exec;
mod handlers;
pub(crate) mod lower;
pub(crate) mod op;
pub(crate) mod scalar;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use self::lower::LoweredFunction;
use self::op::Slot;
use super::abi::{CallingConvention, CconvItem, ValueKind};
use super::context::{Instance, Linked, Resolved, State, VmContext};
use super::module::Module;
use super::native::{Arguments, NativeInstance, NativeOutcome, NativeState};
use super::refs::Ref;
use super::value::Value;
use rtx_host::{block_until_ready, tracing, AsyncValueRef, Diagnostic, Location, RcAsyncValue, StatusCode};

/// Most frames one invocation may stack before it fails with `RESOURCE_EXHAUSTED` (unbounded
/// recursion in a program must not take the host process down).
pub const MAX_FRAME_DEPTH: usize = 16 * 1024;
/// Most i32 registers (and, separately, ref registers) the frames of one invocation may hold.
pub const MAX_STACK_REGISTERS: usize = 1 << 22;
/// The budget that never runs out (the default): it is not counted down, so invocations without
/// a limit pay nothing for the feature.
pub const UNLIMITED: u64 = u64::MAX;

/// What running an invocation produced.
#[derive(Debug)]
pub enum Step {
    /// The entry function returned these results.
    Done(Vec<Value>),
    /// The program waits for this value; call [`Invocation::run`] again once it is available
    /// (for example from its `and_then`).
    Wait(RcAsyncValue),
}

/// Finished invocations' register stacks a context keeps for reuse.
const MAX_SPARE_STACKS: usize = 4;

/// The storage of an invocation's frames, kept by the context between invocations.
#[derive(Default)]
pub(crate) struct Stack {
    frames: Vec<Frame>,
    i32s: Vec<u32>,
    refs: Vec<Option<Ref>>,
    native_results: Vec<Value>,
    #[cfg(rtx_jit)]
    jit_stack: Vec<u32>,
}

#[derive(Clone, Copy, Debug)]
struct Frame {
    instance: u32,
    function: u32,
    /// The op being executed; for a caller, its call op.
    pc: u32,
    i32_base: u32,
    ref_base: u32,
}

/// A native call whose results are still being computed.
struct Pending {
    results: AsyncValueRef<Vec<Value>>,
    /// The native function: (module instance, function ordinal).
    native: (u32, u32),
}

/// One call from the host into a context, with its own stack.
pub struct Invocation {
    /// What [`Invocation::run`] locks. `None` once the invocation has finished, and throughout a
    /// [`call`]: that one runs under a lock it already holds, so it neither clones the context's
    /// handle nor relocks per slice.
    context: Option<VmContext>,
    frames: Vec<Frame>,
    i32s: Vec<u32>,
    refs: Vec<Option<Ref>>,
    /// A call made from the host straight into a native function.
    native_entry: Option<(u32, u32, Vec<Value>)>,
    /// The host's arguments vector, emptied into the entry frame: the results go back in it, so
    /// a call allocates no vector of its own for them.
    returned: Vec<Value>,
    /// What native functions answer into, reused call after call (programs driving the HAL make
    /// dozens per invocation).
    native_results: Vec<Value>,
    pending: Option<Pending>,
    /// The tracing spans of the frames entered while tracing was on, each with the depth of its
    /// frame: it is recorded when that frame returns.
    spans: Vec<(usize, tracing::Span)>,
    /// Backward branches and calls left before the invocation fails with `DEADLINE_EXCEEDED`
    /// ([`UNLIMITED`]: never).
    budget: u64,
    /// The register stack of compiled calls (see [`crate::jit`]); empty until compiled code
    /// first runs.
    #[cfg(rtx_jit)]
    jit_stack: Vec<u32>,
}

impl std::fmt::Debug for Invocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Invocation")
            .field("depth", &self.frames.len())
            .field("finished", &self.context.is_none())
            .finish()
    }
}

/// Runs `target` to completion for the context itself (`VmContext::invoke`, `__init`, `__deinit`).
/// The context stays locked from setup to teardown, released only while the program waits on an
/// async value, so a small call costs one lock and no clone of the context's handle.
pub(crate) fn call(context: &VmContext, target: Resolved, arguments: Vec<Value>) -> Result<Vec<Value>, Diagnostic> {
    let mut linked = context.lock();
    let mut invocation = Invocation::start(&mut linked, target, arguments)?;
    let result = loop {
        match invocation.step(&mut linked) {
            Ok(Step::Done(results)) => break Ok(results),
            Ok(Step::Wait(value)) => {
                drop(linked);
                block_until_ready(std::slice::from_ref(&value));
                linked = context.lock();
            }
            Err(error) => break Err(error),
        }
    };
    invocation.recycle(&mut linked);
    result
}

impl Invocation {
    pub(crate) fn new(context: VmContext, target: Resolved, arguments: Vec<Value>) -> Result<Invocation, Diagnostic> {
        let invocation = Invocation::start(&mut context.lock(), target, arguments)?;
        Ok(Invocation { context: Some(context), ..invocation })
    }

    /// The part of starting an invocation that needs the context's state, under the caller's lock
    /// so that [`call`] can go on to run under the same one. Always inlined: the invocation is then
    /// built in its caller's frame rather than copied out of the `Result`, which costs a trivial
    /// call several nanoseconds.
    #[inline(always)]
    fn start(linked: &mut Linked, target: Resolved, mut arguments: Vec<Value>) -> Result<Invocation, Diagnostic> {
        // Reuse the register stacks of an earlier invocation: small calls then allocate nothing.
        let stack = linked.spare_stacks.pop().unwrap_or_default();
        let mut invocation = Invocation {
            context: None,
            frames: stack.frames,
            i32s: stack.i32s,
            refs: stack.refs,
            native_entry: None,
            returned: Vec::new(),
            native_results: stack.native_results,
            pending: None,
            spans: Vec::new(),
            budget: linked.budget,
            #[cfg(rtx_jit)]
            jit_stack: stack.jit_stack,
        };
        let instances = &linked.instances;
        match target {
            Resolved::Native { instance, function } => {
                if let Some(Instance::Native(native)) = instances.get(instance as usize) {
                    let cconv = &native.functions()[function as usize].cconv;
                    check_native_arguments(instances, (instance, function), cconv, &arguments)?;
                }
                invocation.native_entry = Some((instance, function, arguments));
            }
            Resolved::Bytecode { instance, function } => {
                let module = bytecode_module(instances, instance)?;
                let callee = &module.functions()[function as usize];
                if arguments.len() != callee.arguments.len() {
                    return Err(Diagnostic::new(
                        StatusCode::InvalidArgument,
                        format!(
                            "input list and function mismatch; expected {} arguments but passed {}",
                            callee.arguments.len(),
                            arguments.len()
                        ),
                    ));
                }
                invocation.push_frame(instance, function, callee)?;
                invocation.trace_frame(instances, instance, function);
                for (index, (slot, value)) in callee.arguments.iter().zip(arguments.iter_mut()).enumerate() {
                    invocation.write_value(0, 0, *slot, value).map_err(|got| {
                        Diagnostic::new(
                            StatusCode::InvalidArgument,
                            format!(
                                "argument {index} of `{}`: expected {} but got {got}",
                                module.function_name(function as usize),
                                slot.kind.name()
                            ),
                        )
                    })?;
                }
                arguments.clear();
                invocation.returned = arguments;
            }
        }
        Ok(invocation)
    }

    /// Bounds the work this invocation may do: every backward branch taken and every call spends
    /// one unit, and running out fails the invocation with `DEADLINE_EXCEEDED`. Hosts running
    /// untrusted modules use it so that an endless loop cannot hold a thread forever.
    /// [`UNLIMITED`] (the default) is never counted down.
    pub fn set_budget(&mut self, budget: u64) {
        self.budget = budget;
    }

    /// Runs until the entry function returns, fails, or waits on an async value.
    pub fn run(&mut self) -> Result<Step, Diagnostic> {
        let Some(context) = self.context.take() else {
            return Err(Diagnostic::new(StatusCode::FailedPrecondition, "this invocation has already finished"));
        };
        let mut linked = context.lock();
        let result = self.step(&mut linked);
        if matches!(result, Ok(Step::Wait(_))) {
            drop(linked);
            self.context = Some(context);
        } else {
            self.recycle(&mut linked);
        }
        result
    }

    /// Releases the finished invocation's refs and hands its register stacks back to the context
    /// for the next invocation.
    fn recycle(&mut self, linked: &mut Linked) {
        self.frames.clear();
        self.spans.clear();
        self.i32s.clear();
        self.refs.clear();
        if linked.spare_stacks.len() < MAX_SPARE_STACKS {
            linked.spare_stacks.push(Stack {
                frames: std::mem::take(&mut self.frames),
                i32s: std::mem::take(&mut self.i32s),
                refs: std::mem::take(&mut self.refs),
                native_results: std::mem::take(&mut self.native_results),
                #[cfg(rtx_jit)]
                jit_stack: std::mem::take(&mut self.jit_stack),
            });
        }
    }

    fn step(&mut self, linked: &mut Linked) -> Result<Step, Diagnostic> {
        let Linked { instances, states, .. } = linked;
        if let Some((instance, function, arguments)) = self.native_entry.take() {
            let results = &mut self.native_results;
            return match call_native(instances, states, (instance, function), Arguments::values(&arguments), results)? {
                NativeOutcome::Ready => Ok(Step::Done(std::mem::take(results))),
                NativeOutcome::Pending(results) => {
                    let wait = results.as_untyped().clone();
                    self.pending = Some(Pending { results, native: (instance, function) });
                    Ok(Step::Wait(wait))
                }
            };
        }
        if let Some(pending) = self.pending.take() {
            if !pending.results.as_untyped().is_available() {
                let wait = pending.results.as_untyped().clone();
                self.pending = Some(pending);
                return Ok(Step::Wait(wait));
            }
            if let Some(error) = pending.results.as_untyped().get_error() {
                return Err(self.locate(instances, error.clone()));
            }
            let mut results = pending.results.get().clone();
            if self.frames.is_empty() {
                return Ok(Step::Done(results));
            }
            self.finish_native_call(instances, pending.native, &mut results)?;
        }
        self.execute(instances, states)
    }

    /// Moves the results of a native call that completed later out of `results` into the calling
    /// frame and moves it past the call.
    fn finish_native_call(
        &mut self,
        instances: &[Instance],
        native: (u32, u32),
        results: &mut [Value],
    ) -> Result<(), Diagnostic> {
        let frame = *self.frames.last().expect("a native call has a calling frame");
        let module = bytecode_module(instances, frame.instance)?;
        let op::Op::Call(call) = &module.functions()[frame.function as usize].ops[frame.pc as usize] else {
            unreachable!("a pending native call was started by a call op");
        };
        self.write_native_results(instances, native, call, results)
    }

    /// Moves the results of native call `call`, the top frame's, out of `results` into its
    /// registers and moves the frame past the call.
    fn write_native_results(
        &mut self,
        instances: &[Instance],
        native: (u32, u32),
        call: &op::CallOp,
        results: &mut [Value],
    ) -> Result<(), Diagnostic> {
        let frame = *self.frames.last().expect("a native call has a calling frame");
        if results.len() != call.results.len() {
            let error = Diagnostic::new(
                StatusCode::Internal,
                format!(
                    "native function `{}` returned {} results, expected {}",
                    native_name(instances, native),
                    results.len(),
                    call.results.len()
                ),
            );
            return Err(self.locate(instances, error));
        }
        // Read in place, refs taken out (the caller clears the vector): a `drain` left out of
        // line costs a call about 30 instructions.
        for (index, (slot, value)) in call.results.iter().zip(results.iter_mut()).enumerate() {
            if let Err(got) = self.write_value(frame.i32_base, frame.ref_base, *slot, value) {
                let error = Diagnostic::new(
                    StatusCode::Internal,
                    format!(
                        "native function `{}` returned {got} for result {index}, expected {}",
                        native_name(instances, native),
                        slot.kind.name()
                    ),
                );
                return Err(self.locate(instances, error));
            }
        }
        let next = call.resume.unwrap_or(frame.pc + 1);
        self.frames.last_mut().expect("checked above").pc = next;
        Ok(())
    }

    /// While tracing, opens the span of the frame just pushed for `function` of `instance`,
    /// named `module.function`.
    #[inline(always)]
    fn trace_frame(&mut self, instances: &[Instance], instance: u32, function: u32) {
        if tracing::is_on() {
            self.open_frame_span(instances, instance, function);
        }
    }

    #[cold]
    #[inline(never)]
    fn open_frame_span(&mut self, instances: &[Instance], instance: u32, function: u32) {
        let Ok(module) = bytecode_module(instances, instance) else { return };
        let name = || module.span_name(function as usize);
        self.spans.push((self.frames.len(), tracing::span(tracing::Category::Vm, name, tracing::Args::none)));
    }

    /// Records the spans of the frames that have returned.
    #[cold]
    #[inline(never)]
    fn close_frame_spans(&mut self) {
        while self.spans.last().is_some_and(|(depth, _)| *depth > self.frames.len()) {
            self.spans.pop();
        }
    }

    #[inline]
    fn push_frame(&mut self, instance: u32, function: u32, callee: &LoweredFunction) -> Result<(), Diagnostic> {
        let i32_base = self.i32s.len();
        let ref_base = self.refs.len();
        let i32_end = i32_base + callee.i32_register_count as usize;
        let ref_end = ref_base + callee.ref_register_count as usize;
        if self.frames.len() >= MAX_FRAME_DEPTH || i32_end > MAX_STACK_REGISTERS || ref_end > MAX_STACK_REGISTERS {
            return Err(handlers::stack_overflow(self.frames.len()));
        }
        self.i32s.resize(i32_end, 0);
        self.refs.resize(ref_end, None);
        self.frames.push(Frame { instance, function, pc: 0, i32_base: i32_base as u32, ref_base: ref_base as u32 });
        Ok(())
    }

    /// Stores `value` into the register `slot` of the frame at the given bases, taking a ref out
    /// of it; on a type mismatch returns the value's type name. The value is read where it lies,
    /// field by field: moved out whole, it was read back as one 16-byte load from the two
    /// stores that had just written it, a stall on every result. Always inlined: every native
    /// call's results go through it, and out of line it cost about 45 instructions a result.
    #[inline(always)]
    fn write_value(&mut self, i32_base: u32, ref_base: u32, slot: Slot, value: &mut Value) -> Result<(), String> {
        let i = i32_base as usize + slot.reg as usize;
        match (slot.kind, value) {
            (ValueKind::I32, Value::I32(v)) => self.i32s[i] = *v as u32,
            (ValueKind::F32, Value::F32(v)) => self.i32s[i] = v.to_bits(),
            (ValueKind::I64, Value::I64(v)) => write64(&mut self.i32s, i, *v as u64),
            (ValueKind::F64, Value::F64(v)) => write64(&mut self.i32s, i, v.to_bits()),
            (ValueKind::Ref, Value::Ref(r)) => self.refs[ref_base as usize + slot.reg as usize] = r.take(),
            (_, other) => return Err(mismatch(other)),
        }
        Ok(())
    }

    /// Reads the register `slot` of the frame at the given bases as a value (moving refs out
    /// when the slot says so).
    fn read_value(&mut self, i32_base: u32, ref_base: u32, slot: Slot) -> Value {
        let i = i32_base as usize + slot.reg as usize;
        match slot.kind {
            ValueKind::I32 => Value::I32(self.i32s[i] as i32),
            ValueKind::F32 => Value::F32(f32::from_bits(self.i32s[i])),
            ValueKind::I64 => Value::I64(read64(&self.i32s, i) as i64),
            ValueKind::F64 => Value::F64(f64::from_bits(read64(&self.i32s, i))),
            ValueKind::Ref => {
                let r = &mut self.refs[ref_base as usize + slot.reg as usize];
                Value::Ref(if slot.is_move { r.take() } else { r.clone() })
            }
        }
    }

    /// Copies the value in register `source` of frame `from` to register `destination` of frame
    /// `to` (call arguments, return values): the lowering typed both by the same calling
    /// convention, so the kinds agree and no `Value` is built on the way.
    fn copy_slot(&mut self, from: &Frame, source: Slot, to: &Frame, destination: Slot) {
        let (s, d) = (from.i32_base as usize + source.reg as usize, to.i32_base as usize + destination.reg as usize);
        match source.kind {
            ValueKind::I32 | ValueKind::F32 => self.i32s[d] = self.i32s[s],
            ValueKind::I64 | ValueKind::F64 => {
                self.i32s[d] = self.i32s[s];
                self.i32s[d + 1] = self.i32s[s + 1];
            }
            ValueKind::Ref => {
                let r = &mut self.refs[from.ref_base as usize + source.reg as usize];
                let value = if source.is_move { r.take() } else { r.clone() };
                self.refs[to.ref_base as usize + destination.reg as usize] = value;
            }
        }
    }

    /// Adds where the error arose to an error raised while executing: the source location the
    /// debug database records for the innermost frame's instruction, or, without debug info, the
    /// module, function and bytecode offset. The message stays as the program or op gave it, so
    /// tools can print it exactly as IREE's do.
    fn locate(&self, instances: &[Instance], error: Diagnostic) -> Diagnostic {
        let Some(frame) = self.frames.last() else { return error };
        locate_at(instances, frame.instance, frame.function, frame.pc, error)
    }
}

/// [`Invocation::locate`] at op `pc` of `function` of `instance`.
fn locate_at(instances: &[Instance], instance: u32, function: u32, pc: u32, mut error: Diagnostic) -> Diagnostic {
    if error.location.is_some() {
        return error;
    }
    let Ok(module) = bytecode_module(instances, instance) else { return error };
    let Some(lowered) = module.functions().get(function as usize) else { return error };
    let offset = lowered.offsets.get(pc as usize).copied().unwrap_or(0);
    let name = module.function_name(function as usize);
    error.location = Some(match module.debug_database().and_then(|db| db.file_location(&name, offset)) {
        Some((file, line, column)) => Location::new(file, line.max(0) as u32, column.max(0) as u32),
        None => Location::new(format!("{}.{name}+{offset:#x}", module.name()), 0, 0),
    });
    error
}

/// The jit stack, allocated on first use (zeroed pages, which the system maps only as compiled
/// frames reach them).
#[cfg(rtx_jit)]
fn jit_stack(stack: &mut Vec<u32>) -> *mut u32 {
    if stack.is_empty() {
        *stack = vec![0; MAX_STACK_REGISTERS + crate::jit::RESULT_WORDS as usize];
    }
    stack.as_mut_ptr()
}

/// Checks a host's direct call of a native function against its calling convention: each plain
/// argument by kind, each variadic span as an i32 tuple count followed by that many tuples. (Calls
/// from bytecode were checked at load and link time.) Messages are only formatted on a mismatch.
fn check_native_arguments(
    instances: &[Instance],
    native: (u32, u32),
    cconv: &str,
    arguments: &[Value],
) -> Result<(), Diagnostic> {
    let mismatch = |message: std::fmt::Arguments<'_>| {
        Diagnostic::new(StatusCode::InvalidArgument, format!("calling `{}`: {message}", native_name(instances, native)))
    };
    let cconv = CallingConvention::parse(cconv).map_err(|e| mismatch(format_args!("{e}")))?;
    let mut values = arguments.iter();
    let mut expect = |kind: ValueKind, what: std::fmt::Arguments<'_>| match values.next() {
        Some(value) if value_matches(kind, value) => Ok(value),
        Some(value) => Err(mismatch(format_args!("{what}: expected {} but got {}", kind.name(), value.type_name()))),
        None => Err(mismatch(format_args!("{what}: missing (passed {})", arguments.len()))),
    };
    for (index, item) in cconv.arguments.iter().enumerate() {
        match item {
            CconvItem::Value(kind) => {
                expect(*kind, format_args!("argument {index}"))?;
            }
            CconvItem::Span(fields) => {
                let &Value::I32(count) = expect(ValueKind::I32, format_args!("argument {index} (span count)"))? else {
                    unreachable!("checked as i32")
                };
                for tuple in 0..count.max(0) {
                    for kind in fields {
                        expect(*kind, format_args!("argument {index}, tuple {tuple}"))?;
                    }
                }
            }
        }
    }
    match values.len() {
        0 => Ok(()),
        extra => Err(mismatch(format_args!("{extra} arguments more than the calling convention takes"))),
    }
}

fn value_matches(kind: ValueKind, value: &Value) -> bool {
    matches!(
        (kind, value),
        (ValueKind::I32, Value::I32(_))
            | (ValueKind::I64, Value::I64(_))
            | (ValueKind::F32, Value::F32(_))
            | (ValueKind::F64, Value::F64(_))
            | (ValueKind::Ref, Value::Ref(_))
    )
}

#[inline(always)]
fn read64(registers: &[u32], i: usize) -> u64 {
    registers[i] as u64 | (registers[i + 1] as u64) << 32
}

#[inline(always)]
fn write64(registers: &mut [u32], i: usize, value: u64) {
    registers[i] = value as u32;
    registers[i + 1] = (value >> 32) as u32;
}

fn bytecode_module(instances: &[Instance], instance: u32) -> Result<&Arc<Module>, Diagnostic> {
    match instances.get(instance as usize) {
        Some(Instance::Bytecode { module, .. }) => Ok(module),
        _ => Err(Diagnostic::new(StatusCode::Internal, format!("module {instance} of the context is not bytecode"))),
    }
}

/// The type name a register refused, for the caller's message.
#[cold]
fn mismatch(value: &Value) -> String {
    value.type_name().to_owned()
}

/// The full name (`module.function`) of a native function, for messages.
fn native_name(instances: &[Instance], (instance, function): (u32, u32)) -> String {
    match instances.get(instance as usize) {
        Some(Instance::Native(native)) => format!("{}.{}", native.name(), native.functions()[function as usize].name),
        _ => format!("native function {function} of module {instance}"),
    }
}

/// Calls a native function with checked arguments; its results go to `results` (empty).
fn call_native(
    instances: &[Instance],
    states: &mut [State],
    (instance, function): (u32, u32),
    arguments: Arguments<'_>,
    results: &mut Vec<Value>,
) -> Result<NativeOutcome, Diagnostic> {
    let (Some(Instance::Native(native)), Some(State::Native(state))) =
        (instances.get(instance as usize), states.get_mut(instance as usize))
    else {
        return Err(Diagnostic::new(StatusCode::Internal, format!("module {instance} of the context is not native")));
    };
    if tracing::is_on() {
        return call_native_traced(native, state, function, arguments, results);
    }
    native.call(state, function as usize, arguments, results)
}

/// [`call_native`] in a span, if its calls are traced: out of line, so that the span's drop glue
/// is no cost of the untraced call.
#[cold]
#[inline(never)]
fn call_native_traced(
    native: &NativeInstance,
    state: &mut NativeState,
    function: u32,
    arguments: Arguments<'_>,
    results: &mut Vec<Value>,
) -> Result<NativeOutcome, Diagnostic> {
    let _span = native
        .span_name(function as usize)
        .map(|name| tracing::span(tracing::Category::Vm, || name, tracing::Args::none));
    native.call(state, function as usize, arguments, results)
}
