//! Element by element, with numpy's broadcasting: arithmetic (`Add`, `Sub`, `Mul`, `Div`, `Pow`,
//! `Mod`, the variadic `Max`, `Min`, `Sum`, `Mean`), comparisons (`Equal`, `Less`, `Greater`,
//! `LessOrEqual`, `GreaterOrEqual`), logic and bits (`And`, `Or`, `Xor`, `Not`, `BitwiseAnd`,
//! `BitwiseOr`, `BitwiseXor`, `BitwiseNot`, `BitShift`), `Where`, the unary functions and
//! activations (with `PRelu`, `Shrink`, `Swish`, `Clip`), `Cast`, `CastLike`, `BitCast`,
//! `Identity` and `Dropout`.

use super::dispatch::{any, float, integer, numeric};
use super::tensors::{error, has_attribute, opset, string, unsupported, walk, wide, Inputs, Typed, Value};
use crate::dtype::DType;
use crate::library::nn::float as float_attribute;
use crate::library::nn::int;
use crate::tensor::DenseHostTensor;
use crate::{KernelError, KernelFrame, KernelRegistry, KernelSite};

pub(super) const OPERATORS: &[&str] = &[
    "Abs",
    "Acos",
    "Acosh",
    "Add",
    "And",
    "Asin",
    "Asinh",
    "Atan",
    "Atanh",
    "BitCast",
    "BitShift",
    "BitwiseAnd",
    "BitwiseNot",
    "BitwiseOr",
    "BitwiseXor",
    "Cast",
    "CastLike",
    "Ceil",
    "Celu",
    "Clip",
    "Cos",
    "Cosh",
    "Div",
    "Dropout",
    "Elu",
    "Equal",
    "Erf",
    "Exp",
    "Floor",
    "Gelu",
    "Greater",
    "GreaterOrEqual",
    "HardSigmoid",
    "HardSwish",
    "Identity",
    "IsInf",
    "IsNaN",
    "LeakyRelu",
    "Less",
    "LessOrEqual",
    "Log",
    "Max",
    "Mean",
    "Min",
    "Mish",
    "Mod",
    "Mul",
    "Neg",
    "Not",
    "Or",
    "Pow",
    "PRelu",
    "Reciprocal",
    "Relu",
    "Round",
    "Selu",
    "Shrink",
    "Sigmoid",
    "Sign",
    "Sin",
    "Sinh",
    "Softplus",
    "Softsign",
    "Sqrt",
    "Sub",
    "Sum",
    "Swish",
    "Tan",
    "Tanh",
    "ThresholdedRelu",
    "Where",
    "Xor",
];

/// The broadcast of `shapes` (numpy's rule: dimensions aligned at the right, each either equal
/// or 1), with each shape's element strides along the result's dimensions (0 where it repeats).
pub(crate) fn broadcast(shapes: &[&[usize]]) -> Option<(Vec<usize>, Vec<Vec<usize>>)> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let dim = |s: &[usize], i: usize| (i + s.len()).checked_sub(rank).map_or(1, |j| s[j]);
    let mut out = vec![1; rank];
    for (i, size) in out.iter_mut().enumerate() {
        for shape in shapes {
            match (*size, dim(shape, i)) {
                (a, b) if a == b || b == 1 => {}
                (1, b) => *size = b,
                _ => return None,
            }
        }
    }
    let strides = shapes
        .iter()
        .map(|shape| {
            let mut strides = vec![0; rank];
            let mut step: usize = 1;
            for i in (0..rank).rev() {
                let size = dim(shape, i);
                strides[i] = if size == 1 { 0 } else { step };
                step = step.saturating_mul(size);
            }
            strides
        })
        .collect();
    Some((out, strides))
}

/// The offsets in each operand of every element of the broadcast result, in row-major order.
fn offsets<'a>(dims: &'a [usize], strides: &'a [Vec<usize>]) -> impl Iterator<Item = Vec<usize>> + 'a {
    let count: usize = dims.iter().product();
    (0..count).map(move |mut flat| {
        let mut offsets = vec![0; strides.len()];
        for axis in (0..dims.len()).rev() {
            let index = flat % dims[axis];
            flat /= dims[axis];
            for (offset, stride) in offsets.iter_mut().zip(strides) {
                *offset += index * stride[axis];
            }
        }
        offsets
    })
}

