//! Load-time lowering of verified bytecode into [`Op`]s.
//!
//! Runs after the verifier (which proved register ordinals, banks of fixed fields, branch targets
//! and table indices) and adds the checks that need the module around the function: call
//! operands and results against the callee's calling convention (count, bank, pair alignment),
//! return values against the function's own results, and type ids that typed ref operations
//! compare against. A failure is a [`LoadError`] at the instruction's file offset, so a module
//! with such a defect never runs.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use super::coalesce::coalesce;
use super::op::{BufferElement, CallOp, Callee, ColdOp, Moves, Op, Passed, RefCheck, RefReg, Reg, Remap, Slot, Target};
use super::scalar::{self as s, Semantics};
use crate::abi::{plain_kinds, CallingConvention, CconvItem, ValueKind};
use crate::bytecode::decode::{decode_function, DecodedInstruction, DecodedOperand, Register, RegisterRemap};
use crate::bytecode::isa::{InstructionKind, Opcode, RegisterBank, Transfer, Width};
use crate::module_def::{describe_function, FunctionDescriptor, ModuleDef};
use crate::refs::RefType;
use crate::LoadError;

/// One internal function, ready to run.
#[derive(Debug)]
pub struct LoweredFunction {
    pub ops: Box<[Op]>,
    /// Bytecode offset (from the function start) of each op, for source locations in errors.
    pub offsets: Box<[u32]>,
    pub i32_register_count: u16,
    pub ref_register_count: u16,
    /// The calling convention as parsed from the signature.
    pub cconv: CallingConvention,
    /// Where each argument lands in a fresh frame.
    pub arguments: Box<[Slot]>,
    pub results: Box<[ValueKind]>,
    /// The branch argument moves too large to keep inline ([`Moves::Many`] indexes this).
    pub remaps: Box<[Remap]>,
    /// The machine code that [`Op::Native`] entries point into, kept mapped while they exist.
    #[cfg(rtx_jit)]
    pub code: Option<std::sync::Arc<crate::jit::CodeMemory>>,
    /// What the spans of the table each entry takes cover.
    #[cfg(rtx_jit)]
    pub jit_spans: Box<[crate::jit::SpanOf]>,
}

/// Lowers every internal function of `def`, whose file bytes are `file`.
pub fn lower_module(def: &ModuleDef, file: &[u8]) -> Result<Vec<LoweredFunction>, LoadError> {
    let internal: Vec<Option<CallingConvention>> = def
        .function_signatures
        .iter()
        .map(|signature| signature.calling_convention.as_deref().and_then(|c| CallingConvention::parse(c).ok()))
        .collect();
    let imports: Vec<Option<CallingConvention>> = def
        .imported_functions
        .iter()
        .map(|import| {
            import
                .signature
                .as_ref()
                .and_then(|s| s.calling_convention.as_deref())
                .and_then(|c| CallingConvention::parse(c).ok())
        })
        .collect();
    let module = ModuleScope {
        def,
        internal: &internal,
        imports: &imports,
        #[cfg(rtx_jit)]
        entries: crate::jit::entries(),
    };
    let lowered = def
        .function_descriptors
        .iter()
        .enumerate()
        .map(|(ordinal, descriptor)| {
            let start = def.bytecode_data.offset + descriptor.bytecode_offset as usize;
            let bytecode = file.get(start..start + descriptor.bytecode_length as usize).unwrap_or_default();
            module
                .lower_function(ordinal, descriptor, bytecode)
                .map_err(|e| LoadError { offset: start + e.offset, ..e })
        })
        .collect::<Result<Vec<_>, LoadError>>()?;
    #[cfg(rtx_jit)]
    {
        let (mut functions, inputs): (Vec<LoweredFunction>, Vec<_>) = lowered.into_iter().unzip();
        let Some(entries) = module.entries else { return Ok(functions) };
        let callees = functions.iter().map(callee).collect();
        let compiled = crate::jit::compile_module(&inputs, callees, entries);
        for (function, linked) in functions.iter_mut().zip(crate::jit::link(compiled)) {
            if let Some(linked) = linked {
                for (op, entry) in linked.entries {
                    function.ops[op as usize] = Op::Native(entry);
                }
                function.code = Some(linked.code);
                function.jit_spans = linked.spans;
            }
        }
        Ok(functions)
    }
    #[cfg(not(rtx_jit))]
    Ok(lowered.into_iter().map(|(function, ())| function).collect())
}

/// What the loop compiler takes of a function (nothing where there is no compiler).
#[cfg(rtx_jit)]
type Compiled<'a> = Option<crate::jit::Input<'a>>;
#[cfg(not(rtx_jit))]
type Compiled<'a> = ();

/// `function` as compiled callers see it; callable (until its code says otherwise) when every
/// argument and result is a scalar and the frame and results fit what compiled calls allow.
#[cfg(rtx_jit)]
fn callee(function: &LoweredFunction) -> crate::jit::Callee {
    let pair = |kind: ValueKind| matches!(kind, ValueKind::I64 | ValueKind::F64);
    let scalar = |kind: ValueKind| kind != ValueKind::Ref;
    let result_words: u32 = function.results.iter().map(|&kind| if pair(kind) { 2 } else { 1 }).sum();
    crate::jit::Callee {
        frame: function.i32_register_count,
        arguments: function.arguments.iter().map(|slot| (slot.reg, pair(slot.kind))).collect(),
        results: function.results.iter().map(|&kind| pair(kind)).collect(),
        callable: function.arguments.iter().all(|slot| scalar(slot.kind))
            && function.results.iter().all(|&kind| scalar(kind))
            && function.i32_register_count <= crate::jit::MAX_CALLEE_FRAME
            && result_words <= crate::jit::RESULT_WORDS,
    }
}

