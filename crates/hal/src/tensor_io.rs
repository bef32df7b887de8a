//! Tensors as IREE's tools spell them: `--input=2x2xi32=[[1 2][3 4]]`, `4x8xf32=@a.bin`,
//! `@a.npy`, the `2x2xi32=[1 2][3 4]` that `iree-run-module` prints for a `hal.buffer_view`
//! result, `--output=@f.npy`, and the `--expected_output` comparison with its `[FAILED]` report.
//!
//! `rtx run` must print byte for byte what `iree-run-module` 3.13 prints, so everything here
//! follows that tool, quirks included: element text is read like C's `strtol`/`strtoul`/
//! `strtof` with base 0 (hex, octal, trailing garbage ignored, over-long tokens rejected), `i1`
//! and sub-byte or complex elements are written and read as hex bytes, floats print with `%G`.
//!
//! A [`Diagnostic`]'s message is exactly the text IREE puts after `CODE; `, so a caller that
//! prints `CODE; message; parsing input `<text>`` reproduces IREE's line. Where IREE reports a
//! bare status code (a token that does not parse as the element type, a tensor it cannot
//! print), the message is empty: IREE's own annotation — the input text the caller adds —
//! is then the whole story, and adding words here would make `rtx run` print a different line.
//!
//! How `iree-run-module` dispatches one `--input` (after trimming C whitespace, [`c_trim`]):
//! empty is an error (`no value specified for input`); `(null)`/`(ignored)` is a null value;
//! a leading `@`, `+` or `*` reads `.npy` arrays ([`read_npy_inputs`]); a leading `&` is the
//! storage buffer of the tensor after it; a non-ref argument is a scalar; anything else is a
//! tensor ([`parse_tensor`]).

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;

use super::element_type::ElementType;
use super::{npy, npz};
use rtx_host::{Diagnostic, StatusCode};
use rtx_vm::abi::ValueKind;
use rtx_vm::function_io::{format_g, parse_scalar};
use rtx_vm::value::Value;

/// The most dimensions a tensor may have in the tools (`iree_hal_dim_t shape[128]`).
pub const MAX_RANK: usize = 128;

/// The element count `--expected_output` failures print tensors with, whatever
/// `--output_max_element_count` says.
pub const COMPARISON_MAX_ELEMENT_COUNT: usize = 1024;

/// What `iree-run-module` prints after the comparison when every result matched.
pub const SUCCESS_LINE: &str = "[SUCCESS] all function outputs matched their expected values.\n";

/// A dense row-major tensor in host memory: what a `hal.buffer_view` argument or result holds
/// when the tools read or print it.
///
/// `data` holds exactly [`view_byte_length`] bytes: elements back to back in C order, sub-byte
/// elements packed (two `i4` per byte), as IREE sizes a buffer view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostTensor {
    pub shape: Vec<usize>,
    pub element_type: ElementType,
    pub data: Vec<u8>,
}

impl HostTensor {
    /// A zero-filled tensor (`--input=1x28x28x1xf32`).
    pub fn zeros(shape: Vec<usize>, element_type: ElementType) -> Result<HostTensor, Diagnostic> {
        let length = view_byte_length(&shape, element_type)?;
        let mut data = Vec::new();
        // A shape the machine cannot hold fails like IREE's allocator, without aborting.
        data.try_reserve_exact(length)
            .map_err(|_| Diagnostic::new(StatusCode::ResourceExhausted, "libc allocator failed the request"))?;
        data.resize(length, 0);
        Ok(HostTensor { shape, element_type, data })
    }

    /// The product of the dimensions (1 for rank 0), saturating: a shape that large was
    /// rejected by [`view_byte_length`] before any data existed.
    pub fn element_count(&self) -> usize {
        self.shape.iter().try_fold(1usize, |count, &dim| count.checked_mul(dim)).unwrap_or(usize::MAX)
    }

    /// `2x3xf32` (`f32` at rank 0): the shape and type as IREE's matchers name them.
    pub fn shape_and_type(&self) -> String {
        let mut text = String::new();
        for dim in &self.shape {
            text.push_str(&format!("{dim}x"));
        }
        text.push_str(&self.element_type.to_string());
        text
    }

    /// The text `iree-run-module` prints for this tensor as a result (the line after
    /// `result[N]: hal.buffer_view`): `2x2xi32=[1 2][3 4]`, at most `max_element_count` elements
    /// in all, each innermost row cut short with `...`.
    ///
    /// Fails with a bare `OUT_OF_RANGE` where IREE does: a packed sub-byte tensor of more than
    /// one byte's worth of elements, which IREE's printer steps through a byte per element.
    pub fn format(&self, max_element_count: usize) -> Result<String, Diagnostic> {
        // IREE walks every row even when it prints no element; refuse shapes whose brackets
        // alone would not fit in memory rather than loop for ever.
        let mut rows = 1usize;
        let mut brackets = 0usize;
        for &dim in self.shape.iter().take(self.shape.len().saturating_sub(1)) {
            rows = rows.saturating_mul(dim);
            brackets = brackets.saturating_add(rows);
        }
        if brackets > 1 << 26 {
            return Err(Diagnostic::new(
                StatusCode::ResourceExhausted,
                format!("a {} tensor prints {brackets} rows; too many to format", self.shape_and_type()),
            ));
        }
        let mut text = self.shape_and_type();
        text.push('=');
        let mut remaining = max_element_count;
        let shape: &[usize] = if self.shape.is_empty() { &[1] } else { &self.shape };
        format_rows(&self.data, shape, self.element_type, &mut remaining, &mut text)
            .ok_or_else(|| Diagnostic::new(StatusCode::OutOfRange, ""))?;
        Ok(text)
    }
}

/// A tensor of strings in host memory (ONNX's STRING tensors), in row-major order: what kernel
/// graphs take and return where IREE's programs have only numbers. `.npy` files hold them as
/// numpy's `<U` arrays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StringArray {
    pub shape: Vec<usize>,
    pub strings: Vec<String>,
}

impl StringArray {
    /// `2x2xstring=["a" "b"]["c" "d"]`, as a numeric tensor prints (see [`HostTensor::format`]),
    /// each string quoted and escaped as Rust's `{:?}` escapes it.
    pub fn format(&self, max_element_count: usize) -> String {
        let mut text: String = self.shape.iter().map(|dim| format!("{dim}x")).collect();
        text.push_str("string=");
        let mut remaining = max_element_count;
        let shape: &[usize] = if self.shape.is_empty() { &[1] } else { &self.shape };
        format_string_rows(&self.strings, shape, &mut remaining, &mut text);
        text
    }
}

/// One level of [`StringArray::format`]: rows in brackets, innermost rows cut short with `...`.
fn format_string_rows(strings: &[String], shape: &[usize], remaining: &mut usize, text: &mut String) {
    let Some((&outer, inner)) = shape.split_first() else { return };
    if inner.is_empty() {
        let count = outer.min(*remaining).min(strings.len());
        *remaining -= count;
        let row: Vec<String> = strings[..count].iter().map(|s| format!("{s:?}")).collect();
        text.push_str(&row.join(" "));
        if count < outer {
            text.push_str("...");
        }
        return;
    }
    let stride = inner.iter().product::<usize>();
    for index in 0..outer {
        text.push('[');
        let start = (index * stride).min(strings.len());
        format_string_rows(&strings[start..(start + stride).min(strings.len())], inner, remaining, text);
        text.push(']');
    }
}