/// `op` over the broadcast of `operands` (all of type `T`), made a tensor of `dtype`.
fn map_broadcast<T: Value, R: Value>(
    frame: &KernelFrame<'_>,
    operands: &[Typed<T>],
    dtype: DType,
    mut op: impl FnMut(&[T]) -> Result<R, String>,
) -> Result<DenseHostTensor, KernelError> {
    let shapes: Vec<&[usize]> = operands.iter().map(|o| &o.dims[..]).collect();
    let (out, strides) =
        broadcast(&shapes).ok_or_else(|| error(frame, format_args!("cannot broadcast the shapes {shapes:?}")))?;
    let mut values = Vec::with_capacity(out.iter().product());
    let mut arguments = Vec::with_capacity(operands.len());
    let strides: Vec<&[usize]> = strides.iter().map(Vec::as_slice).collect();
    let mut failure = None;
    walk(&out, &strides, |offsets| {
        if failure.is_some() {
            return;
        }
        arguments.clear();
        arguments.extend(operands.iter().zip(offsets).map(|(o, &k)| o.values[k]));
        match op(&arguments) {
            Ok(value) => values.push(value),
            Err(e) => failure = Some(e),
        }
    });
    if let Some(e) = failure {
        return Err(error(frame, e));
    }
    Typed { dims: out, values }.into_tensor(frame, dtype)
}

/// The inputs, which must all have one element type; that type.
pub(crate) fn same_type(frame: &KernelFrame<'_>, inputs: &[DenseHostTensor]) -> Result<DType, KernelError> {
    let first = inputs.first().ok_or_else(|| error(frame, "no inputs"))?.dtype();
    match inputs.iter().find(|t| t.dtype() != first) {
        Some(other) => Err(error(frame, format_args!("inputs of {first:?} and {:?} elements", other.dtype()))),
        None => Ok(first),
    }
}

/// An elementwise operator on integers, exact in i128.
type IntegerOp = fn(&KernelSite<'_>, &[i128]) -> Result<i128, String>;

/// How many inputs an elementwise operator takes.
#[derive(Clone, Copy)]
enum Arity {
    Exactly(usize),
    /// One or more (`Sum`, `Max`, ...).
    Variadic,
}

const UNARY: Arity = Arity::Exactly(1);
const BINARY: Arity = Arity::Exactly(2);

/// The kernel's inputs, an error unless there are as many as `arity` says.
fn inputs_of(frame: &KernelFrame<'_>, arity: Arity) -> Result<Inputs, KernelError> {
    let inputs = Inputs::new(frame)?;
    let given = inputs.all().len();
    match arity {
        Arity::Exactly(n) if given != n => Err(error(frame, format_args!("takes {n} inputs, not {given}"))),
        Arity::Variadic if given == 0 => Err(error(frame, "takes at least one input")),
        _ => Ok(inputs),
    }
}

/// A kernel over all the inputs, of one element type, broadcast; `op` gets each element's
/// values and the result has the inputs' type.
/// `integers` is the operator on integer elements, exact (f64 holds only 53 bits) and wrapping to
/// the element type's width as C and numpy do; without it integers go through `op` too.
fn register_numeric<F>(registry: &mut KernelRegistry, name: &str, arity: Arity, op: F, integers: Option<IntegerOp>)
where
    F: Fn(&KernelSite<'_>, DType, &[f64]) -> Result<f64, String> + Copy + Send + Sync + 'static,
{
    let kernel = format!("onnx.{name}");
    registry.add_kernel(&kernel, move |frame: &mut KernelFrame<'_>| {
        let inputs = inputs_of(frame, arity)?;
        let dtype = same_type(frame, inputs.all())?;
        let site = **frame;
        // Integers go to `integers` when there is one, exact; floats (and integers without it) to
        // `op` as f64s. The buffers are reused from element to element.
        let floats = matches!(dtype, DType::F16 | DType::BF16 | DType::F32 | DType::F64);
        let exact_integers = integers.filter(|_| !floats);
        let (mut exact, mut wide) = (Vec::new(), Vec::new());
        let result = numeric!(dtype, T => {
            let operands: Vec<Typed<T>> = inputs.all().iter().map(Typed::read).collect();
            map_broadcast(frame, &operands, dtype, |values: &[T]| {
                if let Some(integers) = exact_integers {
                    exact.clear();
                    exact.extend(values.iter().filter_map(|v| v.to_integer()));
                    if exact.len() == values.len() {
                        return integers(&site, &exact).map(T::from_integer);
                    }
                }
                wide.clear();
                wide.extend(values.iter().map(|v| v.to_f64()));
                op(&site, dtype, &wide).map(T::from_f64)
            })?
        }, return Err(unsupported(frame, dtype)));
        frame.emplace_result(0, result)
    });
}

/// A comparison of two inputs of one type, broadcast, into booleans.
fn register_comparison(registry: &mut KernelRegistry, name: &str, op: fn(std::cmp::Ordering) -> bool) {
    registry.add_kernel(&format!("onnx.{name}"), move |frame: &mut KernelFrame<'_>| {
        if let Some(result) = super::strings::compare(frame, op)? {
            return frame.emplace_result(0, result);
        }
        let inputs = inputs_of(frame, BINARY)?;
        let dtype = same_type(frame, inputs.all())?;
        let result = any!(dtype, T => {
            let operands: Vec<Typed<T>> = inputs.all().iter().map(Typed::read).collect();
            map_broadcast(frame, &operands, DType::I1, |v: &[T]| {
                // NaN is unordered with everything, so every comparison with it is false.
                Ok(v[0].partial_cmp(&v[1]).is_some_and(op))
            })?
        }, return Err(unsupported(frame, dtype)));
        frame.emplace_result(0, result)
    });
}

