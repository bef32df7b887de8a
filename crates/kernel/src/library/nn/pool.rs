//! ONNX's pooling on NCHW images: `nn.max_pool2d.f32` and `nn.average_pool2d.f32`
//! (`kernel_shape`, `strides`, `pads`, `dilations` for max pooling, `ceil_mode`, and
//! `count_include_pad` for averages) and `nn.global_average_pool.f32`. Padding never wins a
//! maximum; an average counts it only under `count_include_pad`, and then only the declared
//! padding, not the room a ceil-mode window reaches past it. Channel planes are split over tasks.

use super::split::{compute, compute_fresh, Fresh};
use super::window::{add_taps, max_taps, Phases, Window};
use super::{floats, int, ints, lane_sum, shape_error, sizes, Floats};
use crate::{KernelError, KernelFrame, KernelRegistry};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Reduce {
    Max,
    /// Averages; `true` counts the declared padding.
    Average(bool),
}

/// The image's `[n, c, h, w]`, or an error naming the kernel and its shape.
fn nchw(frame: &KernelFrame<'_>, x: &Floats) -> Result<[usize; 4], KernelError> {
    match x.dims[..] {
        [n, c, h, w] if h > 0 && w > 0 => Ok([n, c, h, w]),
        _ => Err(shape_error(frame, format_args!("X {} is not a non-empty NCHW image", x.shape()))),
    }
}

fn pool(frame: &mut KernelFrame<'_>, reduce: Reduce) -> Result<(), KernelError> {
    let x = floats(frame, 0)?;
    let [n, c, h, w] = nchw(frame, &x)?;
    let kernel = match sizes(frame, "kernel_shape", &ints(frame, "kernel_shape", &[])?)?[..] {
        [kh, kw] if kh > 0 && kw > 0 => [kh, kw],
        _ => return Err(shape_error(frame, "kernel_shape must be two positive numbers")),
    };
    let window = Window::read(frame, kernel)?;
    let ceil = int(frame, "ceil_mode", 0)? != 0;
    let (Some(oh), Some(ow)) = (window.output(0, h, ceil), window.output(1, w, ceil)) else {
        return Err(shape_error(frame, format_args!("a {kernel:?} window {window:?} does not fit X {}", x.shape())));
    };
    // What an average divides by is a product: the window's rows it counts times its columns.
    let counts = [counts(&window, 0, h, oh, reduce), counts(&window, 1, w, ow, reduce)];
    compute_fresh(frame, &[n, c, oh, ow], n * c, oh * ow * kernel[0] * kernel[1], 1, move |planes, out| {
        let mut scratch = Pooling::default();
        for plane in planes {
            let image = &x.data[plane * h * w..(plane + 1) * h * w];
            scratch.plane(image, [h, w], &window, [oh, ow], reduce, &counts, out);
        }
    })
}

/// For each output position along `axis`, how many of its window's taps along that axis an
/// average counts: those inside the input (of `size`), or under `count_include_pad` those
/// inside the declared padding too — not the room a ceil-mode window reaches past it.
fn counts(window: &Window, axis: usize, size: usize, out: usize, reduce: Reduce) -> Vec<usize> {
    let before = window.pads[axis];
    let (first, end) = match reduce {
        Reduce::Average(true) => (0, before + size + window.pads[axis + 2]),
        _ => (before, before + size),
    };
    (0..out)
        .map(|o| {
            let start = o * window.strides[axis];
            let taps = (0..window.kernel[axis]).map(|i| start + i * window.dilations[axis]);
            taps.filter(|p| (first..end).contains(p)).count()
        })
        .collect()
}

/// A task's scratch for pooled planes, kept across the planes it pools.
#[derive(Default)]
struct Pooling {
    phases: Phases,
    /// The output rows, `phases.cols()` wide.
    values: Vec<f32>,
    starts: Vec<usize>,
    taps: Vec<(usize, f32)>,
}

impl Pooling {
    /// One output plane (`[oh, ow]`) of `image` (`[h, w]`): the input is laid out by phase once
    /// (see [`Phases`]), padded with what never wins (−∞ for a maximum, 0 for a sum); then each
    /// tap is one pass over a contiguous run of all the output rows together. Averages divide
    /// by `counts[0][y] * counts[1][x]`. The plane is written next in `out`.
    #[allow(clippy::too_many_arguments)]
    fn plane(
        &mut self,
        image: &[f32],
        [h, w]: [usize; 2],
        window: &Window,
        [oh, ow]: [usize; 2],
        reduce: Reduce,
        counts: &[Vec<usize>; 2],
        out: &mut Fresh<'_>,
    ) {
        let pad = if reduce == Reduce::Max { f32::NEG_INFINITY } else { 0.0 };
        self.phases.lay_out(image, [h, w], window, [oh, ow], pad);
        let (cols, taps) = (self.phases.cols(), window.kernel[0] * window.kernel[1]);
        self.values.clear();
        self.values.resize(oh * cols, pad);
        if reduce == Reduce::Max {
            self.starts.clear();
            self.starts.extend((0..taps).map(|t| self.phases.tap(t)));
            max_taps(&mut self.values, self.phases.values(), &self.starts);
        } else {
            self.taps.clear();
            self.taps.extend((0..taps).map(|t| (self.phases.tap(t), 1.0)));
            add_taps(&mut self.values, self.phases.values(), &self.taps);
            for (sums, &height) in self.values.chunks_exact_mut(cols).zip(&counts[0]) {
                for (sum, &width) in sums.iter_mut().zip(&counts[1]) {
                    *sum /= (height * width).max(1) as f32;
                }
            }
        }
        for values in self.values.chunks_exact(cols) {
            out.copy(&values[..ow]);
        }
    }
}

