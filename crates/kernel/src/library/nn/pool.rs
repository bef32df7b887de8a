//! ONNX's pooling on NCHW images: `nn.max_pool2d.f32` and `nn.average_pool2d.f32`
//! (`kernel_shape`, `strides`, `pads`, `dilations` for max pooling, `ceil_mode`, and
//! `count_include_pad` for averages) and `nn.global_average_pool.f32`. Padding never wins a
//! maximum; an average counts it only under `count_include_pad`, and then only the declared
//! padding, not the room a ceil-mode window reaches past it. Channel planes are split over tasks.

use super::conv::Window;
use super::split::compute;
use super::{floats, int, ints, shape_error, sizes, Floats};
use crate::{KernelError, KernelFrame, KernelRegistry};

#[derive(Clone, Copy, PartialEq)]
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
    let taps = kernel[0] * kernel[1];
    compute(frame, &[n, c, oh, ow], n * c, oh * ow * taps, move |planes, out| {
        for (plane, result) in planes.zip(out.chunks_exact_mut(oh * ow)) {
            let image = &x.data[plane * h * w..(plane + 1) * h * w];
            for (y, row) in result.chunks_exact_mut(ow).enumerate() {
                for (xo, value) in row.iter_mut().enumerate() {
                    *value = reduce_window(image, [h, w], &window, [y, xo], reduce);
                }
            }
        }
    })
}

/// The maximum or average of the window of output pixel `[y, x]`.
fn reduce_window(image: &[f32], [h, w]: [usize; 2], window: &Window, [y, x]: [usize; 2], reduce: Reduce) -> f32 {
    let (mut max, mut sum, mut inside) = (f32::NEG_INFINITY, 0.0f32, 0usize);
    // Where the window starts in padded coordinates, and the padded image's extent.
    let (top, left) = (y * window.strides[0], x * window.strides[1]);
    let (padded_h, padded_w) = (h + window.pads[0] + window.pads[2], w + window.pads[1] + window.pads[3]);
    let mut declared = 0usize;
    for i in 0..window.kernel[0] {
        let py = top + i * window.dilations[0];
        for j in 0..window.kernel[1] {
            let px = left + j * window.dilations[1];
            if py < padded_h && px < padded_w {
                declared += 1;
            }
            let (iy, ix) = (py.wrapping_sub(window.pads[0]), px.wrapping_sub(window.pads[1]));
            if iy < h && ix < w {
                let v = image[iy * w + ix];
                max = max.max(v);
                sum += v;
                inside += 1;
            }
        }
    }
    match reduce {
        Reduce::Max => max,
        Reduce::Average(true) => sum / declared as f32,
        Reduce::Average(false) => sum / inside.max(1) as f32,
    }
}

fn global_average_pool(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let x = floats(frame, 0)?;
    let [n, c, h, w] = nchw(frame, &x)?;
    let plane = h * w;
    compute(frame, &[n, c, 1, 1], n * c, plane, move |planes, out| {
        for (i, value) in planes.zip(out.iter_mut()) {
            *value = x.data[i * plane..(i + 1) * plane].iter().sum::<f32>() / plane as f32;
        }
    })
}

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("nn.max_pool2d.f32", |f| pool(f, Reduce::Max));
    registry.add_kernel("nn.average_pool2d.f32", |f| {
        let include = int(f, "count_include_pad", 0)? != 0;
        pool(f, Reduce::Average(include))
    });
    registry.add_kernel("nn.global_average_pool.f32", global_average_pool);
}
