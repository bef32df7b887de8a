//! Reductions and scans: `ReduceSum`, `ReduceMean`, `ReduceMax`, `ReduceMin`, `ReduceProd`,
//! `ReduceL1`, `ReduceL2`, `ReduceLogSum`, `ReduceLogSumExp`, `ReduceSumSquare` (over the axes
//! an attribute lists before opset 18, ReduceSum's before 13, an optional input after), `ArgMax`,
//! `ArgMin`, `CumSum` and `CumProd`. Integers sum and multiply exactly, wrapping as their type
//! does; floats in f64.

use super::dispatch::{any, numeric};
use super::tensors::{axis, dims, error, integer, integers, opset, unsupported, Groups, Inputs, Typed, Value};
use crate::dtype::DType;
use crate::library::nn::{int, ints};
use crate::{KernelError, KernelFrame, KernelRegistry};

pub(super) const OPERATORS: &[&str] = &[
    "ArgMax",
    "ArgMin",
    "CumProd",
    "CumSum",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceMax",
    "ReduceMean",
    "ReduceMin",
    "ReduceProd",
    "ReduceSum",
    "ReduceSumSquare",
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Reduction {
    Sum,
    Mean,
    Max,
    Min,
    Prod,
    L1,
    L2,
    LogSum,
    LogSumExp,
    SumSquare,
}

/// A running sum or product: exact (wrapping) for integers and booleans, f64 for floats.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Number {
    Integer(i128),
    Float(f64),
}

impl Number {
    fn of<T: Value>(value: T) -> Number {
        match value.to_integer() {
            Some(integer) => Number::Integer(integer),
            None => Number::Float(value.to_f64()),
        }
    }

    /// `integer` as a number of `T`'s kind.
    fn of_kind<T: Value>(integer: i128) -> Number {
        Number::of(T::from_integer(integer))
    }

    fn float(self) -> f64 {
        match self {
            Number::Integer(integer) => integer as f64,
            Number::Float(float) => float,
        }
    }

    fn add(self, other: Number) -> Number {
        match (self, other) {
            (Number::Integer(a), Number::Integer(b)) => Number::Integer(a.wrapping_add(b)),
            (a, b) => Number::Float(a.float() + b.float()),
        }
    }

    fn mul(self, other: Number) -> Number {
        match (self, other) {
            (Number::Integer(a), Number::Integer(b)) => Number::Integer(a.wrapping_mul(b)),
            (a, b) => Number::Float(a.float() * b.float()),
        }
    }

    fn abs(self) -> Number {
        match self {
            Number::Integer(integer) => Number::Integer(integer.wrapping_abs()),
            Number::Float(float) => Number::Float(float.abs()),
        }
    }

    /// The number as a `T` (an integer wrapped to `T`'s width).
    fn value<T: Value>(self) -> T {
        match self {
            Number::Integer(integer) => T::from_integer(integer),
            Number::Float(float) => T::from_f64(float),
        }
    }
}

#[allow(clippy::eq_op)]
fn is_nan<T: Value>(value: T) -> bool {
    value != value
}

