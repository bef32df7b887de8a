//! `HostAllocator`: the one path for the runtime's bulk host memory, so that hosts can redirect it.
//!
//! What goes through a context's: payload buffers ([`HostBuffer`](super::HostBuffer)) — tensor
//! storage and anything a kernel allocates through its context — and, in the layers above, VM
//! buffers and the CPU devices' buffers and transients. AsyncValue headers and queue tasks use
//! the process allocator, as TFRT's do: they are small, short-lived and outlive any one context.
//!
//! Besides the process allocator, wrappers put in front of another allocator: [`CachingAllocator`]
//! (large blocks kept for reuse: the contexts' default), [`CountingAllocator`] (what a context
//! reports and holds under its limit; leak checks and profiles), and for tools and tests
//! [`FixedCapacityAllocator`] (a small budget, to exercise out-of-memory handling).

use std::alloc::Layout;
use std::collections::HashMap;
use std::fmt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicIsize, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// A source of aligned host memory.
///
/// # Safety
/// `allocate` must return memory of at least `size` bytes aligned to `align` that stays valid
/// until `deallocate` is called with the same pointer, size and alignment.
pub unsafe trait HostAllocator: Send + Sync {
    /// `size` is non-zero and `align` a power of two; `None` when out of memory.
    fn allocate(&self, size: usize, align: usize) -> Option<NonNull<u8>>;

    /// # Safety
    /// `ptr` must come from `allocate` (or `allocate_zeroed`) on this allocator with the same
    /// `size` and `align`, and must not be used afterwards.
    unsafe fn deallocate(&self, ptr: NonNull<u8>, size: usize, align: usize);

    /// As `allocate`, with every byte zero. An allocator that can hand out memory known to be
    /// zero (fresh pages) overrides it to skip the pass over the block.
    fn allocate_zeroed(&self, size: usize, align: usize) -> Option<NonNull<u8>> {
        allocate_then_zero(self, size, align)
    }
}

/// `allocator.allocate`, then every byte zeroed: [`HostAllocator::allocate_zeroed`]'s default,
/// which an override falls back on where it knows no better.
fn allocate_then_zero<A: HostAllocator + ?Sized>(allocator: &A, size: usize, align: usize) -> Option<NonNull<u8>> {
    let ptr = allocator.allocate(size, align)?;
    // SAFETY: a fresh block of at least `size` bytes.
    unsafe { ptr.as_ptr().write_bytes(0, size) };
    Some(ptr)
}

/// What a context's allocator has handed out (`rtx_context_memory_stats`): bytes not yet
/// returned, the most bytes out at once, and the number of blocks ever handed out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryStats {
    pub bytes_in_use: u64,
    pub peak_bytes: u64,
    pub allocations: u64,
}

/// The process allocator (`std::alloc`, i.e. malloc).
///
/// A small block aligned past malloc's own 16 bytes (a tensor's 64) is cut from a plain malloc
/// block of `size + align` bytes, the start of that block kept just below the aligned one: glibc
/// serves such a request from its per-thread cache, where `posix_memalign` takes a slow path
/// that cost an eager op on small tensors a third of its time.
///
/// On Linux a block of [`HUGE_PAGE`] bytes or more gets an anonymous mapping of its own, advised
/// to use transparent huge pages, its start [`PAGE_OFFSET`] into the first huge page and the
/// mapping's start kept below it: such blocks hold a model's activations and repacked weights,
/// which kernels stream through, and with 4 KiB pages every page boundary costs a TLB miss and
/// stops the hardware prefetcher. Fresh pages are zero, so these need no zeroing pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemAllocator;

/// malloc's own alignment on 64-bit targets.
const MALLOC_ALIGN: usize = 16;

/// Blocks up to this size take the over-allocating path when aligned past [`MALLOC_ALIGN`];
/// larger ones waste less to `posix_memalign`'s cost than they would to the padding.
const SMALL_BLOCK: usize = 16 * 1024;

