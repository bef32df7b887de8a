//! The memory layout every AsyncValue shares: a 24-byte header followed by an inline payload.
//!
//! ```text
//! offset 0   refcount  u32 (atomic)
//! offset 4   kind      u8   Concrete | Indirect
//! offset 8   type_info *const TypeInfo (atomic: an untyped slot learns its type when it is set)
//! offset 16  word      tagged pointer (atomic): waiter-list pointer | LOCK bit | 2 state bits
//! offset 24  payload   union { T, *mut Diagnostic (error), *const Header (indirect target) }
//! ```
//!
//! Packing the waiter list and the state into one word is what makes the value lock-free: a
//! waiter is pushed with one CAS that fails if the state changed, and a setter publishes the state
//! and detaches the whole list with one `swap`. Waiter nodes are at least 8-byte aligned, which
//! frees the three low bits.
//!
//! There are no vtables: `TypeInfo` is a per-type constant record (destructor, layout, payload
//! offset, type id), the same trick TFRT uses to avoid RTTI.

use super::atomics::{fence, AtomicPtr, AtomicU32, Ordering};
use std::alloc::{self, Layout};
use std::any::TypeId;
use std::cell::UnsafeCell;
use std::mem::{offset_of, ManuallyDrop};
use std::ptr::{self, NonNull};

use super::free_list;
use super::waiters::{self, NodeHead};
use crate::diagnostic::Diagnostic;

/// The availability of a value. It only ever moves forward, and `Concrete`/`Error` are final.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum State {
    /// No payload yet: a promise.
    Unconstructed = 0,
    /// The payload is built but not yet visible to readers (`AsyncValueRef::constructed`); for an
    /// indirect value: forwarded to a target that is not available yet.
    Constructed = 1,
    /// The payload is readable.
    Concrete = 2,
    /// The value is an error; it carries a [`Diagnostic`] instead of a payload.
    Error = 3,
}

impl State {
    #[inline]
    pub(crate) fn from_word(word: usize) -> State {
        match word & STATE_MASK {
            0 => State::Unconstructed,
            1 => State::Constructed,
            2 => State::Concrete,
            _ => State::Error,
        }
    }

    /// Concrete or error: readers may look, continuations have run or run at once.
    #[inline]
    pub fn is_available(self) -> bool {
        self >= State::Concrete
    }
}

pub(crate) const STATE_MASK: usize = 0b011;
/// Held by the one thread that is writing the payload (or error, or forward target) before it
/// publishes a final state; makes every setter race-free without a mutex.
pub(crate) const LOCK_BIT: usize = 0b100;
pub(crate) const TAG_MASK: usize = 0b111;

#[inline]
pub(crate) fn word_is_available(word: *mut NodeHead) -> bool {
    word.addr() & STATE_MASK >= State::Concrete as usize
}

/// A word with no waiters: just the state bits, and no provenance.
#[inline]
pub(crate) fn state_word(state: State) -> *mut NodeHead {
    ptr::without_provenance_mut(state as usize)
}

/// The waiter list of a word (the pointer with its tag bits cleared, provenance kept).
#[inline]
pub(crate) fn untagged(word: *mut NodeHead) -> *mut NodeHead {
    word.map_addr(|a| a & !TAG_MASK)
}

#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Concrete = 0,
    Indirect = 1,
}

/// What the runtime needs to know about a payload type, without generics or vtables.
pub(crate) struct TypeInfo {
    pub(crate) name: fn() -> &'static str,
    pub(crate) type_id: fn() -> TypeId,
    /// Layout of the whole allocation (`AvBox<T>`), for deallocation.
    pub(crate) box_layout: Layout,
    /// Offset of the payload from the header; it grows only for over-aligned types.
    pub(crate) payload_offset: usize,
    /// Drops the `T` at the payload address; `None` for types without drop glue (scalars,
    /// chains), which saves an indirect call on every free.
    pub(crate) drop_value: Option<unsafe fn(*mut u8)>,
}

/// The allocation behind every value. `repr(C)` fixes the header at offset 0, so a pointer to the
/// box is a pointer to the header.
#[repr(C)]
pub(crate) struct AvBox<T> {
    pub(crate) header: Header,
    pub(crate) payload: UnsafeCell<Payload<T>>,
}

#[repr(C)]
pub(crate) union Payload<T> {
    pub(crate) value: ManuallyDrop<T>,
    pub(crate) error: *mut Diagnostic,
    pub(crate) target: *const Header,
}

