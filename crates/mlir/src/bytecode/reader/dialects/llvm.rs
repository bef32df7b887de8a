//! The LLVM dialect's attribute encodings (`LLVMDialectBytecode.td` in MLIR, as built into IREE
//! 3.13): the debug-info attributes and `#llvm.loop_annotation`, each printed the way its
//! `struct(params)` assembly format does (optional parameters left out when null or default,
//! parameters of a concrete attribute class printed without their `#llvm.mnemonic` prefix, DWARF
//! constants and flags by name). Every other LLVM attribute, and every LLVM type, is written as
//! text and needs no decoding.

use super::{dialect_symbol, Decoded, Payload, Template};
use crate::bytecode::reader::error::Result;
use crate::dialects::llvm_attrs::{self, Param, Spec};
use crate::dialects::{dwarf, llvm_flags as flags};
use crate::ir::{AttrId, Attribute};

/// An attribute's `struct(params)` body under construction: `#llvm.mnemonic<a = .., b = ..>`.
struct Struct {
    t: Template,
    first: bool,
}

impl Struct {
    fn new(mnemonic: &str) -> Self {
        let mut t = Template::default();
        t.text(&format!("#llvm.{mnemonic}<"));
        Struct { t, first: true }
    }

    /// Starts parameter `name`.
    fn key(&mut self, name: &str) -> &mut Template {
        if !self.first {
            self.t.text(", ");
        }
        self.first = false;
        self.t.text(name);
        self.t.text(" = ");
        &mut self.t
    }

    fn text(&mut self, name: &str, value: &str) {
        self.key(name).text(value);
    }

    /// An unsigned parameter whose default is zero.
    fn uint(&mut self, name: &str, value: u64) {
        if value != 0 {
            self.text(name, &value.to_string());
        }
    }

    fn bool(&mut self, name: &str, value: bool) {
        if value {
            self.text(name, "true");
        }
    }

    /// An attribute parameter of a base class (printed in full), left out when null.
    fn attr(&mut self, name: &str, id: Option<AttrId>) {
        if let Some(id) = id {
            self.key(name).attr(id);
        }
    }

    /// An attribute parameter of a concrete class `#llvm.<mnemonic>` (printed without it).
    fn stripped(&mut self, name: &str, id: Option<(AttrId, usize)>, mnemonic: &'static str) {
        if let Some((id, offset)) = id {
            self.key(name).stripped_attr(id, mnemonic, offset);
        }
    }

    /// A `DistinctAttr` parameter.
    fn distinct(&mut self, name: &str, value: Option<Distinct>) {
        if let Some(Distinct { id, referenced }) = value {
            self.key(name).distinct(id, referenced);
        }
    }

    /// An array parameter (left out when empty): a bare comma-separated list or, with
    /// `brackets`, in `[...]`; with `stripped`, of attributes of class `#llvm.<mnemonic>` printed
    /// without that prefix (the payload offset of the list for errors).
    fn list(&mut self, name: &str, items: &[AttrId], brackets: bool, stripped: Option<(&'static str, usize)>) {
        if items.is_empty() {
            return;
        }
        let t = self.key(name);
        if brackets {
            t.text("[");
        }
        for (i, &item) in items.iter().enumerate() {
            if i > 0 {
                t.text(", ");
            }
            match stripped {
                Some((mnemonic, offset)) => t.stripped_attr(item, mnemonic, offset),
                None => t.attr(item),
            }
        }
        if brackets {
            t.text("]");
        }
    }

    fn finish(mut self) -> Template {
        self.t.text(">");
        self.t
    }
}

/// A `distinct[N]<...>` attribute referred to by a payload.
#[derive(Clone, Copy)]
struct Distinct {
    id: u32,
    referenced: Option<AttrId>,
}

/// The reads of `LLVMDialectBytecode.cpp` on top of the common primitives.
impl Payload<'_, '_> {
    /// `readOptionalAttribute`: a varint with a presence flag in its low bit.
    fn optional_attr(&mut self, what: &'static str) -> Result<Option<AttrId>> {
        let offset = self.offset();
        let raw = self.varint(what)?;
        if raw & 1 == 0 {
            return Ok(None);
        }
        let index = raw >> 1;
        if index >= self.num_attrs as u64 {
            return Err(self.invalid(offset, format!("{what} index {index} out of range")));
        }
        Ok(Some(AttrId(index as u32)))
    }

    /// An optional attribute with the offset it was read at (for errors while printing).
    fn optional_attr_at(&mut self, what: &'static str) -> Result<Option<(AttrId, usize)>> {
        let offset = self.offset();
        Ok(self.optional_attr(what)?.map(|id| (id, offset)))
    }

