//! The MLIR bytecode reader, versions 0–6 (upstream's `mlir/docs/BytecodeFormat.md` and
//! `mlir/lib/Bytecode/Reader/BytecodeReader.cpp`, as IREE 3.13's LLVM has them; docs/FORMATS.md).
//!
//! Reading goes in passes over a file that is treated as hostile: the section table, then the
//! string, dialect, resource and properties tables, then every attribute and type entry (decoded
//! into [`crate::ir`] data that refers to other entries by index, so decoding needs no
//! recursion), a check that those references form no cycle and nest at most
//! [`MAX_NESTING`] deep, then the IR. Every count is checked against the bytes left before anything
//! is allocated for it, so a corrupt file fails fast with the offset of the bad byte.
//!
//! Use-list orders are kept as stored ([`crate::ir::UseListOrder`]): for a value whose uses
//! the producer held in an order other than the default (uses sorted by descending
//! `(pre-order op index << 32) | operand number`), the full form lists, for each use in that
//! default order, its position in the producer's use list; the pair form lists only the moved
//! uses as `(position, default index)` pairs.

mod attr_type;
mod cursor;
mod dialects;
pub(crate) mod error;
mod ir;
mod lazy;
mod properties;
mod text_distinct;

use std::sync::Arc;

use cursor::Cursor;
use error::Result;
pub use error::{ReadError, ReadErrorKind};
pub use lazy::LazyModule;

use crate::ir::{
    Attribute, Blob, Dialect, DialectId, Module, OpName, ResourceEntry, ResourceGroup, ResourceRef, ResourceValue, Sym,
};

/// The newest bytecode version rtx reads (and upstream MLIR writes by default).
pub const MAX_VERSION: u64 = 6;
/// How deep regions, and attribute/type references, may nest before a file is refused.
pub const MAX_NESTING: usize = 1000;

const MAGIC: &[u8; 4] = b"ML\xEFR";

const SECTION_NAMES: [&str; 9] = [
    "string",
    "dialect",
    "attr/type",
    "attr/type offset",
    "IR",
    "resource",
    "resource offset",
    "dialect version",
    "properties",
];

/// Version gates (`bytecode::BytecodeVersion` upstream).
pub(crate) mod version {
    pub const DIALECT_VERSIONING: u64 = 1;
    pub const LAZY_LOADING: u64 = 2;
    pub const USE_LIST_ORDERING: u64 = 3;
    pub const ELIDE_UNKNOWN_BLOCK_ARG_LOCATION: u64 = 4;
    pub const NATIVE_PROPERTIES: u64 = 5;
    pub const NATIVE_PROPERTIES_ODS_SEGMENT_SIZE: u64 = 6;
}

/// One section's payload and where it starts in the file.
#[derive(Clone, Copy)]
pub(crate) struct Section<'a> {
    data: &'a [u8],
    offset: usize,
}

impl<'a> Section<'a> {
    fn cursor(&self) -> Cursor<'a> {
        Cursor::new(self.data, self.offset)
    }
}

/// Reads one section header and payload.
fn read_section<'a>(c: &mut Cursor<'a>) -> Result<(u8, Section<'a>)> {
    let id_offset = c.offset();
    let id_and_aligned = c.byte("section id")?;
    let id = id_and_aligned & 0x7f;
    let length = c.varint("section length")?;
    if id_and_aligned & 0x80 != 0 {
        c.align("section alignment")?;
    }
    if id as usize >= SECTION_NAMES.len() {
        return Err(ReadError::new(id_offset, ReadErrorKind::BadSectionId(id)));
    }
    let offset = c.offset();
    let data = c.bytes(length, "section data")?;
    Ok((id, Section { data, offset }))
}

/// What the passes share: the file, its version and its tables.
#[derive(Default)]
pub(crate) struct FileState<'a> {
    pub buffer: Arc<[u8]>,
    /// What `buffer` holds, borrowed (slices of it need no reference count).
    pub bytes: &'a [u8],
    pub version: u64,
    pub strings: Vec<Sym>,
    pub module: Module,
    /// Every dialect-group resource in file order (what a resource handle indexes).
    pub resource_handles: Vec<ResourceRef>,
    /// The properties entries as `(file offset, length)`.
    pub properties: Vec<(usize, usize)>,
    /// Attributes the reader makes up (decoded native properties), deduplicated among themselves
    /// and, for strings, against the file's own string attributes, without hashing the whole table.
    pub synthesized: foldhash::HashMap<Attribute, crate::ir::AttrId>,
    pub file_strings: Option<foldhash::HashMap<Sym, crate::ir::AttrId>>,
    /// The sizes of the file's attribute and type tables, the only ones its indices can name
    /// (made-up attributes follow them).
    pub num_file_attrs: usize,
    pub num_file_types: usize,
}