/// A function of booleans over the broadcast inputs.
fn register_logic(registry: &mut KernelRegistry, name: &str, arity: Arity, op: fn(&[bool]) -> bool) {
    registry.add_kernel(&format!("onnx.{name}"), move |frame: &mut KernelFrame<'_>| {
        let inputs = inputs_of(frame, arity)?;
        if let Some(other) = inputs.all().iter().find(|t| t.dtype() != DType::I1) {
            return Err(unsupported(frame, other.dtype()));
        }
        let operands: Vec<Typed<bool>> = inputs.all().iter().map(Typed::read).collect();
        let result = map_broadcast(frame, &operands, DType::I1, |v: &[bool]| Ok(op(v)))?;
        frame.emplace_result(0, result)
    });
}

/// A function of integers, as their 64 bits, over the broadcast inputs.
fn register_bitwise(
    registry: &mut KernelRegistry,
    name: &str,
    arity: Arity,
    op: fn(&KernelSite<'_>, u32, &[u64]) -> u64,
) {
    registry.add_kernel(&format!("onnx.{name}"), move |frame: &mut KernelFrame<'_>| {
        let inputs = inputs_of(frame, arity)?;
        let dtype = same_type(frame, inputs.all())?;
        let site = **frame;
        let bits = 8 * dtype.byte_size().unwrap_or(0) as u32;
        let result = integer!(dtype, T => {
            let operands: Vec<Typed<T>> = inputs.all().iter().map(Typed::read).collect();
            map_broadcast(frame, &operands, dtype, |v: &[T]| {
                let words: Vec<u64> = v.iter().map(|&x| to_bits(x, bits)).collect();
                Ok(from_bits::<T>(op(&site, bits, &words), bits))
            })?
        }, return Err(unsupported(frame, dtype)));
        frame.emplace_result(0, result)
    });
}

/// An integer's bits, zero-extended from its width.
fn to_bits<T: Value>(value: T, bits: u32) -> u64 {
    let mut bytes = [0u8; 8];
    value.store(DType::UI64, &mut bytes[..(bits / 8) as usize]);
    u64::from_le_bytes(bytes)
}

/// The integer whose bits are the low `bits` of `word`.
fn from_bits<T: Value>(word: u64, bits: u32) -> T {
    T::load(DType::UI64, &word.to_le_bytes()[..(bits / 8) as usize])
}

/// Functions computed in a float type's own precision: libm's f32 `erff` (within an ulp) costs a
/// fraction of the f64 series, which f32 results would round away.
trait Special: Sized {
    fn erf(self) -> Self;
    /// GELU: `x Φ(x)`, or its tanh approximation.
    fn gelu(self, tanh: bool) -> Self;
}

macro_rules! special {
    ($($t:ident => $erf:path),*) => {$(
        impl Special for $t {
            fn erf(self) -> $t {
                $erf(self)
            }
            fn gelu(self, tanh: bool) -> $t {
                use std::$t::consts::{FRAC_2_PI, SQRT_2};
                if tanh {
                    0.5 * self * (1.0 + (FRAC_2_PI.sqrt() * (self + 0.044_715 * self * self * self)).tanh())
                } else {
                    0.5 * self * (1.0 + $erf(self / SQRT_2))
                }
            }
        }
    )*};
}
special!(f32 => libm::erff, f64 => libm::erf);

