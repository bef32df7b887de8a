//! Losses of classifiers: `NegativeLogLikelihoodLoss` (of log-probabilities `[N, C, d...]` at
//! the classes `[N, d...]` of a target) and `SoftmaxCrossEntropyLoss` (the same of the scores'
//! log-softmax over the classes, which is its optional second output), with class weights,
//! an ignored class and the reductions `none`, `sum` and `mean` (by the weights taken).

use super::normalize::{set, softmax};
use super::tensors::{dims, error, has_attribute, integers, read_floats, string, Groups, Inputs, Typed};
use crate::dtype::DType;
use crate::library::nn::int;
use crate::{KernelFrame, KernelRegistry};

pub(super) const OPERATORS: &[&str] = &["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"];

/// What a loss takes besides its input: the target classes and their shape, the class
/// weights, the class it ignores and its reduction.
struct Target<'a> {
    dims: Vec<usize>,
    classes: Vec<i64>,
    weights: Option<Vec<f64>>,
    ignored: Option<i64>,
    reduction: &'a str,
}

/// The negative log-likelihood of `input` (log-probabilities `[N, C, d...]`) at the target's
/// classes, each weighted by its class's weight (0 for the ignored class), then reduced.
fn negative_log_likelihood(input: &Typed<f64>, target: &Target<'_>) -> Result<Typed<f64>, String> {
    let (classes, positions) = match &input.dims[..] {
        [samples, classes, rest @ ..] if target.dims.first() == Some(samples) && target.dims[1..] == *rest => {
            (*classes, rest.iter().product::<usize>())
        }
        _ => {
            return Err(format!("an input of {:?} with a target of {:?}", input.dims, target.dims));
        }
    };
    if let Some(weights) = target.weights.as_ref().filter(|w| w.len() != classes) {
        return Err(format!("{} weights for {classes} classes", weights.len()));
    }
    let mut losses = Vec::with_capacity(target.classes.len());
    let mut total_weight = 0.0;
    for (k, &class) in target.classes.iter().enumerate() {
        if Some(class) == target.ignored {
            losses.push(0.0);
            continue;
        }
        let index = usize::try_from(class)
            .ok()
            .filter(|&c| c < classes)
            .ok_or_else(|| format!("target class {class} is outside [0, {classes})"))?;
        let weight = target.weights.as_ref().map_or(1.0, |w| w[index]);
        let (sample, position) = (k / positions, k % positions);
        losses.push(-input.values[(sample * classes + index) * positions + position] * weight);
        total_weight += weight;
    }
    let sum = || losses.iter().sum::<f64>();
    Ok(match target.reduction {
        "none" => Typed { dims: target.dims.clone(), values: losses },
        "sum" => Typed { dims: vec![], values: vec![sum()] },
        "mean" => Typed { dims: vec![], values: vec![sum() / total_weight] },
        other => return Err(format!("reduction `{other}` is not none, sum or mean")),
    })
}

fn register_loss(registry: &mut KernelRegistry, name: &str, from_scores: bool) {
    registry.add_kernel(&format!("onnx.{name}"), move |frame: &mut KernelFrame<'_>| {
        let inputs = Inputs::new(frame)?;
        let dtype = inputs.required(0)?.dtype();
        let mut input = read_floats(frame, inputs.required(0)?)?;
        let labels = inputs.required(1)?;
        let target = Target {
            dims: dims(labels),
            classes: integers(frame, labels)?,
            weights: inputs.optional(2).map(|w| read_floats(frame, w)).transpose()?.map(|w| w.values),
            ignored: has_attribute(frame, "ignore_index").then(|| int(frame, "ignore_index", 0)).transpose()?,
            reduction: string(frame, "reduction", "mean")?,
        };
        if from_scores && input.dims.len() >= 2 {
            let classes: Vec<bool> = (0..input.dims.len()).map(|k| k == 1).collect();
            Groups::of_elements(frame, &input.dims, &classes)?
                .update(&mut input.values, |group| softmax(group, true, DType::F64));
        }
        let loss = negative_log_likelihood(&input, &target).map_err(|e| error(frame, e))?;
        if from_scores && frame.num_results() > 1 {
            set(frame, 1, input.dims, input.values, dtype)?;
        }
        set(frame, 0, loss.dims, loss.values, dtype)
    });
}

pub(super) fn register(registry: &mut KernelRegistry) {
    register_loss(registry, "NegativeLogLikelihoodLoss", false);
    register_loss(registry, "SoftmaxCrossEntropyLoss", true);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(classes: Vec<i64>, weights: Option<Vec<f64>>, ignored: Option<i64>, reduction: &str) -> Target<'_> {
        Target { dims: vec![3], classes, weights, ignored, reduction }
    }

    #[test]
    fn losses_weigh_ignore_and_reduce() {
        // Log-probabilities of 3 samples over 2 classes.
        let input = Typed { dims: vec![3, 2], values: vec![-1.0, -2.0, -3.0, -4.0, -5.0, -6.0] };
        let none = negative_log_likelihood(&input, &target(vec![0, 1, 0], None, None, "none")).unwrap();
        assert_eq!((none.dims, none.values), (vec![3], vec![1.0, 4.0, 5.0]));
        let mean = negative_log_likelihood(&input, &target(vec![0, 1, 0], None, Some(1), "mean")).unwrap();
        assert_eq!((mean.dims, mean.values), (vec![], vec![3.0]));
        let weighted = target(vec![0, 1, 1], Some(vec![1.0, 2.0]), None, "mean");
        assert_eq!(negative_log_likelihood(&input, &weighted).unwrap().values, [(1.0 + 8.0 + 12.0) / 5.0]);
        let sum = negative_log_likelihood(&input, &target(vec![1, 1, 1], Some(vec![1.0, 0.5]), None, "sum")).unwrap();
        assert_eq!(sum.values, [6.0]);
        assert!(negative_log_likelihood(&input, &target(vec![0, 2, 0], None, None, "sum")).is_err());
        assert!(negative_log_likelihood(&input, &target(vec![0, -1, 0], None, Some(-1), "sum")).is_ok());
    }
}
