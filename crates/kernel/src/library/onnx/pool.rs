//! Pooling over any number of spatial dimensions (`[N, C, D1, .., Dn]`): `MaxPool` (numbers of
//! every type, with the optional `Indices` output in row- or column-major `storage_order`),
//! `AveragePool` (`count_include_pad`), `LpPool`, their global forms over whole planes, and
//! `MaxUnpool`. Windows are [`conv`](super::conv)'s: `kernel_shape`, `strides`, `dilations`,
//! `pads`, `auto_pad` and `ceil_mode`. Padding never enters a maximum or a p-norm; an average
//! counts it only under `count_include_pad`, and then only the declared padding, not the room a
//! ceil-mode window reaches past it.

use super::conv::{Layout, Window};
use super::dispatch::{float, numeric};
use super::tensors::{count, error, filled, register_one, unsupported, wide, Inputs, Typed, Value};
use crate::dtype::DType;
use crate::library::nn::layout::strides;
use crate::library::nn::{int, ints, sizes};
use crate::tensor::DenseHostTensor;
use crate::{KernelError, KernelFrame, KernelRegistry, KernelSite};

pub(super) const OPERATORS: &[&str] =
    &["AveragePool", "GlobalAveragePool", "GlobalLpPool", "GlobalMaxPool", "LpPool", "MaxPool", "MaxUnpool"];

/// The windows of every output position of a plane: the in-plane offsets of the input elements
/// each reads (`offsets[starts[p]..starts[p + 1]]`), and how many of its taps fall inside the
/// declared padding or the input.
struct Taps {
    out: Vec<usize>,
    starts: Vec<usize>,
    offsets: Vec<usize>,
    declared: Vec<usize>,
}

impl Taps {
    fn new(window: &Window, spatial: &[usize], out: &[usize]) -> Result<Taps, String> {
        // Room for a window per output position first: the padding may make many.
        let positions = count(out)?;
        let no_memory = |_| format!("no memory for the windows of {positions} outputs");
        let (mut starts, mut declared) = (Vec::new(), Vec::new());
        starts.try_reserve_exact(positions + 1).map_err(no_memory)?;
        declared.try_reserve_exact(positions).map_err(no_memory)?;
        starts.push(0);
        let strides = strides(spatial);
        // Along each axis, for each output coordinate: the input offsets its taps read, and the
        // count of its taps inside the padded extent.
        let mut axes = Vec::with_capacity(out.len());
        for axis in 0..out.len() {
            let padded = spatial[axis] + window.begin[axis] + window.end[axis];
            let per_output: Vec<(Vec<usize>, usize)> = (0..out[axis])
                .map(|o| {
                    let taps = (0..window.kernel[axis]).map(|t| o * window.strides[axis] + t * window.dilations[axis]);
                    let declared = taps.clone().filter(|&p| p < padded).count();
                    let inside = taps
                        .filter_map(|p| p.checked_sub(window.begin[axis]).filter(|&i| i < spatial[axis]))
                        .map(|i| i * strides[axis])
                        .collect();
                    (inside, declared)
                })
                .collect();
            axes.push(per_output);
        }
        let per_window: usize =
            axes.iter().map(|a| a.iter().map(|(inside, _)| inside.len()).max().unwrap_or(0)).product();
        count(&[positions, per_window])?;
        let mut taps = Taps { out: out.to_vec(), starts, offsets: Vec::new(), declared };
        let mut index = vec![0; out.len()];
        for _ in 0..positions {
            let mut offsets = vec![0];
            let mut declared = 1;
            for (axis, &o) in index.iter().enumerate() {
                let (inside, count) = &axes[axis][o];
                offsets = offsets.iter().flat_map(|&base| inside.iter().map(move |&i| base + i)).collect();
                declared *= count;
            }
            taps.offsets.extend(offsets);
            taps.starts.push(taps.offsets.len());
            taps.declared.push(declared);
            for axis in (0..out.len()).rev() {
                index[axis] += 1;
                if index[axis] < out[axis] {
                    break;
                }
                index[axis] = 0;
            }
        }
        Ok(taps)
    }

    /// The window of one spanning a whole plane of `spatial`.
    fn global(spatial: &[usize]) -> Result<Taps, String> {
        let plane = count(spatial)?;
        Ok(Taps {
            out: vec![1; spatial.len()],
            starts: vec![0, plane],
            offsets: (0..plane).collect(),
            declared: vec![plane],
        })
    }

    fn positions(&self) -> usize {
        self.declared.len()
    }

    fn window(&self, p: usize) -> &[usize] {
        &self.offsets[self.starts[p]..self.starts[p + 1]]
    }
}

