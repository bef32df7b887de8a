//! The lowered instruction stream the interpreter runs.
//!
//! At load time every function's bytecode is decoded once, checked against the module (register
//! banks against callee signatures, type ids, rodata ordinals) and rewritten into [`Op`]s: fixed
//! register indices, branch targets as op indices, call operands typed by the callee's calling
//! convention, and scalar semantics as plain function pointers. The hot loop then never decodes
//! variable-length bytes, never parses a calling convention and never looks anything up by name.

use super::scalar;
use crate::abi::ValueKind;
use crate::bytecode::isa::Opcode;

/// A register ordinal within its bank (i32 bank for scalars, ref bank for refs).
pub type Reg = u16;

/// A ref register operand and whether this is its last use (the value may be moved out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefReg {
    pub reg: Reg,
    pub is_move: bool,
}

/// One value-sized operand of a call, a return or a trace: its kind decides how many i32
/// registers it spans (i64/f64 take the pair starting at `reg`) or whether it is a ref.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    pub kind: ValueKind,
    pub reg: Reg,
    /// For refs: the operand may be moved out of the caller's register.
    pub is_move: bool,
}

/// What a typed ref operation requires of a non-null ref (resolved from the module type table).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RefCheck {
    Any,
    /// A concrete ref type, by its name without `!` and parameters (`vm.list`, `hal.buffer`).
    Named(Box<str>),
    /// A primitive type where a ref type was expected: every non-null ref mismatches.
    Primitive(Box<str>),
}

/// Register moves performed when a branch is taken, in encoding order (IREE performs them
/// sequentially; the compiler orders them so that no swap hazard exists).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Remap {
    pub ints: Box<[(Reg, Reg)]>,
    pub refs: Box<[(RefReg, Reg)]>,
}

/// The argument moves of a branch, with the shapes loops produce most (none, or one i32 move on
/// the back edge) held inline so taking the branch does not chase a pointer; larger sets live in
/// the function's remap table, which keeps a [`Target`] (and so every branch op) small.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moves {
    None,
    One(Reg, Reg),
    /// An index into [`super::lower::LoweredFunction::remaps`].
    Many(u32),
}

/// A branch destination, as the distance in bytes from the op that holds it to the first op of
/// the destination block: taking the branch is then one add to the op pointer, and the next op's
/// address depends on a single load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    pub delta: i32,
    pub moves: Moves,
}

impl Target {
    /// The distance to the next op (the size of one op).
    pub const NEXT: i32 = std::mem::size_of::<Op>() as i32;

    /// The destination is at or before the branch: taking it may repeat work, so it spends the
    /// invocation's budget. Forward branches cannot loop and spend nothing.
    pub fn back(&self) -> bool {
        self.delta <= 0
    }
}

/// Who a call goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Callee {
    /// An internal function of the same module, by ordinal.
    Internal(u32),
    /// An import, by ordinal in the module's import table (resolved per context).
    Import(u32),
}

/// One value a native callee reads, in calling-convention order: a register of the caller, or the
/// tuple count of a variadic span (which the call op holds as a constant).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Passed {
    Register(Slot),
    Count(u16),
}

/// A call: arguments typed by the callee's calling convention, results likewise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallOp {
    pub callee: Callee,
    pub arguments: Box<[Slot]>,
    /// What a native callee reads (see [`crate::native::Arguments`]): `arguments` with each
    /// variadic span's tuple count before its tuples. Empty for calls of internal functions,
    /// which are never native.
    pub passed: Box<[Passed]>,
    pub results: Box<[Slot]>,
    /// For yieldable calls: where execution continues (the results are that block's arguments).
    pub resume: Option<u32>,
}

/// Width of a buffer element access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferElement {
    I8U,
    I8S,
    I16U,
    I16S,
    I32,
    I64,
    F32,
    F64,
}