/// Whether a block of `size` bytes aligned to `align` is cut from a larger malloc block.
fn over_allocates(size: usize, align: usize) -> bool {
    align > MALLOC_ALIGN && size <= SMALL_BLOCK
}

/// The size of a transparent huge page on x86-64 and (with 4 KiB base pages) AArch64: blocks
/// this large get a mapping of their own.
const HUGE_PAGE: usize = 2 << 20;

/// Where a mapped block starts in its first huge page: 33 cache lines in, not on the boundary.
/// A boundary is 4 KiB-aligned like every page, so kernels reading it and other page-aligned
/// memory at the same offsets meet in the same L1 sets: on the boundary a transformer encoder
/// took 1.01 to 1.04 of the time it took before huge pages, from here 1.00.
const PAGE_OFFSET: usize = 33 * 64;

/// The base pages of the mappings: a mapped block's alignment may be at most this.
const BASE_PAGE: usize = 4096;

/// Whether a block of `size` bytes aligned to `align` gets a mapping of its own.
fn maps(size: usize, align: usize) -> bool {
    cfg!(all(target_os = "linux", not(miri))) && size >= HUGE_PAGE && align <= BASE_PAGE
}

/// Where a mapped block starts past its huge page: [`PAGE_OFFSET`] rounded up to `align` (at
/// most a base page, so the block and the word below it fit before the mapping's end).
fn mapped_offset(align: usize) -> usize {
    PAGE_OFFSET.next_multiple_of(align.max(8))
}

#[cfg(all(target_os = "linux", not(miri)))]
mod mapping {
    use super::{mapped_offset, HUGE_PAGE};
    use std::ptr::NonNull;

    /// `size` zeroed bytes aligned to `align` in a mapping of `size + HUGE_PAGE` bytes; the
    /// mapping's start is in the word below the block.
    pub(super) fn map(size: usize, align: usize) -> Option<NonNull<u8>> {
        let length = size.checked_add(HUGE_PAGE)?;
        // SAFETY: a private anonymous mapping at an address the kernel picks touches nothing else.
        let start = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                length,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if start == libc::MAP_FAILED {
            return None;
        }
        let start = start.cast::<u8>();
        // The first huge page boundary lies at most `HUGE_PAGE - 4096` bytes in (the mapping is
        // page-aligned), and the block at most a base page past it: `size` bytes remain.
        let page = start.align_offset(HUGE_PAGE);
        let offset = page + mapped_offset(align);
        // SAFETY: `page..offset + size` lies inside the mapping (above). The advice is only
        // advice: a kernel without transparent huge pages refuses it, and small pages do as well.
        unsafe {
            libc::madvise(start.add(page).cast(), length - page, libc::MADV_HUGEPAGE);
            let block = start.add(offset);
            block.cast::<*mut u8>().sub(1).write(start);
            NonNull::new(block)
        }
    }

    /// # Safety
    /// `ptr` must come from [`map`] with this `size`.
    pub(super) unsafe fn unmap(ptr: NonNull<u8>, size: usize) {
        // SAFETY: `map` kept the mapping's start below the block; its length is `size + HUGE_PAGE`.
        unsafe {
            let start = ptr.cast::<*mut u8>().sub(1).read();
            libc::munmap(start.cast(), size + HUGE_PAGE);
        }
    }
}