    /// An attribute that must be there (`readAttribute`).
    fn attr_at(&mut self) -> Result<(AttrId, usize)> {
        let offset = self.offset();
        Ok((self.attr()?, offset))
    }

    /// An optional `DistinctAttr`.
    fn optional_distinct(&mut self, what: &'static str) -> Result<Option<Distinct>> {
        let offset = self.offset();
        let Some(id) = self.optional_attr(what)? else { return Ok(None) };
        match self.ctx.attr(id) {
            Attribute::Distinct { id, referenced } => {
                let referenced = (!matches!(self.ctx.attr(*referenced), Attribute::Unit)).then_some(*referenced);
                Ok(Some(Distinct { id: *id, referenced }))
            }
            _ => Err(self.invalid(offset, format!("{what} is not a distinct attribute"))),
        }
    }

    /// `readOptionalArrayRef` of attributes: a presence flag, then a list of optional attributes
    /// (none of which may be null).
    fn optional_attr_list(&mut self, what: &'static str) -> Result<Vec<AttrId>> {
        if !self.bool(what)? {
            return Ok(Vec::new());
        }
        let n = self.c.count(what, 1)?;
        let mut items = Vec::with_capacity(n);
        for _ in 0..n {
            let offset = self.offset();
            match self.optional_attr(what)? {
                Some(id) => items.push(id),
                None => return Err(self.invalid(offset, format!("null entry in {what}"))),
            }
        }
        Ok(items)
    }

    /// `readOptionalArrayRef` of integers.
    fn optional_int_list(&mut self, what: &'static str) -> Result<Vec<u64>> {
        if !self.bool(what)? {
            return Ok(Vec::new());
        }
        let n = self.c.count(what, 1)?;
        (0..n).map(|_| self.varint(what)).collect()
    }

    /// `readOptionalInt`: a varint with a presence flag in its low bit.
    fn optional_int(&mut self, what: &'static str) -> Result<Option<u64>> {
        let raw = self.varint(what)?;
        Ok((raw & 1 == 1).then_some(raw >> 1))
    }