/// A function of one float input (`f16`, `bf16`, `f32`, `f64`), computed in f64.
fn register_float(registry: &mut KernelRegistry, name: &str, op: fn(&KernelSite<'_>, f64) -> Result<f64, String>) {
    registry.add_kernel(&format!("onnx.{name}"), move |frame: &mut KernelFrame<'_>| {
        let inputs = Inputs::new(frame)?;
        let x = inputs.required(0)?;
        let dtype = x.dtype();
        let site = **frame;
        let result = float!(dtype, T => {
            let x = Typed::<T>::read(x);
            let values = x.values.iter().map(|v| op(&site, v.to_f64()).map(T::from_f64)).collect::<Result<Vec<T>, _>>()
                .map_err(|e| error(frame, e))?;
            Typed { dims: x.dims, values }.into_tensor(frame, dtype)?
        }, return Err(unsupported(frame, dtype)));
        frame.emplace_result(0, result)
    });
}

/// A predicate of one float input into booleans.
fn register_float_test(
    registry: &mut KernelRegistry,
    name: &str,
    op: fn(&KernelSite<'_>, f64) -> Result<bool, String>,
) {
    registry.add_kernel(&format!("onnx.{name}"), move |frame: &mut KernelFrame<'_>| {
        let inputs = Inputs::new(frame)?;
        let x = inputs.required(0)?;
        let dtype = x.dtype();
        let site = **frame;
        let result = float!(dtype, T => {
            let x = Typed::<T>::read(x);
            let values = x.values.iter().map(|v| op(&site, v.to_f64())).collect::<Result<Vec<bool>, _>>()
                .map_err(|e| error(frame, e))?;
            Typed { dims: x.dims, values }.into_tensor(frame, DType::I1)?
        }, return Err(unsupported(frame, dtype)));
        frame.emplace_result(0, result)
    });
}

fn attribute(site: &KernelSite<'_>, name: &str, default: f32) -> Result<f64, String> {
    float_attribute(site, name, default).map(f64::from).map_err(|e| e.0.message)
}

/// ONNX's `Round`: to the nearest integer, halves to even.
fn round_half_even(x: f64) -> f64 {
    let rounded = x.round();
    if (x - x.trunc()).abs() == 0.5 {
        2.0 * (x / 2.0).round()
    } else {
        rounded
    }
}

/// Integer division, truncating as C does; a zero divisor an error.
fn divide_integers(_: &KernelSite<'_>, v: &[i128]) -> Result<i128, String> {
    v[0].checked_div(v[1]).ok_or_else(|| "integer division by zero".to_owned())
}

/// The sum of integers, wrapping as the element type's own additions would.
fn wrapping_sum(values: &[i128]) -> i128 {
    values.iter().fold(0i128, |sum, &v| sum.wrapping_add(v))
}

/// The element type ONNX's `TensorProto.DataType` code `to` names.
pub(crate) fn onnx_dtype(code: i64) -> Option<DType> {
    Some(match code {
        1 => DType::F32,
        2 => DType::UI8,
        3 => DType::I8,
        4 => DType::UI16,
        5 => DType::I16,
        6 => DType::I32,
        7 => DType::I64,
        9 => DType::I1,
        10 => DType::F16,
        11 => DType::F64,
        12 => DType::UI32,
        13 => DType::UI64,
        16 => DType::BF16,
        _ => return None,
    })
}

/// Uniform draws in [0, 1) for training `Dropout`'s mask (xorshift64*, from the node's seed).
struct Random(u64);

