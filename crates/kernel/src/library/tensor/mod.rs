//! TFRT's tensor kernels over the host types of [`crate::tensor`]: [`shape`] (`ts.*`),
//! [`dense`] and [`buffer`] (`tfrt_dht.*`: tensors, and the host buffers under them),
//! [`string`] (`tfrt_sht.*`) and [`coo`] (`coo.*`). Kernels that change or read a tensor take a
//! chain and return one, which orders them.

pub(crate) mod buffer;
pub(crate) mod coo;
pub(crate) mod dense;
pub(crate) mod shape;
pub(crate) mod string;

use crate::tensor::TensorShape;
use crate::{KernelError, KernelRegistry, KernelSite};

/// Registers every tensor kernel.
pub fn register_tensor_kernels(registry: &mut KernelRegistry) {
    shape::register(registry);
    dense::register(registry);
    buffer::register(registry);
    string::register(registry);
    coo::register(registry);
}

/// Attribute `i` read as a shape (an `i64` array of dimensions).
pub(crate) fn shape_attribute(site: &KernelSite<'_>, i: usize) -> Result<TensorShape, KernelError> {
    Ok(TensorShape::new(site.attribute(i)?.array::<i64>()?.to_vec())?)
}
