//! Opening a BEF file: [`BefProgram`], a verified, zero-copy view of its sections, and
//! [`BefFile`], that program with its kernel names bound to a [`KernelRegistry`].
//!
//! Verifying reads the section framing, the string-indexed tables (kernel names, type names, the
//! function index) and every function body, and checks each index the executor will follow:
//! registers, kernels, attributes, functions, the dataflow graph itself (each register defined
//! once, ready counts that match the user lists, no cycles) and, when present, the attribute
//! names. Kernel names are resolved once per registry, native functions by name. Afterwards the
//! executor reads the kernel records in place. Any defect is a [`BefError`] naming the byte offset; nothing panics.

mod attribute;
mod attribute_names;
mod cursor;
mod error;
mod function;
mod kernel_record;
mod location;
mod storage;

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

pub use attribute::{Aggregate, Attribute, AttributeError, DenseAttribute, Scalar, ScalarArray};
pub use error::BefError;
pub use kernel_record::{KernelRecord, Words};
pub use location::BefLocation;

use crate::bef::format::{FunctionKind, SectionId, MAGIC, VERSION};
use crate::kernel::{Kernel, KernelRegistry, NativeFn};
use attribute_names::AttributeNames;
use cursor::{c_string, Cursor};
pub(crate) use function::FunctionBody;
use function::Limits;
use storage::Storage;

/// A verified BEF file whose kernel names are not bound to kernels yet: the part of opening a
/// file that does not depend on a registry, done once and shared (`Arc`) by every
/// [`BefFile`] resolved from it against a registry (one per runtime context, say).
pub struct BefProgram {
    storage: Storage,
    sections: Sections,
    kernel_names: Box<[String]>,
    types: Box<[String]>,
    functions: Box<[FunctionInfo]>,
    by_name: HashMap<String, usize>,
    attribute_names: Option<AttributeNames>,
}

/// A BEF program with its kernel names resolved against a registry: what the executor runs.
/// Immutable and shared (`Arc`): functions keep their file alive. Dereferences to its
/// [`BefProgram`] for everything that does not depend on the registry.
pub struct BefFile {
    program: Arc<BefProgram>,
    kernels: Box<[Kernel]>,
    /// Per function of the index: the native function a `Native` entry names.
    natives: Box<[Option<NativeFn>]>,
}

/// Byte ranges of the sections the executor reads (empty when absent).
#[derive(Default)]
struct Sections {
    strings: Range<usize>,
    attributes: Range<usize>,
    kernels: Range<usize>,
    types: Range<usize>,
    function_index: Range<usize>,
    functions: Range<usize>,
    location_strings: Range<usize>,
    locations: Range<usize>,
    /// `None` when the file has no attribute-names section.
    attribute_names: Option<Range<usize>>,
}

/// One entry of the function index.
pub struct FunctionInfo {
    /// Empty for region bodies.
    pub name: String,
    pub kind: FunctionKind,
    /// Type indices (see [`BefProgram::type_name`]).
    pub arguments: Box<[u32]>,
    pub results: Box<[u32]>,
    pub(crate) body: Option<FunctionBody>,
}

