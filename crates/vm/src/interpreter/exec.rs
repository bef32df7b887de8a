//! The dispatch loop: the frame loop ([`Invocation::execute`]) and, inside it, the loop over one
//! frame's ops. The handlers' larger parts are in [`super::handlers`], calls and returns in
//! [`super::call`].
//!
//! The loop walks a pointer over the function's ops and reads registers without bounds checks:
//! the verifier and the lowering proved every register field and branch target in range (see the
//! SAFETY notes). Only scalar ops and branches live here; everything on refs, globals, buffers
//! and lists runs out of line in [`super::cold`], so that the values the loop needs every op stay
//! in machine registers. The loop comes in two instances, with and without the budget countdown.
//! Errors leave the loop through `fail!`, which records the pc so the error can name the
//! instruction and its source location.

use super::call::Transfer;
use super::cold::{self, error};
use super::handlers::{self, register};
use super::op::{inline_ops, Moves, Op, Target};
use super::scalar;
use super::{bytecode_module, Invocation, Step, UNLIMITED};
#[cfg(rtx_jit)]
use super::{jit_stack, locate_at, MAX_FRAME_DEPTH, MAX_STACK_REGISTERS};
use crate::bytecode::isa::Opcode;
use crate::context::{Instance, Resolved, State};
#[cfg(rtx_jit)]
use crate::jit::{Span, SpanOf};
use rtx_host::{Diagnostic, StatusCode};
#[cfg(rtx_jit)]
use smallvec::SmallVec;

impl Invocation {
    pub(super) fn execute(&mut self, instances: &[Instance], states: &mut [State]) -> Result<Step, Diagnostic> {
        // An unlimited budget gets a loop without the countdown on every back edge.
        if self.budget == UNLIMITED {
            self.execute_with::<false>(instances, states)
        } else {
            self.execute_with::<true>(instances, states)
        }
    }

