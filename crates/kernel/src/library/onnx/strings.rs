//! String tensors ([`StringHostTensor`]): `StringConcat`, `StringSplit`, `RegexFullMatch`,
//! `StringNormalizer`, `TfIdfVectorizer` (on strings and integers), `Equal` on strings (see
//! [`compare`]) and `ai.onnx.ml`'s `LabelEncoder` (strings and numbers either side). A STRING
//! tensor attribute arrives as an aggregate of strings named `<name>.strings` (see
//! [`string_tensor`]); a number tensor attribute is a dense attribute of its own name.

use std::collections::{HashMap, HashSet};

use super::dispatch::any;
use super::elementwise::broadcast;
use super::tensors::{dims, error, filled, floats, string, strings, unsupported, walk, with_capacity, Typed, Value};
use crate::dtype::DType;
use crate::library::nn::{float, int, ints};
use crate::tensor::{DenseHostTensor, StringHostTensor, TensorShape};
use crate::{KernelError, KernelFrame, KernelRegistry, KernelSite};

pub(super) const OPERATORS: &[&str] =
    &["StringConcat", "StringSplit", "RegexFullMatch", "StringNormalizer", "TfIdfVectorizer", "ml.LabelEncoder"];

/// A tensor operand: its strings, or a dense tensor.
enum Operand<'f> {
    Strings(&'f StringHostTensor),
    Dense(&'f DenseHostTensor),
}

fn operand<'f>(frame: &KernelFrame<'f>, i: usize) -> Result<Operand<'f>, KernelError> {
    if let Ok(strings) = frame.get::<StringHostTensor>(i) {
        return Ok(Operand::Strings(strings));
    }
    frame
        .get::<DenseHostTensor>(i)
        .map(Operand::Dense)
        .map_err(|_| error(frame, format_args!("operand {i} is not a tensor")))
}

fn text<'f>(frame: &KernelFrame<'f>, i: usize) -> Result<&'f StringHostTensor, KernelError> {
    frame.get::<StringHostTensor>(i).map_err(|_| error(frame, format_args!("operand {i} is not a tensor of strings")))
}

/// A string tensor's dimensions as sizes.
pub(crate) fn string_dims(tensor: &StringHostTensor) -> Vec<usize> {
    tensor.shape().dims().iter().map(|&d| d as usize).collect()
}

/// A new string tensor of `dims` holding `strings`.
pub(crate) fn new_strings(
    site: &KernelSite<'_>,
    dims: &[usize],
    strings: Vec<String>,
) -> Result<StringHostTensor, KernelError> {
    let dims: Result<Vec<i64>, KernelError> =
        dims.iter().map(|&d| i64::try_from(d).map_err(|_| error(site, "a dimension is too large"))).collect();
    Ok(StringHostTensor::new(TensorShape::new(dims?)?, strings)?)
}

/// `f` on each pair of the broadcast string tensors `a` and `b`, and the result's dimensions.
fn broadcast_map<R>(
    site: &KernelSite<'_>,
    a: &StringHostTensor,
    b: &StringHostTensor,
    f: impl Fn(&str, &str) -> R,
) -> Result<(Vec<usize>, Vec<R>), KernelError> {
    let (da, db) = (string_dims(a), string_dims(b));
    let (dims, strides) =
        broadcast(&[&da, &db]).ok_or_else(|| error(site, format_args!("shapes {da:?} and {db:?} do not broadcast")))?;
    let count = super::tensors::element_count(site, &dims)?;
    let mut out = with_capacity(site, count)?;
    walk(&dims, &[&strides[0], &strides[1]], |at| out.push(f(&a.strings()[at[0]], &b.strings()[at[1]])));
    Ok((dims, out))
}

