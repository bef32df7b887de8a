//! The one check of the `(offset, length)` byte ranges programs pass (buffer subspans, dispatch
//! bindings and binding-table entries, imports): `length` -1 means the rest, and a range must lie
//! inside its buffer without overflowing.

use std::fmt;

use rtx_host::{Diagnostic, StatusCode};

/// A range that does not fit its buffer, as given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfRange {
    pub offset: i64,
    pub length: i64,
    pub total: usize,
}

impl OutOfRange {
    /// OUT_OF_RANGE saying where (`what`: "subspan", "binding table slot 2"), which range and how
    /// big the buffer is. Callers name the place only once the check failed: the check runs for
    /// every binding of every dispatch.
    pub fn at(self, what: impl fmt::Display) -> Diagnostic {
        let OutOfRange { offset, length, total } = self;
        Diagnostic::new(
            StatusCode::OutOfRange,
            format!("{what}: range {offset}+{length} out of range of {total} bytes"),
        )
    }
}

/// The start and length of bytes `offset..offset + length` of a buffer of `total` bytes, `length`
/// -1 meaning to the end.
#[inline]
pub fn check(offset: i64, length: i64, total: usize) -> Result<(usize, usize), OutOfRange> {
    let out_of_range = OutOfRange { offset, length, total };
    let size = i64::try_from(total).map_err(|_| out_of_range)?;
    let length = if length == -1 { size.checked_sub(offset).ok_or(out_of_range)? } else { length };
    if offset < 0 || length < 0 || offset > size || length > size - offset {
        return Err(out_of_range);
    }
    Ok((offset as usize, length as usize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_inside_resolve_and_every_other_is_out_of_range() {
        assert_eq!(check(0, 8, 8), Ok((0, 8)));
        assert_eq!(check(3, -1, 8), Ok((3, 5)), "-1 is the rest");
        assert_eq!(check(8, -1, 8), Ok((8, 0)));
        assert_eq!(check(8, 0, 8), Ok((8, 0)), "an empty range at the end");
        for (offset, length) in [(9, -1), (3, 6), (-1, 1), (0, -2), (4, i64::MAX), (i64::MIN, -1)] {
            assert_eq!(check(offset, length, 8), Err(OutOfRange { offset, length, total: 8 }), "{offset}+{length}");
        }
        let error = check(3, 2, 4).unwrap_err().at(format_args!("binding table slot {}", 2));
        assert_eq!(error.code, StatusCode::OutOfRange);
        assert_eq!(error.message, "binding table slot 2: range 3+2 out of range of 4 bytes");
    }
}
