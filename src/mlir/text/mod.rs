//! MLIR's textual form: the generic printer.

pub mod print;
