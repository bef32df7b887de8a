//! 3x3 convolution at stride 1 by Winograd's minimal filtering F(2x2, 3x3) (Lavin and Gray, "Fast
//! Algorithms for Convolutional Neural Networks", 2016). Each 2x2 block of a filter's output comes
//! from the 4x4 block of input under it through 16 multiplications per input channel instead of
//! 36: the filters and the input blocks are transformed (`U = G g Gᵀ`, `V = Bᵀ d B`), the
//! element-wise products summed over the input channels are 16 matrix products (element `e` of
//! every filter's `U` by element `e` of every block's `V`, for each of the 16), and each block's
//! 16 sums are transformed back (`Y = Aᵀ M A`). The transforms only add (and halve, for the filters), so the
//! result rounds about as a direct sum does; the products are the `gemm` crate's.

use std::array::from_fn;
use std::cell::RefCell;
use std::ops::Range;
use std::sync::Arc;

use super::conv::residual;
use super::epilogue::{finish, Activation};
use super::gemm::{packed_gemm, Matrix};
use super::split::{compute_fresh, compute_in_bands};
use super::window::Window;
use super::Floats;
use crate::{KernelError, KernelFrame};

/// Elements of a transformed 4x4 block: one matrix product each.
const TAPS: usize = 16;

/// The fewest input and output channels a convolution has for this way to pay: with fewer, the
/// products are too short for the transforms beside them. Against im2col, U-Net's layers of 16 and
/// 32 channels on 64x64 to 128x128 planes take 0.79-0.90x the time, ResNet-50's of 64 to 256
/// channels 0.58-0.66x.
const MIN_CHANNELS: usize = 16;

/// The fewest output rows and columns. A 7x7 output is 16 blocks covering 8x8, a quarter of whose
/// work is cut off, and still takes 0.67x im2col's time (ResNet-50's 512-channel layers), an 8x8
/// one 0.44-0.49x (U-Net's); below, untried.
const MIN_SIDE: usize = 7;

/// The fewest blocks a task transforms where the blocks are dealt to tasks; with fewer blocks
/// than the workers' share, the filters are dealt instead, each task transforming all blocks.
/// (128 took the same time, or left a worker idle on a 28x28 output.)
const MIN_BLOCKS_PER_TASK: usize = 48;

/// The fewest filters a task multiplies where the filters are dealt to tasks.
const MIN_FILTERS_PER_TASK: usize = 16;

/// The most bytes of transformed input blocks made at once (`16 x` channels `x` blocks), which
/// the products then read from cache.
const MAX_INPUT_BYTES: usize = 1 << 20;

/// Whether a convolution of `c` input channels to `m` output channels per group, with `window`,
/// to an `[oh, ow]` output, goes this way.
pub(crate) fn suits(window: &Window, [c, m]: [usize; 2], [oh, ow]: [usize; 2]) -> bool {
    window.kernel == [3, 3]
        && window.strides == [1, 1]
        && window.dilations == [1, 1]
        && c >= MIN_CHANNELS
        && m >= MIN_CHANNELS
        && oh.min(ow) >= MIN_SIDE
}

/// The operands of a convolution that [`suits`] this way (one group).
pub(crate) struct Convolution {
    pub x: Arc<Floats>,
    pub b: Option<Arc<Floats>>,
    pub z: Option<Arc<Floats>>,
    pub activation: Activation,
    /// The image `[n, c, h, w]`, the filters' count and the output `[oh, ow]`.
    pub dims: [usize; 4],
    pub m: usize,
    pub out: [usize; 2],
    /// The rows and columns of padding before the image.
    pub pads: [usize; 2],
}

