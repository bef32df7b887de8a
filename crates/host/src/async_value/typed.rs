//! `AsyncValueRef<T>`: a counted reference that knows its payload type.

use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;

use super::header::{self, Kind, State};
use super::value::{AccessError, RcAsyncValue};
use crate::diagnostic::Diagnostic;

/// A typed AsyncValue reference: what kernels and the runtime pass around when the type is known.
///
/// It derefs to [`RcAsyncValue`] for the type-independent operations (`and_then`, `state`, ...).
/// The payload lives inline in the value's allocation, right after the 24-byte header.
pub struct AsyncValueRef<T> {
    value: RcAsyncValue,
    _type: PhantomData<fn() -> T>,
}

impl<T: Send + Sync + 'static> AsyncValueRef<T> {
    /// An available value: one allocation, no atomic read-modify-write.
    pub fn available(payload: T) -> AsyncValueRef<T> {
        let ptr = header::allocate::<T>(Kind::Concrete, State::Concrete);
        // SAFETY: fresh allocation with room for a `T`; nobody else can see it yet.
        unsafe { ptr.payload::<T>().cast::<T>().write(payload) };
        AsyncValueRef::wrap(RcAsyncValue { ptr })
    }

    /// A promise for a `T`, set later with [`emplace`](Self::emplace) or
    /// [`set_error`](RcAsyncValue::set_error).
    pub fn unconstructed() -> AsyncValueRef<T> {
        AsyncValueRef::wrap(RcAsyncValue { ptr: header::allocate::<T>(Kind::Concrete, State::Unconstructed) })
    }

    /// A value whose payload is built but not yet visible; [`set_state_concrete`]
    /// (Self::set_state_concrete) publishes it. Lets a producer build a result in place and
    /// decide later whether it becomes the value or gives way to an error.
    pub fn constructed(payload: T) -> AsyncValueRef<T> {
        let ptr = header::allocate::<T>(Kind::Concrete, State::Constructed);
        // SAFETY: fresh allocation with room for a `T`.
        unsafe { ptr.payload::<T>().cast::<T>().write(payload) };
        AsyncValueRef::wrap(RcAsyncValue { ptr })
    }

    /// A value of type `T` that is an error from the start.
    pub fn error(diagnostic: Diagnostic) -> AsyncValueRef<T> {
        let value = AsyncValueRef::<T>::unconstructed();
        value.value.set_error(diagnostic).expect("a fresh value accepts an error");
        value
    }

    /// Fulfils the promise. Fails if the value was already set (or errored).
    pub fn emplace(&self, payload: T) -> Result<(), AccessError> {
        self.value.emplace(payload)
    }

    /// Publishes a payload built by [`constructed`](Self::constructed).
    pub fn set_state_concrete(&self) -> Result<(), AccessError> {
        self.value.ptr.claim(|s| s == State::Constructed).map_err(AccessError::AlreadySet)?;
        // SAFETY: we hold the lock on a constructed value; its payload is initialised.
        unsafe { self.value.ptr.publish(State::Concrete) };
        Ok(())
    }

    /// The payload of a concrete value.
    ///
    /// # Panics
    /// If the value is not concrete (unavailable or an error): reading it then is a logic error,
    /// like TFRT's `get`. Use [`try_get`](RcAsyncValue::try_get) to ask instead.
    #[inline]
    pub fn get(&self) -> &T {
        let ptr = self.value.ptr;
        if ptr.state() != State::Concrete {
            panic!("AsyncValueRef<{}>::get on a value that is {:?}", std::any::type_name::<T>(), self.value);
        }
        if ptr.kind() == Kind::Indirect {
            // The target's type is only known at run time: always check it.
            return self.value.try_get::<T>().unwrap_or_else(|e| panic!("AsyncValueRef::get: {e}"));
        }
        debug_assert!(
            ptr.holds_type::<T>(),
            "AsyncValueRef<{}> holds {}",
            std::any::type_name::<T>(),
            self.value.type_name()
        );
        // SAFETY: a direct value built as `T` (constructors and the checked `downcast` guarantee
        // it) whose Concrete state we observed with acquire ordering.
        unsafe { &*ptr.payload::<T>().cast::<T>() }
    }

    /// The typed view of an untyped reference, if it holds (or is a promise for) a `T`, or is
    /// indirect (whose type is then checked on every read).
    pub fn downcast(value: RcAsyncValue) -> Result<AsyncValueRef<T>, RcAsyncValue> {
        if value.ptr.kind() == Kind::Indirect || value.ptr.holds_type::<T>() {
            Ok(AsyncValueRef::wrap(value))
        } else {
            Err(value)
        }
    }
}

impl<T> AsyncValueRef<T> {
    fn wrap(value: RcAsyncValue) -> AsyncValueRef<T> {
        AsyncValueRef { value, _type: PhantomData }
    }

    /// The type-erased reference (no reference count change).
    pub fn into_untyped(self) -> RcAsyncValue {
        self.value
    }

    /// Borrows the type-erased reference.
    pub fn as_untyped(&self) -> &RcAsyncValue {
        &self.value
    }
}

impl<T> Deref for AsyncValueRef<T> {
    type Target = RcAsyncValue;
    fn deref(&self) -> &RcAsyncValue {
        &self.value
    }
}

impl<T> Clone for AsyncValueRef<T> {
    fn clone(&self) -> AsyncValueRef<T> {
        AsyncValueRef::wrap(self.value.clone())
    }
}

impl<T> From<AsyncValueRef<T>> for RcAsyncValue {
    fn from(value: AsyncValueRef<T>) -> RcAsyncValue {
        value.value
    }
}

impl<T> fmt::Debug for AsyncValueRef<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}
