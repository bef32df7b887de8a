//! Typed C handles. Each opaque C handle type names, through [`Handle`], the Rust value its
//! pointers stand for and how a pointer owns that value; only the helpers here turn a handle into
//! a reference, a new reference or a release. They are generic over the handle type, never over
//! a raw `*const T`, so no cast is written by hand and giving one family's handle to another's
//! helper does not compile (rustls-ffi's `Castable` idea):
//!
//! ```
//! use rtx::ffi::{handle, module::rtx_module_t};
//! let module: *mut rtx_module_t = std::ptr::null_mut();
//! // SAFETY: NULL is allowed and does nothing.
//! unsafe { handle::release(module) };
//! ```
//!
//! ```compile_fail,E0308
//! use rtx::ffi::{context::rtx_context_t, handle, module::rtx_module_t};
//! let module: *mut rtx_module_t = std::ptr::null_mut();
//! // A module released as a context: a type error, not a wrong free.
//! unsafe { handle::release::<rtx_context_t>(module) };
//! ```

use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::sync::Arc;

use smallvec::SmallVec;

use super::invalid_argument;
use crate::host::{Diagnostic, RcAsyncValue};

/// An opaque C handle type: C holds pointers to it, each standing for one `RustType` value owned
/// as `Ownership` says. Implemented once per handle family, next to its C type.
pub trait Handle: Sized {
    /// The value a handle stands for.
    type RustType: 'static;
    /// How a handle pointer owns it: [`OwnershipArc`], [`OwnershipBox`] or [`OwnershipAsyncValue`].
    type Ownership: Ownership<Self::RustType>;
}

/// How a handle pointer owns its value; implemented by the ownership marker types.
pub trait Ownership<T: 'static> {
    /// What borrowing a live handle gives: `&T` when the pointer is the value's address, a copy
    /// of the pointer that does not count as a reference otherwise.
    type Borrowed<'a>: Deref<Target = T>;

    /// # Safety
    /// `raw` must be a live, non-null handle of this ownership for `T`, alive for `'a`.
    unsafe fn borrow<'a>(raw: *const ()) -> Self::Borrowed<'a>;
}

/// A reference-counted ownership: `_retain` adds a reference, `_release` drops one.
pub trait Counted<T: 'static>: Ownership<T> {
    /// The owning pointer a handle is the raw form of.
    type Owner: Clone;

    fn into_raw(owner: Self::Owner) -> *const ();

    /// # Safety
    /// `raw` must come from [`Counted::into_raw`]; its reference moves to the result.
    unsafe fn from_raw(raw: *const ()) -> Self::Owner;
}

/// The handle is `Arc::<RustType>::into_raw`: the value's address, one count per reference.
pub enum OwnershipArc {}

/// The handle is `Box::<RustType>::into_raw`: one owner, which frees it once.
pub enum OwnershipBox {}

/// The handle is `RcAsyncValue::into_raw` (`RustType` is `RcAsyncValue`): the AsyncValue's own
/// address, counted by its own reference count, with no wrapper allocation.
pub enum OwnershipAsyncValue {}

impl<T: 'static> Ownership<T> for OwnershipArc {
    type Borrowed<'a> = &'a T;

    unsafe fn borrow<'a>(raw: *const ()) -> &'a T {
        // SAFETY: a live handle is the address of the `Arc`'s value (caller's contract).
        unsafe { &*raw.cast::<T>() }
    }
}

impl<T: 'static> Counted<T> for OwnershipArc {
    type Owner = Arc<T>;

    fn into_raw(owner: Arc<T>) -> *const () {
        Arc::into_raw(owner).cast()
    }

    unsafe fn from_raw(raw: *const ()) -> Arc<T> {
        // SAFETY: `raw` came from `Arc::<T>::into_raw` (caller's contract).
        unsafe { Arc::from_raw(raw.cast::<T>()) }
    }
}

impl<T: 'static> Ownership<T> for OwnershipBox {
    type Borrowed<'a> = &'a T;

    unsafe fn borrow<'a>(raw: *const ()) -> &'a T {
        // SAFETY: a live handle is the address of the boxed value (caller's contract).
        unsafe { &*raw.cast::<T>() }
    }
}

