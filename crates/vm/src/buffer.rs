//! `!vm.buffer`: a fixed-length byte buffer, either a zero-copy view of a module's rodata segment
//! (read-only) or zero-initialised memory the guest or host owns (mutable).
//!
//! Semantics follow IREE's `vm/buffer.c` and the `vm.buffer.*` handlers in `vm/ops.h`:
//! - typed loads, stores and fills take offsets and lengths in *elements* of the op's type, so every
//!   typed access is naturally aligned; copy, compare, clone and hash take *bytes*;
//! - an access past the end is `OUT_OF_RANGE` with IREE's message (`out-of-bounds access detected
//!   (offset=…, length=…, alignment=…, buffer length=…)`, offset and length in bytes); IREE casts
//!   register values to `size_t` and may wrap, rtx reports a negative value as itself instead;
//! - writing to a rodata buffer is `PERMISSION_DENIED` (`buffer is read-only and cannot be mapped
//!   for mutation`), checked before the range, as IREE does;
//! - multi-byte values are little-endian, the only byte order IREE supports.
//!
//! Memory model: buffers are shared between threads through `Arc` and written through `&self`, as
//! IREE's are. Owned bytes are `AtomicU8`s accessed with `Relaxed` ordering, so concurrent access
//! is never undefined behaviour, but (as in IREE) nothing more is promised: a multi-byte value
//! written by one thread while another reads it may be observed torn, and ordering between threads
//! must come from the synchronisation that handed the buffer over (fences, joins). Bytes rather than
//! wider atomics because a typed store must not disturb its neighbours, and racing mixed-size
//! atomics are not allowed by Rust's memory model.

use std::fmt;
use std::ops::Range;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use super::module::Module;
use rtx_host::{Diagnostic, HostAllocator, StatusCode, SystemAllocator};

/// A `!vm.buffer`.
pub struct ByteBuffer {
    storage: Storage,
}

enum Storage {
    /// Bytes `range` of the module's file: the module stays alive as long as the buffer does.
    Rodata { module: Arc<Module>, range: Range<usize> },
    /// Bytes `range` of mutable memory, which spans of the buffer share.
    Owned { memory: Arc<Memory>, range: Range<usize> },
}

/// Mutable bytes: zero-initialised ones the buffer allocated at a 64-byte-aligned address from
/// a context's allocator or the process's (the alignment is for native code: the HAL binds
/// buffers to compiled dispatches, which assume the alignment IREE allocates with), or memory
/// someone else owns and maps (a device's host-visible memory), kept alive by `owner`.
struct Memory {
    start: NonNull<AtomicU8>,
    length: usize,
    _owner: Owner,
}

enum Owner {
    /// `start` is a block of `length` bytes from this allocator (the process's when `None`),
    /// given back on drop; none for zero bytes.
    Allocated(Option<Arc<dyn HostAllocator>>),
    Mapped {
        _owner: Arc<dyn Send + Sync>,
    },
}

impl Drop for Memory {
    fn drop(&mut self) {
        if let Owner::Allocated(allocator) = &self._owner {
            if self.length == 0 {
                return;
            }
            let start = self.start.cast::<u8>();
            // SAFETY: `start` came from `allocate_zeroed` of this allocator with this length and
            // `ALIGNMENT` (see `zeroed`), and is given back only here, once.
            unsafe { allocator_or_system(allocator.as_ref()).deallocate(start, self.length, ALIGNMENT) }
        }
    }
}

/// `allocator`, or the process's where there is none.
fn allocator_or_system(allocator: Option<&Arc<dyn HostAllocator>>) -> &dyn HostAllocator {
    allocator.map_or(&SystemAllocator, |allocator| &**allocator)
}

// SAFETY: `start..start + length` is memory of atomic bytes that `_owner` keeps alive; atomics
// may be shared and accessed from any thread.
unsafe impl Send for Memory {}
// SAFETY: as above.
unsafe impl Sync for Memory {}

/// The alignment of owned memory.
const ALIGNMENT: usize = 64;

#[repr(C, align(64))]
struct Chunk([AtomicU8; 64]);

impl Memory {
    /// `length` zeroed bytes (rounded up to whole cache lines) from `allocator`, or the process's.
    fn zeroed(allocator: Option<&Arc<dyn HostAllocator>>, length: usize) -> Result<Arc<Memory>, Diagnostic> {
        if length > MAX_BUFFER_LENGTH {
            return Err(Diagnostic::new(
                StatusCode::ResourceExhausted,
                format!("a buffer of {length} bytes exceeds the limit of {MAX_BUFFER_LENGTH}"),
            ));
        }
        let length = length.next_multiple_of(ALIGNMENT);
        let start = if length == 0 {
            NonNull::<Chunk>::dangling().cast::<u8>()
        } else {
            allocator_or_system(allocator).allocate_zeroed(length, ALIGNMENT).ok_or_else(|| {
                Diagnostic::new(StatusCode::ResourceExhausted, format!("cannot allocate a buffer of {length} bytes"))
            })?
        };
        let owner = Owner::Allocated(allocator.cloned());
        Ok(Arc::new(Memory { start: start.cast::<AtomicU8>(), length, _owner: owner }))
    }

    #[inline]
    fn bytes(&self) -> &[AtomicU8] {
        // SAFETY: `start..start + length` is live memory of atomic bytes while `self` is (its
        // owner is held by `self`; see `Send`).
        unsafe { std::slice::from_raw_parts(self.start.as_ptr(), self.length) }
    }
}

/// A bounds-checked byte range of a buffer, for reading.
enum View<'a> {
    Rodata(&'a [u8]),
    Owned(&'a [AtomicU8]),
}

impl View<'_> {
    fn len(&self) -> usize {
        match self {
            View::Rodata(bytes) => bytes.len(),
            View::Owned(bytes) => bytes.len(),
        }
    }

    /// Copies the bytes starting at `at` into `out`; bytes past the end of the view leave `out`
    /// unchanged (callers stay in bounds, this just keeps a slip from panicking).
    fn copy_into(&self, at: usize, out: &mut [u8]) {
        let end = at.saturating_add(out.len());
        match self {
            View::Rodata(bytes) => {
                if let Some(src) = bytes.get(at..end) {
                    out.copy_from_slice(src);
                }
            }
            View::Owned(bytes) => {
                for (dst, src) in out.iter_mut().zip(bytes.get(at..end).unwrap_or_default()) {
                    *dst = src.load(Ordering::Relaxed);
                }
            }
        }
    }
}

/// The bytes of element `offset` of `N` bytes within `range` (of the memory a buffer views), if
/// it lies inside: the fast path of typed loads and stores, whose errors the slow path reports.
#[inline]
fn element<const N: usize>(offset: i64, range: &Range<usize>) -> Option<Range<usize>> {
    let start = usize::try_from(offset).ok()?.checked_mul(N)?;
    let end = start.checked_add(N)?;
    (end <= range.len()).then_some(range.start + start..range.start + end)
}

/// Bulk operations go through a stack buffer of this many bytes (a multiple of 8 for the hash).
const CHUNK: usize = 256;

