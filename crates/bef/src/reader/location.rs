//! Kernel and function locations, decoded on demand from the locations section, whose entries
//! are tagged: `00` unknown; `01 vbr file, vbr line, vbr column`; `02 vbr name, child`;
//! `03 callee, caller`; `04 vbr n, n children`. Strings are offsets into the location-strings
//! section. Diagnostics want a [`BefLocation`]; the disassembler the whole [`LocationEntry`].

use super::cursor::{c_string, Cursor};
use super::error::BefError;
use rtx_host::Location;

/// Nesting deeper than this is refused: hostile files must not exhaust the stack.
const MAX_DEPTH: usize = 32;

/// A location as a diagnostic shows it: a position in a source file, or (for names, call sites
/// and fusions) TFRT's textual rendering of it.
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

/// One entry of the locations section, nested as MLIR's location kinds nest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LocationEntry {
    Unknown,
    FileLineCol { file: String, line: u32, column: u32 },
    Name { name: String, child: Box<LocationEntry> },
    CallSite { callee: Box<LocationEntry>, caller: Box<LocationEntry> },
    Fused(Vec<LocationEntry>),
}

impl LocationEntry {
    /// The diagnostic form: file positions as they are, other kinds rendered as TFRT does.
    pub fn to_bef_location(&self) -> BefLocation {
        match self {
            LocationEntry::Unknown => BefLocation::Unknown,
            LocationEntry::FileLineCol { file, line, column } => {
                BefLocation::FileLineCol { file: file.clone(), line: *line, column: *column }
            }
            other => BefLocation::Opaque(other.render()),
        }
    }

    /// The name of a name location (directly, the names of a fusion joined, or a call site's callee):
    /// what TFRT calls a kernel's debug info.
    pub fn debug_name(&self) -> Option<String> {
        fn name(entry: &LocationEntry) -> Option<&str> {
            match entry {
                LocationEntry::Name { name, .. } => Some(name),
                _ => None,
            }
        }
        match self {
            // TFRT joins the names of a fused location's direct children (`fused["foo", "bar"]`
            // is `foobar`); a fusion without names still has a debug name, the empty one.
            LocationEntry::Fused(children) => Some(children.iter().filter_map(name).collect()),
            LocationEntry::CallSite { callee, .. } => name(callee).map(str::to_owned),
            other => name(other).map(str::to_owned),
        }
    }

    fn render(&self) -> String {
        match self {
            LocationEntry::Unknown => "(unknown)".to_owned(),
            LocationEntry::FileLineCol { file, line, column } => format!("{file};{line};{column}"),
            LocationEntry::Name { name, child } => match **child {
                LocationEntry::Unknown => name.clone(),
                ref child => format!("{}({name})", child.render()),
            },
            LocationEntry::CallSite { callee, caller } => format!("{}<-{}", callee.render(), caller.render()),
            LocationEntry::Fused(children) => children.iter().map(Self::render).collect::<Vec<_>>().join(","),
        }
    }
}

/// Decodes the location at `offset` of `locations` (at file offset `base`). Offsets past the
/// section are `None`: TFRT's writer counts such "virtual" offsets down from `u32::MAX` for
/// locations it cannot encode.
pub(crate) fn read(
    locations: &[u8],
    base: usize,
    strings: &[u8],
    offset: u32,
) -> Result<Option<LocationEntry>, BefError> {
    if offset as usize >= locations.len() {
        return Ok(None);
    }
    let mut cursor = Cursor::at(locations, base, offset as usize);
    parse(&mut cursor, strings, 0).map(Some)
}

fn parse(cursor: &mut Cursor<'_>, strings: &[u8], depth: usize) -> Result<LocationEntry, BefError> {
    if depth > MAX_DEPTH {
        return Err(cursor.error(format!("a location nests deeper than {MAX_DEPTH} levels")));
    }
    let string = |cursor: &mut Cursor<'_>| -> Result<String, BefError> {
        let at = cursor.offset();
        let offset = cursor.vbr_u32("location string")? as usize;
        c_string(strings, 0, offset, "location string").map(str::to_owned).map_err(|e| match e {
            BefError::Malformed { what, .. } => BefError::malformed(at, what),
            other => other,
        })
    };
    let at = cursor.offset();
    Ok(match cursor.u8("location tag")? {
        0 => LocationEntry::Unknown,
        1 => {
            let file = string(cursor)?;
            let line = cursor.vbr_u32("line")?;
            let column = cursor.vbr_u32("column")?;
            LocationEntry::FileLineCol { file, line, column }
        }
        2 => {
            let name = string(cursor)?;
            LocationEntry::Name { name, child: Box::new(parse(cursor, strings, depth + 1)?) }
        }
        3 => {
            let callee = Box::new(parse(cursor, strings, depth + 1)?);
            LocationEntry::CallSite { callee, caller: Box::new(parse(cursor, strings, depth + 1)?) }
        }
        4 => {
            let count = cursor.count("fused location count")?;
            LocationEntry::Fused((0..count).map(|_| parse(cursor, strings, depth + 1)).collect::<Result<_, _>>()?)
        }
        tag => return Err(BefError::malformed(at, format!("unknown location tag {tag}"))),
    })
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
        let entry = |offset| read(&locations, 100, strings, offset).unwrap().unwrap();
        let at = |offset| entry(offset).to_bef_location();
        assert_eq!(at(0), BefLocation::FileLineCol { file: "t.mlir".into(), line: 2, column: 8 });
        assert_eq!(at(0).to_location().to_string(), "t.mlir:2:8");
        assert_eq!(at(4), BefLocation::Opaque("op".into()));
        assert_eq!(at(7), BefLocation::Opaque("t.mlir;2;8(op)".into()));
        assert_eq!(at(13), BefLocation::Opaque("op<-t.mlir;3;4".into()));
        assert_eq!(at(21), BefLocation::Opaque("t.mlir;2;8,op".into()));
        assert_eq!(entry(21).debug_name().as_deref(), Some("op"));
        assert_eq!(
            entry(13),
            LocationEntry::CallSite {
                callee: Box::new(LocationEntry::Name { name: "op".into(), child: Box::new(LocationEntry::Unknown) }),
                caller: Box::new(LocationEntry::FileLineCol { file: "t.mlir".into(), line: 3, column: 4 }),
            }
        );
        assert_eq!(read(&locations, 100, strings, 0xFFFF_FFFF), Ok(None), "virtual offsets are no entry");
    }

    #[test]
    fn malformed_entries_are_errors_naming_their_byte() {
        let error = read(&[9], 100, b"", 0).unwrap_err();
        assert_eq!(error.to_string(), "malformed BEF at byte 100: unknown location tag 9");
        let error = read(&[1, 50, 1, 1], 100, b"t.mlir\0", 0).unwrap_err();
        assert_eq!(
            error.to_string(),
            "malformed BEF at byte 101: location string at string offset 50 is outside the section"
        );
        assert!(read(&[1, 0, 1], 100, b"t.mlir\0", 0).is_err(), "a truncated entry");
        let deep = [2u8, 0].repeat(40);
        assert!(read(&deep, 0, b"n\0", 0).unwrap_err().to_string().contains("nests deeper"));
    }
}