/// `x` (`[N, C, spatial..]`) pooled: `reduce` makes each output element from a plane of the input
/// and a window (the in-plane offsets it reads, and its count of declared taps).
fn pool<T: Value, R>(
    x: &Typed<T>,
    taps: &Taps,
    mut reduce: impl FnMut(&[T], &[usize], usize) -> R,
) -> Result<(Vec<usize>, Vec<R>), String> {
    let plane: usize = x.dims[2..].iter().product();
    let planes = x.dims[0] * x.dims[1];
    let mut values = Vec::new();
    let total = count(&[planes, taps.positions()])?;
    values.try_reserve_exact(total).map_err(|_| format!("no memory for {total} elements"))?;
    for p in 0..planes {
        let input = &x.values[p * plane..(p + 1) * plane];
        values.extend((0..taps.positions()).map(|w| reduce(input, taps.window(w), taps.declared[w])));
    }
    let mut dims = x.dims[..2].to_vec();
    dims.extend(&taps.out);
    Ok((dims, values))
}

/// The first largest element of a window and its in-plane offset (`None` for an empty window).
fn maximum<T: Value>(input: &[T], window: &[usize]) -> Option<(T, usize)> {
    let mut best: Option<(T, usize)> = None;
    for &o in window {
        if best.is_none_or(|(b, _)| input[o] > b) {
            best = Some((input[o], o));
        }
    }
    best
}

/// An in-plane row-major offset as a column-major one (the first spatial axis fastest).
fn column_major(offset: usize, spatial: &[usize]) -> usize {
    let (mut rest, mut column, mut step) = (offset, 0, 1);
    let mut coordinates = vec![0; spatial.len()];
    for axis in (0..spatial.len()).rev() {
        coordinates[axis] = rest % spatial[axis];
        rest /= spatial[axis];
    }
    for (c, size) in coordinates.iter().zip(spatial) {
        column += c * step;
        step *= size;
    }
    column
}

/// The input, which must be `[N, C, spatial..]` with `rank` spatial dimensions (any when `None`).
fn checked_input(site: &KernelSite<'_>, x: &DenseHostTensor, rank: Option<usize>) -> Result<Vec<usize>, KernelError> {
    let dims = super::tensors::dims(x);
    if dims.len() < 3 || rank.is_some_and(|r| r + 2 != dims.len()) {
        return Err(error(site, format_args!("X {dims:?} is not [N, C, spatial..] for a window of rank {rank:?}")));
    }
    Ok(dims)
}

/// The windows of a pooling node over `x`: its `kernel_shape`, `strides`, `dilations`, `pads`,
/// `auto_pad` and `ceil_mode`.
fn taps(site: &KernelSite<'_>, x: &DenseHostTensor) -> Result<Taps, KernelError> {
    let kernel = sizes(site, "kernel_shape", &ints(site, "kernel_shape", &[])?)?;
    if kernel.is_empty() {
        return Err(error(site, "kernel_shape is missing"));
    }
    let dims = checked_input(site, x, Some(kernel.len()))?;
    let ceil = int(site, "ceil_mode", 0)? != 0;
    let (window, out) =
        Layout::read(site, kernel.len())?.resolve(&kernel, &dims[2..], ceil).map_err(|e| error(site, e))?;
    Taps::new(&window, &dims[2..], &out).map_err(|e| error(site, e))
}

/// The windows of a pooling node over `x`, or of a global one.
fn windows(site: &KernelSite<'_>, x: &DenseHostTensor, global: bool) -> Result<Taps, KernelError> {
    if global {
        Taps::global(&checked_input(site, x, None)?[2..]).map_err(|e| error(site, e))
    } else {
        taps(site, x)
    }
}

fn max_pool(frame: &mut KernelFrame<'_>, global: bool) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let x = inputs.required(0)?;
    let dtype = x.dtype();
    let taps = windows(frame, x, global)?;
    let column = int(frame, "storage_order", 0)? != 0;
    let spatial = checked_input(frame, x, None)?[2..].to_vec();
    let plane: usize = spatial.iter().product();
    let (y, indices) = numeric!(dtype, T => {
        let x = Typed::<T>::read(x);
        let mut at = 0usize;
        let (dims, found) = pool(&x, &taps, |input, window, _| {
            let best = maximum(input, window);
            let p = at / taps.positions();
            at += 1;
            best.map(|(v, o)| (v, (p * plane + if column { column_major(o, &spatial) } else { o }) as i64))
        }).map_err(|e| error(frame, e))?;
        let values = found.iter().map(|f| f.map_or(T::from_f64(0.0), |(v, _)| v)).collect();
        let indices = found.iter().map(|f| f.map_or(-1, |(_, i)| i)).collect();
        (Typed { dims: dims.clone(), values }.into_tensor(frame, dtype)?, Typed::<i64> { dims, values: indices })
    }, return Err(unsupported(frame, dtype)));
    frame.emplace_result(0, y)?;
    if frame.num_results() > 1 {
        let indices = indices.into_tensor(frame, DType::I64)?;
        frame.emplace_result(1, indices)?;
    }
    Ok(())
}

