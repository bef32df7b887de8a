//! HAL element types: the 32-bit codes IREE's runtime and tools use for the elements of a buffer
//! view, with the names `iree-run-module` prints and parses (`f32`, `si8`, `i1`, `f8E4M3FN`, ...).
//!
//! A code is `(numerical_type << 24) | bit_count`; the middle bytes are reserved and normally 0,
//! but a code read from an `.npy` descr can set them (IREE computes `byte_width * 8` without a
//! bound), so the type keeps the raw `u32` and derives everything from it as IREE does.

use std::fmt;

use super::tensor_io::c_atoi_u32;
use rtx_host::{Diagnostic, StatusCode};

/// The top byte of an element type code: how the bits are to be interpreted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NumericalType(pub u8);

impl NumericalType {
    pub const UNKNOWN: NumericalType = NumericalType(0x00);
    pub const INTEGER: NumericalType = NumericalType(0x10);
    pub const INTEGER_SIGNED: NumericalType = NumericalType(0x11);
    pub const INTEGER_UNSIGNED: NumericalType = NumericalType(0x12);
    pub const BOOLEAN: NumericalType = NumericalType(0x13);
    pub const FLOAT_IEEE: NumericalType = NumericalType(0x21);
    pub const FLOAT_BRAIN: NumericalType = NumericalType(0x22);
    pub const FLOAT_COMPLEX: NumericalType = NumericalType(0x23);
    pub const FLOAT_8_E5M2: NumericalType = NumericalType(0x24);
    pub const FLOAT_8_E4M3_FN: NumericalType = NumericalType(0x25);
    pub const FLOAT_8_E5M2_FNUZ: NumericalType = NumericalType(0x26);
    pub const FLOAT_8_E4M3_FNUZ: NumericalType = NumericalType(0x27);
    pub const FLOAT_8_E8M0_FNU: NumericalType = NumericalType(0x28);
}

/// An IREE HAL element type code (`iree_hal_element_type_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ElementType(pub u32);

impl ElementType {
    pub const NONE: ElementType = ElementType::new(NumericalType::UNKNOWN, 0);
    pub const OPAQUE_8: ElementType = ElementType::new(NumericalType::UNKNOWN, 8);
    pub const OPAQUE_16: ElementType = ElementType::new(NumericalType::UNKNOWN, 16);
    pub const OPAQUE_32: ElementType = ElementType::new(NumericalType::UNKNOWN, 32);
    pub const OPAQUE_64: ElementType = ElementType::new(NumericalType::UNKNOWN, 64);
    /// What the tools call `i1`: one boolean per byte.
    pub const BOOL_8: ElementType = ElementType::new(NumericalType::BOOLEAN, 8);
    pub const INT_4: ElementType = ElementType::new(NumericalType::INTEGER, 4);
    pub const SINT_4: ElementType = ElementType::new(NumericalType::INTEGER_SIGNED, 4);
    pub const UINT_4: ElementType = ElementType::new(NumericalType::INTEGER_UNSIGNED, 4);
    pub const INT_8: ElementType = ElementType::new(NumericalType::INTEGER, 8);
    pub const SINT_8: ElementType = ElementType::new(NumericalType::INTEGER_SIGNED, 8);
    pub const UINT_8: ElementType = ElementType::new(NumericalType::INTEGER_UNSIGNED, 8);
    pub const INT_16: ElementType = ElementType::new(NumericalType::INTEGER, 16);
    pub const SINT_16: ElementType = ElementType::new(NumericalType::INTEGER_SIGNED, 16);
    pub const UINT_16: ElementType = ElementType::new(NumericalType::INTEGER_UNSIGNED, 16);
    pub const INT_32: ElementType = ElementType::new(NumericalType::INTEGER, 32);
    pub const SINT_32: ElementType = ElementType::new(NumericalType::INTEGER_SIGNED, 32);
    pub const UINT_32: ElementType = ElementType::new(NumericalType::INTEGER_UNSIGNED, 32);
    pub const INT_64: ElementType = ElementType::new(NumericalType::INTEGER, 64);
    pub const SINT_64: ElementType = ElementType::new(NumericalType::INTEGER_SIGNED, 64);
    pub const UINT_64: ElementType = ElementType::new(NumericalType::INTEGER_UNSIGNED, 64);
    pub const FLOAT_16: ElementType = ElementType::new(NumericalType::FLOAT_IEEE, 16);
    pub const FLOAT_32: ElementType = ElementType::new(NumericalType::FLOAT_IEEE, 32);
    pub const FLOAT_64: ElementType = ElementType::new(NumericalType::FLOAT_IEEE, 64);
    pub const BFLOAT_16: ElementType = ElementType::new(NumericalType::FLOAT_BRAIN, 16);
    pub const COMPLEX_FLOAT_64: ElementType = ElementType::new(NumericalType::FLOAT_COMPLEX, 64);
    pub const COMPLEX_FLOAT_128: ElementType = ElementType::new(NumericalType::FLOAT_COMPLEX, 128);
    pub const FLOAT_8_E5M2: ElementType = ElementType::new(NumericalType::FLOAT_8_E5M2, 8);
    pub const FLOAT_8_E4M3_FN: ElementType = ElementType::new(NumericalType::FLOAT_8_E4M3_FN, 8);
    pub const FLOAT_8_E5M2_FNUZ: ElementType = ElementType::new(NumericalType::FLOAT_8_E5M2_FNUZ, 8);
    pub const FLOAT_8_E4M3_FNUZ: ElementType = ElementType::new(NumericalType::FLOAT_8_E4M3_FNUZ, 8);
    pub const FLOAT_8_E8M0_FNU: ElementType = ElementType::new(NumericalType::FLOAT_8_E8M0_FNU, 8);

