//! Shapes and layouts, on tensors of any element type: what a tensor's shape says (`Shape`,
//! `Size`), the same elements under other dimensions (`Reshape`, `Flatten`, `Squeeze`,
//! `Unsqueeze`: they share the input's buffer), and the elements moved (`Transpose`, `Expand`,
//! `Tile`, `Concat`, `Split`, `Slice`, `DepthToSpace`, `SpaceToDepth`, `ReverseSequence`). The
//! elements are copied as they are, whatever their type.

use super::control::join;
use super::elementwise::broadcast;
use super::tensors::{
    axis, dims, distinct_axes, element_count, error, integers, opset, reshaped, sizes, strides, take, Inputs, Typed,
    Walk,
};
use crate::dtype::DType;
use crate::library::nn::{int, ints};
use crate::{KernelError, KernelFrame, KernelRegistry, KernelSite};

pub(super) const OPERATORS: &[&str] = &[
    "Concat",
    "DepthToSpace",
    "Expand",
    "Flatten",
    "ReverseSequence",
    "Reshape",
    "Shape",
    "Size",
    "Slice",
    "SpaceToDepth",
    "Split",
    "Squeeze",
    "Tile",
    "Transpose",
    "Unsqueeze",
];

fn shape(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let dims = inputs.required(0)?.shape().dims().to_vec();
    let rank = dims.len() as i64;
    let clamp = |i: i64| (if i < 0 { i.saturating_add(rank) } else { i }).clamp(0, rank) as usize;
    let (start, end) = (clamp(int(frame, "start", 0)?), clamp(int(frame, "end", rank)?));
    let values = dims.get(start..end).unwrap_or_default().to_vec();
    let result = Typed { dims: vec![values.len()], values }.into_tensor(frame, DType::I64)?;
    frame.emplace_result(0, result)
}

fn size(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let count = inputs.required(0)?.num_elements() as i64;
    let result = Typed { dims: vec![], values: vec![count] }.into_tensor(frame, DType::I64)?;
    frame.emplace_result(0, result)
}

/// Reshape's dimensions for `requested`: -1 (once) takes what is left, 0 copies the input's
/// dimension unless `allow_zero`.
fn reshape_dims(dims: &[usize], requested: &[i64], allow_zero: bool) -> Result<Vec<usize>, String> {
    let invalid = || format!("cannot reshape {dims:?} to {requested:?}");
    let mut out = Vec::with_capacity(requested.len());
    let mut inferred = None;
    for (i, &r) in requested.iter().enumerate() {
        out.push(match r {
            -1 if inferred.is_none() => {
                inferred = Some(i);
                1
            }
            0 if !allow_zero => *dims.get(i).ok_or_else(invalid)?,
            r => usize::try_from(r).map_err(|_| invalid())?,
        });
    }
    let product = |dims: &[usize]| dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d)).ok_or_else(invalid);
    let (total, known) = (product(dims)?, product(&out)?);
    match inferred {
        Some(i) if known != 0 && total % known == 0 => out[i] = total / known,
        None if known == total => {}
        _ => return Err(invalid()),
    }
    Ok(out)
}

/// How a view operator computes its result's dimensions from the input's (`dims`), its inputs
/// and its attributes.
type ViewDims = fn(&KernelSite<'_>, &Inputs, Vec<usize>) -> Result<Vec<usize>, KernelError>;

/// A kernel giving input 0's elements the dimensions `view` computes, sharing its buffer.
fn register_view(registry: &mut KernelRegistry, name: &str, view: ViewDims) {
    registry.add_kernel(&format!("onnx.{name}"), move |frame: &mut KernelFrame<'_>| {
        let inputs = Inputs::new(frame)?;
        let x = inputs.required(0)?;
        let out = view(frame, &inputs, dims(x))?;
        let result = reshaped(frame, x, &out)?;
        frame.emplace_result(0, result)
    });
}

fn reshape(site: &KernelSite<'_>, inputs: &Inputs, dims: Vec<usize>) -> Result<Vec<usize>, KernelError> {
    let requested = if opset(site)? < 5 { ints(site, "shape", &[])? } else { integers(site, inputs.required(1)?)? };
    reshape_dims(&dims, &requested, int(site, "allowzero", 0)? != 0).map_err(|e| error(site, e))
}

