//! Transient memory of the CPU devices. The buffers `queue_alloca` hands out stay listed here, and
//! a later alloca of about the same size takes one again once nothing else holds it (the program's
//! `dealloca` dropped it, or its caller dropped a result) and no span of it is alive: a model
//! called over and over then asks the system for no memory, faults in no fresh pages, zeroes
//! nothing and makes no buffer object after its first call. A buffer of the length asked for is
//! handed out itself, one up to a quarter larger as a span of it.
//!
//! The pool lists at most [`TransientPool::LIMIT`] bytes, in use or not. Past it the oldest
//! buffers nothing holds are freed first, then the oldest in use are no longer listed (their
//! memory goes with their last holder).
//!
//! A reused buffer is not zeroed: as with IREE's allocas, transient contents are undefined until
//! the program writes them (they are the bytes of an earlier buffer of the same device).

use std::sync::{Arc, Mutex, PoisonError};

use crate::host::Diagnostic;
use crate::vm::buffer::Buffer as Bytes;

/// The buffers a device's allocas handed out, oldest first.
#[derive(Debug, Default)]
pub struct TransientPool {
    listed: Mutex<Listed>,
}

#[derive(Debug, Default)]
struct Listed {
    buffers: Vec<Arc<Bytes>>,
    bytes: usize,
}

/// Whether a listed buffer may be handed out again: the pool's handle is its only one and no
/// span shares its memory. Exclusive access to the handle makes the answer hold until the pool
/// gives out a new one.
fn idle(buffer: &mut Arc<Bytes>) -> bool {
    Arc::get_mut(buffer).is_some_and(Bytes::holds_memory_alone)
}

impl TransientPool {
    /// The most bytes listed.
    pub const LIMIT: usize = 256 << 20;

    /// Mutable bytes of `length`, 64-byte aligned: an idle listed buffer that holds them with at
    /// most a quarter to spare, or a new zeroed one.
    pub fn allocate(&self, length: i64) -> Result<Arc<Bytes>, Diagnostic> {
        if let Ok(wanted) = usize::try_from(length) {
            let mut listed = self.listed.lock().unwrap_or_else(PoisonError::into_inner);
            let fitting = listed
                .buffers
                .iter_mut()
                .enumerate()
                .filter(|(_, buffer)| buffer.len() >= wanted && buffer.len() - wanted <= wanted / 4)
                .filter_map(|(index, buffer)| idle(buffer).then_some((index, buffer.len())))
                .min_by_key(|&(_, len)| len);
            if let Some((index, len)) = fitting {
                let buffer = &listed.buffers[index];
                return if len == wanted { Ok(buffer.clone()) } else { buffer.span(0, wanted) };
            }
        }
        let buffer = Bytes::allocate(length, 64)?;
        if buffer.len() <= Self::LIMIT {
            let unlisted = self.list(buffer.clone());
            drop(unlisted);
        }
        Ok(buffer)
    }

    /// Lists `buffer`, and returns the buffers that no longer fit under the limit (to be dropped
    /// outside the lock).
    fn list(&self, buffer: Arc<Bytes>) -> Vec<Arc<Bytes>> {
        let mut listed = self.listed.lock().unwrap_or_else(PoisonError::into_inner);
        listed.bytes += buffer.len();
        listed.buffers.push(buffer);
        let mut unlisted = Vec::new();
        while listed.bytes > Self::LIMIT {
            let index = listed.buffers.iter_mut().position(idle).unwrap_or(0);
            let buffer = listed.buffers.remove(index);
            listed.bytes -= buffer.len();
            unlisted.push(buffer);
        }
        unlisted
    }