/// Sets result 0 of `frame` to `convolution` with the transformed 3x3 `filters`. Where the
/// output has blocks enough for every worker, each task takes whole rows of blocks, a band of at
/// most [`MAX_INPUT_BYTES`] of transformed blocks at a time, for every filter; otherwise each
/// task takes a share of the filters over the whole output.
pub(crate) fn conv2d(
    frame: &mut KernelFrame<'_>,
    filters: Arc<Filters>,
    convolution: Convolution,
) -> Result<(), KernelError> {
    let Convolution { x, b, z, activation, dims: [n, c, h, w], m, out: [oh, ow], pads } = convolution;
    assert_eq!([filters.m, filters.c], [m, c], "filters transformed for another convolution");
    let (plane, across) = (oh * ow, ow.div_ceil(2));
    let blocks = n * oh.div_ceil(2) * across;
    let workers = frame.host().parallelism_level().max(1);
    // Multiply-adds per output pixel: 16 per block of 4 per filter and input channel.
    let pixel_cost = 4 * m * c;
    let finish_plane = move |values: &mut [f32], unit: usize, pixels: Range<usize>| {
        if b.is_some() || z.is_some() || activation != Activation::Identity {
            let bias = b.as_ref().map_or(0.0, |b| b.data[unit % m]);
            finish(values, bias, residual(&z, unit, plane).map(|z| &z[pixels]), activation);
        }
    };
    if blocks >= workers * MIN_BLOCKS_PER_TASK {
        let band_blocks = MAX_INPUT_BYTES / (TAPS * c * size_of::<f32>());
        let band = 2 * ow * (band_blocks / across).max(1);
        let min_pixels = 4 * MIN_BLOCKS_PER_TASK;
        return compute_in_bands(frame, &[n, m, oh, ow], pixel_cost, [2 * ow, min_pixels, band], move |image, band| {
            let pixels = band.columns();
            let rows = pixels.start / ow..pixels.end.div_ceil(ow);
            let input = &x.data[image * c * h * w..][..c * h * w];
            SCRATCH.with_borrow_mut(|scratch| {
                scratch.convolve(input, [c, h, w], pads, [oh, ow], rows, &filters, 0..m);
                for k in 0..m {
                    band.copy_row([scratch.plane(k)]);
                    finish_plane(band.row(k), image * m + k, pixels.clone());
                }
            });
        });
    }
    let min_filters = MIN_FILTERS_PER_TASK.min(m).max(n * m / workers);
    compute_fresh(frame, &[n, m, oh, ow], n * m, pixel_cost * plane, min_filters, move |planes, out| {
        let mut unit = planes.start;
        while unit < planes.end {
            let (image, first) = (unit / m, unit % m);
            let count = (m - first).min(planes.end - unit);
            let input = &x.data[image * c * h * w..][..c * h * w];
            SCRATCH.with_borrow_mut(|scratch| {
                scratch.convolve(input, [c, h, w], pads, [oh, ow], 0..oh, &filters, first..first + count);
                for k in 0..count {
                    out.copy(scratch.plane(k));
                    finish_plane(out.last(plane), unit + k, 0..plane);
                }
            });
            unit += count;
        }
    })
}

/// Filters `[m, c, 3, 3]`, transformed: [`TAPS`] matrices of `m x c`, one per element of `U`.
pub(crate) struct Filters {
    values: Vec<f32>,
    m: usize,
    c: usize,
}

impl Filters {
    pub(crate) fn new(weights: &[f32], [m, c]: [usize; 2]) -> Filters {
        assert_eq!(weights.len(), m * c * 9, "3x3 filters of {m} x {c} channels");
        let mut values = vec![0.0; TAPS * m * c];
        transform_filters(weights, &mut values, m * c);
        Filters { values, m, c }
    }
}

