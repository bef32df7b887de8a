//! Each ONNX node as `nn.*` kernels, in graph order. Values are either tensors the kernels make
//! (with their shape when the importer can tell it) or constants: initializers, `Constant`
//! nodes, and the shape computations on them, which fold here — a constant reaches the graph
//! only as a kernel's operand (`nn.constant`, made once per constant) or becomes an attribute
//! (Reshape's shape, Clip's bounds, Unsqueeze's axes). Operator semantics follow the model's
//! opset: Softmax before 13 flattens from `axis`, Reshape before 5 and Unsqueeze/Squeeze before
//! 13 take attributes, Clip before 11 too.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use super::constant::{self, element_count, Constant, Elem};
use super::emit::Emitter;
use super::fuse::{Layer, Operand, PendingLayer};
use super::node::Node;
use super::proto::attribute_proto::AttributeType;
use super::proto::tensor_proto::DataType;
use super::proto::{type_proto, AttributeProto, GraphProto, NodeProto, TensorProto};
use super::source::Source;
use super::{ImportError, ML_DOMAIN};
use rtx_mlir::ir::{AttrId, Blob, ValueId};

/// A value of the graph.
#[derive(Clone)]
pub enum Val {
    /// A tensor a kernel or an argument holds, with its dimensions and element type when known
    /// at import.
    Tensor {
        id: ValueId,
        shape: Option<Vec<i64>>,
        elem: Option<Elem>,
    },
    Const(Constant),
}

pub struct Lowering {
    pub emit: Emitter,
    pub values: HashMap<String, Val>,
    /// Constants already made into tensors by `nn.constant`.
    materialized: HashMap<String, ValueId>,
    /// Convolutions and matrix products not yet written, by the name of their (fused) result
    /// (see [`super::fuse`]).
    pub pending: HashMap<String, PendingLayer>,
    /// Sigmoids of pending layers held back, by their result's name: the layer's.
    pub sigmoids: HashMap<String, String>,
    /// The default domain's opset version (0 when the model imports none).
    opset: i64,
    /// The `ai.onnx.ml` domain's opset version.
    ml_opset: i64,
    /// How many times each name is read: by nodes, their subgraphs and the graph's outputs.
    pub uses: HashMap<String, usize>,
    /// Where the model's tensors are stored, which `Constant` nodes' data may share.
    source: Rc<Source>,
    /// The name of the model's function, which its subgraphs' functions extend.
    prefix: String,
    /// How many subgraph functions were written.
    functions: usize,
}

type Attrs<'a> = Vec<(&'a str, AttrId)>;

/// Operators whose first output has the element type of their input at this index.
const SAME_TYPE: &[(&str, usize)] = &[
    ("Abs", 0),
    ("Add", 0),
    ("AveragePool", 0),
    ("BatchNormalization", 0),
    ("Clip", 0),
    ("Concat", 0),
    ("Conv", 0),
    ("ConvTranspose", 0),
    ("Div", 0),
    ("Elu", 0),
    ("Erf", 0),
    ("Exp", 0),
    ("Expand", 0),
    ("Flatten", 0),
    ("Gather", 0),
    ("Gelu", 0),
    ("Gemm", 0),
    ("GlobalAveragePool", 0),
    ("GlobalMaxPool", 0),
    ("GroupNormalization", 0),
    ("HardSigmoid", 0),
    ("HardSwish", 0),
    ("InstanceNormalization", 0),
    ("LayerNormalization", 0),
    ("LeakyRelu", 0),
    ("Log", 0),
    ("LogSoftmax", 0),
    ("MatMul", 0),
    ("MaxPool", 0),
    ("Mul", 0),
    ("Neg", 0),
    ("Pad", 0),
    ("Reciprocal", 0),
    ("ReduceMax", 0),
    ("ReduceMean", 0),
    ("ReduceSum", 0),
    ("Relu", 0),
    ("Reshape", 0),
    ("Resize", 0),
    ("Sigmoid", 0),
    ("Slice", 0),
    ("Softmax", 0),
    ("Split", 0),
    ("Sqrt", 0),
    ("Squeeze", 0),
    ("Sub", 0),
    ("Tanh", 0),
    ("Tile", 0),
    ("Transpose", 0),
    ("Unsqueeze", 0),
    ("Upsample", 0),
    ("Where", 1),
];

/// The most elements a `ConstantOfShape` of a constant shape is folded to at import.
const FOLDED_FILL_ELEMENTS: usize = 1 << 16;

impl Lowering {
    pub fn new(
        emit: Emitter,
        (opset, ml_opset): (i64, i64),
        uses: HashMap<String, usize>,
        source: Rc<Source>,
        prefix: &str,
    ) -> Lowering {
        let prefix = prefix.to_owned();
        let (materialized, pending) = (HashMap::new(), HashMap::new());
        Lowering {
            emit,
            values: HashMap::new(),
            materialized,
            pending,
            sigmoids: HashMap::new(),
            opset,
            ml_opset,
            uses,
            source,
            prefix,
            functions: 0,
        }
    }

    /// The value `name` as a kernel operand: a tensor, `nn.constant` for a constant.
    pub fn tensor(&mut self, name: &str, node: &Node<'_>) -> Result<(ValueId, Option<Vec<i64>>), ImportError> {
        self.settle(name);
        match self.values.get(name) {
            None => {
                Err(node.error(format!("its input `{name}` is no graph input, initializer or earlier node's output")))
            }
            Some(Val::Tensor { id, shape, .. }) => Ok((*id, shape.clone())),
            Some(Val::Const(constant)) => {
                if constant.elem != Elem::F32 {
                    return Err(node.error(format!(
                        "its input `{name}` holds {:?} elements; only f32 tensors flow through the kernels",
                        constant.elem
                    )));
                }
                let dims = constant.dims.clone();
                Ok((self.materialize(name), Some(dims)))
            }
        }
    }

    /// The value `name` as an operand of an `onnx.*` kernel, which takes any element type.
    pub fn any_tensor(&mut self, name: &str, node: &Node<'_>) -> Result<ValueId, ImportError> {
        self.settle(name);
        match self.values.get(name) {
            None => {
                Err(node.error(format!("its input `{name}` is no graph input, initializer or earlier node's output")))
            }
            Some(Val::Tensor { id, .. }) => Ok(*id),
            Some(Val::Const(_)) => Ok(self.materialize(name)),
        }
    }

    /// The constant `name` as a tensor: `nn.constant`, made once per constant.
    pub fn materialize(&mut self, name: &str) -> ValueId {
        if let Some(&id) = self.materialized.get(name) {
            return id;
        }
        let Some(Val::Const(constant)) = self.values.get(name) else { unreachable!("callers pass constants") };
        let id = self.constant_kernel(&constant.clone(), name);
        self.materialized.insert(name.to_owned(), id);
        id
    }

    /// `nn.constant` of `constant`, at the location `name`.
    pub fn constant_kernel(&mut self, constant: &Constant, name: &str) -> ValueId {
        let value = self.emit.dense(constant);
        self.emit.kernel("nn.constant", name, &[], vec![("value", value)])
    }

    /// The element type of `name` when known at import.
    pub fn elem_of(&self, name: &str) -> Option<Elem> {
        match self.values.get(name)? {
            Val::Tensor { elem, .. } => *elem,
            Val::Const(constant) => Some(constant.elem),
        }
    }

    /// The constant `name`, which the operator needs at import (a shape, axes, bounds).
    fn constant(&self, name: &str, node: &Node<'_>, what: &str) -> Result<Constant, ImportError> {
        match self.values.get(name) {
            Some(Val::Const(constant)) => Ok(constant.clone()),
            Some(Val::Tensor { .. }) => {
                Err(node.error(format!("its {what} `{name}` is computed at run time; rtx needs it constant")))
            }
            None => {
                Err(node.error(format!("its input `{name}` is no graph input, initializer or earlier node's output")))
            }
        }
    }

