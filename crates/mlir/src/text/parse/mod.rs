//! The generic-form parser: the inverse of [`crate::text::print`], and a reader of what
//! upstream MLIR prints with `--mlir-print-op-generic` (with or without `--mlir-print-debuginfo`).
//!
//! Operations are in generic form (`"dialect.op"(%a) ...`) or, for the ops of
//! [`crate::text::syntax`], in their custom form (see `custom`); custom syntax of other ops
//! is refused with a hint. Builtin attributes and types are parsed into their structured IR kinds;
//! other dialects' attributes and types are kept as their exact balanced text, with `#alias` /
//! `!alias` references inside them replaced by the aliased text. Location aliases may be used
//! before they are defined (upstream prints them at the end of the file).
//!
//! Value names are scoped per region: a use resolves to a definition of the same name in its own
//! region (anywhere in it, which covers forward references and regions of ops isolated from
//! above), else to the enclosing regions'. The module is laid out exactly as the bytecode reader
//! lays out the same program (values, blocks and regions numbered region by region), so printing
//! a parsed module and a read one gives the same text.
//!
//! Every error carries a 1-based line and column; nesting is limited to [`MAX_NESTING`] levels
//! and no input makes the parser panic.

mod attr;
mod custom;
mod types;

use foldhash::{HashMap, HashMapExt};
use std::borrow::Cow;

use crate::ir::{
    AttrId, Attribute, Block, BlockId, MlirContext, Module, OpId, OpNameId, Operation, Properties, Region, RegionId,
    ResourceEntry, ResourceGroup, ResourceValue, Span, TypeId, Value, ValueDef, ValueId,
};
use crate::text::print::{print_entity, Entity, ResolvedCustom};

/// How deep operations, regions, attributes, types and locations may nest before the text is
/// refused (an op and each of its regions count one level each). The parser recurses; this
/// bound keeps it inside a 2 MiB thread stack even in unoptimized builds (the bytecode reader,
/// which does not recurse as much, allows `bytecode::reader::MAX_NESTING`).
pub const MAX_NESTING: usize = 256;

/// A syntax or semantic error at a position of the source text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{column}: {message}")]
pub struct ParseError {
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in bytes.
    pub column: u32,
    pub message: String,
}

/// How to parse.
#[derive(Clone, Debug, Default)]
pub struct ParseOptions {
    /// The name of the source file. Upstream gives operations and block arguments written without
    /// `loc(...)` the location `"file":line:col` of their text, and an implicit top-level module
    /// `"file":0:0`; with `None` they get `loc(unknown)`.
    pub file_name: Option<String>,
    /// Keep every op's properties and attribute dictionary exactly as written. By default
    /// (`false`) a registered op — one rtx has an ODS schema for — gets its properties as
    /// upstream builds them: inherent attributes written in the attribute dictionary (older
    /// generic text, or text printed from bytecode v0–v4) move into the properties, and an op
    /// whose schema has properties gets an empty dictionary when the text has none.
    pub verbatim_properties: bool,
}

/// Parses MLIR text in generic form into a module.
pub fn parse_text(source: &str) -> Result<Module, ParseError> {
    parse_text_with(source, &ParseOptions::default())
}

/// [`parse_text`] with options.
pub fn parse_text_with(source: &str, options: &ParseOptions) -> Result<Module, ParseError> {
    let mut parser = Parser::new(source.as_bytes(), options);
    parser.file()?;
    parser.finish()
}

/// Parses one attribute written on its own (no aliases, no trailing text) into `context`, as
/// upstream parses an attribute kept as text in bytecode. Equal attributes are interned once.
pub fn parse_attribute_in(context: &mut MlirContext, text: &str) -> Result<AttrId, ParseError> {
    parse_entity_in(context, text, "attribute", |p| p.attr())
}

/// Parses one type written on its own (no aliases, no trailing text) into `context`, as upstream's
/// `parseType` does (a BEF file names its types this way).
pub fn parse_type_in(context: &mut MlirContext, text: &str) -> Result<TypeId, ParseError> {
    parse_entity_in(context, text, "type", |p| p.ty())
}

