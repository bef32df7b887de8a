//! A bounds-checked reader over one section's bytes, speaking the bytecode primitives.

use super::error::{ReadError, ReadErrorKind, Result};

#[derive(Clone)]
pub struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    /// Offset of `data[0]` in the whole file, for error messages and alignment.
    base: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(data: &'a [u8], base: usize) -> Self {
        Self { data, pos: 0, base }
    }

    /// Offset of the next byte in the whole file.
    #[inline]
    pub fn offset(&self) -> usize {
        self.base + self.pos
    }

    #[inline]
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.pos == self.data.len()
    }

    pub fn error(&self, kind: ReadErrorKind) -> ReadError {
        ReadError::new(self.offset(), kind)
    }

    pub fn invalid(&self, message: impl Into<String>) -> ReadError {
        self.error(ReadErrorKind::Invalid(message.into()))
    }

    #[inline]
    pub fn byte(&mut self, what: &'static str) -> Result<u8> {
        let byte = *self.data.get(self.pos).ok_or_else(|| self.error(ReadErrorKind::Truncated(what)))?;
        self.pos += 1;
        Ok(byte)
    }

    #[inline]
    pub fn bytes(&mut self, len: u64, what: &'static str) -> Result<&'a [u8]> {
        if len > self.remaining() as u64 {
            return Err(self.error(ReadErrorKind::Truncated(what)));
        }
        let slice = &self.data[self.pos..self.pos + len as usize];
        self.pos += len as usize;
        Ok(slice)
    }

    /// A PrefixVarInt: trailing zero bits of the first byte count the extra bytes.
    #[inline(always)]
    pub fn varint(&mut self, what: &'static str) -> Result<u64> {
        // One-byte values (below 128) are by far the most common: indices, counts, small ints.
        let rest = &self.data[self.pos..];
        if let Some(&first) = rest.first() {
            if first & 1 == 1 {
                self.pos += 1;
                return Ok(u64::from(first >> 1));
            }
            if first != 0 {
                let len = first.trailing_zeros() as usize + 1;
                // Up to 8 bytes in one load when 8 are there; otherwise (the short slices of
                // attribute entries, the end of a section) gathered into a word.
                let word = if rest.len() >= 8 {
                    u64::from_le_bytes(rest[..8].try_into().expect("8 bytes"))
                } else if rest.len() >= len {
                    rest[..len].iter().rev().fold(0u64, |word, &b| word << 8 | u64::from(b))
                } else {
                    return Err(self.error(ReadErrorKind::Truncated(what)));
                };
                let value = if len == 8 { word } else { word & ((1u64 << (8 * len)) - 1) };
                self.pos += len;
                return Ok(value >> len);
            }
        }
        self.varint_multibyte(what)
    }

    /// The rest of [`Self::varint`]: 9-byte values (a zero first byte), and the end of the data.
    #[cold]
    fn varint_multibyte(&mut self, what: &'static str) -> Result<u64> {
        let first = self.byte(what)?;
        debug_assert_eq!(first, 0, "shorter values are decoded inline");
        let bytes = self.bytes(8, what)?;
        Ok(u64::from_le_bytes(bytes.try_into().expect("8 bytes")))
    }

    /// A zigzag-encoded signed varint.
    #[inline]
    pub fn signed_varint(&mut self, what: &'static str) -> Result<i64> {
        let value = self.varint(what)?;
        Ok(((value >> 1) as i64) ^ -((value & 1) as i64))
    }

    /// A varint `(value << 1) | flag`.
    #[inline]
    pub fn varint_with_flag(&mut self, what: &'static str) -> Result<(u64, bool)> {
        let value = self.varint(what)?;
        Ok((value >> 1, value & 1 == 1))
    }

    /// A count of items that each take at least `min_item_bytes` bytes: refused when the rest of
    /// the data cannot hold that many, so a corrupt count never drives a huge allocation.
    #[inline(always)]
    pub fn count(&mut self, what: &'static str, min_item_bytes: usize) -> Result<usize> {
        let offset = self.offset();
        let count = self.varint(what)?;
        self.check_count(count, what, min_item_bytes, offset)
    }

    #[inline]
    pub fn check_count(&self, count: u64, what: &'static str, min_item_bytes: usize, offset: usize) -> Result<usize> {
        let remaining = self.remaining();
        if count.saturating_mul(min_item_bytes as u64) > remaining as u64 {
            return Err(ReadError::new(offset, ReadErrorKind::CountTooLarge { what, count, remaining }));
        }
        Ok(count as usize)
    }

    /// An index below `limit`.
    #[inline(always)]
    pub fn index(&mut self, what: &'static str, limit: usize) -> Result<usize> {
        let offset = self.offset();
        let index = self.varint(what)?;
        if index >= limit as u64 {
            return Err(ReadError::new(offset, ReadErrorKind::IndexOutOfRange { what, index, limit: limit as u64 }));
        }
        Ok(index as usize)
    }

    /// A NUL-terminated string (without the NUL).
    pub fn cstr(&mut self, what: &'static str) -> Result<&'a [u8]> {
        let rest = &self.data[self.pos..];
        let len = rest.iter().position(|&b| b == 0).ok_or_else(|| self.error(ReadErrorKind::Truncated(what)))?;
        self.pos += len + 1;
        Ok(&rest[..len])
    }

    /// Reads an alignment varint and skips `0xCB` padding up to it (relative to file offset 0).
    pub fn align(&mut self, what: &'static str) -> Result<u64> {
        let alignment = self.alignment(what)?;
        self.align_to(alignment)?;
        Ok(alignment)
    }

    /// An alignment varint (a power of two).
    pub fn alignment(&mut self, what: &'static str) -> Result<u64> {
        let offset = self.offset();
        let alignment = self.varint(what)?;
        if !alignment.is_power_of_two() || alignment > 1 << 32 {
            return Err(ReadError::new(offset, ReadErrorKind::BadAlignment(alignment)));
        }
        Ok(alignment)
    }

    /// Skips `0xCB` padding up to `alignment` (relative to file offset 0).
    pub fn align_to(&mut self, alignment: u64) -> Result<()> {
        while !(self.offset() as u64).is_multiple_of(alignment) {
            let byte = self.byte("alignment padding")?;
            if byte != 0xCB {
                return Err(ReadError::new(self.offset() - 1, ReadErrorKind::BadPadding(byte)));
            }
        }
        Ok(())
    }

    pub fn expect_end(&self, what: &'static str) -> Result<()> {
        if !self.is_empty() {
            return Err(self.error(ReadErrorKind::TrailingBytes(self.remaining(), what)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_decodes_every_prefix_length() {
        let mut c = Cursor::new(&[0x0d, 0x02, 0x01, 0x00, 1, 0, 0, 0, 0, 0, 0, 0x80], 0);
        assert_eq!(c.varint("t").unwrap(), 6);
        assert_eq!(c.varint("t").unwrap(), 64);
        assert_eq!(c.varint("t").unwrap(), 0x8000_0000_0000_0001);
        let mut c = Cursor::new(&[0x00, 1, 2], 0);
        assert!(c.varint("t").is_err());
    }

    #[test]
    fn signed_varint_is_zigzag() {
        let mut c = Cursor::new(&[0x03, 0x05, 0x01], 0);
        assert_eq!(c.signed_varint("t").unwrap(), -1);
        assert_eq!(c.signed_varint("t").unwrap(), 1);
        assert_eq!(c.signed_varint("t").unwrap(), 0);
    }
}
