//! Function bodies back to operations, as TFRT's `bef_to_mlir` rebuilds them: a block whose
//! arguments are the pseudo kernel's argument registers, one op per kernel (its attributes named
//! by the attribute-names section, its named callees as symbol attributes, its anonymous
//! callees as regions), and a `tfrt.return` of the result registers. Named functions become
//! `func.func`s (`tfrt.sync`, or body-less and `tfrt.native`); anonymous ones are then moved into
//! the regions of the kernels that refer to them.

use std::collections::HashMap;

use super::error::DisassembleError;
use super::locations::location;
use crate::format::FunctionKind;
use crate::reader::{BefImage, FunctionBody, FunctionInfo};
use rtx_kernel::record::KernelRecord;
use rtx_mlir::ir::{
    ApInt, AttrId, Attribute, BlockId, MlirContext, Module, NewOp, OpId, RegionId, Signedness, Type, TypeId, ValueId,
};
use rtx_mlir::text::syntax;

/// The value of an attribute whose kind the file does not say (TFRT's choice).
const UNKNOWN_ATTRIBUTE: u64 = 0xDEAD_BEEF;

/// What the file's tables decoded to, which the bodies refer to.
pub(super) struct Tables<'a> {
    pub(super) image: &'a BefImage,
    /// The types section's types.
    pub(super) types: &'a [TypeId],
    /// Attributes by offset in the attributes section (those the attribute-types section lists).
    pub(super) attributes: &'a HashMap<u32, AttrId>,
    /// Per function, per kernel, the attribute names (absent without the optional section).
    pub(super) attribute_names: Option<&'a [Vec<Vec<String>>]>,
    /// Per function, each register's type index (absent without the optional section).
    pub(super) register_types: Option<&'a [Box<[u32]>]>,
}

/// Builds every function into `module`: named ones appended to `top` in index order.
pub(super) fn build(module: &mut Module, top: BlockId, tables: &Tables<'_>) -> Result<(), DisassembleError> {
    let image = tables.image;
    let mut anonymous: Vec<Option<BlockId>> = vec![None; image.num_functions()];
    let mut regions: Vec<(RegionId, usize, usize)> = Vec::new();
    for (index, slot) in anonymous.iter_mut().enumerate() {
        let info = image.function_info(index).expect("one slot per function");
        let func = match &info.body {
            None => {
                if info.name.is_empty() {
                    return Err(function_error(index, "an anonymous function without a body"));
                }
                let loc = module.context.intern_attr(Attribute::UnknownLoc);
                func_op(module, tables, info, None, loc)
            }
            Some(body) => {
                let mut builder = BodyBuilder { module: &mut *module, tables, index, regions: &mut regions };
                let (block, loc) = builder.body(info, body)?;
                if info.name.is_empty() {
                    *slot = Some(block);
                    continue;
                }
                func_op(module, tables, info, Some(block), loc)
            }
        };
        module.append_op(top, func);
    }
    // The function whose kernel each anonymous function is a region of.
    let mut owners: Vec<Option<usize>> = vec![None; image.num_functions()];
    for (region, index, owner) in regions {
        let block = anonymous[index].take().ok_or_else(|| {
            function_error(index, "a kernel's region, but it is named, or already another kernel's region")
        })?;
        module.append_block(region, block);
        owners[index] = Some(owner);
    }
    if let Some(index) = anonymous.iter().position(Option::is_some) {
        return Err(function_error(index, "anonymous, yet no kernel's region"));
    }
    check_nesting(&owners)
}

fn function_error(index: usize, what: &str) -> DisassembleError {
    DisassembleError::Function { index, what: what.to_owned() }
}

/// Every anonymous function must nest in a named one: a chain of regions that returns to where
/// it started (function A a region of a kernel in B, B one in A) would never reach one.
fn check_nesting(owners: &[Option<usize>]) -> Result<(), DisassembleError> {
    for start in 0..owners.len() {
        let (mut function, mut steps) = (start, 0);
        while let Some(owner) = owners[function] {
            if steps == owners.len() {
                return Err(function_error(start, "its region nests in itself"));
            }
            (function, steps) = (owner, steps + 1);
        }
    }
    Ok(())
}