impl Random {
    fn new(seed: u64) -> Random {
        Random(seed ^ 0x9E37_79B9_7F4A_7C15 | 1)
    }

    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `x` converted to `to`, element by element, as ONNX's `Cast` converts.
fn cast(frame: &KernelFrame<'_>, x: &DenseHostTensor, to: DType) -> Result<DenseHostTensor, KernelError> {
    let from = x.dtype();
    any!(from, S => {
        let source = Typed::<S>::read(x);
        any!(to, T => {
            let values: Vec<T> = source.values.iter().map(|v| convert::<S, T>(*v)).collect();
            Typed { dims: source.dims, values }.into_tensor(frame, to)
        }, Err(unsupported(frame, to)))
    }, Err(unsupported(frame, from)))
}

/// One element converted: integers and booleans exactly (wrapping into a narrower integer, as C
/// does), floats through f64.
fn convert<S: Value, T: Value>(value: S) -> T {
    match value.to_integer() {
        Some(integer) => T::from_integer(integer),
        None => T::from_f64(value.to_f64()),
    }
}

pub(super) fn register(registry: &mut KernelRegistry) {
    register_numeric(registry, "Add", BINARY, |_, _, v| Ok(v[0] + v[1]), Some(|_, v| Ok(v[0].wrapping_add(v[1]))));
    register_numeric(registry, "Sub", BINARY, |_, _, v| Ok(v[0] - v[1]), Some(|_, v| Ok(v[0].wrapping_sub(v[1]))));
    register_numeric(registry, "Mul", BINARY, |_, _, v| Ok(v[0] * v[1]), Some(|_, v| Ok(v[0].wrapping_mul(v[1]))));
    register_numeric(registry, "Div", BINARY, |_, _, v| Ok(v[0] / v[1]), Some(divide_integers));
    register_numeric(registry, "PRelu", BINARY, |_, _, v| Ok(if v[0] < 0.0 { v[1] * v[0] } else { v[0] }), None);
    register_numeric(
        registry,
        "Shrink",
        UNARY,
        |site, _, v| {
            let (lambd, bias) = (attribute(site, "lambd", 0.5)?, attribute(site, "bias", 0.0)?);
            Ok(if v[0] < -lambd {
                v[0] + bias
            } else if v[0] > lambd {
                v[0] - bias
            } else {
                0.0
            })
        },
        None,
    );
    register_numeric(
        registry,
        "Mod",
        BINARY,
        |site, _, v| {
            // Floats keep the dividend's sign (C's fmod) unless `fmod` is 0, which ONNX allows
            // only for integers.
            let fmod = int(site, "fmod", 0).map_err(|e| e.0.message)? != 0;
            let r = v[0] % v[1];
            Ok(if !fmod && r != 0.0 && (r < 0.0) != (v[1] < 0.0) { r + v[1] } else { r })
        },
        Some(|site, v| {
            if v[1] == 0 {
                return Err("integer modulo by zero".to_owned());
            }
            let fmod = int(site, "fmod", 0).map_err(|e| e.0.message)? != 0;
            let r = v[0] % v[1];
            // Integer Mod takes the divisor's sign (Python's %) unless fmod is set.
            Ok(if !fmod && r != 0 && (r < 0) != (v[1] < 0) { r + v[1] } else { r })
        }),
    );
    register_numeric(
        registry,
        "Max",
        Arity::Variadic,
        |_, _, v| Ok(v.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
        Some(|_, v| Ok(v.iter().copied().max().unwrap_or(0))),
    );
    register_numeric(
        registry,
        "Min",
        Arity::Variadic,
        |_, _, v| Ok(v.iter().copied().fold(f64::INFINITY, f64::min)),
        Some(|_, v| Ok(v.iter().copied().min().unwrap_or(0))),
    );
    register_numeric(registry, "Sum", Arity::Variadic, |_, _, v| Ok(v.iter().sum()), Some(|_, v| Ok(wrapping_sum(v))));
    register_numeric(
        registry,
        "Mean",
        Arity::Variadic,
        |_, _, v| Ok(v.iter().sum::<f64>() / v.len() as f64),
        Some(|_, v| Ok(wrapping_sum(v) / v.len() as i128)),
    );
    register_numeric(registry, "Abs", UNARY, |_, _, v| Ok(v[0].abs()), Some(|_, v| Ok(v[0].wrapping_abs())));
    register_numeric(registry, "Neg", UNARY, |_, _, v| Ok(-v[0]), Some(|_, v| Ok(v[0].wrapping_neg())));
    register_numeric(
        registry,
        "Sign",
        UNARY,
        |_, _, v| {
            Ok(if v[0] > 0.0 {
                1.0
            } else if v[0] < 0.0 {
                -1.0
            } else {
                0.0
            })
        },
        Some(|_, v| Ok(v[0].signum())),
    );
    register_numeric(registry, "Relu", UNARY, |_, _, v| Ok(v[0].max(0.0)), Some(|_, v| Ok(v[0].max(0))));
    register_numeric(registry, "Identity", UNARY, |_, _, v| Ok(v[0]), Some(|_, v| Ok(v[0])));

    register_comparison(registry, "Equal", |o| o.is_eq());
    register_comparison(registry, "Less", |o| o.is_lt());
    register_comparison(registry, "Greater", |o| o.is_gt());
    register_comparison(registry, "LessOrEqual", |o| o.is_le());
    register_comparison(registry, "GreaterOrEqual", |o| o.is_ge());

    register_logic(registry, "And", BINARY, |v| v[0] && v[1]);
    register_logic(registry, "Or", BINARY, |v| v[0] || v[1]);
    register_logic(registry, "Xor", BINARY, |v| v[0] != v[1]);
    register_logic(registry, "Not", UNARY, |v| !v[0]);

    register_bitwise(registry, "BitwiseAnd", BINARY, |_, _, v| v[0] & v[1]);
    register_bitwise(registry, "BitwiseOr", BINARY, |_, _, v| v[0] | v[1]);
    register_bitwise(registry, "BitwiseXor", BINARY, |_, _, v| v[0] ^ v[1]);
    register_bitwise(registry, "BitwiseNot", UNARY, |_, bits, v| !v[0] & (u64::MAX >> (64 - bits)));
    register_bitwise(registry, "BitShift", BINARY, |site, bits, v| {
        let mask = u64::MAX >> (64 - bits);
        let left = matches!(string(site, "direction", ""), Ok("LEFT"));
        match (left, v[1] < u64::from(bits)) {
            (true, true) => (v[0] << v[1]) & mask,
            (false, true) => v[0] >> v[1],
            _ => 0,
        }
    });

    register_float(registry, "Sqrt", |_, x| Ok(x.sqrt()));
    register_float(registry, "Exp", |_, x| Ok(x.exp()));
    register_float(registry, "Log", |_, x| Ok(x.ln()));
    register_float(registry, "Reciprocal", |_, x| Ok(1.0 / x));
    register_float(registry, "Floor", |_, x| Ok(x.floor()));
    register_float(registry, "Ceil", |_, x| Ok(x.ceil()));
    register_float(registry, "Round", |_, x| Ok(round_half_even(x)));
    register_float(registry, "Sin", |_, x| Ok(x.sin()));
    register_float(registry, "Cos", |_, x| Ok(x.cos()));
    register_float(registry, "Tan", |_, x| Ok(x.tan()));
    register_float(registry, "Asin", |_, x| Ok(x.asin()));
    register_float(registry, "Acos", |_, x| Ok(x.acos()));
    register_float(registry, "Atan", |_, x| Ok(x.atan()));
    register_float(registry, "Sinh", |_, x| Ok(x.sinh()));
    register_float(registry, "Cosh", |_, x| Ok(x.cosh()));
    register_float(registry, "Asinh", |_, x| Ok(x.asinh()));
    register_float(registry, "Acosh", |_, x| Ok(x.acosh()));
    register_float(registry, "Atanh", |_, x| Ok(x.atanh()));
    register_float(registry, "Tanh", |_, x| Ok(x.tanh()));
    // Erf and GELU in the elements' own precision (see `Special`), GELU's form read once.
    for name in ["Erf", "Gelu"] {
        registry.add_kernel(&format!("onnx.{name}"), move |frame: &mut KernelFrame<'_>| {
            let inputs = inputs_of(frame, UNARY)?;
            let x = &inputs.all()[0];
            let dtype = x.dtype();
            let tanh = string(frame, "approximate", "none")? == "tanh";
            let result = float!(dtype, T => {
                let x = Typed::<T>::read(x);
                let values = match name {
                    "Erf" => x.values.iter().map(|&v| Special::erf(v)).collect(),
                    _ => x.values.iter().map(|&v| v.gelu(tanh)).collect(),
                };
                Typed::<T> { dims: x.dims, values }.into_tensor(frame, dtype)?
            }, return Err(unsupported(frame, dtype)));
            frame.emplace_result(0, result)
        });
    }
    register_float(registry, "Sigmoid", |_, x| Ok(1.0 / (1.0 + (-x).exp())));
    register_float(registry, "Softplus", |_, x| Ok(if x > 30.0 { x } else { x.exp().ln_1p() }));
    register_float(registry, "Softsign", |_, x| Ok(x / (1.0 + x.abs())));
    register_float(registry, "Swish", |site, x| Ok(x / (1.0 + (-attribute(site, "alpha", 1.0)? * x).exp())));
    register_float(registry, "Mish", |_, x| Ok(x * x.exp().ln_1p().tanh()));
    register_float(registry, "HardSwish", |_, x| Ok(x * (x / 6.0 + 0.5).clamp(0.0, 1.0)));
    register_float(registry, "LeakyRelu", |site, x| Ok(if x < 0.0 { attribute(site, "alpha", 0.01)? * x } else { x }));
    register_float(registry, "ThresholdedRelu", |site, x| Ok(if x > attribute(site, "alpha", 1.0)? { x } else { 0.0 }));
    register_float(registry, "Elu", |site, x| {
        Ok(if x < 0.0 { attribute(site, "alpha", 1.0)? * x.exp_m1() } else { x })
    });
    register_float(registry, "Celu", |site, x| {
        let alpha = attribute(site, "alpha", 1.0)?;
        Ok(x.max(0.0) + (alpha * (x / alpha).exp_m1()).min(0.0))
    });
    register_float(registry, "Selu", |site, x| {
        let (alpha, gamma) = (attribute(site, "alpha", 1.673_263_2)?, attribute(site, "gamma", 1.050_701)?);
        Ok(gamma * if x > 0.0 { x } else { alpha * x.exp_m1() })
    });
    register_float(registry, "HardSigmoid", |site, x| {
        Ok((attribute(site, "alpha", 0.2)? * x + attribute(site, "beta", 0.5)?).clamp(0.0, 1.0))
    });
    register_float_test(registry, "IsNaN", |_, x| Ok(x.is_nan()));
    register_float_test(registry, "IsInf", |site, x| {
        let positive = int(site, "detect_positive", 1).map_err(|e| e.0.message)? != 0;
        let negative = int(site, "detect_negative", 1).map_err(|e| e.0.message)? != 0;
        Ok(x.is_infinite() && ((x > 0.0 && positive) || (x < 0.0 && negative)))
    });

    registry.add_kernel("onnx.Where", |frame: &mut KernelFrame<'_>| {
        let inputs = Inputs::new(frame)?;
        let (condition, x, y) = (inputs.required(0)?, inputs.required(1)?, inputs.required(2)?);
        if condition.dtype() != DType::I1 {
            return Err(unsupported(frame, condition.dtype()));
        }
        let dtype = same_type(frame, &[x.clone(), y.clone()])?;
        let selector = Typed::<bool>::read(condition);
        let result = any!(dtype, T => {
            let (x, y) = (Typed::<T>::read(x), Typed::<T>::read(y));
            let shapes: [&[usize]; 3] = [&selector.dims, &x.dims, &y.dims];
            let (out, strides) = broadcast(&shapes)
                .ok_or_else(|| error(frame, format_args!("cannot broadcast the shapes {shapes:?}")))?;
            let values = offsets(&out, &strides)
                .map(|o| if selector.values[o[0]] { x.values[o[1]] } else { y.values[o[2]] })
                .collect();
            Typed { dims: out, values }.into_tensor(frame, dtype)?
        }, return Err(unsupported(frame, dtype)));
        frame.emplace_result(0, result)
    });

