//! What a layer does to its result while the result is still in cache: add a bias (per channel
//! of a convolution, per column of a matrix product) and a residual tensor, then apply an
//! activation. These are the Add, Relu, Clip, GELU ... nodes an importer folds into the
//! convolution or MatMul that feeds them, each of which would otherwise read and write the whole
//! tensor again. A layer reads its epilogue from the `activation` attribute (`"relu"`,
//! `"leaky_relu"` with `alpha`, `"clip"` with `min`/`max`, `"sigmoid"`, `"swish"`: `x *
//! sigmoid(x)`, `"gelu"`, `"gelu_tanh"`; absent, none).

use super::exp::{sigmoid, swish};
use super::float;
use super::gelu::{gelu, gelu_tanh};
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
    /// `x Φ(x)`, and its tanh approximation.
    Gelu,
    GeluTanh,
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
            "gelu" => Activation::Gelu,
            "gelu_tanh" => Activation::GeluTanh,
            other => {
                return Err(format!(
                    "{}: activation `{other}` is none of relu, leaky_relu, clip, sigmoid, swish, gelu and gelu_tanh",
                    site.kernel_name()
                )
                .into())
            }
        })
    }
}

/// A loop over part of a result that applies a function to each element last. Each activation
/// runs the loop with its own function, chosen once outside the loop, so that every loop
/// vectorizes. The loops are `for` loops: an iterator's `for_each` may stay a call, compiled
/// without the caller's wider vectors.
trait Pass {
    fn run(self, activation: impl Fn(f32) -> f32);
}

impl Activation {
    /// `FMA`: whether the caller is compiled with fused multiply-add (see `fma!`).
    #[inline(always)]
    fn run<const FMA: bool>(self, pass: impl Pass) {
        match self {
            Activation::Identity => pass.run(|x| x),
            Activation::Relu => pass.run(|x| x.max(0.0)),
            Activation::LeakyRelu(alpha) => pass.run(move |x| if x < 0.0 { alpha * x } else { x }),
            Activation::Clip(min, max) => pass.run(move |x| x.max(min).min(max)),
            Activation::Sigmoid => pass.run(sigmoid::<FMA>),
            Activation::Swish => pass.run(swish::<FMA>),
            Activation::Gelu => pass.run(gelu::<FMA>),
            Activation::GeluTanh => pass.run(gelu_tanh::<FMA>),
        }
    }
}

/// A channel's plane of an NCHW result: one bias for all of it.
struct Plane<'a> {
    values: &'a mut [f32],
    bias: f32,
    residual: Option<&'a [f32]>,
}

impl Pass for Plane<'_> {
    #[inline(always)]
    fn run(self, activation: impl Fn(f32) -> f32) {
        let bias = self.bias;
        match self.residual {
            Some(residual) => {
                for (value, &add) in self.values.iter_mut().zip(residual) {
                    *value = activation(*value + bias + add);
                }
            }
            None => {
                for value in self.values.iter_mut() {
                    *value = activation(*value + bias);
                }
            }
        }
    }
}

/// A row of a matrix product: one bias per column.
struct Row<'a> {
    values: &'a mut [f32],
    bias: Option<&'a [f32]>,
    residual: Option<&'a [f32]>,
}

impl Pass for Row<'_> {
    #[inline(always)]
    fn run(self, activation: impl Fn(f32) -> f32) {
        match (self.bias, self.residual) {
            (Some(bias), Some(residual)) => {
                for ((value, &b), &add) in self.values.iter_mut().zip(bias).zip(residual) {
                    *value = activation(*value + b + add);
                }
            }
            (Some(bias), None) => {
                for (value, &b) in self.values.iter_mut().zip(bias) {
                    *value = activation(*value + b);
                }
            }
            (None, Some(residual)) => {
                for (value, &add) in self.values.iter_mut().zip(residual) {
                    *value = activation(*value + add);
                }
            }
            (None, None) => {
                for value in self.values.iter_mut() {
                    *value = activation(*value);
                }
            }
        }
    }
}

vectorized! {
    /// `values` (one channel's run of a result) plus `bias`, plus `residual` (as long) when given,
    /// through `activation`.
    pub(crate) fn finish(values: &mut [f32], bias: f32, residual: Option<&[f32]>, activation: Activation) {
        activation.run::<{ fma!() }>(Plane { values, bias, residual });
    }
}

vectorized! {
    /// `values` (one row of a product) plus `bias` (one per column) and `residual` (as long),
    /// each when given, through `activation`.
    pub(crate) fn finish_row(values: &mut [f32], bias: Option<&[f32]>, residual: Option<&[f32]>, activation: Activation) {
        activation.run::<{ fma!() }>(Row { values, bias, residual });
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

    #[test]
    fn a_row_takes_one_bias_per_column() {
        let (bias, residual) = ([1.0, -1.0, 0.5], [0.5, 0.5, -3.0]);
        let mut values = [1.0, 2.0, 3.0];
        finish_row(&mut values, Some(&bias), Some(&residual), Activation::Relu);
        assert_eq!(values, [2.5, 1.5, 0.5]);
        let mut values = [1.0, 2.0, 3.0];
        finish_row(&mut values, None, Some(&residual), Activation::Identity);
        assert_eq!(values, [1.5, 2.5, 0.0]);
        let mut values = [0.0, 1.0, -1.0];
        finish_row(&mut values, Some(&bias), None, Activation::Gelu);
        let exact = [0.841_344_7, 0.0, -0.154_268_77];
        for (value, want) in values.iter().zip(exact) {
            assert!((value - want).abs() <= 1e-6, "{values:?}");
        }
        let mut values = [1.0];
        finish_row(&mut values, None, None, Activation::GeluTanh);
        assert!((values[0] - 0.841_192).abs() <= 1e-6, "{values:?}");
    }
}
