//! Kernel and function locations: decoded on demand (only diagnostics need them) from the
//! locations section, whose entries are tagged: `00` unknown; `01 vbr file, vbr line, vbr column`;
//! `02 vbr name, child`; `03 callee, caller`; `04 vbr n, n children`. Strings are offsets into
//! the location-strings section.

use super::cursor::{c_string, Cursor};
use crate::host::Location;

/// Nesting deeper than this is treated as unknown: hostile files must not exhaust the stack.
const MAX_DEPTH: usize = 32;

/// A decoded location: a position in a source file, or (for names, call sites and fusions)
/// TFRT's textual rendering of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BefLocation {
    Unknown,
    FileLineCol {
        file: String,
        line: u32,
        column: u32,
    },
    /// `file;line;column` parts, `name` or `child(name)`, `callee<-caller`, `a,b`.
    Opaque(String),
}

impl BefLocation {
    /// As a diagnostic location: `file:line:column`, an opaque text as the "file", or
    /// `<unknown>`.
    pub fn to_location(&self) -> Location {
        match self {
            BefLocation::Unknown => Location::new("<unknown>", 0, 0),
            BefLocation::FileLineCol { file, line, column } => Location::new(file.clone(), *line, *column),
            BefLocation::Opaque(text) => Location::new(text.clone(), 0, 0),
        }
    }
}

/// One parsed entry, before it is turned into text.
enum Entry {
    Unknown,
    FileLineCol(String, u32, u32),
    Name(String, Box<Entry>),
    CallSite(Box<Entry>, Box<Entry>),
    Fused(Vec<Entry>),
}

/// Decodes the location at `offset`; offsets past the section (TFRT's writer counts "virtual"
/// offsets down from `u32::MAX` for locations it cannot encode) and malformed entries are unknown.
pub(crate) fn decode(locations: &[u8], strings: &[u8], offset: u32) -> BefLocation {
    let mut cursor = Cursor::at(locations, 0, offset as usize);
    match parse(&mut cursor, strings, 0) {
        Some(Entry::Unknown) | None => BefLocation::Unknown,
        Some(Entry::FileLineCol(file, line, column)) => BefLocation::FileLineCol { file, line, column },
        Some(other) => BefLocation::Opaque(render(&other)),
    }
}

/// The name of a name location (directly, the names of a fusion joined, or a call site's callee): what
/// TFRT calls a kernel's debug info.
pub(crate) fn debug_name(locations: &[u8], strings: &[u8], offset: u32) -> Option<String> {
    let mut cursor = Cursor::at(locations, 0, offset as usize);
    match parse(&mut cursor, strings, 0)? {
        Entry::Name(name, _) => Some(name),
        // TFRT joins the names of a fused location's direct children (`fused["foo", "bar"]` is
        // `foobar`), and a fused location without names still has a debug name: the empty one.
        Entry::Fused(children) => Some(
            children
                .into_iter()
                .filter_map(|c| match c {
                    Entry::Name(name, _) => Some(name),
                    _ => None,
                })
                .collect(),
        ),
        Entry::CallSite(callee, _) => match *callee {
            Entry::Name(name, _) => Some(name),
            _ => None,
        },
        _ => None,
    }
}

fn parse(cursor: &mut Cursor<'_>, strings: &[u8], depth: usize) -> Option<Entry> {
    if depth > MAX_DEPTH {
        return None;
    }
    let string = |cursor: &mut Cursor<'_>| -> Option<String> {
        let offset = cursor.vbr_u32("location string").ok()? as usize;
        c_string(strings, 0, offset, "location string").ok().map(str::to_owned)
    };
    Some(match cursor.u8("location tag").ok()? {
        0 => Entry::Unknown,
        1 => {
            let file = string(cursor)?;
            let line = cursor.vbr_u32("line").ok()?;
            let column = cursor.vbr_u32("column").ok()?;
            Entry::FileLineCol(file, line, column)
        }
        2 => {
            let name = string(cursor)?;
            Entry::Name(name, Box::new(parse(cursor, strings, depth + 1)?))
        }
        3 => {
            let callee = parse(cursor, strings, depth + 1)?;
            Entry::CallSite(Box::new(callee), Box::new(parse(cursor, strings, depth + 1)?))
        }
        4 => {
            let count = cursor.count("fused location count").ok()?;
            Entry::Fused((0..count).map(|_| parse(cursor, strings, depth + 1)).collect::<Option<_>>()?)
        }
        _ => return None,
    })
}

fn render(entry: &Entry) -> String {
    match entry {
        Entry::Unknown => "(unknown)".to_owned(),
        Entry::FileLineCol(file, line, column) => format!("{file};{line};{column}"),
        Entry::Name(name, child) => match **child {
            Entry::Unknown => name.clone(),
            ref child => format!("{}({name})", render(child)),
        },
        Entry::CallSite(callee, caller) => format!("{}<-{}", render(callee), render(caller)),
        Entry::Fused(children) => children.iter().map(render).collect::<Vec<_>>().join(","),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_decode_as_tfrt_renders_them() {
        let strings = b"t.mlir\0op\0";
        // 0: file t.mlir:2:8; 4: name "op" around unknown; 7: name "op" around a file;
        // 13: call site (name, file); 21: fused [file, name].
        let locations = [
            1, 0, 2, 8, //
            2, 7, 0, //
            2, 7, 1, 0, 2, 8, //
            3, 2, 7, 0, 1, 0, 3, 4, //
            4, 2, 1, 0, 2, 8, 2, 7, 0,
        ];
        let at = |offset| decode(&locations, strings, offset);
        assert_eq!(at(0), BefLocation::FileLineCol { file: "t.mlir".into(), line: 2, column: 8 });
        assert_eq!(at(0).to_location().to_string(), "t.mlir:2:8");
        assert_eq!(at(4), BefLocation::Opaque("op".into()));
        assert_eq!(at(7), BefLocation::Opaque("t.mlir;2;8(op)".into()));
        assert_eq!(at(13), BefLocation::Opaque("op<-t.mlir;3;4".into()));
        assert_eq!(at(21), BefLocation::Opaque("t.mlir;2;8,op".into()));
        assert_eq!(debug_name(&locations, strings, 21).as_deref(), Some("op"));
        assert_eq!(at(0xFFFF_FFFF), BefLocation::Unknown, "virtual offsets are unknown");
        assert_eq!(at(1), BefLocation::Unknown, "a truncated or bad entry is unknown");
    }
}
