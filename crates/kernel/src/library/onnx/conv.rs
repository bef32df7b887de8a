//! Convolutions over any number of spatial dimensions (`[N, C, D1, .., Dn]` inputs): `Conv` and
//! `ConvTranspose` on floats, `ConvInteger` and `QLinearConv` on 8-bit integers less their zero
//! points. Windows take `strides`, `dilations`, `pads` and `auto_pad` (resolved from the input's
//! shape at run time), and `group`; `kernel_shape` is the filter's when not given. A convolution
//! is, per image and group, an im2col matrix multiplied by the filters ([`Ring::gemm`]); a
//! transposed one multiplies the transposed filters by the image and adds the columns back into
//! the output (col2im).

use super::dispatch::{float, numeric};
use super::linalg::Ring;
use super::quantize::{offset_operand, requantized};
use super::tensors::{
    count, dims, error, filled, has_attribute, integers, register_one, sizes, string, unsupported, wide, Inputs, Typed,
};
use crate::dtype::DType;
use crate::library::nn::gemm::{packed_gemm, Matrix};
use crate::library::nn::layout::strides;
use crate::library::nn::shared_floats;
use crate::library::nn::split::compute;
use crate::library::nn::{int, ints};
use crate::tensor::DenseHostTensor;
use crate::{KernelError, KernelFrame, KernelRegistry, KernelSite};

pub(super) const OPERATORS: &[&str] = &["Col2Im", "Conv", "ConvInteger", "ConvTranspose", "QLinearConv"];

/// A window sliding over the spatial dimensions: its taps, steps, the spaces between its taps,
/// and the padding before and after each dimension.
#[derive(Debug)]
pub(super) struct Window {
    pub kernel: Vec<usize>,
    pub strides: Vec<usize>,
    pub dilations: Vec<usize>,
    pub begin: Vec<usize>,
    pub end: Vec<usize>,
}

/// A window's attributes as a node gives them, before the input's shape resolves them.
pub(super) struct Layout<'a> {
    pub strides: Vec<i64>,
    pub dilations: Vec<i64>,
    pub pads: Vec<i64>,
    pub auto_pad: &'a str,
}

