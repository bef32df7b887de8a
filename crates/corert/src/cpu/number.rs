//! [`Number`]: the element types the cpu handler's ops compute on, read and written as their
//! little-endian bytes, and [`numeric!`], which runs code for the Rust type of a [`DType`].

use rtx_host::{Diagnostic, HostContext};
use rtx_kernel::tensor::{DenseHostTensor, TensorShape};
use rtx_kernel::DType;

pub(super) trait Number: Copy + PartialOrd + Send + Sync + 'static {
    const SIZE: usize;
    fn read(bytes: &[u8]) -> Self;
    fn write(self, bytes: &mut [u8]);
    fn zero() -> Self;
    /// `self + other`, wrapping as C++ arithmetic does for integers.
    fn add(self, other: Self) -> Self;
    /// `self / count`, truncating for integers.
    fn divide(self, count: usize) -> Self;
    fn to_f64(self) -> f64;
    fn from_f64(value: f64) -> Self;
}

macro_rules! integer {
    ($($t:ty),*) => {$(
        impl Number for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn read(bytes: &[u8]) -> $t {
                <$t>::from_le_bytes(bytes.try_into().expect("callers pass SIZE bytes"))
            }
            fn write(self, bytes: &mut [u8]) {
                bytes.copy_from_slice(&self.to_le_bytes());
            }
            fn zero() -> $t {
                0
            }
            fn add(self, other: $t) -> $t {
                self.wrapping_add(other)
            }
            fn divide(self, count: usize) -> $t {
                <$t>::try_from(count).ok().filter(|&c| c != 0).map_or(0, |c| self.wrapping_div(c))
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn from_f64(value: f64) -> $t {
                value as $t
            }
        }
    )*};
}
integer!(u8, u16, u32, u64, i8, i16, i32, i64);

macro_rules! float {
    ($($t:ty),*) => {$(
        impl Number for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn read(bytes: &[u8]) -> $t {
                <$t>::from_le_bytes(bytes.try_into().expect("callers pass SIZE bytes"))
            }
            fn write(self, bytes: &mut [u8]) {
                bytes.copy_from_slice(&self.to_le_bytes());
            }
            fn zero() -> $t {
                0.0
            }
            fn add(self, other: $t) -> $t {
                self + other
            }
            fn divide(self, count: usize) -> $t {
                self / count as $t
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn from_f64(value: f64) -> $t {
                value as $t
            }
        }
    )*};
}
float!(f32, f64);

impl Number for half::f16 {
    const SIZE: usize = 2;
    fn read(bytes: &[u8]) -> half::f16 {
        half::f16::from_le_bytes(bytes.try_into().expect("callers pass SIZE bytes"))
    }
    fn write(self, bytes: &mut [u8]) {
        bytes.copy_from_slice(&self.to_le_bytes());
    }
    fn zero() -> half::f16 {
        half::f16::ZERO
    }
    fn add(self, other: half::f16) -> half::f16 {
        self + other
    }
    fn divide(self, count: usize) -> half::f16 {
        half::f16::from_f64(self.to_f64() / count as f64)
    }
    fn to_f64(self) -> f64 {
        half::f16::to_f64(self)
    }
    fn from_f64(value: f64) -> half::f16 {
        half::f16::from_f64(value)
    }
}

/// Booleans add as C++ promotes them: true when either is.
impl Number for bool {
    const SIZE: usize = 1;
    fn read(bytes: &[u8]) -> bool {
        bytes[0] != 0
    }
    fn write(self, bytes: &mut [u8]) {
        bytes[0] = u8::from(self);
    }
    fn zero() -> bool {
        false
    }
    fn add(self, other: bool) -> bool {
        self || other
    }
    fn divide(self, count: usize) -> bool {
        self && count == 1
    }
    fn to_f64(self) -> f64 {
        f64::from(u8::from(self))
    }
    fn from_f64(value: f64) -> bool {
        value != 0.0
    }
}

/// Runs `$body` with `$t` the Rust type of `$dtype` (any number type, `i1` and `f16` included),
/// or `$other` for the rest.
macro_rules! numeric {
    ($dtype:expr, $t:ident => $body:expr, else $other:expr) => {
        match $dtype {
            rtx_kernel::DType::UI8 => {
                type $t = u8;
                $body
            }
            rtx_kernel::DType::UI16 => {
                type $t = u16;
                $body
            }
            rtx_kernel::DType::UI32 => {
                type $t = u32;
                $body
            }
            rtx_kernel::DType::UI64 => {
                type $t = u64;
                $body
            }
            rtx_kernel::DType::I1 => {
                type $t = bool;
                $body
            }
            rtx_kernel::DType::I8 => {
                type $t = i8;
                $body
            }
            rtx_kernel::DType::I16 => {
                type $t = i16;
                $body
            }
            rtx_kernel::DType::I32 => {
                type $t = i32;
                $body
            }
            rtx_kernel::DType::I64 => {
                type $t = i64;
                $body
            }
            rtx_kernel::DType::F16 => {
                type $t = half::f16;
                $body
            }
            rtx_kernel::DType::F32 => {
                type $t = f32;
                $body
            }
            rtx_kernel::DType::F64 => {
                type $t = f64;
                $body
            }
            _ => $other,
        }
    };
}
pub(super) use numeric;

/// The elements of `tensor`, which holds `T`s.
pub(super) fn values<T: Number>(tensor: &DenseHostTensor) -> Vec<T> {
    tensor.with_bytes(|bytes| bytes.chunks_exact(T::SIZE).map(T::read).collect())
}

/// A tensor of `dtype` (whose elements are `T`s) and `shape` holding `values`.
pub(super) fn tensor_of<T: Number>(
    host: &HostContext,
    dtype: DType,
    shape: TensorShape,
    values: &[T],
) -> Result<DenseHostTensor, Diagnostic> {
    let tensor = DenseHostTensor::new_zeroed(host, dtype, shape)?;
    tensor.buffer().with_bytes_mut(|bytes| {
        for (element, value) in bytes.chunks_exact_mut(T::SIZE).zip(values) {
            value.write(element);
        }
    })?;
    Ok(tensor)
}
