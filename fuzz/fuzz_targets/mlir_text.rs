//! Arbitrary bytes (as lossy UTF-8) through the MLIR generic-form text parser
//! (`rtx::mlir::parse_text`) and, for what parses, the generic printer and the bytecode writer
//! (which re-reads LLVM attributes kept as text to encode them natively). Each must end in a value
//! or an error, never a panic, hang or unbounded allocation.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rtx::mlir::{parse_text, print_generic, write_bytecode, PrintOptions, WriteOptions};

fuzz_target!(|data: &[u8]| {
    let source = String::from_utf8_lossy(data);
    let Ok(module) = parse_text(&source) else { return };
    let _ = print_generic(&module, PrintOptions { debuginfo: true });
    let _ = write_bytecode(&module, &WriteOptions::default());
});
