//! The LLVM dialect's debug-info attributes and loop annotations written in the dialect's own
//! bytecode encoding (`LLVMDialectBytecode.td`, the inverse of the reader's decoding) when their
//! text holds a `distinct[N]<...>`.
//!
//! rtx keeps these attributes as text, and an attribute written as text is parsed on its own by
//! the reader, with `distinct` ids of its own: a compile unit that every subprogram names, or an
//! access group named by a loop annotation and by the ops of its loop, would come back as one
//! attribute per entry that mentions it. In the native encoding every parameter is an entry of
//! its own, the distinct attribute too, and all users refer to that one entry, exactly as
//! upstream writes them. Parameters without a distinct id inside stay text.

use foldhash::{HashMap, HashMapExt};

use super::error::WriteError;
use super::numbering::Result;
use crate::dialects::llvm_attrs::{by_mnemonic, Param as P, Spec};
use crate::dialects::{dwarf, llvm_flags};
use crate::ir::{AttrId, Attribute, DialectId, MlirContext, Module};
use crate::text::parse::parse_attribute_in;
use crate::text::string_literal_end;

/// One field of a native encoding.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Item {
    Varint(u64),
    Byte(u8),
    /// An attribute that must be present (its index).
    Attr(AttrId),
    /// `writeOptionalAttribute`: the index with a presence flag in its low bit.
    OptAttr(Option<AttrId>),
}

/// An attribute of dialect `dialect` in that dialect's encoding (its code first).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Native {
    pub dialect: DialectId,
    pub items: Box<[Item]>,
}

/// The module's context with the parameters of natively encoded attributes added as attributes
/// of their own, and the encoding of each such attribute.
pub(super) struct Lowering {
    pub context: MlirContext,
    pub native: HashMap<AttrId, Native>,
}

/// The native encodings the module needs, or `None` when no LLVM attribute holds a distinct id.
pub(super) fn lower(m: &Module) -> Result<Option<Lowering>> {
    let ctx = &m.context;
    let Some(llvm) = ctx.find_dialect(b"llvm") else { return Ok(None) };
    let needs = |ctx: &MlirContext, a: &Attribute| match a {
        Attribute::Text { dialect, text } if *dialect == llvm && (text.0 as usize) < ctx.num_strings() => {
            let text = ctx.str_bytes(*text);
            spec(text).is_some() && text.windows(9).any(|w| w == b"distinct[")
        }
        _ => false,
    };
    if !ctx.attrs().iter().any(|a| needs(ctx, a)) {
        return Ok(None);
    }
    let mut context = ctx.clone();
    let mut native = HashMap::new();
    // Parameters parsed from a text are appended to the context, and are lowered in turn.
    let mut i = 0;
    while i < context.attrs().len() {
        let id = AttrId(i as u32);
        i += 1;
        if !needs(&context, context.attr(id)) {
            continue;
        }
        let Attribute::Text { text, .. } = context.attr(id) else { continue };
        let text = context.str(*text).into_owned();
        let items = encode(&mut context, &text)
            .map_err(|reason| WriteError::DialectAttribute { text: text.clone(), reason })?;
        native.insert(id, Native { dialect: llvm, items: items.into() });
    }
    Ok(Some(Lowering { context, native }))
}

/// The spec of an attribute's text `#llvm.<mnemonic><...>`.
fn spec(text: &[u8]) -> Option<&'static Spec> {
    let rest = text.strip_prefix(b"#llvm.")?;
    let end = rest.iter().position(|&b| b == b'<')?;
    by_mnemonic(&rest[..end])
}

