//! Everything the sections refer to by index, decided before any byte is written: the dialects,
//! operation names, attributes and types the module uses (reachable ones only, equal ones merged,
//! grouped by dialect), the string table, resources, and how each op's attributes and properties
//! are written for the target version.
//!
//! Attributes and types are copied into the writer's own tables in a *canonical* form: the same
//! [`Attribute`]/[`Type`] data, but with every reference being an index into the file being
//! written (`AttrId(i)` is attribute entry `i`, `Sym(i)` string `i`, `DialectId(i)` dialect `i`;
//! see [`Mapper`]). Two entries that are equal in that form are the same entry.

use std::sync::Arc;

use foldhash::{HashMap, HashMapExt};

use super::error::WriteError;
use super::interner::Interner;
use super::llvm::{self, Item, Native};
use super::version;
use super::WriteOptions;
use crate::bytecode::reader::MAX_NESTING;
use crate::ir::{
    AttrId, Attribute, Block, BlockId, DialectId, MlirContext, Module, OpId, OpNameId, Operation, Properties, Region,
    RegionId, ResourceRef, ResourceValue, Signedness, Sym, Type, TypeId, Value, ValueDef, ValueId,
};
use crate::ods::{op_schema, OpSchema, PropKind};

pub(super) type Result<T> = std::result::Result<T, WriteError>;

const UNSET: u32 = u32::MAX;

// ---------------------------------------------------------------------------------------------
// Checked access to the module (a hand-built module may hold dangling ids: an error, not a panic).

#[cold]
pub(super) fn malformed(what: impl Into<String>) -> WriteError {
    WriteError::Malformed(what.into())
}

#[inline]
pub(super) fn op(m: &Module, id: OpId) -> Result<&Operation> {
    m.ops.get(id.0 as usize).ok_or_else(|| malformed(format!("op {} does not exist", id.0)))
}
#[inline]
pub(super) fn block(m: &Module, id: BlockId) -> Result<&Block> {
    m.blocks.get(id.0 as usize).ok_or_else(|| malformed(format!("block {} does not exist", id.0)))
}
#[inline]
pub(super) fn region(m: &Module, id: RegionId) -> Result<&Region> {
    m.regions.get(id.0 as usize).ok_or_else(|| malformed(format!("region {} does not exist", id.0)))
}
#[inline]
pub(super) fn value(m: &Module, id: ValueId) -> Result<&Value> {
    m.values.get(id.0 as usize).ok_or_else(|| malformed(format!("value {} does not exist", id.0)))
}
#[inline]
fn pool<'a, T>(pool: &'a [T], span: crate::ir::Span, what: &str) -> Result<&'a [T]> {
    let end = span.start.checked_add(span.len).ok_or_else(|| malformed(format!("{what} span overflows")))?;
    pool.get(span.start as usize..end as usize).ok_or_else(|| malformed(format!("{what} span out of range")))
}
#[inline]
pub(super) fn operands<'a>(m: &'a Module, op: &Operation) -> Result<&'a [ValueId]> {
    pool(&m.operand_pool, op.operands, "operand")
}
#[inline]
pub(super) fn successors<'a>(m: &'a Module, op: &Operation) -> Result<&'a [BlockId]> {
    pool(&m.successor_pool, op.successors, "successor")
}
#[inline]
pub(super) fn regions<'a>(m: &'a Module, op: &Operation) -> Result<&'a [RegionId]> {
    pool(&m.region_pool, op.regions, "region")
}
/// A run of consecutive values (results, block arguments), checked to exist.
#[inline]
pub(super) fn value_run(m: &Module, span: crate::ir::Span) -> Result<std::ops::Range<u32>> {
    let end = span.start.checked_add(span.len).ok_or_else(|| malformed("value span overflows"))?;
    if span.len > 0 && end as usize > m.values.len() {
        return Err(malformed("value span out of range"));
    }
    Ok(if span.len == 0 { 0..0 } else { span.start..end })
}
#[inline]
pub(super) fn attr(ctx: &MlirContext, id: AttrId) -> Result<&Attribute> {
    ctx.attrs().get(id.0 as usize).ok_or_else(|| malformed(format!("attribute {} does not exist", id.0)))
}
#[inline]
pub(super) fn ty(ctx: &MlirContext, id: TypeId) -> Result<&Type> {
    ctx.types().get(id.0 as usize).ok_or_else(|| malformed(format!("type {} does not exist", id.0)))
}
pub(super) fn string(ctx: &MlirContext, sym: Sym) -> Result<&[u8]> {
    if sym.0 as usize >= ctx.num_strings() {
        return Err(malformed(format!("string {} does not exist", sym.0)));
    }
    Ok(ctx.str_bytes(sym))
}
pub(super) fn op_name(m: &Module, id: OpId) -> String {
    m.ops
        .get(id.0 as usize)
        .and_then(|op| m.context.op_names().get(op.name.0 as usize))
        .filter(|name| (name.full.0 as usize) < m.context.num_strings())
        .map(|name| m.context.str(name.full).into_owned())
        .unwrap_or_else(|| format!("<op {}>", id.0))
}

/// Every op in pre-order (an op before the ops of its regions), checking the structure; `visit`
/// sees each op when it is reached (while its fields are in cache).
fn walk(m: &Module, mut visit: impl FnMut(OpId, &Operation) -> Result<()>) -> Result<Vec<OpId>> {
    let mut order = Vec::with_capacity(m.ops.len());
    let mut stack: Vec<OpId> = m.top_level.iter().rev().copied().collect();
    while let Some(id) = stack.pop() {
        if order.len() > m.ops.len() {
            return Err(malformed("an op is reachable twice"));
        }
        order.push(id);
        let o = op(m, id)?;
        visit(id, o)?;
        for &r in regions(m, o)?.iter().rev() {
            for &b in region(m, r)?.blocks.iter().rev() {
                stack.extend(block(m, b)?.ops.iter().rev().copied());
            }
        }
    }
    Ok(order)
}

/// The region a value is defined in (`None`: the top level).
fn defining_region(m: &Module, v: ValueId) -> Result<Option<RegionId>> {
    match value(m, v)?.def {
        ValueDef::OpResult { op: def, .. } => parent_region(m, def),
        ValueDef::BlockArgument { block: b, .. } => Ok(block(m, b)?.parent),
        ValueDef::Undefined => Err(WriteError::UndefinedValue(String::new())),
    }
}

fn parent_region(m: &Module, id: OpId) -> Result<Option<RegionId>> {
    match op(m, id)?.parent {
        Some(b) => Ok(block(m, b)?.parent),
        None => Ok(None),
    }
}

