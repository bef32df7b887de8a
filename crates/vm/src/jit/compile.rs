//! Compiles one function's scalar instructions to x86-64.
//!
//! The machine code keeps the interpreter's frame layout: every VM register stays in the frame's
//! i32 bank (`rdi`), every instruction loads its operands from there and stores its result back,
//! so at any instruction boundary the registers are exactly what the interpreter would hold. That
//! makes leaving the code trivial: an instruction the compiler does not handle (imports, ref
//! moves, anything with side effects or library semantics) or a case it leaves to the
//! interpreter (division by zero or by -1, a buffer access out of range) returns that
//! instruction's op index, and the interpreter resumes there and raises the error itself. What
//! the code saves is the dispatch: no op fetch, no indirect jump, branches straight to their
//! blocks. Which instructions compile, and to what, is their [`Jit`] class in the ISA table
//! (`scripts/regen/vm-isa.py` keeps the list), so this file names no opcodes.
//!
//! Buffers and globals. Typed `vm.buffer.load.*`/`store.*` and `vm.buffer.length` reach the ref
//! register's buffer, and `vm.global.load.*`/`store.*` the module's global bytes, through a table
//! the interpreter passes at each entry (`r11`, a [`Span`] per buffer register the function
//! reads and one for the globals, in [`Compiled::spans`] order). A buffer access checks the
//! element offset, unsigned, against the span's readable or writable length shifted to elements
//! (so negative offsets, read-only buffers and registers without a buffer all fail the one
//! compare); a global access checks its fixed byte range against the globals' length. A failed
//! check leaves to the interpreter.
//!
//! Entries are loop headers whose whole body (the ops from the header to the back edge) compiled,
//! so a loop runs from its first iteration to its exit in machine code.
//!
//! Calls. A function every op of which compiles, with nothing left to the interpreter on the way
//! (no division slow path), is *callable*: a `vm.call` to it from compiled code is a native
//! `call`, so recursion runs without the interpreter. Compiled frames live on a register stack of
//! their own that the interpreter lends at each entry: `r8` points past the current compiled
//! frame (the next frame starts there), `r9` is where frames must end, `r10` counts the frames
//! still allowed. A call spends one unit of budget, checks depth and room exactly as the
//! interpreter's frame push would, zeroes the callee's frame (as the interpreter's are), copies
//! the arguments into the callee's argument slots and calls it with `rdi` on the new frame. A
//! `vm.return` copies its values to the result area at `r8` (past its own frame) and returns the
//! op index of the return: a compiled caller copies the results from there, and the interpreter,
//! when it entered the function, resumes at that return op, whose registers are untouched. Errors
//! (budget, depth) return up the native stack with [`super::Exit::FAULT`] set and the function
//! and op that raised them, and the interpreter raises them there. The native stack holds only a
//! return address and the saved `rdi` per compiled frame, 16 bytes, so the frame depth limit
//! bounds it well below any thread's stack.

use std::collections::HashMap;

use super::x64::{Alu, Assembler, Cond, Element, Ext, Gpr, Label, Shift, Sse, Width};
use super::{Span, SpanOf};
use crate::bytecode::decode::{DecodedInstruction, DecodedOperand, Register, RegisterRemap};
use crate::bytecode::isa::{
    self, BufferAccess, FloatCompare, FloatOp, InstructionKind, IntAlu, IntCompare, IntShift, Jit, MinMax, RegisterBank,
};

/// Which blocks get an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entries {
    /// Headers of loops that compiled whole.
    Loops,
    /// Every block (and the function start) whose first op compiled: runs straight-line code
    /// through the compiler too, so tests can hold every compiled instruction against the
    /// interpreter's results.
    Everywhere,
}

/// A function's machine code and where the interpreter may enter it.
#[derive(Debug)]
pub struct Compiled {
    pub code: Vec<u8>,
    /// (op index, code offset) pairs, by op index.
    pub entries: Vec<(u32, u32)>,
    /// (offset of a `call`'s rel32 field, function ordinal called): the linker points them at
    /// the callees' code.
    pub calls: Vec<(u32, u32)>,
    /// The bytes the code reads or writes outside the frame, in the order of the table the
    /// interpreter passes at each entry (see [`Span`]).
    pub spans: Vec<SpanOf>,
    /// Every op compiled, none leaves to the interpreter and none needs a span (a buffer or
    /// the globals): compiled callers may call it.
    pub whole: bool,
}

/// What compiled callers need to know about a function of the module.
#[derive(Clone, Debug)]
pub struct Callee {
    /// i32 registers of its frame.
    pub frame: u16,
    /// Per argument, the i32 register it lands in (the first of a pair) and whether it is a
    /// pair (i64/f64). Call and return register lists do not say which registers are pairs; the
    /// calling convention does.
    pub arguments: Vec<(u16, bool)>,
    /// Per result, whether it is a pair.
    pub results: Vec<bool>,
    /// Calls to it may be compiled: its code is whole, and so is that of every function it calls.
    pub callable: bool,
}

/// The function being compiled and the functions of its module.
pub struct Scope<'a> {
    pub function: u32,
    pub callees: &'a [Callee],
}

/// Most i32 words a callable function may return: the register stack keeps this much room past
/// its limit for the results of the last frame.
pub const RESULT_WORDS: u32 = 64;
/// Most i32 registers in the frame of a callable function (a call zeroes them one store per two).
pub const MAX_CALLEE_FRAME: u16 = 256;

