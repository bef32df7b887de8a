//! A small, dialect-agnostic MLIR IR: operations, blocks, regions and values in flat arenas,
//! referred to by index. Building and walking it allocates little: an operation's operands,
//! successors and regions live in shared pools, its results and a block's arguments are runs of
//! consecutive [`ValueId`]s, and names, attributes and types are interned in the [`MlirContext`].

pub(crate) mod attribute;
pub(crate) mod build;
pub(crate) mod context;
pub(crate) mod resources;
pub(crate) mod types;

pub use attribute::{dense_storage, AffineExpr, AffineMap, ApInt, ApWords, Attribute, Blob, IntegerSet, ResourceRef};
pub use build::NewOp;
pub use context::{AttrId, Dialect, DialectId, MlirContext, OpName, OpNameId, Sym, TypeId};
pub use resources::{ResourceEntry, ResourceGroup, ResourceValue, Resources};
pub use types::{FloatKind, Signedness, Type, DYNAMIC};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OpId(pub u32);
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockId(pub u32);
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RegionId(pub u32);
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueId(pub u32);

/// A run `start..start + len` in one of the module's pools.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    pub start: u32,
    pub len: u32,
}

impl Span {
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..(self.start + self.len) as usize
    }
}

/// Where a value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueDef {
    OpResult {
        op: OpId,
        index: u32,
    },
    BlockArgument {
        block: BlockId,
        index: u32,
    },
    /// Reserved by a reader but never defined (only in a malformed file's unused slots).
    Undefined,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Value {
    pub ty: TypeId,
    pub def: ValueDef,
    /// A block argument's location (`None` for op results, whose location is the op's).
    pub loc: Option<AttrId>,
}

/// An operation's properties (`<{...}>` in the generic form).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Properties {
    None,
    /// A dictionary attribute: an unregistered op's properties, or a registered op's native
    /// properties decoded into the attributes they stand for.
    Dict(AttrId),
    /// A registered op's native encoding that rtx could not decode: index into
    /// [`Module::opaque_properties`] (kept out of line so that every operation stays small). It
    /// holds attribute indices of the file it came from, so it can be neither printed nor
    /// written to another file as is.
    Opaque(u32),
}

/// How a value's uses were ordered in the producing program (bytecode v3+ use-list records),
/// exactly as stored: with `is_pairs`, `indices` holds `(position, reference)` pairs; otherwise
/// position `indices[r]` for each reference use `r`. See the module docs of `bytecode::reader`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UseListOrder {
    pub value: ValueId,
    pub is_pairs: bool,
    pub indices: Box<[u32]>,
}

#[derive(Clone, Debug)]
pub struct Operation {
    pub name: OpNameId,
    pub loc: AttrId,
    /// The (discardable, or all for ops without properties) attribute dictionary, if any.
    pub attrs: Option<AttrId>,
    pub properties: Properties,
    pub operands: Span,
    /// `results.len` consecutive values starting at `ValueId(results.start)`.
    pub results: Span,
    pub successors: Span,
    pub regions: Span,
    /// Whether the regions were stored as isolated from above (a lazily loadable section in v2+).
    pub isolated: bool,
    pub parent: Option<BlockId>,
}

#[derive(Clone, Debug, Default)]
pub struct Block {
    /// `arguments.len` consecutive values starting at `ValueId(arguments.start)`.
    pub arguments: Span,
    pub ops: Vec<OpId>,
    pub parent: Option<RegionId>,
}

#[derive(Clone, Debug, Default)]
pub struct Region {
    pub blocks: Vec<BlockId>,
    pub parent: Option<OpId>,
}

/// A whole MLIR module (any top-level ops) with the tables it needs.
#[derive(Debug, Default)]
pub struct Module {
    pub context: MlirContext,
    /// The top-level operations (normally one `builtin.module`).
    pub top_level: Vec<OpId>,
    pub ops: Vec<Operation>,
    pub blocks: Vec<Block>,
    pub regions: Vec<Region>,
    pub values: Vec<Value>,
    pub operand_pool: Vec<ValueId>,
    pub successor_pool: Vec<BlockId>,
    pub region_pool: Vec<RegionId>,
    pub resources: Resources,
    pub use_list_orders: Vec<UseListOrder>,
    /// The bytes of [`Properties::Opaque`] blobs.
    pub opaque_properties: Vec<Box<[u8]>>,
    /// The bytecode version and producer string of the file it was read from, if any.
    pub bytecode_version: Option<u64>,
    pub producer: Option<String>,
}