fn parse_entity_in<T>(
    context: &mut MlirContext,
    text: &str,
    what: &str,
    parse: impl FnOnce(&mut Parser<'_>) -> R<T>,
) -> Result<T, ParseError> {
    let mut parser = Parser::new(text.as_bytes(), &ParseOptions::default());
    parser.module.context = std::mem::take(context);
    let result = parse(&mut parser).and_then(|entity| match parser.peek() {
        None => Ok(entity),
        Some(_) => {
            let found = parser.describe_next();
            parser.err(format!("expected the end of the {what}, found {found}"))
        }
    });
    *context = std::mem::take(&mut parser.module.context);
    result
}

type R<T> = Result<T, ParseError>;

/// A location that may name an alias defined later in the file.
#[derive(Clone, Copy, Debug)]
enum LocRef {
    Attr(AttrId),
    /// Index into `Parser::deferred_locs`.
    Deferred(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PDef {
    Undefined,
    OpResult { op: u32, index: u32 },
    BlockArgument { block: u32, index: u32 },
}

#[derive(Clone, Debug)]
struct PValue {
    ty: Option<TypeId>,
    def: PDef,
    loc: Option<LocRef>,
    /// Another slot this one was resolved to (a forward reference found its definition).
    alias: Option<u32>,
    /// Where it was first used or defined (for errors).
    pos: usize,
}

#[derive(Clone, Debug)]
struct POp {
    name: OpNameId,
    loc: LocRef,
    attrs: Option<AttrId>,
    properties: Properties,
    /// The op's operand value slots, in [`Parser::op_operands`].
    operands: Span,
    /// The op's result value slots, in [`Parser::op_results`].
    results: Span,
    successors: Vec<u32>,
    regions: Vec<u32>,
}

#[derive(Clone, Debug, Default)]
struct PBlock {
    args: Vec<u32>,
    ops: Vec<u32>,
    defined: bool,
    pos: usize,
}

#[derive(Clone, Debug, Default)]
struct PRegion {
    blocks: Vec<u32>,
}

/// What precedes an op's name: where the op starts, its result groups and where its name is.
struct OpHead<'s> {
    start: usize,
    groups: Vec<(&'s [u8], u32, usize)>,
    name_pos: usize,
}

/// An operand use (`%name#number` at `pos`) with the type it is used at.
#[derive(Clone)]
struct Operand<'s> {
    name: &'s [u8],
    number: u32,
    pos: usize,
    ty: TypeId,
}

/// An entry block argument a custom op's region declares before its text: the value it is
/// named by, and its location when the text gives one.
struct EntryArg<'s> {
    value: Operand<'s>,
    loc: Option<LocRef>,
}

/// The names visible in one region being parsed.
#[derive(Default)]
struct Scope<'s> {
    values: HashMap<(&'s [u8], u32), u32>,
    blocks: HashMap<&'s [u8], u32>,
}

pub(crate) struct Parser<'s> {
    src: &'s [u8],
    pos: usize,
    depth: usize,
    file_name: Option<String>,
    verbatim_properties: bool,
    module: Module,
    attr_aliases: HashMap<Vec<u8>, (AttrId, Cow<'s, [u8]>)>,
    type_aliases: HashMap<Vec<u8>, (TypeId, Cow<'s, [u8]>)>,
    /// `distinct[N]` ids seen, with the attribute each refers to.
    distinct: HashMap<u32, AttrId>,
    op_names: HashMap<Vec<u8>, OpNameId>,
    /// Location aliases used before their definition: (name, position).
    deferred_locs: Vec<(Vec<u8>, usize)>,
    /// Keys named by `dense_resource<...>`, in order of first use.
    resource_uses: Vec<(crate::ir::Sym, usize)>,
    ops: Vec<POp>,
    /// Every op's operand slots, one run per op: two pools instead of two small vectors per op
    /// (allocating and freeing those was a tenth of a large module's parse).
    op_operands: Vec<u32>,
    /// Every op's result slots, one run per op (see [`Parser::op_operands`]).
    op_results: Vec<u32>,
    blocks: Vec<PBlock>,
    regions: Vec<PRegion>,
    values: Vec<PValue>,
    scopes: Vec<Scope<'s>>,
    /// The dialect each enclosing custom op lets its regions leave off op names (`builtin` at
    /// the top level, `func` in a function).
    default_dialects: Vec<&'static str>,
    /// A position already converted to its line, `(position, line)`: locations the parser makes
    /// up for text without `loc(...)` come in source order, so counting lines on from here keeps
    /// a whole module linear (from the start it was quadratic).
    line_mark: (usize, usize),
    /// Dictionaries parsed so far, by their text: ops of one kind repeat the same properties
    /// (`<{overflowFlags = #arith.overflow<none>}>`), and equal text parses to the same attribute.
    dictionaries: HashMap<&'s [u8], AttrId>,
    /// Function types parsed so far, by their text (see [`Parser::dictionaries`]).
    function_types: HashMap<&'s [u8], TypeId>,
    /// The file name of the last `"file":line:col` location, as written, and its string
    /// attribute: consecutive ops mostly come from one file, so the name is interned once per run
    /// of them instead of once per location.
    last_loc_file: Option<(Cow<'s, [u8]>, AttrId)>,
}

/// The `\n` bytes in `bytes`, eight at a time: a byte of `word ^ 0x0a..` is zero exactly where
/// `word` holds a newline, and `(x & 0x7f..) + 0x7f..` sets a byte's top bit unless its low
/// seven bits are zero (no carry crosses bytes).
fn count_newlines(bytes: &[u8]) -> usize {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let mut chunks = bytes.chunks_exact(8);
    let mut count = 0;
    for chunk in &mut chunks {
        let x = u64::from_le_bytes(chunk.try_into().expect("eight bytes")) ^ 0x0a0a_0a0a_0a0a_0a0a;
        count += (!(((x & LOW7) + LOW7) | x | LOW7)).count_ones() as usize;
    }
    count + chunks.remainder().iter().filter(|&&b| b == b'\n').count()
}

/// A line or column number as locations hold it.
fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b == b'.'
}

/// Characters of a suffix identifier (`%name`, `^bb`, `#alias`): letters, digits, `$._-`.
fn is_suffix_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'$' | b'.' | b'_' | b'-')
}

impl<'s> Parser<'s> {
    /// What `parse` makes of the text from here to `end`, looked up by that text first (`cache`
    /// picks the table) and remembered when the parse ended exactly there. `end` is a guess from
    /// brackets; `None` parses without the table.
    fn by_text<T: Copy>(
        &mut self,
        end: Option<usize>,
        cache: fn(&mut Self) -> &mut HashMap<&'s [u8], T>,
        parse: fn(&mut Self) -> R<T>,
    ) -> R<T> {
        let (src, start) = (self.src, self.pos);
        if let Some(end) = end {
            if let Some(&found) = cache(self).get(&src[start..end]) {
                self.pos = end;
                return Ok(found);
            }
        }
        let parsed = parse(self)?;
        let stop = self.pos;
        if end == Some(stop) {
            cache(self).insert(&src[start..stop], parsed);
        }
        Ok(parsed)
    }

    fn new(src: &'s [u8], options: &ParseOptions) -> Self {
        Parser {
            src,
            pos: 0,
            depth: 0,
            file_name: options.file_name.clone(),
            verbatim_properties: options.verbatim_properties,
            module: Module::default(),
            attr_aliases: HashMap::new(),
            type_aliases: HashMap::new(),
            distinct: HashMap::new(),
            op_names: HashMap::new(),
            deferred_locs: Vec::new(),
            resource_uses: Vec::new(),
            ops: Vec::new(),
            op_operands: Vec::new(),
            op_results: Vec::new(),
            blocks: Vec::new(),
            regions: Vec::new(),
            values: Vec::new(),
            scopes: Vec::new(),
            default_dialects: vec!["builtin"],
            line_mark: (0, 1),
            dictionaries: HashMap::new(),
            function_types: HashMap::new(),
            last_loc_file: None,
        }
    }

    // ---- errors and positions ----

    fn error_at(&self, pos: usize, message: impl Into<String>) -> ParseError {
        let (line, column) = self.line_col(pos);
        ParseError { line, column, message: message.into() }
    }

    fn err<T>(&self, message: impl Into<String>) -> R<T> {
        Err(self.error_at(self.pos, message))
    }

    fn err_at<T>(&self, pos: usize, message: impl Into<String>) -> R<T> {
        Err(self.error_at(pos, message))
    }

    /// `(line, column)` of a position, 1-based.
    fn line_col(&self, pos: usize) -> (u32, u32) {
        let (line, column) = self.line_and_column(pos);
        (saturate(line), saturate(column))
    }

    /// [`Self::line_col`], counted on from the line mark when `pos` is past it.
    fn line_and_column(&self, pos: usize) -> (usize, usize) {
        let pos = pos.min(self.src.len());
        let (mark, mark_line) = if self.line_mark.0 <= pos { self.line_mark } else { (0, 1) };
        let line = mark_line + count_newlines(&self.src[mark..pos]);
        let line_start = self.src[..pos].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        (line, pos - line_start + 1)
    }

    /// Enters one level of nesting; pair with [`Self::leave`].
    fn enter(&mut self) -> R<()> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return self.err(format!("nesting deeper than {MAX_NESTING} levels"));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    // ---- lexing ----

