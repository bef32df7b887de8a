//! A stride-1 convolution as one matrix product per filter tap, without an im2col matrix.
//!
//! At stride 1, the inputs that tap `(i, j)` reads for a run of output pixels lie at one offset
//! into the padded input, `i * dy` rows and `j * dx` columns on, for every pixel of the run —
//! when the run is counted in the padded input's columns, each output row followed by the
//! `span - 1` columns that only the padding has. So each tap is the product of its column of
//! filter weights (`[m, c]`) with a shifted view of a padded copy of the input (`[c, run]`),
//! summed over the taps; the padding columns are computed along and dropped. That reads the
//! input about once where an im2col matrix writes it `kh * kw` times and reads it again, at the
//! price of those extra columns: it suits rows many times wider than the window (see [`suits`]).

use std::ops::Range;

use super::gemm::{packed_gemm, Matrix};
use super::window::Window;

/// A task's scratch for the bands of output pixels it convolves.
#[derive(Default)]
pub(crate) struct Taps {
    /// The padded input the band reads, for each of the `c` channels, zero in the padding.
    padded: Vec<f32>,
    /// The band's sums, `[m, run]`: its pixels in the padded input's columns.
    sums: Vec<f32>,
    /// The band's first output pixel `(y0, x0)` and last `(y1, x1)`, the output's width, the
    /// padded rows' and the run's length.
    first: [usize; 2],
    last: [usize; 2],
    ow: usize,
    wp: usize,
    run: usize,
}

/// Whether a convolution with `window` whose output rows are `ow` wide and whose filters read `c`
/// channels is best computed per tap. Measured against im2col (3x3 filters, 32 to 128 channels):
/// per tap is 15 % faster on rows 112 and 128 wide, even on 64, slower on 32 and below, where the
/// padding columns computed along and the taps' separate products cost more than the im2col
/// matrix saves; and slower with few taps (1x3 over 4000 columns: 1.3x), whose im2col matrix is
/// small, or few channels, whose products are too short to be worth a pass over the sums each.
pub(crate) fn suits(window: &Window, ow: usize, c: usize) -> bool {
    window.strides == [1, 1]
        && window.kernel[0] * window.kernel[1] >= MIN_TAPS
        && MIN_WIDTH_PER_PADDING * (window.span(1) - 1) <= ow
        && c >= MIN_CHANNELS
}

/// The fewest taps, output columns per padding column and input channels per group for which
/// [`suits`] takes a convolution.
const MIN_TAPS: usize = 9;
const MIN_WIDTH_PER_PADDING: usize = 48;
const MIN_CHANNELS: usize = 16;

