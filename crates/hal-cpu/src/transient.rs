//! Transient memory of the CPU devices. The buffers `queue_alloca` hands out stay listed here, and
//! a later alloca of about the same size takes one again once nothing else holds it (the program's
//! `dealloca` dropped it, or its caller dropped a result) and no other buffer shares its memory: a
//! model called over and over then asks the system for no memory, faults in no fresh pages,
//! zeroes nothing and makes no buffer object after its first call. The buffer object itself is
//! handed out again, over the first bytes of its memory when a smaller length (by at most a
//! quarter) is asked for.
//!
//! The pool lists at most [`TransientPool::LIMIT`] bytes, in use or not. Past it the oldest
//! buffers nothing holds are freed first, then the oldest in use are no longer listed (their
//! memory goes with their last holder).
//!
//! A reused buffer is not zeroed: as with IREE's allocas, transient contents are undefined until
//! the program writes them (they are the bytes of an earlier buffer of the same device).

use std::sync::{Arc, Mutex, PoisonError};

use rtx_hal::buffer::Buffer;
use rtx_hal::heap::HeapAllocator;
use rtx_host::Diagnostic;

/// The buffers a device's allocas handed out, oldest first.
#[derive(Debug, Default)]
pub struct TransientPool {
    listed: Mutex<Listed>,
}

#[derive(Debug, Default)]
struct Listed {
    buffers: Vec<Entry>,
    bytes: usize,
}

/// A listed buffer with the length of its memory, whatever length it was last handed out with:
/// kept here because the pool reads it for every buffer at every alloca, and the memory's own
/// length is behind a virtual call.
#[derive(Debug)]
struct Entry {
    capacity: usize,
    buffer: Arc<Buffer>,
}

/// Whether a listed buffer may be handed out again: the pool's handle is its only one and no
/// other buffer shares its memory. Exclusive access to the handle makes the answer hold until the
/// pool gives out a new one.
fn idle(buffer: &mut Arc<Buffer>) -> bool {
    // The count first: a buffer in use is passed over without a write.
    Arc::strong_count(buffer) == 1 && Arc::get_mut(buffer).is_some_and(Buffer::holds_memory_alone)
}

impl TransientPool {
    /// The most bytes listed.
    pub const LIMIT: usize = 256 << 20;

    /// A buffer of `length` mutable bytes, 64-byte aligned, with `memory_types` and `usage` as
    /// [`HeapAllocator::wrap`] gives them: an idle listed buffer whose memory holds them with at
    /// most a quarter to spare, or a new zeroed one.
    /// A new buffer's memory comes from `heap`.
    pub fn allocate(
        &self,
        heap: &HeapAllocator,
        length: i64,
        memory_types: u32,
        usage: u32,
    ) -> Result<Arc<Buffer>, Diagnostic> {
        if let Ok(wanted) = usize::try_from(length) {
            let mut listed = self.listed.lock().unwrap_or_else(PoisonError::into_inner);
            let fitting = listed
                .buffers
                .iter_mut()
                .enumerate()
                .filter(|(_, entry)| entry.capacity >= wanted && entry.capacity - wanted <= wanted / 4)
                .filter_map(|(index, entry)| idle(&mut entry.buffer).then_some((index, entry.capacity)))
                .min_by_key(|&(_, len)| len);
            if let Some((index, _)) = fitting {
                let listed = &mut listed.buffers[index].buffer;
                let idle = Arc::get_mut(listed).expect("an idle buffer has no other holder");
                HeapAllocator::rewrap(idle, wanted, memory_types, usage)?;
                return Ok(listed.clone());
            }
        }
        let buffer = Arc::new(HeapAllocator::wrap(heap.bytes(length)?, memory_types, usage));
        if buffer.len() <= Self::LIMIT {
            let unlisted = self.list(buffer.clone());
            drop(unlisted);
        }
        Ok(buffer)
    }

    /// Lists `buffer`, and returns the buffers that no longer fit under the limit (to be dropped
    /// outside the lock).
    fn list(&self, buffer: Arc<Buffer>) -> Vec<Arc<Buffer>> {
        let mut listed = self.listed.lock().unwrap_or_else(PoisonError::into_inner);
        let capacity = buffer.memory().len();
        listed.bytes += capacity;
        listed.buffers.push(Entry { capacity, buffer });
        let mut unlisted = Vec::new();
        while listed.bytes > Self::LIMIT {
            let index = listed.buffers.iter_mut().position(|entry| idle(&mut entry.buffer)).unwrap_or(0);
            let entry = listed.buffers.remove(index);
            listed.bytes -= entry.capacity;
            unlisted.push(entry.buffer);
        }
        unlisted
    }

