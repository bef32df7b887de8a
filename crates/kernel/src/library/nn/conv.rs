//! `nn.conv2d.f32`: ONNX Conv on NCHW images, `(X [n, c, h, w], W [m, c / group, kh, kw] [, B [m]
//! [, Z [n, m, oh, ow]]])` with `strides`, `pads` (`[top, left, bottom, right]`, as ONNX orders
//! them), `dilations` and `group` (depthwise when `group == c`). ONNX's `auto_pad` is the
//! converter's to resolve into `pads`. A residual `Z` is added to the result and an `activation`
//! applied last (see [`epilogue`](super::epilogue)): the nodes an importer fuses into the layer.
//! A 3x3 filter at stride 1 of one group, with 16 channels or more in and out, over an output of
//! 7x7 or more, goes by Winograd's minimal filtering ([`winograd`](super::winograd)), its
//! filters transformed once for the program. Otherwise each group is an im2col matrix multiplied
//! by its filters — or, at stride 1 over wide rows, a product per filter tap over the padded
//! input ([`taps`](super::taps)); a 1x1 filter at stride 1
//! without padding multiplies the image itself; a depthwise filter (one input channel per group)
//! slides over its plane directly, or over a block of small planes at once
//! ([`depthwise`](super::depthwise)). Where there are many output pixels, or too few output
//! channels to keep every worker busy, each task takes a share of the pixels and lays out their
//! im2col columns itself, a band that fits its cache at a time; otherwise the im2col matrix is
//! made once and the result's channel planes are split over tasks. Each task finishes what it
//! computed (bias, residual, activation) right after computing it.

use std::ops::Range;
use std::sync::Arc;

use super::depthwise::{Blocked, Depthwise, LANES};
use super::epilogue::{finish, Activation};
use super::gemm::Matrix;
use super::split::{compute_fresh, compute_in_bands};
use super::tap_vectors::Isa;
use super::taps::{self, Taps};
use super::window::Window;
use super::winograd::{self, Convolution, Filters};
use super::{floats, int, operands, shape_error, Floats};
use crate::tensor::DenseHostTensor;
use crate::{KernelError, KernelFrame, KernelRegistry};

/// The fewest output channels of one group a task computes (see `conv2d`).
const MIN_CHANNELS_PER_TASK: usize = 32;

/// The widest output a depthwise layer computes a block of channels at a time (see `Blocked`).
/// Measured per output against a plane at a time: 0.5x on 7x7 planes; no gain on 14x14 planes at
/// stride 1, and a loss on wider ones.
const BLOCKED_MAX_WIDTH: usize = 7;

/// As [`BLOCKED_MAX_WIDTH`], at a stride past 1, where laying a plane out by phase also moves
/// four inputs per output: 0.5-0.7x on 14x14 inputs at stride 2, 0.8x on 28x28 ones, a loss on
/// 56x56 ones.
const BLOCKED_MAX_WIDTH_STRIDED: usize = 14;

/// The fewest output pixels a task computes when the pixels are split (see `conv2d`): each task
/// packs all the filters once, which this many pixels' multiplications outweigh.
const MIN_PIXELS_PER_TASK: usize = 128;

/// The most bytes of im2col columns a task lays out at once, where it splits its share of the
/// pixels into bands: the columns stay in its cache for the product that reads them. Against a
/// share's columns all at once (up to 1.2 MiB): U-Net's 3x3 layers on 16x16 to 64x64 planes
/// 0.65-0.75x the time, ResNet-50's on 56x56 ones unchanged.
const BAND_COLUMNS_BYTES: usize = 128 << 10;

/// The fewest pixels of such a band (and what its width is a multiple of).
const MIN_BAND: usize = 64;

/// The fewest output channels of one group a task computes where [`MIN_CHANNELS_PER_TASK`] would
/// leave workers idle.
const MIN_CHANNELS_FEW: usize = 8;

