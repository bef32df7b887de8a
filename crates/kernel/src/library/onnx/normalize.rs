//! Normalization along axes, on floats (computed in f64): `Softmax`, `LogSoftmax`, `Hardmax`
//! (over everything from `axis` on, flattened, before opset 13; along `axis` from it),
//! `LayerNormalization` (with its optional `Mean` and `InvStdDev`), `RMSNormalization`,
//! `GroupNormalization`, `InstanceNormalization`, `BatchNormalization` (inference, and training
//! with its running statistics), `LpNormalization`, `MeanVarianceNormalization` and `LRN`.

use super::elementwise::onnx_dtype;
use super::reduce::arg;
use super::tensors::{axis, error, opset, read_floats, stored, Groups, Inputs, Typed};
use crate::dtype::DType;
use crate::library::nn::{float, int, ints};
use crate::tensor::DenseHostTensor;
use crate::{KernelError, KernelFrame, KernelRegistry, KernelSite};

pub(super) const OPERATORS: &[&str] = &[
    "BatchNormalization",
    "GroupNormalization",
    "Hardmax",
    "InstanceNormalization",
    "LRN",
    "LayerNormalization",
    "LogSoftmax",
    "LpNormalization",
    "MeanVarianceNormalization",
    "RMSNormalization",
    "Softmax",
];

/// `values` made their softmax in place, or its logarithm when `log`, each step's result (the
/// shifted values, their exponentials, the sum, its logarithm, the quotients) an element of
/// `dtype` as numpy computes in it, the sum accumulated wider.
pub(super) fn softmax(values: &mut [f64], log: bool, dtype: DType) {
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut sum = 0.0;
    for v in values.iter_mut() {
        *v = stored(dtype, *v - max);
        sum += stored(dtype, v.exp());
    }
    let sum = stored(dtype, sum);
    let log_sum = stored(dtype, sum.ln());
    for v in values {
        *v = stored(dtype, if log { *v - log_sum } else { stored(dtype, v.exp()) / sum });
    }
}

/// `values` made one-hot at their (first) maximum, in place.
fn hardmax(values: &mut [f64]) {
    let winner = arg(values, true, false) as usize;
    for (i, v) in values.iter_mut().enumerate() {
        *v = f64::from(u8::from(i == winner));
    }
}

/// The mean of `values` and their (population) variance.
fn moments(values: &[f64]) -> (f64, f64) {
    let count = values.len() as f64;
    let mean = values.iter().sum::<f64>() / count;
    let variance = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / count;
    (mean, variance)
}

/// `values` standardized in place (`(v - mean) / sqrt(variance + epsilon)`), or when not
/// `centred` divided by their root mean square (`v / sqrt(mean(v^2) + epsilon)`); the mean
/// (0 when not `centred`) and the reciprocal of that deviation.
fn standardize(values: &mut [f64], epsilon: f64, centred: bool) -> (f64, f64) {
    let (mean, variance) =
        if centred { moments(values) } else { (0.0, values.iter().map(|v| v * v).sum::<f64>() / values.len() as f64) };
    let inverse = 1.0 / (variance + epsilon).sqrt();
    for v in values.iter_mut() {
        *v = (*v - mean) * inverse;
    }
    (mean, inverse)
}

/// The input `index`'s elements (of any float type) as f64s.
fn floats(site: &KernelSite<'_>, inputs: &Inputs, index: usize) -> Result<Typed<f64>, KernelError> {
    read_floats(site, inputs.required(index)?)
}

fn epsilon(site: &KernelSite<'_>, default: f32) -> Result<f64, KernelError> {
    float(site, "epsilon", default).map(f64::from)
}

/// The mask of the axes from `from` on.
fn from_axis(rank: usize, from: usize) -> Vec<bool> {
    (0..rank).map(|k| k >= from).collect()
}

/// The channels (axis 1) of `dims`, and the elements of each channel of each sample.
fn channels(site: &KernelSite<'_>, dims: &[usize]) -> Result<(usize, usize), KernelError> {
    match dims {
        [_, channels, spatial @ ..] => Ok((*channels, spatial.iter().product())),
        _ => Err(error(site, format_args!("an input of shape {dims:?} has no channel axis"))),
    }
}

/// A per-channel parameter, which must hold `count` values.
fn per_channel(site: &KernelSite<'_>, what: &str, values: Typed<f64>, count: usize) -> Result<Vec<f64>, KernelError> {
    if values.values.len() != count {
        return Err(error(site, format_args!("{what} has {} elements for {count} channels", values.values.len())));
    }
    Ok(values.values)
}