// SAFETY: std::alloc honours size and alignment; an over-allocated block has `size` bytes after
// its aligned start (see `allocate`).
unsafe impl HostAllocator for SystemAllocator {
    fn allocate(&self, size: usize, align: usize) -> Option<NonNull<u8>> {
        #[cfg(all(target_os = "linux", not(miri)))]
        if maps(size, align) {
            return mapping::map(size, align);
        }
        if !over_allocates(size, align) {
            let layout = Layout::from_size_align(size, align).ok()?;
            // SAFETY: callers pass a non-zero size.
            return NonNull::new(unsafe { std::alloc::alloc(layout) });
        }
        let layout = Layout::from_size_align(size + align, MALLOC_ALIGN).ok()?;
        // SAFETY: a non-zero size.
        let start = NonNull::new(unsafe { std::alloc::alloc(layout) })?;
        // The next multiple of `align` past `start`: `start` is 16-aligned and `align` a larger
        // power of two, so it is 16 to `align` bytes in, with room below it for the start and
        // `size` bytes after it.
        let address = start.as_ptr() as usize;
        let offset = ((address + align) & !(align - 1)) - address;
        // SAFETY: `offset` is at most `align`, within the `size + align` bytes; the word below
        // the aligned block is at least 8 bytes past `start` and aligned for a pointer.
        unsafe {
            let aligned = start.add(offset);
            aligned.cast::<*mut u8>().sub(1).write(start.as_ptr());
            Some(aligned)
        }
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, size: usize, align: usize) {
        #[cfg(all(target_os = "linux", not(miri)))]
        if maps(size, align) {
            // SAFETY: the caller passes back what `allocate` mapped for this size.
            return unsafe { mapping::unmap(ptr, size) };
        }
        if !over_allocates(size, align) {
            // SAFETY: the caller passes back what `allocate` returned, with its layout.
            return unsafe { std::alloc::dealloc(ptr.as_ptr(), Layout::from_size_align_unchecked(size, align)) };
        }
        // SAFETY: `allocate` kept the malloc block's start in the word below `ptr`, and made it
        // with this layout.
        unsafe {
            let start = ptr.cast::<*mut u8>().sub(1).read();
            std::alloc::dealloc(start, Layout::from_size_align_unchecked(size + align, MALLOC_ALIGN));
        }
    }

    fn allocate_zeroed(&self, size: usize, align: usize) -> Option<NonNull<u8>> {
        if maps(size, align) {
            // Fresh pages are zero.
            return self.allocate(size, align);
        }
        if over_allocates(size, align) {
            return allocate_then_zero(self, size, align);
        }
        let layout = Layout::from_size_align(size, align).ok()?;
        // SAFETY: callers pass a non-zero size. calloc skips the zeroing of fresh pages.
        NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) })
    }
}

/// Wraps another allocator and counts what goes through it, so tests can prove that everything
/// allocated was returned, tools can report the peaks (TFRT's leak check and profile), and a
/// context can report its memory and hold it under a limit.
pub struct CountingAllocator {
    inner: Arc<dyn HostAllocator>,
    /// Requests that would take the bytes out past this are refused.
    limit: usize,
    live_allocations: AtomicIsize,
    live_bytes: AtomicIsize,
    peak_allocations: AtomicIsize,
    peak_bytes: AtomicIsize,
    total_allocations: AtomicU64,
}

impl CountingAllocator {
    pub fn new(inner: Arc<dyn HostAllocator>) -> CountingAllocator {
        CountingAllocator::with_limit(inner, usize::MAX)
    }

    /// Counts, and refuses a request that would take the bytes out past `limit`.
    pub fn with_limit(inner: Arc<dyn HostAllocator>, limit: usize) -> CountingAllocator {
        CountingAllocator {
            inner,
            limit: limit.min(isize::MAX as usize),
            live_allocations: AtomicIsize::new(0),
            live_bytes: AtomicIsize::new(0),
            peak_allocations: AtomicIsize::new(0),
            peak_bytes: AtomicIsize::new(0),
            total_allocations: AtomicU64::new(0),
        }
    }

    /// The figures a context reports.
    pub fn stats(&self) -> MemoryStats {
        MemoryStats {
            bytes_in_use: self.live_bytes().max(0) as u64,
            peak_bytes: self.peak_bytes().max(0) as u64,
            allocations: self.total_allocations(),
        }
    }