impl<'a> Layout<'a> {
    /// `strides`, `dilations`, `pads` and `auto_pad` for `rank` spatial dimensions (ONNX's
    /// defaults: 1, 1, 0, NOTSET).
    pub(super) fn read(site: &KernelSite<'a>, rank: usize) -> Result<Layout<'a>, KernelError> {
        Ok(Layout {
            strides: ints(site, "strides", &vec![1; rank])?,
            dilations: ints(site, "dilations", &vec![1; rank])?,
            pads: ints(site, "pads", &vec![0; 2 * rank])?,
            auto_pad: string(site, "auto_pad", "NOTSET")?,
        })
    }

    /// The window of `kernel` over an input of `spatial` dimensions and the output's spatial
    /// dimensions; `ceil` rounds a partial last window in (dropping one that would start in the
    /// end padding).
    pub(super) fn resolve(
        &self,
        kernel: &[usize],
        spatial: &[usize],
        ceil: bool,
    ) -> Result<(Window, Vec<usize>), String> {
        let rank = kernel.len();
        let (strides, dilations) = self.steps(rank)?;
        let pads = match self.pads.iter().map(|&p| usize::try_from(p).ok()).collect::<Option<Vec<_>>>() {
            Some(pads) if pads.len() == 2 * rank => pads,
            _ => return Err(format!("pads {:?} must be {} numbers, none negative", self.pads, 2 * rank)),
        };
        if spatial.len() != rank || kernel.contains(&0) {
            return Err(format!("a window of {kernel:?} does not slide over {spatial:?}"));
        }
        let mut window =
            Window { kernel: kernel.to_vec(), strides, dilations, begin: vec![0; rank], end: vec![0; rank] };
        let mut out = Vec::with_capacity(rank);
        for axis in 0..rank {
            let (size, stride) = (spatial[axis], window.strides[axis]);
            let extent = extent(kernel[axis], window.dilations[axis]).ok_or("the window is too large")?;
            let (begin, end) = match self.auto_pad {
                "SAME_UPPER" | "SAME_LOWER" => {
                    let total = (size.div_ceil(stride).max(1) - 1)
                        .checked_mul(stride)
                        .and_then(|s| s.checked_add(extent))
                        .ok_or("the window is too large")?
                        .saturating_sub(size);
                    let small = total / 2;
                    if self.auto_pad == "SAME_UPPER" {
                        (small, total - small)
                    } else {
                        (total - small, small)
                    }
                }
                "VALID" => (0, 0),
                "NOTSET" | "" => (pads[axis], pads[axis + rank]),
                other => return Err(format!("auto_pad `{other}` is not an ONNX padding")),
            };
            let padded = size.checked_add(begin).and_then(|s| s.checked_add(end)).ok_or("the padding is too large")?;
            let Some(room) = padded.checked_sub(extent) else {
                return Err(format!(
                    "a window of {kernel:?} (dilations {:?}) does not fit {spatial:?}",
                    window.dilations
                ));
            };
            let mut count = if ceil { room.div_ceil(stride) } else { room / stride } + 1;
            if ceil && (count - 1) * stride >= size + begin {
                count -= 1;
            }
            (window.begin[axis], window.end[axis]) = (begin, end);
            out.push(count);
        }
        Ok((window, out))
    }

    /// The strides and dilations, which must be `rank` positive numbers.
    fn steps(&self, rank: usize) -> Result<(Vec<usize>, Vec<usize>), String> {
        let positive = |name: &str, values: &[i64]| -> Result<Vec<usize>, String> {
            match values.iter().map(|&v| usize::try_from(v).ok().filter(|&v| v > 0)).collect::<Option<Vec<_>>>() {
                Some(values) if values.len() == rank => Ok(values),
                _ => Err(format!("{name} {values:?} must be {rank} positive numbers")),
            }
        };
        Ok((positive("strides", &self.strides)?, positive("dilations", &self.dilations)?))
    }
}

/// The extent of `kernel` taps `dilation` apart, `None` when it overflows (or has no taps).
fn extent(kernel: usize, dilation: usize) -> Option<usize> {
    dilation.checked_mul(kernel.checked_sub(1)?)?.checked_add(1)
}

/// What [`for_each_row`] calls with each row: its first flat position, its base offset and the
/// last axis's map.
type Row<'a> = dyn FnMut(usize, Option<usize>, &[Option<usize>]) + 'a;

/// For each row of the grid whose dimensions are the lengths of `maps` (its last axis), in
/// row-major order: the row's first flat position, the sum of the offsets `maps` gives its other
/// coordinates (`None` when one maps to nothing: padding) and the last axis's map, whose offsets
/// add to that sum. The loop along a row is the caller's, so that it is compiled inline rather
/// than called per element. A grid of no axes is one row of one element at offset 0.
fn for_each_row(maps: &[Vec<Option<usize>>], f: &mut Row<'_>) {
    fn visit(
        maps: &[Vec<Option<usize>>],
        last: &[Option<usize>],
        base: Option<usize>,
        flat: &mut usize,
        f: &mut Row<'_>,
    ) {
        match maps.split_first() {
            None => {
                f(*flat, base, last);
                *flat += last.len();
            }
            Some((map, rest)) => {
                for offset in map {
                    visit(rest, last, base.zip(*offset).map(|(b, o)| b + o), flat, f);
                }
            }
        }
    }
    let mut flat = 0;
    match maps.split_last() {
        Some((last, rest)) => visit(rest, last, Some(0), &mut flat, f),
        None => f(0, Some(0), &[Some(0)]),
    }
}

/// The multi-indices of `dims` in row-major order.
fn indices(dims: &[usize]) -> impl Iterator<Item = Vec<usize>> + '_ {
    let total: usize = dims.iter().product();
    (0..total).map(move |mut flat| {
        let mut index = vec![0; dims.len()];
        for axis in (0..dims.len()).rev() {
            index[axis] = flat % dims[axis];
            flat /= dims[axis];
        }
        index
    })
}

/// A convolution's shapes: `x` `[N, C, spatial..]` and `w` `[M, C / group, kernel..]`.
struct Shapes {
    n: usize,
    c: usize,
    m: usize,
    spatial: Vec<usize>,
    kernel: Vec<usize>,
}

fn shapes(x: &[usize], w: &[usize], group: usize, transposed: bool) -> Result<Shapes, String> {
    let fits = x.len() >= 3 && w.len() == x.len() && group > 0 && x[1].is_multiple_of(group) && group <= x[1].max(1);
    let (m, filter_channels) =
        if transposed { (w.get(1).map(|m| m * group), x.get(1)) } else { (w.first().copied(), w.get(1)) };
    let channels_fit = if transposed {
        filter_channels == w.first()
    } else {
        filter_channels.zip(x.get(1)).is_some_and(|(&cg, &c)| cg * group == c)
    };
    match m {
        Some(m) if fits && channels_fit && m % group == 0 => {
            Ok(Shapes { n: x[0], c: x[1], m, spatial: x[2..].to_vec(), kernel: w[2..].to_vec() })
        }
        _ => Err(format!("X {x:?} and W {w:?} do not convolve in {group} groups")),
    }
}