    /// Skips whitespace and `//` comments.
    fn ws(&mut self) {
        while let Some(&b) = self.src.get(self.pos) {
            match b {
                b' ' | b'\t' | b'\n' | b'\r' => self.pos += 1,
                b'/' if self.src.get(self.pos + 1) == Some(&b'/') => {
                    while self.pos < self.src.len() && self.src[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
    }

    /// The next significant byte.
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.src.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<u8> {
        self.src.get(self.pos + offset).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn eat_str(&mut self, s: &str) -> bool {
        self.ws();
        if self.src[self.pos..].starts_with(s.as_bytes()) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    fn describe_next(&mut self) -> String {
        match self.peek() {
            None => "end of input".into(),
            Some(_) => {
                let end = (self.pos + 1..self.src.len())
                    .find(|&i| !is_ident_char(self.src[i]) || !is_ident_char(self.src[self.pos]))
                    .unwrap_or(self.src.len())
                    .min(self.pos + 24);
                format!("'{}'", String::from_utf8_lossy(&self.src[self.pos..end]))
            }
        }
    }

    fn expect(&mut self, b: u8, context: &str) -> R<()> {
        if self.eat(b) {
            return Ok(());
        }
        let found = self.describe_next();
        self.err(format!("expected '{}' {context}, found {found}", b as char))
    }

    fn expect_str(&mut self, s: &str, context: &str) -> R<()> {
        if self.eat_str(s) {
            return Ok(());
        }
        let found = self.describe_next();
        self.err(format!("expected '{s}' {context}, found {found}"))
    }

    /// A bare identifier (`[A-Za-z_][A-Za-z0-9_$.]*`), if one is next.
    fn bare_ident(&mut self) -> Option<&'s [u8]> {
        self.ws();
        let start = self.pos;
        if !self.src.get(start).copied().is_some_and(is_ident_start) {
            return None;
        }
        let mut end = start + 1;
        while end < self.src.len() && is_ident_char(self.src[end]) {
            end += 1;
        }
        self.pos = end;
        Some(&self.src[start..end])
    }

    /// Whether the bare identifier `kw` is next (not consumed).
    fn at_keyword(&mut self, kw: &str) -> bool {
        self.ws();
        let end = self.pos + kw.len();
        self.src[self.pos..].starts_with(kw.as_bytes())
            && !self.src.get(end).copied().is_some_and(is_ident_char)
            && !self.src.get(end).is_some_and(|&b| b == b'-' && kw == "x")
    }

    fn eat_keyword(&mut self, kw: &str) -> bool {
        if self.at_keyword(kw) {
            self.pos += kw.len();
            true
        } else {
            false
        }
    }

    /// The identifier after a sigil (`%`, `^`, `#`, `!`): digits only, or a name of suffix
    /// characters.
    fn suffix_ident(&mut self) -> &'s [u8] {
        let start = self.pos;
        if self.src.get(start).is_some_and(|b| b.is_ascii_digit()) {
            while self.pos < self.src.len() && self.src[self.pos].is_ascii_digit() {
                self.pos += 1;
            }
        } else {
            while self.pos < self.src.len() && is_suffix_char(self.src[self.pos]) {
                self.pos += 1;
            }
        }
        &self.src[start..self.pos]
    }

    /// A quoted string with MLIR's escapes (`\"`, `\\`, `\n`, `\t`, `\XX`).
    /// A string literal's contents: borrowed from the source unless escapes make them differ
    /// (locations and symbol names repeat a string per op; copying each cost an allocation).
    fn string_lit(&mut self) -> R<Cow<'s, [u8]>> {
        self.ws();
        let start = self.pos;
        if self.src.get(start) != Some(&b'"') {
            let found = self.describe_next();
            return self.err(format!("expected a string literal, found {found}"));
        }
        self.pos += 1;
        // Literals can be a model's weights in hex: searched for their end, not walked.
        let rest = &self.src[self.pos..];
        let plain =
            memchr::memchr3(b'"', b'\\', b'\n', rest).filter(|&len| memchr::memchr(b'\r', &rest[..len]).is_none());
        if let Some(len) = plain.filter(|&len| self.src[self.pos + len] == b'"') {
            let text = &self.src[self.pos..self.pos + len];
            self.pos += len + 1;
            return Ok(Cow::Borrowed(text));
        }
        let mut out = Vec::new();
        loop {
            let Some(&b) = self.src.get(self.pos) else {
                return self.err_at(start, "unterminated string literal");
            };
            self.pos += 1;
            match b {
                b'"' => return Ok(Cow::Owned(out)),
                b'\n' | b'\r' => return self.err_at(start, "unterminated string literal (a newline in a string)"),
                b'\\' => {
                    let Some(&e) = self.src.get(self.pos) else {
                        return self.err_at(start, "unterminated string literal");
                    };
                    match e {
                        b'"' | b'\\' => {
                            out.push(e);
                            self.pos += 1;
                        }
                        b'n' => {
                            out.push(b'\n');
                            self.pos += 1;
                        }
                        b't' => {
                            out.push(b'\t');
                            self.pos += 1;
                        }
                        _ => {
                            let hex = |b: Option<&u8>| b.and_then(|&b| (b as char).to_digit(16));
                            match (hex(self.src.get(self.pos)), hex(self.src.get(self.pos + 1))) {
                                (Some(hi), Some(lo)) => {
                                    out.push((hi * 16 + lo) as u8);
                                    self.pos += 2;
                                }
                                _ => return self.err_at(self.pos - 1, "unknown escape in string literal"),
                            }
                        }
                    }
                }
                _ => out.push(b),
            }
        }
    }

    /// A decimal or `0x` integer token (no sign), as text.
    fn integer_token(&mut self) -> Option<&'s [u8]> {
        self.ws();
        let start = self.pos;
        if !self.src.get(start).is_some_and(|b| b.is_ascii_digit()) {
            return None;
        }
        if self.src[start] == b'0'
            && self.src.get(start + 1) == Some(&b'x')
            && self.src.get(start + 2).is_some_and(|b| b.is_ascii_hexdigit())
        {
            self.pos = start + 2;
            while self.pos < self.src.len() && self.src[self.pos].is_ascii_hexdigit() {
                self.pos += 1;
            }
        } else {
            while self.pos < self.src.len() && self.src[self.pos].is_ascii_digit() {
                self.pos += 1;
            }
        }
        Some(&self.src[start..self.pos])
    }

    /// A small unsigned decimal integer (counts, dimensions, line numbers).
    fn parse_u64(&mut self, what: &str) -> R<u64> {
        self.ws();
        let start = self.pos;
        match self.integer_token() {
            Some(text) if !text.starts_with(b"0x") => text
                .iter()
                .try_fold(0u64, |value, &digit| value.checked_mul(10)?.checked_add(u64::from(digit - b'0')))
                .ok_or_else(|| self.error_at(start, format!("{what} is too large"))),
            _ => {
                self.pos = start;
                let found = self.describe_next();
                self.err(format!("expected {what}, found {found}"))
            }
        }
    }

    fn parse_u32(&mut self, what: &str) -> R<u32> {
        let start = self.pos;
        let v = self.parse_u64(what)?;
        u32::try_from(v).map_err(|_| self.error_at(start, format!("{what} is too large")))
    }

    // ---- the file ----

    fn file(&mut self) -> R<()> {
        // The top-level block lives in a region of its own until `finish` decides on the module.
        self.regions.push(PRegion::default());
        self.blocks.push(PBlock { defined: true, ..PBlock::default() });
        self.regions[0].blocks.push(0);
        self.scopes.push(Scope::default());
        loop {
            match self.peek() {
                None => break,
                Some(b'#') => self.attr_alias_def()?,
                Some(b'!') => self.type_alias_def()?,
                Some(b'{') if self.src[self.pos..].starts_with(b"{-#") => self.file_metadata()?,
                Some(_) => self.op(0)?,
            }
        }
        self.close_scope(true)
    }

    fn alias_name(&mut self, sigil: u8) -> R<(Vec<u8>, usize)> {
        let start = self.pos;
        self.pos += 1;
        let name = self.suffix_ident();
        if name.is_empty() {
            return self.err_at(start, format!("expected an alias name after '{}'", sigil as char));
        }
        if name.contains(&b'.') {
            return self.err_at(start, "an alias name cannot contain '.' (that names a dialect attribute or type)");
        }
        Ok((name.to_vec(), start))
    }

    fn attr_alias_def(&mut self) -> R<()> {
        let (name, start) = self.alias_name(b'#')?;
        if self.attr_aliases.contains_key(&name) {
            return self
                .err_at(start, format!("redefinition of attribute alias '#{}'", String::from_utf8_lossy(&name)));
        }
        self.expect(b'=', "in attribute alias definition")?;
        self.ws();
        let value_start = self.pos;
        let attr = self.attr()?;
        // A location alias stands for `loc(...)` in attribute position, but the aliases inside
        // its own definition are bare locations (`fused[#loc1, #loc2]`): its text is its print.
        let text = if self.module.context.attr(attr).is_location() {
            match print_entity(&self.module, Entity::Attr(attr), &ResolvedCustom::default()) {
                Ok(text) => Cow::Owned(text.into_bytes()),
                Err(e) => return self.err_at(value_start, format!("cannot print location alias: {e}")),
            }
        } else {
            self.substitute_aliases(&self.src[value_start..self.pos])?
        };
        self.attr_aliases.insert(name, (attr, text));
        Ok(())
    }

    fn type_alias_def(&mut self) -> R<()> {
        let (name, start) = self.alias_name(b'!')?;
        if self.type_aliases.contains_key(&name) {
            return self.err_at(start, format!("redefinition of type alias '!{}'", String::from_utf8_lossy(&name)));
        }
        self.expect(b'=', "in type alias definition")?;
        self.ws();
        let value_start = self.pos;
        let ty = self.ty()?;
        let text = self.substitute_aliases(&self.src[value_start..self.pos])?;
        self.type_aliases.insert(name, (ty, text));
        Ok(())
    }

    // ---- operations ----

    fn op_name(&mut self, full: &[u8]) -> OpNameId {
        if let Some(&id) = self.op_names.get(full) {
            return id;
        }
        let id = self.module.context.intern_op_name(full);
        self.op_names.insert(full.to_vec(), id);
        id
    }

    /// `%name` or `%name#N`: (name, number, position).
    fn value_use(&mut self) -> R<(&'s [u8], u32, usize)> {
        self.ws();
        let start = self.pos;
        if self.src.get(start) != Some(&b'%') {
            let found = self.describe_next();
            return self.err(format!("expected an SSA value, found {found}"));
        }
        self.pos += 1;
        let name = self.suffix_ident();
        if name.is_empty() {
            return self.err_at(start, "expected an SSA value name after '%'");
        }
        let number = if self.src.get(self.pos) == Some(&b'#') {
            self.pos += 1;
            if !self.src.get(self.pos).is_some_and(|b| b.is_ascii_digit()) {
                return self.err("expected a result number after '#'");
            }
            self.parse_u32("result number")?
        } else {
            0
        };
        Ok((name, number, start))
    }

    fn op(&mut self, block: u32) -> R<()> {
        self.enter()?;
        self.ws();
        let head = OpHead { start: self.pos, groups: self.result_groups()?, name_pos: 0 };
        self.ws();
        let head = OpHead { name_pos: self.pos, ..head };
        match self.peek() {
            Some(b'"') => self.generic_op(block, head)?,
            Some(b) if is_ident_start(b) => self.custom_op(block, head)?,
            _ => {
                let found = self.describe_next();
                return self.err(format!("expected an operation name, found {found}"));
            }
        }
        self.leave();
        Ok(())
    }

    /// Result groups before an op: `%a, %b:2 =`, or none.
    fn result_groups(&mut self) -> R<Vec<(&'s [u8], u32, usize)>> {
        let mut groups = Vec::new();
        if self.peek() != Some(b'%') {
            return Ok(groups);
        }
        loop {
            let (name, number, pos) = self.value_use()?;
            if self.src.get(pos + 1 + name.len()) == Some(&b'#') || number != 0 {
                return self.err_at(pos, "a result name cannot have a '#' number");
            }
            let count = if self.eat(b':') {
                let c = self.parse_u32("result count")?;
                if c == 0 {
                    return self.err("expected a result count of at least 1");
                }
                c
            } else {
                1
            };
            groups.push((name, count, pos));
            if !self.eat(b',') {
                break;
            }
        }
        self.expect(b'=', "after the operation's results")?;
        Ok(groups)
    }

    /// Adds an op named `name` to `block`, its contents still to be filled in.
    fn push_op(&mut self, block: u32, name: OpNameId) -> u32 {
        let op = self.ops.len() as u32;
        self.ops.push(POp {
            name,
            loc: LocRef::Attr(AttrId(0)),
            attrs: None,
            properties: Properties::None,
            operands: Span::default(),
            results: Span::default(),
            successors: Vec::new(),
            regions: Vec::new(),
        });
        self.blocks[block as usize].ops.push(op);
        op
    }

    /// The rest of a generic op: `"name"(%a) [^succ] <{props}> ({regions}) {attrs} : type`.
    fn generic_op(&mut self, block: u32, head: OpHead<'s>) -> R<()> {
        let name = self.string_lit()?;
        if name.is_empty() {
            return self.err_at(head.name_pos, "empty operation name");
        }
        let name = self.op_name(&name);
        let op = self.push_op(block, name);
        self.expect(b'(', "to start the operand list")?;
        let mut operands = Vec::new();
        if !self.eat(b')') {
            loop {
                operands.push(self.value_use()?);
                if !self.eat(b',') {
                    break;
                }
            }
            self.expect(b')', "to end the operand list")?;
        }
        if self.eat(b'[') {
            loop {
                let succ = self.block_ref()?;
                if self.peek() == Some(b'(') {
                    return self
                        .err("successor operands in the successor list are not generic syntax; list them as operands");
                }
                self.ops[op as usize].successors.push(succ);
                if !self.eat(b',') {
                    break;
                }
            }
            self.expect(b']', "to end the successor list")?;
        }
        let mut properties = None;
        if self.peek() == Some(b'<') {
            self.pos += 1;
            properties = Some(self.attr()?);
            self.expect(b'>', "to end the properties")?;
        }
        if self.peek() == Some(b'(') {
            self.pos += 1;
            loop {
                let region = self.region()?;
                self.ops[op as usize].regions.push(region);
                if !self.eat(b',') {
                    break;
                }
            }
            self.expect(b')', "to end the region list")?;
        }
        let mut attrs = None;
        if self.peek() == Some(b'{') {
            let pos = self.pos;
            let dict = self.attr()?;
            if !matches!(self.module.context.attr(dict), Attribute::Dictionary(_)) {
                return self.err_at(pos, "expected an attribute dictionary");
            }
            attrs = Some(dict);
        }
        self.expect(b':', "before the operation's type")?;
        self.ws();
        let type_pos = self.pos;
        let fn_type = self.ty()?;
        let crate::ir::Type::Function { inputs, results } = self.module.context.ty(fn_type) else {
            return self.err_at(type_pos, "expected a function type `(operand types) -> result types`");
        };
        if inputs.len() != operands.len() {
            let message = format!("expected {} operand types but had {}", operands.len(), inputs.len());
            return self.err_at(type_pos, message);
        }
        let operands = operands
            .into_iter()
            .zip(inputs.iter())
            .map(|((name, number, pos), &ty)| Operand { name, number, pos, ty })
            .collect();
        let results = results.to_vec();
        let properties = match properties {
            Some(dict) => Properties::Dict(dict),
            None => Properties::None,
        };
        self.finish_op(op, &head, operands, &results, attrs, properties)
    }

    /// Binds an op's operands and results, reads its trailing location and sets its attributes.
    fn finish_op(
        &mut self,
        op: u32,
        head: &OpHead<'s>,
        operands: Vec<Operand<'s>>,
        results: &[TypeId],
        attrs: Option<AttrId>,
        properties: Properties,
    ) -> R<()> {
        let declared: u64 = head.groups.iter().map(|g| u64::from(g.1)).sum();
        if !head.groups.is_empty() && declared != results.len() as u64 {
            return self.err_at(
                head.start,
                format!("operation defines {} results but was provided {declared} to bind", results.len()),
            );
        }
        let operand_slots = Span { start: self.op_operands.len() as u32, len: operands.len() as u32 };
        for Operand { name, number, pos, ty } in operands {
            let slot = self.use_value(name, number, pos, ty)?;
            self.op_operands.push(slot);
        }
        let result_slots = Span { start: self.op_results.len() as u32, len: results.len() as u32 };
        let mut index = 0u32;
        if head.groups.is_empty() {
            for &ty in results {
                let slot = self.new_value(ty, PDef::OpResult { op, index }, head.start);
                self.op_results.push(slot);
                index += 1;
            }
        } else {
            for (name, count, pos) in &head.groups {
                for number in 0..*count {
                    let ty = results[index as usize];
                    let slot = self.define_value(name, number, *pos, ty, PDef::OpResult { op, index })?;
                    self.op_results.push(slot);
                    index += 1;
                }
            }
        }
        let loc = match self.optional_trailing_loc()? {
            Some(loc) => loc,
            None => LocRef::Attr(self.source_loc(head.name_pos)),
        };
        let (attrs, properties) = self.split_inherent(self.ops[op as usize].name, attrs, properties);
        let p = &mut self.ops[op as usize];
        p.operands = operand_slots;
        p.results = result_slots;
        p.attrs = attrs;
        p.properties = properties;
        p.loc = loc;
        Ok(())
    }

    /// Upstream accepts a registered op's inherent attributes in the attribute dictionary when
    /// the text has no `<{...}>` (older generic syntax) and moves them into its properties.
    fn split_inherent(
        &mut self,
        name: OpNameId,
        attrs: Option<AttrId>,
        properties: Properties,
    ) -> (Option<AttrId>, Properties) {
        if self.verbatim_properties || !matches!(properties, Properties::None) {
            let ctx = &self.module.context;
            let attrs = attrs.filter(|&a| !matches!(ctx.attr(a), Attribute::Dictionary(e) if e.is_empty()));
            return (attrs, properties);
        }
        crate::ods::split_inherent(&mut self.module.context, name, attrs)
    }

    /// `loc(...)` after an op or block argument, if present.
    fn optional_trailing_loc(&mut self) -> R<Option<LocRef>> {
        if !self.at_keyword("loc") {
            return Ok(None);
        }
        self.pos += 3;
        self.expect(b'(', "after 'loc'")?;
        let loc = if self.peek() == Some(b'#') && !self.next_is_dialect_symbol() {
            let (name, pos) = self.alias_name(b'#')?;
            match self.attr_aliases.get(&name) {
                Some(&(attr, _)) => {
                    self.check_location(attr, pos)?;
                    LocRef::Attr(attr)
                }
                None => {
                    self.deferred_locs.push((name, pos));
                    LocRef::Deferred(self.deferred_locs.len() - 1)
                }
            }
        } else {
            LocRef::Attr(self.loc_body()?)
        };
        self.expect(b')', "to end the location")?;
        Ok(Some(loc))
    }

    /// Whether the `#...` next names a dialect attribute (`#dialect.name`, `#dialect<...>`).
    fn next_is_dialect_symbol(&self) -> bool {
        let mut end = self.pos + 1;
        while end < self.src.len() && is_suffix_char(self.src[end]) {
            end += 1;
        }
        self.src[self.pos + 1..end].contains(&b'.') || self.src.get(end) == Some(&b'<')
    }

    fn check_location(&self, attr: AttrId, pos: usize) -> R<()> {
        let a = self.module.context.attr(attr);
        if a.is_location() || matches!(a, Attribute::Text { .. }) {
            Ok(())
        } else {
            self.err_at(pos, "expected a location attribute")
        }
    }

    /// The location upstream gives text without `loc(...)`.
    fn source_loc(&mut self, pos: usize) -> AttrId {
        match self.file_name.clone() {
            Some(file) => {
                let (line, column) = self.line_and_column(pos);
                self.line_mark = (pos.min(self.src.len()), line);
                let (line, column) = (saturate(line), saturate(column));
                let value = self.module.context.intern_str(file.as_bytes());
                let filename = self.module.context.intern_attr(Attribute::String { value, ty: None });
                self.module.context.intern_attr(Attribute::FileLineColLoc { filename, line, column })
            }
            None => self.module.context.intern_attr(Attribute::UnknownLoc),
        }
    }

    // ---- regions, blocks and values ----

    fn region(&mut self) -> R<u32> {
        self.region_with(None)
    }

    /// A region; with `entry`, its entry block has no label and takes these arguments, named
    /// in the region's own scope (so they may shadow the names they copy, as custom ops whose
    /// regions are isolated from above spell them).
    fn region_with(&mut self, entry: Option<Vec<EntryArg<'s>>>) -> R<u32> {
        self.enter()?;
        self.expect(b'{', "to start a region")?;
        let region = self.regions.len() as u32;
        self.regions.push(PRegion::default());
        self.scopes.push(Scope::default());
        let has_entry_args = entry.as_ref().is_some_and(|args| !args.is_empty());
        if has_entry_args || self.peek() != Some(b'}') {
            if entry.is_some() && self.peek() == Some(b'^') {
                return self.err("a region whose arguments its op declares cannot start with a block label");
            }
            if self.peek() != Some(b'^') {
                // An entry block without a label.
                let block = self.blocks.len() as u32;
                self.blocks.push(PBlock { defined: true, pos: self.pos, ..PBlock::default() });
                self.regions[region as usize].blocks.push(block);
                for (index, arg) in entry.into_iter().flatten().enumerate() {
                    let Operand { name, number, pos, ty } = arg.value;
                    let def = PDef::BlockArgument { block, index: index as u32 };
                    let slot = self.define_value(name, number, pos, ty, def)?;
                    let loc = match arg.loc {
                        Some(loc) => loc,
                        None => LocRef::Attr(self.source_loc(pos)),
                    };
                    self.values[slot as usize].loc = Some(loc);
                    self.blocks[block as usize].args.push(slot);
                }
                self.block_body(block)?;
            }
            while self.peek() == Some(b'^') {
                let pos = self.pos;
                let block = self.block_ref()?;
                if self.blocks[block as usize].defined {
                    return self.err_at(pos, "redefinition of block");
                }
                self.blocks[block as usize].defined = true;
                self.regions[region as usize].blocks.push(block);
                if self.eat(b'(') {
                    let mut index = 0;
                    loop {
                        let (name, number, vpos) = self.value_use()?;
                        if number != 0 || self.src.get(vpos + 1 + name.len()) == Some(&b'#') {
                            return self.err_at(vpos, "a block argument name cannot have a '#' number");
                        }
                        self.expect(b':', "after a block argument name")?;
                        let ty = self.ty()?;
                        let loc = match self.optional_trailing_loc()? {
                            Some(loc) => loc,
                            None => LocRef::Attr(self.source_loc(vpos)),
                        };
                        let slot = self.define_value(name, 0, vpos, ty, PDef::BlockArgument { block, index })?;
                        self.values[slot as usize].loc = Some(loc);
                        self.blocks[block as usize].args.push(slot);
                        index += 1;
                        if !self.eat(b',') {
                            break;
                        }
                    }
                    self.expect(b')', "to end the block arguments")?;
                }
                self.expect(b':', "after a block label")?;
                self.block_body(block)?;
            }
        }
        self.expect(b'}', "to end a region")?;
        self.close_scope(false)?;
        self.leave();
        Ok(region)
    }

    fn block_body(&mut self, block: u32) -> R<()> {
        loop {
            match self.peek() {
                Some(b'^') | Some(b'}') | None => return Ok(()),
                Some(b')' | b']' | b'>') => {
                    let found = self.describe_next();
                    return self.err(format!("expected '}}' to end a region, found {found}"));
                }
                _ => self.op(block)?,
            }
        }
    }

    /// `^name`: the block of that name in the current region, created on first reference.
    fn block_ref(&mut self) -> R<u32> {
        self.ws();
        let pos = self.pos;
        if self.src.get(pos) != Some(&b'^') {
            let found = self.describe_next();
            return self.err(format!("expected a block name, found {found}"));
        }
        self.pos += 1;
        let name = self.suffix_ident();
        if name.is_empty() {
            return self.err_at(pos, "expected a block name after '^'");
        }
        let scope = self.scopes.last_mut().expect("a region scope");
        if let Some(&block) = scope.blocks.get(name) {
            return Ok(block);
        }
        let block = self.blocks.len() as u32;
        scope.blocks.insert(name, block);
        self.blocks.push(PBlock { pos, ..PBlock::default() });
        Ok(block)
    }

    fn find(&self, mut slot: u32) -> u32 {
        while let Some(next) = self.values[slot as usize].alias {
            slot = next;
        }
        slot
    }

    fn new_value(&mut self, ty: TypeId, def: PDef, pos: usize) -> u32 {
        self.values.push(PValue { ty: Some(ty), def, loc: None, alias: None, pos });
        self.values.len() as u32 - 1
    }

    fn value_display(name: &[u8], number: u32) -> String {
        if number == 0 {
            format!("%{}", String::from_utf8_lossy(name))
        } else {
            format!("%{}#{number}", String::from_utf8_lossy(name))
        }
    }

    fn define_value(&mut self, name: &'s [u8], number: u32, pos: usize, ty: TypeId, def: PDef) -> R<u32> {
        let key = (name, number);
        let existing = self.scopes.last().expect("a scope").values.get(&key).copied();
        match existing {
            Some(slot) => {
                let slot = self.find(slot);
                let v = &self.values[slot as usize];
                if v.def != PDef::Undefined {
                    return self
                        .err_at(pos, format!("redefinition of SSA value '{}'", Self::value_display(key.0, key.1)));
                }
                if v.ty.is_some_and(|t| t != ty) {
                    return self.err_at(
                        v.pos,
                        format!(
                            "use of value '{}' expects a different type than its definition",
                            Self::value_display(key.0, key.1)
                        ),
                    );
                }
                let v = &mut self.values[slot as usize];
                v.ty = Some(ty);
                v.def = def;
                Ok(slot)
            }
            None => {
                let slot = self.new_value(ty, def, pos);
                self.scopes.last_mut().expect("a scope").values.insert(key, slot);
                Ok(slot)
            }
        }
    }

    fn use_value(&mut self, name: &'s [u8], number: u32, pos: usize, ty: TypeId) -> R<u32> {
        let key = (name, number);
        if let Some(&slot) = self.scopes.last().expect("a scope").values.get(&key) {
            let slot = self.find(slot);
            if self.values[slot as usize].ty != Some(ty) {
                return self.err_at(
                    pos,
                    format!(
                        "use of value '{}' expects a different type than prior uses or its definition",
                        Self::value_display(key.0, key.1)
                    ),
                );
            }
            return Ok(slot);
        }
        self.values.push(PValue { ty: Some(ty), def: PDef::Undefined, loc: None, alias: None, pos });
        let slot = self.values.len() as u32 - 1;
        self.scopes.last_mut().expect("a scope").values.insert(key, slot);
        Ok(slot)
    }

    /// Ends a region's scope: undefined blocks are errors; values used but not defined in it are
    /// looked up in the enclosing region (or are errors at the top level).
    fn close_scope(&mut self, top: bool) -> R<()> {
        let scope = self.scopes.pop().expect("a scope");
        if let Some(block) = scope
            .blocks
            .values()
            .filter(|&&b| !self.blocks[b as usize].defined)
            .min_by_key(|&&b| self.blocks[b as usize].pos)
        {
            return self.err_at(self.blocks[*block as usize].pos, "reference to an undefined block");
        }
        let mut pending: Vec<((&'s [u8], u32), u32)> = scope
            .values
            .into_iter()
            .filter(|&(_, slot)| self.values[self.find(slot) as usize].def == PDef::Undefined)
            .collect();
        pending.sort_by_key(|&(_, slot)| self.values[slot as usize].pos);
        if top {
            if let Some(((name, number), slot)) = pending.first() {
                return self.err_at(
                    self.values[*slot as usize].pos,
                    format!("use of undeclared SSA value name '{}'", Self::value_display(name, *number)),
                );
            }
            return Ok(());
        }
        for (key, slot) in pending {
            let slot = self.find(slot);
            let parent = self.scopes.last_mut().expect("an enclosing scope");
            match parent.values.get(&key).copied() {
                Some(outer) => {
                    let outer = self.find(outer);
                    if outer != slot {
                        if self.values[outer as usize].ty != self.values[slot as usize].ty {
                            return self.err_at(
                                self.values[slot as usize].pos,
                                format!(
                                    "use of value '{}' expects a different type than its definition",
                                    Self::value_display(key.0, key.1)
                                ),
                            );
                        }
                        self.values[slot as usize].alias = Some(outer);
                    }
                }
                None => {
                    parent.values.insert(key, slot);
                }
            }
        }
        Ok(())
    }

    // ---- resources ----

    /// `{-# dialect_resources: {...}, external_resources: {...} #-}`.
    fn file_metadata(&mut self) -> R<()> {
        self.pos += 3;
        if !self.eat_str("#-}") {
            loop {
                let pos = self.pos;
                let section = self.bare_ident().map(<[u8]>::to_vec);
                self.expect(b':', "after a file metadata section name")?;
                match section.as_deref() {
                    Some(b"dialect_resources") => self.resource_section(true)?,
                    Some(b"external_resources") => self.resource_section(false)?,
                    _ => return self.err_at(pos, "expected 'dialect_resources' or 'external_resources'"),
                }
                if !self.eat(b',') {
                    break;
                }
            }
            self.expect_str("#-}", "to end the file metadata")?;
        }
        Ok(())
    }

    fn key(&mut self, what: &str) -> R<Cow<'s, [u8]>> {
        match self.peek() {
            Some(b'"') => self.string_lit(),
            _ => match self.bare_ident() {
                Some(id) => Ok(Cow::Borrowed(id)),
                None => {
                    let found = self.describe_next();
                    self.err(format!("expected {what}, found {found}"))
                }
            },
        }
    }

    fn resource_section(&mut self, dialect: bool) -> R<()> {
        self.expect(b'{', "to start a resource section")?;
        if self.eat(b'}') {
            return Ok(());
        }
        loop {
            let owner = self.key("a resource group name")?;
            self.expect(b':', "after a resource group name")?;
            self.expect(b'{', "to start a resource group")?;
            let mut entries = Vec::new();
            if !self.eat(b'}') {
                loop {
                    let key = self.key("a resource key")?;
                    let key = self.module.context.intern_str(&key);
                    self.expect(b':', "after a resource key")?;
                    let pos = self.pos;
                    let value = if self.eat_keyword("true") {
                        ResourceValue::Bool(true)
                    } else if self.eat_keyword("false") {
                        ResourceValue::Bool(false)
                    } else {
                        let s = self.string_lit()?;
                        if let Some(hex) = s.strip_prefix(b"0x") {
                            let bytes =
                                decode_hex(hex).ok_or_else(|| self.error_at(pos, "bad hex in resource blob"))?;
                            if bytes.len() < 4 {
                                return self.err_at(pos, "a resource blob needs its 4-byte alignment prefix");
                            }
                            let alignment = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
                            if !alignment.is_power_of_two() {
                                return self.err_at(pos, "resource blob alignment is not a power of two");
                            }
                            ResourceValue::Blob {
                                alignment: u64::from(alignment),
                                data: crate::ir::Blob::from_vec(bytes[4..].to_vec()),
                            }
                        } else {
                            ResourceValue::String(self.module.context.intern_str(&s))
                        }
                    };
                    entries.push(ResourceEntry { key, value });
                    if !self.eat(b',') {
                        break;
                    }
                }
                self.expect(b'}', "to end a resource group")?;
            }
            let resources = &mut self.module.resources;
            if dialect {
                let owner = self.module.context.intern_dialect(&String::from_utf8_lossy(&owner));
                match resources.dialect.iter_mut().find(|g| g.owner == owner) {
                    Some(group) => group.entries.extend(entries),
                    None => resources.dialect.push(ResourceGroup { owner, entries }),
                }
            } else {
                let owner = self.module.context.intern_str(&owner);
                resources.external.push(ResourceGroup { owner, entries });
            }
            if !self.eat(b',') {
                break;
            }
        }
        self.expect(b'}', "to end a resource section")
    }

    // ---- building the module ----

    fn resolve_loc(&self, loc: LocRef) -> R<AttrId> {
        match loc {
            LocRef::Attr(attr) => Ok(attr),
            LocRef::Deferred(index) => {
                let (name, pos) = &self.deferred_locs[index];
                match self.attr_aliases.get(name) {
                    Some(&(attr, _)) => {
                        self.check_location(attr, *pos)?;
                        Ok(attr)
                    }
                    None => self.err_at(*pos, format!("undefined location alias '#{}'", String::from_utf8_lossy(name))),
                }
            }
        }
    }

    fn finish(mut self) -> R<Module> {
        // Resources named by dense_resource but given no data still need an entry (a handle).
        if !self.resource_uses.is_empty() {
            let builtin = self.module.context.intern_dialect("builtin");
            let uses = std::mem::take(&mut self.resource_uses);
            for (key, _) in uses {
                let groups = &mut self.module.resources.dialect;
                let group = match groups.iter().position(|g| g.owner == builtin) {
                    Some(i) => &mut groups[i],
                    None => {
                        groups.push(ResourceGroup { owner: builtin, entries: Vec::new() });
                        groups.last_mut().expect("pushed")
                    }
                };
                if !group.entries.iter().any(|e| e.key == key) {
                    group.entries.push(ResourceEntry { key, value: ResourceValue::Elided });
                }
            }
        }
        // The top level: one builtin.module as is, else everything wrapped in an implicit one.
        let top_ops = self.blocks[0].ops.clone();
        let single_module = top_ops.len() == 1 && {
            let op = &self.ops[top_ops[0] as usize];
            op.results.len == 0
                && self.module.context.str_bytes(self.module.context.op_name(op.name).full) == b"builtin.module"
        };
        let top_level: Vec<u32> = if single_module {
            top_ops
        } else {
            let name = self.op_name(b"builtin.module");
            let loc = match self.file_name.clone() {
                Some(file) => {
                    let value = self.module.context.intern_str(file.as_bytes());
                    let filename = self.module.context.intern_attr(Attribute::String { value, ty: None });
                    self.module.context.intern_attr(Attribute::FileLineColLoc { filename, line: 0, column: 0 })
                }
                None => self.module.context.intern_attr(Attribute::UnknownLoc),
            };
            let op = self.ops.len() as u32;
            let (_, properties) = self.split_inherent(name, None, Properties::None);
            self.ops.push(POp {
                name,
                loc: LocRef::Attr(loc),
                attrs: None,
                properties,
                operands: Span::default(),
                results: Span::default(),
                successors: Vec::new(),
                regions: vec![0],
            });
            vec![op]
        };
        self.layout(&top_level)
    }

    /// Numbers everything as the bytecode reader would (ops in pre-order; an op's regions
    /// together; a region's blocks, then its block arguments and op results, reserved when the
    /// region is entered) and builds the module.
    fn layout(self, top_level: &[u32]) -> R<Module> {
        enum Work {
            Op(u32),
            Region(u32),
        }
        const NONE: u32 = u32::MAX;
        let mut op_map = vec![NONE; self.ops.len()];
        let mut block_map = vec![NONE; self.blocks.len()];
        let mut region_map = vec![NONE; self.regions.len()];
        let mut value_map = vec![NONE; self.values.len()];
        let mut op_order = Vec::with_capacity(self.ops.len());
        let mut region_order = Vec::with_capacity(self.regions.len());
        let mut block_order = Vec::with_capacity(self.blocks.len());
        let mut next_value = 0u32;
        let mut stack: Vec<Work> = top_level.iter().rev().map(|&op| Work::Op(op)).collect();
        while let Some(work) = stack.pop() {
            match work {
                Work::Op(op) => {
                    op_map[op as usize] = op_order.len() as u32;
                    op_order.push(op);
                    for &r in &self.ops[op as usize].regions {
                        region_map[r as usize] = region_order.len() as u32;
                        region_order.push(r);
                    }
                    stack.extend(self.ops[op as usize].regions.iter().rev().map(|&r| Work::Region(r)));
                }
                Work::Region(r) => {
                    let blocks = &self.regions[r as usize].blocks;
                    for &b in blocks {
                        block_map[b as usize] = block_order.len() as u32;
                        block_order.push(b);
                    }
                    for &b in blocks {
                        for &a in &self.blocks[b as usize].args {
                            value_map[a as usize] = next_value;
                            next_value += 1;
                        }
                        for &o in &self.blocks[b as usize].ops {
                            for &v in &self.op_results[self.ops[o as usize].results.range()] {
                                value_map[v as usize] = next_value;
                                next_value += 1;
                            }
                        }
                    }
                    for &b in blocks.iter().rev() {
                        stack.extend(self.blocks[b as usize].ops.iter().rev().map(|&o| Work::Op(o)));
                    }
                }
            }
        }
        // Parents: which block holds each op, which op each region.
        let mut op_parent = vec![None; self.ops.len()];
        for (b, block) in self.blocks.iter().enumerate() {
            if block_map[b] != NONE {
                for &o in &block.ops {
                    op_parent[o as usize] = Some(BlockId(block_map[b]));
                }
            }
        }
        let mut region_parent = vec![None; self.regions.len()];
        for &op in &op_order {
            for &r in &self.ops[op as usize].regions {
                region_parent[r as usize] = Some(OpId(op_map[op as usize]));
            }
        }
        let mut module_values = vec![Value { ty: TypeId(0), def: ValueDef::Undefined, loc: None }; next_value as usize];
        for (slot, value) in self.values.iter().enumerate() {
            let id = value_map[slot];
            if id == NONE {
                continue;
            }
            let def = match value.def {
                PDef::OpResult { op, index } => ValueDef::OpResult { op: OpId(op_map[op as usize]), index },
                PDef::BlockArgument { block, index } => {
                    ValueDef::BlockArgument { block: BlockId(block_map[block as usize]), index }
                }
                PDef::Undefined => ValueDef::Undefined,
            };
            let loc = match value.loc {
                Some(loc) => Some(self.resolve_loc(loc)?),
                None => None,
            };
            module_values[id as usize] = Value { ty: value.ty.unwrap_or(TypeId(0)), def, loc };
        }
        let map_value = |slot: u32| ValueId(value_map[self.find(slot) as usize]);
        let mut ops = Vec::with_capacity(op_order.len());
        let mut operand_pool = Vec::new();
        let mut successor_pool = Vec::new();
        let mut region_pool = Vec::with_capacity(region_order.len());
        for &op in &op_order {
            let p = &self.ops[op as usize];
            let operands = Span { start: operand_pool.len() as u32, len: p.operands.len };
            operand_pool.extend(self.op_operands[p.operands.range()].iter().map(|&v| map_value(v)));
            let successors = Span { start: successor_pool.len() as u32, len: p.successors.len() as u32 };
            successor_pool.extend(p.successors.iter().map(|&b| BlockId(block_map[b as usize])));
            let regions = Span { start: region_pool.len() as u32, len: p.regions.len() as u32 };
            region_pool.extend(p.regions.iter().map(|&r| RegionId(region_map[r as usize])));
            let results = match self.op_results[p.results.range()].first() {
                Some(&first) => Span { start: value_map[first as usize], len: p.results.len },
                None => Span::default(),
            };
            ops.push(Operation {
                name: p.name,
                loc: self.resolve_loc(p.loc)?,
                attrs: p.attrs,
                properties: p.properties.clone(),
                operands,
                results,
                successors,
                regions,
                isolated: false,
                parent: op_parent[op as usize],
            });
        }
        let blocks = block_order
            .iter()
            .map(|&b| {
                let pb = &self.blocks[b as usize];
                let arguments = match pb.args.first() {
                    Some(&first) => Span { start: value_map[first as usize], len: pb.args.len() as u32 },
                    None => Span::default(),
                };
                Block { arguments, ops: pb.ops.iter().map(|&o| OpId(op_map[o as usize])).collect(), parent: None }
            })
            .collect::<Vec<_>>();
        let mut blocks = blocks;
        let regions = region_order
            .iter()
            .map(|&r| {
                let blocks_of: Vec<BlockId> =
                    self.regions[r as usize].blocks.iter().map(|&b| BlockId(block_map[b as usize])).collect();
                for &b in &blocks_of {
                    blocks[b.0 as usize].parent = Some(RegionId(region_map[r as usize]));
                }
                Region { blocks: blocks_of, parent: region_parent[r as usize] }
            })
            .collect();
        let mut module = self.module;
        module.top_level = top_level.iter().map(|&op| OpId(op_map[op as usize])).collect();
        module.ops = ops;
        module.blocks = blocks;
        module.regions = regions;
        module.values = module_values;
        module.operand_pool = operand_pool;
        module.successor_pool = successor_pool;
        module.region_pool = region_pool;
        Ok(module)
    }
}

/// Hex digits to bytes (an even number of digits).
pub(crate) fn decode_hex(hex: &[u8]) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    hex.chunks(2)
        .map(|pair| {
            let hi = (pair[0] as char).to_digit(16)?;
            let lo = (pair[1] as char).to_digit(16)?;
            Some((hi * 16 + lo) as u8)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn newlines_are_counted_eight_bytes_at_a_time_as_one_by_one() {
        // Bytes next to `\n` in value (0x0a ^ 0x80, 0x0b, 0x09, 0x8a) must not count.
        let bytes: Vec<u8> =
            (0..1000u32).map(|i| [b'\n', 0x8a, 0x0b, 0x09, b'a', 0, 0xff][(i * i % 7) as usize]).collect();
        for len in [0, 1, 7, 8, 9, 63, 64, 65, 1000] {
            let slice = &bytes[..len];
            assert_eq!(super::count_newlines(slice), slice.iter().filter(|&&b| b == b'\n').count(), "first {len}");
        }
    }
}
