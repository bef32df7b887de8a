//! The bytecode verifier: the load-time checks that let the interpreter index register files,
//! globals, types, rodata and functions without bounds checks of its own. A module the verifier
//! rejects never runs: [`crate::Module`] calls [`verify_function`] for every internal function
//! before a `Module` exists.
//!
//! Per function, on top of what the decoder checks (every instruction decodes and the body is
//! consumed exactly):
//! * the body starts with a `Block` marker, holds exactly `block_count` markers, and every branch
//!   target (`br_table` cases and yieldable-call successors included) is the offset of a marker;
//! * every register is inside the frame: i32/f32 ordinals `< i32_register_count`, i64/f64 pairs at
//!   an even ordinal `n` with `n + 1 < i32_register_count`, ref ordinals `< ref_register_count`;
//! * a fixed-bank register field (and a typed register list) holds a register of its bank: bit 15
//!   set for ref fields, clear for the integer banks; a branch remap moves int to int and ref to ref;
//! * callee ordinals name an existing import (bit 31) or internal function; primitive global
//!   offsets plus the access width (4 for i32/f32, 8 for i64/f64) fit `global_bytes_capacity`;
//!   ref global ordinals, type ids and rodata ordinals are in range;
//! * the arguments of the function's calling convention fit its frame (see [`argument_registers`]);
//! * blocks are delimited by terminators ([`super::isa::Opcode::is_terminator`]): the
//!   instruction before every Block marker after the first is a terminator, a terminator is
//!   followed by a Block marker or the end of the body, and the last instruction is a terminator.
//!   Every fixture function (95) obeys this; 86 end with `vm.return` and 9 with `vm.fail`;
//! * extension opcodes (ExtF32, ExtF64) appear only in functions whose requirements declare them.
//!
//! Not checked here: the types of values flowing through `Any` lists (call operands against the
//! callee's signature, return values against the function's results; the lowering checks those),
//! and the alignment of global offsets.
//!
//! Every error's offset is the offending instruction's offset from the function start (the loader
//! adds the function's file offset), and its message names the function, the mnemonic and the
//! operand.

use std::collections::HashSet;

use super::decode::{decode_function, DecodedInstruction, DecodedOperand, Register, RegisterRemap, REF_REGISTER_BIT};
use super::isa::{ElementType, InstructionKind, OpcodeSet, Operand, OperandKind, RegisterBank};
use crate::module_def::{
    describe_function, ExportFunction, FeatureBits, FunctionDescriptor, FunctionSignature, ModuleDef,
};
use crate::LoadError;

/// What the verifier needs to know about the module around a function.
#[derive(Debug, Clone, Copy)]
pub struct ModuleContext<'a> {
    /// Number of internal (bytecode) functions.
    pub internal_function_count: usize,
    /// Number of imported functions.
    pub import_count: usize,
    /// Bytes of primitive global storage (`ModuleState.global_bytes_capacity`).
    pub global_bytes_capacity: u32,
    /// Number of ref globals (`ModuleState.global_ref_count`).
    pub global_ref_count: u32,
    /// Number of entries in the type table.
    pub type_count: usize,
    /// Number of rodata segments.
    pub rodata_segment_count: usize,
    /// Exports, used only to name functions in error messages.
    pub exports: &'a [ExportFunction],
}

