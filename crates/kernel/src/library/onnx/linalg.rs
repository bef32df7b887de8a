//! Products of tensors: `MatMul` (numpy's batched broadcasting, 1-D operands), `Gemm`, `Einsum`
//! (any equation: implicit or explicit output, repeated labels, ellipses), and the quantized
//! `MatMulInteger` and `QLinearMatMul`. Every number type multiplies: floats with
//! the `gemm` crate's packed GEMM (half floats in f32), integers with plain loops that wrap as
//! the type does ([`Ring`]). `Det`: determinants of square matrices, by LU decomposition.

use super::dispatch::numeric;
use super::elementwise::{broadcast, same_type};
use super::quantize::{offset_operand, requantized};
use super::tensors::{
    count, error, filled, read_floats, register_one, string, unsupported, walk, Inputs, Typed, Value,
};
use crate::dtype::DType;
use crate::library::nn::gemm::{packed_gemm, Matrix};
use crate::library::nn::layout::strides;
use crate::library::nn::{float, int};
use crate::tensor::DenseHostTensor;
use crate::{KernelError, KernelFrame, KernelRegistry};

pub(super) const OPERATORS: &[&str] = &["Det", "Einsum", "Gemm", "MatMul", "MatMulInteger", "QLinearMatMul"];

/// The arithmetic of a type products compute in: IEEE for floats, wrapping for integers (as a
/// product in the type would), and a matrix product.
pub(super) trait Ring: Value + Default {
    fn add(self, other: Self) -> Self;
    fn mul(self, other: Self) -> Self;
    /// `c[i * ldc + j] = sum_p a(i, p) b(p, j)` for an `m x k` `a` and a `k x n` `b`, added to
    /// what `c` holds when `accumulate`.
    fn gemm(
        dims: (usize, usize, usize),
        a: (&[Self], Matrix),
        b: (&[Self], Matrix),
        c: &mut [Self],
        ldc: usize,
        accumulate: bool,
    );
}

macro_rules! float_ring {
    ($($t:ty),*) => {$(
        impl Ring for $t {
            #[inline]
            fn add(self, other: $t) -> $t {
                self + other
            }
            #[inline]
            fn mul(self, other: $t) -> $t {
                self * other
            }
            fn gemm(dims: (usize, usize, usize), a: (&[$t], Matrix), b: (&[$t], Matrix), c: &mut [$t], ldc: usize,
                    accumulate: bool) {
                packed_gemm(dims, 1.0, a, b, if accumulate { 1.0 } else { 0.0 }, c, ldc);
            }
        }
    )*};
}
float_ring!(f32, f64);

macro_rules! integer_ring {
    ($($t:ty),*) => {$(
        impl Ring for $t {
            #[inline]
            fn add(self, other: $t) -> $t {
                self.wrapping_add(other)
            }
            #[inline]
            fn mul(self, other: $t) -> $t {
                self.wrapping_mul(other)
            }
            fn gemm((m, k, n): (usize, usize, usize), (a, am): (&[$t], Matrix), (b, bm): (&[$t], Matrix),
                    c: &mut [$t], ldc: usize, accumulate: bool) {
                for i in 0..m {
                    let row = &mut c[i * ldc..i * ldc + n];
                    if !accumulate {
                        row.fill(0);
                    }
                    for p in 0..k {
                        let x = a[am.offset + i * am.rows + p * am.columns];
                        if x == 0 {
                            continue;
                        }
                        let start = bm.offset + p * bm.rows;
                        for (j, value) in row.iter_mut().enumerate() {
                            *value = value.wrapping_add(x.wrapping_mul(b[start + j * bm.columns]));
                        }
                    }
                }
            }
        }
    )*};
}
integer_ring!(u8, u16, u32, u64, i8, i16, i32, i64);

/// A row-major `rows x columns` matrix at `offset`, read transposed when `transposed`.
fn stored_matrix(offset: usize, columns: usize, transposed: bool) -> Matrix {
    if transposed {
        Matrix { offset, rows: 1, columns }
    } else {
        Matrix { offset, rows: columns, columns: 1 }
    }
}

