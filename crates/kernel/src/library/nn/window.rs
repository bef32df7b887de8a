//! The window of a convolution or pooling layer along the two spatial axes, and [`Phases`]: a
//! plane laid out so that each tap of the window reads one contiguous run for every output
//! pixel at once, which turns a sliding window (depthwise convolution, pooling) into a few
//! long vectorizable loops whatever its stride or dilation.

use super::exp::mul_add;
use super::tap_vectors::SLACK;
use super::{ints, shape_error, sizes};
use crate::{KernelError, KernelSite};

/// Outputs a tap loop takes at a time, held in registers across all the taps: four AVX2
/// vectors, two AVX-512 ones.
const STRIP: usize = 32;

/// A pooling or convolution window along the two spatial axes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Window {
    pub kernel: [usize; 2],
    pub strides: [usize; 2],
    /// Before (top, left) and after (bottom, right).
    pub pads: [usize; 4],
    pub dilations: [usize; 2],
}

impl Window {
    /// Reads `strides`, `pads` and `dilations` (ONNX's defaults: 1, 0 and 1) for `kernel`.
    pub(crate) fn read(site: &KernelSite<'_>, kernel: [usize; 2]) -> Result<Window, KernelError> {
        let pair = |name: &str, default: i64| -> Result<[usize; 2], KernelError> {
            match sizes(site, name, &ints(site, name, &[default; 2])?)?[..] {
                [a, b] if a > 0 && b > 0 => Ok([a, b]),
                _ => Err(shape_error(site, format_args!("{name} must be two positive numbers"))),
            }
        };
        let (strides, dilations) = (pair("strides", 1)?, pair("dilations", 1)?);
        let pads = match sizes(site, "pads", &ints(site, "pads", &[0; 4])?)?[..] {
            [t, l, b, r] => [t, l, b, r],
            _ => return Err(shape_error(site, "pads must be four numbers: top, left, bottom, right")),
        };
        Ok(Window { kernel, strides, pads, dilations })
    }

    /// The extent of the dilated window along `axis`.
    pub(crate) fn span(&self, axis: usize) -> usize {
        self.dilations[axis] * (self.kernel[axis] - 1) + 1
    }

    /// The output size along `axis` for an input of `size`, rounding down (or up when `ceil`,
    /// dropping a last window that would start in the padding after the input, as ONNX does);
    /// `None` when no window fits.
    pub(crate) fn output(&self, axis: usize, size: usize, ceil: bool) -> Option<usize> {
        let padded = size + self.pads[axis] + self.pads[axis + 2];
        let room = padded.checked_sub(self.span(axis))?;
        let stride = self.strides[axis];
        let mut count = if ceil { room.div_ceil(stride) } else { room / stride } + 1;
        if ceil && (count - 1) * stride >= size + self.pads[axis] {
            count -= 1;
        }
        Some(count)
    }
}

/// A plane padded and split by stride phase: for strides `[sy, sx]`, padded element `(r, q)` lies
/// in phase `(r % sy) * sx + q % sx` at `(r / sy) * cols + q / sx`. Tap `(i, j)`'s inputs for
/// output pixels `(y, x)` then lie at one start plus `y * cols + x`: a run over all output rows,
/// each computed `cols` wide (the columns past the output's width are not outputs).
#[derive(Default)]
pub(crate) struct Phases {
    values: Vec<f32>,
    cols: usize,
    phase_len: usize,
    /// The window and the layout's `cols` and `phase_len` that `starts` were computed for.
    geometry: Option<(Window, usize, usize)>,
    /// Each tap's run's start: computed once for planes of one geometry (a layer lays out
    /// hundreds), each start taking four divisions.
    starts: Vec<usize>,
}