/// The scalar instructions the dispatch loop runs inline rather than through a function pointer
/// (loop counters and conditions, the arithmetic of small kernels), each described once: its
/// [`Opcode`], which is also its [`Op`] variant; the shape of its [`scalar::semantics`], whose
/// function the loop calls directly (`scalar::bin32` and its siblings take it out of the
/// semantics at compile time, and refuse to compile for an instruction of another shape); the
/// widths of the registers it reads and writes; and, where it has them, the variants that fuse it
/// with the `vm.br` after it (a loop latch) or with the `vm.cond_br` on its result (a loop
/// condition). [`Op`] and the dispatch loop are both written from this list by `$callback!`;
/// the lowering builds the generic op of the semantics first and [`Op::specialise`]s it.
macro_rules! inline_ops {
    ($callback:ident) => {
        $callback! {
            AddI32 = bin32(r32, r32) -> w32, br: AddI32Br;
            SubI32 = bin32(r32, r32) -> w32;
            MulI32 = bin32(r32, r32) -> w32;
            AndI32 = bin32(r32, r32) -> w32;
            OrI32 = bin32(r32, r32) -> w32;
            XorI32 = bin32(r32, r32) -> w32;
            ShlI32 = bin32(r32, r32) -> w32;
            ShrI32S = bin32(r32, r32) -> w32;
            ShrI32U = bin32(r32, r32) -> w32;
            CmpEQI32 = bin32(r32, r32) -> w32;
            CmpNEI32 = bin32(r32, r32) -> w32;
            CmpLTI32S = bin32(r32, r32) -> w32, cond_br: CondBrLtI32S;
            AddF32 = bin32(r32, r32) -> w32;
            SubF32 = bin32(r32, r32) -> w32;
            MulF32 = bin32(r32, r32) -> w32;
            AddI64 = bin64(r64, r64) -> w64, br: AddI64Br;
            MulI64 = bin64(r64, r64) -> w64;
            CmpLTI64S = cmp64(r64, r64) -> w32, cond_br: CondBrLtI64S;
            CmpEQI64 = cmp64(r64, r64) -> w32;
        }
    };
}
pub(crate) use inline_ops;

