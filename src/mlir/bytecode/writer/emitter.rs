//! The byte-level encoder: varints, NUL-terminated strings and (nested, possibly aligned)
//! sections, as upstream's `EncodingEmitter` lays them out.

/// Padding byte before aligned data (`bytecode::kAlignmentByte`).
const ALIGNMENT_BYTE: u8 = 0xCB;

/// A growing buffer plus the alignment its start must have in the final file. A section's payload
/// is built in its own `Emitter`, aligned relative to its own start; [`Emitter::section`] then
/// places it at an offset of the parent that keeps that alignment.
///
/// The bytes written are `buf[..len]`; the rest of `buf` is room to write into, so that writing a
/// varint is one length check and one store rather than a `Vec` push per byte.
#[derive(Debug)]
pub(super) struct Emitter {
    buf: Vec<u8>,
    len: usize,
    /// The largest alignment any data in the buffer needs from the buffer's start (1 = none).
    pub alignment: u64,
}

impl Default for Emitter {
    fn default() -> Self {
        Self { buf: Vec::new(), len: 0, alignment: 1 }
    }
}

impl Emitter {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// The bytes written so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    pub fn into_bytes(mut self) -> Vec<u8> {
        self.buf.truncate(self.len);
        self.buf
    }

    /// Forgets the bytes written (and the alignment they needed), keeping the room.
    pub fn clear(&mut self) {
        self.len = 0;
        self.alignment = 1;
    }

    /// Overwrites the byte written at `at` (a flag byte whose value is known only later).
    pub fn set_byte(&mut self, at: usize, byte: u8) {
        self.buf[..self.len][at] = byte;
    }

    /// The next `n` bytes of room, grown when short.
    #[inline(always)]
    fn room(&mut self, n: usize) -> &mut [u8] {
        if self.buf.len() - self.len < n {
            self.grow(n);
        }
        &mut self.buf[self.len..self.len + n]
    }

    #[cold]
    fn grow(&mut self, n: usize) {
        let size = (self.buf.len() * 2).max(self.len + n).max(256);
        self.buf.resize(size, 0);
    }

    #[inline(always)]
    pub fn byte(&mut self, byte: u8) {
        self.room(1)[0] = byte;
        self.len += 1;
    }

    pub fn bytes(&mut self, bytes: &[u8]) {
        self.room(bytes.len()).copy_from_slice(bytes);
        self.len += bytes.len();
    }

    /// A PrefixVarInt: the count of trailing zero bits of the first byte is the count of extra
    /// bytes; a first byte of zero means eight little-endian bytes follow.
    #[inline(always)]
    pub fn varint(&mut self, value: u64) {
        if value >> 7 == 0 {
            self.byte(((value << 1) | 1) as u8);
        } else if value >> 14 == 0 {
            // Two bytes, the next most common (value numbers, attribute indices): one trailing
            // zero bit, then the value.
            self.room(2).copy_from_slice(&(((value << 2) | 0b10) as u16).to_le_bytes());
            self.len += 2;
        } else {
            self.long_varint(value);
        }
    }

    /// [`Emitter::varint`] of a value of 14 bits or more (kept out of line so that the shorter
    /// cases, most of them, inline into their callers).
    fn long_varint(&mut self, value: u64) {
        let room = self.room(9);
        if value >> 56 != 0 {
            room[0] = 0;
            room[1..].copy_from_slice(&value.to_le_bytes());
            self.len += 9;
            return;
        }
        // Seven value bits per byte: 2 to 8 bytes. All eight are stored, the unused high ones
        // (zero) left as room.
        let num_bytes = (u64::BITS - value.leading_zeros()).div_ceil(7) as usize;
        let encoded = ((value << 1) | 1) << (num_bytes - 1);
        room[..8].copy_from_slice(&encoded.to_le_bytes());
        self.len += num_bytes;
    }

    /// A zigzag-encoded signed varint.
    pub fn signed_varint(&mut self, value: i64) {
        self.varint(((value as u64) << 1) ^ ((value >> 63) as u64));
    }

    /// `varint((value << 1) | flag)`.
    #[inline]
    pub fn varint_with_flag(&mut self, value: u64, flag: bool) {
        self.varint((value << 1) | u64::from(flag));
    }

    pub fn cstr(&mut self, bytes: &[u8]) {
        self.bytes(bytes);
        self.byte(0);
    }

    /// `varint len` then the bytes.
    pub fn blob(&mut self, bytes: &[u8]) {
        self.varint(bytes.len() as u64);
        self.bytes(bytes);
    }

    /// Pads with `0xCB` up to `alignment` (a power of two) from the buffer's start, and records
    /// that the buffer's start needs that alignment.
    pub fn align_to(&mut self, alignment: u64) {
        if alignment < 2 {
            return;
        }
        while self.len as u64 % alignment != 0 {
            self.byte(ALIGNMENT_BYTE);
        }
        self.alignment = self.alignment.max(alignment);
    }

    /// Appends a section: `byte(id | aligned << 7)`, `varint length`, then, only when the payload
    /// needs an alignment this offset does not already have, `varint alignment` and padding. When
    /// the offset happens to be aligned, the requirement moves up to this emitter instead (what
    /// upstream does, so its files and ours agree on when the flag is set).
    pub fn section(&mut self, id: u8, payload: &Emitter) {
        let code_at = self.len;
        self.byte(id);
        self.varint(payload.len as u64);
        if payload.alignment > 1 {
            if self.len as u64 % payload.alignment != 0 {
                self.varint(payload.alignment);
                self.align_to(payload.alignment);
                self.buf[code_at] |= 0x80;
            } else {
                self.alignment = self.alignment.max(payload.alignment);
            }
        }
        self.bytes(payload.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::Emitter;

    fn varint(value: u64) -> Vec<u8> {
        let mut e = Emitter::new();
        e.varint(value);
        e.into_bytes()
    }

    #[test]
    fn varints_use_prefix_encoding() {
        assert_eq!(varint(0), [0x01]);
        assert_eq!(varint(6), [0x0d]);
        assert_eq!(varint(127), [0xff]);
        assert_eq!(varint(128), [0x02, 0x02]);
        assert_eq!(varint(u64::MAX), [0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(varint(1 << 55), [0x80, 0, 0, 0, 0, 0, 0, 0x80]);
        // The edges of each length: 2, 3, 8 and 9 bytes.
        assert_eq!(varint((1 << 14) - 1), [0xfe, 0xff]);
        assert_eq!(varint(1 << 14), [0x04, 0x00, 0x02]);
        assert_eq!(varint((1 << 56) - 1), [0x80, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(varint(1 << 56), [0, 0, 0, 0, 0, 0, 0, 0, 0x01]);
    }

    #[test]
    fn aligned_section_pads_only_when_needed() {
        let mut payload = Emitter::new();
        payload.align_to(8);
        payload.bytes(&[1, 2, 3]);
        let mut outer = Emitter::new();
        outer.bytes(&[0xAA]);
        outer.section(5, &payload);
        // id|0x80, len 3, align 8, padding to offset 8, data.
        assert_eq!(outer.as_bytes(), [0xAA, 0x85, 0x07, 0x11, 0xCB, 0xCB, 0xCB, 0xCB, 1, 2, 3]);
        let mut payload = Emitter::new();
        payload.align_to(2);
        let mut outer = Emitter::new();
        outer.section(5, &payload);
        assert_eq!(outer.as_bytes(), [0x05, 0x01]);
        assert_eq!(outer.alignment, 2);
    }
}
