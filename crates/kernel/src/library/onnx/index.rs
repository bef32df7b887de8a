//! Elements chosen by index or by value, of any element type: `Gather`, `GatherElements`,
//! `GatherND`, `Compress`, their inverses `ScatterElements` (and its old name `Scatter`) and
//! `ScatterND` with their reductions, `NonZero`, `TopK` and `Unique`.

use super::dispatch::any;
use super::tensors::{axis, dims, element_count, error, has_attribute, integer, integers, opset, order, strides, take};
use super::tensors::{unsupported, Inputs, Typed, Value, Walk};
use crate::dtype::DType;
use crate::library::nn::int;
use crate::tensor::DenseHostTensor;
use crate::{KernelError, KernelFrame, KernelRegistry, KernelSite};

pub(super) const OPERATORS: &[&str] = &[
    "Compress",
    "Gather",
    "GatherElements",
    "GatherND",
    "NonZero",
    "Scatter",
    "ScatterElements",
    "ScatterND",
    "TopK",
    "Unique",
];

/// `indices` into a dimension of `dim` (negative ones count from the end), each checked.
fn normalize(indices: &[i64], dim: usize) -> Result<Vec<usize>, String> {
    indices
        .iter()
        .map(|&i| {
            let at = if i < 0 { i.checked_add(dim as i64) } else { Some(i) };
            at.and_then(|at| usize::try_from(at).ok())
                .filter(|&at| at < dim)
                .ok_or_else(|| format!("index {i} is outside a dimension of {dim}"))
        })
        .collect()
}

/// The walk over `dims` with axis `axis` reading the indices `chosen` along it.
fn axis_walk(dims: &[usize], axis: usize, chosen: &[usize]) -> Walk {
    let strides = strides(dims);
    let maps = dims.iter().enumerate().map(|(k, &d)| match k == axis {
        true => chosen.iter().map(|&i| Some(i * strides[k])).collect(),
        false => (0..d).map(|i| Some(i * strides[k])).collect(),
    });
    Walk::new(maps.collect())
}

fn gather(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let (data, indices) = (inputs.required(0)?, inputs.required(1)?);
    let dims = dims(data);
    let axis = axis(frame, int(frame, "axis", 0)?, dims.len())?;
    let chosen = normalize(&integers(frame, indices)?, dims[axis]).map_err(|e| error(frame, e))?;
    let mut out = dims[..axis].to_vec();
    out.extend(self::dims(indices));
    out.extend(&dims[axis + 1..]);
    let result = take(frame, data, &out, None, || axis_walk(&dims, axis, &chosen))?;
    frame.emplace_result(0, result)
}

fn compress(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let (x, condition) = (inputs.required(0)?, inputs.required(1)?);
    if condition.dtype() != DType::I1 {
        return Err(unsupported(frame, condition.dtype()));
    }
    // Without an axis, the input flattened.
    let (dims, axis) = match has_attribute(frame, "axis") {
        true => (dims(x), axis(frame, int(frame, "axis", 0)?, x.shape().rank())?),
        false => (vec![x.num_elements()], 0),
    };
    let keep = Typed::<bool>::read(condition).values;
    let chosen: Vec<usize> = keep.iter().take(dims[axis]).enumerate().filter(|(_, &k)| k).map(|(i, _)| i).collect();
    let mut out = dims.clone();
    out[axis] = chosen.len();
    let result = take(frame, x, &out, None, || axis_walk(&dims, axis, &chosen))?;
    frame.emplace_result(0, result)
}

/// The offsets in data of `dims` that `indices` (of `shape`, the same rank) name along `axis`,
/// the other coordinates their own: GatherElements' and ScatterElements' elements.
fn element_offsets(dims: &[usize], shape: &[usize], indices: &[i64], axis: usize) -> Result<Vec<usize>, String> {
    if shape.len() != dims.len() || (0..dims.len()).any(|k| k != axis && shape[k] > dims[k]) {
        return Err(format!("indices of shape {shape:?} for data of shape {dims:?}"));
    }
    let chosen = normalize(indices, dims[axis])?;
    let strides = strides(dims);
    let maps = shape.iter().enumerate().map(|(k, &n)| match k == axis {
        true => vec![Some(0); n],
        false => (0..n).map(|i| Some(i * strides[k])).collect(),
    });
    Ok(Walk::new(maps.collect()).zip(chosen).map(|(base, i)| base.unwrap_or(0) + i * strides[axis]).collect())
}

