//! The memory a loaded ELF lives in: one anonymous mapping reserved for the whole span of its
//! PT_LOAD segments, so that the distances between segments (which PC-relative code relies on)
//! are kept and a single `munmap` releases everything.
//!
//! The mapping starts writable and is only ever seen as a byte slice in that state
//! ([`WritableImage`]); [`WritableImage::protect`] consumes it and leaves a [`Mapping`] that
//! Rust code never reads again, since some of its pages end up unreadable or executable-only.

use std::io;
use std::ops::Range;
use std::ptr::NonNull;

use super::file::{Segment, PF_W, PF_X, PT_GNU_RELRO, PT_LOAD};
use super::ElfError;

/// Largest span of segments we agree to map: IREE executables are kilobytes to a few megabytes,
/// and a bound keeps a hostile `p_memsz` from reserving terabytes.
const MAX_IMAGE_SIZE: u64 = 1 << 30;

pub(super) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).ok().filter(|s| s.is_power_of_two()).unwrap_or(4096)
}

/// An anonymous private mapping, unmapped on drop.
pub(super) struct Mapping {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; nothing about it is tied to a thread.
unsafe impl Send for Mapping {}
// SAFETY: `Mapping` exposes no interior mutability; shared references only read its address.
unsafe impl Sync for Mapping {}

impl Mapping {
    pub fn address_range(&self) -> Range<usize> {
        let start = self.base.as_ptr() as usize;
        start..start + self.len
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base..base+len` is exactly the mapping created in `WritableImage::new`, and
        // nothing outlives `self` that points into it (ElfModule's users are bound by its lifetime).
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

/// The mapping while segments are copied in and relocated: readable and writable throughout.
pub(super) struct WritableImage {
    mapping: Mapping,
    /// The (page-aligned) virtual address that the start of the mapping stands for.
    min_vaddr: u64,
}

impl WritableImage {
    /// Maps the span of every PT_LOAD and copies each one's file contents in; the rest (bss and
    /// the gaps between segments) stays zero, as anonymous mappings start.
    pub fn new(bytes: &[u8], segments: &[Segment]) -> Result<Self, ElfError> {
        let page = page_size() as u64;
        let loads = || segments.iter().filter(|s| s.kind == PT_LOAD);
        let min_vaddr = loads().map(|s| s.vaddr).min().ok_or(ElfError::NoLoadableSegments)? & !(page - 1);
        let max_vaddr = loads().map(Segment::vaddr_end).max().unwrap_or(min_vaddr);
        let size = (max_vaddr - min_vaddr).checked_next_multiple_of(page).unwrap_or(u64::MAX);
        if size == 0 || size > MAX_IMAGE_SIZE {
            return Err(ElfError::ImageSize { size, limit: MAX_IMAGE_SIZE });
        }
        let len = size as usize;
        // SAFETY: a fresh anonymous private mapping; no existing memory is affected.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(ElfError::Os { what: "mmap of the executable image", source: io::Error::last_os_error() });
        }
        let base = NonNull::new(base.cast::<u8>()).expect("mmap never returns null on success");
        let mut image = WritableImage { mapping: Mapping { base, len }, min_vaddr };
        for segment in loads() {
            // Both ranges were bounds-checked at parse time and the span covers every segment.
            let source = &bytes[segment.file_offset as usize..][..segment.file_size as usize];
            let start = (segment.vaddr - min_vaddr) as usize;
            image.bytes_mut()[start..start + source.len()].copy_from_slice(source);
        }
        Ok(image)
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the whole mapping is readable and writable until `protect` consumes `self`, and
        // the returned borrow cannot outlive `self`.
        unsafe { std::slice::from_raw_parts(self.mapping.base.as_ptr(), self.mapping.len) }
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`; `&mut self` makes this the only view.
        unsafe { std::slice::from_raw_parts_mut(self.mapping.base.as_ptr(), self.mapping.len) }
    }

