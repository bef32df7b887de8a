//! Other dialects' own attribute/type encodings, turned into the exact text upstream MLIR prints
//! for them, so that a module read from bytecode can be printed and written back without the
//! dialect. Covered: the dialects that IREE 3.13's `iree-opt` writes with custom encodings and
//! whose attributes turn up in real input (`stablehlo`, `chlo`, `quant`, `llvm`, and `vhlo`, the
//! versioned dialect of StableHLO portable artifacts). Entries of any other dialect stay
//! [`Attribute::Custom`] / [`Type::Custom`].
//!
//! A custom entry may refer to any other entry by index, before or after it, so decoding waits
//! until the whole table is read: each payload is first parsed into a [`Template`] (literal text
//! with holes for the entries it refers to), then templates are rendered depth-first so that every
//! entry a template prints (directly, or nested in a builtin entry) is rendered before it, with
//! cycle detection and the reader's nesting bound. Nested entries print through rtx's own printer,
//! in full (rtx prints no aliases). `distinct[N]<...>` attributes inside the texts are numbered
//! in the order the texts first print them, one numbering for the whole file, so that equal ids
//! stay one attribute when upstream parses rtx's print. Finally the context is rebuilt once with
//! the texts swapped in.

mod chlo;
mod llvm;
mod quant;
mod stablehlo;
mod vhlo;

use foldhash::{HashMap, HashMapExt};

use super::cursor::Cursor;
use super::error::{ReadError, ReadErrorKind, Result};
use super::{FileState, MAX_NESTING};
use crate::ir::{AttrId, Attribute, DialectId, MlirContext, Sym, Type, TypeId};
use crate::text::print::{print_entity, Entity, ResolvedCustom};

/// A custom-encoded entry of a non-builtin dialect, as the attr/type table gave it.
pub(super) struct CustomEntry<'a> {
    /// Attribute `i` is node `i`; type `j` is node `num_attrs + j`.
    pub node: usize,
    pub dialect: DialectId,
    pub data: &'a [u8],
    pub offset: usize,
}

/// Whether rtx decodes custom entries of the dialect named `name`.
pub(super) fn is_supported(name: &[u8]) -> bool {
    matches!(name, b"stablehlo" | b"chlo" | b"quant" | b"llvm" | b"vhlo")
}

/// One part of an entry's text.
enum Piece {
    Text(String),
    Attr(AttrId),
    Type(TypeId),
    /// An attribute of `#dialect.mnemonic` printed without that prefix (how ODS prints a
    /// parameter whose attribute class is known), e.g. `<name = "x", size = 2>`.
    StrippedAttr {
        id: AttrId,
        mnemonic: &'static str,
        offset: usize,
    },
    /// A builtin `distinct[N]<referenced>` attribute (`id` is its [`Attribute::Distinct`] id;
    /// `None` prints `<>`, upstream's spelling for a unit referenced attribute).
    Distinct {
        id: u32,
        referenced: Option<AttrId>,
    },
}

/// An entry's text with holes for the entries it prints.
#[derive(Default)]
pub(super) struct Template {
    pieces: Vec<Piece>,
}

impl Template {
    pub(super) fn text(&mut self, text: &str) {
        match self.pieces.last_mut() {
            Some(Piece::Text(last)) => last.push_str(text),
            _ => self.pieces.push(Piece::Text(text.to_owned())),
        }
    }

    pub(super) fn attr(&mut self, id: AttrId) {
        self.pieces.push(Piece::Attr(id));
    }

    pub(super) fn ty(&mut self, id: TypeId) {
        self.pieces.push(Piece::Type(id));
    }

    pub(super) fn stripped_attr(&mut self, id: AttrId, mnemonic: &'static str, offset: usize) {
        self.pieces.push(Piece::StrippedAttr { id, mnemonic, offset });
    }

    pub(super) fn distinct(&mut self, id: u32, referenced: Option<AttrId>) {
        self.pieces.push(Piece::Distinct { id, referenced });
    }

