//! A depthwise convolution's output rows summed in vector registers from a plane laid out by
//! phase ([`Phases`](super::window::Phases)), with the bias, the residual and the cheap
//! activations applied before each vector's one store into the result. Against summing into
//! scratch rows, copying them out and finishing them in a pass of their own, each output is
//! written once. Explicit AVX-512 and AVX2 code: the last vector of each row is stored through a
//! mask, which the compiler does not emit from scalar loops, and the loops over taps keep the
//! sums of several vectors in registers.

use std::mem::MaybeUninit;

use super::epilogue::Activation;

/// The vector code this CPU runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Isa {
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Isa {
    /// Every kind, widest first.
    const ALL: &[Isa] = &[
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512,
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2,
    ];

    /// Whether this CPU has the instructions.
    fn runs_here(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma"),
        }
    }

    /// The widest of these that this CPU has; `None` where none.
    pub(crate) fn detect() -> Option<Isa> {
        Isa::ALL.iter().copied().find(|isa| isa.runs_here())
    }
}

/// Every kind of vector code this CPU runs, for tests to check each.
#[cfg(test)]
pub(crate) fn every_isa() -> Vec<Isa> {
    Isa::ALL.iter().copied().filter(|isa| isa.runs_here()).collect()
}

/// Elements that a plane laid out for [`sum_rows`] holds past its last tap run: the most a
/// vector load reads past the end of a row's outputs.
pub(crate) const SLACK: usize = 16;

/// An output plane's operands: `values` laid out by phase, each output row `cols` apart in it;
/// each tap's run start and weight.
pub(crate) struct Taps<'a> {
    pub values: &'a [f32],
    pub cols: usize,
    pub taps: &'a [(usize, f32)],
    pub bias: f32,
    /// Added to the sums before the activation, `[oh, ow]`.
    pub residual: Option<&'a [f32]>,
    /// `[kh, kw]` where the taps are a window's, row by row, tap `(ky, kx)` starting at the
    /// first's plus `ky * cols + kx` (stride 1, no dilation): a block of rows of a 5x5 window
    /// then loads each input vector once for every tap of its column of the window.
    pub grid: Option<[usize; 2]>,
}

impl Taps<'_> {
    /// The `[kh, kw]` grid of the taps, if they make one with `kh` rows (see [`Taps::grid`]).
    pub(crate) fn grid_of(taps: &[(usize, f32)], cols: usize, [kh, kw]: [usize; 2]) -> Option<[usize; 2]> {
        let first = taps.first()?.0;
        let grid = taps.len() == kh * kw
            && taps.iter().enumerate().all(|(t, &(start, _))| start == first + (t / kw) * cols + t % kw);
        grid.then_some([kh, kw])
    }
}

