//! What a layer does to its result while the result is still in cache: add a per-channel bias
//! and a residual tensor, then clamp through an activation. These are the Add, Relu and Clip
//! nodes an importer folds into the convolution that feeds them, each of which would otherwise
//! read and write the whole tensor again. A layer reads its epilogue from the `activation`
//! attribute (`"relu"`, `"leaky_relu"` with `alpha`, `"clip"` with `min`/`max`, `"sigmoid"`,
//! `"swish"`: `x * sigmoid(x)`; absent, none).

use super::exp::sigmoid;
use multiversion::multiversion;

use super::float;
use crate::{KernelError, KernelSite};

/// The function applied last to each element.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Activation {
    Identity,
    Relu,
    /// `x` when positive, else `alpha * x`.
    LeakyRelu(f32),
    /// Clamped to `[min, max]`.
    Clip(f32, f32),
    Sigmoid,
    /// `x * sigmoid(x)` (SiLU).
    Swish,
}

impl Activation {
    /// The layer's `activation` attribute and its parameters.
    pub(crate) fn read(site: &KernelSite<'_>) -> Result<Activation, KernelError> {
        let Some(attribute) = site.find_attribute("activation")? else { return Ok(Activation::Identity) };
        Ok(match attribute.string()? {
            "relu" => Activation::Relu,
            "leaky_relu" => Activation::LeakyRelu(float(site, "alpha", 0.01)?),
            "clip" => Activation::Clip(float(site, "min", f32::NEG_INFINITY)?, float(site, "max", f32::INFINITY)?),
            "sigmoid" => Activation::Sigmoid,
            "swish" => Activation::Swish,
            other => {
                return Err(format!(
                    "{}: activation `{other}` is none of relu, leaky_relu, clip, sigmoid and swish",
                    site.kernel_name()
                )
                .into())
            }
        })
    }
}

/// `values` (one channel's run of a result) plus `bias`, plus `residual` (as long) when given,
/// through `activation`. One loop per case, so that each vectorizes, compiled for the CPU's
/// widest vectors (the library's baseline is SSE2's four lanes).
#[multiversion(targets = "simd")]
pub(crate) fn finish(values: &mut [f32], bias: f32, residual: Option<&[f32]>, activation: Activation) {
    match activation {
        Activation::Identity => apply(values, bias, residual, |x| x),
        Activation::Relu => apply(values, bias, residual, |x| x.max(0.0)),
        Activation::LeakyRelu(alpha) => apply(values, bias, residual, move |x| if x < 0.0 { alpha * x } else { x }),
        Activation::Clip(min, max) => apply(values, bias, residual, move |x| x.max(min).min(max)),
        Activation::Sigmoid => apply(values, bias, residual, sigmoid),
        Activation::Swish => apply(values, bias, residual, |x| x * sigmoid(x)),
    }
}

#[inline(always)]
fn apply(values: &mut [f32], bias: f32, residual: Option<&[f32]>, activation: impl Fn(f32) -> f32) {
    match residual {
        Some(residual) => {
            for (value, &add) in values.iter_mut().zip(residual) {
                *value = activation(*value + bias + add);
            }
        }
        None => values.iter_mut().for_each(|value| *value = activation(*value + bias)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bias_then_residual_then_activation() {
        let residual = [1.0, -4.0, 0.5, 2.0];
        let cases = [
            (Activation::Identity, [1.5, -4.5, 4.0, 1.5]),
            (Activation::Relu, [1.5, 0.0, 4.0, 1.5]),
            (Activation::LeakyRelu(0.5), [1.5, -2.25, 4.0, 1.5]),
            (Activation::Clip(0.0, 2.0), [1.5, 0.0, 2.0, 1.5]),
        ];
        for (activation, expected) in cases {
            let mut values = [0.0, -1.0, 3.0, -1.0];
            finish(&mut values, 0.5, Some(&residual), activation);
            assert_eq!(values, expected, "{activation:?}");
        }
        let logistic = |x: f32| 1.0 / (1.0 + (-x).exp());
        for (activation, expected) in [(Activation::Sigmoid, logistic(1.5)), (Activation::Swish, 1.5 * logistic(1.5))] {
            let mut values = [0.0];
            finish(&mut values, 0.5, Some(&[1.0]), activation);
            assert!((values[0] - expected).abs() <= 1e-6, "{activation:?}: {} against {expected}", values[0]);
        }
        let mut values = [-2.0, 2.0];
        finish(&mut values, 1.0, None, Activation::Relu);
        assert_eq!(values, [0.0, 3.0]);
    }
}
