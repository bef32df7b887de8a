//! MLIR without LLVM: a small dialect-agnostic IR ([`ir`]), the bytecode reader for versions 0–6
//! and writer ([`bytecode`]) and the generic text printer ([`text`]).
//!
//! ```no_run
//! let bytes = std::fs::read("model.mlirbc").unwrap();
//! let module = rtx::mlir::read_bytecode(&bytes).unwrap();
//! let text = rtx::mlir::print_generic(&module, rtx::mlir::PrintOptions { debuginfo: true }).unwrap();
//! println!("{text}");
//! ```

pub mod bytecode;
pub mod ir;
pub mod ods;
pub mod text;

pub use bytecode::{read_bytecode, write_bytecode, ReadError, WriteError, WriteOptions};
pub use ir::Module;
pub use text::print::{print_generic, PrintError, PrintOptions};

/// Any failure of the MLIR layer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Print(#[from] PrintError),
}

/// Reads MLIR bytecode and prints it in MLIR's generic text form (what
/// `rtx translate --mlirbc-to-mlir` does); `debuginfo` adds locations.
pub fn mlirbc_to_mlir(input: &[u8], debuginfo: bool) -> Result<String, Error> {
    let module = read_bytecode(input)?;
    Ok(print_generic(&module, PrintOptions { debuginfo })?)
}