impl<'a> FileState<'a> {
    /// The same state over `bytes` (which must be what `buffer` holds, or empty while nothing is
    /// being read).
    pub(crate) fn rebind(self, bytes: &[u8]) -> FileState<'_> {
        FileState {
            buffer: self.buffer,
            bytes,
            version: self.version,
            strings: self.strings,
            module: self.module,
            resource_handles: self.resource_handles,
            properties: self.properties,
            synthesized: self.synthesized,
            file_strings: self.file_strings,
            num_file_attrs: self.num_file_attrs,
            num_file_types: self.num_file_types,
        }
    }

    /// Properties entry `index`.
    pub(crate) fn property(&self, index: usize) -> Section<'a> {
        let (offset, len) = self.properties[index];
        Section { data: &self.bytes[offset..offset + len], offset }
    }

    /// An attribute equal to `attr`: the file's own (for untyped strings) or a made-up one.
    pub(crate) fn intern_attr(&mut self, attr: Attribute) -> crate::ir::AttrId {
        if let Attribute::String { value, ty: None } = attr {
            let attrs = self.module.context.attrs();
            let strings = self.file_strings.get_or_insert_with(|| {
                attrs
                    .iter()
                    .enumerate()
                    .filter_map(|(i, a)| match a {
                        Attribute::String { value, ty: None } => Some((*value, crate::ir::AttrId(i as u32))),
                        _ => None,
                    })
                    .collect()
            });
            if let Some(&id) = strings.get(&value) {
                return id;
            }
        }
        if let Some(&id) = self.synthesized.get(&attr) {
            return id;
        }
        let id = self.module.context.push_attr(attr.clone());
        self.synthesized.insert(attr, id);
        id
    }

    fn string(&self, c: &mut Cursor<'_>, what: &'static str) -> Result<Sym> {
        let index = c.index(what, self.strings.len())?;
        Ok(self.strings[index])
    }

    /// A string index with a flag in its low bit (dialect names with versions, registered op
    /// names).
    fn string_with_flag(&self, c: &mut Cursor<'_>, what: &'static str) -> Result<(Sym, bool)> {
        let offset = c.offset();
        let (index, flag) = c.varint_with_flag(what)?;
        if index >= self.strings.len() as u64 {
            return Err(ReadError::new(
                offset,
                ReadErrorKind::IndexOutOfRange { what: "string", index, limit: self.strings.len() as u64 },
            ));
        }
        Ok((self.strings[index as usize], flag))
    }

    /// A blob of the file as shared bytes.
    fn blob(&self, slice: &[u8]) -> Blob {
        let start = slice.as_ptr() as usize - self.buffer.as_ptr() as usize;
        Blob::new(self.buffer.clone(), start, slice.len())
    }
}

/// Reads a bytecode file (any version 0–6) into a [`Module`].
pub fn read_bytecode(bytes: &[u8]) -> std::result::Result<Module, ReadError> {
    read_bytecode_shared(Arc::from(bytes))
}

/// Like [`read_bytecode`], sharing `buffer` (dense data and resources point into it).
pub fn read_bytecode_shared(buffer: Arc<[u8]>) -> std::result::Result<Module, ReadError> {
    let (mut state, ir) = read_tables(buffer.clone(), &buffer)?;
    ir::read_ir(&mut state, ir, false)?;
    Ok(state.module)
}

/// Like [`read_bytecode_shared`], leaving the bodies of ops with isolated regions stored in their
/// own sections (bytecode v2+: `func.func`, `builtin.module`, ...) unread until asked for. Tables
/// and everything outside those sections are read and checked now; an error inside a section
/// shows when it is materialized.
pub fn read_bytecode_lazy(buffer: Arc<[u8]>) -> std::result::Result<LazyModule, ReadError> {
    let (mut state, ir) = read_tables(buffer.clone(), &buffer)?;
    let pending = ir::read_ir(&mut state, ir, true)?;
    Ok(LazyModule::new(state.rebind(&[]), pending))
}