impl<'a> ModuleContext<'a> {
    /// The context of every function of `def`.
    pub fn from_def(def: &'a ModuleDef) -> ModuleContext<'a> {
        ModuleContext {
            internal_function_count: def.function_descriptors.len(),
            import_count: def.imported_functions.len(),
            global_bytes_capacity: def.module_state.global_bytes_capacity,
            global_ref_count: def.module_state.global_ref_count,
            type_count: def.types.len(),
            rodata_segment_count: def.rodata_segments.len(),
            exports: &def.exported_functions,
        }
    }
}

/// The registers the arguments of calling convention `cconv` occupy on entry: `(i32, ref)` counts.
///
/// Arguments are packed from register 0 of each bank in order (iree-notes §1.4): `i`/`f` take one
/// i32 register, `I`/`F` an even-aligned pair, `r` one ref register, `v` nothing. Results (after
/// `_`) do not occupy the callee's frame on entry. Returns `None` for a string this grammar does
/// not cover (no `0` prefix, an unknown character, or a `C…D` variadic span, which a bytecode
/// function cannot take).
pub fn argument_registers(cconv: &str) -> Option<(u32, u32)> {
    crate::abi::CallingConvention::parse(cconv).ok()?.argument_registers()
}

/// Verifies internal function `ordinal`, whose descriptor is `descriptor`, signature `signature`
/// and body `bytecode` (exactly `descriptor.bytecode_length` bytes).
pub fn verify_function(
    context: &ModuleContext<'_>,
    ordinal: usize,
    descriptor: &FunctionDescriptor,
    signature: &FunctionSignature,
    bytecode: &[u8],
) -> Result<(), LoadError> {
    let function = describe_function(context.exports, ordinal);
    let decoded = decode_function(bytecode)
        .map_err(|error| LoadError { message: format!("{function}: {}", error.message), ..error })?;
    let verifier = Verifier { context, descriptor, function: &function };

    if let Some(cconv) = &signature.calling_convention {
        verifier.check_entry(cconv)?;
    }

    let Some(first) = decoded.first() else {
        return Err(LoadError::malformed(
            0,
            format!("{function}: the body is empty, it must start with a Block marker"),
        ));
    };
    if first.instruction.kind != InstructionKind::BlockMarker {
        return Err(LoadError::malformed(
            0,
            format!("{function}: the body starts with {} instead of a Block marker", first.instruction.name),
        ));
    }
    let blocks: HashSet<usize> = decoded
        .iter()
        .filter(|instruction| instruction.instruction.kind == InstructionKind::BlockMarker)
        .map(|instruction| instruction.offset)
        .collect();
    if blocks.len() != usize::from(descriptor.block_count) {
        return Err(LoadError::malformed(
            0,
            format!(
                "{function}: the body has {} Block markers but the descriptor's block_count is {}",
                blocks.len(),
                descriptor.block_count
            ),
        ));
    }

    for instruction in &decoded {
        verifier.check_extension(instruction)?;
        for (field, operand) in instruction.instruction.operands.iter().zip(&instruction.operands) {
            verifier.check_operand(instruction, field, operand, &blocks)?;
        }
    }

    for pair in decoded.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        let ends_block = before.instruction.id.is_terminator();
        let starts_block = after.instruction.kind == InstructionKind::BlockMarker;
        if starts_block && !ends_block {
            return Err(LoadError::malformed(
                before.offset,
                format!(
                    "{function}: {} at offset {} falls through into the Block marker at offset {}; \
                     a block must end with a terminator",
                    before.instruction.name, before.offset, after.offset
                ),
            ));
        }
        if ends_block && !starts_block {
            return Err(LoadError::malformed(
                after.offset,
                format!(
                    "{function}: {} at offset {} follows the terminator {} without a Block marker",
                    after.instruction.name, after.offset, before.instruction.name
                ),
            ));
        }
    }
    let last = decoded.last().unwrap_or(first);
    if !last.instruction.id.is_terminator() {
        return Err(LoadError::malformed(
            last.offset,
            format!(
                "{function}: the body ends with {} at offset {}, which is not a terminator",
                last.instruction.name, last.offset
            ),
        ));
    }
    Ok(())
}

struct Verifier<'c> {
    context: &'c ModuleContext<'c>,
    descriptor: &'c FunctionDescriptor,
    function: &'c str,
}

