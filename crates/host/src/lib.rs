//! The host runtime (TFRT design): the values, queues and allocator every execution engine uses.
//!
//! AsyncValue is the currency: kernels, VM calls and devices exchange `AsyncValue`s and attach
//! continuations instead of blocking. The work queue decides where continuations and tasks run,
//! the allocator where bulk data lives, and [`HostContext`] ties both to a cancellation signal.

pub(crate) mod allocator;
pub mod async_value;
pub(crate) mod buffer;
pub(crate) mod chain;
pub(crate) mod context;
pub(crate) mod diagnostic;
pub mod join;
pub mod tracing;
pub mod work_queue;

pub use allocator::{
    CachingAllocator, CountingAllocator, FixedCapacityAllocator, HostAllocator, MemoryStats, SystemAllocator,
};
pub use async_value::{AsyncValueRef, IndirectAsyncValue, RcAsyncValue, State};
pub use buffer::HostBuffer;
pub use chain::Chain;
pub use context::HostContext;
pub use diagnostic::{Diagnostic, Location, ResultExt, StatusCode};
pub use join::{block_until_ready, run_when_ready};
pub use work_queue::{Task, WorkQueue};