/// Average and p-norm pooling, on floats: `reduce` gets a window's values and declared taps.
fn float_pool(
    frame: &KernelFrame<'_>,
    inputs: &Inputs,
    global: bool,
    reduce: impl Fn(&mut dyn Iterator<Item = f64>, usize) -> f64,
) -> Result<DenseHostTensor, KernelError> {
    let x = inputs.required(0)?;
    let dtype = x.dtype();
    let taps = windows(frame, x, global)?;
    float!(dtype, T => {
        let x = Typed::<T>::read(x);
        let (dims, values) = pool(&x, &taps, |input, window, declared| {
            T::from_f64(reduce(&mut window.iter().map(|&o| input[o].to_f64()), declared))
        }).map_err(|e| error(frame, e))?;
        Typed { dims, values }.into_tensor(frame, dtype)
    }, Err(unsupported(frame, dtype)))
}

/// The p-norm of `values`.
fn lp_norm(values: &mut dyn Iterator<Item = f64>, p: f64) -> f64 {
    if p == 2.0 {
        return values.map(|v| v * v).sum::<f64>().sqrt();
    }
    values.map(|v| v.abs().powf(p)).sum::<f64>().powf(1.0 / p)
}

fn p(site: &KernelSite<'_>) -> Result<f64, KernelError> {
    // `p` is an int from opset 11 (2 by default); a float before.
    match site.named_attribute("p") {
        Ok(attribute) => match attribute.scalar::<i64>() {
            Ok(p) => Ok(p as f64),
            Err(_) => Ok(f64::from(attribute.scalar::<f32>()?)),
        },
        Err(_) => Ok(2.0),
    }
}

/// MaxUnpool: each element of `x` at the flat offset its index gives in the unpooled tensor of
/// the inferred shape, that tensor then placed at the start of `output_shape` when given (as
/// ONNX's reference does).
fn max_unpool(frame: &KernelFrame<'_>, inputs: &Inputs) -> Result<DenseHostTensor, KernelError> {
    let (x, indices) = (inputs.required(0)?, inputs.required(1)?);
    let dtype = x.dtype();
    let kernel = sizes(frame, "kernel_shape", &ints(frame, "kernel_shape", &[])?)?;
    let dims = checked_input(frame, x, Some(kernel.len()))?;
    let rank = kernel.len();
    let layout = Layout::read(frame, rank)?;
    let steps = sizes(frame, "strides", &layout.strides)?;
    let pads = sizes(frame, "pads", &layout.pads)?;
    if steps.len() != rank || pads.len() != 2 * rank {
        return Err(error(frame, format_args!("strides {steps:?} and pads {pads:?} do not fit {rank} dimensions")));
    }
    let mut inferred = dims[..2].to_vec();
    for axis in 0..rank {
        let size = (dims[axis + 2].max(1) - 1)
            .checked_mul(steps[axis])
            .and_then(|s| s.checked_add(kernel[axis]))
            .and_then(|s| s.checked_sub(pads[axis] + pads[axis + rank]))
            .ok_or_else(|| error(frame, format_args!("kernel_shape {kernel:?}, strides and pads give no output")))?;
        inferred.push(size);
    }
    let out = match inputs.optional(2) {
        Some(shape) => {
            let shape: Vec<i64> = wide(frame, shape)?.values.iter().map(|&v| v as i64).collect();
            let shape = sizes(frame, "output_shape", &shape)?;
            if shape.len() != inferred.len() {
                return Err(error(frame, format_args!("output_shape {shape:?} does not fit X {dims:?}")));
            }
            shape
        }
        None => inferred.clone(),
    };
    let total = count(&inferred).map_err(|e| error(frame, e))?;
    let size = count(&out).map_err(|e| error(frame, e))?;
    let positions = wide(frame, indices)?;
    if positions.dims != dims {
        return Err(error(frame, format_args!("I {:?} is not the shape of X {dims:?}", positions.dims)));
    }
    numeric!(dtype, T => {
        let x = Typed::<T>::read(x);
        let mut unpooled = filled(total, T::from_f64(0.0)).map_err(|e| error(frame, e))?;
        for (&value, &at) in x.values.iter().zip(&positions.values) {
            let at = usize::try_from(at as i64).ok().filter(|&at| at < total)
                .ok_or_else(|| error(frame, format_args!("index {at} is outside an output of {inferred:?}")))?;
            unpooled[at] = value;
        }
        let mut values = filled(size, T::from_f64(0.0)).map_err(|e| error(frame, e))?;
        let (from, to) = (strides(&inferred), strides(&out));
        for (i, value) in unpooled.into_iter().enumerate() {
            let mut target = Some(0);
            for axis in 0..out.len() {
                let c = i / from[axis] % inferred[axis];
                target = target.filter(|_| c < out[axis]).map(|t| t + c * to[axis]);
            }
            if let Some(t) = target {
                values[t] = value;
            }
        }
        Typed { dims: out, values }.into_tensor(frame, dtype)
    }, Err(unsupported(frame, dtype)))
}

