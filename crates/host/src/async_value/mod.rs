//! AsyncValue: TFRT's lock-free, reference-counted future/promise, the currency of rtx.
//!
//! A value is unconstructed, constructed, concrete or an error; the last two are "available" and
//! final. Continuations attached with `and_then` run exactly once, when the value becomes
//! available, on the thread that made it so (or at once if it already is).
//!
//! Layout and costs (x86-64). `benches/async_value.rs` measures them against in-run anchors: on the
//! development VM creating, reading and dropping an i32 value costs 0.64–0.81× the same with an
//! `Arc<i32>`, and unavailable → `and_then` → set → waiter ran 0.65–0.71× a mutex-based promise.
//! - header: 24 bytes (refcount, kind, type-info pointer, state word); a payload of at most eight
//!   bytes (i32, f64, `Chain`, a handle) makes a 32-byte value; larger payloads follow inline.
//! - creating an available value: one allocation (for payloads of at most eight bytes, a block
//!   from a per-thread cache on rtx's worker threads, see `free_list`), no atomic read-modify-write;
//! - clone/drop: one relaxed add / one acquire load (last owner) or one release subtract;
//! - `and_then` on an unavailable value: one allocation (node with the closure inline) + one CAS;
//! - setting: one CAS to claim the payload, one swap to publish and detach the waiters.
//!
//! No vtable and no RTTI: a per-type `TypeInfo` constant carries the destructor and layout, and
//! type checks compare those (always for C callers and indirect values, debug-only for typed
//! direct reads, whose type the constructor fixed).

mod atomics;
mod free_list;
mod header;
mod indirect;
mod typed;
mod value;
mod waiters;

pub(crate) use free_list::cache_on_this_thread;
pub(crate) use header::TRACED_ALIVE;
pub use header::{State, HEADER_SIZE};
pub use indirect::IndirectAsyncValue;
pub use typed::AsyncValueRef;
#[cfg(debug_assertions)]
pub use value::live_count;
pub use value::{AccessError, RcAsyncValue};

#[cfg(all(test, loom))]
mod loom_tests;
#[cfg(all(test, not(loom)))]
mod tests;