impl Phases {
    /// Lays out `input` (`[h, w]`) for `window`'s `[oh, ow]` outputs, `pad` in the padding and
    /// wherever a window reaches past it.
    pub(crate) fn lay_out(
        &mut self,
        input: &[f32],
        [h, w]: [usize; 2],
        window: &Window,
        [oh, ow]: [usize; 2],
        pad: f32,
    ) {
        let [sy, sx] = window.strides;
        let (top, left) = (window.pads[0], window.pads[1]);
        // The padded extent the windows reach, and each phase's rows and columns.
        let (ph, pw) = ((oh - 1) * sy + window.span(0), (ow - 1) * sx + window.span(1));
        let (rows, cols) = (ph.div_ceil(sy), pw.div_ceil(sx));
        let phase_len = rows * cols;
        (self.cols, self.phase_len) = (cols, phase_len);
        let geometry = Some((*window, cols, phase_len));
        if self.geometry != geometry {
            let ([sy, sx], [dy, dx], [kh, kw]) = (window.strides, window.dilations, window.kernel);
            self.starts.clear();
            self.starts.extend((0..kh * kw).map(|t| {
                let (a, b) = ((t / kw) * dy, (t % kw) * dx);
                ((a % sy) * sx + b % sx) * phase_len + (a / sy) * cols + b / sx
            }));
            self.geometry = geometry;
        }
        // A tap's run for the last row's columns past `ow` may reach this far past a phase, and
        // vector code reads up to `SLACK` past that.
        let slack = (window.kernel[1] - 1) * window.dilations[1] / sx + 1;
        // The whole plane is filled with `pad` in one pass, then each row's inside is copied over
        // it: planes are small (a few rows of a few dozen columns), and growing the vector piece
        // by piece cost more than writing the padding twice.
        let (first, end) = (left.min(pw), (left + w).min(pw));
        let values = &mut self.values;
        values.clear();
        values.resize(sy * sx * phase_len + slack + SLACK, pad);
        if first == end {
            return;
        }
        for py in 0..sy {
            for row in 0..rows {
                let r = row * sy + py;
                let Some(iy) = r.checked_sub(top).filter(|&iy| r < ph && iy < h) else { continue };
                // Padded columns `first..end` of the row hold `source`.
                let source = &input[iy * w..][..end - first];
                let at = |px: usize| (py * sx + px) * phase_len + row * cols;
                if sx == 1 {
                    // One phase: the row's inside in place, with no division per row.
                    values[at(0)..][first..end].copy_from_slice(source);
                    continue;
                }
                if sx == 2 {
                    // Both phases from one pass over the row: columns in pairs, the even one to
                    // phase 0 and the odd one to phase 1 (a lone column at either end alone).
                    let (evens, odds) = values.split_at_mut(at(1));
                    let (even, odd) = (&mut evens[at(0)..][..cols], &mut odds[..cols]);
                    let (pairs_from, pairs_to) = (first.div_ceil(2), end / 2);
                    if first % 2 == 1 {
                        odd[first / 2] = source[0];
                    }
                    if pairs_from < pairs_to {
                        let pairs = &source[2 * pairs_from - first..2 * pairs_to - first];
                        deinterleave(&mut even[pairs_from..pairs_to], &mut odd[pairs_from..pairs_to], pairs);
                    }
                    if end % 2 == 1 && end > first {
                        even[end / 2] = source[end - 1 - first];
                    }
                    continue;
                }
                for px in 0..sx {
                    // The phase's columns `q` whose padded column `q * sx + px` is in `first..end`.
                    let (from, to) = ((first.saturating_sub(px)).div_ceil(sx), (end.saturating_sub(px)).div_ceil(sx));
                    let (from, to) = (from.min(cols), to.clamp(from.min(cols), cols));
                    if from == to {
                        continue;
                    }
                    let out = &mut values[at(px)..][..cols];
                    every(&mut out[from..to], &source[from * sx + px - first..], sx);
                }
            }
        }
    }

    /// The laid-out plane.
    pub(crate) fn values(&self) -> &[f32] {
        &self.values
    }

    /// How wide each output row is computed: the output's width and a few columns more.
    pub(crate) fn cols(&self) -> usize {
        self.cols
    }

    /// Where the run of tap `t` (the window's taps in row-major order) starts.
    pub(crate) fn tap(&self, t: usize) -> usize {
        self.starts[t]
    }
}

/// `values[k] = combine(values[k], phases[start(tap) + k], tap)` for each tap in turn. A strip
/// of [`STRIP`] values at a time stays in registers across all the taps, so that a tap costs a
/// load and one operation per element, not the value's load and store besides.
#[inline(always)]
fn over_taps<T: Copy>(
    values: &mut [f32],
    phases: &[f32],
    taps: &[T],
    start: impl Fn(T) -> usize,
    combine: impl Fn(f32, f32, T) -> f32,
) {
    let full = values.len() / STRIP * STRIP;
    let (strips, rest) = values.split_at_mut(full);
    for (strip, values) in strips.chunks_exact_mut(STRIP).enumerate() {
        let offset = strip * STRIP;
        let mut held = [0.0f32; STRIP];
        held.copy_from_slice(values);
        for &tap in taps {
            let run = &phases[start(tap) + offset..][..STRIP];
            for (value, &x) in held.iter_mut().zip(run) {
                *value = combine(*value, x, tap);
            }
        }
        values.copy_from_slice(&held);
    }
    for &tap in taps {
        let run = &phases[start(tap) + full..][..rest.len()];
        for (value, &x) in rest.iter_mut().zip(run) {
            *value = combine(*value, x, tap);
        }
    }
}

vectorized! {
    /// `sums[k] += weight * phases[start + k]` for each tap `(start, weight)`.
    pub(crate) fn add_taps(sums: &mut [f32], phases: &[f32], taps: &[(usize, f32)]) {
        let fma = mul_add::<{ fma!() }>;
        over_taps(sums, phases, taps, |(start, _)| start, |sum, x, (_, weight)| fma(weight, x, sum));
    }
}

