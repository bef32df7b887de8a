//! MLIR's textual form: the generic printer and parser.

pub mod parse;
pub mod print;
