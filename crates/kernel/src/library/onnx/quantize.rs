//! Linear quantization: `QuantizeLinear` (floats or i32 to u8, i8, u16 or i16, saturating),
//! `DequantizeLinear` (those and i32 back to floats) and `DynamicQuantizeLinear` (f32 to u8 with
//! the scale and zero point the input's range gives). Scales and zero points are per tensor (one
//! value), per axis (a vector along `axis`) or, from opset 21, per block of `block_size`
//! elements along `axis`. The float8 and 4- and 2-bit types are not supported.

use super::elementwise::onnx_dtype;
use super::tensors::{count, error, narrow, register_one, stored, unsupported, wide, Inputs, Typed};
use crate::dtype::DType;
use crate::library::nn::int;
use crate::library::nn::normalize::axis_index;
use crate::tensor::DenseHostTensor;
use crate::{KernelError, KernelFrame, KernelRegistry, KernelSite};

pub(super) const OPERATORS: &[&str] = &["DequantizeLinear", "DynamicQuantizeLinear", "QuantizeLinear"];

/// `value` clamped to the range of the integer type `dtype` (as it is for other types).
pub(super) fn saturate(dtype: DType, value: f64) -> f64 {
    let (low, high) = match dtype {
        DType::UI8 => (0.0, 255.0),
        DType::I8 => (-128.0, 127.0),
        DType::UI16 => (0.0, 65535.0),
        DType::I16 => (-32768.0, 32767.0),
        DType::UI32 => (0.0, f64::from(u32::MAX)),
        DType::I32 => (f64::from(i32::MIN), f64::from(i32::MAX)),
        _ => return value,
    };
    value.clamp(low, high)
}

/// Which element of a scale or zero point of `parameter` dimensions applies to each flat index of
/// a tensor of `dims`: the one of a single-element parameter; along `axis` for a vector of
/// `dims[axis]` elements (`block` 0); for blocks of `block` elements along `axis` when the
/// parameter has the input's rank and `ceil(dims[axis] / block)` elements along it.
pub(super) fn parameter_index(
    dims: &[usize],
    parameter: &[usize],
    axis: usize,
    block: usize,
) -> Result<impl Fn(usize) -> usize, String> {
    let single = count(parameter)? == 1;
    let mismatch = || format!("a scale or zero point of {parameter:?} does not fit an input of {dims:?}");
    let (length, inner) = match dims.get(axis) {
        Some(&length) => (length, count(&dims[axis + 1..])?),
        None if single => (1, 1),
        None => return Err(mismatch()),
    };
    let blocks = if single {
        1
    } else if block == 0 {
        if parameter != [length] {
            return Err(mismatch());
        }
        length
    } else {
        let blocks = length.div_ceil(block);
        let fits = parameter.len() == dims.len()
            && parameter.iter().zip(dims).enumerate().all(|(i, (&p, &d))| if i == axis { p == blocks } else { p == d });
        if !fits {
            return Err(mismatch());
        }
        blocks
    };
    let vector = block == 0;
    let (block, inner, length) = (block.max(1), inner.max(1), length.max(1));
    Ok(move |i: usize| {
        if single {
            0
        } else if vector {
            (i / inner) % length
        } else {
            ((i / (length * inner)) * blocks + (i / inner) % length / block) * inner + i % inner
        }
    })
}

/// `x` (u8 or i8) less its zero point (a scalar, or a vector along `axis`), as i32s.
pub(super) fn offset_operand(
    site: &KernelSite<'_>,
    x: &DenseHostTensor,
    zero: Option<&DenseHostTensor>,
    axis: usize,
) -> Result<Typed<i32>, KernelError> {
    if !matches!(x.dtype(), DType::UI8 | DType::I8) {
        return Err(unsupported(site, x.dtype()));
    }
    let x = wide(site, x)?;
    let zero = match zero {
        Some(zero) => wide(site, zero)?,
        None => Typed { dims: vec![], values: vec![0.0] },
    };
    let index = parameter_index(&x.dims, &zero.dims, axis, 0).map_err(|e| error(site, e))?;
    let values = x.values.iter().enumerate().map(|(i, &v)| (v - zero.values[index(i)]) as i32).collect();
    Ok(Typed { dims: x.dims, values })
}

/// The quantized result of an i32 sum of products `acc`: `acc * multiplier + zero` rounded
/// (halves to even) and saturated to the range of `dtype`.
fn requantize(acc: i32, multiplier: f64, zero: f64, dtype: DType) -> f64 {
    saturate(dtype, (f64::from(acc) * multiplier + zero).round_ties_even())
}

