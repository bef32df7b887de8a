//! [`HostBuffer`]: a shared block of host memory from a [`HostAllocator`], or a slice of one.
//!
//! As in TFRT, a block's bookkeeping (reference count, layout, allocator, the lock that orders
//! writers) sits in a header at the start of its own allocation, padded to the data's alignment:
//! one allocation per buffer, and what an allocator is asked for — and what a test allocator
//! reports — is the header plus the data. Tensors share a block by cloning the buffer, and
//! slices of it (`tfrt_dht.get_buffer_slice`) see the same bytes without a copy.
//!
//! A block may be *sealed* once its writer publishes it (a layer's result): from then on it is
//! read-only, so readers share its bytes without a copy or a lock.
//!
//! A buffer may also *borrow* bytes that something else owns — read-only ones (a program's
//! constants in its mapped BEF file), whose writes are refused, or writable ones (a buffer a VM
//! program returned, which a graph reads as a tensor without a copy): its block is then the
//! header alone, holding the owner alive.

use std::alloc::Layout;
use std::fmt;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use super::allocator::HostAllocator;
use super::diagnostic::{Diagnostic, StatusCode};

/// The alignment of [`HostBuffer::copy`]'s blocks: a cache line, enough for any element.
const TENSOR_COPY_ALIGNMENT: usize = 64;

/// The start of every block.
struct Header {
    refs: AtomicUsize,
    /// The whole block, header included: what goes back to the allocator.
    layout: Layout,
    /// Kernels write a buffer through shared references (chains order them); the lock makes each
    /// access exclusive of writers, for the whole block, so slices cannot race either.
    lock: RwLock<()>,
    /// Set once, when the block's writer published it: no one writes it after.
    sealed: AtomicBool,
    allocator: Arc<dyn HostAllocator>,
    /// For a buffer over borrowed bytes: where they start, whether they may be written, and what
    /// keeps them alive (boxed, so that the header of an owning block still fits in a cache line).
    borrowed: Option<Box<Borrowed>>,
}

struct Borrowed {
    data: NonNull<u8>,
    writable: bool,
    _owner: Arc<dyn Send + Sync>,
}

/// Where the data starts in a block aligned to `align` (at least the header's alignment).
fn data_offset(align: usize) -> usize {
    std::mem::size_of::<Header>().next_multiple_of(align)
}

/// A reference to `len` bytes at `offset` in a shared block. Cloning shares the block; the
/// block goes back to its allocator when the last buffer on it is dropped, so a buffer may
/// outlive the context it came from.
pub struct HostBuffer {
    header: NonNull<Header>,
    offset: usize,
    len: usize,
}

// SAFETY: the header's mutable state is atomic or behind its lock, the data is only reached under
// that lock, the allocator is Send + Sync, and borrowed bytes are written only where their
// lender allows it (`HostBuffer::shared`'s contract) and their owner is Send + Sync.
unsafe impl Send for HostBuffer {}
// SAFETY: as above.
unsafe impl Sync for HostBuffer {}

impl HostBuffer {
    /// A new block of `len` zeroed bytes aligned to `align` (a power of two).
    pub fn new_zeroed(allocator: Arc<dyn HostAllocator>, len: usize, align: usize) -> Result<HostBuffer, Diagnostic> {
        // SAFETY: every byte is written (zeroed) before the buffer is returned.
        unsafe {
            let buffer = HostBuffer::new_unfilled(allocator, len, align)?;
            buffer.as_ptr().cast_mut().write_bytes(0, len);
            Ok(buffer)
        }
    }