fn gather_elements(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let (data, indices) = (inputs.required(0)?, inputs.required(1)?);
    let (dims, shape) = (dims(data), dims(indices));
    let axis = axis(frame, int(frame, "axis", 0)?, dims.len())?;
    let offsets = element_offsets(&dims, &shape, &integers(frame, indices)?, axis).map_err(|e| error(frame, e))?;
    let result = take(frame, data, &shape, None, || offsets.iter().map(|&o| Some(o)))?;
    frame.emplace_result(0, result)
}

/// GatherND's and ScatterND's index tuples: the offset in data of `dims` of the slice each
/// tuple (the last dimension of `indices`, of `shape`) names after `batch` leading dimensions
/// the two share; the slices' dimensions.
fn tuple_offsets(
    dims: &[usize],
    shape: &[usize],
    indices: &[i64],
    batch: usize,
) -> Result<(Vec<usize>, Vec<usize>), String> {
    let &[ref leading @ .., depth] = shape else {
        return Err("the indices are a scalar".to_owned());
    };
    if batch >= shape.len() || batch > dims.len() || depth > dims.len() - batch || shape[..batch] != dims[..batch] {
        return Err(format!("indices of shape {shape:?} for data of shape {dims:?} and {batch} batch dimensions"));
    }
    let strides = strides(dims);
    // Every count here is at most the data's or the indices' elements.
    let tuples: usize = leading.iter().product();
    let per_batch = leading[batch..].iter().product::<usize>().max(1);
    let batch_stride: usize = dims[batch..].iter().product();
    let offsets = (0..tuples)
        .map(|t| {
            let tuple = &indices[t * depth..][..depth];
            let mut offset = t / per_batch * batch_stride;
            for (j, &i) in tuple.iter().enumerate() {
                offset += normalize(&[i], dims[batch + j])?[0] * strides[batch + j];
            }
            Ok(offset)
        })
        .collect::<Result<_, String>>()?;
    Ok((offsets, dims[batch + depth..].to_vec()))
}

fn gather_nd(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let (data, indices) = (inputs.required(0)?, inputs.required(1)?);
    let (dims, shape) = (dims(data), dims(indices));
    let batch = usize::try_from(int(frame, "batch_dims", 0)?).map_err(|_| error(frame, "batch_dims is negative"))?;
    let (offsets, slice) =
        tuple_offsets(&dims, &shape, &integers(frame, indices)?, batch).map_err(|e| error(frame, e))?;
    let mut out = shape[..shape.len() - 1].to_vec();
    out.extend(&slice);
    let inner = element_count(frame, &slice)?;
    let sources = || offsets.iter().flat_map(move |&o| (o..o + inner).map(Some));
    let result = take(frame, data, &out, None, sources)?;
    frame.emplace_result(0, result)
}

/// How a scatter combines an update with the element it lands on.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Reduction {
    None,
    Add,
    Mul,
    Max,
    Min,
}

impl Reduction {
    fn read(site: &KernelSite<'_>) -> Result<Reduction, KernelError> {
        Ok(match site.named_attribute("reduction").and_then(|a| Ok(a.string()?)) {
            Err(_) | Ok("none") => Reduction::None,
            Ok("add") => Reduction::Add,
            Ok("mul") => Reduction::Mul,
            Ok("max") => Reduction::Max,
            Ok("min") => Reduction::Min,
            Ok(other) => return Err(error(site, format_args!("unknown reduction `{other}`"))),
        })
    }

    /// `update` landing on `element`: integers exactly (wrapping), floats in f64.
    fn apply<T: Value>(self, element: T, update: T) -> T {
        let arithmetic =
            |int: fn(i128, i128) -> i128, float: fn(f64, f64) -> f64| match (element.to_integer(), update.to_integer())
            {
                (Some(a), Some(b)) => T::from_integer(int(a, b)),
                _ => T::from_f64(float(element.to_f64(), update.to_f64())),
            };
        match self {
            Reduction::None => update,
            Reduction::Add => arithmetic(i128::wrapping_add, |a, b| a + b),
            Reduction::Mul => arithmetic(i128::wrapping_mul, |a, b| a * b),
            Reduction::Max => {
                if update > element {
                    update
                } else {
                    element
                }
            }
            Reduction::Min => {
                if update < element {
                    update
                } else {
                    element
                }
            }
        }
    }
}

