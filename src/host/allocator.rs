//! `HostAllocator`: the one path for the runtime's bulk host memory, so that hosts can redirect it.
//!
//! What goes through it: payload buffers ([`HostBuffer`]) — tensor storage, VM buffers and
//! anything a kernel allocates through its context. AsyncValue headers and queue tasks use the
//! process allocator, as TFRT's do: they are small, short-lived and outlive any one context.

use std::alloc::Layout;
use std::fmt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicIsize, AtomicU64, Ordering};
use std::sync::Arc;

use super::diagnostic::{Diagnostic, StatusCode};

/// A source of aligned host memory.
///
/// # Safety
/// `allocate` must return memory of at least `size` bytes aligned to `align` that stays valid
/// until `deallocate` is called with the same pointer, size and alignment.
pub unsafe trait HostAllocator: Send + Sync {
    /// `size` is non-zero and `align` a power of two; `None` when out of memory.
    fn allocate(&self, size: usize, align: usize) -> Option<NonNull<u8>>;

    /// # Safety
    /// `ptr` must come from `allocate` on this allocator with the same `size` and `align`, and
    /// must not be used afterwards.
    unsafe fn deallocate(&self, ptr: NonNull<u8>, size: usize, align: usize);
}

/// The process allocator (`std::alloc`, i.e. malloc).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemAllocator;

// SAFETY: std::alloc honours size and alignment.
unsafe impl HostAllocator for SystemAllocator {
    fn allocate(&self, size: usize, align: usize) -> Option<NonNull<u8>> {
        let layout = Layout::from_size_align(size, align).ok()?;
        // SAFETY: callers pass a non-zero size.
        NonNull::new(unsafe { std::alloc::alloc(layout) })
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, size: usize, align: usize) {
        // SAFETY: the caller passes back what `allocate` returned, with the layout it was made with.
        unsafe { std::alloc::dealloc(ptr.as_ptr(), Layout::from_size_align_unchecked(size, align)) }
    }
}

/// Wraps another allocator and counts what goes through it, so tests can prove that everything
/// allocated was returned.
pub struct CountingAllocator {
    inner: Arc<dyn HostAllocator>,
    live_allocations: AtomicIsize,
    live_bytes: AtomicIsize,
    total_allocations: AtomicU64,
}

impl CountingAllocator {
    pub fn new(inner: Arc<dyn HostAllocator>) -> CountingAllocator {
        CountingAllocator {
            inner,
            live_allocations: AtomicIsize::new(0),
            live_bytes: AtomicIsize::new(0),
            total_allocations: AtomicU64::new(0),
        }
    }

    /// Allocations not yet returned.
    pub fn live_allocations(&self) -> isize {
        self.live_allocations.load(Ordering::Acquire)
    }

    /// Bytes not yet returned.
    pub fn live_bytes(&self) -> isize {
        self.live_bytes.load(Ordering::Acquire)
    }

    /// Allocations ever made.
    pub fn total_allocations(&self) -> u64 {
        self.total_allocations.load(Ordering::Relaxed)
    }
}

impl Default for CountingAllocator {
    fn default() -> Self {
        CountingAllocator::new(Arc::new(SystemAllocator))
    }
}

impl fmt::Debug for CountingAllocator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CountingAllocator")
            .field("live_allocations", &self.live_allocations())
            .field("live_bytes", &self.live_bytes())
            .field("total_allocations", &self.total_allocations())
            .finish()
    }
}

// SAFETY: forwards to an allocator that upholds the contract.
unsafe impl HostAllocator for CountingAllocator {
    fn allocate(&self, size: usize, align: usize) -> Option<NonNull<u8>> {
        let ptr = self.inner.allocate(size, align)?;
        self.live_allocations.fetch_add(1, Ordering::Relaxed);
        self.live_bytes.fetch_add(size as isize, Ordering::Relaxed);
        self.total_allocations.fetch_add(1, Ordering::Relaxed);
        Some(ptr)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, size: usize, align: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.deallocate(ptr, size, align) };
        self.live_allocations.fetch_sub(1, Ordering::Release);
        self.live_bytes.fetch_sub(size as isize, Ordering::Release);
    }
}