/// The filters' spatial dimensions, checked against `kernel_shape` when the node gives it.
fn kernel_shape(site: &KernelSite<'_>, kernel: &[usize]) -> Result<(), KernelError> {
    let given = ints(site, "kernel_shape", &[])?;
    if !given.is_empty() && !given.iter().map(|&k| usize::try_from(k).ok()).eq(kernel.iter().map(|&k| Some(k))) {
        return Err(error(site, format_args!("kernel_shape {given:?} is not the filters' {kernel:?}")));
    }
    Ok(())
}

fn group(site: &KernelSite<'_>) -> Result<usize, KernelError> {
    usize::try_from(int(site, "group", 1)?).map_err(|_| error(site, "group must not be negative"))
}

/// `x` convolved with `w` in `group` groups over `window`, into `out` spatial dimensions.
pub(super) fn convolve<T: Ring>(
    x: &Typed<T>,
    w: &Typed<T>,
    group: usize,
    window: &Window,
    out: &[usize],
) -> Result<Typed<T>, String> {
    let shapes = shapes(&x.dims, &w.dims, group, false)?;
    let (cg, mg) = (shapes.c / group, shapes.m / group);
    let (plane, taps, image) = (count(out)?, count(&shapes.kernel)?, count(&shapes.spatial)?);
    let depth = cg * taps;
    let mut dims = vec![shapes.n, shapes.m];
    dims.extend(out);
    let mut values = filled(count(&dims)?, T::default())?;
    if values.is_empty() || depth == 0 {
        return Ok(Typed { dims, values });
    }
    let mut columns = filled(count(&[depth, plane])?, T::default())?;
    // The input offset of each tap's coordinate along each axis, for each output coordinate.
    let strides = strides(&shapes.spatial);
    let maps = |tap: &[usize]| -> Vec<Vec<Option<usize>>> {
        (0..out.len())
            .map(|axis| {
                (0..out[axis])
                    .map(|o| {
                        (o * window.strides[axis] + tap[axis] * window.dilations[axis])
                            .checked_sub(window.begin[axis])
                            .filter(|&i| i < shapes.spatial[axis])
                            .map(|i| i * strides[axis])
                    })
                    .collect()
            })
            .collect()
    };
    let tap_maps: Vec<Vec<Vec<Option<usize>>>> = indices(&shapes.kernel).map(|tap| maps(&tap)).collect();
    for n in 0..shapes.n {
        for g in 0..group {
            let source = &x.values[(n * shapes.c + g * cg) * image..];
            // im2col: row (channel, tap) holds what the tap sees at each output position.
            for channel in 0..cg {
                let input = &source[channel * image..(channel + 1) * image];
                for (t, maps) in tap_maps.iter().enumerate() {
                    let row = &mut columns[(channel * taps + t) * plane..][..plane];
                    for_each_row(maps, &mut |first, base, last| {
                        for (value, offset) in row[first..first + last.len()].iter_mut().zip(last) {
                            *value = base.zip(*offset).map_or(T::default(), |(b, o)| input[b + o]);
                        }
                    });
                }
            }
            let filters = Matrix { offset: g * mg * depth, rows: depth, columns: 1 };
            let result = &mut values[(n * shapes.m + g * mg) * plane..];
            T::gemm(
                (mg, depth, plane),
                (&w.values, filters),
                (&columns, Matrix { offset: 0, rows: plane, columns: 1 }),
                result,
                plane,
                false,
            );
        }
    }
    Ok(Typed { dims, values })
}

/// Adds `bias[m]` to every element of output channel `m` of `y` (`[N, M, ..]`).
pub(super) fn add_bias<T: Ring>(y: &mut Typed<T>, bias: &[T]) -> Result<(), String> {
    let m = y.dims[1];
    if bias.len() != m {
        return Err(format!("B holds {} values for {m} output channels", bias.len()));
    }
    let plane: usize = y.dims[2..].iter().product();
    for (i, chunk) in y.values.chunks_mut(plane.max(1)).enumerate() {
        let b = bias[i % m];
        chunk.iter_mut().for_each(|v| *v = v.add(b));
    }
    Ok(())
}

