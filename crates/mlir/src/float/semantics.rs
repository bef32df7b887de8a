//! How each builtin float type spends its bits (APFloat's `fltSemantics`): exponent range,
//! precision, width and which encodings are special, including the FN / FNUZ / E8M0FNU
//! conventions of the narrow types. Both the decimal reader and the printer go through this one
//! table, so a format is described once.

use crate::ir::FloatKind;

/// How a format encodes special values (APFloat's `fltNonfiniteBehavior` and friends).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Specials {
    /// IEEE 754: infinities and NaNs with an all-ones exponent.
    Ieee,
    /// No infinity; the all-ones pattern (exponent and mantissa) is the only NaN.
    NanAllOnes,
    /// No infinity, no negative zero; the negative-zero pattern is the only NaN (FNUZ types).
    NanNegativeZero,
    /// Neither infinity nor NaN.
    FiniteOnly,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Semantics {
    pub(super) max_exp: i32,
    pub(super) min_exp: i32,
    /// Significand bits including the integer bit.
    pub(super) precision: u32,
    pub(super) bits: u32,
    pub(super) specials: Specials,
    /// x87 extended precision stores the integer bit.
    explicit_integer_bit: bool,
    /// `false` for E8M0FNU: no sign bit, no zero, every value `2^(e - 127)`.
    pub(super) signed: bool,
}

/// What an encoding means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Value {
    /// NaN or infinity.
    Special,
    Zero {
        negative: bool,
    },
    /// `significand * 2^exp`, `significand > 0`.
    Finite {
        negative: bool,
        significand: u128,
        exp: i32,
    },
}

fn bit_len(v: u128) -> u32 {
    128 - v.leading_zeros()
}

impl Semantics {
    pub(super) fn of(kind: FloatKind) -> Semantics {
        let s = |max_exp, min_exp, precision, specials| Semantics {
            max_exp,
            min_exp,
            precision,
            bits: kind.bit_width(),
            specials,
            explicit_integer_bit: false,
            signed: true,
        };
        use Specials::*;
        match kind {
            FloatKind::F16 => s(15, -14, 11, Ieee),
            FloatKind::BF16 => s(127, -126, 8, Ieee),
            FloatKind::F32 => s(127, -126, 24, Ieee),
            FloatKind::F64 => s(1023, -1022, 53, Ieee),
            FloatKind::F128 => s(16383, -16382, 113, Ieee),
            FloatKind::F80 => Semantics { explicit_integer_bit: true, ..s(16383, -16382, 64, Ieee) },
            FloatKind::TF32 => s(127, -126, 11, Ieee),
            FloatKind::F8E5M2 => s(15, -14, 3, Ieee),
            FloatKind::F8E4M3 => s(7, -6, 4, Ieee),
            FloatKind::F8E3M4 => s(3, -2, 5, Ieee),
            FloatKind::F8E4M3FN => s(8, -6, 4, NanAllOnes),
            FloatKind::F8E5M2FNUZ => s(15, -15, 3, NanNegativeZero),
            FloatKind::F8E4M3FNUZ => s(7, -7, 4, NanNegativeZero),
            FloatKind::F8E4M3B11FNUZ => s(4, -10, 4, NanNegativeZero),
            FloatKind::F6E3M2FN => s(4, -2, 3, FiniteOnly),
            FloatKind::F6E2M3FN => s(2, 0, 4, FiniteOnly),
            FloatKind::F4E2M1FN => s(2, 0, 2, FiniteOnly),
            FloatKind::F8E8M0FNU => Semantics { signed: false, ..s(127, -127, 1, NanAllOnes) },
        }
    }

    fn exp_bits(&self) -> u32 {
        self.bits - u32::from(self.signed) - self.mantissa_bits()
    }

    /// The stored significand bits (with the integer bit only where it is explicit).
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

    pub(super) fn sign_bit(&self, negative: bool) -> u128 {
        if negative && self.signed {
            1u128 << (self.bits - 1)
        } else {
            0
        }
    }

    pub(super) fn nan(&self) -> u128 {
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

    pub(super) fn infinity(&self, negative: bool) -> u128 {
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

    /// What the low [`Semantics::bits`] of `bits` encode.
    pub(super) fn decode(&self, bits: u128) -> Value {
        let bits = if self.bits == 128 { bits } else { bits & ((1u128 << self.bits) - 1) };
        let negative = bits & self.sign_bit(true) != 0;
        let magnitude = bits & !self.sign_bit(true);
        let mantissa_bits = self.mantissa_bits();
        let mantissa = bits & ((1u128 << mantissa_bits) - 1);
        let exponent = (bits >> mantissa_bits) & ((1u128 << self.exp_bits()) - 1);
        let all_ones = (1u128 << self.exp_bits()) - 1;
        let special = match self.specials {
            Specials::Ieee => exponent == all_ones,
            Specials::NanAllOnes => magnitude == self.nan(),
            Specials::NanNegativeZero => bits == self.nan(),
            Specials::FiniteOnly => false,
        };
        if special {
            return Value::Special;
        }
        if self.signed && exponent == 0 && mantissa == 0 {
            return Value::Zero { negative };
        }
        // Subnormals (a zero exponent field) scale like the smallest normal exponent.
        let subnormal = self.signed && exponent == 0;
        let integer_bit = if self.explicit_integer_bit || subnormal { 0 } else { 1u128 << mantissa_bits };
        let exp = if subnormal { 1 } else { exponent as i32 } - self.bias() - (self.precision as i32 - 1);
        Value::Finite { negative, significand: mantissa | integer_bit, exp }
    }

    /// Rounds `(m + sticky) * 2^e` (with `m` nonzero) to the format, to nearest with ties to
    /// even, and encodes it.
    pub(super) fn encode(&self, negative: bool, m: u128, e: i32, sticky: bool) -> u128 {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_follows_each_convention() {
        let d = |kind, bits| Semantics::of(kind).decode(bits);
        let finite = |negative, significand, exp| Value::Finite { negative, significand, exp };
        assert_eq!(d(FloatKind::F16, 0x3C00), finite(false, 0x400, -10));
        assert_eq!(d(FloatKind::F16, 0x0001), finite(false, 1, -24));
        assert_eq!(d(FloatKind::F16, 0x8000), Value::Zero { negative: true });
        assert_eq!(d(FloatKind::F16, 0x7C00), Value::Special);
        assert_eq!(d(FloatKind::F80, 0x3FFF_8000_0000_0000_0000), finite(false, 1 << 63, -63));
        assert_eq!(d(FloatKind::F8E4M3FN, 0x7F), Value::Special);
        assert_eq!(d(FloatKind::F8E4M3FN, 0x78), finite(false, 8, 5));
        assert_eq!(d(FloatKind::F8E4M3FNUZ, 0x80), Value::Special);
        assert_eq!(d(FloatKind::F4E2M1FN, 0xF), finite(true, 3, 1));
        assert_eq!(d(FloatKind::F8E8M0FNU, 0x00), finite(false, 1, -127));
        assert_eq!(d(FloatKind::F8E8M0FNU, 0xFF), Value::Special);
    }
}
