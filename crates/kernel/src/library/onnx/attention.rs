//! The transformer operators: `Attention` (scaled dot-product attention over heads, grouped-query
//! heads, causal, windowed, boolean or additive masks, a key/value cache appended inside or kept
//! outside with `nonpad_kv_seqlen`, soft capping, and the QK product as a fourth output),
//! `RotaryEmbedding`, and `TensorScatter` (a key/value cache written in place of a step's
//! positions). Floats of any type compute in f64, each of Attention's steps rounded to the input's
//! type as ONNX's reference rounds it (the softmax is `normalize`'s), with plain loops over rows
//! read in place: a 3-D `[batch, sequence, heads * size]` operand is read through strides as
//! `[batch, heads, sequence, size]`, and grouped heads share their key/value head unrepeated.

use super::elementwise::{broadcast, onnx_dtype};
use super::normalize::softmax;
use super::tensors::{
    axis, dims, element_count, error, has_attribute, integers, new_tensor, read_floats, stored, unsupported, wide,
    Inputs, Typed,
};
use crate::dtype::DType;
use crate::library::nn::{float as float_attribute, int};
use crate::tensor::DenseHostTensor;
use crate::{KernelError, KernelFrame, KernelRegistry, KernelSite};

pub(super) const OPERATORS: &[&str] = &["Attention", "RotaryEmbedding", "TensorScatter"];

/// Q, K or V (or a cache) as `[batch, heads, sequence, size]`: a 4-D input as it is, a 3-D
/// `[batch, sequence, heads * size]` one through strides. Each `(batch, head, position)` row
/// of `size` elements is contiguous either way.
struct Heads {
    values: Vec<f64>,
    dims: [usize; 4],
    /// The element strides of batch, head and position.
    strides: [usize; 3],
}

impl Heads {
    fn row(&self, b: usize, h: usize, s: usize) -> &[f64] {
        let start = b * self.strides[0] + h * self.strides[1] + s * self.strides[2];
        &self.values[start..start + self.dims[3]]
    }
}

/// `tensor` as [`Heads`]; a 3-D one needs its number of heads.
fn heads(
    site: &KernelSite<'_>,
    tensor: &DenseHostTensor,
    count: Option<usize>,
    what: &str,
) -> Result<Heads, KernelError> {
    // A dimension of 0 may leave the others' product past usize; then no row is read.
    let (dims, strides) = match dims(tensor)[..] {
        [b, h, s, d] => ([b, h, s, d], [h.wrapping_mul(s).wrapping_mul(d), s.wrapping_mul(d), d]),
        [b, s, hidden] => {
            let h =
                count.ok_or_else(|| error(site, format_args!("{what} is 3-D, and the number of its heads unset")))?;
            if h == 0 || hidden % h != 0 {
                return Err(error(site, format_args!("{what}'s {hidden} elements a position are not {h} heads")));
            }
            let d = hidden / h;
            ([b, h, s, d], [s.wrapping_mul(hidden), d, hidden])
        }
        ref other => return Err(error(site, format_args!("{what} has shape {other:?}, neither 3-D nor 4-D"))),
    };
    Ok(Heads { values: read_floats(site, tensor)?.values, dims, strides })
}

/// The cache after this step: `past` followed, position after position, by `current`, as one
/// contiguous `[batch, heads, past + current, size]`; `None` when `past` has other batches, heads
/// or sizes, or the cache's size overflows.
fn appended(past: Option<&Heads>, current: &Heads) -> Option<Heads> {
    let [b, h, s, d] = current.dims;
    let before = past.map_or(0, |p| p.dims[2]);
    if past.is_some_and(|p| (p.dims[0], p.dims[1], p.dims[3]) != (b, h, d)) {
        return None;
    }
    let total = before.checked_add(s)?;
    let count = [b, h, total, d].iter().try_fold(1usize, |n, &k| n.checked_mul(k))?;
    let mut values = Vec::with_capacity(count);
    // Rows of no elements (which may be very many) need no copying.
    for bi in 0..if count > 0 { b } else { 0 } {
        for hi in 0..h {
            if let Some(past) = past {
                (0..before).for_each(|si| values.extend_from_slice(past.row(bi, hi, si)));
            }
            (0..s).for_each(|si| values.extend_from_slice(current.row(bi, hi, si)));
        }
    }
    Some(Heads { values, dims: [b, h, total, d], strides: [h * total * d, total * d, d] })
}