struct ModuleScope<'a> {
    def: &'a ModuleDef,
    internal: &'a [Option<CallingConvention>],
    imports: &'a [Option<CallingConvention>],
    /// Where compiled loop code is entered, if it is made at all.
    #[cfg(rtx_jit)]
    entries: Option<crate::jit::Entries>,
}

impl ModuleScope<'_> {
    fn lower_function<'b>(
        &self,
        ordinal: usize,
        descriptor: &FunctionDescriptor,
        bytecode: &'b [u8],
    ) -> Result<(LoweredFunction, Compiled<'b>), LoadError> {
        let name = describe_function(&self.def.exported_functions, ordinal);
        let cconv = self.internal[ordinal].clone().ok_or_else(|| {
            let text = self.def.function_signatures[ordinal].calling_convention.as_deref().unwrap_or("");
            LoadError::malformed(0, format!("{name}: calling convention `{text}` is missing or malformed"))
        })?;
        let results = plain_kinds(&cconv.results).ok_or_else(|| {
            LoadError::malformed(0, format!("{name}: a bytecode function cannot return a variadic span"))
        })?;
        let mut decoded = decode_function(bytecode)?;
        coalesce(&mut decoded);
        // Pairs that become one op: a compare and the `vm.cond_br` on its result, or an arithmetic
        // op and the `vm.br` after it (adjacent, so in the same block).
        let fused: Vec<bool> =
            (0..decoded.len()).map(|i| decoded.get(i + 1).is_some_and(|next| fusable(&decoded[i], next))).collect();
        // Block marker offset -> index of the op that follows it.
        let mut blocks = HashMap::new();
        let mut count = 0u32;
        for (i, instruction) in decoded.iter().enumerate() {
            if instruction.instruction.kind == InstructionKind::BlockMarker {
                blocks.insert(instruction.offset as u32, count);
            } else if i == 0 || !fused[i - 1] {
                count += 1;
            }
            // A conditional branch neither of whose destinations follows it takes a `Br` after it.
            if instruction.opcode() == Opcode::CondBranch && falls_through(&decoded, i) == (false, false) {
                count += 1;
            }
        }
        let mut lowering = FunctionLowering {
            module: self,
            name: &name,
            blocks: &blocks,
            descriptor,
            results: &results,
            offset: 0,
            op_index: 0,
            remaps: RefCell::new(Vec::new()),
            otherwise: Cell::new(None),
        };
        let mut ops = Vec::with_capacity(count as usize);
        let mut offsets = Vec::with_capacity(count as usize);
        // The op index each instruction begins (none for markers and fused second halves).
        #[cfg(rtx_jit)]
        let mut starts = vec![None; decoded.len()];
        let mut i = 0;
        while i < decoded.len() {
            let instruction = &decoded[i];
            i += 1;
            if instruction.instruction.kind == InstructionKind::BlockMarker {
                continue;
            }
            #[cfg(rtx_jit)]
            {
                starts[i - 1] = Some(ops.len() as u32);
            }
            lowering.offset = instruction.offset;
            lowering.op_index = ops.len() as u32;
            let mut op = lowering.lower(instruction)?;
            if fused[i - 1] {
                lowering.offset = decoded[i].offset;
                let branch = lowering.lower(&decoded[i])?;
                op = fuse(instruction.opcode(), op, branch)
                    .ok_or_else(|| lowering.error("the instruction does not fuse with the branch after it"))?;
                i += 1;
            } else {
                op = Op::specialise(instruction.opcode(), op);
            }
            let explicit_else = match lowering.otherwise.take() {
                None => None,
                Some(otherwise) => match falls_through(&decoded, i - 1) {
                    (_, true) => None,
                    (true, false) => {
                        op.branch_when_false(otherwise);
                        None
                    }
                    // The `Br` is the next op: its distance counts from there.
                    (false, false) => Some(Target { delta: otherwise.delta - Target::NEXT, ..otherwise }),
                },
            };
            ops.push(op);
            offsets.push(instruction.offset as u32);
            if let Some(target) = explicit_else {
                ops.push(Op::Br(target));
                offsets.push(decoded[i - 1].offset as u32);
            }
        }
        let layout = cconv.argument_layout().ok_or_else(|| {
            LoadError::malformed(0, format!("{name}: a bytecode function cannot take a variadic span"))
        })?;
        let frame = layout
            .slots()
            .iter()
            .map(|slot| {
                let reg = Reg::try_from(slot.ordinal)
                    .map_err(|_| LoadError::malformed(0, format!("{name}: too many arguments for a frame")))?;
                Ok(Slot { kind: slot.kind, reg, is_move: false })
            })
            .collect::<Result<Vec<_>, LoadError>>()?;
        let remaps = lowering.remaps.into_inner().into();
        #[cfg(rtx_jit)]
        let compiled = self.entries.map(|_| crate::jit::Input { decoded, starts, blocks });
        #[cfg(not(rtx_jit))]
        let compiled = ();
        let function = LoweredFunction {
            ops: ops.into(),
            offsets: offsets.into(),
            i32_register_count: descriptor.i32_register_count,
            ref_register_count: descriptor.ref_register_count,
            cconv,
            arguments: frame.into(),
            results: results.into(),
            remaps,
            #[cfg(rtx_jit)]
            code: None,
            #[cfg(rtx_jit)]
            jit_spans: Box::default(),
        };
        Ok((function, compiled))
    }
}

