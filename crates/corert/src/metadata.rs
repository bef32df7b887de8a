//! [`TensorMetadata`]: what a tensor is (element type and shape) without its elements — what
//! a [`crate::TensorHandle`] knows before the data is computed.

use std::fmt;

use rtx_host::RcAsyncValue;
use rtx_kernel::tensor::{dtype_name, DenseHostTensor, StringHostTensor, TensorShape};
use rtx_kernel::DType;

use crate::scalar::ScalarHostTensor;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorMetadata {
    pub dtype: DType,
    pub shape: TensorShape,
}

impl TensorMetadata {
    pub fn new(dtype: DType, shape: TensorShape) -> TensorMetadata {
        TensorMetadata { dtype, shape }
    }

    /// The metadata of a host tensor (dense, scalar or string) held by `tensor`, an available
    /// value; `None` for any other payload.
    pub fn of_tensor(tensor: &RcAsyncValue) -> Option<TensorMetadata> {
        if let Ok(dense) = tensor.try_get::<DenseHostTensor>() {
            return Some(TensorMetadata::new(dense.dtype(), dense.shape().clone()));
        }
        if let Ok(scalar) = tensor.try_get::<ScalarHostTensor>() {
            return Some(scalar.metadata().clone());
        }
        if let Ok(strings) = tensor.try_get::<StringHostTensor>() {
            return Some(TensorMetadata::new(DType::String, strings.shape().clone()));
        }
        None
    }
}

/// `dtype = i32, shape = [2, 2]`, as TFRT prints it.
impl fmt::Display for TensorMetadata {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "dtype = {}, shape = {}", dtype_name(self.dtype), self.shape)
    }
}
