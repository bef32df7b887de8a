//! Facts about other dialects that both the bytecode reader and writer need: the LLVM dialect's
//! attribute encodings and the names of its debug-info constants and flags (how its encoded
//! attributes print, and back).

pub(crate) mod dwarf;
pub(crate) mod llvm_attrs;
pub(crate) mod llvm_flags;