/// The additive mask, broadcast to `[batch, q heads, q positions, len]` (`len` up to the keys;
/// the keys past it are masked): a boolean one as 0 where `True` and `-inf` where `False`.
struct Mask {
    values: Vec<f64>,
    strides: Vec<usize>,
    len: usize,
}

impl Mask {
    fn read(site: &KernelSite<'_>, tensor: &DenseHostTensor, target: [usize; 3]) -> Result<Mask, KernelError> {
        let shape = dims(tensor);
        let len = *shape.last().ok_or_else(|| error(site, "attn_mask is a scalar"))?;
        let full = [target[0], target[1], target[2], len];
        let strides = broadcast(&[&shape, &full])
            .filter(|(out, _)| out[..] == full[..])
            .and_then(|(_, strides)| strides.into_iter().next())
            .ok_or_else(|| error(site, format_args!("attn_mask {shape:?} does not broadcast to {full:?}")))?;
        let values = match tensor.dtype() {
            DType::I1 => Typed::<bool>::read(tensor)
                .values
                .into_iter()
                .map(|a| if a { 0.0 } else { f64::NEG_INFINITY })
                .collect(),
            _ => wide(site, tensor)?.values,
        };
        Ok(Mask { values, strides, len })
    }

    fn at(&self, b: usize, h: usize, i: usize, j: usize) -> f64 {
        if j < self.len {
            let s = &self.strides;
            self.values[b * s[0] + h * s[1] + i * s[2] + j * s[3]]
        } else {
            f64::NEG_INFINITY
        }
    }
}

/// What the fourth output holds.
#[derive(Clone, Copy, PartialEq)]
enum Product {
    Raw,
    Capped,
    Biased,
    Probabilities,
}

/// The attributes of an `Attention` node.
struct Options {
    causal: bool,
    q_heads: Option<usize>,
    kv_heads: Option<usize>,
    scale: Option<f64>,
    softcap: f64,
    /// The type the softmax computes in, when set.
    precision: Option<DType>,
    product: Product,
    left: i64,
    right: i64,
}

impl Options {
    fn read(site: &KernelSite<'_>) -> Result<Options, KernelError> {
        let heads = |name: &str| -> Result<Option<usize>, KernelError> {
            match int(site, name, 0)? {
                0 => Ok(None),
                n => usize::try_from(n).map(Some).map_err(|_| error(site, format_args!("{name} is {n}"))),
            }
        };
        let precision = match int(site, "softmax_precision", 0)? {
            0 => None,
            code => match onnx_dtype(code) {
                Some(t @ (DType::F16 | DType::BF16 | DType::F32 | DType::F64)) => Some(t),
                _ => return Err(error(site, format_args!("softmax_precision {code} is not a float type"))),
            },
        };
        let product = match int(site, "qk_matmul_output_mode", 0)? {
            0 => Product::Raw,
            1 => Product::Capped,
            2 => Product::Biased,
            3 => Product::Probabilities,
            mode => return Err(error(site, format_args!("qk_matmul_output_mode {mode} is not 0 to 3"))),
        };
        let window = |name: &str| -> Result<i64, KernelError> {
            match int(site, name, -1)? {
                w if w >= -1 => Ok(w),
                w => Err(error(site, format_args!("{name} {w} is below -1"))),
            }
        };
        Ok(Options {
            causal: int(site, "is_causal", 0)? != 0,
            q_heads: heads("q_num_heads")?,
            kv_heads: heads("kv_num_heads")?,
            scale: has_attribute(site, "scale")
                .then(|| float_attribute(site, "scale", 0.0))
                .transpose()?
                .map(f64::from),
            softcap: f64::from(float_attribute(site, "softcap", 0.0)?),
            precision,
            product,
            left: window("left_window_size")?,
            right: window("right_window_size")?,
        })
    }
}

fn attention(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let options = Options::read(frame)?;
    let results = frame.num_results();
    let outputs = attend(frame, &inputs, &options, results)?;
    for (i, output) in outputs.into_iter().enumerate() {
        frame.emplace_result(i, output)?;
    }
    Ok(())
}