#[repr(C)]
pub(crate) struct Header {
    pub(crate) refcount: AtomicU32,
    pub(crate) kind: Kind,
    /// Made while tracing: counted in [`TRACED_ALIVE`] until freed (in the header's padding).
    pub(crate) traced: bool,
    pub(crate) type_info: AtomicPtr<TypeInfo>,
    pub(crate) word: AtomicPtr<NodeHead>,
}

/// Bytes of bookkeeping in front of every payload.
pub const HEADER_SIZE: usize = std::mem::size_of::<Header>();

/// The payload offset is the same for every type whose alignment is at most the header's; larger
/// alignments move it, which is why accessors go through `payload_ptr::<T>()`.
#[inline]
pub(crate) const fn payload_offset<T>() -> usize {
    offset_of!(AvBox<T>, payload)
}

/// The per-type constant behind [`TypeInfo`]; `&TypeInfoOf::<T>::INFO` is promoted to a `'static`.
pub(crate) struct TypeInfoOf<T>(std::marker::PhantomData<T>);

impl<T: 'static> TypeInfoOf<T> {
    pub(crate) const INFO: TypeInfo = TypeInfo {
        name: std::any::type_name::<T>,
        type_id: TypeId::of::<T>,
        box_layout: Layout::new::<AvBox<T>>(),
        payload_offset: payload_offset::<T>(),
        drop_value: if std::mem::needs_drop::<T>() { Some(drop_value::<T>) } else { None },
    };
}

/// # Safety
/// `payload` must point to a live, initialised `T` that is not used again.
unsafe fn drop_value<T>(payload: *mut u8) {
    // SAFETY: the caller guarantees `payload` holds an initialised `T` owned by us.
    unsafe { ptr::drop_in_place(payload.cast::<T>()) }
}

/// Marker payload of values created as errors, with no value type.
pub(crate) struct ErrorOnly;
/// Marker payload of indirect values: the payload is the forward target.
pub(crate) struct IndirectTarget;

/// The payload type of an untyped promise (`RcAsyncValue::unavailable_slot`): eight bytes,
/// eight-aligned, which any small scalar or pointer-sized handle fits exactly.
#[repr(C, align(8))]
pub(crate) struct Slot([u8; 8]);

/// Whether `T` fits the untyped slot with the *same* allocation layout, so that the slot can
/// change its type in place and still be deallocated correctly.
pub(crate) const fn fits_slot<T>() -> bool {
    let a = Layout::new::<AvBox<T>>();
    let b = Layout::new::<AvBox<Slot>>();
    a.size() == b.size() && a.align() == b.align() && payload_offset::<T>() == payload_offset::<Slot>()
}

/// A raw pointer to a value's allocation. All payload addresses are derived from it, never from a
/// `&Header`, because a reference's provenance covers only the header's 24 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AvPtr(pub(crate) NonNull<Header>);

// SAFETY: AvPtr is an address; the values it points to synchronise through their atomics and
// only hold `Send + Sync` payloads.
unsafe impl Send for AvPtr {}
// SAFETY: as above.
unsafe impl Sync for AvPtr {}

impl AvPtr {
    /// The header's atomics.
    ///
    /// # Safety contract (for all methods)
    /// An `AvPtr` is only used while the caller holds a reference to the value.
    #[inline]
    pub(crate) fn header(&self) -> &Header {
        // SAFETY: the caller holds a reference, so the allocation is alive.
        unsafe { self.0.as_ref() }
    }

    #[inline]
    pub(crate) fn state(self) -> State {
        State::from_word(self.header().word.load(Ordering::Acquire).addr())
    }

    #[inline]
    pub(crate) fn kind(self) -> Kind {
        self.header().kind
    }