/// The output's spatial dimensions and the padding before each of a transposed convolution
/// (the padding may be negative when `output_shape` asks for more than the natural size).
struct Transposed {
    out: Vec<usize>,
    begin: Vec<i64>,
    strides: Vec<usize>,
    dilations: Vec<usize>,
}

fn transposed_layout(site: &KernelSite<'_>, spatial: &[usize], kernel: &[usize]) -> Result<Transposed, KernelError> {
    let rank = spatial.len();
    let layout = Layout::read(site, rank)?;
    let output_padding = ints(site, "output_padding", &vec![0; rank])?;
    let output_shape = ints(site, "output_shape", &[])?;
    let pads_given = has_attribute(site, "pads");
    transposed_sizes(&layout, pads_given, &output_padding, &output_shape, spatial, kernel).map_err(|e| error(site, e))
}

/// The reference's rules: explicit pads size the output unless `output_shape` gives it; with
/// SAME the output is `input * stride` (or `output_shape`) and the padding the difference, the
/// odd one at the end (SAME_UPPER) or the start.
fn transposed_sizes(
    layout: &Layout<'_>,
    pads_given: bool,
    output_padding: &[i64],
    output_shape: &[i64],
    spatial: &[usize],
    kernel: &[usize],
) -> Result<Transposed, String> {
    let rank = spatial.len();
    let (strides, dilations) = layout.steps(rank)?;
    let pads = &layout.pads;
    if pads.len() != 2 * rank || output_padding.len() != rank {
        return Err(format!("pads {pads:?} or output_padding {output_padding:?} do not fit {rank} dimensions"));
    }
    let shape = match output_shape.len() {
        0 => None,
        n if n == rank => Some(output_shape),
        n if n == rank + 2 => Some(&output_shape[2..]),
        _ => return Err(format!("output_shape {output_shape:?} does not fit {rank} dimensions")),
    };
    let same = matches!(layout.auto_pad, "SAME_UPPER" | "SAME_LOWER");
    let too_large = || "the output is too large".to_owned();
    let mut out = Vec::with_capacity(rank);
    let mut begin = Vec::with_capacity(rank);
    for axis in 0..rank {
        let extent = extent(kernel[axis], dilations[axis]).ok_or_else(too_large)?;
        let extent = i64::try_from(extent).map_err(|_| too_large())?;
        let (size, stride) = (i64::try_from(spatial[axis]).map_err(|_| too_large())?, strides[axis] as i64);
        let natural = (size.max(1) - 1)
            .checked_mul(stride)
            .and_then(|n| n.checked_add(output_padding[axis]))
            .and_then(|n| n.checked_add(extent))
            .ok_or_else(too_large)?;
        let (size_out, start) = if same && !pads_given {
            let size_out = match shape {
                Some(shape) => shape[axis],
                None => size.checked_mul(stride).ok_or_else(too_large)?,
            };
            let total = natural - size_out;
            let start = if layout.auto_pad == "SAME_UPPER" { total.div_euclid(2) } else { total - total.div_euclid(2) };
            (size_out, start)
        } else {
            let (start, end) = (pads[axis], pads[axis + rank]);
            match shape {
                Some(shape) => (shape[axis], start),
                None => (natural - start - end, start),
            }
        };
        let size_out = usize::try_from(size_out)
            .map_err(|_| format!("the output would have {size_out} elements along axis {axis}"))?;
        out.push(size_out);
        begin.push(start);
    }
    Ok(Transposed { out, begin, strides, dilations })
}

/// `x` (`[N, C, spatial..]`) convolved transposed with `w` (`[C, M / group, kernel..]`).
fn convolve_transposed<T: Ring>(
    x: &Typed<T>,
    w: &Typed<T>,
    group: usize,
    layout: &Transposed,
) -> Result<Typed<T>, String> {
    let shapes = shapes(&x.dims, &w.dims, group, true)?;
    let (cg, mg) = (shapes.c / group, shapes.m / group);
    let (image, taps, plane) = (count(&shapes.spatial)?, count(&shapes.kernel)?, count(&layout.out)?);
    let rows = mg * taps;
    let mut dims = vec![shapes.n, shapes.m];
    dims.extend(&layout.out);
    let mut values = filled(count(&dims)?, T::default())?;
    if values.is_empty() || rows == 0 || cg == 0 {
        return Ok(Typed { dims, values });
    }
    let mut columns = filled(count(&[rows, image])?, T::default())?;
    let tap_maps = scatter_maps(&shapes.kernel, &shapes.spatial, layout);
    for n in 0..shapes.n {
        for g in 0..group {
            // columns [mg * taps, image] = W_g^T [mg * taps, cg] x X_g [cg, image].
            let filters = Matrix { offset: g * cg * rows, rows: 1, columns: rows };
            let images = Matrix { offset: (n * shapes.c + g * cg) * image, rows: image, columns: 1 };
            T::gemm((rows, cg, image), (&w.values, filters), (&x.values, images), &mut columns, image, false);
            let output = &mut values[(n * shapes.m + g * mg) * plane..][..mg * plane];
            add_columns(&columns, &tap_maps, output);
        }
    }
    Ok(Typed { dims, values })
}

