//! TFRT's `tfrt_test.*` ops on the cpu handler: creating tensors from attributes, elementwise
//! `add`/`equal`/`relu`/`cast`, `argmax` and `reduce_mean` along an axis, `odd_collector`
//! (a result shape known only from the data), `async.noop` (a result made later, on the work
//! queue), `error.tensor` and `print`.

use std::cmp::Ordering;

use rtx_host::{AsyncValueRef, Diagnostic, RcAsyncValue, StatusCode};
use rtx_kernel::tensor::{DenseHostTensor, StringHostTensor, TensorShape};
use rtx_kernel::DType;
use smallvec::smallvec;

use super::number::{numeric, tensor_of, values, Number};
use super::{CpuOp, CpuOpRegistry, Dispatch, MetadataFn, OpFlags, Results};
use crate::attrs::{OpAttr, OpAttrs};
use crate::metadata::TensorMetadata;
use crate::scalar::ScalarHostTensor;

const PURE: OpFlags = OpFlags { side_effects: false, allows_scalar: false, allows_string: false };
const PURE_SCALARS: OpFlags = OpFlags { side_effects: false, allows_scalar: true, allows_string: false };

pub(super) fn register(registry: &mut CpuOpRegistry) {
    let op = |flags, metadata: Option<MetadataFn>, dispatch| CpuOp { flags, metadata, dispatch };
    registry.add("tfrt_test.create_dense_tensor", op(PURE, Some(create_dense_metadata), create_dense));
    registry.add("tfrt_test.create_from_scalar", op(PURE, Some(from_scalar_metadata), from_scalar));
    registry.add("tfrt_test.add", op(PURE_SCALARS, Some(add_metadata), add));
    registry.add("tfrt_test.equal", op(PURE, Some(equal_metadata), equal));
    registry.add("tfrt_test.argmax", op(PURE, Some(argmax_metadata), argmax));
    registry.add("tfrt_test.reduce_mean", op(PURE, Some(reduce_mean_metadata), reduce_mean));
    registry.add("tfrt_test.cast", op(PURE, Some(cast_metadata), cast));
    registry.add("tfrt_test.relu", op(PURE, Some(same_metadata), relu));
    registry.add("tfrt_test.identity", op(PURE, Some(same_metadata), identity));
    registry.add("tfrt_test.odd_collector", op(PURE, None, odd_collector));
    registry.add("tfrt_test.async.noop", op(PURE_SCALARS, Some(same_metadata), async_noop));
    registry.add("tfrt_test.async.noop_no_md", op(PURE_SCALARS, None, async_noop));
    registry.add("tfrt_test.error.tensor", op(PURE_SCALARS, Some(same_metadata), error_tensor));
    let printing = OpFlags { side_effects: true, allows_scalar: true, allows_string: true };
    registry.add("tfrt_test.print", op(printing, None, print));
}

fn invalid(message: impl Into<String>) -> Diagnostic {
    Diagnostic::new(StatusCode::InvalidArgument, message)
}

/// The `shape` attribute: an `i64` array.
fn shape_attr(attrs: &OpAttrs, missing: &str) -> Result<TensorShape, String> {
    let dims = attrs.get("shape").and_then(OpAttr::elements::<i64>).ok_or_else(|| missing.to_owned())?;
    TensorShape::new(dims).map_err(|e| e.message)
}

/// The `axis` attribute (an `i32`), which must name a dimension of `rank`.
fn axis_attr(attrs: &OpAttrs, rank: usize) -> Result<usize, String> {
    let Some(OpAttr::I32(axis)) = attrs.get("axis") else { return Err("missing 'axis' attribute".into()) };
    usize::try_from(*axis).ok().filter(|&a| a < rank).ok_or_else(|| "axis must less than input rank".into())
}

fn same_metadata(arguments: &[TensorMetadata], _: &OpAttrs) -> Result<Results<TensorMetadata>, String> {
    Ok(arguments.first().cloned().into_iter().collect())
}