/// `Attention`'s outputs (as many as `results`).
fn attend(
    site: &KernelFrame<'_>,
    inputs: &Inputs,
    options: &Options,
    results: usize,
) -> Result<Vec<DenseHostTensor>, KernelError> {
    let (query, key, value) = (inputs.required(0)?, inputs.required(1)?, inputs.required(2)?);
    let (past_key, past_value) = (inputs.optional(4), inputs.optional(5));
    let dtype = query.dtype();
    let value_dtype = value.dtype();
    if key.dtype() != dtype || past_key.is_some_and(|p| p.dtype() != dtype) {
        return Err(error(site, "Q, K and past_key are not of one element type"));
    }
    if past_value.is_some_and(|p| p.dtype() != value_dtype) {
        return Err(error(site, "V and past_value are not of one element type"));
    }
    if !matches!(dtype, DType::F16 | DType::BF16 | DType::F32 | DType::F64) {
        return Err(unsupported(site, dtype));
    }
    let rank = query.shape().dims().len();
    if key.shape().dims().len() != rank || value.shape().dims().len() != rank {
        return Err(error(site, "Q, K and V are not of one rank"));
    }
    let (q_heads, kv_heads) = match rank {
        3 => (options.q_heads, options.kv_heads),
        _ => (None, None),
    };
    let q = heads(site, query, q_heads, "Q")?;
    let k = heads(site, key, kv_heads, "K")?;
    let v = heads(site, value, kv_heads, "V")?;
    let [batch, hq, sq, size] = q.dims;
    let [kb, hkv, skv, ksize] = k.dims;
    let [vb, hv, sv, vsize] = v.dims;
    if (kb, vb, ksize, hv, sv) != (batch, batch, size, hkv, skv) {
        return Err(error(site, format_args!("Q {:?}, K {:?} and V {:?} do not match", q.dims, k.dims, v.dims)));
    }
    if hkv == 0 && hq > 0 || hkv > 0 && hq % hkv != 0 {
        return Err(error(site, format_args!("{hq} query heads are not groups of {hkv} key/value heads")));
    }
    let past = match (past_key, past_value) {
        (Some(pk), Some(pv)) => Some((heads(site, pk, None, "past_key")?, heads(site, pv, None, "past_value")?)),
        (None, None) => None,
        _ => return Err(error(site, "past_key and past_value come together")),
    };
    let before = past.as_ref().map(|(pk, _)| pk.dims[2]);
    let (past_k, past_v) = past.map_or((None, None), |(pk, pv)| (Some(pk), Some(pv)));
    if past_k.as_ref().zip(past_v.as_ref()).is_some_and(|(pk, pv)| pk.dims[2] != pv.dims[2]) {
        return Err(error(site, "past_key and past_value hold different numbers of positions"));
    }
    let keys = appended(past_k.as_ref(), &k).ok_or_else(|| {
        error(site, format_args!("past_key {:?} does not hold K {:?}", past_k.map(|p| p.dims), k.dims))
    })?;
    let values = appended(past_v.as_ref(), &v).ok_or_else(|| {
        error(site, format_args!("past_value {:?} does not hold V {:?}", past_v.map(|p| p.dims), v.dims))
    })?;
    let total = keys.dims[2];
    let valid = match inputs.optional(6) {
        Some(_) if before.is_some() => {
            return Err(error(site, "nonpad_kv_seqlen and past_key/past_value do not come together"))
        }
        Some(lengths) => {
            let lengths = integers(site, lengths)?;
            if lengths.len() != batch {
                return Err(error(site, format_args!("nonpad_kv_seqlen has {} lengths for {batch}", lengths.len())));
            }
            Some(lengths)
        }
        None => None,
    };
    let mask = inputs.optional(3).map(|m| Mask::read(site, m, [batch, hq, sq])).transpose()?;
    if let Some(mask) = &mask {
        if mask.len > total {
            return Err(error(site, format_args!("attn_mask covers {} keys of {total}", mask.len)));
        }
    }

    let y_dims = match rank {
        3 => vec![batch, sq, hq.checked_mul(vsize).ok_or_else(|| error(site, "Y's size overflows"))?],
        _ => vec![batch, hq, sq, vsize],
    };
    let mut y = zeros(site, element_count(site, &y_dims)?)?;
    let product_dims = vec![batch, hq, sq, total];
    let mut product = zeros(site, if results > 3 { element_count(site, &product_dims)? } else { 0 })?;
    let problem = Problem { q, keys, values, mask, options, dtype, rank3: rank == 3, before, valid };
    // With no element to compute (which bounds the rows of keys, see `solve`), nothing to do.
    if !(y.is_empty() && product.is_empty()) {
        problem.solve(&mut y, &mut product);
    }
    let Problem { keys, values, .. } = problem;

    let mut outputs = vec![Typed { dims: y_dims, values: y }.into_floats(site, dtype)?];
    if results > 1 {
        outputs.push(Typed { dims: keys.dims.to_vec(), values: keys.values }.into_floats(site, dtype)?);
    }
    if results > 2 {
        outputs.push(Typed { dims: values.dims.to_vec(), values: values.values }.into_floats(site, value_dtype)?);
    }
    if results > 3 {
        outputs.push(Typed { dims: product_dims, values: product }.into_floats(site, dtype)?);
    }
    Ok(outputs)
}