/// Writes [`Op`] from the `inline_ops` list.
macro_rules! define_op {
    ($($op:ident = $f:ident($ra:ident, $rb:ident) -> $w:ident $(, br: $br:ident)? $(, cond_br: $cb:ident)?;)*) => {
        /// One lowered instruction. The explicit tag byte keeps dispatch to one load and an
        /// indirect jump (with a niche-encoded tag, every dispatch first decodes the tag from a
        /// payload field).
        #[derive(Clone, Debug)]
        #[repr(u8)]
        pub enum Op {
            Const32 { value: u32, d: Reg },
            Const64 { value: u64, d: Reg },
            // The scalar instructions without an inline form, through their semantics' pointer.
            Un32 { f: scalar::Un32, a: Reg, d: Reg },
            Bin32 { f: scalar::Bin32, a: Reg, b: Reg, d: Reg },
            Tern32 { f: scalar::Tern32, a: Reg, b: Reg, c: Reg, d: Reg },
            Un64 { f: scalar::Un64, a: Reg, d: Reg },
            Bin64 { f: scalar::Bin64, a: Reg, b: Reg, d: Reg },
            Tern64 { f: scalar::Tern64, a: Reg, b: Reg, c: Reg, d: Reg },
            Shift64 { f: scalar::Shift64, a: Reg, b: Reg, d: Reg },
            Narrow { f: scalar::Narrow, a: Reg, d: Reg },
            Widen { f: scalar::Widen, a: Reg, d: Reg },
            Cmp64 { f: scalar::Cmp64, a: Reg, b: Reg, d: Reg },
            Div32 { f: scalar::Div32, a: Reg, b: Reg, d: Reg },
            Div64 { f: scalar::Div64, a: Reg, b: Reg, d: Reg },
            $(
                #[doc = concat!("`", stringify!($op), "`, run inline (see `inline_ops`).")]
                $op { a: Reg, b: Reg, d: Reg },
            )*
            Select32 { c: Reg, t: Reg, f: Reg, d: Reg },
            Select64 { c: Reg, t: Reg, f: Reg, d: Reg },
            /// Everything on refs, globals, buffers and lists: executed out of line, boxed so
            /// that the ops of loops stay small.
            Cold(Box<ColdOp>),

            Br(Target),
            // An arithmetic op fused with the `vm.br` after it (the latch of a counted loop).
            $($(
                #[doc = concat!("`", stringify!($op), "` and the `vm.br` after it.")]
                $br { a: Reg, b: Reg, d: Reg, t: Target },
            )?)*
            Bin32Br {
                f: scalar::Bin32,
                a: Reg,
                b: Reg,
                d: Reg,
                t: Target,
            },
            // Conditional branches go to `t` when the condition's truth equals `when` and
            // otherwise fall through to the next op: the lowering arranges that the next op is
            // the other destination (emitting a `Br` after the conditional when neither
            // destination follows). Falling through needs no load to find the next op, which
            // keeps a loop header off the dependency chain of the op pointer.
            CondBr {
                c: Reg,
                when: bool,
                t: Target,
            },
            // A binary op fused with the `vm.cond_br` on its result (it still writes `d`).
            $($(
                #[doc = concat!("`", stringify!($op), "` and the `vm.cond_br` on its result (see [`Op::CondBr`]).")]
                $cb { a: Reg, b: Reg, d: Reg, when: bool, t: Target },
            )?)*
            CondBrCmp32 {
                f: scalar::Bin32,
                a: Reg,
                b: Reg,
                d: Reg,
                when: bool,
                t: Target,
            },
            CondBrCmp64 {
                f: scalar::Cmp64,
                a: Reg,
                b: Reg,
                d: Reg,
                when: bool,
                t: Target,
            },
            BrTable {
                index: Reg,
                default: Target,
                cases: Box<[Target]>,
            },
            Call(Box<CallOp>),
            Return {
                values: Box<[Slot]>,
            },
            Fail {
                status: Reg,
                message: Box<str>,
            },
            ImportResolved {
                import: u32,
                d: Reg,
            },
            /// `vm.yield`: branch, then give other work a chance to run.
            Yield(Target),
            /// A loop header whose loop runs as machine code (see [`crate::jit`]); it
            /// replaces the header's op, whose work the code does.
            #[cfg(rtx_jit)]
            Native(crate::jit::Entry),
        }

        impl Op {
            /// Turns a conditional branch on "true" into one on "false" to `target`, for when the
            /// true destination is the one that follows.
            pub fn branch_when_false(&mut self, target: Target) {
                match self {
                    Op::CondBr { when, t, .. }
                    | Op::CondBrCmp32 { when, t, .. }
                    | Op::CondBrCmp64 { when, t, .. }
                    $($(| Op::$cb { when, t, .. })?)* => {
                        *when = false;
                        *t = target;
                    }
                    other => unreachable!("{other:?} is not a conditional branch"),
                }
            }

            /// The inline form of `op`, the generic op [`scalar::semantics`] gives `opcode`,
            /// where the dispatch loop has one.
            pub fn specialise(opcode: Opcode, op: Op) -> Op {
                match (opcode, op) {
                    $(
                        (
                            Opcode::$op,
                            Op::Bin32 { a, b, d, .. } | Op::Bin64 { a, b, d, .. } | Op::Cmp64 { a, b, d, .. },
                        ) => Op::$op { a, b, d },
                    )*
                    (_, op) => op,
                }
            }

            /// The inline fused form of the generic op `first` of `opcode` and the branch after
            /// it, where the dispatch loop has one.
            pub fn fuse_inline(opcode: Opcode, first: &Op, branch: &Op) -> Option<Op> {
                let (a, b, d) = match *first {
                    Op::Bin32 { a, b, d, .. } | Op::Bin64 { a, b, d, .. } | Op::Cmp64 { a, b, d, .. } => (a, b, d),
                    _ => return None,
                };
                match (opcode, branch) {
                    $($((Opcode::$op, &Op::Br(t)) => Some(Op::$br { a, b, d, t }),)?)*
                    $($((Opcode::$op, &Op::CondBr { when, t, .. }) => Some(Op::$cb { a, b, d, when, t }),)?)*
                    _ => None,
                }
            }
        }
    };
}

inline_ops!(define_op);

/// The ops the dispatch loop hands to [`super::cold`]: each does enough work (reference counts,
/// bounds checks, allocation) that a call and a pointer chase cost nothing in comparison, and
/// keeping them out of the loop leaves the machine registers to the scalar ops.
#[derive(Clone, Debug)]
pub enum ColdOp {
    SelectRef {
        c: Reg,
        check: RefCheck,
        t: RefReg,
        f: RefReg,
        d: Reg,
    },
    Switch32 {
        index: Reg,
        default: Reg,
        values: Box<[Reg]>,
        d: Reg,
    },
    Switch64 {
        index: Reg,
        default: Reg,
        values: Box<[Reg]>,
        d: Reg,
    },
    SwitchRef {
        index: Reg,
        check: RefCheck,
        default: RefReg,
        values: Box<[RefReg]>,
        d: Reg,
    },