/// For each tap of `kernel`, along each axis, the output offset it sends each of the `spatial`
/// coordinates to (`None` outside the output): a transposed convolution's scatter (col2im).
fn scatter_maps(kernel: &[usize], spatial: &[usize], layout: &Transposed) -> Vec<Vec<Vec<Option<usize>>>> {
    let strides = strides(&layout.out);
    indices(kernel)
        .map(|tap| {
            (0..tap.len())
                .map(|axis| {
                    (0..spatial[axis])
                        .map(|i| {
                            let o = (i * layout.strides[axis] + tap[axis] * layout.dilations[axis]) as i64
                                - layout.begin[axis];
                            usize::try_from(o).ok().filter(|&o| o < layout.out[axis]).map(|o| o * strides[axis])
                        })
                        .collect()
                })
                .collect()
        })
        .collect()
}

/// col2im: adds row `channel * taps + t` of `columns` (`[channels * taps, image]`) into channel
/// `channel` of `output` (`[channels, plane]`) where tap `t`'s maps send each element.
fn add_columns<T: Ring>(columns: &[T], tap_maps: &[Vec<Vec<Option<usize>>>], output: &mut [T]) {
    let taps = tap_maps.len();
    let image: usize = tap_maps.first().map_or(0, |maps| maps.iter().map(Vec::len).product());
    if taps == 0 || image == 0 {
        return;
    }
    let channels = columns.len() / (taps * image);
    let plane = output.len() / channels.max(1);
    for (channel, output) in output.chunks_exact_mut(plane.max(1)).enumerate().take(channels) {
        for (t, maps) in tap_maps.iter().enumerate() {
            let row = &columns[(channel * taps + t) * image..][..image];
            for_each_row(maps, &mut |first, base, last| {
                let Some(base) = base else { return };
                for (&value, offset) in row[first..first + last.len()].iter().zip(last) {
                    if let Some(o) = offset {
                        output[base + o] = output[base + o].add(value);
                    }
                }
            });
        }
    }
}

/// Conv and ConvTranspose on floats, with an optional bias.
fn float_conv(frame: &KernelFrame<'_>, inputs: &Inputs, transposed: bool) -> Result<DenseHostTensor, KernelError> {
    let (x, w, b) = (inputs.required(0)?, inputs.required(1)?, inputs.optional(2));
    let dtype = x.dtype();
    if let Some(other) = [Some(w), b].into_iter().flatten().find(|t| t.dtype() != dtype) {
        return Err(error(frame, format_args!("inputs of {dtype:?} and {:?} elements", other.dtype())));
    }
    let group = group(frame)?;
    float!(dtype, T => {
        let (x, w) = (Typed::<T>::read(x), Typed::<T>::read(w));
        let shapes = shapes(&x.dims, &w.dims, group, transposed).map_err(|e| error(frame, e))?;
        kernel_shape(frame, &shapes.kernel)?;
        let mut y = if transposed {
            let layout = transposed_layout(frame, &shapes.spatial, &shapes.kernel)?;
            convolve_transposed(&x, &w, group, &layout)
        } else {
            let (window, out) = Layout::read(frame, shapes.spatial.len())?
                .resolve(&shapes.kernel, &shapes.spatial, false)
                .map_err(|e| error(frame, e))?;
            convolve(&x, &w, group, &window, &out)
        }.map_err(|e| error(frame, e))?;
        if let Some(b) = b {
            add_bias(&mut y, &Typed::<T>::read(b).values).map_err(|e| error(frame, e))?;
        }
        y.into_tensor(frame, dtype)
    }, Err(unsupported(frame, dtype)))
}

/// ConvTranspose: on f32s, its output channels dealt to tasks on the context's queue (see
/// [`conv_transpose_f32`]); other types, and what that path leaves out, on the calling thread.
fn conv_transpose(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    if conv_transpose_f32(frame, &inputs)? {
        return Ok(());
    }
    let result = float_conv(frame, &inputs, true)?;
    frame.emplace_result(0, result)
}