impl BefProgram {
    /// Maps and verifies the file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Arc<BefProgram>, BefError> {
        let path = path.as_ref();
        let io = |e: std::io::Error| BefError::Io { path: path.display().to_string(), message: e.to_string() };
        let file = std::fs::File::open(path).map_err(io)?;
        // SAFETY: the mapping is read-only and private; rtx does not defend against another
        // process truncating a module file while it is in use (no loader does).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        BefProgram::from_storage(Storage::Mapped(map))
    }

    /// Verifies a BEF file held in memory (copied into aligned memory).
    pub fn from_bytes(bytes: &[u8]) -> Result<Arc<BefProgram>, BefError> {
        BefProgram::from_storage(Storage::copy(bytes))
    }

    fn from_storage(storage: Storage) -> Result<Arc<BefProgram>, BefError> {
        if cfg!(target_endian = "big") {
            return Err(BefError::BigEndianHost);
        }
        let bytes = storage.bytes();
        let sections = read_sections(bytes)?;
        let section = |range: &Range<usize>| &bytes[range.clone()];
        let strings = section(&sections.strings);
        let string = |offset: u32, base: usize, what: &str| {
            c_string(strings, sections.strings.start, offset as usize, what).map(str::to_owned).map_err(|e| match e {
                BefError::Malformed { what, .. } => BefError::malformed(base, what),
                other => other,
            })
        };
        let kernel_names = read_name_table(section(&sections.kernels), sections.kernels.start, "kernel", &string)?;
        let types = read_name_table(section(&sections.types), sections.types.start, "type", &string)?;
        let (mut functions, offsets) =
            read_function_index(section(&sections.function_index), &sections, types.len(), &string)?;
        let limits = |info: &FunctionInfo| Limits {
            kernel_codes: kernel_names.len(),
            functions: functions.len(),
            attributes_len: sections.attributes.len(),
            arguments: info.arguments.len(),
            results: info.results.len(),
            sync: info.kind == FunctionKind::Sync,
        };
        let mut bodies = Vec::with_capacity(functions.len());
        for (info, &offset) in functions.iter().zip(&offsets) {
            bodies.push(match info.kind {
                FunctionKind::Native => None,
                FunctionKind::Async | FunctionKind::Sync => Some(FunctionBody::read(
                    section(&sections.functions),
                    sections.functions.start,
                    offset as usize,
                    &limits(info),
                )?),
            });
        }
        for (info, body) in functions.iter_mut().zip(bodies) {
            info.body = body;
        }
        let attribute_names = match &sections.attribute_names {
            None => None,
            Some(range) => Some(AttributeNames::read(
                section(range),
                range.start,
                &functions,
                bytes,
                &sections.functions,
                &string,
            )?),
        };
        Ok(Arc::new(BefProgram {
            sections,
            kernel_names: kernel_names.into_boxed_slice(),
            types: types.into_boxed_slice(),
            by_name: functions
                .iter()
                .enumerate()
                .filter(|(_, f)| !f.name.is_empty())
                .map(|(i, f)| (f.name.clone(), i))
                .collect(),
            functions: functions.into_boxed_slice(),
            attribute_names,
            storage,
        }))
    }

    /// Binds the kernel names to `registry`'s kernels and native functions. The registry may
    /// be dropped or changed afterwards without affecting the result. An unknown kernel is
    /// named with the location of its first use.
    pub fn resolve(self: &Arc<BefProgram>, registry: &KernelRegistry) -> Result<Arc<BefFile>, BefError> {
        let natives = self
            .functions
            .iter()
            .map(|info| match info.kind {
                FunctionKind::Native => registry
                    .native_function(&info.name)
                    .map(|native| Some(Arc::clone(native)))
                    .ok_or_else(|| BefError::UnknownNativeFunction(info.name.clone())),
                FunctionKind::Async | FunctionKind::Sync => Ok(None),
            })
            .collect::<Result<Box<[_]>, _>>()?;
        let kernels = self
            .kernel_names
            .iter()
            .enumerate()
            .map(|(code, name)| {
                registry.kernel(name).cloned().ok_or_else(|| {
                    let location = self
                        .first_use_of(code as u32)
                        .map_or(BefLocation::Unknown, |offset| self.location(offset))
                        .to_location();
                    BefError::UnknownKernel { name: name.clone(), location }
                })
            })
            .collect::<Result<Box<[_]>, _>>()?;
        Ok(Arc::new(BefFile { program: Arc::clone(self), kernels, natives }))
    }

    /// The whole file.
    pub fn bytes(&self) -> &[u8] {
        self.storage.bytes()
    }

    /// The attributes section (attribute offsets in kernel records are relative to it).
    pub fn attributes_section(&self) -> &[u8] {
        &self.bytes()[self.sections.attributes.clone()]
    }

    /// The location at `offset` in the locations section.
    pub fn location(&self, offset: u32) -> BefLocation {
        let bytes = self.bytes();
        location::decode(
            &bytes[self.sections.locations.clone()],
            &bytes[self.sections.location_strings.clone()],
            offset,
        )
    }

    /// The name of the name location at `offset`, if it is one (TFRT's debug info).
    pub fn debug_name(&self, offset: u32) -> Option<String> {
        let bytes = self.bytes();
        location::debug_name(
            &bytes[self.sections.locations.clone()],
            &bytes[self.sections.location_strings.clone()],
            offset,
        )
    }

    /// The name of kernel `code` (`"?"` for a code outside the table, which verified records
    /// never hold).
    pub fn kernel_name(&self, code: u32) -> &str {
        self.kernel_names.get(code as usize).map_or("?", String::as_str)
    }

    /// The position among `record`'s attributes of the one named `name`: `Ok(None)` when it
    /// has none of that name, `Err` when the file has no attribute-names section.
    pub fn attribute_position(&self, record: KernelRecord<'_>, name: &str) -> Result<Option<usize>, AttributeError> {
        let names = self.attribute_names.as_ref().ok_or(AttributeError::NoAttributeNames)?;
        Ok(names.position(record.offset_in(self.bytes()), name))
    }

    /// The name of type `index` (`i32`, `!tfrt.chain`, ...).
    pub fn type_name(&self, index: u32) -> &str {
        self.types.get(index as usize).map_or("?", String::as_str)
    }

    pub fn num_functions(&self) -> usize {
        self.functions.len()
    }

    pub fn function_info(&self, index: usize) -> Option<&FunctionInfo> {
        self.functions.get(index)
    }

    /// The index of the function named `name`.
    pub fn function_index(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// The bytes of a body's kernel list (to the end of the functions section).
    #[inline]
    pub(crate) fn kernel_list(&self, body: &FunctionBody) -> &[u8] {
        &self.bytes()[body.list_start..self.sections.functions.end]
    }

    /// The location of the first kernel record with `code`, for the unknown-kernel error.
    fn first_use_of(&self, code: u32) -> Option<u32> {
        self.functions.iter().filter_map(|f| f.body.as_ref()).find_map(|body| {
            let list = self.kernel_list(body);
            (1..body.kernels.len()).map(|k| body.record(list, k)).find(|r| r.code() == code).map(|r| r.location())
        })
    }
}

