//! An f32 exponential written without branches or calls, so that a loop over a slice of it
//! vectorizes (libm's `expf` is a call per element): for the logistic function and Softmax,
//! whose every element is an exponential. Cephes' method: `x = n ln 2 + r` with `|r| <= ln 2 / 2`,
//! `e^r` by its degree-7 minimax polynomial, `2^n` put in the exponent bits; `n` is rounded by
//! adding and taking away 1.5 * 2^23 (no rounding instruction before SSE4.1, and a call to libm's
//! `rintf` would stop the vectorizing). Within 2 ulp of `e^x` for `x` in [-87.3, 88.3] (where
//! `e^x` is a normal f32); below that range it gives about the smallest normal rather than a
//! subnormal or zero, above it about `e^88.3`, not infinity; NaN stays NaN.

const LOG2_E: f32 = std::f32::consts::LOG2_E;
/// ln 2 in two parts, so that `n * LN2_HIGH` is exact for the `n` that occur.
const LN2_HIGH: f32 = 0.693_359_4;
const LN2_LOW: f32 = -2.121_944_4e-4;
/// The polynomial's coefficients past `1 + r`, highest power first (Cephes' `expf`).
const P: [f32; 6] = [1.987_569_2e-4, 1.398_2e-3, 8.333_452e-3, 4.166_579_6e-2, 0.166_666_65, 0.5];
/// The arguments whose `n` is within -126..=127, the exponents of normal f32s.
const LOW: f32 = -87.33;
const HIGH: f32 = 88.37;
/// 1.5 * 2^23: added to a float below 2^22 in magnitude, it leaves the float rounded to an
/// integer (ties to even) in its low mantissa bits.
const ROUND: f32 = 12_582_912.0;

/// `a * b + c`: one fused instruction where `FMA` says the code is compiled for a CPU that has
/// one (see `fma!`); elsewhere a multiply and an add, since `mul_add` without the instruction
/// is a libm call per element, which stops a loop from vectorizing.
#[inline(always)]
pub(crate) fn mul_add<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// `e^x` (see the module's note on its range and accuracy). The polynomial is evaluated by
/// Estrin's scheme, pairs of terms at once: its chain of dependent steps, not the count of
/// operations, is what bounds a vectorized loop of exponentials.
#[inline(always)]
pub(crate) fn exp<const FMA: bool>(x: f32) -> f32 {
    let fma = mul_add::<FMA>;
    // A NaN stays NaN through the clamp and every step after it.
    let clamped = x.clamp(LOW, HIGH);
    let shifted = fma(clamped, LOG2_E, ROUND);
    let n = shifted - ROUND;
    let r = fma(n, -LN2_LOW, fma(n, -LN2_HIGH, clamped));
    let r2 = r * r;
    let (high, middle, low) = (fma(P[0], r, P[1]), fma(P[2], r, P[3]), fma(P[4], r, P[5]));
    let polynomial = fma(fma(high, r2, middle), r2, low);
    let er = fma(polynomial, r2, r) + 1.0;
    // 2^n: n's bits, moved into the exponent field and biased. `shifted`'s bits are ROUND's
    // plus n; the shift drops ROUND's exponent, and ROUND's mantissa bits are taken away.
    let exponent = (shifted.to_bits() << 23).wrapping_add(127u32.wrapping_sub(ROUND.to_bits()) << 23);
    er * f32::from_bits(exponent)
}

/// The logistic function `1 / (1 + e^-x)`.
#[inline(always)]
pub(crate) fn sigmoid<const FMA: bool>(x: f32) -> f32 {
    1.0 / (1.0 + exp::<FMA>(-x))
}

/// `x * sigmoid(x)` (SiLU, "swish"), with one division and no multiplication after it.
#[inline(always)]
pub(crate) fn swish<const FMA: bool>(x: f32) -> f32 {
    x / (1.0 + exp::<FMA>(-x))
}

/// `tanh(x)`: `1 - 2 / (e^2x + 1)`, and near zero (where that difference cancels) its Taylor
/// polynomial to `x^9`; both are computed and one picked, so that a loop stays branch-free.
/// Within about 1e-6 relative of `tanh` everywhere; ±1 beyond ±44.
#[inline(always)]
pub(crate) fn tanh<const FMA: bool>(x: f32) -> f32 {
    let far = 1.0 - 2.0 / (exp::<FMA>(2.0 * x) + 1.0);
    let x2 = x * x;
    let near = x * (1.0 + x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0 + x2 * (-17.0 / 315.0 + x2 * (62.0 / 2835.0)))));
    if x.abs() < 0.25 {
        near
    } else {
        far
    }
}