impl Ownership<RcAsyncValue> for OwnershipAsyncValue {
    type Borrowed<'a> = Unowned<'a, RcAsyncValue>;

    unsafe fn borrow<'a>(raw: *const ()) -> Unowned<'a, RcAsyncValue> {
        // SAFETY: a live handle came from `RcAsyncValue::into_raw`; `Unowned` never drops it.
        Unowned { owner: ManuallyDrop::new(unsafe { RcAsyncValue::from_raw(raw) }), _handle: PhantomData }
    }
}

impl Counted<RcAsyncValue> for OwnershipAsyncValue {
    type Owner = RcAsyncValue;

    fn into_raw(owner: RcAsyncValue) -> *const () {
        owner.into_raw()
    }

    unsafe fn from_raw(raw: *const ()) -> RcAsyncValue {
        // SAFETY: forwarded from the caller.
        unsafe { RcAsyncValue::from_raw(raw) }
    }
}

/// An owning pointer made from a borrowed handle without taking a reference: usable for `'a`,
/// never dropped.
pub struct Unowned<'a, P> {
    owner: ManuallyDrop<P>,
    _handle: PhantomData<&'a P>,
}

impl<P> Deref for Unowned<'_, P> {
    type Target = P;

    fn deref(&self) -> &P {
        &self.owner
    }
}

/// What borrowing a handle of type `H` gives.
pub type Borrowed<'a, H> = <<H as Handle>::Ownership as Ownership<<H as Handle>::RustType>>::Borrowed<'a>;

/// The owning pointer of a counted handle type `H` (`Arc<_>`, `RcAsyncValue`).
pub type Owner<H> = <<H as Handle>::Ownership as Counted<<H as Handle>::RustType>>::Owner;

/// Hands one reference to C as a handle.
pub fn to_handle<H: Handle>(owner: Owner<H>) -> *mut H
where
    H::Ownership: Counted<H::RustType>,
{
    <H::Ownership as Counted<H::RustType>>::into_raw(owner).cast_mut().cast()
}

/// Lends C an async value as a handle without adding a reference: C may use it only while the
/// lender keeps `value` alive (a kernel's arguments during the kernel call) and never releases it.
pub fn lend<H: Handle<RustType = RcAsyncValue, Ownership = OwnershipAsyncValue>>(value: &RcAsyncValue) -> *mut H {
    value.as_raw().cast_mut().cast()
}

/// Borrows a handle argument, or names the NULL argument in an INVALID_ARGUMENT error.
///
/// # Safety
/// A non-null `handle` must be live for `'a`.
pub unsafe fn borrow<'a, H: Handle>(
    handle: *const H,
    function: &str,
    argument: &str,
) -> Result<Borrowed<'a, H>, Diagnostic> {
    // SAFETY: forwarded from the caller.
    unsafe { borrow_opt(handle) }.ok_or_else(|| invalid_argument(format!("{function}: argument '{argument}' is NULL")))
}

/// Borrows a handle, or `None` for NULL (for functions that cannot fail).
///
/// # Safety
/// A non-null `handle` must be live for `'a`.
pub unsafe fn borrow_opt<'a, H: Handle>(handle: *const H) -> Option<Borrowed<'a, H>> {
    // SAFETY: non-null, and live for `'a` by the caller's contract.
    (!handle.is_null()).then(|| unsafe { <H::Ownership as Ownership<H::RustType>>::borrow(handle.cast()) })
}

/// A new reference to a counted handle's value, or names the NULL argument.
///
/// # Safety
/// A non-null `handle` must be live.
pub unsafe fn clone<H: Handle>(handle: *const H, function: &str, argument: &str) -> Result<Owner<H>, Diagnostic>
where
    H::Ownership: Counted<H::RustType>,
{
    if handle.is_null() {
        return Err(invalid_argument(format!("{function}: argument '{argument}' is NULL")));
    }
    // SAFETY: non-null, and live by the caller's contract.
    Ok(unsafe { clone_live(handle) })
}

