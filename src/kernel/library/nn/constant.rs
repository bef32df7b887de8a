//! `nn.constant`: the tensor a dense attribute `value` holds (a model's weights, as the ONNX
//! importer writes them).

use crate::kernel::tensor::{DenseHostTensor, TensorShape};
use crate::kernel::{KernelError, KernelFrame, KernelRegistry};

fn constant(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let dense = frame.named_attribute("value")?.dense()?;
    let shape = TensorShape::new(dense.shape)?;
    let tensor = DenseHostTensor::from_bytes(frame.host(), dense.dtype, shape, dense.data)?;
    frame.emplace_result(0, tensor)
}

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("nn.constant", constant);
}
