//! The dispatch loop.
//!
//! The loop walks a pointer over the function's ops and reads registers without bounds checks:
//! the verifier and the lowering proved every register field and branch target in range (see the
//! SAFETY notes). Only scalar ops and branches live here; everything on refs, globals, buffers
//! and lists runs out of line in [`super::cold`], so that the values the loop needs every op stay
//! in machine registers. The loop comes in two instances, with and without the budget countdown.
//! Errors leave the loop through `fail!`, which records the pc so the error can name the
//! instruction and its source location.

use super::cold::{self, error, take_or_clone};
use super::op::{CallOp, Callee, Moves, Op, RefReg, Reg, Target};
use super::scalar;
use super::{bytecode_module, call_native, read64, Invocation, Pending, Step, UNLIMITED};
use crate::host::{Diagnostic, StatusCode};
use crate::vm::abi::ValueKind;
use crate::vm::context::{Instance, Resolved, State};
use crate::vm::native::NativeOutcome;
use crate::vm::refs::Ref;
use crate::vm::value::Value;

/// What the inner loop hands to the frame loop.
enum Transfer {
    /// Enter a bytecode function (the caller's pc already points at its call op).
    Enter { instance: u32, function: u32 },
    /// The current frame returned.
    Return,
    /// Call a native function with these arguments.
    Native { instance: u32, function: u32, arguments: Vec<Value> },
}

impl Invocation {
    pub(super) fn execute(&mut self, instances: &[Instance], states: &mut [State]) -> Result<Step, Diagnostic> {
        // An unlimited budget gets a loop without the countdown on every back edge.
        if self.budget == UNLIMITED {
            self.execute_with::<false>(instances, states)
        } else {
            self.execute_with::<true>(instances, states)
        }
    }

