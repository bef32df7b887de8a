//! `mlir_to_bef`: an MLIR module of TFRT kernels to a BEF file, byte for byte what TFRT's
//! `tfrt_translate -mlir-to-bef` writes (`docs/FORMATS.md` describes the layout).
//!
//! A first pass ([`entities`]) checks the module and numbers kernels, types, attributes and
//! functions; then the sections are written in TFRT's order: strings, attributes, kernels,
//! types, the function index and the functions, locations (when some op has one BEF can say),
//! and the optional attribute-types, attribute-names and register-types sections.

mod attributes;
mod compiled;
mod emitter;
mod entities;
mod error;
mod functions;
mod locations;
mod program;
mod section;
mod streams;
mod uses;

use std::collections::HashMap;

use crate::format::{AttributeType, SectionId, MAGIC, VERSION};
use emitter::Emitter;
pub use error::{Site, WriteError};
use rtx_mlir::ir::Module;

#[derive(Clone, Copy, Debug, Default)]
pub struct WriteOptions {
    /// Leave out the attribute-types, attribute-names and register-types sections, which only
    /// `bef_to_mlir` reads (this also leaves attribute names out of the strings and attribute
    /// value types out of the types).
    pub disable_optional_sections: bool,
}

/// Translates MLIR source text (TFRT's dialects in their generic or custom forms) to BEF.
pub fn mlir_text_to_bef(source: &str, options: &WriteOptions) -> Result<Vec<u8>, WriteError> {
    mlir_to_bef(&rtx_mlir::parse_text(source)?, options)
}

/// Translates `module` (one `builtin.module` holding `func.func`s of TFRT kernels) to BEF.
pub fn mlir_to_bef(module: &Module, options: &WriteOptions) -> Result<Vec<u8>, WriteError> {
    let optional = !options.disable_optional_sections;
    let program = program::Program::new(module)?;
    let entities = entities::collect(&program, optional)?;
    let mut file = Emitter::new();
    file.bytes(&MAGIC);
    file.byte(VERSION);

    let mut strings = Emitter::new();
    let mut string_offsets: HashMap<&[u8], usize> = HashMap::new();
    for string in &entities.strings {
        string_offsets.insert(string, strings.len());
        strings.bytes(string);
        strings.byte(0);
    }
    section::write(&mut file, SectionId::Strings, &strings);

    let mut attributes = attributes::AttributeWriter::new(&module.context);
    let mut attribute_offsets = Vec::with_capacity(entities.attributes.len());
    let mut attribute_types = Emitter::new();
    attribute_types.vbr(entities.attributes.len());
    let mut compilation_units = 0;
    for &(attr, kind) in &entities.attributes {
        let offset = if kind == AttributeType::SymbolRef {
            compilation_units += 1;
            compiled::write(&program, attr, compilation_units - 1, &mut attributes.out)?
        } else {
            attributes.emit(attr, kind)
        };
        attribute_offsets.push(offset);
        attribute_types.vbr(offset);
        attribute_types.vbr(kind.code().into());
    }
    // The weights of a model live here: moved into the file, not copied.
    section::write_moved(&mut file, SectionId::Attributes, std::mem::take(&mut attributes.out));

    let mut kernels = Emitter::new();
    kernels.vbr(entities.kernels.len());
    for kernel in &entities.kernels {
        kernels.vbr(string_offsets[kernel]);
    }
    section::write(&mut file, SectionId::Kernels, &kernels);

    let mut types = Emitter::new();
    types.vbr(entities.type_names.len());
    for name in &entities.type_names {
        types.vbr(string_offsets[name.as_bytes()]);
    }
    section::write(&mut file, SectionId::Types, &types);

    let mut locations = locations::LocationWriter::new();
    let per_function = || {
        let mut section = Emitter::new();
        section.vbr(entities.functions.len());
        section
    };
    let mut functions = functions::FunctionWriter {
        program: &program,
        entities: &entities,
        string_offsets: &string_offsets,
        attribute_offsets: &attribute_offsets,
        locations: &mut locations,
        body: Emitter::new(),
        attribute_names: optional.then(per_function),
        register_types: optional.then(per_function),
    };
    let mut index = Emitter::new();
    index.vbr(entities.functions.len());
    for function in &entities.functions {
        index.byte(function.kind as u8);
        index.vbr(functions.body.len());
        index.vbr(string_offsets[function.name]);
        for types in [&function.inputs, &function.results] {
            index.vbr(types.len());
            for &ty in types.iter() {
                index.vbr(entities.type_id(&program, ty) as usize);
            }
        }
        if let Some((block, owner)) = function.body {
            functions.function(block, owner)?;
        }
    }
    let (body, attribute_names, register_types) = (functions.body, functions.attribute_names, functions.register_types);
    section::write(&mut file, SectionId::FunctionIndex, &index);
    section::write(&mut file, SectionId::Functions, &body);

    if locations.concrete > 0 {
        section::write(&mut file, SectionId::LocationStrings, &locations.strings);
        section::write(&mut file, SectionId::Locations, &locations.locations);
    }
    if let (Some(names), Some(registers)) = (attribute_names, register_types) {
        section::write(&mut file, SectionId::AttributeTypes, &attribute_types);
        section::write(&mut file, SectionId::AttributeNames, &names);
        section::write(&mut file, SectionId::RegisterTypes, &registers);
    }
    Ok(file.into_bytes())
}
