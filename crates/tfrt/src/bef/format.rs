//! The byte layout of a BEF file, defined once: magic, section ids, function kinds, element and
//! attribute type codes, the kernel record's header, and BEF's variable-length integers.
//!
//! A file is the magic `0B EF`, a version byte (only `00` exists), then sections until the end:
//! `id:u8`, `vbr(length << 1 | has_alignment)`, when `has_alignment` an `alignment:u8` and
//! [`PADDING`] bytes up to an address that is a multiple of it, then `length` body bytes.
//! `docs/FORMATS.md` describes every section body.

/// The first two bytes of every BEF file.
pub const MAGIC: [u8; 2] = [0x0B, 0xEF];
/// The only version of the format.
pub const VERSION: u8 = 0;
/// The byte the writer pads with (alignment of sections, function bodies, attributes).
pub const PADDING: u8 = 0xCC;
/// A BEF file must be loaded at an address that is a multiple of this: attributes and kernel
/// records are read in place at their natural alignment.
pub const FILE_ALIGNMENT: usize = 8;
/// Kernel records are sequences of little-endian `u32` words, 4-aligned within the file.
pub const KERNEL_ENTRY_ALIGNMENT: usize = 4;
/// The largest alignment an attribute asks for (dense elements and shapes hold `i64`s).
pub const ATTRIBUTE_MAX_ALIGNMENT: usize = 8;

/// The first kernel of every function is a pseudo kernel that stands for the function's
/// arguments; these are its `code` and `location` words.
pub const PSEUDO_KERNEL_CODE: u32 = 0xABAB_ABAB;
pub const PSEUDO_KERNEL_LOCATION: u32 = 0xCDCD_CDCD;
/// Words before a kernel record's per-result user counts: code, location, argument,
/// attribute, function and result counts.
pub const KERNEL_HEADER_WORDS: usize = 6;