/// One group of `values` (of `dtype`) reduced; a reduction over no values gives the reduction's
/// identity (the lowest value of the type for a maximum, the highest for a minimum, minus
/// infinity for the logarithms).
fn reduce<T: Value>(op: Reduction, dtype: DType, values: &[T]) -> T {
    let sum =
        |f: fn(Number) -> Number| values.iter().fold(Number::of_kind::<T>(0), |sum, &v| sum.add(f(Number::of(v))));
    match op {
        Reduction::Max | Reduction::Min => {
            let max = op == Reduction::Max;
            let mut best: Option<T> = None;
            for &v in values {
                if is_nan(v) {
                    return v;
                }
                best = Some(match best {
                    Some(b) if (max && b >= v) || (!max && b <= v) => b,
                    _ => v,
                });
            }
            best.unwrap_or_else(|| match dtype {
                DType::I1 => T::from_integer(i128::from(!max)),
                _ => T::from_f64(if max { f64::NEG_INFINITY } else { f64::INFINITY }),
            })
        }
        Reduction::Sum => sum(|v| v).value(),
        Reduction::Mean => {
            let count = values.len() as i128;
            match sum(|v| v) {
                Number::Integer(total) if count > 0 => T::from_integer(total / count),
                total => T::from_f64(total.float() / count as f64),
            }
        }
        Reduction::Prod => {
            values.iter().fold(Number::of_kind::<T>(1), |product, &v| product.mul(Number::of(v))).value()
        }
        Reduction::L1 => sum(Number::abs).value(),
        Reduction::SumSquare => sum(|v| v.mul(v)).value(),
        Reduction::L2 => T::from_f64(sum(|v| v.mul(v)).float().sqrt()),
        Reduction::LogSum => T::from_f64(sum(|v| v).float().ln()),
        Reduction::LogSumExp => {
            let max = values.iter().map(|v| v.to_f64()).fold(f64::NEG_INFINITY, f64::max);
            // Shifted by the maximum so that large elements do not overflow (unless it is infinite).
            let shift = if max.is_finite() { max } else { 0.0 };
            T::from_f64(shift + values.iter().map(|v| (v.to_f64() - shift).exp()).sum::<f64>().ln())
        }
    }
}

/// Which axes of a tensor of `rank` a reduction reduces: those listed (by the `axes` input from
/// opset `since`, the attribute before), every axis when none is, none when none is and
/// `noop_with_empty_axes` is set.
fn reduced_axes(frame: &KernelFrame<'_>, inputs: &Inputs, rank: usize, since: i64) -> Result<Vec<bool>, KernelError> {
    let listed = if opset(frame)? >= since {
        inputs.optional(1).map(|axes| integers(frame, axes)).transpose()?.unwrap_or_default()
    } else {
        ints(frame, "axes", &[])?
    };
    let noop = int(frame, "noop_with_empty_axes", 0)? != 0;
    let mut reduced = vec![listed.is_empty() && !noop; rank];
    for &a in &listed {
        reduced[axis(frame, a, rank)?] = true;
    }
    Ok(reduced)
}