    /// A quoted string as `llvm::printEscapedString` writes it.
    pub(super) fn string(&mut self, bytes: &[u8]) {
        const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
        let mut out = String::with_capacity(bytes.len() + 2);
        out.push('"');
        for &b in bytes {
            match b {
                b'\\' => out.push_str("\\\\"),
                b'"' => out.push_str("\\22"),
                0x20..=0x7e => out.push(b as char),
                _ => {
                    out.push('\\');
                    out.push(DIGITS[(b >> 4) as usize] as char);
                    out.push(DIGITS[(b & 15) as usize] as char);
                }
            }
        }
        out.push('"');
        self.text(&out);
    }

    fn refs(&self) -> impl Iterator<Item = Entity> + '_ {
        self.pieces.iter().filter_map(|piece| match piece {
            Piece::Text(_) => None,
            Piece::Attr(id) | Piece::StrippedAttr { id, .. } => Some(Entity::Attr(*id)),
            Piece::Distinct { referenced, .. } => referenced.map(Entity::Attr),
            Piece::Type(id) => Some(Entity::Type(*id)),
        })
    }
}

/// `#dialect.body` when the body is simple enough for MLIR's pretty form (an identifier,
/// optionally followed by `<...>`), else `#dialect<body>`; `prefix` is `#` or `!`.
pub(super) fn dialect_symbol(prefix: char, dialect: &str, body: &str) -> String {
    let pretty = body.as_bytes().first().is_some_and(|b| b.is_ascii_alphabetic()) && {
        let rest = body.trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '.' || c == '_');
        rest.is_empty() || (rest.starts_with('<') && rest.ends_with('>'))
    };
    if pretty {
        format!("{prefix}{dialect}.{body}")
    } else {
        format!("{prefix}{dialect}<{body}>")
    }
}

/// The body of a dialect symbol printed by [`dialect_symbol`] (`#d.body` or `#d<body>`).
fn symbol_body<'t>(text: &'t str, dialect: &str) -> Option<&'t str> {
    let rest = text.strip_prefix(['#', '!'])?.strip_prefix(dialect)?;
    if let Some(body) = rest.strip_prefix('.') {
        return Some(body);
    }
    rest.strip_prefix('<')?.strip_suffix('>')
}

/// Reads a dialect payload: the primitives of `DialectBytecodeReader`.
pub(super) struct Payload<'a, 'c> {
    pub c: Cursor<'a>,
    pub ctx: &'c MlirContext,
    strings: &'c [Sym],
    num_attrs: usize,
    num_types: usize,
}

impl Payload<'_, '_> {
    pub(super) fn offset(&self) -> usize {
        self.c.offset()
    }

    pub(super) fn invalid(&self, offset: usize, message: impl Into<String>) -> ReadError {
        ReadError::new(offset, ReadErrorKind::Invalid(message.into()))
    }

    pub(super) fn varint(&mut self, what: &'static str) -> Result<u64> {
        self.c.varint(what)
    }

    pub(super) fn svarint(&mut self, what: &'static str) -> Result<i64> {
        self.c.signed_varint(what)
    }

    /// `readSignedVarInts`: a count, then that many signed varints.
    pub(super) fn svarints(&mut self, what: &'static str) -> Result<Vec<i64>> {
        let n = self.c.count(what, 1)?;
        (0..n).map(|_| self.c.signed_varint(what)).collect()
    }

    /// `readBool`: one byte.
    pub(super) fn bool(&mut self, what: &'static str) -> Result<bool> {
        Ok(self.c.byte(what)? != 0)
    }

    /// `readAPFloatWithKnownSemantics` of an IEEE double: its 64 bits as a signed varint.
    pub(super) fn f64_bits(&mut self, what: &'static str) -> Result<u64> {
        Ok(self.c.signed_varint(what)? as u64)
    }

    pub(super) fn attr(&mut self) -> Result<AttrId> {
        Ok(AttrId(self.c.index("attribute", self.num_attrs)? as u32))
    }

    pub(super) fn ty(&mut self) -> Result<TypeId> {
        Ok(TypeId(self.c.index("type", self.num_types)? as u32))
    }

    /// `readString`: an index into the string table.
    pub(super) fn string(&mut self, what: &'static str) -> Result<&[u8]> {
        let index = self.c.index(what, self.strings.len())?;
        Ok(self.ctx.str_bytes(self.strings[index]))
    }