    /// The dimensions of `name` when known.
    pub fn shape_of(&self, name: &str) -> Option<Vec<i64>> {
        match self.values.get(name)? {
            Val::Tensor { shape, .. } => shape.clone(),
            Val::Const(constant) => Some(constant.dims.clone()),
        }
    }

    pub fn is_const(&self, name: &str) -> bool {
        matches!(self.values.get(name), Some(Val::Const(_)))
    }

    fn define(&mut self, node: &Node<'_>, value: Val) -> Result<(), ImportError> {
        let output = node.output()?;
        self.values.insert(output.to_owned(), value);
        Ok(())
    }

    /// Emits `kernel` on the node's tensor inputs `operands`; its output has `shape`.
    fn kernel(
        &mut self,
        node: &Node<'_>,
        kernel: &str,
        operands: &[ValueId],
        attrs: Attrs<'_>,
        shape: Option<Vec<i64>>,
    ) -> Result<(), ImportError> {
        let id = self.emit.kernel(kernel, &node.name, operands, attrs);
        self.define(node, Val::Tensor { id, shape, elem: Some(Elem::F32) })
    }

    /// Fails when an output past the first, which rtx does not compute, is read.
    fn only_first_output(&self, node: &Node<'_>) -> Result<(), ImportError> {
        match node.proto.output.iter().skip(1).find(|name| !name.is_empty() && self.uses.contains_key(*name)) {
            Some(name) => {
                Err(node.error(format!("its output `{name}` is read, but rtx computes only the first output")))
            }
            None => Ok(()),
        }
    }

    /// Lowers one node: to its `nn.*` kernels when it has them and its inputs are f32, folded
    /// when it computes a constant from constants (or a shape known here), else to its `onnx.*`
    /// kernel.
    pub fn node(&mut self, node: &Node<'_>) -> Result<(), ImportError> {
        let default_domain = matches!(node.proto.domain.as_deref(), None | Some("" | "ai.onnx"));
        if default_domain && self.opset > 0 && self.fuse(node)? {
            return Ok(());
        }
        // Every pending layer the node reads, itself or in a subgraph, is written now.
        let mut read: Vec<String> = node.inputs().map(str::to_owned).collect();
        for graph in subgraphs(node.proto) {
            free_names(graph, &mut read);
        }
        read.iter().for_each(|name| self.settle(name));
        match node.proto.domain.as_deref() {
            // A model that imports only other domains' opsets has no node of the default one.
            None | Some("" | "ai.onnx") if self.opset == 0 => {
                return Err(ImportError::Model("the model imports no version of the default ONNX opset".to_owned()))
            }
            None | Some("" | "ai.onnx") => {}
            // The classical-ML operators (`ai.onnx.ml`) that have kernels run as `onnx.ml.<Op>`.
            Some(ML_DOMAIN) => return self.ml_node(node),
            Some(other) => return Err(node.unsupported(format!("the operator domain `{other}` is not supported"))),
        }
        // Identity names its input's value again, whatever it holds (a sequence, an optional).
        if node.op == "Identity" {
            let value = self.value(node.required(0)?, node)?;
            return self.define(node, value);
        }
        let generic = rtx_kernel::library::onnx::operators().contains(&node.op);
        if generic && !(self.lowers_here(node) && self.layers_take(node) && subgraphs(node.proto).is_empty()) {
            return self.generic(node);
        }
        match node.op {
            "Constant" => self.constant_node(node),
            "ConstantOfShape" => {
                let dims = self.constant(node.required(0)?, node, "shape")?.to_i64s().map_err(|e| node.error(e))?;
                let value = match node.tensor("value") {
                    Some(tensor) => constant::from_proto(tensor, &self.source).map_err(|e| node.error(e))?,
                    None => Constant::from_f32s(vec![1], &[0.0]).expect("one f32"),
                };
                let filled = Constant::filled(&value, dims).map_err(|e| node.error(e))?;
                self.define(node, Val::Const(filled))
            }
            "Dropout" => {
                self.only_first_output(node)?;
                let value = self.value(node.required(0)?, node)?;
                self.define(node, value)
            }
            "Shape" => {
                let dims = self
                    .shape_of(node.required(0)?)
                    .ok_or_else(|| node.error("its input's shape is not known at import"))?;
                let rank = dims.len() as i64;
                let clamp = |i: i64| (if i < 0 { i + rank } else { i }).clamp(0, rank) as usize;
                let (start, end) = (clamp(node.int("start", 0)), clamp(node.int("end", rank)));
                let dims = if start < end { &dims[start..end] } else { &[][..] };
                self.define(node, Val::Const(Constant::from_i64s(dims)))
            }
            "Gather" => self.gather(node),
            "Unsqueeze" | "Squeeze" => self.squeeze(node),
            "Reshape" => self.reshape(node),
            "Flatten" => {
                let input = node.required(0)?;
                let shape = self.shape_of(input);
                let axis = node.int("axis", 1);
                let flat = shape.as_ref().map(|dims| flatten(dims, axis)).transpose().map_err(|e| node.error(e))?;
                if let (Val::Const(c), Some(dims)) = (self.value(input, node)?, &flat) {
                    return self.define(node, Val::Const(c.reshaped(dims.clone()).map_err(|e| node.error(e))?));
                }
                let (x, _) = self.tensor(input, node)?;
                let axis = self.emit.int(axis);
                self.kernel(node, "nn.flatten", &[x], vec![("axis", axis)], flat)
            }
            "Concat" => self.concat(node),
            "Transpose" => {
                let (x, shape) = self.tensor(node.required(0)?, node)?;
                let perm = match (node.ints("perm"), &shape) {
                    (Some(perm), _) => Some(perm),
                    (None, Some(dims)) => Some((0..dims.len() as i64).rev().collect()),
                    (None, None) => None,
                };
                let out = match (&perm, &shape) {
                    (Some(perm), Some(dims)) => Some(
                        perm.iter()
                            .map(|&p| usize::try_from(p).ok().and_then(|p| dims.get(p).copied()))
                            .collect::<Option<Vec<i64>>>()
                            .ok_or_else(|| node.error(format!("perm {perm:?} does not permute {dims:?}")))?,
                    ),
                    _ => None,
                };
                let attrs = match &perm {
                    Some(perm) => vec![("perm", self.emit.ints(perm))],
                    None => vec![],
                };
                self.kernel(node, "nn.transpose", &[x], attrs, out)
            }
            "Conv" => self.conv(node),
            "MaxPool" | "AveragePool" => self.pool(node),
            "GlobalAveragePool" => {
                let (x, shape) = self.tensor(node.required(0)?, node)?;
                let out = shape.map(|dims| dims.iter().enumerate().map(|(i, &d)| if i < 2 { d } else { 1 }).collect());
                self.kernel(node, "nn.global_average_pool.f32", &[x], vec![], out)
            }
            "Gemm" => self.gemm(node),
            "MatMul" => {
                let (a, sa) = self.tensor(node.required(0)?, node)?;
                let (b, sb) = self.tensor(node.required(1)?, node)?;
                let out = match (sa, sb) {
                    (Some(sa), Some(sb)) if sa.len() >= 2 && sb.len() >= 2 => {
                        let batch = broadcast(&sa[..sa.len() - 2], &sb[..sb.len() - 2]);
                        batch.map(|mut dims| {
                            dims.extend([sa[sa.len() - 2], sb[sb.len() - 1]]);
                            dims
                        })
                    }
                    _ => None,
                };
                // Pending: a bias, residual and activation after it may fuse (see `fuse`).
                let product = PendingLayer {
                    layer: Layer::MatMul,
                    node: node.name.clone(),
                    x: a,
                    weights: Operand::Tensor(b),
                    bias: None,
                    attrs: vec![],
                    shape: out,
                    residual: None,
                    activation: None,
                };
                self.pending.insert(node.output()?.to_owned(), product);
                Ok(())
            }
            "Relu" | "Sigmoid" | "Tanh" => {
                let (x, shape) = self.tensor(node.required(0)?, node)?;
                let kernel = format!("nn.{}.f32", node.op.to_ascii_lowercase());
                self.kernel(node, &kernel, &[x], vec![], shape)
            }
            "Clip" => self.clip(node),
            "Add" | "Sub" | "Mul" | "Div" => {
                if node.has("axis") || node.int("broadcast", 0) != 0 {
                    return Err(
                        node.unsupported("the legacy `broadcast`/`axis` attributes (opset < 7) are not supported")
                    );
                }
                let (a, sa) = self.tensor(node.required(0)?, node)?;
                let (b, sb) = self.tensor(node.required(1)?, node)?;
                let out = sa.zip(sb).and_then(|(sa, sb)| broadcast(&sa, &sb));
                let kernel = format!("nn.{}.f32", node.op.to_ascii_lowercase());
                self.kernel(node, &kernel, &[a, b], vec![], out)
            }
            "Sum" => {
                let inputs: Vec<&str> = node.inputs().collect();
                let (mut sum, mut shape) =
                    self.tensor(inputs.first().ok_or_else(|| node.error("it has no inputs"))?, node)?;
                for input in &inputs[1..] {
                    let (next, next_shape) = self.tensor(input, node)?;
                    shape = shape.zip(next_shape).and_then(|(a, b)| broadcast(&a, &b));
                    sum = self.emit.kernel("nn.add.f32", &node.name, &[sum, next], vec![]);
                }
                self.define(node, Val::Tensor { id: sum, shape, elem: Some(Elem::F32) })
            }
            // Training mode's running statistics are onnx.BatchNormalization's.
            "BatchNormalization" if node.int("training_mode", 0) != 0 => self.generic(node),
            "BatchNormalization" => {
                self.only_first_output(node)?;
                if self.start_affine(node)? {
                    return Ok(());
                }
                let mut operands = Vec::with_capacity(5);
                let mut shape = None;
                for i in 0..5 {
                    let (id, s) = self.tensor(node.required(i)?, node)?;
                    if i == 0 {
                        shape = s;
                    }
                    operands.push(id);
                }
                let epsilon = self.emit.float(node.float("epsilon", 1e-5));
                self.kernel(node, "nn.batch_norm.f32", &operands, vec![("epsilon", epsilon)], shape)
            }
            "Softmax" => self.softmax(node),
            "LayerNormalization" => {
                let (x, shape) = self.tensor(node.required(0)?, node)?;
                let mut operands = vec![x];
                for name in node.inputs().skip(1) {
                    operands.push(self.tensor(name, node)?.0);
                }
                let attrs = vec![
                    ("axis", self.emit.int(node.int("axis", -1))),
                    ("epsilon", self.emit.float(node.float("epsilon", 1e-5))),
                ];
                self.kernel(node, "nn.layer_norm.f32", &operands, attrs, shape)
            }
            "Gelu" => {
                let (x, shape) = self.tensor(node.required(0)?, node)?;
                let approximate = node.string("approximate").unwrap_or_else(|| "none".to_owned());
                let attrs = vec![("approximate", self.emit.string(&approximate))];
                self.kernel(node, "nn.gelu.f32", &[x], attrs, shape)
            }
            "LRN" => {
                let (x, shape) = self.tensor(node.required(0)?, node)?;
                if !node.has("size") {
                    return Err(node.error("it has no `size` attribute"));
                }
                let attrs = vec![
                    ("size", self.emit.int(node.int("size", 0))),
                    ("alpha", self.emit.float(node.float("alpha", 1e-4))),
                    ("beta", self.emit.float(node.float("beta", 0.75))),
                    ("bias", self.emit.float(node.float("bias", 1.0))),
                ];
                self.kernel(node, "nn.lrn.f32", &[x], attrs, shape)
            }
            _ if generic => self.generic(node),
            other => Err(node.unsupported(format!("the operator `{other}` is not supported"))),
        }
    }

