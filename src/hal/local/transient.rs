//! Transient memory of the CPU devices. What `queue_alloca` hands out comes back here when its
//! buffer's last reference goes (the program's `dealloca`, or a result its caller dropped), and a
//! later alloca of about the same size takes it again: a model called over and over asks the
//! system for no memory, faults in no fresh pages and zeroes nothing after its first call. The
//! blocks kept are bounded ([`TransientPool::LIMIT`]); the oldest go first past it.
//!
//! A reused block is not zeroed: as with IREE's allocas, transient contents are undefined until
//! the program writes them (they are the bytes of an earlier buffer of the same device).

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::host::{Diagnostic, StatusCode};
use crate::vm::buffer::{Buffer as Bytes, MAX_BUFFER_LENGTH};

/// The blocks a device keeps for reuse.
#[derive(Debug, Default)]
pub struct TransientPool {
    free: Mutex<Free>,
}

#[derive(Debug, Default)]
struct Free {
    /// Oldest returned first.
    blocks: Vec<Block>,
    bytes: usize,
}

/// Zero-initialised memory from the global allocator, 64-byte aligned (what compiled dispatches
/// assume of their bindings).
#[derive(Debug)]
struct Block {
    start: NonNull<u8>,
    capacity: usize,
}

// SAFETY: a block is plain memory owned by whoever holds the `Block`.
unsafe impl Send for Block {}
// SAFETY: a shared `Block` gives access to nothing but its address and size.
unsafe impl Sync for Block {}

impl Block {
    fn new(capacity: usize) -> Result<Block, Diagnostic> {
        let exhausted =
            || Diagnostic::new(StatusCode::ResourceExhausted, format!("cannot allocate a buffer of {capacity} bytes"));
        let layout = Layout::from_size_align(capacity, 64).map_err(|_| exhausted())?;
        // SAFETY: `capacity` is at least 64 (see `TransientPool::allocate`), so the layout is not
        // zero-sized.
        let start = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) }).ok_or_else(exhausted)?;
        Ok(Block { start, capacity })
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        let layout = Layout::from_size_align(self.capacity, 64).expect("checked when allocated");
        // SAFETY: allocated in `Block::new` with this layout and freed only here.
        unsafe { std::alloc::dealloc(self.start.as_ptr(), layout) };
    }
}

/// A block lent to a buffer: back to the pool when the buffer's memory goes, freed if the pool
/// has gone first.
struct Lease {
    block: Option<Block>,
    pool: Weak<TransientPool>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let (Some(block), Some(pool)) = (self.block.take(), self.pool.upgrade()) {
            pool.give_back(block);
        }
    }
}

impl TransientPool {
    /// The most bytes kept unused.
    pub const LIMIT: usize = 256 << 20;

    pub fn new() -> Arc<TransientPool> {
        Arc::default()
    }

    /// Mutable bytes of `length`: a kept block that holds them with at most a quarter to spare,
    /// or a new zeroed one.
    pub fn allocate(self: &Arc<Self>, length: i64) -> Result<Arc<Bytes>, Diagnostic> {
        let length = usize::try_from(length)
            .map_err(|_| Diagnostic::new(StatusCode::InvalidArgument, format!("buffer length {length} is negative")))?;
        if length > MAX_BUFFER_LENGTH {
            return Err(Diagnostic::new(
                StatusCode::ResourceExhausted,
                format!("a buffer of {length} bytes exceeds the limit of {MAX_BUFFER_LENGTH}"),
            ));
        }
        let capacity = length.max(1).next_multiple_of(64);
        let block = match self.take(capacity) {
            Some(block) => block,
            None => Block::new(capacity)?,
        };
        let start = block.start;
        let lease = Arc::new(Lease { block: Some(block), pool: Arc::downgrade(self) });
        // SAFETY: `start..start + length` lies in the block (its capacity is at least `length`),
        // which the lease owns until the buffer and every span of it are gone. The bytes are
        // initialised (zeroed when allocated, written since only through buffers and dispatches),
        // and Rust reaches them only through the returned buffer, atomically.
        Ok(unsafe { Bytes::from_mapping(start, length, lease) })
    }

