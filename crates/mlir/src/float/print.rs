//! Floats as MLIR's `AsmPrinter::printFloat` writes them (`printFloatValue`, what dialect
//! printers use for `double` and `APFloat` parameters and dense elements use for every float
//! type): LLVM's `APFloat::toString` with six significant digits in scientific form when that
//! reads back to the same value, else its default form (up to 17 digits, plain notation for
//! moderate exponents), else the bits in hexadecimal (also for NaN and infinity). The digit
//! rounding mimics `APFloat::toString` exactly, including its early truncation of the binary
//! value, because that decides which of the three forms upstream picks. One printer serves every
//! builtin float type; the narrow ones (f4/f6/f8, tf32) always take the six-digit form.

use super::big::Big;
use super::decimal::decimal_to_bits;
use super::semantics::{Semantics, Value};
use crate::ir::FloatKind;

/// `APFloat::toString(precision, max_padding, truncate_zero)` of a finite non-zero value given as
/// `significand * 2^exp` (`negative` for the sign).
fn to_string_impl(
    negative: bool,
    mut exp: i64,
    significand: u128,
    semantics_precision: u32,
    format_precision: u32,
    max_padding: u32,
    truncate_zero: bool,
) -> String {
    let format_precision = if format_precision == 0 { 2 + semantics_precision * 59 / 196 } else { format_precision };
    let trailing = significand.trailing_zeros();
    exp += i64::from(trailing);
    let mut n = Big::from_u128(significand >> trailing);
    if exp > 0 {
        n.shl(exp as u32);
        exp = 0;
    } else if exp < 0 {
        for _ in 0..-exp {
            n.mul_small(5);
        }
    }
    // The early truncation of `AdjustToPrecision(APInt&, ...)`.
    let bits = n.bits();
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

/// The text `AsmPrinter::printFloat` gives the value with these `bits` (the low
/// [`FloatKind::bit_width`] of them) in format `kind`.
pub(crate) fn print_float(bits: impl Into<u128>, kind: FloatKind) -> String {
    let semantics = Semantics::of(kind);
    let width = semantics.bits;
    let bits = bits.into();
    let bits = if width == 128 { bits } else { bits & ((1u128 << width) - 1) };
    match semantics.decode(bits) {
        // APFloat's zero in scientific form with six digits.
        Value::Zero { negative } => return format!("{}0.000000e+00", if negative { "-" } else { "" }),
        Value::Finite { negative, significand, exp } => {
            let (exp, precision) = (i64::from(exp), semantics.precision);
            let short = to_string_impl(negative, exp, significand, precision, 6, 0, false);
            if decimal_to_bits(&short, kind) == Some(bits) {
                return short;
            }
            let long = to_string_impl(negative, exp, significand, precision, 0, 3, true);
            if long.contains('.') {
                return long;
            }
        }
        Value::Special => {}
    }
    format!("0x{bits:X}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f64_text(value: f64) -> String {
        print_float(value.to_bits(), FloatKind::F64)
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
        assert_eq!(print_float(0x3f000000u32, FloatKind::F32), "5.000000e-01");
    }

    #[test]
    fn narrow_floats_print_like_upstream() {
        let f = |kind, bits: u64| print_float(bits, kind);
        // Values checked against iree-opt's print of dense tensors of these types.
        assert_eq!(f(FloatKind::F8E4M3FN, 0x1D), "1.015630e-01");
        assert_eq!(f(FloatKind::F8E4M3FN, 0x7E), "4.480000e+02");
        assert_eq!(f(FloatKind::F8E4M3FN, 0x80), "-0.000000e+00");
        assert_eq!(f(FloatKind::F8E4M3FN, 0x7F), "0x7F");
        assert_eq!(f(FloatKind::F8E4M3FN, 0x01), "1.953130e-03");
        assert_eq!(f(FloatKind::F8E8M0FNU, 0x00), "5.877470e-39");
        assert_eq!(f(FloatKind::F8E8M0FNU, 0x80), "2.000000e+00");
        assert_eq!(f(FloatKind::F8E4M3FNUZ, 0x80), "0x80");
        assert_eq!(f(FloatKind::F4E2M1FN, 0xF), "-6.000000e+00");
        assert_eq!(f(FloatKind::TF32, 0x1EE66), "9.997550e-02");
        assert_eq!(f(FloatKind::F8E5M2, 0x7C), "0x7C");
    }

    #[test]
    fn wide_formats_print() {
        assert_eq!(print_float(0x3FFF_8000_0000_0000_0000u128, FloatKind::F80), "1.000000e+00");
        assert_eq!(print_float(0xBFFF_u128 << 112, FloatKind::F128), "-1.000000e+00");
        assert_eq!(print_float(0x7FFF_u128 << 112, FloatKind::F128), "0x7FFF0000000000000000000000000000");
    }
}