/// The `func.func` of a named function (`body` is `None` for a native one).
fn func_op(module: &mut Module, tables: &Tables<'_>, info: &FunctionInfo, body: Option<BlockId>, loc: AttrId) -> OpId {
    let inputs: Box<[TypeId]> = info.arguments.iter().map(|&t| tables.types[t as usize]).collect();
    let results: Box<[TypeId]> = match body {
        // The return's operand types, which are the register types (or `none` without them).
        Some(block) => {
            let ret = *module.block(block).ops.last().expect("bodies end with a return");
            module.operands(ret).iter().map(|&v| module.value(v).ty).collect()
        }
        None => info.results.iter().map(|&t| tables.types[t as usize]).collect(),
    };
    let ctx = &mut module.context;
    let function_type = ctx.intern_type(Type::Function { inputs, results });
    let mut attrs = vec![
        (string(ctx, "sym_name"), string(ctx, &info.name)),
        (string(ctx, "function_type"), ctx.intern_attr(Attribute::Type(function_type))),
    ];
    let unit = ctx.intern_attr(Attribute::Unit);
    match info.kind {
        FunctionKind::Native => {
            attrs.push((string(ctx, "tfrt.native"), unit));
            attrs.push((string(ctx, "sym_visibility"), string(ctx, "private")));
        }
        FunctionKind::Sync => attrs.push((string(ctx, "tfrt.sync"), unit)),
        FunctionKind::Async => {}
    }
    let attrs = dictionary(ctx, attrs);
    let name = ctx.intern_op_name(b"func.func");
    let op = module.add_op(NewOp { name, loc, attrs, operands: &[], result_types: &[], num_regions: 1 });
    if let Some(block) = body {
        let region = module.op_regions(op)[0];
        module.append_block(region, block);
    }
    op
}

fn string(ctx: &mut MlirContext, text: &str) -> AttrId {
    ctx.intern_string_attr(text.as_bytes())
}

/// A dictionary of `entries`, sorted by name, the first of equal names kept.
fn dictionary(ctx: &mut MlirContext, mut entries: Vec<(AttrId, AttrId)>) -> Option<AttrId> {
    let name = |ctx: &MlirContext, key: AttrId| match ctx.attr(key) {
        Attribute::String { value, .. } => ctx.str_bytes(*value).to_vec(),
        _ => Vec::new(),
    };
    entries.sort_by_cached_key(|&(key, _)| name(ctx, key));
    entries.dedup_by_key(|&mut (key, _)| key);
    Some(ctx.intern_attr(Attribute::Dictionary(entries.into())))
}

/// Builds one function body.
struct BodyBuilder<'a, 'm> {
    module: &'m mut Module,
    tables: &'a Tables<'a>,
    index: usize,
    /// Regions of kernels waiting for their anonymous function's block: (region, anonymous
    /// function, the function holding the kernel).
    regions: &'a mut Vec<(RegionId, usize, usize)>,
}

impl BodyBuilder<'_, '_> {
    /// The body's block (ending with its `tfrt.return`) and the function's location.
    fn body(&mut self, info: &FunctionInfo, body: &FunctionBody) -> Result<(BlockId, AttrId), DisassembleError> {
        let image = self.tables.image;
        let loc = location(image, &mut self.module.context, body.location)?;
        let arguments: Vec<(TypeId, Option<AttrId>)> =
            info.arguments.iter().map(|&t| (self.tables.types[t as usize], Some(loc))).collect();
        let block = self.module.add_block(&arguments);
        let mut values: Vec<Option<ValueId>> = vec![None; body.num_registers()];
        let mut records = image.records(body);
        let pseudo = records.next().expect("verified bodies have their pseudo kernel");
        for (register, argument) in pseudo.results().iter().skip(1).zip(self.module.arguments(block)) {
            values[register as usize] = Some(argument);
        }
        for (k, record) in records.enumerate() {
            let op = self.kernel(k + 1, &record, &values)?;
            for (register, result) in record.results().iter().zip(self.module.results(op)) {
                values[register as usize] = Some(result);
            }
            self.module.append_op(block, op);
        }
        let returned = self.registers(body.results.iter().copied(), &values, body.kernels.len())?;
        let name = self.module.context.intern_op_name(b"tfrt.return");
        let ret = self.module.add_op(NewOp {
            name,
            loc,
            attrs: None,
            operands: &returned,
            result_types: &[],
            num_regions: 0,
        });
        self.module.append_op(block, ret);
        Ok((block, loc))
    }

