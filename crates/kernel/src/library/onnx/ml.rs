//! Operators of ONNX's classical machine-learning domain (`ai.onnx.ml`) on numbers, as
//! `onnx.ml.<Op>` kernels (the importer lowers a node of that domain to `onnx.ml.<Op>` when
//! `ml.<Op>` is among [`OPERATORS`]): `Binarizer`, `ArrayFeatureExtractor` and `TreeEnsemble`.
//! `_opset` is the model's `ai.onnx.ml` opset.

use super::dispatch::numeric;
use super::tensors::{
    dense_values, error, filled, integers, read_floats, register_one, take, unsupported, Typed, Value,
};
use crate::library::nn::{float, int, ints};
use crate::{KernelError, KernelRegistry, KernelSite};

pub(super) const OPERATORS: &[&str] = &["ml.ArrayFeatureExtractor", "ml.Binarizer", "ml.TreeEnsemble"];

/// A comparison of `TreeEnsemble`'s branch nodes: the feature against the node's split (or,
/// for `Member`, the node's set).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Mode {
    Leq,
    Lt,
    Gte,
    Gt,
    Eq,
    Neq,
    Member,
}

impl Mode {
    fn new(code: f64) -> Option<Mode> {
        Some(match code as i64 {
            0 => Mode::Leq,
            1 => Mode::Lt,
            2 => Mode::Gte,
            3 => Mode::Gt,
            4 => Mode::Eq,
            5 => Mode::Neq,
            6 => Mode::Member,
            _ => return None,
        })
    }
}

/// A branch node: where it goes when its test holds and when it does not, each a node or (when
/// the flag is set) a leaf.
struct Branch {
    mode: Mode,
    feature: usize,
    split: f64,
    /// The set of a `Member` node.
    members: Vec<f64>,
    missing_goes_true: bool,
    on_true: (usize, bool),
    on_false: (usize, bool),
}

impl Branch {
    fn holds(&self, x: f64) -> bool {
        if x.is_nan() {
            return self.missing_goes_true;
        }
        match self.mode {
            Mode::Leq => x <= self.split,
            Mode::Lt => x < self.split,
            Mode::Gte => x >= self.split,
            Mode::Gt => x > self.split,
            Mode::Eq => x == self.split,
            Mode::Neq => x != self.split,
            Mode::Member => self.members.contains(&x),
        }
    }
}

/// `TreeEnsemble`'s trees (opset 5 of `ai.onnx.ml`), read from its attributes.
struct Ensemble {
    nodes: Vec<Branch>,
    /// Each tree's root: a node, or a leaf where the tree is a single leaf.
    roots: Vec<(usize, bool)>,
    leaf_targets: Vec<usize>,
    leaf_weights: Vec<f64>,
    targets: usize,
    aggregate: i64,
    post_transform: i64,
}

