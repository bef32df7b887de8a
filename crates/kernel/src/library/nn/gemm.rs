//! `nn.gemm.f32` (ONNX Gemm: `alpha * A' B' + beta * C`, `A'` and `B'` transposed when `transA`,
//! `transB` are non-zero, `C` optional and broadcast to the result) and `nn.matmul.f32` (ONNX
//! MatMul on matrices, or stacks of them sharing the right-hand matrix or one per stack entry, with
//! an optional fused bias, residual and activation).
//! The inner loop is the `gemm` crate's packed GEMM (AVX-512, AVX2 or NEON micro-kernels chosen at
//! run time); the result's rows are split over tasks.

use std::ops::Range;
use std::sync::Arc;

use super::epilogue::{finish_row, Activation};
use super::exp::mul_add;
use super::split::{compute, compute_fresh};
use super::{float, floats, int, operands, shape_error, Floats};
use crate::{KernelError, KernelFrame, KernelRegistry};

/// A matrix in a slice: its element `(i, j)` at `offset + i * rows + j * columns`.
#[derive(Clone, Copy)]
pub(crate) struct Matrix {
    pub offset: usize,
    pub rows: usize,
    pub columns: usize,
}

/// The element types the `gemm` crate's packed GEMM multiplies here: f32 and f64.
pub(crate) trait Packed: Copy + PartialEq + 'static {
    const ZERO: Self;
}
impl Packed for f32 {
    const ZERO: f32 = 0.0;
}
impl Packed for f64 {
    const ZERO: f64 = 0.0;
}

/// `c[i * ldc + j] = alpha * sum_p a(i, p) b(p, j) + beta * c[i * ldc + j]` for an `m x k` `a` and
/// a `k x n` `b`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn packed_gemm<T: Packed>(
    (m, k, n): (usize, usize, usize),
    alpha: T,
    a: (&[T], Matrix),
    b: (&[T], Matrix),
    beta: T,
    c: &mut [T],
    ldc: usize,
) {
    if m == 0 || n == 0 {
        return;
    }
    assert!((m - 1) * ldc + n <= c.len(), "gemm result out of bounds");
    // SAFETY: the elements written, `c[i * ldc + j]`, lie within `c` (checked above), which the
    // exclusive borrow keeps apart from `a` and `b`.
    unsafe { packed_gemm_into((m, k, n), alpha, a, b, beta, c.as_mut_ptr(), ldc) }
}

