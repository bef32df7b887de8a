//! TFRT's Binary Executable Format: kernel graphs compiled ahead of time, read in place.
//!
//! [`format`] holds the facts of the byte layout that the writer, the reader and the
//! disassembler share; each of them matches on its types. [`writer`] turns MLIR into BEF;
//! [`reader`] reads and verifies a file and binds it to a kernel registry; [`executor`] runs its
//! functions; [`disassembler`] turns a file back into MLIR.

pub(crate) mod disassembler;
pub mod driver;
pub(crate) mod executor;
pub mod format;
pub mod reader;
#[cfg(test)]
pub(crate) mod test_file;
pub(crate) mod writer;

pub use disassembler::{bef_to_mlir, DisassembleError, Disassembly};
pub use writer::{mlir_text_to_bef, mlir_to_bef, Site, WriteError, WriteOptions};
