//! Tensors made from a shape and a few values, of any element type: `ConstantOfShape`, `Range`,
//! `EyeLike`, `OneHot`, and `Trilu` (a matrix's triangle, zeros elsewhere).

use super::dispatch::{any, numeric};
use super::elementwise::onnx_dtype;
use super::tensors::{axis, dims, element_count, error, integer, integers, new_tensor, sizes, take, take_bytes};
use super::tensors::{unsupported, Inputs, Typed, Value};
use crate::dtype::DType;
use crate::library::nn::int;
use crate::{KernelError, KernelFrame, KernelRegistry};

pub(super) const OPERATORS: &[&str] = &["ConstantOfShape", "EyeLike", "OneHot", "Range", "Trilu"];

fn constant_of_shape(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let dims = sizes(frame, "shape", &integers(frame, inputs.required(0)?)?)?;
    let zero = 0f32.to_le_bytes();
    let (dtype, value) = match frame.named_attribute("value") {
        Ok(attribute) => {
            let dense = attribute.dense()?;
            (dense.dtype, dense.data)
        }
        Err(_) => (DType::F32, &zero[..]),
    };
    if Some(value.len()) != dtype.byte_size() {
        return Err(error(frame, "its value is not one element"));
    }
    let result = take_bytes(frame, dtype, value, &dims, None, || std::iter::repeat(Some(0)))?;
    frame.emplace_result(0, result)
}

/// How many elements `Range` makes from `start` to `limit` by `delta`.
fn range_count<T: Value>(start: T, limit: T, delta: T) -> Result<usize, String> {
    let count = match (start.to_integer(), limit.to_integer(), delta.to_integer()) {
        (Some(_), Some(_), Some(0)) => return Err("delta is 0".to_owned()),
        (Some(start), Some(limit), Some(delta)) => {
            let span = limit - start;
            // The ceiling of span / delta.
            span / delta + i128::from(span % delta != 0 && (span < 0) == (delta < 0))
        }
        _ => {
            let count = ((limit.to_f64() - start.to_f64()) / delta.to_f64()).ceil();
            if count.is_nan() || count >= u64::MAX as f64 {
                return Err(format!(
                    "cannot count from {} to {} by {}",
                    start.to_f64(),
                    limit.to_f64(),
                    delta.to_f64()
                ));
            }
            count as i128
        }
    };
    usize::try_from(count.max(0)).map_err(|_| format!("{count} elements are too many"))
}

/// Element `i` of a range from `start` by `delta`: exact for integers.
fn range_element<T: Value>(start: T, delta: T, i: usize) -> T {
    match (start.to_integer(), delta.to_integer()) {
        (Some(start), Some(delta)) => T::from_integer(start + i as i128 * delta),
        _ => T::from_f64(start.to_f64() + i as f64 * delta.to_f64()),
    }
}

fn range(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let operands = [inputs.required(0)?, inputs.required(1)?, inputs.required(2)?];
    let dtype = operands[0].dtype();
    if operands.iter().any(|t| t.dtype() != dtype || t.num_elements() != 1) {
        return Err(error(frame, "start, limit and delta are not scalars of one type"));
    }
    let result = numeric!(dtype, T => {
        let [start, limit, delta] = operands.map(|t| Typed::<T>::read(t).values[0]);
        let count = range_count(start, limit, delta).map_err(|e| error(frame, e))?;
        let result = new_tensor(frame, dtype, &[count])?;
        let size = dtype.byte_size().unwrap_or(0);
        result.buffer().with_bytes_mut(|bytes| {
            for (i, element) in bytes.chunks_exact_mut(size).enumerate() {
                range_element(start, delta, i).store(dtype, element);
            }
        })?;
        result
    }, return Err(unsupported(frame, dtype)));
    frame.emplace_result(0, result)
}