/// `count` zeros, or an error when they do not fit in memory.
fn zeros(site: &KernelSite<'_>, count: usize) -> Result<Vec<f64>, KernelError> {
    let mut values = Vec::new();
    values.try_reserve_exact(count).map_err(|_| error(site, format_args!("{count} elements do not fit in memory")))?;
    values.resize(count, 0.0);
    Ok(values)
}

/// What an `Attention` node computes from, its inputs read and checked.
struct Problem<'a> {
    q: Heads,
    /// The keys and values after this step (the caches appended).
    keys: Heads,
    values: Heads,
    mask: Option<Mask>,
    options: &'a Options,
    /// Q's element type: each step's result is one of it.
    dtype: DType,
    /// Whether Y is 3-D, `[batch, sequence, heads * size]`.
    rank3: bool,
    /// The positions in the past cache, when given.
    before: Option<usize>,
    /// `nonpad_kv_seqlen`: the valid keys of each batch.
    valid: Option<Vec<i64>>,
}

impl Problem<'_> {
    /// Whether the query at `position` (among the keys) sees key `j` when the first `limit` are
    /// valid: causality and the windows.
    fn visible(&self, position: i64, limit: i64, j: i64) -> bool {
        let options = self.options;
        j < limit
            && (!options.causal || j <= position)
            && (options.left < 0 || position.saturating_sub(j) <= options.left)
            && (options.right < 0 || j.saturating_sub(position) <= options.right)
    }

    /// Y and (when not empty, then `[batch, q heads, q positions, keys]`) the QK product into
    /// `y` and `product`, in f64 (rounded to `dtype` step by step). Its buffers hold a row of
    /// keys: V holds as many rows when Y has elements, the product does when it has them.
    fn solve(&self, y: &mut [f64], product: &mut [f64]) {
        let options = self.options;
        let [batch, hq, sq, size] = self.q.dims;
        let [_, hkv, total, _] = self.keys.dims;
        let vsize = self.values.dims[3];
        let group = hq.checked_div(hkv).unwrap_or(1);
        let round = |x: f64| stored(self.dtype, x);
        let scale = round(options.scale.unwrap_or(1.0 / (size as f64).sqrt()).sqrt());
        let softcap = options.softcap;
        // The softmax's type: its steps are elements of it.
        let precision = options.precision.unwrap_or(self.dtype);

        let mut scaled_q = vec![0.0; size];
        let mut bias = vec![0.0; total];
        let mut logits = vec![0.0; total];
        let mut probabilities = vec![0.0; total];
        let mut sum = vec![0.0; vsize];
        for b in 0..batch {
            // Where this block of queries starts among the keys, and how many keys are valid.
            let offset = match (self.before, &self.valid) {
                (Some(before), _) => before as i64,
                (None, Some(valid)) => valid[b].saturating_sub(sq as i64),
                (None, None) => 0,
            };
            let limit = self.valid.as_ref().map_or(i64::MAX, |valid| valid[b]);
            for h in 0..hq {
                let kv = h / group;
                for i in 0..sq {
                    let position = offset.saturating_add(i as i64);
                    for (j, bias) in bias.iter_mut().enumerate() {
                        let masked = self.mask.as_ref().map_or(0.0, |m| m.at(b, h, i, j));
                        *bias = masked + if self.visible(position, limit, j as i64) { 0.0 } else { f64::NEG_INFINITY };
                    }
                    for (s, &x) in scaled_q.iter_mut().zip(self.q.row(b, h, i)) {
                        *s = round(x * scale);
                    }
                    let row = ((b * hq + h) * sq + i) * total;
                    for (j, logit) in logits.iter_mut().enumerate() {
                        let keys = self.keys.row(b, kv, j);
                        let raw = round(scaled_q.iter().zip(keys).map(|(&x, &k)| x * round(k * scale)).sum());
                        let capped = match softcap > 0.0 {
                            true => round(softcap * round(round(raw / softcap).tanh())),
                            false => raw,
                        };
                        *logit = round(capped + bias[j]);
                        if let Some(shown) = product.get_mut(row + j) {
                            *shown = match options.product {
                                Product::Raw => raw,
                                Product::Capped => capped,
                                _ => *logit,
                            };
                        }
                    }
                    let masked = |row: &[f64]| row.iter().all(|&x| x == f64::NEG_INFINITY);
                    if masked(&bias) || masked(&logits) {
                        // No key to attend: no weight (where softmax would make NaNs).
                        probabilities.fill(0.0);
                    } else {
                        for (p, &logit) in probabilities.iter_mut().zip(&logits) {
                            *p = stored(precision, logit);
                        }
                        softmax(&mut probabilities, false, precision);
                        probabilities.iter_mut().for_each(|p| *p = round(*p));
                    }
                    if options.product == Product::Probabilities {
                        if let Some(shown) = product.get_mut(row..row + total) {
                            shown.copy_from_slice(&probabilities);
                        }
                    }
                    sum.fill(0.0);
                    for (j, &p) in probabilities.iter().enumerate() {
                        for (s, &x) in sum.iter_mut().zip(self.values.row(b, kv, j)) {
                            *s += p * x;
                        }
                    }
                    let start = if self.rank3 { (b * sq + i) * hq + h } else { (b * hq + h) * sq + i } * vsize;
                    y[start..start + vsize].copy_from_slice(&sum);
                }
            }
        }
    }
}

