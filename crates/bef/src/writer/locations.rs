//! The locations and location-strings sections. Each emitted op (a kernel, or the op owning a
//! function body) gets a fresh entry, tagged: `00` unknown, `01 file line col`, `02 name child`,
//! `03 callee caller`, `04 count children...` (fused; only the children BEF can say). Strings are
//! offsets into the location strings, NUL-terminated and deduplicated in first-use order. An op
//! whose location BEF cannot say gets an offset past the section, counting down from `u32::MAX`,
//! which readers take as unknown.

use std::collections::HashMap;

use super::emitter::Emitter;
use rtx_mlir::ir::{AttrId, Attribute, MlirContext};

#[derive(Default)]
pub(super) struct LocationWriter {
    pub(super) locations: Emitter,
    pub(super) strings: Emitter,
    string_offsets: HashMap<Vec<u8>, usize>,
    next_virtual: u32,
    /// How many ops got a real entry; the sections are written only when some did.
    pub(super) concrete: usize,
}

/// Whether BEF can say a location: anything but a range with other than a line and column, or a
/// fused location none of whose children BEF can say.
fn supported(ctx: &MlirContext, loc: AttrId) -> bool {
    match ctx.attr(loc) {
        Attribute::UnknownLoc | Attribute::NameLoc { .. } | Attribute::FileLineColLoc { .. } => true,
        Attribute::FileLineColRange { parts, .. } => parts.len() == 2,
        Attribute::CallSiteLoc { callee, caller } => supported(ctx, *callee) && supported(ctx, *caller),
        Attribute::FusedLoc { locations, .. } => locations.iter().any(|&l| supported(ctx, l)),
        _ => false,
    }
}

impl LocationWriter {
    pub(super) fn new() -> LocationWriter {
        LocationWriter { next_virtual: u32::MAX, ..LocationWriter::default() }
    }

    /// The offset to record for an op at `loc`.
    pub(super) fn op_location(&mut self, ctx: &MlirContext, loc: AttrId) -> u32 {
        if !supported(ctx, loc) {
            self.next_virtual -= 1;
            return self.next_virtual;
        }
        self.concrete += 1;
        let offset = self.locations.len() as u32;
        self.location(ctx, loc);
        offset
    }

    fn location(&mut self, ctx: &MlirContext, loc: AttrId) {
        match ctx.attr(loc) {
            Attribute::FileLineColLoc { filename, line, column } => self.file_line_col(ctx, *filename, *line, *column),
            Attribute::FileLineColRange { filename, parts } if parts.len() == 2 => {
                self.file_line_col(ctx, *filename, parts[0], parts[1])
            }
            Attribute::NameLoc { name, child } => {
                self.locations.byte(2);
                self.string(ctx, *name);
                self.nested(ctx, *child);
            }
            Attribute::CallSiteLoc { callee, caller } => {
                self.locations.byte(3);
                self.location(ctx, *callee);
                self.location(ctx, *caller);
            }
            Attribute::FusedLoc { locations, .. } => {
                let children: Vec<AttrId> = locations.iter().copied().filter(|&l| supported(ctx, l)).collect();
                self.locations.byte(4);
                self.locations.vbr(children.len());
                for child in children {
                    self.location(ctx, child);
                }
            }
            _ => self.locations.byte(0),
        }
    }

    /// A name's child location, which need not be one BEF can say: then it is unknown.
    fn nested(&mut self, ctx: &MlirContext, loc: AttrId) {
        if supported(ctx, loc) {
            self.location(ctx, loc);
        } else {
            self.locations.byte(0);
        }
    }

    fn file_line_col(&mut self, ctx: &MlirContext, filename: AttrId, line: u32, column: u32) {
        self.locations.byte(1);
        self.string(ctx, filename);
        self.locations.vbr(line as usize);
        self.locations.vbr(column as usize);
    }

    fn string(&mut self, ctx: &MlirContext, attr: AttrId) {
        let bytes = match ctx.attr(attr) {
            Attribute::String { value, .. } => ctx.str_bytes(*value),
            _ => &[],
        };
        let offset = match self.string_offsets.get(bytes) {
            Some(&offset) => offset,
            None => {
                let offset = self.strings.len();
                self.strings.bytes(bytes);
                self.strings.byte(0);
                self.string_offsets.insert(bytes.to_vec(), offset);
                offset
            }
        };
        self.locations.vbr(offset);
    }
}