    /// A new block of `len` bytes aligned to `align` (a power of two), which are not yet written:
    /// for a writer that fills them from several tasks, each its own part, so that no one pass
    /// zeroes them all first.
    ///
    /// # Safety
    ///
    /// Every byte must be written, through [`as_ptr`](Self::as_ptr), before any is read: no one
    /// may call the `with_` methods, copy or print the bytes until then.
    pub unsafe fn new_unfilled(
        allocator: Arc<dyn HostAllocator>,
        len: usize,
        align: usize,
    ) -> Result<HostBuffer, Diagnostic> {
        if !align.is_power_of_two() {
            return Err(Diagnostic::new(
                StatusCode::InvalidArgument,
                format!("alignment {align} is not a power of two"),
            ));
        }
        let block_align = align.max(std::mem::align_of::<Header>());
        let offset = data_offset(block_align);
        let layout = offset.checked_add(len).and_then(|size| Layout::from_size_align(size, block_align).ok());
        let Some(layout) = layout else {
            return Err(Diagnostic::new(
                StatusCode::OutOfRange,
                format!("{len} bytes aligned to {align} exceed the address space"),
            ));
        };
        let block = allocator.allocate(layout.size(), layout.align()).ok_or_else(|| {
            Diagnostic::new(
                StatusCode::ResourceExhausted,
                format!("host allocator could not provide {len} bytes aligned to {align}"),
            )
        })?;
        let header = block.cast::<Header>();
        // SAFETY: the block is `layout.size()` bytes aligned to at least the header's alignment:
        // the header fits at its start and the data after `offset`.
        unsafe {
            header.as_ptr().write(Header {
                refs: AtomicUsize::new(1),
                layout,
                lock: RwLock::new(()),
                sealed: AtomicBool::new(false),
                allocator,
                borrowed: None,
            });
        }
        Ok(HostBuffer { header, offset: 0, len })
    }

    /// A read-only buffer over `bytes`, which `owner` keeps alive and unchanged for as long as it
    /// lives (the buffer holds it): no copy is made. Only the header comes from `allocator`.
    ///
    /// # Safety
    ///
    /// `bytes` must stay valid and unmodified while `owner` is alive.
    pub unsafe fn borrowed(
        allocator: Arc<dyn HostAllocator>,
        bytes: &[u8],
        owner: Arc<dyn Send + Sync>,
    ) -> Result<HostBuffer, Diagnostic> {
        HostBuffer::over(allocator, NonNull::from(bytes).cast(), bytes.len(), false, owner)
    }

    /// A writable buffer over the `len` bytes at `data`, which `owner` keeps alive: memory
    /// another part of the runtime allocated (a device's host memory), shared rather than
    /// copied. Only the header comes from `allocator`.
    ///
    /// # Safety
    ///
    /// `data..data + len` must be initialised, readable and writable memory while `owner` is
    /// alive, and whatever else reaches it must not do so while this buffer's readers or writers
    /// may (the graph's chains order a tensor's users against the program that lent it).
    pub unsafe fn shared(
        allocator: Arc<dyn HostAllocator>,
        data: NonNull<u8>,
        len: usize,
        owner: Arc<dyn Send + Sync>,
    ) -> Result<HostBuffer, Diagnostic> {
        HostBuffer::over(allocator, data, len, true, owner)
    }

    /// A buffer whose block is a header over `len` bytes at `data` that `owner` keeps alive.
    fn over(
        allocator: Arc<dyn HostAllocator>,
        data: NonNull<u8>,
        len: usize,
        writable: bool,
        owner: Arc<dyn Send + Sync>,
    ) -> Result<HostBuffer, Diagnostic> {
        let layout = Layout::new::<Header>();
        let block = allocator.allocate(layout.size(), layout.align()).ok_or_else(|| {
            Diagnostic::new(StatusCode::ResourceExhausted, "host allocator could not provide a buffer header")
        })?;
        let header = block.cast::<Header>();
        // SAFETY: the block is sized and aligned for a header.
        unsafe {
            header.as_ptr().write(Header {
                refs: AtomicUsize::new(1),
                layout,
                lock: RwLock::new(()),
                sealed: AtomicBool::new(false),
                allocator,
                borrowed: Some(Box::new(Borrowed { data, writable, _owner: owner })),
            })
        };
        Ok(HostBuffer { header, offset: 0, len })
    }

    /// Whether writes are refused: the bytes are borrowed read-only, or the block is sealed.
    /// Once true, it stays true.
    pub fn is_read_only(&self) -> bool {
        self.header().sealed.load(Ordering::Acquire)
            || self.header().borrowed.as_ref().is_some_and(|borrowed| !borrowed.writable)
    }

