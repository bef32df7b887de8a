//! The form upstream's printer gives by default (what `mlir-opt` and `tfrt_opt` print): ops
//! with a custom form in [`crate::text::syntax`] printed in it, the others in upstream's
//! generic form; values named as upstream's `SSANameState` names them; attributes and types in
//! their default spellings. With [`AsmOptions::generic`] every op is generic, as
//! `--mlir-print-op-generic` prints. Locations, when asked for, are printed inline (upstream's
//! `--mlir-print-local-scope` spelling) rather than as `#loc` aliases.

use foldhash::{HashMap, HashMapExt};
use std::fmt::Write;

use super::{PrintError, Printer};
use crate::ir::{AttrId, Attribute, BlockId, Module, OpId, Properties, RegionId, ValueDef, ValueId};
use crate::text::syntax;

/// How [`print_asm`] prints.
#[derive(Clone, Copy, Debug, Default)]
pub struct AsmOptions {
    /// Print locations (`--mlir-print-debuginfo`).
    pub debuginfo: bool,
    /// Print every op in the generic form (`--mlir-print-op-generic`).
    pub generic: bool,
}

/// Prints a module as upstream's printer does by default, in custom op syntax where rtx knows
/// an op's custom form.
pub fn print_asm(module: &Module, options: AsmOptions) -> Result<String, PrintError> {
    let mut p = Printer {
        module,
        out: String::with_capacity(48 * module.ops.len() + 256),
        options: super::PrintOptions { debuginfo: options.debuginfo },
        distinct_ids: HashMap::new(),
        error: None,
        resolved: None,
        upstream: true,
        names: value_names(module),
        dialects: vec!["builtin"],
        all_generic: options.generic,
    };
    for &op in &module.top_level {
        p.asm_op(op, 0);
        p.out.push('\n');
    }
    p.resources();
    match p.error {
        Some(error) => Err(error),
        None => Ok(p.out),
    }
}

/// Names every value as upstream does: the entry block arguments of each region `argN` and
/// everything else a number, counting on from the enclosing region (the regions of an op
/// start where the enclosing region's numbering ended, siblings alike); an op's results share
/// one number (`%3#1`).
fn value_names(m: &Module) -> Vec<String> {
    let mut names = vec![String::new(); m.values.len()];
    let mut stack: Vec<(RegionId, u32, u32)> = Vec::new();
    for &op in m.top_level.iter().rev() {
        stack.extend(m.op_regions(op).iter().rev().map(|&r| (r, 0, 0)));
    }
    while let Some((region, mut next_value, mut next_arg)) = stack.pop() {
        for (index, &block) in m.region(region).blocks.iter().enumerate() {
            for arg in m.arguments(block) {
                names[arg.0 as usize] = if index == 0 {
                    next_arg += 1;
                    format!("arg{}", next_arg - 1)
                } else {
                    next_value += 1;
                    (next_value - 1).to_string()
                };
            }
            for &op in &m.block(block).ops {
                let results = m.op(op).results;
                if results.len == 0 {
                    continue;
                }
                for start in syntax::result_groups(&m.op_name(op), results.len as usize) {
                    names[results.start as usize + start] = next_value.to_string();
                    next_value += 1;
                }
            }
        }
        let nested: Vec<RegionId> = m
            .region(region)
            .blocks
            .iter()
            .flat_map(|&b| m.block(b).ops.iter().flat_map(|&op| m.op_regions(op).iter().copied()))
            .collect();
        stack.extend(nested.into_iter().rev().map(|r| (r, next_value, next_arg)));
    }
    names
}

/// `(start, length)` of the group of `op`'s results that result `index` belongs to.
fn result_group(m: &Module, op: OpId, index: usize) -> (usize, usize) {
    let count = m.op(op).results.len as usize;
    let groups = syntax::result_groups(&m.op_name(op), count);
    let at = groups.iter().rposition(|&start| start <= index).unwrap_or(0);
    let end = groups.get(at + 1).copied().unwrap_or(count);
    (groups[at], end - groups[at])
}