/// One level of IREE's recursive buffer printer; `None` where IREE finds the data too short.
fn format_rows(
    data: &[u8],
    shape: &[usize],
    element_type: ElementType,
    remaining: &mut usize,
    text: &mut String,
) -> Option<()> {
    let element_size = element_type.dense_byte_count();
    let (&outer, inner) = shape.split_first()?;
    if inner.is_empty() {
        let count = outer.min(*remaining);
        let row = data.get(..count.checked_mul(element_size)?)?;
        *remaining -= count;
        for (index, element) in row.chunks_exact(element_size.max(1)).take(count).enumerate() {
            if index > 0 {
                text.push(' ');
            }
            text.push_str(&format_element(element, element_type));
        }
        if count < outer {
            text.push_str("...");
        }
        return Some(());
    }
    let stride = inner.iter().try_fold(element_size, |size, &dim| size.checked_mul(dim))?;
    if data.len() < stride.checked_mul(outer)? {
        return None;
    }
    for index in 0..outer {
        text.push('[');
        format_rows(&data[index * stride..][..stride], inner, element_type, remaining, text)?;
        text.push(']');
    }
    Some(())
}

/// Bytes a dense row-major view of this shape and type takes, with IREE's checks: a type of no
/// bits cannot be sized, and neither can a shape whose size overflows 64 bits.
pub fn view_byte_length(shape: &[usize], element_type: ElementType) -> Result<usize, Diagnostic> {
    let bits = element_type.bit_count();
    if bits == 0 {
        return Err(Diagnostic::new(StatusCode::InvalidArgument, "opaque element types cannot be indexed"));
    }
    let mut count: u64 = 1;
    if !shape.contains(&0) {
        for (index, &dim) in shape.iter().enumerate() {
            count = count.checked_mul(dim as u64).ok_or_else(|| {
                Diagnostic::new(
                    StatusCode::OutOfRange,
                    format!("shape element count overflows device size at dimension {index}"),
                )
            })?;
        }
    } else {
        count = 0;
    }
    let bits = bits as u64;
    let bytes = if bits.is_multiple_of(8) {
        count.checked_mul(bits / 8)
    } else if 8 % bits == 0 {
        Some(count.div_ceil(8 / bits))
    } else {
        count.checked_mul(bits).and_then(|b| b.checked_add(7)).map(|b| b / 8)
    };
    let overflow = || Diagnostic::new(StatusCode::OutOfRange, "packed byte count overflows device size");
    usize::try_from(bytes.ok_or_else(overflow)?).map_err(|_| overflow())
}

// ---------------------------------------------------------------------------------------------
// C text conventions
// ---------------------------------------------------------------------------------------------

/// C's `isspace` in the C locale.
fn is_c_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r')
}

/// Strips C whitespace from both ends, as IREE trims every `--input` before using it.
pub fn c_trim(text: &str) -> &str {
    text.trim_matches(|c: char| c.is_ascii() && is_c_space(c as u8))
}

/// What `strtoull` with base 0 reads from the start of `text`: the sign, the magnitude and
/// whether it overflowed 64 bits; `None` when no digit is read or `text` has at least `limit`
/// bytes (IREE copies tokens into a fixed scratch buffer and rejects longer ones).
fn c_scan_integer(text: &str, limit: usize) -> Option<(bool, u64, bool)> {
    if text.len() >= limit {
        return None;
    }
    let bytes = text.as_bytes();
    let mut at = bytes.iter().take_while(|b| is_c_space(**b)).count();
    let negative = bytes.get(at) == Some(&b'-');
    if matches!(bytes.get(at), Some(b'-' | b'+')) {
        at += 1;
    }
    let mut base = 10;
    if bytes.get(at) == Some(&b'0') {
        let hex =
            matches!(bytes.get(at + 1), Some(b'x' | b'X')) && bytes.get(at + 2).is_some_and(|b| b.is_ascii_hexdigit());
        if hex {
            base = 16;
            at += 2;
        } else {
            base = 8;
        }
    }
    let digits: Vec<u32> = bytes[at..].iter().map_while(|b| (*b as char).to_digit(base)).collect();
    if digits.is_empty() {
        return None;
    }
    let mut value: u64 = 0;
    let mut overflow = false;
    for digit in digits {
        match value.checked_mul(u64::from(base)).and_then(|v| v.checked_add(u64::from(digit))) {
            Some(next) => value = next,
            None => overflow = true,
        }
    }
    Some((negative, value, overflow))
}

/// `strtol` (a 64-bit `long`) then IREE's truncation to 32 bits: `4294967297` reads as 1.
pub(crate) fn c_atoi_i32(text: &str) -> Option<i32> {
    c_strtoll(text, 16).map(|value| value as i32)
}

/// `strtoul` then truncation to 32 bits; a minus sign negates modulo 2^64, as in C.
pub(crate) fn c_atoi_u32(text: &str) -> Option<u32> {
    c_strtoull(text, 16).map(|value| value as u32)
}

fn c_atoi_i64(text: &str) -> Option<i64> {
    c_strtoll(text, 32)
}

pub(crate) fn c_atoi_u64(text: &str) -> Option<u64> {
    c_strtoull(text, 32)
}

/// `strtoll`: a magnitude past the signed range saturates with `ERANGE`, which IREE rejects.
fn c_strtoll(text: &str, limit: usize) -> Option<i64> {
    let (negative, magnitude, overflow) = c_scan_integer(text, limit)?;
    match (negative, overflow) {
        (_, true) => None,
        (false, false) => i64::try_from(magnitude).ok(),
        (true, false) if magnitude <= 1 << 63 => Some(0i64.wrapping_sub_unsigned(magnitude)),
        (true, false) => None,
    }
}

fn c_strtoull(text: &str, limit: usize) -> Option<u64> {
    let (negative, magnitude, overflow) = c_scan_integer(text, limit)?;
    (!overflow).then(|| if negative { magnitude.wrapping_neg() } else { magnitude })
}

/// `strtof` as IREE's `iree_string_view_atof` uses it (underflow to zero rejected, overflow to
/// infinity kept), through the scalar parser `rtx run` already uses for `f32` arguments.
fn c_atof(text: &str) -> Option<f32> {
    match parse_scalar(text, ValueKind::F32) {
        Ok(Value::F32(value)) => Some(value),
        _ => None,
    }
}

fn c_atod(text: &str) -> Option<f64> {
    match parse_scalar(text, ValueKind::F64) {
        Ok(Value::F64(value)) => Some(value),
        _ => None,
    }
}

/// C's `%G`, which IREE's element printer uses for every float type.
fn format_upper_g(value: f64) -> String {
    format_g(value).to_ascii_uppercase()
}

// ---------------------------------------------------------------------------------------------
// Narrow floats, converted exactly as IREE's runtime math helpers do
// ---------------------------------------------------------------------------------------------

