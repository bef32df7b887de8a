//! The integration tests of rtx-mlir, in one binary.

mod mlir_corpus;
mod mlir_dialect_encodings;
mod mlir_lazy;
mod mlir_llvm_shared_distinct;
mod mlir_op_schemas;
mod mlir_parse;
mod mlir_read;
mod mlir_write;
