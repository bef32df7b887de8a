//! Function inputs and outputs as IREE's tools spell them (`--input=5`, `result[0]: i32=5`).
//!
//! `rtx run` must print exactly what `iree-run-module` prints, so scalar text goes through the
//! same C library routines IREE's tooling uses (`strtol`/`strtoll` with base 0, `strtof`/`strtod`,
//! and `%g` formatting): leading whitespace, `0x`/octal prefixes, `inf`/`nan` spellings and
//! trailing garbage behave as they do there.

use std::ffi::CString;

use super::abi::ValueKind;
use super::value::Value;
use rtx_host::{Diagnostic, StatusCode};

/// Longest text IREE's parsers accept (they copy into a fixed scratch buffer).
fn scratch_limit(kind: ValueKind) -> usize {
    match kind {
        ValueKind::I32 => 15,
        _ => 31,
    }
}

/// Parses one `--input` scalar for an argument of kind `kind`.
pub fn parse_scalar(text: &str, kind: ValueKind) -> Result<Value, Diagnostic> {
    let type_name = match kind {
        ValueKind::I32 => "i32",
        ValueKind::I64 => "i64",
        ValueKind::F32 => "f32",
        ValueKind::F64 => "f64",
        ValueKind::Ref => {
            return Err(Diagnostic::new(
                StatusCode::Unimplemented,
                format!("`{text}`: ref arguments (tensors, lists) cannot be given as scalars"),
            ))
        }
    };
    let failure = || Diagnostic::new(StatusCode::InvalidArgument, format!("parsing value `{text}` as {type_name}"));
    if text.len() > scratch_limit(kind) {
        return Err(failure());
    }
    // Text after an interior NUL is invisible to C, as in IREE's copy into a C string.
    let c_text = CString::new(text.split('\0').next().unwrap_or("")).map_err(|_| failure())?;
    let start = c_text.as_ptr();
    let mut end = start as *mut libc::c_char;
    // SAFETY: `start` is a NUL-terminated string that outlives the call; `end` receives a pointer
    // into it; errno is thread-local.
    let (value, consumed, range_error) = unsafe {
        *libc::__errno_location() = 0;
        let value = match kind {
            ValueKind::I32 | ValueKind::I64 => Value::I64(libc::strtoll(start, &mut end, 0)),
            ValueKind::F32 => Value::F32(libc::strtof(start, &mut end)),
            _ => Value::F64(libc::strtod(start, &mut end)),
        };
        (value, !std::ptr::eq(end, start), *libc::__errno_location() == libc::ERANGE)
    };
    if !consumed {
        return Err(failure());
    }
    match (kind, value) {
        // strtol saturates and sets ERANGE; IREE then rejects, and truncates in-range longs.
        (ValueKind::I32, Value::I64(v)) if range_error && (v == i64::MIN || v == i64::MAX) => Err(failure()),
        (ValueKind::I32, Value::I64(v)) => Ok(Value::I32(v as i32)),
        (ValueKind::I64, Value::I64(v)) if range_error && (v == i64::MIN || v == i64::MAX) => Err(failure()),
        (_, Value::F32(0.0)) | (_, Value::F64(0.0)) if range_error => Err(failure()),
        (_, value) => Ok(value),
    }
}

/// Formats a float like C's `%g` (six significant digits, trailing zeros removed, exponent form
/// outside [1e-4, 1e6), `inf`, `nan` with the sign bit shown as `-nan`).
pub fn format_g(value: f64) -> String {
    if value.is_nan() {
        return if value.is_sign_negative() { "-nan".into() } else { "nan".into() };
    }
    if value.is_infinite() {
        return if value < 0.0 { "-inf".into() } else { "inf".into() };
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    const PRECISION: i32 = 6;
    // Round to six significant digits first: the exponent after rounding picks the style.
    let scientific = format!("{:.*e}", (PRECISION - 1) as usize, value);
    let (mantissa, exponent) = scientific.split_once('e').expect("Rust's {:e} always has an exponent");
    let exponent: i32 = exponent.parse().expect("Rust's exponent is an integer");
    if !(-4..PRECISION).contains(&exponent) {
        let mantissa = strip_zeros(mantissa);
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        let decimals = (PRECISION - 1 - exponent) as usize;
        strip_zeros(&format!("{value:.decimals$}")).to_owned()
    }
}

fn strip_zeros(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

/// One result as `iree-run-module` prints it after `result[N]: `.
pub fn format_value(value: &Value) -> String {
    match value {
        Value::None => "(null)".into(),
        Value::I32(v) => format!("i32={v}"),
        Value::I64(v) => format!("i64={v}"),
        Value::F32(v) => format!("f32={}", format_g(*v as f64)),
        Value::F64(v) => format!("f64={}", format_g(*v)),
        Value::Ref(None) => "(null)".into(),
        Value::Ref(Some(r)) => r.type_name().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_g_matches_c() {
        for (value, text) in [
            (3.75, "3.75"),
            (0.1 + 0.2, "0.3"),
            (16777216.0, "1.67772e+07"),
            (-1e300, "-1e+300"),
            (1e-100, "1e-100"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (999999.5, "1e+06"),
            (123456.0, "123456"),
            (-0.0, "-0"),
            (f64::NAN, "nan"),
            (-f64::NAN, "-nan"),
            (f64::NEG_INFINITY, "-inf"),
            (1.0 / 3.0, "0.333333"),
        ] {
            assert_eq!(format_g(value), text, "{value}");
        }
    }

    #[test]
    fn scalars_parse_like_strtol_and_strtof() {
        assert_eq!(parse_scalar("5", ValueKind::I32).unwrap(), Value::I32(5));
        assert_eq!(parse_scalar("0x10", ValueKind::I32).unwrap(), Value::I32(16));
        assert_eq!(parse_scalar("-2147483648", ValueKind::I32).unwrap(), Value::I32(i32::MIN));
        assert_eq!(parse_scalar("4294967297", ValueKind::I32).unwrap(), Value::I32(1));
        assert_eq!(parse_scalar("9223372036854775807", ValueKind::I64).unwrap(), Value::I64(i64::MAX));
        assert!(parse_scalar("9223372036854775808", ValueKind::I64).is_err());
        assert!(parse_scalar("abc", ValueKind::I32).is_err());
        assert_eq!(parse_scalar("12abc", ValueKind::I32).unwrap(), Value::I32(12));
        assert_eq!(parse_scalar("inf", ValueKind::F32).unwrap(), Value::F32(f32::INFINITY));
        assert_eq!(parse_scalar("-0.0", ValueKind::F64).unwrap(), Value::F64(-0.0));
        assert!(parse_scalar("1.5", ValueKind::Ref).is_err());
    }
}