/// A float format narrower than f32, described as IREE's generic converters describe it.
#[derive(Clone, Copy)]
struct NarrowFloat {
    exponent_bits: u32,
    mantissa_bits: u32,
    has_infinity: bool,
    has_nan: bool,
    bias_tweak: i32,
    nan_is_negative_zero: bool,
}

const F16: NarrowFloat = NarrowFloat::ieee(5, 10);
const BF16: NarrowFloat = NarrowFloat::ieee(8, 7);
const F8_E5M2: NarrowFloat = NarrowFloat::ieee(5, 2);
const F8_E4M3_FN: NarrowFloat = NarrowFloat { has_infinity: false, ..NarrowFloat::ieee(4, 3) };
const F8_E5M2_FNUZ: NarrowFloat =
    NarrowFloat { has_infinity: false, bias_tweak: 1, nan_is_negative_zero: true, ..NarrowFloat::ieee(5, 2) };
const F8_E4M3_FNUZ: NarrowFloat =
    NarrowFloat { has_infinity: false, bias_tweak: 1, nan_is_negative_zero: true, ..NarrowFloat::ieee(4, 3) };

impl NarrowFloat {
    const fn ieee(exponent_bits: u32, mantissa_bits: u32) -> NarrowFloat {
        NarrowFloat {
            exponent_bits,
            mantissa_bits,
            has_infinity: true,
            has_nan: true,
            bias_tweak: 0,
            nan_is_negative_zero: false,
        }
    }

    fn sign_mask(self) -> u32 {
        1 << (self.exponent_bits + self.mantissa_bits)
    }

    fn exponent_mask(self) -> u32 {
        self.sign_mask() - (1 << self.mantissa_bits)
    }

    fn mantissa_mask(self) -> u32 {
        (1 << self.mantissa_bits) - 1
    }

    fn bias(self) -> i32 {
        self.bias_tweak + (1 << (self.exponent_bits - 1)) - 1
    }

    fn decode(self, bits: u32) -> f32 {
        let sign = if bits & self.sign_mask() != 0 { -1.0 } else { 1.0 };
        let exponent = bits & self.exponent_mask();
        let mantissa = bits & self.mantissa_mask();
        let scaled = |m: u32, e: i32| (f64::from(m) * 2f64.powi(e)) as f32;
        if exponent == self.exponent_mask() {
            if self.has_infinity {
                return if self.has_nan && mantissa != 0 { f32::NAN } else { sign * f32::INFINITY };
            }
            if self.has_nan && mantissa == self.mantissa_mask() && !self.nan_is_negative_zero {
                return f32::NAN;
            }
        } else if self.has_nan && self.nan_is_negative_zero && bits == self.sign_mask() {
            return f32::NAN;
        } else if exponent == 0 {
            return sign * scaled(mantissa, 1 - self.bias() - self.mantissa_bits as i32);
        }
        let exponent = (exponent >> self.mantissa_bits) as i32;
        sign * scaled(mantissa + (1 << self.mantissa_bits), exponent - self.bias() - self.mantissa_bits as i32)
    }

    /// Round to nearest even, with IREE's choices where the format has no infinity or NaN.
    fn encode(self, value: f32) -> u32 {
        let bits = value.to_bits();
        let sign = (bits >> 31) << (self.exponent_bits + self.mantissa_bits);
        let f32_exponent = bits & 0x7F80_0000;
        let f32_mantissa = bits & 0x007F_FFFF;
        let shift = 23 - self.mantissa_bits;
        let round = |input: u32, shift: u32| {
            let even = 1u32 << shift;
            let half = even >> 1;
            input.wrapping_add(if input & even != 0 { half } else { half.wrapping_sub(1) })
        };
        let mut exponent_field = 0u32;
        let mut mantissa_field = 0u32;
        let mut nan = false;
        let mut infinity = false;
        if f32_exponent == 0x7F80_0000 {
            exponent_field = self.exponent_mask();
            nan = f32_mantissa != 0;
            infinity = !nan;
        } else if f32_exponent == 0 {
            if self.exponent_bits == 8 {
                mantissa_field = round(f32_mantissa, shift) >> shift;
            }
        } else {
            let mut exponent = (f32_exponent >> 23) as i32 - 127;
            if exponent > (1 << (self.exponent_bits - 1)) - i32::from(self.has_infinity) {
                infinity = true;
            } else if exponent + self.bias() <= 0 {
                let subnormal_shift = shift as i32 - exponent + (1 - self.bias());
                if (0..=23).contains(&subnormal_shift) {
                    let shift = subnormal_shift as u32;
                    mantissa_field = round((1 << 23) + f32_mantissa, shift) >> shift;
                }
            } else {
                let mut rounded = round(f32_mantissa, shift);
                if rounded > 0x007F_FFFF {
                    rounded = 0;
                    exponent += 1;
                }
                exponent_field = ((exponent + self.bias()) as u32) << self.mantissa_bits;
                mantissa_field = rounded >> shift;
                nan = !self.has_infinity && exponent_field > self.exponent_mask();
            }
        }
        if infinity {
            if self.has_infinity {
                return sign | self.exponent_mask();
            }
            if !self.has_nan {
                return sign | self.exponent_mask() | self.mantissa_mask();
            }
            nan = true;
        }
        if nan {
            return match (self.has_nan, self.nan_is_negative_zero) {
                (false, _) => 0,
                (true, true) => self.sign_mask(),
                (true, false) => sign | self.exponent_mask() | self.mantissa_mask(),
            };
        }
        if self.nan_is_negative_zero && exponent_field == 0 && mantissa_field == 0 {
            return 0;
        }
        sign | exponent_field | mantissa_field
    }
}

/// The power-of-two scale format (no sign, no zero, no mantissa) has its own converters in IREE.
fn f8e8m0fnu_to_f32(bits: u8) -> f32 {
    if bits == 0xFF {
        f32::NAN
    } else {
        2f64.powi(i32::from(bits) - 127) as f32
    }
}

fn f32_to_f8e8m0fnu(value: f32) -> u8 {
    if !value.is_finite() {
        return 0xFF;
    }
    if value <= 0.0 {
        return 0;
    }
    // frexp: value = normalized * 2^exponent with normalized in [0.5, 1).
    let (normalized, exponent) = frexp(value);
    let biased = exponent - i32::from(normalized < 0.75) + 127;
    biased.clamp(0, 0xFF) as u8
}

fn frexp(value: f32) -> (f32, i32) {
    let bits = value.to_bits();
    let exponent = ((bits >> 23) & 0xFF) as i32;
    if exponent == 0 {
        // Subnormal: scale into the normal range first.
        let (normalized, exponent) = frexp(value * 2f32.powi(64));
        return (normalized, exponent - 64);
    }
    (f32::from_bits((bits & 0x807F_FFFF) | (126 << 23)), exponent - 126)
}