    /// Takes `size` bytes from the limit, then a block from `take`; the bytes go back if either
    /// fails.
    fn counted(&self, size: usize, take: impl FnOnce() -> Option<NonNull<u8>>) -> Option<NonNull<u8>> {
        let size = isize::try_from(size).ok()?;
        let limit = self.limit as isize;
        let bytes = if limit == isize::MAX {
            // One add without a limit; a sum past `isize::MAX` (atomics wrap) is no block at all.
            let after = self.live_bytes.fetch_add(size, Ordering::Relaxed).wrapping_add(size);
            if after < 0 {
                self.live_bytes.fetch_sub(size, Ordering::Relaxed);
                return None;
            }
            after
        } else {
            self.live_bytes
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |live| {
                    live.checked_add(size).filter(|&after| after <= limit)
                })
                .ok()?
                + size
        };
        let Some(ptr) = take() else {
            self.live_bytes.fetch_sub(size, Ordering::Relaxed);
            return None;
        };
        let allocations = self.live_allocations.fetch_add(1, Ordering::Relaxed) + 1;
        raise(&self.peak_allocations, allocations);
        raise(&self.peak_bytes, bytes);
        self.total_allocations.fetch_add(1, Ordering::Relaxed);
        Some(ptr)
    }

    /// Allocations not yet returned.
    pub fn live_allocations(&self) -> isize {
        self.live_allocations.load(Ordering::Acquire)
    }

    /// Bytes not yet returned.
    pub fn live_bytes(&self) -> isize {
        self.live_bytes.load(Ordering::Acquire)
    }

    /// The most allocations alive at once.
    pub fn peak_allocations(&self) -> isize {
        self.peak_allocations.load(Ordering::Acquire)
    }

    /// The most bytes alive at once.
    pub fn peak_bytes(&self) -> isize {
        self.peak_bytes.load(Ordering::Acquire)
    }

    /// Allocations ever made.
    pub fn total_allocations(&self) -> u64 {
        self.total_allocations.load(Ordering::Relaxed)
    }
}

/// Raises `peak` to `value`: a load alone in the steady state, where the peak was reached long ago
/// (every tensor of an eager op passes here).
fn raise(peak: &AtomicIsize, value: isize) {
    if value > peak.load(Ordering::Relaxed) {
        peak.fetch_max(value, Ordering::Relaxed);
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
            .field("peak_allocations", &self.peak_allocations())
            .field("peak_bytes", &self.peak_bytes())
            .field("total_allocations", &self.total_allocations())
            .finish()
    }
}

// SAFETY: forwards to an allocator that upholds the contract.
unsafe impl HostAllocator for CountingAllocator {
    fn allocate(&self, size: usize, align: usize) -> Option<NonNull<u8>> {
        self.counted(size, || self.inner.allocate(size, align))
    }

    fn allocate_zeroed(&self, size: usize, align: usize) -> Option<NonNull<u8>> {
        self.counted(size, || self.inner.allocate_zeroed(size, align))
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, size: usize, align: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.deallocate(ptr, size, align) };
        self.live_allocations.fetch_sub(1, Ordering::Release);
        self.live_bytes.fetch_sub(size as isize, Ordering::Release);
    }
}

/// Keeps the large blocks given back to it, up to a budget, and hands them out again for
/// requests of the same size and alignment. A model's call allocates and frees the same tensor
/// sizes every time, and a large block fresh from malloc is fresh pages from the kernel: a fault
/// and a page zeroed on the first touch of each 4 KiB (4-8% of a ResNet-50 or U-Net call went
/// to the kernel's side of that). Blocks below [`CachingAllocator::MIN_BLOCK`] go straight to
/// the inner allocator, which keeps such blocks itself; a block that would take the cache past
/// its budget is returned to the inner allocator. What is cached goes back when the allocator
/// is dropped.
pub struct CachingAllocator {
    inner: Arc<dyn HostAllocator>,
    budget: usize,
    cache: Mutex<Cached>,
}

