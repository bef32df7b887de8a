//! `Resize` and `Upsample` on tensors of any number type: each resized axis maps its output
//! indices to input coordinates (`coordinate_transformation_mode`), then reads the nearest input
//! element (exactly, for every type) or weighs its neighbours (linear, cubic, optionally
//! antialiased), one axis after the other as ONNX's reference does. `tf_crop_and_resize` reads a
//! region of interest and puts `extrapolation_value` where it leaves the input.

use super::dispatch::numeric;
use super::tensors::{
    dims, distinct_axes, element_count, error, integers, narrow, opset, read_floats, strides, string, take,
    unsupported, wide, Inputs, Value, Walk,
};
use crate::dtype::DType;
use crate::library::nn::{float, int, ints};
use crate::tensor::DenseHostTensor;
use crate::{KernelError, KernelFrame, KernelRegistry, KernelSite};

pub(super) const OPERATORS: &[&str] = &["Resize", "Upsample"];

/// How a coordinate between two input indices picks one (`nearest_mode`); `Simple` is what
/// `Upsample` and `Resize` before opset 11 do: truncate, or round up when downsampling.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Rounding {
    PreferFloor,
    PreferCeil,
    Floor,
    Ceil,
    Simple,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Nearest(Rounding),
    Linear,
    Cubic(f64),
}

/// `coordinate_transformation_mode`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Transform {
    HalfPixel,
    HalfPixelSymmetric,
    PytorchHalfPixel,
    AlignCorners,
    Asymmetric,
    TfCropAndResize,
}

/// One resized axis: its input and output lengths, the scale, and its region of interest.
#[derive(Clone, Copy, Debug)]
struct Axis {
    input: usize,
    output: usize,
    scale: f64,
    roi: (f64, f64),
}

impl Axis {
    /// The input coordinate of output index `y`, `None` where `tf_crop_and_resize` leaves the
    /// input (the reference's formulas, with the output length `scale * input` unrounded).
    fn coordinate(&self, transform: Transform, y: usize) -> Option<f64> {
        let (y, input) = (y as f64, self.input as f64);
        let width = self.scale * input;
        let x = match transform {
            Transform::AlignCorners if width == 1.0 => 0.0,
            Transform::AlignCorners => y * (input - 1.0) / (width - 1.0),
            Transform::Asymmetric => y / self.scale,
            Transform::TfCropAndResize => {
                let (start, end) = self.roi;
                let x = if width == 1.0 {
                    (end - start) * (input - 1.0) / 2.0
                } else {
                    y * (end - start) * (input - 1.0) / (width - 1.0)
                } + start * (input - 1.0);
                if x < 0.0 || x > input - 1.0 {
                    return None;
                }
                x
            }
            Transform::PytorchHalfPixel if width == 1.0 => -0.5,
            Transform::PytorchHalfPixel | Transform::HalfPixel => (y + 0.5) / self.scale - 0.5,
            Transform::HalfPixelSymmetric => {
                let offset = input / 2.0 * (1.0 - self.output as f64 / width);
                offset + (y + 0.5) / self.scale - 0.5
            }
        };
        Some(x)
    }

    /// The input index nearest to `x`, within the input.
    fn nearest(&self, rounding: Rounding, x: f64) -> usize {
        let floor = x.floor();
        let fraction = x - floor;
        let index = if fraction == 0.0 {
            floor
        } else {
            match rounding {
                Rounding::PreferFloor if fraction <= 0.5 => floor,
                Rounding::PreferCeil if fraction < 0.5 => floor,
                Rounding::Floor => floor,
                Rounding::PreferFloor | Rounding::PreferCeil | Rounding::Ceil => floor + 1.0,
                Rounding::Simple if self.scale < 1.0 => floor + 1.0,
                Rounding::Simple => x.trunc(),
            }
        };
        (index.max(0.0) as usize).min(self.input.saturating_sub(1))
    }

