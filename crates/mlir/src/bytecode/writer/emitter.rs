//! The byte-level encoder: varints, NUL-terminated strings and (nested, possibly aligned)
//! sections, as upstream's `EncodingEmitter` lays them out.

/// Padding byte before aligned data (`bytecode::kAlignmentByte`).
const ALIGNMENT_BYTE: u8 = 0xCB;

/// A growing buffer plus the alignment its start must have in the final file. A section's payload
/// is aligned relative to its own start; when the section is closed or appended, it is placed at an
/// offset of the parent that keeps that alignment.
///
/// Sections are written in place ([`Emitter::begin_section`], [`Emitter::end_section`]): the
/// payload goes straight into the buffer and its header (whose length varint is known only at the
/// end) is inserted before it, moving bytes just written instead of copying the payload out of a
/// buffer of its own, which would be fresh memory to fault in and grow.
#[derive(Debug)]
pub(super) struct Emitter {
    buf: Vec<u8>,
    /// Where the payload of the innermost open section starts (0: none is open).
    base: usize,
    /// The largest alignment any data of the innermost open section (or of the whole buffer)
    /// needs from its start (1 = none).
    pub alignment: u64,
}

/// An open section: what [`Emitter::end_section`] restores.
pub(super) struct OpenSection {
    start: usize,
    outer_base: usize,
    outer_alignment: u64,
}

impl Default for Emitter {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl Emitter {
    pub fn new() -> Self {
        Self::default()
    }

    /// An emitter with room for `capacity` bytes before it grows.
    pub fn with_capacity(capacity: usize) -> Self {
        Self { buf: Vec::with_capacity(capacity), base: 0, alignment: 1 }
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// The bytes written so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// Forgets the bytes written (and the alignment they needed), keeping the room.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.base = 0;
        self.alignment = 1;
    }

    /// Overwrites the byte written at `at` (a flag byte whose value is known only later). No
    /// section that began before `at` may have been closed since: closing one moves its bytes.
    pub fn set_byte(&mut self, at: usize, byte: u8) {
        self.buf[at] = byte;
    }

    #[inline(always)]
    pub fn byte(&mut self, byte: u8) {
        self.buf.push(byte);
    }

    #[inline]
    pub fn bytes(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
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
            self.bytes(&(((value << 2) | 0b10) as u16).to_le_bytes());
        } else {
            self.long_varint(value);
        }
    }