/// A comparison (`Equal`) of two string tensors, broadcast: `None` when the operands are not
/// strings (the comparison of numbers takes them).
pub(super) fn compare(
    frame: &KernelFrame<'_>,
    op: fn(std::cmp::Ordering) -> bool,
) -> Result<Option<DenseHostTensor>, KernelError> {
    let (Ok(a), Ok(b)) = (frame.get::<StringHostTensor>(0), frame.get::<StringHostTensor>(1)) else {
        return Ok(None);
    };
    let (dims, values) = broadcast_map(frame, a, b, |x, y| op(x.cmp(y)))?;
    Typed { dims, values }.into_tensor(frame, DType::I1).map(Some)
}

fn concat(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let (dims, values) = broadcast_map(frame, text(frame, 0)?, text(frame, 1)?, |x, y| format!("{x}{y}"))?;
    let result = new_strings(frame, &dims, values)?;
    frame.emplace_result(0, result)
}

/// `x` split as Python's `str.split` splits it: at `delimiter`, or at runs of whitespace when
/// there is none; at most `limit` splits.
fn split_one(x: &str, delimiter: Option<&str>, limit: usize) -> Vec<String> {
    match delimiter {
        Some(d) => x.splitn(limit.saturating_add(1), d).map(str::to_owned).collect(),
        None => {
            let mut parts = Vec::new();
            let mut rest = x.trim_start();
            while !rest.is_empty() {
                if parts.len() == limit {
                    parts.push(rest.to_owned());
                    break;
                }
                let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                parts.push(rest[..end].to_owned());
                rest = rest[end..].trim_start();
            }
            parts
        }
    }
}

fn split(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let x = text(frame, 0)?;
    let delimiter = string(frame, "delimiter", "")?;
    let delimiter = (!delimiter.is_empty()).then_some(delimiter);
    let maxsplit = int(frame, "maxsplit", -1)?;
    let limit = usize::try_from(maxsplit).unwrap_or(usize::MAX);
    let parts: Vec<Vec<String>> = x.strings().iter().map(|s| split_one(s, delimiter, limit)).collect();
    let widest = parts.iter().map(Vec::len).max().unwrap_or(0);
    let mut dims = string_dims(x);
    let counts = Typed { dims: dims.clone(), values: parts.iter().map(|p| p.len() as i64).collect() };
    dims.push(widest);
    let mut flat = with_capacity(frame, parts.len().saturating_mul(widest))?;
    for mut row in parts {
        row.resize(widest, String::new());
        flat.extend(row);
    }
    let y = new_strings(frame, &dims, flat)?;
    let z = counts.into_tensor(frame, DType::I64)?;
    frame.emplace_result(0, y)?;
    frame.emplace_result(1, z)
}

fn full_match(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let x = text(frame, 0)?;
    let pattern = string(frame, "pattern", "")?;
    let regex = regex::Regex::new(&format!("^(?:{pattern})$"))
        .map_err(|e| error(frame, format_args!("pattern `{pattern}`: {e}")))?;
    let values = x.strings().iter().map(|s| regex.is_match(s)).collect();
    let result = Typed { dims: string_dims(x), values }.into_tensor(frame, DType::I1)?;
    frame.emplace_result(0, result)
}

/// `StringNormalizer`, as onnxruntime runs it: the elements of a `[C]` or `[1, C]` tensor that are
/// stop words are dropped (compared as they are, or without case), the rest change case; when
/// none is left the output is one empty string.
fn normalize(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let x = text(frame, 0)?;
    let mut dims = string_dims(x);
    if !(dims.len() == 1 || dims.len() == 2 && dims[0] == 1) {
        return Err(error(frame, format_args!("the input is [C] or [1, C], not {dims:?}")));
    }
    let action = string(frame, "case_change_action", "NONE")?;
    let change: fn(&str) -> String = match action {
        "NONE" => str::to_owned,
        "LOWER" => str::to_lowercase,
        "UPPER" => str::to_uppercase,
        other => return Err(error(frame, format_args!("unknown case_change_action `{other}`"))),
    };
    let sensitive = int(frame, "is_case_sensitive", 0)? != 0;
    let kept = normalized(x.strings(), &strings(frame, "stopwords")?, sensitive, change);
    *dims.last_mut().expect("rank 1 or 2") = kept.len();
    let result = new_strings(frame, &dims, kept)?;
    frame.emplace_result(0, result)
}

