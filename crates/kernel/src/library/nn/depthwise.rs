//! Depthwise convolution — one input channel per output channel: MobileNet's and EfficientNet's
//! 3x3 and 5x5 layers — a plane at a time ([`Depthwise`]), or, where planes are small, a block of
//! channels at a time ([`Blocked`]).

use super::epilogue::{finish, Activation};
use super::exp::mul_add;
use super::split::Fresh;
use super::tap_vectors::{sum_rows, Isa, Taps};
use super::window::{add_taps, Phases, Window};

/// A task's scratch for depthwise planes, kept across the planes it convolves.
#[derive(Default)]
pub(crate) struct Depthwise {
    phases: Phases,
    /// The output rows, `phases.cols()` wide.
    sums: Vec<f32>,
    /// Each tap's run's start in `phases`, and its weight.
    taps: Vec<(usize, f32)>,
}

impl Depthwise {
    /// One output plane (`[oh, ow]`) of a depthwise convolution: `bias` plus, for each tap of
    /// the `[kh, kw]` `filter`, the tap's weight times the input (`[h, w]`) it reads, zero in the
    /// padding, plus `residual` (the plane's) through `activation`, written next in `out`. The
    /// input is laid out by phase once (see [`Phases`]); then each tap is one multiply-add over a
    /// contiguous run of all the output rows together: in registers, a few vectors of a row at a
    /// time, with the vector code of `isa` (see [`sum_rows`]), or else into scratch rows.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn plane(
        &mut self,
        isa: Option<Isa>,
        input: &[f32],
        [h, w]: [usize; 2],
        filter: &[f32],
        window: &Window,
        [oh, ow]: [usize; 2],
        bias: f32,
        (residual, activation): (Option<&[f32]>, Activation),
        out: &mut Fresh<'_>,
    ) {
        self.phases.lay_out(input, [h, w], window, [oh, ow], 0.0);
        let cols = self.phases.cols();
        self.taps.clear();
        self.taps.extend(filter.iter().enumerate().map(|(t, &weight)| (self.phases.tap(t), weight)));
        let plane = oh * ow;
        if let Some(isa) = isa {
            let grid = (window.strides == [1, 1] && window.dilations == [1, 1])
                .then(|| Taps::grid_of(&self.taps, cols, window.kernel))
                .flatten();
            let operands = Taps { values: self.phases.values(), cols, taps: &self.taps, bias, residual, grid };
            // SAFETY: `sum_rows` writes every slot it is given.
            let slots = unsafe { out.slots(plane) };
            if sum_rows(isa, &operands, [oh, ow], activation, slots) {
                finish(out.last(plane), 0.0, None, activation);
            }
            return;
        }
        self.sums.clear();
        self.sums.resize(oh * cols, bias);
        add_taps(&mut self.sums, self.phases.values(), &self.taps);
        for sums in self.sums.chunks_exact(cols) {
            out.copy(&sums[..ow]);
        }
        if residual.is_some() || activation != Activation::Identity {
            finish(out.last(plane), 0.0, residual, activation);
        }
    }
}

/// Channels a [`Blocked`] pass convolves at once: one AVX2 vector of f32s.
pub(crate) const LANES: usize = 8;

/// Output pixels a blocked pass holds in registers at once, each a vector of [`LANES`] channels:
/// eight independent sums keep the multiply-adds' pipeline full.
const PIXELS: usize = 8;

/// A task's scratch for convolving [`LANES`] channels at once, kept across its blocks. On a
/// small plane (a 7x7 or 14x14 late layer) a plane's runs are too short to fill vectors: with
/// each pixel's channels side by side in one vector instead, every tap is a vector multiply-add
/// whatever the plane's size or the stride, at the price of moving the channels into and out of
/// that layout.
#[derive(Default)]
pub(crate) struct Blocked {
    /// The padded input, one vector of the channels' values per pixel.
    padded: Vec<[f32; LANES]>,
    /// Each tap's weights, one per channel.
    weights: Vec<[f32; LANES]>,
    /// Each tap's offset in `padded` from its window's first pixel.
    offsets: Vec<usize>,
    /// The output planes, a vector of the channels' sums per pixel.
    sums: Vec<[f32; LANES]>,
}

