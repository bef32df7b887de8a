//! MLIR bytecode (`MLïR` files): the reader for versions 0–6.

pub mod reader;

pub use reader::{read_bytecode, read_bytecode_shared, ReadError, ReadErrorKind};