/// A transposed convolution is, per image and group, the transposed filters times the image
/// (`[mg * taps, cg] x [cg, image]`) added back into the output (col2im); each output channel
/// takes its own rows of that product, so the channels are split over tasks, each multiplying
/// and scattering its own (a U-Net's upsampling ran on one core while the other waited).
/// Returns whether it took the node: not where the operands are not all f32, or the product is
/// empty, or the bias of the wrong length (the general path handles or reports those).
fn conv_transpose_f32(frame: &mut KernelFrame<'_>, inputs: &Inputs) -> Result<bool, KernelError> {
    let (x, w, b) = (inputs.required(0)?, inputs.required(1)?, inputs.optional(2));
    if [Some(x), Some(w), b].into_iter().flatten().any(|t| t.dtype() != DType::F32) {
        return Ok(false);
    }
    let (x, w, b) = (shared_floats(x), shared_floats(w), b.map(shared_floats));
    let group = group(frame)?;
    let shapes = shapes(&x.dims, &w.dims, group, true).map_err(|e| error(frame, e))?;
    kernel_shape(frame, &shapes.kernel)?;
    let layout = transposed_layout(frame, &shapes.spatial, &shapes.kernel)?;
    let (cg, mg) = (shapes.c / group, shapes.m / group);
    let sizes = [&shapes.spatial[..], &shapes.kernel, &layout.out].map(count);
    let [Ok(image), Ok(taps), Ok(plane)] = sizes else { return Ok(false) };
    let bias_fits = b.as_ref().is_none_or(|b| b.data.len() == shapes.m);
    if image == 0 || taps == 0 || cg == 0 || plane == 0 || shapes.n * shapes.m == 0 || !bias_fits {
        return Ok(false);
    }
    let (n, c, m) = (shapes.n, shapes.c, shapes.m);
    let mut dims = vec![n, m];
    dims.extend(&layout.out);
    let tap_maps = scatter_maps(&shapes.kernel, &shapes.spatial, &layout);
    compute(frame, &dims, n * m, cg * taps * image, move |planes, out| {
        let mut columns = Vec::new();
        let mut unit = planes.start;
        // One run of output channels per (image, group): rows of one product.
        while unit < planes.end {
            let (at, channel) = (unit / m, unit % m);
            let g = channel / mg;
            let count = ((g + 1) * mg - channel).min(planes.end - unit);
            let rows = count * taps;
            columns.clear();
            columns.resize(rows * image, 0.0);
            // Rows `(channel - g mg) taps ..` of W_g^T, which is `[mg * taps, cg]`.
            let filters = Matrix { offset: (g * cg * mg + channel - g * mg) * taps, rows: 1, columns: mg * taps };
            let images = Matrix { offset: (at * c + g * cg) * image, rows: image, columns: 1 };
            packed_gemm((rows, cg, image), 1.0, (&w.data, filters), (&x.data, images), 0.0, &mut columns, image);
            let output = &mut out[(unit - planes.start) * plane..][..count * plane];
            add_columns(&columns, &tap_maps, output);
            if let Some(b) = &b {
                for (values, &bias) in output.chunks_exact_mut(plane).zip(&b.data[channel..]) {
                    values.iter_mut().for_each(|v| *v += bias);
                }
            }
            unit += count;
        }
    })?;
    Ok(true)
}

/// ConvInteger and QLinearConv: the i32 convolution of `x` and `w` less their zero points.
fn integer_conv(
    frame: &KernelFrame<'_>,
    (x, x_zero): (&DenseHostTensor, Option<&DenseHostTensor>),
    (w, w_zero): (&DenseHostTensor, Option<&DenseHostTensor>),
) -> Result<Typed<i32>, KernelError> {
    let x = offset_operand(frame, x, x_zero, 1)?;
    let w = offset_operand(frame, w, w_zero, 0)?;
    let group = group(frame)?;
    let shapes = shapes(&x.dims, &w.dims, group, false).map_err(|e| error(frame, e))?;
    kernel_shape(frame, &shapes.kernel)?;
    let (window, out) = Layout::read(frame, shapes.spatial.len())?
        .resolve(&shapes.kernel, &shapes.spatial, false)
        .map_err(|e| error(frame, e))?;
    convolve(&x, &w, group, &window, &out).map_err(|e| error(frame, e))
}