impl Blocked {
    /// The output planes (`[oh, ow]` each) of up to [`LANES`] consecutive channels, written
    /// next in `out`: as [`Depthwise::plane`] for each, from `inputs` (their `[h, w]` planes),
    /// `filters` (their `[kh, kw]` filters), `biases` (one per channel: how many there are) and
    /// `residuals` (their output planes).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn planes(
        &mut self,
        inputs: &[f32],
        [h, w]: [usize; 2],
        filters: &[f32],
        window: &Window,
        [oh, ow]: [usize; 2],
        biases: &[f32],
        (residuals, activation): (Option<&[f32]>, Activation),
        out: &mut Fresh<'_>,
    ) {
        let channels = biases.len();
        let taps = window.kernel[0] * window.kernel[1];
        let (top, left) = (window.pads[0], window.pads[1]);
        let (ph, pw) = ((oh - 1) * window.strides[0] + window.span(0), (ow - 1) * window.strides[1] + window.span(1));
        self.padded.clear();
        self.padded.resize(ph * pw, [0.0; LANES]);
        // The input columns that land inside the padded width.
        let columns = left.min(pw)..(left + w).min(pw);
        for (c, input) in inputs.chunks_exact(h * w).take(channels).enumerate() {
            for (row, values) in input.chunks_exact(w).enumerate().take(ph.saturating_sub(top)) {
                let target = &mut self.padded[(row + top) * pw..][columns.clone()];
                for (pixel, &value) in target.iter_mut().zip(values) {
                    pixel[c] = value;
                }
            }
        }
        self.weights.clear();
        self.weights.resize(taps, [0.0; LANES]);
        for (c, filter) in filters.chunks_exact(taps).take(channels).enumerate() {
            for (weights, &weight) in self.weights.iter_mut().zip(filter) {
                weights[c] = weight;
            }
        }
        let mut bias = [0.0; LANES];
        bias[..channels].copy_from_slice(biases);
        let [sy, sx] = window.strides;
        let (kw, [dy, dx]) = (window.kernel[1], window.dilations);
        self.offsets.clear();
        self.offsets.extend((0..taps).map(|t| (t / kw) * dy * pw + (t % kw) * dx));
        let plane = oh * ow;
        self.sums.resize(plane, [0.0; LANES]);
        for (y, row) in self.sums.chunks_exact_mut(ow).enumerate() {
            row_sums(row, &self.padded, &self.weights, &self.offsets, bias, y * sy * pw, sx);
        }
        // A residual comes before the activation: both are applied to the planes below.
        if residuals.is_none() {
            finish(self.sums.as_flattened_mut(), 0.0, None, activation);
        }
        // SAFETY: the loop writes each of the `channels * plane` slots: every pixel of every
        // channel's plane.
        let slots = unsafe { out.slots(channels * plane) };
        for (c, plane_slots) in slots.chunks_exact_mut(plane).enumerate() {
            for (slot, sums) in plane_slots.iter_mut().zip(&self.sums) {
                slot.write(sums[c]);
            }
        }
        if let Some(residuals) = residuals {
            let planes = out.last(channels * plane);
            for (values, residual) in planes.chunks_exact_mut(plane).zip(residuals.chunks_exact(plane)) {
                finish(values, 0.0, Some(residual), activation);
            }
        }
    }
}

vectorized! {
    /// An output row's sums into `row`: `bias` plus each tap's `weights` times its input in
    /// `padded`, the tap `offsets` on from the row's first window at `first`, windows `sx`
    /// apart. Strides 1 and 2 are compiled on their own, where each tap's inputs are one run of
    /// known length, checked once (a check per multiply-add cost a third of the time).
    fn row_sums(
        row: &mut [[f32; LANES]],
        padded: &[[f32; LANES]],
        weights: &[[f32; LANES]],
        offsets: &[usize],
        bias: [f32; LANES],
        first: usize,
        sx: usize,
    ) {
        let operands = (padded, weights, offsets, bias);
        match sx {
            1 => strided_row::<1, { fma!() }>(row, operands, first, sx),
            2 => strided_row::<2, { fma!() }>(row, operands, first, sx),
            _ => strided_row::<0, { fma!() }>(row, operands, first, sx),
        }
    }
}

