//! BEF's variable-length unsigned integers: 7-bit groups, the most significant first, the high
//! bit set on every byte but the last (130 is `81 02`). Not LEB128.

/// Appends `value`'s encoding to `out`.
pub fn write(out: &mut Vec<u8>, value: u64) {
    let mut shift = 7 * (size(value) - 1);
    while shift > 0 {
        out.push(0x80 | ((value >> shift) & 0x7F) as u8);
        shift -= 7;
    }
    out.push((value & 0x7F) as u8);
}

/// How many bytes [`write`] takes for `value`.
pub fn size(value: u64) -> u32 {
    let bits = 64 - value.leading_zeros();
    bits.max(1).div_ceil(7)
}

/// Decodes the integer at `bytes[*pos..]`, advancing `pos`; `None` when the bytes end
/// inside it or it does not fit in 64 bits.
pub fn read(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    let mut value: u64 = 0;
    loop {
        let byte = *bytes.get(*pos)?;
        *pos += 1;
        if value >> 57 != 0 {
            return None;
        }
        value = (value << 7) | u64::from(byte & 0x7F);
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(value: u64) -> Vec<u8> {
        let mut out = Vec::new();
        write(&mut out, value);
        out
    }

    #[test]
    fn vbr_puts_the_most_significant_group_first() {
        assert_eq!(encoded(0), [0x00]);
        assert_eq!(encoded(127), [0x7F]);
        assert_eq!(encoded(130), [0x81, 0x02]);
        assert_eq!(encoded(16643), [0x81, 0x82, 0x03]);
        assert_eq!(size(16643), 3);
    }

    #[test]
    fn vbr_round_trips_and_refuses_truncation_and_overflow() {
        for value in [0, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let bytes = encoded(value);
            assert_eq!(bytes.len() as u32, size(value));
            let mut pos = 0;
            assert_eq!(read(&bytes, &mut pos), Some(value));
            assert_eq!(pos, bytes.len());
            let mut pos = 0;
            assert_eq!(read(&bytes[..bytes.len() - 1], &mut pos), None);
        }
        let mut pos = 0;
        assert_eq!(read(&[0xFF; 11], &mut pos), None);
    }
}