    /// [`Emitter::varint`] of a value of 14 bits or more (kept out of line so that the shorter
    /// cases, most of them, inline into their callers).
    fn long_varint(&mut self, value: u64) {
        let mut encoded = [0u8; 9];
        let len = encode_varint(value, &mut encoded);
        self.bytes(&encoded[..len]);
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

    /// Pads with `0xCB` up to `alignment` (a power of two) from the start of the innermost open
    /// section (or of the buffer), and records that this start needs that alignment.
    pub fn align_to(&mut self, alignment: u64) {
        if alignment < 2 {
            return;
        }
        let offset = (self.buf.len() - self.base) as u64;
        let padding = offset.next_multiple_of(alignment) - offset;
        self.buf.resize(self.buf.len() + padding as usize, ALIGNMENT_BYTE);
        self.alignment = self.alignment.max(alignment);
    }

    /// Opens a section: what is written until [`Emitter::end_section`] is its payload.
    pub fn begin_section(&mut self) -> OpenSection {
        let open = OpenSection { start: self.buf.len(), outer_base: self.base, outer_alignment: self.alignment };
        self.base = self.buf.len();
        self.alignment = 1;
        open
    }

    /// Closes the section `open` began as section `id`: inserts its header before the payload.
    pub fn end_section(&mut self, id: u8, open: OpenSection) {
        let payload_len = self.buf.len() - open.start;
        let payload_alignment = self.alignment;
        self.base = open.outer_base;
        self.alignment = open.outer_alignment;
        let mut header = [0u8; 19];
        let (len, padding) = self.section_header(open.start, id, payload_len, payload_alignment, &mut header);
        let shift = len + padding;
        self.buf.resize(self.buf.len() + shift, 0);
        self.buf.copy_within(open.start..open.start + payload_len, open.start + shift);
        self.buf[open.start..open.start + len].copy_from_slice(&header[..len]);
        self.buf[open.start + len..open.start + shift].fill(ALIGNMENT_BYTE);
    }

    /// Writes the header of section `id` whose payload, written next, is `len` bytes that need no
    /// alignment: with the length known first, the payload is never moved. Returns where the
    /// payload starts, for the caller to check its length.
    pub fn known_section(&mut self, id: u8, len: usize) -> usize {
        let mut header = [0u8; 19];
        let (header_len, _) = self.section_header(self.buf.len(), id, len, 1, &mut header);
        self.bytes(&header[..header_len]);
        self.buf.len()
    }

    /// Appends a section whose payload was built apart.
    pub fn section(&mut self, id: u8, payload: &Emitter) {
        let mut header = [0u8; 19];
        let (len, padding) = self.section_header(self.buf.len(), id, payload.len(), payload.alignment, &mut header);
        self.bytes(&header[..len]);
        self.buf.resize(self.buf.len() + padding, ALIGNMENT_BYTE);
        self.bytes(payload.as_bytes());
    }

    /// The header of a section placed at `at`: `byte(id | aligned << 7)`, `varint length`, then,
    /// only when the payload needs an alignment this offset does not already have, `varint
    /// alignment` and padding. When the offset happens to be aligned, the requirement moves up to
    /// the enclosing section instead (what upstream does, so its files and ours agree on when the
    /// flag is set). Returns the header's length in `header` and the padding after it.
    fn section_header(
        &mut self,
        at: usize,
        id: u8,
        len: usize,
        alignment: u64,
        header: &mut [u8; 19],
    ) -> (usize, usize) {
        header[0] = id;
        let mut end = 1 + encode_varint(len as u64, (&mut header[1..10]).try_into().expect("nine bytes"));
        let mut padding = 0;
        if alignment > 1 {
            let offset = (at - self.base + end) as u64;
            if !offset.is_multiple_of(alignment) {
                header[0] |= 0x80;
                end += encode_varint(alignment, (&mut header[end..end + 9]).try_into().expect("nine bytes"));
                let offset = (at - self.base + end) as u64;
                padding = (offset.next_multiple_of(alignment) - offset) as usize;
            }
            self.alignment = self.alignment.max(alignment);
        }
        (end, padding)
    }
}

/// Encodes `value` as a PrefixVarInt into `out`; returns its length.
fn encode_varint(value: u64, out: &mut [u8; 9]) -> usize {
    if value >> 56 != 0 {
        out[0] = 0;
        out[1..].copy_from_slice(&value.to_le_bytes());
        return 9;
    }
    // Seven value bits per byte: 1 to 8 bytes.
    let num_bytes = (u64::BITS - value.leading_zeros()).div_ceil(7).max(1) as usize;
    let encoded = ((value << 1) | 1) << (num_bytes - 1);
    out[..8].copy_from_slice(&encoded.to_le_bytes());
    num_bytes
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

    /// A section written in place is byte for byte the section appended from a payload built
    /// apart: at every offset, with and without alignment, nested, and with long lengths.
    #[test]
    fn a_section_written_in_place_equals_one_built_apart() {
        let payload = |e: &mut Emitter, alignment: u64, len: usize| {
            e.bytes(&[7; 3]);
            e.align_to(alignment);
            e.bytes(&vec![9; len]);
        };
        for prefix in 0..9 {
            for alignment in [1, 2, 8, 64] {
                for len in [0, 200, 20_000] {
                    let mut apart = Emitter::new();
                    apart.bytes(&vec![1; prefix]);
                    let mut inner = Emitter::new();
                    payload(&mut inner, alignment, len);
                    let mut middle = Emitter::new();
                    middle.byte(2);
                    middle.section(4, &inner);
                    apart.section(5, &middle);

                    let mut in_place = Emitter::new();
                    in_place.bytes(&vec![1; prefix]);
                    let outer_section = in_place.begin_section();
                    in_place.byte(2);
                    let inner_section = in_place.begin_section();
                    payload(&mut in_place, alignment, len);
                    in_place.end_section(4, inner_section);
                    in_place.end_section(5, outer_section);
                    assert_eq!(in_place.as_bytes(), apart.as_bytes(), "prefix {prefix}, alignment {alignment}");
                    assert_eq!(in_place.alignment, apart.alignment, "prefix {prefix}, alignment {alignment}");
                }
            }
        }
    }
}
