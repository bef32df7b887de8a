//! `nn.constant`: the tensor a dense attribute `value` holds (a model's weights, as the ONNX
//! importer writes them), over the attribute's bytes in the BEF file itself — no copy per call,
//! nor per file: the tensor's read-only buffer borrows them and holds the file's image. A kernel
//! that would write into it fails instead.

use std::sync::Arc;

use crate::kernel::tensor::{DenseHostTensor, TensorShape};
use crate::kernel::{KernelError, KernelFrame, KernelRegistry};
use rtx_host::HostBuffer;

fn constant(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let dense = frame.named_attribute("value")?.dense()?;
    let shape = TensorShape::new(dense.shape)?;
    let image = Arc::clone(frame.file().image());
    // SAFETY: the attribute's bytes lie in the image's storage (a read-only mapping or an owned
    // copy), which lives, unchanged, as long as the image the buffer holds.
    let buffer = unsafe { HostBuffer::borrowed(frame.host().allocator().clone(), dense.data, image) }?;
    let tensor = DenseHostTensor::from_buffer(dense.dtype, shape, buffer)?;
    frame.emplace_result(0, tensor)
}

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("nn.constant", constant);
}