impl ByteBuffer {
    /// A read-only buffer over rodata segment `ordinal` of `module` (`vm.const.ref.rodata`), sharing
    /// the module's bytes.
    pub fn rodata(module: Arc<Module>, ordinal: usize) -> Result<Arc<ByteBuffer>, Diagnostic> {
        let segment = module.rodata_segment(ordinal).ok_or_else(|| {
            Diagnostic::new(
                StatusCode::OutOfRange,
                format!("rodata segment {ordinal} out of range (module has {})", module.rodata_segment_count()),
            )
        })?;
        let range = segment.offset..segment.offset.saturating_add(segment.data.len());
        // The buffer re-slices the module's bytes on each access (it cannot borrow from the Arc
        // it holds), so make sure that slice is the segment.
        let same = module.bytes().get(range.clone()).is_some_and(|bytes| bytes.as_ptr() == segment.data.as_ptr());
        if !same {
            return Err(Diagnostic::new(
                StatusCode::Internal,
                format!("rodata segment {ordinal} does not lie at file offset {}", segment.offset),
            ));
        }
        Ok(Arc::new(ByteBuffer { storage: Storage::Rodata { module, range } }))
    }

    /// A mutable, zero-filled buffer (`vm.buffer.alloc`) of memory from `allocator` (a context's),
    /// or the process's when `None`. `alignment` must be 0 or a power of two, as IREE requires;
    /// it is otherwise not kept, because the VM never exposes addresses and every typed access is
    /// element-aligned by construction.
    pub fn allocate(
        allocator: Option<&Arc<dyn HostAllocator>>,
        length: i64,
        alignment: i32,
    ) -> Result<Arc<ByteBuffer>, Diagnostic> {
        check_alignment(alignment)?;
        let length = usize::try_from(length)
            .map_err(|_| Diagnostic::new(StatusCode::InvalidArgument, format!("buffer length {length} is negative")))?;
        Ok(Arc::new(ByteBuffer::owned(Memory::zeroed(allocator, length)?, length)))
    }

    /// A mutable buffer over `length` bytes at `start` that someone else owns (a device's mapped
    /// memory), kept alive by `owner` as long as the buffer or a span of it lives. The bytes are
    /// accessed as atomic bytes, as owned memory is; ordering against the device comes from the
    /// HAL's fences and flushes.
    ///
    /// # Safety
    /// `start..start + length` must be readable and writable memory for as long as `owner` lives,
    /// never accessed non-atomically by Rust code meanwhile.
    pub unsafe fn from_mapping(start: NonNull<u8>, length: usize, owner: Arc<dyn Send + Sync>) -> Arc<ByteBuffer> {
        let memory = Memory { start: start.cast::<AtomicU8>(), length, _owner: Owner::Mapped { _owner: owner } };
        Arc::new(ByteBuffer::owned(Arc::new(memory), length))
    }

    fn owned(memory: Arc<Memory>, length: usize) -> ByteBuffer {
        ByteBuffer { storage: Storage::Owned { memory, range: 0..length } }
    }

    /// Whether this buffer is all that reaches its memory (no span of it is alive): what a pool
    /// that hands buffers out again checks. The answer holds while the caller has the only
    /// handle on this buffer, as no span can be made then.
    pub fn holds_memory_alone(&self) -> bool {
        match &self.storage {
            Storage::Owned { memory, .. } => Arc::strong_count(memory) == 1,
            Storage::Rodata { .. } => false,
        }
    }

    /// A mutable buffer holding a copy of `bytes`, for hosts passing data in.
    pub fn from_bytes(bytes: &[u8]) -> Result<Arc<ByteBuffer>, Diagnostic> {
        let buffer = ByteBuffer::owned(Memory::zeroed(None, bytes.len())?, bytes.len());
        for (dst, &src) in buffer.owned_bytes().unwrap_or_default().iter().zip(bytes) {
            dst.store(src, Ordering::Relaxed);
        }
        Ok(Arc::new(buffer))
    }

    /// Bytes `offset..offset + length` of this buffer as a buffer of their own, sharing the
    /// memory (writes through either are seen by both), as HAL buffer subspans and dispatch
    /// bindings need.
    pub fn span(&self, offset: usize, length: usize) -> Result<Arc<ByteBuffer>, Diagnostic> {
        let within = |range: &Range<usize>| {
            let start = range.start.checked_add(offset)?;
            let end = start.checked_add(length)?;
            (end <= range.end).then_some(start..end)
        };
        let storage = match &self.storage {
            Storage::Rodata { module, range } => {
                within(range).map(|range| Storage::Rodata { module: module.clone(), range })
            }
            Storage::Owned { memory, range } => {
                within(range).map(|range| Storage::Owned { memory: memory.clone(), range })
            }
        };
        storage
            .map(|storage| Arc::new(ByteBuffer { storage }))
            .ok_or_else(|| self.out_of_bounds(offset as i128, length as i128, 1))
    }

    /// The address of the first byte, for native code reading the buffer (compiled dispatches).
    /// Owned memory is 64-byte aligned at offset 0.
    pub fn as_ptr(&self) -> *const u8 {
        match &self.storage {
            Storage::Rodata { module, range } => module.bytes()[range.clone()].as_ptr(),
            Storage::Owned { .. } => self.owned_bytes().unwrap_or_default().as_ptr().cast::<u8>(),
        }
    }

    /// The address of the first byte for native code writing the buffer; `None` for rodata.
    /// Native writes race with nothing the VM does while a dispatch runs (the HAL orders them).
    pub fn as_mut_ptr(&self) -> Option<*mut u8> {
        self.owned_bytes().map(|bytes| bytes.as_ptr().cast::<u8>().cast_mut())
    }

    /// This buffer's bytes of owned memory (`None` for rodata).
    fn owned_bytes(&self) -> Option<&[AtomicU8]> {
        match &self.storage {
            Storage::Owned { memory, range } => memory.bytes().get(range.clone()),
            Storage::Rodata { .. } => None,
        }
    }

