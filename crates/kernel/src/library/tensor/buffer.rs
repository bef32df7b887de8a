//! `tfrt_dht.*` host buffers: `allocate_buffer` (size and alignment operands, from the host's
//! allocator), `get_buffer` (a tensor's own, shared), `get_buffer_slice` (part of one, shared)
//! and `print_buffer` (`HostBuffer<pointer=0x..., size=N>`, as TFRT prints one).

use super::dense::pass_chain;
use crate::tensor::DenseHostTensor;
use crate::{KernelError, KernelFrame, KernelRegistry};
use rtx_host::{HostBuffer, StatusCode};

/// The i64 operand `i`, which must not be negative, as a byte count.
fn byte_count(frame: &KernelFrame<'_>, i: usize, what: &str) -> Result<usize, KernelError> {
    let value = *frame.get::<i64>(i)?;
    usize::try_from(value).map_err(|_| format!("{} {what} {value} is negative", frame.kernel_name()).into())
}

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("tfrt_dht.allocate_buffer", |f| {
        let (size, alignment) = (byte_count(f, 0, "size")?, byte_count(f, 1, "alignment")?);
        let buffer = f.host().allocate_buffer(size, alignment).map_err(|error| match error.code {
            StatusCode::ResourceExhausted => KernelError::from("Cannot allocate host buffer"),
            _ => error.into(),
        })?;
        f.emplace_result(0, buffer)
    });
    registry.add_kernel("tfrt_dht.get_buffer", |f| {
        let buffer = f.get::<DenseHostTensor>(0)?.buffer().clone();
        let chain = f.argument(1)?.clone();
        f.emplace_result(0, buffer)?;
        f.set_result(1, chain)
    });
    registry.add_kernel("tfrt_dht.get_buffer_slice", |f| {
        let (offset, size) = (byte_count(f, 1, "offset")?, byte_count(f, 2, "size")?);
        let slice = f.get::<HostBuffer>(0)?.slice(offset, size)?;
        f.emplace_result(0, slice)
    });
    registry.add_kernel("tfrt_dht.print_buffer", |f| {
        let line = format!("{}\n", f.get::<HostBuffer>(0)?);
        f.context().print(&line);
        pass_chain(f, 1)
    });
}