/// The blocks a [`CachingAllocator`] holds, by size and alignment, and their bytes together.
#[derive(Default)]
struct Cached {
    blocks: HashMap<(usize, usize), Vec<Block>>,
    bytes: usize,
}

/// A cached block's address.
struct Block(NonNull<u8>);

// SAFETY: a cached block is memory nobody else uses; its address moves between threads with
// the allocator, which hands it to one caller at a time.
unsafe impl Send for Block {}

impl CachingAllocator {
    /// The smallest block kept: 64 KiB. Smaller ones come from malloc's own free lists, which
    /// reuse them already.
    pub const MIN_BLOCK: usize = 64 << 10;

    /// The budget of the contexts' default allocator: 256 MiB of freed blocks.
    pub const DEFAULT_BUDGET: usize = 256 << 20;

    /// Caches up to `budget` bytes of blocks of at least [`Self::MIN_BLOCK`] given back to `inner`.
    pub fn new(inner: Arc<dyn HostAllocator>, budget: usize) -> CachingAllocator {
        CachingAllocator { inner, budget, cache: Mutex::new(Cached::default()) }
    }

    /// The bytes of the blocks held for reuse.
    pub fn cached_bytes(&self) -> usize {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner).bytes
    }
}

impl Default for CachingAllocator {
    /// The system allocator behind [`Self::DEFAULT_BUDGET`]: what contexts use unless their host
    /// gives them an allocator.
    fn default() -> Self {
        CachingAllocator::new(Arc::new(SystemAllocator), CachingAllocator::DEFAULT_BUDGET)
    }
}

impl fmt::Debug for CachingAllocator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachingAllocator")
            .field("budget", &self.budget)
            .field("cached_bytes", &self.cached_bytes())
            .finish()
    }
}

impl CachingAllocator {
    /// A kept block of this size and alignment, if there is one.
    fn take_cached(&self, size: usize, align: usize) -> Option<NonNull<u8>> {
        if size < CachingAllocator::MIN_BLOCK {
            return None;
        }
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        let Block(ptr) = cache.blocks.get_mut(&(size, align)).and_then(Vec::pop)?;
        cache.bytes -= size;
        Some(ptr)
    }

    /// A block from `inner` through `take`; when `inner` has none (its memory is limited), the
    /// kept blocks go back to it first and `take` runs again.
    fn take_inner(&self, take: impl Fn() -> Option<NonNull<u8>>) -> Option<NonNull<u8>> {
        take().or_else(|| {
            let cache = std::mem::take(&mut *self.cache.lock().unwrap_or_else(PoisonError::into_inner));
            if cache.bytes == 0 {
                return None;
            }
            self.release(cache);
            take()
        })
    }

    /// Gives the blocks of `cache` back to the inner allocator.
    fn release(&self, cache: Cached) {
        for ((size, align), blocks) in cache.blocks {
            for Block(ptr) in blocks {
                // SAFETY: each cached block came from `inner` with this size and alignment,
                // and nobody holds it.
                unsafe { self.inner.deallocate(ptr, size, align) };
            }
        }
    }
}

// SAFETY: a cached block came from `inner` with the same size and alignment it is handed out
// for, and is handed to one caller only (taken out of the cache under its lock).
unsafe impl HostAllocator for CachingAllocator {
    fn allocate(&self, size: usize, align: usize) -> Option<NonNull<u8>> {
        self.take_cached(size, align).or_else(|| self.take_inner(|| self.inner.allocate(size, align)))
    }

    fn allocate_zeroed(&self, size: usize, align: usize) -> Option<NonNull<u8>> {
        if let Some(ptr) = self.take_cached(size, align) {
            // SAFETY: a block of `size` bytes nobody else holds.
            unsafe { ptr.as_ptr().write_bytes(0, size) };
            return Some(ptr);
        }
        self.take_inner(|| self.inner.allocate_zeroed(size, align))
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, size: usize, align: usize) {
        if size >= CachingAllocator::MIN_BLOCK {
            let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            if cache.bytes + size <= self.budget {
                cache.bytes += size;
                cache.blocks.entry((size, align)).or_default().push(Block(ptr));
                return;
            }
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.deallocate(ptr, size, align) }
    }
}

