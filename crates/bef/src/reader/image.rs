//! [`BefImage`]: a BEF file read and verified on its own, bound to no kernels. The disassembler
//! reads it as it is; [`super::BefFile`] binds it to a kernel registry for the executor.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::OnceLock;

use super::cursor::{c_string, Cursor};
use super::error::BefError;
use super::function::{FunctionBody, Limits};
use super::location::{self, BefLocation, LocationEntry};
use super::storage::Storage;
use crate::format::{FunctionKind, SectionId, MAGIC, VERSION};
use rtx_kernel::attribute::AttributeError;
use rtx_kernel::record::KernelRecord;

/// A verified BEF file: its sections, string-indexed tables (kernel names, type names, the
/// function index) and function bodies, every index in them checked. Kernel names are names
/// only here; nothing says which kernels exist.
pub struct BefImage {
    storage: Storage,
    sections: Sections,
    kernel_names: Box<[String]>,
    types: Box<[String]>,
    pub(super) functions: Box<[FunctionInfo]>,
    by_name: HashMap<String, usize>,
    /// Attribute names by kernel record (byte offset), read from the optional section on first
    /// use: only kernels that ask for attributes by name need them.
    attribute_names: OnceLock<Result<AttributeNames, AttributeError>>,
}

/// Each kernel record's attribute names, by the record's byte offset in the file.
type AttributeNames = HashMap<usize, Box<[String]>>;

/// Byte ranges of the sections (empty when absent).
#[derive(Default)]
pub(super) struct Sections {
    pub(super) strings: Range<usize>,
    pub(super) attributes: Range<usize>,
    kernels: Range<usize>,
    types: Range<usize>,
    function_index: Range<usize>,
    functions: Range<usize>,
    location_strings: Range<usize>,
    locations: Range<usize>,
    pub(super) attribute_types: Range<usize>,
    pub(super) attribute_names: Range<usize>,
    pub(super) register_types: Range<usize>,
}

/// One entry of the function index.
pub struct FunctionInfo {
    /// Empty for region bodies.
    pub name: String,
    pub kind: FunctionKind,
    /// Type indices (see [`BefImage::type_name`]).
    pub arguments: Box<[u32]>,
    pub results: Box<[u32]>,
    pub(crate) body: Option<FunctionBody>,
}

impl BefImage {
    /// Maps and verifies the file at `path`.
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<BefImage, BefError> {
        let path = path.as_ref();
        let io = |e: std::io::Error| BefError::Io { path: path.display().to_string(), message: e.to_string() };
        let file = std::fs::File::open(path).map_err(io)?;
        // SAFETY: the mapping is read-only and private; rtx does not defend against another
        // process truncating a module file while it is in use (no loader does).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        BefImage::read(Storage::Mapped(map))
    }

    /// Reads and verifies a BEF file held in memory (copied into aligned memory).
    pub fn from_bytes(bytes: &[u8]) -> Result<BefImage, BefError> {
        BefImage::read(Storage::copy(bytes))
    }

    /// Reads and verifies a BEF file handed over in `bytes`, kept in place where they are aligned
    /// (a loader's own output: no second copy of the weights at load).
    pub fn from_vec(bytes: Vec<u8>) -> Result<BefImage, BefError> {
        BefImage::read(Storage::take(bytes))
    }

    pub(super) fn read(storage: Storage) -> Result<BefImage, BefError> {
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
        Ok(BefImage {
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
            storage,
            attribute_names: OnceLock::new(),
        })
    }

    /// The whole file.
    pub fn bytes(&self) -> &[u8] {
        self.storage.bytes()
    }

    pub(super) fn section(&self, range: &Range<usize>) -> &[u8] {
        &self.bytes()[range.clone()]
    }

    pub(super) fn sections(&self) -> &Sections {
        &self.sections
    }

    /// The attributes section (attribute offsets in kernel records are relative to it).
    pub fn attributes_section(&self) -> &[u8] {
        self.section(&self.sections.attributes)
    }

    /// The location at `offset` in the locations section, for diagnostics (a malformed one is
    /// unknown: a bad location must not hide the error being reported).
    pub fn location(&self, offset: u32) -> BefLocation {
        self.location_entry(offset).ok().flatten().map_or(BefLocation::Unknown, |entry| entry.to_bef_location())
    }