/// The output of QLinearMatMul or QLinearConv from its i32 sums of products `acc`: requantized
/// by the product of the scales of inputs 1 and 4 (one value, or a vector along the axes
/// `axes` of `acc`) over the scale of input 6, as the scales' type computes them, plus the zero
/// point of input 7, whose type is the output's (input 0's without it).
pub(super) fn requantized(
    frame: &KernelFrame<'_>,
    inputs: &Inputs,
    acc: Typed<i32>,
    axes: (usize, usize),
) -> Result<DenseHostTensor, KernelError> {
    let scale_dtype = inputs.required(1)?.dtype();
    let (a_scale, b_scale, y_scale) =
        (wide(frame, inputs.required(1)?)?, wide(frame, inputs.required(4)?)?, wide(frame, inputs.required(6)?)?);
    let y_zero = inputs.optional(7);
    let dtype = y_zero.map_or(inputs.required(0)?.dtype(), |z| z.dtype());
    let zero = match y_zero {
        Some(z) => wide(frame, z)?.values,
        None => vec![0.0],
    };
    let (&[y_scale], &[zero]) = (&y_scale.values[..], &zero[..]) else {
        return Err(error(frame, "y_scale and y_zero_point must hold one value"));
    };
    let a_index = parameter_index(&acc.dims, &a_scale.dims, axes.0, 0).map_err(|e| error(frame, e))?;
    let b_index = parameter_index(&acc.dims, &b_scale.dims, axes.1, 0).map_err(|e| error(frame, e))?;
    let values: Vec<f64> = acc
        .values
        .iter()
        .enumerate()
        .map(|(i, &acc)| {
            let scale = stored(scale_dtype, a_scale.values[a_index(i)] * b_scale.values[b_index(i)]);
            requantize(acc, stored(scale_dtype, scale / y_scale), zero, dtype)
        })
        .collect();
    narrow(frame, acc.dims, &values, dtype)
}

/// The scale (input 1) and zero point (input 2) of a quantizing node over `x`, each as the
/// values and the index of the one that applies to each element of `x`.
struct Parameters {
    scale: Vec<f64>,
    zero: Vec<f64>,
    scale_index: Box<dyn Fn(usize) -> usize>,
    zero_index: Box<dyn Fn(usize) -> usize>,
}

impl Parameters {
    /// A tensor of `dtype` holding `f(x, scale, zero)` for each element `x` of input 0.
    fn apply(
        frame: &KernelFrame<'_>,
        inputs: &Inputs,
        dtype: DType,
        f: impl Fn(f64, f64, f64) -> f64,
    ) -> Result<DenseHostTensor, KernelError> {
        let x = wide(frame, inputs.required(0)?)?;
        let p = Parameters::read(frame, inputs, &x.dims)?;
        let values: Vec<f64> = x
            .values
            .iter()
            .enumerate()
            .map(|(i, &v)| f(v, p.scale[(p.scale_index)(i)], p.zero[(p.zero_index)(i)]))
            .collect();
        narrow(frame, x.dims, &values, dtype)
    }

    fn read(frame: &KernelFrame<'_>, inputs: &Inputs, dims: &[usize]) -> Result<Parameters, KernelError> {
        let block = usize::try_from(int(frame, "block_size", 0)?)
            .map_err(|_| error(frame, "block_size must not be negative"))?;
        let scale = wide(frame, inputs.required(1)?)?;
        let zero = match inputs.optional(2) {
            Some(zero) => wide(frame, zero)?,
            None => Typed { dims: vec![], values: vec![0.0] },
        };
        // The axis matters only to parameters of more than one value.
        let axis = match scale.values.len().max(zero.values.len()) {
            1 => 0,
            _ => axis_index(frame, int(frame, "axis", 1)?, dims.len())?,
        };
        let index = |parameter: &[usize]| -> Result<Box<dyn Fn(usize) -> usize>, KernelError> {
            Ok(Box::new(parameter_index(dims, parameter, axis, block).map_err(|e| error(frame, e))?))
        };
        Ok(Parameters {
            scale_index: index(&scale.dims)?,
            zero_index: index(&zero.dims)?,
            scale: scale.values,
            zero: zero.values,
        })
    }
}

fn quantize_linear(frame: &KernelFrame<'_>, inputs: &Inputs) -> Result<DenseHostTensor, KernelError> {
    let x = inputs.required(0)?;
    let dtype = match (inputs.optional(2), int(frame, "output_dtype", 0)?) {
        (Some(zero), _) => zero.dtype(),
        (None, 0) => DType::UI8,
        (None, code) => {
            onnx_dtype(code).ok_or_else(|| error(frame, format_args!("output_dtype {code} is not supported")))?
        }
    };
    if !matches!(dtype, DType::UI8 | DType::I8 | DType::UI16 | DType::I16) {
        return Err(unsupported(frame, dtype));
    }
    // The quotient as numpy's reference computes it: in the input's float type, or f64 for i32.
    let quotient = match int(frame, "precision", 0)? {
        0 => x.dtype(),
        code => onnx_dtype(code).ok_or_else(|| error(frame, format_args!("precision {code} is not supported")))?,
    };
    Parameters::apply(frame, inputs, dtype, |v, scale, zero| {
        saturate(dtype, stored(quotient, v / scale).round_ties_even() + zero)
    })
}