impl Drop for CachingAllocator {
    fn drop(&mut self) {
        let cache = std::mem::take(self.cache.get_mut().unwrap_or_else(PoisonError::into_inner));
        self.release(cache);
    }
}

/// Serves requests from another allocator while the bytes outstanding stay within a fixed
/// capacity, refuses the rest, and reports every decision: TFRT's `test_fixed_size_1k`
/// allocator, with which tests watch a program run out of memory. The reports are TFRT's log
/// lines (`Allocating 192 bytes. 832 remaining.`, `Attempted to allocate ...`, `Freeing ...`).
pub struct FixedCapacityAllocator {
    inner: Arc<dyn HostAllocator>,
    capacity: usize,
    /// Bytes served and not yet returned.
    used: Mutex<usize>,
    report: Box<dyn Fn(&str) + Send + Sync>,
}

impl FixedCapacityAllocator {
    /// `capacity` bytes from `inner`; `report` receives one line (without newline) per request
    /// and per return.
    pub fn new(
        inner: Arc<dyn HostAllocator>,
        capacity: usize,
        report: impl Fn(&str) + Send + Sync + 'static,
    ) -> FixedCapacityAllocator {
        FixedCapacityAllocator { inner, capacity, used: Mutex::new(0), report: Box::new(report) }
    }
}

impl fmt::Debug for FixedCapacityAllocator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let used = *self.used.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("FixedCapacityAllocator").field("capacity", &self.capacity).field("used", &used).finish()
    }
}

// SAFETY: forwards to an allocator that upholds the contract.
unsafe impl HostAllocator for FixedCapacityAllocator {
    fn allocate(&self, size: usize, align: usize) -> Option<NonNull<u8>> {
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        let remaining = self.capacity - *used;
        if size > remaining {
            (self.report)(&format!(
                "Attempted to allocate {size} bytes. However current capacity is only {remaining}."
            ));
            return None;
        }
        let ptr = self.inner.allocate(size, align)?;
        *used += size;
        (self.report)(&format!("Allocating {size} bytes. {} remaining.", remaining - size));
        Some(ptr)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, size: usize, align: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.deallocate(ptr, size, align) };
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        *used -= size;
        (self.report)(&format!("Freeing {size} bytes. {} available.", self.capacity - *used));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `size` bytes from `allocator`, written to, then returned.
    fn round_trip(allocator: &dyn HostAllocator, size: usize) -> Option<()> {
        let ptr = allocator.allocate(size, 8)?;
        // SAFETY: a fresh block of `size` bytes, given back with its size and alignment.
        unsafe {
            ptr.as_ptr().write_bytes(1, size);
            allocator.deallocate(ptr, size, 8);
        }
        Some(())
    }

    #[test]
    fn system_blocks_are_aligned_and_whole_on_both_paths() {
        let mut held = Vec::new();
        for align in [1, 8, 16, 32, 64, 4096] {
            for size in [1, 15, 16, 17, 64, 100, SMALL_BLOCK - 1, SMALL_BLOCK, SMALL_BLOCK + 1] {
                let ptr = SystemAllocator.allocate(size, align).unwrap();
                assert_eq!(ptr.as_ptr() as usize % align, 0, "{size} bytes aligned to {align}");
                // SAFETY: a fresh block of `size` bytes: every one of them may be written.
                unsafe { ptr.as_ptr().write_bytes(align as u8, size) };
                held.push((ptr, size, align));
            }
        }
        // Blocks do not overlap: each still holds its own bytes at both ends.
        for (ptr, size, align) in held {
            // SAFETY: the block is `size` bytes, written above, and goes back with its layout.
            unsafe {
                assert_eq!([ptr.as_ptr().read(), ptr.as_ptr().add(size - 1).read()], [align as u8; 2]);
                SystemAllocator.deallocate(ptr, size, align);
            }
        }
    }