/// numpy's `matmul`: `[.., m, k] x [.., k, n]` with the leading dimensions broadcast; a 1-D
/// left operand is a row and a 1-D right one a column, their dimension dropped from the result.
pub(super) fn matmul<T: Ring>(a: &Typed<T>, b: &Typed<T>) -> Result<Typed<T>, String> {
    let mismatch = || format!("cannot multiply {:?} by {:?}", a.dims, b.dims);
    let mut ad = a.dims.clone();
    let mut bd = b.dims.clone();
    let (row, column) = (ad.len() == 1, bd.len() == 1);
    if row {
        ad.insert(0, 1);
    }
    if column {
        bd.push(1);
    }
    let (ra, rb) = (ad.len(), bd.len());
    if ra < 2 || rb < 2 {
        return Err(mismatch());
    }
    let (m, k, kb, n) = (ad[ra - 2], ad[ra - 1], bd[rb - 2], bd[rb - 1]);
    if k != kb {
        return Err(mismatch());
    }
    let (batch, batch_strides) = broadcast(&[&ad[..ra - 2], &bd[..rb - 2]]).ok_or_else(mismatch)?;
    let plane = m * n;
    let entries = count(&batch)?;
    let mut values = filled(count(&[entries, m, n])?, T::default())?;
    let (am, bm) = (Matrix { offset: 0, rows: k, columns: 1 }, Matrix { offset: 0, rows: n, columns: 1 });
    if rb == 2 {
        // One right-hand matrix for the whole stack, whose left-hand matrices (not broadcast:
        // the stack is theirs) lie end to end: one product of `entries * m` rows, not a small
        // product per entry (an LSTM tagger's `[32, 1, 96] x [96, 16]` took 32).
        T::gemm((entries * m, k, n), (&a.values, am), (&b.values, bm), &mut values, n, false);
    } else {
        let mut entry = 0;
        walk(&batch, &[&batch_strides[0], &batch_strides[1]], |offsets| {
            let am = Matrix { offset: offsets[0] * m * k, ..am };
            let bm = Matrix { offset: offsets[1] * k * n, ..bm };
            T::gemm((m, k, n), (&a.values, am), (&b.values, bm), &mut values[entry * plane..], n, false);
            entry += 1;
        });
    }
    let mut dims = batch;
    if !row {
        dims.push(m);
    }
    if !column {
        dims.push(n);
    }
    Ok(Typed { dims, values })
}

/// `alpha * A' B' + beta * C`, `A'` and `B'` transposed when `transposed` says so, `C` (when
/// given) broadcast to the result.
fn gemm<T: Ring>(
    (a, b, c): (&Typed<T>, &Typed<T>, Option<&Typed<T>>),
    (alpha, beta): (f64, f64),
    transposed: (bool, bool),
) -> Result<Typed<T>, String> {
    let (Ok([ar, ac]), Ok([br, bc])) = (<[usize; 2]>::try_from(&a.dims[..]), <[usize; 2]>::try_from(&b.dims[..]))
    else {
        return Err(format!("A {:?} and B {:?} must be matrices", a.dims, b.dims));
    };
    let (m, k) = if transposed.0 { (ac, ar) } else { (ar, ac) };
    let (kb, n) = if transposed.1 { (bc, br) } else { (br, bc) };
    if k != kb {
        return Err(format!("A {:?} and B {:?} (transposed {transposed:?}) do not multiply", a.dims, b.dims));
    }
    let mut values = filled(count(&[m, n])?, T::default())?;
    let (am, bm) = (stored_matrix(0, ac, transposed.0), stored_matrix(0, bc, transposed.1));
    T::gemm((m, k, n), (&a.values, am), (&b.values, bm), &mut values, n, false);
    if alpha != 1.0 {
        let alpha = T::from_f64(alpha);
        values.iter_mut().for_each(|v| *v = alpha.mul(*v));
    }
    if let Some(c) = c.filter(|_| beta != 0.0) {
        let shape = [m, n];
        let (dims, strides) = broadcast(&[&shape, &c.dims])
            .filter(|(dims, _)| dims[..] == shape)
            .ok_or_else(|| format!("C {:?} does not broadcast to [{m}, {n}]", c.dims))?;
        let beta = T::from_f64(beta);
        let mut at = 0;
        walk(&dims, &[&strides[1]], |offsets| {
            values[at] = values[at].add(beta.mul(c.values[offsets[0]]));
            at += 1;
        });
    }
    Ok(Typed { dims: vec![m, n], values })
}

