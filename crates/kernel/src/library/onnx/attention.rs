//! The transformer operators: `Attention` (scaled dot-product attention over heads, grouped-query
//! heads, causal, windowed, boolean or additive masks, a key/value cache appended inside or kept
//! outside with `nonpad_kv_seqlen`, soft capping, and the QK product as a fourth output),
//! `RotaryEmbedding`, and `TensorScatter` (a key/value cache written in place of a step's
//! positions). Floats compute in `f32` (half floats too) or `f64`, with plain loops over rows
//! read in place: a 3-D `[batch, sequence, heads * size]` operand is read through strides as
//! `[batch, heads, sequence, size]`, and grouped heads share their key/value head unrepeated.

use std::ops::{Add, AddAssign, Div, Mul, Sub};

use half::{bf16, f16};

use super::dispatch::{float, numeric};
use super::elementwise::{broadcast, onnx_dtype};
use super::tensors::{
    axis, dims, element_count, error, has_attribute, integers, new_tensor, unsupported, Inputs, Typed, Value,
};
use crate::dtype::DType;
use crate::library::nn::{float as float_attribute, int};
use crate::tensor::DenseHostTensor;
use crate::{KernelError, KernelFrame, KernelRegistry, KernelSite};

pub(super) const OPERATORS: &[&str] = &["Attention", "RotaryEmbedding", "TensorScatter"];

/// The arithmetic of the float types the operators compute in (`f32`, `f64`).
trait Real: Value + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self> + AddAssign {
    const ZERO: Self;
    const NEG_INFINITY: Self;
    fn exp(self) -> Self;
    fn tanh(self) -> Self;
}

macro_rules! real {
    ($($t:ident),*) => {$(
        impl Real for $t {
            const ZERO: $t = 0.0;
            const NEG_INFINITY: $t = $t::NEG_INFINITY;
            #[inline]
            fn exp(self) -> $t {
                $t::exp(self)
            }
            #[inline]
            fn tanh(self) -> $t {
                $t::tanh(self)
            }
        }
    )*};
}
real!(f32, f64);

/// The elements of a float tensor in `T`.
fn floats<T: Real>(site: &KernelSite<'_>, tensor: &DenseHostTensor) -> Result<Vec<T>, KernelError> {
    let dtype = tensor.dtype();
    float!(dtype, U => {
        Ok(Typed::<U>::read(tensor).values.into_iter().map(|v| T::from_f64(v.to_f64())).collect())
    }, Err(unsupported(site, dtype)))
}

/// `value` rounded to an element of `dtype` (to a half float's or f32's precision), in `T`.
fn rounded<T: Value>(dtype: DType, value: T) -> T {
    let x = value.to_f64();
    T::from_f64(match dtype {
        DType::F16 => f16::from_f64(x).to_f64(),
        DType::BF16 => bf16::from_f64(x).to_f64(),
        DType::F32 => f64::from(x as f32),
        _ => x,
    })
}

/// `row` made probabilities in place: `exp(x - max) / sum`, each step's result an element of
/// `dtype` (sums accumulate wider); a NaN anywhere makes them all NaN, and a row of `-inf` (no
/// key to attend) all zeros.
fn softmax<S: Real>(row: &mut [S], dtype: DType) {
    #[allow(clippy::eq_op)]
    let max = row.iter().fold(S::NEG_INFINITY, |max, &x| if x > max || x != x { x } else { max });
    if max == S::NEG_INFINITY {
        row.fill(S::ZERO);
        return;
    }
    let mut sum = S::ZERO;
    for x in row.iter_mut() {
        *x = rounded(dtype, rounded(dtype, *x - max).exp());
        sum += *x;
    }
    let sum = rounded(dtype, sum);
    for x in row.iter_mut() {
        *x = rounded(dtype, *x / sum);
    }
}

/// Q, K or V (or a cache) as `[batch, heads, sequence, size]`: a 4-D input as it is, a 3-D
/// `[batch, sequence, heads * size]` one through strides. Each `(batch, head, position)` row
/// of `size` elements is contiguous either way.
struct Heads<T> {
    values: Vec<T>,
    dims: [usize; 4],
    /// The element strides of batch, head and position.
    strides: [usize; 3],
}