fn qlinear_conv(frame: &KernelFrame<'_>, inputs: &Inputs) -> Result<DenseHostTensor, KernelError> {
    let mut y =
        integer_conv(frame, (inputs.required(0)?, inputs.optional(2)), (inputs.required(3)?, inputs.optional(5)))?;
    if let Some(b) = inputs.optional(8) {
        let bias: Vec<i32> = wide(frame, b)?.values.iter().map(|&v| v as i32).collect();
        add_bias(&mut y, &bias).map_err(|e| error(frame, e))?;
    }
    // x_scale is one value (an axis past the rank takes no vector); w_scale one or one per channel.
    let rank = y.dims.len();
    requantized(frame, inputs, y, (rank, 1))
}

/// Col2Im: columns `[N, C * taps, L]` (a block's taps, at each of the `L` block positions)
/// added back into images `[N, C, image_shape..]`.
fn col2im(frame: &KernelFrame<'_>, inputs: &Inputs) -> Result<DenseHostTensor, KernelError> {
    let x = inputs.required(0)?;
    let dtype = x.dtype();
    let image = sizes(frame, "image_shape", &integers(frame, inputs.required(1)?)?)?;
    let block = sizes(frame, "block_shape", &integers(frame, inputs.required(2)?)?)?;
    let rank = image.len();
    if block.len() != rank {
        return Err(error(frame, format_args!("block_shape {block:?} does not fit image_shape {image:?}")));
    }
    let (window, blocks) = Layout::read(frame, rank)?.resolve(&block, &image, false).map_err(|e| error(frame, e))?;
    let xd = dims(x);
    let (taps, positions) = (count(&block).map_err(|e| error(frame, e))?, count(&blocks).map_err(|e| error(frame, e))?);
    if xd.len() != 3 || !xd[1].is_multiple_of(taps) || xd[2] != positions {
        return Err(error(frame, format_args!("input {xd:?} is not {taps}-tap blocks at {blocks:?} positions")));
    }
    let (n, c) = (xd[0], xd[1] / taps);
    let begin = window.begin.iter().map(|&b| b as i64).collect();
    let layout = Transposed { out: image.clone(), begin, strides: window.strides, dilations: window.dilations };
    let maps = scatter_maps(&block, &blocks, &layout);
    let mut out = vec![n, c];
    out.extend(&image);
    let plane = count(&image).map_err(|e| error(frame, e))?;
    numeric!(dtype, T => {
        let x = Typed::<T>::read(x);
        let mut values = filled(count(&out).map_err(|e| error(frame, e))?, T::default()).map_err(|e| error(frame, e))?;
        let (columns, images) = (xd[1] * xd[2], c * plane);
        if columns > 0 && images > 0 {
            for (source, target) in x.values.chunks_exact(columns).zip(values.chunks_exact_mut(images)) {
                add_columns(source, &maps, target);
            }
        }
        Typed { dims: out, values }.into_tensor(frame, dtype)
    }, Err(unsupported(frame, dtype)))
}