/// One term of an einsum equation: its letters, with `None` for the ellipsis.
fn term(text: &str) -> Result<Vec<Option<char>>, String> {
    let mut labels = Vec::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("...") {
            if labels.contains(&None) {
                return Err(format!("the term `{text}` has two ellipses"));
            }
            labels.push(None);
            rest = after;
        } else if c.is_ascii_alphabetic() {
            labels.push(Some(c));
            rest = &rest[1..];
        } else {
            return Err(format!("the term `{text}` holds `{c}`, not a letter"));
        }
    }
    Ok(labels)
}

/// An einsum equation resolved for operands of given shapes: the size of every label (the
/// ellipsis's dimensions first, then the letters), each operand's element stride along each
/// label (summed over a label it repeats: a diagonal; 0 where a dimension of 1 broadcasts),
/// and the labels of the result.
struct Contraction {
    sizes: Vec<usize>,
    strides: Vec<Vec<usize>>,
    output: Vec<usize>,
}

impl Contraction {
    fn new(equation: &str, shapes: &[&[usize]]) -> Result<Contraction, String> {
        let equation: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
        let (inputs, output) = match equation.split_once("->") {
            Some((inputs, output)) => (inputs, Some(output)),
            None => (&equation[..], None),
        };
        let terms = inputs.split(',').map(term).collect::<Result<Vec<_>, _>>()?;
        if terms.len() != shapes.len() {
            return Err(format!("`{equation}` has {} terms for {} inputs", terms.len(), shapes.len()));
        }
        // The ellipsis of each term stands for the dimensions its letters leave.
        let mut spans = Vec::with_capacity(terms.len());
        for (labels, dims) in terms.iter().zip(shapes) {
            let letters = labels.iter().filter(|l| l.is_some()).count();
            let span = match dims.len().checked_sub(letters) {
                Some(span) if span == 0 || labels.contains(&None) => span,
                _ => return Err(format!("`{equation}` does not label an input of {dims:?}")),
            };
            spans.push(span);
        }
        let ellipsis = spans.iter().copied().max().unwrap_or(0);
        let mut letters: Vec<char> = terms.iter().flatten().flatten().copied().collect();
        letters.sort_unstable();
        letters.dedup();
        let id = |c: char| ellipsis + letters.binary_search(&c).expect("every letter is listed");
        let mut sizes: Vec<Option<usize>> = vec![None; ellipsis + letters.len()];
        let mut labelled = Vec::with_capacity(terms.len());
        for ((labels, dims), &span) in terms.iter().zip(shapes).zip(&spans) {
            let ids: Vec<usize> = labels
                .iter()
                .flat_map(|label| match label {
                    Some(c) => vec![id(*c)],
                    None => (ellipsis - span..ellipsis).collect(),
                })
                .collect();
            for (&label, &size) in ids.iter().zip(dims.iter()) {
                sizes[label] = match sizes[label] {
                    None => Some(size),
                    Some(known) if known == size => Some(known),
                    // Only the ellipsis's dimensions broadcast, as numpy's einsum does.
                    Some(known) if label < ellipsis && (known == 1 || size == 1) => Some(known.max(size)),
                    Some(known) => return Err(format!("`{equation}` gives a label sizes {known} and {size}")),
                };
            }
            labelled.push(ids);
        }
        let sizes: Vec<usize> = sizes.into_iter().map(|s| s.unwrap_or(1)).collect();
        let strides = labelled
            .iter()
            .zip(shapes)
            .map(|(ids, dims)| {
                let mut along = vec![0; sizes.len()];
                for ((&label, &size), stride) in ids.iter().zip(dims.iter()).zip(strides(dims)) {
                    if size == sizes[label] {
                        along[label] += stride;
                    }
                }
                along
            })
            .collect();
        let output = match output {
            Some(text) => {
                let mut ids = Vec::new();
                for label in term(text)? {
                    match label {
                        None => ids.extend(0..ellipsis),
                        Some(c) if letters.binary_search(&c).is_err() || ids.contains(&id(c)) => {
                            return Err(format!("`{equation}` puts `{c}` in its result wrongly"))
                        }
                        Some(c) => ids.push(id(c)),
                    }
                }
                ids
            }
            // Implicit: the ellipsis, then the letters used once, in alphabetical order.
            None => {
                let once = |c: &char| terms.iter().flatten().filter(|l| **l == Some(*c)).count() == 1;
                (0..ellipsis).chain(letters.iter().filter(|c| once(c)).map(|&c| id(c))).collect()
            }
        };
        Ok(Contraction { sizes, strides, output })
    }
}