/// `data` with `updates` landing, in order, on the elements `targets` gives.
fn scatter(
    frame: &KernelFrame<'_>,
    data: &DenseHostTensor,
    updates: &DenseHostTensor,
    targets: &[usize],
    reduction: Reduction,
) -> Result<DenseHostTensor, KernelError> {
    let dtype = data.dtype();
    if updates.dtype() != dtype || updates.num_elements() != targets.len() {
        return Err(error(frame, "the updates do not match the data and the indices"));
    }
    any!(dtype, T => {
        let mut out = Typed::<T>::read(data);
        let updates = Typed::<T>::read(updates).values;
        for (&at, &update) in targets.iter().zip(&updates) {
            out.values[at] = reduction.apply(out.values[at], update);
        }
        out.into_tensor(frame, dtype)
    }, Err(unsupported(frame, dtype)))
}

fn scatter_elements(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let (data, indices, updates) = (inputs.required(0)?, inputs.required(1)?, inputs.required(2)?);
    let (dims, shape) = (dims(data), dims(indices));
    if self::dims(updates) != shape {
        return Err(error(frame, format_args!("updates of shape {:?} for indices of {shape:?}", self::dims(updates))));
    }
    let axis = axis(frame, int(frame, "axis", 0)?, dims.len())?;
    let targets = element_offsets(&dims, &shape, &integers(frame, indices)?, axis).map_err(|e| error(frame, e))?;
    let result = scatter(frame, data, updates, &targets, Reduction::read(frame)?)?;
    frame.emplace_result(0, result)
}

fn scatter_nd(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let (data, indices, updates) = (inputs.required(0)?, inputs.required(1)?, inputs.required(2)?);
    let (dims, shape) = (dims(data), dims(indices));
    let (offsets, slice) = tuple_offsets(&dims, &shape, &integers(frame, indices)?, 0).map_err(|e| error(frame, e))?;
    let mut expected = shape[..shape.len() - 1].to_vec();
    expected.extend(&slice);
    if self::dims(updates) != expected {
        return Err(error(frame, format_args!("updates of shape {:?}, not {expected:?}", self::dims(updates))));
    }
    let inner = element_count(frame, &slice)?;
    let targets: Vec<usize> = offsets.iter().flat_map(|&o| o..o + inner).collect();
    let result = scatter(frame, data, updates, &targets, Reduction::read(frame)?)?;
    frame.emplace_result(0, result)
}

fn non_zero(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let x = inputs.required(0)?;
    let dtype = x.dtype();
    let found: Vec<usize> = any!(dtype, T => {
        let zero = T::from_integer(0);
        Typed::<T>::read(x).values.iter().enumerate().filter(|(_, &v)| v != zero).map(|(i, _)| i).collect()
    }, return Err(unsupported(frame, dtype)));
    // A scalar has one coordinate, as a vector of one element.
    let dims = Some(dims(x)).filter(|d| !d.is_empty()).unwrap_or(vec![1]);
    let (strides, dims) = (&strides(&dims), &dims);
    let values = (0..dims.len()).flat_map(|k| found.iter().map(move |&i| (i / strides[k] % dims[k]) as i64)).collect();
    let result = Typed { dims: vec![dims.len(), found.len()], values }.into_tensor(frame, DType::I64)?;
    frame.emplace_result(0, result)
}

/// TopK of `values` seen as `[outer, n, inner]` along the middle axis: the index along it of
/// each of the `k` largest (or smallest) of every lane, in the results' order; ties keep the
/// lower index first, as onnxruntime does.
fn top<T: Value>(values: &[T], [outer, n, inner]: [usize; 3], k: usize, largest: bool) -> Vec<usize> {
    let mut chosen = vec![0; outer * k * inner];
    let mut lane: Vec<usize> = Vec::with_capacity(n);
    for o in 0..outer {
        for i in 0..inner {
            let value = |m: usize| values[(o * n + m) * inner + i];
            lane.clear();
            lane.extend(0..n);
            match largest {
                true => lane.sort_by(|&p, &q| order(value(q), value(p))),
                false => lane.sort_by(|&p, &q| order(value(p), value(q))),
            }
            for (j, &m) in lane.iter().take(k).enumerate() {
                chosen[(o * k + j) * inner + i] = m;
            }
        }
    }
    chosen
}

