//! IREE VM bytecode: the instruction set (this step), and later the decoder, verifier and interpreter
//! that stand on it.
//!
//! The instruction set is defined once, in IREE's `isa.json`; [`isa_table`] is generated from it by
//! `scripts/regen/vm-isa.py` and everything else reads the table through [`isa`].

pub mod decode;
pub mod isa;
// Generated; its lines follow the generator, not rustfmt.
#[rustfmt::skip]
pub(crate) mod isa_table;
pub mod verify;

pub use isa::{
    lookup, Access, ElementType, ImmediateType, Instruction, InstructionKind, Opcode, OpcodeSet, Operand, OperandKind,
    RegisterBank,
};
