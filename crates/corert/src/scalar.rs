//! [`ScalarHostTensor`]: a tensor of any shape whose elements are all one value, stored once —
//! what `tfrt_test.create_from_scalar` makes, printed as TFRT prints it.

use std::fmt;

use rtx_host::{Diagnostic, HostContext, StatusCode};
use rtx_kernel::tensor::{format_element, DenseHostTensor};
use rtx_kernel::DType;

use crate::metadata::TensorMetadata;

/// The widest element a scalar tensor holds (complex128).
const MAX_ELEMENT: usize = 16;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalarHostTensor {
    metadata: TensorMetadata,
    /// The one element's little-endian bytes (the first `dtype.byte_size()` of them).
    value: [u8; MAX_ELEMENT],
}

impl ScalarHostTensor {
    /// A tensor of `metadata` whose every element is `value`, the element's bytes.
    pub fn new(metadata: TensorMetadata, value: &[u8]) -> Result<ScalarHostTensor, Diagnostic> {
        let size = metadata.dtype.byte_size().filter(|&s| s <= MAX_ELEMENT).ok_or_else(|| {
            Diagnostic::new(
                StatusCode::InvalidArgument,
                format!("a scalar tensor cannot hold {:?} elements", metadata.dtype),
            )
        })?;
        if value.len() != size {
            return Err(Diagnostic::new(
                StatusCode::InvalidArgument,
                format!("{} bytes for an element of {size}", value.len()),
            ));
        }
        let mut bytes = [0; MAX_ELEMENT];
        bytes[..size].copy_from_slice(value);
        Ok(ScalarHostTensor { metadata, value: bytes })
    }

    pub fn metadata(&self) -> &TensorMetadata {
        &self.metadata
    }

    pub fn dtype(&self) -> DType {
        self.metadata.dtype
    }

    /// The element's bytes.
    pub fn value(&self) -> &[u8] {
        &self.value[..self.metadata.dtype.byte_size().unwrap_or(0)]
    }

    /// The same tensor with every element written out.
    pub fn to_dense(&self, host: &HostContext) -> Result<DenseHostTensor, Diagnostic> {
        let dense = DenseHostTensor::new_zeroed(host, self.metadata.dtype, self.metadata.shape.clone())?;
        let value = self.value();
        dense
            .buffer()
            .with_bytes_mut(|bytes| bytes.chunks_exact_mut(value.len()).for_each(|e| e.copy_from_slice(value)))?;
        Ok(dense)
    }
}

/// `ScalarHostTensor dtype = i32, shape = [2, 2], value = 1`.
impl fmt::Display for ScalarHostTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value = format_element(self.metadata.dtype, self.value()).unwrap_or_default();
        write!(f, "ScalarHostTensor {}, value = {value}", self.metadata)
    }
}
