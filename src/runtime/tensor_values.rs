//! Dense host tensors as the tools' tensors: `rtx run` and `rtx bench` pass a BEF function the
//! tensors that `--input` spells (IREE's syntax, `.npy` files included) as `DenseHostTensor`s,
//! and print the tensors it returns as `iree-run-module` prints buffer views.

use crate::bef::format::DType;
use crate::hal::element_type::ElementType;
use crate::hal::tensor_io::HostTensor;
use crate::host::{Diagnostic, HostContext, StatusCode};
use crate::kernel::tensor::{DenseHostTensor, TensorShape};

/// Each element type both sides have, with the HAL type a tensor of it prints as.
const TYPES: &[(DType, ElementType)] = &[
    (DType::F32, ElementType::FLOAT_32),
    (DType::F64, ElementType::FLOAT_64),
    (DType::F16, ElementType::FLOAT_16),
    (DType::BF16, ElementType::BFLOAT_16),
    (DType::I1, ElementType::BOOL_8),
    (DType::I8, ElementType::INT_8),
    (DType::I16, ElementType::INT_16),
    (DType::I32, ElementType::INT_32),
    (DType::I64, ElementType::INT_64),
    (DType::UI8, ElementType::UINT_8),
    (DType::UI16, ElementType::UINT_16),
    (DType::UI32, ElementType::UINT_32),
    (DType::UI64, ElementType::UINT_64),
];

/// The element type of a tensor the tools parsed: signed integers are TFRT's signless ones.
fn dtype(element_type: ElementType) -> Option<DType> {
    let signless = match element_type {
        ElementType::SINT_8 => ElementType::INT_8,
        ElementType::SINT_16 => ElementType::INT_16,
        ElementType::SINT_32 => ElementType::INT_32,
        ElementType::SINT_64 => ElementType::INT_64,
        other => other,
    };
    TYPES.iter().find(|(_, e)| *e == signless).map(|(d, _)| *d)
}

/// `tensor` as a dense host tensor in `host`'s memory.
pub fn dense_tensor(host: &HostContext, tensor: &HostTensor) -> Result<DenseHostTensor, Diagnostic> {
    let dtype = dtype(tensor.element_type).ok_or_else(|| {
        Diagnostic::new(
            StatusCode::InvalidArgument,
            format!("element type {:#x} has no dense host tensor type", tensor.element_type.0),
        )
    })?;
    let dims = tensor.shape.iter().map(|&d| d as i64).collect();
    DenseHostTensor::from_bytes(host, dtype, TensorShape::new(dims)?, &tensor.data)
}

/// A dense host tensor as the tools print it.
pub fn host_tensor(tensor: &DenseHostTensor) -> Result<HostTensor, Diagnostic> {
    let element_type = TYPES.iter().find(|(d, _)| *d == tensor.dtype()).map(|(_, e)| *e).ok_or_else(|| {
        Diagnostic::new(
            StatusCode::Unimplemented,
            format!("{:?} tensors cannot be printed as IREE's tools print", tensor.dtype()),
        )
    })?;
    Ok(HostTensor {
        shape: tensor.shape().dims().iter().map(|&d| d as usize).collect(),
        element_type,
        data: tensor.buffer().to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensors_keep_type_shape_and_bytes_both_ways() {
        let host = HostContext::with_work_queue_spec("s").unwrap();
        let data: Vec<u8> = [1.5f32, -2.0, 3.25, 0.0, 7.0, 8.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let tensor = HostTensor { shape: vec![2, 3], element_type: ElementType::FLOAT_32, data: data.clone() };
        let dense = dense_tensor(&host, &tensor).unwrap();
        assert_eq!(dense.to_string(), "DenseHostTensor dtype = f32, shape = [2, 3], values = [1.500000e+00, -2.000000e+00, 3.250000e+00, 0.000000e+00, 7.000000e+00, 8.000000e+00]");
        let back = host_tensor(&dense).unwrap();
        assert_eq!((back.shape, back.element_type, back.data), (vec![2, 3], ElementType::FLOAT_32, data));
        let signed =
            HostTensor { shape: vec![1], element_type: ElementType::SINT_64, data: 5i64.to_le_bytes().to_vec() };
        assert_eq!(host_tensor(&dense_tensor(&host, &signed).unwrap()).unwrap().element_type, ElementType::INT_64);
        let complex = HostTensor { shape: vec![1], element_type: ElementType::COMPLEX_FLOAT_64, data: vec![0; 8] };
        assert!(dense_tensor(&host, &complex).is_err());
    }
}
