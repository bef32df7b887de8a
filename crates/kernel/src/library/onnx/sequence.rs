//! Sequences and optionals: ONNX's non-tensor values, carried through BEF as async values like
//! tensors. A [`Sequence`] holds tensors of one element type; an optional holding a value is
//! that value (a tensor or a sequence), an empty one is [`NoValue`]. `SequenceMap` runs its body
//! (a function of the program, as control flow's) once per element.

use rtx_host::{AsyncValueRef, RcAsyncValue};

use super::control::{iterate, join, narrow, slice_at, Next, Operands};
use super::elementwise::onnx_dtype;
use super::tensors::{dims, error, integer, integers};
use crate::dtype::DType;
use crate::library::nn::int;
use crate::tensor::{DenseHostTensor, TensorShape};
use crate::{KernelError, KernelFrame, KernelRegistry};

pub(super) const OPERATORS: &[&str] = &[
    "SequenceEmpty",
    "SequenceConstruct",
    "SequenceInsert",
    "SequenceErase",
    "SequenceAt",
    "SequenceLength",
    "SplitToSequence",
    "ConcatFromSequence",
    "SequenceMap",
    "Optional",
    "OptionalHasElement",
    "OptionalGetElement",
];

/// An ONNX sequence: tensors in order, all of `dtype` (which an empty one keeps).
#[derive(Clone)]
pub struct Sequence {
    pub dtype: DType,
    pub tensors: Vec<DenseHostTensor>,
}

/// An empty ONNX optional.
#[derive(Clone, Copy, Debug)]
pub struct NoValue;

fn sequence<'f>(frame: &KernelFrame<'f>, i: usize) -> Result<&'f Sequence, KernelError> {
    frame.get::<Sequence>(i).map_err(|_| error(frame, format_args!("operand {i} is not a sequence")))
}

fn tensor<'f>(frame: &KernelFrame<'f>, i: usize) -> Result<&'f DenseHostTensor, KernelError> {
    frame.get::<DenseHostTensor>(i).map_err(|_| error(frame, format_args!("operand {i} is not a tensor")))
}

/// A sequence position (negative from the end) as an index below `len`, or up to `len` where
/// `inclusive` (an insertion).
fn position(frame: &KernelFrame<'_>, at: i64, len: usize, inclusive: bool) -> Result<usize, KernelError> {
    let end = len as i64 + i64::from(inclusive);
    let index = if at < 0 { at + len as i64 } else { at };
    if (0..end).contains(&index) {
        Ok(index as usize)
    } else {
        Err(error(frame, format_args!("position {at} is outside a sequence of {len}")))
    }
}

/// The `position` operand `i`, when present.
fn position_operand(frame: &KernelFrame<'_>, i: usize) -> Result<Option<i64>, KernelError> {
    (i < frame.num_arguments()).then(|| integer(frame, tensor(frame, i)?)).transpose()
}

fn checked(frame: &KernelFrame<'_>, dtype: DType, tensor: &DenseHostTensor) -> Result<(), KernelError> {
    if tensor.dtype() == dtype {
        Ok(())
    } else {
        Err(error(frame, "a sequence holds tensors of one element type"))
    }
}

fn empty(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let code = int(frame, "dtype", 1)?;
    let dtype = onnx_dtype(code).ok_or_else(|| error(frame, format_args!("element type {code} is not supported")))?;
    frame.emplace_result(0, Sequence { dtype, tensors: Vec::new() })
}

fn construct(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let tensors =
        (0..frame.num_arguments()).map(|i| Ok(tensor(frame, i)?.clone())).collect::<Result<Vec<_>, KernelError>>()?;
    let dtype = tensors.first().ok_or_else(|| error(frame, "it has no inputs"))?.dtype();
    for t in &tensors {
        checked(frame, dtype, t)?;
    }
    frame.emplace_result(0, Sequence { dtype, tensors })
}

