//! `tfrt_sht.create_tensor`: a string tensor from its `shape` and `values` attributes.

use super::shape_attribute;
use crate::tensor::StringHostTensor;
use crate::{KernelError, KernelRegistry};

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("tfrt_sht.create_tensor", |f| {
        let shape = shape_attribute(f, 0)?;
        let values = f.attribute(1)?.aggregate()?;
        let strings = (0..values.len())
            .map(|i| Ok(values.get(i)?.string()?.to_owned()))
            .collect::<Result<Vec<String>, KernelError>>()?;
        f.emplace_result(0, StringHostTensor::new(shape, strings)?)
    });
}
