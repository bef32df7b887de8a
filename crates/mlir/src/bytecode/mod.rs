//! MLIR bytecode (`MLïR` files): the reader and the writer for versions 0–6.

pub(crate) mod reader;
pub(crate) mod writer;

pub use reader::{read_bytecode, read_bytecode_lazy, read_bytecode_shared, LazyModule, ReadError, ReadErrorKind};
pub use writer::{write_bytecode, WriteError, WriteOptions};