    #[inline]
    pub(crate) fn type_info(self) -> &'static TypeInfo {
        // SAFETY: `type_info` always points at a promoted `'static` TypeInfo constant.
        unsafe { &*self.header().type_info.load(Ordering::Relaxed) }
    }

    /// Address of the payload when it holds a `T` (or, with `T` a marker, an error or target).
    #[inline]
    pub(crate) fn payload<T>(self) -> *mut u8 {
        self.0.as_ptr().cast::<u8>().wrapping_add(payload_offset::<T>())
    }

    /// Address of the payload for whatever type the value holds (the union's start), e.g. where
    /// an error pointer lives; it differs from `payload::<ErrorOnly>()` for over-aligned types.
    #[inline]
    pub(crate) fn payload_dyn(self) -> *mut u8 {
        self.0.as_ptr().cast::<u8>().wrapping_add(self.type_info().payload_offset)
    }

    /// The error pointer slot of the payload union.
    #[inline]
    pub(crate) fn error_slot(self) -> *mut *mut Diagnostic {
        self.payload_dyn().cast()
    }

    /// Whether the stored type is `T`. Pointer equality is the fast path; the TypeId comparison
    /// covers constants that were duplicated across codegen units.
    #[inline]
    pub(crate) fn holds_type<T: 'static>(self) -> bool {
        let info = self.header().type_info.load(Ordering::Relaxed);
        ptr::eq(info, &TypeInfoOf::<T>::INFO) || ((self.type_info().type_id)() == TypeId::of::<T>())
    }

    /// For an available indirect value, its target; otherwise the value itself.
    ///
    /// # Safety
    /// If the value is indirect it must be available (target written and published, and observed
    /// with acquire ordering).
    #[inline]
    pub(crate) unsafe fn resolved(self) -> AvPtr {
        if self.kind() == Kind::Indirect {
            // SAFETY: an available indirect value's payload is a target pointer that it owns a
            // reference to; targets are never indirect (forwarding collapses chains).
            unsafe { AvPtr(NonNull::new_unchecked(*self.payload::<IndirectTarget>().cast::<*mut Header>())) }
        } else {
            self
        }
    }

    /// The error of a value whose state is `Error`, following an indirect value's target.
    ///
    /// # Safety
    /// The caller must have observed `State::Error` with acquire ordering, and the returned
    /// reference must not outlive the caller's reference to the value.
    #[inline]
    pub(crate) unsafe fn error_unchecked<'a>(self) -> &'a Diagnostic {
        // SAFETY: state Error was observed, so the payload (or the target's) holds the error
        // pointer, written before the release that published the state.
        unsafe { &**self.resolved().error_slot() }
    }

    /// Claims the right to write the payload: sets LOCK if the value is unlocked and its state is
    /// one `may_claim` accepts. Returns the state seen at the claim, or the state that refused.
    #[inline]
    pub(crate) fn claim(self, may_claim: impl Fn(State) -> bool) -> Result<State, State> {
        let word_cell = &self.header().word;
        let mut word = word_cell.load(Ordering::Acquire);
        loop {
            let state = State::from_word(word.addr());
            if word.addr() & LOCK_BIT != 0 || !may_claim(state) {
                return Err(state);
            }
            let locked = word.map_addr(|a| a | LOCK_BIT);
            match word_cell.compare_exchange_weak(word, locked, Ordering::Acquire, Ordering::Acquire) {
                Ok(_) => return Ok(state),
                Err(current) => word = current,
            }
        }
    }

    /// Moves an unlocked value from state `from` to `to`, keeping its waiter list; returns the
    /// state that refused otherwise.
    pub(crate) fn transition(self, from: State, to: State) -> Result<(), State> {
        let word_cell = &self.header().word;
        let mut word = word_cell.load(Ordering::Acquire);
        loop {
            let state = State::from_word(word.addr());
            if word.addr() & LOCK_BIT != 0 || state != from {
                return Err(state);
            }
            let next = word.map_addr(|a| (a & !STATE_MASK) | to as usize);
            match word_cell.compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Ok(()),
                Err(current) => word = current,
            }
        }
    }

    /// Publishes `state` (releasing the lock taken by `claim`) and runs the detached waiters.
    ///
    /// # Safety
    /// The caller must hold the lock from `claim`, and the payload must match `state`.
    #[inline]
    pub(crate) unsafe fn publish(self, state: State) {
        let old = self.header().word.swap(state_word(state), Ordering::AcqRel);
        debug_assert!(old.addr() & LOCK_BIT != 0, "publish without claim");
        // SAFETY: the swap detached the list; every node on it was pushed by `and_then` with a
        // release CAS we acquired, and nobody else can reach the list any more.
        unsafe { waiters::run_all(untagged(old)) }
    }

    #[inline]
    pub(crate) fn add_ref(self) {
        let old = self.header().refcount.fetch_add(1, Ordering::Relaxed);
        if old > u32::MAX / 2 {
            // The count is about to wrap: continuing would free a value that is still used.
            std::process::abort();
        }
    }

    /// Drops one reference and destroys the value when it was the last.
    ///
    /// # Safety
    /// The caller must own the reference it drops.
    #[inline]
    pub(crate) unsafe fn drop_ref(self) {
        let refcount = &self.header().refcount;
        // The last owner can skip the read-modify-write: nobody else can add a reference.
        if refcount.load(Ordering::Acquire) != 1 && refcount.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        fence(Ordering::Acquire);
        // SAFETY: this was the last reference.
        unsafe { destroy(self) }
    }
}