/// A blocked pass's padded input, weights, tap offsets and bias.
type BlockOperands<'a> = (&'a [[f32; LANES]], &'a [[f32; LANES]], &'a [usize], [f32; LANES]);

/// [`row_sums`] at the stride `SX` (0: `sx`): [`PIXELS`] pixels at a time in registers, then the
/// rest of the row at once (one pixel at a time, a chain of dependent multiply-adds, was
/// slower).
#[inline(always)]
fn strided_row<const SX: usize, const FMA: bool>(
    row: &mut [[f32; LANES]],
    operands: BlockOperands<'_>,
    first: usize,
    sx: usize,
) {
    let sx = if SX == 0 { sx } else { SX };
    let mut x = 0;
    while x + PIXELS <= row.len() {
        row[x..x + PIXELS].copy_from_slice(&pixel_sums::<PIXELS, SX, FMA>(operands, first + x * sx, sx));
        x += PIXELS;
    }
    let (rest, start) = (&mut row[x..], first + x * sx);
    macro_rules! rest {
        ($($n:literal)*) => {
            match rest.len() {
                0 => {}
                $($n => rest.copy_from_slice(&pixel_sums::<$n, SX, FMA>(operands, start, sx)),)*
                _ => unreachable!("the rest of a row is shorter than PIXELS"),
            }
        };
    }
    rest!(1 2 3 4 5 6 7);
}

/// The sums of `N` output pixels `sx` apart (`SX`, when not 0) whose windows start at `first`
/// in the padded input.
#[inline(always)]
fn pixel_sums<const N: usize, const SX: usize, const FMA: bool>(
    (padded, weights, offsets, bias): BlockOperands<'_>,
    first: usize,
    sx: usize,
) -> [[f32; LANES]; N] {
    let sx = if SX == 0 { sx } else { SX };
    let fma = mul_add::<FMA>;
    let mut held = [bias; N];
    for (&offset, weights) in offsets.iter().zip(weights) {
        let run = &padded[first + offset..][..(N - 1) * sx + 1];
        for (p, sums) in held.iter_mut().enumerate() {
            for ((sum, &x), &weight) in sums.iter_mut().zip(&run[p * sx]).zip(weights) {
                *sum = fma(weight, x, *sum);
            }
        }
    }
    held
}

#[cfg(test)]
mod tests {
    use super::super::tap_vectors::every_isa;
    use super::*;

    /// The convolution sum as ONNX defines it, one output at a time.
    fn naive(input: &[f32], [h, w]: [usize; 2], filter: &[f32], window: &Window, [oh, ow]: [usize; 2]) -> Vec<f32> {
        let [kh, kw] = window.kernel;
        let mut out = vec![0.0; oh * ow];
        for y in 0..oh {
            for x in 0..ow {
                for i in 0..kh {
                    for j in 0..kw {
                        let iy = (y * window.strides[0] + i * window.dilations[0]) as isize - window.pads[0] as isize;
                        let ix = (x * window.strides[1] + j * window.dilations[1]) as isize - window.pads[1] as isize;
                        if (0..h as isize).contains(&iy) && (0..w as isize).contains(&ix) {
                            out[y * ow + x] += filter[i * kw + j] * input[iy as usize * w + ix as usize];
                        }
                    }
                }
            }
        }
        out
    }

    /// What a layer makes of a convolution's sum: plus the bias and the residual, through
    /// `activation`.
    fn finished(sum: f32, bias: f32, residual: f32, activation: Activation) -> f32 {
        let mut value = [sum + bias + residual];
        finish(&mut value, 0.0, None, activation);
        value[0]
    }

    /// Within f32 rounding of sums of a few dozen terms.
    fn close(value: f32, expected: f32) -> bool {
        (value - expected).abs() <= 1e-5 * expected.abs().max(1.0)
    }

    /// Input planes and windows: strides, dilations and uneven padding, and padding wider
    /// than the plane.
    fn configs() -> Vec<([usize; 2], Window)> {
        [
            ([7, 9], [3, 3], [1, 1], [1, 1, 1, 1], [1, 1]),
            ([8, 8], [3, 3], [2, 2], [1, 1, 1, 1], [1, 1]),
            ([9, 6], [5, 3], [2, 1], [2, 0, 2, 1], [1, 2]),
            ([5, 5], [3, 3], [3, 3], [0, 0, 0, 0], [2, 2]),
            ([4, 6], [7, 7], [1, 1], [3, 3, 3, 3], [1, 1]),
            ([3, 3], [1, 1], [2, 2], [0, 4, 0, 4], [1, 1]),
            ([3, 2], [1, 1], [1, 1], [0, 0, 5, 0], [1, 1]),
        ]
        .into_iter()
        .map(|(size, kernel, strides, pads, dilations)| (size, Window { kernel, strides, pads, dilations }))
        .collect()
    }