fn top_k(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let x = inputs.required(0)?;
    let dims = dims(x);
    let axis = axis(frame, int(frame, "axis", -1)?, dims.len())?;
    let k = if opset(frame)? < 10 { int(frame, "k", 0)? } else { integer(frame, inputs.required(1)?)? };
    let k = usize::try_from(k)
        .ok()
        .filter(|&k| k <= dims[axis])
        .ok_or_else(|| error(frame, format_args!("k = {k} for a dimension of {}", dims[axis])))?;
    let largest = int(frame, "largest", 1)? != 0;
    let (n, inner) = (dims[axis], element_count(frame, &dims[axis + 1..])?);
    let outer = element_count(frame, &dims[..axis])?;
    let dtype = x.dtype();
    let chosen = any!(dtype, T => {
        top(&Typed::<T>::read(x).values, [outer, n, inner], k, largest)
    }, return Err(unsupported(frame, dtype)));
    let mut out = dims.clone();
    out[axis] = k;
    let sources = || chosen.iter().enumerate().map(|(f, &m)| Some((f / (k * inner) * n + m) * inner + f % inner));
    let values = take(frame, x, &out, None, sources)?;
    let indices =
        Typed { dims: out, values: chosen.iter().map(|&m| m as i64).collect() }.into_tensor(frame, DType::I64)?;
    frame.emplace_result(0, values)?;
    frame.emplace_result(1, indices)
}

/// Unique's groups of equal items (elements, or slices along an axis) of `values`: each
/// group's first item, every item's group, and each group's count; groups in ascending order
/// when `sorted`, else in the order they first appear.
fn unique_groups<T: Value>(items: &[Vec<T>], sorted: bool) -> (Vec<usize>, Vec<usize>, Vec<usize>) {
    let compare = |a: &Vec<T>, b: &Vec<T>| {
        a.iter().zip(b).map(|(&x, &y)| order(x, y)).find(|o| o.is_ne()).unwrap_or(std::cmp::Ordering::Equal)
    };
    let mut ranked: Vec<usize> = (0..items.len()).collect();
    ranked.sort_by(|&p, &q| compare(&items[p], &items[q]));
    let mut firsts: Vec<usize> = Vec::new();
    let mut group_of = vec![0; items.len()];
    for &item in &ranked {
        match firsts.last() {
            Some(&first) if compare(&items[first], &items[item]).is_eq() => {}
            _ => firsts.push(item),
        }
        group_of[item] = firsts.len() - 1;
    }
    let mut rank: Vec<usize> = (0..firsts.len()).collect();
    if !sorted {
        // Renumber the groups by first appearance.
        let mut by_first: Vec<usize> = (0..firsts.len()).collect();
        by_first.sort_by_key(|&g| firsts[g]);
        for (new, &old) in by_first.iter().enumerate() {
            rank[old] = new;
        }
        firsts.sort_unstable();
    }
    let inverse: Vec<usize> = group_of.iter().map(|&g| rank[g]).collect();
    let mut counts = vec![0; firsts.len()];
    for &g in &inverse {
        counts[g] += 1;
    }
    (firsts, inverse, counts)
}

fn unique(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let x = inputs.required(0)?;
    let sorted = int(frame, "sorted", 1)? != 0;
    // Without an axis, the input flattened.
    let (dims, axis) = match has_attribute(frame, "axis") {
        true => (dims(x), axis(frame, int(frame, "axis", 0)?, x.shape().rank())?),
        false => (vec![x.num_elements()], 0),
    };
    let dtype = x.dtype();
    let (firsts, inverse, counts) = any!(dtype, T => {
        let values = Typed::<T>::read(x).values;
        let items: Vec<Vec<T>> = (0..dims[axis])
            .map(|i| axis_walk(&dims, axis, &[i]).map(|at| values[at.unwrap_or(0)]).collect())
            .collect();
        unique_groups(&items, sorted)
    }, return Err(unsupported(frame, dtype)));
    let mut out = dims.clone();
    out[axis] = firsts.len();
    let y = take(frame, x, &out, None, || axis_walk(&dims, axis, &firsts))?;
    let vector = |values: &[usize]| {
        let values: Vec<i64> = values.iter().map(|&v| v as i64).collect();
        Typed { dims: vec![values.len()], values }.into_tensor(frame, DType::I64)
    };
    let results = [Ok(y), vector(&firsts), vector(&inverse), vector(&counts)];
    for (i, result) in results.into_iter().enumerate().take(frame.num_results()) {
        frame.emplace_result(i, result?)?;
    }
    Ok(())
}