/// `dims` less the `reduced` axes, or with them 1 when `keep`.
fn reduced_dims(dims: &[usize], reduced: &[bool], keep: bool) -> Vec<usize> {
    dims.iter()
        .zip(reduced)
        .filter_map(|(&d, &r)| match (r, keep) {
            (false, _) => Some(d),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

fn register_reduction(registry: &mut KernelRegistry, name: &str, op: Reduction) {
    let since = if op == Reduction::Sum { 13 } else { 18 };
    registry.add_kernel(&format!("onnx.{name}"), move |frame: &mut KernelFrame<'_>| {
        let inputs = Inputs::new(frame)?;
        let x = inputs.required(0)?;
        let dtype = x.dtype();
        if dtype == DType::I1 && !matches!(op, Reduction::Max | Reduction::Min) {
            return Err(unsupported(frame, dtype));
        }
        let shape = dims(x);
        let reduced = reduced_axes(frame, &inputs, shape.len(), since)?;
        let out = reduced_dims(&shape, &reduced, int(frame, "keepdims", 1)? != 0);
        let groups = Groups::new(frame, &shape, &reduced)?;
        let result = any!(dtype, T => {
            let values = groups.reduce(frame, &Typed::<T>::read(x).values, |group| reduce(op, dtype, group))?;
            Typed { dims: out, values }.into_tensor(frame, dtype)?
        }, return Err(unsupported(frame, dtype)));
        frame.emplace_result(0, result)
    });
}

/// Whether `candidate` takes the place of `best` in ArgMax (`max`) or ArgMin: NaN wins over
/// every number (as numpy's), ties go to the first unless `last`.
fn wins<T: Value>(candidate: T, best: T, max: bool, last: bool) -> bool {
    match (is_nan(candidate), is_nan(best)) {
        (_, true) => last && is_nan(candidate),
        (true, false) => true,
        _ => (if max { candidate > best } else { candidate < best }) || (last && candidate == best),
    }
}

/// The position of the winner among `values` (which are not empty).
pub(super) fn arg<T: Value>(values: &[T], max: bool, last: bool) -> i64 {
    let mut best: Option<(usize, T)> = None;
    for (i, &v) in values.iter().enumerate() {
        if best.is_none_or(|(_, b)| wins(v, b, max, last)) {
            best = Some((i, v));
        }
    }
    best.map_or(0, |(i, _)| i as i64)
}

fn register_arg(registry: &mut KernelRegistry, name: &str, max: bool) {
    registry.add_kernel(&format!("onnx.{name}"), move |frame: &mut KernelFrame<'_>| {
        let inputs = Inputs::new(frame)?;
        let x = inputs.required(0)?;
        let dtype = x.dtype();
        let shape = dims(x);
        let along = axis(frame, int(frame, "axis", 0)?, shape.len())?;
        if shape[along] == 0 {
            return Err(error(frame, format_args!("axis {along} of {shape:?} has no elements")));
        }
        let last = int(frame, "select_last_index", 0)? != 0;
        let reduced: Vec<bool> = (0..shape.len()).map(|k| k == along).collect();
        let out = reduced_dims(&shape, &reduced, int(frame, "keepdims", 1)? != 0);
        let groups = Groups::of_elements(frame, &shape, &reduced)?;
        let values = numeric!(dtype, T => {
            groups.reduce(frame, &Typed::<T>::read(x).values, |group| arg(group, max, last))?
        }, return Err(unsupported(frame, dtype)));
        let result = Typed { dims: out, values }.into_tensor(frame, DType::I64)?;
        frame.emplace_result(0, result)
    });
}

/// The running sums (or products) of `values` in place, in reverse order when `reverse`, each
/// without its own element when `exclusive`.
fn accumulate<T: Value>(values: &mut [T], product: bool, exclusive: bool, reverse: bool) {
    let mut total = Number::of_kind::<T>(i128::from(product));
    let step = |value: &mut T| {
        let next = if product { total.mul(Number::of(*value)) } else { total.add(Number::of(*value)) };
        *value = if exclusive { total } else { next }.value();
        total = next;
    };
    if reverse {
        values.iter_mut().rev().for_each(step);
    } else {
        values.iter_mut().for_each(step);
    }
}

fn register_cumulative(registry: &mut KernelRegistry, name: &str, product: bool) {
    registry.add_kernel(&format!("onnx.{name}"), move |frame: &mut KernelFrame<'_>| {
        let inputs = Inputs::new(frame)?;
        let x = inputs.required(0)?;
        let dtype = x.dtype();
        let shape = dims(x);
        let along = axis(frame, integer(frame, inputs.required(1)?)?, shape.len())?;
        let exclusive = int(frame, "exclusive", 0)? != 0;
        let reverse = int(frame, "reverse", 0)? != 0;
        let grouped: Vec<bool> = (0..shape.len()).map(|k| k == along).collect();
        let groups = Groups::of_elements(frame, &shape, &grouped)?;
        let result = numeric!(dtype, T => {
            let mut x = Typed::<T>::read(x);
            groups.update(&mut x.values, |group| accumulate(group, product, exclusive, reverse));
            x.into_tensor(frame, dtype)?
        }, return Err(unsupported(frame, dtype)));
        frame.emplace_result(0, result)
    });
}