fn global_average_pool(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let x = floats(frame, 0)?;
    let [n, c, h, w] = nchw(frame, &x)?;
    let plane = h * w;
    compute(frame, &[n, c, 1, 1], n * c, plane, move |planes, out| {
        means(out, &x.data[planes.start * plane..planes.end * plane], plane);
    })
}

vectorized! {
    /// The mean of each `plane` elements of `values`, in order, into `out`.
    fn means(out: &mut [f32], values: &[f32], plane: usize) {
        for (mean, values) in out.iter_mut().zip(values.chunks_exact(plane)) {
            *mean = lane_sum(values, |v| v) / plane as f32;
        }
    }
}

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("nn.max_pool2d.f32", |f| pool(f, Reduce::Max));
    registry.add_kernel("nn.average_pool2d.f32", |f| {
        let include = int(f, "count_include_pad", 0)? != 0;
        pool(f, Reduce::Average(include))
    });
    registry.add_kernel("nn.global_average_pool.f32", global_average_pool);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Output pixel `[y, x]`'s maximum or average, from the definition: over the window's taps
    /// inside the input; an average divides by those, or under `count_include_pad` by the taps
    /// inside the declared padding too.
    fn naive(image: &[f32], [h, w]: [usize; 2], window: &Window, [y, x]: [usize; 2], reduce: Reduce) -> f32 {
        let (mut max, mut sum, mut inside, mut declared) = (f32::NEG_INFINITY, 0.0f32, 0, 0);
        let padded = [h + window.pads[0] + window.pads[2], w + window.pads[1] + window.pads[3]];
        for i in 0..window.kernel[0] {
            for j in 0..window.kernel[1] {
                let py = y * window.strides[0] + i * window.dilations[0];
                let px = x * window.strides[1] + j * window.dilations[1];
                if py < padded[0] && px < padded[1] {
                    declared += 1;
                }
                let (iy, ix) = (py.wrapping_sub(window.pads[0]), px.wrapping_sub(window.pads[1]));
                if iy < h && ix < w {
                    max = max.max(image[iy * w + ix]);
                    sum += image[iy * w + ix];
                    inside += 1;
                }
            }
        }
        match reduce {
            Reduce::Max => max,
            Reduce::Average(true) => sum / declared as f32,
            Reduce::Average(false) => sum / inside as f32,
        }
    }

    #[test]
    fn pooled_planes_reduce_each_windows_inputs() {
        let configs = [
            ([7, 9], [3, 3], [1, 1], [1, 1, 1, 1], [1, 1], false),
            ([8, 8], [3, 3], [2, 2], [1, 1, 1, 1], [1, 1], false),
            ([8, 8], [3, 3], [2, 2], [0, 0, 0, 0], [1, 1], true),
            ([9, 6], [5, 3], [2, 1], [2, 0, 2, 1], [1, 2], true),
            ([5, 5], [2, 2], [1, 1], [0, 1, 1, 0], [2, 2], false),
            ([4, 6], [7, 7], [1, 1], [3, 3, 3, 3], [1, 1], false),
            ([13, 11], [3, 3], [2, 2], [0, 0, 1, 1], [1, 1], true),
            ([40, 37], [2, 2], [2, 2], [0, 0, 0, 0], [1, 1], true),
        ];
        for ([h, w], kernel, strides, pads, dilations, ceil) in configs {
            let window = Window { kernel, strides, pads, dilations };
            let (oh, ow) = (window.output(0, h, ceil).unwrap(), window.output(1, w, ceil).unwrap());
            let image: Vec<f32> = (0..h * w).map(|k| ((k * 37 % 17) as f32 - 8.0) / 4.0).collect();
            for reduce in [Reduce::Max, Reduce::Average(false), Reduce::Average(true)] {
                let counts = [counts(&window, 0, h, oh, reduce), counts(&window, 1, w, ow, reduce)];
                let mut out = vec![f32::NAN; oh * ow];
                let mut fresh = Fresh::over(&mut out);
                Pooling::default().plane(&image, [h, w], &window, [oh, ow], reduce, &counts, &mut fresh);
                for (k, &value) in out.iter().enumerate() {
                    let expected = naive(&image, [h, w], &window, [k / ow, k % ow], reduce);
                    assert!(
                        (value - expected).abs() <= 1e-6 * expected.abs().max(1.0),
                        "{window:?} ceil {ceil} {reduce:?} at {k}: {value} against {expected}"
                    );
                }
            }
        }
    }
}
