//! `nn.constant`: the tensor a dense attribute `value` holds (a model's weights, as the ONNX
//! importer writes them), over the attribute's bytes in the program itself (the BEF file) — no
//! copy per call, nor per file: the tensor's read-only buffer borrows them and holds what keeps
//! them alive. A kernel that would write into it fails instead.

use crate::tensor::{DenseHostTensor, TensorShape};
use crate::{KernelError, KernelFrame, KernelRegistry};
use rtx_host::HostBuffer;

fn constant(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let dense = frame.named_attribute("value")?.dense()?;
    let shape = TensorShape::new(dense.shape)?;
    let owner = frame.program().attributes_owner();
    // SAFETY: the attribute's bytes lie in the program's attributes section, which lives,
    // unchanged, as long as its attributes owner (a BEF file's image: a read-only mapping or an
    // owned copy), which the buffer holds.
    let buffer = unsafe { HostBuffer::borrowed(frame.host().allocator().clone(), dense.data, owner) }?;
    let tensor = DenseHostTensor::from_buffer(dense.dtype, shape, buffer)?;
    frame.emplace_result(0, tensor)
}

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("nn.constant", constant);
}
