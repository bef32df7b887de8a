//! The built-in `check` module: the assertions IREE's test-style programs import
//! (`check.expect_true(%x) : i32` and friends in MLIR).
//!
//! Like IREE's (which records gtest `EXPECT_*` failures), a failed expectation does not stop the
//! program: it is recorded and the program goes on, so one run reports every failed check. A tool
//! reads the failures with [`CheckModule::take_failures`] after each function. The tensor
//! comparisons (`expect_all_true`, `expect_eq`, `expect_almost_eq`) arrive with the HAL; until
//! then the module does not export them, so modules importing them optionally run with those
//! checks unresolved (their calls are guarded by `vm.import.resolved`), and modules that require
//! them fail to link with a message naming the import.

use std::sync::{Arc, Mutex};

use super::native::{NativeFunction, NativeModule, NativeOutcome, NativeState};
use super::value::Value;
use crate::host::{Diagnostic, StatusCode};

/// The `check` native module. Clones share the failure log.
#[derive(Clone, Debug)]
pub struct CheckModule {
    functions: Arc<[NativeFunction]>,
    failures: Arc<Mutex<Vec<String>>>,
}

impl Default for CheckModule {
    fn default() -> CheckModule {
        CheckModule {
            // Calling conventions as the compiler's `check.imports.mlir` declares them.
            functions: Arc::new([
                NativeFunction::new("expect_true", "0i_v"),
                NativeFunction::new("expect_false", "0i_v"),
            ]),
            failures: Arc::default(),
        }
    }
}

impl CheckModule {
    pub fn new() -> CheckModule {
        CheckModule::default()
    }

    /// The failed expectations recorded since the last call, oldest first.
    pub fn take_failures(&self) -> Vec<String> {
        std::mem::take(&mut *self.failures.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    fn record(&self, failure: String) {
        self.failures.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(failure);
    }
}

impl NativeModule for CheckModule {
    fn name(&self) -> &str {
        "check"
    }

    fn functions(&self) -> &[NativeFunction] {
        &self.functions
    }

    fn call(&self, _state: &mut NativeState, ordinal: usize, arguments: &[Value]) -> Result<NativeOutcome, Diagnostic> {
        let operand = match arguments {
            [Value::I32(operand)] => *operand,
            _ => {
                return Err(Diagnostic::new(
                    StatusCode::InvalidArgument,
                    format!("check.{}: expected one i32 argument", self.functions[ordinal].name),
                ))
            }
        };
        match (ordinal, operand) {
            (0, 0) => self.record(format!("Expected {operand} to be nonzero.")),
            (1, operand) if operand != 0 => self.record(format!("Expected {operand} to be zero.")),
            _ => {}
        }
        Ok(NativeOutcome::Ready(Vec::new()))
    }
}
