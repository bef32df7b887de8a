//! Floats as MLIR's `AsmPrinter::printFloat` writes them (what dialect printers use for `double`
//! and `APFloat` parameters): LLVM's `APFloat::toString` with six significant digits in
//! scientific form when that reads back to the same value, else its default form (up to 17
//! digits, plain notation for moderate exponents), else the bits in hexadecimal. The digit
//! rounding mimics `APFloat::toString` exactly, including its early truncation of the binary
//! value, because that decides which of the three forms upstream picks.

/// The float formats that dialect parameters use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FloatFormat {
    F16,
    BF16,
    F32,
    F64,
}

impl FloatFormat {
    /// (significand bits including the implicit one, exponent bits).
    fn layout(self) -> (u32, u32) {
        match self {
            FloatFormat::F16 => (11, 5),
            FloatFormat::BF16 => (8, 8),
            FloatFormat::F32 => (24, 8),
            FloatFormat::F64 => (53, 11),
        }
    }

    pub(super) fn width(self) -> u32 {
        let (precision, exponent) = self.layout();
        precision + exponent
    }

    /// Reads decimal text back into this format's bits (round to nearest even), for the
    /// round-trip check.
    fn parse_bits(self, text: &str) -> Option<u64> {
        let value: f64 = text.parse().ok()?;
        Some(match self {
            FloatFormat::F64 => value.to_bits(),
            FloatFormat::F32 => u64::from(text.parse::<f32>().ok()?.to_bits()),
            FloatFormat::F16 | FloatFormat::BF16 => narrow(value, self),
        })
    }
}

/// `value` rounded to nearest even into a 16-bit format (the decimal is first rounded to f64,
/// which can differ from a direct conversion only for decimals within 2^-53 of a tie).
fn narrow(value: f64, format: FloatFormat) -> u64 {
    let (precision, exponent_bits) = format.layout();
    let bits = value.to_bits();
    let sign = (bits >> 63) << 15;
    let bias = (1i64 << (exponent_bits - 1)) - 1;
    let abs = value.abs();
    if abs == 0.0 {
        return sign;
    }
    let mantissa_bits = precision - 1;
    let exp = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut significand = (bits & ((1u64 << 52) - 1)) | (1u64 << 52);
    // Target exponent (clamped to the subnormal range).
    let target_exp = exp.max(1 - bias);
    let shift = (52 - i64::from(mantissa_bits)) + (target_exp - exp);
    let shift = shift.min(63) as u32;
    let rest = significand & ((1u64 << shift) - 1);
    significand >>= shift;
    let half = 1u64 << (shift - 1);
    if rest > half || (rest == half && significand & 1 == 1) {
        significand += 1;
    }
    let mut biased = if significand >> mantissa_bits == 0 { 0 } else { target_exp + bias };
    if significand >> (mantissa_bits + 1) != 0 {
        significand >>= 1;
        biased += 1;
    }
    if biased >= (1 << exponent_bits) - 1 {
        return sign | (((1u64 << exponent_bits) - 1) << mantissa_bits);
    }
    sign | ((biased as u64) << mantissa_bits) | (significand & ((1u64 << mantissa_bits) - 1))
}

/// A little-endian arbitrary-precision unsigned integer, just enough for exact decimal digits.
#[derive(Clone)]
struct Big(Vec<u32>);

