//! GELU in f32 without calls, so that a loop over a slice of it vectorizes (libm's `erff` is a
//! call per element and was a fifth of a transformer encoder's time).
//!
//! The exact form, `x Φ(x) = x/2 (1 + erf(x/√2))`, is computed from `erfc(|u|)` with
//! `u = x/√2`: `1 + erf(u)` is `2 - erfc(u)` for `u >= 0` and `erfc(-u)` below, so the negative
//! side, where `1 + erf(u)` is tiny, loses nothing to cancellation. `erfc` is the Chebyshev
//! fit of Numerical Recipes' `erfcc` (fractional error below 1.2e-7 for every `z >= 0`). The
//! tanh form `x/2 (1 + tanh(y))` is `x sigmoid(2y)`, since `1 + tanh(y) = 2 sigmoid(2y)`.

use super::exp::{exp, mul_add, sigmoid};

/// The coefficients of `erfcc`'s polynomial in `t = 1 / (1 + z/2)`, highest power first.
const ERFC: [f32; 10] = [
    0.170_872_77,
    -0.822_152_23,
    1.488_515_9,
    -1.135_204,
    0.278_868_07,
    -0.186_288_06,
    0.096_784_18,
    0.374_091_96,
    1.000_023_7,
    -1.265_512_2,
];

/// `erfc(z)` for `z >= 0`.
#[inline(always)]
fn erfc<const FMA: bool>(z: f32) -> f32 {
    let t = 1.0 / (1.0 + 0.5 * z);
    let polynomial = ERFC[1..].iter().fold(ERFC[0], |acc, &c| mul_add::<FMA>(acc, t, c));
    t * exp::<FMA>(mul_add::<FMA>(-z, z, polynomial))
}

/// `x Φ(x)`.
#[inline(always)]
pub(crate) fn gelu<const FMA: bool>(x: f32) -> f32 {
    let u = x * std::f32::consts::FRAC_1_SQRT_2;
    let tail = erfc::<FMA>(u.abs());
    let one_plus_erf = if u >= 0.0 { 2.0 - tail } else { tail };
    0.5 * x * one_plus_erf
}

/// GELU's tanh approximation, `x/2 (1 + tanh(√(2/π) (x + 0.044715 x³)))`.
#[inline(always)]
pub(crate) fn gelu_tanh<const FMA: bool>(x: f32) -> f32 {
    // √(2/π), doubled: the argument of the sigmoid is 2y.
    const TWO_SQRT_2_OVER_PI: f32 = 1.595_769;
    x * sigmoid::<FMA>(TWO_SQRT_2_OVER_PI * mul_add::<FMA>(0.044_715 * x, x * x, x))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `x Φ(x)` in f64 from libm's `erf`/`erfc`, the truth the f32 forms are held to.
    fn exact(x: f64) -> f64 {
        let u = x / std::f64::consts::SQRT_2;
        0.5 * x * if u >= 0.0 { 1.0 + libm::erf(u) } else { libm::erfc(-u) }
    }

    /// The relative error allowed where the result is `e^-a` times a modest factor: a few ulp,
    /// plus the f32 rounding of the exponent `a` itself, which grows with `a`; below about
    /// 1e-36 the exponential saturates at f32's smallest normal (see `exp`).
    fn tolerance(truth: f64, exponent: f64) -> f64 {
        (6e-7 + 3e-7 * exponent.abs()) * truth.abs() + 1e-36
    }

    fn exact_form_within_a_few_ulp_relative<const FMA: bool>() {
        let gelu = gelu::<FMA>;
        let mut x = -12.0f32;
        while x < 12.0 {
            let (ours, truth) = (f64::from(gelu(x)), exact(f64::from(x)));
            let tolerance = tolerance(truth, f64::from(x * x) / 2.0);
            assert!((ours - truth).abs() <= tolerance, "gelu({x}) = {ours}, not {truth} (FMA {FMA})");
            x += 0.001_37;
        }
        assert_eq!(gelu(0.0), 0.0);
        assert_eq!(gelu(100.0), 100.0);
        assert!(gelu(-100.0).abs() < 1e-30);
        assert!(gelu(f32::NAN).is_nan());
    }

    #[test]
    fn exact_form_fused_or_not_within_a_few_ulp_relative() {
        exact_form_within_a_few_ulp_relative::<false>();
        exact_form_within_a_few_ulp_relative::<true>();
    }

    fn tanh_form_matches_its_definition<const FMA: bool>() {
        let mut x = -12.0f32;
        while x < 12.0 {
            let xd = f64::from(x);
            // x/2 (1 + tanh y) = x / (1 + e^-2y), which keeps the tiny negative side in f64.
            let y = (2.0 / std::f64::consts::PI).sqrt() * (xd + 0.044_715 * xd.powi(3));
            let truth = xd / (1.0 + (-2.0 * y).exp());
            let ours = f64::from(gelu_tanh::<FMA>(x));
            assert!(
                (ours - truth).abs() <= tolerance(truth, 2.0 * y),
                "gelu_tanh({x}) = {ours}, not {truth} (FMA {FMA})"
            );
            x += 0.001_37;
        }
    }

    #[test]
    fn tanh_form_fused_or_not_matches_its_definition() {
        tanh_form_matches_its_definition::<false>();
        tanh_form_matches_its_definition::<true>();
    }
}
