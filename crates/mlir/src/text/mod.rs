//! MLIR's textual form: the parser (generic and custom op syntax), the exact generic printer and
//! the upstream-style printer, and the table of custom op forms ([`syntax`]).

pub mod parse;
pub mod print;
pub mod syntax;

/// The end of the string literal that opens at `text[open]` (a `"`): the index just past its
/// closing quote, or `None` when the text ends first. Escapes (`\"`, `\\`, `\0A`) are skipped
/// whole. Scans of attribute text that must not look inside strings use it.
pub(crate) fn string_literal_end(text: &[u8], open: usize) -> Option<usize> {
    let mut i = open + 1;
    // Literals can be a model's weights in hex: jump to the next quote or escape.
    while let Some(at) = text.get(i..).and_then(|rest| memchr::memchr2(b'"', b'\\', rest)) {
        match text[i + at] {
            b'"' => return Some(i + at + 1),
            _ => i += at + 2,
        }
    }
    None
}
