//! Calls and returns: what the frame loop does when the dispatch loop leaves a frame. Entering a
//! bytecode callee pushes a frame and copies the arguments into it; a return copies the results
//! into the caller's registers (or hands them to the host) and pops the frame; a native call runs
//! the host function on the caller's registers, or parks the invocation on its pending results.

use super::op::{CallOp, Op, Slot};
use super::{bytecode_module, call_native, Frame, Invocation, Pending, Step};
use crate::abi::ValueKind;
use crate::context::{Instance, State};
use crate::native::{Arguments, NativeOutcome};
use crate::refs::Ref;
use crate::value::Value;
use rtx_host::Diagnostic;

/// Where the dispatch loop sends control when it leaves a frame.
pub(super) enum Transfer {
    /// Enter a bytecode function (the caller's pc already points at its call op).
    Enter { instance: u32, function: u32 },
    /// The current frame returned.
    Return,
    /// Call a native function (its arguments are in the caller's registers).
    Native { instance: u32, function: u32 },
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
        self.trace_frame(instances, instance, function);
        let new = *self.frames.last().expect("just pushed");
        for (source, destination) in call.arguments.iter().zip(callee.arguments.iter()) {
            self.copy_slot(&caller, *source, &new, *destination);
        }
        Ok(())
    }

    /// Returns `values` from `frame`, the entry frame, to the host.
    #[inline(always)]
    pub(super) fn return_to_host(&mut self, frame: Frame, values: &[Slot]) -> Vec<Value> {
        let mut results = std::mem::take(&mut self.returned);
        results.extend(values.iter().map(|slot| self.read_value(frame.i32_base, frame.ref_base, *slot)));
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
        if !self.spans.is_empty() {
            self.close_frame_spans();
        }
        self.i32s.truncate(frame.i32_base as usize);
        self.refs.truncate(frame.ref_base as usize);
    }

    /// Runs native function `native` on the arguments of `call`, the top frame's call op, read
    /// from the frame's registers; `Some` when it answers later.
    #[inline(always)]
    pub(super) fn call_native(
        &mut self,
        instances: &[Instance],
        states: &mut [State],
        native: (u32, u32),
        call: &CallOp,
    ) -> Result<Option<Step>, Diagnostic> {
        let mut results = std::mem::take(&mut self.native_results);
        let frame = *self.frames.last().expect("a native call has a calling frame");
        let (i32_base, ref_base) = (frame.i32_base as usize, frame.ref_base as usize);
        let arguments = Arguments::registers(&call.passed, &self.i32s[i32_base..], &self.refs[ref_base..]);
        let outcome = call_native(instances, states, native, arguments, &mut results);
        release_moved_refs(&call.arguments, &mut self.refs[ref_base..]);
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

/// Empties the registers of the refs a finished native call moved (its last use of them): the
/// callee read them in place and cloned what it keeps. Always inlined: it runs after every
/// native call.
#[inline(always)]
fn release_moved_refs(arguments: &[Slot], refs: &mut [Option<Ref>]) {
    for slot in arguments {
        if slot.kind == ValueKind::Ref && slot.is_move {
            refs[slot.reg as usize] = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::buffer::ByteBuffer;
    use crate::interpreter::lower::passed;
    use crate::interpreter::op::Passed;
    use crate::native::Arg;

    fn slot(kind: ValueKind, reg: u16, is_move: bool) -> Slot {
        Slot { kind, reg, is_move }
    }

    fn buffer() -> Ref {
        Ref::Buffer(ByteBuffer::from_bytes(b"x").unwrap())
    }

    fn count(r: &Option<Ref>) -> usize {
        Arc::strong_count(r.as_ref().and_then(Ref::as_buffer).expect("a buffer"))
    }

    #[test]
    fn natives_read_registers_in_place_and_moved_refs_go_after_the_call() {
        // host(i32 r0, ref r0 (kept), span of 2 tuples (ref, i32), ref r3 (moved), i64 r3:r4)
        let arguments = [
            slot(ValueKind::I32, 0, false),
            slot(ValueKind::Ref, 0, false),
            slot(ValueKind::Ref, 1, false),
            slot(ValueKind::I32, 1, false),
            slot(ValueKind::Ref, 2, false),
            slot(ValueKind::I32, 2, false),
            slot(ValueKind::Ref, 3, true),
            slot(ValueKind::I64, 3, false),
        ];
        let passed = passed(&arguments, &[None, None, Some((2, 2)), None, None]);
        assert_eq!(passed.len(), 9, "the span's count comes before its tuples");
        assert_eq!(passed[2], Passed::Count(2));
        let regs = [7, 8, 9, 0x0000_0005, 0xffff_ffff];
        let mut refs = vec![Some(buffer()), Some(buffer()), None, Some(buffer())];
        let originals = refs.clone();
        let values = Arguments::registers(&passed, &regs, &refs).to_values();
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
                Value::Ref(Some(_)),
                Value::I64(-4_294_967_291)
            ]
        ));
        drop(values);
        let read = Arguments::registers(&passed, &regs, &refs);
        let Some(Arg::Ref(Some(first))) = read.get(1) else { panic!("argument 1 is a ref") };
        assert!(first.ptr_eq(originals[0].as_ref().unwrap()));
        assert_eq!(count(&originals[0]), 2, "borrowed, not cloned");
        assert!(read.get(9).is_none());
        release_moved_refs(&arguments, &mut refs);
        for reg in [0, 1] {
            assert!(refs[reg].as_ref().unwrap().ptr_eq(originals[reg].as_ref().unwrap()), "register {reg} kept");
        }
        assert!(refs[2].is_none() && refs[3].is_none(), "null stays null, the moved ref is released");
        assert_eq!(count(&originals[3]), 1, "the moved ref was the register's");
    }

    #[test]
    fn plain_calls_pass_their_arguments_as_they_are() {
        let arguments = [slot(ValueKind::F32, 0, false), slot(ValueKind::F64, 2, false), slot(ValueKind::Ref, 0, true)];
        let passed = passed(&arguments, &[]);
        assert_eq!(passed.to_vec(), arguments.map(Passed::Register));
        let regs = [1.5f32.to_bits(), 0, (-2.25f64).to_bits() as u32, ((-2.25f64).to_bits() >> 32) as u32];
        let refs = [None];
        let read = Arguments::registers(&passed, &regs, &refs);
        assert_eq!(read.to_values(), [Value::F32(1.5), Value::F64(-2.25), Value::Ref(None)]);
        let host = [Value::F32(1.5), Value::F64(-2.25), Value::Ref(None)];
        let given = Arguments::values(&host);
        assert_eq!(given.iter().map(|arg| arg.type_name().to_owned()).collect::<Vec<_>>(), ["f32", "f64", "null"]);
        assert_eq!(given.to_values(), host);
    }
}