    /// Whether a node that has an `onnx.<Op>` kernel is lowered here all the same: the shape
    /// computations that fold on constants (and `Shape` on a shape known here), and the layout
    /// operators on f32 tensors whose `nn.*` kernels keep the shapes known.
    fn lowers_here(&self, node: &Node<'_>) -> bool {
        let inputs: Vec<&str> = node.inputs().collect();
        let constant = |names: &[&str]| names.iter().all(|name| self.is_const(name));
        let f32 = |names: &[&str]| names.iter().all(|name| self.elem_of(name) == Some(Elem::F32));
        let (data, rest) =
            inputs.split_first().map_or((&[][..], &[][..]), |(first, rest)| (std::slice::from_ref(first), rest));
        match node.op {
            "Shape" => data.first().is_some_and(|name| self.shape_of(name).is_some()),
            // A fill folds when it is small (a shape, a mask); a large one is made at run time,
            // so a model claiming more than memory holds fails when it runs, not while loading.
            "ConstantOfShape" => data.first().is_some_and(|name| {
                let count = match self.values.get(*name) {
                    Some(Val::Const(shape)) => shape.to_i64s().ok().and_then(|dims| element_count(&dims)),
                    _ => None,
                };
                count.is_some_and(|count| count <= FOLDED_FILL_ELEMENTS)
            }),
            "Gather" => constant(&inputs),
            "Concat" => constant(&inputs) || f32(&inputs),
            "Flatten" => constant(data) || f32(data),
            "Reshape" => node.int("allowzero", 0) == 0 && constant(rest) && (constant(data) || f32(data)),
            "Squeeze" | "Unsqueeze" => {
                data.first().is_some_and(|name| self.shape_of(name).is_some())
                    && constant(rest)
                    && (constant(data) || f32(data))
            }
            _ => f32(&inputs),
        }
    }

    /// Whether the `nn.*` layers take an f32 node that also has an `onnx.<Op>` kernel: they
    /// convolve and pool 2-D images (with `auto_pad` resolved here, from a known shape), pool
    /// without `Indices` in row-major order, and multiply stacks of matrices that match or share
    /// a right-hand matrix. (An input whose shape is not known here is taken to fit.)
    fn layers_take(&self, node: &Node<'_>) -> bool {
        let shape = |i: usize| node.input(i).and_then(|name| self.shape_of(name));
        let planar = |kernel: Option<Vec<i64>>| {
            let padding = node.string("auto_pad");
            kernel.is_some_and(|k| k.len() == 2)
                && shape(0).is_none_or(|s| s.len() == 4)
                && (matches!(padding.as_deref(), None | Some("NOTSET" | "VALID")) || shape(0).is_some())
        };
        match node.op {
            "Conv" => {
                let kernel =
                    node.ints("kernel_shape").or_else(|| shape(1).map(|s| s.iter().skip(2).copied().collect()));
                // A 1-D convolution is a 2-D one of a single row (see `conv_1d`), given its padding.
                let linear = kernel.as_ref().is_some_and(|k| k.len() == 1)
                    && shape(0).is_none_or(|s| s.len() == 3)
                    && (matches!(node.string("auto_pad").as_deref(), None | Some("NOTSET" | "VALID"))
                        || shape(0).is_some());
                linear || planar(kernel)
            }
            "MaxPool" | "AveragePool" => {
                planar(node.ints("kernel_shape"))
                    && node.int("storage_order", 0) == 0
                    && node.proto.output.iter().skip(1).all(|name| name.is_empty())
            }
            "GlobalAveragePool" => shape(0).is_none_or(|s| s.len() == 4),
            "MatMul" => match (shape(0), shape(1)) {
                (Some(a), Some(b)) if a.len() >= 2 && b.len() >= 2 => {
                    b.len() == 2 || a[..a.len() - 2] == b[..b.len() - 2]
                }
                (Some(_), Some(_)) => false,
                _ => true,
            },
            "Gemm" => shape(2).is_none_or(|c| c.len() <= 2),
            // nn.layer_norm computes Y alone, in f32, with Scale and B of the normalized shape.
            "LayerNormalization" => {
                let normalized = shape(0).and_then(|x| {
                    let axis = node.int("axis", -1);
                    let axis = if axis < 0 { axis + x.len() as i64 } else { axis };
                    usize::try_from(axis).ok().filter(|&a| a < x.len()).map(|a| x[a..].iter().product::<i64>())
                });
                let fits = |i: usize| shape(i).is_some_and(|s| Some(s.iter().product::<i64>()) == normalized);
                normalized.is_some()
                    && fits(1)
                    && (node.input(2).is_none() || fits(2))
                    && node.int("stash_type", 1) == 1
                    && node.proto.output.iter().skip(1).all(|name| name.is_empty() || !self.uses.contains_key(name))
            }
            // nn.clip takes its bounds as attributes: constants.
            "Clip" => (1..3).all(|i| node.input(i).is_none_or(|name| self.is_const(name))),
            // Dropout as the identity: neither the mask nor training.
            "Dropout" => {
                node.input(2).is_none()
                    && node.proto.output.iter().skip(1).all(|name| name.is_empty() || !self.uses.contains_key(name))
            }
            _ => true,
        }
    }

