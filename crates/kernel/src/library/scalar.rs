//! Scalar kernels: constants of every type, integer and float arithmetic, comparisons, `and`,
//! casts. Integer arithmetic wraps (TFRT's C++ overflows the same way on every target it runs
//! on); division by zero is the error `Divide by zero`.

use crate::attribute::Scalar;
use crate::pure::Slot;
use crate::pure_kernel;
use crate::{KernelError, KernelRegistry, KernelSite, PureKernel};

/// The bits of an IEEE half-precision float (what `tfrt.constant.f16` holds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct F16(pub u16);

/// The bits of a bfloat16 (what `tfrt.constant.bf16` holds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BF16(pub u16);

/// A complex number (`tfrt.constant.complex64` holds `Complex<f32>`, complex128 `Complex<f64>`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Complex<T> {
    pub re: T,
    pub im: T,
}

fn divide_by_zero() -> KernelError {
    KernelError::from("Divide by zero")
}

/// A constant's immediate: its `value` attribute.
fn constant<T: Scalar + Slot>(site: &KernelSite<'_>) -> Result<u64, KernelError> {
    Ok(site.scalar_attribute::<T>(0)?.into_slot())
}

/// `tfrt.constant.*`: the `value` attribute (complex: `imaginary`, `real`, in name order).
fn register_constants(registry: &mut KernelRegistry) {
    fn boolean(site: &KernelSite<'_>) -> Result<u64, KernelError> {
        Ok((site.scalar_attribute::<u8>(0)? != 0).into_slot())
    }
    pure_kernel!(registry, "tfrt.constant.i1", Some(boolean), |value| -> bool { Ok(bool::from_slot(value)) });
    macro_rules! constants {
        ($($name:literal: $t:ty),*) => {$(
            pure_kernel!(registry, $name, Some(constant::<$t>), |value| -> $t { Ok(<$t>::from_slot(value)) });
        )*};
    }
    constants!("tfrt.constant.i32": i32, "tfrt.constant.i64": i64, "tfrt.constant.ui32": u32,
               "tfrt.constant.ui64": u64, "tfrt.constant.f32": f32, "tfrt.constant.f64": f64);
    registry.add_kernel("tfrt.constant.f16", |f| {
        let bits = f.scalar_attribute::<u16>(0)?;
        f.emplace_result(0, F16(bits))
    });
    registry.add_kernel("tfrt.constant.bf16", |f| {
        let bits = f.scalar_attribute::<u16>(0)?;
        f.emplace_result(0, BF16(bits))
    });
    registry.add_kernel("tfrt.constant.complex64", |f| {
        let (im, re) = (f.scalar_attribute::<f32>(0)?, f.scalar_attribute::<f32>(1)?);
        f.emplace_result(0, Complex { re, im })
    });
    registry.add_kernel("tfrt.constant.complex128", |f| {
        let (im, re) = (f.scalar_attribute::<f64>(0)?, f.scalar_attribute::<f64>(1)?);
        f.emplace_result(0, Complex { re, im })
    });
}

macro_rules! integer_kernels {
    ($registry:ident, $t:ty, $suffix:literal) => {{
        pure_kernel!($registry, concat!("tfrt.add.", $suffix), |a: $t, b: $t| -> $t { Ok(a.wrapping_add(b)) });
        pure_kernel!($registry, concat!("tfrt.minus.", $suffix), |a: $t, b: $t| -> $t { Ok(a.wrapping_sub(b)) });
        pure_kernel!($registry, concat!("tfrt.mul.", $suffix), |a: $t, b: $t| -> $t { Ok(a.wrapping_mul(b)) });
        pure_kernel!($registry, concat!("tfrt.equal.", $suffix), |a: $t, b: $t| -> bool { Ok(a == b) });
        pure_kernel!($registry, concat!("tfrt.lessequal.", $suffix), |a: $t, b: $t| -> bool { Ok(a <= b) });
        /// Quotient and remainder.
        fn divide(arguments: [u64; 2], _: u64, error: &mut Option<KernelError>) -> [u64; 2] {
            let (a, b) = (<$t>::from_slot(arguments[0]), <$t>::from_slot(arguments[1]));
            if b == 0 {
                *error = Some(divide_by_zero());
                return [0, 0];
            }
            [a.wrapping_div(b).into_slot(), a.wrapping_rem(b).into_slot()]
        }
        const DIVIDE: PureKernel = PureKernel::new(&[<$t>::TYPE, <$t>::TYPE], &[<$t>::TYPE, <$t>::TYPE], None, divide);
        $registry.add_pure_kernel(concat!("tfrt.div.", $suffix), DIVIDE);
    }};
}

macro_rules! float_kernels {
    ($registry:ident, $t:ty, $suffix:literal) => {
        pure_kernel!($registry, concat!("tfrt.add.", $suffix), |a: $t, b: $t| -> $t { Ok(a + b) });
        pure_kernel!($registry, concat!("tfrt.multiply.", $suffix), |a: $t, b: $t| -> $t { Ok(a * b) });
        // std::min: the first unless the second is smaller (so NaN handling follows `<`).
        pure_kernel!($registry, concat!("tfrt.minimum.", $suffix), |a: $t, b: $t| -> $t {
            Ok(if b < a { b } else { a })
        });
        pure_kernel!($registry, concat!("tfrt.div.", $suffix), |a: $t, b: $t| -> $t {
            if b == 0.0 {
                Err(divide_by_zero())
            } else {
                Ok(a / b)
            }
        });
    };
}

pub(crate) fn register(registry: &mut KernelRegistry) {
    register_constants(registry);
    integer_kernels!(registry, i32, "i32");
    integer_kernels!(registry, i64, "i64");
    float_kernels!(registry, f32, "f32");
    float_kernels!(registry, f64, "f64");
    pure_kernel!(registry, "tfrt.and.i1", |a: bool, b: bool| -> bool { Ok(a && b) });
    // C++ static_cast; `as` saturates where C++ would be undefined.
    pure_kernel!(registry, "tfrt.cast.i64_to_f32", |v: i64| -> f32 { Ok(v as f32) });
    pure_kernel!(registry, "tfrt.cast.f32_to_i64", |v: f32| -> i64 { Ok(v as i64) });
    pure_kernel!(registry, "tfrt.cast.i64_to_f64", |v: i64| -> f64 { Ok(v as f64) });
    pure_kernel!(registry, "tfrt.cast.f64_to_i64", |v: f64| -> i64 { Ok(v as i64) });
}
