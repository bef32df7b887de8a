//! Dense host tensors as buffer views and back: how a tensor crosses between a BEF graph and a VM
//! function, without a copy where the layout allows. A tensor becomes a view of its own bytes (the
//! host buffer backs the HAL buffer, which the CPU devices use as it is); a view of a CPU device's
//! memory becomes a tensor over the same bytes, and only a view the host cannot address in place
//! (a GPU's memory, elements out of alignment) is copied into a host buffer.

use std::ptr::NonNull;
use std::sync::Arc;

use rtx_hal::buffer::{memory_type, usage, Buffer};
use rtx_hal::buffer_view::{BufferView, DENSE_ROW_MAJOR};
use rtx_hal::element_type::{ElementType, NumericalType};
use rtx_hal::heap::HeapAllocator;
use rtx_host::{Diagnostic, HostBuffer, HostContext, StatusCode};
use rtx_kernel::tensor::dense::byte_len;
use rtx_kernel::tensor::{dtype_name, DenseHostTensor, TensorShape};
use rtx_kernel::DType;
use rtx_vm::buffer::ByteBuffer;

/// The BEF type names of dense host tensors: where a BEF function declares one, a buffer view
/// passes (as a tensor, see [`view_to_tensor`]).
pub const TENSOR_TYPES: [&str; 2] = ["!tfrt_tensor.tensor", "!t.tensor"];

/// An ONNX sequence as a C host passes it (`rtx_async_value_new_sequence`): buffer views, which
/// a BEF call turns into a [`Sequence`](rtx_kernel::library::onnx::Sequence) of tensors over the
/// same bytes (see [`views_to_sequence`]).
pub struct ViewSequence(pub Vec<Arc<BufferView>>);

/// The sequence of tensors `views` holds (f32 elements when it is empty: an empty sequence's
/// element type is what the kernels that fill it say).
pub fn views_to_sequence(
    host: &HostContext,
    views: &ViewSequence,
) -> Result<rtx_kernel::library::onnx::Sequence, Diagnostic> {
    let tensors = views.0.iter().map(|view| view_to_tensor(host, view)).collect::<Result<Vec<_>, _>>()?;
    let dtype = tensors.first().map_or(DType::F32, DenseHostTensor::dtype);
    Ok(rtx_kernel::library::onnx::Sequence { dtype, tensors })
}

/// The IREE element type of `dtype` (integers signless, as IREE's programs assert them), or
/// INVALID_ARGUMENT for element types with no dense HAL layout.
pub fn element_type(dtype: DType) -> Result<ElementType, Diagnostic> {
    Ok(match dtype {
        DType::I1 => ElementType::BOOL_8,
        DType::I8 => ElementType::INT_8,
        DType::I16 => ElementType::INT_16,
        DType::I32 => ElementType::INT_32,
        DType::I64 => ElementType::INT_64,
        DType::UI8 => ElementType::UINT_8,
        DType::UI16 => ElementType::UINT_16,
        DType::UI32 => ElementType::UINT_32,
        DType::UI64 => ElementType::UINT_64,
        DType::F16 => ElementType::FLOAT_16,
        DType::BF16 => ElementType::BFLOAT_16,
        DType::F32 => ElementType::FLOAT_32,
        DType::F64 => ElementType::FLOAT_64,
        DType::Complex64 => ElementType::COMPLEX_FLOAT_64,
        DType::Complex128 => ElementType::COMPLEX_FLOAT_128,
        other => {
            return Err(Diagnostic::new(
                StatusCode::InvalidArgument,
                format!("{} tensors have no buffer view element type", dtype_name(other)),
            ))
        }
    })
}

/// The tensor element type of IREE's `element_type`: integers of any signedness but unsigned
/// ones become TFRT's signed ones; INVALID_ARGUMENT for types a host tensor cannot hold.
pub fn dtype(element_type: ElementType) -> Result<DType, Diagnostic> {
    let numerical = element_type.numerical_type();
    let unsigned = numerical == NumericalType::INTEGER_UNSIGNED;
    Ok(match (numerical, element_type.bit_count()) {
        (NumericalType::BOOLEAN, 8) => DType::I1,
        (_, 8) if unsigned => DType::UI8,
        (_, 16) if unsigned => DType::UI16,
        (_, 32) if unsigned => DType::UI32,
        (_, 64) if unsigned => DType::UI64,
        (NumericalType::INTEGER | NumericalType::INTEGER_SIGNED, 8) => DType::I8,
        (NumericalType::INTEGER | NumericalType::INTEGER_SIGNED, 16) => DType::I16,
        (NumericalType::INTEGER | NumericalType::INTEGER_SIGNED, 32) => DType::I32,
        (NumericalType::INTEGER | NumericalType::INTEGER_SIGNED, 64) => DType::I64,
        (NumericalType::FLOAT_IEEE, 16) => DType::F16,
        (NumericalType::FLOAT_IEEE, 32) => DType::F32,
        (NumericalType::FLOAT_IEEE, 64) => DType::F64,
        (NumericalType::FLOAT_BRAIN, 16) => DType::BF16,
        (NumericalType::FLOAT_COMPLEX, 64) => DType::Complex64,
        (NumericalType::FLOAT_COMPLEX, 128) => DType::Complex128,
        _ => {
            return Err(Diagnostic::new(
                StatusCode::InvalidArgument,
                format!("a host tensor cannot hold {element_type} elements"),
            ))
        }
    })
}