    /// The node as its `onnx.<Op>` kernel: its present inputs as operands, its attributes as
    /// they are, `_opset`, and `_inputs` when an optional input before the last is left out.
    /// A graph attribute (a control-flow node's body or branch) becomes a function of the
    /// module, taking the graph's inputs and then the outer-scope values its nodes read (the
    /// same list for every graph of the node), which follow the node's inputs among the
    /// operands, their number in `_captures`.
    fn generic(&mut self, node: &Node<'_>) -> Result<(), ImportError> {
        self.generic_kernel(node, &format!("onnx.{}", node.op), self.opset)
    }

    /// A node of the `ai.onnx.ml` domain (whose opset is `opset`) as its `onnx.ml.<Op>` kernel,
    /// when it has one (`ml.<Op>` among the ONNX operators).
    fn ml_node(&mut self, node: &Node<'_>) -> Result<(), ImportError> {
        let op = format!("ml.{}", node.op);
        if !rtx_kernel::library::onnx::operators().contains(&op.as_str()) {
            return Err(node.unsupported(format!("the operator `ai.onnx.ml.{}` is not supported", node.op)));
        }
        self.generic_kernel(node, &format!("onnx.{op}"), self.ml_opset)
    }

    /// The node as the kernel `kernel`, `_opset` its domain's opset.
    fn generic_kernel(&mut self, node: &Node<'_>, kernel: &str, opset: i64) -> Result<(), ImportError> {
        let mut operands = Vec::new();
        let mut slots = Vec::new();
        for (index, name) in node.proto.input.iter().enumerate().filter(|(_, name)| !name.is_empty()) {
            operands.push(self.any_tensor(name, node)?);
            slots.push(index as i64);
        }
        let mut attrs: Attrs<'_> = vec![("_opset", self.emit.int(opset))];
        if slots.iter().enumerate().any(|(k, &slot)| slot != k as i64) {
            attrs.push(("_inputs", self.emit.ints(&slots)));
        }
        // Outer values the subgraphs read: constants are copied into them, tensors passed.
        let mut captures = Vec::new();
        for graph in subgraphs(node.proto) {
            free_names(graph, &mut captures);
        }
        captures.retain(|name| !self.is_const(name));
        for name in &captures {
            operands.push(self.any_tensor(name, node)?);
        }
        if !captures.is_empty() {
            attrs.push(("_captures", self.emit.int(captures.len() as i64)));
        }
        // A tensor of strings is an aggregate of strings, named `<name>.strings`.
        let names: Vec<String> = node
            .proto
            .attribute
            .iter()
            .map(|a| match &a.t {
                Some(tensor) if holds_strings(tensor) => format!("{}.strings", a.name()),
                _ => a.name().to_owned(),
            })
            .collect();
        for (attribute, name) in node.proto.attribute.iter().zip(&names) {
            let value = match (&attribute.g, AttributeType::try_from(attribute.r#type.unwrap_or(0))) {
                (Some(graph), Ok(AttributeType::Graph)) => self.subgraph(node, graph, &captures)?,
                // A type (Optional's) says what the value holds, which the kernels see.
                (_, Ok(AttributeType::TypeProto)) => continue,
                _ => self.attribute(node, attribute)?,
            };
            attrs.push((name, value));
        }
        let ids = self.emit.kernel_results(kernel, &node.name, &operands, attrs, node.proto.output.len());
        // The element type of what the kernel makes, where an operator's first output (Split's
        // every output) is of the type of its data input: the nodes downstream of it may then
        // take the `nn.*` layers.
        let elem = SAME_TYPE
            .iter()
            .find(|(op, _)| *op == node.op)
            .and_then(|&(_, data)| node.input(data))
            .and_then(|name| self.elem_of(name));
        for (k, (name, id)) in node.proto.output.iter().zip(ids).enumerate().filter(|(_, (name, _))| !name.is_empty()) {
            let elem = elem.filter(|_| k == 0 || node.op == "Split");
            self.values.insert(name.clone(), Val::Tensor { id, shape: None, elem });
        }
        Ok(())
    }

    /// The function of `graph`, a subgraph of `node` that reads the outer tensors `captures`:
    /// its arguments are the graph's inputs then the captures, its results the graph's outputs.
    fn subgraph(&mut self, node: &Node<'_>, graph: &GraphProto, captures: &[String]) -> Result<AttrId, ImportError> {
        let name = format!("{}.{}{}", self.prefix, graph.name.as_deref().unwrap_or("graph"), self.functions);
        self.functions += 1;
        let outer = self.emit.open(graph.input.len() + captures.len());
        let ids = self.emit.arguments();
        let mut free = Vec::new();
        free_names(graph, &mut free);
        let mut inner = HashMap::new();
        for name in &free {
            match self.values.get(name) {
                Some(Val::Const(constant)) => inner.insert(name.clone(), Val::Const(constant.clone())),
                Some(_) => None,
                None => return Err(node.error(format!("its subgraph reads `{name}`, which no outer scope defines"))),
            };
        }
        for (input, &id) in graph.input.iter().zip(&ids) {
            let elem = match input.r#type.as_ref().and_then(|t| t.value.as_ref()) {
                Some(type_proto::Value::TensorType(tensor)) => Elem::from_onnx(tensor.elem_type.unwrap_or(0)).ok(),
                _ => None,
            };
            inner.insert(input.name().to_owned(), Val::Tensor { id, shape: None, elem });
        }
        for (capture, &id) in captures.iter().zip(&ids[graph.input.len()..]) {
            let (shape, elem) = (self.shape_of(capture), self.elem_of(capture));
            inner.insert(capture.clone(), Val::Tensor { id, shape, elem });
        }
        for tensor in &graph.initializer {
            let value = if holds_strings(tensor) {
                self.strings(tensor)
            } else {
                constant::from_proto(tensor, &self.source).map(Val::Const)
            };
            let value =
                value.map_err(|e| node.error(format!("initializer `{}` of its subgraph: {e}", tensor.name())))?;
            inner.insert(tensor.name().to_owned(), value);
        }
        let outer_values = std::mem::replace(&mut self.values, inner);
        let outer_materialized = std::mem::take(&mut self.materialized);
        let outer_pending = (std::mem::take(&mut self.pending), std::mem::take(&mut self.sigmoids));
        count_uses(graph, &mut self.uses);
        let lowered = graph.node.iter().try_for_each(|proto| self.node(&Node::new(proto)));
        let results = lowered.and_then(|()| {
            graph.output.iter().map(|output| self.any_tensor(output.name(), node)).collect::<Result<Vec<_>, _>>()
        });
        self.values = outer_values;
        self.materialized = outer_materialized;
        (self.pending, self.sigmoids) = outer_pending;
        self.emit.close(outer, &name, &results?);
        Ok(self.emit.symbol(&name))
    }