impl Taps {
    /// Convolves `image` (`[c, h, w]`) with the `m` `filters` (`[m, c, kh, kw]`) over the output
    /// pixels `pixels` of an `ow`-wide output (`window` at stride 1, see [`suits`]); then
    /// [`filter`](Self::filter) gives each filter's sums.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn convolve(
        &mut self,
        image: &[f32],
        [c, h, w]: [usize; 3],
        window: &Window,
        ow: usize,
        pixels: Range<usize>,
        filters: &[f32],
        m: usize,
    ) {
        assert!(window.strides == [1, 1] && !pixels.is_empty() && ow > 0, "a band of a stride-1 convolution");
        let [kh, kw] = window.kernel;
        let ([dy, dx], top, left) = (window.dilations, window.pads[0], window.pads[1]);
        let wp = ow + window.span(1) - 1;
        let ([y0, x0], [y1, x1]) =
            ([pixels.start / ow, pixels.start % ow], [(pixels.end - 1) / ow, (pixels.end - 1) % ow]);
        // The padded input the band reads, row after row `wp` wide from row `y0`: from the
        // band's first pixel's column on, up to its last pixel's window's end.
        let run = (y1 - y0) * wp + x1 + 1 - x0;
        let len = (window.span(0) - 1) * wp + window.span(1) - 1 + run;
        (self.first, self.last, self.ow, self.wp, self.run) = ([y0, x0], [y1, x1], ow, wp, run);
        self.padded.clear();
        self.padded.resize(c * len, 0.0);
        for (channel, padded) in image.chunks_exact(h * w).take(c).zip(self.padded.chunks_exact_mut(len)) {
            for r in 0..(x0 + len).div_ceil(wp) {
                let Some(iy) = (y0 + r).checked_sub(top).filter(|&iy| iy < h) else { continue };
                // The row's input columns (at `left..left + w` of it) within the span kept.
                let from = (r * wp + left).max(x0);
                let to = (r * wp + left + w).min(x0 + len);
                if from < to {
                    let source = &channel[iy * w + from - r * wp - left..][..to - from];
                    padded[from - x0..to - x0].copy_from_slice(source);
                }
            }
        }
        if self.sums.len() < m * run {
            self.sums.resize(m * run, 0.0);
        }
        let taps = kh * kw;
        for t in 0..taps {
            let (i, j) = (t / kw, t % kw);
            // Filter `o`'s weight for channel `ch` at this tap, and the padded input that the
            // tap reads for the run's pixel `q` in channel `ch`.
            let weights = Matrix { offset: t, rows: c * taps, columns: taps };
            let inputs = Matrix { offset: i * dy * wp + j * dx, rows: len, columns: 1 };
            let beta = if t == 0 { 0.0 } else { 1.0 };
            packed_gemm(
                (m, c, run),
                1.0,
                (filters, weights),
                (&self.padded, inputs),
                beta,
                &mut self.sums[..m * run],
                run,
            );
        }
    }

    /// Filter `k`'s sums over the band's pixels, in order: a piece per output row.
    pub(crate) fn filter(&self, k: usize) -> impl Iterator<Item = &[f32]> + '_ {
        let ([y0, x0], [y1, x1]) = (self.first, self.last);
        let sums = &self.sums[k * self.run..(k + 1) * self.run];
        (y0..=y1).map(move |y| {
            let from = if y == y0 { x0 } else { 0 };
            // The columns past the output's width are the padding's.
            let to = if y == y1 { x1 + 1 } else { self.ow };
            &sums[(y - y0) * self.wp + from - x0..(y - y0) * self.wp + to - x0]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Output `(o, y, x)` of the convolution as ONNX defines it.
    fn naive(image: &[f32], [c, h, w]: [usize; 3], filters: &[f32], window: &Window, [o, y, x]: [usize; 3]) -> f32 {
        let [kh, kw] = window.kernel;
        let mut sum = 0.0f64;
        for ch in 0..c {
            for i in 0..kh {
                for j in 0..kw {
                    let iy = (y + i * window.dilations[0]) as isize - window.pads[0] as isize;
                    let ix = (x + j * window.dilations[1]) as isize - window.pads[1] as isize;
                    if (0..h as isize).contains(&iy) && (0..w as isize).contains(&ix) {
                        let weight = filters[((o * c + ch) * kh + i) * kw + j];
                        sum += f64::from(weight) * f64::from(image[(ch * h + iy as usize) * w + ix as usize]);
                    }
                }
            }
        }
        sum as f32
    }

    #[test]
    fn wide_rows_of_many_channels_under_a_3x3_window_at_stride_1_suit() {
        let window = |kernel, strides, dilations| Window { kernel, strides, pads: [1; 4], dilations };
        assert!(suits(&window([3, 3], [1, 1], [1, 1]), 128, 64));
        assert!(suits(&window([5, 5], [1, 1], [1, 1]), 224, 16));
        assert!(!suits(&window([3, 3], [1, 1], [1, 1]), 32, 64), "narrow rows");
        assert!(!suits(&window([3, 3], [1, 1], [4, 4]), 128, 64), "a wide dilated window");
        assert!(!suits(&window([3, 3], [2, 2], [1, 1]), 128, 64), "stride 2");
        assert!(!suits(&window([1, 3], [1, 1], [1, 1]), 4000, 64), "three taps");
        assert!(!suits(&window([3, 3], [1, 1], [1, 1]), 128, 3), "three channels");
    }

    #[test]
    fn bands_of_pixels_sum_every_tap_inside_the_input() {
        let configs = [
            ([3, 9, 24], [3, 3], [1, 1, 1, 1], [1, 1]),
            ([2, 5, 40], [5, 3], [2, 0, 2, 1], [1, 2]),
            ([1, 6, 70], [1, 3], [0, 2, 0, 2], [1, 4]),
            ([4, 7, 16], [3, 1], [1, 0, 1, 0], [2, 1]),
            ([2, 4, 17], [2, 2], [0, 0, 1, 1], [1, 1]),
        ];
        for ([c, h, w], kernel, pads, dilations) in configs {
            let window = Window { kernel, strides: [1, 1], pads, dilations };
            let (oh, ow) = (window.output(0, h, false).unwrap(), window.output(1, w, false).unwrap());
            let m = 3;
            let image: Vec<f32> = (0..c * h * w).map(|k| ((k * 37 % 17) as f32 - 8.0) / 4.0).collect();
            let filters: Vec<f32> =
                (0..m * c * kernel[0] * kernel[1]).map(|k| ((k * 11 % 7) as f32 - 3.0) / 2.0).collect();
            let plane = oh * ow;
            // Whole planes, one row, and bands that start and end inside rows.
            for pixels in [0..plane, ow..2 * ow, 1..plane - 1, ow / 2..2 * ow + 3, plane - 1..plane, 0..1] {
                let mut taps = Taps { sums: vec![f32::NAN; 4], ..Taps::default() };
                taps.convolve(&image, [c, h, w], &window, ow, pixels.clone(), &filters, m);
                for o in 0..m {
                    let got: Vec<f32> = taps.filter(o).flatten().copied().collect();
                    assert_eq!(got.len(), pixels.len(), "{window:?} {pixels:?}");
                    for (p, value) in pixels.clone().zip(got) {
                        let expected = naive(&image, [c, h, w], &filters, &window, [o, p / ow, p % ow]);
                        assert!(
                            (value - expected).abs() <= 1e-4 * expected.abs().max(1.0),
                            "{window:?} {pixels:?} filter {o} pixel {p}: {value} against {expected}"
                        );
                    }
                }
            }
        }
    }
}