impl Big {
    fn from_u64(value: u64) -> Big {
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

    fn active_bits(&self) -> u32 {
        match self.0.last() {
            None => 0,
            Some(&top) => (self.0.len() as u32 - 1) * 32 + (32 - top.leading_zeros()),
        }
    }

    fn mul_small(&mut self, factor: u32) {
        let mut carry = 0u64;
        for word in self.0.iter_mut() {
            let product = u64::from(*word) * u64::from(factor) + carry;
            *word = product as u32;
            carry = product >> 32;
        }
        if carry != 0 {
            self.0.push(carry as u32);
        }
    }

    fn shl(&mut self, bits: u32) {
        let words = (bits / 32) as usize;
        let bits = bits % 32;
        if bits != 0 {
            let mut carry = 0u32;
            for word in self.0.iter_mut() {
                let next = *word >> (32 - bits);
                *word = (*word << bits) | carry;
                carry = next;
            }
            if carry != 0 {
                self.0.push(carry);
            }
        }
        self.0.splice(0..0, std::iter::repeat_n(0, words));
        self.trim();
    }

    /// Divides in place, returning the remainder.
    fn divrem_small(&mut self, divisor: u32) -> u32 {
        let mut rem = 0u64;
        for word in self.0.iter_mut().rev() {
            let cur = (rem << 32) | u64::from(*word);
            *word = (cur / u64::from(divisor)) as u32;
            rem = cur % u64::from(divisor);
        }
        self.trim();
        rem as u32
    }
}

/// `APFloat::toString(precision, max_padding, truncate_zero)` of a finite non-zero value given as
/// `significand * 2^exp` (`negative` for the sign).
fn to_string_impl(
    negative: bool,
    mut exp: i64,
    significand: u64,
    semantics_precision: u32,
    format_precision: u32,
    max_padding: u32,
    truncate_zero: bool,
) -> String {
    let format_precision = if format_precision == 0 { 2 + semantics_precision * 59 / 196 } else { format_precision };
    let trailing = significand.trailing_zeros();
    exp += i64::from(trailing);
    let mut n = Big::from_u64(significand >> trailing);
    if exp > 0 {
        n.shl(exp as u32);
        exp = 0;
    } else if exp < 0 {
        for _ in 0..-exp {
            n.mul_small(5);
        }
    }
    // The early truncation of `AdjustToPrecision(APInt&, ...)`.
    let bits = n.active_bits();
    let bits_required = (format_precision * 196).div_ceil(59);
    if bits > bits_required {
        let removable = (bits - bits_required) * 59 / 196;
        for _ in 0..removable {
            n.divrem_small(10);
        }
        exp += i64::from(removable);
    }
    // Digits, least significant first, without trailing zeros.
    let mut digits: Vec<u8> = Vec::new();
    while !n.is_zero() {
        let d = n.divrem_small(10) as u8;
        if digits.is_empty() && d == 0 {
            exp += 1;
        } else {
            digits.push(b'0' + d);
        }
    }
    // `AdjustToPrecision(SmallVectorImpl<char>&, ...)`: round half up to the precision.
    let count = digits.len();
    if count > format_precision as usize {
        let mut first = count - format_precision as usize;
        if digits[first - 1] < b'5' {
            while first < count && digits[first] == b'0' {
                first += 1;
            }
            exp += first as i64;
            digits.drain(..first);
        } else {
            let mut i = first;
            while i < count {
                if digits[i] == b'9' {
                    first += 1;
                    i += 1;
                } else {
                    digits[i] += 1;
                    break;
                }
            }
            exp += first as i64;
            if first == count {
                digits = vec![b'1'];
            } else {
                digits.drain(..first);
            }
        }
    }
    let nd = digits.len();
    let scientific = if max_padding == 0 {
        true
    } else if exp >= 0 {
        exp as u64 > u64::from(max_padding) || nd as u64 + exp as u64 > u64::from(format_precision)
    } else {
        let msd = exp + nd as i64 - 1;
        msd < 0 && (-msd) as u64 > u64::from(max_padding)
    };
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    let digit = |i: usize| digits[nd - 1 - i] as char;
    if scientific {
        exp += nd as i64 - 1;
        out.push(digit(0));
        out.push('.');
        if nd == 1 && truncate_zero {
            out.push('0');
        } else {
            (1..nd).for_each(|i| out.push(digit(i)));
        }
        if !truncate_zero && format_precision as usize > nd - 1 {
            (0..format_precision as usize - nd + 1).for_each(|_| out.push('0'));
        }
        out.push(if truncate_zero { 'E' } else { 'e' });
        out.push(if exp >= 0 { '+' } else { '-' });
        let magnitude = exp.unsigned_abs().to_string();
        if !truncate_zero && magnitude.len() < 2 {
            out.push('0');
        }
        out.push_str(&magnitude);
        return out;
    }
    if exp >= 0 {
        (0..nd).for_each(|i| out.push(digit(i)));
        (0..exp).for_each(|_| out.push('0'));
        return out;
    }
    let whole = exp + nd as i64;
    let mut i = 0usize;
    if whole > 0 {
        while (i as i64) < whole {
            out.push(digit(i));
            i += 1;
        }
        out.push('.');
    } else {
        out.push_str("0.");
        (0..-whole).for_each(|_| out.push('0'));
    }
    (i..nd).for_each(|i| out.push(digit(i)));
    out
}

/// The text `AsmPrinter::printFloat` gives the value with these `bits` in `format`.
pub(super) fn print_float(bits: u64, format: FloatFormat) -> String {
    let (precision, exponent_bits) = format.layout();
    let mantissa_bits = precision - 1;
    let width = precision + exponent_bits;
    let bits = if width == 64 { bits } else { bits & ((1u64 << width) - 1) };
    let negative = (bits >> (width - 1)) & 1 == 1;
    let biased = (bits >> mantissa_bits) & ((1u64 << exponent_bits) - 1);
    let mantissa = bits & ((1u64 << mantissa_bits) - 1);
    let bias = (1i64 << (exponent_bits - 1)) - 1;
    let special = biased == (1u64 << exponent_bits) - 1;
    if !special {
        if biased == 0 && mantissa == 0 {
            // APFloat's zero in scientific form with six digits.
            return format!("{}0.000000e+00", if negative { "-" } else { "" });
        }
        let (significand, exp) = if biased == 0 {
            (mantissa, 1 - bias - i64::from(mantissa_bits))
        } else {
            (mantissa | (1u64 << mantissa_bits), biased as i64 - bias - i64::from(mantissa_bits))
        };
        let short = to_string_impl(negative, exp, significand, precision, 6, 0, false);
        if format.parse_bits(&short) == Some(bits) {
            return short;
        }
        let long = to_string_impl(negative, exp, significand, precision, 0, 3, true);
        if long.contains('.') {
            return long;
        }
    }
    format!("0x{bits:X}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f64_text(value: f64) -> String {
        print_float(value.to_bits(), FloatFormat::F64)
    }

    #[test]
    fn matches_upstream_choices() {
        assert_eq!(f64_text(0.5), "5.000000e-01");
        assert_eq!(f64_text(-0.998), "-0.998");
        assert_eq!(f64_text(-0.997), "-0.99699999999999999");
        assert_eq!(f64_text(1.2321), "1.232100e+00");
        assert_eq!(f64_text(1.23456789e-7), "1.2345678899999999E-7");
        assert_eq!(f64_text(0.1234565), "0.1234565");
        assert_eq!(f64_text(123456789.0), "0x419D6F3454000000");
        assert_eq!(f64_text(f64::INFINITY), "0x7FF0000000000000");
        assert_eq!(f64_text(0.0), "0.000000e+00");
        assert_eq!(f64_text(1e-5), "1.000000e-05");
        assert_eq!(print_float(0x3f000000, FloatFormat::F32), "5.000000e-01");
    }
}