/// `StringNormalizer` on the strings of one row: those not among `stopwords` (compared without
/// case unless `sensitive`) with their case changed; one empty string when none is left.
fn normalized(strings: &[String], stopwords: &[String], sensitive: bool, change: fn(&str) -> String) -> Vec<String> {
    let fold = |s: &str| if sensitive { s.to_owned() } else { s.to_lowercase() };
    let stopwords: HashSet<String> = stopwords.iter().map(|s| fold(s)).collect();
    let mut kept: Vec<String> = strings.iter().filter(|s| !stopwords.contains(&fold(s))).map(|s| change(s)).collect();
    if kept.is_empty() {
        kept.push(String::new());
    }
    kept
}

/// A key that strings and numbers are looked up by: integers exactly, floats by their bits (NaN
/// one key, -0 the same as 0).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    Text(String),
    Int(i128),
    Float(u64),
}

impl Key {
    fn of<T: Value>(value: T) -> Key {
        match value.to_integer() {
            Some(i) => Key::Int(i),
            None => Key::float(value.to_f64()),
        }
    }

    fn float(value: f64) -> Key {
        Key::Float(if value.is_nan() {
            f64::NAN.to_bits()
        } else if value == 0.0 {
            0
        } else {
            value.to_bits()
        })
    }
}

/// The elements of an operand as keys.
fn keys(site: &KernelSite<'_>, operand: &Operand<'_>) -> Result<Vec<Key>, KernelError> {
    match operand {
        Operand::Strings(t) => Ok(t.strings().iter().cloned().map(Key::Text).collect()),
        Operand::Dense(t) => {
            let dtype = t.dtype();
            any!(dtype, T => { Ok(Typed::<T>::read(t).values.into_iter().map(Key::of).collect()) },
                 Err(unsupported(site, dtype)))
        }
    }
}

fn operand_dims(operand: &Operand<'_>) -> Vec<usize> {
    match operand {
        Operand::Strings(t) => string_dims(t),
        Operand::Dense(t) => super::tensors::dims(t),
    }
}

/// The STRING tensor attribute `name` (an aggregate of strings named `<name>.strings`), `None`
/// when the kernel has none.
pub(crate) fn string_tensor(site: &KernelSite<'_>, name: &str) -> Result<Option<Vec<String>>, KernelError> {
    let name = format!("{name}.strings");
    if !super::tensors::has_attribute(site, &name) {
        return Ok(None);
    }
    strings(site, &name).map(Some)
}

/// Values of one type: strings, or numbers of `dtype` (integers exactly).
#[derive(Clone, Debug, PartialEq)]
enum Values {
    Text(Vec<String>),
    Numbers(DType, Vec<Key>),
}

impl Values {
    fn len(&self) -> usize {
        match self {
            Values::Text(v) => v.len(),
            Values::Numbers(_, v) => v.len(),
        }
    }
}

/// The tensor attribute `name` (strings, or numbers of any type), `None` when absent.
fn tensor_values(site: &KernelSite<'_>, name: &str) -> Result<Option<Values>, KernelError> {
    if let Some(text) = string_tensor(site, name)? {
        return Ok(Some(Values::Text(text)));
    }
    if !super::tensors::has_attribute(site, name) {
        return Ok(None);
    }
    let dense = site.named_attribute(name)?.dense()?;
    let dtype = dense.dtype;
    let size = dtype.byte_size().ok_or_else(|| unsupported(site, dtype))?;
    let keys = any!(dtype, T => {
        dense.data.chunks_exact(size).map(|b| Key::of(T::load(dtype, b))).collect()
    }, return Err(unsupported(site, dtype)));
    Ok(Some(Values::Numbers(dtype, keys)))
}

