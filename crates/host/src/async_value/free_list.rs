//! A per-thread cache of the 32-byte blocks small AsyncValues live in (a header and a payload of
//! at most eight bytes: every scalar, chain and handle).
//!
//! Kernels make one such value per scalar result and drop it a few kernels later, usually on the
//! same thread, so a value's life is as short as a function call. A thread-local list of freed
//! blocks turns each allocation and free into a few loads and stores, where `malloc`/`free`
//! cost more than all the rest of a kernel. A block freed on another thread than the one that
//! allocated it simply joins that thread's list. The list is bounded, and a thread's blocks go
//! back to the process allocator when the thread ends.
//!
//! Only rtx's own worker threads keep a list ([`cache_on_this_thread`]); other threads use the
//! process allocator. The list's thread-exit destructor is why: glibc keeps a shared library
//! loaded (`dlclose` does nothing) while any thread still holds one of its destructors, and a
//! host's threads — its main thread above all — may outlive its use of rtx. Worker threads end
//! when their queue is dropped, which releases the library.

use std::alloc::{self, Layout};
use std::cell::{Cell, UnsafeCell};
use std::ptr;

/// The layout of the blocks the cache holds: `AvBox<Slot>`'s (checked in `header`).
pub(crate) const BLOCK: Layout = match Layout::from_size_align(32, 8) {
    Ok(layout) => layout,
    Err(_) => panic!("32 bytes aligned to 8 is a layout"),
};

/// Blocks a thread keeps at most (8 KiB); frees past it go to the process allocator.
const CAPACITY: usize = 256;

/// A free block: its first word links to the next one.
struct FreeBlock {
    next: *mut FreeBlock,
}

struct Cache {
    head: *mut FreeBlock,
    len: usize,
}

/// The thread's cache; only this thread reaches it, and only through [`with_cache`], which
/// never calls out while it holds the reference.
struct ThreadCache(UnsafeCell<Cache>);

impl Drop for ThreadCache {
    fn drop(&mut self) {
        let cache = self.0.get_mut();
        while !cache.head.is_null() {
            let block = cache.head;
            // SAFETY: every block on the list came from `alloc` with `BLOCK` and is owned by the
            // list alone; its first word is the link `release` wrote.
            unsafe {
                cache.head = (*block).next;
                alloc::dealloc(block.cast(), BLOCK);
            }
        }
    }
}

thread_local! {
    /// Whether this thread keeps a cache (a const initialiser and no destructor: reading it on
    /// any thread registers nothing).
    static ENABLED: Cell<bool> = const { Cell::new(false) };
    static CACHE: ThreadCache = const { ThreadCache(UnsafeCell::new(Cache { head: ptr::null_mut(), len: 0 })) };
}

/// Makes this thread keep a cache from now on; for threads rtx owns and joins.
pub(crate) fn cache_on_this_thread() {
    ENABLED.set(true);
}

/// Runs `f` on this thread's cache; `None` on threads without one, or while the thread is
/// being torn down.
#[inline]
fn with_cache<R>(f: impl FnOnce(&mut Cache) -> R) -> Option<R> {
    if !ENABLED.get() {
        return None;
    }
    // SAFETY: the cache is reached only from this thread and `f` only moves list pointers, so no
    // other reference to it exists while `f` runs.
    CACHE.try_with(|cache| f(unsafe { &mut *cache.0.get() })).ok()
}

/// A block of layout [`BLOCK`] (uninitialised).
#[inline]
pub(crate) fn acquire() -> *mut u8 {
    let cached = with_cache(|cache| {
        let block = cache.head;
        if !block.is_null() {
            // SAFETY: a block on the list is owned by it and starts with its link.
            cache.head = unsafe { (*block).next };
            cache.len -= 1;
        }
        block
    });
    match cached {
        Some(block) if !block.is_null() => block.cast(),
        // SAFETY: BLOCK has a non-zero size.
        _ => unsafe { alloc::alloc(BLOCK) },
    }
}

/// Returns a block to the cache (or to the process allocator when the cache is full).
///
/// # Safety
/// `block` must have been allocated with layout [`BLOCK`] (by [`acquire`] or `alloc`), hold
/// nothing that needs dropping, and never be used again by the caller.
#[inline]
pub(crate) unsafe fn release(block: *mut u8) {
    let kept = with_cache(|cache| {
        if cache.len == CAPACITY {
            return false;
        }
        let block = block.cast::<FreeBlock>();
        // SAFETY: the caller gives the block up; it is 32 bytes aligned to 8, room for a link.
        unsafe { block.write(FreeBlock { next: cache.head }) };
        cache.head = block;
        cache.len += 1;
        true
    });
    if kept != Some(true) {
        // SAFETY: the caller guarantees the block came from `alloc` with `BLOCK`.
        unsafe { alloc::dealloc(block, BLOCK) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_released_block_is_handed_out_again_on_the_same_thread() {
        cache_on_this_thread();
        let first = acquire();
        // SAFETY: `first` came from `acquire` and is not used afterwards except by address.
        unsafe { release(first) };
        let second = acquire();
        assert_eq!(first, second, "the freed block is reused");
        // SAFETY: as above.
        unsafe { release(second) };
    }

    #[test]
    fn threads_keep_no_cache_unless_asked() {
        std::thread::spawn(|| {
            let block = acquire();
            // SAFETY: `block` came from `acquire` and is released once.
            unsafe { release(block) };
            assert_eq!(with_cache(|cache| cache.len), None);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn the_cache_keeps_at_most_its_capacity_and_frees_the_rest() {
        cache_on_this_thread();
        let blocks: Vec<*mut u8> = (0..CAPACITY + 10).map(|_| acquire()).collect();
        for &block in &blocks {
            // SAFETY: each block came from `acquire` and is released once.
            unsafe { release(block) };
        }
        assert_eq!(with_cache(|cache| cache.len), Some(CAPACITY));
        // Blocks freed on another thread join that thread's cache and go back when it ends.
        struct Moved(Vec<*mut u8>);
        // SAFETY: the blocks are plain memory that this thread gives up.
        unsafe impl Send for Moved {}
        let moved = Moved((0..10).map(|_| acquire()).collect());
        std::thread::spawn(move || {
            cache_on_this_thread();
            let moved = moved;
            for block in moved.0 {
                // SAFETY: the blocks were handed to this thread, which releases each once.
                unsafe { release(block) };
            }
            assert_eq!(with_cache(|cache| cache.len), Some(10));
        })
        .join()
        .unwrap();
    }
}