fn rotary_embedding(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let x = inputs.required(0)?;
    let (cos, sin) = (inputs.required(1)?, inputs.required(2)?);
    let dtype = x.dtype();
    if cos.dtype() != dtype || sin.dtype() != dtype {
        return Err(error(frame, "the input and the caches are not of one element type"));
    }
    let positions = inputs.optional(3).map(|p| Ok::<_, KernelError>((dims(p), integers(frame, p)?))).transpose()?;
    let result = rotate(frame, x, cos, sin, positions)?.into_floats(frame, dtype)?;
    frame.emplace_result(0, result)
}

/// `x` with each head's leading `rotary_embedding_dim` elements rotated in pairs (halves, or
/// neighbours when interleaved) by the angles of its position.
fn rotate(
    site: &KernelSite<'_>,
    x: &DenseHostTensor,
    cos: &DenseHostTensor,
    sin: &DenseHostTensor,
    positions: Option<(Vec<usize>, Vec<i64>)>,
) -> Result<Typed<f64>, KernelError> {
    let shape = dims(x);
    let interleaved = int(site, "interleaved", 0)? != 0;
    // Each head's elements are a row: rows go (batch, head, position) for a 4-D input, (batch,
    // position, head) for a 3-D one.
    let (batch, sequence, heads, size, heads_inner) = match shape[..] {
        [b, h, s, d] => (b, s, h, d, false),
        [b, s, hidden] => {
            let n = int(site, "num_heads", 0)?;
            let n = usize::try_from(n).ok().filter(|&n| n > 0 && hidden % n == 0).ok_or_else(|| {
                error(site, format_args!("a 3-D input of {hidden} elements a position needs num_heads dividing it"))
            })?;
            (b, s, n, hidden / n, true)
        }
        _ => return Err(error(site, format_args!("the input has shape {shape:?}, neither 3-D nor 4-D"))),
    };
    let rotary = match int(site, "rotary_embedding_dim", 0)? {
        0 => size,
        r => usize::try_from(r).map_err(|_| error(site, format_args!("rotary_embedding_dim {r}")))?,
    };
    if rotary > size || rotary % 2 != 0 {
        return Err(error(site, format_args!("cannot rotate {rotary} of a head's {size} elements in pairs")));
    }
    let half = rotary / 2;
    let (cos_dims, sin_dims) = (dims(cos), dims(sin));
    if cos_dims != sin_dims || cos_dims.last() != Some(&half) {
        return Err(error(site, format_args!("caches of {cos_dims:?} and {sin_dims:?} are not of {half} angles")));
    }
    // The first cache row of each (batch, position), in rows of `half`.
    let cache_row: Box<dyn Fn(usize, usize) -> Result<usize, KernelError>> = match (&positions, &cos_dims[..]) {
        (Some((pdims, ids)), &[rows, _]) => {
            let batched = match pdims[..] {
                [pb, ps] if ps == sequence && (pb == batch || pb == 1) => pb == batch,
                _ => return Err(error(site, format_args!("position_ids {pdims:?} are not [{batch}, {sequence}]"))),
            };
            Box::new(move |b, s| {
                let id = ids[if batched { b * sequence + s } else { s }];
                usize::try_from(id)
                    .ok()
                    .filter(|&id| id < rows)
                    .ok_or_else(|| error(site, format_args!("position {id} is outside a cache of {rows}")))
            })
        }
        (None, &[cb, cs, _]) if cs == sequence && (cb == batch || cb == 1) => {
            let batched = cb == batch;
            Box::new(move |b, s| Ok(if batched { b * sequence + s } else { s }))
        }
        _ => return Err(error(site, format_args!("caches of {cos_dims:?} do not fit the positions"))),
    };
    let mut out = read_floats(site, x)?;
    let (cos, sin) = (read_floats(site, cos)?.values, read_floats(site, sin)?.values);
    if half == 0 {
        return Ok(out);
    }
    for (r, row) in out.values.chunks_exact_mut(size).enumerate() {
        // No row when a dimension is 0: the divisors are positive.
        let (b, s) = match heads_inner {
            true => (r / heads / sequence, r / heads % sequence),
            false => (r / heads / sequence, r % sequence),
        };
        let at = cache_row(b, s)? * half;
        rotate_row(row, &cos[at..at + half], &sin[at..at + half], interleaved);
    }
    Ok(out)
}