vectorized! {
    /// `maxima[k] = max(maxima[k], phases[start + k])` for each tap's `start`. A NaN input loses,
    /// as in `f32::max`.
    pub(crate) fn max_taps(maxima: &mut [f32], phases: &[f32], starts: &[usize]) {
        over_taps(maxima, phases, starts, |start| start, |max, x, _| max.max(x));
    }
}

vectorized! {
    /// `target[k] = source[k * stride]`: a row's columns of one stride phase.
    fn every(target: &mut [f32], source: &[f32], stride: usize) {
        for (k, value) in target.iter_mut().enumerate() {
            *value = source[k * stride];
        }
    }
}

vectorized! {
    /// `even[k] = pairs[2 * k]`, `odd[k] = pairs[2 * k + 1]`: a row's two phases at stride 2, in
    /// one pass that the compiler vectorizes as de-interleaving loads.
    fn deinterleave(even: &mut [f32], odd: &mut [f32], pairs: &[f32]) {
        for ((even, odd), pair) in even.iter_mut().zip(odd.iter_mut()).zip(pairs.chunks_exact(2)) {
            *even = pair[0];
            *odd = pair[1];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs of every length around the strip's, from taps that start anywhere in the phases.
    #[test]
    fn tap_loops_match_one_element_at_a_time() {
        let phases: Vec<f32> = (0..400).map(|k| ((k * 29 % 23) as f32 - 11.0) / 8.0).collect();
        let taps = [(0, 0.5), (7, -1.25), (33, 2.0), (64, 0.125)];
        for len in [0, 1, STRIP - 1, STRIP, STRIP + 1, 3 * STRIP + 5, 300] {
            let start: Vec<f32> = (0..len).map(|k| k as f32 * 0.01 - 1.0).collect();
            let mut sums = start.clone();
            add_taps(&mut sums, &phases, &taps);
            let mut maxima = start.clone();
            let starts: Vec<usize> = taps.iter().map(|t| t.0).collect();
            max_taps(&mut maxima, &phases, &starts);
            for k in 0..len {
                let sum = taps.iter().fold(start[k], |s, &(at, w)| s + w * phases[at + k]);
                let max = taps.iter().fold(start[k], |m, &(at, _)| m.max(phases[at + k]));
                assert!((sums[k] - sum).abs() <= 1e-5, "length {len}, sum {k}: {} against {sum}", sums[k]);
                assert_eq!(maxima[k], max, "length {len}, maximum {k}");
            }
        }
    }

    /// Every tap's run holds, for each output pixel, the input its window reads there, or the pad:
    /// strides 1 to 3 (stride 2 has its own pass), padding on either side odd and even, dilation.
    #[test]
    fn laid_out_runs_hold_each_taps_inputs() {
        let configs = [
            ([5, 7], [3, 3], [1, 1], [1, 1, 1, 1], [1, 1]),
            ([8, 8], [3, 3], [2, 2], [1, 1, 1, 1], [1, 1]),
            ([9, 9], [3, 3], [2, 2], [0, 0, 0, 0], [1, 1]),
            ([7, 10], [5, 5], [2, 2], [2, 1, 2, 2], [1, 1]),
            ([6, 11], [3, 3], [2, 2], [0, 2, 1, 0], [1, 2]),
            ([9, 13], [3, 2], [3, 3], [1, 3, 0, 1], [1, 1]),
            ([2, 2], [3, 3], [2, 2], [1, 1, 1, 1], [1, 1]),
            ([4, 1], [1, 3], [1, 2], [0, 3, 0, 3], [1, 1]),
        ];
        for ([h, w], kernel, strides, pads, dilations) in configs {
            let window = Window { kernel, strides, pads, dilations };
            let (oh, ow) = (window.output(0, h, false).unwrap(), window.output(1, w, false).unwrap());
            let input: Vec<f32> = (0..h * w).map(|k| k as f32 + 1.0).collect();
            let mut phases = Phases::default();
            phases.lay_out(&input, [h, w], &window, [oh, ow], -7.0);
            let cols = phases.cols();
            for t in 0..kernel[0] * kernel[1] {
                let (i, j) = (t / kernel[1], t % kernel[1]);
                for (y, x) in (0..oh).flat_map(|y| (0..ow).map(move |x| (y, x))) {
                    let iy = (y * strides[0] + i * dilations[0]).checked_sub(pads[0]).filter(|&iy| iy < h);
                    let ix = (x * strides[1] + j * dilations[1]).checked_sub(pads[1]).filter(|&ix| ix < w);
                    let expected = iy.zip(ix).map_or(-7.0, |(iy, ix)| input[iy * w + ix]);
                    let value = phases.values()[phases.tap(t) + y * cols + x];
                    assert_eq!(value, expected, "{window:?} on {h}x{w}: tap {t}, output ({y}, {x})");
                }
            }
        }
    }
}