/// The code of one op (one instruction, or the two the lowering fused).
struct Group {
    op: u32,
    code: u32,
    /// Bound at `code`, for the entry stubs.
    label: Label,
    compiled: bool,
    /// The code can leave before finishing the op (to let the interpreter raise an error).
    may_exit: bool,
    /// A `vm.return`, whose code hands the op back to the interpreter: never an entry, or the
    /// interpreter would enter it again.
    returns: bool,
    block_start: bool,
}

/// Compiles `decoded` (after coalescing, as lowered). `starts[i]` is the op index that
/// instruction `i` begins (`None` for block markers and the second instruction of a fused pair);
/// `blocks` maps block marker offsets to the op index of their first op.
pub fn compile(
    decoded: &[DecodedInstruction<'_>],
    starts: &[Option<u32>],
    blocks: &HashMap<u32, u32>,
    entries: Entries,
    scope: &Scope<'_>,
) -> Option<Compiled> {
    if scope.function >= 1 << super::Exit::FUNCTION_BITS {
        return None;
    }
    let mut asm = Assembler::default();
    let mut calls = Vec::new();
    let mut spans = Vec::new();
    let labels: HashMap<u32, Label> = blocks.keys().map(|&offset| (offset, asm.label())).collect();
    let mut groups = Vec::new();
    let mut exits = Vec::new();
    let mut back_edges = Vec::new();
    let mut block_start = true;
    let mut held = None;
    let mut i = 0;
    while i < decoded.len() {
        if decoded[i].instruction.kind == InstructionKind::BlockMarker {
            asm.bind(labels[&(decoded[i].offset as u32)]);
            held = None; // other code jumps here
            block_start = true;
            i += 1;
            continue;
        }
        let op = starts[i]?;
        let len = if starts.get(i + 1) == Some(&None)
            && decoded.get(i + 1).is_some_and(|next| next.instruction.kind != InstructionKind::BlockMarker)
        {
            2
        } else {
            1
        };
        let label = asm.label();
        asm.bind(label);
        let mark = asm.mark();
        let counts = (exits.len(), back_edges.len(), calls.len(), spans.len());
        let code = asm.offset() as u32;
        let mut emitter = Emitter {
            asm: &mut asm,
            labels: &labels,
            blocks,
            exits: &mut exits,
            back_edges: &mut back_edges,
            calls: &mut calls,
            spans: &mut spans,
            scope,
            op,
            held: &mut held,
            incoming: None,
        };
        let compiled = (i..i + len).all(|k| emitter.instruction(&decoded[k], decoded.get(k + 1)));
        if !compiled {
            held = None;
            asm.rollback(mark);
            exits.truncate(counts.0);
            back_edges.truncate(counts.1);
            calls.truncate(counts.2);
            spans.truncate(counts.3);
            leave(&mut asm, op);
        }
        let may_exit = exits[counts.0..].iter().any(|exit: &Exit| exit.action == Action::Leave);
        let returns = decoded[i].instruction.jit == Jit::Return;
        groups.push(Group { op, code, label, compiled, may_exit, returns, block_start });
        block_start = false;
        i += len;
    }
    for exit in exits {
        asm.bind(exit.label);
        let fault = |kind| super::Exit::fault(kind, scope.function, exit.op);
        match exit.action {
            Action::Leave => leave(&mut asm, exit.op),
            Action::Budget(kind) => {
                asm.mov_imm64(Gpr::Rax, fault(kind));
                asm.zero(Gpr::Rdx);
                asm.ret();
            }
            Action::Overflow => {
                // The depth count was taken for the call that did not happen: give it back.
                asm.ext_imm(Alu::Add, Ext::R10, 1);
                asm.mov_imm64(Gpr::Rax, fault(super::Exit::STACK_OVERFLOW));
                asm.mov_from_ext(Gpr::Rdx, Ext::R10);
                asm.ret();
            }
            Action::Propagate => asm.ret(),
        }
    }
    // Code that reads buffers or globals needs its frame's span table, which only the
    // interpreter's entry passes: compiled callers may not call it.
    let whole = spans.is_empty() && groups.iter().all(|g| g.compiled && !g.may_exit);
    let enterable = |group: &Group| group.compiled && !group.may_exit && !group.returns && group.block_start;
    let mut chosen: Vec<(u32, u32)> = match entries {
        Entries::Everywhere => groups.iter().filter(|g| enterable(g)).map(|g| (g.op, g.code)).collect(),
        Entries::Loops => back_edges
            .iter()
            .filter_map(|&(latch, header)| {
                let first = groups.iter().position(|g| g.op == header)?;
                let body = groups[first..].iter().take_while(|g| g.op <= latch);
                (enterable(&groups[first]) && body.clone().all(|g| g.compiled)).then_some((header, groups[first].code))
            })
            .collect(),
    };
    // A function that calls runs whole in machine code from its start, recursion included.
    if whole && !calls.is_empty() && groups.first().is_some_and(|g| g.op == 0 && !g.returns) {
        chosen.push((0, groups[0].code));
    }
    chosen.sort_unstable();
    chosen.dedup();
    if chosen.is_empty() && !whole {
        return None;
    }
    // The interpreter enters through a stub that moves the span table, the register stack's top,
    // limit and depth out of the argument registers the code uses as scratch.
    for (_, code) in &mut chosen {
        let group = groups.iter().find(|g| g.code == *code)?;
        *code = asm.offset() as u32;
        asm.mov_ext(Ext::R11, Ext::R9);
        asm.mov_ext(Ext::R10, Ext::R8);
        asm.mov_to_ext(Ext::R8, Gpr::Rdx);
        asm.mov_to_ext(Ext::R9, Gpr::Rcx);
        asm.jump(group.label);
    }
    Some(Compiled { code: asm.finish()?, entries: chosen, calls, spans, whole })
}

/// The machine width of a table width.
fn machine(width: isa::Width) -> Width {
    match width {
        isa::Width::W32 => W32,
        isa::Width::W64 => W64,
    }
}

/// The machine access of a buffer element.
fn element(access: BufferAccess) -> Element {
    match access {
        BufferAccess::U8 => Element::U8,
        BufferAccess::S8 => Element::S8,
        BufferAccess::U16 => Element::U16,
        BufferAccess::S16 => Element::S16,
        BufferAccess::W32 => Element::W32,
        BufferAccess::W64 => Element::W64,
    }
}

/// The machine access of a global of `width`.
fn global_element(width: isa::Width) -> Element {
    match width {
        isa::Width::W32 => Element::W32,
        isa::Width::W64 => Element::W64,
    }
}

/// Returns to the interpreter at `op` with the budget left.
fn leave(asm: &mut Assembler, op: u32) {
    asm.mov_imm32(Gpr::Rax, op);
    asm.mov(Width::W64, Gpr::Rdx, Gpr::Rsi);
    asm.ret();
}

/// Code out of line that returns to the interpreter.
struct Exit {
    label: Label,
    op: u32,
    action: Action,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    /// `op` is left to the interpreter, which resumes there.
    Leave,
    /// The budget ran out at `op` (a backward branch or a call; the [`super::Exit`] fault kind).
    Budget(u64),
    /// The call at `op` would pass the frame depth or register limit.
    Overflow,
    /// A callee failed: its fault goes up as it is.
    Propagate,
}

struct Emitter<'a> {
    asm: &'a mut Assembler,
    labels: &'a HashMap<u32, Label>,
    blocks: &'a HashMap<u32, u32>,
    /// Slow paths and budget checks.
    exits: &'a mut Vec<Exit>,
    /// (op index of a branch, op index of a destination at or before it).
    back_edges: &'a mut Vec<(u32, u32)>,
    /// See [`Compiled::calls`].
    calls: &'a mut Vec<(u32, u32)>,
    /// See [`Compiled::spans`].
    spans: &'a mut Vec<SpanOf>,
    scope: &'a Scope<'a>,
    op: u32,
    /// The VM register whose value `rax` or `xmm0` holds after the code emitted so far.
    held: &'a mut Option<Held>,
    /// `held` as the current instruction found it: its first operand need not be loaded again.
    incoming: Option<Held>,
}

