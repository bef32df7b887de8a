//! [`DenseHostTensor`]: elements of one [`DType`] in row-major order in a [`HostBuffer`] from the
//! host's allocator. Kernels that fill a tensor (`fill_tensor_with_constant`, `set_tensor_with_*`)
//! write through a shared reference, ordered by the chains they take and return; the buffer
//! orders the accesses themselves. Tensors may share a buffer (`tfrt_dht.get_buffer`,
//! `make_tensor`), and then see each other's writes.

use std::fmt;
use std::sync::Arc;

use super::element::{dtype_name, format_element, Element};
use super::shape::TensorShape;
use crate::dtype::DType;
use rtx_host::{Diagnostic, HostBuffer, HostContext, StatusCode};

/// Alignment of tensor buffers: a cache line, enough for any vector load of the elements.
pub const TENSOR_ALIGNMENT: usize = 64;

/// How many elements TFRT prints of a tensor before `...`.
pub const PRINTED_ELEMENTS: usize = 16;

#[derive(Clone)]
pub struct DenseHostTensor {
    dtype: DType,
    shape: TensorShape,
    buffer: HostBuffer,
}

/// The bytes a tensor of `dtype` and `shape` takes: an error when `dtype` has no fixed size or
/// the count overflows.
pub fn byte_len(dtype: DType, shape: &TensorShape) -> Result<usize, Diagnostic> {
    let size = dtype.byte_size().ok_or_else(|| {
        Diagnostic::new(StatusCode::InvalidArgument, format!("{} tensors have no dense layout", dtype_name(dtype)))
    })?;
    shape
        .num_elements()
        .and_then(|n| usize::try_from(n).ok())
        .and_then(|n| n.checked_mul(size))
        .ok_or_else(|| Diagnostic::new(StatusCode::InvalidArgument, format!("shape {shape} is too large")))
}

impl DenseHostTensor {
    /// A zero-filled tensor (TFRT calls it uninitialized: kernels must not rely on the zeros).
    /// Fails when `dtype` has no fixed size or the host cannot allocate the bytes.
    pub fn new_zeroed(host: &HostContext, dtype: DType, shape: TensorShape) -> Result<DenseHostTensor, Diagnostic> {
        let buffer = host.allocate_buffer(byte_len(dtype, &shape)?, TENSOR_ALIGNMENT)?;
        Ok(DenseHostTensor { dtype, shape, buffer })
    }

    /// A tensor whose elements are not yet written, for a kernel that writes every one of them
    /// before it publishes the tensor.
    ///
    /// # Safety
    ///
    /// As [`HostBuffer::new_unfilled`]: every byte is written through the buffer's pointer before
    /// any is read.
    pub unsafe fn new_unfilled(
        host: &HostContext,
        dtype: DType,
        shape: TensorShape,
    ) -> Result<DenseHostTensor, Diagnostic> {
        let len = byte_len(dtype, &shape)?;
        // SAFETY: the caller's contract is the buffer's.
        let buffer = unsafe { HostBuffer::new_unfilled(Arc::clone(host.allocator()), len, TENSOR_ALIGNMENT)? };
        Ok(DenseHostTensor { dtype, shape, buffer })
    }

    /// A tensor over `buffer` (shared, not copied), which must hold exactly the tensor's bytes.
    pub fn from_buffer(dtype: DType, shape: TensorShape, buffer: HostBuffer) -> Result<DenseHostTensor, Diagnostic> {
        let len = byte_len(dtype, &shape)?;
        if buffer.len() != len {
            return Err(Diagnostic::new(
                StatusCode::InvalidArgument,
                format!(
                    "a buffer of {} bytes cannot hold a {} tensor of shape {shape} ({len} bytes)",
                    buffer.len(),
                    dtype_name(dtype)
                ),
            ));
        }
        Ok(DenseHostTensor { dtype, shape, buffer })
    }