fn einsum<T: Ring>(equation: &str, operands: &[Typed<T>]) -> Result<Typed<T>, String> {
    let shapes: Vec<&[usize]> = operands.iter().map(|o| &o.dims[..]).collect();
    let contraction = Contraction::new(equation, &shapes)?;
    let dims: Vec<usize> = contraction.output.iter().map(|&l| contraction.sizes[l]).collect();
    let count = count(&dims)?;
    let summed: Vec<usize> = (0..contraction.sizes.len()).filter(|l| !contraction.output.contains(l)).collect();
    let pick = |labels: &[usize], along: &[usize]| -> Vec<usize> { labels.iter().map(|&l| along[l]).collect() };
    let outer: Vec<Vec<usize>> = contraction.strides.iter().map(|s| pick(&contraction.output, s)).collect();
    let inner: Vec<Vec<usize>> = contraction.strides.iter().map(|s| pick(&summed, s)).collect();
    let inner_dims = pick(&summed, &contraction.sizes);
    let outer_strides: Vec<&[usize]> = outer.iter().map(|s| &s[..]).collect();
    let inner_strides: Vec<&[usize]> = inner.iter().map(|s| &s[..]).collect();
    let mut values = filled(count, T::default())?;
    let mut at = 0;
    walk(&dims, &outer_strides, |bases| {
        let mut sum = T::default();
        walk(&inner_dims, &inner_strides, |offsets| {
            let mut product = operands[0].values[bases[0] + offsets[0]];
            for (i, operand) in operands.iter().enumerate().skip(1) {
                product = product.mul(operand.values[bases[i] + offsets[i]]);
            }
            sum = sum.add(product);
        });
        values[at] = sum;
        at += 1;
    });
    Ok(Typed { dims, values })
}

/// The axis of the matrix rows (`1`) or columns (`0`) of `x`, its rank when it has none (a
/// vector: then only a single zero point or scale fits).
fn from_end(x: &DenseHostTensor, axis: usize) -> usize {
    let rank = x.shape().dims().len();
    rank.checked_sub(axis + 1).filter(|_| rank >= 2).unwrap_or(rank)
}

fn qlinear_matmul(frame: &KernelFrame<'_>, inputs: &Inputs) -> Result<DenseHostTensor, KernelError> {
    let a = offset_operand(frame, inputs.required(0)?, inputs.optional(2), from_end(inputs.required(0)?, 1))?;
    let b = offset_operand(frame, inputs.required(3)?, inputs.optional(5), from_end(inputs.required(3)?, 0))?;
    let product = matmul(&a, &b).map_err(|e| error(frame, e))?;
    // a_scale is one value or one per row, b_scale one or one per column.
    let rank = product.dims.len();
    let rows = rank.checked_sub(2).filter(|_| inputs.required(0).is_ok_and(|a| a.shape().dims().len() >= 2));
    requantized(frame, inputs, product, (rows.unwrap_or(rank), rank.saturating_sub(1)))
}

/// The determinant of the `n x n` row-major matrix `a`: LU decomposition with partial pivoting
/// (the product of the pivots, its sign flipped by each row swap).
fn determinant(mut a: Vec<f64>, n: usize) -> f64 {
    let mut det = 1.0;
    for k in 0..n {
        let pivot = (k..n).max_by(|&i, &j| a[i * n + k].abs().total_cmp(&a[j * n + k].abs())).unwrap_or(k);
        if a[pivot * n + k] == 0.0 {
            return 0.0;
        }
        if pivot != k {
            for j in 0..n {
                a.swap(k * n + j, pivot * n + j);
            }
            det = -det;
        }
        let diagonal = a[k * n + k];
        det *= diagonal;
        for i in k + 1..n {
            let factor = a[i * n + k] / diagonal;
            for j in k + 1..n {
                a[i * n + j] -= factor * a[k * n + j];
            }
        }
    }
    det
}

