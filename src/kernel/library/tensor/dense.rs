//! `tfrt_dht.*`: dense host tensors — `create_uninitialized_tensor.T.R` (shape attribute),
//! `fill_tensor_with_constant.T`, `set_tensor_with_constant_values.T`, `tensor_equal.T`,
//! `print_tensor` (dense, string and sparse tensors, as TFRT prints them),
//! `print_tensor_shape`, `get_tensor_shape`; and `tfrt_test.const_dense_attr` (a tensor from a
//! dense attribute). `T` is TFRT's suffix: `ui8`, `ui32`, `ui64`, `i8`, `i32`, `i64`, `f32`,
//! `f64`, `bool`, `complex64`, `complex128` (and `f16`, `bf16` for creation only).

use super::shape_attribute;
use crate::bef::format::DType;
use crate::bef::reader::Scalar;
use crate::kernel::library::scalar::Complex;
use crate::kernel::tensor::{CooHostTensor, DenseHostTensor, Element, StringHostTensor, TensorShape};
use crate::kernel::{KernelError, KernelFrame, KernelRegistry};

/// The highest rank `create_uninitialized_tensor.T.R` is registered for.
const MAX_RANK: usize = 5;

fn register_creation(registry: &mut KernelRegistry, suffix: &str, dtype: DType) {
    for rank in 0..=MAX_RANK {
        registry.add_kernel(&format!("tfrt_dht.create_uninitialized_tensor.{suffix}.{rank}"), move |f| {
            let shape = shape_attribute(f, 0)?;
            if shape.rank() != rank {
                return Err(format!("{} makes tensors of rank {rank}, not {shape}", f.kernel_name()).into());
            }
            let tensor = DenseHostTensor::new_zeroed(f.host(), dtype, shape).map_err(|_| "Cannot allocate tensor")?;
            f.emplace_result(0, tensor)
        });
    }
}

/// Returns the chain argument `i` as result 0.
fn pass_chain(frame: &mut KernelFrame<'_>, i: usize) -> Result<(), KernelError> {
    let chain = frame.argument(i)?.clone();
    frame.set_result(0, chain)
}

/// Kernels whose attributes hold `T`s: filling and setting from attributes.
fn register_from_attributes<T: Element + Scalar>(registry: &mut KernelRegistry, suffix: &str) {
    registry.add_kernel(&format!("tfrt_dht.fill_tensor_with_constant.{suffix}"), |f| {
        let value = f.scalar_attribute::<T>(0)?;
        f.get::<DenseHostTensor>(0)?.fill(value)?;
        pass_chain(f, 1)
    });
    registry.add_kernel(&format!("tfrt_dht.set_tensor_with_constant_values.{suffix}"), |f| {
        let values = f.attribute(0)?.array::<T>()?.to_vec();
        f.get::<DenseHostTensor>(0)?.set_values(&values)?;
        pass_chain(f, 1)
    });
}

fn register_equal<T: Element>(registry: &mut KernelRegistry, suffix: &str) {
    registry.add_kernel(&format!("tfrt_dht.tensor_equal.{suffix}"), |f| {
        let (a, b) = (f.get::<DenseHostTensor>(0)?, f.get::<DenseHostTensor>(1)?);
        let equal = a.shape() == b.shape() && a.values::<T>()? == b.values::<T>()?;
        let chain = f.argument(2)?.clone();
        f.emplace_result(0, equal)?;
        f.set_result(1, chain)
    });
}

fn register_type<T: Element + Scalar>(registry: &mut KernelRegistry, suffix: &str) {
    register_creation(registry, suffix, T::DTYPE);
    register_from_attributes::<T>(registry, suffix);
    register_equal::<T>(registry, suffix);
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
    for (suffix, dtype) in
        [("complex64", DType::Complex64), ("complex128", DType::Complex128), ("f16", DType::F16), ("bf16", DType::BF16)]
    {
        register_creation(registry, suffix, dtype);
    }
    register_equal::<Complex<f32>>(registry, "complex64");
    register_equal::<Complex<f64>>(registry, "complex128");

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
    registry.add_kernel("tfrt_test.const_dense_attr", |f| {
        let dense = f.attribute(0)?.dense()?;
        let shape = TensorShape::new(dense.shape)?;
        let tensor = DenseHostTensor::from_bytes(f.host(), dense.dtype, shape, dense.data)?;
        f.emplace_result(0, tensor)
    });
}