/// Writes the `[oh, ow]` plane of `bias` plus each tap's weight times its run (output `(y, x)`
/// reads `values[start + y * cols + x]`), plus the residual, through `activation`, into `out`
/// (every slot), with `isa` (from [`Isa::detect`]). Returns whether `activation` is still to be
/// applied: the ones not computed in registers (sigmoid, swish, GELU) are left to the caller's
/// [`finish`](super::epilogue::finish) over the written plane.
pub(crate) fn sum_rows(
    isa: Isa,
    plane: &Taps<'_>,
    [oh, ow]: [usize; 2],
    activation: Activation,
    out: &mut [MaybeUninit<f32>],
) -> bool {
    // Every load: a run's start plus a row's offset plus a whole vector of columns.
    let reach = (oh.max(1) - 1) * plane.cols + ow.next_multiple_of(SLACK);
    assert!(
        out.len() == oh * ow
            && ow <= plane.cols
            && plane.taps.iter().all(|&(start, _)| start + reach <= plane.values.len())
            && plane.residual.is_none_or(|r| r.len() >= oh * ow),
        "a depthwise plane's operands do not match its {oh}x{ow} output"
    );
    let cheap = match activation {
        Activation::Identity | Activation::Relu | Activation::Clip(..) | Activation::LeakyRelu(_) => activation,
        _ => Activation::Identity,
    };
    match isa {
        // SAFETY: `isa` was detected on this CPU (the contract); every run, read a whole vector
        // past each row's last output, lies inside `values`, and `out` and the residual hold
        // the plane (checked above).
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { x86::avx512(plane, [oh, ow], cheap, out) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { x86::avx2(plane, [oh, ow], cheap, out) },
    }
    cheap != activation
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;
    use std::mem::MaybeUninit;

    use super::{Activation, Taps};

    /// The operations the kernel is written in, for one vector width.
    ///
    /// # Safety
    ///
    /// Every method needs the CPU to have the vector's instructions; loads and stores need the
    /// lanes they reach (all, or those the mask keeps) to be memory to read or write.
    trait Vector: Copy {
        const LANES: usize;
        /// Which lanes a load or store reaches.
        type Mask: Copy;
        /// The first `lanes` lanes.
        unsafe fn first(lanes: usize) -> Self::Mask;
        unsafe fn splat(value: f32) -> Self;
        unsafe fn load(p: *const f32) -> Self;
        /// Zero in the lanes the mask leaves out, which are not read.
        unsafe fn load_masked(p: *const f32, mask: Self::Mask) -> Self;
        unsafe fn mul_add(a: Self, b: Self, c: Self) -> Self;
        unsafe fn add(a: Self, b: Self) -> Self;
        unsafe fn max(a: Self, b: Self) -> Self;
        unsafe fn min(a: Self, b: Self) -> Self;
        /// `a`, its negative lanes times `alpha`.
        unsafe fn leaky(a: Self, alpha: Self) -> Self;
        unsafe fn store(p: *mut f32, value: Self);
        unsafe fn store_masked(p: *mut f32, value: Self, mask: Self::Mask);
    }

    #[derive(Clone, Copy)]
    struct V16(__m512);

    // SAFETY (every block of the impl): the trait's contract.
    impl Vector for V16 {
        const LANES: usize = 16;
        type Mask = __mmask16;
        #[inline(always)]
        unsafe fn first(lanes: usize) -> __mmask16 {
            ((1u32 << lanes) - 1) as __mmask16
        }
        #[inline(always)]
        unsafe fn splat(value: f32) -> Self {
            unsafe { V16(_mm512_set1_ps(value)) }
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            unsafe { V16(_mm512_loadu_ps(p)) }
        }
        #[inline(always)]
        unsafe fn load_masked(p: *const f32, mask: __mmask16) -> Self {
            unsafe { V16(_mm512_maskz_loadu_ps(mask, p)) }
        }
        #[inline(always)]
        unsafe fn mul_add(a: Self, b: Self, c: Self) -> Self {
            unsafe { V16(_mm512_fmadd_ps(a.0, b.0, c.0)) }
        }
        #[inline(always)]
        unsafe fn add(a: Self, b: Self) -> Self {
            unsafe { V16(_mm512_add_ps(a.0, b.0)) }
        }
        #[inline(always)]
        unsafe fn max(a: Self, b: Self) -> Self {
            unsafe { V16(_mm512_max_ps(a.0, b.0)) }
        }
        #[inline(always)]
        unsafe fn min(a: Self, b: Self) -> Self {
            unsafe { V16(_mm512_min_ps(a.0, b.0)) }
        }
        #[inline(always)]
        unsafe fn leaky(a: Self, alpha: Self) -> Self {
            unsafe {
                let negative = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(a.0, _mm512_setzero_ps());
                V16(_mm512_mask_mul_ps(a.0, negative, a.0, alpha.0))
            }
        }
        #[inline(always)]
        unsafe fn store(p: *mut f32, value: Self) {
            unsafe { _mm512_storeu_ps(p, value.0) }
        }
        #[inline(always)]
        unsafe fn store_masked(p: *mut f32, value: Self, mask: __mmask16) {
            unsafe { _mm512_mask_storeu_ps(p, mask, value.0) }
        }
    }

    #[derive(Clone, Copy)]
    struct V8(__m256);

    // SAFETY (every block of the impl): the trait's contract.
    impl Vector for V8 {
        const LANES: usize = 8;
        type Mask = __m256i;
        #[inline(always)]
        unsafe fn first(lanes: usize) -> __m256i {
            unsafe {
                let index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
                _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes as i32), index)
            }
        }
        #[inline(always)]
        unsafe fn splat(value: f32) -> Self {
            unsafe { V8(_mm256_set1_ps(value)) }
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            unsafe { V8(_mm256_loadu_ps(p)) }
        }
        #[inline(always)]
        unsafe fn load_masked(p: *const f32, mask: __m256i) -> Self {
            unsafe { V8(_mm256_maskload_ps(p, mask)) }
        }
        #[inline(always)]
        unsafe fn mul_add(a: Self, b: Self, c: Self) -> Self {
            unsafe { V8(_mm256_fmadd_ps(a.0, b.0, c.0)) }
        }
        #[inline(always)]
        unsafe fn add(a: Self, b: Self) -> Self {
            unsafe { V8(_mm256_add_ps(a.0, b.0)) }
        }
        #[inline(always)]
        unsafe fn max(a: Self, b: Self) -> Self {
            unsafe { V8(_mm256_max_ps(a.0, b.0)) }
        }
        #[inline(always)]
        unsafe fn min(a: Self, b: Self) -> Self {
            unsafe { V8(_mm256_min_ps(a.0, b.0)) }
        }
        #[inline(always)]
        unsafe fn leaky(a: Self, alpha: Self) -> Self {
            unsafe {
                let negative = _mm256_cmp_ps::<_CMP_LT_OQ>(a.0, _mm256_setzero_ps());
                V8(_mm256_blendv_ps(a.0, _mm256_mul_ps(a.0, alpha.0), negative))
            }
        }
        #[inline(always)]
        unsafe fn store(p: *mut f32, value: Self) {
            unsafe { _mm256_storeu_ps(p, value.0) }
        }
        #[inline(always)]
        unsafe fn store_masked(p: *mut f32, value: Self, mask: __m256i) {
            unsafe { _mm256_maskstore_ps(p, mask, value.0) }
        }
    }

    /// # Safety
    ///
    /// The CPU has AVX-512F; the operands are as `sum_rows` checks them.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn avx512(
        plane: &Taps<'_>,
        out: [usize; 2],
        activation: Activation,
        to: &mut [MaybeUninit<f32>],
    ) {
        // SAFETY: the contract.
        unsafe { rows::<V16>(plane, out, activation, to) }
    }

    /// # Safety
    ///
    /// The CPU has AVX2 and FMA; the operands are as `sum_rows` checks them.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn avx2(plane: &Taps<'_>, out: [usize; 2], activation: Activation, to: &mut [MaybeUninit<f32>]) {
        // SAFETY: the contract.
        unsafe { rows::<V8>(plane, out, activation, to) }
    }

    /// # Safety
    ///
    /// `V`'s instructions run on this CPU; the operands are as `sum_rows` checks them.
    #[inline(always)]
    unsafe fn rows<V: Vector>(
        plane: &Taps<'_>,
        [oh, ow]: [usize; 2],
        activation: Activation,
        out: &mut [MaybeUninit<f32>],
    ) {
        let vectors = ow.div_ceil(V::LANES);
        let mut v = 0;
        // Columns of vectors, up to four wide, each summed over every row; a column narrower
        // than four takes more rows at once, so that every block keeps about eight independent
        // sums in registers.
        while v < vectors {
            // SAFETY: the contract, for vectors `v..v + N` of every row.
            unsafe {
                v += match vectors - v {
                    1 => column::<V, 8, 1>(plane, [oh, ow], v, activation, out),
                    2 => column::<V, 4, 2>(plane, [oh, ow], v, activation, out),
                    3 => column::<V, 2, 3>(plane, [oh, ow], v, activation, out),
                    _ => column::<V, 2, 4>(plane, [oh, ow], v, activation, out),
                };
            }
        }
    }

    /// Vectors `first..first + N` of every output row, `R` rows at a time, then the rows left
    /// in one block (blocks of two rows, then one, each a short chain of dependent
    /// multiply-adds, took 0.4 of a 14-row plane's time for 6 of its rows). Returns `N`.
    ///
    /// # Safety
    ///
    /// As [`rows`]; the vectors are inside the rows (the last may reach past `ow`); `R` is at
    /// most 8.
    #[inline(always)]
    unsafe fn column<V: Vector, const R: usize, const N: usize>(
        plane: &Taps<'_>,
        [oh, ow]: [usize; 2],
        first: usize,
        activation: Activation,
        out: &mut [MaybeUninit<f32>],
    ) -> usize {
        let x0 = first * V::LANES;
        // SAFETY (the block): `V`'s instructions run here (the contract).
        unsafe {
            let tail = V::first((ow - x0).min(N * V::LANES) - (N - 1) * V::LANES);
            let block = Block::<V> { plane, ow, x0, tail, activation, out: out.as_mut_ptr().cast::<f32>() };
            let mut y = 0;
            while y + R <= oh {
                block.rows::<R, N>(y);
                y += R;
            }
            match oh - y {
                0 => {}
                1 => block.rows::<1, N>(y),
                2 => block.rows::<2, N>(y),
                3 => block.rows::<3, N>(y),
                4 => block.rows::<4, N>(y),
                5 => block.rows::<5, N>(y),
                6 => block.rows::<6, N>(y),
                7 => block.rows::<7, N>(y),
                _ => unreachable!("blocks are at most 8 rows"),
            }
        }
        N
    }

    /// What the blocks of rows of one column of vectors share: the plane, its width, the
    /// column's first output column, the mask of its last vector, the activation and the output.
    struct Block<'a, V: Vector> {
        plane: &'a Taps<'a>,
        ow: usize,
        x0: usize,
        tail: V::Mask,
        activation: Activation,
        out: *mut f32,
    }

    impl<V: Vector> Block<'_, V> {
        /// Rows `y..y + R` of the column, summed and stored.
        ///
        /// # Safety
        ///
        /// `V`'s instructions run here. Row `y`'s loads read `values[start + y * cols + x]` for
        /// `x` below `ow` rounded up to a vector, inside `values` (as `sum_rows` checks); its
        /// stores and the residual's loads reach columns below `ow` of row `y` only (a vector
        /// past `ow` through a mask), rows of the plane.
        #[inline(always)]
        unsafe fn rows<const R: usize, const N: usize>(&self, y: usize) {
            let (plane, ow, x0) = (self.plane, self.ow, self.x0);
            // SAFETY: the contract.
            unsafe {
                let at = plane.values.as_ptr().add(y * plane.cols + x0);
                let bias = V::splat(plane.bias);
                let sums = match plane.grid {
                    // 5x5 windows only: on 3x3 ones (MobileNetV2's) it measured 0.95-1.3x.
                    Some([5, kw]) => grid_sum::<V, R, N, 5>(at, plane.cols, (plane.taps, kw), bias),
                    _ => sum::<V, R, N>(at, plane.cols, plane.taps, bias),
                };
                for (r, sums) in sums.into_iter().enumerate() {
                    let residual = plane.residual.map(|residual| residual.as_ptr().add((y + r) * ow + x0));
                    let out = self.out.add((y + r) * ow + x0);
                    store(sums, out, residual, (ow - x0, self.tail), self.activation);
                }
            }
        }
    }

    /// Stores `sums`, vectors of a row from its output column `x0` on, plus the residual's
    /// from `residual`, through `activation`, at `out`: whole vectors where the row is `width`
    /// columns wide past `x0` still, through `tail` past that. (A function, not a closure: a
    /// closure would not be compiled with the caller's target features.)
    ///
    /// # Safety
    ///
    /// `V`'s instructions run here; `width` columns (or `N` vectors, if fewer) are writable at
    /// `out` and readable at `residual`; `tail` keeps the lanes of the last vector below
    /// `width`.
    #[inline(always)]
    unsafe fn store<V: Vector, const N: usize>(
        sums: [V; N],
        out: *mut f32,
        residual: Option<*const f32>,
        (width, tail): (usize, V::Mask),
        activation: Activation,
    ) {
        for (k, value) in sums.into_iter().enumerate() {
            let x = k * V::LANES;
            // SAFETY: the contract.
            unsafe {
                let whole = x + V::LANES <= width;
                let mut value = value;
                if let Some(residual) = residual {
                    let r = residual.add(x);
                    value = V::add(value, if whole { V::load(r) } else { V::load_masked(r, tail) });
                }
                let value = activate(value, activation);
                if whole {
                    V::store(out.add(x), value);
                } else {
                    V::store_masked(out.add(x), value, tail);
                }
            }
        }
    }

    /// `R` rows (`cols` apart) of `N` vectors of sums: `bias` plus each tap's weight times its
    /// run from `at`.
    ///
    /// # Safety
    ///
    /// `V`'s instructions run here; `N` vectors from `at` plus each tap's start plus each row's
    /// offset are readable.
    #[inline(always)]
    unsafe fn sum<V: Vector, const R: usize, const N: usize>(
        at: *const f32,
        cols: usize,
        taps: &[(usize, f32)],
        bias: V,
    ) -> [[V; N]; R] {
        let mut sums = [[bias; N]; R];
        for &(start, weight) in taps {
            // SAFETY: the contract.
            unsafe {
                let (run, weight) = (at.add(start), V::splat(weight));
                for (r, row) in sums.iter_mut().enumerate() {
                    for (k, sum) in row.iter_mut().enumerate() {
                        *sum = V::mul_add(weight, V::load(run.add(r * cols + k * V::LANES)), *sum);
                    }
                }
            }
        }
        sums
    }

    /// As [`sum`], for taps that make a grid of `KH` rows and `kw` columns (see
    /// [`Taps::grid`]): for each column of the window, each input vector that a row of the
    /// block reads is loaded once and multiplied by the weight of every tap of the column that
    /// reads it (`R + KH - 1` loads for `R * KH` multiply-adds; one load each measured bound by
    /// the loads).
    ///
    /// # Safety
    ///
    /// As [`sum`]: every vector loaded is one that [`sum`] would load for some tap and row.
    #[inline(always)]
    unsafe fn grid_sum<V: Vector, const R: usize, const N: usize, const KH: usize>(
        at: *const f32,
        cols: usize,
        (taps, kw): (&[(usize, f32)], usize),
        bias: V,
    ) -> [[V; N]; R] {
        let mut sums = [[bias; N]; R];
        let first = taps[0].0;
        for kx in 0..kw {
            // SAFETY: the contract; input row `i` of the block at column `kx` is tap
            // `(ky, kx)`'s run at row `i - ky` of the block, for a `ky` that makes it one.
            unsafe {
                // Loops, not closures: a closure is not compiled with the caller's features.
                let mut weights = [bias; KH];
                for (ky, weight) in weights.iter_mut().enumerate() {
                    *weight = V::splat(taps[ky * kw + kx].1);
                }
                let run = at.add(first + kx);
                for i in 0..R + KH - 1 {
                    let mut inputs = [bias; N];
                    for (k, x) in inputs.iter_mut().enumerate() {
                        *x = V::load(run.add(i * cols + k * V::LANES));
                    }
                    for (ky, &weight) in weights.iter().enumerate() {
                        if ky <= i && i - ky < R {
                            for (sum, &x) in sums[i - ky].iter_mut().zip(&inputs) {
                                *sum = V::mul_add(weight, x, *sum);
                            }
                        }
                    }
                }
            }
        }
        sums
    }

    /// `value` through `activation` (one computed in registers).
    ///
    /// # Safety
    ///
    /// `V`'s instructions run here.
    #[inline(always)]
    unsafe fn activate<V: Vector>(value: V, activation: Activation) -> V {
        // SAFETY: the contract.
        unsafe {
            match activation {
                Activation::Relu => V::max(value, V::splat(0.0)),
                Activation::Clip(min, max) => V::min(V::max(value, V::splat(min)), V::splat(max)),
                Activation::LeakyRelu(alpha) => V::leaky(value, V::splat(alpha)),
                _ => value,
            }
        }
    }
}