/// As [`MIN_PIXELS_PER_TASK`], for a layer whose output channels are too few to be split over the
/// workers (a DenseNet layer's 32 on a 14x14 plane): each task still multiplies all the filters,
/// over a share of the pixels smaller than otherwise, rather than one task doing it all.
const MIN_PIXELS_FEW_CHANNELS: usize = 96;

fn conv2d(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let (x, w) = (floats(frame, 0)?, floats(frame, 1)?);
    let b = if operands(frame) > 2 { Some(floats(frame, 2)?) } else { None };
    let z = if operands(frame) > 3 { Some(floats(frame, 3)?) } else { None };
    let activation = Activation::read(frame)?;
    let group = usize::try_from(int(frame, "group", 1)?).unwrap_or(0);
    let ([n, c, h, iw], [m, cg, kh, kw]) = (
        <[usize; 4]>::try_from(&x.dims[..])
            .map_err(|_| shape_error(frame, format_args!("X {} is not NCHW", x.shape())))?,
        <[usize; 4]>::try_from(&w.dims[..])
            .map_err(|_| shape_error(frame, format_args!("W {} is not [M, C/group, kH, kW]", w.shape())))?,
    );
    if group == 0 || c % group != 0 || m % group != 0 || cg * group != c || kh == 0 || kw == 0 || h == 0 || iw == 0 {
        return Err(shape_error(
            frame,
            format_args!("X {} and W {} do not convolve in {group} groups", x.shape(), w.shape()),
        ));
    }
    if let Some(b) = &b {
        if b.dims != [m] {
            return Err(shape_error(frame, format_args!("B {} is not [{m}] for W {}", b.shape(), w.shape())));
        }
    }
    let window = Window::read(frame, [kh, kw])?;
    let (Some(oh), Some(ow)) = (window.output(0, h, false), window.output(1, iw, false)) else {
        return Err(shape_error(frame, format_args!("a {kh}x{kw} window {window:?} does not fit X {}", x.shape())));
    };
    if let Some(z) = &z {
        if z.dims != [n, m, oh, ow] {
            return Err(shape_error(frame, format_args!("Z {} is not the result's [{n}, {m}, {oh}, {ow}]", z.shape())));
        }
    }
    let (mg, depth, plane) = (m / group, cg * kh * kw, oh * ow);
    let fused = z.is_some() || activation != Activation::Identity;
    if cg == 1 {
        // Depthwise: each output plane reads one input plane, which a GEMM of one row per group
        // would multiply at a fraction of its speed; the window slides over the plane instead.
        // Small planes, when each output channel reads the input channel of its own index, go
        // a block of channels at a time (see `Blocked`).
        let widest = if window.strides[1] > 1 { BLOCKED_MAX_WIDTH_STRIDED } else { BLOCKED_MAX_WIDTH };
        let blocked = mg == 1 && ow <= widest;
        return compute_fresh(frame, &[n, m, oh, ow], n * m, depth * plane, 1, move |planes, out| {
            if blocked {
                let mut scratch = Blocked::default();
                let mut unit = planes.start;
                while unit < planes.end {
                    // The block's channels: up to LANES, all of one image.
                    let (image, channel) = (unit / m, unit % m);
                    let count = LANES.min(planes.end - unit).min(m - channel);
                    let inputs = &x.data[(image * c + channel) * h * iw..][..count * h * iw];
                    let filters = &w.data[channel * depth..][..count * depth];
                    let biases = b.as_ref().map_or(&[0.0; LANES][..count], |b| &b.data[channel..channel + count]);
                    let residuals = z.as_deref().map(|z| &z.data[unit * plane..(unit + count) * plane]);
                    let epilogue = (residuals, activation);
                    scratch.planes(inputs, [h, iw], filters, &window, [oh, ow], biases, epilogue, out);
                    unit += count;
                }
                return;
            }
            let (mut scratch, isa) = (Depthwise::default(), Isa::detect());
            for unit in planes {
                let (image, channel) = (unit / m, unit % m);
                let input = &x.data[(image * c + channel / mg) * h * iw..][..h * iw];
                let filter = &w.data[channel * depth..][..depth];
                let bias = b.as_ref().map_or(0.0, |b| b.data[channel]);
                let epilogue = (residual(&z, unit, plane), activation);
                scratch.plane(isa, input, [h, iw], filter, &window, [oh, ow], bias, epilogue, out);
            }
        });
    }
    if group == 1 && winograd::suits(&window, [cg, mg], [oh, ow]) {
        // The filters transformed once for the program when they are its constants.
        let weights = frame.get::<DenseHostTensor>(1)?;
        let filters = frame.derived(&[weights], "winograd filters", || Ok(Filters::new(&w.data, [m, c])))?;
        let (dims, pads) = ([n, c, h, iw], [window.pads[0], window.pads[1]]);
        let convolution = Convolution { x, b, z, activation, dims, m, out: [oh, ow], pads };
        return winograd::conv2d(frame, filters, convolution);
    }
    let direct = kh == 1 && kw == 1 && window.strides == [1, 1] && window.pads == [0; 4];
    let workers = frame.host().parallelism_level().max(1);
    // Output channels too few to give every worker a task (below) are split by pixels instead,
    // in shares down to MIN_PIXELS_FEW_CHANNELS.
    let few_channels = n * m / mg.clamp(1, MIN_CHANNELS_PER_TASK) < workers;
    let min_pixels = if few_channels { MIN_PIXELS_FEW_CHANNELS } else { MIN_PIXELS_PER_TASK };
    if (!direct || few_channels) && n * plane >= workers * min_pixels {
        // Many output pixels (an early layer): each task lays out the im2col columns of its own
        // pixels, in parallel and into its cache, and multiplies every group's filters by them —
        // or, at stride 1 over wide rows, multiplies each tap's filter weights by the padded
        // input itself (see `taps`). A 1x1 filter takes this way only when its output channels
        // are too few to split: split by channels, each task multiplies the image in place.
        let by_taps = taps::suits(&window, ow, cg);
        let max_band = if direct || by_taps {
            usize::MAX
        } else {
            (BAND_COLUMNS_BYTES / (depth * size_of::<f32>())).max(MIN_BAND).next_multiple_of(MIN_BAND)
        };
        return compute_in_bands(frame, &[n, m, oh, ow], m * depth, [1, min_pixels, max_band], move |image, band| {
            let pixels = band.columns();
            let (mut columns, mut taps) = (Vec::new(), Taps::default());
            for g in 0..group {
                let input = &x.data[(image * c + g * cg) * h * iw..][..cg * h * iw];
                let filters = Matrix { offset: g * mg * depth, rows: depth, columns: 1 };
                if direct {
                    let image_matrix = Matrix { offset: pixels.start, rows: plane, columns: 1 };
                    band.multiply(mg, depth, (&w.data, filters), (input, image_matrix));
                    continue;
                }
                if by_taps {
                    let filters = &w.data[g * mg * depth..][..mg * depth];
                    taps.convolve(input, [cg, h, iw], &window, ow, pixels.clone(), filters, mg);
                    for k in 0..mg {
                        band.copy_row(taps.filter(k));
                    }
                    continue;
                }
                im2col(input, [cg, h, iw], &window, [oh, ow], pixels.clone(), &mut columns);
                let image_matrix = Matrix { offset: 0, rows: pixels.len(), columns: 1 };
                band.multiply(mg, depth, (&w.data, filters), (&columns, image_matrix));
            }
            if b.is_some() || fused {
                for channel in 0..m {
                    let bias = b.as_ref().map_or(0.0, |b| b.data[channel]);
                    let residual = residual(&z, image * m + channel, plane).map(|z| &z[pixels.clone()]);
                    finish(band.row(channel), bias, residual, activation);
                }
            }
        });
    }
    // The im2col matrix of each (image, group), made once before the output planes are dealt to
    // tasks: tasks that share a group read the same matrix instead of each laying it out again.
    let columns: Vec<Vec<f32>> = if direct {
        Vec::new()
    } else {
        (0..n * group)
            .map(|pair| {
                let input_offset = pair * cg * h * iw;
                let mut columns = Vec::new();
                let image = &x.data[input_offset..input_offset + cg * h * iw];
                im2col(image, [cg, h, iw], &window, [oh, ow], 0..plane, &mut columns);
                columns
            })
            .collect()
    };
    // Each task packs the image matrix of its groups once: a task takes at least 32 of a group's
    // output channels, so that packing stays small beside the multiplications — or, where that
    // leaves a worker without a task, a worker's share down to MIN_CHANNELS_FEW. And the planes
    // go in one round, a task per worker: more tasks packed the image more often (ResNet-50
    // 0.95x, DenseNet-121 0.95x the time in one round).
    let min_channels =
        if few_channels { mg.div_ceil(workers).max(MIN_CHANNELS_FEW).min(mg) } else { mg.min(MIN_CHANNELS_PER_TASK) };
    let min_channels = min_channels.max(n * m / workers);
    compute_fresh(frame, &[n, m, oh, ow], n * m, depth * plane, min_channels, move |planes, out| {
        let mut unit = planes.start;
        // One run of output planes per (image, group): the same im2col matrix for all of them.
        while unit < planes.end {
            let (image, channel) = (unit / m, unit % m);
            let g = channel / mg;
            let count = ((g + 1) * mg - channel).min(planes.end - unit);
            let (source, source_offset) = if direct {
                (&x.data[..], (image * c + g * cg) * h * iw)
            } else {
                (&columns[image * group + g][..], 0)
            };
            let filters = Matrix { offset: channel * depth, rows: depth, columns: 1 };
            let image_matrix = Matrix { offset: source_offset, rows: plane, columns: 1 };
            out.multiply((count, depth, plane), (&w.data, filters), (source, image_matrix));
            if b.is_some() || fused {
                for (k, values) in out.last(count * plane).chunks_exact_mut(plane).enumerate() {
                    let bias = b.as_ref().map_or(0.0, |b| b.data[channel + k]);
                    finish(values, bias, residual(&z, unit + k, plane), activation);
                }
            }
            unit += count;
        }
    })
}