vectorized! {
    /// `U = G g Gᵀ` of each 3x3 filter of `weights`: element `e` of filter `f` at
    /// `values[e * stride + f]`.
    fn transform_filters(weights: &[f32], values: &mut [f32], stride: usize) {
        for (f, g) in weights.chunks_exact(9).enumerate() {
            // G g: the filter's rows combined.
            let row = |r: usize| [g[3 * r], g[3 * r + 1], g[3 * r + 2]];
            let (g0, g1, g2) = (row(0), row(1), row(2));
            let rows: [[f32; 3]; 4] = [
                g0,
                from_fn(|j| 0.5 * (g0[j] + g1[j] + g2[j])),
                from_fn(|j| 0.5 * (g0[j] - g1[j] + g2[j])),
                g2,
            ];
            // (G g) Gᵀ: each row's elements combined the same way.
            for (i, [a, b, c]) in rows.into_iter().enumerate() {
                let u = [a, 0.5 * (a + b + c), 0.5 * (a - b + c), c];
                for (j, value) in u.into_iter().enumerate() {
                    values[(4 * i + j) * stride + f] = value;
                }
            }
        }
    }
}

thread_local! {
    /// Each thread's scratch, kept from call to call: its buffers reach megabytes, which made
    /// afresh cost page faults and zeroing on every call (a quarter of a 64-channel layer's time).
    static SCRATCH: RefCell<Scratch> = RefCell::default();
}

/// What one convolution by blocks needs between calls: the padded input rows, the transformed
/// blocks, their sums and the output, kept so that a task allocates them once.
#[derive(Default)]
pub(crate) struct Scratch {
    padded: Vec<f32>,
    /// Rows combined on the way into and out of the transforms.
    lines: Vec<f32>,
    inputs: Vec<f32>,
    sums: Vec<f32>,
    out: Vec<f32>,
    /// Output pixels per filter in `out`.
    len: usize,
}

impl Scratch {
    /// Convolves `image` (`[c, h, w]`, padded by `top` rows and `left` columns) with the filters
    /// `channels` of `filters` over the output rows `rows` (starting at an even row) of an
    /// `[oh, ow]` output; then [`plane`](Self::plane) gives each filter's pixels of those rows.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn convolve(
        &mut self,
        image: &[f32],
        [c, h, w]: [usize; 3],
        [top, left]: [usize; 2],
        [oh, ow]: [usize; 2],
        rows: Range<usize>,
        filters: &Filters,
        channels: Range<usize>,
    ) {
        assert!(rows.start.is_multiple_of(2) && rows.end <= oh && filters.c == c && channels.end <= filters.m);
        let (block_rows, blocks_across) = (rows.len().div_ceil(2), ow.div_ceil(2));
        let blocks = block_rows * blocks_across;
        let (height, width) = (2 * block_rows + 2, 2 * blocks_across + 2);
        // The input under the blocks, zero where it is padding (or past the image).
        self.padded.clear();
        self.padded.resize(c * height * width, 0.0);
        // (`width` is at least `ow + 2`, which is `w` plus the padding on both sides.)
        for (channel, padded) in image.chunks_exact(h * w).zip(self.padded.chunks_exact_mut(height * width)) {
            for (r, padded_row) in padded.chunks_exact_mut(width).enumerate() {
                if let Some(y) = (rows.start + r).checked_sub(top).filter(|&y| y < h) {
                    padded_row[left..left + w].copy_from_slice(&channel[y * w..][..w]);
                }
            }
        }
        self.inputs.resize(TAPS * c * blocks, 0.0);
        // Four lines of the padded width: more than the eight of `blocks_across` the sums need.
        self.lines.resize(4 * width, 0.0);
        for (channel, padded) in self.padded.chunks_exact(height * width).enumerate() {
            let inputs = &mut self.inputs[channel * blocks..];
            transform_inputs(padded, width, [block_rows, blocks_across], &mut self.lines, inputs, c * blocks);
        }
        let (m, count) = (filters.m, channels.len());
        self.sums.resize(TAPS * count * blocks, 0.0);
        for e in 0..TAPS {
            let u = Matrix { offset: e * m * c + channels.start * c, rows: c, columns: 1 };
            let v = Matrix { offset: e * c * blocks, rows: blocks, columns: 1 };
            let sums = &mut self.sums[e * count * blocks..][..count * blocks];
            packed_gemm((count, c, blocks), 1.0, (&filters.values, u), (&self.inputs, v), 0.0, sums, blocks);
        }
        self.len = rows.len() * ow;
        self.out.resize(count * self.len, 0.0);
        for (k, out) in self.out.chunks_exact_mut(self.len).enumerate() {
            let sums = &self.sums[k * blocks..];
            transform_sums(sums, count * blocks, [block_rows, blocks_across], [rows.len(), ow], &mut self.lines, out);
        }
    }

    /// The output pixels of filter `k` of the last [`convolve`](Self::convolve)'s `channels`, its
    /// `rows` one after the other.
    pub(crate) fn plane(&self, k: usize) -> &[f32] {
        &self.out[k * self.len..][..self.len]
    }
}