    /// The location at `offset`, decoded in full: `None` for an offset past the section (the
    /// writer's mark for a location BEF cannot say), an error for a malformed entry.
    pub fn location_entry(&self, offset: u32) -> Result<Option<LocationEntry>, BefError> {
        location::read(
            self.section(&self.sections.locations),
            self.sections.locations.start,
            self.section(&self.sections.location_strings),
            offset,
        )
    }

    /// The name of the name location at `offset`, if it is one (TFRT's debug info).
    pub fn debug_name(&self, offset: u32) -> Option<String> {
        self.location_entry(offset).ok().flatten().and_then(|entry| entry.debug_name())
    }

    /// The name of kernel `code` (`"?"` for a code outside the table, which verified records
    /// never hold).
    pub fn kernel_name(&self, code: u32) -> &str {
        self.kernel_names.get(code as usize).map_or("?", String::as_str)
    }

    pub(super) fn kernel_names(&self) -> &[String] {
        &self.kernel_names
    }

    /// The name of type `index` (`i32`, `!tfrt.chain`, ...).
    pub fn type_name(&self, index: u32) -> &str {
        self.types.get(index as usize).map_or("?", String::as_str)
    }

    pub fn num_types(&self) -> usize {
        self.types.len()
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

    /// The kernel records of a body, the pseudo kernel first.
    pub(crate) fn records<'a>(&'a self, body: &'a FunctionBody) -> impl Iterator<Item = KernelRecord<'a>> + 'a {
        let list = self.kernel_list(body);
        (0..body.kernels.len()).map(move |k| body.record(list, k))
    }

    /// The string at `offset` of the strings section.
    /// The position among `record`'s attributes of the one named `name`: `Ok(None)` when it has
    /// none of that name, an error when the file has no (or a malformed) attribute-names section.
    pub fn attribute_position(&self, record: KernelRecord<'_>, name: &str) -> Result<Option<usize>, AttributeError> {
        let names =
            self.attribute_names.get_or_init(|| self.attribute_names_by_record()).as_ref().map_err(Clone::clone)?;
        let offset = record.offset_in(self.bytes());
        Ok(names.get(&offset).and_then(|names| names.iter().position(|n| n == name)))
    }

    /// The attribute-names section (decoded by [`BefImage::optional_sections`]) keyed by the
    /// byte offset of each kernel record with attributes.
    fn attribute_names_by_record(&self) -> Result<AttributeNames, AttributeError> {
        let sections =
            self.optional_sections().map_err(|e| AttributeError::Malformed { offset: 0, what: e.to_string() })?;
        let per_function = sections.attribute_names.ok_or(AttributeError::NoAttributeNames)?;
        let mut by_record = HashMap::new();
        for (info, kernels) in self.functions.iter().zip(per_function) {
            let Some(body) = &info.body else { continue };
            for (record, names) in self.records(body).zip(kernels) {
                if !names.is_empty() {
                    by_record.insert(record.offset_in(self.bytes()), names.into_boxed_slice());
                }
            }
        }
        Ok(by_record)
    }

    pub(crate) fn string(&self, offset: u32, what: &str) -> Result<&str, BefError> {
        c_string(self.section(&self.sections.strings), self.sections.strings.start, offset as usize, what)
    }

    /// The location of the first kernel record with `code`, for the unknown-kernel error.
    pub(super) fn first_use_of(&self, code: u32) -> Option<u32> {
        self.functions
            .iter()
            .filter_map(|f| f.body.as_ref())
            .find_map(|body| self.records(body).skip(1).find(|r| r.code() == code).map(|r| r.location()))
    }
}

impl std::fmt::Debug for BefImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BefImage")
            .field("bytes", &self.bytes().len())
            .field("kernels", &self.kernel_names.len())
            .field("functions", &self.functions.len())
            .finish()
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
        if known == SectionId::Functions && len > 0 && !start.is_multiple_of(known.alignment()) {
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
            SectionId::AttributeTypes => sections.attribute_types = range,
            SectionId::AttributeNames => sections.attribute_names = range,
            SectionId::RegisterTypes => sections.register_types = range,
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