impl Verifier<'_> {
    /// An extension opcode is only valid in a function that declares the extension among its
    /// requirements (IREE's verifier enforces the same; the loader checks the declared bits
    /// against what the runtime supports).
    fn check_extension(&self, instruction: &DecodedInstruction<'_>) -> Result<(), LoadError> {
        let (needed, name) = match instruction.instruction.set {
            OpcodeSet::Core => return Ok(()),
            OpcodeSet::ExtF32 => (FeatureBits::EXT_F32, "EXT_F32"),
            OpcodeSet::ExtF64 => (FeatureBits::EXT_F64, "EXT_F64"),
        };
        if self.descriptor.requirements.contains(needed) {
            return Ok(());
        }
        Err(LoadError::malformed(
            instruction.offset,
            format!(
                "{}: {} at offset {} needs the {name} extension, which the function does not declare \
                 in its requirements ({:#x})",
                self.function, instruction.instruction.name, instruction.offset, self.descriptor.requirements.0
            ),
        ))
    }

    fn check_entry(&self, cconv: &str) -> Result<(), LoadError> {
        let Some((i32_count, ref_count)) = argument_registers(cconv) else {
            return Err(LoadError::malformed(
                0,
                format!("{}: calling convention `{cconv}` is not one a bytecode function can have", self.function),
            ));
        };
        let (i32_available, ref_available) =
            (u32::from(self.descriptor.i32_register_count), u32::from(self.descriptor.ref_register_count));
        if i32_count > i32_available || ref_count > ref_available {
            return Err(LoadError::malformed(
                0,
                format!(
                    "{}: calling convention `{cconv}` needs {i32_count} i32 and {ref_count} ref argument registers, \
                     the frame has {i32_available} and {ref_available}",
                    self.function
                ),
            ));
        }
        Ok(())
    }

    fn error(&self, instruction: &DecodedInstruction<'_>, field: &Operand, problem: String) -> LoadError {
        LoadError::malformed(
            instruction.offset,
            format!(
                "{}: {} at offset {}, operand `{}`: {problem}",
                self.function, instruction.instruction.name, instruction.offset, field.name
            ),
        )
    }

    fn check_operand(
        &self,
        instruction: &DecodedInstruction<'_>,
        field: &Operand,
        operand: &DecodedOperand<'_>,
        blocks: &HashSet<usize>,
    ) -> Result<(), LoadError> {
        let context = self.context;
        let fail = |problem: String| Err(self.error(instruction, field, problem));
        match operand {
            DecodedOperand::Register(register) => self.check_register(instruction, field, *register, true),
            DecodedOperand::Registers(list) => {
                let typed = matches!(
                    field.kind,
                    OperandKind::VariadicOperands { element, .. } | OperandKind::VariadicResults { element }
                        if element != ElementType::Any
                );
                list.iter().try_for_each(|register| self.check_register(instruction, field, *register, typed))
            }
            DecodedOperand::BranchTarget(target) => self.check_target(instruction, field, *target, blocks),
            DecodedOperand::BranchOperands(remaps) => self.check_remaps(instruction, field, remaps),
            DecodedOperand::BranchTableCases(cases) => cases.iter().try_for_each(|case| {
                self.check_target(instruction, field, case.target, blocks)?;
                self.check_remaps(instruction, field, &case.remaps)
            }),
            DecodedOperand::FunctionOrdinal { ordinal, is_import } => {
                let (limit, what) = if *is_import {
                    (context.import_count, "imports")
                } else {
                    (context.internal_function_count, "internal functions")
                };
                if *ordinal as usize >= limit {
                    return fail(format!(
                        "{} ordinal {ordinal} is out of range, the module has {limit} {what}",
                        if *is_import { "import" } else { "function" }
                    ));
                }
                Ok(())
            }
            DecodedOperand::GlobalByteOffset(offset) => {
                // The width of the access is that of the value register the global is loaded
                // into or stored from.
                let value = instruction.operands.iter().find_map(|operand| match operand {
                    DecodedOperand::Register(register) => Some(register),
                    _ => None,
                });
                let width = if value.is_some_and(Register::is_pair) { 8 } else { 4 };
                let end = u64::from(*offset) + width;
                if end > u64::from(context.global_bytes_capacity) {
                    return fail(format!(
                        "global bytes {offset}..{end} lie beyond the module's global_bytes_capacity {}",
                        context.global_bytes_capacity
                    ));
                }
                Ok(())
            }
            DecodedOperand::GlobalRefOrdinal(ordinal) => {
                if *ordinal >= context.global_ref_count {
                    return fail(format!(
                        "ref global {ordinal} is out of range, the module has {} ref globals",
                        context.global_ref_count
                    ));
                }
                Ok(())
            }
            DecodedOperand::TypeId(id) => {
                if *id as usize >= context.type_count {
                    return fail(format!("type id {id} is out of range, the module has {} types", context.type_count));
                }
                Ok(())
            }
            DecodedOperand::RodataOrdinal(ordinal) => {
                if *ordinal as usize >= context.rodata_segment_count {
                    return fail(format!(
                        "rodata segment {ordinal} is out of range, the module has {} rodata segments",
                        context.rodata_segment_count
                    ));
                }
                Ok(())
            }
            DecodedOperand::ImmediateI32(_)
            | DecodedOperand::ImmediateI64(_)
            | DecodedOperand::ImmediateF32(_)
            | DecodedOperand::ImmediateF64(_)
            | DecodedOperand::ConstI16(_)
            | DecodedOperand::String(_)
            | DecodedOperand::SegmentSizes(_) => Ok(()),
        }
    }

    /// Range and pair checks; with `fixed_bank`, also that bit 15 agrees with the field's bank.
    fn check_register(
        &self,
        instruction: &DecodedInstruction<'_>,
        field: &Operand,
        register: Register,
        fixed_bank: bool,
    ) -> Result<(), LoadError> {
        let fail = |problem: String| Err(self.error(instruction, field, problem));
        let raw = register.raw;
        let ref_flagged = raw & REF_REGISTER_BIT != 0;
        let i32_count = self.descriptor.i32_register_count;
        let ref_count = self.descriptor.ref_register_count;
        match register.bank {
            RegisterBank::Ref => {
                if fixed_bank && !ref_flagged {
                    return fail(format!("register 0x{raw:04X} is an integer register, the field takes a ref"));
                }
                if register.ordinal >= ref_count {
                    return fail(format!(
                        "ref register {} is out of range, the frame has {ref_count} ref registers",
                        register.ordinal
                    ));
                }
            }
            bank => {
                if fixed_bank && ref_flagged {
                    return fail(format!("register 0x{raw:04X} is a ref register, the field takes {bank:?}"));
                }
                if register.is_pair() {
                    if !register.ordinal.is_multiple_of(2) {
                        return fail(format!(
                            "{bank:?} register pair starts at odd i32 register {}, pairs must be even-aligned",
                            register.ordinal
                        ));
                    }
                    if u32::from(register.ordinal) + 1 >= u32::from(i32_count) {
                        return fail(format!(
                            "{bank:?} register pair {}:{} is out of range, the frame has {i32_count} i32 registers",
                            register.ordinal,
                            u32::from(register.ordinal) + 1
                        ));
                    }
                } else if register.ordinal >= i32_count {
                    return fail(format!(
                        "i32 register {} is out of range, the frame has {i32_count} i32 registers",
                        register.ordinal
                    ));
                }
            }
        }
        Ok(())
    }

    fn check_target(
        &self,
        instruction: &DecodedInstruction<'_>,
        field: &Operand,
        target: u32,
        blocks: &HashSet<usize>,
    ) -> Result<(), LoadError> {
        if !blocks.contains(&(target as usize)) {
            return Err(self.error(instruction, field, format!("branch target {target} is not a Block marker")));
        }
        Ok(())
    }

    fn check_remaps(
        &self,
        instruction: &DecodedInstruction<'_>,
        field: &Operand,
        remaps: &[RegisterRemap],
    ) -> Result<(), LoadError> {
        for remap in remaps {
            self.check_register(instruction, field, remap.source, false)?;
            self.check_register(instruction, field, remap.destination, false)?;
            if (remap.source.bank == RegisterBank::Ref) != (remap.destination.bank == RegisterBank::Ref) {
                return Err(self.error(
                    instruction,
                    field,
                    format!(
                        "remap 0x{:04X} -> 0x{:04X} moves a value between the integer and ref banks",
                        remap.source.raw, remap.destination.raw
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_registers_pack_pairs_on_even_registers() {
        assert_eq!(argument_registers("0iIfI_Ifi"), Some((8, 0)));
        assert_eq!(argument_registers("0IfF_v"), Some((6, 0)));
        assert_eq!(argument_registers("0v_i"), Some((0, 0)));
        assert_eq!(argument_registers("0rir_r"), Some((1, 2)));
        assert_eq!(argument_registers("0i"), Some((1, 0)));
        assert_eq!(argument_registers("0rCiD_v"), None);
        assert_eq!(argument_registers("iI_v"), None);
    }

    #[test]
    fn terminators() {
        use crate::bytecode::isa::Opcode as O;
        for opcode in [O::Return, O::Branch, O::BranchTable, O::Fail, O::CallYieldable] {
            assert!(opcode.is_terminator(), "{opcode:?}");
        }
        for opcode in [O::Call, O::AddI32, O::Block, O::CallVariadic] {
            assert!(!opcode.is_terminator(), "{opcode:?}");
        }
    }
}
