//! `Chain`: the payload of values that carry only ordering, never data.

use super::async_value::AsyncValueRef;

/// A control dependency: a kernel that takes a chain runs after the one that produced it.
///
/// It is a zero-sized type, so an available chain costs one AsyncValue header and nothing more.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Chain;

impl Chain {
    /// An already available chain, the usual start of a dependency sequence.
    pub fn ready() -> AsyncValueRef<Chain> {
        AsyncValueRef::available(Chain)
    }
}