    registry.add_kernel("onnx.Cast", |frame: &mut KernelFrame<'_>| {
        let code = int(frame, "to", 0)?;
        match super::strings::cast(frame, code)? {
            Some(super::strings::Cast::Strings(strings)) => return frame.emplace_result(0, strings),
            Some(super::strings::Cast::Dense(tensor)) => return frame.emplace_result(0, tensor),
            None => {}
        }
        let inputs = Inputs::new(frame)?;
        let to = onnx_dtype(code)
            .ok_or_else(|| error(frame, format_args!("cast to element type {code} is not supported")))?;
        let result = cast(frame, inputs.required(0)?, to)?;
        frame.emplace_result(0, result)
    });
    registry.add_kernel("onnx.BitCast", |frame: &mut KernelFrame<'_>| {
        let inputs = Inputs::new(frame)?;
        let x = inputs.required(0)?;
        let code = int(frame, "to", 0)?;
        let to = onnx_dtype(code)
            .ok_or_else(|| error(frame, format_args!("bit cast to element type {code} is not supported")))?;
        // (Booleans are bytes: a byte other than 0 or 1 reads as true.)
        if x.dtype().byte_size() != to.byte_size() {
            return Err(error(frame, format_args!("cannot reinterpret {:?} elements as {to:?}", x.dtype())));
        }
        // The same bytes under another element type: the buffer is shared, not copied.
        let result = DenseHostTensor::from_buffer(to, x.shape().clone(), x.buffer().clone())?;
        frame.emplace_result(0, result)
    });
    registry.add_kernel("onnx.Pow", |frame: &mut KernelFrame<'_>| {
        // The exponent may be of another number type; the result has the base's.
        let inputs = Inputs::new(frame)?;
        let (x, y) = (inputs.required(0)?, inputs.required(1)?);
        let dtype = x.dtype();
        let operands = [wide(frame, x)?, wide(frame, y)?];
        let result = numeric!(dtype, T => {
            map_broadcast(frame, &operands, dtype, |v: &[f64]| Ok(T::from_f64(v[0].powf(v[1]))))?
        }, return Err(unsupported(frame, dtype)));
        frame.emplace_result(0, result)
    });
    registry.add_kernel("onnx.Clip", |frame: &mut KernelFrame<'_>| {
        let inputs = Inputs::new(frame)?;
        let x = inputs.required(0)?;
        let dtype = x.dtype();
        let result = numeric!(dtype, T => {
            // Before opset 11 the bounds are float attributes; from 11 inputs of x's type.
            let bound = |index: usize, name: &str| -> Result<Option<T>, KernelError> {
                if opset(frame)? < 11 {
                    let bound = has_attribute(frame, name).then(|| float_attribute(frame, name, 0.0));
                    return Ok(bound.transpose()?.map(|v| T::from_f64(f64::from(v))));
                }
                let Some(tensor) = inputs.optional(index) else { return Ok(None) };
                if tensor.dtype() != dtype {
                    return Err(error(frame, format_args!("{name} holds {:?} elements, not {dtype:?}", tensor.dtype())));
                }
                match Typed::<T>::read(tensor).values[..] {
                    [value] => Ok(Some(value)),
                    ref values => Err(error(frame, format_args!("{name} holds {} values, not one", values.len()))),
                }
            };
            let (low, high) = (bound(1, "min")?, bound(2, "max")?);
            let x = Typed::<T>::read(x);
            // Where min exceeds max every element becomes max.
            let values = x.values.iter().map(|&v| {
                let v = match low { Some(low) if v < low => low, _ => v };
                match high { Some(high) if v > high => high, _ => v }
            }).collect();
            Typed { dims: x.dims, values }.into_tensor(frame, dtype)?
        }, return Err(unsupported(frame, dtype)));
        frame.emplace_result(0, result)
    });
    registry.add_kernel("onnx.Dropout", |frame: &mut KernelFrame<'_>| {
        let inputs = Inputs::new(frame)?;
        let x = inputs.required(0)?;
        let ratio = match inputs.optional(1) {
            Some(ratio) => match wide(frame, ratio)?.values[..] {
                [ratio] => ratio,
                _ => return Err(error(frame, "ratio is not one value")),
            },
            None => f64::from(float_attribute(frame, "ratio", 0.5)?),
        };
        let training = match inputs.optional(2) {
            Some(mode) => Typed::<bool>::read(mode).values.first().copied().unwrap_or(false),
            None => false,
        };
        if !(0.0..1.0).contains(&ratio) {
            return Err(error(frame, format_args!("ratio {ratio} is outside [0, 1)")));
        }
        let dtype = x.dtype();
        // Outside training (and with a zero ratio) the output is the input and the mask all true.
        let (output, mask) = if !training || ratio == 0.0 {
            let mask = vec![true; x.num_elements()];
            (x.clone(), Typed { dims: super::tensors::dims(x), values: mask })
        } else {
            let mut random = Random::new(int(frame, "seed", 0)? as u64);
            float!(dtype, T => {
                let x = Typed::<T>::read(x);
                let mask: Vec<bool> = x.values.iter().map(|_| random.next() >= ratio).collect();
                let scale = 1.0 / (1.0 - ratio);
                let values = x.values.iter().zip(&mask)
                    .map(|(v, &keep)| T::from_f64(if keep { v.to_f64() * scale } else { 0.0 }))
                    .collect();
                (Typed { dims: x.dims.clone(), values }.into_tensor(frame, dtype)?, Typed { dims: x.dims, values: mask })
            }, return Err(unsupported(frame, dtype)))
        };
        frame.emplace_result(0, output)?;
        if frame.num_results() > 1 {
            let mask = mask.into_tensor(frame, DType::I1)?;
            frame.emplace_result(1, mask)?;
        }
        Ok(())
    });
    registry.add_kernel("onnx.CastLike", |frame: &mut KernelFrame<'_>| {
        let inputs = Inputs::new(frame)?;
        let to = inputs.required(1)?.dtype();
        let result = cast(frame, inputs.required(0)?, to)?;
        frame.emplace_result(0, result)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_follows_numpy() {
        let (dims, strides) = broadcast(&[&[2, 3], &[3], &[1, 1]]).unwrap();
        assert_eq!(dims, [2, 3]);
        assert_eq!(strides, [vec![3, 1], vec![0, 1], vec![0, 0]]);
        assert!(broadcast(&[&[2, 3], &[2]]).is_none());
        let all: Vec<Vec<usize>> = offsets(&dims, &strides).collect();
        assert_eq!(all[4], [4, 1, 0]);
    }

    #[test]
    fn round_takes_halves_to_even_and_casts_keep_integers_exact() {
        assert_eq!([0.5, 1.5, 2.5, -0.5, -1.5, 2.4].map(round_half_even), [0.0, 2.0, 2.0, -0.0, -2.0, 2.0]);
        assert_eq!(convert::<i64, i64>(i64::MAX - 1), i64::MAX - 1);
        assert_eq!(convert::<f32, i32>(-2.7), -2);
        assert_eq!(convert::<i32, u8>(300), 44);
        assert!(convert::<f32, bool>(0.5));
        assert_eq!(convert::<bool, f32>(true), 1.0);
    }
}