    fn execute_with<const BUDGETED: bool>(
        &mut self,
        instances: &[Instance],
        states: &mut [State],
    ) -> Result<Step, Diagnostic> {
        loop {
            let frame = *self.frames.last().expect("an executing invocation has a frame");
            let module = bytecode_module(instances, frame.instance)?;
            let Some(Instance::Bytecode { imports, .. }) = instances.get(frame.instance as usize) else {
                return Err(error(StatusCode::Internal, "frame of a non-bytecode module"));
            };
            let Some(State::Bytecode(state)) = states.get_mut(frame.instance as usize) else {
                return Err(error(StatusCode::Internal, "frame without bytecode state"));
            };
            let function = &module.functions()[frame.function as usize];
            let ops = &function.ops[..];
            let i32_base = frame.i32_base as usize;
            let ref_base = frame.ref_base as usize;
            let i32_end = i32_base + function.i32_register_count as usize;
            let ref_end = ref_base + function.ref_register_count as usize;
            let base = ops.as_ptr();
            // SAFETY: a frame's saved pc is an op index of its function: 0 for a new frame, a call
            // op for a caller, or a resume point the lowering resolved from a verified block.
            let mut ip = unsafe { base.add(frame.pc as usize) };
            // The op index of `ip`, for everything that leaves the loop.
            let pc_of = |ip: *const Op| (ip as usize - base as usize) / std::mem::size_of::<Op>();
            let remaps = &function.remaps[..];
            let mut budget = self.budget;
            let transfer = {
                let regs = &mut self.i32s[i32_base..i32_end];
                let mut env = cold::Env { refs: &mut self.refs[ref_base..ref_end], state, module };
                macro_rules! fail {
                    ($error:expr) => {{
                        let error = $error;
                        self.budget = budget;
                        self.frames.last_mut().expect("executing").pc = pc_of(ip) as u32;
                        return Err(self.locate(instances, error));
                    }};
                }
                macro_rules! r#try {
                    ($e:expr) => {
                        match $e {
                            Ok(v) => v,
                            Err(e) => fail!(e),
                        }
                    };
                }
                macro_rules! r32 {
                    ($r:expr) => {
                        *register(regs, $r)
                    };
                }
                macro_rules! r64 {
                    ($r:expr) => {{
                        let r = $r;
                        *register(regs, r) as u64 | (*register(regs, r + 1) as u64) << 32
                    }};
                }
                macro_rules! w64 {
                    ($r:expr, $v:expr) => {{
                        let (r, v) = ($r, $v);
                        *register(regs, r) = v as u32;
                        *register(regs, r + 1) = (v >> 32) as u32;
                    }};
                }
                macro_rules! jump {
                    ($target:expr) => {{
                        let target: &Target = $target;
                        if BUDGETED && target.back() {
                            if budget == 0 {
                                fail!(budget_exhausted());
                            }
                            budget -= 1;
                        }
                        match target.moves {
                            Moves::None => {}
                            Moves::One(s, d) => *register(regs, d) = *register(regs, s),
                            Moves::Many(index) => {
                                let remap = &remaps[index as usize];
                                for &(s, d) in remap.ints.iter() {
                                    *register(regs, d) = *register(regs, s);
                                }
                                if !remap.refs.is_empty() {
                                    cold::move_refs(&remap.refs, env.refs);
                                }
                            }
                        }
                        // SAFETY: the lowering computed `delta` from this op's index to the op that
                        // follows a verified block marker, so the result is an op of this function.
                        ip = unsafe { ip.byte_offset(target.delta as isize) };
                        continue;
                    }};
                }
                loop {
                    debug_assert!(pc_of(ip) < ops.len());
                    // SAFETY: `ip` always points at an op of this function: it starts at a saved
                    // pc, branches set it to op indices the lowering resolved from verified block
                    // targets, and it only steps to the next op after an op that is not a
                    // terminator, while the verifier proved the function's last op is a terminator
                    // (`vm.fail` with status 0, the one terminator that falls through, checks the
                    // bound).
                    match unsafe { &*ip } {
                        Op::AddI32 { a, b, d } => r32!(*d) = scalar::add_i32(r32!(*a), r32!(*b)),
                        Op::SubI32 { a, b, d } => r32!(*d) = scalar::sub_i32(r32!(*a), r32!(*b)),
                        Op::MulI32 { a, b, d } => r32!(*d) = scalar::mul_i32(r32!(*a), r32!(*b)),
                        Op::AndI32 { a, b, d } => r32!(*d) = scalar::and_i32(r32!(*a), r32!(*b)),
                        Op::OrI32 { a, b, d } => r32!(*d) = scalar::or_i32(r32!(*a), r32!(*b)),
                        Op::XorI32 { a, b, d } => r32!(*d) = scalar::xor_i32(r32!(*a), r32!(*b)),
                        Op::ShlI32 { a, b, d } => r32!(*d) = scalar::shl_i32(r32!(*a), r32!(*b)),
                        Op::ShrI32S { a, b, d } => r32!(*d) = scalar::shr_i32_s(r32!(*a), r32!(*b)),
                        Op::ShrI32U { a, b, d } => r32!(*d) = scalar::shr_i32_u(r32!(*a), r32!(*b)),
                        Op::CmpEqI32 { a, b, d } => r32!(*d) = scalar::cmp_eq_i32(r32!(*a), r32!(*b)),
                        Op::CmpNeI32 { a, b, d } => r32!(*d) = scalar::cmp_ne_i32(r32!(*a), r32!(*b)),
                        Op::AddF32 { a, b, d } => r32!(*d) = scalar::add_f32(r32!(*a), r32!(*b)),
                        Op::SubF32 { a, b, d } => r32!(*d) = scalar::sub_f32(r32!(*a), r32!(*b)),
                        Op::MulF32 { a, b, d } => r32!(*d) = scalar::mul_f32(r32!(*a), r32!(*b)),
                        Op::AddI64 { a, b, d } => w64!(*d, scalar::add_i64(r64!(*a), r64!(*b))),
                        Op::MulI64 { a, b, d } => w64!(*d, scalar::mul_i64(r64!(*a), r64!(*b))),
                        Op::CmpLtI32S { a, b, d } => r32!(*d) = scalar::cmp_lt_i32_s(r32!(*a), r32!(*b)),
                        Op::CmpLtI64S { a, b, d } => r32!(*d) = scalar::cmp_lt_i64_s(r64!(*a), r64!(*b)),
                        Op::CmpEqI64 { a, b, d } => r32!(*d) = scalar::cmp_eq_i64(r64!(*a), r64!(*b)),
                        Op::Const32 { value, d } => r32!(*d) = *value,
                        Op::Const64 { value, d } => w64!(*d, *value),
                        Op::Un32 { f, a, d } => r32!(*d) = f(r32!(*a)),
                        Op::Bin32 { f, a, b, d } => r32!(*d) = f(r32!(*a), r32!(*b)),
                        Op::Tern32 { f, a, b, c, d } => r32!(*d) = f(r32!(*a), r32!(*b), r32!(*c)),
                        Op::Un64 { f, a, d } => w64!(*d, f(r64!(*a))),
                        Op::Bin64 { f, a, b, d } => w64!(*d, f(r64!(*a), r64!(*b))),
                        Op::Tern64 { f, a, b, c, d } => w64!(*d, f(r64!(*a), r64!(*b), r64!(*c))),
                        Op::Shift64 { f, a, b, d } => w64!(*d, f(r64!(*a), r32!(*b))),
                        Op::Narrow { f, a, d } => r32!(*d) = f(r64!(*a)),
                        Op::Widen { f, a, d } => w64!(*d, f(r32!(*a))),
                        Op::Cmp64 { f, a, b, d } => r32!(*d) = f(r64!(*a), r64!(*b)),
                        Op::Div32 { f, a, b, d } => match f(r32!(*a), r32!(*b)) {
                            Some(v) => r32!(*d) = v,
                            None => fail!(division_error(r32!(*a) as i32 as i64, r32!(*b) as i32 as i64)),
                        },
                        Op::Div64 { f, a, b, d } => match f(r64!(*a), r64!(*b)) {
                            Some(v) => w64!(*d, v),
                            None => fail!(division_error(r64!(*a) as i64, r64!(*b) as i64)),
                        },
                        Op::Select32 { c, t, f, d } => r32!(*d) = if r32!(*c) != 0 { r32!(*t) } else { r32!(*f) },
                        Op::Select64 { c, t, f, d } => w64!(*d, if r32!(*c) != 0 { r64!(*t) } else { r64!(*f) }),
                        Op::Cold(op) => r#try!(cold::execute(op, regs, &mut env)),

                        Op::Br(target) | Op::Yield(target) => jump!(target),
                        #[cfg(rtx_jit)]
                        Op::Native(entry) => {
                            // SAFETY: the entry is code the loop compiler emitted for this op of
                            // this function (see `crate::vm::jit`): it reads and writes only
                            // registers the verifier proved inside this frame's i32 bank, which
                            // `regs` is, and returns the index of an op of this function.
                            let exit = unsafe { entry(regs.as_mut_ptr(), budget) };
                            // Unbudgeted, the count only runs down from `UNLIMITED`: keep that.
                            if BUDGETED {
                                budget = exit.budget;
                            }
                            let resume = (exit.op & !crate::vm::jit::Exit::EXHAUSTED) as usize;
                            debug_assert!(resume < ops.len());
                            // SAFETY: as above, `resume` is an op index of this function.
                            ip = unsafe { base.add(resume) };
                            if exit.op & crate::vm::jit::Exit::EXHAUSTED != 0 {
                                fail!(budget_exhausted());
                            }
                            continue;
                        }
                        Op::AddI32Br { a, b, d, t } => {
                            r32!(*d) = scalar::add_i32(r32!(*a), r32!(*b));
                            jump!(t)
                        }
                        Op::Bin32Br { f, a, b, d, t } => {
                            r32!(*d) = f(r32!(*a), r32!(*b));
                            jump!(t)
                        }
                        Op::AddI64Br { a, b, d, t } => {
                            w64!(*d, scalar::add_i64(r64!(*a), r64!(*b)));
                            jump!(t)
                        }
                        Op::CondBr { c, when, t } => {
                            if (r32!(*c) != 0) == *when {
                                jump!(t)
                            }
                        }
                        Op::CondBrLtI32S { a, b, d, when, t } => {
                            let c = scalar::cmp_lt_i32_s(r32!(*a), r32!(*b));
                            r32!(*d) = c;
                            if (c != 0) == *when {
                                jump!(t)
                            }
                        }
                        Op::CondBrLtI64S { a, b, d, when, t } => {
                            let c = scalar::cmp_lt_i64_s(r64!(*a), r64!(*b));
                            r32!(*d) = c;
                            if (c != 0) == *when {
                                jump!(t)
                            }
                        }
                        Op::CondBrCmp32 { f, a, b, d, when, t } => {
                            let c = f(r32!(*a), r32!(*b));
                            r32!(*d) = c;
                            if (c != 0) == *when {
                                jump!(t)
                            }
                        }
                        Op::CondBrCmp64 { f, a, b, d, when, t } => {
                            let c = f(r64!(*a), r64!(*b));
                            r32!(*d) = c;
                            if (c != 0) == *when {
                                jump!(t)
                            }
                        }
                        Op::BrTable { index, default, cases } => {
                            let i = r32!(*index) as i32;
                            if i >= 0 && (i as usize) < cases.len() {
                                jump!(&cases[i as usize])
                            } else {
                                jump!(default)
                            }
                        }
                        Op::Return { .. } => break Transfer::Return,
                        Op::Fail { status, message } => {
                            let code = r32!(*status);
                            if code != 0 {
                                let code = StatusCode::from_u32(code).unwrap_or(StatusCode::Unknown);
                                fail!(error(code, &**message));
                            }
                            // Status 0 continues with the next op, as in IREE; there must be one.
                            if pc_of(ip) + 1 >= ops.len() {
                                fail!(error(StatusCode::Internal, "`vm.fail` with status 0 at the end of a function"));
                            }
                        }
                        Op::ImportResolved { import, d } => {
                            r32!(*d) = imports.get(*import as usize).is_some_and(Option::is_some) as u32
                        }
                        Op::Call(call) => {
                            let target = match call.callee {
                                Callee::Internal(function) => Resolved::Bytecode { instance: frame.instance, function },
                                Callee::Import(import) => match imports.get(import as usize).copied().flatten() {
                                    Some(target) => target,
                                    None => fail!(error(
                                        StatusCode::NotFound,
                                        format!(
                                            "optional import `{}` is not resolved in this context",
                                            module.imported_functions()[import as usize].full_name
                                        )
                                    )),
                                },
                            };
                            match target {
                                Resolved::Bytecode { instance, function } => {
                                    break Transfer::Enter { instance, function }
                                }
                                Resolved::Native { instance, function } => {
                                    let mut arguments = std::mem::take(&mut self.native_arguments);
                                    native_arguments(call, regs, env.refs, &mut arguments);
                                    break Transfer::Native { instance, function, arguments };
                                }
                            }
                        }
                    }
                    // SAFETY: the op just executed is not a terminator, so another op follows it
                    // (see the dispatch above), or it is a conditional branch not taken, which the
                    // lowering only lets fall through to an op it placed next (the other
                    // destination's first op, or an explicit `Br` to it).
                    ip = unsafe { ip.add(1) };
                }
            };
            let pc = pc_of(ip);
            self.budget = budget;
            self.frames.last_mut().expect("executing").pc = pc as u32;
            // Calls spend budget too: recursion, and loops whose back edge is a yieldable call's
            // resume point, take no backward branch.
            if self.budget != UNLIMITED && !matches!(transfer, Transfer::Return) {
                if self.budget == 0 {
                    let e = error(StatusCode::DeadlineExceeded, "the invocation's branch budget is exhausted");
                    return Err(self.locate(instances, e));
                }
                self.budget -= 1;
            }
            match transfer {
                Transfer::Enter { instance, function } => {
                    let Op::Call(call) = &ops[pc] else { unreachable!("entered from a call op") };
                    let callee = &bytecode_module(instances, instance)?.functions()[function as usize];
                    if let Err(e) = self.push_frame(instance, function, callee) {
                        return Err(self.locate(instances, e));
                    }
                    let new = *self.frames.last().expect("just pushed");
                    for (source, destination) in call.arguments.iter().zip(callee.arguments.iter()) {
                        self.copy_slot(&frame, *source, &new, *destination);
                    }
                }
                Transfer::Return => {
                    let Op::Return { values } = &ops[pc] else { unreachable!("returned from a return op") };
                    self.frames.pop();
                    let results = match self.frames.last().copied() {
                        None => Some(
                            values.iter().map(|slot| self.read_value(frame.i32_base, frame.ref_base, *slot)).collect(),
                        ),
                        Some(caller) => {
                            let caller_module = bytecode_module(instances, caller.instance)?;
                            let Op::Call(call) =
                                &caller_module.functions()[caller.function as usize].ops[caller.pc as usize]
                            else {
                                unreachable!("a caller frame stops at its call op")
                            };
                            // The caller's registers lie below the callee's: copy straight across.
                            for (source, destination) in values.iter().zip(call.results.iter()) {
                                self.copy_slot(&frame, *source, &caller, *destination);
                            }
                            self.frames.last_mut().expect("caller").pc = call.resume.unwrap_or(caller.pc + 1);
                            None
                        }
                    };
                    self.i32s.truncate(frame.i32_base as usize);
                    self.refs.truncate(frame.ref_base as usize);
                    if let Some(results) = results {
                        return Ok(Step::Done(results));
                    }
                }
                Transfer::Native { instance, function, mut arguments } => {
                    let outcome = call_native(instances, states, (instance, function), &arguments);
                    arguments.clear();
                    self.native_arguments = arguments;
                    match outcome {
                        Ok(NativeOutcome::Ready(results)) => {
                            self.finish_native_call(instances, (instance, function), results)?
                        }
                        Ok(NativeOutcome::Pending(results)) => {
                            let wait = results.as_untyped().clone();
                            self.pending = Some(Pending { results, native: (instance, function) });
                            return Ok(Step::Wait(wait));
                        }
                        Err(e) => return Err(self.locate(instances, e)),
                    }
                }
            }
        }
    }
}

