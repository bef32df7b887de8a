//! Element types of host tensors: the Rust type that holds each [`DType`], how it is stored
//! (little-endian, as BEF's dense attributes store it) and how TFRT prints it (integers in
//! decimal, floats as C's `%e`, complex numbers as `(re,im)`, `i1` as 0 or 1).

use crate::dtype::DType;
use crate::library::print::c_exponent;
use crate::library::scalar::{Complex, BF16, F16};

/// A Rust type that holds the elements of one [`DType`].
pub trait Element: Copy + PartialEq + Send + Sync + 'static {
    const DTYPE: DType;
    /// Reads one element from its `DTYPE.byte_size()` little-endian bytes.
    fn read(bytes: &[u8]) -> Self;
    /// Writes one element into its `DTYPE.byte_size()` bytes.
    fn write(self, bytes: &mut [u8]);
}

macro_rules! primitive {
    ($($t:ty => $dtype:ident),*) => {$(
        impl Element for $t {
            const DTYPE: DType = DType::$dtype;
            fn read(bytes: &[u8]) -> $t {
                <$t>::from_le_bytes(bytes.try_into().expect("callers pass the element's size"))
            }
            fn write(self, bytes: &mut [u8]) {
                bytes.copy_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}
primitive!(u8 => UI8, u16 => UI16, u32 => UI32, u64 => UI64, i8 => I8, i16 => I16, i32 => I32, i64 => I64,
           f32 => F32, f64 => F64);

impl Element for bool {
    const DTYPE: DType = DType::I1;
    fn read(bytes: &[u8]) -> bool {
        bytes[0] != 0
    }
    fn write(self, bytes: &mut [u8]) {
        bytes[0] = u8::from(self);
    }
}

macro_rules! complex {
    ($($t:ty => $dtype:ident),*) => {$(
        impl Element for Complex<$t> {
            const DTYPE: DType = DType::$dtype;
            fn read(bytes: &[u8]) -> Complex<$t> {
                let (re, im) = bytes.split_at(bytes.len() / 2);
                Complex { re: <$t>::read(re), im: <$t>::read(im) }
            }
            fn write(self, bytes: &mut [u8]) {
                let (re, im) = bytes.split_at_mut(bytes.len() / 2);
                self.re.write(re);
                self.im.write(im);
            }
        }
    )*};
}
complex!(f32 => Complex64, f64 => Complex128);

/// Half floats are kept as their bits: tensors of them are only created, filled and copied.
macro_rules! half {
    ($($t:ident),*) => {$(
        impl Element for $t {
            const DTYPE: DType = DType::$t;
            fn read(bytes: &[u8]) -> $t {
                $t(u16::read(bytes))
            }
            fn write(self, bytes: &mut [u8]) {
                self.0.write(bytes);
            }
        }
    )*};
}
half!(F16, BF16);

/// TFRT's name of an element type (`i32`, `f32`, `u8`, `complex64`, `str`, ...).
pub fn dtype_name(dtype: DType) -> &'static str {
    use DType::*;
    match dtype {
        UI8 => "u8",
        UI16 => "u16",
        UI32 => "u32",
        UI64 => "u64",
        I1 => "i1",
        I8 => "i8",
        I16 => "i16",
        I32 => "i32",
        I64 => "i64",
        F32 => "f32",
        F64 => "f64",
        Complex64 => "complex64",
        Complex128 => "complex128",
        F16 => "f16",
        BF16 => "bf16",
        String => "str",
        Resource => "resource",
        Variant => "variant",
        QUI8 => "qu8",
        QUI16 => "qu16",
        QI8 => "qi8",
        QI16 => "qi16",
        QI32 => "qi32",
    }
}

/// One element of type `dtype` stored in `bytes`, as TFRT prints it; `None` for types with no
/// fixed layout. Half floats show their bits (`fp16(15360)` is 1.0), quantized types their
/// stored integer (`qi8(-3)`).
pub fn format_element(dtype: DType, bytes: &[u8]) -> Option<String> {
    use DType::*;
    Some(match dtype {
        UI8 => u8::read(bytes).to_string(),
        UI16 => u16::read(bytes).to_string(),
        F16 => format!("fp16({})", u16::read(bytes)),
        BF16 => format!("bf16({})", u16::read(bytes)),
        QUI8 => format!("qu8({})", u8::read(bytes)),
        QUI16 => format!("qu16({})", u16::read(bytes)),
        QI8 => format!("qi8({})", i8::read(bytes)),
        QI16 => format!("qi16({})", i16::read(bytes)),
        QI32 => format!("qi32({})", i32::read(bytes)),
        UI32 => u32::read(bytes).to_string(),
        UI64 => u64::read(bytes).to_string(),
        I1 => u8::from(bool::read(bytes)).to_string(),
        I8 => i8::read(bytes).to_string(),
        I16 => i16::read(bytes).to_string(),
        I32 => i32::read(bytes).to_string(),
        I64 => i64::read(bytes).to_string(),
        F32 => c_exponent(f32::read(bytes).into()),
        F64 => c_exponent(f64::read(bytes)),
        Complex64 => {
            let c = Complex::<f32>::read(bytes);
            format!("({},{})", c_exponent(c.re.into()), c_exponent(c.im.into()))
        }
        Complex128 => {
            let c = Complex::<f64>::read(bytes);
            format!("({},{})", c_exponent(c.re), c_exponent(c.im))
        }
        String | Resource | Variant => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_round_trip_and_print_as_tfrt_does() {
        let mut bytes = [0u8; 8];
        (-7i32).write(&mut bytes[..4]);
        assert_eq!(i32::read(&bytes[..4]), -7);
        assert_eq!(format_element(DType::I32, &bytes[..4]).as_deref(), Some("-7"));
        1.0f32.write(&mut bytes[..4]);
        assert_eq!(format_element(DType::F32, &bytes[..4]).as_deref(), Some("1.000000e+00"));
        Complex { re: 1.0f32, im: -2.0 }.write(&mut bytes);
        assert_eq!(format_element(DType::Complex64, &bytes).as_deref(), Some("(1.000000e+00,-2.000000e+00)"));
        assert_eq!(format_element(DType::I1, &[1]).as_deref(), Some("1"));
        assert_eq!(format_element(DType::BF16, &16416u16.to_le_bytes()).as_deref(), Some("bf16(16416)"));
        assert_eq!(format_element(DType::F16, &[0, 0]).as_deref(), Some("fp16(0)"));
        assert_eq!(format_element(DType::QI8, &[0xFD]).as_deref(), Some("qi8(-3)"));
        assert_eq!(format_element(DType::String, &[]), None);
        assert_eq!(dtype_name(DType::UI8), "u8");
    }
}
