//! Scalar kernels: constants of every type, integer and float arithmetic, comparisons, `and`,
//! casts. Integer arithmetic wraps (TFRT's C++ overflows the same way on every target it runs
//! on); division by zero is the error `Divide by zero`.

use super::{binary, unary};
use crate::kernel::{KernelError, KernelRegistry};

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

/// `tfrt.constant.*`: the `value` attribute (complex: `imaginary`, `real`, in name order).
fn register_constants(registry: &mut KernelRegistry) {
    registry.add_kernel("tfrt.constant.i1", |f| {
        let value = f.scalar_attribute::<u8>(0)? != 0;
        f.emplace_result(0, value)
    });
    macro_rules! constant {
        ($($name:literal: $t:ty),*) => {$(
            registry.add_kernel($name, |f| {
                let value = f.scalar_attribute::<$t>(0)?;
                f.emplace_result(0, value)
            });
        )*};
    }
    constant!("tfrt.constant.i32": i32, "tfrt.constant.i64": i64, "tfrt.constant.ui32": u32,
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
    ($registry:ident, $t:ty, $suffix:literal) => {
        binary::<$t, $t>($registry, concat!("tfrt.add.", $suffix), |a, b| Ok(a.wrapping_add(b)));
        binary::<$t, $t>($registry, concat!("tfrt.minus.", $suffix), |a, b| Ok(a.wrapping_sub(b)));
        binary::<$t, $t>($registry, concat!("tfrt.mul.", $suffix), |a, b| Ok(a.wrapping_mul(b)));
        binary::<$t, bool>($registry, concat!("tfrt.equal.", $suffix), |a, b| Ok(a == b));
        binary::<$t, bool>($registry, concat!("tfrt.lessequal.", $suffix), |a, b| Ok(a <= b));
        $registry.add_kernel(concat!("tfrt.div.", $suffix), |f| {
            let (a, b) = (*f.get::<$t>(0)?, *f.get::<$t>(1)?);
            if b == 0 {
                return Err(divide_by_zero());
            }
            f.emplace_result(0, a.wrapping_div(b))?;
            f.emplace_result(1, a.wrapping_rem(b))
        });
    };
}

macro_rules! float_kernels {
    ($registry:ident, $t:ty, $suffix:literal) => {
        binary::<$t, $t>($registry, concat!("tfrt.add.", $suffix), |a, b| Ok(a + b));
        binary::<$t, $t>($registry, concat!("tfrt.multiply.", $suffix), |a, b| Ok(a * b));
        // std::min: the first unless the second is smaller (so NaN handling follows `<`).
        binary::<$t, $t>($registry, concat!("tfrt.minimum.", $suffix), |a, b| Ok(if b < a { b } else { a }));
        binary::<$t, $t>($registry, concat!("tfrt.div.", $suffix), |a, b| {
            if b == 0.0 {
                return Err(divide_by_zero());
            }
            Ok(a / b)
        });
    };
}

pub(crate) fn register(registry: &mut KernelRegistry) {
    register_constants(registry);
    integer_kernels!(registry, i32, "i32");
    integer_kernels!(registry, i64, "i64");
    float_kernels!(registry, f32, "f32");
    float_kernels!(registry, f64, "f64");
    binary::<bool, bool>(registry, "tfrt.and.i1", |a, b| Ok(a && b));
    // C++ static_cast; `as` saturates where C++ would be undefined.
    unary::<i64, f32>(registry, "tfrt.cast.i64_to_f32", |v| Ok(v as f32));
    unary::<f32, i64>(registry, "tfrt.cast.f32_to_i64", |v| Ok(v as i64));
    unary::<i64, f64>(registry, "tfrt.cast.i64_to_f64", |v| Ok(v as f64));
    unary::<f64, i64>(registry, "tfrt.cast.f64_to_i64", |v| Ok(v as i64));
}