/// A dense row-major view of `tensor`'s own bytes: the HAL buffer maps the tensor's host buffer,
/// which it keeps alive, so the view may outlive the tensor.
///
/// The graph must not write the tensor (`tfrt_dht.set_tensor_*`, ordered by chains) while a
/// program may read the view, as with any kernel reading it.
pub fn tensor_to_view(tensor: &DenseHostTensor) -> Result<Arc<BufferView>, Diagnostic> {
    let element_type = element_type(tensor.dtype())?;
    // A constant's read-only bytes (in a mapped BEF file) are copied: the program may write the
    // buffers it is given.
    let buffer = if tensor.buffer().is_read_only() { tensor.buffer().copy()? } else { tensor.buffer().clone() };
    let start = NonNull::new(buffer.as_ptr().cast_mut()).expect("host buffers are never at address 0");
    let length = buffer.len();
    // SAFETY: `start..start + length` is the host buffer's data, which lives as long as the buffer
    // that the mapping owns. Rust code touches those bytes only through `with_bytes` and
    // `with_bytes_mut`: kernels read them while the program may (reads do not race), and writers
    // are ordered after the call by the graph's chains, as TFRT requires of every reader.
    let bytes = unsafe { ByteBuffer::from_mapping(start, length, Arc::new(buffer)) };
    let hal_buffer = HeapAllocator::wrap(bytes, memory_type::CPU, usage::CPU);
    let shape = tensor.shape().dims().to_vec();
    Ok(Arc::new(BufferView::new(hal_buffer.into_ref(), shape, element_type.0, DENSE_ROW_MAJOR)?))
}

/// A tensor of `view`'s elements. Where they lie in a CPU device's writable memory, aligned for
/// their type, the tensor is those bytes: it holds the HAL buffer, so the memory (a transient
/// block included) stays the tensor's until the tensor goes, and writes through either are seen
/// by both, as a caller of an IREE function shares the buffers it returns. Anything else (a GPU's
/// memory, a program's read-only constants) is copied into host memory from `host`'s allocator.
pub fn view_to_tensor(host: &HostContext, view: &BufferView) -> Result<DenseHostTensor, Diagnostic> {
    let dtype = dtype(ElementType(view.element_type()))?;
    if view.encoding() != DENSE_ROW_MAJOR {
        return Err(Diagnostic::new(
            StatusCode::InvalidArgument,
            format!("a buffer view of encoding {:08X} is not a dense row-major tensor", view.encoding()),
        ));
    }
    let shape = TensorShape::from_dims(view.shape())?;
    let needed = byte_len(dtype, &shape)?;
    if view.buffer().len() < needed {
        return Err(Diagnostic::new(
            StatusCode::InvalidArgument,
            format!(
                "a buffer of {} bytes is too short for a {} view of shape {:?} ({needed} bytes)",
                view.buffer().len(),
                dtype_name(dtype),
                view.shape()
            ),
        ));
    }
    if let Some(buffer) = shared_bytes(host, view.buffer(), needed, dtype)? {
        return DenseHostTensor::from_buffer(dtype, shape, buffer);
    }
    let tensor = DenseHostTensor::new_zeroed(host, dtype, shape)?;
    tensor.buffer().with_bytes_mut(|bytes| view.buffer().read(0, bytes))??;
    Ok(tensor)
}