    /// An ONNX attribute as a kernel attribute of the same name.
    fn attribute(&mut self, node: &Node<'_>, attribute: &AttributeProto) -> Result<AttrId, ImportError> {
        let name = attribute.name.as_deref().unwrap_or_default();
        Ok(match AttributeType::try_from(attribute.r#type.unwrap_or(0)) {
            Ok(AttributeType::Float) => self.emit.float(attribute.f.unwrap_or_default()),
            Ok(AttributeType::Int) => self.emit.int(attribute.i.unwrap_or_default()),
            Ok(AttributeType::String) => {
                let text = attribute.s.as_ref().map(|s| String::from_utf8_lossy(s).into_owned()).unwrap_or_default();
                self.emit.string(&text)
            }
            Ok(AttributeType::Floats) => self.emit.floats(&attribute.floats),
            Ok(AttributeType::Ints) => self.emit.ints(&attribute.ints),
            Ok(AttributeType::Strings) => self.emit.strings(&attribute.strings),
            Ok(AttributeType::Tensor) => {
                let tensor =
                    attribute.t.as_ref().ok_or_else(|| node.error(format!("attribute `{name}` has no tensor")))?;
                if holds_strings(tensor) {
                    return Ok(self.emit.strings(&tensor.string_data));
                }
                let constant = constant::from_proto(tensor, &self.source)
                    .map_err(|e| node.error(format!("attribute `{name}`: {e}")))?;
                self.emit.dense(&constant)
            }
            Ok(other) => {
                return Err(node.unsupported(format!(
                    "attribute `{name}` is a {}, which rtx does not pass to kernels yet",
                    other.as_str_name()
                )))
            }
            Err(_) => return Err(node.error(format!("attribute `{name}` has no known type"))),
        })
    }

    fn value(&self, name: &str, node: &Node<'_>) -> Result<Val, ImportError> {
        self.values.get(name).cloned().ok_or_else(|| {
            node.error(format!("its input `{name}` is no graph input, initializer or earlier node's output"))
        })
    }

    /// A tensor of strings (an initializer, a constant) as the kernel that makes it,
    /// `tfrt_sht.create_tensor`.
    pub fn strings(&mut self, tensor: &TensorProto) -> Result<Val, String> {
        let dims = tensor.dims.clone();
        if element_count(&dims) != Some(tensor.string_data.len()) {
            return Err(format!("{} strings for shape {dims:?}", tensor.string_data.len()));
        }
        let attributes = vec![("shape", self.emit.ints(&dims)), ("value", self.emit.strings(&tensor.string_data))];
        let id = self.emit.kernel("tfrt_sht.create_tensor", tensor.name(), &[], attributes);
        Ok(Val::Tensor { id, shape: Some(dims), elem: None })
    }

    fn constant_node(&mut self, node: &Node<'_>) -> Result<(), ImportError> {
        let strings = match (node.tensor("value"), node.attribute("value_string"), node.attribute("value_strings")) {
            (Some(tensor), _, _) if holds_strings(tensor) => Some(tensor.clone()),
            (None, Some(one), _) => {
                Some(TensorProto { string_data: one.s.iter().cloned().collect(), ..Default::default() })
            }
            (None, _, Some(many)) => Some(TensorProto {
                dims: vec![many.strings.len() as i64],
                string_data: many.strings.clone(),
                ..Default::default()
            }),
            _ => None,
        };
        if let Some(tensor) = strings {
            let value = self.strings(&tensor).map_err(|e| node.error(e))?;
            return self.define(node, value);
        }
        let value = if let Some(tensor) = node.tensor("value") {
            constant::from_proto(tensor, &self.source).map_err(|e| node.error(e))?
        } else if node.has("value_float") {
            Constant::from_f32s(vec![], &[node.float("value_float", 0.0)]).expect("one f32")
        } else if node.has("value_int") {
            Constant::from_i64s(&[node.int("value_int", 0)]).reshaped(vec![]).expect("one i64")
        } else if let Some(ints) = node.ints("value_ints") {
            Constant::from_i64s(&ints)
        } else {
            return Err(node.error("only `value`, `value_float`, `value_int` and `value_ints` constants are supported"));
        };
        self.define(node, Val::Const(value))
    }

    fn gather(&mut self, node: &Node<'_>) -> Result<(), ImportError> {
        let data = self.constant(node.required(0)?, node, "data")?;
        let indices = self.constant(node.required(1)?, node, "indices")?;
        let index_values = indices.to_i64s().map_err(|e| node.error(e))?;
        let rank = data.dims.len() as i64;
        let axis = node.int("axis", 0);
        let axis = if axis < 0 { axis + rank } else { axis };
        if !(0..rank).contains(&axis) {
            return Err(node.error(format!("axis {axis} is outside data of rank {rank}")));
        }
        let axis = axis as usize;
        let length = data.dims[axis];
        let size = data.elem.size();
        let outer: usize = element_count(&data.dims[..axis]).unwrap_or(0);
        let inner = element_count(&data.dims[axis + 1..]).unwrap_or(0) * size;
        let bytes = data.data.bytes();
        let mut out = Vec::with_capacity(outer * index_values.len() * inner);
        for o in 0..outer {
            for &index in &index_values {
                let i = if index < 0 { index + length } else { index };
                if !(0..length).contains(&i) {
                    return Err(node.error(format!("index {index} is outside a dimension of {length}")));
                }
                let start = (o * length as usize + i as usize) * inner;
                out.extend_from_slice(&bytes[start..start + inner]);
            }
        }
        let mut dims = data.dims[..axis].to_vec();
        dims.extend(&indices.dims);
        dims.extend(&data.dims[axis + 1..]);
        let gathered = Constant::new(data.elem, dims, Blob::from_vec(out)).map_err(|e| node.error(e))?;
        self.define(node, Val::Const(gathered))
    }

    /// Unsqueeze and Squeeze: their axes from the attribute (opset < 13) or the constant input.
    fn squeeze(&mut self, node: &Node<'_>) -> Result<(), ImportError> {
        let input = node.required(0)?;
        let axes = match (self.opset < 13, node.input(1)) {
            (true, _) => node.ints("axes"),
            (false, Some(axes)) => Some(self.constant(axes, node, "axes")?.to_i64s().map_err(|e| node.error(e))?),
            (false, None) => None,
        };
        let dims = self.shape_of(input).ok_or_else(|| node.error("its input's shape is not known at import"))?;
        let out = if node.op == "Unsqueeze" {
            let axes = axes.ok_or_else(|| node.error("it has no axes"))?;
            let rank = (dims.len() + axes.len()) as i64;
            let mut axes: Vec<i64> = axes.iter().map(|&a| if a < 0 { a + rank } else { a }).collect();
            axes.sort_unstable();
            let mut out = dims.clone();
            for &a in &axes {
                if !(0..=out.len() as i64).contains(&a) {
                    return Err(node.error(format!("axis {a} is outside the result's rank {rank}")));
                }
                out.insert(a as usize, 1);
            }
            out
        } else {
            let rank = dims.len() as i64;
            let axes: Option<Vec<i64>> =
                axes.map(|axes| axes.iter().map(|&a| if a < 0 { a + rank } else { a }).collect());
            let mut out = Vec::new();
            for (i, &d) in dims.iter().enumerate() {
                let listed = axes.as_ref().is_none_or(|axes| axes.contains(&(i as i64)));
                if listed && d == 1 {
                    continue;
                }
                if listed && axes.is_some() {
                    return Err(node.error(format!("dimension {i} of {dims:?} is not 1")));
                }
                out.push(d);
            }
            out
        };
        self.view(node, input, out)
    }