fn create_dense_metadata(_: &[TensorMetadata], attrs: &OpAttrs) -> Result<Results<TensorMetadata>, String> {
    let shape = shape_attr(attrs, "missing 'shape' attribute")?;
    let values = attrs.get("values").ok_or("missing 'values' attribute")?;
    let OpAttr::Array { dtype, bytes } = values else {
        return Err("'values' attribute should be an array of values".into());
    };
    let size = dtype.byte_size().filter(|_| *dtype != DType::F16 && *dtype != DType::BF16);
    let Some(size) = size else { return Err("tfrt_test.create_dense_tensor unsupported dtype".into()) };
    let count = bytes.len() / size;
    if count != 1 && i64::try_from(count).ok() != shape.num_elements() {
        return Err("size of 'values' must either be 1 or match num of elements.".into());
    }
    Ok(smallvec![TensorMetadata::new(*dtype, shape)])
}

/// The `values` splatted or copied into the tensor.
fn create_dense(d: &Dispatch<'_>) -> Result<Results<RcAsyncValue>, Diagnostic> {
    let Some(OpAttr::Array { bytes, .. }) = d.attrs.get("values") else { unreachable!("checked by the metadata") };
    let metadata = &d.results[0];
    let tensor = DenseHostTensor::new_zeroed(d.host, metadata.dtype, metadata.shape.clone())?;
    tensor.buffer().with_bytes_mut(|out| {
        if bytes.len() == out.len() {
            out.copy_from_slice(bytes);
        } else {
            out.chunks_exact_mut(bytes.len()).for_each(|element| element.copy_from_slice(bytes));
        }
    })?;
    Ok(smallvec![AsyncValueRef::available(tensor).into_untyped()])
}

/// The `value` attribute's element type and bytes.
fn scalar_attr(attrs: &OpAttrs) -> Option<(DType, Vec<u8>)> {
    Some(match attrs.get("value")? {
        OpAttr::Bool(v) => (DType::I1, vec![u8::from(*v)]),
        OpAttr::I32(v) => (DType::I32, v.to_le_bytes().to_vec()),
        OpAttr::I64(v) => (DType::I64, v.to_le_bytes().to_vec()),
        OpAttr::F32(v) => (DType::F32, v.to_le_bytes().to_vec()),
        OpAttr::F64(v) => (DType::F64, v.to_le_bytes().to_vec()),
        OpAttr::F16(bits) => (DType::F16, bits.to_le_bytes().to_vec()),
        _ => return None,
    })
}

fn from_scalar_metadata(_: &[TensorMetadata], attrs: &OpAttrs) -> Result<Results<TensorMetadata>, String> {
    let shape = shape_attr(attrs, "tfrt_test.create_from_scalar must have 'shape' attribute")?;
    let (dtype, _) = scalar_attr(attrs).ok_or("tfrt_test.create_from_scalar must have 'value' attribute")?;
    Ok(smallvec![TensorMetadata::new(dtype, shape)])
}

fn from_scalar(d: &Dispatch<'_>) -> Result<Results<RcAsyncValue>, Diagnostic> {
    let (_, value) = scalar_attr(d.attrs).expect("checked by the metadata");
    let scalar = ScalarHostTensor::new(d.results[0].clone(), &value)?;
    Ok(smallvec![AsyncValueRef::available(scalar).into_untyped()])
}

fn add_metadata(arguments: &[TensorMetadata], _: &OpAttrs) -> Result<Results<TensorMetadata>, String> {
    let [lhs, rhs] = arguments else { return Err("tfrt_test.add takes 2 arguments".into()) };
    if lhs.dtype != rhs.dtype {
        return Err("incompatible dtypes for test.add".into());
    }
    if lhs.shape != rhs.shape {
        return Err("arguments of test.add must have same shape".into());
    }
    Ok(smallvec![lhs.clone()])
}

/// The elements of a dense or scalar tensor (a scalar's one value repeated `count` times).
fn elements<T: Number>(tensor: &RcAsyncValue, count: usize) -> Vec<T> {
    match tensor.try_get::<ScalarHostTensor>() {
        Ok(scalar) => vec![T::read(scalar.value()); count],
        Err(_) => values(tensor.try_get::<DenseHostTensor>().expect("a dense or scalar tensor")),
    }
}