impl<T: Copy> Heads<T> {
    fn row(&self, b: usize, h: usize, s: usize) -> &[T] {
        let start = b * self.strides[0] + h * self.strides[1] + s * self.strides[2];
        &self.values[start..start + self.dims[3]]
    }
}

/// `tensor` as [`Heads`]; a 3-D one needs its number of heads.
fn heads<T: Real>(
    site: &KernelSite<'_>,
    tensor: &DenseHostTensor,
    count: Option<usize>,
    what: &str,
) -> Result<Heads<T>, KernelError> {
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
    Ok(Heads { values: floats(site, tensor)?, dims, strides })
}

/// The cache after this step: `past` followed, position after position, by `current`, as one
/// contiguous `[batch, heads, past + current, size]`.
fn appended<T: Real>(
    site: &KernelSite<'_>,
    past: Option<Heads<T>>,
    current: Heads<T>,
    what: &str,
) -> Result<Heads<T>, KernelError> {
    let [b, h, s, d] = current.dims;
    let before = past.as_ref().map_or(0, |p| p.dims[2]);
    if let Some(past) = &past {
        let [pb, ph, _, pd] = past.dims;
        if (pb, ph, pd) != (b, h, d) {
            return Err(error(
                site,
                format_args!("past_{what} {:?} does not hold {what} {:?}", past.dims, current.dims),
            ));
        }
    }
    let total = before + s;
    let mut values = Vec::with_capacity(b * h * total * d);
    for bi in 0..b {
        for hi in 0..h {
            if let Some(past) = &past {
                (0..before).for_each(|si| values.extend_from_slice(past.row(bi, hi, si)));
            }
            (0..s).for_each(|si| values.extend_from_slice(current.row(bi, hi, si)));
        }
    }
    Ok(Heads { values, dims: [b, h, total, d], strides: [h * total * d, total * d, d] })
}

/// The additive mask, broadcast to `[batch, q heads, q positions, len]` (`len` up to the keys;
/// the keys past it are masked): a boolean one as 0 where `True` and `-inf` where `False`.
struct Mask<T> {
    values: Vec<T>,
    strides: Vec<usize>,
    len: usize,
}

impl<T: Real> Mask<T> {
    fn read(site: &KernelSite<'_>, tensor: &DenseHostTensor, target: [usize; 3]) -> Result<Mask<T>, KernelError> {
        let shape = dims(tensor);
        let len = *shape.last().ok_or_else(|| error(site, "attn_mask is a scalar"))?;
        let full = [target[0], target[1], target[2], len];
        let strides = broadcast(&[&shape, &full])
            .filter(|(out, _)| out[..] == full[..])
            .and_then(|(_, strides)| strides.into_iter().next())
            .ok_or_else(|| error(site, format_args!("attn_mask {shape:?} does not broadcast to {full:?}")))?;
        let dtype = tensor.dtype();
        let values = if dtype == DType::I1 {
            Typed::<bool>::read(tensor).values.into_iter().map(|a| if a { T::ZERO } else { T::NEG_INFINITY }).collect()
        } else {
            numeric!(dtype, M => {
                Typed::<M>::read(tensor).values.into_iter().map(|v| T::from_f64(v.to_f64())).collect()
            }, return Err(unsupported(site, dtype)))
        };
        Ok(Mask { values, strides, len })
    }