struct FunctionLowering<'a> {
    module: &'a ModuleScope<'a>,
    name: &'a str,
    blocks: &'a HashMap<u32, u32>,
    descriptor: &'a FunctionDescriptor,
    results: &'a [ValueKind],
    offset: usize,
    /// The index the op being lowered will have (branch distances count from it).
    op_index: u32,
    remaps: RefCell<Vec<Remap>>,
    /// The false destination of the `vm.cond_br` just lowered, which the conditional op itself
    /// does not hold (see [`Op::CondBr`]).
    otherwise: Cell<Option<Target>>,
}

/// Register operands of an instruction in encoding order, for the fixed-shape instructions.
struct Operands<'i> {
    registers: Vec<Register>,
    instruction: &'i DecodedInstruction<'i>,
}

impl Operands<'_> {
    fn reg(&self, index: usize) -> Reg {
        self.registers[index].ordinal
    }
    fn ref_reg(&self, index: usize) -> RefReg {
        RefReg { reg: self.registers[index].ordinal, is_move: self.registers[index].is_move }
    }
    fn find<T>(&self, pick: impl Fn(&DecodedOperand<'_>) -> Option<T>) -> T {
        self.instruction.operands.iter().find_map(pick).expect("the ISA table fixes this operand")
    }
    fn type_id(&self) -> u32 {
        self.find(|o| if let DecodedOperand::TypeId(t) = o { Some(*t) } else { None })
    }
    fn list(&self) -> Vec<Register> {
        self.find(|o| if let DecodedOperand::Registers(r) = o { Some(r.clone()) } else { None })
    }
}

