//! A convolution or matrix product fused with the nodes after it that only rescale, shift, add
//! to or activate its result, as onnxruntime's graph optimizer fuses them. Into a convolution,
//! BatchNormalization at inference and Mul, Div, Add or Sub by a per-channel constant fold into
//! the filters and bias at import; into a MatMul, an Add of a per-column constant becomes its
//! bias (the Linear layers of transformers). Then an Add (or two-input Sum) of a tensor of the
//! result's shape, and Relu, LeakyRelu, Clip, Sigmoid, GELU — or the Swish that a Sigmoid and a
//! Mul of the result by it make — become the kernel's epilogue (`nn.conv2d.f32`'s and
//! `nn.matmul.f32`'s residual operand and `activation`). A BatchNormalization at inference that
//! follows no convolution (a DenseNet's pre-activation) starts a per-channel affine layer
//! (`nn.channel_affine.f32`) into which the same nodes fuse.
//!
//! A 2-D Conv or a MatMul is held as a [`PendingLayer`] until something reads it that does not
//! fuse (or it is a graph output), and only then written as its kernel. A node fuses only as the
//! layer's one reader — counted over the whole graph, subgraphs and outputs included — so no
//! other reader sees the changed value. Each fusion step holds only in its place in the chain:
//! scales, shifts and biases before the residual and activation, the residual before the
//! activation, one activation last.

use super::constant::{Constant, Elem};
use super::lower::{Lowering, Val};
use super::node::Node;
use super::ImportError;
use rtx_mlir::ir::{AttrId, ValueId};

/// A filter or bias operand of a pending layer.
pub enum Operand {
    /// A constant: `name` while it is the model's own (made a tensor once, shared with its other
    /// readers), `None` once folding changed it.
    Const {
        name: Option<String>,
        value: Constant,
    },
    Tensor(ValueId),
}

/// The kernels a pending layer becomes.
#[derive(Clone, Copy, PartialEq)]
pub enum Layer {
    /// `nn.conv2d.f32`: X, filters, bias of one value per output channel.
    Conv,
    /// `nn.matmul.f32`: A, B, bias of one value per column.
    MatMul,
    /// `nn.channel_affine.f32`: X, a scale and a shift per channel — a BatchNormalization at
    /// inference whose input is no pending convolution (a DenseNet's pre-activation).
    Affine,
}

/// A convolution or matrix product not yet written, and what has been fused into it.
pub struct PendingLayer {
    pub layer: Layer,
    /// The node's name: where the kernel's errors point.
    pub node: String,
    pub x: ValueId,
    pub weights: Operand,
    pub bias: Option<Operand>,
    /// A convolution's window and group attributes.
    pub attrs: Vec<(&'static str, AttrId)>,
    pub shape: Option<Vec<i64>>,
    pub residual: Option<ValueId>,
    pub activation: Option<Activation>,
}

/// The function a fused activation node applies last.
#[derive(Clone, Copy)]
pub enum Activation {
    Relu,
    LeakyRelu(f32),
    Clip(Option<f32>, Option<f32>),
    Sigmoid,
    /// `x * sigmoid(x)`.
    Swish,
    /// GELU, exact or (`tanh`) its tanh approximation.
    Gelu {
        tanh: bool,
    },
}

/// What one fused node does to the pending layer.
enum Step {
    /// Multiplies output channel `o` by `scale[o]` and then adds `shift[o]`.
    Affine {
        scale: Option<Vec<f32>>,
        shift: Option<Vec<f32>>,
    },
    /// A matrix product's bias: one value per column.
    Bias(Operand),
    Residual(String),
    Activation(Activation),
}

impl PendingLayer {
    /// A convolution's output channels, when its filters are constant (what folding needs).
    fn channels(&self) -> Option<usize> {
        match &self.weights {
            Operand::Const { value, .. } => value.dims.first().and_then(|&m| usize::try_from(m).ok()),
            Operand::Tensor(_) => None,
        }
    }