    pub const fn new(numerical_type: NumericalType, bit_count: u8) -> ElementType {
        ElementType(((numerical_type.0 as u32) << 24) | bit_count as u32)
    }

    pub fn numerical_type(self) -> NumericalType {
        NumericalType((self.0 >> 24) as u8)
    }

    /// Integers of any signedness (signless, signed, unsigned).
    pub fn is_integer(self) -> bool {
        matches!(
            self.numerical_type(),
            NumericalType::INTEGER | NumericalType::INTEGER_SIGNED | NumericalType::INTEGER_UNSIGNED
        )
    }

    /// Bits per element; 0 for `NONE`, which cannot size a buffer.
    pub fn bit_count(self) -> usize {
        (self.0 & 0xFF) as usize
    }

    /// Bytes one element takes when each has its own bytes: how the tools' text parser and
    /// printer step through a buffer, even for sub-byte types whose buffers are packed.
    pub fn dense_byte_count(self) -> usize {
        self.bit_count().div_ceil(8)
    }

    /// The special names IREE gives the 8-bit float families; every other type is spelled
    /// `<prefix><bits>`.
    fn special_name(self) -> Option<&'static str> {
        Some(match self {
            ElementType::FLOAT_8_E5M2 => "f8E5M2",
            ElementType::FLOAT_8_E4M3_FN => "f8E4M3FN",
            ElementType::FLOAT_8_E5M2_FNUZ => "f8E5M2FNUZ",
            ElementType::FLOAT_8_E4M3_FNUZ => "f8E4M3FNUZ",
            ElementType::FLOAT_8_E8M0_FNU => "f8E8M0FNU",
            _ => return None,
        })
    }

    /// Parses a type name as the tools do: `i1` is the byte-wide boolean, `i`/`si`/`ui`/`f`/
    /// `bf`/`cf`/`x`/`*` prefix a bit count (read like C's `strtoul`, so `f32abc` is `f32`), and
    /// the 8-bit float families have their own names.
    pub fn parse(text: &str) -> Result<ElementType, Diagnostic> {
        if text == "i1" {
            return Ok(ElementType::BOOL_8);
        }
        let special = [
            ElementType::FLOAT_8_E5M2,
            ElementType::FLOAT_8_E4M3_FN,
            ElementType::FLOAT_8_E5M2_FNUZ,
            ElementType::FLOAT_8_E4M3_FNUZ,
            ElementType::FLOAT_8_E8M0_FNU,
        ];
        // `i` is tried before the special names and `f` after them, as in IREE.
        let (numerical_type, bits) = if let Some(bits) = text.strip_prefix('i') {
            (NumericalType::INTEGER, bits)
        } else if let Some(bits) = text.strip_prefix("si") {
            (NumericalType::INTEGER_SIGNED, bits)
        } else if let Some(bits) = text.strip_prefix("ui") {
            (NumericalType::INTEGER_UNSIGNED, bits)
        } else if let Some(found) = special.into_iter().find(|t| t.special_name() == Some(text)) {
            return Ok(found);
        } else if let Some(bits) = text.strip_prefix('f') {
            (NumericalType::FLOAT_IEEE, bits)
        } else if let Some(bits) = text.strip_prefix("bf") {
            (NumericalType::FLOAT_BRAIN, bits)
        } else if let Some(bits) = text.strip_prefix("cf") {
            (NumericalType::FLOAT_COMPLEX, bits)
        } else if let Some(bits) = text.strip_prefix('x').or_else(|| text.strip_prefix('*')) {
            (NumericalType::UNKNOWN, bits)
        } else {
            return Err(Diagnostic::new(
                StatusCode::InvalidArgument,
                format!("unhandled element type prefix in '{text}'"),
            ));
        };
        match c_atoi_u32(bits) {
            Some(bit_count) if bit_count <= 0xFF => Ok(ElementType::new(numerical_type, bit_count as u8)),
            _ => Err(Diagnostic::new(StatusCode::InvalidArgument, format!("out of range bit count in '{text}'"))),
        }
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(name) = self.special_name() {
            return f.write_str(name);
        }
        let (prefix, bits) = match self.numerical_type() {
            // Booleans print as `i1` whatever their storage width.
            NumericalType::BOOLEAN => ("i", 1),
            NumericalType::INTEGER => ("i", self.bit_count()),
            NumericalType::INTEGER_SIGNED => ("si", self.bit_count()),
            NumericalType::INTEGER_UNSIGNED => ("ui", self.bit_count()),
            NumericalType::FLOAT_IEEE => ("f", self.bit_count()),
            NumericalType::FLOAT_BRAIN => ("bf", self.bit_count()),
            NumericalType::FLOAT_COMPLEX => ("cf", self.bit_count()),
            _ => ("*", self.bit_count()),
        };
        write!(f, "{prefix}{bits}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_numerical_type_and_bit_count() {
        assert_eq!(ElementType::FLOAT_32.0, 0x2100_0020);
        assert_eq!(ElementType::BOOL_8.0, 0x1300_0008);
        assert_eq!(ElementType::UINT_4.0, 0x1200_0004);
        assert_eq!(ElementType::COMPLEX_FLOAT_128.0, 0x2300_0080);
        assert_eq!(ElementType::FLOAT_8_E8M0_FNU.0, 0x2800_0008);
        assert_eq!(ElementType::INT_4.dense_byte_count(), 1);
        assert_eq!(ElementType::COMPLEX_FLOAT_64.dense_byte_count(), 8);
        assert_eq!(ElementType::NONE.dense_byte_count(), 0);
    }

    #[test]
    fn names_round_trip_like_the_tools() {
        for (name, ty) in [
            ("i1", ElementType::BOOL_8),
            ("i4", ElementType::INT_4),
            ("si8", ElementType::SINT_8),
            ("ui16", ElementType::UINT_16),
            ("i64", ElementType::INT_64),
            ("f16", ElementType::FLOAT_16),
            ("bf16", ElementType::BFLOAT_16),
            ("cf64", ElementType::COMPLEX_FLOAT_64),
            ("f8E4M3FNUZ", ElementType::FLOAT_8_E4M3_FNUZ),
            ("f8E8M0FNU", ElementType::FLOAT_8_E8M0_FNU),
            ("*32", ElementType::OPAQUE_32),
        ] {
            assert_eq!(ElementType::parse(name).unwrap(), ty, "{name}");
            assert_eq!(ty.to_string(), name);
        }
        assert_eq!(ElementType::parse("x8").unwrap(), ElementType::OPAQUE_8);
        // `f8E4M3` is not a special name: `f` then strtoul("8E4M3") = 8.
        assert_eq!(ElementType::parse("f8E4M3").unwrap(), ElementType::new(NumericalType::FLOAT_IEEE, 8));
        assert_eq!(ElementType::parse("f32abc").unwrap(), ElementType::FLOAT_32);
    }

    #[test]
    fn bad_names_say_why() {
        let error = ElementType::parse("q32").unwrap_err();
        assert_eq!(error.code, StatusCode::InvalidArgument);
        assert_eq!(error.message, "unhandled element type prefix in 'q32'");
        assert_eq!(ElementType::parse("f256").unwrap_err().message, "out of range bit count in 'f256'");
        assert_eq!(ElementType::parse("i").unwrap_err().message, "out of range bit count in 'i'");
        assert_eq!(ElementType::parse("").unwrap_err().message, "unhandled element type prefix in ''");
    }
}