/// The keys or values of a `LabelEncoder`: `<what>_strings`, `<what>_int64s`, `<what>_floats`
/// or `<what>_tensor`, whichever the node has.
fn encoder_values(site: &KernelSite<'_>, what: &str) -> Result<Values, KernelError> {
    if let Some(values) = tensor_values(site, &format!("{what}_tensor"))? {
        return Ok(values);
    }
    let has = |suffix: &str| super::tensors::has_attribute(site, &format!("{what}_{suffix}"));
    if has("strings") {
        Ok(Values::Text(strings(site, &format!("{what}_strings"))?))
    } else if has("int64s") {
        Ok(Values::Numbers(
            DType::I64,
            ints(site, &format!("{what}_int64s"), &[])?.into_iter().map(|i| Key::Int(i.into())).collect(),
        ))
    } else if has("floats") {
        let floats = floats(site, &format!("{what}_floats"))?;
        Ok(Values::Numbers(DType::F32, floats.into_iter().map(|f| Key::float(f.into())).collect()))
    } else {
        Err(error(site, format_args!("it has no {what}")))
    }
}

/// `ai.onnx.ml.LabelEncoder`: each element looked up among the keys, its value where found and
/// the default of the values' type where not.
fn label_encoder(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let x = operand(frame, 0)?;
    let keyed = encoder_values(frame, "keys")?;
    let values = encoder_values(frame, "values")?;
    if keyed.len() != values.len() {
        return Err(error(frame, format_args!("{} keys for {} values", keyed.len(), values.len())));
    }
    let wanted: Vec<Key> = match keyed {
        Values::Text(text) => text.into_iter().map(Key::Text).collect(),
        Values::Numbers(_, numbers) => numbers,
    };
    let default = match tensor_values(frame, "default_tensor")? {
        Some(Values::Text(mut v)) if v.len() == 1 => Key::Text(v.remove(0)),
        Some(Values::Numbers(_, mut v)) if v.len() == 1 => v.remove(0),
        Some(_) => return Err(error(frame, "default_tensor holds one value")),
        None => match &values {
            Values::Text(_) => Key::Text(string(frame, "default_string", "_Unused")?.to_owned()),
            Values::Numbers(DType::F32 | DType::F64 | DType::F16 | DType::BF16, _) => {
                Key::float(f64::from(float(frame, "default_float", -0.0)?))
            }
            Values::Numbers(..) => Key::Int(int(frame, "default_int64", -1)?.into()),
        },
    };
    let index: HashMap<&Key, usize> = wanted.iter().enumerate().map(|(i, k)| (k, i)).rev().collect();
    let dims = operand_dims(&x);
    let found: Vec<Option<usize>> = keys(frame, &x)?.iter().map(|k| index.get(k).copied()).collect();
    match values {
        Values::Text(text) => {
            let Key::Text(default) = default else { return Err(error(frame, "the default is not a string")) };
            let out = found.iter().map(|f| f.map_or_else(|| default.clone(), |i| text[i].clone())).collect();
            let result = new_strings(frame, &dims, out)?;
            frame.emplace_result(0, result)
        }
        Values::Numbers(dtype, numbers) => {
            let out: Vec<&Key> = found.iter().map(|f| f.map_or(&default, |i| &numbers[i])).collect();
            let result = numbers_tensor(frame, &dims, dtype, &out)?;
            frame.emplace_result(0, result)
        }
    }
}

/// A tensor of `dtype` holding number keys.
fn numbers_tensor(
    frame: &KernelFrame<'_>,
    dims: &[usize],
    dtype: DType,
    values: &[&Key],
) -> Result<DenseHostTensor, KernelError> {
    any!(dtype, T => {
        let values = values.iter().map(|k| match k {
            Key::Int(i) => Ok(T::from_integer(*i)),
            Key::Float(bits) => Ok(T::from_f64(f64::from_bits(*bits))),
            Key::Text(_) => Err(error(frame, "a string among numbers")),
        }).collect::<Result<Vec<T>, _>>()?;
        Typed { dims: dims.to_vec(), values }.into_tensor(frame, dtype)
    }, Err(unsupported(frame, dtype)))
}