/// Plane `unit` (image * m + channel) of the residual `z`, when there is one.
pub(crate) fn residual(z: &Option<Arc<Floats>>, unit: usize, plane: usize) -> Option<&[f32]> {
    z.as_deref().map(|z| &z.data[unit * plane..(unit + 1) * plane])
}

/// Lays out `image` (`[c, h, w]`) as the `[c * kh * kw, pixels.len()]` matrix whose column `p`
/// holds the window of output pixel `pixels.start + p` (zeros in the padding). Every element is
/// written once, in order: the padding's zeros and, at stride 1, each row's inside as one copy.
fn im2col(
    image: &[f32],
    [c, h, w]: [usize; 3],
    window: &Window,
    [oh, ow]: [usize; 2],
    pixels: Range<usize>,
    columns: &mut Vec<f32>,
) {
    let [kh, kw] = window.kernel;
    let ([sy, sx], [dy, dx]) = (window.strides, window.dilations);
    let (top, left) = (window.pads[0], window.pads[1]);
    let pixels = pixels.start.min(oh * ow)..pixels.end.min(oh * ow);
    columns.clear();
    columns.reserve(c * kh * kw * pixels.len());
    let zeros = |columns: &mut Vec<f32>, count: usize| columns.resize(columns.len() + count, 0.0);
    for channel in image.chunks_exact(h * w).take(c) {
        for i in 0..kh {
            for j in 0..kw {
                // Output columns x whose input column x * sx + j * dx - left is in 0..w.
                let offset = j * dx;
                let first = left.saturating_sub(offset).div_ceil(sx).min(ow);
                let end = (w + left).checked_sub(offset).map_or(0, |room| room.div_ceil(sx)).clamp(first, ow);
                let mut pixel = pixels.start;
                while pixel < pixels.end {
                    // Output row `y`, columns `from..to` of it.
                    let (y, from) = (pixel / ow, pixel % ow);
                    let to = (pixels.end - y * ow).min(ow);
                    pixel = y * ow + to;
                    // The input row this tap reads for output row `y`, if inside the image.
                    let row = (y * sy + i * dy).checked_sub(top).filter(|&iy| iy < h);
                    let (inside_from, inside_to) = (first.clamp(from, to), end.clamp(from, to));
                    let Some(iy) = row.filter(|_| inside_from < inside_to) else {
                        zeros(columns, to - from);
                        continue;
                    };
                    let source = &channel[iy * w..(iy + 1) * w];
                    let start = inside_from * sx + offset - left;
                    let count = inside_to - inside_from;
                    zeros(columns, inside_from - from);
                    if sx == 1 {
                        columns.extend_from_slice(&source[start..start + count]);
                    } else {
                        columns.extend(source[start..].iter().step_by(sx).take(count));
                    }
                    zeros(columns, to - inside_to);
                }
            }
        }
    }
}

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("nn.conv2d.f32", conv2d);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn im2col_columns_hold_each_windows_inputs_and_zeros_in_the_padding() {
        let configs = [
            ([2, 5, 6], [3, 3], [1, 1], [1, 1, 1, 1], [1, 1]),
            ([1, 7, 7], [3, 3], [2, 2], [1, 1, 1, 1], [1, 1]),
            ([3, 9, 6], [5, 3], [2, 1], [2, 0, 2, 1], [1, 2]),
            ([1, 4, 6], [7, 7], [1, 1], [3, 3, 3, 3], [1, 1]),
            ([2, 3, 3], [1, 1], [2, 2], [0, 4, 0, 4], [1, 1]),
        ];
        for ([c, h, w], kernel, strides, pads, dilations) in configs {
            let window = Window { kernel, strides, pads, dilations };
            let (oh, ow) = (window.output(0, h, false).unwrap(), window.output(1, w, false).unwrap());
            let image: Vec<f32> = (0..c * h * w).map(|k| k as f32 + 1.0).collect();
            // The whole plane, and ranges that start and end inside output rows.
            let plane = oh * ow;
            for pixels in [0..plane, 1..plane, 0..plane - 1, plane / 3..plane / 3 + ow + 2, plane - 1..plane] {
                let mut columns = vec![f32::NAN; 3];
                im2col(&image, [c, h, w], &window, [oh, ow], pixels.clone(), &mut columns);
                assert_eq!(columns.len(), c * kernel[0] * kernel[1] * pixels.len(), "{window:?} {pixels:?}");
                for (k, &value) in columns.iter().enumerate() {
                    let (row, p) = (k / pixels.len(), pixels.start + k % pixels.len());
                    let (ch, tap) = (row / (kernel[0] * kernel[1]), row % (kernel[0] * kernel[1]));
                    let (i, j, y, x) = (tap / kernel[1], tap % kernel[1], p / ow, p % ow);
                    let iy = (y * strides[0] + i * dilations[0]) as isize - pads[0] as isize;
                    let ix = (x * strides[1] + j * dilations[1]) as isize - pads[1] as isize;
                    let inside = (0..h as isize).contains(&iy) && (0..w as isize).contains(&ix);
                    let expected = if inside { image[(ch * h + iy as usize) * w + ix as usize] } else { 0.0 };
                    assert_eq!(value, expected, "{window:?} {pixels:?} at row {row}, pixel {p}");
                }
            }
        }
    }
}