impl Module {
    pub fn op(&self, id: OpId) -> &Operation {
        &self.ops[id.0 as usize]
    }
    pub fn block(&self, id: BlockId) -> &Block {
        &self.blocks[id.0 as usize]
    }
    pub fn region(&self, id: RegionId) -> &Region {
        &self.regions[id.0 as usize]
    }
    pub fn value(&self, id: ValueId) -> &Value {
        &self.values[id.0 as usize]
    }
    pub fn operands(&self, op: OpId) -> &[ValueId] {
        &self.operand_pool[self.op(op).operands.range()]
    }
    pub fn successors(&self, op: OpId) -> &[BlockId] {
        &self.successor_pool[self.op(op).successors.range()]
    }
    pub fn op_regions(&self, op: OpId) -> &[RegionId] {
        &self.region_pool[self.op(op).regions.range()]
    }
    pub fn results(&self, op: OpId) -> impl ExactSizeIterator<Item = ValueId> {
        self.op(op).results.range().map(|i| ValueId(i as u32))
    }
    pub fn arguments(&self, block: BlockId) -> impl ExactSizeIterator<Item = ValueId> {
        self.block(block).arguments.range().map(|i| ValueId(i as u32))
    }
    /// The full name of an operation (`dialect.op`).
    pub fn op_name(&self, op: OpId) -> std::borrow::Cow<'_, str> {
        self.context.str(self.context.op_name(self.op(op).name).full)
    }

    /// An op's attributes as upstream's `Operation::getAttrs` lists them: the inherent ones its
    /// properties hold (when decoded) and the discardable ones, as `(name, value)` pairs sorted
    /// by name. Keys are string attributes.
    pub fn attributes(&self, op: OpId) -> Vec<(AttrId, AttrId)> {
        let ctx = &self.context;
        let op = self.op(op);
        let props = match op.properties {
            Properties::Dict(dict) => Some(dict),
            Properties::None | Properties::Opaque(_) => None,
        };
        let mut all: Vec<(AttrId, AttrId)> = [props, op.attrs]
            .into_iter()
            .flatten()
            .filter_map(|dict| match ctx.attr(dict) {
                Attribute::Dictionary(entries) => Some(entries.iter().copied()),
                _ => None,
            })
            .flatten()
            .collect();
        let name = |key: AttrId| match ctx.attr(key) {
            Attribute::String { value, .. } => ctx.str_bytes(*value),
            _ => &[],
        };
        all.sort_by(|a, b| name(a.0).cmp(name(b.0)));
        all
    }

    /// Every operation, in pre-order (an op before the ops of its regions).
    pub fn walk(&self) -> Vec<OpId> {
        let mut order = Vec::with_capacity(self.ops.len());
        let mut stack: Vec<OpId> = self.top_level.iter().rev().copied().collect();
        while let Some(op) = stack.pop() {
            order.push(op);
            for &region in self.op_regions(op).iter().rev() {
                for &block in self.region(region).blocks.iter().rev() {
                    stack.extend(self.block(block).ops.iter().rev().copied());
                }
            }
        }
        order
    }
}

/// How one element of a `dense<...>` or `array<...>` attribute is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElementStorage {
    pub scalar: ScalarKind,
    /// Bits of the scalar value (1 for i1, 64 for index).
    pub bits: u32,
    /// A complex element: two scalars.
    pub complex: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarKind {
    Integer(Signedness),
    Index,
    Float(FloatKind),
}

impl ElementStorage {
    /// Bytes one scalar takes in dense storage (i1 counts as one byte; see `i1` packing).
    pub fn scalar_bytes(&self) -> usize {
        self.bits.div_ceil(8) as usize
    }
    /// Bytes one element takes (twice the scalar for complex).
    pub fn element_bytes(&self) -> usize {
        self.scalar_bytes() * if self.complex { 2 } else { 1 }
    }
    /// Whether elements are bit-packed i1 in bytecode dense storage.
    pub fn is_i1(&self) -> bool {
        self.bits == 1 && !self.complex && matches!(self.scalar, ScalarKind::Integer(_))
    }
}

impl MlirContext {
    /// The dense storage of elements of type `elem`, or `None` if it is not an int, index, float
    /// or complex of those.
    pub fn element_storage(&self, elem: TypeId) -> Option<ElementStorage> {
        let scalar = |ty: &Type| match *ty {
            Type::Integer { width, signedness } => Some((ScalarKind::Integer(signedness), width)),
            Type::Index => Some((ScalarKind::Index, 64)),
            Type::Float(kind) => Some((ScalarKind::Float(kind), kind.bit_width())),
            _ => None,
        };
        match self.ty(elem) {
            Type::Complex(inner) => {
                let (scalar, bits) = scalar(self.ty(*inner))?;
                Some(ElementStorage { scalar, bits, complex: true })
            }
            ty => {
                let (scalar, bits) = scalar(ty)?;
                Some(ElementStorage { scalar, bits, complex: false })
            }
        }
    }

    /// The number of elements of a statically shaped type, if it has one that fits in `u64`.
    pub fn num_elements(&self, ty: TypeId) -> Option<u64> {
        let shape = self.ty(ty).shape()?;
        shape.iter().try_fold(1u64, |acc, &dim| if dim < 0 { None } else { acc.checked_mul(dim as u64) })
    }
}

#[cfg(test)]
mod tests {
    /// Reading is bound by the memory written per operation: keep it small.
    #[test]
    fn an_operation_stays_small() {
        assert!(std::mem::size_of::<super::Operation>() <= 72, "{}", std::mem::size_of::<super::Operation>());
        assert_eq!(std::mem::size_of::<super::Properties>(), 8);
    }
}
