//! Floats of every VHLO float type as MLIR's `printFloatValue` writes them. The IEEE types of 16
//! bits and more go through [`print_float`]; the 4/6/8-bit types and TF32 are decoded here to an
//! exact binary value and written in the six-digit scientific form of `APFloat::toString` (with
//! its early truncation and half-up rounding of decimal digits). That form always reads back to
//! the same value for these narrow types, so upstream never falls back to its longer forms for
//! them; NaN and infinity print as their bits in hexadecimal.

use super::super::float_text::{print_float, FloatFormat};

/// A VHLO float type's value semantics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Float {
    Ieee(FloatFormat),
    Narrow(Narrow),
}

/// How the narrow formats spend their bits and which encodings are special.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Narrow {
    pub name: &'static str,
    exponent_bits: u32,
    mantissa_bits: u32,
    bias: i32,
    special: Special,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Special {
    /// IEEE-like: the all-ones exponent holds infinities and NaNs.
    Ieee,
    /// `FN`: only all-ones exponent and mantissa is NaN; no infinities.
    FiniteNan,
    /// `FNUZ`: the negative-zero encoding is the only NaN.
    NegativeZeroNan,
    /// `FN` without NaN (the 4- and 6-bit types): every encoding is finite.
    None,
    /// `E8M0FNU`: no sign, no zero; all ones is NaN.
    Unsigned,
}

const fn narrow(name: &'static str, exponent_bits: u32, mantissa_bits: u32, bias: i32, special: Special) -> Narrow {
    Narrow { name, exponent_bits, mantissa_bits, bias, special }
}

pub(super) const TF32: Narrow = narrow("tf32", 8, 10, 127, Special::Ieee);
pub(super) const F8E5M2: Narrow = narrow("f8E5M2", 5, 2, 15, Special::Ieee);
pub(super) const F8E4M3: Narrow = narrow("f8E4M3", 4, 3, 7, Special::Ieee);
pub(super) const F8E3M4: Narrow = narrow("f8E3M4", 3, 4, 3, Special::Ieee);
pub(super) const F8E4M3FN: Narrow = narrow("f8E4M3FN", 4, 3, 7, Special::FiniteNan);
pub(super) const F8E4M3FNUZ: Narrow = narrow("f8E4M3FNUZ", 4, 3, 8, Special::NegativeZeroNan);
pub(super) const F8E5M2FNUZ: Narrow = narrow("f8E5M2FNUZ", 5, 2, 16, Special::NegativeZeroNan);
pub(super) const F8E4M3B11FNUZ: Narrow = narrow("f8E4M3B11FNUZ", 4, 3, 11, Special::NegativeZeroNan);
pub(super) const F8E8M0FNU: Narrow = narrow("f8E8M0FNU", 8, 0, 127, Special::Unsigned);
pub(super) const F6E2M3FN: Narrow = narrow("f6E2M3FN", 2, 3, 1, Special::None);
pub(super) const F6E3M2FN: Narrow = narrow("f6E3M2FN", 3, 2, 3, Special::None);
pub(super) const F4E2M1FN: Narrow = narrow("f4E2M1FN", 2, 1, 1, Special::None);

impl Float {
    /// The width of the value in bits (what `readAPFloatWithKnownSemantics` reads).
    pub(super) fn bits(self) -> u32 {
        match self {
            Float::Ieee(format) => format.width(),
            Float::Narrow(n) => n.width(),
        }
    }

    /// Bytes per element in a dense elements buffer (the width rounded up to whole bytes).
    pub(super) fn storage_bytes(self) -> usize {
        self.bits().div_ceil(8) as usize
    }

    /// The builtin type's keyword.
    pub(super) fn builtin_name(self) -> &'static str {
        match self {
            Float::Ieee(FloatFormat::F16) => "f16",
            Float::Ieee(FloatFormat::BF16) => "bf16",
            Float::Ieee(FloatFormat::F32) => "f32",
            Float::Ieee(FloatFormat::F64) => "f64",
            Float::Narrow(n) => n.name,
        }
    }

    /// The value with these bits (the low [`Float::bits`] of `bits`), as upstream prints it.
    pub(super) fn text(self, bits: u64) -> String {
        match self {
            Float::Ieee(format) => print_float(bits, format),
            Float::Narrow(n) => n.text(bits & ((1u64 << n.width()) - 1)),
        }
    }
}

impl Narrow {
    fn width(self) -> u32 {
        let sign = u32::from(self.special != Special::Unsigned);
        sign + self.exponent_bits + self.mantissa_bits
    }

    fn text(self, bits: u64) -> String {
        let hex = || format!("0x{bits:X}");
        let mantissa = bits & ((1u64 << self.mantissa_bits) - 1);
        let exponent = (bits >> self.mantissa_bits) & ((1u64 << self.exponent_bits) - 1);
        let all_ones = (1u64 << self.exponent_bits) - 1;
        let negative = self.special != Special::Unsigned && bits >> (self.width() - 1) == 1;
        match self.special {
            Special::Ieee if exponent == all_ones => return hex(),
            Special::FiniteNan if exponent == all_ones && mantissa == (1u64 << self.mantissa_bits) - 1 => return hex(),
            Special::NegativeZeroNan if negative && exponent == 0 && mantissa == 0 => return hex(),
            Special::Unsigned if exponent == all_ones => return hex(),
            _ => {}
        }
        let sign = if negative { "-" } else { "" };
        if self.special != Special::Unsigned && exponent == 0 && mantissa == 0 {
            return format!("{sign}0.000000e+00");
        }
        let shift = self.bias + self.mantissa_bits as i32;
        let (significand, exp) = if exponent == 0 && self.special != Special::Unsigned {
            (mantissa, 1 - shift)
        } else {
            (mantissa | (1u64 << self.mantissa_bits), exponent as i32 - shift)
        };
        format!("{sign}{}", scientific(significand, exp))
    }
}

