//! The first pass (TFRT's `EntityTable::Collect`): one post-order walk that checks the module
//! can be encoded and numbers what the file refers to by index — kernels, types, attributes and
//! functions, each in first-seen order — and gathers every string.
//!
//! Every op but `func.func`, `tfrt.return` and what sits in `tfrt.compiled` modules is a kernel.
//! A `func.func` is a function (`tfrt.native`: body-less, `tfrt.sync`: run in order), and so is
//! every region of a kernel, anonymously, numbered where the walk meets its kernel — nested
//! regions before the function that holds them.

use std::collections::{BTreeSet, HashMap, HashSet};

use super::attributes;
use super::error::WriteError;
use super::program::{Program, FUNC, RETURN};
use crate::format::{AttributeType, FunctionKind};
use rtx_mlir::ir::{AttrId, Attribute, BlockId, OpId, RegionId, Type, TypeId, ValueDef};
use rtx_mlir::text::print::{print_entity, Entity, ResolvedCustom};

/// The attribute the stream analysis reads costs from; never passed to kernels.
pub(super) const COST: &[u8] = b"_tfrt_cost";

/// A function of the function index, as the writer collects it.
pub(super) struct FunctionEntry<'m> {
    pub(super) name: &'m [u8],
    pub(super) kind: FunctionKind,
    pub(super) inputs: Vec<TypeId>,
    pub(super) results: Vec<TypeId>,
    /// The block holding the body and the op that owns it (`None` for native functions).
    pub(super) body: Option<(BlockId, OpId)>,
}

/// How a kernel receives one of its op's attributes.
pub(super) enum KernelAttribute<'m> {
    /// Function-index operands: a symbol reference, or an array of them.
    Functions(Vec<&'m [u8]>),
    /// An attribute-section operand: the index into [`Entities::attributes`].
    Attribute { name: &'m [u8], index: usize },
}

#[derive(Default)]
pub(super) struct Entities<'m> {
    /// Every string of the strings section, sorted.
    pub(super) strings: BTreeSet<Vec<u8>>,
    pub(super) kernels: Vec<&'m [u8]>,
    kernel_ids: HashMap<&'m [u8], u32>,
    pub(super) types: Vec<TypeId>,
    type_ids: HashMap<&'m Type, u32>,
    /// Each type's text, as `types` orders them.
    pub(super) type_names: Vec<String>,
    /// Attribute-section attributes, deduplicated, each with its kind.
    pub(super) attributes: Vec<(AttrId, AttributeType)>,
    attribute_ids: HashMap<&'m Attribute, usize>,
    pub(super) functions: Vec<FunctionEntry<'m>>,
    region_functions: HashMap<RegionId, u32>,
    named_functions: HashMap<&'m [u8], u32>,
    /// Each kernel op's attributes as operands, in name order (`_tfrt_cost` left out).
    pub(super) kernel_attributes: HashMap<OpId, Vec<KernelAttribute<'m>>>,
}

impl<'m> Entities<'m> {
    pub(super) fn kernel_id(&self, name: &[u8]) -> u32 {
        self.kernel_ids[name]
    }

    pub(super) fn type_id(&self, program: &Program<'m>, ty: TypeId) -> u32 {
        self.type_ids[program.module.context.ty(ty)]
    }

    pub(super) fn region_function(&self, region: RegionId) -> u32 {
        self.region_functions[&region]
    }

    pub(super) fn named_function(&self, name: &[u8]) -> u32 {
        self.named_functions[name]
    }

    fn add_string(&mut self, bytes: &[u8]) {
        if !self.strings.contains(bytes) {
            self.strings.insert(bytes.to_vec());
        }
    }

    fn add_type(&mut self, program: &Program<'m>, ty: TypeId) -> Result<(), WriteError> {
        let data = program.module.context.ty(ty);
        if self.type_ids.contains_key(data) {
            return Ok(());
        }
        let name = print_entity(program.module, Entity::Type(ty), &ResolvedCustom::default())?;
        self.add_string(name.as_bytes());
        self.type_ids.insert(data, self.types.len() as u32);
        self.types.push(ty);
        self.type_names.push(name);
        Ok(())
    }

    /// The types of integer and float attributes, arrays searched: the optional sections name
    /// them, so they join the types section.
    fn add_attribute_types(&mut self, program: &Program<'m>, attr: AttrId) -> Result<(), WriteError> {
        match program.module.context.attr(attr) {
            Attribute::Integer { ty, .. } | Attribute::Float { ty, .. } => self.add_type(program, *ty),
            Attribute::Array(items) => items.iter().try_for_each(|&item| self.add_attribute_types(program, item)),
            _ => Ok(()),
        }
    }

    fn add_attribute(&mut self, program: &Program<'m>, attr: AttrId, kind: AttributeType) -> usize {
        let data = program.module.context.attr(attr);
        if let Some(&index) = self.attribute_ids.get(data) {
            return index;
        }
        let index = self.attributes.len();
        self.attribute_ids.insert(data, index);
        self.attributes.push((attr, kind));
        index
    }