/// A normalization's result, of `dtype`, set as output `i`.
pub(super) fn set(
    frame: &mut KernelFrame<'_>,
    i: usize,
    dims: Vec<usize>,
    values: Vec<f64>,
    dtype: DType,
) -> Result<(), KernelError> {
    let tensor: DenseHostTensor = Typed { dims, values }.into_floats(frame, dtype)?;
    frame.emplace_result(i, tensor)
}

#[derive(Clone, Copy)]
enum Soft {
    Max,
    LogMax,
    HardMax,
}

fn register_softmax(registry: &mut KernelRegistry, name: &str, kind: Soft) {
    registry.add_kernel(&format!("onnx.{name}"), move |frame: &mut KernelFrame<'_>| {
        let inputs = Inputs::new(frame)?;
        let dtype = inputs.required(0)?.dtype();
        let mut x = floats(frame, &inputs, 0)?;
        let rank = x.dims.len();
        // Before opset 13 the input is a matrix of the axes before `axis` by those from it on.
        let flat = opset(frame)? < 13;
        let along = axis(frame, int(frame, "axis", if flat { 1 } else { -1 })?, rank)?;
        let grouped: Vec<bool> = if flat { from_axis(rank, along) } else { (0..rank).map(|k| k == along).collect() };
        Groups::of_elements(frame, &x.dims, &grouped)?.update(&mut x.values, |group| match kind {
            Soft::Max => softmax(group, false, dtype),
            Soft::LogMax => softmax(group, true, dtype),
            Soft::HardMax => hardmax(group),
        });
        set(frame, 0, x.dims, x.values, dtype)
    });
}

/// The element type of LayerNormalization's statistics: `stash_type`'s.
fn stash_type(site: &KernelSite<'_>) -> Result<DType, KernelError> {
    let code = int(site, "stash_type", 1)?;
    onnx_dtype(code)
        .filter(|dtype| matches!(dtype, DType::F16 | DType::BF16 | DType::F32 | DType::F64))
        .ok_or_else(|| error(site, format_args!("stash_type {code} is not a float type")))
}

/// LayerNormalization (`centred`) and RMSNormalization: each group of the axes from `axis` on
/// standardized, then scaled by input 1 and shifted by LayerNormalization's optional `B`; its
/// optional outputs are each group's mean and the reciprocal of its deviation.
fn register_axis_normalization(registry: &mut KernelRegistry, name: &str, centred: bool) {
    registry.add_kernel(&format!("onnx.{name}"), move |frame: &mut KernelFrame<'_>| {
        let inputs = Inputs::new(frame)?;
        let dtype = inputs.required(0)?.dtype();
        let mut x = floats(frame, &inputs, 0)?;
        let rank = x.dims.len();
        let along = axis(frame, int(frame, "axis", -1)?, rank)?;
        let epsilon = epsilon(frame, 1e-5)?;
        let scale = floats(frame, &inputs, 1)?.expanded(frame, "scale", &x.dims)?;
        let bias = match inputs.optional(2) {
            Some(b) if centred => Some(read_floats(frame, b)?.expanded(frame, "B", &x.dims)?),
            _ => None,
        };
        let groups = Groups::of_elements(frame, &x.dims, &from_axis(rank, along))?;
        let mut statistics = Vec::with_capacity(groups.outer.len());
        groups.update(&mut x.values, |group| statistics.push(standardize(group, epsilon, centred)));
        for (i, v) in x.values.iter_mut().enumerate() {
            *v = *v * scale[i] + bias.as_ref().map_or(0.0, |b| b[i]);
        }
        let dims: Vec<usize> = x.dims.iter().enumerate().map(|(k, &d)| if k < along { d } else { 1 }).collect();
        // The statistics are of `stash_type` (float unless it says otherwise), as onnxruntime's
        // are but for f64 inputs, whose statistics it (and ONNX's reference) keeps in f64.
        let stash = if dtype == DType::F64 { DType::F64 } else { stash_type(frame)? };
        if frame.num_results() > 1 {
            set(frame, 1, dims.clone(), statistics.iter().map(|s| s.0).collect(), stash)?;
        }
        if frame.num_results() > 2 {
            set(frame, 2, dims, statistics.iter().map(|s| s.1).collect(), stash)?;
        }
        set(frame, 0, x.dims, x.values, dtype)
    });
}

