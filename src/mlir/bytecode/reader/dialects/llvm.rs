//! The LLVM dialect's attribute encodings (`LLVMDialectBytecode.td` in MLIR, as built into IREE
//! 3.13): the debug-info attributes and `#llvm.loop_annotation`, each printed the way its
//! `struct(params)` assembly format does (optional parameters left out when null or default,
//! parameters of a concrete attribute class printed without their `#llvm.mnemonic` prefix, DWARF
//! constants and flags by name). Every other LLVM attribute, and every LLVM type, is written as
//! text and needs no decoding.

use super::{dialect_symbol, Decoded, Payload, Template};
use crate::mlir::bytecode::reader::error::Result;
use crate::mlir::dialects::{dwarf, llvm_flags as flags};
use crate::mlir::ir::{AttrId, Attribute};

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

    /// An array parameter printed as a bare comma-separated list (left out when empty).
    fn list(&mut self, name: &str, items: &[AttrId]) {
        if items.is_empty() {
            return;
        }
        let t = self.key(name);
        for (i, &item) in items.iter().enumerate() {
            if i > 0 {
                t.text(", ");
            }
            t.attr(item);
        }
    }

    /// An array parameter printed in brackets (left out when empty).
    fn bracketed_list(&mut self, name: &str, items: &[AttrId]) {
        if items.is_empty() {
            return;
        }
        self.key(name).text("[");
        for (i, &item) in items.iter().enumerate() {
            if i > 0 {
                self.t.text(", ");
            }
            self.t.attr(item);
        }
        self.t.text("]");
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
        1 => {
            // DICompileUnitAttr
            let rec_id = p.optional_distinct("recursive id")?;
            let is_rec_self = p.bool("isRecSelf")?;
            let id = p.optional_distinct("compile unit id")?;
            let language = p.optional_attr("source language")?;
            let language = match language {
                Some(id) => Some(known!(source_language(p, id))),
                None => None,
            };
            let file = p.optional_attr_at("file")?;
            let producer = p.optional_attr("producer")?;
            let is_optimized = p.bool("isOptimized")?;
            let emission = known!(flags::emission_kind(p.varint("emission kind")?));
            let for_profiling = p.bool("isDebugInfoForProfiling")?;
            let name_table = known!(flags::name_table_kind(p.varint("name table kind")?));
            let split = p.optional_attr("split debug filename")?;
            let imported = p.optional_attr_list("imported entities")?;
            let mut s = Struct::new("di_compile_unit");
            s.distinct("recId", rec_id);
            s.bool("isRecSelf", is_rec_self);
            s.distinct("id", id);
            if let Some(language) = language {
                s.text("sourceLanguage", &language);
            }
            s.stripped("file", file, "di_file");
            s.attr("producer", producer);
            s.bool("isOptimized", is_optimized);
            if let Some(emission) = emission {
                s.text("emissionKind", emission);
            }
            s.bool("isDebugInfoForProfiling", for_profiling);
            if let Some(name_table) = name_table {
                s.text("nameTableKind", name_table);
            }
            s.attr("splitDebugFilename", split);
            s.list("importedEntities", &imported);
            s.finish()
        }
        2 => {
            // DICompositeTypeAttr
            let rec_id = p.optional_distinct("recursive id")?;
            let is_rec_self = p.bool("isRecSelf")?;
            let tag = named!(p.dwarf("DWARF tag", dwarf::TAGS)?);
            let name = p.optional_attr("name")?;
            let file = p.optional_attr_at("file")?;
            let line = p.varint("line")?;
            let scope = p.optional_attr("scope")?;
            let base_type = p.optional_attr("base type")?;
            let flags = known!(flags::di_flags(p.varint("DI flags")?));
            let size = p.varint("size in bits")?;
            let align = p.varint("align in bits")?;
            let data_location = p.optional_attr_at("data location")?;
            let rank = p.optional_attr_at("rank")?;
            let allocated = p.optional_attr_at("allocated")?;
            let associated = p.optional_attr_at("associated")?;
            let identifier = p.optional_attr("identifier")?;
            let discriminator = p.optional_attr_at("discriminator")?;
            let elements = p.optional_attr_list("elements")?;
            let mut s = Struct::new("di_composite_type");
            s.distinct("recId", rec_id);
            s.bool("isRecSelf", is_rec_self);
            if let Some(tag) = tag {
                s.text("tag", tag);
            }
            s.attr("name", name);
            s.stripped("file", file, "di_file");
            s.uint("line", line);
            s.attr("scope", scope);
            s.attr("baseType", base_type);
            if let Some(flags) = flags {
                s.text("flags", &flags);
            }
            s.uint("sizeInBits", size);
            s.uint("alignInBits", align);
            s.stripped("dataLocation", data_location, "di_expression");
            s.stripped("rank", rank, "di_expression");
            s.stripped("allocated", allocated, "di_expression");
            s.stripped("associated", associated, "di_expression");
            s.attr("identifier", identifier);
            s.stripped("discriminator", discriminator, "di_derived_type");
            s.list("elements", &elements);
            s.finish()
        }
        3 => {
            // DIDerivedTypeAttr
            let tag = named!(p.dwarf("DWARF tag", dwarf::TAGS)?);
            let name = p.optional_attr("name")?;
            let file = p.optional_attr_at("file")?;
            let line = p.varint("line")?;
            let scope = p.optional_attr("scope")?;
            let base_type = p.optional_attr("base type")?;
            let size = p.varint("size in bits")?;
            let align = p.varint("align in bits")?;
            let offset = p.varint("offset in bits")?;
            let address_space = p.optional_int("DWARF address space")?;
            let flags = known!(flags::di_flags(p.varint("DI flags")?));
            let extra = p.optional_attr("extra data")?;
            let mut s = Struct::new("di_derived_type");
            if let Some(tag) = tag {
                s.text("tag", tag);
            }
            s.attr("name", name);
            s.stripped("file", file, "di_file");
            s.uint("line", line);
            s.attr("scope", scope);
            s.attr("baseType", base_type);
            s.uint("sizeInBits", size);
            s.uint("alignInBits", align);
            s.uint("offsetInBits", offset);
            if let Some(space) = address_space {
                s.text("dwarfAddressSpace", &(space as u32).to_string());
            }
            if let Some(flags) = flags {
                s.text("flags", &flags);
            }
            s.attr("extraData", extra);
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
        7 => {
            // DIGlobalVariableAttr
            let scope = p.optional_attr("scope")?;
            let name = p.optional_attr("name")?;
            let linkage_name = p.optional_attr("linkage name")?;
            let file = p.attr_at()?;
            let line = p.varint("line")?;
            let ty = p.attr()?;
            let is_local = p.bool("isLocalToUnit")?;
            let is_defined = p.bool("isDefined")?;
            let align = p.varint("align in bits")?;
            let mut s = Struct::new("di_global_variable");
            s.attr("scope", scope);
            s.attr("name", name);
            s.attr("linkageName", linkage_name);
            s.stripped("file", Some(file), "di_file");
            s.text("line", &(line as u32).to_string());
            s.key("type").attr(ty);
            s.bool("isLocalToUnit", is_local);
            s.bool("isDefined", is_defined);
            s.uint("alignInBits", align);
            s.finish()
        }
        8 => {
            // DIGlobalVariableExpressionAttr
            let var = p.attr_at()?;
            let expr = p.optional_attr_at("expression")?;
            let mut s = Struct::new("di_global_variable_expression");
            s.stripped("var", Some(var), "di_global_variable");
            s.stripped("expr", expr, "di_expression");
            s.finish()
        }
        9 => {
            // DIImportedEntityAttr
            let tag = named!(p.dwarf("DWARF tag", dwarf::TAGS)?);
            let scope = p.attr()?;
            let entity = p.attr()?;
            let file = p.optional_attr_at("file")?;
            let line = p.varint("line")?;
            let name = p.optional_attr("name")?;
            let elements = p.optional_attr_list("elements")?;
            let mut s = Struct::new("di_imported_entity");
            if let Some(tag) = tag {
                s.text("tag", tag);
            }
            s.key("scope").attr(scope);
            s.key("entity").attr(entity);
            s.stripped("file", file, "di_file");
            s.uint("line", line);
            s.attr("name", name);
            s.list("elements", &elements);
            s.finish()
        }
        10 => {
            // DILabelAttr
            let scope = p.attr()?;
            let name = p.optional_attr("name")?;
            let file = p.optional_attr_at("file")?;
            let line = p.varint("line")?;
            let mut s = Struct::new("di_label");
            s.key("scope").attr(scope);
            s.attr("name", name);
            s.stripped("file", file, "di_file");
            s.uint("line", line);
            s.finish()
        }
        11 => {
            // DILexicalBlockAttr
            let scope = p.attr()?;
            let file = p.optional_attr_at("file")?;
            let line = p.varint("line")?;
            let column = p.varint("column")?;
            let mut s = Struct::new("di_lexical_block");
            s.key("scope").attr(scope);
            s.stripped("file", file, "di_file");
            s.uint("line", line);
            s.uint("column", column);
            s.finish()
        }
        12 => {
            // DILexicalBlockFileAttr
            let scope = p.attr()?;
            let file = p.optional_attr_at("file")?;
            let discriminator = p.varint("discriminator")?;
            let mut s = Struct::new("di_lexical_block_file");
            s.key("scope").attr(scope);
            s.stripped("file", file, "di_file");
            s.text("discriminator", &(discriminator as u32).to_string());
            s.finish()
        }
        13 => {
            // DILocalVariableAttr
            let scope = p.attr()?;
            let name = p.optional_attr("name")?;
            let file = p.optional_attr_at("file")?;
            let line = p.varint("line")?;
            let arg = p.varint("argument number")?;
            let align = p.varint("align in bits")?;
            let ty = p.optional_attr("type")?;
            let flags = known!(flags::di_flags(p.varint("DI flags")?));
            let mut s = Struct::new("di_local_variable");
            s.key("scope").attr(scope);
            s.attr("name", name);
            s.stripped("file", file, "di_file");
            s.uint("line", line);
            s.uint("arg", arg);
            s.uint("alignInBits", align);
            s.attr("type", ty);
            if let Some(flags) = flags {
                s.text("flags", &flags);
            }
            s.finish()
        }
        14 => {
            // DINamespaceAttr
            let name = p.optional_attr("name")?;
            let scope = p.optional_attr("scope")?;
            let export_symbols = p.bool("exportSymbols")?;
            let mut s = Struct::new("di_namespace");
            s.attr("name", name);
            s.attr("scope", scope);
            s.text("exportSymbols", if export_symbols { "true" } else { "false" });
            s.finish()
        }
        15 => {
            // DISubprogramAttr
            let rec_id = p.optional_distinct("recursive id")?;
            let is_rec_self = p.bool("isRecSelf")?;
            let id = p.optional_distinct("subprogram id")?;
            let compile_unit = p.optional_attr_at("compile unit")?;
            let scope = p.optional_attr("scope")?;
            let name = p.optional_attr("name")?;
            let linkage_name = p.optional_attr("linkage name")?;
            let file = p.optional_attr_at("file")?;
            let line = p.varint("line")?;
            let scope_line = p.varint("scope line")?;
            let sp_flags = known!(flags::subprogram_flags(p.varint("subprogram flags")?));
            let ty = p.optional_attr_at("subroutine type")?;
            let retained = p.optional_attr_list("retained nodes")?;
            let annotations = p.optional_attr_list("annotations")?;
            let mut s = Struct::new("di_subprogram");
            s.distinct("recId", rec_id);
            s.bool("isRecSelf", is_rec_self);
            s.distinct("id", id);
            s.stripped("compileUnit", compile_unit, "di_compile_unit");
            s.attr("scope", scope);
            s.attr("name", name);
            s.attr("linkageName", linkage_name);
            s.stripped("file", file, "di_file");
            s.uint("line", line);
            s.uint("scopeLine", scope_line);
            if let Some(sp_flags) = sp_flags {
                s.text("subprogramFlags", &sp_flags);
            }
            s.stripped("type", ty, "di_subroutine_type");
            s.bracketed_list("retainedNodes", &retained);
            s.bracketed_list("annotations", &annotations);
            s.finish()
        }
        16 => {
            // DISubrangeAttr
            let mut s = Struct::new("di_subrange");
            for name in ["count", "lowerBound", "upperBound", "stride"] {
                let value = p.optional_attr("subrange bound")?;
                s.attr(name, value);
            }
            s.finish()
        }
        17 => {
            // DISubroutineTypeAttr
            let convention = named!(p.dwarf("DWARF calling convention", dwarf::CALLING_CONVENTIONS)?);
            let types = p.optional_attr_list("subroutine types")?;
            let mut s = Struct::new("di_subroutine_type");
            if let Some(convention) = convention {
                s.text("callingConvention", convention);
            }
            s.list("types", &types);
            s.finish()
        }
        18 => {
            // LoopAnnotationAttr
            let mut s = Struct::new("loop_annotation");
            let disable_nonforced = p.optional_attr("disableNonforced")?;
            s.attr("disableNonforced", disable_nonforced);
            for (name, mnemonic) in [
                ("vectorize", "loop_vectorize"),
                ("interleave", "loop_interleave"),
                ("unroll", "loop_unroll"),
                ("unrollAndJam", "loop_unroll_and_jam"),
                ("licm", "loop_licm"),
                ("distribute", "loop_distribute"),
                ("pipeline", "loop_pipeline"),
                ("peeled", "loop_peeled"),
                ("unswitch", "loop_unswitch"),
            ] {
                let value = p.optional_attr_at("loop annotation")?;
                s.stripped(name, value, mnemonic);
            }
            for name in ["mustProgress", "isVectorized", "startLoc", "endLoc"] {
                let value = p.optional_attr("loop annotation")?;
                s.attr(name, value);
            }
            let offset = p.offset();
            let accesses = p.optional_attr_list("parallel accesses")?;
            if !accesses.is_empty() {
                let t = s.key("parallelAccesses");
                for (i, &access) in accesses.iter().enumerate() {
                    if i > 0 {
                        t.text(", ");
                    }
                    t.stripped_attr(access, "access_group", offset);
                }
            }
            s.finish()
        }
        _ => return Err(p.invalid(code_offset, format!("unknown llvm attribute code {code}"))),
    };
    Ok(Some(t))
}
