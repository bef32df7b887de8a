//! The generic-form printer: `"dialect.op"(%a) [^succ] <{props}> ({regions}) {attrs} : (types) ->
//! (types) loc(...)`, with builtin attributes and types in their own syntax, other dialects' as the
//! text they were stored as, and `{-# dialect_resources #-}` blobs. The output is meant for
//! machines first (upstream MLIR parses it to the same module), so it favours exact, always-valid
//! spellings: values are `%v<id>`, blocks `^bb<id>`, names always quoted, floats in hexadecimal,
//! dense data as hex strings.

mod asm;
mod attr;
mod custom;
mod types;

pub use asm::{print_asm, AsmOptions};

use foldhash::{HashMap, HashMapExt};
use std::fmt::Write;

use crate::ir::{
    AttrId, Attribute, BlockId, Module, OpId, Properties, RegionId, ResourceValue, TypeId, ValueDef, ValueId,
};

/// What to print.
#[derive(Clone, Copy, Debug, Default)]
pub struct PrintOptions {
    /// Print locations (`loc(...)` after ops and block arguments), like `--mlir-print-debuginfo`.
    pub debuginfo: bool,
}

/// Something in the module that has no textual form rtx can produce.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrintError {
    #[error("attribute of dialect `{0}` is stored in that dialect's own bytecode encoding, which rtx cannot print")]
    CustomAttribute(String),
    #[error("type of dialect `{0}` is stored in that dialect's own bytecode encoding, which rtx cannot print")]
    CustomType(String),
    #[error("op `{0}` has native properties that rtx cannot decode (unknown op schema)")]
    OpaqueProperties(String),
}

pub(crate) struct Printer<'m> {
    pub(crate) module: &'m Module,
    pub(crate) out: String,
    options: PrintOptions,
    /// `distinct[N]` numbers, in order of first print.
    pub(crate) distinct_ids: HashMap<u32, usize>,
    pub(crate) error: Option<PrintError>,
    /// Texts standing in for entries still held in their dialect's own encoding (the bytecode
    /// reader decodes those in dependency order, before it swaps the texts into the context).
    pub(crate) resolved: Option<&'m ResolvedCustom>,
    /// Spell attributes and types as upstream's printer does by default (bare keys, decimal
    /// floats, elided `i64`/`f64`, literal dense data) rather than in the exact machine form.
    pub(crate) upstream: bool,
    /// The name each value prints as in the upstream form (see `asm`), by [`ValueId`].
    pub(crate) names: Vec<String>,
    /// The default dialect of each enclosing custom op (see `text::syntax::default_dialect`).
    pub(crate) dialects: Vec<&'static str>,
    /// Print every op in the generic form even where the upstream form has a custom one.
    pub(crate) all_generic: bool,
}

/// Full textual forms, by id, of attributes and types that the context still holds as
/// [`Attribute::Custom`] / [`crate::ir::Type::Custom`].
#[derive(Default)]
pub struct ResolvedCustom {
    pub(crate) attrs: HashMap<AttrId, String>,
    pub(crate) types: HashMap<TypeId, String>,
}

/// What to print on its own: one attribute (in attribute position) or one type.
#[derive(Clone, Copy, Debug)]
pub enum Entity {
    Attr(AttrId),
    Type(TypeId),
}

/// One attribute or type in its full form (rtx prints no aliases), as it would appear nested in
/// another dialect's attribute; custom-encoded entries print as their text in `resolved`.
pub fn print_entity(module: &Module, entity: Entity, resolved: &ResolvedCustom) -> Result<String, PrintError> {
    let mut p = Printer::new(module, PrintOptions::default(), Some(resolved));
    match entity {
        Entity::Attr(id) => p.attr(id),
        Entity::Type(id) => p.ty(id),
    }
    p.finish()
}

/// Prints a module in MLIR's generic form.
pub fn print_generic(module: &Module, options: PrintOptions) -> Result<String, PrintError> {
    let mut p = Printer::new(module, options, None);
    p.out.reserve(64 * module.ops.len() + 1024);
    for &op in &module.top_level {
        p.op(op, 0);
    }
    p.resources();
    p.finish()
}

/// One operation (and its regions) in generic form, without a trailing newline, as upstream
/// prints an op that is nested in a module.
pub fn print_op_generic(module: &Module, op: OpId) -> Result<String, PrintError> {
    let mut p = Printer::new(module, PrintOptions::default(), None);
    p.op(op, 0);
    p.out.pop();
    p.finish()
}

