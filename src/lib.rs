//! rtx: a runtime for compiled machine-learning programs, shipped as a C library.
//!
//! The crate is layered as `docs/ARCHITECTURE.md` describes: [`host`] is the ground every
//! other layer stands on (AsyncValue, work queues, allocator, HostContext), and [`ffi`] is the only
//! place that knows C exists.

pub mod bef;
pub mod ffi;
pub mod hal;
pub mod host;
pub mod kernel;
pub mod mlir;
pub mod onnx;
pub mod runtime;
pub mod vm;