    /// Whether a scale or shift still folds: a convolution or affine layer that nothing after it
    /// has been fused into, whose filters (scales) and bias are constants.
    fn folds(&self) -> bool {
        matches!(self.layer, Layer::Conv | Layer::Affine)
            && self.residual.is_none()
            && self.activation.is_none()
            && matches!(self.weights, Operand::Const { .. })
            && matches!(self.bias, None | Some(Operand::Const { .. }))
    }

    /// Folds `scale` and then `shift` (each one value per output channel) into the filters and bias.
    fn fold(&mut self, scale: Option<&[f32]>, shift: Option<&[f32]>) -> Result<(), String> {
        let m = self.channels().ok_or("the filters are not constant")?;
        if let (Some(scale), Operand::Const { name, value }) = (scale, &mut self.weights) {
            let mut weights = value.to_f32s()?;
            let per_channel = (weights.len() / m.max(1)).max(1);
            for (filter, &s) in weights.chunks_mut(per_channel).zip(scale) {
                filter.iter_mut().for_each(|w| *w *= s);
            }
            *value = Constant::from_f32s(value.dims.clone(), &weights)?;
            *name = None;
        }
        let mut bias = match &self.bias {
            Some(Operand::Const { value, .. }) => value.to_f32s()?,
            Some(Operand::Tensor(_)) => return Err("the bias is not constant".to_owned()),
            None if shift.is_none() => return Ok(()),
            None => vec![0.0; m],
        };
        if let Some(scale) = scale {
            bias.iter_mut().zip(scale).for_each(|(b, s)| *b *= s);
        }
        if let Some(shift) = shift {
            bias.iter_mut().zip(shift).for_each(|(b, t)| *b += t);
        }
        self.bias = Some(Operand::Const { name: None, value: Constant::from_f32s(vec![m as i64], &bias)? });
        Ok(())
    }
}

impl Lowering {
    /// Fuses `node` into the pending layer it reads, if it can: then the node's output names
    /// the fused layer, still pending.
    pub fn fuse(&mut self, node: &Node<'_>) -> Result<bool, ImportError> {
        let inputs: Vec<&str> = node.inputs().collect();
        if self.swish(node, &inputs)? {
            return Ok(true);
        }
        let Some(k) =
            inputs.iter().position(|name| self.pending.contains_key(*name) && self.uses.get(*name) == Some(&1))
        else {
            return Ok(false);
        };
        // Outputs past the first (BatchNormalization's statistics) must be unread.
        if node.proto.output.iter().skip(1).any(|name| !name.is_empty() && self.uses.contains_key(name)) {
            return Ok(false);
        }
        let Some(step) = self.step(node, &inputs, k)? else { return Ok(false) };
        let source = inputs[k];
        let mut conv = self.pending.remove(source).expect("found above");
        match step {
            Step::Affine { scale, shift } => {
                conv.fold(scale.as_deref(), shift.as_deref()).map_err(|e| node.error(e))?
            }
            Step::Bias(bias) => conv.bias = Some(bias),
            Step::Residual(other) => {
                let (id, _) = self.tensor(&other, node)?;
                conv.residual = Some(id);
            }
            Step::Activation(activation) => conv.activation = Some(activation),
        }
        self.pending.insert(node.output()?.to_owned(), conv);
        Ok(true)
    }

