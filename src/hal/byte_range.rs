//! The one check of the `(offset, length)` byte ranges programs pass (buffer subspans, dispatch
//! bindings and binding-table entries, imports): `length` -1 means the rest, and a range must lie
//! inside its buffer without overflowing.

use std::fmt;

use crate::host::{Diagnostic, StatusCode};

/// The start and length of bytes `offset..offset + length` of a buffer of `total` bytes, `length`
/// -1 meaning to the end; `None` when the range is negative or does not fit.
#[inline]
pub fn resolve(offset: i64, length: i64, total: usize) -> Option<(usize, usize)> {
    let total = i64::try_from(total).ok()?;
    let length = if length == -1 { total.checked_sub(offset)? } else { length };
    if offset < 0 || length < 0 || offset > total || length > total - offset {
        return None;
    }
    Some((offset as usize, length as usize))
}

/// [`resolve`], or OUT_OF_RANGE saying where (`what`: "subspan", "binding table slot 2"), which
/// range and how big the buffer is.
#[inline]
pub fn check(what: impl fmt::Display, offset: i64, length: i64, total: usize) -> Result<(usize, usize), Diagnostic> {
    resolve(offset, length, total).ok_or_else(|| {
        Diagnostic::new(
            StatusCode::OutOfRange,
            format!("{what}: range {offset}+{length} out of range of {total} bytes"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_inside_resolve_and_every_other_is_out_of_range() {
        assert_eq!(resolve(0, 8, 8), Some((0, 8)));
        assert_eq!(resolve(3, -1, 8), Some((3, 5)), "-1 is the rest");
        assert_eq!(resolve(8, -1, 8), Some((8, 0)));
        assert_eq!(resolve(8, 0, 8), Some((8, 0)), "an empty range at the end");
        assert_eq!(resolve(9, -1, 8), None);
        assert_eq!(resolve(3, 6, 8), None);
        assert_eq!(resolve(-1, 1, 8), None);
        assert_eq!(resolve(0, -2, 8), None);
        assert_eq!(resolve(4, i64::MAX, 8), None, "no overflow");
        assert_eq!(resolve(i64::MIN, -1, 8), None, "no overflow");
        let error = check(format_args!("binding table slot {}", 2), 3, 2, 4).unwrap_err();
        assert_eq!(error.code, StatusCode::OutOfRange);
        assert_eq!(error.message, "binding table slot 2: range 3+2 out of range of 4 bytes");
    }
}