/// Reads the header and every table; returns the state and the IR section, not read yet.
fn read_tables(buffer: Arc<[u8]>, bytes: &[u8]) -> Result<(FileState<'_>, Section<'_>)> {
    let mut c = Cursor::new(bytes, 0);
    if c.bytes(4, "magic number").ok() != Some(&MAGIC[..]) {
        return Err(ReadError::new(0, ReadErrorKind::BadMagic));
    }
    let version_offset = c.offset();
    let version = c.varint("version")?;
    if version > MAX_VERSION {
        return Err(ReadError::new(version_offset, ReadErrorKind::UnsupportedVersion(version)));
    }
    let producer = String::from_utf8_lossy(c.cstr("producer")?).into_owned();

    let mut sections: [Option<Section<'_>>; 9] = [None; 9];
    while !c.is_empty() {
        let id_offset = c.offset();
        let (id, section) = read_section(&mut c)?;
        if id == 7 {
            return Err(ReadError::new(id_offset, ReadErrorKind::BadSectionId(id)));
        }
        if sections[id as usize].replace(section).is_some() {
            return Err(ReadError::new(id_offset, ReadErrorKind::DuplicateSection(SECTION_NAMES[id as usize])));
        }
    }
    let end = c.offset();
    for id in [0usize, 1, 2, 3, 4] {
        if sections[id].is_none() {
            return Err(ReadError::new(end, ReadErrorKind::MissingSection(SECTION_NAMES[id])));
        }
    }
    if version >= version::NATIVE_PROPERTIES && sections[8].is_none() {
        return Err(ReadError::new(end, ReadErrorKind::MissingSection(SECTION_NAMES[8])));
    }
    if sections[5].is_some() != sections[6].is_some() {
        let missing = if sections[5].is_none() { 5 } else { 6 };
        return Err(ReadError::new(end, ReadErrorKind::MissingSection(SECTION_NAMES[missing])));
    }
    let section = |id: usize| sections[id].expect("checked above");

    let mut state = FileState {
        buffer,
        bytes,
        version,
        module: Module { bytecode_version: Some(version), producer: Some(producer), ..Module::default() },
        ..FileState::default()
    };
    read_strings(&mut state, section(0))?;
    read_dialects(&mut state, section(1))?;
    if let (Some(resources), Some(offsets)) = (sections[5], sections[6]) {
        read_resources(&mut state, resources, offsets)?;
    }
    if let Some(properties) = sections[8] {
        read_properties_table(&mut state, properties)?;
    }
    attr_type::read_attrs_and_types(&mut state, section(2), section(3))?;
    state.num_file_attrs = state.module.context.attrs().len();
    state.num_file_types = state.module.context.types().len();
    Ok((state, section(4)))
}

fn read_strings(state: &mut FileState<'_>, section: Section<'_>) -> Result<()> {
    let mut c = section.cursor();
    let count = c.count("string count", 1)?;
    // Sizes are stored in reverse order; string data ends at the end of the section.
    let mut spans = vec![(0usize, 0usize); count];
    let mut end = section.data.len();
    for span in spans.iter_mut().rev() {
        let offset = c.offset();
        let size = c.varint("string size")?;
        if size == 0 || size > end as u64 {
            return Err(ReadError::new(offset, ReadErrorKind::Invalid(format!("bad string size {size}"))));
        }
        let start = end - size as usize;
        *span = (start, size as usize - 1);
        end = start;
    }
    if section.data.len() - c.remaining() != end {
        return Err(c.invalid("string data does not start right after the string sizes"));
    }
    let context = &mut state.module.context;
    state.strings = spans.iter().map(|&(start, len)| context.push_string(&section.data[start..start + len])).collect();
    Ok(())
}

fn read_dialects(state: &mut FileState<'_>, section: Section<'_>) -> Result<()> {
    let mut c = section.cursor();
    let count = c.count("dialect count", 1)?;
    for _ in 0..count {
        let (name, has_version) = if state.version >= version::DIALECT_VERSIONING {
            state.string_with_flag(&mut c, "dialect name")?
        } else {
            (state.string(&mut c, "dialect name")?, false)
        };
        let version = if has_version {
            let offset = c.offset();
            let (id, nested) = read_section(&mut c)?;
            if id != 7 {
                return Err(ReadError::new(
                    offset,
                    ReadErrorKind::Invalid(format!("expected a dialect version section, found section {id}")),
                ));
            }
            Some(Box::from(nested.data))
        } else {
            None
        };
        state.module.context.push_dialect(Dialect { name, version });
    }
    if state.version >= version::ELIDE_UNKNOWN_BLOCK_ARG_LOCATION {
        c.varint("total op name count")?;
    }
    let num_dialects = state.module.context.dialects().len();
    while !c.is_empty() {
        let dialect = DialectId(c.index("dialect", num_dialects)? as u32);
        let names = c.count("op name count", 1)?;
        for _ in 0..names {
            let (short, registered) = if state.version >= version::NATIVE_PROPERTIES {
                state.string_with_flag(&mut c, "op name")?
            } else {
                (state.string(&mut c, "op name")?, false)
            };
            let context = &mut state.module.context;
            let full = {
                let dialect_name = context.str_bytes(context.dialect(dialect).name).to_vec();
                let short_bytes = context.str_bytes(short);
                if short_bytes.is_empty() {
                    context.dialect(dialect).name
                } else {
                    let mut full = dialect_name;
                    full.push(b'.');
                    full.extend_from_slice(short_bytes);
                    context.push_string(&full)
                }
            };
            context.push_op_name(OpName { dialect, short, full, registered });
        }
    }
    Ok(())
}

fn read_resources(state: &mut FileState<'_>, data: Section<'_>, offsets: Section<'_>) -> Result<()> {
    let mut c = offsets.cursor();
    let mut data_cursor = data.cursor();
    let external_groups = c.count("external resource group count", 2)?;
    let mut read_group = |state: &mut FileState<'_>, c: &mut Cursor<'_>| -> Result<Vec<ResourceEntry>> {
        let count = c.count("resource count", 3)?;
        let mut entries = Vec::with_capacity(count);
        for _ in 0..count {
            let key = state.string(c, "resource key")?;
            let size = c.varint("resource size")?;
            let kind_offset = c.offset();
            let kind = c.byte("resource kind")?;
            let entry_offset = data_cursor.offset();
            let bytes = data_cursor.bytes(size, "resource entry")?;
            let mut e = Cursor::new(bytes, entry_offset);
            let value = if size == 0 {
                ResourceValue::Elided
            } else {
                match kind {
                    0 => {
                        let alignment = e.alignment("resource blob alignment")?;
                        let len = e.varint("resource blob size")?;
                        // Padding to the alignment sits between the size and the data.
                        e.align_to(alignment)?;
                        let blob = e.bytes(len, "resource blob")?;
                        e.expect_end("resource blob")?;
                        ResourceValue::Blob { alignment, data: state.blob(blob) }
                    }
                    1 => {
                        let value = e.byte("resource bool")?;
                        e.expect_end("resource bool")?;
                        ResourceValue::Bool(value != 0)
                    }
                    2 => {
                        let value = state.string(&mut e, "resource string")?;
                        e.expect_end("resource string")?;
                        ResourceValue::String(value)
                    }
                    _ => {
                        return Err(ReadError::new(
                            kind_offset,
                            ReadErrorKind::Invalid(format!("bad resource kind {kind}")),
                        ))
                    }
                }
            };
            entries.push(ResourceEntry { key, value });
        }
        Ok(entries)
    };
    for _ in 0..external_groups {
        let owner = state.string(&mut c, "external resource group key")?;
        let entries = read_group(state, &mut c)?;
        state.module.resources.external.push(ResourceGroup { owner, entries });
    }
    let num_dialects = state.module.context.dialects().len();
    while !c.is_empty() {
        let owner = DialectId(c.index("dialect", num_dialects)? as u32);
        let entries = read_group(state, &mut c)?;
        state.resource_handles.extend(entries.iter().map(|e| ResourceRef { dialect: owner, key: e.key }));
        state.module.resources.dialect.push(ResourceGroup { owner, entries });
    }
    Ok(())
}

fn read_properties_table<'a>(state: &mut FileState<'a>, section: Section<'a>) -> Result<()> {
    let mut c = section.cursor();
    if c.is_empty() {
        return Ok(());
    }
    let count = c.count("properties count", 1)?;
    let mut entries = Vec::with_capacity(count);
    for _ in 0..count {
        let size = c.varint("properties size")?;
        let offset = c.offset();
        c.bytes(size, "properties entry")?;
        entries.push((offset, size as usize));
    }
    c.expect_end("properties section")?;
    state.properties = entries;
    Ok(())
}