/// `row`'s leading `2 * cos.len()` elements rotated in pairs (first and second halves, or
/// neighbours when `interleaved`) by the angles whose cosines and sines are `cos` and `sin`.
fn rotate_row(row: &mut [f64], cos: &[f64], sin: &[f64], interleaved: bool) {
    let half = cos.len();
    for (k, (&c, &s)) in cos.iter().zip(sin).enumerate() {
        let (first, second) = if interleaved { (2 * k, 2 * k + 1) } else { (k, k + half) };
        let (x1, x2) = (row[first], row[second]);
        row[first] = c * x1 - s * x2;
        row[second] = s * x1 + c * x2;
    }
}

fn tensor_scatter(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let (past, update) = (inputs.required(0)?, inputs.required(1)?);
    let dtype = past.dtype();
    if update.dtype() != dtype {
        return Err(error(frame, "the cache and the update are not of one element type"));
    }
    let circular = match frame.named_attribute("mode").and_then(|a| Ok(a.string()?)) {
        Err(_) | Ok("linear") => false,
        Ok("circular") => true,
        Ok(other) => return Err(error(frame, format_args!("unknown mode `{other}`"))),
    };
    let (cache, new) = (dims(past), dims(update));
    let axis = axis(frame, int(frame, "axis", -2)?, cache.len())?;
    let fits = cache.len() == new.len() && (0..cache.len()).all(|k| k == axis || cache[k] == new[k]);
    if axis == 0 || !fits || new[axis] > cache[axis] {
        return Err(error(frame, format_args!("cannot write {new:?} into a cache of {cache:?} along axis {axis}")));
    }
    let batch = cache[0];
    let starts = match inputs.optional(2) {
        Some(indices) => integers(frame, indices)?,
        None => vec![0; batch],
    };
    if starts.len() != batch {
        return Err(error(frame, format_args!("{} write indices for a batch of {batch}", starts.len())));
    }
    let (length, steps) = (cache[axis], new[axis]);
    let element = dtype.byte_size().ok_or_else(|| unsupported(frame, dtype))?;
    let inner = element_count(frame, &cache[axis + 1..])? * element;
    let outer = element_count(frame, &cache[..axis])?;
    let per_batch = outer / batch.max(1);
    // Each update row's row in the cache (none to write when the update is empty).
    let targets = match element_count(frame, &new)? {
        0 => Vec::new(),
        _ => write_positions(&starts, steps, length, circular).ok_or_else(|| {
            error(frame, format_args!("writing {steps} positions from {starts:?} passes a cache of {length}"))
        })?,
    };
    let result = new_tensor(frame, dtype, &cache)?;
    past.with_bytes(|from| {
        update.with_bytes(|rows| {
            result.buffer().with_bytes_mut(|to| {
                to.copy_from_slice(from);
                // No row to write when the update is empty.
                for o in 0..if targets.is_empty() { 0 } else { outer } {
                    let b = o / per_batch.max(1);
                    for s in 0..steps {
                        let source = (o * steps + s) * inner;
                        let target = (o * length + targets[b * steps + s]) * inner;
                        to[target..target + inner].copy_from_slice(&rows[source..source + inner]);
                    }
                }
            })
        })
    })?;
    frame.emplace_result(0, result)
}

/// The cache position each of `steps` update positions is written to, from each batch's start,
/// batch after batch: wrapping around a cache of `length` when `circular`; `None` when one falls
/// outside it.
fn write_positions(starts: &[i64], steps: usize, length: usize, circular: bool) -> Option<Vec<usize>> {
    let length64 = i64::try_from(length).ok()?;
    let position = |start: i64, s: usize| {
        let at = start.checked_add(i64::try_from(s).ok()?)?;
        let at = if circular && length64 > 0 { at.rem_euclid(length64) } else { at };
        usize::try_from(at).ok().filter(|&at| at < length)
    };
    starts.iter().flat_map(|&start| (0..steps).map(move |s| position(start, s))).collect()
}