    /// Makes the whole block read-only from now on: for its writer, when it publishes a result
    /// that nothing may change after.
    pub fn seal(&self) {
        // Taken so that no writer is inside the block while it is sealed.
        let _guard = self.header().lock.write().unwrap_or_else(PoisonError::into_inner);
        self.header().sealed.store(true, Ordering::Release);
    }

    /// A new, writable block holding a copy of the bytes, from the same allocator.
    pub fn copy(&self) -> Result<HostBuffer, Diagnostic> {
        let copy = HostBuffer::new_zeroed(Arc::clone(&self.header().allocator), self.len, TENSOR_COPY_ALIGNMENT)?;
        self.with_bytes(|bytes| copy.with_bytes_mut(|target| target.copy_from_slice(bytes)))?;
        Ok(copy)
    }

    fn header(&self) -> &Header {
        // SAFETY: the header lives as long as any buffer on its block.
        unsafe { self.header.as_ref() }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address of the first byte, for printing; read and write with the `with_` methods.
    pub fn as_ptr(&self) -> *const u8 {
        if let Some(borrowed) = &self.header().borrowed {
            // SAFETY: `offset + len` is within the borrowed bytes (checked when sliced).
            return unsafe { borrowed.data.as_ptr().add(self.offset) };
        }
        let start = data_offset(self.header().layout.align()) + self.offset;
        // SAFETY: `start + len` is within the block (checked when the block or slice was made).
        unsafe { self.header.as_ptr().cast::<u8>().add(start) }
    }

    /// `len` bytes from `offset` of this buffer, sharing its block.
    pub fn slice(&self, offset: usize, len: usize) -> Result<HostBuffer, Diagnostic> {
        if offset.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(Diagnostic::new(
                StatusCode::OutOfRange,
                format!("{len} bytes at offset {offset} do not fit in a buffer of {} bytes", self.len),
            ));
        }
        let mut slice = self.clone();
        slice.offset += offset;
        slice.len = len;
        Ok(slice)
    }

    /// Whether both name the same bytes of the same block.
    pub fn ptr_eq(&self, other: &HostBuffer) -> bool {
        self.header == other.header && self.offset == other.offset && self.len == other.len
    }

    /// Calls `read` with the bytes, while no writer can change them.
    pub fn with_bytes<R>(&self, read: impl FnOnce(&[u8]) -> R) -> R {
        let _guard = self.header().lock.read().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: `len` initialised bytes, inside the block (zeroed at creation, or filled by its
        // writer before anyone reads them: `new_unfilled`) or lent to it;
        // writers through the block hold its lock exclusively, so none runs while this shared
        // view exists, and the lender's own writers are ordered apart (`shared`).
        read(unsafe { std::slice::from_raw_parts(self.as_ptr(), self.len) })
    }

    /// Calls `write` with the bytes, exclusively of every other access to the block; fails
    /// (FAILED_PRECONDITION) on bytes borrowed read-only and on a sealed block.
    pub fn with_bytes_mut<R>(&self, write: impl FnOnce(&mut [u8]) -> R) -> Result<R, Diagnostic> {
        if self.header().borrowed.as_ref().is_some_and(|borrowed| !borrowed.writable) {
            return Err(Diagnostic::new(
                StatusCode::FailedPrecondition,
                "the buffer is read-only: it holds a constant of the program",
            ));
        }
        let _guard = self.header().lock.write().unwrap_or_else(PoisonError::into_inner);
        // Checked under the lock, which `seal` takes too.
        if self.header().sealed.load(Ordering::Acquire) {
            return Err(Diagnostic::new(
                StatusCode::FailedPrecondition,
                "the buffer is read-only: it holds a kernel's result or a call's argument, which do not change once made",
            ));
        }
        // SAFETY: as in `with_bytes`, and the exclusive lock makes this the only view of the
        // block's bytes while it exists; the block owns them, or they were lent writable (`shared`).
        Ok(write(unsafe { std::slice::from_raw_parts_mut(self.as_ptr().cast_mut(), self.len) }))
    }

    /// A copy of the bytes.
    pub fn to_vec(&self) -> Vec<u8> {
        self.with_bytes(<[u8]>::to_vec)
    }
}

impl Clone for HostBuffer {
    fn clone(&self) -> HostBuffer {
        let old = self.header().refs.fetch_add(1, Ordering::Relaxed);
        if old > isize::MAX as usize {
            // The count is about to wrap: continuing would free a block that is still used.
            std::process::abort();
        }
        HostBuffer { header: self.header, offset: self.offset, len: self.len }
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        if self.header().refs.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        // Every other owner's use of the block happens before it is freed.
        fence(Ordering::Acquire);
        let (layout, allocator) = (self.header().layout, Arc::clone(&self.header().allocator));
        // SAFETY: this was the last reference: nothing else reads the header or the data, and
        // the block came from `allocator` with `layout`.
        unsafe {
            std::ptr::drop_in_place(self.header.as_ptr());
            allocator.deallocate(self.header.cast(), layout.size(), layout.align());
        }
    }
}

/// `HostBuffer<pointer=0x..., size=N>`, as TFRT prints a buffer.
impl fmt::Display for HostBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HostBuffer<pointer={:#x}, size={}>", self.as_ptr() as usize, self.len)
    }
}

