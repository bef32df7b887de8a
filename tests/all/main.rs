//! The integration tests of the root package rtx that are not the C ABI's, in one binary: the
//! `rtx` command (its runs checked against IREE's tools, lit's FileCheck tests), the examples and
//! models it runs, and the docs. The layers' own tests are in their crates (crates/*/tests).

mod bef_exec;
mod bef_writer;
mod bench_dispatch_times;
mod cli;
mod docs;
mod hal_model;
mod hal_run;
mod hal_tensor_io;
mod hal_vmvx_ukernels;
mod layering;
mod lit;
mod mlir_read;
mod onnx_import;
mod run_failures;
mod runtime_bef;
mod tfrt_syntax;
mod trace;
mod vm_run;
mod vulkan_run;
