//! Arbitrary bytes through the MLIR bytecode reader (`rtx::mlir::read_bytecode`, versions 0–6),
//! and, for what reads, the generic printer, the writer at the file's own version and the reader
//! again. Every step must end in a value or an error, never a panic, hang or unbounded
//! allocation. Writer and printer errors (custom encodings, opaque properties, versions that
//! cannot hold what was read) are expected and ignored.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rtx::mlir::{print_generic, read_bytecode, write_bytecode, PrintOptions, WriteOptions};

fuzz_target!(|data: &[u8]| {
    let Ok(module) = read_bytecode(data) else { return };
    let _ = print_generic(&module, PrintOptions { debuginfo: true });
    let version = module.bytecode_version.unwrap_or(6).min(6) as u32;
    let options = WriteOptions { allow_lossy_downgrade: true, ..WriteOptions::version(version) };
    if let Ok(bytes) = write_bytecode(&module, &options) {
        let _ = read_bytecode(&bytes);
    }
});