    /// The input under other dimensions: a folded constant, or `nn.reshape` (no copy).
    fn view(&mut self, node: &Node<'_>, input: &str, dims: Vec<i64>) -> Result<(), ImportError> {
        if let Val::Const(c) = self.value(input, node)? {
            return self.define(node, Val::Const(c.reshaped(dims).map_err(|e| node.error(e))?));
        }
        let (x, _) = self.tensor(input, node)?;
        let shape = self.emit.ints(&dims);
        self.kernel(node, "nn.reshape", &[x], vec![("shape", shape)], Some(dims))
    }

    fn reshape(&mut self, node: &Node<'_>) -> Result<(), ImportError> {
        let input = node.required(0)?;
        let requested = if self.opset < 5 {
            node.ints("shape").ok_or_else(|| node.error("it has no `shape` attribute"))?
        } else {
            self.constant(node.required(1)?, node, "shape")?.to_i64s().map_err(|e| node.error(e))?
        };
        if node.int("allowzero", 0) != 0 && requested.contains(&0) {
            return Err(node.unsupported("`allowzero` with a zero in the shape is not supported"));
        }
        match self.shape_of(input) {
            Some(dims) => {
                let out = resolve_reshape(&dims, &requested).map_err(|e| node.error(e))?;
                self.view(node, input, out)
            }
            None => {
                let (x, _) = self.tensor(input, node)?;
                let shape = self.emit.ints(&requested);
                self.kernel(node, "nn.reshape", &[x], vec![("shape", shape)], None)
            }
        }
    }

    fn concat(&mut self, node: &Node<'_>) -> Result<(), ImportError> {
        let inputs: Vec<&str> = node.inputs().collect();
        let axis = node.int("axis", if self.opset < 4 { 1 } else { i64::MAX });
        if axis == i64::MAX {
            return Err(node.error("it has no `axis` attribute"));
        }
        let shapes: Option<Vec<Vec<i64>>> = inputs.iter().map(|name| self.shape_of(name)).collect();
        let out = match &shapes {
            Some(shapes) if !shapes.is_empty() => Some(concat_shape(shapes, axis).map_err(|e| node.error(e))?),
            _ => None,
        };
        if !inputs.is_empty() && inputs.iter().all(|name| self.is_const(name)) {
            let constants: Vec<Constant> =
                inputs.iter().map(|name| self.constant(name, node, "input")).collect::<Result<_, _>>()?;
            let dims = out.clone().expect("constants have shapes");
            return self.define(node, Val::Const(concat_constants(&constants, axis, dims).map_err(|e| node.error(e))?));
        }
        let operands: Vec<ValueId> =
            inputs.iter().map(|name| Ok(self.tensor(name, node)?.0)).collect::<Result<_, ImportError>>()?;
        let axis = self.emit.int(axis);
        self.kernel(node, "nn.concat", &operands, vec![("axis", axis)], out)
    }

    fn conv(&mut self, node: &Node<'_>) -> Result<(), ImportError> {
        let (x, sx) = self.tensor(node.required(0)?, node)?;
        let sw = self.shape_of(node.required(1)?);
        let weights = self.conv_operand(node.required(1)?, node)?;
        let bias = node.input(2).map(|name| self.conv_operand(name, node)).transpose()?;
        let kernel_shape = match (node.ints("kernel_shape"), &sw) {
            (Some(k), _) => k,
            (None, Some(sw)) if sw.len() >= 3 => sw[2..].to_vec(),
            _ => return Err(node.error("its filter's shape is not known at import")),
        };
        if kernel_shape.len() == 1 {
            let mut operands = vec![x];
            for operand in std::iter::once(weights).chain(bias) {
                operands.push(self.operand(operand, &node.name));
            }
            return self.conv_1d(node, operands, &kernel_shape, sx);
        }
        if kernel_shape.len() != 2 {
            return Err(
                node.error(format!("only 1-D and 2-D convolutions are supported, not kernel_shape {kernel_shape:?}"))
            );
        }
        let window = Window::read(node, &kernel_shape, sx.as_deref())?;
        let group = node.int("group", 1);
        let out = match (&sx, &sw) {
            (Some(sx), Some(sw)) => Some(vec![sx[0], sw[0], window.out[0], window.out[1]]).filter(|_| window.known),
            _ => None,
        };
        let mut attrs = window.attrs(&mut self.emit);
        attrs.push(("group", self.emit.int(group)));
        let conv = PendingLayer {
            layer: Layer::Conv,
            node: node.name.clone(),
            x,
            weights,
            bias,
            attrs,
            shape: out,
            residual: None,
            activation: None,
        };
        self.pending.insert(node.output()?.to_owned(), conv);
        Ok(())
    }

    /// A filter or bias of a convolution: an f32 constant kept as one (its scale and shift may
    /// fold into it), anything else as a tensor.
    fn conv_operand(&mut self, name: &str, node: &Node<'_>) -> Result<Operand, ImportError> {
        match self.values.get(name) {
            Some(Val::Const(value)) if value.elem == Elem::F32 => {
                Ok(Operand::Const { name: Some(name.to_owned()), value: value.clone() })
            }
            _ => Ok(Operand::Tensor(self.tensor(name, node)?.0)),
        }
    }

    /// A 1-D convolution as a 2-D one of a single row: `[N, C, L]` viewed as `[N, C, 1, L]` (and
    /// the filters as `[M, C/group, 1, K]`), convolved, and the result viewed back as `[N, M, L']`;
    /// the views copy nothing.
    fn conv_1d(
        &mut self,
        node: &Node<'_>,
        mut operands: Vec<ValueId>,
        kernel: &[i64],
        sx: Option<Vec<i64>>,
    ) -> Result<(), ImportError> {
        let window = Window::read_1d(node, kernel, sx.as_deref())?;
        let lift = self.emit.ints(&[0, 0, 1, -1]);
        for operand in &mut operands[..2] {
            *operand = self.emit.kernel("nn.reshape", &node.name, &[*operand], vec![("shape", lift)]);
        }
        let mut attrs = window.attrs(&mut self.emit);
        attrs.push(("group", self.emit.int(node.int("group", 1))));
        let rows = self.emit.kernel("nn.conv2d.f32", &node.name, &operands, attrs);
        let drop = self.emit.ints(&[0, 0, -1]);
        let out = self.emit.kernel("nn.reshape", &node.name, &[rows], vec![("shape", drop)]);
        let sw = self.shape_of(node.required(1)?);
        let shape = match (&sx, sw) {
            (Some(sx), Some(sw)) if window.known => Some(vec![sx[0], sw[0], window.out[1]]),
            _ => None,
        };
        self.define(node, Val::Tensor { id: out, shape, elem: Some(Elem::F32) })
    }

    fn pool(&mut self, node: &Node<'_>) -> Result<(), ImportError> {
        self.only_first_output(node)?;
        let (x, sx) = self.tensor(node.required(0)?, node)?;
        let kernel_shape = node.ints("kernel_shape").ok_or_else(|| node.error("it has no `kernel_shape` attribute"))?;
        if kernel_shape.len() != 2 {
            return Err(node.error(format!("only 2-D pooling is supported, not kernel_shape {kernel_shape:?}")));
        }
        if node.int("storage_order", 0) != 0 {
            return Err(node.unsupported("column-major `storage_order` is not supported"));
        }
        let window = Window::read(node, &kernel_shape, sx.as_deref())?;
        let out = sx.filter(|_| window.known).map(|sx| vec![sx[0], sx[1], window.out[0], window.out[1]]);
        let mut attrs = window.attrs(&mut self.emit);
        attrs.push(("kernel_shape", self.emit.ints(&kernel_shape)));
        let kernel = if node.op == "MaxPool" {
            "nn.max_pool2d.f32"
        } else {
            attrs.push(("count_include_pad", self.emit.int(node.int("count_include_pad", 0))));
            "nn.average_pool2d.f32"
        };
        attrs.push(("ceil_mode", self.emit.int(node.int("ceil_mode", 0))));
        self.kernel(node, kernel, &[x], attrs, out)
    }

