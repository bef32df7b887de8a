//! MLIR without LLVM: a small dialect-agnostic IR ([`ir`]), the bytecode reader for versions 0–6
//! and writer ([`bytecode`]) and the text printers and parser ([`text`]: the generic form, and
//! the custom op syntax of `builtin`, `func` and TFRT's dialects).
//!
//! ```no_run
//! let bytes = std::fs::read("model.mlirbc").unwrap();
//! let module = rtx_mlir::read_bytecode(&bytes).unwrap();
//! let text = rtx_mlir::print_generic(&module, rtx_mlir::PrintOptions { debuginfo: true }).unwrap();
//! println!("{text}");
//! ```

pub mod bytecode;
pub(crate) mod dialects;
pub(crate) mod float;
pub mod ir;
pub mod ods;
pub mod text;

pub use bytecode::{
    read_bytecode, read_bytecode_lazy, write_bytecode, LazyModule, ReadError, WriteError, WriteOptions,
};
pub use ir::Module;
pub use text::parse::{parse_text, parse_text_with, ParseError, ParseOptions};
pub use text::print::{print_asm, print_generic, AsmOptions, PrintError, PrintOptions};

/// Any failure of the MLIR layer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Print(#[from] PrintError),
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error("MLIR text is not UTF-8 (at byte {0})")]
    NotUtf8(usize),
}

/// The magic number that starts every MLIR bytecode file.
const BYTECODE_MAGIC: &[u8] = b"ML\xEFR";

/// Reads MLIR in either form: bytecode (recognised by its magic number) or text, whose
/// operations without a location get `file_name:line:col` as upstream gives them.
pub fn read_any(input: &[u8], file_name: Option<&str>) -> Result<Module, Error> {
    if input.starts_with(BYTECODE_MAGIC) {
        return Ok(read_bytecode(input)?);
    }
    let text = std::str::from_utf8(input).map_err(|e| Error::NotUtf8(e.valid_up_to()))?;
    let options = ParseOptions { file_name: file_name.map(str::to_owned), ..ParseOptions::default() };
    Ok(parse_text_with(text, &options)?)
}

/// MLIR (bytecode or text) to MLIR's generic text form (what `rtx translate --mlirbc-to-mlir`
/// does); `debuginfo` adds locations.
pub fn mlirbc_to_mlir(input: &[u8], debuginfo: bool) -> Result<String, Error> {
    let module = read_any(input, None)?;
    Ok(print_generic(&module, PrintOptions { debuginfo })?)
}

/// MLIR (text or bytecode) to bytecode of `version` (what `rtx translate --mlir-to-mlirbc`
/// does); `file_name` locates text operations that have no location.
pub fn mlir_to_mlirbc(input: &[u8], file_name: Option<&str>, version: u32) -> Result<Vec<u8>, Error> {
    let module = read_any(input, file_name)?;
    Ok(write_bytecode(&module, &WriteOptions { version, ..WriteOptions::default() })?)
}
