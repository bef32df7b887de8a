//! IREE VM modules (`.vmfb`): loading and verifying the FlatBuffer module and its bytecode,
//! linking modules into contexts, and running them (the interpreter, and machine code for scalar
//! loops). Stands on `host`; knows nothing of `hal` or C.

pub mod abi;
pub mod buffer;
pub mod bytecode;
pub mod container;
pub mod context;
pub mod dump;
pub mod error;
pub mod flatbuffer;
pub mod function_io;
pub mod interpreter;
pub mod iree_benchmark;
#[cfg(rtx_jit)]
pub(crate) mod jit;
pub mod list;
pub(crate) mod module;
pub mod module_def;
pub mod native;
pub mod refs;
pub mod value;

pub use error::LoadError;
pub use module::{Module, RodataSegment};