/// Group normalization of `x` (`[N, C, ...]`) in `groups` groups of channels, each standardized
/// over its channels and their elements, then scaled and shifted per channel (or per group
/// when `scale` and `bias` hold one value a group, as GroupNormalization's did before opset 21).
fn group_normalization(
    site: &KernelSite<'_>,
    x: &mut Typed<f64>,
    groups: usize,
    epsilon: f64,
    scale: &[f64],
    bias: &[f64],
) -> Result<(), KernelError> {
    let (channels, spatial) = channels(site, &x.dims)?;
    if groups == 0 || channels % groups != 0 {
        return Err(error(site, format_args!("{channels} channels do not divide into {groups} groups")));
    }
    let per_group = if scale.len() == channels && bias.len() == channels {
        1
    } else if scale.len() == groups && bias.len() == groups {
        channels / groups
    } else {
        return Err(error(
            site,
            format_args!("scale and bias of {} and {} elements for {channels} channels", scale.len(), bias.len()),
        ));
    };
    let block = channels / groups * spatial;
    if block > 0 {
        for chunk in x.values.chunks_mut(block) {
            standardize(chunk, epsilon, true);
        }
    }
    for (i, v) in x.values.iter_mut().enumerate() {
        let parameter = (i / spatial) % channels / per_group;
        *v = *v * scale[parameter] + bias[parameter];
    }
    Ok(())
}

fn register_group_normalizations(registry: &mut KernelRegistry) {
    registry.add_kernel("onnx.GroupNormalization", |frame: &mut KernelFrame<'_>| {
        let inputs = Inputs::new(frame)?;
        let dtype = inputs.required(0)?.dtype();
        let mut x = floats(frame, &inputs, 0)?;
        let groups = usize::try_from(int(frame, "num_groups", 0)?).unwrap_or(0);
        let (scale, bias) = (floats(frame, &inputs, 1)?, floats(frame, &inputs, 2)?);
        group_normalization(frame, &mut x, groups, epsilon(frame, 1e-5)?, &scale.values, &bias.values)?;
        set(frame, 0, x.dims, x.values, dtype)
    });
    registry.add_kernel("onnx.InstanceNormalization", |frame: &mut KernelFrame<'_>| {
        let inputs = Inputs::new(frame)?;
        let dtype = inputs.required(0)?.dtype();
        let mut x = floats(frame, &inputs, 0)?;
        let (channels, _) = channels(frame, &x.dims)?;
        let scale = per_channel(frame, "scale", floats(frame, &inputs, 1)?, channels)?;
        let bias = per_channel(frame, "B", floats(frame, &inputs, 2)?, channels)?;
        group_normalization(frame, &mut x, channels.max(1), epsilon(frame, 1e-5)?, &scale, &bias)?;
        set(frame, 0, x.dims, x.values, dtype)
    });
}

fn batch_normalization(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let dtype = inputs.required(0)?.dtype();
    let mut x = floats(frame, &inputs, 0)?;
    let (channels, spatial) = channels(frame, &x.dims)?;
    let epsilon = epsilon(frame, 1e-5)?;
    let parameter = |i: usize, what: &str| per_channel(frame, what, floats(frame, &inputs, i)?, channels);
    let (scale, bias) = (parameter(1, "scale")?, parameter(2, "B")?);
    let (mut mean, mut variance) = (parameter(3, "input_mean")?, parameter(4, "input_var")?);
    let statistics_type = inputs.required(3)?.dtype();
    if opset(frame)? >= 14 && int(frame, "training_mode", 0)? != 0 {
        // The batch's own statistics normalize it; the running ones move towards them.
        let momentum = f64::from(float(frame, "momentum", 0.9)?);
        let along: Vec<bool> = (0..x.dims.len()).map(|k| k != 1).collect();
        let groups = Groups::new(frame, &x.dims, &along)?;
        let mut running = [mean, variance];
        (mean, variance) = groups.reduce(frame, &x.values, moments)?.into_iter().unzip();
        for c in 0..channels {
            running[0][c] = running[0][c] * momentum + mean[c] * (1.0 - momentum);
            running[1][c] = running[1][c] * momentum + variance[c] * (1.0 - momentum);
        }
        for (i, values) in running.into_iter().enumerate().take(frame.num_results().saturating_sub(1)) {
            set(frame, i + 1, vec![channels], values, statistics_type)?;
        }
    }
    for (i, v) in x.values.iter_mut().enumerate() {
        let c = (i / spatial.max(1)) % channels;
        *v = (*v - mean[c]) / (variance[c] + epsilon).sqrt() * scale[c] + bias[c];
    }
    set(frame, 0, x.dims, x.values, dtype)
}

fn lp_normalization(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let dtype = inputs.required(0)?.dtype();
    let mut x = floats(frame, &inputs, 0)?;
    let along = axis(frame, int(frame, "axis", -1)?, x.dims.len())?;
    let p = int(frame, "p", 2)?;
    if p != 1 && p != 2 {
        return Err(error(frame, format_args!("p is {p}, not 1 or 2")));
    }
    let grouped: Vec<bool> = (0..x.dims.len()).map(|k| k == along).collect();
    Groups::of_elements(frame, &x.dims, &grouped)?.update(&mut x.values, |group| {
        let norm = if p == 1 {
            group.iter().map(|v| v.abs()).sum::<f64>()
        } else {
            group.iter().map(|v| v * v).sum::<f64>().sqrt()
        };
        // A zero norm gives zeros, not 0 / 0.
        group.iter_mut().for_each(|v| *v = if norm == 0.0 { 0.0 } else { *v / norm });
    });
    set(frame, 0, x.dims, x.values, dtype)
}

