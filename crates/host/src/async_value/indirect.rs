//! `IndirectAsyncValue`: a placeholder for a value whose type and producer are not known yet.

use super::header::{self, Kind, State};
use super::typed::AsyncValueRef;
use super::value::{AccessError, RcAsyncValue};
use crate::diagnostic::Diagnostic;

/// A promise that is completed by pointing it at another value: the result of a function call
/// whose return kernel has not run, or of a VM call that suspended.
///
/// Forwarding to an unavailable value waits (with `and_then`) and completes when it does;
/// forwarding to another indirect value follows it, so readers never walk more than one hop.
pub struct IndirectAsyncValue {
    value: RcAsyncValue,
}

impl IndirectAsyncValue {
    pub fn new() -> IndirectAsyncValue {
        IndirectAsyncValue {
            value: RcAsyncValue {
                ptr: header::allocate::<header::IndirectTarget>(Kind::Indirect, State::Unconstructed),
            },
        }
    }

    /// Makes this value an alias of `target` (now or when `target` becomes available).
    /// Fails if it was already forwarded or set, or if `target` is this value itself.
    pub fn forward_to(&self, target: RcAsyncValue) -> Result<(), AccessError> {
        self.value.forward_indirect(target)
    }

    /// Completes this value as an error.
    pub fn set_error(&self, diagnostic: Diagnostic) -> Result<(), AccessError> {
        self.value.set_error(diagnostic)
    }

    /// Another reference to the value, as untyped.
    pub fn value(&self) -> RcAsyncValue {
        self.value.clone()
    }

    /// Another reference to the value, as typed; the type is checked when it is read.
    pub fn typed<T: Send + Sync + 'static>(&self) -> AsyncValueRef<T> {
        AsyncValueRef::downcast(self.value.clone())
            .unwrap_or_else(|_| unreachable!("indirect values downcast to any type"))
    }
}

impl Default for IndirectAsyncValue {
    fn default() -> Self {
        IndirectAsyncValue::new()
    }
}

impl std::ops::Deref for IndirectAsyncValue {
    type Target = RcAsyncValue;
    fn deref(&self) -> &RcAsyncValue {
        &self.value
    }
}