fn eye_like(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let x = inputs.required(0)?;
    let &[rows, columns] = &dims(x)[..] else {
        return Err(error(frame, format_args!("the input has shape {:?}, not two dimensions", dims(x))));
    };
    let dtype = match int(frame, "dtype", -1)? {
        -1 => x.dtype(),
        code => onnx_dtype(code).ok_or_else(|| error(frame, format_args!("element type {code} is not supported")))?,
    };
    let k = int(frame, "k", 0)?;
    let size = dtype.byte_size().ok_or_else(|| unsupported(frame, dtype))?;
    // Zero, then one.
    let mut values = vec![0; 2 * size];
    any!(dtype, T => { T::from_integer(1).store(dtype, &mut values[size..]) }, return Err(unsupported(frame, dtype)));
    let diagonal = move |f: usize| Some(usize::from((f % columns) as i64 - (f / columns) as i64 == k));
    let result = take_bytes(frame, dtype, &values, &[rows, columns], None, || (0..rows * columns).map(diagonal))?;
    frame.emplace_result(0, result)
}

fn trilu(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let x = inputs.required(0)?;
    let dims = dims(x);
    let &[.., rows, columns] = &dims[..] else {
        return Err(error(frame, format_args!("the input has shape {dims:?}, fewer than two dimensions")));
    };
    let k = inputs.optional(1).map(|k| integer(frame, k)).transpose()?.unwrap_or(0);
    let upper = int(frame, "upper", 1)? != 0;
    let keep = move |f: usize| {
        let (i, j) = ((f / columns % rows) as i64, (f % columns) as i64);
        let above = j - i;
        (if upper { above >= k } else { above <= k }).then_some(f)
    };
    let result = take(frame, x, &dims, None, || (0..x.num_elements()).map(keep))?;
    frame.emplace_result(0, result)
}

fn one_hot(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let indices = inputs.required(0)?;
    let depth = integer(frame, inputs.required(1)?)?;
    let values = inputs.required(2)?;
    if values.num_elements() != 2 {
        return Err(error(frame, "values is not [off, on]"));
    }
    let depth = usize::try_from(depth).ok().filter(|&d| d > 0).ok_or_else(|| error(frame, "depth is not positive"))?;
    let shape = dims(indices);
    let axis = axis(frame, int(frame, "axis", -1)?, shape.len() + 1)?;
    let mut out = shape.clone();
    out.insert(axis, depth);
    let inner = element_count(frame, &shape[axis..])?;
    let indices = integers(frame, indices)?;
    let depth_i = depth as i64;
    let sources = || {
        let indices = &indices;
        (0..indices.len() / inner.max(1)).flat_map(move |o| {
            (0..depth_i).flat_map(move |d| {
                (0..inner).map(move |i| {
                    let index = indices[o * inner + i];
                    Some(usize::from(index == d || index < 0 && index + depth_i == d))
                })
            })
        })
    };
    let result = take(frame, values, &out, None, sources)?;
    frame.emplace_result(0, result)
}

pub(super) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("onnx.ConstantOfShape", constant_of_shape);
    registry.add_kernel("onnx.Range", range);
    registry.add_kernel("onnx.EyeLike", eye_like);
    registry.add_kernel("onnx.Trilu", trilu);
    registry.add_kernel("onnx.OneHot", one_hot);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_count_as_numpy_arange() {
        assert_eq!(range_count(3i32, 9, 3), Ok(2));
        assert_eq!(range_count(10i32, 4, -3), Ok(2));
        assert_eq!(range_count(10i64, 3, -3), Ok(3));
        assert_eq!(range_count(1i64, 5, -1), Ok(0));
        assert_eq!(range_count(1.0f32, 5.0, 1.5), Ok(3));
        assert!(range_count(1u8, 2, 0).is_err());
        assert!(range_count(0.0f64, 1.0, 0.0).is_err());
        assert_eq!(range_element(i64::MAX - 4, 2, 2), i64::MAX);
        assert_eq!(range_element(1.0f32, 1.5, 2), 4.0);
    }
}