pub(super) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("onnx.Gather", gather);
    registry.add_kernel("onnx.GatherElements", gather_elements);
    registry.add_kernel("onnx.GatherND", gather_nd);
    registry.add_kernel("onnx.Compress", compress);
    registry.add_kernel("onnx.ScatterElements", scatter_elements);
    registry.add_kernel("onnx.Scatter", scatter_elements);
    registry.add_kernel("onnx.ScatterND", scatter_nd);
    registry.add_kernel("onnx.NonZero", non_zero);
    registry.add_kernel("onnx.TopK", top_k);
    registry.add_kernel("onnx.Unique", unique);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_count_from_the_end_and_stay_inside() {
        assert_eq!(normalize(&[0, -1, 2, -3], 3), Ok(vec![0, 2, 2, 0]));
        assert!(normalize(&[3], 3).is_err());
        assert!(normalize(&[-4], 3).is_err());
        assert!(normalize(&[i64::MIN], 3).is_err());
        assert!(normalize(&[0], 0).is_err());
    }

    #[test]
    fn element_and_tuple_offsets() {
        // GatherElements on a 3x3 along axis 1 with [[1, 0], [2, -1]]: (0,1) (0,0) (1,2) (1,2).
        assert_eq!(element_offsets(&[3, 3], &[2, 2], &[1, 0, 2, -1], 1), Ok(vec![1, 0, 5, 5]));
        // Along axis 0 with [[2, 1, 0]]: (2,0) (1,1) (0,2).
        assert_eq!(element_offsets(&[3, 3], &[1, 3], &[2, 1, 0], 0), Ok(vec![6, 4, 2]));
        assert!(element_offsets(&[3, 3], &[1, 4], &[0; 4], 0).is_err());
        // GatherND on data [2, 2, 2] with tuples [[0, 1], [1, 0]]: the rows at 2 and 4.
        assert_eq!(tuple_offsets(&[2, 2, 2], &[2, 2], &[0, 1, 1, 0], 0), Ok((vec![2, 4], vec![2])));
        // With a batch dimension: indices [2, 1] pick row 1 of batch 0 and row 0 of batch 1.
        assert_eq!(tuple_offsets(&[2, 2, 2], &[2, 1], &[1, 0], 1), Ok((vec![2, 4], vec![2])));
        assert!(tuple_offsets(&[2, 2], &[2, 3], &[0; 6], 0).is_err());
        assert!(tuple_offsets(&[2, 2], &[3, 1], &[0; 3], 1).is_err());
    }

    #[test]
    fn reductions_combine_updates() {
        assert_eq!(Reduction::None.apply(3i32, 5), 5);
        assert_eq!(Reduction::Add.apply(i64::MAX - 1, 1), i64::MAX);
        assert_eq!(Reduction::Mul.apply(3u8, 100), 44);
        assert_eq!(Reduction::Max.apply(2.5f32, -1.0), 2.5);
        assert_eq!(Reduction::Min.apply(2.5f64, -1.0), -1.0);
        assert!(Reduction::Add.apply(true, false));
    }

    #[test]
    fn top_k_keeps_ties_in_index_order() {
        // Lanes along the middle axis of [1, 4, 2]: [3, 1, 3, 2] and [0, 5, 5, 5].
        let values = [3, 0, 1, 5, 3, 5, 2, 5];
        assert_eq!(top(&values, [1, 4, 2], 2, true), [0, 1, 2, 2]);
        assert_eq!(top(&values, [1, 4, 2], 3, false), [1, 0, 3, 1, 0, 2]);
        let floats = [1.0, f32::NAN, 2.0];
        assert_eq!(top(&floats, [1, 3, 1], 2, true), [1, 2]);
    }

    #[test]
    fn unique_groups_sorted_or_by_first_appearance() {
        let items: Vec<Vec<i32>> = [2, 1, 1, 3, 4, 3].iter().map(|&v| vec![v]).collect();
        let (firsts, inverse, counts) = unique_groups(&items, true);
        assert_eq!((firsts, inverse, counts), (vec![1, 0, 3, 4], vec![1, 0, 0, 2, 3, 2], vec![2, 1, 2, 1]));
        let (firsts, inverse, counts) = unique_groups(&items, false);
        assert_eq!((firsts, inverse, counts), (vec![0, 1, 3, 4], vec![0, 1, 1, 2, 3, 2], vec![1, 2, 2, 1]));
        // Rows compared as wholes.
        let rows = vec![vec![1, 0], vec![0, 5], vec![1, 0]];
        assert_eq!(unique_groups(&rows, true), (vec![1, 0], vec![1, 0, 1], vec![1, 2]));
    }
}
