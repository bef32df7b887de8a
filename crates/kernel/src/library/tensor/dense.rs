//! `tfrt_dht.*`: dense host tensors — per element type `T`, `create_uninitialized_tensor.T.R`
//! (shape attribute), `make_tensor.T` (over a buffer), `fill_tensor_with_constant.T`,
//! `set_tensor_with_constant_values.T` (attribute values), `set_tensor_with_values.T` (operand
//! values), `tensor_equal.T` and `tensor_allclose[.Nulp].T`; and `print_tensor` (dense, string and
//! sparse tensors, as TFRT prints them), `print_tensor_shape`, `get_tensor_shape`, `no_op_ht`,
//! and `tfrt_test.const_dense_attr` (a tensor from a dense attribute). `T` is TFRT's suffix:
//! `ui8`, `ui32`, `ui64`, `i8`, `i32`, `i64`, `f32`, `f64`, `bool`, `complex64`, `complex128`,
//! and `f16`, `bf16` for everything but comparisons.

use super::shape_attribute;
use crate::attribute::Attribute;
use crate::dtype::DType;
use crate::library::scalar::{Complex, BF16, F16};
use crate::tensor::{CooHostTensor, DenseHostTensor, Element, StringHostTensor, TensorShape};
use crate::{KernelError, KernelFrame, KernelRegistry};
use rtx_host::{Chain, HostBuffer};

/// The highest rank `create_uninitialized_tensor.T.R` is registered for.
const MAX_RANK: usize = 5;

/// `tensor_allclose` without a suffix allows this many units in the last place.
const DEFAULT_ULPS: u32 = 2;

/// The other tolerances `tensor_allclose.Nulp.T` is registered for.
const ULP_SUFFIXES: [u32; 4] = [3, 1000, 2000, 100000];

/// Returns the chain argument `i` as result 0.
pub(super) fn pass_chain(frame: &mut KernelFrame<'_>, i: usize) -> Result<(), KernelError> {
    let chain = frame.argument(i)?.clone();
    frame.set_result(0, chain)
}

/// The `T`s an array attribute holds for a tensor of `expected` elements. Complex elements are
/// given as their real and imaginary parts in turn (TFRT's layout: twice as many numbers);
/// how many of the others there are is left to [`DenseHostTensor::set_values`] to check.
fn attribute_values<T: Element>(attribute: Attribute<'_>, expected: usize) -> Result<Vec<T>, KernelError> {
    let size = T::DTYPE.byte_size().expect("element types have sizes");
    let part = match T::DTYPE {
        DType::Complex64 => Some(DType::F32),
        DType::Complex128 => Some(DType::F64),
        _ => None,
    };
    let bytes = match part {
        Some(part) => {
            let bytes = attribute.raw_array(part)?;
            let parts = bytes.len() / (size / 2);
            if parts != 2 * expected {
                return Err(format!(
                    "Incorrect number of real and imaginary values for the complex tensor: {parts}, but expected {}",
                    2 * expected
                )
                .into());
            }
            bytes
        }
        None => attribute.raw_array(T::DTYPE)?,
    };
    Ok(bytes.chunks_exact(size).map(T::read).collect())
}

/// What every element type has: creation (from nothing, a shape attribute, or a buffer) and
/// filling (from attributes or operands).
fn register_creation<T: Element>(registry: &mut KernelRegistry, suffix: &str) {
    for rank in 0..=MAX_RANK {
        registry.add_kernel(&format!("tfrt_dht.create_uninitialized_tensor.{suffix}.{rank}"), move |f| {
            let shape = shape_attribute(f, 0)?;
            if shape.rank() != rank {
                return Err(format!("{} makes tensors of rank {rank}, not {shape}", f.kernel_name()).into());
            }
            let tensor =
                DenseHostTensor::new_zeroed(f.host(), T::DTYPE, shape).map_err(|_| "Cannot allocate tensor")?;
            f.emplace_result(0, tensor)
        });
    }
    registry.add_kernel(&format!("tfrt_dht.make_tensor.{suffix}"), |f| {
        let (buffer, shape) = (f.get::<HostBuffer>(0)?.clone(), f.get::<TensorShape>(1)?.clone());
        let size = T::DTYPE.byte_size().expect("element types have sizes");
        let needed = shape.num_elements().and_then(|n| usize::try_from(n).ok()).and_then(|n| n.checked_mul(size));
        if needed != Some(buffer.len()) {
            return Err(format!(
                "dht.make_tensor failed: buffer_size ({}) is not equal to the number of elements in shape ({shape}) \
                 times element size ({size})",
                buffer.len()
            )
            .into());
        }
        let chain = f.argument(2)?.clone();
        f.emplace_result(0, DenseHostTensor::from_buffer(T::DTYPE, shape, buffer)?)?;
        f.set_result(1, chain)
    });
    registry.add_kernel(&format!("tfrt_dht.fill_tensor_with_constant.{suffix}"), |f| {
        let value = T::read(f.attribute(0)?.raw_scalar(T::DTYPE)?);
        f.get::<DenseHostTensor>(0)?.fill(value)?;
        pass_chain(f, 1)
    });
    registry.add_kernel(&format!("tfrt_dht.set_tensor_with_constant_values.{suffix}"), |f| {
        let tensor = f.get::<DenseHostTensor>(0)?;
        tensor.set_values(&attribute_values::<T>(f.attribute(0)?, tensor.num_elements())?)?;
        pass_chain(f, 1)
    });
    registry.add_kernel(&format!("tfrt_dht.set_tensor_with_values.{suffix}"), |f| {
        let values = (2..f.num_arguments()).map(|i| f.get::<T>(i).copied()).collect::<Result<Vec<T>, _>>()?;
        f.get::<DenseHostTensor>(0)?.set_values(&values)?;
        f.emplace_result(0, Chain)
    });
}

