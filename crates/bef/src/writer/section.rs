//! Section framing: `id`, `vbr(length << 1 | aligned)`, and when the body would otherwise start
//! misaligned, an alignment byte and padding up to the body's alignment in the file.

use super::emitter::Emitter;
use crate::format::{vbr, SectionId};

/// Appends `body` to `file` as section `id`. The body keeps the alignment it recorded; the file
/// starts at an address aligned to [`crate::format::FILE_ALIGNMENT`], so file offsets stand
/// for addresses.
pub(super) fn write(file: &mut Emitter, id: SectionId, body: &Emitter) {
    header(file, id, body);
    file.bytes(body.as_bytes());
}

/// As [`write`], taking `body` over instead of copying it (see [`Emitter::append_moved`]).
pub(super) fn write_moved(file: &mut Emitter, id: SectionId, body: Emitter) {
    header(file, id, &body);
    file.append_moved(body);
}

/// The section's id, length and alignment padding, for `body` to follow.
fn header(file: &mut Emitter, id: SectionId, body: &Emitter) {
    file.byte(id as u8);
    let shifted = body.len() << 1;
    let alignment = body.alignment();
    let start = file.len() + vbr::size(shifted as u64) as usize;
    if alignment > 1 && !start.is_multiple_of(alignment) {
        file.vbr(shifted | 1);
        file.byte(alignment as u8);
        file.align(alignment);
    } else {
        file.vbr(shifted);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misaligned_body_gets_an_alignment_byte_and_padding() {
        let mut body = Emitter::new();
        body.u32(0x2A);
        // Magic and version take 3 bytes; id and length 2 more: the body would start at 5.
        let mut file = Emitter::new();
        file.bytes(&[0x0B, 0xEF, 0x00]);
        write(&mut file, SectionId::Attributes, &body);
        assert_eq!(file.as_bytes(), [0x0B, 0xEF, 0x00, 0x01, 0x09, 0x04, 0xCC, 0xCC, 0x2A, 0, 0, 0]);
    }

    #[test]
    fn a_moved_body_is_written_as_a_copied_one() {
        let body = || {
            let mut body = Emitter::new();
            body.u32(0x2A);
            body
        };
        let (mut copied, mut moved) = (Emitter::new(), Emitter::new());
        copied.bytes(&[0x0B, 0xEF, 0x00]);
        moved.bytes(&[0x0B, 0xEF, 0x00]);
        write(&mut copied, SectionId::Attributes, &body());
        write_moved(&mut moved, SectionId::Attributes, body());
        assert_eq!(moved.as_bytes(), copied.as_bytes());
    }

    #[test]
    fn an_aligned_body_follows_its_length() {
        let mut body = Emitter::new();
        body.u32(0x2A);
        let mut file = Emitter::new();
        file.bytes(&[0x0B, 0xEF]);
        write(&mut file, SectionId::Attributes, &body);
        assert_eq!(file.as_bytes(), [0x0B, 0xEF, 0x01, 0x08, 0x2A, 0, 0, 0]);
    }
}
