//! The MLIR the importer writes: a `builtin.module` holding a `func.func` per graph (the model's,
//! and one per subgraph of a control-flow node) whose body is a straight line of kernels on
//! `!tfrt_tensor.tensor` values, ending in `tfrt.return` —
//! built in place with the IR's builder, so that weights go from the model's bytes into dense
//! attributes without a text round trip.

use super::constant::{Constant, Elem};
use rtx_mlir::ir::{ApInt, AttrId, Attribute, BlockId, FloatKind, Module, NewOp, Signedness, Type, TypeId, ValueId};
use rtx_mlir::text::parse::parse_type_in;

/// A function being written: its module, its body block (in no function until
/// [`finish`](Emitter::finish)), and the tensor type.
pub struct Emitter {
    pub module: Module,
    top: BlockId,
    body: BlockId,
    tensor: TypeId,
}

impl Emitter {
    /// A module for one function taking `arguments` tensors, whose body is open.
    pub fn new(arguments: usize) -> Emitter {
        let mut module = Module::default();
        let tensor = parse_type_in(&mut module.context, "!tfrt_tensor.tensor").expect("TFRT's tensor type parses");
        let unknown = module.context.intern_attr(Attribute::UnknownLoc);
        let module_op = op(&mut module, b"builtin.module", unknown, None, &[], &[], 1);
        let top = module.add_block(&[]);
        module.append_block(module.op_regions(module_op)[0], top);
        module.top_level.push(module_op);
        let body = module.add_block(&vec![(tensor, Some(unknown)); arguments]);
        Emitter { module, top, body, tensor }
    }

    /// The function's arguments, in order.
    pub fn arguments(&self) -> Vec<ValueId> {
        self.module.arguments(self.body).collect()
    }

    /// Appends the kernel `name` with `operands` and `attributes`, at the location of the node
    /// `node`; its one tensor result.
    pub fn kernel(&mut self, name: &str, node: &str, operands: &[ValueId], attributes: Vec<(&str, AttrId)>) -> ValueId {
        self.kernel_results(name, node, operands, attributes, 1)[0]
    }

    /// As [`kernel`](Self::kernel), for a kernel of `count` tensor results.
    pub fn kernel_results(
        &mut self,
        name: &str,
        node: &str,
        operands: &[ValueId],
        attributes: Vec<(&str, AttrId)>,
        count: usize,
    ) -> Vec<ValueId> {
        let loc = self.location(node);
        let attrs = if attributes.is_empty() { None } else { self.dictionary(attributes) };
        let types = vec![self.tensor; count];
        let id = op(&mut self.module, name.as_bytes(), loc, attrs, operands, &types, 0);
        self.module.append_op(self.body, id);
        self.module.results(id).collect()
    }

    /// Ends the body with `tfrt.return` of `results` and makes it the function `name`.
    pub fn finish(mut self, name: &str, results: &[ValueId]) -> Module {
        self.function(name, results);
        self.module
    }

    /// Opens the body of another function, of `arguments` tensors, where kernels go until
    /// [`close`](Self::close); returns the body it replaces.
    pub fn open(&mut self, arguments: usize) -> BlockId {
        let unknown = self.module.context.intern_attr(Attribute::UnknownLoc);
        let body = self.module.add_block(&vec![(self.tensor, Some(unknown)); arguments]);
        std::mem::replace(&mut self.body, body)
    }

    /// Ends the body opened last as the function `name` returning `results`, and goes back to
    /// `previous`, the body [`open`](Self::open) returned.
    pub fn close(&mut self, previous: BlockId, name: &str, results: &[ValueId]) {
        self.function(name, results);
        self.body = previous;
    }

    /// `@name`, a reference to a function (a kernel's function attribute).
    pub fn symbol(&mut self, name: &str) -> AttrId {
        let name = self.string(name);
        self.module.context.intern_attr(Attribute::FlatSymbolRef(name))
    }

    /// Ends the current body with `tfrt.return` of `results` and adds it to the module as the
    /// function `name`.
    fn function(&mut self, name: &str, results: &[ValueId]) {
        let unknown = self.module.context.intern_attr(Attribute::UnknownLoc);
        let ret = op(&mut self.module, b"tfrt.return", unknown, None, results, &[], 0);
        self.module.append_op(self.body, ret);
        let inputs = vec![self.tensor; self.module.block(self.body).arguments.len as usize].into();
        let outputs = vec![self.tensor; results.len()].into();
        let function_type = self.module.context.intern_type(Type::Function { inputs, results: outputs });
        let function_type = self.module.context.intern_attr(Attribute::Type(function_type));
        let sym_name = self.string(name);
        let attrs = self.dictionary(vec![("function_type", function_type), ("sym_name", sym_name)]);
        let func = op(&mut self.module, b"func.func", unknown, attrs, &[], &[], 1);
        self.module.append_block(self.module.op_regions(func)[0], self.body);
        self.module.append_op(self.top, func);
    }