impl Printer<'_> {
    pub(super) fn newline(&mut self, depth: usize) {
        self.out.push('\n');
        self.indent(depth);
    }

    /// A value's use: `%name`, or `%name#i` for one result of several.
    pub(super) fn asm_value(&mut self, value: ValueId) {
        let m = self.module;
        self.out.push('%');
        match m.value(value).def {
            ValueDef::OpResult { op, index } if m.op(op).results.len > 1 => {
                let results = m.op(op).results;
                let (start, len) = result_group(m, op, index as usize);
                let first = results.start as usize + start;
                if len > 1 {
                    let _ = write!(self.out, "{}#{}", self.names[first], index as usize - start);
                } else {
                    self.out.push_str(&self.names[first]);
                }
            }
            _ => self.out.push_str(&self.names[value.0 as usize]),
        }
    }

    pub(super) fn asm_values(&mut self, values: &[ValueId]) {
        for (i, &v) in values.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.asm_value(v);
        }
    }

    pub(super) fn asm_types(&mut self, values: impl IntoIterator<Item = ValueId>) {
        for (i, v) in values.into_iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.ty(self.module.value(v).ty);
        }
    }

    /// Makes a region's entry block arguments print as the given values (a custom op whose
    /// region's arguments copy its operands' names).
    pub(super) fn shadow(&mut self, region: RegionId, names: &[ValueId]) {
        let m = self.module;
        let Some(&entry) = m.region(region).blocks.first() else { return };
        for (arg, &name) in m.arguments(entry).zip(names) {
            let mut text = std::mem::take(&mut self.out);
            self.asm_value(name);
            std::mem::swap(&mut text, &mut self.out);
            self.names[arg.0 as usize] = text[1..].to_string();
        }
    }

    /// One op at indentation `depth` (the caller has indented the line), without a newline.
    fn asm_op(&mut self, op: OpId, depth: usize) {
        let m = self.module;
        let results = m.op(op).results;
        if results.len > 0 {
            let groups = syntax::result_groups(&m.op_name(op), results.len as usize);
            for (i, &start) in groups.iter().enumerate() {
                let end = groups.get(i + 1).copied().unwrap_or(results.len as usize);
                if i > 0 {
                    self.out.push_str(", ");
                }
                let _ = write!(self.out, "%{}", self.names[results.start as usize + start]);
                if end - start > 1 {
                    let _ = write!(self.out, ":{}", end - start);
                }
            }
            self.out.push_str(" = ");
        }
        let full = m.op_name(op);
        let custom = (!self.all_generic).then(|| syntax::lookup(&full)).flatten().filter(|s| self.fits(op, s));
        match custom {
            Some(matched) => {
                let dialect = self.dialects.last().copied().unwrap_or("");
                self.out.push_str(syntax::short_name(&full, dialect));
                self.dialects.push(syntax::default_dialect(&full));
                self.custom_op(op, &matched, depth);
                self.dialects.pop();
            }
            None => self.asm_generic_op(op, depth),
        }
        if self.options.debuginfo {
            self.out.push(' ');
            self.loc(m.op(op).loc);
        }
    }

    /// `"name"(%a) [^bb] <{props}> ({regions}) {attrs} : (T) -> R`.
    fn asm_generic_op(&mut self, op: OpId, depth: usize) {
        let m = self.module;
        self.string(m.context.str_bytes(m.context.op_name(m.op(op).name).full));
        self.out.push('(');
        self.asm_values(m.operands(op));
        self.out.push(')');
        let successors = m.successors(op);
        if !successors.is_empty() {
            self.out.push('[');
            for (i, &block) in successors.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.block_name(block);
            }
            self.out.push(']');
        }
        match m.op(op).properties {
            Properties::None => {}
            // Upstream has no properties attribute when none is set.
            Properties::Dict(attr) if matches!(m.context.attr(attr), Attribute::Dictionary(e) if e.is_empty()) => {}
            Properties::Dict(attr) => {
                self.out.push_str(" <");
                self.attr(attr);
                self.out.push('>');
            }
            Properties::Opaque(_) => self.fail(PrintError::OpaqueProperties(m.op_name(op).into_owned())),
        }
        let regions = m.op_regions(op);
        if !regions.is_empty() {
            self.out.push_str(" (");
            for (i, &region) in regions.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.asm_region(region, depth, true, true);
            }
            self.out.push(')');
        }
        if let Some(attrs) = m.op(op).attrs {
            if let Attribute::Dictionary(entries) = m.context.attr(attrs) {
                self.attr_dict(entries, &[], false);
            }
        }
        self.out.push_str(" : (");
        self.asm_types(m.operands(op).iter().copied());
        self.out.push_str(") -> ");
        let results: Vec<ValueId> = m.results(op).collect();
        let single =
            results.len() == 1 && !matches!(m.context.ty(m.value(results[0]).ty), crate::ir::Type::Function { .. });
        if !single {
            self.out.push('(');
        }
        self.asm_types(results);
        if !single {
            self.out.push(')');
        }
    }

    /// ` {a = 1, b}` without the entries named in `elided`, or nothing when none is left; with
    /// `keyword`, ` attributes {...}`.
    pub(super) fn attr_dict(&mut self, entries: &[(AttrId, AttrId)], elided: &[&str], keyword: bool) {
        let ctx = &self.module.context;
        let key = |k: AttrId| match ctx.attr(k) {
            Attribute::String { value, .. } => ctx.str_bytes(*value),
            _ => &[],
        };
        let shown: Vec<(AttrId, AttrId)> =
            entries.iter().copied().filter(|&(k, _)| !elided.iter().any(|e| e.as_bytes() == key(k))).collect();
        if shown.is_empty() {
            return;
        }
        self.out.push_str(if keyword { " attributes {" } else { " {" });
        for (i, &(k, v)) in shown.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.keyword_or_string(key(k));
            if !matches!(ctx.attr(v), Attribute::Unit) {
                self.out.push_str(" = ");
                self.attr(v);
            }
        }
        self.out.push('}');
    }

    /// `{` blocks `}`; the entry block's header only when `entry_args` and it has arguments, or
    /// when `empty_entry` and it has no ops.
    pub(super) fn asm_region(&mut self, region: RegionId, depth: usize, entry_args: bool, empty_entry: bool) {
        let m = self.module;
        self.out.push('{');
        for (index, &block) in m.region(region).blocks.iter().enumerate() {
            let b = m.block(block);
            let header = index > 0 || (entry_args && b.arguments.len > 0) || (empty_entry && b.ops.is_empty());
            if header {
                self.newline(depth);
                self.block_header(region, block, index);
            }
            for &op in &b.ops {
                self.newline(depth + 1);
                self.asm_op(op, depth + 1);
            }
        }
        self.newline(depth);
        self.out.push('}');
    }

    /// `^bbN(%a: T):` with upstream's comment on the block's predecessors.
    fn block_header(&mut self, region: RegionId, block: BlockId, index: usize) {
        let m = self.module;
        self.block_name(block);
        self.block_arguments(block, Self::asm_value);
        self.out.push(':');
        let blocks = &m.region(region).blocks;
        let mut preds: Vec<BlockId> = blocks
            .iter()
            .copied()
            .filter(|&p| m.block(p).ops.last().is_some_and(|&t| m.successors(t).contains(&block)))
            .collect();
        preds.dedup();
        match preds.as_slice() {
            [] if index > 0 => self.out.push_str("  // no predecessors"),
            [] => {}
            [pred] => {
                self.out.push_str("  // pred: ");
                self.block_name(*pred);
            }
            many => {
                let _ = write!(self.out, "  // {} preds: ", many.len());
                for (i, &pred) in many.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.block_name(pred);
                }
            }
        }
    }

    /// `^bbN`, N the block's position in its region.
    fn block_name(&mut self, block: BlockId) {
        let m = self.module;
        let position = m
            .block(block)
            .parent
            .and_then(|r| m.region(r).blocks.iter().position(|&b| b == block))
            .unwrap_or(block.0 as usize);
        let _ = write!(self.out, "^bb{position}");
    }
}