/// Two scalars give a scalar; a dense tensor on either side gives a dense one.
fn add(d: &Dispatch<'_>) -> Result<Results<RcAsyncValue>, Diagnostic> {
    let metadata = &d.results[0];
    if let (Ok(lhs), Ok(rhs)) = (d.dense(0), d.dense(1)) {
        // Two dense tensors (the common case): added straight into the result's buffer.
        return numeric!(metadata.dtype, T => {
            let sum = DenseHostTensor::new_zeroed(d.host, metadata.dtype, metadata.shape.clone())?;
            lhs.with_bytes(|a| rhs.with_bytes(|b| {
                sum.buffer().with_bytes_mut(|out| {
                    let elements = out.chunks_exact_mut(T::SIZE).zip(a.chunks_exact(T::SIZE).zip(b.chunks_exact(T::SIZE)));
                    for (o, (x, y)) in elements {
                        T::read(x).add(T::read(y)).write(o);
                    }
                })
            }))?;
            Ok(smallvec![AsyncValueRef::available(sum).into_untyped()])
        }, else Err(invalid("unsupported dtype for test.add")));
    }
    let count = metadata.shape.num_elements().and_then(|n| usize::try_from(n).ok()).unwrap_or(0);
    let scalars = d.arguments.iter().all(|a| a.is_type::<ScalarHostTensor>());
    numeric!(metadata.dtype, T => {
        let sums: Vec<T> = elements::<T>(&d.arguments[0], count)
            .into_iter()
            .zip(elements::<T>(&d.arguments[1], count))
            .map(|(a, b)| a.add(b))
            .collect();
        let result = if scalars {
            let mut bytes = vec![0; T::SIZE];
            sums.first().copied().unwrap_or_else(T::zero).write(&mut bytes);
            AsyncValueRef::available(ScalarHostTensor::new(metadata.clone(), &bytes)?).into_untyped()
        } else {
            AsyncValueRef::available(tensor_of(d.host, metadata.dtype, metadata.shape.clone(), &sums)?).into_untyped()
        };
        Ok(smallvec![result])
    }, else Err(invalid("unsupported dtype for test.add")))
}

fn equal_metadata(arguments: &[TensorMetadata], _: &OpAttrs) -> Result<Results<TensorMetadata>, String> {
    let [lhs, rhs] = arguments else { return Err("tfrt_test.equal takes 2 arguments".into()) };
    if lhs.dtype != rhs.dtype {
        return Err("incompatible dtypes for element-wise op".into());
    }
    if lhs.shape != rhs.shape {
        return Err("arguments to element-wise op must have identical shapes".into());
    }
    Ok(smallvec![lhs.clone()])
}

/// 1 where the elements are equal, 0 elsewhere, in the arguments' element type.
fn equal(d: &Dispatch<'_>) -> Result<Results<RcAsyncValue>, Diagnostic> {
    let (lhs, rhs) = (d.dense(0)?, d.dense(1)?);
    let dtype = lhs.dtype();
    if dtype == DType::I1 {
        return Err(invalid("unsupported dtype for equal"));
    }
    numeric!(dtype, T => {
        let same: Vec<T> = values::<T>(lhs)
            .into_iter()
            .zip(values::<T>(rhs))
            .map(|(a, b)| T::from_f64(if a == b { 1.0 } else { 0.0 }))
            .collect();
        Ok(smallvec![AsyncValueRef::available(tensor_of(d.host, dtype, lhs.shape().clone(), &same)?).into_untyped()])
    }, else Err(invalid("unsupported dtype for equal")))
}

/// The input shape without dimension `axis`, for reductions along it.
fn reduced(argument: &TensorMetadata, attrs: &OpAttrs, dtype: DType) -> Result<Results<TensorMetadata>, String> {
    let axis = axis_attr(attrs, argument.shape.rank())?;
    let mut dims = argument.shape.dims().to_vec();
    dims.remove(axis);
    Ok(smallvec![TensorMetadata::new(dtype, TensorShape::new(dims).map_err(|e| e.message)?)])
}

fn argmax_metadata(arguments: &[TensorMetadata], attrs: &OpAttrs) -> Result<Results<TensorMetadata>, String> {
    let [input] = arguments else { return Err("tfrt_test.argmax takes 1 argument".into()) };
    reduced(input, attrs, DType::I32)
}