/// `APFloat::toString(6, 0, false)` of `significand * 2^exp` (`significand > 0`).
fn scientific(significand: u64, exp: i32) -> String {
    const PRECISION: usize = 6;
    let zeros = significand.trailing_zeros();
    let mut value = Big::from(significand >> zeros);
    let mut exp = exp + zeros as i32;
    if exp >= 0 {
        (0..exp).for_each(|_| value.mul_small(2));
        exp = 0;
    } else {
        // N * 2^-k == N * 5^k * 10^-k: the exponent now counts tens.
        (0..-exp).for_each(|_| value.mul_small(5));
    }
    // Drop tens that cannot reach the printed digits (a floor division, as upstream does).
    let required = (PRECISION as u32 * 196).div_ceil(59);
    let bits = value.bit_len();
    if bits > required {
        let tens = (bits - required) * 59 / 196;
        for _ in 0..tens {
            value.div_small(10);
        }
        exp += tens as i32;
    }
    // Decimal digits, least significant first, without trailing zeros.
    let mut digits: Vec<u8> = Vec::new();
    while !value.is_zero() {
        let digit = value.div_small(10) as u8;
        if digits.is_empty() && digit == 0 {
            exp += 1;
        } else {
            digits.push(digit);
        }
    }
    if digits.len() > PRECISION {
        let mut first = digits.len() - PRECISION;
        if digits[first - 1] < 5 {
            while first < digits.len() && digits[first] == 0 {
                first += 1;
            }
        } else {
            // Round half up, carrying through nines.
            while first < digits.len() && digits[first] == 9 {
                first += 1;
            }
            if first == digits.len() {
                exp += first as i32;
                digits = vec![1];
                first = 0;
            } else {
                digits[first] += 1;
            }
        }
        exp += first as i32;
        digits.drain(..first);
    }
    let n = digits.len();
    let exp = exp + n as i32 - 1;
    let mut out = String::new();
    out.push(char::from(b'0' + digits[n - 1]));
    out.push('.');
    for i in (0..n - 1).rev() {
        out.push(char::from(b'0' + digits[i]));
    }
    (n - 1..PRECISION).for_each(|_| out.push('0'));
    out.push('e');
    out.push(if exp >= 0 { '+' } else { '-' });
    out.push_str(&format!("{:02}", exp.unsigned_abs()));
    out
}

/// A small unsigned big integer (little-endian 32-bit limbs).
struct Big(Vec<u32>);

impl Big {
    fn from(value: u64) -> Big {
        let mut big = Big(vec![value as u32, (value >> 32) as u32]);
        big.trim();
        big
    }

    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    fn bit_len(&self) -> u32 {
        match self.0.last() {
            Some(&top) => (self.0.len() as u32 - 1) * 32 + (32 - top.leading_zeros()),
            None => 0,
        }
    }

    fn mul_small(&mut self, factor: u32) {
        let mut carry = 0u64;
        for limb in self.0.iter_mut() {
            let product = u64::from(*limb) * u64::from(factor) + carry;
            *limb = product as u32;
            carry = product >> 32;
        }
        if carry != 0 {
            self.0.push(carry as u32);
        }
    }

    /// Divides in place; returns the remainder.
    fn div_small(&mut self, divisor: u32) -> u32 {
        let mut rem = 0u64;
        for limb in self.0.iter_mut().rev() {
            let current = (rem << 32) | u64::from(*limb);
            *limb = (current / u64::from(divisor)) as u32;
            rem = current % u64::from(divisor);
        }
        self.trim();
        rem as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_floats_print_like_upstream() {
        let f = |n: Narrow, bits: u64| Float::Narrow(n).text(bits);
        // Values checked against iree-opt's print of dense tensors of these types.
        assert_eq!(f(F8E4M3FN, 0x1D), "1.015630e-01");
        assert_eq!(f(F8E4M3FN, 0x7E), "4.480000e+02");
        assert_eq!(f(F8E4M3FN, 0x80), "-0.000000e+00");
        assert_eq!(f(F8E4M3FN, 0x7F), "0x7F");
        assert_eq!(f(F8E4M3FN, 0x01), "1.953130e-03");
        assert_eq!(f(F8E8M0FNU, 0x00), "5.877470e-39");
        assert_eq!(f(F8E8M0FNU, 0x80), "2.000000e+00");
        assert_eq!(f(F8E4M3FNUZ, 0x80), "0x80");
        assert_eq!(f(F4E2M1FN, 0xF), "-6.000000e+00");
        assert_eq!(f(TF32, 0x1EE66), "9.997550e-02");
        assert_eq!(f(F8E5M2, 0x7C), "0x7C");
    }
}
