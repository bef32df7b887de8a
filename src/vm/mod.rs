//! IREE VM modules (`.vmfb`): loading and verifying the FlatBuffer module, its bytecode, and (in
//! later steps) running it. Stands on `host`; knows nothing of `hal` or C.

pub mod bytecode;
pub mod container;
pub mod error;
pub mod flatbuffer;
pub mod module;
pub mod module_def;

pub use error::LoadError;
pub use module::{Module, RodataSegment};