pub(super) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("onnx.MaxPool", |frame: &mut KernelFrame<'_>| max_pool(frame, false));
    registry.add_kernel("onnx.GlobalMaxPool", |frame: &mut KernelFrame<'_>| max_pool(frame, true));
    register_one(registry, "AveragePool", |frame, inputs| {
        let include = int(frame, "count_include_pad", 0)? != 0;
        float_pool(frame, inputs, false, |values, declared| {
            let (sum, inside) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
            sum / if include { declared } else { inside } as f64
        })
    });
    register_one(registry, "GlobalAveragePool", |frame, inputs| {
        float_pool(frame, inputs, true, |values, declared| values.sum::<f64>() / declared as f64)
    });
    register_one(registry, "LpPool", |frame, inputs| {
        let p = p(frame)?;
        float_pool(frame, inputs, false, |values, _| lp_norm(values, p))
    });
    register_one(registry, "GlobalLpPool", |frame, inputs| {
        let p = p(frame)?;
        float_pool(frame, inputs, true, |values, _| lp_norm(values, p))
    });
    register_one(registry, "MaxUnpool", max_unpool);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_skip_padding_and_count_declared_taps() {
        // A 2-tap window at stride 2 over 3 elements in ceil mode: the last window reads one
        // element and has one declared tap (the room past the input is not padding).
        let layout = Layout { strides: vec![2], dilations: vec![1], pads: vec![0, 0], auto_pad: "NOTSET" };
        let (window, out) = layout.resolve(&[2], &[3], true).unwrap();
        let taps = Taps::new(&window, &[3], &out).unwrap();
        assert_eq!((taps.window(0), taps.window(1)), (&[0, 1][..], &[2][..]));
        assert_eq!(taps.declared, [2, 1]);
        // 2-D, padded by one before each axis: the first window reads only the first element.
        let layout = Layout { strides: vec![1, 1], dilations: vec![1, 1], pads: vec![1, 1, 0, 0], auto_pad: "NOTSET" };
        let (window, out) = layout.resolve(&[2, 2], &[2, 2], false).unwrap();
        let taps = Taps::new(&window, &[2, 2], &out).unwrap();
        assert_eq!(out, [2, 2]);
        assert_eq!(taps.window(0), [0]);
        assert_eq!(taps.window(3), [0, 1, 2, 3]);
        assert_eq!(taps.declared, [4, 4, 4, 4]);
        let x = Typed { dims: vec![1, 1, 2, 2], values: vec![1.0f32, 4.0, 3.0, 2.0] };
        let (dims, best) = pool(&x, &taps, |input, window, _| maximum(input, window)).unwrap();
        assert_eq!(dims, [1, 1, 2, 2]);
        assert_eq!(best, [Some((1.0, 0)), Some((4.0, 1)), Some((3.0, 2)), Some((4.0, 1))]);
    }

    #[test]
    fn indices_in_column_major_order_and_norms() {
        // [2, 3]: the element at row 1, column 2 (row-major 5) is column-major 1 + 2 * 2 = 5;
        // row 0, column 1 (row-major 1) is 2.
        assert_eq!(column_major(5, &[2, 3]), 5);
        assert_eq!(column_major(1, &[2, 3]), 2);
        assert_eq!(column_major(3, &[2, 3]), 1);
        assert_eq!(lp_norm(&mut [3.0, -4.0].into_iter(), 2.0), 5.0);
        assert_eq!(lp_norm(&mut [1.0, -2.0].into_iter(), 1.0), 3.0);
    }
}
