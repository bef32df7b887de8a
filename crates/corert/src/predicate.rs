//! The truth of a tensor, as `corert.cond` and `corert.while` read it: its first element, which
//! must be a boolean or an integer (nonzero is true).

use rtx_host::{Diagnostic, RcAsyncValue, StatusCode};
use rtx_kernel::tensor::{dtype_name, DenseHostTensor, StringHostTensor};
use rtx_kernel::DType;

use crate::scalar::ScalarHostTensor;

/// The bytes of the first element of a dense or scalar tensor; `None` for any other payload or
/// an empty tensor.
pub fn first_element(tensor: &RcAsyncValue) -> Option<Vec<u8>> {
    if let Ok(scalar) = tensor.try_get::<ScalarHostTensor>() {
        let empty = scalar.metadata().shape.num_elements() == Some(0);
        return (!empty).then(|| scalar.value().to_vec());
    }
    let dense = tensor.try_get::<DenseHostTensor>().ok()?;
    let size = dense.dtype().byte_size()?;
    dense.with_bytes(|bytes| bytes.get(..size).map(<[u8]>::to_vec))
}

pub fn truth(tensor: &RcAsyncValue) -> Result<bool, Diagnostic> {
    let invalid = |message: std::string::String| Diagnostic::new(StatusCode::InvalidArgument, message);
    if tensor.is_type::<StringHostTensor>() {
        return Err(invalid("a condition must hold a boolean or an integer, not strings".to_owned()));
    }
    let dtype = crate::metadata::TensorMetadata::of_tensor(tensor)
        .ok_or_else(|| invalid(format!("a condition must be a host tensor, not a {}", tensor.type_name())))?
        .dtype;
    use DType::*;
    if !matches!(dtype, I1 | I8 | I16 | I32 | I64 | UI8 | UI16 | UI32 | UI64) {
        return Err(invalid(format!("a condition must hold a boolean or an integer, not {}", dtype_name(dtype))));
    }
    let first = first_element(tensor).ok_or_else(|| invalid("a condition tensor has no elements".to_owned()))?;
    Ok(first.iter().any(|&b| b != 0))
}
