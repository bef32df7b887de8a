//! `Pad`, on tensors of any element type: each axis grows (or, by negative pads, shrinks) at
//! both ends; the new elements are a constant, the edge's, the input reflected about its edges,
//! or the input wrapped around. `CenterCropPad` crops or zero-pads axes about their centres.

use super::dispatch::any;
use super::tensors::{
    dims, distinct_axes, error, integers, opset, sizes, strides, take, unsupported, Inputs, Value, Walk,
};
use crate::library::nn::{float, ints};
use crate::{KernelError, KernelFrame, KernelRegistry};

pub(super) const OPERATORS: &[&str] = &["CenterCropPad", "Pad"];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Constant,
    Reflect,
    Edge,
    Wrap,
}

/// The index in the input of index `o` of an axis padded by `before`, which reads the `kept`
/// indices from `first` on; `None` where the constant goes.
fn source(mode: Mode, o: usize, before: i64, first: usize, kept: usize) -> Option<usize> {
    let p = o as i64 - before.max(0);
    let n = kept as i64;
    let p = match mode {
        _ if (0..n).contains(&p) => p,
        Mode::Constant => return None,
        Mode::Edge => p.clamp(0, n - 1),
        Mode::Reflect if n == 1 => 0,
        Mode::Reflect => {
            let period = 2 * (n - 1);
            let m = p.rem_euclid(period);
            if m < n {
                m
            } else {
                period - m
            }
        }
        Mode::Wrap => p.rem_euclid(n),
    };
    Some(first + p as usize)
}

fn pad(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let x = inputs.required(0)?;
    let dims = dims(x);
    let dtype = x.dtype();
    let size = dtype.byte_size().ok_or_else(|| unsupported(frame, dtype))?;
    let mode = match frame.named_attribute("mode").and_then(|a| Ok(a.string()?)) {
        Err(_) | Ok("constant") => Mode::Constant,
        Ok("reflect") => Mode::Reflect,
        Ok("edge") => Mode::Edge,
        Ok("wrap") => Mode::Wrap,
        Ok(other) => return Err(error(frame, format_args!("unknown mode `{other}`"))),
    };
    let mut value = vec![0; size];
    let (pads, axes) = if opset(frame)? < 11 {
        let pads = match ints(frame, "pads", &[])? {
            pads if pads.is_empty() => ints(frame, "paddings", &[])?,
            pads => pads,
        };
        let constant = f64::from(float(frame, "value", 0.0)?);
        any!(dtype, T => { T::from_f64(constant).store(dtype, &mut value) }, return Err(unsupported(frame, dtype)));
        (pads, None)
    } else {
        if let Some(constant) = inputs.optional(2) {
            if constant.dtype() != dtype || constant.num_elements() != 1 {
                return Err(error(frame, "constant_value is not one element of the input's type"));
            }
            constant.with_bytes(|bytes| value.copy_from_slice(bytes));
        }
        let axes = inputs.optional(3).map(|axes| integers(frame, axes)).transpose()?;
        (integers(frame, inputs.required(1)?)?, axes)
    };
    let axes = match axes {
        Some(axes) => distinct_axes(frame, &axes, dims.len())?,
        None => (0..dims.len()).collect(),
    };
    if pads.len() != 2 * axes.len() {
        return Err(error(frame, format_args!("{} pads for {} axes", pads.len(), axes.len())));
    }
    let mut widths = vec![(0, 0); dims.len()];
    for (i, &a) in axes.iter().enumerate() {
        widths[a] = (pads[i], pads[axes.len() + i]);
    }
    // Per axis: its length, and the part of the input it keeps (negative pads crop).
    let mut out = Vec::with_capacity(dims.len());
    let mut kept = Vec::with_capacity(dims.len());
    for (&d, &(before, after)) in dims.iter().zip(&widths) {
        let length = (d as i128) + i128::from(before) + i128::from(after);
        let length = usize::try_from(length).map_err(|_| error(frame, format_args!("pads {pads:?} for {dims:?}")))?;
        let first = usize::try_from(before.min(0).unsigned_abs()).unwrap_or(usize::MAX).min(d);
        let last = d.saturating_sub(usize::try_from(after.min(0).unsigned_abs()).unwrap_or(usize::MAX));
        let count = last.saturating_sub(first);
        if count == 0 && length > 0 && mode != Mode::Constant {
            return Err(error(frame, format_args!("cannot pad an empty axis of {dims:?} by {mode:?}")));
        }
        out.push(length);
        kept.push((first, count));
    }
    let strides = strides(&dims);
    let walk = || {
        let maps = out.iter().enumerate().map(|(k, &length)| {
            let (first, count) = kept[k];
            (0..length).map(|o| source(mode, o, widths[k].0, first, count).map(|i| i * strides[k])).collect()
        });
        Walk::new(maps.collect())
    };
    let result = take(frame, x, &out, Some(&value), walk)?;
    frame.emplace_result(0, result)
}