    /// `name("node")`: where kernel errors point, so that a failing kernel names its node.
    fn location(&mut self, node: &str) -> AttrId {
        let ctx = &mut self.module.context;
        let child = ctx.intern_attr(Attribute::UnknownLoc);
        let name = ctx.intern_string_attr(node.as_bytes());
        ctx.intern_attr(Attribute::NameLoc { name, child })
    }

    pub fn string(&mut self, text: &str) -> AttrId {
        self.module.context.intern_string_attr(text.as_bytes())
    }

    /// `value : i64`.
    pub fn int(&mut self, value: i64) -> AttrId {
        let ctx = &mut self.module.context;
        let ty = ctx.intern_type(Type::Integer { width: 64, signedness: Signedness::Signless });
        ctx.intern_attr(Attribute::Integer { ty, value: ApInt::from_u64(64, value as u64) })
    }

    /// `[a, b, ...]` of i64s.
    pub fn ints(&mut self, values: &[i64]) -> AttrId {
        let elements = values.iter().map(|&v| self.int(v)).collect();
        self.module.context.intern_attr(Attribute::Array(elements))
    }

    /// `[a, b, ...]` of f32s.
    pub fn floats(&mut self, values: &[f32]) -> AttrId {
        let elements = values.iter().map(|&v| self.float(v)).collect();
        self.module.context.intern_attr(Attribute::Array(elements))
    }

    /// `["a", "b", ...]`: strings (an aggregate of strings in BEF).
    pub fn strings(&mut self, values: &[impl AsRef<[u8]>]) -> AttrId {
        let elements = values.iter().map(|v| self.module.context.intern_string_attr(v.as_ref())).collect();
        self.module.context.intern_attr(Attribute::Array(elements))
    }

    /// `value : f32`.
    pub fn float(&mut self, value: f32) -> AttrId {
        let ctx = &mut self.module.context;
        let ty = ctx.intern_type(Type::Float(FloatKind::F32));
        ctx.intern_attr(Attribute::Float { ty, bits: ApInt::from_u64(32, value.to_bits() as u64) })
    }

    /// `dense<...> : tensor<dims x elem>` holding `constant`'s bytes (shared, not copied).
    pub fn dense(&mut self, constant: &Constant) -> AttrId {
        let ctx = &mut self.module.context;
        let integer = |width, signedness| Type::Integer { width, signedness };
        let elem = match constant.elem {
            Elem::F32 => Type::Float(FloatKind::F32),
            Elem::F64 => Type::Float(FloatKind::F64),
            Elem::F16 => Type::Float(FloatKind::F16),
            Elem::BF16 => Type::Float(FloatKind::BF16),
            Elem::I8 => integer(8, Signedness::Signless),
            Elem::I16 => integer(16, Signedness::Signless),
            Elem::I32 => integer(32, Signedness::Signless),
            Elem::I64 => integer(64, Signedness::Signless),
            Elem::U8 => integer(8, Signedness::Unsigned),
            Elem::U16 => integer(16, Signedness::Unsigned),
            Elem::U32 => integer(32, Signedness::Unsigned),
            Elem::U64 => integer(64, Signedness::Unsigned),
            Elem::Bool => integer(1, Signedness::Signless),
        };
        let elem = ctx.intern_type(elem);
        let ty = ctx.intern_type(Type::RankedTensor { shape: constant.dims.clone().into(), elem, encoding: None });
        ctx.intern_attr(Attribute::DenseElements { ty, data: constant.data.clone() })
    }

    /// A dictionary of `entries`, sorted by name as MLIR keeps them.
    fn dictionary(&mut self, entries: Vec<(&str, AttrId)>) -> Option<AttrId> {
        let mut entries: Vec<(String, AttrId)> = entries.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let entries = entries.into_iter().map(|(k, v)| (self.string(&k), v)).collect();
        Some(self.module.context.intern_attr(Attribute::Dictionary(entries)))
    }
}

/// Adds the operation `name` (in no block yet).
fn op(
    module: &mut Module,
    name: &[u8],
    loc: AttrId,
    attrs: Option<AttrId>,
    operands: &[ValueId],
    result_types: &[TypeId],
    num_regions: usize,
) -> rtx_mlir::ir::OpId {
    let name = module.context.intern_op_name(name);
    module.add_op(NewOp { name, loc, attrs, operands, result_types, num_regions })
}
