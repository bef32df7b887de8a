//! Decimal float literals to the exact bits of every builtin float format, rounding to nearest
//! with ties to even as APFloat's `convertFromString` does. `f32` and `f64` use Rust's correctly
//! rounded parsers; every other format goes through exact big-integer arithmetic, so no value is
//! rounded twice. The text parser reads literals with it and the printer checks with it that
//! its short form reads back to the same value.

use super::big::Big;
use super::semantics::{Semantics, Specials};
use crate::ir::FloatKind;

/// `true` for the sign, the decimal digits, and the power of ten they are scaled by.
fn decimal_parts(text: &str) -> Option<(bool, Vec<u8>, i64)> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (mantissa, exp) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
        None => (rest, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut digits = Vec::with_capacity(int.len() + frac.len());
    for b in int.bytes().chain(frac.bytes()) {
        if !b.is_ascii_digit() {
            return None;
        }
        digits.push(b - b'0');
    }
    let exp = exp.checked_sub(frac.len() as i64)?;
    Some((negative, digits, exp))
}

/// The bits of the decimal literal `text` (`1.5`, `-2.0e-3`) in format `kind`, or `None` if it
/// is not a decimal float literal.
pub(crate) fn decimal_to_bits(text: &str, kind: FloatKind) -> Option<u128> {
    match kind {
        FloatKind::F32 => return text.parse::<f32>().ok().map(|v| u128::from(v.to_bits())),
        FloatKind::F64 => return text.parse::<f64>().ok().map(|v| u128::from(v.to_bits())),
        _ => {}
    }
    let sem = Semantics::of(kind);
    let (negative, digits, exp10) = decimal_parts(text)?;
    let first = digits.iter().position(|&d| d != 0);
    let Some(first) = first else {
        return Some(if sem.specials == Specials::NanNegativeZero || !sem.signed {
            if sem.signed {
                0
            } else {
                sem.nan()
            }
        } else {
            sem.sign_bit(negative)
        });
    };
    let digits = &digits[first..];
    // Far outside every format's range: avoid huge powers of ten.
    let magnitude = digits.len() as i64 + exp10;
    if magnitude > 5000 {
        return Some(sem.infinity(negative));
    }
    if magnitude < -5100 {
        return Some(if sem.specials == Specials::NanNegativeZero { 0 } else { sem.sign_bit(negative) });
    }
    let mut num = Big::from_u128(0);
    for &d in digits {
        num.mul_small(10);
        num.add_small(u32::from(d));
    }
    let mut den = Big::from_u128(1);
    if exp10 >= 0 {
        for _ in 0..exp10 {
            num.mul_small(10);
        }
    } else {
        for _ in 0..-exp10 {
            den.mul_small(10);
        }
    }
    // Quotient with precision + 2 bits (round bit and one spare), the remainder as sticky.
    let want = sem.precision as i64 + 2;
    let s = want - (i64::from(num.bits()) - i64::from(den.bits()));
    if s > 0 {
        num.shl(s as u32);
    } else {
        den.shl((-s) as u32);
    }
    // Long division, one bit at a time: the quotient has at most `want + 1` bits.
    let mut q: u128 = 0;
    let mut rem = Big::from_u128(0);
    for i in (0..num.bits()).rev() {
        rem.shl(1);
        if num.bit(i) {
            rem.add_small(1);
        }
        q <<= 1;
        if rem >= den {
            rem.sub(&den);
            q |= 1;
        }
    }
    let sticky = !rem.is_zero();
    Some(sem.encode(negative, q, -(s as i32), sticky))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_formats_round_exactly() {
        assert_eq!(decimal_to_bits("1.5", FloatKind::F16), Some(0x3E00));
        assert_eq!(decimal_to_bits("-2.0", FloatKind::BF16), Some(0xC000));
        assert_eq!(decimal_to_bits("1.0", FloatKind::F80), Some(0x3FFF_8000_0000_0000_0000));
        assert_eq!(decimal_to_bits("-1.0", FloatKind::F128), Some(0xBFFF_u128 << 112));
        assert_eq!(decimal_to_bits("448.0", FloatKind::F8E4M3FN), Some(0x7E));
        assert_eq!(decimal_to_bits("2.0", FloatKind::F8E8M0FNU), Some(128));
        assert_eq!(decimal_to_bits("0.5", FloatKind::F4E2M1FN), Some(0x1));
        assert_eq!(decimal_to_bits("6.0", FloatKind::F4E2M1FN), Some(0x7));
        assert_eq!(decimal_to_bits("0.25", FloatKind::TF32), Some(125 << 10));
        assert_eq!(decimal_to_bits("5.960464477539063e-08", FloatKind::F16), Some(1));
        assert_eq!(decimal_to_bits("65520.0", FloatKind::F16), Some(0x7C00));
    }
}