fn flatten(site: &KernelSite<'_>, _: &Inputs, dims: Vec<usize>) -> Result<Vec<usize>, KernelError> {
    // The axis may be the rank itself: everything goes to the first dimension.
    let (requested, rank) = (int(site, "axis", 1)?, dims.len() as i64);
    let split = if requested < 0 { requested + rank } else { requested };
    let split = usize::try_from(split)
        .ok()
        .filter(|&s| s <= dims.len())
        .ok_or_else(|| error(site, format_args!("axis {requested} is outside a rank of {rank}")))?;
    Ok(vec![element_count(site, &dims[..split])?, element_count(site, &dims[split..])?])
}

/// Squeeze's and Unsqueeze's axes: the attribute before opset 13, input 1 from it.
fn axes_of(site: &KernelSite<'_>, inputs: &Inputs) -> Result<Option<Vec<i64>>, KernelError> {
    if opset(site)? < 13 {
        let axes = ints(site, "axes", &[])?;
        return Ok((!axes.is_empty()).then_some(axes));
    }
    inputs.optional(1).map(|axes| integers(site, axes)).transpose()
}

fn squeeze(site: &KernelSite<'_>, inputs: &Inputs, dims: Vec<usize>) -> Result<Vec<usize>, KernelError> {
    Ok(match axes_of(site, inputs)? {
        None => dims.into_iter().filter(|&d| d != 1).collect(),
        Some(axes) => {
            let axes = distinct_axes(site, &axes, dims.len())?;
            if let Some(&a) = axes.iter().find(|&&a| dims[a] != 1) {
                return Err(error(site, format_args!("dimension {a} of {dims:?} is not 1")));
            }
            dims.iter().enumerate().filter(|(i, _)| !axes.contains(i)).map(|(_, &d)| d).collect()
        }
    })
}

fn unsqueeze(site: &KernelSite<'_>, inputs: &Inputs, dims: Vec<usize>) -> Result<Vec<usize>, KernelError> {
    let axes = axes_of(site, inputs)?.ok_or_else(|| error(site, "it has no axes"))?;
    let axes = distinct_axes(site, &axes, dims.len() + axes.len())?;
    let mut rest = dims.iter();
    Ok((0..dims.len() + axes.len())
        .map(|i| if axes.contains(&i) { 1 } else { *rest.next().expect("as many dimensions as are left") })
        .collect())
}

/// The dimensions of `dims` permuted by `perm`, and the walk that reads them from the input.
fn transposed(site: &KernelSite<'_>, dims: &[usize], perm: &[i64]) -> Result<(Vec<usize>, Walk), KernelError> {
    let perm = distinct_axes(site, perm, dims.len())
        .ok()
        .filter(|perm| perm.len() == dims.len())
        .ok_or_else(|| error(site, format_args!("perm {perm:?} does not permute the axes of {dims:?}")))?;
    let strides = strides(dims);
    let out: Vec<usize> = perm.iter().map(|&p| dims[p]).collect();
    let out_strides: Vec<usize> = perm.iter().map(|&p| strides[p]).collect();
    let walk = Walk::strided(&out, &out_strides);
    Ok((out, walk))
}

fn transpose(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let x = inputs.required(0)?;
    let dims = dims(x);
    let reversed: Vec<i64> = (0..dims.len() as i64).rev().collect();
    let (out, walk) = transposed(frame, &dims, &ints(frame, "perm", &reversed)?)?;
    let result = take(frame, x, &out, None, || walk)?;
    frame.emplace_result(0, result)
}