    #[test]
    fn planes_sum_every_tap_inside_the_input() {
        for ([h, w], window) in configs() {
            let kernel = window.kernel;
            let (oh, ow) = (window.output(0, h, false).unwrap(), window.output(1, w, false).unwrap());
            let input: Vec<f32> = (0..h * w).map(|k| ((k * 37 % 17) as f32 - 8.0) / 4.0).collect();
            let filter: Vec<f32> = (0..kernel[0] * kernel[1]).map(|k| ((k * 11 % 7) as f32 - 3.0) / 2.0).collect();
            let mut out = vec![f32::NAN; oh * ow];
            let mut scratch = Depthwise::default();
            let none = (None, Activation::Identity);
            scratch.plane(None, &input, [h, w], &filter, &window, [oh, ow], 0.5, none, &mut Fresh::over(&mut out));
            let expected: Vec<f32> =
                naive(&input, [h, w], &filter, &window, [oh, ow]).iter().map(|v| v + 0.5).collect();
            for (k, (a, e)) in out.iter().zip(&expected).enumerate() {
                assert!(close(*a, *e), "{window:?} at {k}: {a} against {e}");
            }
        }
    }

    /// Each plane summed in registers by every kind of vector code this CPU runs, and in
    /// scratch rows: wide and narrow planes (column blocks of one to four vectors and more, row
    /// counts that leave remainders), with and without a residual, through activations computed
    /// in registers and one left to the caller.
    #[test]
    fn vector_code_and_scratch_rows_match_the_naive_sum() {
        let mut configs = configs();
        let wide = |size, strides, pads| (size, Window { kernel: [3, 3], strides, pads, dilations: [1, 1] });
        configs.extend([
            wide([13, 70], [1, 1], [1, 1, 1, 1]),
            wide([9, 113], [2, 2], [0, 1, 1, 1]),
            wide([5, 40], [1, 1], [1, 1, 1, 1]),
            wide([11, 33], [1, 1], [0, 0, 0, 0]),
            wide([15, 17], [2, 2], [1, 1, 1, 1]),
            ([12, 20], Window { kernel: [5, 5], strides: [1, 1], pads: [2, 2, 2, 2], dilations: [1, 1] }),
            ([19, 37], Window { kernel: [5, 5], strides: [1, 1], pads: [2, 2, 2, 2], dilations: [1, 1] }),
        ]);
        let mut paths: Vec<Option<Isa>> = every_isa().into_iter().map(Some).collect();
        paths.push(None);
        for ([h, w], window) in configs {
            let kernel = window.kernel;
            let (oh, ow) = (window.output(0, h, false).unwrap(), window.output(1, w, false).unwrap());
            let input: Vec<f32> = (0..h * w).map(|k| ((k * 37 % 17) as f32 - 8.0) / 4.0).collect();
            let filter: Vec<f32> = (0..kernel[0] * kernel[1]).map(|k| ((k * 11 % 7) as f32 - 3.0) / 2.0).collect();
            let residuals: Vec<f32> = (0..oh * ow).map(|k| ((k * 13 % 5) as f32 - 2.0) / 2.0).collect();
            let sums = naive(&input, [h, w], &filter, &window, [oh, ow]);
            let activations =
                [Activation::Identity, Activation::Clip(0.0, 6.0), Activation::LeakyRelu(0.1), Activation::Swish];
            let with = Some(&residuals[..]);
            for (path, activation, residual) in paths
                .iter()
                .flat_map(|&path| activations.into_iter().flat_map(move |a| [(path, a, None), (path, a, with)]))
            {
                let mut out = vec![f32::NAN; oh * ow + 1];
                let mut fresh = Fresh::over(&mut out);
                fresh.copy(&[-1.0]);
                let epilogue = (residual, activation);
                Depthwise::default().plane(path, &input, [h, w], &filter, &window, [oh, ow], 0.5, epilogue, &mut fresh);
                assert_eq!(out[0], -1.0, "what was written before stays");
                for (k, &sum) in sums.iter().enumerate() {
                    let (value, expected) =
                        (out[1 + k], finished(sum, 0.5, residual.map_or(0.0, |r| r[k]), activation));
                    assert!(
                        close(value, expected),
                        "{path:?} {window:?} {activation:?} residual {}: at {k}: {value} against {expected}",
                        residual.is_some()
                    );
                }
            }
        }
    }