/// An owned block of host memory from a [`HostAllocator`], returned to it on drop. The block
/// keeps its allocator alive, so it may outlive the context it came from.
pub struct HostBuffer {
    ptr: NonNull<u8>,
    len: usize,
    align: usize,
    allocator: Arc<dyn HostAllocator>,
}

// SAFETY: the buffer owns its bytes exclusively; the allocator is Send + Sync.
unsafe impl Send for HostBuffer {}
// SAFETY: shared access only reads the bytes.
unsafe impl Sync for HostBuffer {}

impl HostBuffer {
    /// A zero-filled block of `len` bytes aligned to `align` (a power of two). A zero-length
    /// block allocates nothing.
    pub fn new_zeroed(allocator: Arc<dyn HostAllocator>, len: usize, align: usize) -> Result<HostBuffer, Diagnostic> {
        if !align.is_power_of_two() {
            return Err(Diagnostic::new(
                StatusCode::InvalidArgument,
                format!("alignment {align} is not a power of two"),
            ));
        }
        if Layout::from_size_align(len, align).is_err() {
            return Err(Diagnostic::new(
                StatusCode::OutOfRange,
                format!("{len} bytes aligned to {align} exceed the address space"),
            ));
        }
        let ptr = if len == 0 {
            // A dangling but aligned address: never dereferenced for more than zero bytes.
            NonNull::new(std::ptr::without_provenance_mut(align)).expect("align is non-zero")
        } else {
            let ptr = allocator.allocate(len, align).ok_or_else(|| {
                Diagnostic::new(
                    StatusCode::ResourceExhausted,
                    format!("host allocator could not provide {len} bytes aligned to {align}"),
                )
            })?;
            // SAFETY: fresh allocation of `len` bytes.
            unsafe { ptr.as_ptr().write_bytes(0, len) };
            ptr
        };
        Ok(HostBuffer { ptr, len, align, allocator })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `len` initialised bytes owned by us (or a dangling aligned pointer for 0).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        if self.len != 0 {
            // SAFETY: allocated by this allocator with this size and alignment.
            unsafe { self.allocator.deallocate(self.ptr, self.len, self.align) }
        }
    }
}

impl fmt::Debug for HostBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostBuffer").field("len", &self.len).field("align", &self.align).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counting_allocator_sees_every_buffer_returned() {
        let counting = Arc::new(CountingAllocator::default());
        {
            let mut a = HostBuffer::new_zeroed(counting.clone(), 100, 64).unwrap();
            let b = HostBuffer::new_zeroed(counting.clone(), 3, 1).unwrap();
            assert_eq!(a.as_slice().as_ptr() as usize % 64, 0);
            assert!(a.as_slice().iter().all(|&x| x == 0));
            a.as_mut_slice()[99] = 7;
            assert_eq!(a.as_slice()[99], 7);
            assert_eq!(b.len(), 3);
            assert_eq!(counting.live_allocations(), 2);
            assert_eq!(counting.live_bytes(), 103);
        }
        assert_eq!(counting.live_allocations(), 0);
        assert_eq!(counting.live_bytes(), 0);
        assert_eq!(counting.total_allocations(), 2);
    }

    #[test]
    fn empty_buffer_allocates_nothing() {
        let counting = Arc::new(CountingAllocator::default());
        let empty = HostBuffer::new_zeroed(counting.clone(), 0, 16).unwrap();
        assert!(empty.is_empty() && empty.as_slice().is_empty());
        assert_eq!(counting.total_allocations(), 0);
    }

    #[test]
    fn bad_alignment_and_size_are_rejected() {
        let system: Arc<dyn HostAllocator> = Arc::new(SystemAllocator);
        assert_eq!(HostBuffer::new_zeroed(system.clone(), 8, 3).unwrap_err().code, StatusCode::InvalidArgument);
        assert_eq!(HostBuffer::new_zeroed(system, usize::MAX, 8).unwrap_err().code, StatusCode::OutOfRange);
    }
}