    /// The enum case `names[value]` (unlisted values are `None`: upstream's `symbolize` fails).
    pub(super) fn enum_case(&mut self, what: &'static str, names: &[(u64, &'static str)]) -> Result<&'static str> {
        let offset = self.offset();
        let value = self.varint(what)?;
        names
            .iter()
            .find(|&&(v, _)| v == value)
            .map(|&(_, name)| name)
            .ok_or_else(|| self.invalid(offset, format!("unknown {what} {value}")))
    }
}

/// What a dialect decoder gives: the entry's template, or `None` for a code that rtx leaves
/// encoded.
type Decoded = Result<Option<Template>>;

fn decode(dialect: &[u8], is_type: bool, p: &mut Payload<'_, '_>) -> Decoded {
    match (dialect, is_type) {
        (b"stablehlo", false) => stablehlo::attr(p),
        (b"stablehlo", true) => stablehlo::ty(p),
        (b"chlo", false) => chlo::attr(p),
        (b"quant", true) => quant::ty(p),
        (b"llvm", false) => llvm::attr(p),
        (b"vhlo", false) => vhlo::attr(p),
        (b"vhlo", true) => vhlo::ty(p),
        _ => Ok(None),
    }
}

/// Decodes every supported custom entry into its text and swaps the texts into the context.
/// `offsets[node]` is where each entry's payload starts (for errors).
pub(super) fn resolve(
    state: &mut FileState<'_>,
    customs: &[CustomEntry<'_>],
    offsets: &[usize],
    num_attrs: usize,
) -> Result<()> {
    let num_types = offsets.len() - num_attrs;
    let mut templates: HashMap<usize, (Template, DialectId)> = HashMap::new();
    for entry in customs {
        let ctx = &state.module.context;
        let name = ctx.str_bytes(ctx.dialect(entry.dialect).name);
        let mut p =
            Payload { c: Cursor::new(entry.data, entry.offset), ctx, strings: &state.strings, num_attrs, num_types };
        if let Some(template) = decode(name, entry.node >= num_attrs, &mut p)? {
            p.c.expect_end("dialect attribute/type entry")?;
            templates.insert(entry.node, (template, entry.dialect));
        }
    }
    if templates.is_empty() {
        return Ok(());
    }

    let node_of = |entity: Entity| match entity {
        Entity::Attr(id) => id.0 as usize,
        Entity::Type(id) => num_attrs + id.0 as usize,
    };
    let entity_of = |node: usize| {
        if node < num_attrs {
            Entity::Attr(AttrId(node as u32))
        } else {
            Entity::Type(TypeId((node - num_attrs) as u32))
        }
    };
    const UNSEEN: u8 = 0;
    const ACTIVE: u8 = 1;
    const DONE: u8 = 2;
    let mut mark = vec![UNSEEN; offsets.len()];
    let mut resolved = ResolvedCustom::default();
    let mut texts: Vec<(usize, DialectId, String)> = Vec::new();
    let mut scratch = Vec::new();
    let mut roots: Vec<usize> = templates.keys().copied().collect();
    roots.sort_unstable();
    let mut distinct_numbers = number_distincts(&templates, &roots, num_attrs);
    for root in roots {
        if mark[root] != UNSEEN {
            continue;
        }
        // Frames: (node, its children, next child).
        let mut stack: Vec<(usize, Vec<usize>, usize)> = Vec::new();
        let kids = |node: usize, scratch: &mut Vec<usize>| -> Vec<usize> {
            match templates.get(&node) {
                Some((template, _)) => template.refs().map(node_of).collect(),
                None => {
                    super::attr_type::children(state, num_attrs, node, scratch);
                    scratch.clone()
                }
            }
        };
        mark[root] = ACTIVE;
        stack.push((root, kids(root, &mut scratch), 0));
        while let Some((node, children, next)) = stack.last_mut() {
            if let Some(&kid) = children.get(*next) {
                *next += 1;
                match mark[kid] {
                    ACTIVE => return Err(ReadError::new(offsets[kid], ReadErrorKind::Cycle)),
                    UNSEEN => {
                        if stack.len() >= MAX_NESTING {
                            return Err(ReadError::new(offsets[kid], ReadErrorKind::TooDeep(MAX_NESTING)));
                        }
                        mark[kid] = ACTIVE;
                        let grandchildren = kids(kid, &mut scratch);
                        stack.push((kid, grandchildren, 0));
                    }
                    _ => {}
                }
                continue;
            }
            let node = *node;
            mark[node] = DONE;
            stack.pop();
            let Some((template, dialect)) = templates.get(&node) else { continue };
            let dialect_name = state.module.context.dialect_name(*dialect).into_owned();
            // An entry that prints an entry rtx cannot print (another dialect's encoding) stays
            // encoded itself.
            let Some(text) = render(state, template, &dialect_name, &resolved, &mut distinct_numbers)? else {
                continue;
            };
            match entity_of(node) {
                Entity::Attr(id) => resolved.attrs.insert(id, text.clone()),
                Entity::Type(id) => resolved.types.insert(id, text.clone()),
            };
            texts.push((node, *dialect, text));
        }
    }
    rebuild(state, texts, num_attrs);
    Ok(())
}

/// Numbers the `distinct` attributes of the templates in the order a top-down print meets them
/// (entries by table index, each entry's text left to right, nested entries where they print).
fn number_distincts(
    templates: &HashMap<usize, (Template, DialectId)>,
    roots: &[usize],
    num_attrs: usize,
) -> HashMap<u32, usize> {
    let mut numbers = HashMap::new();
    let mut seen = vec![false; num_attrs];
    for &root in roots {
        if root >= num_attrs || seen[root] {
            continue;
        }
        seen[root] = true;
        // Frames: (node, next piece).
        let mut stack = vec![(root, 0usize)];
        while let Some((node, next)) = stack.last_mut() {
            let Some(piece) = templates[node].0.pieces.get(*next) else {
                stack.pop();
                continue;
            };
            *next += 1;
            match piece {
                Piece::Distinct { id, .. } => {
                    let n = numbers.len();
                    numbers.entry(*id).or_insert(n);
                }
                Piece::Attr(id) | Piece::StrippedAttr { id, .. } => {
                    let kid = id.0 as usize;
                    if kid < num_attrs && !seen[kid] && templates.contains_key(&kid) && stack.len() < MAX_NESTING {
                        seen[kid] = true;
                        stack.push((kid, 0));
                    }
                }
                _ => {}
            }
        }
    }
    numbers
}

/// The template's text, or `None` when a nested entry has no printable form.
fn render(
    state: &FileState<'_>,
    template: &Template,
    dialect: &str,
    resolved: &ResolvedCustom,
    distinct_numbers: &mut HashMap<u32, usize>,
) -> Result<Option<String>> {
    let mut out = String::new();
    for piece in &template.pieces {
        let entity = match piece {
            Piece::Text(text) => {
                out.push_str(text);
                continue;
            }
            Piece::Distinct { id, referenced } => {
                let next = distinct_numbers.len();
                let number = *distinct_numbers.entry(*id).or_insert(next);
                out.push_str(&format!("distinct[{number}]<"));
                if let Some(referenced) = referenced {
                    let Ok(text) = print_entity(&state.module, Entity::Attr(*referenced), resolved) else {
                        return Ok(None);
                    };
                    out.push_str(&text);
                }
                out.push('>');
                continue;
            }
            Piece::Attr(id) | Piece::StrippedAttr { id, .. } => Entity::Attr(*id),
            Piece::Type(id) => Entity::Type(*id),
        };
        let Ok(text) = print_entity(&state.module, entity, resolved) else { return Ok(None) };
        match piece {
            Piece::StrippedAttr { mnemonic, offset, .. } => {
                let stripped = symbol_body(&text, dialect).and_then(|body| body.strip_prefix(mnemonic));
                let Some(stripped) = stripped else {
                    return Err(ReadError::new(
                        *offset,
                        ReadErrorKind::Invalid(format!("expected a #{dialect}.{mnemonic} attribute, found {text}")),
                    ));
                };
                out.push_str(stripped);
            }
            _ => out.push_str(&text),
        }
    }
    Ok(Some(out))
}

/// Turns the decoded entries into text in place (every id stays the same).
fn rebuild(state: &mut FileState<'_>, texts: Vec<(usize, DialectId, String)>, num_attrs: usize) {
    let ctx = &mut state.module.context;
    for (node, dialect, text) in texts {
        let text = ctx.push_string(text.as_bytes());
        if node < num_attrs {
            ctx.replace_attr(AttrId(node as u32), Attribute::Text { dialect, text });
        } else {
            ctx.replace_type(TypeId((node - num_attrs) as u32), Type::Text { dialect, text });
        }
    }
}