fn reduce_mean_metadata(arguments: &[TensorMetadata], attrs: &OpAttrs) -> Result<Results<TensorMetadata>, String> {
    let [input] = arguments else { return Err("tfrt_test.reduce_mean takes 1 argument".into()) };
    reduced(input, attrs, input.dtype)
}

/// `(outer, length, inner)`: the extents before, along and after the dimension `axis`.
fn around_axis(shape: &TensorShape, axis: usize) -> (usize, usize, usize) {
    let dims: Vec<usize> = shape.dims().iter().map(|&d| d as usize).collect();
    (dims[..axis].iter().product(), dims[axis], dims[axis + 1..].iter().product())
}

/// `reduce(values along the axis)` for each position of the other dimensions.
fn along_axis<T: Number, R>(input: &DenseHostTensor, axis: usize, reduce: impl Fn(&[T]) -> R) -> Vec<R> {
    let (outer, length, inner) = around_axis(input.shape(), axis);
    let all = values::<T>(input);
    let mut out = Vec::with_capacity(outer * inner);
    let mut line = Vec::with_capacity(length);
    for o in 0..outer {
        for i in 0..inner {
            line.clear();
            line.extend((0..length).map(|k| all[(o * length + k) * inner + i]));
            out.push(reduce(&line));
        }
    }
    out
}

/// The index of the largest element along the axis (the first of equal ones).
fn argmax(d: &Dispatch<'_>) -> Result<Results<RcAsyncValue>, Diagnostic> {
    let input = d.dense(0)?;
    let axis = axis_attr(d.attrs, input.shape().rank()).map_err(invalid)?;
    let result = &d.results[0];
    numeric!(input.dtype(), T => {
        let indices = along_axis::<T, i32>(input, axis, |line| {
            let mut best = 0;
            for (k, value) in line.iter().enumerate() {
                if value.partial_cmp(&line[best]) == Some(Ordering::Greater) {
                    best = k;
                }
            }
            best as i32
        });
        Ok(smallvec![AsyncValueRef::available(tensor_of(d.host, DType::I32, result.shape.clone(), &indices)?).into_untyped()])
    }, else Err(invalid("unsupported dtype for argmax")))
}

/// The mean along the axis (truncated for integers).
fn reduce_mean(d: &Dispatch<'_>) -> Result<Results<RcAsyncValue>, Diagnostic> {
    let input = d.dense(0)?;
    let axis = axis_attr(d.attrs, input.shape().rank()).map_err(invalid)?;
    let result = &d.results[0];
    numeric!(input.dtype(), T => {
        let means = along_axis::<T, T>(input, axis, |line| {
            line.iter().fold(T::zero(), |sum, &v| sum.add(v)).divide(line.len())
        });
        Ok(smallvec![AsyncValueRef::available(tensor_of(d.host, input.dtype(), result.shape.clone(), &means)?).into_untyped()])
    }, else Err(invalid("unsupported dtype for reduce_mean")))
}

fn cast_metadata(arguments: &[TensorMetadata], attrs: &OpAttrs) -> Result<Results<TensorMetadata>, String> {
    let [input] = arguments else { return Err("tfrt_test.cast takes 1 argument".into()) };
    let Some(OpAttr::String(target)) = attrs.get("type") else { return Err("missing 'type' attribute".into()) };
    let dtype = match target.as_str() {
        "f32" => DType::F32,
        "f16" => DType::F16,
        _ => return Err("only casting to f32/f16 is supported".into()),
    };
    Ok(smallvec![TensorMetadata::new(dtype, input.shape.clone())])
}

fn cast(d: &Dispatch<'_>) -> Result<Results<RcAsyncValue>, Diagnostic> {
    let input = d.dense(0)?;
    let result = &d.results[0];
    let wide: Vec<f64> = numeric!(input.dtype(), T => values::<T>(input).into_iter().map(T::to_f64).collect(), else {
        return Err(invalid("unsupported dtype for cast"))
    });
    let tensor = numeric!(result.dtype, T => {
        let cast: Vec<T> = wide.into_iter().map(T::from_f64).collect();
        tensor_of(d.host, result.dtype, result.shape.clone(), &cast)?
    }, else unreachable!("the metadata allows f32 and f16"));
    Ok(smallvec![AsyncValueRef::available(tensor).into_untyped()])
}