    fn add_kernel(&mut self, name: &'m [u8]) {
        if !self.kernel_ids.contains_key(name) {
            self.kernel_ids.insert(name, self.kernels.len() as u32);
            self.kernels.push(name);
            self.add_string(name);
        }
    }

    fn add_function(&mut self, function: FunctionEntry<'m>) {
        self.add_string(function.name);
        self.named_functions.insert(function.name, self.functions.len() as u32);
        self.functions.push(function);
    }

    /// A region as a function: its block's arguments in, its `tfrt.return`'s operands out.
    fn add_region(
        &mut self,
        program: &Program<'m>,
        region: RegionId,
        owner: OpId,
        name: &'m [u8],
        kind: FunctionKind,
    ) -> Result<(), WriteError> {
        let m = program.module;
        let block = program.single_block(region).ok_or_else(|| WriteError::MultiBlockRegion(program.site(owner)))?;
        let inputs: Vec<TypeId> = m.arguments(block).map(|arg| m.value(arg).ty).collect();
        for &ty in &inputs {
            self.add_type(program, ty)?;
        }
        let results = match m.block(block).ops.last() {
            Some(&last) if program.is(last, RETURN) => m.operands(last).iter().map(|&v| m.value(v).ty).collect(),
            _ => return Err(WriteError::RegionWithoutReturn(program.site(owner))),
        };
        self.region_functions.insert(region, self.functions.len() as u32);
        self.add_function(FunctionEntry { name, kind, inputs, results, body: Some((block, owner)) });
        Ok(())
    }
}

/// Runs the first pass. With `optional_sections`, attribute names join the strings and
/// attribute value types the types, as the optional sections refer to them.
pub(super) fn collect<'m>(program: &Program<'m>, optional_sections: bool) -> Result<Entities<'m>, WriteError> {
    let mut entities = Entities::default();
    // Symbol references to functions, checked once every function is known.
    let mut function_references: Vec<(OpId, Vec<&[u8]>)> = Vec::new();
    let m = program.module;
    for op in program.post_order() {
        let block_ops = &m.block(m.op(op).parent.expect("walked ops are nested")).ops;
        if program.is(op, RETURN) && block_ops.last() != Some(&op) {
            return Err(WriteError::ReturnNotLast(program.site(op)));
        }
        let region = program.op_region(op);
        if m.operands(op).iter().any(|&value| program.value_region(value) != region) {
            return Err(WriteError::OuterValue(program.site(op)));
        }
        if program.is(op, RETURN) {
            continue;
        }
        for result in m.results(op) {
            entities.add_type(program, m.value(result).ty)?;
        }
        if program.is(op, FUNC) {
            collect_function(program, &mut entities, op)?;
            continue;
        }
        entities.add_kernel(m.context.str_bytes(m.context.op_name(m.op(op).name).full));
        let mut operands = Vec::new();
        for (name, value) in program.attributes(op) {
            if name == COST {
                continue;
            }
            let site = || program.site(op);
            let operand = match function_symbols(program, value) {
                Symbols::Functions(names) => {
                    function_references.push((op, names.clone()));
                    KernelAttribute::Functions(names)
                }
                Symbols::Unresolvable(symbol) => return Err(WriteError::UndefinedFunction { site: site(), symbol }),
                Symbols::None => {
                    let kind = attributes::kind(&m.context, value).ok_or_else(|| WriteError::UnsupportedAttribute {
                        site: site(),
                        name: String::from_utf8_lossy(name).into_owned(),
                    })?;
                    KernelAttribute::Attribute { name, index: entities.add_attribute(program, value, kind) }
                }
            };
            // A single reference to a function is no attribute the optional sections describe.
            let function_reference = matches!(operand, KernelAttribute::Functions(_))
                && !matches!(m.context.attr(value), Attribute::Array(_));
            if optional_sections && !function_reference {
                entities.add_string(name);
                entities.add_attribute_types(program, value)?;
            }
            operands.push(operand);
        }
        entities.kernel_attributes.insert(op, operands);
        for &region in m.op_regions(op) {
            entities.add_region(program, region, op, b"", FunctionKind::Async)?;
        }
    }
    for (op, names) in function_references {
        if let Some(name) = names.iter().find(|name| !entities.named_functions.contains_key(*name)) {
            let symbol = format!("@{}", String::from_utf8_lossy(name));
            return Err(WriteError::UndefinedFunction { site: program.site(op), symbol });
        }
    }
    Ok(entities)
}

