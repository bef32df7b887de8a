//! A growing byte buffer that remembers the largest alignment its contents asked for, so that a
//! buffer built on its own (a section body, a kernel's operand list) can later be placed inside
//! another at an offset that keeps that alignment.

use crate::format::{vbr, PADDING};

#[derive(Debug, Default)]
pub(super) struct Emitter {
    bytes: Vec<u8>,
    alignment: usize,
}

impl Emitter {
    pub(super) fn new() -> Emitter {
        Emitter { bytes: Vec::new(), alignment: 1 }
    }

    pub(super) fn len(&self) -> usize {
        self.bytes.len()
    }

    /// The alignment the start of these bytes needs for their contents to be aligned.
    pub(super) fn alignment(&self) -> usize {
        self.alignment
    }

    pub(super) fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub(super) fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    pub(super) fn byte(&mut self, byte: u8) {
        self.bytes.push(byte);
    }

    pub(super) fn bytes(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
    }

    /// Appends `tail`'s bytes by moving these in front of them in `tail`'s own buffer: a large
    /// tail (a section of weights) is never held twice.
    pub(super) fn append_moved(&mut self, tail: Emitter) {
        let mut bytes = tail.bytes;
        bytes.splice(0..0, std::mem::take(&mut self.bytes));
        self.bytes = bytes;
    }

    pub(super) fn vbr(&mut self, value: usize) {
        vbr::write(&mut self.bytes, value as u64);
    }

    /// Pads to a multiple of `alignment` (a power of two) and records it.
    pub(super) fn align(&mut self, alignment: usize) {
        if alignment < 2 {
            return;
        }
        let padding = self.bytes.len().next_multiple_of(alignment) - self.bytes.len();
        self.pad(alignment, padding);
    }

    /// Emits `count` padding bytes and records `alignment`: for data whose aligned part starts
    /// after a prefix, where the caller computes the padding itself.
    pub(super) fn pad(&mut self, alignment: usize, count: usize) {
        self.bytes.resize(self.bytes.len() + count, PADDING);
        self.alignment = self.alignment.max(alignment);
    }

    /// A little-endian value at its natural alignment (its size).
    pub(super) fn aligned(&mut self, bytes: &[u8]) {
        self.align(bytes.len());
        self.bytes(bytes);
    }

    pub(super) fn u32(&mut self, value: u32) {
        self.aligned(&value.to_le_bytes());
    }

    /// Appends another buffer at an offset that keeps its alignment.
    pub(super) fn append(&mut self, other: &Emitter) {
        self.align(other.alignment);
        self.bytes(&other.bytes);
    }

    pub(super) fn overwrite(&mut self, offset: usize, bytes: &[u8]) {
        self.bytes[offset..offset + bytes.len()].copy_from_slice(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appending_keeps_the_inner_alignment() {
        let mut inner = Emitter::new();
        inner.u32(7);
        let mut outer = Emitter::new();
        outer.byte(1);
        outer.append(&inner);
        assert_eq!(outer.as_bytes(), [1, 0xCC, 0xCC, 0xCC, 7, 0, 0, 0]);
        assert_eq!(outer.alignment(), 4);
    }

    #[test]
    fn single_bytes_ask_for_no_alignment() {
        let mut e = Emitter::new();
        e.byte(1);
        e.vbr(130);
        assert_eq!(e.as_bytes(), [1, 0x81, 0x02]);
        assert_eq!(e.alignment(), 1);
    }
}
