//! Decimal float literals to the exact bits of every builtin float format, rounding to nearest
//! with ties to even as APFloat's `convertFromString` does. `f32` and `f64` use Rust's correctly
//! rounded parsers; every other format goes through exact big-integer arithmetic, so no value is
//! rounded twice.

use crate::mlir::ir::FloatKind;

/// How a format encodes special values (APFloat's `fltNonfiniteBehavior` and friends).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Specials {
    /// IEEE 754: infinities and NaNs with an all-ones exponent.
    Ieee,
    /// No infinity; the all-ones pattern (exponent and mantissa) is the only NaN.
    NanAllOnes,
    /// No infinity, no negative zero; the negative-zero pattern is the only NaN (FNUZ types).
    NanNegativeZero,
    /// Neither infinity nor NaN.
    FiniteOnly,
}

#[derive(Clone, Copy)]
struct Semantics {
    max_exp: i32,
    min_exp: i32,
    /// Significand bits including the integer bit.
    precision: u32,
    bits: u32,
    specials: Specials,
    /// x87 extended precision stores the integer bit.
    explicit_integer_bit: bool,
    signed: bool,
}

fn semantics(kind: FloatKind) -> Semantics {
    let s = |max_exp, min_exp, precision, bits, specials| Semantics {
        max_exp,
        min_exp,
        precision,
        bits,
        specials,
        explicit_integer_bit: false,
        signed: true,
    };
    use Specials::*;
    match kind {
        FloatKind::F16 => s(15, -14, 11, 16, Ieee),
        FloatKind::BF16 => s(127, -126, 8, 16, Ieee),
        FloatKind::F32 => s(127, -126, 24, 32, Ieee),
        FloatKind::F64 => s(1023, -1022, 53, 64, Ieee),
        FloatKind::F128 => s(16383, -16382, 113, 128, Ieee),
        FloatKind::F80 => Semantics { explicit_integer_bit: true, ..s(16383, -16382, 64, 80, Ieee) },
        FloatKind::TF32 => s(127, -126, 11, 19, Ieee),
        FloatKind::F8E5M2 => s(15, -14, 3, 8, Ieee),
        FloatKind::F8E4M3 => s(7, -6, 4, 8, Ieee),
        FloatKind::F8E3M4 => s(3, -2, 5, 8, Ieee),
        FloatKind::F8E4M3FN => s(8, -6, 4, 8, NanAllOnes),
        FloatKind::F8E5M2FNUZ => s(15, -15, 3, 8, NanNegativeZero),
        FloatKind::F8E4M3FNUZ => s(7, -7, 4, 8, NanNegativeZero),
        FloatKind::F8E4M3B11FNUZ => s(4, -10, 4, 8, NanNegativeZero),
        FloatKind::F6E3M2FN => s(4, -2, 3, 6, FiniteOnly),
        FloatKind::F6E2M3FN => s(2, 0, 4, 6, FiniteOnly),
        FloatKind::F4E2M1FN => s(2, 0, 2, 4, FiniteOnly),
        FloatKind::F8E8M0FNU => Semantics { signed: false, ..s(127, -127, 1, 8, NanAllOnes) },
    }
}

fn bit_len(v: u128) -> u32 {
    128 - v.leading_zeros()
}

impl Semantics {
    fn exp_bits(&self) -> u32 {
        let mantissa = if self.explicit_integer_bit { self.precision } else { self.precision - 1 };
        self.bits - u32::from(self.signed) - mantissa
    }
    fn mantissa_bits(&self) -> u32 {
        if self.explicit_integer_bit {
            self.precision
        } else {
            self.precision - 1
        }
    }
    fn bias(&self) -> i32 {
        if !self.signed {
            // E8M0: value 2^(e - 127).
            return 127;
        }
        1 - self.min_exp
    }
    fn sign_bit(&self, negative: bool) -> u128 {
        if negative && self.signed {
            1u128 << (self.bits - 1)
        } else {
            0
        }
    }
    fn nan(&self) -> u128 {
        match self.specials {
            Specials::Ieee => {
                let e = (1u128 << self.exp_bits()) - 1;
                let quiet = 1u128 << (self.precision - 2);
                let int_bit = if self.explicit_integer_bit { 1u128 << (self.precision - 1) } else { 0 };
                (e << self.mantissa_bits()) | quiet | int_bit
            }
            Specials::NanAllOnes => {
                if self.signed {
                    (1u128 << (self.bits - 1)) - 1
                } else {
                    (1u128 << self.bits) - 1
                }
            }
            Specials::NanNegativeZero => 1u128 << (self.bits - 1),
            Specials::FiniteOnly => self.largest(),
        }
    }
    fn infinity(&self, negative: bool) -> u128 {
        match self.specials {
            Specials::Ieee => {
                let e = (1u128 << self.exp_bits()) - 1;
                let int_bit = if self.explicit_integer_bit { 1u128 << (self.precision - 1) } else { 0 };
                self.sign_bit(negative) | (e << self.mantissa_bits()) | int_bit
            }
            Specials::FiniteOnly => self.sign_bit(negative) | self.largest(),
            _ => self.nan(),
        }
    }
    fn largest(&self) -> u128 {
        let mask = (1u128 << self.mantissa_bits()) - 1;
        let e = (self.max_exp + self.bias()) as u128;
        let mut bits = (e << self.mantissa_bits()) | mask;
        if self.specials == Specials::NanAllOnes && self.signed {
            bits -= 1;
        }
        bits
    }

