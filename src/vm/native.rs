//! Native modules: functions written in Rust (or C, through the FFI layer) that bytecode modules
//! import, like IREE's `hal` and `check` modules.
//!
//! A native module publishes its functions with the exact calling-convention strings the
//! compiler's imports carry, because import resolution compares those strings byte for byte. Each
//! context that adds the module gets its own state from [`NativeModule::create_state`].

use std::any::Any;

use super::value::Value;
use crate::host::{AsyncValueRef, Diagnostic};

/// One exported function of a native module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NativeFunction {
    /// The name without the module prefix (`expect_true`, not `check.expect_true`).
    pub name: String,
    /// The calling convention, e.g. `0i_v`.
    pub cconv: String,
}

impl NativeFunction {
    pub fn new(name: impl Into<String>, cconv: impl Into<String>) -> NativeFunction {
        NativeFunction { name: name.into(), cconv: cconv.into() }
    }
}

/// What a native function produced.
pub enum NativeOutcome {
    /// The results are in the `results` the caller passed, in calling-convention order.
    Ready,
    /// The results will arrive later (a fence wait, a host callback): the calling invocation
    /// suspends without blocking its thread and resumes when this value is available. An error
    /// value fails the invocation.
    Pending(AsyncValueRef<Vec<Value>>),
}

/// Per-context state of a native module.
pub type NativeState = Box<dyn Any + Send>;

/// A module implemented by the host.
pub trait NativeModule: Send + Sync {
    /// The name imports use before the first `.` (`check`).
    fn name(&self) -> &str;

    /// Compared against a bytecode module's `minimum_version` dependency.
    fn version(&self) -> u32 {
        0
    }

    /// The exported functions; a function's index here is its ordinal in [`NativeModule::call`].
    fn functions(&self) -> &[NativeFunction];

    /// Creates this module's state for one context.
    fn create_state(&self) -> Result<NativeState, Diagnostic> {
        Ok(Box::new(()))
    }

    /// Calls function `ordinal` with `arguments` already checked against its calling
    /// convention: one value per plain argument, and for a variadic span first its tuple count
    /// as an i32, then the tuples' values flattened. A function that answers at once pushes its
    /// results onto `results` (empty on entry): the caller reuses that vector call after call, so
    /// a program driving the HAL allocates nothing to pass results back.
    fn call(
        &self,
        state: &mut NativeState,
        ordinal: usize,
        arguments: &[Value],
        results: &mut Vec<Value>,
    ) -> Result<NativeOutcome, Diagnostic>;
}