impl Ensemble {
    fn new(site: &KernelSite<'_>) -> Result<Ensemble, KernelError> {
        let ints = |name: &str| ints(site, name, &[]);
        let tensor = |name: &str| dense_values(site, name);
        let required = |name: &str| tensor(name)?.ok_or_else(|| error(site, format_args!("it has no `{name}`")));
        let splits = required("nodes_splits")?;
        let modes = required("nodes_modes")?;
        let features = ints("nodes_featureids")?;
        let (true_ids, false_ids) = (ints("nodes_truenodeids")?, ints("nodes_falsenodeids")?);
        let (true_leafs, false_leafs) = (ints("nodes_trueleafs")?, ints("nodes_falseleafs")?);
        let missing = ints("nodes_missing_value_tracks_true")?;
        let count = splits.len();
        let lists = [modes.len(), features.len(), true_ids.len(), false_ids.len(), true_leafs.len(), false_leafs.len()];
        if lists.iter().any(|&n| n != count) || !(missing.is_empty() || missing.len() == count) {
            return Err(error(site, "the nodes_* attributes list different numbers of nodes"));
        }
        let leaf_targets = ints("leaf_targetids")?;
        let leaf_weights = required("leaf_weights")?;
        if leaf_targets.len() != leaf_weights.len() {
            return Err(error(site, "leaf_targetids and leaf_weights list different numbers of leaves"));
        }
        let targets = usize::try_from(int(site, "n_targets", 1)?).map_err(|_| error(site, "n_targets is negative"))?;
        let leaf_targets = leaf_targets
            .iter()
            .map(|&t| usize::try_from(t).ok().filter(|&t| t < targets))
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| {
                error(site, format_args!("leaf_targetids {leaf_targets:?} are outside {targets} targets"))
            })?;
        // The sets of the Member nodes, in node order, each ended by a NaN.
        let membership = tensor("membership_values")?.unwrap_or_default();
        let mut sets = membership.split(|v| v.is_nan());
        let index = |id: i64, leaf: bool| -> Result<(usize, bool), KernelError> {
            let bound = if leaf { leaf_weights.len() } else { count };
            usize::try_from(id)
                .ok()
                .filter(|&i| i < bound)
                .map(|i| (i, leaf))
                .ok_or_else(|| error(site, format_args!("node or leaf {id} is outside the ensemble")))
        };
        let mut nodes = Vec::with_capacity(count);
        for k in 0..count {
            let mode =
                Mode::new(modes[k]).ok_or_else(|| error(site, format_args!("node mode {} is unknown", modes[k])))?;
            let members = if mode == Mode::Member {
                sets.next().ok_or_else(|| error(site, "membership_values has no set for a Member node"))?.to_vec()
            } else {
                Vec::new()
            };
            nodes.push(Branch {
                mode,
                feature: usize::try_from(features[k]).map_err(|_| error(site, "a feature id is negative"))?,
                split: splits[k],
                members,
                missing_goes_true: missing.get(k).is_some_and(|&m| m != 0),
                on_true: index(true_ids[k], true_leafs[k] != 0)?,
                on_false: index(false_ids[k], false_leafs[k] != 0)?,
            });
        }
        let roots = ints("tree_roots")?
            .iter()
            .map(|&root| {
                let (node, _) = index(root, false)?;
                let n = &nodes[node];
                // A tree that is a leaf: a root whose both ways lead to one leaf (as the reference
                // reads it, the leaf of the root's index).
                Ok(if n.on_true.1 && n.on_false.1 && n.on_true.0 == n.on_false.0 {
                    index(root, true)?
                } else {
                    (node, false)
                })
            })
            .collect::<Result<Vec<_>, KernelError>>()?;
        Ok(Ensemble {
            nodes,
            roots,
            leaf_targets,
            leaf_weights,
            targets,
            aggregate: int(site, "aggregate_function", 1)?,
            post_transform: int(site, "post_transform", 0)?,
        })
    }

    /// The leaf a tree gives the features `x`, or an error for a feature `x` lacks or a cycle.
    fn leaf(&self, root: (usize, bool), x: &[f64]) -> Result<usize, String> {
        let mut at = root;
        for _ in 0..=self.nodes.len() {
            if at.1 {
                return Ok(at.0);
            }
            let node = &self.nodes[at.0];
            let value = *x.get(node.feature).ok_or_else(|| format!("feature {} is outside the input", node.feature))?;
            at = if node.holds(value) { node.on_true } else { node.on_false };
        }
        Err("a tree's nodes form a cycle".to_owned())
    }

    /// The targets' values for one row of features.
    fn predict(&self, x: &[f64]) -> Result<Vec<f64>, String> {
        let start = match self.aggregate {
            2 => f64::INFINITY,
            3 => f64::NEG_INFINITY,
            _ => 0.0,
        };
        let mut out = filled(self.targets, start)?;
        for &root in &self.roots {
            let leaf = self.leaf(root, x)?;
            let (target, weight) = (self.leaf_targets[leaf], self.leaf_weights[leaf]);
            let value = &mut out[target];
            *value = match self.aggregate {
                0 => *value + weight / self.roots.len() as f64,
                1 => *value + weight,
                2 => value.min(weight),
                3 => value.max(weight),
                other => return Err(format!("aggregate_function {other} is unknown")),
            };
        }
        match self.post_transform {
            0 => {}
            1 => {
                let max = out.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                out.iter_mut().for_each(|v| *v = (*v - max).exp());
                let sum: f64 = out.iter().sum();
                out.iter_mut().for_each(|v| *v /= sum);
            }
            2 => out.iter_mut().for_each(|v| *v = 1.0 / (1.0 + (-*v).exp())),
            other => return Err(format!("post_transform {other} is not supported")),
        }
        Ok(out)
    }
}

