//! Facts about other dialects that both the bytecode reader and writer need: the names of the
//! LLVM dialect's debug-info constants and flags (how its encoded attributes print, and back).

pub(crate) mod dwarf;
pub(crate) mod llvm_flags;