/// A location as `loc(...)` holds it (`"file":1:2`, `"name"(...)`, `fused[...]`), for messages.
pub fn print_location(module: &Module, loc: AttrId) -> String {
    let mut p = Printer::new(module, PrintOptions::default(), None);
    p.loc_body(loc);
    p.out
}

impl<'m> Printer<'m> {
    fn new(module: &'m Module, options: PrintOptions, resolved: Option<&'m ResolvedCustom>) -> Self {
        Printer {
            module,
            out: String::new(),
            options,
            distinct_ids: HashMap::new(),
            error: None,
            resolved,
            upstream: false,
            names: Vec::new(),
            dialects: Vec::new(),
            all_generic: false,
        }
    }

    fn finish(self) -> Result<String, PrintError> {
        match self.error {
            Some(error) => Err(error),
            None => Ok(self.out),
        }
    }
}

impl Printer<'_> {
    pub(crate) fn fail(&mut self, error: PrintError) {
        self.error.get_or_insert(error);
    }

    fn indent(&mut self, depth: usize) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
    }

    fn value(&mut self, value: ValueId) {
        let m = self.module;
        match m.value(value).def {
            ValueDef::OpResult { op, index } if m.op(op).results.len > 1 => {
                let _ = write!(self.out, "%v{}#{}", m.op(op).results.start, index);
            }
            _ => {
                let _ = write!(self.out, "%v{}", value.0);
            }
        }
    }

    /// A block's `(%a: T, ...)` (locations too with debug info), nothing for none; `name`
    /// spells a value as the generic or the custom printer names it.
    pub(super) fn block_arguments(&mut self, block: BlockId, name: fn(&mut Self, ValueId)) {
        let m = self.module;
        if m.block(block).arguments.len == 0 {
            return;
        }
        self.out.push('(');
        for (i, arg) in m.arguments(block).enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            name(self, arg);
            self.out.push_str(": ");
            self.ty(m.value(arg).ty);
            if self.options.debuginfo {
                self.out.push(' ');
                match m.value(arg).loc {
                    Some(loc) => self.loc(loc),
                    None => self.out.push_str("loc(unknown)"),
                }
            }
        }
        self.out.push(')');
    }

    fn block_label(&mut self, block: BlockId) {
        let _ = write!(self.out, "^bb{}", block.0);
    }

    fn op(&mut self, op_id: OpId, depth: usize) {
        let m = self.module;
        let op = m.op(op_id);
        self.indent(depth);
        if op.results.len > 0 {
            let _ = write!(self.out, "%v{}", op.results.start);
            if op.results.len > 1 {
                let _ = write!(self.out, ":{}", op.results.len);
            }
            self.out.push_str(" = ");
        }
        self.string(m.context.str_bytes(m.context.op_name(op.name).full));
        self.out.push('(');
        for (i, &operand) in m.operands(op_id).iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.value(operand);
        }
        self.out.push(')');
        let successors = m.successors(op_id);
        if !successors.is_empty() {
            self.out.push('[');
            for (i, &block) in successors.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.block_label(block);
            }
            self.out.push(']');
        }
        match &op.properties {
            Properties::None => {}
            Properties::Dict(attr) => {
                self.out.push_str(" <");
                self.attr(*attr);
                self.out.push('>');
            }
            Properties::Opaque(_) => self.fail(PrintError::OpaqueProperties(m.op_name(op_id).into_owned())),
        }
        let regions = m.op_regions(op_id);
        if !regions.is_empty() {
            self.out.push_str(" (");
            for (i, &region) in regions.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.region(region, depth);
            }
            self.out.push(')');
        }
        if let Some(attrs) = op.attrs {
            if !matches!(m.context.attr(attrs), Attribute::Dictionary(entries) if entries.is_empty()) {
                self.out.push(' ');
                self.attr(attrs);
            }
        }
        self.out.push_str(" : (");
        for (i, &operand) in m.operands(op_id).iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.ty(m.value(operand).ty);
        }
        self.out.push_str(") -> (");
        for (i, result) in m.results(op_id).enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.ty(m.value(result).ty);
        }
        self.out.push(')');
        if self.options.debuginfo {
            self.out.push(' ');
            self.loc(op.loc);
        }
        self.out.push('\n');
    }

    fn region(&mut self, region: RegionId, depth: usize) {
        let m = self.module;
        self.out.push_str("{\n");
        for &block in &m.region(region).blocks {
            self.indent(depth);
            self.block_label(block);
            self.block_arguments(block, Self::value);
            self.out.push_str(":\n");
            for &op in &m.block(block).ops {
                self.op(op, depth + 1);
            }
        }
        self.indent(depth);
        self.out.push('}');
    }

    /// `loc(...)`.
    fn loc(&mut self, loc: AttrId) {
        match self.module.context.attr(loc) {
            Attribute::Text { .. } | Attribute::Custom { .. } => self.attr(loc),
            _ => {
                self.out.push_str("loc(");
                self.loc_body(loc);
                self.out.push(')');
            }
        }
    }

    fn resources(&mut self) {
        let m = self.module;
        let resources = &m.resources;
        let printable = |entries: &[crate::ir::ResourceEntry]| entries.iter().any(|e| e.value != ResourceValue::Elided);
        let dialect_groups: Vec<_> = resources.dialect.iter().filter(|g| printable(&g.entries)).collect();
        let external_groups: Vec<_> = resources.external.iter().filter(|g| printable(&g.entries)).collect();
        if dialect_groups.is_empty() && external_groups.is_empty() {
            return;
        }
        self.out.push_str("\n{-#\n");
        let mut sections = Vec::new();
        if !dialect_groups.is_empty() {
            sections.push((
                "dialect_resources",
                dialect_groups.iter().map(|g| (m.context.dialect(g.owner).name, &g.entries)).collect::<Vec<_>>(),
            ));
        }
        if !external_groups.is_empty() {
            sections.push(("external_resources", external_groups.iter().map(|g| (g.owner, &g.entries)).collect()));
        }
        for (s, (section, groups)) in sections.into_iter().enumerate() {
            if s > 0 {
                self.out.push_str(",\n");
            }
            let _ = writeln!(self.out, "  {section}: {{");
            for (g, (owner, entries)) in groups.into_iter().enumerate() {
                if g > 0 {
                    self.out.push_str(",\n");
                }
                self.out.push_str("    ");
                self.keyword_or_string(m.context.str_bytes(owner));
                self.out.push_str(": {\n");
                let mut first = true;
                for entry in entries.iter().filter(|e| e.value != ResourceValue::Elided) {
                    if !first {
                        self.out.push_str(",\n");
                    }
                    first = false;
                    self.out.push_str("      ");
                    self.string(m.context.str_bytes(entry.key));
                    self.out.push_str(": ");
                    match &entry.value {
                        ResourceValue::Blob { alignment, data } => {
                            self.out.push_str("\"0x");
                            self.hex(&(*alignment as u32).to_le_bytes());
                            self.hex(data.bytes());
                            self.out.push('"');
                        }
                        ResourceValue::Bool(value) => self.out.push_str(if *value { "true" } else { "false" }),
                        ResourceValue::String(sym) => self.string(m.context.str_bytes(*sym)),
                        ResourceValue::Elided => {}
                    }
                }
                self.out.push_str("\n    }");
            }
            self.out.push_str("\n  }");
        }
        self.out.push_str("\n#-}\n");
    }

    pub(crate) fn hex(&mut self, bytes: &[u8]) {
        const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
        self.out.reserve(bytes.len() * 2);
        for &b in bytes {
            self.out.push(DIGITS[(b >> 4) as usize] as char);
            self.out.push(DIGITS[(b & 15) as usize] as char);
        }
    }

    /// A quoted string with MLIR's escapes (`\XX` for anything but printable ASCII; upstream
    /// writes a backslash as `\\`).
    pub(crate) fn string(&mut self, bytes: &[u8]) {
        const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
        self.out.push('"');
        for &b in bytes {
            if b == b'\\' && self.upstream {
                self.out.push_str("\\\\");
            } else if (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\' {
                self.out.push(b as char);
            } else {
                self.out.push('\\');
                self.out.push(DIGITS[(b >> 4) as usize] as char);
                self.out.push(DIGITS[(b & 15) as usize] as char);
            }
        }
        self.out.push('"');
    }

    /// A bare identifier when `bytes` is one, else a quoted string.
    pub(crate) fn keyword_or_string(&mut self, bytes: &[u8]) {
        let bare = !bytes.is_empty()
            && (bytes[0].is_ascii_alphabetic() || bytes[0] == b'_')
            && bytes.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b == b'.');
        if bare {
            self.out.push_str(std::str::from_utf8(bytes).expect("ASCII"));
        } else {
            self.string(bytes);
        }
    }
}