impl FunctionLowering<'_> {
    fn error(&self, message: impl std::fmt::Display) -> LoadError {
        LoadError::malformed(self.offset, format!("{}: at bytecode offset {}: {message}", self.name, self.offset))
    }

    /// The index of the first op of the block whose marker is at `offset`.
    fn block(&self, offset: u32) -> Result<u32, LoadError> {
        self.blocks.get(&offset).copied().ok_or_else(|| self.error(format!("branch target {offset} is not a block")))
    }

    fn target(&self, offset: u32, remaps: &[RegisterRemap]) -> Result<Target, LoadError> {
        let op = self.block(offset)?;
        let delta = (i64::from(op) - i64::from(self.op_index)) * i64::from(Target::NEXT);
        let delta = i32::try_from(delta).map_err(|_| self.error("the function is too large to run"))?;
        Ok(Target { delta, moves: self.moves(remaps) })
    }

    fn moves(&self, remaps: &[RegisterRemap]) -> Moves {
        match remaps {
            [] => Moves::None,
            [only] if only.source.bank != RegisterBank::Ref => {
                Moves::One(only.source.ordinal, only.destination.ordinal)
            }
            _ => {
                let ints = remaps
                    .iter()
                    .filter(|m| m.source.bank != RegisterBank::Ref)
                    .map(|m| (m.source.ordinal, m.destination.ordinal))
                    .collect();
                let refs = remaps
                    .iter()
                    .filter(|m| m.source.bank == RegisterBank::Ref)
                    .map(|m| (RefReg { reg: m.source.ordinal, is_move: m.source.is_move }, m.destination.ordinal))
                    .collect();
                let mut table = self.remaps.borrow_mut();
                table.push(Remap { ints, refs });
                Moves::Many(table.len() as u32 - 1)
            }
        }
    }

    fn check(&self, type_id: u32) -> RefCheck {
        let name = self.module.def.types.get(type_id as usize).map_or("?", |t| t.full_name.as_str());
        match RefType::parse(name) {
            RefType::Any => RefCheck::Any,
            RefType::Named(name) => RefCheck::Named(name.into()),
            RefType::NotARef => RefCheck::Primitive(name.into()),
        }
    }

    /// Types a list of value registers (call operands, call results, return values) by `kinds`.
    fn slots(&self, what: &str, registers: &[Register], kinds: &[ValueKind]) -> Result<Box<[Slot]>, LoadError> {
        if registers.len() != kinds.len() {
            return Err(self.error(format!(
                "{what}: {} values where the signature has {}",
                registers.len(),
                kinds.len()
            )));
        }
        registers
            .iter()
            .zip(kinds)
            .enumerate()
            .map(|(i, (register, &kind))| {
                let is_ref = register.bank == RegisterBank::Ref;
                if is_ref != (kind == ValueKind::Ref) {
                    return Err(self.error(format!(
                        "{what} {i}: register {:#06x} is in the wrong bank for {kind:?}",
                        register.raw
                    )));
                }
                if matches!(kind, ValueKind::I64 | ValueKind::F64)
                    && (register.ordinal % 2 != 0 || register.ordinal + 1 >= self.descriptor.i32_register_count)
                {
                    return Err(self.error(format!(
                        "{what} {i}: {kind:?} register {} is not an even pair in the frame",
                        register.ordinal
                    )));
                }
                Ok(Slot { kind, reg: register.ordinal, is_move: register.is_move })
            })
            .collect()
    }

    fn call(&self, instruction: &DecodedInstruction<'_>) -> Result<Op, LoadError> {
        let mut callee = None;
        let mut segments: Option<&[u16]> = None;
        let mut lists = Vec::new();
        let mut resume = None;
        for operand in &instruction.operands {
            match operand {
                DecodedOperand::FunctionOrdinal { ordinal, is_import } => callee = Some((*ordinal, *is_import)),
                DecodedOperand::SegmentSizes(sizes) => segments = Some(sizes),
                DecodedOperand::Registers(list) => lists.push(list.as_slice()),
                DecodedOperand::BranchTarget(target) => resume = Some(*target),
                _ => {}
            }
        }
        let (Some((ordinal, is_import)), [arguments, results]) = (callee, lists.as_slice()) else {
            return Err(self.error("malformed call"));
        };
        let (cconv, callee) = if is_import {
            (self.module.imports.get(ordinal as usize).and_then(Option::as_ref), Callee::Import(ordinal))
        } else {
            (self.module.internal.get(ordinal as usize).and_then(Option::as_ref), Callee::Internal(ordinal))
        };
        let cconv = cconv.ok_or_else(|| self.error(format!("callee {callee:?} has no usable calling convention")))?;
        let (argument_kinds, segments) = match segments {
            None => (
                plain_kinds(&cconv.arguments)
                    .ok_or_else(|| self.error("a plain call cannot pass a callee's variadic span"))?,
                Box::default(),
            ),
            Some(sizes) => self.variadic_kinds(&cconv.arguments, sizes)?,
        };
        let result_kinds = plain_kinds(&cconv.results).ok_or_else(|| self.error("callee returns a variadic span"))?;
        let resume = match resume {
            Some(offset) => Some(self.block(offset)?),
            None => None,
        };
        let arguments = self.slots("call argument", arguments, &argument_kinds)?;
        let passed = match callee {
            Callee::Import(_) => passed(&arguments, &segments),
            Callee::Internal(_) => Box::default(),
        };
        Ok(Op::Call(Box::new(CallOp {
            callee,
            arguments,
            passed,
            results: self.slots("call result", results, &result_kinds)?,
            resume,
        })))
    }

    /// Flattens a callee's arguments for `vm.call.variadic`: one segment size per top-level
    /// argument, `0xFFFF` for a plain value, else the number of span tuples passed.
    fn variadic_kinds(
        &self,
        items: &[CconvItem],
        sizes: &[u16],
    ) -> Result<(Vec<ValueKind>, Box<[Segment]>), LoadError> {
        if items.len() != sizes.len() {
            return Err(self.error(format!("{} segment sizes for {} callee arguments", sizes.len(), items.len())));
        }
        let mut kinds = Vec::new();
        let mut segments = Vec::with_capacity(sizes.len());
        for (i, (item, &size)) in items.iter().zip(sizes).enumerate() {
            match (item, size) {
                (CconvItem::Value(kind), crate::bytecode::decode::NON_VARIADIC_SEGMENT) => {
                    kinds.push(*kind);
                    segments.push(None);
                }
                (CconvItem::Span(fields), count) if count != crate::bytecode::decode::NON_VARIADIC_SEGMENT => {
                    for _ in 0..count {
                        kinds.extend_from_slice(fields);
                    }
                    segments.push(Some((count, fields.len() as u16)));
                }
                _ => return Err(self.error(format!("segment {i} ({size}) does not match the callee's argument {i}"))),
            }
        }
        Ok((kinds, segments.into()))
    }

    /// Lowers one instruction. Scalar instructions become the generic op of their
    /// [`s::semantics`]; the caller specialises or fuses it.
    fn lower(&self, instruction: &DecodedInstruction<'_>) -> Result<Op, LoadError> {
        use Opcode as O;
        let o = Operands { registers: registers(instruction), instruction };
        let immediate = || -> u64 {
            o.find(|op| match op {
                DecodedOperand::ImmediateI32(v) => Some(*v as u32 as u64),
                DecodedOperand::ImmediateF32(v) => Some(v.to_bits() as u64),
                DecodedOperand::ImmediateI64(v) => Some(*v as u64),
                DecodedOperand::ImmediateF64(v) => Some(v.to_bits()),
                _ => None,
            })
        };
        let global = || o.find(|op| if let DecodedOperand::GlobalByteOffset(g) = op { Some(*g) } else { None });
        let global_ref = || o.find(|op| if let DecodedOperand::GlobalRefOrdinal(g) = op { Some(*g) } else { None });
        let string = || {
            o.find(|op| {
                if let DecodedOperand::String(bytes) = op {
                    Some(String::from_utf8_lossy(bytes).into_owned())
                } else {
                    None
                }
            })
        };
        let branch = |index: usize| -> Result<Target, LoadError> {
            let targets: Vec<u32> = instruction
                .operands
                .iter()
                .filter_map(|op| if let DecodedOperand::BranchTarget(t) = op { Some(*t) } else { None })
                .collect();
            let remaps: Vec<&Vec<RegisterRemap>> = instruction
                .operands
                .iter()
                .filter_map(|op| if let DecodedOperand::BranchOperands(r) = op { Some(r) } else { None })
                .collect();
            self.target(targets[index], remaps.get(index).map_or(&[][..], |r| r.as_slice()))
        };
        use BufferElement as E;
        let r = |i| o.reg(i);
        let fill =
            |element| ColdOp::BufferFill { element, buffer: r(0), offset: r(1), length: r(2), value: r(3) }.into();
        let load = |element| ColdOp::BufferLoad { element, buffer: r(0), offset: r(1), d: r(2) }.into();
        let store = |element| ColdOp::BufferStore { element, buffer: r(0), offset: r(1), value: r(2) }.into();
        let list_get = |kind| ColdOp::ListGet { kind, list: r(0), index: r(1), d: r(2) }.into();
        let list_set = |kind| ColdOp::ListSet { kind, list: r(0), index: r(1), value: r(2) }.into();
        // The i32 and f32 (i64 and f64) forms of the instructions that only move bits are one op
        // of their width.
        if let Some((transfer, width)) = instruction.instruction.transfer {
            use Transfer as T;
            use Width::{W32, W64};
            return Ok(match (transfer, width) {
                (T::ConstZero, W32) => Op::Const32 { value: 0, d: r(0) },
                (T::ConstZero, W64) => Op::Const64 { value: 0, d: r(0) },
                (T::Const, W32) => Op::Const32 { value: immediate() as u32, d: r(0) },
                (T::Const, W64) => Op::Const64 { value: immediate(), d: r(0) },
                (T::Select, W32) => Op::Select32 { c: r(0), t: r(1), f: r(2), d: r(3) },
                (T::Select, W64) => Op::Select64 { c: r(0), t: r(1), f: r(2), d: r(3) },
                (T::Switch, W32) => ColdOp::Switch32 {
                    index: r(0),
                    default: r(1),
                    values: o.list().iter().map(|x| x.ordinal).collect(),
                    d: r(2),
                }
                .into(),
                (T::Switch, W64) => ColdOp::Switch64 {
                    index: r(0),
                    default: r(1),
                    values: o.list().iter().map(|x| x.ordinal).collect(),
                    d: r(2),
                }
                .into(),
                (T::GlobalLoad, W32) => ColdOp::GlobalLoad32 { offset: global(), d: r(0) }.into(),
                (T::GlobalStore, W32) => ColdOp::GlobalStore32 { offset: global(), s: r(0) }.into(),
                (T::GlobalLoad, W64) => ColdOp::GlobalLoad64 { offset: global(), d: r(0) }.into(),
                (T::GlobalStore, W64) => ColdOp::GlobalStore64 { offset: global(), s: r(0) }.into(),
                (T::GlobalLoadIndirect, W32) => ColdOp::GlobalLoadIndirect32 { offset: r(0), d: r(1) }.into(),
                (T::GlobalStoreIndirect, W32) => ColdOp::GlobalStoreIndirect32 { offset: r(0), s: r(1) }.into(),
                (T::GlobalLoadIndirect, W64) => ColdOp::GlobalLoadIndirect64 { offset: r(0), d: r(1) }.into(),
                (T::GlobalStoreIndirect, W64) => ColdOp::GlobalStoreIndirect64 { offset: r(0), s: r(1) }.into(),
            });
        }
        let op = match instruction.opcode() {
            O::SelectRef => {
                ColdOp::SelectRef { c: r(0), check: self.check(o.type_id()), t: o.ref_reg(1), f: o.ref_reg(2), d: r(3) }
                    .into()
            }
            O::SwitchRef => ColdOp::SwitchRef {
                index: r(0),
                check: self.check(o.type_id()),
                default: o.ref_reg(1),
                values: o.list().iter().map(|x| RefReg { reg: x.ordinal, is_move: x.is_move }).collect(),
                d: r(2),
            }
            .into(),
            O::GlobalLoadRef => {
                ColdOp::GlobalLoadRef { global: global_ref(), check: self.check(o.type_id()), d: o.ref_reg(0) }.into()
            }
            O::GlobalStoreRef => {
                ColdOp::GlobalStoreRef { global: global_ref(), check: self.check(o.type_id()), s: o.ref_reg(0) }.into()
            }
            O::GlobalLoadIndirectRef => {
                ColdOp::GlobalLoadIndirectRef { global: r(0), check: self.check(o.type_id()), d: o.ref_reg(1) }.into()
            }
            O::GlobalStoreIndirectRef => {
                ColdOp::GlobalStoreIndirectRef { global: r(0), check: self.check(o.type_id()), s: o.ref_reg(1) }.into()
            }
            O::ConstRefZero => ColdOp::ConstRefZero { d: r(0) }.into(),
            O::ConstRefRodata => ColdOp::ConstRodata {
                ordinal: o.find(|op| if let DecodedOperand::RodataOrdinal(n) = op { Some(*n) } else { None }),
                d: r(0),
            }
            .into(),
            O::AssignRef => ColdOp::AssignRef { s: o.ref_reg(0), d: r(1) }.into(),
            O::CastAnyRef => ColdOp::CastAnyRef { s: o.ref_reg(0), check: self.check(o.type_id()), d: r(1) }.into(),
            O::DiscardRefs => ColdOp::DiscardRefs { regs: self.ref_list(&o.list())? }.into(),
            O::Trace | O::Print => ColdOp::DiscardMoved {
                regs: o.list().iter().filter(|x| x.bank == RegisterBank::Ref && x.is_move).map(|x| x.ordinal).collect(),
            }
            .into(),
            O::CmpEQRef => ColdOp::CmpEqRef { a: r(0), b: r(1), d: r(2) }.into(),
            O::CmpNERef => ColdOp::CmpNeRef { a: r(0), b: r(1), d: r(2) }.into(),
            O::CmpNZRef => ColdOp::CmpNzRef { a: r(0), d: r(1) }.into(),
            O::BufferAlloc => ColdOp::BufferAlloc { length: r(0), alignment: r(1), d: r(2) }.into(),
            O::BufferClone => {
                ColdOp::BufferClone { source: r(0), offset: r(1), length: r(2), alignment: r(3), d: r(4) }.into()
            }
            O::BufferLength => ColdOp::BufferLength { buffer: r(0), d: r(1) }.into(),
            O::BufferCopy => ColdOp::BufferCopy {
                source: r(0),
                source_offset: r(1),
                target: r(2),
                target_offset: r(3),
                length: r(4),
            }
            .into(),
            O::BufferCompare => ColdOp::BufferCompare {
                lhs: r(0),
                lhs_offset: r(1),
                rhs: r(2),
                rhs_offset: r(3),
                length: r(4),
                d: r(5),
            }
            .into(),
            O::BufferHash => ColdOp::BufferHash { buffer: r(0), offset: r(1), length: r(2), d: r(3) }.into(),
            O::BufferFillI8 => fill(E::I8S),
            O::BufferFillI16 => fill(E::I16S),
            O::BufferFillI32 => fill(E::I32),
            O::BufferFillI64 => fill(E::I64),
            O::BufferFillF32 => fill(E::F32),
            O::BufferFillF64 => fill(E::F64),
            O::BufferLoadI8U => load(E::I8U),
            O::BufferLoadI8S => load(E::I8S),
            O::BufferLoadI16U => load(E::I16U),
            O::BufferLoadI16S => load(E::I16S),
            O::BufferLoadI32 => load(E::I32),
            O::BufferLoadI64 => load(E::I64),
            O::BufferLoadF32 => load(E::F32),
            O::BufferLoadF64 => load(E::F64),
            O::BufferStoreI8 => store(E::I8S),
            O::BufferStoreI16 => store(E::I16S),
            O::BufferStoreI32 => store(E::I32),
            O::BufferStoreI64 => store(E::I64),
            O::BufferStoreF32 => store(E::F32),
            O::BufferStoreF64 => store(E::F64),
            O::ListAlloc => ColdOp::ListAlloc { element_type: o.type_id(), capacity: r(0), d: r(1) }.into(),
            O::ListReserve => ColdOp::ListReserve { list: r(0), capacity: r(1) }.into(),
            O::ListSize => ColdOp::ListSize { list: r(0), d: r(1) }.into(),
            O::ListResize => ColdOp::ListResize { list: r(0), size: r(1) }.into(),
            O::ListGetI32 => list_get(ValueKind::I32),
            O::ListGetI64 => list_get(ValueKind::I64),
            O::ListGetF32 => list_get(ValueKind::F32),
            O::ListGetF64 => list_get(ValueKind::F64),
            O::ListSetI32 => list_set(ValueKind::I32),
            O::ListSetI64 => list_set(ValueKind::I64),
            O::ListSetF32 => list_set(ValueKind::F32),
            O::ListSetF64 => list_set(ValueKind::F64),
            O::ListGetRef => {
                ColdOp::ListGetRef { list: r(0), index: r(1), check: self.check(o.type_id()), d: o.ref_reg(2) }.into()
            }
            O::ListSetRef => ColdOp::ListSetRef { list: r(0), index: r(1), value: o.ref_reg(2) }.into(),
            O::Branch | O::Break | O::CondBreak => Op::Br(branch(0)?),
            O::Yield => Op::Yield(branch(0)?),
            O::CondBranch => {
                self.otherwise.set(Some(branch(1)?));
                Op::CondBr { c: r(0), when: true, t: branch(0)? }
            }
            O::BranchTable => {
                let (default_target, default_remaps) = (
                    instruction.operands.iter().find_map(|op| {
                        if let DecodedOperand::BranchTarget(t) = op {
                            Some(*t)
                        } else {
                            None
                        }
                    }),
                    instruction.operands.iter().find_map(|op| {
                        if let DecodedOperand::BranchOperands(r) = op {
                            Some(r)
                        } else {
                            None
                        }
                    }),
                );
                let cases =
                    o.find(|op| if let DecodedOperand::BranchTableCases(c) = op { Some(c.clone()) } else { None });
                Op::BrTable {
                    index: r(0),
                    default: self.target(default_target.unwrap_or(u32::MAX), default_remaps.map_or(&[][..], |r| r))?,
                    cases: cases.iter().map(|case| self.target(case.target, &case.remaps)).collect::<Result<_, _>>()?,
                }
            }
            O::Call | O::CallVariadic | O::CallYieldable | O::CallVariadicYieldable => self.call(instruction)?,
            O::Return => Op::Return { values: self.slots("return value", &o.list(), self.results)? },
            O::Fail => Op::Fail { status: r(0), message: string().into() },
            O::ImportResolved => {
                let (ordinal, is_import) = o.find(|op| {
                    if let DecodedOperand::FunctionOrdinal { ordinal, is_import } = op {
                        Some((*ordinal, *is_import))
                    } else {
                        None
                    }
                });
                if !is_import {
                    return Err(self.error("vm.import.resolved names an internal function"));
                }
                Op::ImportResolved { import: ordinal, d: r(0) }
            }
            // Not operations: the decoder consumes prefixes, and the lowering skips markers.
            O::Block | O::PrefixExtF32 | O::PrefixExtF64 => {
                return Err(self.error(format!("{} is not an operation", instruction.instruction.name)))
            }
            // Every other opcode is a scalar instruction (or a transfer, lowered above), which
            // `semantics` knows by the table's class.
            scalar => match s::semantics(scalar) {
                Some(semantics) => scalar_op(semantics, &o.registers),
                None => {
                    return Err(
                        self.error(format!("`{}` is not supported by this interpreter", instruction.instruction.name))
                    )
                }
            },
        };
        Ok(op)
    }

    fn ref_list(&self, list: &[Register]) -> Result<Box<[Reg]>, LoadError> {
        list.iter()
            .map(|x| {
                if x.bank == RegisterBank::Ref {
                    Ok(x.ordinal)
                } else {
                    Err(self.error(format!("register {:#06x} in a ref list is not a ref", x.raw)))
                }
            })
            .collect()
    }
}