    /// The input indices (within the input: the edges repeat) and weights that interpolate at
    /// `x`: the kernel's support about `x`, wider by `1 / scale` when antialiasing a downsample.
    fn taps(&self, mode: Mode, antialias: bool, exclude_outside: bool, x: f64) -> Vec<(usize, f64)> {
        let scale = if antialias { self.scale.min(1.0) } else { 1.0 };
        let (reach, weight): (f64, &dyn Fn(f64) -> f64) = match mode {
            Mode::Cubic(a) => (2.0, &move |d| cubic(a, d)),
            _ => (1.0, &|d: f64| (1.0 - d.abs()).clamp(0.0, 1.0)),
        };
        // The reference's window: the indices left of x (x itself when whole) first.
        let base = if x.fract() == 0.0 { x - 1.0 } else { x.floor() };
        let start = (-reach / scale).floor() + 1.0;
        let count = (2.0 - 2.0 * start) as i64;
        let last = self.input as i64 - 1;
        let mut taps: Vec<(i64, f64)> = (0..count)
            .map(|k| {
                let index = base + start + k as f64;
                (index as i64, weight((index - x) * scale))
            })
            .collect();
        if exclude_outside {
            taps.iter_mut().filter(|(i, _)| !(0..=last).contains(i)).for_each(|(_, w)| *w = 0.0);
        }
        let sum: f64 = taps.iter().map(|(_, w)| w).sum();
        let sum = if sum == 0.0 { 1.0 } else { sum };
        let normalize = antialias || exclude_outside;
        taps.into_iter().map(|(i, w)| (i.clamp(0, last.max(0)) as usize, if normalize { w / sum } else { w })).collect()
    }
}

/// Keys' cubic convolution kernel with coefficient `a` at distance `d`.
pub(super) fn cubic(a: f64, d: f64) -> f64 {
    let d = d.abs();
    if d <= 1.0 {
        ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0
    } else if d < 2.0 {
        ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a
    } else {
        0.0
    }
}

/// What a node asks: the mode, the transform, and the output length and scale of each axis.
struct Plan {
    mode: Mode,
    transform: Transform,
    antialias: bool,
    exclude_outside: bool,
    extrapolation: f64,
    axes: Vec<Axis>,
}

impl Plan {
    fn output(&self) -> Vec<usize> {
        self.axes.iter().map(|a| a.output).collect()
    }

    /// Whether axis `k` is left as it is (the reference skips it).
    fn identity(&self, k: usize) -> bool {
        let axis = &self.axes[k];
        (axis.scale - 1.0).abs() <= 1e-9
            && axis.output == axis.input
            && (self.transform != Transform::TfCropAndResize
                || (axis.roi.0.abs() <= 1e-9 && (axis.roi.1 - 1.0).abs() <= 1e-9))
    }

    /// Linear or cubic interpolation of `values` (of the input's dimensions), axis by axis.
    fn interpolate(&self, mut values: Vec<f64>, site: &KernelSite<'_>) -> Result<Vec<f64>, KernelError> {
        let mut dims: Vec<usize> = self.axes.iter().map(|a| a.input).collect();
        if self.axes.iter().any(|a| a.output == 0) {
            return Ok(Vec::new());
        }
        for (k, axis) in self.axes.iter().enumerate() {
            if self.identity(k) {
                continue;
            }
            if axis.input == 0 && axis.output > 0 {
                return Err(error(site, "cannot resize an empty axis to a non-empty one"));
            }
            let outer: usize = dims[..k].iter().product();
            let inner: usize = dims[k + 1..].iter().product();
            dims[k] = axis.output;
            let mut out = super::tensors::with_capacity(site, element_count(site, &dims)?)?;
            if self.antialias && axis.scale < 1.0 / f64::from(1 << 24) {
                return Err(error(site, format_args!("an antialiased scale of {} is too small", axis.scale)));
            }
            let taps: Vec<Option<Vec<(usize, f64)>>> = (0..axis.output)
                .map(|y| {
                    let x = axis.coordinate(self.transform, y)?;
                    Some(axis.taps(self.mode, self.antialias, self.exclude_outside, x))
                })
                .collect();
            for o in 0..outer {
                let plane = &values[o * axis.input * inner..(o + 1) * axis.input * inner];
                for taps in &taps {
                    match taps {
                        None => out.extend(std::iter::repeat_n(self.extrapolation, inner)),
                        Some(taps) => out.extend((0..inner).map(|i| {
                            taps.iter().map(|&(index, weight)| weight * plane[index * inner + i]).sum::<f64>()
                        })),
                    }
                }
            }
            values = out;
        }
        Ok(values)
    }
}

fn transform(site: &KernelSite<'_>, name: &str) -> Result<Transform, KernelError> {
    Ok(match name {
        "half_pixel" => Transform::HalfPixel,
        "half_pixel_symmetric" => Transform::HalfPixelSymmetric,
        "pytorch_half_pixel" => Transform::PytorchHalfPixel,
        "align_corners" => Transform::AlignCorners,
        "asymmetric" => Transform::Asymmetric,
        "tf_crop_and_resize" => Transform::TfCropAndResize,
        other => return Err(error(site, format_args!("unknown coordinate_transformation_mode `{other}`"))),
    })
}