/// New references to the `count` handles of a C array (a few kept without allocating), or names the
/// NULL argument: the array (`argument`, NULL with a non-zero `count`) or its first NULL entry
/// (`argument[i]`).
///
/// # Safety
/// A non-null `handles` must point to `count` handles, each NULL or live.
pub unsafe fn clone_all<H: Handle>(
    handles: *const *mut H,
    count: usize,
    function: &str,
    argument: &str,
) -> Result<SmallVec<[Owner<H>; 4]>, Diagnostic>
where
    H::Ownership: Counted<H::RustType>,
{
    if count == 0 {
        return Ok(SmallVec::new());
    }
    if handles.is_null() {
        return Err(invalid_argument(format!("{function}: argument '{argument}' is NULL but count is {count}")));
    }
    // SAFETY: the caller guarantees `count` readable handles at a non-null `handles`.
    let handles = unsafe { std::slice::from_raw_parts(handles, count) };
    handles
        .iter()
        .enumerate()
        .map(|(i, &handle)| {
            if handle.is_null() {
                // Named only here: formatting the name of every entry would cost each call.
                return Err(invalid_argument(format!("{function}: argument '{argument}[{i}]' is NULL")));
            }
            // SAFETY: non-null, and live by the caller's contract.
            Ok(unsafe { clone_live(handle) })
        })
        .collect()
}

/// Adds a reference and returns `handle` (NULL stays NULL).
///
/// # Safety
/// A non-null `handle` must be live.
pub unsafe fn retain<H: Handle>(handle: *mut H) -> *mut H
where
    H::Ownership: Counted<H::RustType>,
{
    if !handle.is_null() {
        // SAFETY: non-null, and live by the caller's contract. The new reference is the C
        // caller's, who already holds its pointer.
        std::mem::forget(unsafe { clone_live(handle) });
    }
    handle
}

/// # Safety
/// `handle` must be non-null and live.
unsafe fn clone_live<H: Handle>(handle: *const H) -> Owner<H>
where
    H::Ownership: Counted<H::RustType>,
{
    // SAFETY: a live handle (caller's contract); this copy of its pointer is never dropped.
    let borrowed = ManuallyDrop::new(unsafe { <H::Ownership as Counted<H::RustType>>::from_raw(handle.cast()) });
    Owner::<H>::clone(&borrowed)
}

/// Drops the reference `handle` owned; NULL does nothing.
///
/// # Safety
/// A non-null `handle` must be live, and the caller gives up the reference it owned.
pub unsafe fn release<H: Handle>(handle: *mut H)
where
    H::Ownership: Counted<H::RustType>,
{
    // SAFETY: forwarded from the caller.
    drop(unsafe { take(handle) });
}

/// Takes over the reference `handle` owned (`None` for NULL), for functions that consume one.
///
/// # Safety
/// A non-null `handle` must be live, and the caller gives up the reference it owned.
pub unsafe fn take<H: Handle>(handle: *mut H) -> Option<Owner<H>>
where
    H::Ownership: Counted<H::RustType>,
{
    // SAFETY: the caller's reference moves to the result.
    (!handle.is_null()).then(|| unsafe { <H::Ownership as Counted<H::RustType>>::from_raw(handle.cast_const().cast()) })
}

/// Hands a value to C as the only owner of a new handle.
pub fn box_to_handle<H: Handle<Ownership = OwnershipBox>>(value: H::RustType) -> *mut H {
    Box::into_raw(Box::new(value)).cast()
}

/// Takes back the value of a boxed handle (`None` for NULL); the handle is gone afterwards.
///
/// # Safety
/// A non-null `handle` must be live and owned by the caller, and not used again.
pub unsafe fn take_box<H: Handle<Ownership = OwnershipBox>>(handle: *mut H) -> Option<H::RustType> {
    // SAFETY: a live handle is a pointer from `Box::<RustType>::into_raw`, given up here.
    (!handle.is_null()).then(|| *unsafe { Box::from_raw(handle.cast::<H::RustType>()) })
}