/// Element types whose tensors can be compared within a tolerance.
trait Close: Element {
    /// Whether `self` and `other` differ by at most `ulps` units in the last place (TFRT's test:
    /// relative to their sum, or by less than the smallest normal number); integers must be equal.
    fn close(self, other: Self, ulps: u32) -> bool;
}

macro_rules! exact {
    ($($t:ty),*) => {$(
        impl Close for $t {
            fn close(self, other: $t, _ulps: u32) -> bool {
                self == other
            }
        }
    )*};
}
exact!(u8, u32, u64, i8, i32, i64, bool);

macro_rules! float {
    ($($t:ty),*) => {$(
        impl Close for $t {
            fn close(self, other: $t, ulps: u32) -> bool {
                let difference = (self - other).abs();
                difference <= <$t>::EPSILON * (self + other).abs() * ulps as $t || difference < <$t>::MIN_POSITIVE
            }
        }

        impl Close for Complex<$t> {
            fn close(self, other: Complex<$t>, ulps: u32) -> bool {
                self.re.close(other.re, ulps) && self.im.close(other.im, ulps)
            }
        }
    )*};
}
float!(f32, f64);

/// Compares the tensors of arguments 0 and 1 element by element (tensors of other shapes or
/// element types differ), and passes the chain of argument 2 on.
fn compare<T: Element>(frame: &mut KernelFrame<'_>, equal: impl Fn(T, T) -> bool) -> Result<(), KernelError> {
    let (a, b) = (frame.get::<DenseHostTensor>(0)?, frame.get::<DenseHostTensor>(1)?);
    let same = a.dtype() == b.dtype()
        && a.shape() == b.shape()
        && a.values::<T>()?.into_iter().zip(b.values::<T>()?).all(|(x, y)| equal(x, y));
    let chain = frame.argument(2)?.clone();
    frame.emplace_result(0, same)?;
    frame.set_result(1, chain)
}

fn register_comparison<T: Close>(registry: &mut KernelRegistry, suffix: &str) {
    registry.add_kernel(&format!("tfrt_dht.tensor_equal.{suffix}"), |f| compare::<T>(f, |x, y| x == y));
    registry.add_kernel(&format!("tfrt_dht.tensor_allclose.{suffix}"), |f| {
        compare::<T>(f, |x, y| x.close(y, DEFAULT_ULPS))
    });
    for ulps in ULP_SUFFIXES {
        registry.add_kernel(&format!("tfrt_dht.tensor_allclose.{ulps}ulp.{suffix}"), move |f| {
            compare::<T>(f, |x, y| x.close(y, ulps))
        });
    }
}

fn register_type<T: Close>(registry: &mut KernelRegistry, suffix: &str) {
    register_creation::<T>(registry, suffix);
    register_comparison::<T>(registry, suffix);
}

pub(crate) fn register(registry: &mut KernelRegistry) {
    register_type::<u8>(registry, "ui8");
    register_type::<u32>(registry, "ui32");
    register_type::<u64>(registry, "ui64");
    register_type::<i8>(registry, "i8");
    register_type::<i32>(registry, "i32");
    register_type::<i64>(registry, "i64");
    register_type::<f32>(registry, "f32");
    register_type::<f64>(registry, "f64");
    register_type::<bool>(registry, "bool");
    register_type::<Complex<f32>>(registry, "complex64");
    register_type::<Complex<f64>>(registry, "complex128");
    register_creation::<F16>(registry, "f16");
    register_creation::<BF16>(registry, "bf16");

    registry.add_kernel("tfrt_dht.print_tensor", |f| {
        let argument = f.argument(0)?;
        let text = if let Ok(dense) = argument.try_get::<DenseHostTensor>() {
            dense.to_string()
        } else if let Ok(strings) = argument.try_get::<StringHostTensor>() {
            strings.to_string()
        } else if let Ok(coo) = argument.try_get::<CooHostTensor>() {
            coo.to_string()
        } else {
            return Err(format!("tfrt_dht.print_tensor cannot print a {}", argument.type_name()).into());
        };
        f.context().print(&format!("{text}\n"));
        pass_chain(f, 1)
    });
    registry.add_kernel("tfrt_dht.print_tensor_shape", |f| {
        let line = format!("shape = {}\n", f.get::<DenseHostTensor>(0)?.shape());
        f.context().print(&line);
        pass_chain(f, 1)
    });
    registry.add_kernel("tfrt_dht.get_tensor_shape", |f| {
        let shape: TensorShape = f.get::<DenseHostTensor>(0)?.shape().clone();
        f.emplace_result(0, shape)
    });
    // Waits for a tensor and does nothing with it: a chain once it is there.
    registry.add_kernel("tfrt_dht.no_op_ht", |f| {
        f.get::<DenseHostTensor>(0)?;
        f.emplace_result(0, Chain)
    });
    registry.add_kernel("tfrt_test.const_dense_attr", |f| {
        let dense = f.attribute(0)?.dense()?;
        let shape = TensorShape::new(dense.shape)?;
        let tensor = DenseHostTensor::from_bytes(f.host(), dense.dtype, shape, dense.data)?;
        f.emplace_result(0, tensor)
    });
}