    /// Length in bytes (`vm.buffer.length`).
    pub fn len(&self) -> usize {
        match &self.storage {
            Storage::Rodata { range, .. } | Storage::Owned { range, .. } => range.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// False for rodata views.
    pub fn is_mutable(&self) -> bool {
        matches!(self.storage, Storage::Owned { .. })
    }

    /// A new mutable buffer holding bytes `offset..offset + length` (`vm.buffer.clone`), of memory
    /// from `allocator` as [`allocate`](Self::allocate)'s. The source range is checked before the
    /// alignment, as in IREE.
    pub fn clone_range(
        &self,
        allocator: Option<&Arc<dyn HostAllocator>>,
        offset: i64,
        length: i64,
        alignment: i32,
    ) -> Result<Arc<ByteBuffer>, Diagnostic> {
        let source = self.view(offset, length, 1)?;
        check_alignment(alignment)?;
        let target = ByteBuffer::owned(Memory::zeroed(allocator, source.len())?, source.len());
        copy_view(&source, target.owned_bytes().unwrap_or_default(), false);
        Ok(Arc::new(target))
    }

    /// Copies `length` bytes (`vm.buffer.copy`). Source and target may be the same buffer with
    /// overlapping ranges: the copy behaves like `memmove` (IREE uses `memcpy`, whose overlap
    /// behaviour is undefined).
    pub fn copy(
        source: &ByteBuffer,
        source_offset: i64,
        target: &ByteBuffer,
        target_offset: i64,
        length: i64,
    ) -> Result<(), Diagnostic> {
        let from = source.view(source_offset, length, 1)?;
        let to = target.view_mut(target_offset, length, 1)?;
        // Spans of one memory can overlap: copying to a higher address walks backward.
        let backward = match &from {
            View::Owned(bytes) => to.as_ptr() > bytes.as_ptr(),
            View::Rodata(_) => false,
        };
        copy_view(&from, to, backward);
        Ok(())
    }

    /// [`ByteBuffer::copy`] as one `memmove` rather than atomic byte moves, for the HAL's transfers:
    /// several times faster on the tensors programs shuffle between dispatches.
    ///
    /// # Safety
    /// Nothing else may access either range while the copy runs. The HAL's queue order gives
    /// that, as it does for compiled dispatches, which write these bytes through raw pointers.
    pub unsafe fn copy_ordered(
        source: &ByteBuffer,
        source_offset: i64,
        target: &ByteBuffer,
        target_offset: i64,
        length: i64,
    ) -> Result<(), Diagnostic> {
        let from = source.view(source_offset, length, 1)?;
        let to = target.view_mut(target_offset, length, 1)?;
        let source = match from {
            View::Rodata(bytes) => bytes.as_ptr(),
            View::Owned(bytes) => bytes.as_ptr().cast::<u8>(),
        };
        // SAFETY: both ranges were bounds-checked above and the target is owned (writable)
        // memory; `copy` allows overlap; the caller rules out concurrent access.
        unsafe { std::ptr::copy(source, to.as_ptr().cast::<u8>().cast_mut(), to.len()) };
        Ok(())
    }

    /// Repeats the low `pattern_length` (1, 2, 4 or 8) bytes of `pattern`, little-endian, over
    /// `length` bytes from byte `offset`, as plain stores rather than atomic byte stores, for the
    /// HAL's fills: models zero their padded tensors between dispatches, and a byte at a time that
    /// took several percent of a call.
    ///
    /// # Safety
    /// Nothing else may access the range while the fill runs, as for [`ByteBuffer::copy_ordered`].
    pub unsafe fn fill_ordered(
        &self,
        offset: i64,
        length: i64,
        pattern: u64,
        pattern_length: usize,
    ) -> Result<(), Diagnostic> {
        let target = self.view_mut(offset, length, 1)?;
        check_fill(target.len(), pattern_length)?;
        // The pattern repeated over a word (8 is a multiple of each length), by one multiply
        // rather than byte by byte: most fills are a few bytes, and building a block a byte at a
        // time was most of their cost.
        let word = match pattern_length {
            1 => (pattern & 0xff) * 0x0101_0101_0101_0101,
            2 => (pattern & 0xffff) * 0x0001_0001_0001_0001,
            4 => (pattern & 0xffff_ffff) * 0x0000_0001_0000_0001,
            _ => pattern,
        };
        let start = target.as_ptr().cast::<u8>().cast_mut();
        if word == (word & 0xff) * 0x0101_0101_0101_0101 {
            // SAFETY: the range was bounds-checked above and is owned (writable) memory; the
            // caller rules out concurrent access.
            unsafe { std::ptr::write_bytes(start, word as u8, target.len()) };
            return Ok(());
        }
        // A block of whole patterns, stored a block at a time: a copy of constant size is a few
        // vector stores, where one of variable size is a call to `memcpy`.
        const BLOCK: usize = 64;
        let block = [word.to_le_bytes(); BLOCK / 8];
        let block = block.as_flattened();
        let whole = target.len() - target.len() % BLOCK;
        for at in (0..whole).step_by(BLOCK) {
            // SAFETY: `at + BLOCK <= whole`, within the checked range; as above otherwise.
            unsafe { std::ptr::copy_nonoverlapping(block.as_ptr(), start.add(at), BLOCK) };
        }
        // SAFETY: the tail ends at the range's end; as above otherwise.
        unsafe { std::ptr::copy_nonoverlapping(block.as_ptr(), start.add(whole), target.len() - whole) };
        Ok(())
    }

    /// Whether `length` bytes at both offsets are equal (`vm.buffer.compare`).
    pub fn compare(
        lhs: &ByteBuffer,
        lhs_offset: i64,
        rhs: &ByteBuffer,
        rhs_offset: i64,
        length: i64,
    ) -> Result<bool, Diagnostic> {
        let lhs = lhs.view(lhs_offset, length, 1)?;
        let rhs = rhs.view(rhs_offset, length, 1)?;
        let (mut a, mut b) = ([0u8; CHUNK], [0u8; CHUNK]);
        let mut at = 0;
        while at < lhs.len() {
            let n = CHUNK.min(lhs.len() - at);
            lhs.copy_into(at, &mut a[..n]);
            rhs.copy_into(at, &mut b[..n]);
            if a[..n] != b[..n] {
                return Ok(false);
            }
            at += n;
        }
        Ok(true)
    }

    /// SipHash-2-4 of `length` bytes with the key `00 01 … 0f` (`vm.buffer.hash`), the function and
    /// key IREE uses, returned as the signed reinterpretation of the 64-bit result.
    pub fn hash(&self, offset: i64, length: i64) -> Result<i64, Diagnostic> {
        let view = self.view(offset, length, 1)?;
        let len = view.len();
        let whole_words = len - len % 8;
        let mut sip = SipHash24::new(0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908);
        let mut chunk = [0u8; CHUNK];
        let mut at = 0;
        while at < whole_words {
            let n = CHUNK.min(whole_words - at);
            view.copy_into(at, &mut chunk[..n]);
            for word in chunk[..n].chunks_exact(8) {
                sip.compress(u64::from_le_bytes(<[u8; 8]>::try_from(word).unwrap_or_default()));
            }
            at += n;
        }
        let mut tail = [0u8; 8];
        view.copy_into(whole_words, &mut tail[..len - whole_words]);
        Ok(sip.finish(u64::from_le_bytes(tail) | ((len as u64) << 56)) as i64)
    }

    /// Sets `length` bytes starting at byte `offset` (`vm.buffer.fill.i8`).
    pub fn fill_i8(&self, offset: i64, length: i64, value: i8) -> Result<(), Diagnostic> {
        self.fill(offset, length, value.to_le_bytes())
    }

    /// Sets `length` i16 elements starting at element `offset` (`vm.buffer.fill.i16`).
    pub fn fill_i16(&self, offset: i64, length: i64, value: i16) -> Result<(), Diagnostic> {
        self.fill(offset, length, value.to_le_bytes())
    }

    pub fn fill_i32(&self, offset: i64, length: i64, value: i32) -> Result<(), Diagnostic> {
        self.fill(offset, length, value.to_le_bytes())
    }

    pub fn fill_i64(&self, offset: i64, length: i64, value: i64) -> Result<(), Diagnostic> {
        self.fill(offset, length, value.to_le_bytes())
    }

    pub fn fill_f32(&self, offset: i64, length: i64, value: f32) -> Result<(), Diagnostic> {
        self.fill(offset, length, value.to_le_bytes())
    }

    pub fn fill_f64(&self, offset: i64, length: i64, value: f64) -> Result<(), Diagnostic> {
        self.fill(offset, length, value.to_le_bytes())
    }

    /// Byte `offset`, zero-extended (`vm.buffer.load.i8.u`).
    pub fn load_i8_u(&self, offset: i64) -> Result<i32, Diagnostic> {
        self.load(offset).map(|b| i32::from(u8::from_le_bytes(b)))
    }

    /// Byte `offset`, sign-extended (`vm.buffer.load.i8.s`).
    pub fn load_i8_s(&self, offset: i64) -> Result<i32, Diagnostic> {
        self.load(offset).map(|b| i32::from(i8::from_le_bytes(b)))
    }

    /// i16 element `offset` (byte `2 * offset`), zero-extended (`vm.buffer.load.i16.u`).
    pub fn load_i16_u(&self, offset: i64) -> Result<i32, Diagnostic> {
        self.load(offset).map(|b| i32::from(u16::from_le_bytes(b)))
    }

    pub fn load_i16_s(&self, offset: i64) -> Result<i32, Diagnostic> {
        self.load(offset).map(|b| i32::from(i16::from_le_bytes(b)))
    }

    /// i32 element `offset` (byte `4 * offset`) (`vm.buffer.load.i32`).
    pub fn load_i32(&self, offset: i64) -> Result<i32, Diagnostic> {
        self.load(offset).map(i32::from_le_bytes)
    }

    pub fn load_i64(&self, offset: i64) -> Result<i64, Diagnostic> {
        self.load(offset).map(i64::from_le_bytes)
    }

    pub fn load_f32(&self, offset: i64) -> Result<f32, Diagnostic> {
        self.load(offset).map(f32::from_le_bytes)
    }

    pub fn load_f64(&self, offset: i64) -> Result<f64, Diagnostic> {
        self.load(offset).map(f64::from_le_bytes)
    }

    /// Stores at byte `offset` (`vm.buffer.store.i8`; the interpreter truncates the i32 register).
    pub fn store_i8(&self, offset: i64, value: i8) -> Result<(), Diagnostic> {
        self.store(offset, value.to_le_bytes())
    }

    /// Stores at i16 element `offset` (byte `2 * offset`).
    pub fn store_i16(&self, offset: i64, value: i16) -> Result<(), Diagnostic> {
        self.store(offset, value.to_le_bytes())
    }

    pub fn store_i32(&self, offset: i64, value: i32) -> Result<(), Diagnostic> {
        self.store(offset, value.to_le_bytes())
    }

    pub fn store_i64(&self, offset: i64, value: i64) -> Result<(), Diagnostic> {
        self.store(offset, value.to_le_bytes())
    }

    pub fn store_f32(&self, offset: i64, value: f32) -> Result<(), Diagnostic> {
        self.store(offset, value.to_le_bytes())
    }

    pub fn store_f64(&self, offset: i64, value: f64) -> Result<(), Diagnostic> {
        self.store(offset, value.to_le_bytes())
    }

    /// A copy of bytes `offset..offset + length`, for hosts reading results.
    pub fn read_bytes(&self, offset: usize, length: usize) -> Result<Vec<u8>, Diagnostic> {
        let mut out = vec![0u8; length];
        self.read_into(offset, &mut out)?;
        Ok(out)
    }

    /// Copies bytes `offset..offset + out.len()` into `out`: a read that allocates nothing.
    pub fn read_into(&self, offset: usize, out: &mut [u8]) -> Result<(), Diagnostic> {
        let (Ok(start), Ok(count)) = (i64::try_from(offset), i64::try_from(out.len())) else {
            return Err(self.out_of_bounds(offset as i128, out.len() as i128, 1));
        };
        self.view(start, count, 1)?.copy_into(0, out);
        Ok(())
    }

    /// A copy of the whole buffer.
    pub fn to_vec(&self) -> Vec<u8> {
        self.read_bytes(0, self.len()).unwrap_or_default()
    }

    /// The interpreter's hot path: owned storage and an in-range offset take no detour through
    /// the general range check.
    #[inline]
    fn load<const N: usize>(&self, offset: i64) -> Result<[u8; N], Diagnostic> {
        if let Some(source) = self.owned_element::<N>(offset) {
            let mut bytes = [0u8; N];
            for (dst, src) in bytes.iter_mut().zip(source) {
                *dst = src.load(Ordering::Relaxed);
            }
            return Ok(bytes);
        }
        if let Storage::Rodata { module, range } = &self.storage {
            let source = element::<N>(offset, range).and_then(|at| module.bytes().get(at));
            if let Some(Ok(bytes)) = source.map(<[u8; N]>::try_from) {
                return Ok(bytes);
            }
        }
        let view = self.view(offset, 1, N)?;
        let mut bytes = [0u8; N];
        view.copy_into(0, &mut bytes);
        Ok(bytes)
    }

    #[inline]
    fn store<const N: usize>(&self, offset: i64, value: [u8; N]) -> Result<(), Diagnostic> {
        let target = match self.owned_element::<N>(offset) {
            Some(target) => target,
            None => self.view_mut(offset, 1, N)?,
        };
        for (dst, byte) in target.iter().zip(value) {
            dst.store(byte, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Element `offset` of an owned buffer, if in range.
    #[inline]
    fn owned_element<const N: usize>(&self, offset: i64) -> Option<&[AtomicU8]> {
        match &self.storage {
            Storage::Owned { memory, range } => memory.bytes().get(element::<N>(offset, range)?),
            Storage::Rodata { .. } => None,
        }
    }

    fn fill<const N: usize>(&self, offset: i64, count: i64, value: [u8; N]) -> Result<(), Diagnostic> {
        let target = self.view_mut(offset, count, N)?;
        for element in target.chunks_exact(N) {
            for (dst, &byte) in element.iter().zip(&value) {
                dst.store(byte, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// Elements `offset..offset + count` of `element_size` bytes, for reading.
    fn view(&self, offset: i64, count: i64, element_size: usize) -> Result<View<'_>, Diagnostic> {
        let range = self.range(offset, count, element_size)?;
        let view = match &self.storage {
            Storage::Rodata { module, range: segment } => {
                module.bytes().get(segment.clone()).and_then(|bytes| bytes.get(range)).map(View::Rodata)
            }
            Storage::Owned { .. } => self.owned_bytes().and_then(|bytes| bytes.get(range)).map(View::Owned),
        };
        view.ok_or_else(|| self.element_out_of_bounds(offset, count, element_size))
    }

    /// Elements `offset..offset + count` of `element_size` bytes, for writing.
    fn view_mut(&self, offset: i64, count: i64, element_size: usize) -> Result<&[AtomicU8], Diagnostic> {
        let Some(bytes) = self.owned_bytes() else {
            return Err(Diagnostic::new(
                StatusCode::PermissionDenied,
                "buffer is read-only and cannot be mapped for mutation",
            ));
        };
        let range = self.range(offset, count, element_size)?;
        bytes.get(range).ok_or_else(|| self.element_out_of_bounds(offset, count, element_size))
    }

    fn range(&self, offset: i64, count: i64, element_size: usize) -> Result<Range<usize>, Diagnostic> {
        let start = usize::try_from(offset).ok().and_then(|offset| offset.checked_mul(element_size));
        let length = usize::try_from(count).ok().and_then(|count| count.checked_mul(element_size));
        match (start, length) {
            (Some(start), Some(length)) if start <= self.len() && length <= self.len() - start => {
                Ok(start..start + length)
            }
            _ => Err(self.element_out_of_bounds(offset, count, element_size)),
        }
    }

    #[cold]
    fn element_out_of_bounds(&self, offset: i64, count: i64, element_size: usize) -> Diagnostic {
        let size = element_size as i128;
        self.out_of_bounds(i128::from(offset) * size, i128::from(count) * size, element_size)
    }

    /// IREE's message, in bytes; `alignment` is the element size.
    #[cold]
    fn out_of_bounds(&self, offset: i128, length: i128, alignment: usize) -> Diagnostic {
        Diagnostic::new(
            StatusCode::OutOfRange,
            format!(
                "out-of-bounds access detected (offset={offset}, length={length}, alignment={alignment}, buffer length={})",
                self.len()
            ),
        )
    }
}

impl fmt::Debug for ByteBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.is_mutable() { "mutable" } else { "rodata" };
        write!(f, "vm.buffer({kind}, {} bytes)", self.len())
    }
}

/// Whether `length` bytes can be filled with a pattern of `pattern_length` bytes
/// ([`ByteBuffer::fill_ordered`]): checked before a fill is cut into pieces too, so that a bad one
/// fails before any piece is stored.
pub fn check_fill(length: usize, pattern_length: usize) -> Result<(), Diagnostic> {
    if !matches!(pattern_length, 1 | 2 | 4 | 8) {
        return Err(Diagnostic::new(
            StatusCode::InvalidArgument,
            format!("fill pattern of {pattern_length} bytes (1, 2, 4 or 8 are allowed)"),
        ));
    }
    if !length.is_multiple_of(pattern_length) {
        return Err(Diagnostic::new(
            StatusCode::InvalidArgument,
            format!("fill length {length} is not a multiple of the {pattern_length}-byte pattern"),
        ));
    }
    Ok(())
}

fn check_alignment(alignment: i32) -> Result<(), Diagnostic> {
    if alignment == 0 || (alignment > 0 && (alignment as u32).is_power_of_two()) {
        Ok(())
    } else {
        Err(Diagnostic::new(StatusCode::InvalidArgument, format!("alignments must be powers of two (got {alignment})")))
    }
}

/// Largest buffer `vm.buffer.alloc`/`vm.buffer.clone` create. IREE has no limit; without one a
/// module could make the host zero-fill gigabytes with one instruction. Tensors live in HAL
/// buffers, not here, so 1 GiB leaves compiled programs ample room.
pub const MAX_BUFFER_LENGTH: usize = 1 << 30;

/// Copies `from` into `to` (equal lengths) through a stack chunk. `backward` walks from the end,
/// which keeps an overlapping copy to a higher address correct.
fn copy_view(from: &View<'_>, to: &[AtomicU8], backward: bool) {
    let mut chunk = [0u8; CHUNK];
    let len = from.len().min(to.len());
    let starts = (0..len).step_by(CHUNK);
    let mut copy_at = |at: usize| {
        let n = CHUNK.min(len - at);
        from.copy_into(at, &mut chunk[..n]);
        for (dst, &byte) in to.get(at..at + n).unwrap_or_default().iter().zip(&chunk[..n]) {
            dst.store(byte, Ordering::Relaxed);
        }
    };
    if backward {
        starts.rev().for_each(&mut copy_at);
    } else {
        starts.for_each(&mut copy_at);
    }
}

/// SipHash-2-4 (Aumasson and Bernstein), over whole little-endian words.
struct SipHash24 {
    v: [u64; 4],
}

impl SipHash24 {
    fn new(k0: u64, k1: u64) -> SipHash24 {
        SipHash24 {
            v: [
                k0 ^ 0x736f_6d65_7073_6575,
                k1 ^ 0x646f_7261_6e64_6f6d,
                k0 ^ 0x6c79_6765_6e65_7261,
                k1 ^ 0x7465_6462_7974_6573,
            ],
        }
    }

    fn round(&mut self) {
        let [v0, v1, v2, v3] = &mut self.v;
        *v0 = v0.wrapping_add(*v1);
        *v1 = v1.rotate_left(13) ^ *v0;
        *v0 = v0.rotate_left(32);
        *v2 = v2.wrapping_add(*v3);
        *v3 = v3.rotate_left(16) ^ *v2;
        *v0 = v0.wrapping_add(*v3);
        *v3 = v3.rotate_left(21) ^ *v0;
        *v2 = v2.wrapping_add(*v1);
        *v1 = v1.rotate_left(17) ^ *v2;
        *v2 = v2.rotate_left(32);
    }

    fn compress(&mut self, word: u64) {
        self.v[3] ^= word;
        self.round();
        self.round();
        self.v[0] ^= word;
    }

    /// `last` is the final word: the trailing bytes with the total length in its top byte.
    fn finish(mut self, last: u64) -> u64 {
        self.compress(last);
        self.v[2] ^= 0xff;
        for _ in 0..4 {
            self.round();
        }
        self.v.iter().fold(0, |hash, v| hash ^ v)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn code(result: Result<impl fmt::Debug, Diagnostic>) -> StatusCode {
        result.expect_err("expected an error").code
    }

    fn message(result: Result<impl fmt::Debug, Diagnostic>) -> String {
        result.expect_err("expected an error").message
    }

    /// `abs_vmvx.vmfb` rodata segment 3 holds `vmvx-bytecode-fb`.
    fn rodata_buffer() -> Arc<ByteBuffer> {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/vm/loader/abs_vmvx.vmfb");
        let module = Arc::new(Module::load_file(path).unwrap());
        ByteBuffer::rodata(module, 3).unwrap()
    }

    #[test]
    fn buffers_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<ByteBuffer>();
    }

    #[test]
    fn allocate_gives_zeroed_mutable_bytes() {
        let buffer = ByteBuffer::allocate(None, 10, 16).unwrap();
        assert_eq!(buffer.len(), 10);
        assert!(!buffer.is_empty());
        assert!(buffer.is_mutable());
        assert_eq!(buffer.to_vec(), vec![0; 10]);
        assert_eq!(format!("{buffer:?}"), "vm.buffer(mutable, 10 bytes)");
        assert!(ByteBuffer::allocate(None, 0, 0).unwrap().is_empty());
    }

    /// Buffers on both sides of a huge page (where the system allocator maps them on their own)
    /// are zeroed, aligned, writable to the last byte, and their spans outlive the buffer they
    /// came from.
    #[test]
    fn large_buffers_are_zeroed_aligned_and_outlive_their_spans() {
        const HUGE_PAGE: usize = 2 << 20;
        for length in [HUGE_PAGE - 64, HUGE_PAGE, 3 * HUGE_PAGE + 7] {
            let buffer = ByteBuffer::allocate(None, length as i64, 64).unwrap();
            assert_eq!(buffer.len(), length);
            assert_eq!(buffer.as_ptr() as usize % 64, 0, "{length} bytes");
            assert!(buffer.to_vec().iter().all(|&b| b == 0), "{length} bytes");
            buffer.store_i32(0, 7).unwrap();
            buffer.fill_i8(length as i64 - 3, 3, -1).unwrap();
            let tail = buffer.span(length - 4, 4).unwrap();
            drop(buffer);
            assert_eq!(tail.to_vec(), [0, 0xff, 0xff, 0xff]);
        }
    }

    #[test]
    fn allocate_rejects_bad_lengths_and_alignments() {
        assert_eq!(message(ByteBuffer::allocate(None, 8, 3)), "alignments must be powers of two (got 3)");
        assert_eq!(code(ByteBuffer::allocate(None, 8, -4)), StatusCode::InvalidArgument);
        assert_eq!(message(ByteBuffer::allocate(None, -1, 8)), "buffer length -1 is negative");
        assert_eq!(code(ByteBuffer::allocate(None, i64::MAX, 8)), StatusCode::ResourceExhausted);
    }

    #[test]
    fn typed_offsets_are_in_elements_and_little_endian() {
        let buffer = ByteBuffer::allocate(None, 16, 0).unwrap();
        buffer.store_i32(1, 0x0403_0201).unwrap();
        assert_eq!(buffer.read_bytes(4, 4).unwrap(), [1, 2, 3, 4]);
        buffer.store_i16(1, -2).unwrap();
        assert_eq!(buffer.read_bytes(2, 2).unwrap(), [0xfe, 0xff]);
        buffer.store_i8(1, 0x7f).unwrap();
        buffer.store_i64(1, -3).unwrap();
        assert_eq!(buffer.load_i64(1).unwrap(), -3);
        assert_eq!(buffer.load_i8_u(1).unwrap(), 0x7f);
        assert_eq!(buffer.load_i16_s(1).unwrap(), -2);
        assert_eq!(buffer.load_i16_u(1).unwrap(), 0xfffe);
        assert_eq!(buffer.load_i32(1).unwrap(), 0x0403_0201);
        buffer.store_f32(3, 1.5).unwrap();
        assert_eq!(buffer.load_f32(3).unwrap(), 1.5);
        buffer.store_f64(1, -0.25).unwrap();
        assert_eq!(buffer.load_f64(1).unwrap(), -0.25);
        assert_eq!(buffer.read_bytes(8, 8).unwrap(), (-0.25f64).to_le_bytes());
    }

    #[test]
    fn byte_loads_extend_by_signedness() {
        let buffer = ByteBuffer::from_bytes(&[0x80, 0xff]).unwrap();
        assert_eq!(buffer.load_i8_u(0).unwrap(), 0x80);
        assert_eq!(buffer.load_i8_s(0).unwrap(), -128);
        assert_eq!(buffer.load_i16_u(0).unwrap(), 0xff80);
        assert_eq!(buffer.load_i16_s(0).unwrap(), -128);
    }

    #[test]
    fn out_of_bounds_access_reports_bytes_like_iree() {
        let buffer = ByteBuffer::allocate(None, 10, 0).unwrap();
        assert_eq!(
            message(buffer.load_i32(2)),
            "out-of-bounds access detected (offset=8, length=4, alignment=4, buffer length=10)"
        );
        assert_eq!(code(buffer.load_i32(2)), StatusCode::OutOfRange);
        assert_eq!(code(buffer.store_i64(1, 0)), StatusCode::OutOfRange);
        assert_eq!(code(buffer.load_i8_u(10)), StatusCode::OutOfRange);
        assert_eq!(code(buffer.load_i8_s(-1)), StatusCode::OutOfRange);
        assert_eq!(code(buffer.load_i16_u(5)), StatusCode::OutOfRange);
        assert_eq!(code(buffer.load_i16_s(5)), StatusCode::OutOfRange);
        assert_eq!(code(buffer.load_i64(i64::MAX)), StatusCode::OutOfRange);
        assert_eq!(code(buffer.load_f32(3)), StatusCode::OutOfRange);
        assert_eq!(code(buffer.load_f64(2)), StatusCode::OutOfRange);
        assert_eq!(code(buffer.store_i8(10, 0)), StatusCode::OutOfRange);
        assert_eq!(code(buffer.store_i16(i64::MIN, 0)), StatusCode::OutOfRange);
        assert_eq!(code(buffer.store_i32(3, 0)), StatusCode::OutOfRange);
        assert_eq!(code(buffer.store_f32(-1, 0.0)), StatusCode::OutOfRange);
        assert_eq!(code(buffer.store_f64(2, 0.0)), StatusCode::OutOfRange);
        assert_eq!(
            message(buffer.store_i32(-1, 0)),
            "out-of-bounds access detected (offset=-4, length=4, alignment=4, buffer length=10)"
        );
        assert_eq!(code(buffer.read_bytes(8, 3)), StatusCode::OutOfRange);
        assert_eq!(code(buffer.read_bytes(usize::MAX, 1)), StatusCode::OutOfRange);
        assert_eq!(buffer.to_vec(), vec![0; 10], "failed stores wrote nothing");
    }

    #[test]
    fn fill_counts_elements_and_checks_the_range() {
        let buffer = ByteBuffer::allocate(None, 16, 0).unwrap();
        buffer.fill_i8(1, 2, -1).unwrap();
        assert_eq!(buffer.read_bytes(0, 4).unwrap(), [0, 0xff, 0xff, 0]);
        buffer.fill_i16(2, 2, 0x0102).unwrap();
        assert_eq!(buffer.read_bytes(4, 4).unwrap(), [2, 1, 2, 1]);
        buffer.fill_i32(2, 1, 7).unwrap();
        assert_eq!(buffer.load_i32(2).unwrap(), 7);
        buffer.fill_i64(1, 1, -9).unwrap();
        assert_eq!(buffer.load_i64(1).unwrap(), -9);
        buffer.fill_f32(0, 2, 2.0).unwrap();
        assert_eq!((buffer.load_f32(0).unwrap(), buffer.load_f32(1).unwrap()), (2.0, 2.0));
        buffer.fill_f64(0, 2, 0.5).unwrap();
        assert_eq!(buffer.load_f64(1).unwrap(), 0.5);
        buffer.fill_i32(4, 0, 1).unwrap();
        assert_eq!(
            message(buffer.fill_i32(2, 3, 0)),
            "out-of-bounds access detected (offset=8, length=12, alignment=4, buffer length=16)"
        );
        assert_eq!(code(buffer.fill_i8(0, -1, 0)), StatusCode::OutOfRange);
        assert_eq!(code(buffer.fill_i16(0, 9, 0)), StatusCode::OutOfRange);
        assert_eq!(code(buffer.fill_i64(i64::MAX, i64::MAX, 0)), StatusCode::OutOfRange);
        assert_eq!(code(buffer.fill_f32(4, 1, 0.0)), StatusCode::OutOfRange);
        assert_eq!(code(buffer.fill_f64(0, 3, 0.0)), StatusCode::OutOfRange);
    }

    #[test]
    fn rodata_is_a_read_only_view_of_the_module() {
        let buffer = rodata_buffer();
        assert_eq!(buffer.to_vec(), b"vmvx-bytecode-fb");
        assert!(!buffer.is_mutable());
        assert_eq!(format!("{buffer:?}"), "vm.buffer(rodata, 16 bytes)");
        assert_eq!(buffer.load_i8_u(0).unwrap(), i32::from(b'v'));
        assert_eq!(buffer.load_i32(1).unwrap(), i32::from_le_bytes(*b"-byt"));
        let denied = "buffer is read-only and cannot be mapped for mutation";
        assert_eq!(message(buffer.store_i8(0, 0)), denied);
        assert_eq!(code(buffer.store_i16(0, 0)), StatusCode::PermissionDenied);
        assert_eq!(code(buffer.store_i32(0, 0)), StatusCode::PermissionDenied);
        assert_eq!(code(buffer.store_i64(0, 0)), StatusCode::PermissionDenied);
        assert_eq!(code(buffer.store_f32(0, 0.0)), StatusCode::PermissionDenied);
        assert_eq!(code(buffer.store_f64(0, 0.0)), StatusCode::PermissionDenied);
        assert_eq!(code(buffer.fill_i8(0, 1, 0)), StatusCode::PermissionDenied);
        // Permission is checked before the range, as in IREE.
        assert_eq!(code(buffer.store_i32(100, 0)), StatusCode::PermissionDenied);
        let source = ByteBuffer::from_bytes(b"xy").unwrap();
        assert_eq!(code(ByteBuffer::copy(&source, 0, &buffer, 0, 2)), StatusCode::PermissionDenied);
        assert_eq!(buffer.to_vec(), b"vmvx-bytecode-fb");
        assert_eq!(code(buffer.load_i64(2)), StatusCode::OutOfRange);
    }

    #[test]
    fn rodata_ordinal_must_exist() {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/vm/loader/abs_vmvx.vmfb");
        let module = Arc::new(Module::load_file(path).unwrap());
        let count = module.rodata_segment_count();
        let error = ByteBuffer::rodata(module, count).unwrap_err();
        assert_eq!(error.code, StatusCode::OutOfRange);
        assert_eq!(error.message, format!("rodata segment {count} out of range (module has {count})"));
    }

    #[test]
    fn clone_range_copies_into_a_new_mutable_buffer() {
        let source = rodata_buffer();
        let clone = source.clone_range(None, 5, 8, 64).unwrap();
        assert!(clone.is_mutable());
        assert_eq!(clone.to_vec(), b"bytecode");
        clone.store_i8(0, b'B' as i8).unwrap();
        assert_eq!(source.to_vec(), b"vmvx-bytecode-fb");
        assert!(source.clone_range(None, 16, 0, 0).unwrap().is_empty());
        assert_eq!(
            message(source.clone_range(None, 10, 7, 8)),
            "out-of-bounds access detected (offset=10, length=7, alignment=1, buffer length=16)"
        );
        assert_eq!(code(source.clone_range(None, 0, -1, 8)), StatusCode::OutOfRange);
        // The source range is checked first, then the alignment.
        assert_eq!(code(source.clone_range(None, 10, 7, 3)), StatusCode::OutOfRange);
        assert_eq!(message(source.clone_range(None, 0, 1, 3)), "alignments must be powers of two (got 3)");
    }

    #[test]
    fn copy_moves_bytes_between_and_within_buffers() {
        let pattern: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        let source = ByteBuffer::from_bytes(&pattern).unwrap();
        let target = ByteBuffer::allocate(None, 1000, 0).unwrap();
        ByteBuffer::copy(&source, 100, &target, 10, 700).unwrap();
        assert_eq!(target.read_bytes(10, 700).unwrap(), pattern[100..800]);
        assert_eq!(target.read_bytes(0, 10).unwrap(), [0; 10]);

        // Overlapping copies behave like memmove in both directions, across chunk boundaries.
        let up = ByteBuffer::from_bytes(&pattern).unwrap();
        ByteBuffer::copy(&up, 0, &up, 300, 600).unwrap();
        assert_eq!(up.read_bytes(300, 600).unwrap(), pattern[..600]);
        assert_eq!(up.read_bytes(0, 300).unwrap(), pattern[..300]);
        let down = ByteBuffer::from_bytes(&pattern).unwrap();
        ByteBuffer::copy(&down, 300, &down, 1, 600).unwrap();
        assert_eq!(down.read_bytes(1, 600).unwrap(), pattern[300..900]);

        ByteBuffer::copy(&source, 1000, &target, 1000, 0).unwrap();
        assert_eq!(
            message(ByteBuffer::copy(&source, 900, &target, 0, 101)),
            "out-of-bounds access detected (offset=900, length=101, alignment=1, buffer length=1000)"
        );
        assert_eq!(code(ByteBuffer::copy(&source, 0, &target, 950, 51)), StatusCode::OutOfRange);
        assert_eq!(code(ByteBuffer::copy(&source, -1, &target, 0, 1)), StatusCode::OutOfRange);
        assert_eq!(code(ByteBuffer::copy(&source, 0, &target, 0, -1)), StatusCode::OutOfRange);
    }

    #[test]
    fn compare_reports_equality_of_ranges() {
        let pattern: Vec<u8> = (0..=255u8).cycle().take(600).collect();
        let a = ByteBuffer::from_bytes(&pattern).unwrap();
        let b = ByteBuffer::from_bytes(&pattern).unwrap();
        assert!(ByteBuffer::compare(&a, 0, &b, 0, 600).unwrap());
        assert!(ByteBuffer::compare(&a, 0, &b, 256, 300).unwrap());
        b.store_i8(599, 0).unwrap();
        assert!(!ByteBuffer::compare(&a, 0, &b, 0, 600).unwrap());
        assert!(ByteBuffer::compare(&a, 0, &b, 0, 599).unwrap());
        assert!(ByteBuffer::compare(&a, 5, &rodata_buffer(), 0, 0).unwrap());
        assert_eq!(code(ByteBuffer::compare(&a, 0, &b, 1, 600)), StatusCode::OutOfRange);
        assert_eq!(code(ByteBuffer::compare(&a, 1, &b, 0, 600)), StatusCode::OutOfRange);
        assert_eq!(code(ByteBuffer::compare(&a, 0, &b, 0, -2)), StatusCode::OutOfRange);
    }

    #[test]
    fn hash_is_siphash_2_4_keyed_like_iree() {
        // Reference vectors for key 00..0f and message 00..len-1.
        let message: Vec<u8> = (0..=255u8).cycle().take(700).collect();
        let buffer = ByteBuffer::from_bytes(&message).unwrap();
        assert_eq!(buffer.hash(0, 0).unwrap() as u64, 0x726f_db47_dd0e_0e31);
        assert_eq!(buffer.hash(0, 8).unwrap() as u64, 0x93f5_f579_9a93_2462);
        for len in [1, 7, 8, 9, 15, 63, 64, 255, 256, 257, 300, 700] {
            #[allow(deprecated)]
            let mut reference = std::hash::SipHasher::new_with_keys(0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908);
            std::hash::Hasher::write(&mut reference, &message[..len]);
            assert_eq!(buffer.hash(0, len as i64).unwrap() as u64, std::hash::Hasher::finish(&reference), "len {len}");
        }
        assert_eq!(buffer.hash(3, 5).unwrap(), ByteBuffer::from_bytes(&message[3..8]).unwrap().hash(0, 5).unwrap());
        assert_eq!(
            rodata_buffer().hash(0, 16).unwrap(),
            ByteBuffer::from_bytes(b"vmvx-bytecode-fb").unwrap().hash(0, 16).unwrap()
        );
        assert_eq!(code(buffer.hash(0, 701)), StatusCode::OutOfRange);
        assert_eq!(code(buffer.hash(-1, 1)), StatusCode::OutOfRange);
    }

    #[test]
    fn threads_store_and_load_disjoint_offsets_of_one_buffer() {
        const THREADS: i64 = 8;
        const PER_THREAD: i64 = 1000;
        let buffer = ByteBuffer::allocate(None, THREADS * PER_THREAD * 4, 4).unwrap();
        std::thread::scope(|scope| {
            for t in 0..THREADS {
                let buffer = Arc::clone(&buffer);
                scope.spawn(move || {
                    for round in 0..20 {
                        // Interleaved elements, so neighbours in memory belong to other threads.
                        for i in 0..PER_THREAD {
                            let index = i * THREADS + t;
                            buffer.store_i32(index, (index * 31 + round) as i32).unwrap();
                            assert_eq!(buffer.load_i32(index).unwrap(), (index * 31 + round) as i32);
                        }
                    }
                });
            }
        });
        for index in 0..THREADS * PER_THREAD {
            assert_eq!(buffer.load_i32(index).unwrap(), (index * 31 + 19) as i32);
        }
    }

    #[test]
    fn spans_share_memory_and_stay_in_bounds() {
        let whole = ByteBuffer::allocate(None, 200, 0).unwrap();
        assert_eq!(whole.as_ptr() as usize % 64, 0, "owned memory is 64-byte aligned");
        let span = whole.span(8, 16).unwrap();
        assert_eq!(span.len(), 16);
        span.store_i32(1, 0x1234_5678).unwrap();
        assert_eq!(whole.load_i32(3).unwrap(), 0x1234_5678, "a span writes its parent's bytes");
        assert_eq!(span.as_ptr() as usize, whole.as_ptr() as usize + 8);
        assert_eq!(code(span.store_i32(4, 0)), StatusCode::OutOfRange, "a span's length bounds it");
        assert_eq!(code(span.span(8, 9)), StatusCode::OutOfRange);
        assert_eq!(code(whole.span(usize::MAX, 2)), StatusCode::OutOfRange);
        assert!(whole.span(200, 0).unwrap().is_empty());
    }

    #[test]
    fn copies_between_overlapping_spans_behave_like_memmove() {
        let whole = ByteBuffer::from_bytes(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]).unwrap();
        let (low, high) = (whole.span(0, 8).unwrap(), whole.span(2, 8).unwrap());
        ByteBuffer::copy(&low, 0, &high, 0, 8).unwrap();
        assert_eq!(whole.to_vec(), [0, 1, 0, 1, 2, 3, 4, 5, 6, 7]);
        ByteBuffer::copy(&high, 0, &low, 0, 8).unwrap();
        assert_eq!(whole.to_vec(), [0, 1, 2, 3, 4, 5, 6, 7, 6, 7]);
    }

    #[test]
    fn ordered_fills_repeat_the_pattern_and_check_ranges() {
        let buffer = ByteBuffer::from_bytes(&[0xEE; 203]).unwrap();
        let mut expected = vec![0xEE; 203];
        // SAFETY: this thread alone touches the buffer.
        unsafe {
            // Patterns longer and shorter than the 64-byte blocks, at unaligned offsets.
            buffer.fill_ordered(1, 200, 0x0102_0304_0506_0708, 8).unwrap();
            expected[1..201].copy_from_slice(&[8, 7, 6, 5, 4, 3, 2, 1].repeat(25));
            assert_eq!(buffer.to_vec(), expected);
            buffer.fill_ordered(3, 132, 0xA5A5_0102, 4).unwrap();
            expected[3..135].copy_from_slice(&[2, 1, 0xA5, 0xA5].repeat(33));
            assert_eq!(buffer.to_vec(), expected);
            buffer.fill_ordered(2, 6, 0x7F7F, 2).unwrap();
            expected[2..8].fill(0x7F);
            assert_eq!(buffer.to_vec(), expected);
            buffer.fill_ordered(150, 53, 0xAB, 1).unwrap();
            expected[150..].fill(0xAB);
            assert_eq!(buffer.to_vec(), expected, "one repeated byte");

            let partial = buffer.fill_ordered(0, 6, 0x0102_0304, 4).unwrap_err();
            assert_eq!(partial.code, StatusCode::InvalidArgument);
            let pattern = buffer.fill_ordered(0, 6, 0x010203, 3).unwrap_err();
            assert_eq!(pattern.code, StatusCode::InvalidArgument);
            let past_end = buffer.fill_ordered(200, 4, 0, 1).unwrap_err();
            assert_eq!(past_end.code, StatusCode::OutOfRange);
            assert_eq!(buffer.to_vec(), expected, "nothing written by a failed fill");
            let read_only = rodata_buffer().fill_ordered(0, 8, 0, 1).unwrap_err();
            assert_eq!(read_only.code, StatusCode::PermissionDenied);
        }
    }

    #[test]
    fn ordered_fills_use_only_the_low_bytes_of_the_pattern_at_every_length() {
        // High bytes beyond the pattern's length are ignored; patterns whose bytes are all equal
        // take the one-byte path, the others the block path.
        for pattern in [0x8877_6655_4433_2211_u64, 0xffff_ffff_ffff_ff00, 0x0505_0505_0505_0505, 0] {
            for pattern_length in [1, 2, 4, 8] {
                let bytes = pattern.to_le_bytes();
                for (offset, length) in [(0, 0), (3, 8), (1, 64), (5, 200), (0, 1024), (7, 136)] {
                    let length = length / pattern_length * pattern_length;
                    let buffer = ByteBuffer::from_bytes(&[0xee; 1100]).unwrap();
                    // SAFETY: this thread alone touches this buffer.
                    unsafe { buffer.fill_ordered(offset, length as i64, pattern, pattern_length).unwrap() };
                    let offset = offset as usize;
                    let expected: Vec<u8> = (0..1100)
                        .map(|i| {
                            if (offset..offset + length).contains(&i) {
                                bytes[(i - offset) % pattern_length]
                            } else {
                                0xee
                            }
                        })
                        .collect();
                    assert_eq!(
                        buffer.to_vec(),
                        expected,
                        "{pattern:#x} length {pattern_length} over {length} at {offset}"
                    );
                }
            }
        }
    }

    #[test]
    fn ordered_copies_check_ranges_and_move_like_memmove() {
        let whole = ByteBuffer::from_bytes(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]).unwrap();
        let (low, high) = (whole.span(0, 8).unwrap(), whole.span(2, 8).unwrap());
        // SAFETY: this thread alone touches these buffers.
        unsafe {
            ByteBuffer::copy_ordered(&low, 0, &high, 0, 8).unwrap();
            assert_eq!(whole.to_vec(), [0, 1, 0, 1, 2, 3, 4, 5, 6, 7]);
            ByteBuffer::copy_ordered(&high, 0, &low, 0, 8).unwrap();
            assert_eq!(whole.to_vec(), [0, 1, 2, 3, 4, 5, 6, 7, 6, 7]);
            let error = ByteBuffer::copy_ordered(&low, 4, &high, 0, 5).unwrap_err();
            assert_eq!(error.code, StatusCode::OutOfRange);
            assert_eq!(whole.to_vec(), [0, 1, 2, 3, 4, 5, 6, 7, 6, 7], "nothing moved");
        }
    }
}