/// `TfIdfVectorizer`, as onnxruntime counts: for each skip (0 to `max_skip_count`) and start,
/// the n-grams of `min_gram_length` to `max_gram_length` items `skip + 1` apart that are in the
/// pool add to their output column's count (unigrams once, not once per skip); then weighted by
/// `mode`.
fn tfidf(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let x = operand(frame, 0)?;
    let dims = operand_dims(&x);
    let (rows, width) = match dims[..] {
        [c] => (1, c),
        [n, c] => (n, c),
        _ => return Err(error(frame, format_args!("the input is [C] or [N, C], not {dims:?}"))),
    };
    let items = keys(frame, &x)?;
    let (min_gram, max_gram) = (int(frame, "min_gram_length", 1)?, int(frame, "max_gram_length", 1)?);
    let max_skip = int(frame, "max_skip_count", 0)?;
    if min_gram < 1 || max_gram < min_gram || max_skip < 0 {
        return Err(error(frame, "gram lengths 1 <= min <= max and a skip count >= 0"));
    }
    let (min_gram, max_gram, max_skip) = (min_gram as usize, max_gram as usize, max_skip as usize);
    let counts = ints(frame, "ngram_counts", &[])?;
    let indexes = ints(frame, "ngram_indexes", &[])?;
    let pool: Vec<Key> = if super::tensors::has_attribute(frame, "pool_strings") {
        strings(frame, "pool_strings")?.into_iter().map(Key::Text).collect()
    } else {
        ints(frame, "pool_int64s", &[])?.into_iter().map(|i| Key::Int(i.into())).collect()
    };
    // The pool's n-grams: those of n items from counts[n - 1] to counts[n] (or the end).
    let mut grams: HashMap<&[Key], usize> = HashMap::new();
    let mut column = 0;
    for (k, &start) in counts.iter().enumerate() {
        let end = counts.get(k + 1).copied().unwrap_or(pool.len() as i64);
        let (start, end) = (usize::try_from(start).ok(), usize::try_from(end).ok());
        let (Some(start), Some(end)) = (start, end) else { return Err(error(frame, "a negative ngram count")) };
        if start > end || end > pool.len() || (end - start) % (k + 1) != 0 {
            return Err(error(frame, format_args!("ngram_counts {counts:?} do not fit a pool of {}", pool.len())));
        }
        for gram in pool[start..end].chunks(k + 1) {
            let out = *indexes.get(column).ok_or_else(|| error(frame, "fewer ngram_indexes than n-grams"))?;
            let out = usize::try_from(out).map_err(|_| error(frame, "a negative ngram index"))?;
            grams.entry(gram).or_insert(out);
            column += 1;
        }
    }
    let largest = indexes.iter().copied().max().unwrap_or(-1);
    let size = usize::try_from(largest.saturating_add(1)).map_err(|_| error(frame, "a negative ngram index"))?;
    let total = rows.checked_mul(size).ok_or_else(|| error(frame, "the output is too large"))?;
    let mut frequencies = filled(total, 0f64).map_err(|e| error(frame, e))?;
    for (row, values) in items.chunks(width.max(1)).enumerate().take(rows) {
        count_ngrams(values, &grams, (min_gram, max_gram), max_skip, &mut frequencies[row * size..(row + 1) * size]);
    }
    let weights = floats(frame, "weights")?;
    let mode = string(frame, "mode", "TF")?;
    for (k, f) in frequencies.iter_mut().enumerate() {
        let weight = weights.get(k % size.max(1)).map_or(1.0, |&w| f64::from(w));
        *f = match mode {
            "TF" => *f,
            "IDF" => f64::from(u8::from(*f > 0.0)) * weight,
            "TFIDF" => *f * weight,
            other => return Err(error(frame, format_args!("unknown mode `{other}`"))),
        };
    }
    let out_dims = if dims.len() == 1 { vec![size] } else { vec![rows, size] };
    let result = Typed { dims: out_dims, values: frequencies.into_iter().map(|f| f as f32).collect() }
        .into_tensor(frame, DType::F32)?;
    frame.emplace_result(0, result)
}