/// The node's plan for an input of `dims`. `Upsample` and `Resize` before opset 11 take scales
/// only (an input, or `Upsample`-7's attribute), asymmetric coordinates and [`Rounding::Simple`].
fn plan(site: &KernelSite<'_>, inputs: &Inputs, dims: &[usize], upsample: bool) -> Result<Plan, KernelError> {
    let rank = dims.len();
    let legacy = upsample || opset(site)? < 11;
    let mode = match string(site, "mode", "nearest")? {
        "nearest" if legacy => Mode::Nearest(Rounding::Simple),
        "nearest" => Mode::Nearest(match string(site, "nearest_mode", "round_prefer_floor")? {
            "round_prefer_floor" => Rounding::PreferFloor,
            "round_prefer_ceil" => Rounding::PreferCeil,
            "floor" => Rounding::Floor,
            "ceil" => Rounding::Ceil,
            other => return Err(error(site, format_args!("unknown nearest_mode `{other}`"))),
        }),
        "linear" | "bilinear" | "trilinear" => Mode::Linear,
        "cubic" | "bicubic" if !legacy => Mode::Cubic(f64::from(float(site, "cubic_coeff_a", -0.75)?)),
        other => return Err(error(site, format_args!("unknown mode `{other}`"))),
    };
    let transform = if legacy {
        Transform::Asymmetric
    } else {
        transform(site, string(site, "coordinate_transformation_mode", "half_pixel")?)?
    };
    let antialias = int(site, "antialias", 0)? != 0;
    if antialias && matches!(mode, Mode::Nearest(_)) {
        return Err(error(site, "antialias applies to linear and cubic modes only"));
    }
    let axes = match ints(site, "axes", &[])? {
        axes if axes.is_empty() => (0..rank).collect(),
        axes => distinct_axes(site, &axes, rank)?,
    };
    let floats = |index: usize| -> Result<Option<Vec<f64>>, KernelError> {
        match inputs.optional(index) {
            Some(t) if t.num_elements() > 0 => Ok(Some(read_floats(site, t)?.values)),
            _ => Ok(None),
        }
    };
    let (roi, scales, sizes) = if upsample && opset(site)? < 9 {
        let scales = site.named_attribute("scales")?.array::<f32>()?.iter().map(f64::from).collect();
        (None, Some(scales), None)
    } else if legacy {
        (None, floats(1)?, None)
    } else {
        let sizes = inputs.optional(3).filter(|t| t.num_elements() > 0).map(|t| integers(site, t)).transpose()?;
        (floats(1)?, floats(2)?, sizes)
    };
    let mut plan = Plan {
        mode,
        transform,
        antialias,
        exclude_outside: int(site, "exclude_outside", 0)? != 0,
        extrapolation: f64::from(float(site, "extrapolation_value", 0.0)?),
        axes: dims.iter().map(|&d| Axis { input: d, output: d, scale: 1.0, roi: (0.0, 1.0) }).collect(),
    };
    if let Some(roi) = roi {
        if roi.len() != 2 * axes.len() {
            return Err(error(site, format_args!("roi holds {} values for {} axes", roi.len(), axes.len())));
        }
        for (i, &a) in axes.iter().enumerate() {
            plan.axes[a].roi = (roi[i], roi[axes.len() + i]);
        }
    } else if transform == Transform::TfCropAndResize {
        return Err(error(site, "tf_crop_and_resize needs a roi"));
    }
    match (scales, sizes) {
        (Some(scales), None) => {
            if scales.len() != axes.len() {
                return Err(error(site, format_args!("{} scales for {} axes", scales.len(), axes.len())));
            }
            for (&a, &scale) in axes.iter().zip(&scales) {
                let output = scale * dims[a] as f64;
                let valid = scale > 0.0 && output < 1e15;
                if !valid {
                    return Err(error(site, format_args!("scales {scales:?} do not resize {dims:?}")));
                }
                plan.axes[a].scale = scale;
                plan.axes[a].output = output as usize;
            }
        }
        (None, Some(sizes)) => {
            if sizes.len() != axes.len() {
                return Err(error(site, format_args!("{} sizes for {} axes", sizes.len(), axes.len())));
            }
            let sizes = super::tensors::sizes(site, "sizes", &sizes)?;
            let ratios: Vec<f64> = axes.iter().zip(&sizes).map(|(&a, &s)| s as f64 / dims[a] as f64).collect();
            let policy = string(site, "keep_aspect_ratio_policy", "stretch")?;
            let kept = match policy {
                "stretch" => None,
                "not_larger" => Some(ratios.iter().copied().fold(f64::INFINITY, f64::min)),
                "not_smaller" => Some(ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
                other => return Err(error(site, format_args!("unknown keep_aspect_ratio_policy `{other}`"))),
            };
            for ((&a, &size), &ratio) in axes.iter().zip(&sizes).zip(&ratios) {
                let axis = &mut plan.axes[a];
                (axis.scale, axis.output) = match kept {
                    None => (ratio, size),
                    Some(scale) => (scale, (scale * dims[a] as f64 + 0.5) as usize),
                };
                if !axis.scale.is_finite() {
                    return Err(error(site, format_args!("cannot resize an empty axis of {dims:?} to {size}")));
                }
            }
        }
        (Some(_), Some(_)) => return Err(error(site, "scales and sizes are both given")),
        (None, None) => return Err(error(site, "neither scales nor sizes is given")),
    }
    element_count(site, &plan.output())?;
    Ok(plan)
}

fn resize(frame: &KernelFrame<'_>, inputs: &Inputs, upsample: bool) -> Result<DenseHostTensor, KernelError> {
    let x = inputs.required(0)?;
    let (dtype, input) = (x.dtype(), dims(x));
    let plan = plan(frame, inputs, &input, upsample)?;
    let output = plan.output();
    if let Mode::Nearest(rounding) = plan.mode {
        let mut fill = vec![0; dtype.byte_size().ok_or_else(|| unsupported(frame, dtype))?];
        numeric!(dtype, T => { T::from_f64(plan.extrapolation).store(dtype, &mut fill) }, return Err(unsupported(frame, dtype)));
        let strides = strides(&input);
        let maps = || {
            let maps = plan.axes.iter().enumerate().map(|(k, axis)| {
                (0..axis.output)
                    .map(|y| {
                        let x = axis.coordinate(plan.transform, y)?;
                        Some(axis.nearest(rounding, x) * strides[k])
                    })
                    .collect()
            });
            Walk::new(maps.collect())
        };
        if input.iter().zip(&output).any(|(&i, &o)| i == 0 && o > 0) {
            return Err(error(frame, "cannot resize an empty axis to a non-empty one"));
        }
        return take(frame, x, &output, Some(&fill), maps);
    }
    let values = plan.interpolate(wide(frame, x)?.values, frame)?;
    let values: Vec<f64> = match dtype {
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 => values,
        // Integers round to the nearest (ties to even) and saturate, as the reference does.
        _ => values.into_iter().map(f64::round_ties_even).collect(),
    };
    narrow(frame, output, &values, dtype)
}

pub(super) fn register(registry: &mut KernelRegistry) {
    super::tensors::register_one(registry, "Resize", |frame, inputs| resize(frame, inputs, false));
    super::tensors::register_one(registry, "Upsample", |frame, inputs| resize(frame, inputs, true));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(input: usize, output: usize, scale: f64) -> Axis {
        Axis { input, output, scale, roi: (0.0, 1.0) }
    }

    #[test]
    fn coordinates_follow_each_transform() {
        let up = axis(2, 4, 2.0);
        let at = |t, a: &Axis| (0..a.output).map(|y| a.coordinate(t, y)).collect::<Vec<_>>();
        assert_eq!(at(Transform::HalfPixel, &up), [-0.25, 0.25, 0.75, 1.25].map(Some));
        assert_eq!(at(Transform::Asymmetric, &up), [0.0, 0.5, 1.0, 1.5].map(Some));
        assert_eq!(at(Transform::AlignCorners, &up), [0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0].map(Some));
        // One output: pytorch_half_pixel reads -0.5, align_corners the start.
        let one = axis(4, 1, 0.25);
        assert_eq!(at(Transform::PytorchHalfPixel, &one), [Some(-0.5)]);
        assert_eq!(at(Transform::AlignCorners, &one), [Some(0.0)]);
        // half_pixel_symmetric centres an output rounded down: 4 * 0.6 = 2.4 -> 2.
        let down = axis(4, 2, 0.6);
        let offset = 2.0 * (1.0 - 2.0 / 2.4);
        assert_eq!(at(Transform::HalfPixelSymmetric, &down), [0.5, 1.5].map(|y| Some(offset + y / 0.6 - 0.5)));
        // tf_crop_and_resize: roi [0.4, 1.2] of 4 elements spans 1.2 to 3.6; past 3 is outside.
        let crop = Axis { roi: (0.4, 1.2), ..axis(4, 3, 0.75) };
        let xs = at(Transform::TfCropAndResize, &crop);
        assert!((xs[0].unwrap() - 1.2).abs() < 1e-12 && (xs[1].unwrap() - 2.4).abs() < 1e-12 && xs[2].is_none());
    }

    #[test]
    fn nearest_modes_round_as_named() {
        let a = axis(4, 8, 2.0);
        let pick = |r| [0.5, 1.5, 2.25, 2.75, -0.25, 3.75, 2.0].map(|x| a.nearest(r, x));
        assert_eq!(pick(Rounding::PreferFloor), [0, 1, 2, 3, 0, 3, 2]);
        assert_eq!(pick(Rounding::PreferCeil), [1, 2, 2, 3, 0, 3, 2]);
        assert_eq!(pick(Rounding::Floor), [0, 1, 2, 2, 0, 3, 2]);
        assert_eq!(pick(Rounding::Ceil), [1, 2, 3, 3, 0, 3, 2]);
        assert_eq!(pick(Rounding::Simple), [0, 1, 2, 2, 0, 3, 2]);
        assert_eq!(axis(4, 2, 0.5).nearest(Rounding::Simple, 0.5), 1);
    }

    fn close(taps: &[(usize, f64)], expected: &[(usize, f64)]) -> bool {
        taps.len() == expected.len() && taps.iter().zip(expected).all(|(a, b)| a.0 == b.0 && (a.1 - b.1).abs() < 1e-12)
    }

    #[test]
    fn linear_and_cubic_weights() {
        let a = axis(4, 8, 2.0);
        assert!(close(&a.taps(Mode::Linear, false, false, 1.25), &[(1, 0.75), (2, 0.25)]));
        // A whole coordinate weighs its own index only; the left edge repeats index 0.
        assert!(close(&a.taps(Mode::Linear, false, false, 2.0), &[(1, 0.0), (2, 1.0)]));
        assert!(close(&a.taps(Mode::Linear, false, false, -0.25), &[(0, 0.25), (0, 0.75)]));
        // Keys' kernel with A = -0.75 at 0.5: [-0.09375, 0.59375, 0.59375, -0.09375].
        let half = [(0, -0.09375), (1, 0.59375), (2, 0.59375), (3, -0.09375)];
        assert!(close(&a.taps(Mode::Cubic(-0.75), false, false, 1.5), &half));
        // exclude_outside drops the taps left of the input and renormalizes the rest.
        let taps = a.taps(Mode::Cubic(-0.5), false, true, 0.5);
        let (w1, w2, w3) = (cubic(-0.5, 0.5), cubic(-0.5, 0.5), cubic(-0.5, 1.5));
        let sum = w1 + w2 + w3;
        assert!(close(&taps, &[(0, 0.0), (0, w1 / sum), (1, w2 / sum), (2, w3 / sum)]));
    }

    #[test]
    fn antialias_widens_the_kernel_by_the_downscale() {
        // Scale 0.5: the triangle reaches two input elements each way; weights 1 - |d| / 2.
        let a = axis(8, 4, 0.5);
        let taps = a.taps(Mode::Linear, true, false, 3.5);
        let raw = [(2, 0.25), (3, 0.75), (4, 0.75), (5, 0.25)];
        assert!(close(&taps, &raw.map(|(i, w)| (i, w / 2.0))));
        // Upsampling antialiases nothing: the plain weights.
        let up = axis(4, 8, 2.0);
        assert!(close(&up.taps(Mode::Linear, true, false, 1.25), &[(1, 0.75), (2, 0.25)]));
        // Cubic at scale 0.5: eight taps, the kernel at half the distance, normalized.
        let taps = a.taps(Mode::Cubic(-0.75), true, false, 3.5);
        assert_eq!(taps.len(), 8);
        let raw: Vec<f64> = (0..8).map(|k| cubic(-0.75, (k as f64 - 3.5) * 0.5)).collect();
        let sum: f64 = raw.iter().sum();
        let expected: Vec<(usize, f64)> = raw.iter().enumerate().map(|(k, w)| (k, w / sum)).collect();
        assert!(close(&taps, &expected));
    }
}