    /// Bytes listed, and of them those nothing else holds.
    #[cfg(test)]
    fn listed(&self) -> (usize, usize) {
        let mut listed = self.listed.lock().unwrap_or_else(PoisonError::into_inner);
        let idle = listed.buffers.iter_mut().filter_map(|buffer| idle(buffer).then_some(buffer.len())).sum();
        (listed.bytes, idle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::StatusCode;
    use crate::vm::buffer::MAX_BUFFER_LENGTH;

    fn address(bytes: &Bytes) -> usize {
        bytes.as_ptr() as usize
    }

    #[test]
    fn a_buffer_nothing_holds_is_taken_again_by_an_allocation_of_about_its_size() {
        let pool = TransientPool::default();
        let first = pool.allocate(1000).unwrap();
        assert_eq!(first.len(), 1000);
        assert_eq!(address(&first) % 64, 0, "dispatches assume 64-byte aligned bindings");
        assert!(first.to_vec().iter().all(|&b| b == 0), "new memory is zeroed");
        first.fill_i8(0, 1000, 7).unwrap();
        let at = address(&first);
        let held = pool.allocate(1000).unwrap();
        assert_ne!(address(&held), at, "a buffer still held is not handed out again");
        drop(held);
        assert_eq!(pool.listed(), (2000, 1000));
        let same = pool.allocate(1000).unwrap();
        assert!(!Arc::ptr_eq(&same, &first) && address(&same) != at, "the idle one of the two");
        drop((first, same));
        assert_eq!(pool.listed(), (2000, 2000));
        let again = pool.allocate(900).unwrap();
        assert_eq!((again.len(), again.to_vec()[..4] == [7; 4]), (900, true), "a reused buffer keeps its bytes");
        assert_eq!(address(&again), at);
        // Too small for a buffer of 1000 bytes to be worth lending.
        let small = pool.allocate(64).unwrap();
        assert!(address(&small) != at && small.len() == 64);
        assert_eq!(pool.listed(), (2064, 1000), "the span of the reused buffer holds it");
    }

    #[test]
    fn spans_keep_a_buffer_from_being_handed_out_until_the_last_one_goes() {
        let pool = TransientPool::default();
        let buffer = pool.allocate(256).unwrap();
        let at = address(&buffer);
        let span = buffer.span(128, 64).unwrap();
        drop(buffer);
        assert_eq!(pool.listed(), (256, 0), "a span still holds the memory");
        let other = pool.allocate(256).unwrap();
        assert_ne!(address(&other), at);
        other.fill_i8(0, 256, 2).unwrap();
        span.fill_i8(0, 64, 1).unwrap();
        assert!(other.to_vec().iter().all(|&b| b == 2), "writes through the span reach only its buffer");
        drop((span, other));
        assert_eq!(pool.listed(), (512, 512));
        assert_eq!(address(&pool.allocate(256).unwrap()), at);
    }

    #[test]
    fn past_the_limit_idle_buffers_go_first_then_the_oldest_in_use_are_unlisted() {
        let pool = TransientPool::default();
        let fifth = TransientPool::LIMIT / 5;
        let size = |i: usize| (fifth + i * 4096) as i64;
        let addresses =
            |pool: &TransientPool| pool.listed.lock().unwrap().buffers.iter().map(|b| address(b)).collect::<Vec<_>>();
        let held: Vec<_> = (0..4).map(|i| pool.allocate(size(i)).unwrap()).collect();
        assert_eq!(pool.listed(), (4 * fifth + 6 * 4096, 0));
        drop(pool.allocate(size(4)).unwrap());
        assert!(!addresses(&pool).contains(&address(&held[0])), "nothing idle: the oldest in use is unlisted");
        assert_eq!(pool.listed().1, fifth + 4 * 4096, "the newest is listed, and idle now");
        held[0].fill_i8(0, 64, 1).unwrap();
        let newer = pool.allocate(size(5)).unwrap();
        let listed = addresses(&pool);
        assert_eq!(listed, [&held[1], &held[2], &held[3], &newer].map(|b| address(b)), "the idle one went first");
        assert!(pool.listed().0 <= TransientPool::LIMIT);
        drop(pool.allocate(TransientPool::LIMIT as i64 + 64).unwrap());
        assert_eq!(addresses(&pool), listed, "a buffer larger than the limit is not listed");
    }

    #[test]
    fn a_buffer_outliving_its_pool_stays_usable_and_bad_lengths_are_errors() {
        let pool = TransientPool::default();
        let buffer = pool.allocate(64).unwrap();
        drop(pool);
        buffer.fill_i8(0, 64, 3).unwrap();
        assert_eq!(buffer.to_vec(), [3; 64]);
        let pool = TransientPool::default();
        assert_eq!(pool.allocate(-1).unwrap_err().code, StatusCode::InvalidArgument);
        assert_eq!(pool.allocate(MAX_BUFFER_LENGTH as i64 + 1).unwrap_err().code, StatusCode::ResourceExhausted);
        assert_eq!(pool.allocate(0).unwrap().len(), 0);
        assert_eq!(pool.allocate(0).unwrap().len(), 0, "an empty buffer is handed out again too");
    }
}