/// Adds to `out[column]` each time an n-gram of `grams` (of `min` to `max` items, `skip + 1`
/// apart for each skip to `max_skip`) occurs in `values`; unigrams are counted once, as a skip
/// does not change them.
fn count_ngrams(
    values: &[Key],
    grams: &HashMap<&[Key], usize>,
    (min, max): (usize, usize),
    max_skip: usize,
    out: &mut [f64],
) {
    let mut gram = Vec::with_capacity(max);
    let mut shortest = min;
    for skip in 0..=max_skip {
        for start in 0..values.len() {
            gram.clear();
            for n in 1..=max {
                let at = (n - 1).checked_mul(skip + 1).and_then(|k| start.checked_add(k));
                let Some(item) = at.and_then(|at| values.get(at)) else { break };
                gram.push(item.clone());
                if n >= shortest {
                    if let Some(&column) = grams.get(&gram[..]) {
                        out[column] += 1.0;
                    }
                }
            }
        }
        if shortest == 1 {
            shortest = 2;
            if shortest > max {
                break;
            }
        }
    }
}

/// ONNX's element type code of STRING.
pub(super) const STRING: i64 = 8;

/// `Cast` from or to STRING, where one side is strings (`None` otherwise): numbers parse as ONNX
/// says (plain or scientific, `INF` and `NaN` in any case, integers exactly) and print as numpy's
/// `str` prints them.
pub(super) fn cast(frame: &KernelFrame<'_>, to: i64) -> Result<Option<Cast>, KernelError> {
    if let Ok(x) = frame.get::<StringHostTensor>(0) {
        if to == STRING {
            return Ok(Some(Cast::Strings(x.clone())));
        }
        let dtype = super::elementwise::onnx_dtype(to)
            .ok_or_else(|| error(frame, format_args!("cast to element type {to} is not supported")))?;
        let dims = string_dims(x);
        let tensor = any!(dtype, T => {
            let values = x
                .strings()
                .iter()
                .enumerate()
                .map(|(i, text)| parse_number::<T>(text).ok_or_else(|| error(frame, format_args!("element {i} (`{text}`) is not a number"))))
                .collect::<Result<Vec<T>, _>>()?;
            Typed { dims, values }.into_tensor(frame, dtype)?
        }, return Err(unsupported(frame, dtype)));
        return Ok(Some(Cast::Dense(tensor)));
    }
    if to != STRING {
        return Ok(None);
    }
    let x = frame.get::<DenseHostTensor>(0)?;
    let texts: Vec<String> = match x.dtype() {
        DType::I1 => x.values::<bool>()?.iter().map(|&b| if b { "True" } else { "False" }.to_owned()).collect(),
        DType::F32 => x.values::<f32>()?.iter().map(|&v| float_text(v.into(), 6, |d| d as f32 == v)).collect(),
        DType::F64 => x.values::<f64>()?.iter().map(|&v| float_text(v, 16, |d| d == v)).collect(),
        // (Read as f32s, which hold every f16 and bf16 exactly.)
        DType::F16 => Typed::<f32>::read(x)
            .values
            .iter()
            .map(|&v| float_text(v.into(), 3, |d| half::f16::from_f64(d) == half::f16::from_f32(v)))
            .collect(),
        DType::BF16 => Typed::<f32>::read(x)
            .values
            .iter()
            .map(|&v| float_text(v.into(), 3, |d| half::bf16::from_f64(d) == half::bf16::from_f32(v)))
            .collect(),
        dtype => any!(dtype, T => {
            Typed::<T>::read(x).values.iter().map(|v| v.to_integer().map_or_else(|| v.to_f64().to_string(), |n| n.to_string())).collect()
        }, return Err(unsupported(frame, dtype))),
    };
    Ok(Some(Cast::Strings(new_strings(frame, &dims(x), texts)?)))
}