/// An op is isolated unless some op inside it uses a value defined outside it: walks up from each
/// of `user`'s operands' uses to the region defining the value, marking every op crossed as not
/// isolated. Operands defined in `user`'s own block, most of them, cross nothing: they are told
/// apart inline, the walk up is out of line.
#[inline]
fn mark_not_isolated(
    m: &Module,
    user: OpId,
    user_op: &Operation,
    used: &[ValueId],
    isolated: &mut [bool],
) -> Result<()> {
    for &v in used {
        let def_block = match m.values.get(v.0 as usize).map(|v| v.def) {
            Some(ValueDef::OpResult { op: def, .. }) => m.ops.get(def.0 as usize).and_then(|o| o.parent),
            Some(ValueDef::BlockArgument { block, .. }) => Some(block),
            _ => None,
        };
        if def_block.is_none() || def_block != user_op.parent {
            mark_crossed(m, user, v, isolated)?;
        }
    }
    Ok(())
}

/// [`mark_not_isolated`] for operand `v` of `user`, defined outside `user`'s block (or not at all).
#[inline(never)]
fn mark_crossed(m: &Module, user: OpId, v: ValueId, isolated: &mut [bool]) -> Result<()> {
    let def = defining_region(m, v).map_err(|_| WriteError::UndefinedValue(op_name(m, user)))?;
    let mut current = parent_region(m, user)?;
    let mut steps = 0usize;
    while current != def {
        let Some(r) = current else {
            return Err(WriteError::ValueNotVisible(op_name(m, user)));
        };
        let owner = region(m, r)?.parent.ok_or_else(|| malformed("region without a parent op"))?;
        isolated[owner.0 as usize] = false;
        current = parent_region(m, owner)?;
        steps += 1;
        if steps > m.ops.len() {
            return Err(malformed("op parents form a cycle"));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Canonical forms.

/// Rewrites the references inside an attribute or type. [`map_attr`]/[`map_type`] call it for
/// every child, in encoding order.
pub(super) trait Mapper {
    fn attr(&mut self, id: AttrId) -> Result<AttrId>;
    fn ty(&mut self, id: TypeId) -> Result<TypeId>;
    /// A string of the string table (string attributes, dense strings).
    fn string(&mut self, sym: Sym) -> Result<Sym>;
    /// A dialect attribute or type kept as text.
    fn text(&mut self, dialect: DialectId, text: Sym) -> Result<(DialectId, Sym)>;
    /// The dialect of an attribute in its dialect's own encoding.
    fn dialect(&mut self, dialect: DialectId) -> Result<DialectId>;
    fn resource(&mut self, resource: ResourceRef) -> Result<ResourceRef>;
    fn custom(&mut self, kind: &'static str, dialect: DialectId) -> WriteError;
}

fn attrs(items: &mut [AttrId], m: &mut impl Mapper) -> Result<()> {
    for x in items {
        *x = m.attr(*x)?;
    }
    Ok(())
}

fn opt_attr(item: &mut Option<AttrId>, m: &mut impl Mapper) -> Result<()> {
    if let Some(x) = item {
        *x = m.attr(*x)?;
    }
    Ok(())
}

fn types(items: &mut [TypeId], m: &mut impl Mapper) -> Result<()> {
    for x in items {
        *x = m.ty(*x)?;
    }
    Ok(())
}

/// Rewrites the references of `a` in place (copying an attribute once and rewriting it costs
/// less than building a second one).
pub(super) fn map_attr(a: &mut Attribute, m: &mut impl Mapper) -> Result<()> {
    use Attribute as A;
    match a {
        A::Array(items) => attrs(items, m)?,
        A::Dictionary(entries) => {
            for (k, v) in entries.iter_mut() {
                *k = m.attr(*k)?;
                *v = m.attr(*v)?;
            }
        }
        A::String { value, ty } => {
            *value = m.string(*value)?;
            if let Some(t) = ty {
                *t = m.ty(*t)?;
            }
        }
        A::FlatSymbolRef(x) => *x = m.attr(*x)?,
        A::SymbolRef { root, nested } => {
            *root = m.attr(*root)?;
            attrs(nested, m)?;
        }
        A::Type(t)
        | A::Integer { ty: t, .. }
        | A::Float { ty: t, .. }
        | A::DenseArray { elem: t, .. }
        | A::DenseElements { ty: t, .. } => *t = m.ty(*t)?,
        A::Unit | A::AffineMap(_) | A::IntegerSet(_) | A::StridedLayout { .. } | A::UnknownLoc => {}
        A::DenseString { ty, values, .. } => {
            *ty = m.ty(*ty)?;
            for s in values.iter_mut() {
                *s = m.string(*s)?;
            }
        }
        A::DenseResource { ty, resource } => {
            *ty = m.ty(*ty)?;
            *resource = m.resource(*resource)?;
        }
        A::Sparse { ty, indices, values } => {
            *ty = m.ty(*ty)?;
            *indices = m.attr(*indices)?;
            *values = m.attr(*values)?;
        }
        A::Distinct { referenced: x, .. }
        | A::FileLineColLoc { filename: x, .. }
        | A::FileLineColRange { filename: x, .. } => *x = m.attr(*x)?,
        A::NameLoc { name: x, child: y } | A::CallSiteLoc { callee: x, caller: y } => {
            *x = m.attr(*x)?;
            *y = m.attr(*y)?;
        }
        A::FusedLoc { locations, metadata } => {
            attrs(locations, m)?;
            opt_attr(metadata, m)?;
        }
        A::Text { dialect, text } => (*dialect, *text) = m.text(*dialect, *text)?,
        A::Custom { dialect, .. } => return Err(m.custom("attribute", *dialect)),
    }
    Ok(())
}

/// [`map_attr`] for types.
pub(super) fn map_type(t: &mut Type, m: &mut impl Mapper) -> Result<()> {
    match t {
        Type::Integer { .. } | Type::Index | Type::Float(_) | Type::None => {}
        Type::Function { inputs, results } => {
            types(inputs, m)?;
            types(results, m)?;
        }
        Type::Complex(x) | Type::UnrankedTensor { elem: x } | Type::Vector { elem: x, .. } => *x = m.ty(*x)?,
        Type::MemRef { elem, layout, memory_space, .. } => {
            opt_attr(memory_space, m)?;
            *elem = m.ty(*elem)?;
            *layout = m.attr(*layout)?;
        }
        Type::UnrankedMemRef { elem, memory_space: encoding } | Type::RankedTensor { elem, encoding, .. } => {
            opt_attr(encoding, m)?;
            *elem = m.ty(*elem)?;
        }
        Type::Tuple(items) => types(items, m)?,
        Type::Text { dialect, text } => (*dialect, *text) = m.text(*dialect, *text)?,
        Type::Custom { dialect, .. } => return Err(m.custom("type", *dialect)),
    }
    Ok(())
}

/// An attribute entry: in the builtin encoding or as text ([`Attribute`]), or in its dialect's
/// own encoding ([`Native`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Entry {
    Attr(Attribute),
    Native(Native),
}

/// Whether `a` is a builtin attribute whose only references are attributes and types, which the
/// plan's tables number: such an attribute of the module's context can be encoded from the
/// context itself (see [`Slot::Context`]).
pub(super) fn by_reference(a: &Attribute) -> bool {
    use Attribute as A;
    !matches!(a, A::String { .. } | A::DenseString { .. } | A::DenseResource { .. } | A::Text { .. } | A::Custom { .. })
}

/// Rewrites the references (and the dialect) of a native encoding in place.
fn map_native(native: &mut Native, m: &mut impl Mapper) -> Result<()> {
    for item in native.items.iter_mut() {
        match item {
            Item::Attr(id) => *id = m.attr(*id)?,
            Item::OptAttr(id) => opt_attr(id, m)?,
            Item::Varint(_) | Item::Byte(_) => {}
        }
    }
    native.dialect = m.dialect(native.dialect)?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The plan.

/// An attribute the writer refers to: one of the module's, or one it made up (a merged attribute
/// dictionary for versions before 5, an `UnknownLoc` for block arguments without a location).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum AttrKey {
    Module(AttrId),
    Extra(u32),
}

/// The string table, in first-insertion order, each string once.
#[derive(Default)]
pub(super) struct StringTable(Interner<Box<[u8]>>);

impl StringTable {
    pub fn insert(&mut self, bytes: &[u8]) -> u32 {
        self.0.intern_with(bytes, || bytes.into())
    }

    pub fn strings(&self) -> &[Box<[u8]>] {
        &self.0.items
    }
}

pub(super) struct DialectEntry {
    pub name: Box<[u8]>,
    pub version: Option<Box<[u8]>>,
}

pub(super) struct OpNameEntry {
    pub dialect: u32,
    /// String index of the name without its dialect prefix.
    pub short: u32,
    pub registered: bool,
}

/// One field of a registered op's native (ODS) properties encoding.
pub(super) enum NativeItem {
    Required(AttrId),
    Optional(Option<AttrId>),
    /// `operandSegmentSizes`/`resultSegmentSizes` as a sparse array (version 6).
    Segments(Vec<i32>),
    /// A non-attribute property written as a varint (`IntProp`, `EnumProp`).
    Varint(u64),
    /// A non-attribute property written as one byte (`BoolProp`, `UnitProp`).
    Bool(bool),
}

/// Eight bytes, like [`OpPlan::attrs`]: the plan of every op is a table of the module's size, so
/// an encoding shared by many ops is referred to by index.
#[derive(Clone, Copy)]
pub(super) enum PropsPlan {
    None,
    /// An unregistered op's properties: the dictionary attribute's index.
    Dict(AttrId),
    /// A registered op's native encoding: index into [`Plan::native`], shared by the ops of one
    /// name with the same properties dictionary.
    Native(u32),
}

/// How one op's attributes and properties are written (16 bytes).
#[derive(Clone, Copy)]
pub(super) struct OpPlan {
    pub attrs: Option<AttrKey>,
    pub props: PropsPlan,
}

/// Where an attribute entry's encoding comes from.
#[derive(Clone, Copy, Debug)]
pub(super) enum Slot {
    /// An attribute of the module's context that [`by_reference`] accepts, encoded from the
    /// context with each reference looked up in the plan's tables. A canonical copy of every
    /// location and integer of a large module was most of the writer's memory.
    Context(AttrId),
    /// [`Plan::owned`] entry `i`, in canonical form.
    Owned(u32),
}

pub(super) type ResourceEntries = Vec<(Box<[u8]>, ResourceValue)>;
type ResourceSlot = (u32, u32);
type DictEntries = Box<[(AttrId, AttrId)]>;

pub(super) struct Plan {
    pub strings: StringTable,
    pub dialects: Vec<DialectEntry>,
    /// Grouped by dialect.
    pub op_names: Vec<OpNameEntry>,
    /// Writer op-name index of each of the module's op names (`UNSET` if unused).
    op_name_index: Vec<u32>,
    /// Attribute entries with their dialect, grouped by dialect.
    pub attrs: Vec<(u32, Slot)>,
    /// The entries of [`Slot::Owned`].
    pub owned: Vec<Entry>,
    /// Canonical types with their dialect, grouped by dialect.
    pub types: Vec<(u32, Type)>,
    /// Texts of attributes and types kept as text (canonical `Sym(i)` of `Text` entries), shared
    /// with the context where they are large.
    pub texts: Interner<Arc<[u8]>>,
    attr_index: Vec<u32>,
    extra_index: Vec<u32>,
    type_index: Vec<u32>,
    /// Indexed by `OpId`; `None` for ops not in the module's tree.
    pub ops: Vec<Option<OpPlan>>,
    /// The native properties encodings [`PropsPlan::Native`] refers to.
    pub native: Vec<Box<[NativeItem]>>,
    /// An `UnknownLoc` for block arguments without a location (before version 4).
    pub unknown_loc: Option<AttrKey>,
    pub external_resources: Vec<(Box<[u8]>, ResourceEntries)>,
    /// Resource groups by writer dialect index; canonical `DenseResource` refers to
    /// `(DialectId(group), Sym(entry))`.
    pub dialect_resources: Vec<(u32, ResourceEntries)>,
    /// Whether each op's regions use no value from outside the op (by `OpId`).
    pub isolated: Vec<bool>,
}

impl Plan {
    #[inline]
    pub fn attr_index(&self, key: AttrKey) -> Result<u64> {
        let index = match key {
            AttrKey::Module(id) => self.attr_index.get(id.0 as usize),
            AttrKey::Extra(i) => self.extra_index.get(i as usize),
        };
        match index {
            Some(&i) if i != UNSET => Ok(u64::from(i)),
            _ => Err(malformed(format!("attribute {key:?} was not numbered"))),
        }
    }

    #[inline]
    pub fn type_index(&self, id: TypeId) -> Result<u64> {
        match self.type_index.get(id.0 as usize) {
            Some(&i) if i != UNSET => Ok(u64::from(i)),
            _ => Err(malformed(format!("type {} was not numbered", id.0))),
        }
    }

    #[inline]
    pub fn op_name_index(&self, id: OpNameId) -> Result<u64> {
        match self.op_name_index.get(id.0 as usize) {
            Some(&i) if i != UNSET => Ok(u64::from(i)),
            _ => Err(malformed(format!("op name {} was not numbered", id.0))),
        }
    }

    /// The resource handle of canonical `(group, entry)`: its index over all dialect resources.
    pub fn resource_handle(&self, resource: ResourceRef) -> u64 {
        let before: usize = self.dialect_resources[..resource.dialect.0 as usize].iter().map(|(_, e)| e.len()).sum();
        (before + resource.key.0 as usize) as u64
    }
}

pub(super) fn plan(m: &Module, options: &WriteOptions) -> Result<Plan> {
    let lowering = llvm::lower(m)?;
    let ctx = lowering.as_ref().map_or(&m.context, |l| &l.context);
    let mut n = Numberer {
        ctx,
        native: lowering.as_ref().map(|l| &l.native),
        strings: StringTable::default(),
        dialects: Vec::new(),
        dialect_map: HashMap::new(),
        dialect_of: vec![UNSET; ctx.dialects().len()],
        texts: Interner::default(),
        extras: Vec::new(),
        attr_memo: vec![UNSET; ctx.attrs().len()],
        extra_memo: Vec::new(),
        type_memo: vec![UNSET; ctx.types().len()],
        slots: Vec::with_capacity(ctx.attrs().len()),
        owned: Interner::default(),
        slot_of: Vec::new(),
        synthesized: false,
        types: Interner::with_capacity(ctx.types().len()),
        builtin: None,
        external_resources: Vec::new(),
        dialect_resources: Vec::new(),
        resource_lookup: HashMap::new(),
        unknown_loc_key: None,
        depth: 0,
    };
    let version = options.version;

    // Registered op names whose native properties encoding rtx knows.
    let names = m.context.op_names();
    let schemas: Vec<Option<&OpSchema>> = names
        .iter()
        .map(|name| {
            let known = name.registered && (name.full.0 as usize) < m.context.num_strings();
            known.then(|| op_schema(m.context.str_bytes(name.full))).flatten()
        })
        .collect();
    let v6 = version >= version::NATIVE_PROPERTIES_ODS_SEGMENT_SIZE;
    let native_properties = version >= version::NATIVE_PROPERTIES && schemas.iter().any(Option::is_some);
    // Ops of one kind mostly repeat their properties (the same dictionary attribute), and the
    // encoding depends only on the op's name and dictionary: each pair is planned once.
    let mut planned: HashMap<(OpNameId, AttrId), Option<u32>> = HashMap::new();
    let mut native_plans: Vec<Box<[NativeItem]>> = Vec::new();

    // How each op's attributes and properties are written, planned as the walk reaches it.
    let mut ops: Vec<Option<OpPlan>> = (0..m.ops.len()).map(|_| None).collect();
    // The op names in order of first use (numbered below, after the resources' dialects).
    let mut first_used: Vec<OpNameId> = Vec::new();
    let mut op_name_index = vec![UNSET; names.len()];
    let walk = walk(m, |id, o| {
        let name = names.get(o.name.0 as usize).ok_or_else(|| malformed("op name out of range"))?;
        if op_name_index[o.name.0 as usize] == UNSET {
            op_name_index[o.name.0 as usize] = 0;
            first_used.push(o.name);
        }
        // The native encoding of a registered op's properties, when rtx knows its schema and they
        // fit it (otherwise they go to the attribute dictionary below).
        let native = match (&o.properties, schemas[o.name.0 as usize]) {
            (Properties::Dict(dict), Some(schema)) if native_properties => match planned.get(&(o.name, *dict)) {
                Some(&index) => index,
                None => {
                    let index = native_plan(m, id, schema, *dict, v6, &mut n.strings)?.map(|items| {
                        native_plans.push(items.into());
                        native_plans.len() as u32 - 1
                    });
                    planned.insert((o.name, *dict), index);
                    index
                }
            },
            _ => None,
        };
        let attrs = o.attrs.filter(
            |&a| !matches!(m.context.attrs().get(a.0 as usize), Some(Attribute::Dictionary(e)) if e.is_empty()),
        );
        let plan = match &o.properties {
            Properties::None => OpPlan { attrs: attrs.map(AttrKey::Module), props: PropsPlan::None },
            Properties::Opaque(_) => return Err(WriteError::OpaqueProperties(op_name(m, id))),
            Properties::Dict(dict) if version >= version::NATIVE_PROPERTIES && !name.registered => {
                OpPlan { attrs: attrs.map(AttrKey::Module), props: PropsPlan::Dict(*dict) }
            }
            Properties::Dict(_) if native.is_some() => {
                OpPlan { attrs: attrs.map(AttrKey::Module), props: PropsPlan::Native(native.expect("checked")) }
            }
            Properties::Dict(dict) if name.registered => {
                // Below v5 upstream writes a registered op's inherent attributes in its attribute
                // dictionary; reading them back restores its properties. From v5 on, a registered
                // op whose native encoding rtx does not know is written the same way: upstream
                // decodes any properties blob of an op it has registered natively, so a dictionary
                // there would be misread, while inherent attributes in the attribute dictionary
                // become its properties.
                let merged = merge_dicts(m, id, attrs, *dict, version, options.allow_lossy_downgrade)?;
                let attrs = match merged {
                    Some(entries) => {
                        n.extras.push(Attribute::Dictionary(entries));
                        n.extra_memo.push(UNSET);
                        Some(AttrKey::Extra(n.extras.len() as u32 - 1))
                    }
                    None => attrs.map(AttrKey::Module),
                };
                OpPlan { attrs, props: PropsPlan::None }
            }
            Properties::Dict(_) => {
                if !options.allow_lossy_downgrade {
                    return Err(WriteError::NotRepresentable {
                        version,
                        needs: version::NATIVE_PROPERTIES,
                        what: format!("the properties of unregistered op `{}`", op_name(m, id)),
                    });
                }
                OpPlan { attrs: attrs.map(AttrKey::Module), props: PropsPlan::None }
            }
        };
        ops[id.0 as usize] = Some(plan);
        Ok(())
    })?;

    // Resources first, so that `dense_resource` references find their entries.
    for group in &m.resources.external {
        let entries = group
            .entries
            .iter()
            .map(|e| Ok((Box::from(string(&m.context, e.key)?), e.value.clone())))
            .collect::<Result<Vec<_>>>()?;
        n.external_resources.push((string(&m.context, group.owner)?.into(), entries));
    }
    for group in &m.resources.dialect {
        if group.entries.is_empty() {
            continue;
        }
        let dialect = n.dialect(group.owner)?;
        for entry in &group.entries {
            n.add_resource(dialect, string(&m.context, entry.key)?, entry.value.clone());
        }
    }

    // Op names, grouped by dialect in order of first use.
    let mut name_keys: HashMap<(u32, Box<[u8]>, bool), u32> = HashMap::new();
    let mut provisional_names: Vec<(u32, Box<[u8]>, bool)> = Vec::new();
    for name_id in first_used {
        let name = &names[name_id.0 as usize];
        let dialect = n.dialect(name.dialect)?;
        let short: Box<[u8]> = string(&m.context, name.short)?.into();
        let key = (dialect, short, version >= version::NATIVE_PROPERTIES && name.registered);
        op_name_index[name_id.0 as usize] = *name_keys.entry(key.clone()).or_insert_with(|| {
            provisional_names.push(key);
            provisional_names.len() as u32 - 1
        });
    }
    let name_order = stable_order_by(&provisional_names, |k| k.0);
    for slot in op_name_index.iter_mut().filter(|s| **s != UNSET) {
        *slot = name_order[*slot as usize];
    }
    let mut op_names: Vec<Option<OpNameEntry>> = (0..provisional_names.len()).map(|_| None).collect();
    for (p, (dialect, short, registered)) in provisional_names.into_iter().enumerate() {
        let short = n.strings.insert(&short);
        op_names[name_order[p] as usize] = Some(OpNameEntry { dialect, short, registered });
    }
    let op_names = op_names.into_iter().map(|e| e.expect("a permutation")).collect();

    // Attributes and types, in the order the IR section meets them; which ops are isolated.
    let mut isolated = vec![true; m.ops.len()];
    for &id in &walk {
        let o = op(m, id)?;
        mark_not_isolated(m, id, o, operands(m, o)?, &mut isolated)?;
        n.attr_key(AttrKey::Module(o.loc))?;
        let plan = ops[id.0 as usize].expect("planned above");
        if let Some(key) = plan.attrs {
            n.attr_key(key)?;
        }
        match plan.props {
            PropsPlan::None => {}
            PropsPlan::Dict(dict) => {
                n.attr_key(AttrKey::Module(dict))?;
            }
            PropsPlan::Native(index) => {
                for item in native_plans[index as usize].iter() {
                    match item {
                        NativeItem::Required(a) | NativeItem::Optional(Some(a)) => {
                            n.attr_key(AttrKey::Module(*a))?;
                        }
                        NativeItem::Optional(None)
                        | NativeItem::Segments(_)
                        | NativeItem::Varint(_)
                        | NativeItem::Bool(_) => {}
                    }
                }
            }
        }
        for v in value_run(m, o.results)? {
            n.type_key(value(m, ValueId(v))?.ty)?;
        }
        for &r in regions(m, o)? {
            for &b in &region(m, r)?.blocks {
                for v in value_run(m, block(m, b)?.arguments)? {
                    let arg = value(m, ValueId(v))?;
                    n.type_key(arg.ty)?;
                    match arg.loc {
                        Some(loc) => {
                            n.attr_key(AttrKey::Module(loc))?;
                        }
                        None if version < version::ELIDE_UNKNOWN_BLOCK_ARG_LOCATION => {
                            n.unknown_loc()?;
                        }
                        None => {}
                    }
                }
            }
        }
    }
    let unknown_loc = n.unknown_loc_key;
    n.finish(ops, native_plans, isolated, op_names, op_name_index, unknown_loc)
}

/// The attribute dictionary of a registered op written below v5: its discardable attributes and
/// its properties in one dictionary sorted by name, or `None` when the properties are empty.
fn merge_dicts(
    m: &Module,
    id: OpId,
    attrs: Option<AttrId>,
    props: AttrId,
    version: u32,
    lossy: bool,
) -> Result<Option<DictEntries>> {
    let entries = |a: AttrId| -> Result<&[(AttrId, AttrId)]> {
        match attr(&m.context, a)? {
            Attribute::Dictionary(entries) => Ok(entries),
            _ => Err(malformed(format!("op `{}`: attributes or properties are not a dictionary", op_name(m, id)))),
        }
    };
    let props = entries(props)?;
    if props.is_empty() {
        return Ok(None);
    }
    // Properties that are not attributes (ODS `Property`s) have no place in an attribute
    // dictionary: upstream leaves them out, and a reader gives them their default again.
    let schema = op_schema(m.context.str_bytes(m.context.op_name(op(m, id)?.name).full));
    let is_property = |key: &[u8]| schema.is_some_and(|s| s.props.iter().any(|(n, _)| n.as_bytes() == key));
    let mut merged: Vec<(Vec<u8>, (AttrId, AttrId))> = Vec::new();
    let own = attrs.map(entries).transpose()?.unwrap_or(&[]);
    for &(k, v) in own {
        merged.push((key_name(m, k)?.to_vec(), (k, v)));
    }
    for &(k, v) in props {
        let key = key_name(m, k)?;
        if is_property(key) {
            let default = match attr(&m.context, v)? {
                Attribute::Integer { value, .. } => value.words().iter().all(|&w| w == 0),
                Attribute::String { value, .. } => string(&m.context, *value)?.is_empty(),
                _ => false,
            };
            if default || lossy {
                continue;
            }
            return Err(WriteError::NotRepresentable {
                version,
                needs: version::NATIVE_PROPERTIES,
                what: format!("property `{}` of op `{}`", String::from_utf8_lossy(key), op_name(m, id)),
            });
        }
        merged.push((key.to_vec(), (k, v)));
    }
    merged.sort_by(|a, b| a.0.cmp(&b.0));
    if let Some(w) = merged.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(WriteError::AttributeConflict {
            op: op_name(m, id),
            name: String::from_utf8_lossy(&w[0].0).into_owned(),
            version,
        });
    }
    Ok(Some(merged.into_iter().map(|(_, e)| e).collect()))
}

fn key_name(m: &Module, key: AttrId) -> Result<&[u8]> {
    match attr(&m.context, key)? {
        Attribute::String { value, .. } => string(&m.context, *value),
        _ => Err(malformed("dictionary key is not a string")),
    }
}

/// The native properties encoding of a registered op's properties dictionary, or `None` when the
/// dictionary does not fit the op's schema. A non-attribute property (see [`PropKind`]) is encoded
/// from the attribute upstream shows for it; one of the wrong kind is an error, since upstream
/// would refuse it too, and a missing one is written as its zero default.
fn native_plan(
    m: &Module,
    id: OpId,
    schema: &OpSchema,
    dict: AttrId,
    v6: bool,
    strings: &mut StringTable,
) -> Result<Option<Vec<NativeItem>>> {
    let Attribute::Dictionary(entries) = attr(&m.context, dict)? else {
        return Ok(None);
    };
    let mut by_name: HashMap<&[u8], AttrId> = HashMap::new();
    for &(k, v) in entries.iter() {
        by_name.insert(key_name(m, k)?, v);
    }
    let mut segment_names: Vec<&str> = Vec::new();
    if schema.operand_segments > 0 {
        segment_names.push("operandSegmentSizes");
    }
    if schema.result_segments > 0 {
        segment_names.push("resultSegmentSizes");
    }
    let known = |name: &[u8]| {
        schema.attrs.iter().any(|(n, _)| n.as_bytes() == name)
            || schema.props.iter().any(|(n, _)| n.as_bytes() == name)
            || segment_names.iter().any(|n| n.as_bytes() == name)
    };
    if by_name.len() != entries.len() || !by_name.keys().all(|k| known(k)) {
        return Ok(None);
    }
    let mut fields: Vec<(&str, Option<bool>)> = schema.attrs.iter().map(|&(n, r)| (n, Some(r))).collect();
    if !v6 {
        fields.extend(segment_names.iter().map(|&n| (n, None)));
        fields.sort_by(|a, b| a.0.cmp(b.0));
    }
    let mut items = Vec::new();
    for (name, required) in fields {
        let value = by_name.get(name.as_bytes()).copied();
        match required {
            Some(false) => items.push(NativeItem::Optional(value)),
            _ => match value {
                Some(a) => items.push(NativeItem::Required(a)),
                None => return Ok(None),
            },
        }
    }
    for &(name, kind) in schema.props {
        let value = by_name.get(name.as_bytes()).copied();
        items.push(prop_item(m, id, name, kind, value, strings)?);
    }
    if v6 {
        for (name, size) in
            segment_names.iter().zip([schema.operand_segments, schema.result_segments].iter().filter(|&&s| s > 0))
        {
            let Some(&a) = by_name.get(name.as_bytes()) else { return Ok(None) };
            let Attribute::DenseArray { elem, count, data } = attr(&m.context, a)? else { return Ok(None) };
            let i32_elem =
                matches!(ty(&m.context, *elem)?, Type::Integer { width: 32, signedness: Signedness::Signless });
            if !i32_elem || *count != u64::from(*size) || data.len() as u64 != count * 4 {
                return Ok(None);
            }
            let values: Vec<i32> =
                data.bytes().chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
            if values.iter().any(|&v| v < 0) {
                return Ok(None);
            }
            items.push(NativeItem::Segments(values));
        }
    }
    Ok(Some(items))
}

/// The encoding of non-attribute property `name` from the attribute that stands for it
/// (`None`: absent, written as the zero or empty string its storage defaults to). Strings go to
/// the string table.
fn prop_item(
    m: &Module,
    id: OpId,
    name: &str,
    kind: PropKind,
    value: Option<AttrId>,
    strings: &mut StringTable,
) -> Result<NativeItem> {
    let Some(value) = value else {
        return Ok(match kind {
            PropKind::I32 | PropKind::I64 => NativeItem::Varint(0),
            PropKind::Bool | PropKind::Unit => NativeItem::Bool(false),
            PropKind::String => NativeItem::Varint(u64::from(strings.insert(b""))),
        });
    };
    let integer = |width: u32| -> Result<Option<u64>> {
        let Attribute::Integer { ty: t, value } = attr(&m.context, value)? else { return Ok(None) };
        let fits =
            matches!(ty(&m.context, *t)?, Type::Integer { width: w, signedness: Signedness::Signless } if *w == width);
        Ok(fits.then(|| value.words()[0]))
    };
    let item = match kind {
        // Upstream writes the storage value (`int32_t`) widened to 64 bits, sign-extended.
        PropKind::I32 => integer(32)?.map(|v| NativeItem::Varint(v as u32 as i32 as i64 as u64)),
        PropKind::I64 => integer(64)?.map(NativeItem::Varint),
        PropKind::Bool => integer(1)?.map(|v| NativeItem::Bool(v != 0)),
        PropKind::Unit => match attr(&m.context, value)? {
            Attribute::Unit => Some(NativeItem::Bool(true)),
            _ => integer(1)?.map(|v| NativeItem::Bool(v != 0)),
        },
        PropKind::String => match attr(&m.context, value)? {
            Attribute::String { value, ty: None } => {
                Some(NativeItem::Varint(u64::from(strings.insert(string(&m.context, *value)?))))
            }
            _ => None,
        },
    };
    item.ok_or_else(|| {
        let expected = match kind {
            PropKind::I32 => "an `i32` integer",
            PropKind::I64 => "an `i64` integer",
            PropKind::Bool => "a boolean",
            PropKind::Unit => "`unit` or a boolean",
            PropKind::String => "a string",
        };
        malformed(format!(
            "op `{}`: property `{name}` must be {expected} to be written in its native encoding",
            op_name(m, id)
        ))
    })
}

/// For each item, its position after a stable sort by `key`.
fn stable_order_by<T>(items: &[T], key: impl Fn(&T) -> u32) -> Vec<u32> {
    let mut order: Vec<u32> = (0..items.len() as u32).collect();
    order.sort_by_key(|&i| key(&items[i as usize]));
    let mut position = vec![0u32; items.len()];
    for (pos, &i) in order.iter().enumerate() {
        position[i as usize] = pos as u32;
    }
    position
}

struct Numberer<'m> {
    /// The module's context, or the lowering's copy of it with more attributes.
    ctx: &'m MlirContext,
    native: Option<&'m HashMap<AttrId, Native>>,
    strings: StringTable,
    dialects: Vec<DialectEntry>,
    dialect_map: HashMap<Box<[u8]>, u32>,
    dialect_of: Vec<u32>,
    texts: Interner<Arc<[u8]>>,
    extras: Vec<Attribute>,
    attr_memo: Vec<u32>,
    extra_memo: Vec<u32>,
    type_memo: Vec<u32>,
    /// The attribute entries with their dialect, in the order first met (before grouping by
    /// dialect): the provisional numbers.
    slots: Vec<(u32, Slot)>,
    /// Canonical entries with their dialect ([`Slot::Owned`]), and the slot of each.
    owned: Interner<(u32, Entry)>,
    slot_of: Vec<u32>,
    /// Whether `owned` holds an entry the writer made (an extra attribute or a native encoding),
    /// which a context attribute met later may equal: from then on every attribute is owned and
    /// looked up.
    synthesized: bool,
    types: Interner<(u32, Type)>,
    builtin: Option<u32>,
    external_resources: Vec<(Box<[u8]>, ResourceEntries)>,
    dialect_resources: Vec<(u32, ResourceEntries)>,
    /// `(writer dialect, key)` to `(group, entry)`.
    resource_lookup: HashMap<(u32, Box<[u8]>), ResourceSlot>,
    unknown_loc_key: Option<AttrKey>,
    depth: usize,
}

impl Numberer<'_> {
    fn intern_dialect(&mut self, name: &[u8], version: Option<&[u8]>) -> u32 {
        if let Some(&i) = self.dialect_map.get(name) {
            return i;
        }
        let i = self.dialects.len() as u32;
        self.dialects.push(DialectEntry { name: name.into(), version: version.map(Box::from) });
        self.dialect_map.insert(name.into(), i);
        i
    }

    fn dialect(&mut self, id: DialectId) -> Result<u32> {
        let slot = *self.dialect_of.get(id.0 as usize).ok_or_else(|| malformed("dialect out of range"))?;
        if slot != UNSET {
            return Ok(slot);
        }
        let d = self.ctx.dialect(id);
        let name = string(self.ctx, d.name)?;
        let i = self.intern_dialect(name, d.version.as_deref());
        self.dialect_of[id.0 as usize] = i;
        Ok(i)
    }

    fn builtin(&mut self) -> u32 {
        if let Some(b) = self.builtin {
            return b;
        }
        let version = self.ctx.find_dialect(b"builtin").and_then(|d| self.ctx.dialect(d).version.clone());
        let b = self.intern_dialect(b"builtin", version.as_deref());
        self.builtin = Some(b);
        b
    }

    fn add_resource(&mut self, dialect: u32, key: &[u8], value: ResourceValue) -> (u32, u32) {
        let group = match self.dialect_resources.iter().position(|(d, _)| *d == dialect) {
            Some(g) => g,
            None => {
                self.dialect_resources.push((dialect, Vec::new()));
                self.dialect_resources.len() - 1
            }
        };
        let entries = &mut self.dialect_resources[group].1;
        let at = (group as u32, entries.len() as u32);
        entries.push((key.into(), value));
        *self.resource_lookup.entry((dialect, key.into())).or_insert(at)
    }

    fn unknown_loc(&mut self) -> Result<u32> {
        let key = match self.unknown_loc_key {
            Some(key) => key,
            None => {
                self.extras.push(Attribute::UnknownLoc);
                self.extra_memo.push(UNSET);
                let key = AttrKey::Extra(self.extras.len() as u32 - 1);
                self.unknown_loc_key = Some(key);
                key
            }
        };
        self.attr_key(key)
    }

    fn attr_key(&mut self, key: AttrKey) -> Result<u32> {
        let memo = match key {
            AttrKey::Module(id) => self.attr_memo.get(id.0 as usize),
            AttrKey::Extra(i) => self.extra_memo.get(i as usize),
        };
        match memo {
            Some(&p) if p != UNSET => return Ok(p),
            Some(_) => {}
            None => return Err(malformed(format!("attribute {key:?} does not exist"))),
        }
        if self.depth >= MAX_NESTING {
            return Err(WriteError::TooDeep(MAX_NESTING));
        }
        let mut canonical = match key {
            AttrKey::Module(id) => match self.native.and_then(|n| n.get(&id)) {
                Some(native) => Entry::Native(native.clone()),
                None => Entry::Attr(attr(self.ctx, id)?.clone()),
            },
            AttrKey::Extra(i) => Entry::Attr(self.extras[i as usize].clone()),
        };
        self.depth += 1;
        let mapped = match &mut canonical {
            Entry::Native(native) => map_native(native, self),
            Entry::Attr(a) => map_attr(a, self),
        };
        self.depth -= 1;
        mapped?;
        let dialect = match &canonical {
            Entry::Attr(Attribute::Text { dialect, .. }) => dialect.0,
            Entry::Native(native) => native.dialect.0,
            Entry::Attr(_) => self.builtin(),
        };
        // A context's attributes are distinct already (its tables intern them, and a file's tables,
        // which the reader keeps as they are, are distinct as any MLIR writer writes them), and
        // mapping their references keeps them so: only entries the writer made need a lookup, and
        // context attributes once such an entry is there. Hashing each attribute of a large
        // module to look it up was a sixth of the writer's time. Until then, those whose
        // references the tables number are not kept either: their entry is the context's own
        // attribute (the copy mapped above only numbered its references).
        let index = match (canonical, key) {
            (Entry::Attr(a), AttrKey::Module(id)) if !self.synthesized => {
                if self.native.is_none() && by_reference(&a) {
                    self.slots.push((dialect, Slot::Context(id)));
                    self.slots.len() as u32 - 1
                } else {
                    let item = self.owned.push_distinct((dialect, Entry::Attr(a)));
                    self.owned_slot(dialect, item)
                }
            }
            (entry @ Entry::Attr(_), AttrKey::Module(_)) => self.intern_owned(dialect, entry),
            (entry, _) => {
                self.own_context_slots()?;
                self.synthesized = true;
                self.intern_owned(dialect, entry)
            }
        };
        match key {
            AttrKey::Module(id) => self.attr_memo[id.0 as usize] = index,
            AttrKey::Extra(i) => self.extra_memo[i as usize] = index,
        }
        Ok(index)
    }

    /// The slot of owned item `item`, given one if new.
    fn owned_slot(&mut self, dialect: u32, item: u32) -> u32 {
        if item as usize == self.slot_of.len() {
            self.slot_of.push(self.slots.len() as u32);
            self.slots.push((dialect, Slot::Owned(item)));
        }
        self.slot_of[item as usize]
    }

    fn intern_owned(&mut self, dialect: u32, entry: Entry) -> u32 {
        let item = self.owned.intern((dialect, entry));
        self.owned_slot(dialect, item)
    }

    /// Turns every [`Slot::Context`] into an owned canonical copy, so that lookups see them.
    fn own_context_slots(&mut self) -> Result<()> {
        let mut numbers = Renumber { attrs: &self.attr_memo, types: &self.type_memo };
        for (index, (dialect, slot)) in self.slots.iter_mut().enumerate() {
            let Slot::Context(id) = *slot else { continue };
            // Its references were numbered before it: the memo holds their numbers.
            let mut canonical = attr(self.ctx, id)?.clone();
            map_attr(&mut canonical, &mut numbers)?;
            let item = self.owned.push_distinct((*dialect, Entry::Attr(canonical)));
            self.slot_of.push(index as u32);
            *slot = Slot::Owned(item);
        }
        Ok(())
    }

    fn type_key(&mut self, id: TypeId) -> Result<u32> {
        match self.type_memo.get(id.0 as usize) {
            Some(&p) if p != UNSET => return Ok(p),
            Some(_) => {}
            None => return Err(malformed(format!("type {} does not exist", id.0))),
        }
        if self.depth >= MAX_NESTING {
            return Err(WriteError::TooDeep(MAX_NESTING));
        }
        let mut canonical = ty(self.ctx, id)?.clone();
        self.depth += 1;
        let mapped = map_type(&mut canonical, self);
        self.depth -= 1;
        mapped?;
        let dialect = match &canonical {
            Type::Text { dialect, .. } => dialect.0,
            _ => self.builtin(),
        };
        let index = self.types.intern((dialect, canonical));
        self.type_memo[id.0 as usize] = index;
        Ok(index)
    }

    fn finish(
        self,
        ops: Vec<Option<OpPlan>>,
        native: Vec<Box<[NativeItem]>>,
        isolated: Vec<bool>,
        op_names: Vec<OpNameEntry>,
        op_name_index: Vec<u32>,
        unknown_loc: Option<AttrKey>,
    ) -> Result<Plan> {
        let mut attrs = self.slots;
        let mut owned: Vec<Entry> = self.owned.items.into_iter().map(|(_, entry)| entry).collect();
        let mut types = self.types.items;
        let (mut attr_index, mut extra_index, mut type_index) = (self.attr_memo, self.extra_memo, self.type_memo);
        // Entries already grouped by dialect (a module of builtin attributes and types only, say)
        // keep their numbers; otherwise every reference is renumbered and the entries reordered.
        if !attrs.is_sorted_by_key(|e| e.0) || !types.is_sorted_by_key(|e| e.0) {
            let attr_order = stable_order_by(&attrs, |e| e.0);
            let type_order = stable_order_by(&types, |e| e.0);
            let mut renumber = Renumber { attrs: &attr_order, types: &type_order };
            for entry in &mut owned {
                match entry {
                    Entry::Attr(a) => map_attr(a, &mut renumber)?,
                    Entry::Native(native) => map_native(native, &mut renumber)?,
                }
            }
            for (_, t) in &mut types {
                map_type(t, &mut renumber)?;
            }
            // A stable sort by dialect puts each entry at its position in the order.
            attrs.sort_by_key(|e| e.0);
            types.sort_by_key(|e| e.0);
            for (memo, order) in
                [(&mut attr_index, &attr_order), (&mut extra_index, &attr_order), (&mut type_index, &type_order)]
            {
                memo.iter_mut().filter(|p| **p != UNSET).for_each(|p| *p = order[*p as usize]);
            }
        }
        Ok(Plan {
            strings: self.strings,
            dialects: self.dialects,
            op_names,
            op_name_index,
            attrs,
            owned,
            types,
            texts: self.texts,
            attr_index,
            extra_index,
            type_index,
            ops,
            native,
            unknown_loc,
            external_resources: self.external_resources,
            dialect_resources: self.dialect_resources,
            isolated,
        })
    }
}