    #[test]
    fn zeroed_blocks_are_zero_on_every_path_of_the_system_allocator() {
        // Small, over-allocated, plain, and (on Linux) mapped on their own past a huge page, which
        // Miri, where nothing is mapped, would take minutes to check byte by byte.
        let sizes = [(24, 8), (100, 64), (SMALL_BLOCK + 1, 64), (HUGE_PAGE, 64), (HUGE_PAGE + 5, 4096)];
        for (size, align) in sizes.into_iter().take(if cfg!(miri) { 3 } else { 5 }) {
            // Dirty a block of the size first, so that a reused block would show.
            round_trip(&SystemAllocator, size).unwrap();
            let ptr = SystemAllocator.allocate_zeroed(size, align).unwrap();
            assert_eq!(ptr.as_ptr() as usize % align, 0, "{size} bytes aligned to {align}");
            // SAFETY: a fresh block of `size` bytes, read, written to its last byte, then returned.
            unsafe {
                let bytes = std::slice::from_raw_parts_mut(ptr.as_ptr(), size);
                assert!(bytes.iter().all(|&b| b == 0), "{size} bytes aligned to {align}");
                bytes[size - 1] = 1;
                SystemAllocator.deallocate(ptr, size, align);
            }
        }
    }

    #[test]
    fn a_counting_limit_refuses_past_it_and_counts_only_what_was_served() {
        let counting = CountingAllocator::with_limit(Arc::new(SystemAllocator), 1000);
        let a = counting.allocate(600, 8).unwrap();
        assert!(counting.allocate(401, 8).is_none(), "600 + 401 is past 1000");
        assert!(counting.allocate_zeroed(usize::MAX, 8).is_none(), "far past it");
        let b = counting.allocate_zeroed(400, 8).unwrap();
        assert_eq!(counting.stats(), MemoryStats { bytes_in_use: 1000, peak_bytes: 1000, allocations: 2 });
        // SAFETY: both returned with the size and alignment they were made with.
        unsafe {
            counting.deallocate(a, 600, 8);
            counting.deallocate(b, 400, 8);
        }
        assert_eq!(counting.stats(), MemoryStats { bytes_in_use: 0, peak_bytes: 1000, allocations: 2 });
    }

    #[test]
    fn a_cache_over_a_limited_allocator_gives_its_blocks_back_before_refusing() {
        let big = CachingAllocator::MIN_BLOCK;
        let limited = Arc::new(CountingAllocator::with_limit(Arc::new(SystemAllocator), 2 * big));
        let caching = CachingAllocator::new(Arc::clone(&limited) as Arc<dyn HostAllocator>, 4 * big);
        let a = caching.allocate(big, 64).unwrap();
        let b = caching.allocate(big, 128).unwrap();
        // SAFETY: each block is returned once, with the size and alignment it was made with.
        unsafe {
            a.as_ptr().write_bytes(7, big);
            caching.deallocate(a, big, 64);
            caching.deallocate(b, big, 128);
        }
        assert_eq!(caching.cached_bytes(), 2 * big);
        // The kept block of the same size comes back zeroed.
        let again = caching.allocate_zeroed(big, 64).unwrap();
        assert_eq!(again, a);
        // SAFETY: a block of `big` bytes nobody else holds.
        assert!(unsafe { std::slice::from_raw_parts(again.as_ptr(), big) }.iter().all(|&b| b == 0));
        // Another size does not fit under the limit beside the kept block: the cache gives it back.
        let other = caching.allocate(big - 64, 64).expect("the kept block went back first");
        assert_eq!(caching.cached_bytes(), 0);
        // SAFETY: as above.
        unsafe {
            caching.deallocate(again, big, 64);
            caching.deallocate(other, big - 64, 64);
        }
        drop(caching);
        assert_eq!(limited.stats().bytes_in_use, 0);
    }