    /// The smallest kept block of at least `capacity` bytes and at most a quarter more.
    fn take(&self, capacity: usize) -> Option<Block> {
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        let (index, _) = free
            .blocks
            .iter()
            .enumerate()
            .filter(|(_, block)| block.capacity >= capacity && block.capacity - capacity <= capacity / 4)
            .min_by_key(|(_, block)| block.capacity)?;
        let block = free.blocks.remove(index);
        free.bytes -= block.capacity;
        Some(block)
    }

    /// Keeps `block`, freeing the oldest kept ones that would take the pool past its limit (or
    /// `block` itself, when it alone is larger).
    fn give_back(&self, block: Block) {
        if block.capacity > Self::LIMIT {
            return;
        }
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        let mut evicted = 0;
        let mut bytes = free.bytes + block.capacity;
        while bytes > Self::LIMIT {
            bytes -= free.blocks[evicted].capacity;
            evicted += 1;
        }
        let freed: Vec<Block> = free.blocks.drain(..evicted).collect();
        free.bytes = bytes;
        free.blocks.push(block);
        drop(free);
        drop(freed);
    }

    /// Bytes kept for reuse.
    #[cfg(test)]
    fn kept(&self) -> usize {
        self.free.lock().unwrap_or_else(PoisonError::into_inner).bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(bytes: &Bytes) -> usize {
        bytes.as_ptr() as usize
    }

    #[test]
    fn a_freed_block_is_taken_again_by_an_allocation_of_about_its_size() {
        let pool = TransientPool::new();
        let first = pool.allocate(1000).unwrap();
        assert_eq!(first.len(), 1000);
        assert!(first.to_vec().iter().all(|&b| b == 0), "new memory is zeroed");
        first.fill_i8(0, 1000, 7).unwrap();
        let at = address(&first);
        drop(first);
        assert_eq!(pool.kept(), 1024);
        let again = pool.allocate(900).unwrap();
        assert_eq!((address(&again), again.len(), pool.kept()), (at, 900, 0));
        assert_eq!(again.to_vec()[..4], [7; 4], "a reused block keeps its bytes");
        drop(again);
        // Too small for a block of 1024 bytes to be worth lending.
        let small = pool.allocate(64).unwrap();
        assert_ne!(address(&small), at);
        assert_eq!(pool.kept(), 1024);
    }

    #[test]
    fn spans_keep_the_block_lent_until_the_last_one_goes() {
        let pool = TransientPool::new();
        let buffer = pool.allocate(256).unwrap();
        let span = buffer.span(128, 64).unwrap();
        drop(buffer);
        assert_eq!(pool.kept(), 0, "a span still holds the block");
        span.fill_i8(0, 64, 1).unwrap();
        drop(span);
        assert_eq!(pool.kept(), 256);
    }

    #[test]
    fn the_oldest_blocks_go_past_the_limit() {
        let pool = TransientPool::new();
        let quarter = TransientPool::LIMIT / 4;
        let buffers: Vec<_> = (0..5).map(|i| pool.allocate((quarter + i * 4096) as i64).unwrap()).collect();
        let oldest = address(&buffers[0]);
        drop(buffers);
        assert!(pool.kept() <= TransientPool::LIMIT);
        assert_eq!(pool.free.lock().unwrap().blocks.len(), 3, "two of five quarter-limit blocks were freed");
        assert!(pool.free.lock().unwrap().blocks.iter().all(|b| b.start.as_ptr() as usize != oldest));
        drop(pool.allocate(TransientPool::LIMIT as i64 + 64).unwrap());
        assert_eq!(pool.free.lock().unwrap().blocks.len(), 3, "a block larger than the limit is not kept");
    }

    #[test]
    fn a_block_outliving_its_pool_is_freed_and_bad_lengths_are_errors() {
        let pool = TransientPool::new();
        let buffer = pool.allocate(64).unwrap();
        drop(pool);
        buffer.fill_i8(0, 64, 3).unwrap();
        drop(buffer);
        let pool = TransientPool::new();
        assert_eq!(pool.allocate(-1).unwrap_err().code, StatusCode::InvalidArgument);
        assert_eq!(pool.allocate(MAX_BUFFER_LENGTH as i64 + 1).unwrap_err().code, StatusCode::ResourceExhausted);
        assert_eq!(pool.allocate(0).unwrap().len(), 0);
    }
}