pub(super) fn register(registry: &mut KernelRegistry) {
    register_one(registry, "Det", |frame, inputs| {
        let x = inputs.required(0)?;
        let typed = read_floats(frame, x)?;
        let rank = typed.dims.len();
        let n = match typed.dims[..] {
            [.., rows, columns] if rows == columns => rows,
            _ => return Err(error(frame, format_args!("{:?} is not a stack of square matrices", typed.dims))),
        };
        let dims = typed.dims[..rank - 2].to_vec();
        let values = if n == 0 {
            count(&dims).and_then(|n| filled(n, 1.0)).map_err(|e| error(frame, e))?
        } else {
            typed.values.chunks_exact(n * n).map(|m| determinant(m.to_vec(), n)).collect()
        };
        Typed { dims, values }.into_floats(frame, x.dtype())
    });
    register_one(registry, "MatMul", |frame, inputs| {
        let (a, b) = (inputs.required(0)?, inputs.required(1)?);
        let dtype = same_type(frame, &[a.clone(), b.clone()])?;
        numeric!(dtype, T => {
            matmul(&Typed::<T>::read(a), &Typed::<T>::read(b)).map_err(|e| error(frame, e))?.into_tensor(frame, dtype)
        }, Err(unsupported(frame, dtype)))
    });
    register_one(registry, "Gemm", |frame, inputs| {
        let (a, b, c) = (inputs.required(0)?, inputs.required(1)?, inputs.optional(2));
        let mut all = vec![a.clone(), b.clone()];
        all.extend(c.cloned());
        let dtype = same_type(frame, &all)?;
        let scales = (f64::from(float(frame, "alpha", 1.0)?), f64::from(float(frame, "beta", 1.0)?));
        let transposed = (int(frame, "transA", 0)? != 0, int(frame, "transB", 0)? != 0);
        numeric!(dtype, T => {
            let c = c.map(Typed::<T>::read);
            gemm((&Typed::<T>::read(a), &Typed::<T>::read(b), c.as_ref()), scales, transposed)
                .map_err(|e| error(frame, e))?
                .into_tensor(frame, dtype)
        }, Err(unsupported(frame, dtype)))
    });
    register_one(registry, "Einsum", |frame, inputs| {
        let dtype = same_type(frame, inputs.all())?;
        let equation = string(frame, "equation", "")?;
        numeric!(dtype, T => {
            let operands: Vec<Typed<T>> = inputs.all().iter().map(Typed::read).collect();
            einsum(equation, &operands).map_err(|e| error(frame, e))?.into_tensor(frame, dtype)
        }, Err(unsupported(frame, dtype)))
    });
    register_one(registry, "MatMulInteger", |frame, inputs| {
        let (a, b) = (inputs.required(0)?, inputs.required(1)?);
        let a = offset_operand(frame, a, inputs.optional(2), from_end(a, 1))?;
        let b = offset_operand(frame, b, inputs.optional(3), from_end(b, 0))?;
        matmul(&a, &b).map_err(|e| error(frame, e))?.into_tensor(frame, DType::I32)
    });
    register_one(registry, "QLinearMatMul", qlinear_matmul);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn determinants_pivot_and_find_singular_matrices() {
        assert_eq!(determinant(vec![1.0, 2.0, 3.0, 4.0], 2), -2.0);
        // A zero first pivot needs a row swap: 0 - 1 (8 - 12) + 2 (-3 - 0) = -2.
        let det = determinant(vec![0.0, 1.0, 2.0, 1.0, 0.0, 3.0, 4.0, -3.0, 8.0], 3);
        assert!((det + 2.0).abs() < 1e-12, "{det}");
        assert_eq!(determinant(vec![1.0, 2.0, 2.0, 4.0], 2), 0.0);
        assert_eq!(determinant(vec![7.0], 1), 7.0);
    }

    fn typed<T: Value>(dims: &[usize], values: &[T]) -> Typed<T> {
        Typed { dims: dims.to_vec(), values: values.to_vec() }
    }

    #[test]
    fn matmul_broadcasts_stacks_and_drops_vector_dimensions() {
        // [2, 1, 1, 2] x [3, 2, 1]: stacks [2, 1] and [3] broadcast to [2, 3].
        let a = typed(&[2, 1, 1, 2], &[1i32, 2, 3, 4]);
        let b = typed(&[3, 2, 1], &[1i32, 1, 0, 1, 2, 0]);
        let c = matmul(&a, &b).unwrap();
        assert_eq!(c.dims, [2, 3, 1, 1]);
        assert_eq!(c.values, [3, 2, 2, 7, 4, 6]);
        let v = typed(&[2], &[1.0f32, 2.0]);
        let m = typed(&[2, 2], &[1.0f32, 2.0, 3.0, 4.0]);
        assert_eq!(matmul(&v, &m).unwrap().values, [7.0, 10.0]);
        let vv = matmul(&v, &v).unwrap();
        assert!(vv.dims.is_empty());
        assert_eq!(vv.values, [5.0]);
        // u8 wraps as the type does.
        let big = typed(&[1, 1], &[200u8]);
        assert_eq!(matmul(&big, &typed(&[1, 1], &[2u8])).unwrap().values, [144]);
        assert!(matmul(&m, &typed(&[3], &[1.0f32, 1.0, 1.0])).is_err());
        // A stack times one matrix is one product of the stacked rows: [2, 2, 2] x [2, 1].
        let stack = typed(&[2, 2, 2], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
        let column = typed(&[2, 1], &[1.0f32, -1.0]);
        let product = matmul(&stack, &column).unwrap();
        assert_eq!(product.dims, [2, 2, 1]);
        assert_eq!(product.values, [-1.0, -1.0, -1.0, -1.0]);
        let ones = typed(&[2, 2], &[1.0f32, 10.0, 100.0, 1000.0]);
        assert_eq!(matmul(&stack, &ones).unwrap().values, [201.0, 2010.0, 403.0, 4030.0, 605.0, 6050.0, 807.0, 8070.0]);
    }

    #[test]
    fn gemm_transposes_scales_and_broadcasts_c() {
        let a = typed(&[2, 1], &[1.0f64, 2.0]); // transposed: [1, 2]
        let b = typed(&[2, 2], &[1.0f64, 2.0, 3.0, 4.0]);
        let c = typed(&[1], &[10.0f64]);
        let y = gemm((&a, &b, Some(&c)), (2.0, 0.5), (true, false)).unwrap();
        assert_eq!(y.dims, [1, 2]);
        assert_eq!(y.values, [2.0 * 7.0 + 5.0, 2.0 * 10.0 + 5.0]);
        let y = gemm((&b, &b, None), (1.0, 1.0), (false, true)).unwrap();
        assert_eq!(y.values, [5.0, 11.0, 11.0, 25.0]);
    }

    #[test]
    fn einsum_takes_diagonals_ellipses_and_implicit_outputs() {
        let m = typed(&[2, 2], &[1i64, 2, 3, 4]);
        assert_eq!(einsum("ii", std::slice::from_ref(&m)).unwrap().values, [5]);
        assert_eq!(einsum("ii->i", std::slice::from_ref(&m)).unwrap().values, [1, 4]);
        let t = einsum("ji", std::slice::from_ref(&m)).unwrap();
        assert_eq!(t.values, [1, 3, 2, 4]);
        let v = typed(&[2], &[1i64, 1]);
        let rows = einsum("ij,j->i", &[typed(&[2, 2], &[1i64, 2, 3, 4]), v]).unwrap();
        assert_eq!(rows.values, [3, 7]);
        // Batched matrices under an ellipsis, the second broadcast over the batch.
        let a = typed(&[2, 1, 2], &[1i64, 2, 3, 4]);
        let b = typed(&[2, 1], &[1i64, 10]);
        let y = einsum("...ij,jk->...ik", &[a, b]).unwrap();
        assert_eq!(y.dims, [2, 1, 1]);
        assert_eq!(y.values, [21, 43]);
        assert!(einsum("ij->k", std::slice::from_ref(&m)).is_err());
        assert!(einsum("ijk", std::slice::from_ref(&m)).is_err());
    }
}
