//! Normalising along one axis: `nn.softmax.f32` (ONNX Softmax from opset 13: along `axis`,
//! default -1; older models' flattening is the converter's to express with `nn.reshape.f32`),
//! `nn.layer_norm.f32` (ONNX LayerNormalization's `Y`: `X, Scale[, B]`, over the axes from
//! `axis`, default -1, with `epsilon`; `Scale` and `B` hold one value per normalized element)
//! and `nn.lrn.f32` (ONNX LRN across channels: `size`, `alpha`, `beta`, `bias`).

use super::exp::exp;
use super::split::compute;
use super::{float, floats, int, lane_sum, operands, shape_error};
use crate::{KernelError, KernelFrame, KernelRegistry};

/// `axis` (negative from the end) as an index below `rank`.
pub(crate) fn axis_index(frame: &KernelFrame<'_>, axis: i64, rank: usize) -> Result<usize, KernelError> {
    let index = if axis < 0 { axis + rank as i64 } else { axis };
    usize::try_from(index)
        .ok()
        .filter(|&i| i < rank)
        .ok_or_else(|| shape_error(frame, format_args!("axis {axis} is outside a tensor of rank {rank}")))
}

fn softmax(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let x = floats(frame, 0)?;
    let axis = axis_index(frame, int(frame, "axis", -1)?, x.dims.len())?;
    // Only a tensor with no elements can overflow these products, and it has no units.
    let (length, inner) = (x.dims[axis], x.dims[axis + 1..].iter().fold(1usize, |n, &d| n.saturating_mul(d)));
    let outer = x.dims[..axis].iter().fold(1usize, |n, &d| n.saturating_mul(d));
    let dims = x.dims.clone();
    // A unit is one block of `length * inner` elements: `inner` softmaxes, strided by `inner`.
    let units = if length.saturating_mul(inner) == 0 { 0 } else { outer };
    compute(frame, &dims, units, length.saturating_mul(inner).saturating_mul(3), move |blocks, out| {
        for (block, values) in blocks.zip(out.chunks_exact_mut((length * inner).max(1))) {
            let input = &x.data[block * length * inner..(block + 1) * length * inner];
            if inner == 1 {
                softmax_row(values, input);
                continue;
            }
            for k in 0..inner {
                let max = (0..length).map(|i| input[i * inner + k]).fold(f32::NEG_INFINITY, f32::max);
                let mut sum = 0.0;
                for i in 0..length {
                    let e = exp::<false>(input[i * inner + k] - max);
                    values[i * inner + k] = e;
                    sum += e;
                }
                (0..length).for_each(|i| values[i * inner + k] /= sum);
            }
        }
    })
}

fn layer_norm(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let x = floats(frame, 0)?;
    let scale = floats(frame, 1)?;
    let bias = if operands(frame) > 2 { Some(floats(frame, 2)?) } else { None };
    let axis = axis_index(frame, int(frame, "axis", -1)?, x.dims.len())?;
    let epsilon = float(frame, "epsilon", 1e-5)?;
    let length = x.dims[axis..].iter().product::<usize>();
    for (what, operand) in [("Scale", Some(&scale)), ("B", bias.as_ref())] {
        if let Some(operand) = operand.filter(|o| o.data.len() != length) {
            return Err(shape_error(
                frame,
                format_args!(
                    "{what} {} does not hold the {length} elements that X {} normalizes",
                    operand.shape(),
                    x.shape()
                ),
            ));
        }
    }
    let rows = x.data.len().checked_div(length).unwrap_or(0);
    let dims = x.dims.clone();
    compute(frame, &dims, rows, length.saturating_mul(4), move |rows, out| {
        for (row, values) in rows.zip(out.chunks_exact_mut(length)) {
            let input = &x.data[row * length..(row + 1) * length];
            standardize(values, input, &scale.data, bias.as_ref().map(|b| &b.data[..]), epsilon);
        }
    })
}

vectorized! {
    /// The softmax of `input`, a run of contiguous elements, into `values`: loops that vectorize.
    fn softmax_row(values: &mut [f32], input: &[f32]) {
        let max = input.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        for (value, &x) in values.iter_mut().zip(input) {
            *value = exp::<{ fma!() }>(x - max);
        }
        let scale = 1.0 / lane_sum(values, |v| v);
        for value in values.iter_mut() {
            *value *= scale;
        }
    }
}

vectorized! {
    /// `(input - mean) / sqrt(variance + epsilon) * scale + bias` into `out`.
    fn standardize(out: &mut [f32], input: &[f32], scale: &[f32], bias: Option<&[f32]>, epsilon: f32) {
        let n = input.len() as f32;
        let mean = lane_sum(input, |v| v) / n;
        let variance = lane_sum(input, |v| (v - mean) * (v - mean)) / n;
        let factor = 1.0 / (variance + epsilon).sqrt();
        match bias {
            Some(bias) => {
                for (((value, &v), &s), &b) in out.iter_mut().zip(input).zip(scale).zip(bias) {
                    *value = (v - mean) * factor * s + b;
                }
            }
            None => {
                for ((value, &v), &s) in out.iter_mut().zip(input).zip(scale) {
                    *value = (v - mean) * factor * s;
                }
            }
        }
    }
}

fn lrn(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let x = floats(frame, 0)?;
    let size = usize::try_from(int(frame, "size", 0)?).unwrap_or(0);
    let (alpha, beta, bias) = (float(frame, "alpha", 1e-4)?, float(frame, "beta", 0.75)?, float(frame, "bias", 1.0)?);
    if size == 0 {
        return Err(shape_error(frame, "size must be positive"));
    }
    let (n, c) = match x.dims[..] {
        [n, c, _, _] => (n, c),
        _ => return Err(shape_error(frame, format_args!("X {} is not NCHW", x.shape()))),
    };
    let plane = x.dims[2].saturating_mul(x.dims[3]);
    let dims = x.dims.clone();
    // Channels `c - (size - 1) / 2 ..= c + size / 2` (ONNX's floor and ceiling of half the rest).
    let (before, after) = ((size - 1) / 2, size / 2);
    compute(frame, &dims, if plane == 0 { 0 } else { n * c }, plane.saturating_mul(size), move |planes, out| {
        for (unit, values) in planes.zip(out.chunks_exact_mut(plane.max(1))) {
            let (image, channel) = (unit / c, unit % c);
            let first = channel.saturating_sub(before);
            let last = (channel + after).min(c - 1);
            for (p, value) in values.iter_mut().enumerate() {
                let at = |ch: usize| x.data[(image * c + ch) * plane + p];
                let square_sum: f32 = (first..=last).map(|ch| at(ch) * at(ch)).sum();
                *value = at(channel) / (bias + alpha / size as f32 * square_sum).powf(beta);
            }
        }
    })
}

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("nn.softmax.f32", softmax);
    registry.add_kernel("nn.layer_norm.f32", layer_norm);
    registry.add_kernel("nn.lrn.f32", lrn);
}
