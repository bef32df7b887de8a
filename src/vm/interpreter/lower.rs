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
use super::op::{
    BufferElement, CallOp, Callee, ColdOp, Moves, Op, RefCheck, RefReg, Reg, Remap, Segment, Slot, Target,
};
use super::scalar::{self as s};
use crate::vm::abi::{plain_kinds, CallingConvention, CconvItem, ValueKind};
use crate::vm::bytecode::decode::{decode_function, DecodedInstruction, DecodedOperand, Register, RegisterRemap};
use crate::vm::bytecode::isa::{InstructionKind, RegisterBank};
use crate::vm::module_def::{describe_function, FunctionDescriptor, ModuleDef};
use crate::vm::refs::RefType;
use crate::vm::LoadError;

/// One internal function, ready to run.
#[derive(Debug)]
pub struct Function {
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
    pub code: Option<std::sync::Arc<crate::vm::jit::CodeMemory>>,
}

/// Lowers every internal function of `def`, whose file bytes are `file`.
pub fn lower_module(def: &ModuleDef, file: &[u8]) -> Result<Vec<Function>, LoadError> {
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
        entries: crate::vm::jit::entries(),
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
        let (mut functions, compiled): (Vec<Function>, Vec<_>) = lowered.into_iter().unzip();
        for (function, linked) in functions.iter_mut().zip(crate::vm::jit::link(compiled)) {
            if let Some(linked) = linked {
                for (op, entry) in linked.entries {
                    function.ops[op as usize] = Op::Native(entry);
                }
                function.code = Some(linked.code);
            }
        }
        Ok(functions)
    }
    #[cfg(not(rtx_jit))]
    Ok(lowered.into_iter().map(|(function, ())| function).collect())
}

/// What the loop compiler made of a function (nothing where there is no compiler).
#[cfg(rtx_jit)]
type Compiled = Option<crate::vm::jit::Compiled>;
#[cfg(not(rtx_jit))]
type Compiled = ();

struct ModuleScope<'a> {
    def: &'a ModuleDef,
    internal: &'a [Option<CallingConvention>],
    imports: &'a [Option<CallingConvention>],
    /// Where compiled loop code is entered, if it is made at all.
    #[cfg(rtx_jit)]
    entries: Option<crate::vm::jit::Entries>,
}