    /// At stride 1 without dilation a window's taps make the grid whose input vectors the
    /// vector code loads once per column of a 5x5 window (the tests above then cover that code).
    #[test]
    fn stride_one_taps_make_a_grid() {
        let mut configs = configs();
        configs.push(([12, 20], Window { kernel: [5, 5], strides: [1, 1], pads: [2, 2, 2, 2], dilations: [1, 1] }));
        for ([h, w], window) in configs.into_iter().filter(|(_, w)| w.strides == [1, 1] && w.dilations == [1, 1]) {
            let (oh, ow) = (window.output(0, h, false).unwrap(), window.output(1, w, false).unwrap());
            let filter = vec![1.0; window.kernel[0] * window.kernel[1]];
            let mut scratch = Depthwise::default();
            let mut out = vec![0.0; oh * ow];
            let none = (None, Activation::Identity);
            scratch.plane(
                None,
                &vec![1.0; h * w],
                [h, w],
                &filter,
                &window,
                [oh, ow],
                0.0,
                none,
                &mut Fresh::over(&mut out),
            );
            let grid = Taps::grid_of(&scratch.taps, scratch.phases.cols(), window.kernel);
            assert_eq!(grid, Some(window.kernel), "{window:?}");
        }
    }

    /// Blocks of one channel to a full vector, each channel with its own input, filter and
    /// bias; with and without a residual, through activations that are and are not cheap.
    #[test]
    fn blocks_match_each_channels_plane_and_finish_it() {
        for ([h, w], window) in configs() {
            let kernel = window.kernel;
            let (oh, ow) = (window.output(0, h, false).unwrap(), window.output(1, w, false).unwrap());
            let taps = kernel[0] * kernel[1];
            for channels in [1, 3, LANES] {
                let inputs: Vec<f32> = (0..channels * h * w).map(|k| ((k * 37 % 17) as f32 - 8.0) / 4.0).collect();
                let filters: Vec<f32> = (0..channels * taps).map(|k| ((k * 11 % 7) as f32 - 3.0) / 2.0).collect();
                let biases: Vec<f32> = (0..channels).map(|c| c as f32 / 4.0 - 0.5).collect();
                let residuals: Vec<f32> = (0..channels * oh * ow).map(|k| ((k * 13 % 5) as f32 - 2.0) / 2.0).collect();
                for activation in [Activation::Identity, Activation::Clip(0.0, 6.0), Activation::Swish] {
                    for residual in [None, Some(&residuals[..])] {
                        let mut out = vec![f32::NAN; channels * oh * ow + 1];
                        let mut fresh = Fresh::over(&mut out);
                        fresh.copy(&[-1.0]);
                        let epilogue = (residual, activation);
                        let geometry = ([h, w], &window, [oh, ow]);
                        Blocked::default().planes(
                            &inputs, geometry.0, &filters, geometry.1, geometry.2, &biases, epilogue, &mut fresh,
                        );
                        assert_eq!(out[0], -1.0, "what was written before stays");
                        for c in 0..channels {
                            let sums = naive(
                                &inputs[c * h * w..][..h * w],
                                [h, w],
                                &filters[c * taps..][..taps],
                                &window,
                                [oh, ow],
                            );
                            for (k, sum) in sums.into_iter().enumerate() {
                                let at = c * oh * ow + k;
                                let expected = finished(sum, biases[c], residual.map_or(0.0, |r| r[at]), activation);
                                let value = out[1 + at];
                                assert!(
                                    close(value, expected),
                                    "{window:?} {activation:?} {channels} channels, residual {}: channel {c} at {k}: {value} against {expected}",
                                    residual.is_some()
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}