    /// A tensor holding `data`, the little-endian elements of `dtype` in row-major order.
    pub fn from_bytes(
        host: &HostContext,
        dtype: DType,
        shape: TensorShape,
        data: &[u8],
    ) -> Result<DenseHostTensor, Diagnostic> {
        let tensor = DenseHostTensor::new_zeroed(host, dtype, shape)?;
        if tensor.buffer.len() != data.len() {
            return Err(Diagnostic::new(
                StatusCode::InvalidArgument,
                format!("{} bytes of data for a tensor of {} bytes", data.len(), tensor.buffer.len()),
            ));
        }
        tensor.buffer.with_bytes_mut(|bytes| bytes.copy_from_slice(data))?;
        Ok(tensor)
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn shape(&self) -> &TensorShape {
        &self.shape
    }

    pub fn num_elements(&self) -> usize {
        let size = self.dtype.byte_size().expect("dense tensors have sized elements");
        self.buffer.len() / size
    }

    /// The buffer holding the elements, shared with the tensor.
    pub fn buffer(&self) -> &HostBuffer {
        &self.buffer
    }

    /// Calls `read` with the tensor's bytes.
    pub fn with_bytes<R>(&self, read: impl FnOnce(&[u8]) -> R) -> R {
        self.buffer.with_bytes(read)
    }

    fn check_type<T: Element>(&self) -> Result<usize, Diagnostic> {
        if T::DTYPE != self.dtype {
            return Err(Diagnostic::new(
                StatusCode::InvalidArgument,
                format!("the tensor holds {}, not {}", dtype_name(self.dtype), dtype_name(T::DTYPE)),
            ));
        }
        Ok(self.dtype.byte_size().expect("element types have sizes"))
    }

    /// The elements, which must be `T`s.
    pub fn values<T: Element>(&self) -> Result<Vec<T>, Diagnostic> {
        let size = self.check_type::<T>()?;
        Ok(self.with_bytes(|bytes| bytes.chunks_exact(size).map(T::read).collect()))
    }

    /// Sets every element to `value`.
    pub fn fill<T: Element>(&self, value: T) -> Result<(), Diagnostic> {
        let size = self.check_type::<T>()?;
        self.buffer.with_bytes_mut(|bytes| bytes.chunks_exact_mut(size).for_each(|element| value.write(element)))
    }

    /// Sets the elements to `values`, which must be as many as the tensor has (TFRT's error).
    pub fn set_values<T: Element>(&self, values: &[T]) -> Result<(), Diagnostic> {
        let size = self.check_type::<T>()?;
        let count = self.buffer.len() / size;
        if values.len() != count {
            return Err(Diagnostic::new(
                StatusCode::Internal,
                format!("Incorrect number of values for the tensor: {}, but expected {count}", values.len()),
            ));
        }
        self.buffer.with_bytes_mut(|bytes| {
            for (element, value) in bytes.chunks_exact_mut(size).zip(values) {
                value.write(element);
            }
        })
    }
}

/// Same element type, same shape, same bytes.
impl PartialEq for DenseHostTensor {
    fn eq(&self, other: &DenseHostTensor) -> bool {
        if self.dtype != other.dtype || self.shape != other.shape {
            return false;
        }
        if self.buffer.ptr_eq(&other.buffer) {
            return true;
        }
        // One buffer locked at a time: both may be views of one block.
        let mine = self.buffer.to_vec();
        other.with_bytes(|theirs| mine == theirs)
    }
}

/// Writes at most [`PRINTED_ELEMENTS`] elements of `count`, each `size` bytes of `bytes`, as
/// `a, b, c`, then `, ... ` when some were left out.
pub(crate) fn write_elements(f: &mut fmt::Formatter<'_>, dtype: DType, bytes: &[u8], size: usize) -> fmt::Result {
    let count = bytes.len() / size;
    for (i, element) in bytes.chunks_exact(size).take(PRINTED_ELEMENTS).enumerate() {
        if i > 0 {
            write!(f, ", ")?;
        }
        write!(f, "{}", format_element(dtype, element).unwrap_or_default())?;
    }
    if count > PRINTED_ELEMENTS {
        write!(f, ", ... ")?;
    }
    Ok(())
}

/// `DenseHostTensor dtype = i32, shape = [2, 2], values = [1, 2, 3, 4]`, as TFRT prints it.
impl fmt::Display for DenseHostTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DenseHostTensor dtype = {}, shape = {}, values = [", dtype_name(self.dtype), self.shape)?;
        let size = self.dtype.byte_size().expect("dense tensors have sized elements");
        self.with_bytes(|bytes| write_elements(f, self.dtype, bytes, size))?;
        write!(f, "]")
    }
}

impl fmt::Debug for DenseHostTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> HostContext {
        HostContext::with_work_queue_spec("s").unwrap()
    }

    #[test]
    fn tensors_fill_set_and_print_as_tfrt_does() {
        let host = host();
        let tensor = DenseHostTensor::new_zeroed(&host, DType::I32, TensorShape::new(vec![2, 2]).unwrap()).unwrap();
        tensor.set_values(&[1i32, 2, 3, 4]).unwrap();
        assert_eq!(tensor.to_string(), "DenseHostTensor dtype = i32, shape = [2, 2], values = [1, 2, 3, 4]");
        assert_eq!(
            tensor.set_values(&[1i32]).unwrap_err().message,
            "Incorrect number of values for the tensor: 1, but expected 4"
        );
        assert!(tensor.fill(1.0f32).is_err(), "an f32 is not an i32");
        tensor.fill(7i32).unwrap();
        assert_eq!(tensor.values::<i32>().unwrap(), vec![7; 4]);
        let long = DenseHostTensor::new_zeroed(&host, DType::F32, TensorShape::new(vec![17]).unwrap()).unwrap();
        assert!(long.to_string().ends_with("0.000000e+00, ... ]"), "{long}");
        assert_eq!(long.to_string().matches("e+00").count(), 16);
    }

    #[test]
    fn equal_tensors_have_the_same_type_shape_and_bytes() {
        let host = host();
        let make =
            |dims: Vec<i64>| DenseHostTensor::new_zeroed(&host, DType::I32, TensorShape::new(dims).unwrap()).unwrap();
        let (a, b) = (make(vec![2, 3]), make(vec![2, 3]));
        assert_eq!(a, b);
        assert_ne!(a, make(vec![3, 2]));
        b.fill(1i32).unwrap();
        assert_ne!(a, b);
    }
}