#[cfg(test)]
#[allow(non_camel_case_types)]
mod tests {
    use super::*;
    use crate::host::{AsyncValueRef, StatusCode};

    /// A test family counted by `Arc`.
    struct rtx_probe {
        _private: [u8; 0],
    }

    impl Handle for rtx_probe {
        type RustType = u64;
        type Ownership = OwnershipArc;
    }

    /// A test family owned by one `Box`.
    struct rtx_boxed {
        _private: [u8; 0],
    }

    impl Handle for rtx_boxed {
        type RustType = String;
        type Ownership = OwnershipBox;
    }

    /// A test family of AsyncValues.
    struct rtx_value {
        _private: [u8; 0],
    }

    impl Handle for rtx_value {
        type RustType = RcAsyncValue;
        type Ownership = OwnershipAsyncValue;
    }

    #[test]
    fn retain_and_release_move_the_arc_count_by_one_each() {
        let value = Arc::new(7u64);
        let handle = to_handle::<rtx_probe>(Arc::clone(&value));
        assert_eq!(Arc::strong_count(&value), 2);
        // SAFETY: `handle` is live until its last release below.
        unsafe {
            assert_eq!(retain(handle), handle);
            assert_eq!(Arc::strong_count(&value), 3);
            assert_eq!(*borrow(handle, "f", "probe").unwrap(), 7);
            let cloned = clone(handle, "f", "probe").unwrap();
            assert!(Arc::ptr_eq(&cloned, &value), "a clone is the same allocation");
            drop(cloned);
            release(handle);
            assert_eq!(Arc::strong_count(&value), 2);
            release(handle);
        }
        assert_eq!(Arc::strong_count(&value), 1);
    }

    #[test]
    fn an_async_value_handle_is_the_value_itself_and_the_last_release_frees_it() {
        // The payload's count tells whether the AsyncValue holding it was freed.
        let payload = Arc::new(());
        let value = AsyncValueRef::available(Arc::clone(&payload)).into_untyped();
        let raw = value.clone().into_raw();
        let handle = to_handle::<rtx_value>(value);
        assert_eq!(handle.cast_const().cast::<()>(), raw, "no wrapper allocation");
        // SAFETY: `raw` gave up a reference above; `handle` is live until its last release.
        unsafe {
            drop(RcAsyncValue::from_raw(raw));
            assert!(borrow(handle, "f", "value").unwrap().is_type::<Arc<()>>());
            assert_eq!(retain(handle), handle);
            release(handle);
            assert_eq!(Arc::strong_count(&payload), 2, "one reference is left");
            release(handle);
        }
        assert_eq!(Arc::strong_count(&payload), 1, "the last release freed the value");
    }

    #[test]
    fn a_boxed_handle_is_taken_back_once() {
        let handle = box_to_handle::<rtx_boxed>("owned".to_owned());
        // SAFETY: `handle` is live until taken back below.
        unsafe {
            assert_eq!(borrow(handle, "f", "boxed").unwrap().as_str(), "owned");
            assert_eq!(take_box(handle).as_deref(), Some("owned"));
            assert_eq!(take_box(std::ptr::null_mut::<rtx_boxed>()), None);
        }
    }

    #[test]
    fn null_handles_name_the_function_and_argument_or_do_nothing() {
        let null = std::ptr::null_mut::<rtx_probe>();
        // SAFETY: NULL is allowed everywhere.
        unsafe {
            let error = borrow(null, "rtx_probe_get", "probe").err().unwrap();
            assert_eq!(error.code, StatusCode::InvalidArgument);
            assert_eq!(error.message, "rtx_probe_get: argument 'probe' is NULL");
            let error = clone(null, "rtx_probe_copy", "source").err().unwrap();
            assert_eq!(error.message, "rtx_probe_copy: argument 'source' is NULL");
            assert!(borrow_opt(null).is_none());
            assert!(retain(null).is_null());
            release(null);
            assert!(borrow_opt(std::ptr::null::<rtx_value>()).is_none());
        }
    }
}