macro_rules! code_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $value:expr),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum $name { $($(#[$vmeta])* $variant = $value),* }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            pub fn from_u8(code: u8) -> Option<$name> {
                match code {
                    $($value => Some($name::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

code_enum! {
    /// Section ids in the order the writer emits them. Sections 8–10 are optional: the executor
    /// never reads them; they let `bef_to_mlir` print attribute types, names and register types.
    SectionId {
        Strings = 0,
        Attributes = 1,
        Kernels = 2,
        Types = 3,
        FunctionIndex = 4,
        Functions = 5,
        LocationStrings = 6,
        Locations = 7,
        AttributeTypes = 8,
        AttributeNames = 9,
        RegisterTypes = 10,
    }
}

impl SectionId {
    /// The alignment the writer gives the section's body.
    pub fn alignment(self) -> usize {
        match self {
            SectionId::Attributes => ATTRIBUTE_MAX_ALIGNMENT,
            SectionId::Functions => KERNEL_ENTRY_ALIGNMENT,
            _ => 1,
        }
    }
}

code_enum! {
    /// What a function-index entry describes.
    FunctionKind {
        /// Registers and kernels run by the dataflow executor.
        Async = 0,
        /// Code supplied by the host, found by name at load; no body in the file.
        Native = 1,
        /// Registers and kernels run in order by the straight-line interpreter.
        Sync = 2,
    }
}

code_enum! {
    /// TFRT's element types (`DType`), as attributes and dense elements name them.
    DType {
        UI8 = 1,
        UI16 = 2,
        UI32 = 3,
        UI64 = 4,
        I1 = 5,
        I8 = 6,
        I16 = 7,
        I32 = 8,
        I64 = 9,
        F32 = 10,
        F64 = 11,
        Complex64 = 12,
        Complex128 = 13,
        F16 = 14,
        BF16 = 15,
        String = 16,
        Resource = 17,
        Variant = 18,
        QUI8 = 19,
        QUI16 = 20,
        QI8 = 21,
        QI16 = 22,
        QI32 = 23,
    }
}

impl DType {
    /// Bytes one element takes in an attribute or a host tensor (`None` for types with no fixed
    /// host layout: strings, resources, variants).
    pub fn byte_size(self) -> Option<usize> {
        use DType::*;
        Some(match self {
            UI8 | I1 | I8 | QUI8 | QI8 => 1,
            UI16 | I16 | F16 | BF16 | QUI16 | QI16 => 2,
            UI32 | I32 | F32 | QI32 => 4,
            UI64 | I64 | F64 | Complex64 => 8,
            Complex128 => 16,
            String | Resource | Variant => return None,
        })
    }

    /// The MLIR type TFRT's compiler gives values of this type (`corert`'s for strings,
    /// resources, variants and quantized integers).
    pub fn mlir_type(self) -> &'static str {
        use DType::*;
        match self {
            UI8 => "ui8",
            UI16 => "ui16",
            UI32 => "ui32",
            UI64 => "ui64",
            I1 => "i1",
            I8 => "i8",
            I16 => "i16",
            I32 => "i32",
            I64 => "i64",
            F32 => "f32",
            F64 => "f64",
            Complex64 => "complex<f32>",
            Complex128 => "complex<f64>",
            F16 => "f16",
            BF16 => "bf16",
            String => "!corert.string",
            Resource => "!corert.resource",
            Variant => "!corert.variant",
            QUI8 => "!corert.quint8",
            QUI16 => "!corert.quint16",
            QI8 => "!corert.qint8",
            QI16 => "!corert.qint16",
            QI32 => "!corert.qint32",
        }
    }

    /// Alignment of one element: its size, except complex numbers, aligned as their parts.
    pub fn alignment(self) -> Option<usize> {
        match self {
            DType::Complex64 => Some(4),
            DType::Complex128 => Some(8),
            other => other.byte_size(),
        }
    }
}

/// Bit set in an [`AttributeType`] code for an array of fixed-width elements.
pub const ARRAY_ATTRIBUTE_FLAG: u8 = 0x80;

/// What an attribute in the attributes section holds, as the attribute-types section records
/// it: a scalar of a [`DType`], one of the structured kinds, or an array of fixed-width elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttributeType {
    Scalar(DType),
    /// A type, stored as one [`DType`] byte.
    Type,
    /// A function reference (an index into the function index, never in the attributes section).
    Func,
    Shape,
    Dense,
    /// A symbol in a `tfrt.compiled` module, with that module's serialized operation.
    SymbolRef,
    /// Elements of mixed kinds: a count, offsets, and each element after its one-byte tag.
    Aggregate,
    /// A count, then the elements: scalars of a [`DType`] ...
    Array(DType),
    /// ... or types. An empty array of any kind is recorded as `Array(DType::I32)`.
    TypeArray,
}

impl AttributeType {
    // TFRT numbers these after its last DType (23) and the `Unsupported` marker (24).
    const TYPE: u8 = 25;
    const FUNC: u8 = 26;
    const SHAPE: u8 = 27;
    const DENSE: u8 = 28;
    const SYMBOL_REF: u8 = 29;
    const AGGREGATE: u8 = 30;

    pub fn code(self) -> u8 {
        match self {
            AttributeType::Scalar(d) => d as u8,
            AttributeType::Type => Self::TYPE,
            AttributeType::Func => Self::FUNC,
            AttributeType::Shape => Self::SHAPE,
            AttributeType::Dense => Self::DENSE,
            AttributeType::SymbolRef => Self::SYMBOL_REF,
            AttributeType::Aggregate => Self::AGGREGATE,
            AttributeType::Array(d) => ARRAY_ATTRIBUTE_FLAG | d as u8,
            AttributeType::TypeArray => ARRAY_ATTRIBUTE_FLAG | Self::TYPE,
        }
    }

    pub fn from_code(code: u8) -> Option<AttributeType> {
        if code & ARRAY_ATTRIBUTE_FLAG != 0 {
            return match code & !ARRAY_ATTRIBUTE_FLAG {
                Self::TYPE => Some(AttributeType::TypeArray),
                element => DType::from_u8(element).filter(|d| d.byte_size().is_some()).map(AttributeType::Array),
            };
        }
        Some(match code {
            Self::TYPE => AttributeType::Type,
            Self::FUNC => AttributeType::Func,
            Self::SHAPE => AttributeType::Shape,
            Self::DENSE => AttributeType::Dense,
            Self::SYMBOL_REF => AttributeType::SymbolRef,
            Self::AGGREGATE => AttributeType::Aggregate,
            scalar => AttributeType::Scalar(DType::from_u8(scalar)?),
        })
    }
}

/// BEF's variable-length unsigned integers: 7-bit groups, the most significant first, the high
/// bit set on every byte but the last (130 is `81 02`). Not LEB128.
pub mod vbr {
    /// Appends `value`'s encoding to `out`.
    pub fn write(out: &mut Vec<u8>, value: u64) {
        let mut shift = 7 * (size(value) - 1);
        while shift > 0 {
            out.push(0x80 | ((value >> shift) & 0x7F) as u8);
            shift -= 7;
        }
        out.push((value & 0x7F) as u8);
    }

    /// How many bytes [`write`] takes for `value`.
    pub fn size(value: u64) -> u32 {
        let bits = 64 - value.leading_zeros();
        bits.max(1).div_ceil(7)
    }

    /// Decodes the integer at `bytes[*pos..]`, advancing `pos`; `None` when the bytes end
    /// inside it or it does not fit in 64 bits.
    pub fn read(bytes: &[u8], pos: &mut usize) -> Option<u64> {
        let mut value: u64 = 0;
        loop {
            let byte = *bytes.get(*pos)?;
            *pos += 1;
            if value >> 57 != 0 {
                return None;
            }
            value = (value << 7) | u64::from(byte & 0x7F);
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(value: u64) -> Vec<u8> {
        let mut out = Vec::new();
        vbr::write(&mut out, value);
        out
    }

    #[test]
    fn vbr_puts_the_most_significant_group_first() {
        assert_eq!(encoded(0), [0x00]);
        assert_eq!(encoded(127), [0x7F]);
        assert_eq!(encoded(130), [0x81, 0x02]);
        assert_eq!(encoded(16643), [0x81, 0x82, 0x03]);
        assert_eq!(vbr::size(16643), 3);
    }

    #[test]
    fn vbr_round_trips_and_refuses_truncation_and_overflow() {
        for value in [0, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let bytes = encoded(value);
            assert_eq!(bytes.len() as u32, vbr::size(value));
            let mut pos = 0;
            assert_eq!(vbr::read(&bytes, &mut pos), Some(value));
            assert_eq!(pos, bytes.len());
            let mut pos = 0;
            assert_eq!(vbr::read(&bytes[..bytes.len() - 1], &mut pos), None);
        }
        let mut pos = 0;
        assert_eq!(vbr::read(&[0xFF; 11], &mut pos), None);
    }

    #[test]
    fn attribute_type_codes_match_tfrt() {
        assert_eq!(AttributeType::Scalar(DType::I32).code(), 8);
        assert_eq!(AttributeType::Type.code(), 25);
        assert_eq!(AttributeType::Aggregate.code(), 30);
        assert_eq!(AttributeType::Array(DType::I32).code(), 0x88);
        assert_eq!(AttributeType::TypeArray.code(), 0x99);
        for code in 0..=255u8 {
            if let Some(t) = AttributeType::from_code(code) {
                assert_eq!(t.code(), code);
            }
        }
    }
}