    /// Where virtual address 0 of the file lands in our address space (may wrap; only ever used
    /// with wrapping arithmetic, as relocations are defined modulo 2^64).
    pub fn load_bias(&self) -> u64 {
        (self.mapping.base.as_ptr() as u64).wrapping_sub(self.min_vaddr)
    }

    /// Offset into the image of `size` bytes at virtual address `vaddr`, or an error naming `what`.
    pub fn offset_of(&self, vaddr: u64, size: u64, what: &str) -> Result<usize, ElfError> {
        let len = self.mapping.len as u64;
        match vaddr.checked_sub(self.min_vaddr) {
            Some(offset) if offset.checked_add(size).is_some_and(|end| end <= len) => Ok(offset as usize),
            _ => Err(ElfError::OutOfBounds {
                what: format!("{what} at virtual address 0x{vaddr:x}"),
                offset: vaddr,
                size,
                limit: self.min_vaddr + len,
            }),
        }
    }

    /// Gives each page the access its segments ask for (read is implied by write or execute),
    /// removes write access from PT_GNU_RELRO ranges, and leaves pages no segment covers
    /// inaccessible. A page shared by a writable and an executable segment is refused rather than
    /// mapped writable and executable.
    pub fn protect(self, segments: &[Segment]) -> Result<Mapping, ElfError> {
        let page = page_size() as u64;
        let page_count = self.mapping.len / page as usize;
        let mut access = vec![libc::PROT_NONE; page_count];
        let mut owner = vec![None::<usize>; page_count];
        let pages_of = |start: u64, end: u64| {
            let first = ((start - self.min_vaddr) / page) as usize;
            let last = (end - self.min_vaddr).div_ceil(page) as usize;
            first..last
        };
        for segment in segments.iter().filter(|s| s.kind == PT_LOAD && s.memory_size > 0) {
            let mut wanted = libc::PROT_READ;
            if segment.flags & PF_W != 0 {
                wanted |= libc::PROT_WRITE;
            }
            if segment.flags & PF_X != 0 {
                wanted |= libc::PROT_EXEC;
            }
            for page_index in pages_of(segment.vaddr, segment.vaddr_end()) {
                let combined = access[page_index] | wanted;
                if combined & libc::PROT_WRITE != 0 && combined & libc::PROT_EXEC != 0 {
                    return Err(ElfError::WritableExecutablePage {
                        first: owner[page_index].unwrap_or(segment.index),
                        second: segment.index,
                        vaddr: self.min_vaddr + page_index as u64 * page,
                    });
                }
                access[page_index] = combined;
                owner[page_index] = Some(segment.index);
            }
        }
        for relro in segments.iter().filter(|s| s.kind == PT_GNU_RELRO && s.memory_size > 0) {
            // As glibc does: the range's first page is taken whole (linkers start RELRO at the
            // start of the writable data), its partial last page is not (it also holds data that
            // stays writable).
            let start = (relro.vaddr / page * page).max(self.min_vaddr);
            let end = (relro.vaddr_end() / page * page).min(self.min_vaddr + self.mapping.len as u64);
            if start < end {
                for page_index in pages_of(start, end) {
                    access[page_index] &= !libc::PROT_WRITE;
                }
            }
        }
        let base = self.mapping.base.as_ptr();
        let mut first = 0;
        while first < page_count {
            let run = access[first..].iter().take_while(|&&a| a == access[first]).count();
            // SAFETY: the range is whole pages inside our own mapping, which no Rust reference
            // views any more (`self` is consumed).
            let result =
                unsafe { libc::mprotect(base.add(first * page as usize).cast(), run * page as usize, access[first]) };
            if result != 0 {
                return Err(ElfError::Os { what: "mprotect of a loaded segment", source: io::Error::last_os_error() });
            }
            first += run;
        }
        Ok(self.mapping)
    }
}
