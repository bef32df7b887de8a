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

/// `e^x` (see the module's note on its range and accuracy).
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    let clamped = x.clamp(LOW, HIGH);
    let shifted = clamped * LOG2_E + ROUND;
    let n = shifted - ROUND;
    let r = clamped - n * LN2_HIGH - n * LN2_LOW;
    let polynomial = P.iter().fold(0.0, |acc, &c| acc * r + c);
    let er = polynomial * r * r + r + 1.0;
    // n's bits, biased: 2^n for n in -126..=127.
    let exponent = shifted.to_bits().wrapping_sub(ROUND.to_bits()).wrapping_add(127);
    let value = er * f32::from_bits(exponent << 23);
    if x.is_nan() {
        x
    } else {
        value
    }
}

/// The logistic function `1 / (1 + e^-x)`.
#[inline(always)]
pub(crate) fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + exp(-x))
}

/// `tanh(x)`: `1 - 2 / (e^2x + 1)`, and near zero (where that difference cancels) its Taylor
/// polynomial to `x^9`; both are computed and one picked, so that a loop stays branch-free.
/// Within about 1e-6 relative of `tanh` everywhere; ±1 beyond ±44.
#[inline(always)]
pub(crate) fn tanh(x: f32) -> f32 {
    let far = 1.0 - 2.0 / (exp(2.0 * x) + 1.0);
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
            *value = sigmoid(*value);
        }
    }
}

vectorized! {
    /// [`tanh`] of each of `values`, in place.
    pub(crate) fn tanh_all(values: &mut [f32]) {
        for value in values {
            *value = tanh(*value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_two_ulp_of_libm_over_the_normal_range() {
        let mut worst = 0u32;
        let mut x = LOW;
        while x < HIGH {
            let (ours, libm) = (exp(x), x.exp());
            let ulps = ours.to_bits().abs_diff(libm.to_bits());
            assert!(ulps <= 2, "e^{x}: {ours} against {libm}");
            worst = worst.max(ulps);
            x += 0.0137;
        }
        assert!(worst <= 2);
        for x in [0.0f32, 1.0, -1.0, 1e-8, -1e-8, 0.5, 10.0, -10.0] {
            assert!(exp(x).to_bits().abs_diff(x.exp().to_bits()) <= 2, "e^{x}");
        }
    }

    #[test]
    fn out_of_range_arguments_saturate_and_nan_stays_nan() {
        assert_eq!(exp(-1000.0), exp(LOW));
        assert!(exp(LOW) >= f32::MIN_POSITIVE && exp(LOW) < 1.1 * f32::MIN_POSITIVE);
        assert_eq!(exp(1000.0), exp(HIGH));
        assert!(exp(HIGH).is_finite() && exp(HIGH) > 2e38);
        assert!(exp(f32::NAN).is_nan());
        assert!(sigmoid(-1000.0) < 1e-37);
        assert_eq!(sigmoid(1000.0), 1.0);
        assert!((sigmoid(0.3) - 1.0 / (1.0 + (-0.3f32).exp())).abs() <= 2.0 * f32::EPSILON);
    }

    #[test]
    fn tanh_within_a_millionth_relative() {
        let mut x = -20.0f32;
        while x < 20.0 {
            let (ours, truth) = (f64::from(tanh(x)), f64::from(x).tanh());
            assert!((ours - truth).abs() <= 1e-6 * truth.abs() + 1e-30, "tanh({x}) = {ours}, not {truth}");
            x += 0.000_37;
        }
        assert_eq!((tanh(100.0), tanh(-100.0), tanh(0.0)), (1.0, -1.0, 0.0));
        assert!(tanh(f32::NAN).is_nan());
    }
}