    /// ByteBuffer listed, and of them those nothing else holds.
    #[cfg(test)]
    fn listed(&self) -> (usize, usize) {
        let mut listed = self.listed.lock().unwrap_or_else(PoisonError::into_inner);
        let idle =
            listed.buffers.iter_mut().filter_map(|entry| idle(&mut entry.buffer).then_some(entry.capacity)).sum();
        (listed.bytes, idle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtx_hal::buffer::{memory_type, usage};
    use rtx_host::StatusCode;
    use rtx_vm::buffer::MAX_BUFFER_LENGTH;

    fn address(buffer: &Buffer) -> usize {
        buffer.memory().mapping().unwrap().as_ptr() as usize + buffer.offset()
    }

    fn allocate(pool: &TransientPool, length: i64) -> Arc<Buffer> {
        pool.allocate(&HeapAllocator::default(), length, memory_type::DEVICE_LOCAL, usage::TRANSFER).unwrap()
    }

    #[test]
    fn a_buffer_nothing_holds_is_taken_again_by_an_allocation_of_about_its_size() {
        let pool = TransientPool::default();
        let first = allocate(&pool, 1000);
        assert_eq!(first.len(), 1000);
        assert_eq!(address(&first) % 64, 0, "dispatches assume 64-byte aligned bindings");
        assert!(first.to_vec().unwrap().iter().all(|&b| b == 0), "new memory is zeroed");
        first.write(0, &[7; 1000]).unwrap();
        let at = address(&first);
        let held = allocate(&pool, 1000);
        assert_ne!(address(&held), at, "a buffer still held is not handed out again");
        drop(held);
        assert_eq!(pool.listed(), (2000, 1000));
        let same = allocate(&pool, 1000);
        assert!(!Arc::ptr_eq(&same, &first) && address(&same) != at, "the idle one of the two");
        let first_object = Arc::as_ptr(&first);
        drop((first, same));
        assert_eq!(pool.listed(), (2000, 2000));
        let again =
            pool.allocate(&HeapAllocator::default(), 900, memory_type::HOST_LOCAL, usage::DISPATCH_STORAGE).unwrap();
        assert_eq!(
            (again.len(), again.to_vec().unwrap()[..4] == [7; 4]),
            (900, true),
            "a reused buffer keeps its bytes"
        );
        assert_eq!((address(&again), Arc::as_ptr(&again)), (at, first_object), "the buffer object too");
        assert_eq!(again.usage() & usage::DISPATCH_STORAGE, usage::DISPATCH_STORAGE, "with the usage asked for now");
        assert_eq!(again.subspan(0, 901).unwrap_err().code, StatusCode::OutOfRange, "and no more than the length");
        // Too small for a buffer of 1000 bytes to be worth lending.
        let small = allocate(&pool, 64);
        assert!(address(&small) != at && small.len() == 64);
        assert_eq!(pool.listed(), (2064, 1000), "the reused buffer is held");
    }

    #[test]
    fn spans_keep_a_buffer_from_being_handed_out_until_the_last_one_goes() {
        let pool = TransientPool::default();
        let buffer = allocate(&pool, 256);
        let at = address(&buffer);
        let subspan = buffer.subspan(128, 64).unwrap();
        let bytes_span = buffer.memory().mapping().unwrap().span(64, 64).unwrap();
        drop(buffer);
        assert_eq!(pool.listed(), (256, 0), "a subspan and a span of the bytes still hold the memory");
        let other = allocate(&pool, 256);
        assert_ne!(address(&other), at);
        other.write(0, &[2; 256]).unwrap();
        subspan.write(0, &[1; 64]).unwrap();
        assert!(other.to_vec().unwrap().iter().all(|&b| b == 2), "writes through the span reach only its buffer");
        drop((subspan, other));
        assert_eq!(pool.listed(), (512, 256), "the span of the bytes holds them still");
        drop(bytes_span);
        assert_eq!(pool.listed(), (512, 512));
        assert_eq!(address(&allocate(&pool, 256)), at);
    }

    #[test]
    fn past_the_limit_idle_buffers_go_first_then_the_oldest_in_use_are_unlisted() {
        let pool = TransientPool::default();
        let fifth = TransientPool::LIMIT / 5;
        let size = |i: usize| (fifth + i * 4096) as i64;
        let addresses = |pool: &TransientPool| {
            pool.listed.lock().unwrap().buffers.iter().map(|e| address(&e.buffer)).collect::<Vec<_>>()
        };
        let held: Vec<_> = (0..4).map(|i| allocate(&pool, size(i))).collect();
        assert_eq!(pool.listed(), (4 * fifth + 6 * 4096, 0));
        drop(allocate(&pool, size(4)));
        assert!(!addresses(&pool).contains(&address(&held[0])), "nothing idle: the oldest in use is unlisted");
        assert_eq!(pool.listed().1, fifth + 4 * 4096, "the newest is listed, and idle now");
        held[0].write(0, &[1; 64]).unwrap();
        let newer = allocate(&pool, size(5));
        let listed = addresses(&pool);
        assert_eq!(listed, [&held[1], &held[2], &held[3], &newer].map(|b| address(b)), "the idle one went first");
        assert!(pool.listed().0 <= TransientPool::LIMIT);
        drop(allocate(&pool, TransientPool::LIMIT as i64 + 64));
        assert_eq!(addresses(&pool), listed, "a buffer larger than the limit is not listed");
    }

    #[test]
    fn a_buffer_outliving_its_pool_stays_usable_and_bad_lengths_are_errors() {
        let pool = TransientPool::default();
        let buffer = allocate(&pool, 64);
        drop(pool);
        buffer.write(0, &[3; 64]).unwrap();
        assert_eq!(buffer.to_vec().unwrap(), [3; 64]);
        let pool = TransientPool::default();
        assert_eq!(pool.allocate(&HeapAllocator::default(), -1, 0, 0).unwrap_err().code, StatusCode::InvalidArgument);
        assert_eq!(
            pool.allocate(&HeapAllocator::default(), MAX_BUFFER_LENGTH as i64 + 1, 0, 0).unwrap_err().code,
            StatusCode::ResourceExhausted
        );
        assert_eq!(allocate(&pool, 0).len(), 0);
        assert_eq!(allocate(&pool, 0).len(), 0, "an empty buffer is handed out again too");
    }
}
