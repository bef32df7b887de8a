//! Kernels that move elements without arithmetic, for any element type: `nn.reshape` (ONNX
//! Reshape with its shape as the `shape` attribute: 0 keeps a dimension, one -1 takes the rest),
//! `nn.flatten` (ONNX Flatten at `axis`, default 1) — both share the operand's buffer, no copy
//! — and `nn.transpose` (`perm`, default reversed) and `nn.concat` (any number of operands
//! along `axis`), which copy. ShuffleNet's channel shuffle is a reshape, transpose, reshape.
//! `nn.expect_shape` passes its operand on when its dimensions are the `shape` attribute's (-1
//! matches any), and fails naming the `input` attribute otherwise: an imported graph checks its
//! inputs with it, as a compiled program does.

use super::normalize::axis_index;
use super::{int, ints, operands, shape_error};
use crate::tensor::{DenseHostTensor, TensorShape};
use crate::{KernelError, KernelFrame, KernelRegistry};
use rtx_host::StatusCode;

/// Operand 0 with the same elements and buffer under `dims`.
fn view(frame: &mut KernelFrame<'_>, dims: Vec<i64>) -> Result<(), KernelError> {
    let tensor = frame.get::<DenseHostTensor>(0)?;
    let shape = TensorShape::new(dims)?;
    if shape.num_elements() != Some(tensor.num_elements() as i64) {
        return Err(shape_error(frame, format_args!("cannot view {} as {shape}", tensor.shape())));
    }
    let viewed = DenseHostTensor::from_buffer(tensor.dtype(), shape, tensor.buffer().clone())?;
    frame.emplace_result(0, viewed)
}

fn expect_shape(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    // A tensor of strings (an ONNX STRING input) is checked the same way and passed on as it is.
    let strings = frame.get::<crate::tensor::StringHostTensor>(0).ok();
    let dims = match strings {
        Some(strings) => strings.shape().dims().to_vec(),
        None => frame.get::<DenseHostTensor>(0)?.shape().dims().to_vec(),
    };
    let expected = ints(frame, "shape", &[])?;
    let fits = dims.len() == expected.len() && dims.iter().zip(&expected).all(|(&d, &e)| e == -1 || d == e);
    if !fits {
        let input = frame.named_attribute("input").ok().and_then(|a| a.string().ok()).unwrap_or("operand 0");
        let shown: Vec<String> =
            expected.iter().map(|&e| if e == -1 { "?".to_owned() } else { e.to_string() }).collect();
        let message = format!(
            "{}: input `{input}` has shape {dims:?}, but the graph takes [{}]",
            frame.kernel_name(),
            shown.join(", ")
        );
        return Err(KernelError::new(StatusCode::InvalidArgument, message));
    }
    if strings.is_some() {
        let value = frame.argument(0)?.clone();
        return frame.set_result(0, value);
    }
    view(frame, dims)
}

fn reshape(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let dims = frame.get::<DenseHostTensor>(0)?.shape().dims().to_vec();
    let requested = ints(frame, "shape", &[])?;
    let mut target = Vec::with_capacity(requested.len());
    let mut infer = None;
    for (i, &d) in requested.iter().enumerate() {
        match d {
            0 => target.push(*dims.get(i).ok_or_else(|| {
                shape_error(frame, format_args!("shape {requested:?} keeps dimension {i} of {dims:?}, which has none"))
            })?),
            -1 if infer.is_none() => {
                infer = Some(i);
                target.push(1);
            }
            d if d > 0 => target.push(d),
            _ => return Err(shape_error(frame, format_args!("shape {requested:?} is not a reshape of {dims:?}"))),
        }
    }
    if let Some(i) = infer {
        let total: i64 = dims.iter().product();
        let known: i64 = target.iter().product();
        if known == 0 || total % known != 0 {
            return Err(shape_error(frame, format_args!("cannot reshape {dims:?} to {requested:?}")));
        }
        target[i] = total / known;
    }
    view(frame, target)
}

fn flatten(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let dims = frame.get::<DenseHostTensor>(0)?.shape().dims().to_vec();
    let axis = int(frame, "axis", 1)?;
    // Axis may equal the rank: everything goes to the rows.
    let axis = if axis == dims.len() as i64 { dims.len() } else { axis_index(frame, axis, dims.len())? };
    view(frame, vec![dims[..axis].iter().product(), dims[axis..].iter().product()])
}

/// Row-major strides of `dims`, in elements (wrapping: only a shape with no elements can
/// overflow them, and nothing of it is read).
pub(crate) fn strides(dims: &[usize]) -> Vec<usize> {
    let mut strides = vec![1usize; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1].wrapping_mul(dims[i + 1]);
    }
    strides
}

