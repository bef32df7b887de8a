//! Element by element: `nn.relu.f32`, `nn.sigmoid.f32`, `nn.tanh.f32`, `nn.gelu.f32`
//! (`approximate`: `"none"`, the default, or `"tanh"`), `nn.clip.f32` (`min`, `max` attributes:
//! ONNX Clip's optional inputs, made attributes by the converter);
//! `nn.add.f32`, `nn.sub.f32`, `nn.mul.f32`, `nn.div.f32` with numpy broadcasting; and
//! `nn.batch_norm.f32` (ONNX BatchNormalization at inference: `X, scale, B, mean, var` and
//! `epsilon`); and `nn.channel_affine.f32`, `X [n, c, ...]` times a scale and plus a shift per
//! channel, then a residual `Z` and an `activation` (see [`epilogue`](super::epilogue)): what an
//! importer makes of a batch norm and the per-channel Mul, Add and activation after it (a
//! DenseNet's pre-activation), one pass where there were four. Elements or rows are split over
//! tasks.

use std::sync::Arc;

use super::conv::residual;
use super::epilogue::{finish, Activation};
use super::exp::sigmoid;
use super::gelu::{gelu, gelu_tanh};
use super::split::{compute, compute_fresh};
use super::{float, floats, operands, shape_error, Floats};
use crate::{KernelError, KernelFrame, KernelRegistry};

fn unary(frame: &mut KernelFrame<'_>, op: impl Fn(f32) -> f32 + Send + Sync + 'static) -> Result<(), KernelError> {
    let x = floats(frame, 0)?;
    let dims = x.dims.clone();
    compute_fresh(frame, &dims, x.data.len(), 1, 1, move |range, out| out.map(&x.data[range], &op))
}

/// `nn.gelu.f32`: the exact form unless `approximate` is `"tanh"`.
fn gelu_layer(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let tanh = match frame.find_attribute("approximate")? {
        None => false,
        Some(attribute) => match attribute.string()? {
            "none" => false,
            "tanh" => true,
            other => return Err(shape_error(frame, format_args!("approximate `{other}` is neither none nor tanh"))),
        },
    };
    let x = floats(frame, 0)?;
    let dims = x.dims.clone();
    compute(frame, &dims, x.data.len(), 16, move |range, out| gelu_slice(out, &x.data[range], tanh))
}

vectorized! {
    /// GELU of each of `input` into `out`, compiled for the CPU's widest vectors.
    fn gelu_slice(out: &mut [f32], input: &[f32], tanh: bool) {
        // Two loops, each with its function inlined (through a pointer it would be a call).
        if tanh {
            for (value, &x) in out.iter_mut().zip(input) {
                *value = gelu_tanh::<{ fma!() }>(x);
            }
        } else {
            for (value, &x) in out.iter_mut().zip(input) {
                *value = gelu::<{ fma!() }>(x);
            }
        }
    }
}

/// The broadcast of `a` and `b` (numpy's rule: dimensions aligned at the right, each pair equal
/// or one of them 1), with each operand's element strides along the result's dimensions (0
/// where it repeats).
fn broadcast(a: &[usize], b: &[usize]) -> Option<(Vec<usize>, Vec<usize>, Vec<usize>)> {
    let rank = a.len().max(b.len());
    let dim = |d: &[usize], i: usize| (i + d.len()).checked_sub(rank).map_or(1, |j| d[j]);
    let dims = (0..rank)
        .map(|i| match (dim(a, i), dim(b, i)) {
            (x, y) if x == y || y == 1 => Some(x),
            (1, y) => Some(y),
            _ => None,
        })
        .collect::<Option<Vec<usize>>>()?;
    let strides = |d: &[usize]| {
        let mut strides = vec![0; rank];
        let mut step = 1;
        for i in (0..rank).rev() {
            let size = dim(d, i);
            strides[i] = if size == 1 { 0 } else { step };
            step *= size;
        }
        strides
    };
    Some((dims, strides(a), strides(b)))
}

