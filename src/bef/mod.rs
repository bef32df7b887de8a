//! TFRT's Binary Executable Format: kernel graphs compiled ahead of time, read in place.
//!
//! [`format`] holds the facts of the byte layout that the writer, the reader and the
//! disassembler share; each of them matches on its types.

pub mod format;
pub mod writer;

pub use writer::{mlir_to_bef, WriteError, WriteOptions};