/// As [`packed_gemm`], writing the result at `c` (its rows `ldc` apart).
///
/// # Safety
///
/// `c.add(i * ldc + j)` for `i < m`, `j < n` must be elements that nothing else reads or writes
/// during the call, apart from `a` and `b`; initialised where `beta` is not zero (when it is, the
/// crate writes them without reading them: `read_dst` is false, and every path of its f32 and f64
/// products, edge tiles included, then only stores).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn packed_gemm_into<T: Packed>(
    (m, k, n): (usize, usize, usize),
    alpha: T,
    (a, am): (&[T], Matrix),
    (b, bm): (&[T], Matrix),
    beta: T,
    c: *mut T,
    ldc: usize,
) {
    if m == 0 || n == 0 {
        return;
    }
    let last = |x: Matrix, r: usize, s: usize| x.offset + (r.max(1) - 1) * x.rows + (s.max(1) - 1) * x.columns;
    // Callers derive the extents from checked shapes: a miss is a bug here, not bad input.
    assert!(k == 0 || (last(am, m, k) < a.len() && last(bm, k, n) < b.len()), "gemm operands out of bounds");
    // SAFETY: every element the product reads, `a(i, p)` for `i < m, p < k` and `b(p, j)`, lies at
    // or before the last one checked above, and every element it writes is the caller's to give
    // (the contract). (The crate's `alpha` scales what `c` held, read only when `read_dst`; its
    // `beta` scales the product.)
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c,
            1,
            ldc as isize,
            beta != T::ZERO,
            a.as_ptr().add(am.offset),
            am.columns as isize,
            am.rows as isize,
            b.as_ptr().add(bm.offset),
            bm.columns as isize,
            bm.rows as isize,
            beta,
            alpha,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

/// The width of the column panels that [`add_panels`] reads: four AVX-512 vectors, summed in
/// registers across every row.
pub(crate) const PANEL: usize = 64;

/// `m` (`rows x columns`, element `(i, j)` at `i * columns + j`) transposed and cut into panels
/// of [`PANEL`] of its rows (the last one narrower), each panel stored column after column:
/// what [`add_panels`] multiplies a vector by, streamed front to back.
pub(crate) fn transposed_panels<T: Copy>(m: &[T], rows: usize, columns: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(rows * columns);
    for first in (0..rows).step_by(PANEL) {
        let width = PANEL.min(rows - first);
        for p in 0..columns {
            out.extend((first..first + width).map(|i| m[i * columns + p]));
        }
    }
    out
}

vectorized! {
    /// `out += coefficients · m`, `m` (`coefficients.len() x out.len()`) stored by
    /// [`transposed_panels`]: a vector times a matrix, for products of a few rows (a recurrent
    /// layer's time step), where a packed GEMM's packing costs more than the product. Blocks of
    /// 64, 32 and 16 results stay in registers while their panel streams past in the order it is
    /// stored, which the prefetcher follows (rows of the plain matrix a panel apart measured
    /// 1.25x the time, the product being bound by the cache's bandwidth); the few columns left
    /// over are summed in place.
    pub(crate) fn add_panels(out: &mut [f32], coefficients: &[f32], panels: &[f32]) {
        for (values, panel) in out.chunks_mut(PANEL).zip(panels.chunks(PANEL * coefficients.len().max(1))) {
            let width = values.len();
            let mut done = 0;
            if width == PANEL {
                sum_columns::<PANEL, { fma!() }>(values, coefficients, panel, width);
                done = PANEL;
            }
            if width - done >= 32 {
                sum_columns::<32, { fma!() }>(&mut values[done..], coefficients, &panel[done..], width);
                done += 32;
            }
            if width - done >= 16 {
                sum_columns::<16, { fma!() }>(&mut values[done..], coefficients, &panel[done..], width);
                done += 16;
            }
            for (row, &c) in panel.chunks_exact(width).zip(coefficients) {
                for (value, &r) in values[done..].iter_mut().zip(&row[done..]) {
                    *value = mul_add::<{ fma!() }>(c, r, *value);
                }
            }
        }
    }
}

/// `values[..W] += Σ_p coefficients[p] · panel[p * width ..][..W]`, the sums held in registers.
#[inline(always)]
fn sum_columns<const W: usize, const FMA: bool>(values: &mut [f32], coefficients: &[f32], panel: &[f32], width: usize) {
    let mut sums = [0.0f32; W];
    sums.copy_from_slice(&values[..W]);
    for (p, &c) in coefficients.iter().enumerate() {
        let row = &panel[p * width..][..W];
        for k in 0..W {
            sums[k] = mul_add::<FMA>(c, row[k], sums[k]);
        }
    }
    values[..W].copy_from_slice(&sums);
}

/// `a` (`rows x columns` as stored), read transposed when `transposed`.
fn operand(columns: usize, transposed: bool) -> Matrix {
    if transposed {
        Matrix { offset: 0, rows: 1, columns }
    } else {
        Matrix { offset: 0, rows: columns, columns: 1 }
    }
}

fn gemm(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let (a, b) = (floats(frame, 0)?, floats(frame, 1)?);
    let c = if operands(frame) > 2 { Some(floats(frame, 2)?) } else { None };
    let (alpha, beta) = (float(frame, "alpha", 1.0)?, float(frame, "beta", 1.0)?);
    let (trans_a, trans_b) = (int(frame, "transA", 0)? != 0, int(frame, "transB", 0)? != 0);
    if a.dims.len() != 2 || b.dims.len() != 2 {
        return Err(shape_error(frame, format_args!("A {} and B {} must be matrices", a.shape(), b.shape())));
    }
    let (m, k) = if trans_a { (a.dims[1], a.dims[0]) } else { (a.dims[0], a.dims[1]) };
    let (kb, n) = if trans_b { (b.dims[1], b.dims[0]) } else { (b.dims[0], b.dims[1]) };
    if k != kb {
        return Err(shape_error(
            frame,
            format_args!("A {} (transA {trans_a}) and B {} (transB {trans_b}) do not multiply", a.shape(), b.shape()),
        ));
    }
    // C broadcasts to [m, n]: its row and column strides (0 where a dimension of 1 repeats).
    let c_strides = match &c {
        None => None,
        Some(c) => Some(bias_strides(&c.dims, m, n).ok_or_else(|| {
            shape_error(frame, format_args!("C {} does not broadcast to the result [{m}, {n}]", c.shape()))
        })?),
    };
    let (am, bm) = (operand(a.dims[1], trans_a), operand(b.dims[1], trans_b));
    // The block `rows x columns` of the result, in `out` (its rows `columns.len()` apart).
    let block = move |rows: Range<usize>, columns: Range<usize>, out: &mut [f32]| {
        let width = columns.len();
        let beta = match (&c, c_strides) {
            (Some(c), Some((rs, cs))) => {
                for (i, row) in rows.clone().zip(out.chunks_exact_mut(width)) {
                    for (j, value) in columns.clone().zip(row.iter_mut()) {
                        *value = beta * c.data[i * rs + j * cs];
                    }
                }
                1.0
            }
            _ => 0.0,
        };
        let am = Matrix { offset: rows.start * am.rows, ..am };
        let bm = Matrix { offset: columns.start * bm.columns, ..bm };
        packed_gemm((rows.len(), k, width), alpha, (&a.data, am), (&b.data, bm), beta, out, width);
    };
    if m == 1 {
        // One row (a batch of one through a fully connected layer) is dealt by columns, so that
        // every worker streams its share of B.
        return compute(frame, &[m, n], n, k, move |columns, out| block(0..1, columns, out));
    }
    compute(frame, &[m, n], m, k * n, move |rows, out| block(rows, 0..n, out))
}

/// The row and column strides of a `C` of `dims` broadcast to `[m, n]`, or `None`.
fn bias_strides(dims: &[usize], m: usize, n: usize) -> Option<(usize, usize)> {
    let (rows, columns) = match *dims {
        [] => (1, 1),
        [columns] => (1, columns),
        [rows, columns] => (rows, columns),
        _ => return None,
    };
    let stride = |have: usize, want: usize, step: usize| match have {
        _ if have == want => Some(step),
        1 => Some(0),
        _ => None,
    };
    Some((stride(rows, m, columns)?, stride(columns, n, 1)?))
}

/// ONNX MatMul on `[.., m, k] x [.., k, n]`: both of rank 2, or the left of higher rank with a
/// matrix on the right, or both with the same leading dimensions. A fused epilogue may follow:
/// a bias `C` of `[n]` (third operand), a residual `Z` of the result's shape (fourth; `C` is
/// then required) and an `activation` (see [`Activation`]).
fn matmul(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let (a, b) = (floats(frame, 0)?, floats(frame, 1)?);
    let mismatch =
        |a: &Floats, b: &Floats| shape_error(frame, format_args!("cannot multiply {} by {}", a.shape(), b.shape()));
    if a.dims.len() < 2 || b.dims.len() < 2 {
        return Err(mismatch(&a, &b));
    }
    let (ra, rb) = (a.dims.len(), b.dims.len());
    let (m, k, kb, n) = (a.dims[ra - 2], a.dims[ra - 1], b.dims[rb - 2], b.dims[rb - 1]);
    let shared = rb == 2;
    if k != kb || !(shared || a.dims[..ra - 2] == b.dims[..rb - 2]) {
        return Err(mismatch(&a, &b));
    }
    let mut dims = a.dims[..ra - 2].to_vec();
    dims.extend([m, n]);
    let count = operands(frame);
    let bias = if count > 2 { Some(floats(frame, 2)?) } else { None };
    let z = if count > 3 { Some(floats(frame, 3)?) } else { None };
    if let Some(bias) = bias.as_ref().filter(|c| c.dims != [n]) {
        return Err(shape_error(frame, format_args!("C {} is not one bias per column, [{n}]", bias.shape())));
    }
    if let Some(z) = z.as_ref().filter(|z| z.dims != dims) {
        return Err(shape_error(frame, format_args!("Z {} is not the result's {dims:?}", z.shape())));
    }
    let activation = Activation::read(frame)?;
    let fused = bias.is_some() || z.is_some() || activation != Activation::Identity;
    let stacks: usize = a.dims[..ra - 2].iter().product();
    let b = Arc::clone(&b);
    if stacks * m == 1 {
        // One row (a batch of one) is dealt by columns, so that every worker streams its share
        // of the right-hand matrix.
        return compute_fresh(frame, &dims, n, k, 1, move |columns, out| {
            let (am, bm) =
                (Matrix { offset: 0, rows: k, columns: 1 }, Matrix { offset: columns.start, rows: n, columns: 1 });
            out.multiply((1, k, columns.len()), (&a.data, am), (&b.data, bm));
            if fused {
                let bias = bias.as_ref().map(|c| &c.data[columns.clone()]);
                finish_row(out.last(columns.len()), bias, z.as_ref().map(|z| &z.data[columns]), activation);
            }
        });
    }
    // Units are result rows of every stack entry together; a task's rows may cross entries.
    // Each task packs the whole shared right-hand matrix for its rows, so a shared one is dealt
    // in one round, a task per worker: in eight tasks of 16 rows, an encoder's 256x1024
    // feed-forward matrix was packed eight times, and the layer took 1.45x as long.
    let workers = frame.host().parallelism_level().max(1);
    let min_rows = if shared { (stacks * m / workers).max(1) } else { 1 };
    compute_fresh(frame, &dims, stacks * m, k * n, min_rows, move |rows, out| {
        let mut row = rows.start;
        while row < rows.end {
            let (entry, first) = (row / m.max(1), row % m.max(1));
            let count = (m - first).min(rows.end - row);
            let am = Matrix { offset: (entry * m + first) * k, rows: k, columns: 1 };
            let bm = Matrix { offset: if shared { 0 } else { entry * k * n }, rows: n, columns: 1 };
            out.multiply((count, k, n), (&a.data, am), (&b.data, bm));
            row += count;
        }
        if fused {
            for (row, values) in rows.clone().zip(out.last(rows.len() * n).chunks_exact_mut(n.max(1))) {
                let residual = z.as_ref().map(|z| &z.data[row * n..(row + 1) * n]);
                finish_row(values, bias.as_ref().map(|c| &c.data[..]), residual, activation);
            }
        }
    })
}

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("nn.gemm.f32", gemm);
    registry.add_kernel("nn.matmul.f32", matmul);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A vector times a matrix in panels is the plain product, for matrices of one panel, of
    /// several, and with a narrower last one, added to what `out` held.
    #[test]
    fn a_vector_times_panels_is_the_plain_product() {
        for (inner, width) in [(1, 1), (3, 64), (96, 70), (5, 130), (17, 200), (96, 96), (7, 112), (4, 31)] {
            // `m`: `width x inner`, the matrix stored by rows that the panels hold transposed.
            let m: Vec<f32> = (0..width * inner).map(|v| ((v * 37) % 11) as f32 - 5.0).collect();
            let coefficients: Vec<f32> = (0..inner).map(|p| (p % 3) as f32 - 1.0).collect();
            let mut out: Vec<f32> = (0..width).map(|j| j as f32).collect();
            add_panels(&mut out, &coefficients, &transposed_panels(&m, width, inner));
            for (j, &value) in out.iter().enumerate() {
                let truth: f32 = j as f32 + (0..inner).map(|p| coefficients[p] * m[j * inner + p]).sum::<f32>();
                assert_eq!(value, truth, "inner {inner}, width {width}, column {j}");
            }
        }
    }

    /// The products with `beta = 0` that the kernels write into fresh (uninitialised) memory must
    /// not read it: NaNs left in the destination would survive any read (`0 * NaN` is NaN).
    #[test]
    fn a_product_without_beta_never_reads_the_destination() {
        for (m, k, n) in [(1, 1, 1), (3, 2, 5), (7, 3, 1), (1, 9, 17), (13, 17, 19), (33, 70, 47), (48, 600, 5)] {
            let a: Vec<f32> = (0..m * k).map(|v| (v % 7) as f32 - 3.0).collect();
            let b: Vec<f32> = (0..k * n).map(|v| (v % 5) as f32 * 0.5).collect();
            let mut c = vec![f32::NAN; m * n];
            let row_major = |columns| Matrix { offset: 0, rows: columns, columns: 1 };
            packed_gemm((m, k, n), 1.0, (&a, row_major(k)), (&b, row_major(n)), 0.0, &mut c, n);
            for i in 0..m {
                for j in 0..n {
                    let expected: f32 = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
                    assert_eq!(c[i * n + j], expected, "({i}, {j}) of {m}x{k}x{n}");
                }
            }
        }
    }
}