fn mean_variance_normalization(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let dtype = inputs.required(0)?.dtype();
    let mut x = floats(frame, &inputs, 0)?;
    let rank = x.dims.len();
    let mut grouped = vec![false; rank];
    for a in ints(frame, "axes", &[0, 2, 3])? {
        grouped[axis(frame, a, rank)?] = true;
    }
    Groups::of_elements(frame, &x.dims, &grouped)?.update(&mut x.values, |group| {
        let (mean, variance) = moments(group);
        // ONNX's function: (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9).
        group.iter_mut().for_each(|v| *v = (*v - mean) / (variance.sqrt() + 1e-9));
    });
    set(frame, 0, x.dims, x.values, dtype)
}

fn lrn(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let dtype = inputs.required(0)?.dtype();
    let x = floats(frame, &inputs, 0)?;
    let (channels, spatial) = channels(frame, &x.dims)?;
    let size = int(frame, "size", 0)?;
    if size < 1 {
        return Err(error(frame, format_args!("size {size} is not positive")));
    }
    let (alpha, beta, bias) =
        (float(frame, "alpha", 1e-4)? as f64, float(frame, "beta", 0.75)? as f64, float(frame, "bias", 1.0)? as f64);
    // The window over channels: floor((size - 1) / 2) before, ceil((size - 1) / 2) after.
    let before = ((size - 1) / 2) as usize;
    let after = (size / 2) as usize;
    let values = (0..x.values.len())
        .map(|i| {
            let (c, s) = ((i / spatial) % channels, i % spatial);
            let sample = i - c * spatial - s;
            let window = c.saturating_sub(before)..(c + after + 1).min(channels);
            let square_sum: f64 = window.map(|k| x.values[sample + k * spatial + s].powi(2)).sum();
            x.values[i] / (bias + alpha / size as f64 * square_sum).powf(beta)
        })
        .collect();
    set(frame, 0, x.dims, values, dtype)
}

pub(super) fn register(registry: &mut KernelRegistry) {
    register_softmax(registry, "Softmax", Soft::Max);
    register_softmax(registry, "LogSoftmax", Soft::LogMax);
    register_softmax(registry, "Hardmax", Soft::HardMax);
    register_axis_normalization(registry, "LayerNormalization", true);
    register_axis_normalization(registry, "RMSNormalization", false);
    register_group_normalizations(registry);
    registry.add_kernel("onnx.BatchNormalization", batch_normalization);
    registry.add_kernel("onnx.LpNormalization", lp_normalization);
    registry.add_kernel("onnx.MeanVarianceNormalization", mean_variance_normalization);
    registry.add_kernel("onnx.LRN", lrn);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-9)
    }

    #[test]
    fn softmax_is_shifted_and_its_log_exact() {
        let mut values = [1000.0, 1000.0 + 2f64.ln()];
        softmax(&mut values, false, DType::F64);
        assert!(close(&values, &[1.0 / 3.0, 2.0 / 3.0]));
        let mut logs = [0.0, 2f64.ln()];
        softmax(&mut logs, true, DType::F64);
        assert!(close(&logs, &[(1.0f64 / 3.0).ln(), (2.0f64 / 3.0).ln()]));
        // In f16 each step is rounded: a third to f16's 0.33325.
        let mut thirds = [5.0, 5.0, 5.0];
        softmax(&mut thirds, false, DType::F16);
        assert_eq!(thirds, [half::f16::from_f64(1.0 / 3.0).to_f64(); 3]);
        let mut hard = [1.0, 3.0, 3.0, 2.0];
        hardmax(&mut hard);
        assert_eq!(hard, [0.0, 1.0, 0.0, 0.0]);
    }

    #[test]
    fn standardizing_gives_the_mean_and_inverse_deviation() {
        let mut values = [1.0, 3.0];
        let (mean, inverse) = standardize(&mut values, 0.0, true);
        assert_eq!((mean, inverse), (2.0, 1.0));
        assert_eq!(values, [-1.0, 1.0]);
        assert_eq!(moments(&[2.0, 4.0, 6.0]), (4.0, 8.0 / 3.0));
        let mut values = [3.0, 4.0];
        let (mean, inverse) = standardize(&mut values, 0.0, false);
        assert!((mean, inverse) == (0.0, 1.0 / 12.5f64.sqrt()) && close(&values, &[3.0 * inverse, 4.0 * inverse]));
    }
}
