//! A kernel record, read in place: little-endian `u32` words.
//!
//! `code, location, #arguments, #attributes, #functions, #results`, one user count per result,
//! then the argument registers, attribute offsets, function indices, result registers, and the
//! users of each result (kernel ids), result by result. The kernel layer reads it (a frame's
//! attributes are offsets into the program's attributes section, as TFRT's frames hold them);
//! the BEF writer lays it out and the reader verifies it.

/// Words before a kernel record's per-result user counts: code, location, argument,
/// attribute, function and result counts.
pub const KERNEL_HEADER_WORDS: usize = 6;

/// A run of little-endian `u32` words.
#[derive(Clone, Copy, Debug)]
pub struct Words<'a>(&'a [u8]);

impl<'a> Words<'a> {
    pub fn new(bytes: &'a [u8]) -> Words<'a> {
        Words(&bytes[..bytes.len() / 4 * 4])
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.0.len() / 4
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Word `i`; the record was verified at open, so indices the executor uses are in range.
    #[inline]
    pub fn get(&self, i: usize) -> u32 {
        let bytes = &self.0[i * 4..i * 4 + 4];
        u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
    }

    /// Words `start..start + len`.
    #[inline]
    pub fn slice(&self, start: usize, len: usize) -> Words<'a> {
        Words(&self.0[start * 4..(start + len) * 4])
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = u32> + 'a {
        self.0.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// One kernel of a function body.
#[derive(Clone, Copy, Debug)]
pub struct KernelRecord<'a> {
    words: Words<'a>,
}

impl<'a> KernelRecord<'a> {
    /// The record starting at `words`; `None` when its header or body runs past the end.
    pub fn parse(words: Words<'a>) -> Option<KernelRecord<'a>> {
        if words.len() < KERNEL_HEADER_WORDS {
            return None;
        }
        let record = KernelRecord { words };
        let results = record.num_results();
        if words.len() < KERNEL_HEADER_WORDS + results {
            return None;
        }
        let users: u64 = (0..results).map(|i| u64::from(words.get(KERNEL_HEADER_WORDS + i))).sum();
        let total = KERNEL_HEADER_WORDS as u64
            + 2 * results as u64
            + record.num_arguments() as u64
            + record.num_attributes() as u64
            + record.num_functions() as u64
            + users;
        (total <= words.len() as u64).then(|| KernelRecord { words: words.slice(0, total as usize) })
    }

    /// The record that is exactly `words`, as [`parse`](Self::parse) found it when the file was
    /// opened: the executor's hot path skips finding its end again.
    #[inline]
    pub fn verified(words: Words<'a>) -> KernelRecord<'a> {
        KernelRecord { words }
    }

    /// The record's byte offset in `file`, the bytes it was read from.
    pub fn offset_in(&self, file: &[u8]) -> usize {
        (self.words.0.as_ptr() as usize).wrapping_sub(file.as_ptr() as usize)
    }

    /// Words the record takes.
    pub fn len_words(&self) -> usize {
        self.words.len()
    }

    #[inline]
    pub fn code(&self) -> u32 {
        self.words.get(0)
    }

    /// Offset of the kernel's location in the locations section.
    #[inline]
    pub fn location(&self) -> u32 {
        self.words.get(1)
    }

    #[inline]
    pub fn num_arguments(&self) -> usize {
        self.words.get(2) as usize
    }

    #[inline]
    pub fn num_attributes(&self) -> usize {
        self.words.get(3) as usize
    }

    #[inline]
    pub fn num_functions(&self) -> usize {
        self.words.get(4) as usize
    }

    #[inline]
    pub fn num_results(&self) -> usize {
        self.words.get(5) as usize
    }

    #[inline]
    fn body(&self) -> usize {
        KERNEL_HEADER_WORDS + self.num_results()
    }

    /// The registers the arguments come from.
    #[inline]
    pub fn arguments(&self) -> Words<'a> {
        self.words.slice(self.body(), self.num_arguments())
    }

    /// Offsets of the attributes in the attributes section.
    #[inline]
    pub fn attributes(&self) -> Words<'a> {
        self.words.slice(self.body() + self.num_arguments(), self.num_attributes())
    }

    /// Indices of the functions the kernel refers to.
    #[inline]
    pub fn functions(&self) -> Words<'a> {
        self.words.slice(self.body() + self.num_arguments() + self.num_attributes(), self.num_functions())
    }

    /// The registers the results go to.
    #[inline]
    pub fn results(&self) -> Words<'a> {
        let start = self.body() + self.num_arguments() + self.num_attributes() + self.num_functions();
        self.words.slice(start, self.num_results())
    }

    /// How many kernels use result `i`.
    #[inline]
    pub fn num_users(&self, i: usize) -> usize {
        self.words.get(KERNEL_HEADER_WORDS + i) as usize
    }

    /// Every result's users, result by result (split them with [`num_users`](Self::num_users)).
    #[inline]
    pub fn users(&self) -> Words<'a> {
        let start =
            self.body() + self.num_arguments() + self.num_attributes() + self.num_functions() + self.num_results();
        self.words.slice(start, self.words.len() - start)
    }
}