    #[test]
    fn counting_allocator_tracks_live_peak_and_total() {
        let counting = CountingAllocator::default();
        let a = counting.allocate(100, 64).unwrap();
        let b = counting.allocate(28, 4).unwrap();
        assert_eq!((counting.live_allocations(), counting.live_bytes()), (2, 128));
        // SAFETY: both returned with the size and alignment they were made with.
        unsafe {
            counting.deallocate(a, 100, 64);
            counting.deallocate(b, 28, 4);
        }
        round_trip(&counting, 10).unwrap();
        assert_eq!((counting.live_allocations(), counting.live_bytes()), (0, 0));
        assert_eq!((counting.peak_allocations(), counting.peak_bytes()), (2, 128));
        assert_eq!(counting.total_allocations(), 3);
    }

    #[test]
    fn caching_allocator_reuses_large_blocks_within_its_budget_and_returns_the_rest() {
        let counting = Arc::new(CountingAllocator::default());
        let big = CachingAllocator::MIN_BLOCK;
        let caching = CachingAllocator::new(Arc::clone(&counting) as Arc<dyn HostAllocator>, 2 * big);
        let a = caching.allocate(big, 64).unwrap();
        // SAFETY: each block is returned once, with the size and alignment it was made with.
        unsafe { caching.deallocate(a, big, 64) };
        assert_eq!((caching.cached_bytes(), counting.live_allocations()), (big, 1), "kept, not returned");
        // The same size and alignment get the kept block; another alignment or size does not.
        assert_eq!(caching.allocate(big, 64), Some(a));
        assert_eq!((caching.cached_bytes(), counting.total_allocations()), (0, 1));
        let b = caching.allocate(big, 128).unwrap();
        let c = caching.allocate(big + 8, 64).unwrap();
        let small = caching.allocate(100, 8).unwrap();
        assert_eq!(counting.total_allocations(), 4);
        // SAFETY: as above.
        unsafe {
            caching.deallocate(small, 100, 8);
            caching.deallocate(a, big, 64);
            caching.deallocate(b, big, 128);
            // Past the budget of two blocks: returned to the inner allocator.
            caching.deallocate(c, big + 8, 64);
        }
        assert_eq!(caching.cached_bytes(), 2 * big);
        assert_eq!(counting.live_allocations(), 2, "small and over-budget blocks go back at once");
        let again = caching.allocate(big, 128);
        assert_eq!((again, counting.total_allocations()), (Some(b), 4), "the kept block served it");
        // SAFETY: as above.
        unsafe { caching.deallocate(b, big, 128) };
        drop(caching);
        assert_eq!((counting.live_allocations(), counting.live_bytes()), (0, 0), "dropped, it returns what it kept");
    }

    #[test]
    fn fixed_capacity_refuses_what_would_exceed_it_and_reports_each_step() {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&lines);
        let fixed = FixedCapacityAllocator::new(Arc::new(SystemAllocator), 1024, move |line: &str| {
            sink.lock().unwrap().push(line.to_owned())
        });
        let first = fixed.allocate(192, 64).unwrap();
        assert!(fixed.allocate(1000, 8).is_none(), "832 bytes are left");
        round_trip(&fixed, 832).unwrap();
        // SAFETY: returned with the size and alignment it was made with.
        unsafe { fixed.deallocate(first, 192, 64) };
        assert_eq!(
            *lines.lock().unwrap(),
            [
                "Allocating 192 bytes. 832 remaining.",
                "Attempted to allocate 1000 bytes. However current capacity is only 832.",
                "Allocating 832 bytes. 0 remaining.",
                "Freeing 832 bytes. 832 available.",
                "Freeing 192 bytes. 1024 available.",
            ]
        );
    }
}