/// DepthToSpace and SpaceToDepth: a transpose of the input seen with six dimensions.
fn blocks(frame: &mut KernelFrame<'_>, to_space: bool) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let x = inputs.required(0)?;
    let &[n, c, h, w] = &dims(x)[..] else {
        return Err(error(frame, format_args!("the input has shape {:?}, not four dimensions", dims(x))));
    };
    let b = usize::try_from(int(frame, "blocksize", 0)?).ok().filter(|&b| b > 0);
    let b = b.ok_or_else(|| error(frame, "blocksize is not positive"))?;
    let crd = match frame.named_attribute("mode").and_then(|a| Ok(a.string()?)) {
        Ok("CRD") => true,
        Ok("DCR") | Err(_) => false,
        Ok(other) => return Err(error(frame, format_args!("unknown mode `{other}`"))),
    };
    let too_large = || error(frame, "the result is too large");
    let area = b.checked_mul(b).ok_or_else(too_large)?;
    let (view, perm, out) = if to_space {
        if c % area != 0 {
            return Err(error(frame, format_args!("{c} channels are not a multiple of {b}x{b} blocks")));
        }
        let c = c / area;
        let out = [n, c, h.checked_mul(b).ok_or_else(too_large)?, w.checked_mul(b).ok_or_else(too_large)?];
        match crd {
            true => ([n, c, b, b, h, w], [0, 1, 4, 2, 5, 3], out),
            false => ([n, b, b, c, h, w], [0, 3, 4, 1, 5, 2], out),
        }
    } else {
        if h % b != 0 || w % b != 0 {
            return Err(error(frame, format_args!("{h}x{w} is not a multiple of {b}x{b} blocks")));
        }
        let out = [n, c.checked_mul(area).ok_or_else(too_large)?, h / b, w / b];
        let view = [n, c, h / b, b, w / b, b];
        (view, if crd { [0, 1, 3, 5, 2, 4] } else { [0, 3, 5, 1, 2, 4] }, out)
    };
    let (_, walk) = transposed(frame, &view, &perm)?;
    let result = take(frame, x, &out, None, || walk)?;
    frame.emplace_result(0, result)
}

fn expand(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let x = inputs.required(0)?;
    let requested = sizes(frame, "shape", &integers(frame, inputs.required(1)?)?)?;
    let dims = dims(x);
    let (out, strides) = broadcast(&[&dims, &requested])
        .ok_or_else(|| error(frame, format_args!("cannot expand {dims:?} to {requested:?}")))?;
    let result = take(frame, x, &out, None, || Walk::strided(&out, &strides[0]))?;
    frame.emplace_result(0, result)
}

fn tile(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let x = inputs.required(0)?;
    let dims = dims(x);
    let repeats = sizes(frame, "repeats", &integers(frame, inputs.required(1)?)?)?;
    if repeats.len() != dims.len() {
        return Err(error(frame, format_args!("{} repeats for {} dimensions", repeats.len(), dims.len())));
    }
    let out = dims
        .iter()
        .zip(&repeats)
        .map(|(&d, &r)| d.checked_mul(r))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| error(frame, format_args!("{dims:?} repeated {repeats:?} times is too large")))?;
    let strides = strides(&dims);
    let walk = || {
        let maps = out.iter().enumerate().map(|(k, &n)| (0..n).map(|i| Some(i % dims[k] * strides[k])).collect());
        Walk::new(maps.collect())
    };
    let result = take(frame, x, &out, None, walk)?;
    frame.emplace_result(0, result)
}

fn concat(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let all = inputs.all();
    let rank = dims(all.first().ok_or_else(|| error(frame, "no inputs"))?).len();
    let axis = axis(frame, int(frame, "axis", if opset(frame)? < 4 { 1 } else { i64::MAX })?, rank)?;
    let result = join(frame.host(), frame.kernel_name(), all, axis as i64, false)?;
    frame.emplace_result(0, result)
}

/// The walk of a slice: `ranges[k]` = (first index, step, count) along axis `k`.
fn slice_walk(dims: &[usize], ranges: &[(i64, i64, usize)]) -> Walk {
    let strides = strides(dims);
    let maps = ranges.iter().zip(&strides).map(|(&(start, step, count), &stride)| {
        (0..count as i64).map(|i| Some((start + i * step) as usize * stride)).collect()
    });
    Walk::new(maps.collect())
}