    fn gemm(&mut self, node: &Node<'_>) -> Result<(), ImportError> {
        let (a, sa) = self.tensor(node.required(0)?, node)?;
        let (b, sb) = self.tensor(node.required(1)?, node)?;
        let mut operands = vec![a, b];
        if let Some(c) = node.input(2) {
            operands.push(self.tensor(c, node)?.0);
        }
        let (trans_a, trans_b) = (node.int("transA", 0), node.int("transB", 0));
        let out = match (sa, sb) {
            (Some(sa), Some(sb)) if sa.len() == 2 && sb.len() == 2 => {
                Some(vec![sa[if trans_a != 0 { 1 } else { 0 }], sb[if trans_b != 0 { 0 } else { 1 }]])
            }
            _ => None,
        };
        let attrs = vec![
            ("alpha", self.emit.float(node.float("alpha", 1.0))),
            ("beta", self.emit.float(node.float("beta", 1.0))),
            ("transA", self.emit.int(trans_a)),
            ("transB", self.emit.int(trans_b)),
        ];
        self.kernel(node, "nn.gemm.f32", &operands, attrs, out)
    }

    fn clip(&mut self, node: &Node<'_>) -> Result<(), ImportError> {
        let (x, shape) = self.tensor(node.required(0)?, node)?;
        let (min, max) = self.clip_bounds(node)?;
        let mut attrs = Vec::new();
        attrs.extend(min.map(|min| ("min", self.emit.float(min))));
        attrs.extend(max.map(|max| ("max", self.emit.float(max))));
        self.kernel(node, "nn.clip.f32", &[x], attrs, shape)
    }

    /// Clip's bounds, each when given: attributes before opset 11, constant inputs from it.
    pub fn clip_bounds(&self, node: &Node<'_>) -> Result<(Option<f32>, Option<f32>), ImportError> {
        let mut bounds = [None, None];
        for (slot, (i, name)) in bounds.iter_mut().zip([(1, "min"), (2, "max")]) {
            *slot = if self.opset < 11 {
                node.has(name).then(|| node.float(name, 0.0))
            } else {
                match node.input(i) {
                    Some(input) => {
                        let values = self.constant(input, node, name)?.to_f32s().map_err(|e| node.error(e))?;
                        match values.as_slice() {
                            [value] => Some(*value),
                            _ => return Err(node.error(format!("its {name} holds {} values, not one", values.len()))),
                        }
                    }
                    None => None,
                }
            };
        }
        Ok((bounds[0], bounds[1]))
    }

    /// Softmax; before opset 13 along the rows of the input flattened at `axis` (default 1),
    /// from 13 along `axis` alone (default -1).
    fn softmax(&mut self, node: &Node<'_>) -> Result<(), ImportError> {
        let (x, shape) = self.tensor(node.required(0)?, node)?;
        if self.opset >= 13 {
            let axis = self.emit.int(node.int("axis", -1));
            return self.kernel(node, "nn.softmax.f32", &[x], vec![("axis", axis)], shape);
        }
        // Flattening needs the shape; without it, onnx.Softmax flattens at run time.
        let Some(dims) = shape else { return self.generic(node) };
        let rank = dims.len() as i64;
        let axis = node.int("axis", 1);
        let axis = if axis < 0 { axis + rank } else { axis };
        if !(0..rank).contains(&axis) {
            return Err(node.error(format!("axis {axis} is outside an input of rank {rank}")));
        }
        let last = self.emit.int(-1);
        if axis == rank - 1 {
            return self.kernel(node, "nn.softmax.f32", &[x], vec![("axis", last)], Some(dims));
        }
        let flat = flatten(&dims, axis).map_err(|e| node.error(e))?;
        let flat = self.emit.ints(&flat);
        let rows = self.emit.kernel("nn.reshape", &node.name, &[x], vec![("shape", flat)]);
        let soft = self.emit.kernel("nn.softmax.f32", &node.name, &[rows], vec![("axis", last)]);
        let back = self.emit.ints(&dims);
        self.kernel(node, "nn.reshape", &[soft], vec![("shape", back)], Some(dims))
    }
}

/// A convolution's or pooling's window: strides, dilations, explicit pads (`auto_pad`
/// resolved) and, when the input's shape is known, the output's spatial size.
struct Window {
    strides: Vec<i64>,
    dilations: Vec<i64>,
    pads: Vec<i64>,
    out: [i64; 2],
    known: bool,
}

impl Window {
    fn read(node: &Node<'_>, kernel: &[i64], input: Option<&[i64]>) -> Result<Window, ImportError> {
        let strides = node.ints("strides").unwrap_or_else(|| vec![1, 1]);
        let dilations = node.ints("dilations").unwrap_or_else(|| vec![1, 1]);
        let pads = node.ints("pads").unwrap_or_else(|| vec![0; 4]);
        Window::new(node, kernel, input, strides, dilations, pads)
    }

    /// The window of a 1-D node (`kernel` of one size, `input` `[N, C, L]`) as a 2-D one over
    /// `[N, C, 1, L]`: one row, the node's strides, dilations and pads along the columns.
    fn read_1d(node: &Node<'_>, kernel: &[i64], input: Option<&[i64]>) -> Result<Window, ImportError> {
        let one = |name: &str, default: i64| match node.ints(name) {
            None => Ok(default),
            Some(values) if values.len() == 1 => Ok(values[0]),
            Some(values) => Err(node.error(format!("{name} {values:?} is not 1-D"))),
        };
        let pads = match node.ints("pads").as_deref() {
            None => vec![0; 4],
            Some(&[begin, end]) => vec![0, begin, 0, end],
            Some(other) => return Err(node.error(format!("pads {other:?} are not 1-D"))),
        };
        let lifted = input.filter(|dims| dims.len() == 3).map(|dims| vec![dims[0], dims[1], 1, dims[2]]);
        let (strides, dilations) = (vec![1, one("strides", 1)?], vec![1, one("dilations", 1)?]);
        Window::new(node, &[1, kernel[0]], lifted.as_deref(), strides, dilations, pads)
    }

    fn new(
        node: &Node<'_>,
        kernel: &[i64],
        input: Option<&[i64]>,
        strides: Vec<i64>,
        dilations: Vec<i64>,
        mut pads: Vec<i64>,
    ) -> Result<Window, ImportError> {
        if strides.len() != 2 || dilations.len() != 2 || pads.len() != 4 {
            return Err(
                node.error(format!("strides {strides:?}, dilations {dilations:?} or pads {pads:?} are not 2-D"))
            );
        }
        if strides.iter().chain(&dilations).chain(kernel).any(|&v| v < 1) || pads.iter().any(|&p| p < 0) {
            return Err(node.error(format!(
                "kernel_shape {kernel:?}, strides {strides:?}, dilations {dilations:?} and pads {pads:?} must be positive"
            )));
        }
        let ceil = node.int("ceil_mode", 0) != 0;
        let spatial = input.filter(|dims| dims.len() == 4).map(|dims| [dims[2], dims[3]]);
        let auto_pad = node.string("auto_pad").unwrap_or_else(|| "NOTSET".to_owned());
        let mut out = [0; 2];
        for i in 0..2 {
            let extent = (kernel[i] - 1) * dilations[i] + 1;
            match auto_pad.as_str() {
                "NOTSET" => {}
                "VALID" => (pads[i], pads[i + 2]) = (0, 0),
                "SAME_UPPER" | "SAME_LOWER" => {
                    let size =
                        spatial.ok_or_else(|| node.error("auto_pad needs the input's shape, not known at import"))?[i];
                    let target = (size + strides[i] - 1) / strides[i];
                    let total = ((target - 1) * strides[i] + extent - size).max(0);
                    let small = total / 2;
                    (pads[i], pads[i + 2]) =
                        if auto_pad == "SAME_UPPER" { (small, total - small) } else { (total - small, small) };
                }
                other => return Err(node.error(format!("auto_pad `{other}` is not an ONNX padding"))),
            }
            if let Some(spatial) = spatial {
                let span = spatial[i] + pads[i] + pads[i + 2] - extent;
                if span < 0 {
                    return Err(node.error(format!("the window {kernel:?} does not fit the input {input:?}")));
                }
                out[i] = if ceil { (span + strides[i] - 1) / strides[i] + 1 } else { span / strides[i] + 1 };
                // A last window that would start in the end padding is dropped (ceil mode).
                if ceil && (out[i] - 1) * strides[i] >= spatial[i] + pads[i] {
                    out[i] -= 1;
                }
            }
        }
        Ok(Window { strides, dilations, pads, out, known: spatial.is_some() })
    }