fn encode(ctx: &mut MlirContext, text: &str) -> std::result::Result<Vec<Item>, String> {
    let &(mnemonic, code, params) = spec(text.as_bytes()).ok_or("not an encodable attribute")?;
    let body = text[mnemonic.len() + "#llvm.".len()..]
        .strip_prefix('<')
        .and_then(|b| b.strip_suffix('>'))
        .ok_or("expected `<...>` after the mnemonic")?;
    // `name = value` parameters; the items of a bare list follow their first as more segments.
    let mut given: Vec<(&str, Vec<&str>)> = Vec::new();
    for segment in split_top_level(body)? {
        match segment.split_once(" = ") {
            Some((name, value)) if name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') => {
                given.push((name, vec![value]))
            }
            _ => match given.last_mut() {
                Some((_, values)) => values.push(segment),
                None => return Err(format!("expected `name = value`, found `{segment}`")),
            },
        }
    }
    if let Some((name, _)) = given.iter().find(|(name, _)| !params.iter().any(|(p, _)| p == name)) {
        return Err(format!("unknown parameter `{name}`"));
    }
    let mut items = vec![Item::Varint(code)];
    for &(name, param) in params {
        let values = given.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_slice());
        let value = match values {
            Some([single]) => Some(*single),
            Some(_) if !matches!(param, P::List | P::StrippedList(_)) => {
                return Err(format!("parameter `{name}` is not a list"))
            }
            _ => None,
        };
        let bad = || format!("bad value for parameter `{name}`");
        let uint = |v: &str| v.parse::<u64>().map_err(|_| bad());
        match param {
            P::Attr | P::Distinct => items.push(Item::OptAttr(value.map(|v| parse(ctx, v)).transpose()?)),
            P::Required => items.push(Item::Attr(parse(ctx, value.ok_or_else(|| missing(name))?)?)),
            P::Stripped(class) => items.push(Item::OptAttr(value.map(|v| stripped(ctx, class, v)).transpose()?)),
            P::RequiredStripped(class) => {
                items.push(Item::Attr(stripped(ctx, class, value.ok_or_else(|| missing(name))?)?))
            }
            P::Bool | P::BoolAlways => items.push(Item::Byte(match value {
                None | Some("false") => 0,
                Some("true") => 1,
                Some(_) => return Err(bad()),
            })),
            P::Uint | P::UintAlways => items.push(Item::Varint(value.map(uint).transpose()?.unwrap_or(0))),
            P::OptionalUint => items.push(Item::Varint(value.map(uint).transpose()?.map_or(0, |v| v << 1 | 1))),
            P::Dwarf(names) => {
                let v = value.map(|v| dwarf::value(names, v).ok_or_else(bad)).transpose()?;
                items.push(Item::Varint(v.unwrap_or(0)));
            }
            P::Language => {
                let language =
                    value.map(|v| parse(ctx, &format!("#llvm.di_source_language_name<language = {v}>"))).transpose()?;
                items.push(Item::OptAttr(language));
            }
            P::Emission | P::NameTable | P::DiFlags | P::SubprogramFlags => {
                let lookup = |v: &str| match param {
                    P::Emission => llvm_flags::parse_kind(llvm_flags::emission_kind, v),
                    P::NameTable => llvm_flags::parse_kind(llvm_flags::name_table_kind, v),
                    P::DiFlags => llvm_flags::parse_di_flags(v),
                    _ => llvm_flags::parse_subprogram_flags(v),
                };
                items.push(Item::Varint(value.map(|v| lookup(v).ok_or_else(bad)).transpose()?.unwrap_or(0)));
            }
            P::List | P::Bracketed | P::StrippedList(_) => {
                let list: Vec<&str> = match (param, values) {
                    (_, None) => Vec::new(),
                    (P::Bracketed, Some(&[v])) => {
                        let inner = v.strip_prefix('[').and_then(|v| v.strip_suffix(']')).ok_or_else(bad)?;
                        if inner.trim().is_empty() {
                            Vec::new()
                        } else {
                            split_top_level(inner)?
                        }
                    }
                    (_, Some(values)) => values.to_vec(),
                };
                items.push(Item::Byte(u8::from(!list.is_empty())));
                if !list.is_empty() {
                    items.push(Item::Varint(list.len() as u64));
                    for v in list {
                        let id = match param {
                            P::StrippedList(class) => stripped(ctx, class, v)?,
                            _ => parse(ctx, v)?,
                        };
                        items.push(Item::OptAttr(Some(id)));
                    }
                }
            }
        }
    }
    Ok(items)
}

fn missing(name: &str) -> String {
    format!("required parameter `{name}` is missing")
}

fn parse(ctx: &mut MlirContext, text: &str) -> std::result::Result<AttrId, String> {
    parse_attribute_in(ctx, text).map_err(|e| format!("`{text}`: {}", e.message))
}

/// A parameter of class `#llvm.<class>`, printed without that prefix (or, from text whose
/// aliases were substituted, with it).
fn stripped(ctx: &mut MlirContext, class: &str, text: &str) -> std::result::Result<AttrId, String> {
    if text.starts_with('<') {
        parse(ctx, &format!("#llvm.{class}{text}"))
    } else {
        parse(ctx, text)
    }
}

/// `text` split at its top-level `, `: outside strings and `<>`, `()`, `[]`, `{}` (where `->`
/// closes nothing).
fn split_top_level(text: &str) -> std::result::Result<Vec<&str>, String> {
    let bytes = text.as_bytes();
    let mut parts = Vec::new();
    let (mut depth, mut start, mut i) = (0usize, 0, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i = string_literal_end(bytes, i).ok_or("unterminated string")?;
                continue;
            }
            b'-' if bytes.get(i + 1) == Some(&b'>') => i += 1,
            b'<' | b'(' | b'[' | b'{' => depth += 1,
            b'>' | b')' | b']' | b'}' => depth = depth.checked_sub(1).ok_or("unbalanced brackets")?,
            b',' if depth == 0 => {
                parts.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if depth != 0 {
        return Err("unbalanced brackets".into());
    }
    let last = text[start..].trim();
    if !last.is_empty() || !parts.is_empty() {
        parts.push(last);
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::split_top_level;

    #[test]
    fn splits_only_at_top_level_commas() {
        assert_eq!(
            split_top_level(r#"a = <x = 1, y = "p,\"q">, b = (i32) -> i8, c = [1, 2]"#).unwrap(),
            vec![r#"a = <x = 1, y = "p,\"q">"#, "b = (i32) -> i8", "c = [1, 2]"]
        );
        assert!(split_top_level("a = <b").is_err());
        assert!(split_top_level("a = \"open").is_err());
        assert!(split_top_level("").unwrap().is_empty());
    }
}
