//! TFRT's element types (`DType`), as attributes, dense elements and host tensors name them.
//! They sit in the kernel layer, below BEF, as TFRT keeps its dtype library below its executor.

/// An enum of byte codes with its list of values and the checked conversion from a byte, for
/// the codes of a file format (here and in `rtx-bef`'s format).
#[macro_export]
#[doc(hidden)]
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
