//! `RcAsyncValue`: an owning, type-erased reference to an AsyncValue.

use super::atomics::Ordering;
use std::fmt;
use std::ptr::NonNull;

use super::header::{self, fits_slot, word_is_available, AvPtr, ErrorOnly, Kind, Slot, State, TAG_MASK};
use super::waiters;
use crate::diagnostic::{Diagnostic, StatusCode};

/// Why a payload could not be read or written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AccessError {
    #[error("the value is not available yet")]
    Unavailable,
    #[error("the value is an error: {0}")]
    IsError(Diagnostic),
    #[error("type mismatch: expected {expected}, found {actual}")]
    WrongType { expected: &'static str, actual: &'static str },
    #[error("the value was already set (state {0:?})")]
    AlreadySet(State),
    #[error("an indirect value cannot be forwarded to itself")]
    ForwardToItself,
}

impl AccessError {
    /// The status a C caller sees for this failure.
    pub fn into_diagnostic(self) -> Diagnostic {
        match self {
            AccessError::Unavailable => Diagnostic::new(StatusCode::FailedPrecondition, self.to_string()),
            AccessError::IsError(diagnostic) => diagnostic,
            AccessError::WrongType { .. } | AccessError::ForwardToItself => {
                Diagnostic::new(StatusCode::InvalidArgument, self.to_string())
            }
            AccessError::AlreadySet(_) => Diagnostic::new(StatusCode::FailedPrecondition, self.to_string()),
        }
    }
}

/// One counted reference to an AsyncValue of any payload type. Cloning adds a reference (one
/// relaxed atomic add); dropping the last one frees the value.
///
/// Every method is thread-safe: a value may be read, awaited and set from many threads at once.
pub struct RcAsyncValue {
    pub(crate) ptr: AvPtr,
}

// SAFETY: payloads are `Send + Sync` (enforced by every constructor) and all shared state is
// synchronised through the header's atomics.
unsafe impl Send for RcAsyncValue {}
// SAFETY: as above.
unsafe impl Sync for RcAsyncValue {}

impl RcAsyncValue {
    /// An error value with no payload type; typed reads of it report the error.
    pub fn error(diagnostic: Diagnostic) -> RcAsyncValue {
        let ptr = header::allocate::<ErrorOnly>(Kind::Concrete, State::Error);
        // SAFETY: fresh allocation, payload slot reserved for the error pointer.
        unsafe { ptr.error_slot().write(Box::into_raw(Box::new(diagnostic))) };
        RcAsyncValue { ptr }
    }

    /// An unavailable value whose type is decided by whoever sets it, provided the payload fits
    /// in eight bytes (scalars, chains, handles). This is what a C host's promise is.
    pub fn unavailable_slot() -> RcAsyncValue {
        RcAsyncValue { ptr: header::allocate::<Slot>(Kind::Concrete, State::Unconstructed) }
    }

    #[inline]
    pub fn state(&self) -> State {
        self.ptr.state()
    }

    /// Concrete or error.
    #[inline]
    pub fn is_available(&self) -> bool {
        self.state().is_available()
    }

    #[inline]
    pub fn is_concrete(&self) -> bool {
        self.state() == State::Concrete
    }

    #[inline]
    pub fn is_error(&self) -> bool {
        self.state() == State::Error
    }

    /// Whether this is an indirect value (see [`IndirectAsyncValue`](super::IndirectAsyncValue)).
    pub fn is_indirect(&self) -> bool {
        self.ptr.kind() == Kind::Indirect
    }

    /// The error, if the value is one.
    pub fn get_error(&self) -> Option<&Diagnostic> {
        if self.state() == State::Error {
            // SAFETY: Error observed with acquire ordering; the borrow is tied to `self`.
            Some(unsafe { self.ptr.error_unchecked() })
        } else {
            None
        }
    }

