//! Calls and returns: what the frame loop does when the dispatch loop leaves a frame. Entering a
//! bytecode callee pushes a frame and copies the arguments into it; a return copies the results
//! into the caller's registers (or hands them to the host) and pops the frame; a native call runs
//! the host function, or parks the invocation on its pending results.

use super::cold::take_or_clone;
use super::op::{CallOp, Op, RefReg, Slot};
use super::{bytecode_module, call_native, read64, Frame, Invocation, Pending, Step};
use crate::host::Diagnostic;
use crate::vm::abi::ValueKind;
use crate::vm::context::{Instance, State};
use crate::vm::native::NativeOutcome;
use crate::vm::refs::Ref;
use crate::vm::value::Value;

/// Where the dispatch loop sends control when it leaves a frame.
pub(super) enum Transfer {
    /// Enter a bytecode function (the caller's pc already points at its call op).
    Enter { instance: u32, function: u32 },
    /// The current frame returned.
    Return,
    /// Call a native function with these arguments.
    Native { instance: u32, function: u32, arguments: Vec<Value> },
}

impl Invocation {
    /// Pushes the frame of bytecode function `function` of `instance` and passes it the
    /// arguments of `call`, made from `caller`.
    #[inline(always)]
    pub(super) fn enter(
        &mut self,
        instances: &[Instance],
        caller: Frame,
        call: &CallOp,
        instance: u32,
        function: u32,
    ) -> Result<(), Diagnostic> {
        let callee = &bytecode_module(instances, instance)?.functions()[function as usize];
        if let Err(e) = self.push_frame(instance, function, callee) {
            return Err(self.locate(instances, e));
        }
        let new = *self.frames.last().expect("just pushed");
        for (source, destination) in call.arguments.iter().zip(callee.arguments.iter()) {
            self.copy_slot(&caller, *source, &new, *destination);
        }
        Ok(())
    }

    /// Returns `values` from `frame`, the entry frame, to the host.
    #[inline(always)]
    pub(super) fn return_to_host(&mut self, frame: Frame, values: &[Slot]) -> Vec<Value> {
        let results = values.iter().map(|slot| self.read_value(frame.i32_base, frame.ref_base, *slot)).collect();
        self.pop_frame(frame);
        results
    }

    /// Returns `values` from `frame` into the result registers of its caller, and continues the
    /// caller after its call.
    #[inline(always)]
    pub(super) fn return_to_caller(
        &mut self,
        instances: &[Instance],
        frame: Frame,
        values: &[Slot],
    ) -> Result<(), Diagnostic> {
        let caller = self.frames[self.frames.len() - 2];
        let caller_module = bytecode_module(instances, caller.instance)?;
        let Op::Call(call) = &caller_module.functions()[caller.function as usize].ops[caller.pc as usize] else {
            unreachable!("a caller frame stops at its call op")
        };
        // The caller's registers lie below the callee's: copy straight across.
        for (source, destination) in values.iter().zip(call.results.iter()) {
            self.copy_slot(&frame, *source, &caller, *destination);
        }
        self.pop_frame(frame);
        self.frames.last_mut().expect("caller").pc = call.resume.unwrap_or(caller.pc + 1);
        Ok(())
    }

    /// Drops `frame`, the top frame, and its registers.
    #[inline(always)]
    fn pop_frame(&mut self, frame: Frame) {
        self.frames.pop();
        self.i32s.truncate(frame.i32_base as usize);
        self.refs.truncate(frame.ref_base as usize);
    }

    /// Runs native function `native` on `arguments`; `Some` when it answers later.
    pub(super) fn call_native(
        &mut self,
        instances: &[Instance],
        states: &mut [State],
        native: (u32, u32),
        mut arguments: Vec<Value>,
    ) -> Result<Option<Step>, Diagnostic> {
        let mut results = std::mem::take(&mut self.native_results);
        let outcome = call_native(instances, states, native, &arguments, &mut results);
        arguments.clear();
        self.native_arguments = arguments;
        let step = match outcome {
            Ok(NativeOutcome::Ready) => self.finish_native_call(instances, native, &mut results).map(|()| None),
            Ok(NativeOutcome::Pending(pending)) => {
                let wait = pending.as_untyped().clone();
                self.pending = Some(Pending { results: pending, native });
                Ok(Some(Step::Wait(wait)))
            }
            Err(e) => Err(self.locate(instances, e)),
        };
        results.clear();
        self.native_results = results;
        step
    }
}

/// Gathers a native call's arguments into `values` (empty): plain values in order, and for each
/// variadic span its tuple count followed by the flattened tuples.
pub(super) fn native_arguments(call: &CallOp, regs: &mut [u32], refs: &mut [Option<Ref>], values: &mut Vec<Value>) {
    let mut slots = call.arguments.iter();
    let mut read = |slot: &Slot| match slot.kind {
        ValueKind::I32 => Value::I32(regs[slot.reg as usize] as i32),
        ValueKind::F32 => Value::F32(f32::from_bits(regs[slot.reg as usize])),
        ValueKind::I64 => Value::I64(read64(regs, slot.reg as usize) as i64),
        ValueKind::F64 => Value::F64(f64::from_bits(read64(regs, slot.reg as usize))),
        ValueKind::Ref => Value::Ref(take_or_clone(refs, RefReg { reg: slot.reg, is_move: slot.is_move })),
    };
    if call.segments.is_empty() {
        values.extend(slots.map(&mut read));
        return;
    }
    for segment in call.segments.iter() {
        match *segment {
            None => values.extend(slots.next().map(&mut read)),
            Some((count, fields)) => {
                values.push(Value::I32(count as i32));
                values.extend(slots.by_ref().take(count as usize * fields as usize).map(&mut read));
            }
        }
    }
}