    fn at(&self, b: usize, h: usize, i: usize, j: usize) -> T {
        if j < self.len {
            let s = &self.strides;
            self.values[b * s[0] + h * s[1] + i * s[2] + j * s[3]]
        } else {
            T::NEG_INFINITY
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

/// `row` made probabilities computing in `S`, each step an element of `dtype`, back in `T`.
fn softmax_in<S: Real, T: Real>(row: &[T], dtype: DType, work: &mut Vec<S>, out: &mut [T]) {
    work.clear();
    work.extend(row.iter().map(|&v| S::from_f64(rounded(dtype, v).to_f64())));
    softmax(work, dtype);
    for (o, p) in out.iter_mut().zip(work.iter()) {
        *o = T::from_f64(p.to_f64());
    }
}

fn attention(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let inputs = Inputs::new(frame)?;
    let options = Options::read(frame)?;
    let dtype = inputs.required(0)?.dtype();
    let results = frame.num_results();
    let outputs =
        float!(dtype, T => { attend::<T>(frame, &inputs, &options, results)? }, return Err(unsupported(frame, dtype)));
    for (i, output) in outputs.into_iter().enumerate() {
        frame.emplace_result(i, output)?;
    }
    Ok(())
}

/// `Attention`'s outputs (as many as `results`), computing in `T`.
fn attend<T: Real>(
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
    // Half floats and f32 compute in f32, f64 in f64: V's type must compute in Q's.
    if (dtype == DType::F64) != (value_dtype == DType::F64) {
        return Err(error(site, "V and Q are not both f64, nor both narrower"));
    }
    let rank = query.shape().dims().len();
    if key.shape().dims().len() != rank || value.shape().dims().len() != rank {
        return Err(error(site, "Q, K and V are not of one rank"));
    }
    let (q_heads, kv_heads) = match rank {
        3 => (options.q_heads, options.kv_heads),
        _ => (None, None),
    };
    let q = heads::<T>(site, query, q_heads, "Q")?;
    let k = heads::<T>(site, key, kv_heads, "K")?;
    let v = heads::<T>(site, value, kv_heads, "V")?;
    let [batch, hq, sq, size] = q.dims;
    let [kb, hkv, skv, ksize] = k.dims;
    let [vb, hv, sv, vsize] = v.dims;
    if (kb, vb, ksize, hv, sv) != (batch, batch, size, hkv, skv) {
        return Err(error(site, format_args!("Q {:?}, K {:?} and V {:?} do not match", q.dims, k.dims, v.dims)));
    }
    if hkv == 0 && hq > 0 || hkv > 0 && hq % hkv != 0 {
        return Err(error(site, format_args!("{hq} query heads are not groups of {hkv} key/value heads")));
    }
    let group = hq.checked_div(hkv).unwrap_or(1);
    let past = match (past_key, past_value) {
        (Some(pk), Some(pv)) => {
            Some((heads::<T>(site, pk, None, "past_key")?, heads::<T>(site, pv, None, "past_value")?))
        }
        (None, None) => None,
        _ => return Err(error(site, "past_key and past_value come together")),
    };
    let before = past.as_ref().map(|(pk, _)| pk.dims[2]);
    let (past_k, past_v) = past.map_or((None, None), |(pk, pv)| (Some(pk), Some(pv)));
    if past_k.as_ref().zip(past_v.as_ref()).is_some_and(|(pk, pv)| pk.dims[2] != pv.dims[2]) {
        return Err(error(site, "past_key and past_value hold different numbers of positions"));
    }
    let keys = appended(site, past_k, k, "key")?;
    let values = appended(site, past_v, v, "value")?;
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
    let mask = inputs.optional(3).map(|m| Mask::<T>::read(site, m, [batch, hq, sq])).transpose()?;
    if let Some(mask) = &mask {
        if mask.len > total {
            return Err(error(site, format_args!("attn_mask covers {} keys of {total}", mask.len)));
        }
    }

    let scale = options.scale.unwrap_or(1.0 / (size as f64).sqrt()).sqrt();
    let scale = rounded(dtype, T::from_f64(scale));
    let softcap = T::from_f64(options.softcap);
    // The softmax's type: its steps are elements of it, computed in f64 or f32.
    let precision = options.precision.unwrap_or(dtype);
    let round = |x: T| rounded(dtype, x);

    let y_dims = if rank == 3 { vec![batch, sq, hq * vsize] } else { vec![batch, hq, sq, vsize] };
    element_count(site, &y_dims)?;
    let y = new_tensor(site, dtype, &y_dims)?;
    let product_dims = [batch, hq, sq, total];
    let product = if results > 3 {
        element_count(site, &product_dims)?;
        Some(new_tensor(site, dtype, &product_dims)?)
    } else {
        None
    };
    let element = dtype.byte_size().ok_or_else(|| unsupported(site, dtype))?;

    let compute = |out: &mut [u8], mut qk: Option<&mut [u8]>| {
        let mut scaled_q = vec![T::ZERO; size];
        let mut bias = vec![T::ZERO; total];
        let mut logits = vec![T::ZERO; total];
        let mut probabilities = vec![T::ZERO; total];
        let mut work32 = Vec::new();
        let mut work64 = Vec::new();
        let mut sum = vec![T::ZERO; vsize];
        for b in 0..batch {
            // Where this block of queries starts among the keys, and how many keys are valid.
            let offset = match (before, &valid) {
                (Some(before), _) => before as i64,
                (None, Some(valid)) => valid[b].saturating_sub(sq as i64),
                (None, None) => 0,
            };
            let limit = valid.as_ref().map_or(i64::MAX, |valid| valid[b]);
            for h in 0..hq {
                let kv = h / group;
                for i in 0..sq {
                    let position = offset.saturating_add(i as i64);
                    for (j, bias) in bias.iter_mut().enumerate() {
                        let j64 = j as i64;
                        let allowed = j64 < limit
                            && (!options.causal || j64 <= position)
                            && (options.left < 0 || position.saturating_sub(j64) <= options.left)
                            && (options.right < 0 || j64.saturating_sub(position) <= options.right);
                        let masked = mask.as_ref().map_or(T::ZERO, |m| m.at(b, h, i, j));
                        *bias = masked + if allowed { T::ZERO } else { T::NEG_INFINITY };
                    }
                    for (s, &x) in scaled_q.iter_mut().zip(q.row(b, h, i)) {
                        *s = round(x * scale);
                    }
                    let row = ((b * hq + h) * sq + i) * total;
                    for (j, logit) in logits.iter_mut().enumerate() {
                        let mut raw = T::ZERO;
                        for (&x, &k) in scaled_q.iter().zip(keys.row(b, kv, j)) {
                            raw += x * round(k * scale);
                        }
                        let raw = round(raw);
                        let capped = match options.softcap > 0.0 {
                            true => round(softcap * round(round(raw / softcap).tanh())),
                            false => raw,
                        };
                        *logit = round(capped + bias[j]);
                        let shown = match options.product {
                            Product::Raw => raw,
                            Product::Capped => capped,
                            _ => *logit,
                        };
                        if let Some(qk) = qk.as_deref_mut() {
                            shown.store(dtype, &mut qk[(row + j) * element..][..element]);
                        }
                    }
                    if bias.iter().all(|&x| x == T::NEG_INFINITY) {
                        probabilities.fill(T::ZERO);
                    } else if precision == DType::F64 {
                        softmax_in::<f64, T>(&logits, precision, &mut work64, &mut probabilities);
                    } else {
                        softmax_in::<f32, T>(&logits, precision, &mut work32, &mut probabilities);
                    }
                    for p in probabilities.iter_mut() {
                        *p = round(*p);
                    }
                    if let (Some(qk), Product::Probabilities) = (qk.as_deref_mut(), options.product) {
                        for (j, p) in probabilities.iter().enumerate() {
                            p.store(dtype, &mut qk[(row + j) * element..][..element]);
                        }
                    }
                    sum.fill(T::ZERO);
                    for (j, &p) in probabilities.iter().enumerate() {
                        for (s, &x) in sum.iter_mut().zip(values.row(b, kv, j)) {
                            *s += p * x;
                        }
                    }
                    let start = if rank == 3 { (b * sq + i) * hq + h } else { (b * hq + h) * sq + i } * vsize;
                    for (e, s) in sum.iter().enumerate() {
                        s.store(dtype, &mut out[(start + e) * element..][..element]);
                    }
                }
            }
        }
    };
    match &product {
        Some(product) => {
            y.buffer().with_bytes_mut(|out| product.buffer().with_bytes_mut(|qk| compute(out, Some(qk))))??
        }
        None => y.buffer().with_bytes_mut(|out| compute(out, None))?,
    }

    let mut outputs = vec![y];
    if results > 1 {
        outputs.push(Typed { dims: keys.dims.to_vec(), values: keys.values }.into_tensor(site, dtype)?);
    }
    if results > 2 {
        outputs.push(Typed { dims: values.dims.to_vec(), values: values.values }.into_tensor(site, value_dtype)?);
    }
    outputs.extend(product);
    Ok(outputs)
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
    let result = float!(dtype, T => {
        rotate::<T>(frame, x, cos, sin, positions)?.into_tensor(frame, dtype)?
    }, return Err(unsupported(frame, dtype)));
    frame.emplace_result(0, result)
}

/// `x` with each head's leading `rotary_embedding_dim` elements rotated in pairs (halves, or
/// neighbours when interleaved) by the angles of its position.
fn rotate<T: Real>(
    site: &KernelSite<'_>,
    x: &DenseHostTensor,
    cos: &DenseHostTensor,
    sin: &DenseHostTensor,
    positions: Option<(Vec<usize>, Vec<i64>)>,
) -> Result<Typed<T>, KernelError> {
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
    let mut out = Typed::<T>::read(x);
    let (cos, sin) = (Typed::<T>::read(cos).values, Typed::<T>::read(sin).values);
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
        for k in 0..half {
            let (first, second) = if interleaved { (2 * k, 2 * k + 1) } else { (k, k + half) };
            let (x1, x2) = (row[first], row[second]);
            let (c, s) = (cos[at + k], sin[at + k]);
            row[first] = c * x1 - s * x2;
            row[second] = s * x1 + c * x2;
        }
    }
    Ok(out)
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
    // Each update row's row in the cache.
    let mut targets = Vec::with_capacity(batch * steps);
    for &start in &starts {
        for s in 0..steps {
            let at =
                start.checked_add(s as i64).map(|at| if circular { at.rem_euclid(length.max(1) as i64) } else { at });
            match at.and_then(|at| usize::try_from(at).ok()).filter(|&at| at < length) {
                Some(at) => targets.push(at),
                None => {
                    return Err(error(frame, format_args!("writing {steps} from {start} passes a cache of {length}")))
                }
            }
        }
    }
    let result = new_tensor(frame, dtype, &cache)?;
    past.with_bytes(|from| {
        update.with_bytes(|rows| {
            result.buffer().with_bytes_mut(|to| {
                to.copy_from_slice(from);
                for o in 0..outer {
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

pub(super) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("onnx.Attention", attention);
    registry.add_kernel("onnx.RotaryEmbedding", rotary_embedding);
    registry.add_kernel("onnx.TensorScatter", tensor_scatter);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softmax_is_shifted_and_a_masked_row_is_zeros() {
        let mut row = [1000.0f32, 1000.0, f32::NEG_INFINITY];
        softmax(&mut row, DType::F32);
        assert_eq!(row, [0.5, 0.5, 0.0]);
        let mut row = [f32::NEG_INFINITY; 2];
        softmax(&mut row, DType::F32);
        assert_eq!(row, [0.0, 0.0]);
        let mut row = [1.0f64, f64::NAN, 0.0];
        softmax(&mut row, DType::F64);
        assert!(row.iter().all(|p| p.is_nan()));
        let mut row = [0.0f64, 2f64.ln()];
        softmax(&mut row, DType::F64);
        assert!((row[0] - 1.0 / 3.0).abs() < 1e-15 && (row[1] - 2.0 / 3.0).abs() < 1e-15);
    }

    #[test]
    fn halves_round_to_their_precision() {
        assert_eq!(rounded(DType::F16, 1.0f32 + 1.0 / 4096.0), 1.0);
        assert_eq!(rounded(DType::F32, 1.0f32 + 1.0 / 4096.0), 1.0 + 1.0 / 4096.0);
        assert_eq!(rounded(DType::BF16, 1.0f32 + 1.0 / 256.0), 1.0);
    }
}