impl BefFile {
    /// Maps and opens the file at `path`, resolving its kernels in `registry`.
    pub fn open(path: impl AsRef<Path>, registry: &KernelRegistry) -> Result<Arc<BefFile>, BefError> {
        BefProgram::open(path)?.resolve(registry)
    }

    /// Opens a BEF file held in memory (copied into aligned memory).
    pub fn from_bytes(bytes: &[u8], registry: &KernelRegistry) -> Result<Arc<BefFile>, BefError> {
        BefProgram::from_bytes(bytes)?.resolve(registry)
    }

    /// The verified program this file binds.
    pub fn program(&self) -> &Arc<BefProgram> {
        &self.program
    }

    #[inline]
    pub(crate) fn kernel(&self, code: u32) -> &Kernel {
        &self.kernels[code as usize]
    }

    /// The host function a `Native` entry of the function index names.
    pub(crate) fn native_function(&self, index: usize) -> Option<&NativeFn> {
        self.natives.get(index).and_then(Option::as_ref)
    }
}

impl std::ops::Deref for BefFile {
    type Target = BefProgram;
    fn deref(&self) -> &BefProgram {
        &self.program
    }
}

impl std::fmt::Debug for BefProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BefProgram")
            .field("bytes", &self.bytes().len())
            .field("kernels", &self.kernel_names.len())
            .field("functions", &self.functions.len())
            .finish()
    }
}

impl std::fmt::Debug for BefFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BefFile").field("program", &self.program).finish()
    }
}