fn narrow_float(element_type: ElementType) -> Option<NarrowFloat> {
    Some(match element_type {
        ElementType::FLOAT_16 => F16,
        ElementType::BFLOAT_16 => BF16,
        ElementType::FLOAT_8_E5M2 => F8_E5M2,
        ElementType::FLOAT_8_E4M3_FN => F8_E4M3_FN,
        ElementType::FLOAT_8_E5M2_FNUZ => F8_E5M2_FNUZ,
        ElementType::FLOAT_8_E4M3_FNUZ => F8_E4M3_FNUZ,
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------------
// Elements
// ---------------------------------------------------------------------------------------------

/// Parses one element token into `out` (`element_type.dense_byte_count()` bytes, little-endian).
/// Integer ranges are IREE's: `i8` takes -128..=255, `si8` anything up to 127 (wrapping below),
/// `ui8` up to 255 after C's unsigned negation. Types without a text form (`i1`, sub-byte,
/// complex, opaque) take exactly two hex digits per byte.
pub fn parse_element(token: &str, element_type: ElementType, out: &mut [u8]) -> Result<(), Diagnostic> {
    let bare = || Diagnostic::new(StatusCode::InvalidArgument, "");
    let bytes: Vec<u8> = match element_type {
        ElementType::INT_8 => match c_atoi_i32(token) {
            Some(v) if (-128..=255).contains(&v) => vec![v as u8],
            _ => return Err(bare()),
        },
        ElementType::SINT_8 => match c_atoi_i32(token) {
            Some(v) if v <= 127 => vec![v as u8],
            _ => return Err(bare()),
        },
        ElementType::UINT_8 => match c_atoi_u32(token) {
            Some(v) if v <= 255 => vec![v as u8],
            _ => return Err(bare()),
        },
        ElementType::INT_16 => match c_atoi_i32(token) {
            Some(v) if (-32768..=65535).contains(&v) => (v as u16).to_le_bytes().to_vec(),
            _ => return Err(bare()),
        },
        ElementType::SINT_16 => match c_atoi_i32(token) {
            Some(v) if v <= 32767 => (v as u16).to_le_bytes().to_vec(),
            _ => return Err(bare()),
        },
        ElementType::UINT_16 => match c_atoi_u32(token) {
            Some(v) if v <= 65535 => (v as u16).to_le_bytes().to_vec(),
            _ => return Err(bare()),
        },
        ElementType::INT_32 | ElementType::SINT_32 => c_atoi_i32(token).ok_or_else(bare)?.to_le_bytes().to_vec(),
        ElementType::UINT_32 => c_atoi_u32(token).ok_or_else(bare)?.to_le_bytes().to_vec(),
        ElementType::INT_64 | ElementType::SINT_64 => c_atoi_i64(token).ok_or_else(bare)?.to_le_bytes().to_vec(),
        ElementType::UINT_64 => c_atoi_u64(token).ok_or_else(bare)?.to_le_bytes().to_vec(),
        ElementType::FLOAT_32 => c_atof(token).ok_or_else(bare)?.to_le_bytes().to_vec(),
        ElementType::FLOAT_64 => c_atod(token).ok_or_else(bare)?.to_le_bytes().to_vec(),
        ElementType::FLOAT_8_E8M0_FNU => vec![f32_to_f8e8m0fnu(c_atof(token).ok_or_else(bare)?)],
        _ => match narrow_float(element_type) {
            Some(format) => {
                let bits = format.encode(c_atof(token).ok_or_else(bare)?);
                bits.to_le_bytes()[..element_type.dense_byte_count()].to_vec()
            }
            None => parse_hex_element(token, element_type.dense_byte_count())?,
        },
    };
    let available = out.len();
    let target = out.get_mut(..bytes.len()).ok_or_else(|| {
        Diagnostic::new(
            StatusCode::InvalidArgument,
            format!("output data buffer overflow: data_length={available} < element_size={}", bytes.len()),
        )
    })?;
    target.copy_from_slice(&bytes);
    Ok(())
}

/// Two characters per byte, most significant nibble first; IREE maps a non-hex character to 0.
fn parse_hex_element(token: &str, size: usize) -> Result<Vec<u8>, Diagnostic> {
    if token.len() != size * 2 {
        return Err(Diagnostic::new(
            StatusCode::InvalidArgument,
            format!("binary hex element count mismatch: buffer length={} < expected={}", token.len(), size * 2),
        ));
    }
    let nibble = |b: u8| (b as char).to_digit(16).unwrap_or(0) as u8;
    Ok(token.as_bytes().chunks_exact(2).map(|pair| (nibble(pair[0]) << 4) | nibble(pair[1])).collect())
}

/// One element as IREE prints it; `bytes` holds at least `element_type.dense_byte_count()`.
pub fn format_element(bytes: &[u8], element_type: ElementType) -> String {
    let array = |n: usize| -> [u8; 8] {
        let mut buffer = [0u8; 8];
        let n = n.min(bytes.len());
        buffer[..n].copy_from_slice(&bytes[..n]);
        buffer
    };
    let word = u64::from_le_bytes(array(8));
    match element_type {
        ElementType::INT_8 | ElementType::SINT_8 => (word as u8 as i8).to_string(),
        ElementType::UINT_8 => (word as u8).to_string(),
        ElementType::INT_16 | ElementType::SINT_16 => (word as u16 as i16).to_string(),
        ElementType::UINT_16 => (word as u16).to_string(),
        ElementType::INT_32 | ElementType::SINT_32 => (word as u32 as i32).to_string(),
        ElementType::UINT_32 => (word as u32).to_string(),
        ElementType::INT_64 | ElementType::SINT_64 => (word as i64).to_string(),
        ElementType::UINT_64 => word.to_string(),
        ElementType::FLOAT_32 => format_upper_g(f64::from(f32::from_bits(word as u32))),
        ElementType::FLOAT_64 => format_upper_g(f64::from_bits(word)),
        ElementType::FLOAT_8_E8M0_FNU => format_upper_g(f64::from(f8e8m0fnu_to_f32(word as u8))),
        _ => match narrow_float(element_type) {
            Some(format) => format_upper_g(f64::from(format.decode(word as u32 & 0xFFFF))),
            None => bytes.iter().take(element_type.dense_byte_count()).map(|b| format!("{b:02X}")).collect(),
        },
    }
}

/// The element as a float for approximate comparison, for the four types IREE compares that way.
pub fn approximate_value(bytes: &[u8], element_type: ElementType) -> Option<f64> {
    let word = |n: usize| bytes.get(..n).map(|b| b.iter().rev().fold(0u64, |w, &x| (w << 8) | u64::from(x)));
    Some(match element_type {
        ElementType::FLOAT_16 => f64::from(F16.decode(word(2)? as u32)),
        ElementType::BFLOAT_16 => f64::from(BF16.decode(word(2)? as u32)),
        ElementType::FLOAT_32 => f64::from(f32::from_bits(word(4)? as u32)),
        ElementType::FLOAT_64 => f64::from_bits(word(8)?),
        _ => return None,
    })
}

/// Fills `out` from the text after `=`: tokens separated by whitespace, `,`, `[` or `]` (the
/// brackets are not checked against the shape), one token splatting to every element, no text
/// meaning zeros.
pub fn parse_elements(text: &str, element_type: ElementType, out: &mut [u8]) -> Result<(), Diagnostic> {
    if text.is_empty() {
        out.fill(0);
        return Ok(());
    }
    let size = element_type.dense_byte_count().max(1);
    let capacity = out.len() / size;
    let bytes = text.as_bytes();
    let mut count = 0usize;
    let mut start: Option<usize> = None;
    for (index, &byte) in bytes.iter().enumerate() {
        let separator = is_c_space(byte) || matches!(byte, b',' | b'[' | b']');
        match (start, separator) {
            (None, false) => start = Some(index),
            (Some(token_start), true) => {
                if count >= capacity {
                    return Err(Diagnostic::new(
                        StatusCode::OutOfRange,
                        format!("output data buffer overflow: element_capacity={capacity} < dst_i={count}+"),
                    ));
                }
                parse_element(&text[token_start..index], element_type, &mut out[count * size..])?;
                count += 1;
                start = None;
            }
            _ => {}
        }
    }
    if let Some(token_start) = start {
        if count >= capacity {
            return Err(Diagnostic::new(
                StatusCode::OutOfRange,
                format!("output data overflow: element_capacity={capacity} < dst_i={count}"),
            ));
        }
        parse_element(&text[token_start..], element_type, &mut out[count * size..])?;
        count += 1;
    }
    if count == 1 && capacity > 1 {
        let (first, rest) = out.split_at_mut(size);
        for chunk in rest.chunks_exact_mut(size) {
            chunk.copy_from_slice(first);
        }
    } else if count < capacity {
        return Err(Diagnostic::new(
            StatusCode::OutOfRange,
            format!("input data string underflow: dst_i={count} < element_capacity={capacity}"),
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Tensors from text
// ---------------------------------------------------------------------------------------------

/// Splits `[shape x]type[=data]` after IREE's trimming and quote stripping.
fn split_tensor_text(value: &str) -> Result<(&str, &str, &str), Diagnostic> {
    let value = c_trim(value);
    let value = value.strip_prefix('"').unwrap_or(value);
    let value = value.strip_suffix('"').unwrap_or(value);
    if value.is_empty() {
        return Err(Diagnostic::new(StatusCode::InvalidArgument, "empty string input"));
    }
    let (shape_and_type, data) = value.split_once('=').unwrap_or((value, ""));
    Ok(match shape_and_type.rfind('x') {
        Some(x) => (&shape_and_type[..x], &shape_and_type[x + 1..], data),
        None => ("", shape_and_type, data),
    })
}

/// `2x3x4` into dimensions: each read like C's `strtoll` (so `2a` is 2) and non-negative.
pub fn parse_shape(text: &str) -> Result<Vec<usize>, Diagnostic> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let rank = text.bytes().filter(|b| *b == b'x').count() + 1;
    let mut shape = Vec::with_capacity(rank.min(MAX_RANK));
    // IREE stops at the first empty dimension and then finds the count short.
    for (index, dim) in text.split('x').take_while(|dim| !dim.is_empty()).enumerate() {
        match c_atoi_i64(dim) {
            Some(value) if value >= 0 => shape.push(value as usize),
            _ => {
                return Err(Diagnostic::new(
                    StatusCode::InvalidArgument,
                    format!("shape[{index}] invalid value '{dim}' of '{text}'"),
                ))
            }
        }
    }
    if shape.len() != rank {
        return Err(Diagnostic::new(StatusCode::InvalidArgument, format!("invalid shape specification: '{text}'")));
    }
    Ok(shape)
}

/// Parses a tensor `--input` (or `--expected_output`): `2x2xi32=1 2 3 4`, `4x8xf32=1` (splat),
/// `1x28x28x1xf32` (zeros), `f32=-3.5` (rank 0), `4x8xf32=@a.bin` / `=+a.bin` (raw bytes from
/// a file opened through `files`).
pub fn parse_tensor(text: &str, files: &mut InputFiles) -> Result<HostTensor, Diagnostic> {
    if !text.contains('=') && !text.contains('x') {
        return Err(Diagnostic::new(
            StatusCode::InvalidArgument,
            "invalid tensor specification, requires at least a shape/type (`4x2xf32=...`)",
        ));
    }
    if let Some((metadata, contents)) = text.split_once('=') {
        if contents.starts_with('@') || contents.starts_with('+') {
            return read_raw_tensor(metadata, contents, files);
        }
    }
    let (shape_text, type_text, data) = split_tensor_text(text)?;
    let rank = if shape_text.is_empty() { 0 } else { shape_text.bytes().filter(|b| *b == b'x').count() + 1 };
    if rank > MAX_RANK {
        return Err(Diagnostic::new(
            StatusCode::ResourceExhausted,
            format!("a shape rank of {rank} is just a little bit excessive, eh?"),
        ));
    }
    let shape = parse_shape(shape_text)?;
    let element_type = ElementType::parse(type_text)?;
    let mut tensor = HostTensor::zeros(shape, element_type)?;
    parse_elements(data, element_type, &mut tensor.data)?;
    Ok(tensor)
}

/// `shape=@path` / `shape=+path`: the view's bytes, unconverted, from the file.
fn read_raw_tensor(metadata: &str, contents: &str, files: &mut InputFiles) -> Result<HostTensor, Diagnostic> {
    let (shape_text, type_text, _) = split_tensor_text(metadata)?;
    let rank = if shape_text.is_empty() { 0 } else { shape_text.bytes().filter(|b| *b == b'x').count() + 1 };
    if rank > MAX_RANK {
        return Err(Diagnostic::new(StatusCode::OutOfRange, ""));
    }
    let shape = parse_shape(shape_text)?;
    let element_type = ElementType::parse(type_text)?;
    let file = files.open(&contents[1..], contents.starts_with('+'))?;
    let length = view_byte_length(&shape, element_type)?;
    let data = file.read(length)?.to_vec();
    Ok(HostTensor { shape, element_type, data })
}

/// `@a.npy` (the first array, from the start of the file), `+a.npy` (the next array of a file
/// an earlier input read from) and `*a.npy` (every remaining array): the tensors to pass.
pub fn read_npy_inputs(text: &str, files: &mut InputFiles) -> Result<Vec<HostTensor>, Diagnostic> {
    read_npy_arrays(text, files)?
        .into_iter()
        .map(|array| match array {
            npy::Array::Tensor(tensor) => Ok(tensor),
            npy::Array::Strings(_) => Err(Diagnostic::new(StatusCode::Unimplemented, "unsupported data type U")),
        })
        .collect()
}

/// [`read_npy_inputs`], with arrays of strings read too (for kernel graphs).
pub fn read_npy_arrays(text: &str, files: &mut InputFiles) -> Result<Vec<npy::Array>, Diagnostic> {
    let path = text.get(1..).unwrap_or("");
    if !path.ends_with(".npy") {
        return Err(Diagnostic::new(
            StatusCode::Unimplemented,
            "only numpy (.npy) files are supported for metadata-less variant I/O",
        ));
    }
    let file = files.open(path, !text.starts_with('@'))?;
    if !text.starts_with('*') {
        return Ok(vec![file.read_npy()?]);
    }
    let mut arrays = Vec::new();
    while file.position < file.bytes.len() {
        arrays.push(file.read_npy()?);
    }
    Ok(arrays)
}

/// `@a.npz`: the arrays of a NumPy archive, in order (a kernel graph's sequence).
pub fn read_npz(text: &str, files: &mut InputFiles) -> Result<Vec<npy::Array>, Diagnostic> {
    let path = text.strip_prefix('@').ok_or_else(|| {
        Diagnostic::new(StatusCode::InvalidArgument, "a .npz archive is read whole: name it with `@`")
    })?;
    npz::decode(&files.open(path, false)?.bytes)
}

/// The files one invocation's inputs read from, by verbatim path: `@` starts a file from its
/// beginning, `+` continues where the previous input using that path stopped.
#[derive(Debug, Default)]
pub struct InputFiles {
    directory: Option<PathBuf>,
    open: Vec<InputFile>,
}

#[derive(Debug)]
struct InputFile {
    path: String,
    bytes: Vec<u8>,
    position: usize,
}

impl InputFiles {
    /// Files named relative to the current directory, as `iree-run-module` opens them.
    pub fn new() -> InputFiles {
        InputFiles::default()
    }

    /// Files named relative to `directory`; messages still show the paths as written.
    pub fn relative_to(directory: impl Into<PathBuf>) -> InputFiles {
        InputFiles { directory: Some(directory.into()), open: Vec::new() }
    }

    fn open(&mut self, path: &str, continuing: bool) -> Result<&mut InputFile, Diagnostic> {
        if let Some(index) = self.open.iter().position(|file| file.path == path) {
            let file = &mut self.open[index];
            if !continuing {
                file.position = 0;
            }
            return Ok(file);
        }
        let full = match &self.directory {
            Some(directory) => directory.join(path),
            None => PathBuf::from(path),
        };
        let bytes = std::fs::read(&full)
            .map_err(|_| Diagnostic::new(StatusCode::Unknown, format!("unable to open file `{path}` with mode 2")))?;
        self.open.push(InputFile { path: path.to_owned(), bytes, position: 0 });
        Ok(self.open.last_mut().expect("just pushed"))
    }
}

impl InputFile {
    fn read(&mut self, length: usize) -> Result<&[u8], Diagnostic> {
        let start = self.position;
        match start.checked_add(length).filter(|end| *end <= self.bytes.len()) {
            Some(end) => {
                self.position = end;
                Ok(&self.bytes[start..end])
            }
            None => {
                self.position = self.bytes.len();
                Err(Diagnostic::new(StatusCode::OutOfRange, "end-of-file encountered during read"))
            }
        }
    }

    fn read_npy(&mut self) -> Result<npy::Array, Diagnostic> {
        let (array, consumed) = npy::decode_array(&self.bytes[self.position..])?;
        self.position += consumed;
        Ok(array)
    }
}

// ---------------------------------------------------------------------------------------------
// Outputs
// ---------------------------------------------------------------------------------------------

/// What one `--output=` flag asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputSpec {
    /// `--output=`: drop the result.
    Ignore,
    /// `--output=-`: print the result's text (without the `result[N]: ` prefix).
    Print,
    /// `@path` (truncate) or `+path` (append): an `.npy` array if the path ends in `.npy`, the
    /// raw bytes otherwise.
    File { path: String, append: bool },
}

impl OutputSpec {
    pub fn parse(spec: &str) -> Result<OutputSpec, Diagnostic> {
        Ok(match spec {
            "" => OutputSpec::Ignore,
            "-" => OutputSpec::Print,
            _ => match (spec.strip_prefix('@'), spec.strip_prefix('+')) {
                (Some(path), _) => OutputSpec::File { path: path.to_owned(), append: false },
                (_, Some(path)) => OutputSpec::File { path: path.to_owned(), append: true },
                _ => {
                    return Err(Diagnostic::new(
                        StatusCode::Unimplemented,
                        format!("unsupported output mode specification '{spec}'"),
                    ))
                }
            },
        })
    }
}

/// Writes `bytes` (a result, encoded for its file) to the file an [`OutputSpec::File`] names.
pub fn write_output_file(path: &str, append: bool, bytes: &[u8]) -> Result<(), Diagnostic> {
    let mode = if append { 12 } else { 5 };
    let mut file =
        OpenOptions::new().write(true).create(true).append(append).truncate(!append).open(path).map_err(|_| {
            Diagnostic::new(StatusCode::Unknown, format!("unable to open file `{path}` with mode {mode}"))
        })?;
    file.write_all(bytes)
        .map_err(|error| Diagnostic::new(StatusCode::Unknown, format!("write failed on `{path}`: {error}")))
}

// ---------------------------------------------------------------------------------------------
// --expected_output
// ---------------------------------------------------------------------------------------------

/// `--equality_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EqualityMode {
    /// `|actual - expected| <= atol + rtol * |expected|` for f16/bf16/f32/f64, NaN equal to NaN;
    /// every other type byte for byte.
    Approximate,
    /// Byte for byte.
    Exact,
}

/// The comparison flags, with IREE's defaults. Thresholds are the flag types IREE uses (f32
/// for `--expected_f32_threshold`), widened to f64 only when compared, so `0.0001` means the
/// same float it means to IREE.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Equality {
    pub mode: EqualityMode,
    pub f16_atol: f32,
    pub bf16_atol: f32,
    pub f32_atol: f32,
    pub f64_atol: f64,
    pub rtol: f64,
}

impl Default for Equality {
    fn default() -> Equality {
        Equality {
            mode: EqualityMode::Approximate,
            f16_atol: 0.001,
            bf16_atol: 0.01,
            f32_atol: 0.0001,
            f64_atol: 0.0001,
            rtol: 1e-5,
        }
    }
}

impl Equality {
    fn elements_match(&self, element_type: ElementType, expected: &[u8], actual: &[u8]) -> bool {
        let atol = match element_type {
            ElementType::FLOAT_16 => f64::from(self.f16_atol),
            ElementType::BFLOAT_16 => f64::from(self.bf16_atol),
            ElementType::FLOAT_32 => f64::from(self.f32_atol),
            ElementType::FLOAT_64 => self.f64_atol,
            _ => return expected == actual,
        };
        if self.mode == EqualityMode::Exact {
            return expected == actual;
        }
        match (approximate_value(actual, element_type), approximate_value(expected, element_type)) {
            (Some(actual), Some(expected)) => fuzzy_equal(actual, expected, atol, self.rtol),
            (actual, expected) => actual.is_none() && expected.is_none(),
        }
    }
}

/// IREE's approximate equality (`iree_math_fuzzy_compare_f64`): equal, both NaN, or within
/// `atol + rtol * |expected|` of a finite expectation.
pub fn fuzzy_equal(actual: f64, expected: f64, atol: f64, rtol: f64) -> bool {
    actual == expected
        || (actual.is_nan() && expected.is_nan())
        || (expected.is_finite() && (actual - expected).abs() <= atol + rtol * expected.abs())
}

/// A function result as the comparison sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum ResultValue {
    /// No value: an `(ignored)` expectation, or a null result.
    Empty,
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
    Tensor(HostTensor),
    /// A kernel graph's tensor of strings.
    Strings(StringArray),
    /// A kernel graph's sequence of tensors (ONNX's sequences), in a `.npz` file as a file.
    Sequence(Vec<HostTensor>),
    /// Any other ref, by its type name (`vm.list`).
    Ref(String),
}

impl ResultValue {
    fn type_name(&self) -> &str {
        match self {
            ResultValue::Empty => "empty",
            ResultValue::I32(_) => "i32",
            ResultValue::I64(_) => "i64",
            ResultValue::F32(_) => "f32",
            ResultValue::F64(_) => "f64",
            ResultValue::Tensor(_) => "hal.buffer_view",
            ResultValue::Strings(_) => "string tensor",
            ResultValue::Sequence(_) => "sequence",
            ResultValue::Ref(name) => name,
        }
    }
}

/// Compares results with `--expected_output` values. Returns whether all matched and the text
/// `iree-run-module` prints to stdout: a `[FAILED] ...` report per mismatch, or
/// [`SUCCESS_LINE`].
///
/// Scalars never match in IREE 3.13 (`variant types mismatch; expected i32 but got i32`); this
/// reproduces that, since `rtx run` must exit as the tool does.
pub fn compare_results(
    expected: &[ResultValue],
    actual: &[ResultValue],
    equality: &Equality,
) -> Result<(bool, String), Diagnostic> {
    if expected.len() != actual.len() {
        let text = format!("[FAILED] expected {} list elements but {} provided\n", expected.len(), actual.len());
        return Ok((false, text));
    }
    let mut text = String::new();
    let mut all_match = true;
    for (index, (expected, actual)) in expected.iter().zip(actual).enumerate() {
        let failure = match (expected, actual) {
            (ResultValue::Empty, _) => None,
            (ResultValue::Tensor(expected), ResultValue::Tensor(actual)) => {
                compare_tensors(expected, actual, equality)?.map(|why| {
                    format!(
                        "{why}\n  expected:\n{}\n  actual:\n{}\n",
                        expected.format(COMPARISON_MAX_ELEMENT_COUNT).unwrap_or_default(),
                        actual.format(COMPARISON_MAX_ELEMENT_COUNT).unwrap_or_default(),
                    )
                })
            }
            (ResultValue::Strings(expected), ResultValue::Strings(actual)) => (expected != actual).then(|| {
                format!(
                    "strings differ\n  expected:\n{}\n  actual:\n{}\n",
                    expected.format(COMPARISON_MAX_ELEMENT_COUNT),
                    actual.format(COMPARISON_MAX_ELEMENT_COUNT)
                )
            }),
            (ResultValue::Sequence(expected), ResultValue::Sequence(actual)) if expected.len() != actual.len() => {
                Some(format!("a sequence of {} tensors; expected {}\n", actual.len(), expected.len()))
            }
            (ResultValue::Sequence(expected), ResultValue::Sequence(actual)) => {
                let mut why = None;
                for (position, (expected, actual)) in expected.iter().zip(actual).enumerate() {
                    if let Some(text) = compare_tensors(expected, actual, equality)? {
                        why = Some(format!("sequence element {position}: {text}\n"));
                        break;
                    }
                }
                why
            }
            _ => Some(format!(
                "variant types mismatch; expected {} but got {}\n",
                expected.type_name(),
                actual.type_name()
            )),
        };
        if let Some(failure) = failure {
            all_match = false;
            text.push_str(&format!("[FAILED] result[{index}]: {failure}"));
        }
    }
    if all_match {
        text.push_str(SUCCESS_LINE);
    }
    Ok((all_match, text))
}

/// Why `actual` does not equal `expected`, in IREE's matcher words, or `None` if it does.
pub fn compare_tensors(
    expected: &HostTensor,
    actual: &HostTensor,
    equality: &Equality,
) -> Result<Option<String>, Diagnostic> {
    let describe = format!("; expected that the view is equal to contents of a view of {}", expected.shape_and_type());
    if expected.shape != actual.shape || expected.element_type != actual.element_type {
        return Ok(Some(format!(
            "metadata is {}; expected that the view matches {}{describe}",
            actual.shape_and_type(),
            expected.shape_and_type()
        )));
    }
    let element_type = actual.element_type;
    let size = element_type.dense_byte_count();
    let element = |data: &[u8], index: usize| -> Vec<u8> {
        data.get(index * size..).map(|rest| rest.iter().take(size).copied().collect()).unwrap_or_default()
    };
    let mismatch = (0..actual.element_count()).find(|&index| {
        !equality.elements_match(element_type, &element(&expected.data, index), &element(&actual.data, index))
    });
    Ok(mismatch.map(|index| {
        format!(
            "element at index {index} ({}) does not match the expected ({}){describe}",
            format_element(&element(&actual.data, index), element_type),
            format_element(&element(&expected.data, index), element_type),
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(text: &str) -> HostTensor {
        parse_tensor(text, &mut InputFiles::new()).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn error(text: &str) -> Diagnostic {
        parse_tensor(text, &mut InputFiles::new()).expect_err(text)
    }

    fn printed(text: &str) -> String {
        tensor(text).format(1024).unwrap()
    }

    #[test]
    fn integers_read_like_strtol_with_base_zero() {
        assert_eq!(c_atoi_i32("0x10"), Some(16));
        assert_eq!(c_atoi_i32("010"), Some(8));
        assert_eq!(c_atoi_i32("0x"), Some(0));
        assert_eq!(c_atoi_i32("12abc"), Some(12));
        assert_eq!(c_atoi_i32("4294967297"), Some(1));
        assert_eq!(c_atoi_i32("-"), None);
        assert_eq!(c_atoi_i32("0123456789012345"), None, "16 characters do not fit IREE's scratch");
        assert_eq!(c_atoi_u32("-1"), Some(u32::MAX));
        assert_eq!(c_atoi_u32("-4294967295"), Some(1));
        assert_eq!(c_atoi_i64("9223372036854775807"), Some(i64::MAX));
        assert_eq!(c_atoi_i64("-9223372036854775808"), Some(i64::MIN));
        assert_eq!(c_atoi_i64("9223372036854775808"), None);
        assert_eq!(c_atoi_u64("18446744073709551615"), Some(u64::MAX));
        assert_eq!(c_atoi_u64("18446744073709551616"), None);
    }

    #[test]
    fn every_form_of_tensor_input_parses() {
        assert_eq!(printed("2x2xi32=[[1 2][3 4]]"), "2x2xi32=[1 2][3 4]");
        assert_eq!(printed("2x2xi32=1 2 3 4"), "2x2xi32=[1 2][3 4]");
        assert_eq!(printed("1x5xf32=1,-2,-3,4,-5"), "1x5xf32=[1 -2 -3 4 -5]");
        assert_eq!(printed("2x3xf32=7"), "2x3xf32=[7 7 7][7 7 7]");
        assert_eq!(printed("f32=-3.5"), "f32=-3.5");
        assert_eq!(printed("1x2x1xf32"), "1x2x1xf32=[[0][0]]");
        assert_eq!(printed(" \"2xi8=-128 255\" "), "2xi8=-128 -1");
        assert_eq!(printed("3xsi8=-200 127 0"), "3xsi8=56 127 0");
        assert_eq!(printed("2xui16=65535 -4294967295"), "2xui16=65535 1");
        assert_eq!(printed("2xi1=01 00"), "2xi1=01 00");
        assert_eq!(printed("1xcf64=0000803F00000040"), "1xcf64=0000803F00000040");
    }

    #[test]
    fn floats_print_with_upper_case_g() {
        assert_eq!(printed("4xf32=1e7 inf -nan 1e-40"), "4xf32=1E+07 INF -NAN 9.99995E-41");
        assert_eq!(printed("4xf16=1.5 65504 65520 1e-8"), "4xf16=1.5 65504 INF 0");
        assert_eq!(printed("3xbf16=1.00390625 3.14159 -0"), "3xbf16=1 3.14062 -0");
        assert_eq!(printed("4xf8E4M3FN=1 448 1000 0.1"), "4xf8E4M3FN=1 448 NAN 0.101562");
        assert_eq!(printed("3xf8E5M2FNUZ=-0 1e9 0.5"), "3xf8E5M2FNUZ=0 NAN 0.5");
        assert_eq!(printed("3xf8E8M0FNU=1 0.7 -1"), "3xf8E8M0FNU=1 0.5 5.87747E-39");
        assert_eq!(printed("f64=0.1"), "f64=0.1");
    }

    #[test]
    fn narrow_float_rounding_matches_hand_computed_bits() {
        assert_eq!(F16.encode(1.0), 0x3C00);
        assert_eq!(F16.encode(65520.0), 0x7C00, "rounds up into infinity");
        assert_eq!(F16.encode(5.960_464_5e-8), 0x0001, "smallest subnormal");
        assert_eq!(BF16.encode(f32::from_bits(0x3F80_8000)), 0x3F80, "tie to even");
        assert_eq!(BF16.encode(f32::from_bits(0x3F81_8000)), 0x3F82, "tie to even, upwards");
        assert_eq!(F8_E4M3_FN.encode(448.0), 0x7E);
        assert_eq!(F8_E4M3_FN.encode(f32::INFINITY), 0x7F);
        assert_eq!(F8_E5M2_FNUZ.encode(f32::NAN), 0x80);
        assert!(F8_E4M3_FNUZ.decode(0x80).is_nan());
        assert_eq!(f32_to_f8e8m0fnu(0.75), 127);
        assert_eq!(f32_to_f8e8m0fnu(0.74), 126);
    }

    #[test]
    fn bad_element_text_fails_with_iree_messages() {
        assert_eq!(error("2x3xf32=1 2").message, "input data string underflow: dst_i=2 < element_capacity=6");
        assert_eq!(error("2xf32=1 2 3").message, "output data overflow: element_capacity=2 < dst_i=2");
        assert_eq!(error("2xf32=1 2 3]").message, "output data buffer overflow: element_capacity=2 < dst_i=2+");
        let bad = error("2xf32=abc");
        assert_eq!((bad.code, bad.message.as_str()), (StatusCode::InvalidArgument, ""));
        assert_eq!(error("2xf32=1e-50").code, StatusCode::InvalidArgument, "underflow to zero");
        assert_eq!(error("2xui8=256").code, StatusCode::InvalidArgument);
        assert_eq!(error("4xi1=1").message, "binary hex element count mismatch: buffer length=1 < expected=2");
        assert_eq!(error("2x-3xf32").message, "shape[1] invalid value '-3' of '2x-3'");
        assert_eq!(error("2xx3xf32").message, "invalid shape specification: '2xx3'");
        assert_eq!(
            error("f32").message,
            "invalid tensor specification, requires at least a shape/type (`4x2xf32=...`)"
        );
        assert_eq!(error("2x3xf0").message, "opaque element types cannot be indexed");
        assert_eq!(
            error("4611686018427387904x4xf32").message,
            "shape element count overflows device size at dimension 1"
        );
        assert_eq!(error("4611686018427387904xf32").message, "packed byte count overflows device size");
        assert_eq!(error("1152921504606846976xf32").code, StatusCode::ResourceExhausted);
        let deep = format!("{}f32", "1x".repeat(129));
        assert_eq!(error(&deep).code, StatusCode::ResourceExhausted);
    }

    #[test]
    fn truncation_elides_each_row() {
        let t = tensor("2x2xi32=1 2 3 4");
        assert_eq!(t.format(3).unwrap(), "2x2xi32=[1 2][3...]");
        assert_eq!(t.format(0).unwrap(), "2x2xi32=[...][...]");
        assert_eq!(tensor("f32=1").format(0).unwrap(), "f32=...");
        assert_eq!(tensor("0x3xf32").format(5).unwrap(), "0x3xf32=");
    }

    #[test]
    fn packed_sub_byte_tensors_cannot_print() {
        let t = tensor("3xi4");
        assert_eq!(t.data.len(), 2);
        let failure = t.format(1024).unwrap_err();
        assert_eq!((failure.code, failure.message.as_str()), (StatusCode::OutOfRange, ""));
        assert_eq!(tensor("1xi4=0A").format(1024).unwrap(), "1xi4=0A");
    }

    #[test]
    fn comparison_reports_like_iree() {
        let expected = ResultValue::Tensor(tensor("2x2xi32=1 2 3 5"));
        let actual = ResultValue::Tensor(tensor("2x2xi32=1 2 3 4"));
        let (ok, text) = compare_results(&[expected], std::slice::from_ref(&actual), &Equality::default()).unwrap();
        assert!(!ok);
        assert_eq!(
            text,
            "[FAILED] result[0]: element at index 3 (4) does not match the expected (5); expected that the view \
             is equal to contents of a view of 2x2xi32\n  expected:\n2x2xi32=[1 2][3 5]\n  actual:\n2x2xi32=[1 2][3 4]\n"
        );
        let (ok, text) = compare_results(&[ResultValue::Empty], &[actual], &Equality::default()).unwrap();
        assert!(ok);
        assert_eq!(text, SUCCESS_LINE);
        let (ok, text) = compare_results(&[ResultValue::I32(5)], &[ResultValue::I32(5)], &Equality::default()).unwrap();
        assert!(!ok);
        assert_eq!(text, "[FAILED] result[0]: variant types mismatch; expected i32 but got i32\n");
    }

    #[test]
    fn approximate_equality_uses_atol_and_rtol() {
        let equality = Equality::default();
        let f32s = |v: f32| v.to_le_bytes();
        assert!(equality.elements_match(ElementType::FLOAT_32, &f32s(1.0), &f32s(1.00005)));
        assert!(!equality.elements_match(ElementType::FLOAT_32, &f32s(1.0), &f32s(1.0002)));
        assert!(equality.elements_match(ElementType::FLOAT_32, &f32s(f32::NAN), &f32s(-f32::NAN)));
        assert!(!equality.elements_match(ElementType::FLOAT_32, &f32s(f32::INFINITY), &f32s(f32::MAX)));
        let exact = Equality { mode: EqualityMode::Exact, ..equality };
        assert!(!exact.elements_match(ElementType::FLOAT_32, &f32s(1.0), &f32s(1.00005)));
        assert!(!equality.elements_match(ElementType::INT_32, &1i32.to_le_bytes(), &2i32.to_le_bytes()));
    }

    #[test]
    fn output_specs_parse() {
        assert_eq!(OutputSpec::parse("").unwrap(), OutputSpec::Ignore);
        assert_eq!(OutputSpec::parse("-").unwrap(), OutputSpec::Print);
        assert_eq!(OutputSpec::parse("+o.npy").unwrap(), OutputSpec::File { path: "o.npy".into(), append: true });
        assert_eq!(OutputSpec::parse("foo").unwrap_err().message, "unsupported output mode specification 'foo'");
    }
}