    /// The values of `registers`, used by kernel `kernel` (the function's return counts as the
    /// kernel after the last).
    fn registers(
        &self,
        registers: impl Iterator<Item = u32>,
        values: &[Option<ValueId>],
        kernel: usize,
    ) -> Result<Vec<ValueId>, DisassembleError> {
        registers
            .map(|register| {
                values[register as usize].ok_or(DisassembleError::UndefinedRegister {
                    function: self.index,
                    kernel,
                    register,
                })
            })
            .collect()
    }

    fn kernel(
        &mut self,
        k: usize,
        record: &KernelRecord<'_>,
        values: &[Option<ValueId>],
    ) -> Result<OpId, DisassembleError> {
        let tables = self.tables;
        let image = tables.image;
        let operands = self.registers(record.arguments().iter(), values, k)?;
        let loc = location(image, &mut self.module.context, record.location())?;
        let ctx = &mut self.module.context;
        let names = tables.attribute_names.map(|names| &names[self.index][k]);
        let mut attrs = Vec::new();
        for (i, offset) in record.attributes().iter().enumerate() {
            let name = match names.and_then(|names| names.get(i)) {
                Some(name) => string(ctx, name),
                None => string(ctx, &format!("attr{i}")),
            };
            let value = match tables.attributes.get(&offset) {
                Some(&value) => value,
                None => {
                    let ty = ctx.intern_type(Type::Integer { width: 32, signedness: Signedness::Signless });
                    ctx.intern_attr(Attribute::Integer { ty, value: ApInt::from_u64(32, UNKNOWN_ATTRIBUTE) })
                }
            };
            attrs.push((name, value));
        }
        let kernel_name = image.kernel_name(record.code());
        let mut callees = Vec::new();
        let mut anonymous = Vec::new();
        for function in record.functions().iter() {
            let info = image.function_info(function as usize).expect("function indices are verified");
            if info.name.is_empty() {
                anonymous.push(function as usize);
            } else {
                let name = string(ctx, &info.name);
                callees.push(ctx.intern_attr(Attribute::FlatSymbolRef(name)));
            }
        }
        attrs.extend(callee_attributes(ctx, kernel_name, &callees));
        let result_types: Vec<TypeId> = record
            .results()
            .iter()
            .map(|register| match tables.register_types {
                Some(types) => tables.types[types[self.index][register as usize] as usize],
                None => ctx.intern_type(Type::None),
            })
            .collect();
        let attrs = if attrs.is_empty() { None } else { dictionary(ctx, attrs) };
        let name = ctx.intern_op_name(kernel_name.as_bytes());
        let op = self.module.add_op(NewOp {
            name,
            loc,
            attrs,
            operands: &operands,
            result_types: &result_types,
            num_regions: anonymous.len(),
        });
        let op_regions = self.module.op_regions(op).to_vec();
        let owner = self.index;
        self.regions.extend(op_regions.into_iter().zip(anonymous).map(|(region, function)| (region, function, owner)));
        Ok(op)
    }
}

/// The attributes naming a kernel's callees: as its op's custom form names them when rtx knows
/// it, else TFRT's `callee` (an array of them when there are several).
fn callee_attributes(ctx: &mut MlirContext, kernel: &str, callees: &[AttrId]) -> Vec<(AttrId, AttrId)> {
    if callees.is_empty() {
        return Vec::new();
    }
    let form = syntax::lookup(kernel).and_then(|m| m.syntax.form.callees());
    match form {
        Some(form) if form.array => {
            let array = ctx.intern_attr(Attribute::Array(callees.into()));
            vec![(string(ctx, form.names[0]), array)]
        }
        Some(form) if form.names.len() == callees.len() => {
            form.names.iter().zip(callees).map(|(name, &callee)| (string(ctx, name), callee)).collect()
        }
        _ if callees.len() == 1 => vec![(string(ctx, "callee"), callees[0])],
        _ => {
            let array = ctx.intern_attr(Attribute::Array(callees.into()));
            vec![(string(ctx, "callee"), array)]
        }
    }
}