pub(super) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("onnx.Attention", attention);
    registry.add_kernel("onnx.RotaryEmbedding", rotary_embedding);
    registry.add_kernel("onnx.TensorScatter", tensor_scatter);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> Options {
        Options {
            causal: false,
            q_heads: None,
            kv_heads: None,
            scale: None,
            softcap: 0.0,
            precision: None,
            product: Product::Raw,
            left: -1,
            right: -1,
        }
    }

    /// `[batch, heads, positions, size]` heads laid out contiguously.
    fn contiguous(dims: [usize; 4], values: &[f64]) -> Heads {
        let [_, h, s, d] = dims;
        Heads { values: values.to_vec(), dims, strides: [h * s * d, s * d, d] }
    }

    fn problem<'a>(q: Heads, keys: Heads, values: Heads, options: &'a Options) -> Problem<'a> {
        Problem { q, keys, values, mask: None, options, dtype: DType::F64, rank3: false, before: None, valid: None }
    }

    /// Y and the QK product of `problem`.
    fn solve(problem: &Problem<'_>) -> (Vec<f64>, Vec<f64>) {
        let [batch, hq, sq, _] = problem.q.dims;
        let (total, vsize) = (problem.keys.dims[2], problem.values.dims[3]);
        let (mut y, mut product) = (vec![0.0; batch * hq * sq * vsize], vec![0.0; batch * hq * sq * total]);
        problem.solve(&mut y, &mut product);
        (y, product)
    }

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
    }

    #[test]
    fn a_3d_operand_is_read_as_heads_through_strides() {
        // [batch 1, 2 positions, 2 heads * 2]: position-major, each head's 2 elements adjacent.
        let heads = Heads { values: (0..8).map(f64::from).collect(), dims: [1, 2, 2, 2], strides: [8, 2, 4] };
        assert_eq!(heads.row(0, 0, 0), [0.0, 1.0]);
        assert_eq!(heads.row(0, 1, 0), [2.0, 3.0]);
        assert_eq!(heads.row(0, 0, 1), [4.0, 5.0]);
        assert_eq!(heads.row(0, 1, 1), [6.0, 7.0]);
    }

    #[test]
    fn the_cache_is_the_past_then_the_step_head_by_head() {
        // Two heads of one element: the past holds one position (1, 2), the step one (3, 4).
        let past = contiguous([1, 2, 1, 1], &[1.0, 2.0]);
        let current = contiguous([1, 2, 1, 1], &[3.0, 4.0]);
        let cache = appended(Some(&past), &current).unwrap();
        assert_eq!((cache.dims, cache.values.as_slice()), ([1, 2, 2, 1], [1.0, 3.0, 2.0, 4.0].as_slice()));
        assert_eq!(cache.row(0, 1, 1), [4.0]);
        // Without a past the step is the cache; a past of other heads does not hold it.
        assert_eq!(appended(None, &current).unwrap().values, [3.0, 4.0]);
        assert!(appended(Some(&contiguous([1, 1, 1, 1], &[1.0])), &current).is_none());
        // Empty heads of hostile lengths: the cache's length would overflow.
        let huge = Heads { values: vec![], dims: [1, 2, usize::MAX, 0], strides: [0, 0, 0] };
        let step = Heads { values: vec![], dims: [1, 2, 1, 0], strides: [0, 0, 0] };
        assert!(appended(Some(&huge), &step).is_none());
    }

    #[test]
    fn causality_and_windows_hide_keys() {
        let causal = Options { causal: true, left: 1, ..options() };
        let problem = problem(
            contiguous([0, 1, 0, 1], &[]),
            contiguous([0, 1, 0, 1], &[]),
            contiguous([0, 1, 0, 1], &[]),
            &causal,
        );
        // The query at position 2 sees keys 1 and 2 (the window of 1 before it, none after).
        let seen: Vec<bool> = (0..4).map(|j| problem.visible(2, i64::MAX, j)).collect();
        assert_eq!(seen, [false, true, true, false]);
        // Of 2 valid keys it sees only key 1.
        let seen: Vec<bool> = (0..4).map(|j| problem.visible(2, 2, j)).collect();
        assert_eq!(seen, [false, true, false, false]);
    }

    #[test]
    fn grouped_query_heads_share_their_key_value_head() {
        // Two query heads on one key/value head, one query, two keys of size 1: head 0 (q = 0)
        // weighs both keys alike, head 1 (q = 1, logits 0 and ln 2) as 1/3 and 2/3.
        let options = options();
        let keys = contiguous([1, 1, 2, 1], &[0.0, 2f64.ln()]);
        let values = contiguous([1, 1, 2, 1], &[3.0, 6.0]);
        let (y, product) = solve(&problem(contiguous([1, 2, 1, 1], &[0.0, 1.0]), keys, values, &options));
        assert!(close(&y, &[4.5, 5.0]), "{y:?}");
        assert!(close(&product, &[0.0, 0.0, 0.0, 2f64.ln()]), "{product:?}");
    }

    #[test]
    fn masks_add_and_a_fully_masked_row_attends_to_nothing() {
        // One head, two queries, two keys: causal hides key 1 from query 0; the mask hides key 0
        // from query 1 (a mask of one key leaves the keys past it hidden too: none here).
        let options = Options { causal: true, product: Product::Probabilities, ..options() };
        let zeros = contiguous([1, 1, 2, 1], &[0.0, 0.0]);
        let values = contiguous([1, 1, 2, 1], &[3.0, 6.0]);
        let mut problem = problem(zeros, contiguous([1, 1, 2, 1], &[0.0, 0.0]), values, &options);
        problem.mask = Some(Mask { values: vec![0.0, 0.0, f64::NEG_INFINITY, 0.0], strides: vec![0, 0, 2, 1], len: 2 });
        let (y, probabilities) = solve(&problem);
        assert_eq!((y, probabilities), (vec![3.0, 6.0], vec![1.0, 0.0, 0.0, 1.0]));
        // Query 0 sees key 0 only; masking it too leaves no key: zero weights, Y 0.
        problem.mask = Some(Mask { values: vec![f64::NEG_INFINITY, 0.0], strides: vec![0, 0, 0, 1], len: 2 });
        let (y, probabilities) = solve(&problem);
        assert_eq!((y, probabilities), (vec![0.0, 6.0], vec![0.0, 0.0, 0.0, 1.0]));
        // A mask shorter than the keys hides those past it.
        let mask = Mask { values: vec![0.0], strides: vec![0, 0, 0, 1], len: 1 };
        assert_eq!((mask.at(0, 0, 0, 0), mask.at(0, 0, 1, 1)), (0.0, f64::NEG_INFINITY));
    }

    #[test]
    fn queries_after_a_past_see_it_and_3d_outputs_interleave_heads() {
        // A past of 1 key: the one query is at position 1, so causality hides nothing.
        let options = Options { causal: true, ..options() };
        let keys = contiguous([1, 2, 2, 1], &[0.0, 0.0, 0.0, 0.0]);
        let values = contiguous([1, 2, 2, 1], &[1.0, 3.0, 10.0, 30.0]);
        let mut problem = problem(contiguous([1, 2, 1, 1], &[1.0, 1.0]), keys, values, &options);
        problem.before = Some(1);
        problem.rank3 = true;
        assert_eq!(solve(&problem).0, [2.0, 20.0]);
        // Without the past the query is at position 0 and sees key 0 only.
        problem.before = None;
        assert_eq!(solve(&problem).0, [1.0, 10.0]);
    }

    #[test]
    fn pairs_rotate_as_halves_or_neighbours() {
        // Angles of 90 and 0 degrees.
        let (cos, sin) = ([0.0, 1.0], [1.0, 0.0]);
        let mut row = [1.0, 0.0, 0.0, 1.0, 7.0];
        rotate_row(&mut row, &cos, &sin, false);
        assert_eq!(row, [0.0, 0.0, 1.0, 1.0, 7.0]);
        let mut row = [1.0, 0.0, 0.0, 1.0, 7.0];
        rotate_row(&mut row, &cos, &sin, true);
        assert_eq!(row, [0.0, 1.0, 0.0, 1.0, 7.0]);
    }

    #[test]
    fn scattered_positions_wrap_when_circular() {
        assert_eq!(write_positions(&[0, 2], 2, 4, false), Some(vec![0, 1, 2, 3]));
        assert_eq!(write_positions(&[3], 2, 4, false), None);
        assert_eq!(write_positions(&[-1], 1, 4, false), None);
        assert_eq!(write_positions(&[3, -1], 2, 4, true), Some(vec![3, 0, 3, 0]));
        assert_eq!(write_positions(&[i64::MAX], 2, 4, false), None);
        assert_eq!(write_positions(&[0], 1, 0, true), None);
    }
}
