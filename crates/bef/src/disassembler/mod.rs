//! `bef_to_mlir`: a BEF file back to the MLIR module it was made from, as TFRT's
//! `tfrt_translate -bef-to-mlir` rebuilds it.
//!
//! The file is read through [`BefImage`] (verified as the executor's files are, bound to no
//! kernels). The types section's names are parsed as MLIR types, each attribute the optional
//! attribute-types section lists is rebuilt by its kind, the modules of symbol references into
//! `tfrt.compiled` modules are parsed into the top-level module, and each function becomes a
//! `func.func` or the region of the kernel that refers to it ([`functions`]). Without the
//! optional sections, as TFRT does: attributes are named `attrN` and hold `0xDEADBEEF : i32`,
//! kernel results have type `none`, and a warning says so. The result prints in TFRT's custom
//! op syntax or the generic form, and `mlir_to_bef` writes it back to the same bytes.

mod attributes;
mod compiled;
mod error;
mod functions;
mod locations;

use std::collections::HashMap;

pub use error::DisassembleError;

use crate::format::AttributeType;
use crate::reader::BefImage;
use attributes::AttributeDecoder;
use rtx_kernel::attribute::Attribute;
use rtx_mlir::ir::{Attribute as Attr, Module};
use rtx_mlir::text::parse::parse_type_in;

/// TFRT's warning for a file without (some of) the optional sections.
pub const MISSING_OPTIONAL_SECTIONS: &str = "Missing AttributeTypes, AttributeNames or RegisterTypes sections.";

/// A disassembled file: the module, and what TFRT would warn about.
#[derive(Debug)]
pub struct Disassembly {
    pub module: Module,
    pub warnings: Vec<String>,
}

/// Rebuilds the MLIR module of the BEF file `bytes`; `source` names the file (the top-level
/// module is located at `source:0:0`).
pub fn bef_to_mlir(bytes: &[u8], source: &str) -> Result<Disassembly, DisassembleError> {
    let image = BefImage::from_bytes(bytes)?;
    let optional = image.optional_sections()?;
    let mut warnings = Vec::new();
    if optional.attribute_types.is_none() || optional.attribute_names.is_none() || optional.register_types.is_none() {
        warnings.push(MISSING_OPTIONAL_SECTIONS.to_owned());
    }
    let kinds = optional.attribute_types.unwrap_or_default();
    let section = image.attributes_section();
    let units =
        kinds
            .iter()
            .filter(|(_, kind)| *kind == AttributeType::SymbolRef)
            .map(|&(offset, kind)| {
                Attribute::new(section, offset as usize)
                    .compilation_unit()
                    .map_err(|error| DisassembleError::Attribute { offset, kind, error })
            })
            .collect::<Result<Vec<_>, _>>()?;
    let mut module = compiled::top_module(&units)?;
    let top = module.top_level[0];
    let filename = module.context.intern_str(source.as_bytes());
    let filename = module.context.intern_attr(Attr::String { value: filename, ty: None });
    module.ops[top.0 as usize].loc = module.context.intern_attr(Attr::FileLineColLoc { filename, line: 0, column: 0 });
    let top_block = module.region(module.op_regions(top)[0]).blocks[0];

    let types = (0..image.num_types() as u32)
        .map(|index| {
            let name = image.type_name(index);
            parse_type_in(&mut module.context, name).map_err(|error| DisassembleError::Type {
                index,
                name: name.to_owned(),
                error,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut decoder = AttributeDecoder::new(&mut module.context);
    let attributes = kinds
        .iter()
        .map(|&(offset, kind)| Ok((offset, decoder.decode(section, offset, kind)?)))
        .collect::<Result<HashMap<_, _>, DisassembleError>>()?;
    let tables = functions::Tables {
        image: &image,
        types: &types,
        attributes: &attributes,
        attribute_names: optional.attribute_names.as_deref(),
        register_types: optional.register_types.as_deref(),
    };
    functions::build(&mut module, top_block, &tables)?;
    Ok(Disassembly { module, warnings })
}

#[cfg(test)]
mod tests;