/// A VM register (at `width`) whose value a machine register still holds after its store: the
/// next instruction of the same block reads it from there instead of waiting for the store to
/// forward to a load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Held {
    slot: u16,
    width: Width,
    /// In `xmm0` rather than `rax`.
    float: bool,
}

use Width::{W32, W64};

impl Emitter<'_> {
    /// Emits one instruction; false if it is not one the compiler handles.
    fn instruction(&mut self, instruction: &DecodedInstruction<'_>, next: Option<&DecodedInstruction<'_>>) -> bool {
        let registers: Vec<Register> = instruction
            .operands
            .iter()
            .filter_map(|o| if let DecodedOperand::Register(r) = o { Some(*r) } else { None })
            .collect();
        let r: Vec<u16> = registers.iter().map(|register| register.ordinal).collect();
        // The operation's width: 64 bits when it reads or writes an i64/f64 register pair (the
        // instructions that mix widths, extensions, truncations and casts, name theirs).
        let width = if registers.iter().any(Register::is_pair) { W64 } else { W32 };
        self.incoming = self.held.take();
        match instruction.instruction.jit {
            Jit::ConstZero if width == W32 => self.asm.store_imm32(r[0], 0),
            Jit::ConstZero => {
                self.asm.zero(Gpr::Rax);
                self.store(width, r[0]);
            }
            Jit::Const => {
                let Some(bits) = instruction.operands.iter().find_map(|o| match o {
                    DecodedOperand::ImmediateI32(v) => Some(*v as u32 as u64),
                    DecodedOperand::ImmediateF32(v) => Some(u64::from(v.to_bits())),
                    DecodedOperand::ImmediateI64(v) => Some(*v as u64),
                    DecodedOperand::ImmediateF64(v) => Some(v.to_bits()),
                    _ => None,
                }) else {
                    return false;
                };
                if width == W32 {
                    self.asm.store_imm32(r[0], bits as u32);
                } else {
                    self.asm.mov_imm64(Gpr::Rax, bits);
                    self.store(W64, r[0]);
                }
            }
            Jit::Select => {
                self.load(width, r[2]);
                self.asm.cmp_slot_imm(W32, r[0], 0);
                self.asm.cmov(Cond::Ne, width, Gpr::Rax, r[1]);
                self.store(width, r[3]);
            }
            Jit::IntAlu(op) => {
                let op = match op {
                    IntAlu::Add => Alu::Add,
                    IntAlu::Sub => Alu::Sub,
                    IntAlu::And => Alu::And,
                    IntAlu::Or => Alu::Or,
                    IntAlu::Xor => Alu::Xor,
                };
                self.binary(op, width, &r);
            }
            Jit::IntMul => {
                let (x, y) = self.commuted(width, false, r[0], r[1]);
                self.load(width, x);
                self.asm.imul(width, Gpr::Rax, y);
                self.store(width, r[2]);
            }
            Jit::IntMulAdd => {
                let (x, y) = self.commuted(width, false, r[0], r[1]);
                self.load(width, x);
                self.asm.imul(width, Gpr::Rax, y);
                self.asm.alu(Alu::Add, width, Gpr::Rax, r[2]);
                self.store(width, r[3]);
            }
            Jit::IntNot => {
                self.load(width, r[0]);
                self.asm.not(width, Gpr::Rax);
                self.store(width, r[1]);
            }
            Jit::IntAbs => {
                // -a when that is not negative, else a (so MIN stays MIN, as wrapping_abs).
                self.load(width, r[0]);
                self.asm.mov(width, Gpr::Rcx, Gpr::Rax);
                self.asm.neg(width, Gpr::Rcx);
                self.asm.cmov_reg(Cond::Ns, width, Gpr::Rax, Gpr::Rcx);
                self.store(width, r[1]);
            }
            Jit::IntMinMax(pick) => {
                let cond = match pick {
                    MinMax::MinS => Cond::G,
                    MinMax::MinU => Cond::A,
                    MinMax::MaxS => Cond::L,
                    MinMax::MaxU => Cond::B,
                };
                self.pick(cond, width, &r);
            }
            // The amount is an i32 register for both widths; the hardware masks it to the width
            // (`& 31` / `& 63`), as IREE does.
            Jit::IntShift(shift) => {
                let op = match shift {
                    IntShift::Shl => Shift::Shl,
                    IntShift::ShrS => Shift::Sar,
                    IntShift::ShrU => Shift::Shr,
                };
                self.shift(op, width, &r);
            }
            Jit::IntDivide { signed, remainder } => {
                // Division by zero is an error and `MIN / -1` overflows: the interpreter raises
                // both, so any zero or (signed) -1 divisor goes back to it.
                let slow = self.leave_label();
                self.asm.cmp_slot_imm(width, r[1], 0);
                self.asm.jump_if(Cond::E, slow);
                if signed {
                    self.asm.cmp_slot_imm(width, r[1], -1);
                    self.asm.jump_if(Cond::E, slow);
                }
                self.load(width, r[0]);
                self.asm.extend_dividend(width, signed);
                self.asm.divide(width, signed, r[1]);
                if remainder {
                    self.asm.store(width, r[2], Gpr::Rdx);
                } else {
                    self.store(width, r[2]);
                }
            }
            Jit::Extend { bits, signed } => self.extend(bits, signed, &r),
            Jit::Move(isa::Width::W32) => {
                self.asm.load(W32, Gpr::Rax, r[0]);
                self.store(W32, r[1]);
            }
            Jit::Move(isa::Width::W64) => {
                self.load(W64, r[0]);
                self.store(W64, r[1]);
            }
            Jit::Widen { signed: true } => {
                self.asm.load_sign_extended32(Gpr::Rax, r[0]);
                self.store(W64, r[1]);
            }
            Jit::Widen { signed: false } => {
                self.asm.load(W32, Gpr::Rax, r[0]); // zero-extends into rax
                self.store(W64, r[1]);
            }
            Jit::IntCompare(compare) => {
                let cond = match compare {
                    IntCompare::Eq => Cond::E,
                    IntCompare::Ne => Cond::Ne,
                    IntCompare::LtS => Cond::L,
                    IntCompare::LtU => Cond::B,
                };
                self.compare(cond, width, &r);
            }
            Jit::IntNonZero => {
                self.asm.cmp_slot_imm(width, r[0], 0);
                self.asm.set(Cond::Ne, Gpr::Rax);
                self.store(W32, r[1]);
            }
            Jit::FloatOp(op @ (FloatOp::Add | FloatOp::Mul)) => {
                let op = if op == FloatOp::Add { Sse::Add } else { Sse::Mul };
                let (x, y) = self.commuted(width, true, r[0], r[1]);
                self.float(op, width, &[x, y, r[2]]);
            }
            Jit::FloatOp(FloatOp::Sub) => self.float(Sse::Sub, width, &r),
            Jit::FloatOp(FloatOp::Div) => self.float(Sse::Div, width, &r),
            // `(b < a) ? b : a` and `(a < b) ? b : a` are exactly minss/maxss with b first.
            Jit::FloatOp(FloatOp::Min) => self.float(Sse::Min, width, &[r[1], r[0], r[2]]),
            Jit::FloatOp(FloatOp::Max) => self.float(Sse::Max, width, &[r[1], r[0], r[2]]),
            // Two roundings, as the interpreter (IREE's baseline x86-64 build does not fuse).
            Jit::FloatMulAdd => {
                let (x, y) = self.commuted(width, true, r[0], r[1]);
                self.load_float(width, x);
                self.asm.sse(Sse::Mul, width, y);
                self.asm.sse(Sse::Add, width, r[2]);
                self.store_float(width, r[3]);
            }
            Jit::SignBitF32 { negate } => {
                self.load(W32, r[0]);
                if negate {
                    self.asm.alu_imm(Alu::Xor, W32, Gpr::Rax, i32::MIN);
                } else {
                    self.asm.alu_imm(Alu::And, W32, Gpr::Rax, 0x7FFF_FFFF);
                }
                self.store(W32, r[1]);
            }
            Jit::SignedToFloat { from, to } => {
                self.asm.int_to_float(machine(to), machine(from), r[0]);
                self.store_float(machine(to), r[1]);
            }
            Jit::UnsignedToFloat { to } => {
                self.asm.load(W32, Gpr::Rax, r[0]); // zero-extended: exact as a signed 64-bit source
                self.asm.int_to_float_reg(machine(to), Gpr::Rax);
                self.store_float(machine(to), r[1]);
            }
            // ucomis sets ZF, PF and CF for unordered operands; `lt`/`lte` ordered swap the
            // operands so that unordered (CF) reads as false.
            Jit::FloatCompare(compare) => match compare {
                FloatCompare::EqO => self.float_compare(width, (r[0], r[1]), Cond::E, Some((Cond::Np, true)), r[2]),
                FloatCompare::EqU => self.float_compare(width, (r[0], r[1]), Cond::E, None, r[2]),
                // `!=` is true for unordered operands in both forms (C's and Rust's `!=`).
                FloatCompare::Ne => self.float_compare(width, (r[0], r[1]), Cond::Ne, Some((Cond::P, false)), r[2]),
                FloatCompare::LtO => self.float_compare(width, (r[1], r[0]), Cond::A, None, r[2]),
                FloatCompare::LteO => self.float_compare(width, (r[1], r[0]), Cond::Ae, None, r[2]),
                FloatCompare::LtU => self.float_compare(width, (r[0], r[1]), Cond::B, None, r[2]),
                FloatCompare::LteU => self.float_compare(width, (r[0], r[1]), Cond::Be, None, r[2]),
                FloatCompare::NaN => self.float_compare(width, (r[0], r[0]), Cond::P, None, r[1]),
            },
            Jit::Branch => return self.branch(instruction, next),
            Jit::CondBranch => return self.conditional_branch(instruction, r[0], next),
            Jit::BranchTable => return self.branch_table(instruction, r[0], next),
            Jit::Call => return self.call(instruction),
            Jit::Return => return self.ret(instruction),
            Jit::BufferLoad(access) => self.buffer_load(element(access), &r),
            Jit::BufferStore(access) => self.buffer_store(element(access), &r),
            Jit::GlobalLoad(global) => return self.global(global_element(global), false, instruction, r[0]),
            Jit::GlobalStore(global) => return self.global(global_element(global), true, instruction, r[0]),
            Jit::BufferLength => {
                // A register that holds no buffer has no base: the interpreter raises that.
                let span = self.span(SpanOf::Buffer(r[0]));
                let missing = self.leave_label();
                self.asm.load_ext(W64, Gpr::Rcx, Ext::R11, span + Span::BASE);
                self.asm.test64(Gpr::Rcx);
                self.asm.jump_if(Cond::E, missing);
                self.asm.load_ext(W64, Gpr::Rax, Ext::R11, span + Span::READABLE);
                self.store(W64, r[1]);
            }
            // Left to the interpreter: memory, refs, imports, variadic and yieldable calls, tables,
            // library math.
            Jit::Interpret => return false,
        }
        true
    }

    /// `vm.br_table`: the index compared with each case in turn (a negative or too large index
    /// matches none and takes the default, as in the interpreter).
    fn branch_table(
        &mut self,
        instruction: &DecodedInstruction<'_>,
        index: u16,
        next: Option<&DecodedInstruction<'_>>,
    ) -> bool {
        let mut default: Option<(u32, &[RegisterRemap])> = None;
        let mut cases = None;
        for operand in &instruction.operands {
            match operand {
                DecodedOperand::BranchTarget(target) => default = Some((*target, &[])),
                DecodedOperand::BranchOperands(remaps) => {
                    if let Some(default) = default.as_mut() {
                        default.1 = remaps;
                    }
                }
                DecodedOperand::BranchTableCases(list) => cases = Some(list),
                _ => {}
            }
        }
        let (Some(default), Some(cases)) = (default, cases) else { return false };
        self.asm.load(W32, Gpr::Rcx, index);
        for (case, destination) in cases.iter().enumerate() {
            let Ok(case) = i32::try_from(case) else { return false };
            let other = self.asm.label();
            self.asm.alu_imm(Alu::Cmp, W32, Gpr::Rcx, case);
            self.asm.jump_if(Cond::Ne, other);
            if !self.take((destination.target, &destination.remaps), None) {
                return false;
            }
            self.asm.bind(other);
        }
        self.take(default, next)
    }

    /// `vm.call` of a callable function of this module (see the module comment for the frames).
    fn call(&mut self, instruction: &DecodedInstruction<'_>) -> bool {
        let mut callee = None;
        let mut lists = Vec::new();
        for operand in &instruction.operands {
            match operand {
                DecodedOperand::FunctionOrdinal { ordinal, is_import: false } => callee = Some(*ordinal),
                DecodedOperand::Registers(list) => lists.push(list),
                _ => return false,
            }
        }
        let (Some(ordinal), [arguments, results]) = (callee, lists.as_slice()) else { return false };
        let Some(target) = self.scope.callees.get(ordinal as usize).filter(|c| c.callable) else { return false };
        if arguments.len() != target.arguments.len()
            || results.len() != target.results.len()
            || arguments.iter().chain(results.iter()).any(|r| r.bank == RegisterBank::Ref)
        {
            return false;
        }
        let frame = u32::from(target.frame) * 4;
        let asm = &mut *self.asm;
        let exhausted = asm.label();
        asm.alu_imm(Alu::Sub, W64, Gpr::Rsi, 1);
        asm.jump_if(Cond::B, exhausted);
        self.exits.push(Exit { label: exhausted, op: self.op, action: Action::Budget(super::Exit::CALL_BUDGET) });
        let overflow = asm.label();
        asm.ext_imm(Alu::Sub, Ext::R10, 1);
        asm.jump_if(Cond::B, overflow);
        asm.lea_ext(Gpr::Rax, Ext::R8, frame);
        asm.cmp_ext(Gpr::Rax, Ext::R9);
        asm.jump_if(Cond::A, overflow);
        self.exits.push(Exit { label: overflow, op: self.op, action: Action::Overflow });
        for word in (0..frame).step_by(8) {
            asm.zero_ext(Ext::R8, word);
        }
        for (register, &(slot, pair)) in arguments.iter().zip(&target.arguments) {
            let width = if pair { W64 } else { W32 };
            asm.load(width, Gpr::Rax, register.ordinal);
            asm.store_ext(width, Ext::R8, u32::from(slot) * 4, Gpr::Rax);
        }
        asm.push(Gpr::Rdi);
        asm.mov_from_ext(Gpr::Rdi, Ext::R8);
        asm.ext_imm(Alu::Add, Ext::R8, frame as i32);
        let at = asm.call_external();
        self.calls.push((at as u32, ordinal));
        asm.pop(Gpr::Rdi);
        asm.ext_imm(Alu::Add, Ext::R10, 1);
        let failed = asm.label();
        asm.test64(Gpr::Rax);
        asm.jump_if(Cond::S, failed);
        self.exits.push(Exit { label: failed, op: self.op, action: Action::Propagate });
        asm.mov(W64, Gpr::Rsi, Gpr::Rdx);
        let mut at = 0;
        for (register, &pair) in results.iter().zip(&target.results) {
            let width = if pair { W64 } else { W32 };
            asm.load_ext(width, Gpr::Rax, Ext::R8, at);
            asm.store(width, register.ordinal, Gpr::Rax);
            at += if pair { 8 } else { 4 };
        }
        asm.ext_imm(Alu::Sub, Ext::R8, frame as i32);
        true
    }

    /// `vm.return`: the values to the result area at `r8`, then back with this op's index.
    fn ret(&mut self, instruction: &DecodedInstruction<'_>) -> bool {
        let values = instruction.operands.iter().find_map(|o| match o {
            DecodedOperand::Registers(list) => Some(list),
            _ => None,
        });
        let kinds = self.scope.callees.get(self.scope.function as usize).map(|c| &c.results);
        let (Some(values), Some(kinds)) = (values, kinds) else { return false };
        let words: u32 = kinds.iter().map(|&pair| if pair { 2 } else { 1 }).sum();
        if values.len() != kinds.len() || words > RESULT_WORDS || values.iter().any(|r| r.bank == RegisterBank::Ref) {
            return false;
        }
        let mut at = 0;
        for (register, &pair) in values.iter().zip(kinds) {
            let width = if pair { W64 } else { W32 };
            self.asm.load(width, Gpr::Rax, register.ordinal);
            self.asm.store_ext(width, Ext::R8, at, Gpr::Rax);
            at += if pair { 8 } else { 4 };
        }
        leave(self.asm, self.op);
        true
    }

    /// The destinations of a branch and the moves each takes.
    fn destinations<'i>(instruction: &'i DecodedInstruction<'_>) -> Vec<(u32, &'i [RegisterRemap])> {
        let mut destinations: Vec<(u32, &[RegisterRemap])> = Vec::new();
        for operand in &instruction.operands {
            match operand {
                DecodedOperand::BranchTarget(target) => destinations.push((*target, &[])),
                DecodedOperand::BranchOperands(remaps) => {
                    if let Some(last) = destinations.last_mut() {
                        last.1 = remaps;
                    }
                }
                _ => {}
            }
        }
        destinations
    }

    /// Moves the block arguments in order and jumps (or falls into the block that follows).
    fn take(&mut self, (target, remaps): (u32, &[RegisterRemap]), next: Option<&DecodedInstruction<'_>>) -> bool {
        let (Some(&label), Some(&header)) = (self.labels.get(&target), self.blocks.get(&target)) else {
            return false;
        };
        if remaps.iter().any(|m| m.source.bank == RegisterBank::Ref || m.destination.bank == RegisterBank::Ref) {
            return false;
        }
        let mut moves = remaps.iter().map(|m| (m.source.ordinal, m.destination.ordinal)).peekable();
        while let Some((source, destination)) = moves.next() {
            // An i64/f64 value moves as its two halves, in order; one 64-bit move does the same
            // (an even pair cannot overlap another even pair half-way) and lets the next 64-bit
            // load of the pair forward from one store instead of stalling on two.
            if source % 2 == 0 && destination % 2 == 0 && moves.peek() == Some(&(source + 1, destination + 1)) {
                moves.next();
                self.asm.load(W64, Gpr::Rax, source);
                self.asm.store(W64, destination, Gpr::Rax);
            } else {
                self.asm.load(W32, Gpr::Rax, source);
                self.asm.store(W32, destination, Gpr::Rax);
            }
        }
        if header <= self.op {
            // A backward branch spends one unit of budget, as in the interpreter.
            let exhausted = self.asm.label();
            self.asm.alu_imm(Alu::Sub, W64, Gpr::Rsi, 1);
            self.asm.jump_if(Cond::B, exhausted);
            self.exits.push(Exit { label: exhausted, op: self.op, action: Action::Budget(super::Exit::BRANCH_BUDGET) });
            self.back_edges.push((self.op, header));
        }
        let follows =
            next.is_some_and(|n| n.instruction.kind == InstructionKind::BlockMarker && n.offset as u32 == target);
        if !follows {
            self.asm.jump(label);
        }
        true
    }

    fn branch(&mut self, instruction: &DecodedInstruction<'_>, next: Option<&DecodedInstruction<'_>>) -> bool {
        match Self::destinations(instruction)[..] {
            [only] => self.take(only, next),
            _ => false,
        }
    }

    fn conditional_branch(
        &mut self,
        instruction: &DecodedInstruction<'_>,
        condition: u16,
        next: Option<&DecodedInstruction<'_>>,
    ) -> bool {
        let [taken, otherwise] = Self::destinations(instruction)[..] else { return false };
        // A destination is jumped to straight from the test when it takes no moves and spends
        // no budget (a forward branch); the other goes through `take`.
        let direct = |(target, moves): (u32, &[RegisterRemap])| {
            let forward = self.blocks.get(&target).is_some_and(|&header| header > self.op);
            if moves.is_empty() && forward {
                self.labels.get(&target).copied()
            } else {
                None
            }
        };
        let (taken_direct, otherwise_direct) = (direct(taken), direct(otherwise));
        if self.incoming_is(Held { slot: condition, width: W32, float: false }) {
            self.asm.test(Gpr::Rax); // the compare just before
        } else {
            self.asm.cmp_slot_imm(W32, condition, 0);
        }
        if let Some(label) = taken_direct {
            self.asm.jump_if(Cond::Ne, label);
            self.take(otherwise, next)
        } else if let Some(label) = otherwise_direct {
            self.asm.jump_if(Cond::E, label);
            self.take(taken, next)
        } else {
            let else_moves = self.asm.label();
            self.asm.jump_if(Cond::E, else_moves);
            if !self.take(taken, None) {
                return false;
            }
            self.asm.bind(else_moves);
            self.take(otherwise, next)
        }
    }

    /// A label whose code returns to the interpreter at this op, which raises the error the
    /// jumps to it stand for.
    fn leave_label(&mut self) -> Label {
        let label = self.asm.label();
        self.exits.push(Exit { label, op: self.op, action: Action::Leave });
        label
    }

    /// The offset of `of`'s span in the span table, adding it to the table on first use.
    fn span(&mut self, of: SpanOf) -> u32 {
        let index = match self.spans.iter().position(|&s| s == of) {
            Some(index) => index,
            None => {
                self.spans.push(of);
                self.spans.len() - 1
            }
        };
        index as u32 * Span::BYTES
    }

    /// `vm.global.load.*`/`store.*` of `element` (W32 or W64) at byte `offset` of the module's
    /// globals, to or from `register`: the offset is checked against the span's length as the
    /// interpreter does, whose error is raised when it fails.
    fn global(&mut self, element: Element, store: bool, instruction: &DecodedInstruction<'_>, register: u16) -> bool {
        let Some(offset) = instruction.operands.iter().find_map(|o| match o {
            DecodedOperand::GlobalByteOffset(offset) => Some(*offset),
            _ => None,
        }) else {
            return false;
        };
        let width = if element == Element::W64 { W64 } else { W32 };
        let Ok(end) = i32::try_from(u64::from(offset) + (1 << element.shift())) else { return false };
        let span = self.span(SpanOf::Globals);
        let outside = self.leave_label();
        self.asm.cmp_ext_imm(Ext::R11, span + Span::READABLE, end);
        self.asm.jump_if(Cond::B, outside);
        self.asm.load_ext(W64, Gpr::Rcx, Ext::R11, span + Span::BASE);
        if store {
            self.load(width, register);
            self.asm.store_at(width, Gpr::Rcx, offset, Gpr::Rax);
            *self.held = Some(Held { slot: register, width, float: false });
        } else {
            self.asm.load_at(width, Gpr::Rax, Gpr::Rcx, offset);
            self.store(width, register);
        }
        true
    }

    /// Leaves `rax` = the element offset in register pair `offset` and `rcx` = the span's base
    /// when element `offset` lies within the first `bound` bytes of the span of buffer register
    /// `buffer`; otherwise goes back to the interpreter, which raises the error (a missing
    /// buffer has no bytes, a read-only one none to write).
    fn element_at(&mut self, element: Element, buffer: u16, offset: u16, bound: u32) {
        let span = self.span(SpanOf::Buffer(buffer));
        let outside = self.leave_label();
        self.load(W64, offset);
        self.asm.load_ext(W64, Gpr::Rcx, Ext::R11, span + bound);
        if element.shift() > 0 {
            self.asm.shr_imm64(Gpr::Rcx, element.shift());
        }
        // Unsigned: a negative offset is past any length.
        self.asm.alu_reg(Alu::Cmp, W64, Gpr::Rax, Gpr::Rcx);
        self.asm.jump_if(Cond::Ae, outside);
        self.asm.load_ext(W64, Gpr::Rcx, Ext::R11, span + Span::BASE);
    }

    /// `vm.buffer.load.*`: buffer, element offset, result.
    fn buffer_load(&mut self, element: Element, r: &[u16]) {
        self.element_at(element, r[0], r[1], Span::READABLE);
        self.asm.load_element(element, Gpr::Rax, Gpr::Rcx, Gpr::Rax);
        self.store(if element == Element::W64 { W64 } else { W32 }, r[2]);
    }

    /// `vm.buffer.store.*`: buffer, element offset, value (its low bytes).
    fn buffer_store(&mut self, element: Element, r: &[u16]) {
        self.element_at(element, r[0], r[1], Span::WRITABLE);
        self.asm.load(if element == Element::W64 { W64 } else { W32 }, Gpr::Rdx, r[2]);
        self.asm.store_element(element, Gpr::Rcx, Gpr::Rax, Gpr::Rdx);
    }

    /// Whether the previous instruction left `held` in a machine register. The tag is tested
    /// before the fields: comparing whole `Option`s lets the optimiser branch on the fields of a
    /// `None`, bytes never written, which memory checkers (valgrind) report in C hosts.
    fn incoming_is(&self, held: Held) -> bool {
        match self.incoming {
            Some(incoming) => incoming == held,
            None => false,
        }
    }

    /// `rax = slot`, unless it still holds it from the previous instruction.
    fn load(&mut self, width: Width, slot: u16) {
        if !self.incoming_is(Held { slot, width, float: false }) {
            self.asm.load(width, Gpr::Rax, slot);
        }
    }

    /// `xmm0 = slot`, unless it still holds it from the previous instruction.
    fn load_float(&mut self, width: Width, slot: u16) {
        if !self.incoming_is(Held { slot, width, float: true }) {
            self.asm.sse(Sse::Load, width, slot);
        }
    }

    /// `slot = rax`, remembered for the next instruction.
    fn store(&mut self, width: Width, slot: u16) {
        self.asm.store(width, slot, Gpr::Rax);
        *self.held = Some(Held { slot, width, float: false });
    }

    /// `slot = xmm0`, remembered for the next instruction.
    fn store_float(&mut self, width: Width, slot: u16) {
        self.asm.sse_store(width, slot);
        *self.held = Some(Held { slot, width, float: true });
    }

    /// The operands of a commutative operation, the one already in a machine register first.
    /// (For floats, a NaN operand's payload may then come from the other side, which IEEE 754
    /// leaves open and compilers of the interpreter do too.)
    fn commuted(&self, width: Width, float: bool, x: u16, y: u16) -> (u16, u16) {
        if self.incoming_is(Held { slot: y, width, float }) {
            (y, x)
        } else {
            (x, y)
        }
    }

    /// `d = a op b`
    fn binary(&mut self, op: Alu, width: Width, r: &[u16]) {
        let (x, y) = if op == Alu::Sub { (r[0], r[1]) } else { self.commuted(width, false, r[0], r[1]) };
        self.load(width, x);
        self.asm.alu(op, width, Gpr::Rax, y);
        self.store(width, r[2]);
    }

    /// `d = a`, replaced by `b` when `cond` holds after `cmp a, b` (min/max).
    fn pick(&mut self, cond: Cond, width: Width, r: &[u16]) {
        self.load(width, r[0]);
        self.asm.alu(Alu::Cmp, width, Gpr::Rax, r[1]);
        self.asm.cmov(cond, width, Gpr::Rax, r[1]);
        self.store(width, r[2]);
    }

    fn shift(&mut self, op: Shift, width: Width, r: &[u16]) {
        self.asm.load(W32, Gpr::Rcx, r[1]);
        self.load(width, r[0]);
        self.asm.shift(op, width, Gpr::Rax);
        self.store(width, r[2]);
    }

    /// Zero- or sign-extends the low `bits` of an i32 register.
    fn extend(&mut self, bits: u8, signed: bool, r: &[u16]) {
        self.asm.load_extended(bits, signed, Gpr::Rax, r[0]);
        self.store(W32, r[1]);
    }

    /// `d = (a cond b) ? 1 : 0`
    fn compare(&mut self, cond: Cond, width: Width, r: &[u16]) {
        self.load(width, r[0]);
        self.asm.alu(Alu::Cmp, width, Gpr::Rax, r[1]);
        self.asm.set(cond, Gpr::Rax);
        self.store(W32, r[2]);
    }

    /// `d = a op b` on floats.
    fn float(&mut self, op: Sse, width: Width, r: &[u16]) {
        self.load_float(width, r[0]);
        self.asm.sse(op, width, r[1]);
        self.store_float(width, r[2]);
    }

    /// `d = cond` after `ucomis x, y`, and-ed (`true`) or or-ed (`false`) with a second condition.
    fn float_compare(&mut self, width: Width, (x, y): (u16, u16), cond: Cond, also: Option<(Cond, bool)>, d: u16) {
        self.load_float(width, x);
        self.asm.ucomi(width, y);
        self.asm.set(cond, Gpr::Rax);
        if let Some((second, and)) = also {
            self.asm.set(second, Gpr::Rcx);
            if and {
                self.asm.and_reg(Gpr::Rax, Gpr::Rcx);
            } else {
                self.asm.or_reg(Gpr::Rax, Gpr::Rcx);
            }
        }
        self.store(W32, d);
    }
}