fn transpose(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let tensor = frame.get::<DenseHostTensor>(0)?.clone();
    let dims: Vec<usize> = tensor.shape().dims().iter().map(|&d| d as usize).collect();
    let rank = dims.len();
    let perm = ints(frame, "perm", &(0..rank as i64).rev().collect::<Vec<_>>())?;
    let mut seen = vec![false; rank];
    let valid = perm.len() == rank
        && perm.iter().all(|&p| {
            usize::try_from(p).ok().filter(|&p| p < rank).is_some_and(|p| !std::mem::replace(&mut seen[p], true))
        });
    if !valid {
        return Err(shape_error(frame, format_args!("perm {perm:?} is not a permutation of {dims:?}'s axes")));
    }
    let perm: Vec<usize> = perm.iter().map(|&p| p as usize).collect();
    let out_dims: Vec<usize> = perm.iter().map(|&p| dims[p]).collect();
    // Trailing axes the permutation keeps in place are copied as one run of contiguous elements
    // (a channel shuffle moves whole planes); the odometer walks the axes before them.
    let kept = (0..rank).rev().take_while(|&axis| perm[axis] == axis).count();
    let outer = rank - kept;
    let size = tensor.dtype().byte_size().expect("dense tensors have sized elements");
    let run = dims[outer..].iter().product::<usize>() * size;
    let input_strides = strides(&dims);
    // The input stride (in runs' elements) of each outer output axis, so the copy walks the
    // output in order.
    let walk: Vec<usize> = perm[..outer].iter().map(|&p| input_strides[p] * size).collect();
    let shape = TensorShape::new(out_dims.iter().map(|&d| d as i64).collect())?;
    let out = DenseHostTensor::new_zeroed(frame.host(), tensor.dtype(), shape)?;
    if run > 0 && out.num_elements() > 0 {
        tensor.with_bytes(|input| {
            out.buffer().with_bytes_mut(|bytes| {
                let Some(last) = outer.checked_sub(1) else {
                    bytes.copy_from_slice(input);
                    return;
                };
                // A row of the output's last outer axis: `count` runs, `step` bytes apart in the
                // input. Runs of one small element (a matrix transposed) are gathered with
                // fixed-size copies; the odometer walks the axes before the row.
                let (count, step) = (out_dims[last], walk[last]);
                let mut index = vec![0usize; last];
                let mut from = 0usize;
                for target in bytes.chunks_exact_mut(run * count) {
                    match run {
                        4 => gather::<4>(target, input, from, step),
                        8 => gather::<8>(target, input, from, step),
                        2 => gather::<2>(target, input, from, step),
                        1 => gather::<1>(target, input, from, step),
                        _ => {
                            for (k, target) in target.chunks_exact_mut(run).enumerate() {
                                target.copy_from_slice(&input[from + k * step..][..run]);
                            }
                        }
                    }
                    // Next row, odometer style, keeping `from` in step.
                    for axis in (0..last).rev() {
                        index[axis] += 1;
                        from += walk[axis];
                        if index[axis] < out_dims[axis] {
                            break;
                        }
                        from -= walk[axis] * index[axis];
                        index[axis] = 0;
                    }
                }
            })
        })?;
    }
    out.buffer().seal();
    frame.emplace_result(0, out)
}

/// `target`'s elements of `N` bytes each from `input`, the first at `from`, `step` bytes apart.
fn gather<const N: usize>(target: &mut [u8], input: &[u8], from: usize, step: usize) {
    for (k, target) in target.chunks_exact_mut(N).enumerate() {
        let at = from + k * step;
        target.copy_from_slice(&input[at..at + N]);
    }
}

fn concat(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let tensors =
        (0..operands(frame)).map(|i| frame.get::<DenseHostTensor>(i).cloned()).collect::<Result<Vec<_>, _>>()?;
    let Some(first) = tensors.first() else {
        return Err(shape_error(frame, "needs at least one operand"));
    };
    let rank = first.shape().rank();
    let axis = axis_index(frame, int(frame, "axis", 0)?, rank)?;
    let fits = |t: &DenseHostTensor| {
        t.dtype() == first.dtype()
            && t.shape().rank() == rank
            && (0..rank).all(|i| i == axis || t.shape().dims()[i] == first.shape().dims()[i])
    };
    if !tensors.iter().all(fits) {
        let shapes: Vec<String> = tensors.iter().map(|t| t.shape().to_string()).collect();
        return Err(shape_error(frame, format_args!("cannot join {} along axis {axis}", shapes.join(", "))));
    }
    let mut dims = first.shape().dims().to_vec();
    dims[axis] = tensors.iter().map(|t| t.shape().dims()[axis]).sum();
    let outer = dims[..axis].iter().product::<i64>() as usize;
    let out = DenseHostTensor::new_zeroed(frame.host(), first.dtype(), TensorShape::new(dims)?)?;
    // Each operand gives one run of bytes per index along the axes before `axis`, at its offset
    // in each of the result's rows of `row` bytes.
    out.buffer().with_bytes_mut(|bytes| {
        let row = bytes.len() / outer.max(1);
        let mut offset = 0;
        for tensor in &tensors {
            tensor.with_bytes(|source| {
                let len = source.len() / outer.max(1);
                for (i, run) in source.chunks_exact(len.max(1)).take(outer).enumerate() {
                    bytes[i * row + offset..][..len].copy_from_slice(run);
                }
                offset += len;
            });
        }
    })?;
    out.buffer().seal();
    frame.emplace_result(0, out)
}

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("nn.expect_shape", expect_shape);
    registry.add_kernel("nn.reshape", reshape);
    registry.add_kernel("nn.flatten", flatten);
    registry.add_kernel("nn.transpose", transpose);
    registry.add_kernel("nn.concat", concat);
}