/// `max(x, 0)`.
fn relu(d: &Dispatch<'_>) -> Result<Results<RcAsyncValue>, Diagnostic> {
    let input = d.dense(0)?;
    if input.dtype() == DType::I1 {
        return Err(invalid("unsupported dtype for relu"));
    }
    numeric!(input.dtype(), T => {
        let zero = T::zero();
        let out: Vec<T> = values::<T>(input).into_iter().map(|v| if v.partial_cmp(&zero) == Some(Ordering::Greater) { v } else { zero }).collect();
        Ok(smallvec![AsyncValueRef::available(tensor_of(d.host, input.dtype(), input.shape().clone(), &out)?).into_untyped()])
    }, else Err(invalid("unsupported dtype for relu")))
}

fn identity(d: &Dispatch<'_>) -> Result<Results<RcAsyncValue>, Diagnostic> {
    Ok(smallvec![d.arguments[0].clone()])
}

/// The odd elements of a 1-D `i32` tensor, in order: a shape known only from the data.
fn odd_collector(d: &Dispatch<'_>) -> Result<Results<RcAsyncValue>, Diagnostic> {
    let input = d.dense(0)?;
    if input.shape().rank() != 1 {
        return Err(invalid("expected a 1D tensor input"));
    }
    if input.dtype() != DType::I32 {
        return Err(invalid("expected a i32 element type"));
    }
    let odd: Vec<i32> = values::<i32>(input).into_iter().filter(|v| v % 2 != 0).collect();
    let shape = TensorShape::new(vec![odd.len() as i64])?;
    Ok(smallvec![AsyncValueRef::available(tensor_of(d.host, DType::I32, shape, &odd)?).into_untyped()])
}

/// A copy of the argument, made on the work queue: its result is not there when the op returns.
fn async_noop(d: &Dispatch<'_>) -> Result<Results<RcAsyncValue>, Diagnostic> {
    let argument = d.arguments[0].clone();
    let host = std::sync::Arc::clone(d.host);
    let copy = d.host.enqueue_work(move || -> Result<RcAsyncValue, Diagnostic> {
        if let Ok(dense) = argument.try_get::<DenseHostTensor>() {
            let bytes = dense.buffer().to_vec();
            let copied = DenseHostTensor::from_bytes(&host, dense.dtype(), dense.shape().clone(), &bytes)?;
            return Ok(AsyncValueRef::available(copied).into_untyped());
        }
        if let Ok(scalar) = argument.try_get::<ScalarHostTensor>() {
            return Ok(AsyncValueRef::available(scalar.clone()).into_untyped());
        }
        let strings = argument.try_get::<StringHostTensor>().map_err(|_| invalid("not a host tensor"))?;
        Ok(AsyncValueRef::available(strings.clone()).into_untyped())
    });
    Ok(smallvec![flatten(copy)])
}

/// The tensor a piece of work makes (or its error), as one value.
fn flatten(work: AsyncValueRef<Result<RcAsyncValue, Diagnostic>>) -> RcAsyncValue {
    let result = rtx_host::IndirectAsyncValue::new();
    let (slot, source) = (result.clone(), work.clone());
    work.as_untyped().and_then(move || {
        let _ = match source.as_untyped().get_error() {
            Some(error) => slot.set_error(error.clone()),
            None => match source.get() {
                Ok(value) => slot.forward_indirect(value.clone()),
                Err(error) => slot.set_error(error.clone()),
            },
        };
    });
    result.value()
}

fn error_tensor(_: &Dispatch<'_>) -> Result<Results<RcAsyncValue>, Diagnostic> {
    Err(Diagnostic::new(StatusCode::Internal, "error from test.error.tensor implementation"))
}

/// Prints the tensor as TFRT does, on a line of its own.
fn print(d: &Dispatch<'_>) -> Result<Results<RcAsyncValue>, Diagnostic> {
    let text =
        crate::print::tensor_text(&d.arguments[0]).ok_or_else(|| invalid("tfrt_test.print: not a host tensor"))?;
    d.context.print(&format!("{text}\n"));
    Ok(Results::new())
}
