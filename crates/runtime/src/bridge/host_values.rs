//! A kernel graph's arguments and results as the tools read and write them (`rtx run` on a BEF
//! or ONNX module): host copies of tensors, tensors of strings, sequences and empty optionals
//! ([`ResultValue`]), to async values and back.

use rtx_hal::element_type::{ElementType, NumericalType};
use rtx_hal::tensor_io::{HostTensor, ResultValue, StringArray};
use rtx_host::{AsyncValueRef, Diagnostic, HostContext, RcAsyncValue, StatusCode};
use rtx_kernel::library::onnx::{NoValue, Sequence};
use rtx_kernel::tensor::{DenseHostTensor, StringHostTensor, TensorShape};
use rtx_kernel::DType;

use super::tensors::{dtype, element_type};

fn shape(dims: &[usize]) -> Result<TensorShape, Diagnostic> {
    let dims = dims
        .iter()
        .map(|&dim| i64::try_from(dim))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| Diagnostic::new(StatusCode::InvalidArgument, "a dimension does not fit 64 bits"))?;
    TensorShape::new(dims)
}

fn dense(host: &HostContext, tensor: &HostTensor) -> Result<DenseHostTensor, Diagnostic> {
    if tensor.element_type.numerical_type() == NumericalType::UNKNOWN {
        return Err(Diagnostic::new(
            StatusCode::InvalidArgument,
            format!(
                "elements of {} opaque bytes (a `.npy` `|V` array, as numpy saves bfloat16) have no type: give \
                 one with a raw input such as `2x3xbf16=@x.bin`",
                tensor.element_type.dense_byte_count()
            ),
        ));
    }
    let dense = DenseHostTensor::from_bytes(host, dtype(tensor.element_type)?, shape(&tensor.shape)?, &tensor.data)?;
    // The copy is the graph's alone and nothing writes an argument: sealed, the kernels that
    // read it share its elements instead of copying them again on every call.
    dense.buffer().seal();
    Ok(dense)
}

/// A tensor's elements on the host, signed integers typed as signed (`si64`, as numpy's `<i8`
/// reads), not signless as IREE's programs take them.
fn host_tensor(tensor: &DenseHostTensor) -> Result<HostTensor, Diagnostic> {
    let element_type = match tensor.dtype() {
        DType::I8 => ElementType::SINT_8,
        DType::I16 => ElementType::SINT_16,
        DType::I32 => ElementType::SINT_32,
        DType::I64 => ElementType::SINT_64,
        other => element_type(other)?,
    };
    Ok(HostTensor {
        shape: tensor.shape().dims().iter().map(|&dim| dim as usize).collect(),
        element_type,
        data: tensor.with_bytes(<[u8]>::to_vec),
    })
}

/// An available async value holding `value` for a graph's argument: a tensor (its bytes copied
/// into memory from `host`'s allocator, read-only), a tensor of strings, a sequence (an empty one
/// of `f32`, as an empty sequence from the C API), or an empty optional ([`ResultValue::Empty`]).
pub fn to_async_value(host: &HostContext, value: &ResultValue) -> Result<RcAsyncValue, Diagnostic> {
    Ok(match value {
        ResultValue::Tensor(tensor) => AsyncValueRef::available(dense(host, tensor)?).into(),
        ResultValue::Strings(array) => {
            AsyncValueRef::available(StringHostTensor::new(shape(&array.shape)?, array.strings.clone())?).into()
        }
        ResultValue::Sequence(tensors) => {
            let tensors = tensors.iter().map(|tensor| dense(host, tensor)).collect::<Result<Vec<_>, _>>()?;
            let dtype = tensors.first().map_or(DType::F32, DenseHostTensor::dtype);
            if tensors.iter().any(|tensor| tensor.dtype() != dtype) {
                return Err(Diagnostic::new(
                    StatusCode::InvalidArgument,
                    "a sequence holds tensors of one element type",
                ));
            }
            AsyncValueRef::available(Sequence { dtype, tensors }).into()
        }
        ResultValue::Empty => AsyncValueRef::available(NoValue).into(),
        ResultValue::I32(_) | ResultValue::I64(_) | ResultValue::F32(_) | ResultValue::F64(_) | ResultValue::Ref(_) => {
            return Err(Diagnostic::new(StatusCode::InvalidArgument, "a kernel graph takes tensors, not scalars"))
        }
    })
}

/// A graph's available result read back to the host; its error where it holds one.
pub fn from_async_value(value: &RcAsyncValue) -> Result<ResultValue, Diagnostic> {
    if let Some(error) = value.get_error() {
        return Err(error.clone());
    }
    if let Ok(tensor) = value.try_get::<DenseHostTensor>() {
        return Ok(ResultValue::Tensor(host_tensor(tensor)?));
    }
    if let Ok(strings) = value.try_get::<StringHostTensor>() {
        let dims = strings.shape().dims().iter().map(|&dim| dim as usize).collect();
        return Ok(ResultValue::Strings(StringArray { shape: dims, strings: strings.strings().to_vec() }));
    }
    if let Ok(sequence) = value.try_get::<Sequence>() {
        return Ok(ResultValue::Sequence(sequence.tensors.iter().map(host_tensor).collect::<Result<_, _>>()?));
    }
    if value.is_type::<NoValue>() {
        return Ok(ResultValue::Empty);
    }
    Err(Diagnostic::new(
        StatusCode::Unimplemented,
        "the function returned a value that is not a tensor, a sequence or an optional",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_value_comes_back_as_it_went() {
        let host = HostContext::with_work_queue_spec("s").unwrap();
        let tensor =
            HostTensor { shape: vec![2], element_type: ElementType::SINT_32, data: vec![1, 0, 0, 0, 2, 0, 0, 0] };
        let values = [
            ResultValue::Tensor(tensor.clone()),
            ResultValue::Strings(StringArray { shape: vec![1, 2], strings: vec!["a".into(), "βγ".into()] }),
            ResultValue::Sequence(vec![tensor.clone(), tensor]),
            ResultValue::Sequence(vec![]),
            ResultValue::Empty,
        ];
        for value in values {
            let back = from_async_value(&to_async_value(&host, &value).unwrap()).unwrap();
            assert_eq!(back, value);
        }
        let error = to_async_value(&host, &ResultValue::I32(1)).unwrap_err();
        assert_eq!(error.message, "a kernel graph takes tensors, not scalars");
        let opaque = HostTensor { shape: vec![1], element_type: ElementType(16), data: vec![0; 2] };
        let error = to_async_value(&host, &ResultValue::Tensor(opaque)).unwrap_err();
        assert!(error.message.starts_with("elements of 2 opaque bytes"), "{error}");
    }

    #[test]
    fn mixed_sequences_are_refused() {
        let host = HostContext::with_work_queue_spec("s").unwrap();
        let f32 = HostTensor { shape: vec![], element_type: ElementType::FLOAT_32, data: vec![0; 4] };
        let i32 = HostTensor { shape: vec![], element_type: ElementType::SINT_32, data: vec![0; 4] };
        let error = to_async_value(&host, &ResultValue::Sequence(vec![f32, i32])).err().unwrap();
        assert_eq!(error.message, "a sequence holds tensors of one element type");
    }
}