pub(super) fn register(registry: &mut KernelRegistry) {
    register_one(registry, "Col2Im", col2im);
    register_one(registry, "Conv", |frame, inputs| float_conv(frame, inputs, false));
    registry.add_kernel("onnx.ConvTranspose", conv_transpose);
    register_one(registry, "ConvInteger", |frame, inputs| {
        let x = (inputs.required(0)?, inputs.optional(2));
        integer_conv(frame, x, (inputs.required(1)?, inputs.optional(3)))?.into_tensor(frame, DType::I32)
    });
    register_one(registry, "QLinearConv", qlinear_conv);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(auto_pad: &'static str, strides: &[i64], pads: &[i64]) -> Layout<'static> {
        Layout { strides: strides.to_vec(), dilations: vec![1; strides.len()], pads: pads.to_vec(), auto_pad }
    }

    #[test]
    fn windows_resolve_auto_pad_and_ceil_mode() {
        // SAME_UPPER over 5 with a 3-tap window at stride 2: 3 outputs, the odd pad at the end.
        let (window, out) = layout("SAME_UPPER", &[2], &[0, 0]).resolve(&[4], &[5], false).unwrap();
        assert_eq!((out, window.begin.clone(), window.end.clone()), (vec![3], vec![1], vec![2]));
        let (window, _) = layout("SAME_LOWER", &[2], &[0, 0]).resolve(&[4], &[5], false).unwrap();
        assert_eq!((window.begin, window.end), (vec![2], vec![1]));
        let (_, out) = layout("VALID", &[2], &[9, 9]).resolve(&[3], &[8], false).unwrap();
        assert_eq!(out, [3]);
        // Ceil mode takes a partial last window, but not one starting in the end padding.
        let (_, out) = layout("NOTSET", &[2], &[0, 0]).resolve(&[2], &[5], true).unwrap();
        assert_eq!(out, [3]);
        let (_, out) = layout("NOTSET", &[2], &[0, 1]).resolve(&[2], &[4], true).unwrap();
        assert_eq!(out, [2]);
        assert!(layout("NOTSET", &[1], &[0, 0]).resolve(&[4], &[3], false).is_err());
        assert!(layout("NOTSET", &[0], &[0, 0]).resolve(&[1], &[3], false).is_err());
        assert!(layout("NOTSET", &[1], &[-1, 0]).resolve(&[1], &[3], false).is_err());
    }

    #[test]
    fn convolution_pads_dilates_and_groups() {
        // 1-D, two groups of one channel: [1, 2, 3, 4] with [1, 1] padded by one on each side,
        // [10, 20, 30, 40] with a dilated [1, 0, -1] (taps 0 and 4 apart by 2).
        let x = Typed { dims: vec![1, 2, 4], values: vec![1.0f32, 2.0, 3.0, 4.0, 10.0, 20.0, 30.0, 40.0] };
        let w = Typed { dims: vec![2, 1, 2], values: vec![1.0f32, 1.0, 1.0, -1.0] };
        let (window, out) = layout("NOTSET", &[1], &[1, 1]).resolve(&[2], &[4], false).unwrap();
        let y = convolve(&x, &w, 2, &window, &out).unwrap();
        assert_eq!(y.dims, [1, 2, 5]);
        assert_eq!(y.values, [1.0, 3.0, 5.0, 7.0, 4.0, -10.0, -10.0, -10.0, -10.0, 40.0]);
        let dilated = Layout { dilations: vec![2], ..layout("NOTSET", &[1], &[0, 0]) };
        let (window, out) = dilated.resolve(&[2], &[4], false).unwrap();
        let y = convolve(&x, &w, 2, &window, &out).unwrap();
        assert_eq!(y.values, [4.0, 6.0, -20.0, -20.0]);
        // 2-D integers at stride 2, the end padding (zeros) under the second tap of the last windows.
        let x = Typed { dims: vec![1, 1, 3, 3], values: (1..=9).collect::<Vec<i32>>() };
        let w = Typed { dims: vec![1, 1, 2, 2], values: vec![1, 0, 0, 1] };
        let (window, out) = layout("NOTSET", &[2, 2], &[0, 0, 1, 1]).resolve(&[2, 2], &[3, 3], false).unwrap();
        let y = convolve(&x, &w, 1, &window, &out).unwrap();
        assert_eq!((y.dims, y.values), (vec![1, 1, 2, 2], vec![6, 3, 7, 9]));
    }

    #[test]
    fn transposed_convolution_scatters_and_sizes_its_output() {
        let x = Typed { dims: vec![1, 1, 3], values: vec![1.0f64, 2.0, 3.0] };
        let w = Typed { dims: vec![1, 1, 2], values: vec![1.0f64, 10.0] };
        let plain = layout("NOTSET", &[2], &[0, 0]);
        let sizes = transposed_sizes(&plain, false, &[0], &[], &[3], &[2]).unwrap();
        assert_eq!(sizes.out, [6]);
        let y = convolve_transposed(&x, &w, 1, &sizes).unwrap();
        assert_eq!(y.values, [1.0, 10.0, 2.0, 20.0, 3.0, 30.0]);
        // Padding crops the start, output_padding extends the end, output_shape overrides both.
        let padded = layout("NOTSET", &[2], &[1, 0]);
        let sizes = transposed_sizes(&padded, true, &[1], &[], &[3], &[2]).unwrap();
        assert_eq!(sizes.out, [6]);
        assert_eq!(convolve_transposed(&x, &w, 1, &sizes).unwrap().values, [10.0, 2.0, 20.0, 3.0, 30.0, 0.0]);
        let sizes = transposed_sizes(&plain, false, &[0], &[7], &[3], &[2]).unwrap();
        assert_eq!((sizes.out, sizes.begin), (vec![7], vec![0]));
        // SAME_UPPER: the output is input * stride; overlapping taps add up at stride 1.
        let same = layout("SAME_UPPER", &[1], &[0, 0]);
        let sizes = transposed_sizes(&same, false, &[0], &[], &[3], &[2]).unwrap();
        assert_eq!((sizes.out.clone(), sizes.begin.clone()), (vec![3], vec![0]));
        assert_eq!(convolve_transposed(&x, &w, 1, &sizes).unwrap().values, [1.0, 12.0, 23.0]);
    }
}