/// What [`cast`] makes.
pub(super) enum Cast {
    Strings(StringHostTensor),
    Dense(DenseHostTensor),
}

/// A number of `T` from text: an integer exactly where it is one, anything else through f64.
fn parse_number<T: Value>(text: &str) -> Option<T> {
    let text = text.trim();
    if let Ok(integer) = text.parse::<i128>() {
        return Some(T::from_integer(integer));
    }
    text.parse::<f64>().ok().map(T::from_f64)
}

/// `value` as numpy's `str` prints a float of its type: the fewest digits that read back as the
/// same value (`same`), positional from 1e-4 up to 10^`positional_digits`, scientific with a
/// two-digit exponent (`1e-05`, `1.5e+16`) beyond, `.0` after an integral positional value.
fn float_text(value: f64, positional_digits: i32, same: impl Fn(f64) -> bool) -> String {
    if value.is_nan() {
        return "nan".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    let shortest = (0..17)
        .map(|precision| format!("{value:.precision$e}").parse::<f64>().expect("a formatted float parses"))
        .find(|&candidate| same(candidate))
        .unwrap_or(value);
    let magnitude = value.abs();
    if magnitude == 0.0 || (1e-4..10f64.powi(positional_digits)).contains(&magnitude) {
        let text = shortest.to_string();
        return if text.contains('.') { text } else { format!("{text}.0") };
    }
    let text = format!("{shortest:e}");
    let (mantissa, exponent) = text.split_once('e').expect("scientific notation has an exponent");
    let exponent: i32 = exponent.parse().expect("an integer exponent");
    format!("{mantissa}e{}{:02}", if exponent < 0 { '-' } else { '+' }, exponent.abs())
}

pub(super) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("onnx.StringConcat", concat);
    registry.add_kernel("onnx.StringSplit", split);
    registry.add_kernel("onnx.RegexFullMatch", full_match);
    registry.add_kernel("onnx.StringNormalizer", normalize);
    registry.add_kernel("onnx.TfIdfVectorizer", tfidf);
    registry.add_kernel("onnx.ml.LabelEncoder", label_encoder);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_numpy_prints_them() {
        let f32_text = |v: f32| float_text(v.into(), 6, |d| d as f32 == v);
        let cases = [(0.1, "0.1"), (1.5, "1.5"), (2.0, "2.0"), (999999.0, "999999.0"), (1e6, "1e+06")];
        for (value, text) in cases {
            assert_eq!(f32_text(value), text);
        }
        assert_eq!(f32_text(12345678.0), "1.2345678e+07");
        assert_eq!(f32_text(0.0001), "1e-04", "0.0001 is just below 1e-4 as an f32");
        assert_eq!(f32_text(-0.0), "-0.0");
        assert_eq!(f32_text(f32::NEG_INFINITY), "-inf");
        assert_eq!(f32_text(std::f32::consts::PI), "3.1415927");
        assert_eq!(float_text(1e15, 16, |d| d == 1e15), "1000000000000000.0");
        assert_eq!(float_text(1e-8, 16, |d| d == 1e-8), "1e-08");
        let h = half::f16::from_f32(0.1);
        assert_eq!(float_text(h.into(), 3, |d| half::f16::from_f64(d) == h), "0.1");
        let h = half::f16::from_f32(1024.0);
        assert_eq!(float_text(h.into(), 3, |d| half::f16::from_f64(d) == h), "1.024e+03");
    }

    #[test]
    fn numbers_parse_as_onnx_says() {
        assert_eq!(parse_number::<f32>("1E8"), Some(1e8));
        assert_eq!(parse_number::<f32>("-INF"), Some(f32::NEG_INFINITY));
        assert!(parse_number::<f64>("NaN").unwrap().is_nan());
        assert_eq!(parse_number::<i64>("9007199254740993"), Some(9007199254740993), "exact past 2^53");
        assert_eq!(parse_number::<i32>("2.7"), Some(2));
        assert_eq!(parse_number::<f32>("three"), None);
    }

    fn owned(strings: &[&str]) -> Vec<String> {
        strings.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn strings_split_as_python_splits_them() {
        assert_eq!(split_one("a,b,,c", Some(","), usize::MAX), owned(&["a", "b", "", "c"]));
        assert_eq!(split_one("a,b,,c", Some(","), 1), owned(&["a", "b,,c"]));
        assert_eq!(split_one("", Some(","), usize::MAX), owned(&[""]));
        assert_eq!(split_one("a--b", Some("--"), usize::MAX), owned(&["a", "b"]));
        // Without a delimiter: runs of whitespace, none at either end; what is left after
        // `maxsplit` splits keeps its trailing whitespace.
        assert_eq!(split_one("  a \t b c ", None, usize::MAX), owned(&["a", "b", "c"]));
        assert_eq!(split_one("  a  b c ", None, 1), owned(&["a", "b c "]));
        assert_eq!(split_one("   ", None, usize::MAX), Vec::<String>::new());
        assert_eq!(split_one("x", None, 0), owned(&["x"]));
    }

    #[test]
    fn stop_words_go_and_case_changes() {
        let words = owned(&["Monday", "monday", "Tuesday"]);
        let stop = owned(&["monday"]);
        assert_eq!(normalized(&words, &stop, true, str::to_owned), owned(&["Monday", "Tuesday"]));
        assert_eq!(normalized(&words, &stop, false, str::to_uppercase), owned(&["TUESDAY"]));
        assert_eq!(normalized(&owned(&["monday"]), &stop, true, str::to_owned), owned(&[""]));
    }

    #[test]
    fn keys_match_numbers_as_onnxruntime_does() {
        assert_eq!(Key::of(-0.0f32), Key::of(0.0f64));
        assert_eq!(Key::of(f32::NAN), Key::float(-f64::NAN));
        assert_eq!(Key::of(7i32), Key::of(7u64));
        assert_ne!(Key::of(7i64), Key::of(7.0f32));
        assert_eq!(Key::of(u64::MAX), Key::Int(i128::from(u64::MAX)));
    }

    #[test]
    fn ngrams_count_once_per_skip_and_unigrams_once() {
        let keys = |v: &[i128]| v.iter().map(|&i| Key::Int(i)).collect::<Vec<_>>();
        let (one, one_two, two_three) = (keys(&[1]), keys(&[1, 2]), keys(&[2, 3]));
        let grams: HashMap<&[Key], usize> = [(&one[..], 2), (&one_two[..], 0), (&two_three[..], 1)].into();
        // [1, 3, 2]: the unigram 1 once, (1, 2) only one apart.
        let mut out = [0.0; 3];
        count_ngrams(&keys(&[1, 3, 2]), &grams, (1, 2), 1, &mut out);
        assert_eq!(out, [1.0, 0.0, 1.0]);
        // Without skips (1, 2) twice and (2, 3) once; bigrams only leave the unigrams out.
        let mut out = [0.0; 3];
        count_ngrams(&keys(&[1, 2, 1, 2, 3]), &grams, (2, 2), 0, &mut out);
        assert_eq!(out, [2.0, 1.0, 0.0]);
        // Skips up to 5 on five items: the unigram 1 still twice, (1, 2) and (2, 3) also three
        // apart (items 0 and 3, 1 and 4).
        let mut out = [0.0; 3];
        count_ngrams(&keys(&[1, 2, 1, 2, 3]), &grams, (1, 2), 5, &mut out);
        assert_eq!(out, [3.0, 2.0, 2.0]);
    }
}