vectorized! {
    /// `V = Bᵀ d B` of each 4x4 block `d` of `padded` (rows of `width`), `blocks[0]` rows of
    /// `blocks[1]` blocks 2 apart: element `e` of block `b` at `inputs[e * stride + b]`. Row by
    /// row, so that every loop runs along a row (and vectorizes): `Bᵀ d` combines whole rows of
    /// the input into `lines` (4 of `width`), then `(Bᵀ d) B` combines their columns.
    fn transform_inputs(
        padded: &[f32],
        width: usize,
        [rows, across]: [usize; 2],
        lines: &mut [f32],
        inputs: &mut [f32],
        stride: usize,
    ) {
        let (t0, rest) = lines.split_at_mut(width);
        let (t1, rest) = rest.split_at_mut(width);
        let (t2, t3) = rest.split_at_mut(width);
        for r in 0..rows {
            let d = |i: usize| &padded[(2 * r + i) * width..][..width];
            let (d0, d1, d2, d3) = (d(0), d(1), d(2), d(3));
            for col in 0..width {
                t0[col] = d0[col] - d2[col];
                t1[col] = d1[col] + d2[col];
                t2[col] = d2[col] - d1[col];
                t3[col] = d1[col] - d3[col];
            }
            for (i, t) in [&*t0, &*t1, &*t2, &*t3].into_iter().enumerate() {
                let t = &t[..2 * across + 2];
                let at = |j: usize| (4 * i + j) * stride + r * across;
                for (x, v) in inputs[at(0)..][..across].iter_mut().enumerate() {
                    *v = t[2 * x] - t[2 * x + 2];
                }
                for (x, v) in inputs[at(1)..][..across].iter_mut().enumerate() {
                    *v = t[2 * x + 1] + t[2 * x + 2];
                }
                for (x, v) in inputs[at(2)..][..across].iter_mut().enumerate() {
                    *v = t[2 * x + 2] - t[2 * x + 1];
                }
                for (x, v) in inputs[at(3)..][..across].iter_mut().enumerate() {
                    *v = t[2 * x + 1] - t[2 * x + 3];
                }
            }
        }
    }
}