fn split(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let x = inputs.required(0)?;
    let dims = dims(x);
    let axis = axis(frame, int(frame, "axis", 0)?, dims.len())?;
    let count = frame.num_results();
    let parts = match (opset(frame)? < 13, inputs.optional(1)) {
        (true, _) => Some(ints(frame, "split", &[])?).filter(|split| !split.is_empty()),
        (false, Some(split)) => Some(integers(frame, split)?),
        (false, None) => None,
    };
    let parts = match parts {
        Some(parts) => sizes(frame, "split", &parts)?,
        None => {
            // Equal parts, the last smaller when they do not divide the axis (opset 18).
            let chunk = dims[axis].div_ceil(count.max(1));
            let last = dims[axis].checked_sub(chunk * count.saturating_sub(1));
            let last =
                last.ok_or_else(|| error(frame, format_args!("cannot split {} into {count} parts", dims[axis])))?;
            (0..count).map(|i| if i + 1 == count { last } else { chunk }).collect()
        }
    };
    if parts.len() != count || parts.iter().try_fold(0usize, |n, &p| n.checked_add(p)) != Some(dims[axis]) {
        return Err(error(frame, format_args!("cannot split {} into {parts:?} for {count} outputs", dims[axis])));
    }
    let mut start = 0;
    for (i, &part) in parts.iter().enumerate() {
        let ranges: Vec<(i64, i64, usize)> = dims
            .iter()
            .enumerate()
            .map(|(k, &d)| if k == axis { (start as i64, 1, part) } else { (0, 1, d) })
            .collect();
        let out: Vec<usize> = ranges.iter().map(|r| r.2).collect();
        let result = take(frame, x, &out, None, || slice_walk(&dims, &ranges))?;
        frame.emplace_result(i, result)?;
        start += part;
    }
    Ok(())
}

/// The (first index, step, count) of a slice of a dimension of `dim` from `start` to `end`
/// (negative ones count from the end; both clamped as numpy clamps them) by `step`.
fn slice_range(dim: usize, start: i64, end: i64, step: i64) -> (i64, i64, usize) {
    let dim = i128::from(dim as i64);
    let (start, end, step) = (i128::from(start), i128::from(end), i128::from(step));
    let (start, end) = (if start < 0 { start + dim } else { start }, if end < 0 { end + dim } else { end });
    let (start, count) = if step > 0 {
        let (start, end) = (start.clamp(0, dim), end.clamp(0, dim));
        (start, (end - start + step - 1).div_euclid(step))
    } else {
        let (start, end) = (start.clamp(-1, dim - 1), end.clamp(-1, dim - 1));
        (start, (start - end - step - 1).div_euclid(-step))
    };
    (start.max(0) as i64, step as i64, count.max(0) as usize)
}

fn slice(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let x = inputs.required(0)?;
    let dims = dims(x);
    let input = |i: usize| inputs.optional(i).map(|t| integers(frame, t)).transpose();
    let (starts, ends, axes, steps) = if opset(frame)? < 10 {
        let axes = ints(frame, "axes", &[])?;
        (ints(frame, "starts", &[])?, ints(frame, "ends", &[])?, Some(axes).filter(|a| !a.is_empty()), None)
    } else {
        (
            input(1)?.ok_or_else(|| error(frame, "it has no starts"))?,
            input(2)?.ok_or_else(|| error(frame, "it has no ends"))?,
            input(3)?,
            input(4)?,
        )
    };
    let axes = axes.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; starts.len()]);
    if ends.len() != starts.len() || axes.len() != starts.len() || steps.len() != starts.len() {
        return Err(error(frame, "starts, ends, axes and steps differ in length"));
    }
    let mut ranges: Vec<(i64, i64, usize)> = dims.iter().map(|&d| (0, 1, d)).collect();
    for (k, &a) in distinct_axes(frame, &axes, dims.len())?.iter().enumerate() {
        if steps[k] == 0 {
            return Err(error(frame, "a step is 0"));
        }
        ranges[a] = slice_range(dims[a], starts[k], ends[k], steps[k]);
    }
    let out: Vec<usize> = ranges.iter().map(|r| r.2).collect();
    let result = take(frame, x, &out, None, || slice_walk(&dims, &ranges))?;
    frame.emplace_result(0, result)
}

fn reverse_sequence(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let x = inputs.required(0)?;
    let dims = dims(x);
    let (time, batch) = (int(frame, "time_axis", 0)?, int(frame, "batch_axis", 1)?);
    if dims.len() < 2 || !matches!((time, batch), (0, 1) | (1, 0)) {
        return Err(error(frame, format_args!("time axis {time} and batch axis {batch} for a shape of {dims:?}")));
    }
    let (time, batch) = (time as usize, batch as usize);
    let lengths = integers(frame, inputs.required(1)?)?;
    if lengths.len() != dims[batch] || lengths.iter().any(|&l| !(0..=dims[time] as i64).contains(&l)) {
        return Err(error(frame, format_args!("sequence lengths {lengths:?} for a shape of {dims:?}")));
    }
    let (strides, dims) = (&strides(&dims), &dims);
    let lengths = &lengths;
    let sources = || {
        (0..x.num_elements()).map(move |flat| {
            let t = flat / strides[time] % dims[time];
            let length = lengths[flat / strides[batch] % dims[batch]] as usize;
            // Within a sequence's length, time runs backwards.
            Some(if t < length { flat - t * strides[time] + (length - 1 - t) * strides[time] } else { flat })
        })
    };
    let result = take(frame, x, dims, None, sources)?;
    frame.emplace_result(0, result)
}