/// Reads the magic, the version and the section framing.
fn read_sections(bytes: &[u8]) -> Result<Sections, BefError> {
    if !bytes.starts_with(&MAGIC) {
        return Err(BefError::NotBef);
    }
    let version = *bytes.get(2).ok_or_else(|| BefError::malformed(2, "the file ends before the version byte"))?;
    if version != VERSION {
        return Err(BefError::UnknownVersion(version));
    }
    let mut cursor = Cursor::at(bytes, 0, 3);
    let mut sections = Sections::default();
    let mut seen = [false; 11];
    while !cursor.is_empty() {
        let header = cursor.offset();
        let id = cursor.u8("section id")?;
        let word = cursor.vbr("section length")?;
        let len = usize::try_from(word >> 1).map_err(|_| cursor.error("section length does not fit in memory"))?;
        if word & 1 != 0 {
            let align = cursor.u8("section alignment")? as usize;
            if align == 0 || !align.is_power_of_two() {
                return Err(cursor.error(format!("section alignment {align} is not a power of two")));
            }
            let padding = cursor.offset().next_multiple_of(align) - cursor.offset();
            cursor.skip(padding, "section alignment padding")?;
        }
        let start = cursor.offset();
        cursor.skip(len, &format!("section {id} (header at byte {header})"))?;
        let Some(known) = SectionId::from_u8(id) else { continue };
        if std::mem::replace(&mut seen[id as usize], true) {
            return Err(BefError::malformed(header, format!("section {known:?} appears twice")));
        }
        // Kernel records are padded relative to the section start, which must be aligned for
        // them (an empty section needs no alignment). Attributes are read byte-wise; the writer
        // aligns their section only as far as its contents need.
        if known == SectionId::Functions && len > 0 && start % known.alignment() != 0 {
            return Err(BefError::malformed(
                start,
                format!("section {known:?} starts at a byte not aligned to {}", known.alignment()),
            ));
        }
        let range = start..start + len;
        match known {
            SectionId::Strings => sections.strings = range,
            SectionId::Attributes => sections.attributes = range,
            SectionId::Kernels => sections.kernels = range,
            SectionId::Types => sections.types = range,
            SectionId::FunctionIndex => sections.function_index = range,
            SectionId::Functions => sections.functions = range,
            SectionId::LocationStrings => sections.location_strings = range,
            SectionId::Locations => sections.locations = range,
            // Attribute names serve kernels that read attributes by name (C kernels).
            SectionId::AttributeNames => sections.attribute_names = Some(range),
            // For disassembly only.
            SectionId::AttributeTypes | SectionId::RegisterTypes => {}
        }
    }
    for (id, present) in [
        (SectionId::Strings, seen[0]),
        (SectionId::Kernels, seen[2]),
        (SectionId::Types, seen[3]),
        (SectionId::FunctionIndex, seen[4]),
        (SectionId::Functions, seen[5]),
    ] {
        if !present {
            return Err(BefError::malformed(bytes.len(), format!("the file has no {id:?} section")));
        }
    }
    Ok(sections)
}

/// A count, then one string offset per entry (the kernels and types sections).
fn read_name_table(
    section: &[u8],
    base: usize,
    what: &str,
    string: &dyn Fn(u32, usize, &str) -> Result<String, BefError>,
) -> Result<Vec<String>, BefError> {
    let mut cursor = Cursor::new(section, base);
    let count = cursor.count(&format!("{what} count"))?;
    (0..count)
        .map(|_| {
            let at = cursor.offset();
            let offset = cursor.vbr_u32(&format!("{what} name offset"))?;
            string(offset, at, &format!("{what} name"))
        })
        .collect()
}

/// The function index: kind, body offset, name, argument and result types per function; the
/// functions (bodies still to read) and their body offsets.
fn read_function_index(
    section: &[u8],
    sections: &Sections,
    num_types: usize,
    string: &dyn Fn(u32, usize, &str) -> Result<String, BefError>,
) -> Result<(Vec<FunctionInfo>, Vec<u32>), BefError> {
    let mut cursor = Cursor::new(section, sections.function_index.start);
    let count = cursor.count("function count")?;
    let mut functions = Vec::with_capacity(count);
    let mut offsets = Vec::with_capacity(count);
    for _ in 0..count {
        let at = cursor.offset();
        let kind = cursor.u8("function kind")?;
        let kind = FunctionKind::from_u8(kind)
            .ok_or_else(|| BefError::malformed(at, format!("unknown function kind {kind}")))?;
        offsets.push(cursor.vbr_u32("function offset")?);
        let name_at = cursor.offset();
        let name = string(cursor.vbr_u32("function name")?, name_at, "function name")?;
        let mut types = |what: &str| -> Result<Box<[u32]>, BefError> {
            let n = cursor.count(&format!("{what} count"))?;
            (0..n)
                .map(|_| {
                    let at = cursor.offset();
                    let t = cursor.vbr_u32(what)?;
                    if t as usize >= num_types {
                        return Err(BefError::malformed(at, format!("{what} type {t} of {num_types}")));
                    }
                    Ok(t)
                })
                .collect()
        };
        let arguments = types("argument")?;
        let results = types("result")?;
        functions.push(FunctionInfo { name, kind, arguments, results, body: None });
    }
    Ok((functions, offsets))
}

#[cfg(test)]
mod tests;