fn binary(
    frame: &mut KernelFrame<'_>,
    op: impl Fn(f32, f32) -> f32 + Send + Sync + 'static,
) -> Result<(), KernelError> {
    let (a, b) = (floats(frame, 0)?, floats(frame, 1)?);
    let Some((dims, sa, sb)) = broadcast(&a.dims, &b.dims) else {
        return Err(shape_error(frame, format_args!("cannot broadcast {} with {}", a.shape(), b.shape())));
    };
    let rank = dims.len();
    let last = dims.last().copied().unwrap_or(1);
    let rows = dims.iter().product::<usize>() / last.max(1);
    let outer = dims[..rank.saturating_sub(1)].to_vec();
    let (la, lb) = (sa.last().copied().unwrap_or(0), sb.last().copied().unwrap_or(0));
    compute_fresh(frame, &dims, if last == 0 { 0 } else { rows }, last, 1, move |range, out| {
        for row in range {
            // The row's offsets in each operand, from its index along the outer dimensions.
            let (mut oa, mut ob, mut rest) = (0, 0, row);
            for i in (0..outer.len()).rev() {
                let index = rest % outer[i];
                rest /= outer[i];
                oa += index * sa[i];
                ob += index * sb[i];
            }
            // Rows that run along both operands, or along one with the other's element repeated
            // (a per-channel scale or bias), are plain loops over slices.
            let (xa, xb) = (&a.data[..], &b.data[..]);
            match (la, lb) {
                (1, 1) => out.map2(&xa[oa..oa + last], &xb[ob..ob + last], &op),
                (1, 0) => {
                    let y = xb[ob];
                    out.map(&xa[oa..oa + last], |x| op(x, y))
                }
                (0, 1) => {
                    let x = xa[oa];
                    out.map(&xb[ob..ob + last], |y| op(x, y))
                }
                _ => out.fill(last, |j| op(xa[oa + j * la], xb[ob + j * lb])),
            }
        }
    })
}

fn batch_norm(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let x = floats(frame, 0)?;
    let parameters = (1..5).map(|i| floats(frame, i)).collect::<Result<Vec<Arc<Floats>>, _>>()?;
    let epsilon = float(frame, "epsilon", 1e-5)?;
    let (n, c) = match x.dims[..] {
        [n, c, ..] => (n, c),
        _ => return Err(shape_error(frame, format_args!("X {} has no channel dimension", x.shape()))),
    };
    if let Some(p) = parameters.iter().find(|p| p.dims != [c]) {
        return Err(shape_error(frame, format_args!("parameter {} is not [{c}] for X {}", p.shape(), x.shape())));
    }
    // y = x * scale / sqrt(var + epsilon) + (B - mean * scale / sqrt(var + epsilon)).
    let (scale, bias): (Vec<f32>, Vec<f32>) = (0..c)
        .map(|i| {
            let [s, b, mean, var] = [0, 1, 2, 3].map(|p| parameters[p].data[i]);
            let factor = s / (var + epsilon).sqrt();
            (factor, b - mean * factor)
        })
        .unzip();
    let plane = x.dims[2..].iter().product::<usize>();
    let dims = x.dims.clone();
    compute_fresh(frame, &dims, if plane == 0 { 0 } else { n * c }, plane, 1, move |planes, out| {
        for i in planes {
            let (s, b) = (scale[i % c], bias[i % c]);
            out.map(&x.data[i * plane..(i + 1) * plane], |input| input * s + b);
        }
    })
}

fn channel_affine(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let (x, scale, shift) = (floats(frame, 0)?, floats(frame, 1)?, floats(frame, 2)?);
    let z = if operands(frame) > 3 { Some(floats(frame, 3)?) } else { None };
    let activation = Activation::read(frame)?;
    let (n, c) = match x.dims[..] {
        [n, c, ..] => (n, c),
        _ => return Err(shape_error(frame, format_args!("X {} has no channel dimension", x.shape()))),
    };
    if let Some(p) = [&scale, &shift].into_iter().find(|p| p.dims != [c]) {
        return Err(shape_error(frame, format_args!("{} is not one value per channel of X {}", p.shape(), x.shape())));
    }
    if let Some(z) = z.as_ref().filter(|z| z.dims != x.dims) {
        return Err(shape_error(frame, format_args!("Z {} is not X's shape {}", z.shape(), x.shape())));
    }
    let plane = x.dims[2..].iter().product::<usize>();
    let dims = x.dims.clone();
    compute_fresh(frame, &dims, if plane == 0 { 0 } else { n * c }, plane, 1, move |planes, out| {
        for i in planes {
            let s = scale.data[i % c];
            out.map(&x.data[i * plane..(i + 1) * plane], |input| input * s);
            finish(out.last(plane), shift.data[i % c], residual(&z, i, plane), activation);
        }
    })
}

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("nn.relu.f32", |f| unary(f, |x| x.max(0.0)));
    registry.add_kernel("nn.sigmoid.f32", |f| unary(f, sigmoid::<false>));
    registry.add_kernel("nn.tanh.f32", |f| unary(f, f32::tanh));
    registry.add_kernel("nn.gelu.f32", gelu_layer);
    registry.add_kernel("nn.clip.f32", |f| {
        let (min, max) = (float(f, "min", f32::NEG_INFINITY)?, float(f, "max", f32::INFINITY)?);
        unary(f, move |x| x.max(min).min(max))
    });
    registry.add_kernel("nn.add.f32", |f| binary(f, |x, y| x + y));
    registry.add_kernel("nn.sub.f32", |f| binary(f, |x, y| x - y));
    registry.add_kernel("nn.mul.f32", |f| binary(f, |x, y| x * y));
    registry.add_kernel("nn.div.f32", |f| binary(f, |x, y| x / y));
    registry.add_kernel("nn.batch_norm.f32", batch_norm);
    registry.add_kernel("nn.channel_affine.f32", channel_affine);
}
