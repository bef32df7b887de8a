//! Sampling images at computed coordinates, over any number of spatial dimensions: `GridSample`
//! (nearest, linear and cubic, with zeros, border or reflection padding), `AffineGrid` (the
//! grids it reads), `RoiAlign` (bilinear samples averaged or maxed over each bin of a region)
//! and `DeformConv` (a convolution whose taps read bilinear samples moved by learned offsets).
//! Images are read as f64s and results stored in the input's type.

use super::conv::{add_bias, Layout};
use super::dispatch::float;
use super::linalg::Ring;
use super::resize::cubic;
use super::tensors::{
    dims, element_count, error, integers, narrow, read_floats, register_one, stored, strides, string, wide, Inputs,
    Typed, Value,
};
use super::tensors::{filled, with_capacity};
use crate::dtype::DType;
use crate::library::nn::gemm::Matrix;
use crate::library::nn::{float as float_attribute, int, ints};
use crate::tensor::DenseHostTensor;
use crate::{KernelError, KernelFrame, KernelRegistry};

pub(super) const OPERATORS: &[&str] = &["AffineGrid", "DeformConv", "GridSample", "RoiAlign"];

/// The taps along one axis: an input index (`None` reads a zero) and its weight.
type Taps = Vec<(Option<usize>, f64)>;

/// The sum, over every corner that picks one tap per axis, of the product of the corners'
/// weights and the image's element there (`strides` the image's, in elements).
fn gather(image: &[f64], strides: &[usize], taps: &[Taps]) -> f64 {
    fn visit(image: &[f64], strides: &[usize], taps: &[Taps], offset: usize, weight: f64) -> f64 {
        match taps.split_first() {
            None => weight * image[offset],
            Some((axis, rest)) => axis
                .iter()
                .filter_map(|&(index, w)| {
                    index.map(|i| visit(image, &strides[1..], rest, offset + i * strides[0], weight * w))
                })
                .sum(),
        }
    }
    visit(image, strides, taps, 0, 1.0)
}