    /// The two halves of a Swish on a pending layer that nothing else reads: a Sigmoid of it,
    /// held back (in `sigmoids`) until its one reader is known, and the Mul of the layer by that
    /// Sigmoid, which makes the Swish the layer's activation.
    fn swish(&mut self, node: &Node<'_>, inputs: &[&str]) -> Result<bool, ImportError> {
        let open = |lowering: &Lowering, name: &str| {
            lowering.pending.get(name).is_some_and(|conv| conv.activation.is_none())
                && lowering.uses.get(name) == Some(&2)
        };
        match (node.op, inputs) {
            ("Sigmoid", [x]) if open(self, x) && self.uses.get(node.output()?) == Some(&1) => {
                self.sigmoids.insert(node.output()?.to_owned(), (*x).to_owned());
                Ok(true)
            }
            ("Mul", [a, b]) => {
                let halves = [(*a, *b), (*b, *a)].into_iter().find(|(x, sigmoid)| {
                    self.sigmoids.get(*sigmoid).is_some_and(|of| of == x) && self.pending.contains_key(*x)
                });
                let Some((x, sigmoid)) = halves else { return Ok(false) };
                self.sigmoids.remove(sigmoid);
                let mut conv = self.pending.remove(x).expect("found above");
                conv.activation = Some(Activation::Swish);
                self.pending.insert(node.output()?.to_owned(), conv);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// What `node`, reading the pending layer as input `k`, would fuse as; `None` when it does
    /// not fuse.
    fn step(&mut self, node: &Node<'_>, inputs: &[&str], k: usize) -> Result<Option<Step>, ImportError> {
        let conv = &self.pending[inputs[k]];
        let other = inputs.get(1 - k.min(1)).copied().filter(|_| inputs.len() == 2);
        let affine = |scale: Option<Vec<f32>>, shift: Option<Vec<f32>>| Some(Step::Affine { scale, shift });
        Ok(match node.op {
            "BatchNormalization" if k == 0 && conv.folds() && node.int("training_mode", 0) == 0 => {
                let m = conv.channels().unwrap_or(0);
                self.batch_norm(node, inputs, m).and_then(|(factor, shift)| affine(Some(factor), Some(shift)))
            }
            "Mul" | "Add" | "Sub" | "Div" if conv.folds() && (k == 0 || matches!(node.op, "Mul" | "Add")) => {
                let m = conv.channels().unwrap_or(0);
                match other.and_then(|name| self.channel_constant(name, m, false)) {
                    Some(c) if node.op == "Mul" => affine(Some(c), None),
                    Some(c) if node.op == "Add" => affine(None, Some(c)),
                    Some(c) if node.op == "Sub" => affine(None, Some(c.iter().map(|v| -v).collect())),
                    Some(c) if c.iter().all(|&v| v != 0.0) => affine(Some(c.iter().map(|v| 1.0 / v).collect()), None),
                    _ if matches!(node.op, "Add") => self.residual(inputs, k),
                    _ => None,
                }
            }
            "Add"
                if conv.layer == Layer::MatMul
                    && conv.bias.is_none()
                    && conv.residual.is_none()
                    && conv.activation.is_none() =>
            {
                match other.and_then(|name| self.column_constant(name, conv.shape.as_deref())) {
                    Some(bias) => Some(Step::Bias(bias)),
                    None => self.residual(inputs, k),
                }
            }
            "Add" | "Sum" => self.residual(inputs, k),
            "Relu" if conv.activation.is_none() => Some(Step::Activation(Activation::Relu)),
            "Sigmoid" if conv.activation.is_none() => Some(Step::Activation(Activation::Sigmoid)),
            "Gelu" if conv.activation.is_none() => match node.string("approximate").as_deref() {
                None | Some("none") => Some(Step::Activation(Activation::Gelu { tanh: false })),
                Some("tanh") => Some(Step::Activation(Activation::Gelu { tanh: true })),
                Some(_) => None,
            },
            "LeakyRelu" if conv.activation.is_none() => {
                Some(Step::Activation(Activation::LeakyRelu(node.float("alpha", 0.01))))
            }
            "Clip"
                if conv.activation.is_none()
                    && (1..3).all(|i| node.input(i).is_none_or(|name| self.is_const(name))) =>
            {
                let (min, max) = self.clip_bounds(node)?;
                Some(Step::Activation(Activation::Clip(min, max)))
            }
            _ => None,
        })
    }

    /// A BatchNormalization at inference's scale and shift per channel (of `m`), when its
    /// parameters are constants of one value per channel.
    fn batch_norm(&self, node: &Node<'_>, inputs: &[&str], m: usize) -> Option<(Vec<f32>, Vec<f32>)> {
        let parameters: Option<Vec<Vec<f32>>> =
            inputs.get(1..5)?.iter().map(|name| self.channel_constant(name, m, true)).collect();
        let [scale, bias, mean, var] = parameters.as_deref()? else { return None };
        let epsilon = f64::from(node.float("epsilon", 1e-5));
        let factor: Vec<f32> =
            scale.iter().zip(var).map(|(&s, &v)| (f64::from(s) / (f64::from(v) + epsilon).sqrt()) as f32).collect();
        let shift = bias.iter().zip(mean).zip(&factor).map(|((&b, &mean), &f)| b - mean * f).collect();
        Some((factor, shift))
    }

    /// Holds a BatchNormalization at inference of an f32 NCHW tensor of known shape, with
    /// constant parameters, as a pending affine layer, into which the per-channel Mul and Add,
    /// the residual and the activation after it fuse; `false` when it is not one.
    pub fn start_affine(&mut self, node: &Node<'_>) -> Result<bool, ImportError> {
        let inputs: Vec<&str> = node.inputs().collect();
        let Some(&x) = inputs.first() else { return Ok(false) };
        self.settle(x);
        let shape = self.shape_of(x).filter(|shape| shape.len() == 4 && shape.iter().all(|&d| d > 0));
        let Some(shape) = shape.filter(|_| self.elem_of(x) == Some(Elem::F32) && !self.is_const(x)) else {
            return Ok(false);
        };
        let c = shape[1];
        let Some((factor, shift)) = self.batch_norm(node, &inputs, c as usize) else { return Ok(false) };
        let (x, _) = self.tensor(x, node)?;
        let [scale, shift] = [factor, shift].map(|values| Constant::from_f32s(vec![c], &values));
        let layer = PendingLayer {
            layer: Layer::Affine,
            node: node.name.clone(),
            x,
            weights: Operand::Const { name: None, value: scale.map_err(|e| node.error(e))? },
            bias: Some(Operand::Const { name: None, value: shift.map_err(|e| node.error(e))? }),
            attrs: vec![],
            shape: Some(shape),
            residual: None,
            activation: None,
        };
        self.pending.insert(node.output()?.to_owned(), layer);
        Ok(true)
    }

    /// The residual step of an Add or Sum of the pending layer (input `k`) and one other f32
    /// tensor of the same, known shape.
    fn residual(&mut self, inputs: &[&str], k: usize) -> Option<Step> {
        let conv = &self.pending[inputs[k]];
        if inputs.len() != 2 || conv.residual.is_some() || conv.activation.is_some() {
            return None;
        }
        let shape = conv.shape.clone()?;
        let other = inputs[1 - k];
        if other == inputs[k] {
            return None;
        }
        // The other operand may itself be a pending layer (the shortcut of a residual block).
        self.settle(other);
        let fits = self.elem_of(other) == Some(Elem::F32) && self.shape_of(other).as_ref() == Some(&shape);
        fits.then(|| Step::Residual(other.to_owned()))
    }

    /// The constant `name` as one f32 per output channel of an `[N, m, H, W]` result: exactly
    /// `[m]` when `exact` (BatchNormalization's parameters), else any shape that broadcasts to
    /// `[1, m, 1, 1]` without widening the result (one value repeats).
    fn channel_constant(&self, name: &str, m: usize, exact: bool) -> Option<Vec<f32>> {
        let Some(Val::Const(constant)) = self.values.get(name) else { return None };
        if constant.elem != Elem::F32 || m == 0 {
            return None;
        }
        let values = constant.to_f32s().ok()?;
        let dims = &constant.dims;
        if exact {
            return (dims[..] == [m as i64]).then_some(values);
        }
        // Aligned at the right against [N, m, H, W]: 1 everywhere but the channel axis.
        let rank = dims.len();
        let channel_ok = rank < 3 || dims[rank - 3] == 1 || dims[rank - 3] == m as i64;
        let others_ok = dims.iter().enumerate().all(|(i, &d)| d == 1 || (rank >= 3 && i == rank - 3));
        if rank > 4 || !channel_ok || !others_ok {
            return None;
        }
        match values.len() {
            1 => Some(vec![values[0]; m]),
            len if len == m => Some(values),
            _ => None,
        }
    }

    /// The constant `name` as a pending matrix product's bias: one f32 per column of its known
    /// `[.., n]` result, of a shape that broadcasts to the result without widening it (`[n]`,
    /// `[1, n]`, ...).
    fn column_constant(&self, name: &str, result: Option<&[i64]>) -> Option<Operand> {
        let (Some(Val::Const(constant)), Some(&n)) = (self.values.get(name), result?.last()) else { return None };
        let dims = &constant.dims;
        let fits = constant.elem == Elem::F32
            && dims.len() <= result?.len()
            && dims.last() == Some(&n)
            && dims[..dims.len() - 1].iter().all(|&d| d == 1);
        if !fits {
            return None;
        }
        Some(if dims.len() == 1 {
            Operand::Const { name: Some(name.to_owned()), value: constant.clone() }
        } else {
            Operand::Const { name: None, value: constant.reshaped(vec![n]).ok()? }
        })
    }

    /// Writes the pending layer `name`, if it is one, as its kernel: from here on `name` is that
    /// kernel's tensor.
    pub fn settle(&mut self, name: &str) {
        if let Some(x) = self.sigmoids.remove(name) {
            // A held-back Sigmoid whose reader is not the Mul of a Swish.
            self.settle(&x);
            if let Some(Val::Tensor { id, shape, .. }) = self.values.get(&x).cloned() {
                let id = self.emit.kernel("nn.sigmoid.f32", name, &[id], vec![]);
                self.values.insert(name.to_owned(), Val::Tensor { id, shape, elem: Some(Elem::F32) });
            }
            return;
        }
        let Some(conv) = self.pending.remove(name) else { return };
        let mut operands = vec![conv.x, self.operand(conv.weights, &conv.node)];
        let bias = match (conv.bias, conv.residual, &conv.shape) {
            (Some(bias), _, _) => Some(bias),
            // The residual is the fourth operand: a missing bias is made zeros, one per output
            // channel or column.
            (None, Some(_), Some(shape)) => {
                let count = match conv.layer {
                    Layer::Conv | Layer::Affine => shape[1],
                    Layer::MatMul => shape[shape.len() - 1],
                };
                let zeros = Constant::from_f32s(vec![count], &vec![0.0; count as usize]).expect("zeros");
                Some(Operand::Const { name: None, value: zeros })
            }
            (None, _, _) => None,
        };
        if let Some(bias) = bias {
            operands.push(self.operand(bias, &conv.node));
        }
        operands.extend(conv.residual);
        let mut attrs = conv.attrs;
        match conv.activation {
            None => {}
            Some(Activation::Relu) => attrs.push(("activation", self.emit.string("relu"))),
            Some(Activation::LeakyRelu(alpha)) => {
                attrs.push(("activation", self.emit.string("leaky_relu")));
                attrs.push(("alpha", self.emit.float(alpha)));
            }
            Some(Activation::Clip(min, max)) => {
                attrs.push(("activation", self.emit.string("clip")));
                attrs.extend(min.map(|min| ("min", self.emit.float(min))));
                attrs.extend(max.map(|max| ("max", self.emit.float(max))));
            }
            Some(Activation::Sigmoid) => attrs.push(("activation", self.emit.string("sigmoid"))),
            Some(Activation::Swish) => attrs.push(("activation", self.emit.string("swish"))),
            Some(Activation::Gelu { tanh }) => {
                attrs.push(("activation", self.emit.string(if tanh { "gelu_tanh" } else { "gelu" })))
            }
        }
        let kernel = match conv.layer {
            Layer::Conv => "nn.conv2d.f32",
            Layer::MatMul => "nn.matmul.f32",
            Layer::Affine => "nn.channel_affine.f32",
        };
        let id = self.emit.kernel(kernel, &conv.node, &operands, attrs);
        self.values.insert(name.to_owned(), Val::Tensor { id, shape: conv.shape, elem: Some(Elem::F32) });
    }

    /// A filter or bias as a kernel operand.
    pub fn operand(&mut self, operand: Operand, node: &str) -> ValueId {
        match operand {
            Operand::Tensor(id) => id,
            Operand::Const { name: Some(name), .. } => self.materialize(&name),
            Operand::Const { name: None, value } => self.constant_kernel(&value, node),
        }
    }
}