pub(super) fn register(registry: &mut KernelRegistry) {
    register_reduction(registry, "ReduceSum", Reduction::Sum);
    register_reduction(registry, "ReduceMean", Reduction::Mean);
    register_reduction(registry, "ReduceMax", Reduction::Max);
    register_reduction(registry, "ReduceMin", Reduction::Min);
    register_reduction(registry, "ReduceProd", Reduction::Prod);
    register_reduction(registry, "ReduceL1", Reduction::L1);
    register_reduction(registry, "ReduceL2", Reduction::L2);
    register_reduction(registry, "ReduceLogSum", Reduction::LogSum);
    register_reduction(registry, "ReduceLogSumExp", Reduction::LogSumExp);
    register_reduction(registry, "ReduceSumSquare", Reduction::SumSquare);
    register_arg(registry, "ArgMax", true);
    register_arg(registry, "ArgMin", false);
    register_cumulative(registry, "CumSum", false);
    register_cumulative(registry, "CumProd", true);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_reduce_exactly_and_wrap_as_their_type() {
        let big = [i64::MAX - 1, 1, -3];
        assert_eq!(reduce(Reduction::Sum, DType::I64, &big), i64::MAX - 3);
        assert_eq!(reduce(Reduction::Sum, DType::UI8, &[200u8, 100]), 44);
        assert_eq!(reduce(Reduction::Prod, DType::I32, &[3i32, -4, 5]), -60);
        assert_eq!(reduce(Reduction::Mean, DType::I32, &[1i32, 2, 4]), 2);
        assert_eq!(reduce(Reduction::L1, DType::I32, &[-3i32, 4]), 7);
        assert_eq!(reduce(Reduction::SumSquare, DType::I64, &[-3i64, 4]), 25);
        assert_eq!(reduce(Reduction::L2, DType::F32, &[-3f32, 4.0]), 5.0);
    }

    #[test]
    fn empty_reductions_give_the_identity() {
        let none: &[f32] = &[];
        assert_eq!(reduce(Reduction::Sum, DType::F32, none), 0.0);
        assert_eq!(reduce(Reduction::Prod, DType::F32, none), 1.0);
        assert_eq!(reduce(Reduction::Max, DType::F32, none), f32::NEG_INFINITY);
        assert_eq!(reduce(Reduction::Min, DType::F32, none), f32::INFINITY);
        assert_eq!(reduce(Reduction::LogSum, DType::F32, none), f32::NEG_INFINITY);
        assert_eq!(reduce(Reduction::LogSumExp, DType::F32, none), f32::NEG_INFINITY);
        assert_eq!(reduce(Reduction::Max, DType::I32, &[] as &[i32]), i32::MIN);
        assert_eq!(reduce(Reduction::Min, DType::UI8, &[] as &[u8]), u8::MAX);
        assert!(!reduce(Reduction::Max, DType::I1, &[] as &[bool]));
        assert!(reduce(Reduction::Min, DType::I1, &[] as &[bool]));
        assert!(reduce(Reduction::Max, DType::I1, &[false, true]));
    }

    #[test]
    fn log_sum_exp_does_not_overflow_and_extremes_keep_nan() {
        let large = reduce(Reduction::LogSumExp, DType::F64, &[1000.0f64, 1000.0]);
        assert!((large - (1000.0 + 2f64.ln())).abs() < 1e-9);
        assert!(reduce(Reduction::Max, DType::F32, &[1.0f32, f32::NAN, 3.0]).is_nan());
    }

    #[test]
    fn arg_breaks_ties_by_select_last_index() {
        let values = [2i32, 5, 1, 5, 1];
        assert_eq!(arg(&values, true, false), 1);
        assert_eq!(arg(&values, true, true), 3);
        assert_eq!(arg(&values, false, false), 2);
        assert_eq!(arg(&values, false, true), 4);
        assert_eq!(arg(&[1.0f32, f32::NAN, 9.0], true, false), 1);
    }

    #[test]
    fn scans_run_exclusive_and_reverse() {
        let run = |product, exclusive, reverse| {
            let mut values = [1i32, 2, 3, 4];
            accumulate(&mut values, product, exclusive, reverse);
            values
        };
        assert_eq!(run(false, false, false), [1, 3, 6, 10]);
        assert_eq!(run(false, true, false), [0, 1, 3, 6]);
        assert_eq!(run(false, false, true), [10, 9, 7, 4]);
        assert_eq!(run(false, true, true), [9, 7, 4, 0]);
        assert_eq!(run(true, true, false), [1, 1, 2, 6]);
        assert_eq!(run(true, false, true), [24, 24, 12, 4]);
    }

    #[test]
    fn reduced_shapes_keep_or_drop_axes() {
        assert_eq!(reduced_dims(&[2, 3, 4], &[false, true, true], true), [2, 1, 1]);
        assert_eq!(reduced_dims(&[2, 3, 4], &[false, true, true], false), [2]);
        assert_eq!(reduced_dims(&[2, 3], &[true, true], false), Vec::<usize>::new());
    }
}