impl ModuleScope<'_> {
    fn lower_function(
        &self,
        ordinal: usize,
        descriptor: &FunctionDescriptor,
        bytecode: &[u8],
    ) -> Result<(Function, Compiled), LoadError> {
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
            if instruction.instruction.name == "vm.cond_br" && falls_through(&decoded, i) == (false, false) {
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
                op = fuse(op, lowering.lower(&decoded[i])?);
                i += 1;
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
        let compiled = self.entries.and_then(|e| crate::vm::jit::compile(&decoded, &starts, &blocks, e));
        #[cfg(not(rtx_jit))]
        let compiled = ();
        let function = Function {
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
        Ok(Op::Call(Box::new(CallOp {
            callee,
            segments,
            arguments: self.slots("call argument", arguments, &argument_kinds)?,
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
                (CconvItem::Value(kind), crate::vm::bytecode::decode::NON_VARIADIC_SEGMENT) => {
                    kinds.push(*kind);
                    segments.push(None);
                }
                (CconvItem::Span(fields), count) if count != crate::vm::bytecode::decode::NON_VARIADIC_SEGMENT => {
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

    fn lower(&self, instruction: &DecodedInstruction<'_>) -> Result<Op, LoadError> {
        let name = instruction.instruction.name;
        let registers: Vec<Register> = instruction
            .operands
            .iter()
            .filter_map(|o| if let DecodedOperand::Register(r) = o { Some(*r) } else { None })
            .collect();
        let o = Operands { registers, instruction };
        if let Some(op) = scalar_op(name, &o) {
            return Ok(op);
        }
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
        let buffer_element = |suffix: &str| match suffix {
            "i8.u" => E::I8U,
            "i8.s" | "i8" => E::I8S,
            "i16.u" => E::I16U,
            "i16.s" | "i16" => E::I16S,
            "i32" => E::I32,
            "i64" => E::I64,
            "f32" => E::F32,
            _ => E::F64,
        };
        let r = |i| o.reg(i);
        let op = match name {
            "vm.const.i32.zero" | "vm.const.f32.zero" => Op::Const32 { value: 0, d: r(0) },
            "vm.const.i64.zero" | "vm.const.f64.zero" => Op::Const64 { value: 0, d: r(0) },
            "vm.const.i32" | "vm.const.f32" => Op::Const32 { value: immediate() as u32, d: r(0) },
            "vm.const.i64" | "vm.const.f64" => Op::Const64 { value: immediate(), d: r(0) },
            "vm.select.i32" | "vm.select.f32" => Op::Select32 { c: r(0), t: r(1), f: r(2), d: r(3) },
            "vm.select.i64" | "vm.select.f64" => Op::Select64 { c: r(0), t: r(1), f: r(2), d: r(3) },
            "vm.select.ref" => {
                ColdOp::SelectRef { c: r(0), check: self.check(o.type_id()), t: o.ref_reg(1), f: o.ref_reg(2), d: r(3) }
                    .into()
            }
            "vm.switch.i32" | "vm.switch.f32" => ColdOp::Switch32 {
                index: r(0),
                default: r(1),
                values: o.list().iter().map(|x| x.ordinal).collect(),
                d: r(2),
            }
            .into(),
            "vm.switch.i64" | "vm.switch.f64" => ColdOp::Switch64 {
                index: r(0),
                default: r(1),
                values: o.list().iter().map(|x| x.ordinal).collect(),
                d: r(2),
            }
            .into(),
            "vm.switch.ref" => ColdOp::SwitchRef {
                index: r(0),
                check: self.check(o.type_id()),
                default: o.ref_reg(1),
                values: o.list().iter().map(|x| RefReg { reg: x.ordinal, is_move: x.is_move }).collect(),
                d: r(2),
            }
            .into(),
            "vm.global.load.i32" | "vm.global.load.f32" => ColdOp::GlobalLoad32 { offset: global(), d: r(0) }.into(),
            "vm.global.store.i32" | "vm.global.store.f32" => ColdOp::GlobalStore32 { offset: global(), s: r(0) }.into(),
            "vm.global.load.i64" | "vm.global.load.f64" => ColdOp::GlobalLoad64 { offset: global(), d: r(0) }.into(),
            "vm.global.store.i64" | "vm.global.store.f64" => ColdOp::GlobalStore64 { offset: global(), s: r(0) }.into(),
            "vm.global.load.indirect.i32" | "vm.global.load.indirect.f32" => {
                ColdOp::GlobalLoadIndirect32 { offset: r(0), d: r(1) }.into()
            }
            "vm.global.store.indirect.i32" | "vm.global.store.indirect.f32" => {
                ColdOp::GlobalStoreIndirect32 { offset: r(0), s: r(1) }.into()
            }
            "vm.global.load.indirect.i64" | "vm.global.load.indirect.f64" => {
                ColdOp::GlobalLoadIndirect64 { offset: r(0), d: r(1) }.into()
            }
            "vm.global.store.indirect.i64" | "vm.global.store.indirect.f64" => {
                ColdOp::GlobalStoreIndirect64 { offset: r(0), s: r(1) }.into()
            }
            "vm.global.load.ref" => {
                ColdOp::GlobalLoadRef { global: global_ref(), check: self.check(o.type_id()), d: o.ref_reg(0) }.into()
            }
            "vm.global.store.ref" => {
                ColdOp::GlobalStoreRef { global: global_ref(), check: self.check(o.type_id()), s: o.ref_reg(0) }.into()
            }
            "vm.global.load.indirect.ref" => {
                ColdOp::GlobalLoadIndirectRef { global: r(0), check: self.check(o.type_id()), d: o.ref_reg(1) }.into()
            }
            "vm.global.store.indirect.ref" => {
                ColdOp::GlobalStoreIndirectRef { global: r(0), check: self.check(o.type_id()), s: o.ref_reg(1) }.into()
            }
            "vm.const.ref.zero" => ColdOp::ConstRefZero { d: r(0) }.into(),
            "vm.const.ref.rodata" => ColdOp::ConstRodata {
                ordinal: o.find(|op| if let DecodedOperand::RodataOrdinal(n) = op { Some(*n) } else { None }),
                d: r(0),
            }
            .into(),
            "vm.assign.ref" => ColdOp::AssignRef { s: o.ref_reg(0), d: r(1) }.into(),
            "vm.cast.any.ref" => ColdOp::CastAnyRef { s: o.ref_reg(0), check: self.check(o.type_id()), d: r(1) }.into(),
            "vm.discard.refs" => ColdOp::DiscardRefs { regs: self.ref_list(&o.list())? }.into(),
            "vm.trace" | "vm.print" => ColdOp::DiscardMoved {
                regs: o.list().iter().filter(|x| x.bank == RegisterBank::Ref && x.is_move).map(|x| x.ordinal).collect(),
            }
            .into(),
            "vm.cmp.eq.ref" => ColdOp::CmpEqRef { a: r(0), b: r(1), d: r(2) }.into(),
            "vm.cmp.ne.ref" => ColdOp::CmpNeRef { a: r(0), b: r(1), d: r(2) }.into(),
            "vm.cmp.nz.ref" => ColdOp::CmpNzRef { a: r(0), d: r(1) }.into(),
            "vm.buffer.alloc" => ColdOp::BufferAlloc { length: r(0), alignment: r(1), d: r(2) }.into(),
            "vm.buffer.clone" => {
                ColdOp::BufferClone { source: r(0), offset: r(1), length: r(2), alignment: r(3), d: r(4) }.into()
            }
            "vm.buffer.length" => ColdOp::BufferLength { buffer: r(0), d: r(1) }.into(),
            "vm.buffer.copy" => ColdOp::BufferCopy {
                source: r(0),
                source_offset: r(1),
                target: r(2),
                target_offset: r(3),
                length: r(4),
            }
            .into(),
            "vm.buffer.compare" => ColdOp::BufferCompare {
                lhs: r(0),
                lhs_offset: r(1),
                rhs: r(2),
                rhs_offset: r(3),
                length: r(4),
                d: r(5),
            }
            .into(),
            "vm.buffer.hash" => ColdOp::BufferHash { buffer: r(0), offset: r(1), length: r(2), d: r(3) }.into(),
            _ if name.starts_with("vm.buffer.fill.") => ColdOp::BufferFill {
                element: buffer_element(&name["vm.buffer.fill.".len()..]),
                buffer: r(0),
                offset: r(1),
                length: r(2),
                value: r(3),
            }
            .into(),
            _ if name.starts_with("vm.buffer.load.") => ColdOp::BufferLoad {
                element: buffer_element(&name["vm.buffer.load.".len()..]),
                buffer: r(0),
                offset: r(1),
                d: r(2),
            }
            .into(),
            _ if name.starts_with("vm.buffer.store.") => ColdOp::BufferStore {
                element: buffer_element(&name["vm.buffer.store.".len()..]),
                buffer: r(0),
                offset: r(1),
                value: r(2),
            }
            .into(),
            "vm.list.alloc" => ColdOp::ListAlloc { element_type: o.type_id(), capacity: r(0), d: r(1) }.into(),
            "vm.list.reserve" => ColdOp::ListReserve { list: r(0), capacity: r(1) }.into(),
            "vm.list.size" => ColdOp::ListSize { list: r(0), d: r(1) }.into(),
            "vm.list.resize" => ColdOp::ListResize { list: r(0), size: r(1) }.into(),
            "vm.list.get.i32" | "vm.list.get.i64" | "vm.list.get.f32" | "vm.list.get.f64" => {
                ColdOp::ListGet { kind: value_kind(&name[12..]), list: r(0), index: r(1), d: r(2) }.into()
            }
            "vm.list.set.i32" | "vm.list.set.i64" | "vm.list.set.f32" | "vm.list.set.f64" => {
                ColdOp::ListSet { kind: value_kind(&name[12..]), list: r(0), index: r(1), value: r(2) }.into()
            }
            "vm.list.get.ref" => {
                ColdOp::ListGetRef { list: r(0), index: r(1), check: self.check(o.type_id()), d: o.ref_reg(2) }.into()
            }
            "vm.list.set.ref" => ColdOp::ListSetRef { list: r(0), index: r(1), value: o.ref_reg(2) }.into(),
            "vm.br" | "vm.break" => Op::Br(branch(0)?),
            "vm.cond_break" => Op::Br(branch(0)?),
            "vm.yield" => Op::Yield(branch(0)?),
            "vm.cond_br" => {
                self.otherwise.set(Some(branch(1)?));
                Op::CondBr { c: r(0), when: true, t: branch(0)? }
            }
            "vm.br_table" => {
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
            "vm.call" | "vm.call.variadic" | "vm.call.yieldable" | "vm.call.variadic.yieldable" => {
                self.call(instruction)?
            }
            "vm.return" => Op::Return { values: self.slots("return value", &o.list(), self.results)? },
            "vm.fail" => Op::Fail { status: r(0), message: string().into() },
            "vm.import.resolved" => {
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
            other => return Err(self.error(format!("`{other}` is not supported by this interpreter"))),
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

impl Op {
    /// Turns a conditional branch on "true" into one on "false" to `target`, for when the true
    /// destination is the one that follows.
    fn branch_when_false(&mut self, target: Target) {
        match self {
            Op::CondBr { when, t, .. }
            | Op::CondBrLtI32S { when, t, .. }
            | Op::CondBrLtI64S { when, t, .. }
            | Op::CondBrCmp32 { when, t, .. }
            | Op::CondBrCmp64 { when, t, .. } => {
                *when = false;
                *t = target;
            }
            other => unreachable!("{other:?} is not a conditional branch"),
        }
    }
}

/// Whether `first` and `next` lower to one op (see [`fuse`]).
fn fusable(first: &DecodedInstruction<'_>, next: &DecodedInstruction<'_>) -> bool {
    let name = first.instruction.name;
    match next.instruction.name {
        // Loop conditions.
        "vm.cond_br" => {
            name.starts_with("vm.cmp.")
                && !name.contains(".nz.")
                && !name.contains(".nan.")
                && !name.ends_with(".ref")
                && compare_result(first) == first_register(next)
        }
        // Loop latches: the induction variable's step, then the back edge.
        "vm.br" => matches!(name, "vm.add.i32" | "vm.sub.i32" | "vm.mul.i32" | "vm.add.i64") || bin32(name).is_some(),
        _ => false,
    }
}

fn compare_result(instruction: &DecodedInstruction<'_>) -> Option<u16> {
    instruction.operands.iter().rev().find_map(|o| if let DecodedOperand::Register(r) = o { Some(r.raw) } else { None })
}

fn first_register(instruction: &DecodedInstruction<'_>) -> Option<u16> {
    instruction.operands.iter().find_map(|o| if let DecodedOperand::Register(r) = o { Some(r.raw) } else { None })
}

/// Combines the ops of a pair [`fusable`] admits.
fn fuse(first: Op, branch: Op) -> Op {
    if let Op::Br(t) = branch {
        return match first {
            Op::AddI32 { a, b, d } => Op::AddI32Br { a, b, d, t },
            Op::AddI64 { a, b, d } => Op::AddI64Br { a, b, d, t },
            other => match bin32_parts(&other) {
                Some((f, a, b, d)) => Op::Bin32Br { f, a, b, d, t },
                None => unreachable!("{other:?} is not fusable with vm.br"),
            },
        };
    }
    let Op::CondBr { when, t, .. } = branch else { unreachable!("fusion pairs a compare with vm.cond_br") };
    match first {
        Op::CmpLtI32S { a, b, d } => Op::CondBrLtI32S { a, b, d, when, t },
        Op::CmpLtI64S { a, b, d } => Op::CondBrLtI64S { a, b, d, when, t },
        Op::CmpEqI64 { a, b, d } => Op::CondBrCmp64 { f: s::cmp_eq_i64, a, b, d, when, t },
        Op::Cmp64 { f, a, b, d } => Op::CondBrCmp64 { f, a, b, d, when, t },
        other => match bin32_parts(&other) {
            Some((f, a, b, d)) => Op::CondBrCmp32 { f, a, b, d, when, t },
            None => unreachable!("{other:?} is not a fusable compare"),
        },
    }
}

/// The scalar function and registers of an i32-bank binary op, whether the loop runs it inline
/// or through a pointer (the fused forms hold a pointer).
/// The op the interpreter runs for a register-only scalar instruction (consts, selects and
/// branches aside), for tests that hold other executors of the same instruction against it.
#[cfg(all(test, rtx_jit))]
pub(crate) fn scalar_reference(instruction: &DecodedInstruction<'_>) -> Option<Op> {
    let registers = instruction
        .operands
        .iter()
        .filter_map(|o| if let DecodedOperand::Register(r) = o { Some(*r) } else { None })
        .collect();
    scalar_op(instruction.instruction.name, &Operands { registers, instruction })
}

pub(crate) fn bin32_parts(op: &Op) -> Option<(s::Bin32, Reg, Reg, Reg)> {
    let f: s::Bin32 = match op {
        Op::Bin32 { f, .. } => *f,
        Op::AddI32 { .. } => s::add_i32,
        Op::SubI32 { .. } => s::sub_i32,
        Op::MulI32 { .. } => s::mul_i32,
        Op::AndI32 { .. } => s::and_i32,
        Op::OrI32 { .. } => s::or_i32,
        Op::XorI32 { .. } => s::xor_i32,
        Op::ShlI32 { .. } => s::shl_i32,
        Op::ShrI32S { .. } => s::shr_i32_s,
        Op::ShrI32U { .. } => s::shr_i32_u,
        Op::CmpEqI32 { .. } => s::cmp_eq_i32,
        Op::CmpNeI32 { .. } => s::cmp_ne_i32,
        Op::AddF32 { .. } => s::add_f32,
        Op::SubF32 { .. } => s::sub_f32,
        Op::MulF32 { .. } => s::mul_f32,
        _ => return None,
    };
    match *op {
        Op::Bin32 { a, b, d, .. }
        | Op::AddI32 { a, b, d }
        | Op::SubI32 { a, b, d }
        | Op::MulI32 { a, b, d }
        | Op::AndI32 { a, b, d }
        | Op::OrI32 { a, b, d }
        | Op::XorI32 { a, b, d }
        | Op::ShlI32 { a, b, d }
        | Op::ShrI32S { a, b, d }
        | Op::ShrI32U { a, b, d }
        | Op::CmpEqI32 { a, b, d }
        | Op::CmpNeI32 { a, b, d }
        | Op::AddF32 { a, b, d }
        | Op::SubF32 { a, b, d }
        | Op::MulF32 { a, b, d } => Some((f, a, b, d)),
        _ => None,
    }
}

fn value_kind(suffix: &str) -> ValueKind {
    match suffix {
        "i32" => ValueKind::I32,
        "i64" => ValueKind::I64,
        "f32" => ValueKind::F32,
        _ => ValueKind::F64,
    }
}

/// The scalar instructions, whose register operands are reads followed by one write.
fn scalar_op(name: &str, o: &Operands<'_>) -> Option<Op> {
    let r = |i| o.reg(i);
    macro_rules! shape {
        ($variant:ident, $f:expr, 1) => {
            Op::$variant { f: $f, a: r(0), d: r(1) }
        };
        ($variant:ident, $f:expr, 2) => {
            Op::$variant { f: $f, a: r(0), b: r(1), d: r(2) }
        };
        ($variant:ident, $f:expr, 3) => {
            Op::$variant { f: $f, a: r(0), b: r(1), c: r(2), d: r(3) }
        };
    }
    Some(match name {
        "vm.add.i32" => Op::AddI32 { a: r(0), b: r(1), d: r(2) },
        "vm.sub.i32" => Op::SubI32 { a: r(0), b: r(1), d: r(2) },
        "vm.mul.i32" => Op::MulI32 { a: r(0), b: r(1), d: r(2) },
        "vm.and.i32" => Op::AndI32 { a: r(0), b: r(1), d: r(2) },
        "vm.or.i32" => Op::OrI32 { a: r(0), b: r(1), d: r(2) },
        "vm.xor.i32" => Op::XorI32 { a: r(0), b: r(1), d: r(2) },
        "vm.shl.i32" => Op::ShlI32 { a: r(0), b: r(1), d: r(2) },
        "vm.shr.i32.s" => Op::ShrI32S { a: r(0), b: r(1), d: r(2) },
        "vm.shr.i32.u" => Op::ShrI32U { a: r(0), b: r(1), d: r(2) },
        "vm.cmp.eq.i32" => Op::CmpEqI32 { a: r(0), b: r(1), d: r(2) },
        "vm.cmp.ne.i32" => Op::CmpNeI32 { a: r(0), b: r(1), d: r(2) },
        "vm.add.f32" => Op::AddF32 { a: r(0), b: r(1), d: r(2) },
        "vm.sub.f32" => Op::SubF32 { a: r(0), b: r(1), d: r(2) },
        "vm.mul.f32" => Op::MulF32 { a: r(0), b: r(1), d: r(2) },
        "vm.add.i64" => Op::AddI64 { a: r(0), b: r(1), d: r(2) },
        "vm.mul.i64" => Op::MulI64 { a: r(0), b: r(1), d: r(2) },
        "vm.cmp.lt.i32.s" => Op::CmpLtI32S { a: r(0), b: r(1), d: r(2) },
        "vm.cmp.lt.i64.s" => Op::CmpLtI64S { a: r(0), b: r(1), d: r(2) },
        "vm.cmp.eq.i64" => Op::CmpEqI64 { a: r(0), b: r(1), d: r(2) },
        "vm.div.i32.s" => shape!(Div32, s::div_i32_s, 2),
        "vm.div.i32.u" => shape!(Div32, s::div_i32_u, 2),
        "vm.rem.i32.s" => shape!(Div32, s::rem_i32_s, 2),
        "vm.rem.i32.u" => shape!(Div32, s::rem_i32_u, 2),
        "vm.div.i64.s" => shape!(Div64, s::div_i64_s, 2),
        "vm.div.i64.u" => shape!(Div64, s::div_i64_u, 2),
        "vm.rem.i64.s" => shape!(Div64, s::rem_i64_s, 2),
        "vm.rem.i64.u" => shape!(Div64, s::rem_i64_u, 2),
        "vm.fma.i32" => shape!(Tern32, s::fma_i32, 3),
        "vm.fma.f32" => shape!(Tern32, s::fma_f32, 3),
        "vm.fma.i64" => shape!(Tern64, s::fma_i64, 3),
        "vm.fma.f64" => shape!(Tern64, s::fma_f64, 3),
        "vm.shl.i64" => shape!(Shift64, s::shl_i64, 2),
        "vm.shr.i64.s" => shape!(Shift64, s::shr_i64_s, 2),
        "vm.shr.i64.u" => shape!(Shift64, s::shr_i64_u, 2),
        _ => {
            if let Some(f) = un32(name) {
                shape!(Un32, f, 1)
            } else if let Some(f) = bin32(name) {
                shape!(Bin32, f, 2)
            } else if let Some(f) = un64(name) {
                shape!(Un64, f, 1)
            } else if let Some(f) = bin64(name) {
                shape!(Bin64, f, 2)
            } else if let Some(f) = narrow(name) {
                shape!(Narrow, f, 1)
            } else if let Some(f) = widen(name) {
                shape!(Widen, f, 1)
            } else if let Some(f) = cmp64(name) {
                shape!(Cmp64, f, 2)
            } else {
                return None;
            }
        }
    })
}

fn un32(name: &str) -> Option<s::Un32> {
    Some(match name {
        "vm.not.i32" => s::not_i32,
        "vm.ctlz.i32" => s::ctlz_i32,
        "vm.abs.i32" => s::abs_i32,
        "vm.trunc.i32.i8" => s::trunc_i32_i8,
        "vm.trunc.i32.i16" => s::trunc_i32_i16,
        "vm.ext.i8.i32.s" => s::ext_i8_i32_s,
        "vm.ext.i8.i32.u" => s::ext_i8_i32_u,
        "vm.ext.i16.i32.s" => s::ext_i16_i32_s,
        "vm.ext.i16.i32.u" => s::ext_i16_i32_u,
        "vm.cmp.nz.i32" => s::cmp_nz_i32,
        "vm.abs.f32" => s::abs_f32,
        "vm.neg.f32" => s::neg_f32,
        "vm.ceil.f32" => s::ceil_f32,
        "vm.floor.f32" => s::floor_f32,
        "vm.round.f32" => s::round_f32,
        "vm.round.f32.even" => s::round_f32_even,
        "vm.atan.f32" => s::atan_f32,
        "vm.cos.f32" => s::cos_f32,
        "vm.sin.f32" => s::sin_f32,
        "vm.exp.f32" => s::exp_f32,
        "vm.exp2.f32" => s::exp2_f32,
        "vm.expm1.f32" => s::expm1_f32,
        "vm.log.f32" => s::log_f32,
        "vm.log10.f32" => s::log10_f32,
        "vm.log1p.f32" => s::log1p_f32,
        "vm.log2.f32" => s::log2_f32,
        "vm.rsqrt.f32" => s::rsqrt_f32,
        "vm.sqrt.f32" => s::sqrt_f32,
        "vm.tanh.f32" => s::tanh_f32,
        "vm.erf.f32" => s::erf_f32,
        "vm.cast.si32.f32" => s::cast_si32_f32,
        "vm.cast.ui32.f32" => s::cast_ui32_f32,
        "vm.cast.f32.si32" => s::cast_f32_si32,
        "vm.cast.f32.ui32" => s::cast_f32_ui32,
        "vm.bitcast.i32.f32" | "vm.bitcast.f32.i32" => s::identity_32,
        "vm.cmp.nan.f32" => s::cmp_nan_f32,
        _ => return None,
    })
}

fn bin32(name: &str) -> Option<s::Bin32> {
    Some(match name {
        "vm.min.i32.s" => s::min_i32_s,
        "vm.min.i32.u" => s::min_i32_u,
        "vm.max.i32.s" => s::max_i32_s,
        "vm.max.i32.u" => s::max_i32_u,
        "vm.and.i32" => s::and_i32,
        "vm.or.i32" => s::or_i32,
        "vm.xor.i32" => s::xor_i32,
        "vm.shl.i32" => s::shl_i32,
        "vm.shr.i32.s" => s::shr_i32_s,
        "vm.shr.i32.u" => s::shr_i32_u,
        "vm.cmp.eq.i32" => s::cmp_eq_i32,
        "vm.cmp.ne.i32" => s::cmp_ne_i32,
        "vm.cmp.lt.i32.u" => s::cmp_lt_i32_u,
        "vm.add.f32" => s::add_f32,
        "vm.sub.f32" => s::sub_f32,
        "vm.mul.f32" => s::mul_f32,
        "vm.div.f32" => s::div_f32,
        "vm.rem.f32" => s::rem_f32,
        "vm.min.f32" => s::min_f32,
        "vm.max.f32" => s::max_f32,
        "vm.atan2.f32" => s::atan2_f32,
        "vm.pow.f32" => s::pow_f32,
        "vm.cmp.eq.f32.o" => s::cmp_eq_f32_o,
        "vm.cmp.eq.f32.u" => s::cmp_eq_f32_u,
        "vm.cmp.ne.f32.o" => s::cmp_ne_f32_o,
        "vm.cmp.ne.f32.u" => s::cmp_ne_f32_u,
        "vm.cmp.lt.f32.o" => s::cmp_lt_f32_o,
        "vm.cmp.lt.f32.u" => s::cmp_lt_f32_u,
        "vm.cmp.lte.f32.o" => s::cmp_lte_f32_o,
        "vm.cmp.lte.f32.u" => s::cmp_lte_f32_u,
        _ => return None,
    })
}

fn un64(name: &str) -> Option<s::Un64> {
    Some(match name {
        "vm.not.i64" => s::not_i64,
        "vm.ctlz.i64" => s::ctlz_i64,
        "vm.abs.i64" => s::abs_i64,
        "vm.abs.f64" => s::abs_f64,
        "vm.neg.f64" => s::neg_f64,
        "vm.ceil.f64" => s::ceil_f64,
        "vm.floor.f64" => s::floor_f64,
        "vm.round.f64" => s::round_f64,
        "vm.round.f64.even" => s::round_f64_even,
        "vm.atan.f64" => s::atan_f64,
        "vm.cos.f64" => s::cos_f64,
        "vm.sin.f64" => s::sin_f64,
        "vm.exp.f64" => s::exp_f64,
        "vm.exp2.f64" => s::exp2_f64,
        "vm.expm1.f64" => s::expm1_f64,
        "vm.log.f64" => s::log_f64,
        "vm.log10.f64" => s::log10_f64,
        "vm.log1p.f64" => s::log1p_f64,
        "vm.log2.f64" => s::log2_f64,
        "vm.rsqrt.f64" => s::rsqrt_f64,
        "vm.sqrt.f64" => s::sqrt_f64,
        "vm.tanh.f64" => s::tanh_f64,
        "vm.erf.f64" => s::erf_f64,
        "vm.cast.si64.f64" => s::cast_si64_f64,
        "vm.cast.ui64.f64" => s::cast_ui64_f64,
        "vm.cast.f64.si64" => s::cast_f64_si64,
        "vm.cast.f64.ui64" => s::cast_f64_ui64,
        "vm.bitcast.i64.f64" | "vm.bitcast.f64.i64" => s::identity_64,
        _ => return None,
    })
}

fn bin64(name: &str) -> Option<s::Bin64> {
    Some(match name {
        "vm.sub.i64" => s::sub_i64,
        "vm.min.i64.s" => s::min_i64_s,
        "vm.min.i64.u" => s::min_i64_u,
        "vm.max.i64.s" => s::max_i64_s,
        "vm.max.i64.u" => s::max_i64_u,
        "vm.and.i64" => s::and_i64,
        "vm.or.i64" => s::or_i64,
        "vm.xor.i64" => s::xor_i64,
        "vm.add.f64" => s::add_f64,
        "vm.sub.f64" => s::sub_f64,
        "vm.mul.f64" => s::mul_f64,
        "vm.div.f64" => s::div_f64,
        "vm.rem.f64" => s::rem_f64,
        "vm.min.f64" => s::min_f64,
        "vm.max.f64" => s::max_f64,
        "vm.atan2.f64" => s::atan2_f64,
        "vm.pow.f64" => s::pow_f64,
        _ => return None,
    })
}

fn narrow(name: &str) -> Option<s::Narrow> {
    Some(match name {
        "vm.trunc.i64.i32" => s::trunc_i64_i32,
        "vm.cmp.nz.i64" => s::cmp_nz_i64,
        "vm.cast.si64.f32" => s::cast_si64_f32,
        "vm.cast.ui64.f32" => s::cast_ui64_f32,
        "vm.trunc.f64.f32" => s::trunc_f64_f32,
        "vm.cast.f64.si32" => s::cast_f64_si32,
        "vm.cast.f64.ui32" => s::cast_f64_ui32,
        "vm.cmp.nan.f64" => s::cmp_nan_f64,
        _ => return None,
    })
}

fn widen(name: &str) -> Option<s::Widen> {
    Some(match name {
        "vm.ext.i32.i64.s" => s::ext_i32_i64_s,
        "vm.ext.i32.i64.u" => s::ext_i32_i64_u,
        "vm.cast.f32.si64" => s::cast_f32_si64,
        "vm.cast.f32.ui64" => s::cast_f32_ui64,
        "vm.ext.f32.f64" => s::ext_f32_f64,
        "vm.cast.si32.f64" => s::cast_si32_f64,
        "vm.cast.ui32.f64" => s::cast_ui32_f64,
        _ => return None,
    })
}

fn cmp64(name: &str) -> Option<s::Cmp64> {
    Some(match name {
        "vm.cmp.ne.i64" => s::cmp_ne_i64,
        "vm.cmp.lt.i64.u" => s::cmp_lt_i64_u,
        "vm.cmp.eq.f64.o" => s::cmp_eq_f64_o,
        "vm.cmp.eq.f64.u" => s::cmp_eq_f64_u,
        "vm.cmp.ne.f64.o" => s::cmp_ne_f64_o,
        "vm.cmp.ne.f64.u" => s::cmp_ne_f64_u,
        "vm.cmp.lt.f64.o" => s::cmp_lt_f64_o,
        "vm.cmp.lt.f64.u" => s::cmp_lt_f64_u,
        "vm.cmp.lte.f64.o" => s::cmp_lte_f64_o,
        "vm.cmp.lte.f64.u" => s::cmp_lte_f64_u,
        _ => return None,
    })
}