/// Values made while tracing and not yet freed: a trace's counter of live values. Values made
/// before tracing began are not among them, so that an untraced value costs no atomic write.
pub(crate) static TRACED_ALIVE: std::sync::atomic::AtomicIsize = std::sync::atomic::AtomicIsize::new(0);

/// Allocates a value with the given type, kind and initial state word; the payload is left
/// uninitialised for the caller.
pub(crate) fn allocate<T: 'static>(kind: Kind, state: State) -> AvPtr {
    let layout = Layout::new::<AvBox<T>>();
    let raw = if is_small(layout) {
        free_list::acquire()
    } else {
        // SAFETY: the layout has a non-zero size (the header alone is 24 bytes).
        unsafe { alloc::alloc(layout) }
    }
    .cast::<AvBox<T>>();
    let Some(raw) = NonNull::new(raw) else { alloc::handle_alloc_error(layout) };
    let traced = crate::tracing::is_on();
    if traced {
        TRACED_ALIVE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    #[cfg(debug_assertions)]
    live::LIVE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // SAFETY: `raw` is a fresh allocation with the layout of `AvBox<T>`; we initialise the header.
    unsafe {
        ptr::addr_of_mut!((*raw.as_ptr()).header).write(Header {
            refcount: AtomicU32::new(1),
            kind,
            traced,
            type_info: AtomicPtr::new(&TypeInfoOf::<T>::INFO as *const TypeInfo as *mut TypeInfo),
            word: AtomicPtr::new(state_word(state)),
        });
    }
    AvPtr(raw.cast())
}

/// Frees a value whose last reference is gone: drops the payload (or error, or target), drops
/// waiters that never ran, and returns the memory.
///
/// # Safety
/// No reference to the value may remain.
unsafe fn destroy(this: AvPtr) {
    // SAFETY: we are the last owner; the acquire fence in drop_ref made every write visible.
    unsafe {
        let info = this.type_info();
        let word = this.header().word.load(Ordering::Relaxed);
        // Continuations of a value that was never set cannot run any more; drop their captures.
        waiters::drop_all(untagged(word));
        match (this.kind(), State::from_word(word.addr())) {
            (Kind::Indirect, State::Concrete | State::Error) => this.resolved().drop_ref(),
            (Kind::Concrete, State::Error) => {
                drop(Box::from_raw(*this.error_slot()));
            }
            (Kind::Concrete, State::Concrete | State::Constructed) => {
                if let Some(drop_value) = info.drop_value {
                    drop_value(this.payload_dyn());
                }
            }
            _ => {}
        }
        #[cfg(debug_assertions)]
        live::LIVE.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        if this.header().traced {
            TRACED_ALIVE.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        }
        if is_small(info.box_layout) {
            free_list::release(this.0.as_ptr().cast());
        } else {
            alloc::dealloc(this.0.as_ptr().cast(), info.box_layout);
        }
    }
}

/// Whether values of this layout come from the per-thread cache (see [`free_list`]). Loom's
/// model threads share one OS thread (and its cache) and its atomics are larger, so under loom
/// every value goes to the process allocator.
#[inline]
const fn is_small(layout: Layout) -> bool {
    !cfg!(loom) && layout.size() == free_list::BLOCK.size() && layout.align() == free_list::BLOCK.align()
}

#[cfg(not(loom))]
const _: () = assert!(is_small(Layout::new::<AvBox<Slot>>()), "scalars share the cached block size");

/// Debug builds count live values so tests can prove that everything created was freed
/// (TFRT's leak check does the same).
#[cfg(debug_assertions)]
pub(crate) mod live {
    use std::sync::atomic::AtomicIsize;
    pub(crate) static LIVE: AtomicIsize = AtomicIsize::new(0);
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn header_is_24_bytes_and_small_payloads_share_one_32_byte_box() {
        assert_eq!(HEADER_SIZE, 24);
        assert_eq!(Layout::new::<AvBox<i32>>().size(), 32);
        assert_eq!(Layout::new::<AvBox<crate::Chain>>().size(), 32);
        assert!(fits_slot::<i32>() && fits_slot::<f64>() && fits_slot::<bool>() && fits_slot::<usize>());
        assert!(!fits_slot::<[u64; 2]>());
    }
}