    /// Rounds `(m + sticky) * 2^e` (with `m` nonzero) to the format and encodes it.
    fn encode(&self, negative: bool, m: u128, e: i32, sticky: bool) -> u128 {
        let p = self.precision as i32;
        let top = e + bit_len(m) as i32 - 1;
        let lsb = top.max(self.min_exp) - (p - 1);
        let shift = lsb - e;
        let mut mant = if shift > 0 {
            let shift = shift as u32;
            if shift > 127 {
                0
            } else {
                let kept = m >> shift;
                let half = 1u128 << (shift - 1);
                let rest = m & ((1u128 << shift) - 1);
                let round_up = rest > half || (rest == half && (sticky || kept & 1 == 1));
                kept + u128::from(round_up)
            }
        } else {
            m << (-shift) as u32
        };
        let mut lsb = lsb;
        if mant >> self.precision != 0 {
            mant >>= 1;
            lsb += 1;
        }
        if mant == 0 {
            return if self.specials == Specials::NanNegativeZero { 0 } else { self.sign_bit(negative) };
        }
        let top = lsb + bit_len(mant) as i32 - 1;
        if top > self.max_exp {
            return self.infinity(negative);
        }
        let normal = mant >> (self.precision - 1) != 0;
        let biased = if normal { (top + self.bias()) as u128 } else { 0 };
        let field = if self.explicit_integer_bit || !normal { mant } else { mant - (1u128 << (self.precision - 1)) };
        let bits = self.sign_bit(negative) | (biased << self.mantissa_bits()) | field;
        let magnitude = bits & !self.sign_bit(true);
        if self.specials == Specials::NanAllOnes && magnitude == self.nan() {
            return self.infinity(negative);
        }
        if !self.signed && negative {
            return self.nan();
        }
        bits
    }
}

/// Little-endian base-2^32 natural numbers, just enough for exact decimal conversion.
#[derive(Clone)]
struct Big(Vec<u32>);

impl Big {
    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }
    fn mul_small(&mut self, k: u32) {
        let mut carry = 0u64;
        for d in self.0.iter_mut() {
            let v = u64::from(*d) * u64::from(k) + carry;
            *d = v as u32;
            carry = v >> 32;
        }
        if carry != 0 {
            self.0.push(carry as u32);
        }
    }
    fn add_small(&mut self, k: u32) {
        let mut carry = u64::from(k);
        for d in self.0.iter_mut() {
            if carry == 0 {
                break;
            }
            let v = u64::from(*d) + carry;
            *d = v as u32;
            carry = v >> 32;
        }
        if carry != 0 {
            self.0.push(carry as u32);
        }
    }
    fn bits(&self) -> u32 {
        match self.0.last() {
            None => 0,
            Some(&top) => (self.0.len() as u32 - 1) * 32 + (32 - top.leading_zeros()),
        }
    }
    fn shl(&mut self, n: u32) {
        let words = (n / 32) as usize;
        let bits = n % 32;
        if bits != 0 {
            let mut carry = 0u32;
            for d in self.0.iter_mut() {
                let v = (*d << bits) | carry;
                carry = *d >> (32 - bits);
                *d = v;
            }
            if carry != 0 {
                self.0.push(carry);
            }
        }
        if words > 0 {
            self.0.splice(0..0, std::iter::repeat_n(0, words));
        }
    }
    fn cmp(&self, other: &Big) -> std::cmp::Ordering {
        self.0.len().cmp(&other.0.len()).then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
    }
    fn sub(&mut self, other: &Big) {
        let mut borrow = 0i64;
        for (i, d) in self.0.iter_mut().enumerate() {
            let v = i64::from(*d) - i64::from(other.0.get(i).copied().unwrap_or(0)) - borrow;
            borrow = i64::from(v < 0);
            *d = v.rem_euclid(1 << 32) as u32;
        }
        self.trim();
    }
    fn bit(&self, i: u32) -> bool {
        self.0.get((i / 32) as usize).is_some_and(|d| (d >> (i % 32)) & 1 == 1)
    }
}

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
    let sem = semantics(kind);
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
    let mut num = Big(Vec::new());
    for &d in digits {
        num.mul_small(10);
        num.add_small(u32::from(d));
    }
    let mut den = Big(vec![1]);
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
    let mut rem = Big(Vec::new());
    for i in (0..num.bits()).rev() {
        rem.shl(1);
        if num.bit(i) {
            if rem.0.is_empty() {
                rem.0.push(1);
            } else {
                rem.0[0] |= 1;
            }
        }
        q <<= 1;
        if rem.cmp(&den) != std::cmp::Ordering::Less {
            rem.sub(&den);
            q |= 1;
        }
    }
    let sticky = !rem.0.is_empty();
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
