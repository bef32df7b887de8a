//! The atomics the AsyncValue state machine is built from: std's normally, loom's when the crate
//! is built with `--cfg loom`, so that `loom_tests.rs` can explore every interleaving of the
//! claim/publish/push protocol.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicPtr, AtomicU32, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicPtr, AtomicU32, Ordering};