vectorized! {
    /// `Y = Aᵀ M A` of one filter's blocks, element `e` of block `b` of `M` at `sums[e * stride +
    /// b]`: the 2x2 pixels of each block into `out` (`[oh, ow]`, blocks past it cut off). A row of
    /// blocks at a time, along the row: `Aᵀ M` into `lines` (8 of `blocks[1]`), then its columns.
    fn transform_sums(
        sums: &[f32],
        stride: usize,
        [rows, across]: [usize; 2],
        [oh, ow]: [usize; 2],
        lines: &mut [f32],
        out: &mut [f32],
    ) {
        let (upper, lower) = lines[..8 * across].split_at_mut(4 * across);
        for r in 0..rows {
            let m = |i: usize, j: usize| &sums[(4 * i + j) * stride + r * across..][..across];
            for (j, (s0, s1)) in upper.chunks_exact_mut(across).zip(lower.chunks_exact_mut(across)).enumerate() {
                let (m0, m1, m2, m3) = (m(0, j), m(1, j), m(2, j), m(3, j));
                for x in 0..across {
                    s0[x] = m0[x] + m1[x] + m2[x];
                    s1[x] = m1[x] - m2[x] - m3[x];
                }
            }
            for (i, s) in [&*upper, &*lower].into_iter().enumerate() {
                let y = 2 * r + i;
                if y >= oh {
                    break;
                }
                let (s0, s1, s2, s3) = (&s[..across], &s[across..2 * across], &s[2 * across..3 * across], &s[3 * across..]);
                let row = &mut out[y * ow..][..ow];
                let mut pairs = row.chunks_exact_mut(2);
                for (x, pair) in (&mut pairs).enumerate() {
                    pair[0] = s0[x] + s1[x] + s2[x];
                    pair[1] = s1[x] - s2[x] - s3[x];
                }
                // An odd width: the last block's left column.
                if let [last] = pairs.into_remainder() {
                    let x = across - 1;
                    *last = s0[x] + s1[x] + s2[x];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A direct 3x3 convolution at stride 1, the definition the blocks must match.
    fn direct(
        image: &[f32],
        [c, h, w]: [usize; 3],
        weights: &[f32],
        m: usize,
        [top, left]: [usize; 2],
        [oh, ow]: [usize; 2],
    ) -> Vec<f32> {
        let mut out = vec![0.0f32; m * oh * ow];
        for k in 0..m {
            for y in 0..oh {
                for x in 0..ow {
                    let mut sum = 0.0f64;
                    for ch in 0..c {
                        for i in 0..3 {
                            for j in 0..3 {
                                let (iy, ix) = ((y + i).checked_sub(top), (x + j).checked_sub(left));
                                if let (Some(iy), Some(ix)) = (iy.filter(|&v| v < h), ix.filter(|&v| v < w)) {
                                    sum += f64::from(image[(ch * h + iy) * w + ix])
                                        * f64::from(weights[((k * c + ch) * 3 + i) * 3 + j]);
                                }
                            }
                        }
                    }
                    out[(k * oh + y) * ow + x] = sum as f32;
                }
            }
        }
        out
    }

    /// Blocks of any rows of odd and even outputs, padded or not, match the direct sums; the
    /// values are small integers and halves, which the transforms keep exact.
    #[test]
    fn blocks_match_the_direct_convolution() {
        let value = |i: usize, salt: usize| ((i * 7 + salt) % 11) as f32 - 5.0;
        for (c, m, h, w, pads) in [(3, 5, 9, 7, [1, 1, 1, 1]), (2, 4, 8, 8, [0, 0, 0, 0]), (4, 3, 6, 11, [2, 0, 1, 1])]
        {
            let [top, left, bottom, right] = pads;
            let (oh, ow) = (h + top + bottom - 2, w + left + right - 2);
            let image: Vec<f32> = (0..c * h * w).map(|i| value(i, 1)).collect();
            let weights: Vec<f32> = (0..m * c * 9).map(|i| value(i, 3)).collect();
            let expected = direct(&image, [c, h, w], &weights, m, [top, left], [oh, ow]);
            let filters = Filters::new(&weights, [m, c]);
            let mut scratch = Scratch::default();
            for (rows, channels) in [(0..oh, 0..m), (2..oh.min(6), 1..m), (0..2, 0..1)] {
                scratch.convolve(&image, [c, h, w], [top, left], [oh, ow], rows.clone(), &filters, channels.clone());
                for (k, channel) in channels.enumerate() {
                    let want = &expected[channel * oh * ow..][rows.start * ow..rows.end * ow];
                    for (p, (&got, &want)) in scratch.plane(k).iter().zip(want).enumerate() {
                        assert!(
                            (got - want).abs() <= 1e-3 * want.abs().max(1.0),
                            "{c}x{h}x{w} pads {pads:?} rows {rows:?}: filter {channel} pixel {p}: {got} != {want}"
                        );
                    }
                }
            }
        }
    }
}