fn dequantize_linear(frame: &KernelFrame<'_>, inputs: &Inputs) -> Result<DenseHostTensor, KernelError> {
    let x = inputs.required(0)?;
    if !matches!(x.dtype(), DType::UI8 | DType::I8 | DType::UI16 | DType::I16 | DType::I32) {
        return Err(unsupported(frame, x.dtype()));
    }
    let dtype = match int(frame, "output_dtype", 0)? {
        0 => inputs.required(1)?.dtype(),
        code => onnx_dtype(code).ok_or_else(|| error(frame, format_args!("output_dtype {code} is not supported")))?,
    };
    // In f32, as the reference computes it, then in the output's type.
    Parameters::apply(frame, inputs, dtype, |v, scale, zero| {
        stored(DType::F32, stored(DType::F32, stored(DType::F32, v) - zero) * scale)
    })
}

/// DynamicQuantizeLinear's scale, zero point and quantized values of `x`, in f32 arithmetic.
fn dynamic_quantize(x: &[f32]) -> (f32, u8, Vec<u8>) {
    let max = x.iter().copied().fold(0.0f32, f32::max);
    let min = x.iter().copied().fold(0.0f32, f32::min);
    let scale = if max == min { 1.0 } else { max - min } / 255.0;
    let zero = (0.0 - min / scale).clamp(0.0, 255.0).round_ties_even();
    let values = x.iter().map(|&v| ((v / scale).round_ties_even() + zero).clamp(0.0, 255.0) as u8).collect();
    (scale, zero as u8, values)
}

pub(super) fn register(registry: &mut KernelRegistry) {
    register_one(registry, "QuantizeLinear", quantize_linear);
    register_one(registry, "DequantizeLinear", dequantize_linear);
    registry.add_kernel("onnx.DynamicQuantizeLinear", |frame: &mut KernelFrame<'_>| {
        let inputs = Inputs::new(frame)?;
        let x = inputs.required(0)?;
        if x.dtype() != DType::F32 {
            return Err(unsupported(frame, x.dtype()));
        }
        let x = Typed::<f32>::read(x);
        let (scale, zero, values) = dynamic_quantize(&x.values);
        let y = Typed { dims: x.dims, values }.into_tensor(frame, DType::UI8)?;
        let scale = Typed { dims: vec![], values: vec![scale] }.into_tensor(frame, DType::F32)?;
        let zero = Typed { dims: vec![], values: vec![zero] }.into_tensor(frame, DType::UI8)?;
        frame.emplace_result(0, y)?;
        frame.emplace_result(1, scale)?;
        frame.emplace_result(2, zero)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_apply_per_tensor_per_axis_and_per_block() {
        let all = |f: &dyn Fn(usize) -> usize, n: usize| (0..n).map(f).collect::<Vec<_>>();
        let single = parameter_index(&[2, 3], &[1], 1, 0).unwrap();
        assert_eq!(all(&single, 6), [0; 6]);
        let columns = parameter_index(&[2, 3], &[3], 1, 0).unwrap();
        assert_eq!(all(&columns, 6), [0, 1, 2, 0, 1, 2]);
        let rows = parameter_index(&[2, 3], &[2], 0, 0).unwrap();
        assert_eq!(all(&rows, 6), [0, 0, 0, 1, 1, 1]);
        // Blocks of 2 along the columns of a [2, 5]: 3 blocks per row, the last one short.
        let blocks = parameter_index(&[2, 5], &[2, 3], 1, 2).unwrap();
        assert_eq!(all(&blocks, 10), [0, 0, 1, 1, 2, 3, 3, 4, 4, 5]);
        // Blocks along the rows of a [4, 2]: [2, 2] parameters.
        let blocks = parameter_index(&[4, 2], &[2, 2], 0, 2).unwrap();
        assert_eq!(all(&blocks, 8), [0, 1, 0, 1, 2, 3, 2, 3]);
        assert!(parameter_index(&[2, 3], &[2], 1, 0).is_err());
        assert!(parameter_index(&[2, 5], &[2, 2], 1, 2).is_err());
    }

    #[test]
    fn dynamic_quantization_covers_zero_and_rounds_halves_to_even() {
        let (scale, zero, values) = dynamic_quantize(&[0.0, 2.0, -3.0, -2.5, 1.34, 0.5]);
        assert_eq!(scale, 5.0 / 255.0);
        assert_eq!(zero, 153);
        assert_eq!(values, [153, 255, 0, 26, 221, 179]);
        // All zeros: the scale is 1/255, not 0.
        let (scale, zero, values) = dynamic_quantize(&[0.0, 0.0]);
        assert_eq!((scale, zero, values), (1.0 / 255.0, 0, vec![0, 0]));
        assert_eq!(saturate(DType::I8, -300.0), -128.0);
        assert_eq!(saturate(DType::UI16, 70000.0), 65535.0);
        assert_eq!(requantize(5, 0.5, 0.0, DType::UI8), 2.0);
        assert_eq!(requantize(7, 0.5, 0.0, DType::UI8), 4.0);
        assert_eq!(requantize(-3, 1.0, 0.0, DType::UI8), 0.0);
        assert_eq!(requantize(300, 1.0, -1.0, DType::I8), 127.0);
    }
}