impl fmt::Debug for HostBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostBuffer").field("offset", &self.offset).field("len", &self.len).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CountingAllocator, SystemAllocator};

    #[test]
    fn a_block_is_one_allocation_of_header_and_data() {
        let counting = Arc::new(CountingAllocator::default());
        {
            let buffer = HostBuffer::new_zeroed(counting.clone(), 100, 64).unwrap();
            assert_eq!(buffer.as_ptr() as usize % 64, 0);
            assert!(buffer.to_vec().iter().all(|&x| x == 0));
            assert_eq!(counting.live_allocations(), 1);
            // The header is padded to the data's alignment: one 64-byte line before the data.
            assert_eq!(counting.live_bytes(), 64 + 100);
            let small = HostBuffer::new_zeroed(counting.clone(), 3, 1).unwrap();
            assert_eq!(small.len(), 3);
            assert_eq!(counting.live_bytes() as usize, 64 + 100 + data_offset(8) + 3);
        }
        assert_eq!(counting.live_allocations(), 0);
        assert_eq!(counting.live_bytes(), 0);
        assert_eq!(counting.total_allocations(), 2);
    }

    #[test]
    fn a_sealed_block_refuses_writes_through_every_buffer_on_it() {
        let buffer = HostBuffer::new_zeroed(Arc::new(SystemAllocator), 8, 8).unwrap();
        let slice = buffer.slice(4, 4).unwrap();
        slice.with_bytes_mut(|bytes| bytes.fill(7)).unwrap();
        assert!(!buffer.is_read_only());
        buffer.seal();
        assert!(buffer.is_read_only() && slice.is_read_only() && buffer.clone().is_read_only());
        let error = slice.with_bytes_mut(|bytes| bytes.fill(1)).unwrap_err();
        assert_eq!(error.code, StatusCode::FailedPrecondition);
        assert!(error.message.contains("a kernel's result"), "{}", error.message);
        assert_eq!(buffer.to_vec(), [0, 0, 0, 0, 7, 7, 7, 7]);
    }

    #[test]
    fn clones_and_slices_share_the_block_until_the_last_one_goes() {
        let counting = Arc::new(CountingAllocator::default());
        let buffer = HostBuffer::new_zeroed(counting.clone(), 16, 16).unwrap();
        let slice = buffer.slice(4, 8).unwrap();
        assert_eq!(slice.as_ptr() as usize - buffer.as_ptr() as usize, 4);
        slice.with_bytes_mut(|bytes| bytes.copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8])).unwrap();
        assert_eq!(buffer.to_vec(), [0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0]);
        let inner = slice.slice(2, 2).unwrap();
        assert_eq!(inner.to_vec(), [3, 4]);
        assert!(buffer.clone().ptr_eq(&buffer) && !inner.ptr_eq(&slice));
        drop(buffer);
        drop(slice);
        assert_eq!(counting.live_allocations(), 1, "the inner slice still holds the block");
        drop(inner);
        assert_eq!(counting.live_allocations(), 0);
    }

    #[test]
    fn slices_past_the_end_are_refused() {
        let buffer = HostBuffer::new_zeroed(Arc::new(SystemAllocator), 8, 8).unwrap();
        assert_eq!(buffer.slice(4, 5).unwrap_err().code, StatusCode::OutOfRange);
        assert_eq!(buffer.slice(usize::MAX, 2).unwrap_err().code, StatusCode::OutOfRange);
        assert!(buffer.slice(8, 0).unwrap().is_empty());
    }

    #[test]
    fn bad_alignment_and_size_are_rejected() {
        let system: Arc<dyn HostAllocator> = Arc::new(SystemAllocator);
        assert_eq!(HostBuffer::new_zeroed(system.clone(), 8, 3).unwrap_err().code, StatusCode::InvalidArgument);
        assert_eq!(HostBuffer::new_zeroed(system, usize::MAX, 8).unwrap_err().code, StatusCode::OutOfRange);
    }

    #[test]
    fn borrowed_bytes_are_shared_read_only_and_keep_their_owner() {
        let counting = Arc::new(CountingAllocator::default());
        let owner: Arc<Vec<u8>> = Arc::new((0..16).collect());
        // SAFETY: the Vec's bytes live, unchanged, as long as the Arc that owns them.
        let buffer = unsafe { HostBuffer::borrowed(counting.clone(), &owner[..], owner.clone()) }.unwrap();
        assert_eq!(buffer.as_ptr(), owner.as_ptr(), "no copy");
        assert_eq!(buffer.slice(4, 3).unwrap().to_vec(), [4, 5, 6]);
        assert!(buffer.is_read_only());
        assert_eq!(buffer.with_bytes_mut(|b| b[0] = 9).unwrap_err().code, StatusCode::FailedPrecondition);
        let copy = buffer.copy().unwrap();
        assert!(!copy.is_read_only() && copy.to_vec() == buffer.to_vec());
        drop(copy);
        assert_eq!(Arc::strong_count(&owner), 2);
        assert_eq!((counting.live_allocations(), counting.live_bytes() as usize), (1, size_of::<Header>()));
        drop(buffer);
        assert_eq!((Arc::strong_count(&owner), counting.live_allocations()), (1, 0));
    }

    #[test]
    fn shared_bytes_are_written_in_place_and_keep_their_owner() {
        let counting = Arc::new(CountingAllocator::default());
        let owner = Arc::new(std::sync::Mutex::new(vec![0u8; 8]));
        let data = NonNull::new(owner.lock().unwrap().as_mut_ptr()).unwrap();
        // SAFETY: the Vec's bytes live as long as the Arc; the test reads them through the
        // Mutex only after the buffer's last write.
        let buffer = unsafe { HostBuffer::shared(counting.clone(), data, 8, owner.clone()) }.unwrap();
        assert!(!buffer.is_read_only());
        buffer.slice(2, 2).unwrap().with_bytes_mut(|b| b.copy_from_slice(&[7, 9])).unwrap();
        assert_eq!(buffer.copy().unwrap().to_vec(), [0, 0, 7, 9, 0, 0, 0, 0]);
        drop(buffer);
        assert_eq!(*owner.lock().unwrap(), [0, 0, 7, 9, 0, 0, 0, 0], "written in place");
        assert_eq!((Arc::strong_count(&owner), counting.live_allocations()), (1, 0));
    }

    #[test]
    fn buffers_print_their_address_and_size() {
        let buffer = HostBuffer::new_zeroed(Arc::new(SystemAllocator), 24, 8).unwrap();
        assert_eq!(buffer.to_string(), format!("HostBuffer<pointer=0x{:x}, size=24>", buffer.as_ptr() as usize));
    }
}