fn insert(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let mut out = sequence(frame, 0)?.clone();
    let value = tensor(frame, 1)?.clone();
    if out.tensors.is_empty() {
        out.dtype = value.dtype();
    }
    checked(frame, out.dtype, &value)?;
    let at = match position_operand(frame, 2)? {
        Some(at) => position(frame, at, out.tensors.len(), true)?,
        None => out.tensors.len(),
    };
    out.tensors.insert(at, value);
    frame.emplace_result(0, out)
}

fn erase(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let mut out = sequence(frame, 0)?.clone();
    let at = position_operand(frame, 1)?.unwrap_or(-1);
    let at = position(frame, at, out.tensors.len(), false)?;
    out.tensors.remove(at);
    frame.emplace_result(0, out)
}

fn at(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let from = sequence(frame, 0)?;
    let at = position_operand(frame, 1)?.ok_or_else(|| error(frame, "it has no position"))?;
    let value = from.tensors[position(frame, at, from.tensors.len(), false)?].clone();
    frame.emplace_result(0, value)
}

fn scalar_i64(frame: &KernelFrame<'_>, value: i64) -> Result<DenseHostTensor, KernelError> {
    let out = DenseHostTensor::new_zeroed(frame.host(), DType::I64, TensorShape::new(vec![])?)?;
    out.set_values(&[value])?;
    Ok(out)
}

fn length(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let n = sequence(frame, 0)?.tensors.len() as i64;
    let out = scalar_i64(frame, n)?;
    frame.emplace_result(0, out)
}

/// `SplitToSequence`: `input` split along `axis` into parts of the sizes `split` gives (one size:
/// parts of it, the last smaller; none: parts of one, without the axis unless `keepdims`).
fn split(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let x = tensor(frame, 0)?;
    let shape = dims(x);
    let axis = super::tensors::axis(frame, int(frame, "axis", 0)?, shape.len())?;
    let whole = shape[axis];
    let split = (frame.num_arguments() > 1).then(|| tensor(frame, 1)).transpose()?;
    let (sizes, squeeze) = match split {
        None => (vec![1; whole], int(frame, "keepdims", 1)? == 0),
        Some(split) if dims(split).is_empty() => {
            let size = usize::try_from(integer(frame, split)?)
                .ok()
                .filter(|&s| s > 0)
                .ok_or_else(|| error(frame, "a split size must be positive"))?;
            let mut sizes = vec![size; whole / size];
            if !whole.is_multiple_of(size) {
                sizes.push(whole % size);
            }
            (sizes, false)
        }
        Some(split) => {
            let sizes = super::tensors::sizes(frame, "split", &integers(frame, split)?)?;
            if sizes.iter().try_fold(0usize, |n, &s| n.checked_add(s)) != Some(whole) {
                return Err(error(frame, format_args!("split {sizes:?} does not add up to {whole}")));
            }
            (sizes, false)
        }
    };
    let mut tensors = Vec::with_capacity(sizes.len());
    let mut start = 0;
    for size in sizes {
        let part = narrow(frame.host(), x, axis, start, size)?;
        tensors.push(if squeeze { slice_at(frame.host(), &part, axis, 0)? } else { part });
        start += size;
    }
    frame.emplace_result(0, Sequence { dtype: x.dtype(), tensors })
}

/// `ConcatFromSequence`: the tensors joined along `axis`, or stacked along a new one.
fn concat_from(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let from = sequence(frame, 0)?;
    if from.tensors.is_empty() {
        return Err(error(frame, "the sequence is empty"));
    }
    let axis = int(frame, "axis", i64::MAX)?;
    if axis == i64::MAX {
        return Err(error(frame, "it has no `axis` attribute"));
    }
    let name = frame.kernel_name().to_owned();
    let out = join(frame.host(), &name, &from.tensors, axis, int(frame, "new_axis", 0)? != 0)?;
    frame.emplace_result(0, out)
}

