//! Where the bytes of an open BEF file live: a read-only mapping of the file, or a copy in a
//! buffer aligned as the format needs (for bytes that arrive unaligned, from stdin or memory).

use crate::format::FILE_ALIGNMENT;

/// The bytes of a BEF file at an address that is a multiple of [`FILE_ALIGNMENT`].
pub(crate) enum Storage {
    /// Page-aligned, so always aligned enough.
    Mapped(memmap2::Mmap),
    /// Held in `u64`s, whose alignment is the format's.
    Copied { words: Box<[u64]>, len: usize },
    /// A buffer handed over whose address happened to be aligned (the system allocator's
    /// usually are), kept rather than copied.
    Owned(Vec<u8>),
}

const _: () = assert!(std::mem::align_of::<u64>() == FILE_ALIGNMENT);

impl Storage {
    /// A copy of `bytes` in aligned memory.
    pub(crate) fn copy(bytes: &[u8]) -> Storage {
        let mut words = vec![0u64; bytes.len().div_ceil(8)].into_boxed_slice();
        for (word, chunk) in words.iter_mut().zip(bytes.chunks(8)) {
            let mut buf = [0u8; 8];
            buf[..chunk.len()].copy_from_slice(chunk);
            *word = u64::from_ne_bytes(buf);
        }
        Storage::Copied { words, len: bytes.len() }
    }

    /// `bytes` kept where they are aligned, else copied.
    pub(crate) fn take(mut bytes: Vec<u8>) -> Storage {
        bytes.shrink_to_fit();
        if (bytes.as_ptr() as usize).is_multiple_of(FILE_ALIGNMENT) {
            Storage::Owned(bytes)
        } else {
            Storage::copy(&bytes)
        }
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Storage::Mapped(map) => map,
            Storage::Owned(bytes) => bytes,
            Storage::Copied { words, len } => {
                // SAFETY: `words` owns `words.len() * 8 >= len` initialised bytes; any byte
                // pattern is a valid `u8`, and the borrow is tied to `self`.
                unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), *len) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_is_aligned_and_holds_the_same_bytes() {
        let source: Vec<u8> = (0..21).collect();
        for start in 0..4 {
            let storage = Storage::copy(&source[start..]);
            assert_eq!(storage.bytes(), &source[start..]);
            assert_eq!(storage.bytes().as_ptr() as usize % FILE_ALIGNMENT, 0);
        }
        assert!(Storage::copy(&[]).bytes().is_empty());
    }

    #[test]
    fn a_taken_buffer_is_kept_when_aligned_and_copied_when_not() {
        let source: Vec<u8> = (0..64).collect();
        for start in 0..4 {
            let bytes = source[start..].to_vec();
            let address = bytes.as_ptr() as usize;
            let storage = Storage::take(bytes);
            assert_eq!(storage.bytes(), &source[start..]);
            assert_eq!(storage.bytes().as_ptr() as usize % FILE_ALIGNMENT, 0);
            assert_eq!(matches!(storage, Storage::Owned(_)), address.is_multiple_of(FILE_ALIGNMENT));
        }
    }
}