vectorized! {
    /// [`sigmoid`] of each of `values`, in place.
    pub(crate) fn sigmoid_all(values: &mut [f32]) {
        for value in values {
            *value = sigmoid::<{ fma!() }>(*value);
        }
    }
}

vectorized! {
    /// [`tanh`] of each of `values`, in place.
    pub(crate) fn tanh_all(values: &mut [f32]) {
        for value in values {
            *value = tanh::<{ fma!() }>(*value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each test holds both forms, fused and not, to the same bound.
    fn within_two_ulp_of_libm_over_the_normal_range<const FMA: bool>() {
        let exp = exp::<FMA>;
        let mut x = LOW;
        while x < HIGH {
            let (ours, libm) = (exp(x), x.exp());
            assert!(ours.to_bits().abs_diff(libm.to_bits()) <= 2, "e^{x}: {ours} against {libm} (FMA {FMA})");
            x += 0.0137;
        }
        for x in [0.0f32, 1.0, -1.0, 1e-8, -1e-8, 0.5, 10.0, -10.0, LOW, HIGH] {
            assert!(exp(x).to_bits().abs_diff(x.exp().to_bits()) <= 2, "e^{x} (FMA {FMA})");
        }
    }

    #[test]
    fn exp_within_two_ulp_of_libm_over_the_normal_range() {
        within_two_ulp_of_libm_over_the_normal_range::<false>();
        within_two_ulp_of_libm_over_the_normal_range::<true>();
    }

    fn out_of_range_arguments_saturate_and_nan_stays_nan<const FMA: bool>() {
        let (exp, sigmoid, swish) = (exp::<FMA>, sigmoid::<FMA>, swish::<FMA>);
        assert_eq!(exp(-1000.0), exp(LOW));
        assert!(exp(LOW) >= f32::MIN_POSITIVE && exp(LOW) < 1.1 * f32::MIN_POSITIVE);
        assert_eq!(exp(1000.0), exp(HIGH));
        assert!(exp(HIGH).is_finite() && exp(HIGH) > 2e38);
        assert!(exp(f32::NAN).is_nan() && sigmoid(f32::NAN).is_nan() && swish(f32::NAN).is_nan());
        assert!(sigmoid(-1000.0) < 1e-37);
        assert_eq!(sigmoid(1000.0), 1.0);
        assert_eq!((swish(1000.0), swish(0.0)), (1000.0, 0.0));
        assert!(swish(-1000.0).abs() < 1e-34);
        for x in [0.3f32, -0.3, 4.0, -4.0, -20.0] {
            let logistic = 1.0 / (1.0 + f64::from(-x).exp());
            assert!((f64::from(sigmoid(x)) - logistic).abs() <= 3e-7 * logistic, "sigmoid({x}) (FMA {FMA})");
            let silu = f64::from(x) * logistic;
            assert!((f64::from(swish(x)) - silu).abs() <= 3e-7 * silu.abs(), "swish({x}) (FMA {FMA})");
        }
    }

    #[test]
    fn out_of_range_arguments_saturate_nan_stays_nan_and_the_logistic_is_relative_exact() {
        out_of_range_arguments_saturate_and_nan_stays_nan::<false>();
        out_of_range_arguments_saturate_and_nan_stays_nan::<true>();
    }

    fn tanh_within_a_millionth_relative<const FMA: bool>() {
        let tanh = tanh::<FMA>;
        let mut x = -20.0f32;
        while x < 20.0 {
            let (ours, truth) = (f64::from(tanh(x)), f64::from(x).tanh());
            assert!((ours - truth).abs() <= 1e-6 * truth.abs() + 1e-30, "tanh({x}) = {ours}, not {truth} (FMA {FMA})");
            x += 0.000_37;
        }
        assert_eq!((tanh(100.0), tanh(-100.0), tanh(0.0)), (1.0, -1.0, 0.0));
        assert!(tanh(f32::NAN).is_nan());
    }

    #[test]
    fn tanh_fused_or_not_within_a_millionth_relative() {
        tanh_within_a_millionth_relative::<false>();
        tanh_within_a_millionth_relative::<true>();
    }
}