/// `SequenceMap`: the body once per element of the first input, taking element `i` of each
/// sequence input and each tensor input whole; its outputs collected into sequences.
fn map(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let operands = Operands::new(frame)?;
    let name = frame.kernel_name().to_owned();
    let inputs = operands
        .inputs
        .iter()
        .cloned()
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| error(frame, "an input is missing"))?;
    let count = inputs.first().and_then(|v| v.try_get::<Sequence>().ok()).map(|s| s.tensors.len());
    let count = count.ok_or_else(|| error(frame, "its first input is not a sequence"))?;
    for input in &inputs {
        if input.try_get::<Sequence>().is_ok_and(|s| s.tensors.len() != count) {
            return Err(error(frame, "its sequences differ in length"));
        }
    }
    let body = frame.function(0)?;
    let k = frame.num_results();
    if body.num_arguments() != inputs.len() + operands.captures.len() || body.num_results() != k {
        return Err(error(frame, "its body does not fit the node"));
    }
    let captures = operands.captures;
    let mut outputs: Vec<Vec<DenseHostTensor>> = vec![Vec::new(); k];
    let mut i = 0;
    let step = move |returned: Option<Vec<RcAsyncValue>>| -> Result<Next, KernelError> {
        if let Some(values) = returned {
            for (output, value) in outputs.iter_mut().zip(&values) {
                let tensor =
                    value.try_get::<DenseHostTensor>().map_err(|_| format!("{name}: the body returned no tensor"))?;
                output.push(tensor.clone());
            }
            i += 1;
        }
        if i < count {
            let mut arguments: Vec<RcAsyncValue> = inputs
                .iter()
                .map(|input| match input.try_get::<Sequence>() {
                    Ok(s) => AsyncValueRef::available(s.tensors[i].clone()).into_untyped(),
                    Err(_) => input.clone(),
                })
                .collect();
            arguments.extend(captures.iter().cloned());
            return Ok(Next::Run(arguments));
        }
        let results = std::mem::take(&mut outputs)
            .into_iter()
            .map(|tensors| {
                let dtype = tensors.first().map_or(DType::F32, DenseHostTensor::dtype);
                AsyncValueRef::available(Sequence { dtype, tensors }).into_untyped()
            })
            .collect();
        Ok(Next::Done(results))
    };
    iterate(frame, body, Box::new(step))
}

/// `Optional`: its input, or an empty optional without one.
fn optional(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    match frame.arguments().first() {
        Some(value) => {
            let value = value.clone();
            frame.set_result(0, value)
        }
        None => frame.emplace_result(0, NoValue),
    }
}

fn has_element(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let has = frame.arguments().first().is_some_and(|v| !v.is_type::<NoValue>());
    let out = DenseHostTensor::new_zeroed(frame.host(), DType::I1, TensorShape::new(vec![])?)?;
    out.set_values(&[has])?;
    frame.emplace_result(0, out)
}

fn get_element(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let value = frame.argument(0)?.clone();
    if value.is_type::<NoValue>() {
        return Err(error(frame, "the optional is empty"));
    }
    frame.set_result(0, value)
}

pub(super) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("onnx.SequenceEmpty", empty);
    registry.add_kernel("onnx.SequenceConstruct", construct);
    registry.add_kernel("onnx.SequenceInsert", insert);
    registry.add_kernel("onnx.SequenceErase", erase);
    registry.add_kernel("onnx.SequenceAt", at);
    registry.add_kernel("onnx.SequenceLength", length);
    registry.add_kernel("onnx.SplitToSequence", split);
    registry.add_kernel("onnx.ConcatFromSequence", concat_from);
    registry.add_kernel("onnx.SequenceMap", map);
    registry.add_kernel("onnx.Optional", optional);
    registry.add_kernel("onnx.OptionalHasElement", has_element);
    registry.add_kernel("onnx.OptionalGetElement", get_element);
}