    fn attrs(&self, emit: &mut Emitter) -> Attrs<'static> {
        vec![
            ("strides", emit.ints(&self.strides)),
            ("dilations", emit.ints(&self.dilations)),
            ("pads", emit.ints(&self.pads)),
        ]
    }
}

/// The graphs among a node's attributes (a control-flow node's bodies and branches).
/// Whether `tensor` holds strings.
pub fn holds_strings(tensor: &TensorProto) -> bool {
    tensor.data_type == Some(DataType::String as i32)
}

fn subgraphs(node: &NodeProto) -> Vec<&GraphProto> {
    node.attribute.iter().filter_map(|a| a.g.as_ref()).collect()
}

/// Appends to `out` (once each, in the order they are read) the names `graph` and its subgraphs
/// read but do not define: the outer-scope values it captures.
/// Adds to `uses` how many times each name is read in `graph`: as a node's input (each time),
/// inside a node's subgraphs (once per node), and as an output.
pub fn count_uses(graph: &GraphProto, uses: &mut HashMap<String, usize>) {
    for node in &graph.node {
        let mut read: Vec<String> = node.input.iter().filter(|name| !name.is_empty()).cloned().collect();
        let mut inner = Vec::new();
        for graph in subgraphs(node) {
            free_names(graph, &mut inner);
        }
        read.extend(inner);
        for name in read {
            *uses.entry(name).or_default() += 1;
        }
    }
    for output in &graph.output {
        *uses.entry(output.name().to_owned()).or_default() += 1;
    }
}

fn free_names(graph: &GraphProto, out: &mut Vec<String>) {
    let mut defined: HashSet<&str> = graph.input.iter().map(|i| i.name()).collect();
    defined.extend(graph.initializer.iter().map(|t| t.name()));
    let mut read = Vec::new();
    for node in &graph.node {
        read.extend(node.input.iter().filter(|name| !name.is_empty() && !defined.contains(name.as_str())).cloned());
        let mut inner = Vec::new();
        for graph in subgraphs(node) {
            free_names(graph, &mut inner);
        }
        read.extend(inner.into_iter().filter(|name| !defined.contains(name.as_str())));
        defined.extend(node.output.iter().map(String::as_str));
    }
    read.extend(graph.output.iter().map(|o| o.name().to_owned()).filter(|name| !defined.contains(name.as_str())));
    for name in read {
        if !out.contains(&name) {
            out.push(name);
        }
    }
}

/// numpy's broadcast of two shapes, `None` when they do not broadcast.
fn broadcast(a: &[i64], b: &[i64]) -> Option<Vec<i64>> {
    let rank = a.len().max(b.len());
    let dim = |d: &[i64], i: usize| (i + d.len()).checked_sub(rank).map_or(1, |j| d[j]);
    (0..rank)
        .map(|i| match (dim(a, i), dim(b, i)) {
            (x, y) if x == y || y == 1 => Some(x),
            (1, y) => Some(y),
            _ => None,
        })
        .collect()
}

/// Flatten's 2-D shape of `dims` at `axis` (negative from the end; the rank itself allowed).
fn flatten(dims: &[i64], axis: i64) -> Result<Vec<i64>, String> {
    let rank = dims.len() as i64;
    let axis = if axis < 0 { axis + rank } else { axis };
    if !(0..=rank).contains(&axis) {
        return Err(format!("axis {axis} is outside a tensor of rank {rank}"));
    }
    let (rows, columns) = dims.split_at(axis as usize);
    let size = |part: &[i64]| checked_product(part).ok_or_else(|| format!("shape {dims:?} has too many elements"));
    Ok(vec![size(rows)?, size(columns)?])
}

/// The product of `dims`, `None` when it overflows.
fn checked_product(dims: &[i64]) -> Option<i64> {
    dims.iter().try_fold(1i64, |n, &d| n.checked_mul(d))
}

/// Reshape's result for `dims`: 0 keeps a dimension, one -1 takes the rest.
fn resolve_reshape(dims: &[i64], requested: &[i64]) -> Result<Vec<i64>, String> {
    let too_many = || format!("cannot reshape {dims:?} to {requested:?}: too many elements");
    let total = checked_product(dims).ok_or_else(too_many)?;
    let mut out = Vec::with_capacity(requested.len());
    let mut infer = None;
    for (i, &d) in requested.iter().enumerate() {
        match d {
            0 => out.push(*dims.get(i).ok_or_else(|| format!("shape {requested:?} keeps dimension {i} of {dims:?}"))?),
            -1 if infer.is_none() => {
                infer = Some(i);
                out.push(1);
            }
            d if d > 0 => out.push(d),
            _ => return Err(format!("shape {requested:?} is not a reshape of {dims:?}")),
        }
    }
    let known = checked_product(&out).ok_or_else(too_many)?;
    if let Some(i) = infer {
        if known == 0 || total % known != 0 {
            return Err(format!("cannot reshape {dims:?} to {requested:?}"));
        }
        out[i] = total / known;
    } else if known != total {
        return Err(format!("cannot reshape {dims:?} to {requested:?}"));
    }
    Ok(out)
}

/// The shape of `shapes` concatenated along `axis`.
fn concat_shape(shapes: &[Vec<i64>], axis: i64) -> Result<Vec<i64>, String> {
    let first = &shapes[0];
    let rank = first.len() as i64;
    let axis = if axis < 0 { axis + rank } else { axis };
    if !(0..rank).contains(&axis) {
        return Err(format!("axis {axis} is outside inputs of rank {rank}"));
    }
    let mut out = first.clone();
    for shape in &shapes[1..] {
        let fits = shape.len() == first.len()
            && shape.iter().zip(first).enumerate().all(|(i, (a, b))| i as i64 == axis || a == b);
        if !fits {
            return Err(format!("{shape:?} does not concatenate with {first:?} along axis {axis}"));
        }
        out[axis as usize] += shape[axis as usize];
    }
    Ok(out)
}

/// Constants concatenated along `axis` into `dims` (their element types must agree).
fn concat_constants(constants: &[Constant], axis: i64, dims: Vec<i64>) -> Result<Constant, String> {
    let elem = constants[0].elem;
    if constants.iter().any(|c| c.elem != elem) {
        return Err("its inputs hold different element types".to_owned());
    }
    let rank = dims.len() as i64;
    let axis = (if axis < 0 { axis + rank } else { axis }) as usize;
    let outer = element_count(&dims[..axis]).unwrap_or(0);
    let mut out = Vec::new();
    for o in 0..outer {
        for c in constants {
            let chunk = element_count(&c.dims[axis..]).unwrap_or(0) * elem.size();
            out.extend_from_slice(&c.data.bytes()[o * chunk..(o + 1) * chunk]);
        }
    }
    Constant::new(elem, dims, Blob::from_vec(out))
}