/// The bilinear taps at `x` along an axis of `length`, reading zeros outside it.
fn linear_zeros(x: f64, length: usize) -> Taps {
    let x0 = x.floor();
    let within = |i: f64| (i >= 0.0 && i < length as f64).then_some(i as usize);
    vec![(within(x0), 1.0 - (x - x0)), (within(x0 + 1.0), x - x0)]
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Padding {
    Zeros,
    Border,
    Reflection,
}

/// `x` reflected about `low` and `high` until it lies between them.
fn reflect(x: f64, low: f64, high: f64) -> f64 {
    let range = high - low;
    if range <= 0.0 {
        return low;
    }
    let fold = |distance: f64| {
        let n = (distance / range).trunc();
        (n % 2.0 == 0.0, distance - n * range)
    };
    if x < low {
        let (even, r) = fold(low - x);
        if even {
            low + r
        } else {
            high - r
        }
    } else if x > high {
        let (even, r) = fold(x - high);
        if even {
            high - r
        } else {
            low + r
        }
    } else {
        x
    }
}

/// One spatial axis of a `GridSample` input, as the reference (PyTorch's grid sampler) reads it.
#[derive(Clone, Copy, Debug)]
struct GridAxis {
    length: usize,
    align_corners: bool,
    padding: Padding,
    /// Rounds to the grid's precision (f32 unless it holds f64s), as the reference computes.
    precise: bool,
}

impl GridAxis {
    fn round(&self, x: f64) -> f64 {
        if self.precise {
            x
        } else {
            stored(DType::F32, x)
        }
    }

    /// The borders coordinates reflect about.
    fn borders(&self) -> (f64, f64) {
        let d = self.length as f64;
        if self.align_corners {
            (0.0, d - 1.0)
        } else {
            (-0.5, d - 0.5)
        }
    }

    /// The input coordinate of normalized coordinate `g` ([-1, 1] spans the input), brought
    /// inside by border or reflection padding; `nearest` rounds it (half to even) first.
    fn coordinate(&self, g: f64, nearest: bool) -> f64 {
        let d = self.length as f64;
        let r = |v| self.round(v);
        let mut x =
            if self.align_corners { r(r(r(g + 1.0) / 2.0) * (d - 1.0)) } else { r(r(r(r(g + 1.0) * d) - 1.0) / 2.0) };
        if nearest {
            x = x.round_ties_even();
        }
        let (low, high) = self.borders();
        if x < low || x > high {
            x = match self.padding {
                Padding::Zeros => x,
                Padding::Border => x.clamp(0.0, d - 1.0),
                Padding::Reflection => r(reflect(x, low, high)),
            };
        }
        x
    }

    /// The element index `i` reads, `None` for a zero.
    fn pixel(&self, i: f64) -> Option<usize> {
        let last = self.length as f64 - 1.0;
        let i = match self.padding {
            Padding::Zeros if i < 0.0 || i > last => return None,
            Padding::Zeros => i,
            Padding::Border => i.clamp(0.0, last),
            Padding::Reflection => {
                let (low, high) = self.borders();
                reflect(i, low, high).trunc()
            }
        };
        (i >= 0.0 && i <= last).then_some(i as usize)
    }

    fn taps(&self, mode: GridMode, g: f64) -> Taps {
        let x = self.coordinate(g, mode == GridMode::Nearest);
        let x0 = x.floor();
        match mode {
            GridMode::Nearest => vec![(self.pixel(x.trunc()), 1.0)],
            GridMode::Linear => vec![(self.pixel(x0), 1.0 - (x - x0)), (self.pixel(x0 + 1.0), x - x0)],
            GridMode::Cubic => {
                (-1..3).map(|k| x0 + f64::from(k)).map(|i| (self.pixel(i), cubic(-0.75, i - x))).collect()
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum GridMode {
    Nearest,
    Linear,
    Cubic,
}

fn grid_sample(frame: &KernelFrame<'_>, inputs: &Inputs) -> Result<DenseHostTensor, KernelError> {
    let (x, grid) = (inputs.required(0)?, inputs.required(1)?);
    let dtype = x.dtype();
    let image = wide(frame, x)?;
    let precise = grid.dtype() == DType::F64;
    let grid = read_floats(frame, grid)?;
    let rank = image.dims.len().saturating_sub(2);
    let (xd, gd) = (&image.dims, &grid.dims);
    if rank == 0 || gd.len() != rank + 2 || gd[0] != xd[0] || gd[rank + 1] != rank {
        return Err(error(frame, format_args!("X {xd:?} and Grid {gd:?} do not sample {rank} spatial dimensions")));
    }
    let mode = match string(frame, "mode", "linear")? {
        "nearest" => GridMode::Nearest,
        "linear" | "bilinear" => GridMode::Linear,
        "cubic" | "bicubic" => GridMode::Cubic,
        other => return Err(error(frame, format_args!("unknown mode `{other}`"))),
    };
    let padding = match string(frame, "padding_mode", "zeros")? {
        "zeros" => Padding::Zeros,
        "border" => Padding::Border,
        "reflection" => Padding::Reflection,
        other => return Err(error(frame, format_args!("unknown padding_mode `{other}`"))),
    };
    let align_corners = int(frame, "align_corners", 0)? != 0;
    let axes: Vec<GridAxis> =
        xd[2..].iter().map(|&length| GridAxis { length, align_corners, padding, precise }).collect();
    let (n, c) = (xd[0], xd[1]);
    let mut out = vec![n, c];
    out.extend(&gd[1..=rank]);
    let total = element_count(frame, &out)?;
    let plane = element_count(frame, &gd[1..=rank])?;
    if total > 0 && xd[2..].contains(&0) {
        return Err(error(frame, format_args!("cannot sample an empty image of {xd:?}")));
    }
    let (spatial, image_strides) = (element_count(frame, &xd[2..])?, strides(&xd[2..]));
    let mut values = filled(total, 0.0).map_err(|e| error(frame, e))?;
    for b in 0..n {
        for p in 0..plane {
            // The grid's coordinates run from the last spatial axis (x) to the first.
            let point = &grid.values[(b * plane + p) * rank..][..rank];
            let taps: Vec<Taps> =
                axes.iter().enumerate().map(|(k, axis)| axis.taps(mode, point[rank - 1 - k])).collect();
            for ch in 0..c {
                let source = &image.values[(b * c + ch) * spatial..][..spatial];
                values[(b * c + ch) * plane + p] = gather(source, &image_strides, &taps);
            }
        }
    }
    narrow(frame, out, &values, dtype)
}

/// The normalized coordinates of an axis of `length` samples, as `AffineGrid` lays them out.
fn base_coordinates(length: usize, align_corners: bool) -> Vec<f64> {
    let d = length as f64;
    (0..length)
        .map(|j| {
            let j = j as f64;
            if align_corners {
                if length == 1 {
                    -1.0
                } else {
                    -1.0 + j * (2.0 / (d - 1.0))
                }
            } else {
                -1.0 + 1.0 / d + j * (2.0 / d)
            }
        })
        .collect()
}

fn affine_grid(frame: &KernelFrame<'_>, inputs: &Inputs) -> Result<DenseHostTensor, KernelError> {
    let theta_tensor = inputs.required(0)?;
    let theta = read_floats(frame, theta_tensor)?;
    let size = super::tensors::sizes(frame, "size", &integers(frame, inputs.required(1)?)?)?;
    let rank = size.len().saturating_sub(2);
    if !(rank == 2 || rank == 3) || theta.dims != [size[0], rank, rank + 1] {
        return Err(error(frame, format_args!("theta {:?} does not transform a grid of {size:?}", theta.dims)));
    }
    let align_corners = int(frame, "align_corners", 0)? != 0;
    let spatial = &size[2..];
    let mut out = vec![size[0]];
    out.extend(spatial);
    out.push(rank);
    let total = element_count(frame, &out)?;
    if total == 0 {
        return Typed { dims: out, values: Vec::new() }.into_floats(frame, theta_tensor.dtype());
    }
    let axes: Vec<Vec<f64>> = spatial.iter().map(|&d| base_coordinates(d, align_corners)).collect();
    let plane = element_count(frame, spatial)?;
    let mut values = with_capacity(frame, total)?;
    for b in 0..size[0] {
        let matrix = &theta.values[b * rank * (rank + 1)..][..rank * (rank + 1)];
        for p in 0..plane {
            // The point's homogeneous coordinates (x, y[, z], 1): x along the last axis.
            let mut point = vec![1.0; rank + 1];
            let mut rest = p;
            for k in (0..rank).rev() {
                point[rank - 1 - k] = axes[k][rest % spatial[k]];
                rest /= spatial[k];
            }
            for row in matrix.chunks_exact(rank + 1) {
                values.push(row.iter().zip(&point).map(|(a, b)| a * b).sum());
            }
        }
    }
    Typed { dims: out, values }.into_floats(frame, theta_tensor.dtype())
}

/// One region of `RoiAlign`: where its bins start and how large they are, in input elements.
struct Region {
    start: (f64, f64),
    bin: (f64, f64),
    grid: (usize, usize),
}

/// The four bilinear taps at `(y, x)` of a `height` x `width` plane (offsets and weights), as
/// the reference computes them: nothing outside [-1, size], the edges clamped.
fn bilinear(y: f64, x: f64, height: usize, width: usize) -> [(usize, f64); 4] {
    let (h, w) = (height as f64, width as f64);
    if y < -1.0 || y > h || x < -1.0 || x > w {
        return [(0, 0.0); 4];
    }
    let (mut y, mut x) = (y.max(0.0), x.max(0.0));
    let (mut y_low, mut x_low) = (y as usize, x as usize);
    let (y_high, x_high);
    if y_low >= height - 1 {
        (y_low, y_high) = (height - 1, height - 1);
        y = y_low as f64;
    } else {
        y_high = y_low + 1;
    }
    if x_low >= width - 1 {
        (x_low, x_high) = (width - 1, width - 1);
        x = x_low as f64;
    } else {
        x_high = x_low + 1;
    }
    let (ly, lx) = (y - y_low as f64, x - x_low as f64);
    let (hy, hx) = (1.0 - ly, 1.0 - lx);
    [
        (y_low * width + x_low, hy * hx),
        (y_low * width + x_high, hy * lx),
        (y_high * width + x_low, ly * hx),
        (y_high * width + x_high, ly * lx),
    ]
}

fn roi_align(frame: &KernelFrame<'_>, inputs: &Inputs) -> Result<DenseHostTensor, KernelError> {
    let x = inputs.required(0)?;
    let dtype = x.dtype();
    let image = wide(frame, x)?;
    let rois_tensor = inputs.required(1)?;
    let rois = read_floats(frame, rois_tensor)?;
    // Coordinates round as the rois' floats do (the reference and onnxruntime compute in them).
    let precision = rois_tensor.dtype();
    let r = |v: f64| stored(if precision == DType::F64 { DType::F64 } else { DType::F32 }, v);
    let batch = integers(frame, inputs.required(2)?)?;
    let xd = &image.dims;
    if xd.len() != 4 || rois.dims.len() != 2 || rois.dims[1] != 4 || rois.dims[0] != batch.len() {
        return Err(error(frame, format_args!("X {xd:?}, rois {:?} and {} batch indices", rois.dims, batch.len())));
    }
    let (c, height, width) = (xd[1], xd[2], xd[3]);
    let positive = |name: &str, default: i64| -> Result<usize, KernelError> {
        usize::try_from(int(frame, name, default)?).map_err(|_| error(frame, format_args!("{name} is negative")))
    };
    let (oh, ow) = (positive("output_height", 1)?, positive("output_width", 1)?);
    let sampling = positive("sampling_ratio", 0)?;
    let scale = f64::from(float_attribute(frame, "spatial_scale", 1.0)?);
    let default_transform = if super::tensors::opset(frame)? < 16 { "output_half_pixel" } else { "half_pixel" };
    let half_pixel = match string(frame, "coordinate_transformation_mode", default_transform)? {
        "half_pixel" => true,
        "output_half_pixel" => false,
        other => return Err(error(frame, format_args!("unknown coordinate_transformation_mode `{other}`"))),
    };
    let max = match string(frame, "mode", "avg")? {
        "avg" => false,
        "max" => true,
        other => return Err(error(frame, format_args!("unknown mode `{other}`"))),
    };
    let out = vec![batch.len(), c, oh, ow];
    let mut values = filled(element_count(frame, &out)?, 0.0).map_err(|e| error(frame, e))?;
    if values.is_empty() {
        return narrow(frame, out, &values, dtype);
    }
    if height == 0 || width == 0 {
        return Err(error(frame, format_args!("cannot sample an empty image of {xd:?}")));
    }
    let plane = height * width;
    for (index, roi) in rois.values.chunks_exact(4).enumerate() {
        let b = usize::try_from(batch[index])
            .ok()
            .filter(|&b| b < xd[0])
            .ok_or_else(|| error(frame, format_args!("batch index {} is outside {xd:?}", batch[index])))?;
        let offset = if half_pixel { 0.5 } else { 0.0 };
        let [x0, y0, x1, y1] = [0, 1, 2, 3].map(|i| r(r(roi[i] * scale) - offset));
        let (mut rh, mut rw) = (r(y1 - y0), r(x1 - x0));
        if !half_pixel {
            (rh, rw) = (rh.max(1.0), rw.max(1.0));
        }
        let grid = |extent: f64, bins: usize| {
            if sampling > 0 {
                sampling
            } else {
                r(extent / bins as f64).ceil().max(0.0) as usize
            }
        };
        let region =
            Region { start: (y0, x0), bin: (r(rh / oh as f64), r(rw / ow as f64)), grid: (grid(rh, oh), grid(rw, ow)) };
        let samples = region.grid.0.checked_mul(region.grid.1).filter(|&s| s.saturating_mul(oh * ow) <= 1 << 26);
        let Some(samples) = samples else {
            return Err(error(frame, format_args!("roi {roi:?} takes too many samples per bin")));
        };
        let count = samples.max(1) as f64;
        // The taps of every sample of every bin, shared by the channels.
        let bins: Vec<Vec<[(usize, f64); 4]>> = (0..oh * ow)
            .map(|bin| {
                let (ph, pw) = ((bin / ow) as f64, (bin % ow) as f64);
                let mut taps = Vec::with_capacity(samples);
                for iy in 0..region.grid.0 {
                    let step = r(r((iy as f64 + 0.5) * region.bin.0) / region.grid.0 as f64);
                    let y = r(r(region.start.0 + r(ph * region.bin.0)) + step);
                    for ix in 0..region.grid.1 {
                        let step = r(r((ix as f64 + 0.5) * region.bin.1) / region.grid.1 as f64);
                        let x = r(r(region.start.1 + r(pw * region.bin.1)) + step);
                        taps.push(bilinear(y, x, height, width));
                    }
                }
                taps
            })
            .collect();
        for ch in 0..c {
            let source = &image.values[(b * c + ch) * plane..][..plane];
            let target = &mut values[(index * c + ch) * oh * ow..][..oh * ow];
            for (value, samples) in target.iter_mut().zip(&bins) {
                let read = samples.iter().map(|taps| taps.map(|(at, w)| w * source[at]));
                *value = if max {
                    read.map(|t| t.into_iter().fold(f64::NEG_INFINITY, f64::max)).reduce(f64::max).unwrap_or(0.0)
                } else {
                    read.map(|t| t.into_iter().sum::<f64>()).sum::<f64>() / count
                };
            }
        }
    }
    narrow(frame, out, &values, dtype)
}

/// `DeformConv`'s operands: `x` `[N, C, spatial..]`, `w` `[M, C / group, kernel..]`, `offset`
/// `[N, offset_group * taps * rank, out..]` and `mask` `[N, offset_group * taps, out..]`.
fn deform_conv(frame: &KernelFrame<'_>, inputs: &Inputs) -> Result<DenseHostTensor, KernelError> {
    let (x_tensor, w_tensor) = (inputs.required(0)?, inputs.required(1)?);
    let dtype = x_tensor.dtype();
    let x = read_floats(frame, x_tensor)?;
    let offset = read_floats(frame, inputs.required(2)?)?;
    let (xd, wd) = (&x.dims, dims(w_tensor));
    let rank = xd.len().saturating_sub(2);
    let group = usize::try_from(int(frame, "group", 1)?).unwrap_or(0);
    let offset_group = usize::try_from(int(frame, "offset_group", 1)?).unwrap_or(0);
    let fits = rank > 0
        && wd.len() == rank + 2
        && group > 0
        && offset_group > 0
        && xd[1] == wd[1] * group
        && wd[0] % group == 0
        && xd[1] % offset_group == 0;
    if !fits {
        return Err(error(frame, format_args!("X {xd:?} and W {wd:?} do not convolve in {group} groups")));
    }
    let kernel = wd[2..].to_vec();
    let given = ints(frame, "kernel_shape", &[])?;
    if !given.is_empty() && !given.iter().map(|&k| usize::try_from(k).ok()).eq(kernel.iter().map(|&k| Some(k))) {
        return Err(error(frame, format_args!("kernel_shape {given:?} is not the filters' {kernel:?}")));
    }
    let (window, out) = Layout::read(frame, rank)?.resolve(&kernel, &xd[2..], false).map_err(|e| error(frame, e))?;
    let (n, c, m) = (xd[0], xd[1], wd[0]);
    let taps = element_count(frame, &kernel)?;
    let plane = element_count(frame, &out)?;
    let mut expected = vec![n, element_count(frame, &[offset_group, taps, rank])?];
    expected.extend(&out);
    if offset.dims != expected {
        return Err(error(frame, format_args!("offset {:?} is not {expected:?}", offset.dims)));
    }
    let mask = match inputs.optional(4) {
        Some(mask) => {
            let mask = read_floats(frame, mask)?;
            expected[1] = offset_group * taps;
            if mask.dims != expected {
                return Err(error(frame, format_args!("mask {:?} is not {expected:?}", mask.dims)));
            }
            Some(mask.values)
        }
        None => None,
    };
    let bias = inputs.optional(3).map(|b| read_floats(frame, b)).transpose()?;
    let mut dims = vec![n, m];
    dims.extend(&out);
    let total = element_count(frame, &dims)?;
    let spatial = element_count(frame, &xd[2..])?;
    let depth = element_count(frame, &[c / group, taps])?;
    let column_count = element_count(frame, &[c, taps, plane])?;
    let image_strides = strides(&xd[2..]);
    let out_strides = strides(&out);
    let kernel_strides = strides(&kernel);
    float!(dtype, T => {
        let w = Typed::<T>::read(w_tensor);
        let mut values = filled(total, T::default()).map_err(|e| error(frame, e))?;
        // Per image, the columns [C * taps, plane] of masked samples, then per group the filters
        // times its columns (as `Conv` multiplies its im2col columns).
        let mut columns = filled(column_count, T::default()).map_err(|e| error(frame, e))?;
        let per_offset_group = c / offset_group;
        for b in 0..n {
            for og in 0..offset_group {
                for t in 0..taps {
                    for p in 0..plane {
                        let at = ((b * offset_group + og) * taps + t) * plane + p;
                        let corners: Vec<Taps> = (0..rank)
                            .map(|k| {
                                let tap = t / kernel_strides[k] % kernel[k];
                                let o = p / out_strides[k] % out[k];
                                let base = (o * window.strides[k] + tap * window.dilations[k]) as f64
                                    - window.begin[k] as f64;
                                let shift = offset.values[(at - p) * rank + k * plane + p];
                                linear_zeros(base + shift, xd[2 + k])
                            })
                            .collect();
                        let weight = mask.as_ref().map_or(1.0, |mask| mask[at]);
                        for ch in og * per_offset_group..(og + 1) * per_offset_group {
                            let source = &x.values[(b * c + ch) * spatial..][..spatial];
                            let sample = gather(source, &image_strides, &corners) * weight;
                            columns[(ch * taps + t) * plane + p] = T::from_f64(sample);
                        }
                    }
                }
            }
            let (cg, mg) = (c / group, m / group);
            for g in 0..group {
                let filters = Matrix { offset: g * mg * depth, rows: depth, columns: 1 };
                let result = &mut values[(b * m + g * mg) * plane..];
                T::gemm(
                    (mg, depth, plane),
                    (&w.values, filters),
                    (&columns, Matrix { offset: g * cg * taps * plane, rows: plane, columns: 1 }),
                    result,
                    plane,
                    false,
                );
            }
        }
        let mut y = Typed { dims, values };
        if let Some(bias) = bias {
            let bias: Vec<T> = bias.values.iter().map(|&b| T::from_f64(b)).collect();
            add_bias(&mut y, &bias).map_err(|e| error(frame, e))?;
        }
        y.into_tensor(frame, dtype)
    }, Err(super::tensors::unsupported(frame, dtype)))
}

pub(super) fn register(registry: &mut KernelRegistry) {
    register_one(registry, "GridSample", grid_sample);
    register_one(registry, "AffineGrid", affine_grid);
    register_one(registry, "RoiAlign", roi_align);
    register_one(registry, "DeformConv", deform_conv);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reflection_folds_about_the_borders() {
        assert_eq!(reflect(-1.0, -0.5, 2.5), 0.0);
        assert_eq!(reflect(3.5, -0.5, 2.5), 1.5);
        // Past a whole period and a half: folds back from the other border.
        assert_eq!(reflect(-4.0, 0.0, 3.0), 2.0);
        assert_eq!(reflect(7.0, 0.0, 3.0), 1.0);
        assert_eq!(reflect(1.25, 0.0, 3.0), 1.25);
    }

    #[test]
    fn grid_coordinates_denormalize_and_pad() {
        let axis = |align_corners, padding| GridAxis { length: 4, align_corners, padding, precise: true };
        // [-1, 1] spans the corners' centres with align_corners, their outer edges without.
        assert_eq!(axis(true, Padding::Zeros).coordinate(-1.0, false), 0.0);
        assert_eq!(axis(true, Padding::Zeros).coordinate(1.0, false), 3.0);
        assert_eq!(axis(false, Padding::Zeros).coordinate(-1.0, false), -0.5);
        assert_eq!(axis(false, Padding::Zeros).coordinate(0.0, false), 1.5);
        // Outside: zeros keeps the coordinate, border clamps it, reflection folds it.
        assert_eq!(axis(false, Padding::Zeros).coordinate(1.5, false), 4.5);
        assert_eq!(axis(false, Padding::Border).coordinate(1.5, false), 3.0);
        assert_eq!(axis(false, Padding::Reflection).coordinate(1.5, false), 2.5);
        // Nearest rounds half to even: 1.5 -> 2, 0.5 -> 0.
        assert_eq!(axis(false, Padding::Zeros).coordinate(0.0, true), 2.0);
        assert_eq!(axis(true, Padding::Zeros).coordinate(-2.0 / 3.0, true), 0.0);
        // Linear taps read zeros past the edge under zeros padding.
        let taps = axis(false, Padding::Zeros).taps(GridMode::Linear, -1.0);
        assert_eq!(taps, vec![(None, 0.5), (Some(0), 0.5)]);
        let taps = axis(false, Padding::Border).taps(GridMode::Linear, -1.0);
        assert_eq!(taps, vec![(Some(0), 0.5), (Some(0), 0.5)]);
    }

    #[test]
    fn gather_weighs_every_corner() {
        // A 2 x 2 image sampled at its centre: the mean; a zero tap drops its corners.
        let image = [1.0, 2.0, 3.0, 4.0];
        let half = vec![(Some(0), 0.5), (Some(1), 0.5)];
        assert_eq!(gather(&image, &[2, 1], &[half.clone(), half.clone()]), 2.5);
        assert_eq!(gather(&image, &[2, 1], &[vec![(None, 0.5), (Some(1), 0.5)], half]), 1.75);
    }

    #[test]
    fn affine_grids_lay_out_normalized_centres() {
        assert_eq!(base_coordinates(4, false), [-0.75, -0.25, 0.25, 0.75]);
        assert_eq!(base_coordinates(3, true), [-1.0, 0.0, 1.0]);
        assert_eq!(base_coordinates(1, true), [-1.0]);
    }

    #[test]
    fn roi_samples_clamp_to_the_edges() {
        // Inside a 2 x 3 plane at (0.5, 1.25): four corners; past the last row: clamped.
        let taps = bilinear(0.5, 1.25, 2, 3);
        assert_eq!(taps, [(1, 0.375), (2, 0.125), (4, 0.375), (5, 0.125)]);
        assert_eq!(bilinear(1.5, 0.0, 2, 3), [(3, 1.0), (4, 0.0), (3, 0.0), (4, 0.0)]);
        assert_eq!(bilinear(-1.5, 0.0, 2, 3).map(|t| t.1), [0.0; 4]);
    }
}
