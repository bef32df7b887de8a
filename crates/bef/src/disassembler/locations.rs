//! BEF locations back to MLIR locations, kind for kind. An offset past the locations section —
//! where the writer put an op whose location BEF cannot say — is `loc(unknown)`.

use crate::reader::{BefError, BefImage, LocationEntry};
use rtx_mlir::ir::{AttrId, Attribute, MlirContext};

/// The MLIR location of the entry at `offset`.
pub(super) fn location(image: &BefImage, ctx: &mut MlirContext, offset: u32) -> Result<AttrId, BefError> {
    Ok(match image.location_entry(offset)? {
        Some(entry) => build(ctx, &entry),
        None => ctx.intern_attr(Attribute::UnknownLoc),
    })
}

fn build(ctx: &mut MlirContext, entry: &LocationEntry) -> AttrId {
    let location = match entry {
        LocationEntry::Unknown => Attribute::UnknownLoc,
        LocationEntry::FileLineCol { file, line, column } => Attribute::FileLineColLoc {
            filename: ctx.intern_string_attr(file.as_bytes()),
            line: *line,
            column: *column,
        },
        LocationEntry::Name { name, child } => {
            Attribute::NameLoc { name: ctx.intern_string_attr(name.as_bytes()), child: build(ctx, child) }
        }
        LocationEntry::CallSite { callee, caller } => {
            Attribute::CallSiteLoc { callee: build(ctx, callee), caller: build(ctx, caller) }
        }
        LocationEntry::Fused(children) => {
            let locations = children.iter().map(|child| build(ctx, child)).collect();
            Attribute::FusedLoc { locations, metadata: None }
        }
    };
    ctx.intern_attr(location)
}
