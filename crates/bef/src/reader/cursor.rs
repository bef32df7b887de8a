//! Reading integers and strings out of a section, with errors that give the absolute byte offset.

use super::error::BefError;
use crate::format::vbr;

/// A position in one section's bytes; `base` is the section's offset in the file.
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(bytes: &'a [u8], base: usize) -> Cursor<'a> {
        Cursor { bytes, pos: 0, base }
    }

    pub(crate) fn at(bytes: &'a [u8], base: usize, pos: usize) -> Cursor<'a> {
        Cursor { bytes, pos, base }
    }

    /// The absolute offset of the next byte.
    pub(crate) fn offset(&self) -> usize {
        self.base + self.pos
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    pub(crate) fn error(&self, what: impl Into<String>) -> BefError {
        BefError::malformed(self.offset(), what)
    }

    pub(crate) fn vbr(&mut self, what: &str) -> Result<u64, BefError> {
        let start = self.offset();
        vbr::read(self.bytes, &mut self.pos)
            .ok_or_else(|| BefError::malformed(start, format!("{what}: truncated or overlong integer")))
    }

    /// A VBR integer that must fit in a `u32` (counts, indices, offsets).
    pub(crate) fn vbr_u32(&mut self, what: &str) -> Result<u32, BefError> {
        let start = self.offset();
        let value = self.vbr(what)?;
        u32::try_from(value).map_err(|_| BefError::malformed(start, format!("{what} {value} does not fit in 32 bits")))
    }

    /// A count of items that each take at least one byte: refuses counts the rest of the section
    /// cannot hold, so a corrupt count never makes us allocate gigabytes.
    pub(crate) fn count(&mut self, what: &str) -> Result<usize, BefError> {
        let start = self.offset();
        let count = self.vbr_u32(what)? as usize;
        if count > self.bytes.len().saturating_sub(self.pos) {
            return Err(BefError::malformed(
                start,
                format!("{what} {count} is more than the {} bytes left can hold", self.bytes.len() - self.pos),
            ));
        }
        Ok(count)
    }

    pub(crate) fn u8(&mut self, what: &str) -> Result<u8, BefError> {
        let byte = *self.bytes.get(self.pos).ok_or_else(|| self.error(format!("{what}: unexpected end")))?;
        self.pos += 1;
        Ok(byte)
    }

    pub(crate) fn skip(&mut self, len: usize, what: &str) -> Result<&'a [u8], BefError> {
        let end = self.pos.checked_add(len).filter(|&end| end <= self.bytes.len());
        let Some(end) = end else {
            return Err(
                self.error(format!("{what}: {len} bytes run past the end ({} left)", self.bytes.len() - self.pos))
            );
        };
        let slice = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(slice)
    }
}

/// The NUL-terminated string at `offset` in a string section.
pub(crate) fn c_string<'a>(section: &'a [u8], base: usize, offset: usize, what: &str) -> Result<&'a str, BefError> {
    let tail = section
        .get(offset..)
        .filter(|tail| !tail.is_empty())
        .ok_or_else(|| BefError::malformed(base, format!("{what} at string offset {offset} is outside the section")))?;
    let len = tail
        .iter()
        .position(|&b| b == 0)
        .ok_or_else(|| BefError::malformed(base + offset, format!("{what} is not NUL-terminated")))?;
    std::str::from_utf8(&tail[..len])
        .map_err(|e| BefError::malformed(base + offset, format!("{what} is not UTF-8: {e}")))
}
