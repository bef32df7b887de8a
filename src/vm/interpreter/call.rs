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

    /// Runs native function `native` on `arguments`, gathered for `call`, the top frame's call
    /// op; `Some` when it answers later.
    pub(super) fn call_native(
        &mut self,
        instances: &[Instance],
        states: &mut [State],
        native: (u32, u32),
        call: &CallOp,
        mut arguments: Vec<Value>,
    ) -> Result<Option<Step>, Diagnostic> {
        let mut results = std::mem::take(&mut self.native_results);
        let outcome = call_native(instances, states, native, &arguments, &mut results);
        let frame = *self.frames.last().expect("a native call has a calling frame");
        give_back_lent_refs(call, &mut self.refs[frame.ref_base as usize..], &mut arguments);
        arguments.clear();
        self.native_arguments = arguments;
        let step = match outcome {
            Ok(NativeOutcome::Ready) => self.write_native_results(instances, native, call, &mut results).map(|()| None),
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
/// variadic span its tuple count followed by the flattened tuples. Refs are moved out of their
/// registers when the call lends them ([`give_back_lent_refs`] returns them) or moves them, and
/// cloned otherwise.
pub(super) fn native_arguments(call: &CallOp, regs: &[u32], refs: &mut [Option<Ref>], values: &mut Vec<Value>) {
    values.reserve(call.arguments.len() + call.segments.len());
    let lend = call.lends_refs;
    if call.segments.is_empty() {
        for slot in call.arguments.iter() {
            values.push(argument(slot, regs, refs, lend));
        }
        return;
    }
    let mut slots = call.arguments.iter();
    for segment in call.segments.iter() {
        let tuple_values = match *segment {
            None => 1,
            Some((count, fields)) => {
                values.push(Value::I32(count as i32));
                count as usize * fields as usize
            }
        };
        for slot in slots.by_ref().take(tuple_values) {
            values.push(argument(slot, regs, refs, lend));
        }
    }
}

/// The value of argument `slot`, its ref moved out when the call moves or lends it.
#[inline(always)]
fn argument(slot: &Slot, regs: &[u32], refs: &mut [Option<Ref>], lend: bool) -> Value {
    match slot.kind {
        ValueKind::I32 => Value::I32(regs[slot.reg as usize] as i32),
        ValueKind::F32 => Value::F32(f32::from_bits(regs[slot.reg as usize])),
        ValueKind::I64 => Value::I64(read64(regs, slot.reg as usize) as i64),
        ValueKind::F64 => Value::F64(f64::from_bits(read64(regs, slot.reg as usize))),
        ValueKind::Ref => Value::Ref(take_or_clone(refs, RefReg { reg: slot.reg, is_move: slot.is_move || lend })),
    }
}

/// Whether a call passing `arguments` lends its refs to a native callee (see
/// [`CallOp::lends_refs`]): some are not moved, and no register is passed twice.
pub(super) fn lends_refs(arguments: &[Slot]) -> bool {
    let mut registers: Vec<_> =
        arguments.iter().filter(|slot| slot.kind == ValueKind::Ref).map(|slot| slot.reg).collect();
    registers.sort_unstable();
    registers.windows(2).all(|pair| pair[0] != pair[1])
        && arguments.iter().any(|slot| slot.kind == ValueKind::Ref && !slot.is_move)
}

/// Puts the refs a call lent its native callee (those it did not move) back into their
/// registers, from the arguments `native_arguments` gathered into `values`.
fn give_back_lent_refs(call: &CallOp, refs: &mut [Option<Ref>], values: &mut [Value]) {
    if !call.lends_refs {
        return;
    }
    let mut give_back = |slot: &Slot, value: &mut Value| {
        if let (ValueKind::Ref, false, Value::Ref(lent)) = (slot.kind, slot.is_move, value) {
            refs[slot.reg as usize] = lent.take();
        }
    };
    let mut values = values.iter_mut();
    if call.segments.is_empty() {
        call.arguments.iter().zip(values).for_each(|(slot, value)| give_back(slot, value));
        return;
    }
    let mut slots = call.arguments.iter();
    for segment in call.segments.iter() {
        let tuple_values = match *segment {
            None => 1,
            Some((count, fields)) => {
                values.next(); // the tuple count
                count as usize * fields as usize
            }
        };
        slots.by_ref().take(tuple_values).zip(values.by_ref()).for_each(|(slot, value)| give_back(slot, value));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::vm::buffer::Buffer;
    use crate::vm::interpreter::op::Callee;

    fn slot(kind: ValueKind, reg: u16, is_move: bool) -> Slot {
        Slot { kind, reg, is_move }
    }

    fn call(segments: Vec<Option<(u16, u16)>>, arguments: Vec<Slot>, lends_refs: bool) -> CallOp {
        CallOp {
            callee: Callee::Import(0),
            segments: segments.into(),
            arguments: arguments.into(),
            results: Box::default(),
            resume: None,
            lends_refs,
        }
    }

    fn buffer() -> Ref {
        Ref::Buffer(Buffer::from_bytes(b"x").unwrap())
    }

    fn count(r: &Option<Ref>) -> usize {
        Arc::strong_count(r.as_ref().and_then(Ref::as_buffer).expect("a buffer"))
    }

    #[test]
    fn lent_refs_go_to_the_callee_without_clones_and_come_back_unless_moved() {
        // host(i32 r0, ref r0 (kept), span of 2 tuples (ref, i32), ref r3 (moved))
        let call = call(
            vec![None, None, Some((2, 2)), None],
            vec![
                slot(ValueKind::I32, 0, false),
                slot(ValueKind::Ref, 0, false),
                slot(ValueKind::Ref, 1, false),
                slot(ValueKind::I32, 1, false),
                slot(ValueKind::Ref, 2, false),
                slot(ValueKind::I32, 2, false),
                slot(ValueKind::Ref, 3, true),
            ],
            true,
        );
        let regs = [7, 8, 9];
        let mut refs = vec![Some(buffer()), Some(buffer()), None, Some(buffer())];
        let originals = refs.clone();
        let mut values = Vec::new();
        native_arguments(&call, &regs, &mut refs, &mut values);
        assert!(refs.iter().all(Option::is_none), "every ref was moved out for the call");
        assert_eq!(count(&originals[0]), 2, "lent, not cloned");
        assert!(matches!(
            values[..],
            [
                Value::I32(7),
                Value::Ref(Some(_)),
                Value::I32(2),
                Value::Ref(Some(_)),
                Value::I32(8),
                Value::Ref(None),
                Value::I32(9),
                Value::Ref(Some(_))
            ]
        ));
        give_back_lent_refs(&call, &mut refs, &mut values);
        for reg in [0, 1] {
            assert!(refs[reg].as_ref().unwrap().ptr_eq(originals[reg].as_ref().unwrap()), "register {reg} is back");
        }
        assert!(refs[2].is_none() && refs[3].is_none(), "null stays null, the moved ref stays with the callee");
        drop(values);
        assert_eq!(count(&originals[3]), 1, "the moved ref went with the arguments");
    }

    #[test]
    fn calls_lend_refs_they_keep_and_pass_once() {
        let (kept, moved, other) =
            (slot(ValueKind::Ref, 0, false), slot(ValueKind::Ref, 0, true), slot(ValueKind::Ref, 1, false));
        assert!(lends_refs(&[kept, slot(ValueKind::I32, 0, false), other]));
        assert!(!lends_refs(&[kept, moved]), "register 0 passed twice");
        assert!(!lends_refs(&[moved]), "nothing to give back");
        assert!(!lends_refs(&[slot(ValueKind::I64, 0, false)]));
    }

    #[test]
    fn a_register_passed_twice_is_cloned_and_left_in_place() {
        let arguments = vec![slot(ValueKind::Ref, 0, false), slot(ValueKind::Ref, 0, true)];
        assert!(!lends_refs(&arguments));
        let call = call(Vec::new(), arguments, false);
        let mut refs = vec![Some(buffer())];
        let original = refs[0].clone();
        let mut values = Vec::new();
        native_arguments(&call, &[], &mut refs, &mut values);
        assert!(matches!(values[..], [Value::Ref(Some(_)), Value::Ref(Some(_))]), "both uses see the ref");
        give_back_lent_refs(&call, &mut refs, &mut values);
        assert!(refs[0].is_none(), "moved by its last use");
        assert_eq!(count(&original), 3);
    }
}