/// The first `len` bytes of `buffer` as a host buffer over the same memory, when it is a CPU
/// device's writable memory (coherent host memory) aligned for `dtype`'s elements; `None`
/// otherwise.
fn shared_bytes(
    host: &HostContext,
    buffer: &Buffer,
    len: usize,
    dtype: DType,
) -> Result<Option<HostBuffer>, Diagnostic> {
    let Some(bytes) = buffer.memory().as_any().downcast_ref::<ByteBuffer>() else { return Ok(None) };
    let bytes = bytes.span(buffer.offset(), len)?;
    let Some(data) = bytes.as_mut_ptr().and_then(NonNull::new) else { return Ok(None) };
    if data.as_ptr().align_offset(dtype.byte_size().unwrap_or(1)) != 0 {
        return Ok(None);
    }
    let owner: Arc<dyn Send + Sync> = Arc::new(buffer.clone());
    // SAFETY: the span is initialised host memory (zeroed when allocated), writable, and lives as
    // long as the HAL buffer's memory, which `owner` holds. The program that returned or passed
    // the view has finished with it by then; the tensor's later users are kernels, which the
    // graph's chains order, and programs the graph passes it to, which run after the kernels
    // that produced their operands.
    Ok(Some(unsafe { HostBuffer::shared(host.allocator().clone(), data, len, owner) }?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtx_hal_cpu::transient::TransientPool;
    use rtx_host::HostContext;
    use rtx_vm::refs::Ref;

    fn host() -> HostContext {
        HostContext::with_work_queue_spec("s").unwrap()
    }

    #[test]
    fn a_tensor_becomes_a_view_of_its_own_bytes_and_comes_back_over_them() {
        let host = host();
        let shape = TensorShape::new(vec![2, 3]).unwrap();
        let tensor = DenseHostTensor::new_zeroed(&host, DType::I32, shape).unwrap();
        tensor.set_values(&[1i32, -2, 3, -4, 5, -6]).unwrap();
        let view = tensor_to_view(&tensor).unwrap();
        assert_eq!((view.shape(), view.element_type()), (&[2i64, 3][..], 0x1000_0020));
        assert_eq!(view.buffer().memory().mapping().unwrap().as_ptr(), tensor.buffer().as_ptr(), "no copy");
        tensor.set_values(&[7i32, 8, 9, 10, 11, 12]).unwrap();
        let back = view_to_tensor(&host, &view).unwrap();
        assert_eq!(back.buffer().as_ptr(), tensor.buffer().as_ptr(), "no copy back");
        assert!(!back.buffer().is_read_only());
        back.set_values(&[0i32, 1, 2, 3, 4, 5]).unwrap();
        assert_eq!(tensor.values::<i32>().unwrap(), [0, 1, 2, 3, 4, 5], "one set of bytes");
        drop((tensor, view));
        assert_eq!(back.values::<i32>().unwrap(), [0, 1, 2, 3, 4, 5], "the tensor keeps the bytes alive");
    }

    #[test]
    fn a_transient_block_stays_with_the_tensor_over_it_until_the_tensor_goes() {
        let host = host();
        let pool = TransientPool::default();
        let lend = || pool.allocate(&Default::default(), 256, memory_type::DEVICE_LOCAL, usage::CPU).unwrap();
        let block_address = |buffer: &Buffer| buffer.memory().mapping().unwrap().as_ptr();
        let block = lend();
        let address = block_address(&block);
        let view = BufferView::new(Ref::Object(block), vec![64], ElementType::FLOAT_32.0, DENSE_ROW_MAJOR).unwrap();
        let tensor = view_to_tensor(&host, &view).unwrap();
        drop(view);
        assert_eq!(tensor.buffer().as_ptr(), address);
        let other = lend();
        assert_ne!(block_address(&other), address, "the tensor's block is not lent again");
        drop(tensor);
        assert_eq!(block_address(&lend()), address, "back in the pool once the tensor went");
    }

    #[test]
    fn elements_out_of_alignment_are_copied() {
        let bytes = ByteBuffer::from_bytes(&[9, 1, 0, 0, 0, 2, 0, 0, 0]).unwrap();
        let buffer = HeapAllocator::wrap(bytes, memory_type::CPU, usage::CPU).subspan(1, 8).unwrap();
        let view = BufferView::new(buffer.into_ref(), vec![2], ElementType::INT_32.0, DENSE_ROW_MAJOR).unwrap();
        let tensor = view_to_tensor(&host(), &view).unwrap();
        assert_eq!(tensor.values::<i32>().unwrap(), [1, 2]);
        assert_eq!(tensor.buffer().as_ptr() as usize % 4, 0);
    }

    #[test]
    fn element_types_map_both_ways_and_the_rest_are_refused() {
        for dtype in [DType::I1, DType::I8, DType::I32, DType::I64, DType::UI16, DType::F16, DType::F32, DType::F64] {
            assert_eq!(super::dtype(element_type(dtype).unwrap()).unwrap(), dtype);
        }
        assert_eq!(super::dtype(ElementType::SINT_32).unwrap(), DType::I32);
        let error = element_type(DType::String).unwrap_err();
        assert!(error.message.contains("no buffer view element type"), "{}", error.message);
        let error = super::dtype(ElementType::INT_4).unwrap_err();
        assert!(error.message.contains("cannot hold"), "{}", error.message);
    }

    #[test]
    fn a_view_shorter_than_its_shape_is_an_error() {
        let bytes = ByteBuffer::from_bytes(&[0; 8]).unwrap();
        let buffer = HeapAllocator::wrap(bytes, memory_type::CPU, usage::CPU);
        let view = BufferView::new(buffer.into_ref(), vec![4], ElementType::FLOAT_32.0, DENSE_ROW_MAJOR).unwrap();
        let error = view_to_tensor(&host(), &view).unwrap_err();
        assert!(error.message.contains("too short"), "{}", error.message);
    }
}