pub(super) fn register(registry: &mut KernelRegistry) {
    register_one(registry, "ml.Binarizer", |frame, inputs| {
        let x = inputs.required(0)?;
        let dtype = x.dtype();
        let threshold = f64::from(float(frame, "threshold", 0.0)?);
        numeric!(dtype, T => {
            let x = Typed::<T>::read(x);
            let values = x.values.iter().map(|v| T::from_f64(if v.to_f64() > threshold { 1.0 } else { 0.0 })).collect();
            Typed::<T> { dims: x.dims, values }.into_tensor(frame, dtype)
        }, Err(unsupported(frame, dtype)))
    });
    register_one(registry, "ml.ArrayFeatureExtractor", |frame, inputs| {
        let x = inputs.required(0)?;
        let indices = integers(frame, inputs.required(1)?)?;
        let mut dims = super::tensors::dims(x);
        let last = dims.pop().ok_or_else(|| error(frame, "a scalar has no features"))?;
        let indices = indices
            .iter()
            .map(|&i| usize::try_from(i).ok().filter(|&i| i < last))
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| error(frame, format_args!("indices {indices:?} are outside {last} features")))?;
        let rows: usize = dims.iter().product();
        // A vector's features come out as one row.
        let out = if dims.is_empty() { vec![1, indices.len()] } else { [&dims[..], &[indices.len()]].concat() };
        take(frame, x, &out, None, || (0..rows).flat_map(|r| indices.iter().map(move |&i| Some(r * last + i))))
    });
    register_one(registry, "ml.TreeEnsemble", |frame, inputs| {
        let x = inputs.required(0)?;
        let typed = read_floats(frame, x)?;
        let (rows, features) = match typed.dims[..] {
            [rows, features] => (rows, features),
            [features] => (1, features),
            _ => return Err(error(frame, format_args!("X of shape {:?} is not [rows, features]", typed.dims))),
        };
        let ensemble = Ensemble::new(frame)?;
        let mut values = Vec::new();
        for r in 0..rows {
            let row = &typed.values[r * features..][..features];
            values.extend(ensemble.predict(row).map_err(|e| error(frame, e))?);
        }
        Typed { dims: vec![rows, ensemble.targets], values }.into_floats(frame, x.dtype())
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn branch(mode: Mode, split: f64, members: Vec<f64>, on_true: (usize, bool), on_false: (usize, bool)) -> Branch {
        Branch { mode, feature: 0, split, members, missing_goes_true: false, on_true, on_false }
    }

    #[test]
    fn trees_walk_to_their_leaves_and_aggregate() {
        // One tree: x <= 1 goes to leaf 0 (target 0, weight 5); otherwise x in {3, 4} to leaf 1
        // (target 1, weight 7), else leaf 2 (target 1, weight -1).
        let ensemble = Ensemble {
            nodes: vec![
                branch(Mode::Leq, 1.0, vec![], (0, true), (1, false)),
                branch(Mode::Member, 0.0, vec![3.0, 4.0], (1, true), (2, true)),
            ],
            roots: vec![(0, false), (0, false)],
            leaf_targets: vec![0, 1, 1],
            leaf_weights: vec![5.0, 7.0, -1.0],
            targets: 2,
            aggregate: 1,
            post_transform: 0,
        };
        // Two copies of the tree, summed.
        assert_eq!(ensemble.predict(&[1.0]).unwrap(), [10.0, 0.0]);
        assert_eq!(ensemble.predict(&[4.0]).unwrap(), [0.0, 14.0]);
        assert_eq!(ensemble.predict(&[5.0]).unwrap(), [0.0, -2.0]);
        // A missing value takes the false way.
        assert_eq!(ensemble.predict(&[f64::NAN]).unwrap(), [0.0, -2.0]);
        assert!(ensemble.predict(&[]).is_err());
    }
}