    /// A DWARF constant (zero is the parameter's default, which the printer leaves out).
    fn dwarf(&mut self, what: &'static str, names: dwarf::Names) -> Result<Named> {
        let value = self.varint(what)?;
        Ok(match dwarf::name(names, value) {
            _ if value == 0 => Named::Default,
            Some(name) => Named::Name(name),
            None => Named::Unknown,
        })
    }
}

/// A named constant as read: the default (left out), a name, or a value rtx cannot name (the entry
/// stays encoded).
enum Named {
    Default,
    Name(&'static str),
    Unknown,
}

/// Leaves the entry encoded when a constant has no name rtx knows.
macro_rules! named {
    ($value:expr) => {
        match $value {
            Named::Default => None,
            Named::Name(name) => Some(name),
            Named::Unknown => return Ok(None),
        }
    };
}

/// Same, for flags.
macro_rules! known {
    ($value:expr) => {
        match $value {
            Some(text) => text,
            None => return Ok(None),
        }
    };
}

/// The language of a `#llvm.di_source_language_name<language = DW_LANG_x>` (written as text),
/// which a compile unit prints as just `DW_LANG_x`; `None` for any other form.
fn source_language(p: &Payload<'_, '_>, id: AttrId) -> Option<String> {
    let Attribute::Text { text, .. } = p.ctx.attr(id) else { return None };
    let text = p.ctx.str(*text);
    let name = text.strip_prefix("#llvm.di_source_language_name<language = ")?.strip_suffix('>')?;
    name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_').then(|| name.to_owned())
}

pub(super) fn attr(p: &mut Payload<'_, '_>) -> Decoded {
    let code_offset = p.offset();
    let code = p.varint("llvm attribute code")?;
    if let Some(spec) = llvm_attrs::by_code(code) {
        return parameters(p, spec);
    }
    let t = match code {
        0 => {
            // DIBasicTypeAttr
            let tag = named!(p.dwarf("DWARF tag", dwarf::TAGS)?);
            let name = p.string("basic type name")?.to_vec();
            let size = p.varint("size in bits")?;
            let encoding = named!(p.dwarf("DWARF encoding", dwarf::ENCODINGS)?);
            let mut s = Struct::new("di_basic_type");
            if let Some(tag) = tag {
                s.text("tag", tag);
            }
            s.key("name").string(&name);
            s.uint("sizeInBits", size);
            if let Some(encoding) = encoding {
                s.text("encoding", encoding);
            }
            s.finish()
        }
        4 => {
            // DIExpressionElemAttr: printed as the opcode with its arguments in parentheses.
            let opcode = p.varint("DWARF operation")?;
            let Some(name) = dwarf::name(dwarf::OPERATIONS, opcode) else { return Ok(None) };
            let args = p.optional_int_list("DWARF operation arguments")?;
            let mut body = format!("di_expression_elem{name}");
            if !args.is_empty() {
                body.push('(');
                for (i, &arg) in args.iter().enumerate() {
                    if i > 0 {
                        body.push_str(", ");
                    }
                    // `DW_OP_LLVM_convert(size, encoding)` names its encoding.
                    match dwarf::name(dwarf::ENCODINGS, arg) {
                        Some(encoding) if i > 0 && name == "DW_OP_LLVM_convert" => body.push_str(encoding),
                        _ => body.push_str(&arg.to_string()),
                    }
                }
                body.push(')');
            }
            let mut t = Template::default();
            t.text(&dialect_symbol('#', "llvm", &body));
            t
        }
        5 => {
            // DIExpressionAttr
            let offset = p.offset();
            let operations = p.optional_attr_list("DWARF expression operations")?;
            let mut t = Template::default();
            t.text("#llvm.di_expression<");
            if !operations.is_empty() {
                t.text("[");
                for (i, &op) in operations.iter().enumerate() {
                    if i > 0 {
                        t.text(", ");
                    }
                    t.stripped_attr(op, "di_expression_elem", offset);
                }
                t.text("]");
            }
            t.text(">");
            t
        }
        6 => {
            // DIFileAttr
            let name = p.string("file name")?.to_vec();
            let directory = p.string("file directory")?.to_vec();
            let mut t = Template::default();
            t.text("#llvm.di_file<");
            t.string(&name);
            t.text(" in ");
            t.string(&directory);
            t.text(">");
            t
        }
        _ => return Err(p.invalid(code_offset, format!("unknown llvm attribute code {code}"))),
    };
    Ok(Some(t))
}

/// An attribute of [`llvm_attrs::STRUCTS`]: its parameters read in order, each printed as its
/// `struct(params)` format prints it.
fn parameters(p: &mut Payload<'_, '_>, &(mnemonic, _, params): &Spec) -> Decoded {
    let mut s = Struct::new(mnemonic);
    for &(name, param) in params {
        match param {
            Param::Distinct => {
                let value = p.optional_distinct(name)?;
                s.distinct(name, value);
            }
            Param::Attr => {
                let value = p.optional_attr(name)?;
                s.attr(name, value);
            }
            Param::Required => {
                let value = p.attr()?;
                s.key(name).attr(value);
            }
            Param::Stripped(class) => {
                let value = p.optional_attr_at(name)?;
                s.stripped(name, value, class);
            }
            Param::RequiredStripped(class) => {
                let value = p.attr_at()?;
                s.stripped(name, Some(value), class);
            }
            Param::Bool => {
                let value = p.bool(name)?;
                s.bool(name, value);
            }
            Param::BoolAlways => {
                let value = p.bool(name)?;
                s.text(name, if value { "true" } else { "false" });
            }
            Param::Uint => {
                let value = p.varint(name)?;
                s.uint(name, value);
            }
            Param::UintAlways => {
                let value = p.varint(name)?;
                s.text(name, &(value as u32).to_string());
            }
            Param::OptionalUint => {
                if let Some(value) = p.optional_int(name)? {
                    s.text(name, &(value as u32).to_string());
                }
            }
            Param::Dwarf(names) => {
                if let Some(value) = named!(p.dwarf(name, names)?) {
                    s.text(name, value);
                }
            }
            Param::Language => {
                if let Some(id) = p.optional_attr(name)? {
                    s.text(name, &known!(source_language(p, id)));
                }
            }
            Param::Emission | Param::NameTable => {
                let value = p.varint(name)?;
                let print =
                    if matches!(param, Param::Emission) { flags::emission_kind } else { flags::name_table_kind };
                if let Some(value) = known!(print(value)) {
                    s.text(name, value);
                }
            }
            Param::DiFlags | Param::SubprogramFlags => {
                let value = p.varint(name)?;
                let print = if matches!(param, Param::DiFlags) { flags::di_flags } else { flags::subprogram_flags };
                if let Some(value) = known!(print(value)) {
                    s.text(name, &value);
                }
            }
            Param::List | Param::Bracketed => {
                let items = p.optional_attr_list(name)?;
                s.list(name, &items, matches!(param, Param::Bracketed), None);
            }
            Param::StrippedList(class) => {
                let offset = p.offset();
                let items = p.optional_attr_list(name)?;
                s.list(name, &items, false, Some((class, offset)));
            }
        }
    }
    Ok(Some(s.finish()))
}