    /// The frame loop: runs the ops of the top frame until it calls or returns, then makes the
    /// call or return ([`super::call`]) and goes on with the frame on top. The transfer is
    /// matched right where the op loop made it, with every result returned straight from here:
    /// passed through a function boundary, the enum and the results went through memory in
    /// pieces and were read back whole (store-forwarding stalls that cost a sixth of a recursive
    /// call and a tenth of a small invocation).
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
                                fail!(handlers::budget_exhausted());
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
                macro_rules! w32 {
                    ($r:expr, $v:expr) => {
                        *register(regs, $r) = $v
                    };
                }
                // The dispatch `match`, written as a macro so that the arms of the inline ops come
                // from their one description, `inline_ops`.
                macro_rules! dispatch_match {
                    ($($op:ident = $f:ident($ra:ident, $rb:ident) -> $w:ident
                       $(, br: $br:ident)? $(, cond_br: $cb:ident)?;)*) => {
                        // SAFETY: `ip` always points at an op of this function: it starts at a saved
                        // pc, branches set it to op indices the lowering resolved from verified block
                        // targets, and it only steps to the next op after an op that is not a
                        // terminator, while the verifier proved the function's last op is a terminator
                        // (`vm.fail` with status 0, the one terminator that falls through, checks the
                        // bound).
                        match unsafe { &*ip } {
                            $(Op::$op { a, b, d } => $w!(*d, (const { scalar::$f(Opcode::$op) })($ra!(*a), $rb!(*b))),)*
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
                                None => fail!(handlers::division_error(r32!(*a) as i32 as i64, r32!(*b) as i32 as i64)),
                            },
                            Op::Div64 { f, a, b, d } => match f(r64!(*a), r64!(*b)) {
                                Some(v) => w64!(*d, v),
                                None => fail!(handlers::division_error(r64!(*a) as i64, r64!(*b) as i64)),
                            },
                            Op::Select32 { c, t, f, d } => r32!(*d) = if r32!(*c) != 0 { r32!(*t) } else { r32!(*f) },
                            Op::Select64 { c, t, f, d } => w64!(*d, if r32!(*c) != 0 { r64!(*t) } else { r64!(*f) }),
                            Op::Cold(op) => r#try!(cold::execute(op, regs, &mut env)),

                            Op::Br(target) | Op::Yield(target) => jump!(target),
                            #[cfg(rtx_jit)]
                            Op::Native(entry) => {
                                // SAFETY: the entry is code the loop compiler emitted for this op of
                                // this function (see `crate::jit`): it reads and writes only
                                // registers the verifier proved inside this frame's i32 bank, which
                                // `regs` is, and returns the index of an op of this function.
                                // Compiled calls stack their frames on the jit stack, in the room
                                // the interpreter's frames leave under the same limits.
                                let stack = jit_stack(&mut self.jit_stack);
                                let depth = (MAX_FRAME_DEPTH - self.frames.len()) as u64;
                                let (refs, globals) = (&*env.refs, &mut env.state.rwdata);
                                let spans: SmallVec<[Span; 4]> = function
                                    .jit_spans
                                    .iter()
                                    .map(|&of| match of {
                                        SpanOf::Buffer(r) => Span::of(refs.get(r as usize).and_then(Option::as_ref)),
                                        SpanOf::Globals => Span::globals(globals),
                                    })
                                    .collect();
                                // SAFETY: as above for the frame; `stack` is the start of the jit
                                // stack, `MAX_STACK_REGISTERS + RESULT_WORDS` words long, and
                                // `i32_end <= MAX_STACK_REGISTERS` (the frame push checked), so
                                // the limit and `RESULT_WORDS` past it lie inside it; compiled
                                // calls write only below the limit and results past it. The
                                // span table has a span for every buffer register the code
                                // reads and for the globals if it reads them (`jit_spans`), and
                                // the code accesses only the bytes each span allows: of buffers
                                // this frame's refs keep alive and unchanged while it runs, and
                                // of this module's global bytes, which nothing else touches
                                // meanwhile (see `Span`).
                                let exit = unsafe {
                                    entry(
                                        regs.as_mut_ptr(),
                                        budget,
                                        stack,
                                        stack.add(MAX_STACK_REGISTERS - i32_end),
                                        depth,
                                        spans.as_ptr(),
                                    )
                                };
                                if let Some(fault) = exit.error() {
                                    self.budget = 0;
                                    self.frames.last_mut().expect("executing").pc = pc_of(ip) as u32;
                                    let error = handlers::fault(fault, exit.budget);
                                    return Err(locate_at(instances, frame.instance, fault.function, fault.op, error));
                                }
                                // Unbudgeted, the count only runs down from `UNLIMITED`: keep that.
                                if BUDGETED {
                                    budget = exit.budget;
                                }
                                let resume = exit.op as usize;
                                debug_assert!(resume < ops.len());
                                // SAFETY: as above, `resume` is an op index of this function.
                                ip = unsafe { base.add(resume) };
                                continue;
                            }
                            $($(Op::$br { a, b, d, t } => {
                                $w!(*d, (const { scalar::$f(Opcode::$op) })($ra!(*a), $rb!(*b)));
                                jump!(t)
                            })?)*
                            Op::Bin32Br { f, a, b, d, t } => {
                                r32!(*d) = f(r32!(*a), r32!(*b));
                                jump!(t)
                            }
                            Op::CondBr { c, when, t } => {
                                if (r32!(*c) != 0) == *when {
                                    jump!(t)
                                }
                            }
                            $($(Op::$cb { a, b, d, when, t } => {
                                let c = (const { scalar::$f(Opcode::$op) })($ra!(*a), $rb!(*b));
                                $w!(*d, c);
                                if (c != 0) == *when {
                                    jump!(t)
                                }
                            })?)*
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
                                if let Some(error) = handlers::fail(r32!(*status), message, pc_of(ip) + 1 < ops.len()) {
                                    fail!(error)
                                }
                            }
                            Op::ImportResolved { import, d } => {
                                r32!(*d) = imports.get(*import as usize).is_some_and(Option::is_some) as u32
                            }
                            Op::Call(call) => {
                                let Some(target) = handlers::callee(call.callee, frame.instance, imports) else {
                                    fail!(handlers::unresolved_import(call.callee, module))
                                };
                                match target {
                                    Resolved::Bytecode { instance, function } => {
                                        break Transfer::Enter { instance, function }
                                    }
                                    Resolved::Native { instance, function } => {
                                        break Transfer::Native { instance, function }
                                    }
                                }
                            }
                        }
                    };
                }
                loop {
                    debug_assert!(pc_of(ip) < ops.len());
                    inline_ops!(dispatch_match);
                    // SAFETY: the op just executed is not a terminator, so another op follows it
                    // (see the dispatch above), or it is a conditional branch not taken, which the
                    // lowering only lets fall through to an op it placed next (the other
                    // destination's first op, or an explicit `Br` to it).
                    ip = unsafe { ip.add(1) };
                }
            };
            self.budget = budget;
            self.frames.last_mut().expect("executing").pc = pc_of(ip) as u32;
            // Calls spend budget too: recursion, and loops whose back edge is a yieldable call's
            // resume point, take no backward branch.
            if self.budget != UNLIMITED && !matches!(transfer, Transfer::Return) {
                if self.budget == 0 {
                    return Err(self.locate(instances, handlers::call_budget_exhausted()));
                }
                self.budget -= 1;
            }
            // SAFETY: the loop left at a call or return op of this function (see the dispatch).
            let op = unsafe { &*ip };
            match transfer {
                Transfer::Enter { instance, function } => {
                    let Op::Call(call) = op else { unreachable!("entered from a call op") };
                    self.enter(instances, frame, call, instance, function)?;
                }
                Transfer::Return => {
                    let Op::Return { values } = op else { unreachable!("returned from a return op") };
                    if self.frames.len() == 1 {
                        return Ok(Step::Done(self.return_to_host(frame, values)));
                    }
                    self.return_to_caller(instances, frame, values)?;
                }
                Transfer::Native { instance, function } => {
                    let Op::Call(call) = op else { unreachable!("called from a call op") };
                    if let Some(step) = self.call_native(instances, states, (instance, function), call)? {
                        return Ok(step);
                    }
                }
            }
        }
    }
}