fn collect_function<'m>(program: &Program<'m>, entities: &mut Entities<'m>, op: OpId) -> Result<(), WriteError> {
    let m = program.module;
    let name = program.symbol_name(op).unwrap_or_default();
    if program.attribute(op, "tfrt.native").is_some() {
        let (inputs, results) = match program.attribute(op, "function_type").map(|t| m.context.attr(t)) {
            Some(Attribute::Type(ty)) => match m.context.ty(*ty) {
                Type::Function { inputs, results } => (inputs.to_vec(), results.to_vec()),
                _ => (Vec::new(), Vec::new()),
            },
            _ => (Vec::new(), Vec::new()),
        };
        for &ty in inputs.iter().chain(&results) {
            entities.add_type(program, ty)?;
        }
        entities.add_function(FunctionEntry { name, kind: FunctionKind::Native, inputs, results, body: None });
        return Ok(());
    }
    let Some(&body) = m.op_regions(op).first() else { return Err(WriteError::ExternalFunction(program.site(op))) };
    let Some(&entry) = m.region(body).blocks.first() else {
        return Err(WriteError::ExternalFunction(program.site(op)));
    };
    let last = match m.block(entry).ops.last() {
        Some(&last) if program.is(last, RETURN) => last,
        Some(&last) => return Err(WriteError::MissingReturn(program.site(last))),
        None => return Err(WriteError::MissingReturn(program.site(op))),
    };
    let sync = program.attribute(op, "tfrt.sync").is_some();
    if sync {
        let mut returned = HashSet::new();
        for (index, &value) in m.operands(last).iter().enumerate() {
            if matches!(m.value(value).def, ValueDef::BlockArgument { .. }) {
                return Err(WriteError::SyncReturnsArgument { site: program.site(last), index });
            }
            if !returned.insert(value) {
                return Err(WriteError::SyncReturnsDuplicate { site: program.site(last), index });
            }
        }
    }
    let kind = if sync { FunctionKind::Sync } else { FunctionKind::Async };
    entities.add_region(program, body, op, name, kind)
}

/// A flat symbol reference's name.
fn flat_symbol<'m>(program: &Program<'m>, attr: AttrId) -> Option<&'m [u8]> {
    match program.module.context.attr(attr) {
        Attribute::FlatSymbolRef(name) => Some(program.string(*name)),
        _ => None,
    }
}

/// What an attribute says about functions.
enum Symbols<'m> {
    /// It names none: an ordinary attribute, or a symbol in a `tfrt.compiled` module.
    None,
    /// A symbol reference, or an array that starts with one: the functions' names.
    Functions(Vec<&'m [u8]>),
    /// A nested symbol reference outside compiled modules, which no function can have.
    Unresolvable(String),
}

fn function_symbols<'m>(program: &Program<'m>, attr: AttrId) -> Symbols<'m> {
    let ctx = &program.module.context;
    let is_symbol = |attr: AttrId| matches!(ctx.attr(attr), Attribute::FlatSymbolRef(_) | Attribute::SymbolRef { .. });
    let items: &[AttrId] = match ctx.attr(attr) {
        _ if is_symbol(attr) && compiled_symbol(program, attr).is_some() => return Symbols::None,
        _ if is_symbol(attr) => std::slice::from_ref(&attr),
        Attribute::Array(items) if items.first().is_some_and(|&first| is_symbol(first)) => items,
        _ => return Symbols::None,
    };
    let mut names = Vec::with_capacity(items.len());
    for &item in items {
        match flat_symbol(program, item) {
            Some(name) => names.push(name),
            None => return Symbols::Unresolvable(symbol_text(program, item)),
        }
    }
    Symbols::Functions(names)
}

/// `@root::@nested` as MLIR prints a symbol reference.
fn symbol_text(program: &Program<'_>, attr: AttrId) -> String {
    symbol_names(program, attr)
        .unwrap_or_default()
        .iter()
        .map(|name| format!("@{}", String::from_utf8_lossy(name)))
        .collect::<Vec<_>>()
        .join("::")
}

/// A symbol reference's root and nested names.
fn symbol_names<'m>(program: &Program<'m>, attr: AttrId) -> Option<Vec<&'m [u8]>> {
    match program.module.context.attr(attr) {
        Attribute::FlatSymbolRef(name) => Some(vec![program.string(*name)]),
        Attribute::SymbolRef { root, nested } => Some(
            std::iter::once(program.string(*root))
                .chain(nested.iter().map(|&n| flat_symbol(program, n).unwrap_or_default()))
                .collect(),
        ),
        _ => None,
    }
}

/// For a symbol reference into a `tfrt.compiled` module: the symbol's root and nested names and
/// the module op that defines it.
pub(super) fn compiled_symbol<'m>(program: &Program<'m>, attr: AttrId) -> Option<(Vec<&'m [u8]>, OpId)> {
    let names = symbol_names(program, attr)?;
    let target = program.lookup_symbol(names[0], &names[1..])?;
    if !program.is_in_compiled_module(target) {
        return None;
    }
    let module = if program.is_compiled_module(target) { target } else { program.enclosing_module(target)? };
    Some((names, module))
}