    /// The name of the payload type (after forwarding, for indirect values), for messages.
    pub fn type_name(&self) -> &'static str {
        let ptr = if self.ptr.kind() == Kind::Indirect && self.is_available() {
            // SAFETY: available indirect value.
            unsafe { self.ptr.resolved() }
        } else {
            self.ptr
        };
        (ptr.type_info().name)()
    }

    /// Whether the payload type is `T`. For an indirect value that is not forwarded yet, or an
    /// untyped slot that is not set yet, the type is unknown and this is `false`.
    pub fn is_type<T: 'static>(&self) -> bool {
        match self.ptr.kind() {
            // SAFETY: checked available first.
            Kind::Indirect => self.is_available() && unsafe { self.ptr.resolved() }.holds_type::<T>(),
            Kind::Concrete => self.ptr.holds_type::<T>(),
        }
    }

    /// The payload, checked: the value must be concrete and hold a `T`.
    pub fn try_get<T: 'static>(&self) -> Result<&T, AccessError> {
        match self.state() {
            State::Concrete => {}
            State::Error => {
                // SAFETY: Error observed with acquire ordering.
                return Err(AccessError::IsError(unsafe { self.ptr.error_unchecked() }.clone()));
            }
            State::Unconstructed | State::Constructed => return Err(AccessError::Unavailable),
        }
        // SAFETY: the value is available, so an indirect one has its target.
        let target = unsafe { self.ptr.resolved() };
        if !target.holds_type::<T>() {
            return Err(AccessError::WrongType {
                expected: std::any::type_name::<T>(),
                actual: (target.type_info().name)(),
            });
        }
        // SAFETY: concrete with type `T` observed with acquire ordering; the payload is immutable
        // from now on and lives as long as our reference.
        Ok(unsafe { &*target.payload::<T>().cast::<T>() })
    }

    /// Whether [`RcAsyncValue::emplace`] of a `T` would succeed now: the value is unavailable and
    /// typed `T`, an untyped slot that fits `T`, or indirect (whose target is checked then).
    pub fn can_take<T: 'static>(&self) -> bool {
        !self.is_available()
            && (self.ptr.kind() == Kind::Indirect
                || self.ptr.holds_type::<T>()
                || (self.ptr.holds_type::<Slot>() && fits_slot::<T>()))
    }

    /// Sets an unavailable value to `value`: a typed unconstructed value of type `T`, or an
    /// untyped slot (which takes `T`'s type), with `T` at most eight bytes for the slot.
    pub fn emplace<T: Send + Sync + 'static>(&self, value: T) -> Result<(), AccessError> {
        if self.ptr.kind() == Kind::Indirect {
            return self.forward_indirect(super::AsyncValueRef::available(value).into_untyped());
        }
        // An available value is "already set" whatever its type: that is the caller's real mistake.
        if self.is_available() {
            return Err(AccessError::AlreadySet(self.state()));
        }
        let is_slot = self.ptr.holds_type::<Slot>();
        if !is_slot && !self.ptr.holds_type::<T>() {
            return Err(AccessError::WrongType {
                expected: (self.ptr.type_info().name)(),
                actual: std::any::type_name::<T>(),
            });
        }
        if is_slot && !fits_slot::<T>() {
            return Err(AccessError::WrongType {
                expected: "a payload of at most 8 bytes",
                actual: std::any::type_name::<T>(),
            });
        }
        self.ptr.claim(|s| s == State::Unconstructed).map_err(AccessError::AlreadySet)?;
        // SAFETY: we hold the lock on an unconstructed value whose layout fits `T` (same type, or
        // a slot with the identical layout); publishing makes the write visible.
        unsafe {
            self.ptr.payload::<T>().cast::<T>().write(value);
            if is_slot {
                self.ptr.header().type_info.store(
                    &header::TypeInfoOf::<T>::INFO as *const header::TypeInfo as *mut header::TypeInfo,
                    Ordering::Relaxed,
                );
            }
            self.ptr.publish(State::Concrete);
        }
        Ok(())
    }

    /// Turns an unavailable (or constructed but unpublished) value into an error, running its
    /// waiters. Fails with `AlreadySet` if the value is already available.
    pub fn set_error(&self, diagnostic: Diagnostic) -> Result<(), AccessError> {
        if self.ptr.kind() == Kind::Indirect {
            return self.forward_indirect(RcAsyncValue::error(diagnostic));
        }
        let seen = self.ptr.claim(|s| !s.is_available()).map_err(AccessError::AlreadySet)?;
        // SAFETY: we hold the lock; a constructed payload is ours to drop before the error
        // pointer takes its place in the union.
        unsafe {
            if let (State::Constructed, Some(drop_value)) = (seen, self.ptr.type_info().drop_value) {
                drop_value(self.ptr.payload_dyn());
            }
            self.ptr.error_slot().write(Box::into_raw(Box::new(diagnostic)));
            self.ptr.publish(State::Error);
        }
        Ok(())
    }

    /// Runs `callback` once the value is available (concrete or error): at once on this thread
    /// if it already is, otherwise on the thread that makes it available, before that setter
    /// returns. Never takes a lock: one CAS pushes the continuation.
    pub fn and_then<F: FnOnce() + Send + 'static>(&self, callback: F) {
        let word_cell = &self.ptr.header().word;
        let mut word = word_cell.load(Ordering::Acquire);
        if word_is_available(word) {
            callback();
            return;
        }
        let node = waiters::new_node(callback);
        loop {
            // SAFETY: the node is ours until the CAS publishes it.
            unsafe { (*node).next = header::untagged(word) };
            let pushed = node.map_addr(|a| a | (word.addr() & TAG_MASK));
            match word_cell.compare_exchange_weak(word, pushed, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return,
                Err(current) => {
                    word = current;
                    if word_is_available(word) {
                        // SAFETY: the node was never published; we still own it.
                        unsafe { waiters::run_one(node) };
                        return;
                    }
                }
            }
        }
    }

    /// Whether this is the only reference to the value (TFRT's `IsUnique`: a kernel may then
    /// reuse the payload in place). An indirect value is unique when it is available and its
    /// own reference is the only one to its target: otherwise someone else still reads the
    /// payload through another way (and an unforwarded one has no payload to reuse).
    pub fn is_unique(&self) -> bool {
        if self.ptr.header().refcount.load(Ordering::Acquire) != 1 {
            return false;
        }
        match self.ptr.kind() {
            Kind::Concrete => true,
            // SAFETY: checked available first.
            Kind::Indirect => {
                self.is_available() && unsafe { self.ptr.resolved() }.header().refcount.load(Ordering::Acquire) == 1
            }
        }
    }

    /// Whether both references name the same value.
    pub fn ptr_eq(&self, other: &RcAsyncValue) -> bool {
        self.ptr == other.ptr
    }

    /// Adds `count` references at once (one atomic add), for an owner that hands them out one
    /// by one with [`from_raw`](Self::from_raw) on the pointer of [`into_raw`](Self::into_raw):
    /// the BEF executor reserves one per use of a register this way.
    pub fn add_refs(&self, count: u32) {
        if count == 0 {
            return;
        }
        let old = self.ptr.header().refcount.fetch_add(count, Ordering::Relaxed);
        if old.checked_add(count).is_none_or(|new| new > u32::MAX / 2) {
            // The count is about to wrap: continuing would free a value that is still used.
            std::process::abort();
        }
    }

    /// Gives up the reference as a raw pointer (for the C API); see [`from_raw`](Self::from_raw).
    pub fn into_raw(self) -> *const () {
        let raw = self.as_raw();
        std::mem::forget(self);
        raw
    }

    /// The raw pointer [`into_raw`](Self::into_raw) would give, without giving up the reference
    /// (for lending the value to C for a limited time).
    pub fn as_raw(&self) -> *const () {
        self.ptr.0.as_ptr() as *const ()
    }

    /// Takes back a reference given up by [`into_raw`](Self::into_raw).
    ///
    /// # Safety
    /// `raw` must come from `into_raw` and its reference must not be used again.
    pub unsafe fn from_raw(raw: *const ()) -> RcAsyncValue {
        // SAFETY: `into_raw` never returns null.
        RcAsyncValue { ptr: AvPtr(unsafe { NonNull::new_unchecked(raw as *mut header::Header) }) }
    }

    /// A new reference to the value behind a raw pointer, leaving the raw one untouched.
    ///
    /// # Safety
    /// `raw` must come from `into_raw` and its reference must still be alive.
    pub unsafe fn clone_from_raw(raw: *const ()) -> RcAsyncValue {
        // SAFETY: forwarded from the caller.
        let borrowed = std::mem::ManuallyDrop::new(unsafe { RcAsyncValue::from_raw(raw) });
        (*borrowed).clone()
    }

    /// Completes an indirect value by forwarding it to `target` (see `IndirectAsyncValue`).
    ///
    /// A forward to an unavailable target is marked pending at once by moving the indirect value
    /// to `Constructed` (a state indirect values use for nothing else), so a second forward or an
    /// error is refused now instead of losing a race later.
    pub fn forward_indirect(&self, target: RcAsyncValue) -> Result<(), AccessError> {
        debug_assert_eq!(self.ptr.kind(), Kind::Indirect);
        if target.ptr_eq(self) {
            return Err(AccessError::ForwardToItself);
        }
        if target.is_available() {
            return self.complete_forward(target, State::Unconstructed);
        }
        self.ptr.transition(State::Unconstructed, State::Constructed).map_err(AccessError::AlreadySet)?;
        let me = self.clone();
        // Not an owning reference: the target's own continuation must not keep the target alive,
        // or a target that is never set would never be freed.
        let source = target.ptr;
        target.and_then(move || {
            // SAFETY: a continuation runs either inline here, where `target` is held, or inside
            // the target's publish, while its setter holds a reference; a target freed unset
            // drops this closure without running it.
            let source = unsafe { RcAsyncValue::clone_from_ptr(source) };
            let completed = me.complete_forward(source, State::Constructed);
            debug_assert!(completed.is_ok(), "only this continuation completes a pending forward");
        });
        Ok(())
    }

    /// Points this indirect value at an available `target` and publishes its state, if the
    /// indirect value is still in state `expected`.
    fn complete_forward(&self, target: RcAsyncValue, expected: State) -> Result<(), AccessError> {
        // Collapse chains: an available indirect target is replaced by its own target, so reads
        // follow at most one hop.
        let target = if target.ptr.kind() == Kind::Indirect {
            // SAFETY: target is available; its resolved pointer is a non-indirect value it owns.
            unsafe { RcAsyncValue::clone_from_ptr(target.ptr.resolved()) }
        } else {
            target
        };
        let state = target.state();
        self.ptr.claim(|s| s == expected).map_err(AccessError::AlreadySet)?;
        // SAFETY: we hold the lock; the target reference moves into the payload.
        unsafe {
            self.ptr.payload::<header::IndirectTarget>().cast::<*const header::Header>().write(target.ptr.0.as_ptr());
            std::mem::forget(target);
            self.ptr.publish(state);
        }
        Ok(())
    }

    /// A new reference to a value known only by pointer.
    ///
    /// # Safety
    /// The value must be alive (someone holds a reference) for the duration of the call.
    unsafe fn clone_from_ptr(ptr: AvPtr) -> RcAsyncValue {
        ptr.add_ref();
        RcAsyncValue { ptr }
    }
}

impl Clone for RcAsyncValue {
    #[inline]
    fn clone(&self) -> RcAsyncValue {
        self.ptr.add_ref();
        RcAsyncValue { ptr: self.ptr }
    }
}

impl Drop for RcAsyncValue {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: we own one reference.
        unsafe { self.ptr.drop_ref() }
    }
}

impl fmt::Debug for RcAsyncValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("AsyncValue");
        d.field("state", &self.state());
        if let Some(error) = self.get_error() {
            d.field("error", error);
        } else {
            d.field("type", &self.type_name());
        }
        d.finish()
    }
}

/// Number of AsyncValues alive in this process (debug builds only): tests assert it returns to
/// where it started.
#[cfg(debug_assertions)]
pub fn live_count() -> isize {
    header::live::LIVE.load(std::sync::atomic::Ordering::Relaxed)
}