impl Mapper for Numberer<'_> {
    fn attr(&mut self, id: AttrId) -> Result<AttrId> {
        self.attr_key(AttrKey::Module(id)).map(AttrId)
    }
    fn ty(&mut self, id: TypeId) -> Result<TypeId> {
        self.type_key(id).map(TypeId)
    }
    fn string(&mut self, sym: Sym) -> Result<Sym> {
        let bytes = string(self.ctx, sym)?;
        Ok(Sym(self.strings.insert(bytes)))
    }
    fn dialect(&mut self, dialect: DialectId) -> Result<DialectId> {
        Numberer::dialect(self, dialect).map(DialectId)
    }
    fn text(&mut self, dialect: DialectId, text: Sym) -> Result<(DialectId, Sym)> {
        let dialect = Numberer::dialect(self, dialect)?;
        let bytes = string(self.ctx, text)?;
        Ok((DialectId(dialect), Sym(self.texts.intern_with(bytes, || self.ctx.str_shared(text)))))
    }
    fn resource(&mut self, resource: ResourceRef) -> Result<ResourceRef> {
        let dialect = self.dialect(resource.dialect)?;
        let key = string(self.ctx, resource.key)?;
        let (group, entry) = match self.resource_lookup.get(&(dialect, Box::from(key))) {
            Some(&found) => found,
            // A reference to a resource the module does not hold: declare it without data, as
            // upstream does for resources it only knows by name.
            None => self.add_resource(dialect, key, ResourceValue::Elided),
        };
        Ok(ResourceRef { dialect: DialectId(group), key: Sym(entry) })
    }
    fn custom(&mut self, kind: &'static str, dialect: DialectId) -> WriteError {
        let name = self
            .ctx
            .dialects()
            .get(dialect.0 as usize)
            .and_then(|d| string(self.ctx, d.name).ok())
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default();
        WriteError::CustomEncoding { kind, dialect: name }
    }
}

/// Provisional to final indices (after grouping by dialect).
struct Renumber<'a> {
    attrs: &'a [u32],
    types: &'a [u32],
}

impl Mapper for Renumber<'_> {
    fn attr(&mut self, id: AttrId) -> Result<AttrId> {
        Ok(AttrId(self.attrs[id.0 as usize]))
    }
    fn ty(&mut self, id: TypeId) -> Result<TypeId> {
        Ok(TypeId(self.types[id.0 as usize]))
    }
    fn string(&mut self, sym: Sym) -> Result<Sym> {
        Ok(sym)
    }
    fn text(&mut self, dialect: DialectId, text: Sym) -> Result<(DialectId, Sym)> {
        Ok((dialect, text))
    }
    fn dialect(&mut self, dialect: DialectId) -> Result<DialectId> {
        Ok(dialect)
    }
    fn resource(&mut self, resource: ResourceRef) -> Result<ResourceRef> {
        Ok(resource)
    }
    fn custom(&mut self, kind: &'static str, _: DialectId) -> WriteError {
        malformed(format!("custom {kind} in canonical form"))
    }
}