/// How `vm.call.variadic` passes one top-level argument of the callee: `None` for a plain value,
/// else a variadic span's (tuple count, values per tuple).
pub(super) type Segment = Option<(u16, u16)>;

/// What a native callee reads of a call passing `arguments` (see [`CallOp::passed`]): for a
/// plain call (no segments) the arguments themselves.
pub(super) fn passed(arguments: &[Slot], segments: &[Segment]) -> Box<[Passed]> {
    if segments.is_empty() {
        return arguments.iter().map(|slot| Passed::Register(*slot)).collect();
    }
    let mut passed = Vec::with_capacity(arguments.len() + segments.len());
    let mut slots = arguments.iter();
    for segment in segments {
        let values = match *segment {
            None => 1,
            Some((count, fields)) => {
                passed.push(Passed::Count(count));
                count as usize * fields as usize
            }
        };
        passed.extend(slots.by_ref().take(values).map(|slot| Passed::Register(*slot)));
    }
    passed.into()
}

/// Whether the true and the false destination of the `vm.cond_br` at `index` are the block
/// right after it, entered without argument moves (so reaching it is falling through).
fn falls_through(decoded: &[DecodedInstruction<'_>], index: usize) -> (bool, bool) {
    let next_block = match decoded.get(index + 1) {
        Some(next) if next.instruction.kind == InstructionKind::BlockMarker => next.offset as u32,
        _ => return (false, false),
    };
    let mut targets = decoded[index].operands.iter().filter_map(|o| match o {
        DecodedOperand::BranchTarget(t) => Some(*t),
        _ => None,
    });
    let mut moves = decoded[index].operands.iter().filter_map(|o| match o {
        DecodedOperand::BranchOperands(r) => Some(r.is_empty()),
        _ => None,
    });
    let mut next = || {
        let (target, no_moves) = (targets.next(), moves.next());
        target == Some(next_block) && no_moves == Some(true)
    };
    let t = next();
    (t, next())
}

/// Register fields of an instruction in encoding order (fixed fields only, not lists).
fn registers(instruction: &DecodedInstruction<'_>) -> Vec<Register> {
    instruction
        .operands
        .iter()
        .filter_map(|o| if let DecodedOperand::Register(r) = o { Some(*r) } else { None })
        .collect()
}

/// The generic op of a scalar instruction: its semantics' function and its registers (reads, then
/// the write, as the semantics' shape fixes them).
fn scalar_op(semantics: Semantics, registers: &[Register]) -> Op {
    let r = |i: usize| registers[i].ordinal;
    match semantics {
        Semantics::Un32(f) => Op::Un32 { f, a: r(0), d: r(1) },
        Semantics::Bin32(f) => Op::Bin32 { f, a: r(0), b: r(1), d: r(2) },
        Semantics::Tern32(f) => Op::Tern32 { f, a: r(0), b: r(1), c: r(2), d: r(3) },
        Semantics::Un64(f) => Op::Un64 { f, a: r(0), d: r(1) },
        Semantics::Bin64(f) => Op::Bin64 { f, a: r(0), b: r(1), d: r(2) },
        Semantics::Tern64(f) => Op::Tern64 { f, a: r(0), b: r(1), c: r(2), d: r(3) },
        Semantics::Shift64(f) => Op::Shift64 { f, a: r(0), b: r(1), d: r(2) },
        Semantics::Narrow(f) => Op::Narrow { f, a: r(0), d: r(1) },
        Semantics::Widen(f) => Op::Widen { f, a: r(0), d: r(1) },
        Semantics::Cmp64(f) => Op::Cmp64 { f, a: r(0), b: r(1), d: r(2) },
        Semantics::Div32(f) => Op::Div32 { f, a: r(0), b: r(1), d: r(2) },
        Semantics::Div64(f) => Op::Div64 { f, a: r(0), b: r(1), d: r(2) },
    }
}

/// The generic op of `instruction` if it is a scalar instruction.
pub(crate) fn generic_scalar_op(instruction: &DecodedInstruction<'_>) -> Option<Op> {
    s::semantics(instruction.opcode()).map(|semantics| scalar_op(semantics, &registers(instruction)))
}

/// Whether `first` and `next` lower to one op (see [`fuse`]): an arithmetic op and the `vm.br`
/// after it (a loop latch), or a compare and the `vm.cond_br` on its result (a loop condition).
fn fusable(first: &DecodedInstruction<'_>, next: &DecodedInstruction<'_>) -> bool {
    let Some(op) = generic_scalar_op(first) else { return false };
    let somewhere = Target { delta: 0, moves: Moves::None };
    let branch = match next.opcode() {
        Opcode::Branch => Op::Br(somewhere),
        Opcode::CondBranch if compare_result(first) == first_register(next) => {
            Op::CondBr { c: 0, when: true, t: somewhere }
        }
        _ => return false,
    };
    fuse(first.opcode(), op, branch).is_some()
}

fn compare_result(instruction: &DecodedInstruction<'_>) -> Option<u16> {
    instruction.operands.iter().rev().find_map(|o| if let DecodedOperand::Register(r) = o { Some(r.raw) } else { None })
}

fn first_register(instruction: &DecodedInstruction<'_>) -> Option<u16> {
    instruction.operands.iter().find_map(|o| if let DecodedOperand::Register(r) = o { Some(r.raw) } else { None })
}

/// The one op for the generic op `first` of `opcode` and the branch op after it, if they fuse:
/// the inline fused form where the dispatch loop has one, else a fused form through the
/// semantics' pointer.
fn fuse(opcode: Opcode, first: Op, branch: Op) -> Option<Op> {
    if let Some(op) = Op::fuse_inline(opcode, &first, &branch) {
        return Some(op);
    }
    match (first, branch) {
        (Op::Bin32 { f, a, b, d }, Op::Br(t)) => Some(Op::Bin32Br { f, a, b, d, t }),
        (Op::Bin32 { f, a, b, d }, Op::CondBr { when, t, .. }) => Some(Op::CondBrCmp32 { f, a, b, d, when, t }),
        (Op::Cmp64 { f, a, b, d }, Op::CondBr { when, t, .. }) => Some(Op::CondBrCmp64 { f, a, b, d, when, t }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bytecode::decode::sample;
    use crate::bytecode::isa::instructions;
    use crate::Module;

    /// Every operation of the table lowers, except calls to a callee the module lacks (the sample
    /// names import 0 of a module without imports), which are refused for that; none is refused
    /// as unsupported, and the non-operations are refused by name and offset.
    #[test]
    fn every_opcode_lowers_or_is_refused_by_name() {
        let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/vm/calls.vmfb")).unwrap();
        let module = Module::load_memory(&bytes).unwrap();
        let def = module.def();
        let internal: Vec<Option<CallingConvention>> = def
            .function_signatures
            .iter()
            .map(|signature| signature.calling_convention.as_deref().and_then(|c| CallingConvention::parse(c).ok()))
            .collect();
        let scope = ModuleScope {
            def,
            internal: &internal,
            imports: &[],
            #[cfg(rtx_jit)]
            entries: None,
        };
        let blocks = HashMap::from([(0, 0)]);
        let lowering = FunctionLowering {
            module: &scope,
            name: "sample",
            blocks: &blocks,
            descriptor: &def.function_descriptors[0],
            results: &[],
            offset: 8,
            op_index: 0,
            remaps: RefCell::new(Vec::new()),
            otherwise: Cell::new(None),
        };
        let mut lowered = 0;
        for instruction in instructions() {
            let result = lowering.lower(&sample(instruction));
            match instruction.kind {
                InstructionKind::Operation => match result {
                    Ok(_) => lowered += 1,
                    Err(error) => {
                        assert!(!error.message.contains("not supported"), "{}: {}", instruction.name, error.message);
                        assert!(
                            matches!(
                                instruction.id,
                                Opcode::Call
                                    | Opcode::CallVariadic
                                    | Opcode::CallYieldable
                                    | Opcode::CallVariadicYieldable
                            ),
                            "{}: {}",
                            instruction.name,
                            error.message
                        );
                    }
                },
                InstructionKind::BlockMarker | InstructionKind::Prefix(_) => {
                    let error = result.expect_err(instruction.symbol);
                    assert_eq!(error.offset, 8);
                    assert!(
                        error.message.contains(instruction.name) && error.message.contains("at bytecode offset 8"),
                        "{}",
                        error.message
                    );
                }
            }
        }
        assert_eq!(lowered, 262 - 4, "every operation but the calls (to an import the module lacks)");
    }
}