/// The input index of index `o` of an axis of `length` cut or padded about its centre from
/// `dim` elements (the odd element is cut or padded at the end); `None` in the padding.
fn centred(o: usize, dim: usize, length: usize) -> Option<usize> {
    let (crop, pad) = (dim.saturating_sub(length) / 2, length.saturating_sub(dim) / 2);
    (o + crop).checked_sub(pad).filter(|&i| i < dim)
}

fn center_crop_pad(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let x = inputs.required(0)?;
    let dims = dims(x);
    let shape = sizes(frame, "shape", &integers(frame, inputs.required(1)?)?)?;
    let axes = match ints(frame, "axes", &[])? {
        axes if axes.is_empty() => (0..dims.len()).collect(),
        axes => distinct_axes(frame, &axes, dims.len())?,
    };
    if shape.len() != axes.len() {
        return Err(error(frame, format_args!("shape {shape:?} does not give {} axes", axes.len())));
    }
    let mut out = dims.clone();
    for (&a, &length) in axes.iter().zip(&shape) {
        out[a] = length;
    }
    let strides = strides(&dims);
    let walk = || {
        let maps = out
            .iter()
            .enumerate()
            .map(|(k, &length)| (0..length).map(|o| centred(o, dims[k], length).map(|i| i * strides[k])).collect());
        Walk::new(maps.collect())
    };
    let result = take(frame, x, &out, None, walk)?;
    frame.emplace_result(0, result)
}

pub(super) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("onnx.CenterCropPad", center_crop_pad);
    registry.add_kernel("onnx.Pad", pad);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_read_the_input_as_numpy_pads() {
        // [1 2 3] padded by 2 and 3.
        let read = |mode| (0..8).map(|o| source(mode, o, 2, 0, 3)).collect::<Vec<_>>();
        assert_eq!(read(Mode::Constant), [None, None, Some(0), Some(1), Some(2), None, None, None]);
        assert_eq!(read(Mode::Edge), [0, 0, 0, 1, 2, 2, 2, 2].map(Some));
        assert_eq!(read(Mode::Reflect), [2, 1, 0, 1, 2, 1, 0, 1].map(Some));
        assert_eq!(read(Mode::Wrap), [1, 2, 0, 1, 2, 0, 1, 2].map(Some));
        // Cropped by 1 at the front: what is kept starts at index 1.
        assert_eq!((0..3).map(|o| source(Mode::Edge, o, -1, 1, 2)).collect::<Vec<_>>(), [1, 2, 2].map(Some));
    }

    #[test]
    fn centre_crops_and_pads_put_the_odd_element_at_the_end() {
        let read = |dim, length| (0..length).map(|o| centred(o, dim, length)).collect::<Vec<_>>();
        assert_eq!(read(5, 2), [1, 2].map(Some));
        assert_eq!(read(4, 2), [1, 2].map(Some));
        assert_eq!(read(2, 5), [None, Some(0), Some(1), None, None]);
        assert_eq!(read(3, 3), [0, 1, 2].map(Some));
    }
}