/// One i32-bank register of the current frame, without a bounds check.
#[inline(always)]
fn register(registers: &mut [u32], ordinal: Reg) -> &mut u32 {
    debug_assert!((ordinal as usize) < registers.len());
    // SAFETY: `registers` is exactly the frame's i32 bank (`i32_register_count` long) and every
    // ordinal an op holds was proved in range at load: the verifier checks each register field
    // against the function's register count (an i64/f64 pair as `n + 1 < count`), and the lowering
    // does the same for call, return and native-call slots it types itself.
    unsafe { registers.get_unchecked_mut(ordinal as usize) }
}

fn budget_exhausted() -> Diagnostic {
    error(StatusCode::DeadlineExceeded, "the invocation's branch budget is exhausted (Invocation::set_budget)")
}

fn division_error(lhs: i64, rhs: i64) -> Diagnostic {
    if rhs == 0 {
        error(StatusCode::InvalidArgument, format!("integer division by zero ({lhs} / 0)"))
    } else {
        error(StatusCode::InvalidArgument, format!("integer division overflow ({lhs} / {rhs})"))
    }
}

/// Gathers a native call's arguments into `values` (empty): plain values in order, and for each
/// variadic span its tuple count followed by the flattened tuples.
fn native_arguments(call: &CallOp, regs: &mut [u32], refs: &mut [Option<Ref>], values: &mut Vec<Value>) {
    let mut slots = call.arguments.iter();
    let mut read = |slot: &super::op::Slot| match slot.kind {
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