    GlobalLoad32 {
        offset: u32,
        d: Reg,
    },
    GlobalStore32 {
        offset: u32,
        s: Reg,
    },
    GlobalLoad64 {
        offset: u32,
        d: Reg,
    },
    GlobalStore64 {
        offset: u32,
        s: Reg,
    },
    GlobalLoadIndirect32 {
        offset: Reg,
        d: Reg,
    },
    GlobalStoreIndirect32 {
        offset: Reg,
        s: Reg,
    },
    GlobalLoadIndirect64 {
        offset: Reg,
        d: Reg,
    },
    GlobalStoreIndirect64 {
        offset: Reg,
        s: Reg,
    },
    GlobalLoadRef {
        global: u32,
        check: RefCheck,
        d: RefReg,
    },
    GlobalStoreRef {
        global: u32,
        check: RefCheck,
        s: RefReg,
    },
    GlobalLoadIndirectRef {
        global: Reg,
        check: RefCheck,
        d: RefReg,
    },
    GlobalStoreIndirectRef {
        global: Reg,
        check: RefCheck,
        s: RefReg,
    },

    ConstRefZero {
        d: Reg,
    },
    ConstRodata {
        ordinal: u32,
        d: Reg,
    },
    AssignRef {
        s: RefReg,
        d: Reg,
    },
    CastAnyRef {
        s: RefReg,
        check: RefCheck,
        d: Reg,
    },
    DiscardRefs {
        regs: Box<[Reg]>,
    },
    /// Releases the listed refs that carry the move bit (`vm.trace` / `vm.print` operands).
    DiscardMoved {
        regs: Box<[Reg]>,
    },
    CmpEqRef {
        a: Reg,
        b: Reg,
        d: Reg,
    },
    CmpNeRef {
        a: Reg,
        b: Reg,
        d: Reg,
    },
    CmpNzRef {
        a: Reg,
        d: Reg,
    },

    BufferAlloc {
        length: Reg,
        alignment: Reg,
        d: Reg,
    },
    BufferClone {
        source: Reg,
        offset: Reg,
        length: Reg,
        alignment: Reg,
        d: Reg,
    },
    BufferLength {
        buffer: Reg,
        d: Reg,
    },
    BufferCopy {
        source: Reg,
        source_offset: Reg,
        target: Reg,
        target_offset: Reg,
        length: Reg,
    },
    BufferCompare {
        lhs: Reg,
        lhs_offset: Reg,
        rhs: Reg,
        rhs_offset: Reg,
        length: Reg,
        d: Reg,
    },
    BufferFill {
        element: BufferElement,
        buffer: Reg,
        offset: Reg,
        length: Reg,
        value: Reg,
    },
    BufferLoad {
        element: BufferElement,
        buffer: Reg,
        offset: Reg,
        d: Reg,
    },
    BufferStore {
        element: BufferElement,
        buffer: Reg,
        offset: Reg,
        value: Reg,
    },
    BufferHash {
        buffer: Reg,
        offset: Reg,
        length: Reg,
        d: Reg,
    },

    ListAlloc {
        element_type: u32,
        capacity: Reg,
        d: Reg,
    },
    ListReserve {
        list: Reg,
        capacity: Reg,
    },
    ListSize {
        list: Reg,
        d: Reg,
    },
    ListResize {
        list: Reg,
        size: Reg,
    },
    ListGet {
        kind: ValueKind,
        list: Reg,
        index: Reg,
        d: Reg,
    },
    ListSet {
        kind: ValueKind,
        list: Reg,
        index: Reg,
        value: Reg,
    },
    ListGetRef {
        list: Reg,
        index: Reg,
        check: RefCheck,
        d: RefReg,
    },
    ListSetRef {
        list: Reg,
        index: Reg,
        value: RefReg,
    },
}

impl From<ColdOp> for Op {
    fn from(op: ColdOp) -> Op {
        Op::Cold(Box::new(op))
    }
}