pub(super) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("onnx.Shape", shape);
    registry.add_kernel("onnx.Size", size);
    register_view(registry, "Reshape", reshape);
    register_view(registry, "Flatten", flatten);
    register_view(registry, "Squeeze", squeeze);
    register_view(registry, "Unsqueeze", unsqueeze);
    registry.add_kernel("onnx.Transpose", transpose);
    registry.add_kernel("onnx.DepthToSpace", |frame: &mut KernelFrame<'_>| blocks(frame, true));
    registry.add_kernel("onnx.SpaceToDepth", |frame: &mut KernelFrame<'_>| blocks(frame, false));
    registry.add_kernel("onnx.Expand", expand);
    registry.add_kernel("onnx.Tile", tile);
    registry.add_kernel("onnx.Concat", concat);
    registry.add_kernel("onnx.Split", split);
    registry.add_kernel("onnx.Slice", slice);
    registry.add_kernel("onnx.ReverseSequence", reverse_sequence);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_clamp_as_numpy_does() {
        // x[1:1000] of 5, x[-2:] of 5, x[::-1] of 4, x[3:0:-2] of 5, x[-100:2:-1] of 5 (empty).
        assert_eq!(slice_range(5, 1, 1000, 1), (1, 1, 4));
        assert_eq!(slice_range(5, -2, i64::MAX, 1), (3, 1, 2));
        assert_eq!(slice_range(4, -1, i64::MIN, -1), (3, -1, 4));
        assert_eq!(slice_range(5, 3, 0, -2), (3, -2, 2));
        assert_eq!(slice_range(5, -100, 2, -1).2, 0);
        assert_eq!(slice_range(0, 0, -1, -1).2, 0);
        assert_eq!(slice_range(7, 0, 7, i64::MIN).2, 0);
        assert_eq!(slice_range(7, 6, 0, i64::MIN), (6, i64::MIN, 1));
    }

    #[test]
    fn reshapes_infer_and_keep_dimensions() {
        assert_eq!(reshape_dims(&[2, 3, 4], &[0, -1], false), Ok(vec![2, 12]));
        assert_eq!(reshape_dims(&[2, 3, 4], &[4, 0, -1], false), Ok(vec![4, 3, 2]));
        assert_eq!(reshape_dims(&[0, 3], &[3, 0], true), Ok(vec![3, 0]));
        // Without allowzero, the 0 copies the 3: nine elements from none.
        assert!(reshape_dims(&[0, 3], &[3, 0], false).is_err());
        assert!(reshape_dims(&[2, 3], &[-1, -1], false).is_err());
        assert!(reshape_dims(&[2, 3], &[0, -1, 0], false).is_err());
        assert!(reshape_dims(&[0, 3], &[0, -1], true).is_err());
        assert!(reshape_dims(&[2, 3], &[-2, -3], false).is_err());
        assert!(reshape_dims(&[2, 3], &[1 << 62, 1 << 62], false).is_err());
    }

    #[test]
    fn walks_read_strided_views() {
        // The transpose of a 2x3 matrix reads 0 3 1 4 2 5.
        let offsets: Vec<Option<usize>> = Walk::strided(&[3, 2], &[1, 3]).collect();
        assert_eq!(offsets, [0, 3, 1, 4, 2, 5].map(Some));
        assert_eq!(Walk::strided(&[], &[]).count(), 1);
        assert_eq!(Walk::strided(&[2, 0], &[1, 1]).count(), 0);
        let sliced: Vec<Option<usize>> = slice_walk(&[2, 4], &[(1, -1, 2), (3, -2, 2)]).collect();
        assert_eq!(sliced, [7, 5, 3, 1].map(Some));
    }
}
