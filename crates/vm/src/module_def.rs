//! Typed, verified contents of a `BytecodeModuleDef` (schema: iree-org/iree
//! `runtime/src/iree/schemas/bytecode_module_def.fbs`; docs/FORMATS.md).
//!
//! [`ModuleDef::parse`] walks every field the runtime uses exactly once, checking structure (via the
//! verifying reader) and meaning (version, ordinals, ranges) together, so a `ModuleDef` that exists
//! is valid throughout. Metadata (names, calling conventions, attributes, debug locations) is copied
//! into owned strings: it is small, and owning it keeps `Module` free of self-references without
//! `unsafe`. The large payloads — bytecode and rodata — are not copied: they are kept as verified
//! byte ranges into the file and sliced on access.

use super::container::Container;
use super::error::LoadError;
use super::flatbuffer::{Field, Result, Table};
// The bytecode version this runtime implements, the one of the instruction table (IREE's
// `isa.json`): modules must have the same major version and a minor version no newer (minor
// versions only add backwards-compatible features).
pub use crate::bytecode::isa_table::{BYTECODE_VERSION_MAJOR, BYTECODE_VERSION_MINOR};

// Field slots of each table, in schema order (a union takes two slots: type, then value).
mod fields {
    use super::Field;

    pub const MODULE_NAME: Field = Field::new(0, "name");
    pub const MODULE_VERSION: Field = Field::new(1, "version");
    pub const MODULE_REQUIREMENTS: Field = Field::new(2, "requirements");
    pub const MODULE_ATTRS: Field = Field::new(3, "attrs");
    pub const MODULE_TYPES: Field = Field::new(4, "types");
    pub const MODULE_DEPENDENCIES: Field = Field::new(5, "dependencies");
    pub const MODULE_IMPORTED_FUNCTIONS: Field = Field::new(6, "imported_functions");
    pub const MODULE_EXPORTED_FUNCTIONS: Field = Field::new(7, "exported_functions");
    pub const MODULE_FUNCTION_SIGNATURES: Field = Field::new(8, "function_signatures");
    pub const MODULE_RODATA_SEGMENTS: Field = Field::new(9, "rodata_segments");
    pub const MODULE_RWDATA_SEGMENTS: Field = Field::new(10, "rwdata_segments");
    pub const MODULE_MODULE_STATE: Field = Field::new(11, "module_state");
    pub const MODULE_FUNCTION_DESCRIPTORS: Field = Field::new(12, "function_descriptors");
    pub const MODULE_BYTECODE_VERSION: Field = Field::new(13, "bytecode_version");
    pub const MODULE_BYTECODE_DATA: Field = Field::new(14, "bytecode_data");
    pub const MODULE_DEBUG_DATABASE: Field = Field::new(15, "debug_database");

    pub const ATTR_KEY: Field = Field::new(0, "key");
    pub const ATTR_VALUE: Field = Field::new(1, "value");

    pub const TYPE_FULL_NAME: Field = Field::new(0, "full_name");

    pub const SIGNATURE_CALLING_CONVENTION: Field = Field::new(0, "calling_convention");
    pub const SIGNATURE_ATTRS: Field = Field::new(1, "attrs");

    pub const DEPENDENCY_NAME: Field = Field::new(0, "name");
    pub const DEPENDENCY_MINIMUM_VERSION: Field = Field::new(1, "minimum_version");
    pub const DEPENDENCY_FLAGS: Field = Field::new(2, "flags");

    pub const IMPORT_FULL_NAME: Field = Field::new(0, "full_name");
    pub const IMPORT_SIGNATURE: Field = Field::new(1, "signature");
    pub const IMPORT_FLAGS: Field = Field::new(2, "flags");

    pub const EXPORT_LOCAL_NAME: Field = Field::new(0, "local_name");
    pub const EXPORT_INTERNAL_ORDINAL: Field = Field::new(1, "internal_ordinal");

    pub const RODATA_COMPRESSION_TYPE: Field = Field::new(0, "compression_type_type");
    pub const RODATA_COMPRESSION: Field = Field::new(1, "compression_type");
    pub const RODATA_EMBEDDED_DATA: Field = Field::new(2, "embedded_data");
    pub const RODATA_EXTERNAL_OFFSET: Field = Field::new(3, "external_data_offset");
    pub const RODATA_EXTERNAL_LENGTH: Field = Field::new(4, "external_data_length");

    pub const RWDATA_BYTE_SIZE: Field = Field::new(0, "byte_size");

    pub const STATE_GLOBAL_BYTES_CAPACITY: Field = Field::new(0, "global_bytes_capacity");
    pub const STATE_GLOBAL_REF_COUNT: Field = Field::new(1, "global_ref_count");

    pub const CALL_SITE_CALLEE: Field = Field::new(0, "callee");
    pub const CALL_SITE_CALLER: Field = Field::new(1, "caller");
    pub const FILE_LINE_COL_FILENAME: Field = Field::new(0, "filename");
    pub const FILE_LINE_COL_LINE: Field = Field::new(1, "line");
    pub const FILE_LINE_COL_COLUMN: Field = Field::new(2, "column");
    pub const FUSED_METADATA: Field = Field::new(0, "metadata");
    pub const FUSED_LOCATIONS: Field = Field::new(1, "locations");
    pub const NAME_NAME: Field = Field::new(0, "name");
    pub const NAME_CHILD_LOCATION: Field = Field::new(1, "child_location");

    pub const SOURCE_MAP_LOCAL_NAME: Field = Field::new(0, "local_name");
    pub const SOURCE_MAP_LOCATIONS: Field = Field::new(1, "locations");

    pub const DEBUG_LOCATION_TABLE_TYPE: Field = Field::new(0, "location_table_type");
    pub const DEBUG_LOCATION_TABLE: Field = Field::new(1, "location_table");
    pub const DEBUG_FUNCTIONS: Field = Field::new(2, "functions");
}
use fields::*;

/// `FunctionDescriptor` struct layout: i32 offset, i32 length, u32 requirements, i16 reserved,
/// i16 block count, i16 i32-register count, i16 ref-register count.
const FUNCTION_DESCRIPTOR_SIZE: usize = 20;
/// `BytecodeLocationDef` struct layout: i32 bytecode offset, i32 location-table index.
const BYTECODE_LOCATION_SIZE: usize = 8;

const LOCATION_MEMBERS: &[&str] = &["CallSiteLocDef", "FileLineColLocDef", "FusedLocDef", "NameLocDef"];

/// Runtime features a module or function needs (`FeatureBits`). Kept as raw bits because newer
/// compilers add bits (3.13 emits `YIELD` and `UNWIND`, which the seed schema predates) and the
/// loader must report them, not drop them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FeatureBits(pub u32);

impl FeatureBits {
    pub const EXT_F32: FeatureBits = FeatureBits(1 << 0);
    pub const EXT_F64: FeatureBits = FeatureBits(1 << 1);
    pub const YIELD: FeatureBits = FeatureBits(1 << 2);
    pub const UNWIND: FeatureBits = FeatureBits(1 << 3);

    pub fn contains(self, other: FeatureBits) -> bool {
        self.0 & other.0 == other.0
    }
}

/// The `bytecode_version` field split into its two 16-bit halves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BytecodeVersion {
    pub major: u16,
    pub minor: u16,
}

impl BytecodeVersion {
    pub fn from_raw(raw: u32) -> BytecodeVersion {
        BytecodeVersion { major: (raw >> 16) as u16, minor: (raw & 0xFFFF) as u16 }
    }

    /// Whether this runtime can execute bytecode of this version.
    // The minor bound is 0 today, which clippy sees as a constant comparison; it is a rule that
    // stays correct when the runtime's minor version rises.
    #[allow(clippy::absurd_extreme_comparisons)]
    pub fn is_supported(self) -> bool {
        self.major == BYTECODE_VERSION_MAJOR && self.minor <= BYTECODE_VERSION_MINOR
    }
}

impl std::fmt::Display for BytecodeVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// A verified byte range of the file (absolute offsets), resolved against the file bytes on access.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ByteRange {
    pub offset: usize,
    pub len: usize,
}

impl ByteRange {
    pub fn slice<'f>(&self, file: &'f [u8]) -> &'f [u8] {
        self.offset.checked_add(self.len).and_then(|end| file.get(self.offset..end)).unwrap_or_default()
    }
}

/// A reflection attribute (`AttrDef`), e.g. `iree.abi.declaration`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attr {
    pub key: String,
    pub value: String,
}

/// An entry of the module's type table (`TypeDef`): `i32`, `!hal.buffer`, ...
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeDef {
    pub full_name: String,
}

/// A function signature (`FunctionSignatureDef`): the calling convention string (`0ii_i`) and the
/// function's reflection attributes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionSignature {
    pub calling_convention: Option<String>,
    pub attrs: Vec<Attr>,
}

impl FunctionSignature {
    /// The value of attribute `key`, if present.
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attrs.iter().find(|a| a.key == key).map(|a| a.value.as_str())
    }
}

/// Flag bits of `ModuleDependencyDef.flags` and `ImportFunctionDef.flags` (same values in both).
pub const LINK_REQUIRED: u32 = 1 << 0;
pub const LINK_OPTIONAL: u32 = 1 << 1;

/// A module this one needs at link time (`ModuleDependencyDef`), e.g. `hal >= 7`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dependency {
    pub name: String,
    pub minimum_version: u32,
    pub flags: u32,
}

impl Dependency {
    /// Optional dependencies may be missing at run time; then all their imports must be optional.
    pub fn is_optional(&self) -> bool {
        self.flags & LINK_OPTIONAL != 0
    }
}

/// A function resolved from another module at link time (`ImportFunctionDef`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportFunction {
    pub full_name: String,
    pub signature: Option<FunctionSignature>,
    pub flags: u32,
}

impl ImportFunction {
    /// Optional imports may stay unresolved; the bytecode guards them with `vm.import.resolved`.
    pub fn is_optional(&self) -> bool {
        self.flags & LINK_OPTIONAL != 0
    }

    /// The module part of the full name (`hal` of `hal.buffer.assert`): imports resolve by module
    /// name first, then by the rest.
    pub fn module_name(&self) -> &str {
        self.full_name.split_once('.').map_or(self.full_name.as_str(), |(module, _)| module)
    }
}

/// A function other modules and the host may call (`ExportFunctionDef`). `internal_ordinal` is
/// verified to name a function descriptor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportFunction {
    pub local_name: String,
    pub internal_ordinal: u32,
}

/// How load errors name internal function `ordinal`: `function 3 (`name`)` when it is exported,
/// else `function 3`.
pub fn describe_function(exports: &[ExportFunction], ordinal: usize) -> String {
    match exports.iter().find(|export| export.internal_ordinal as usize == ordinal) {
        Some(export) => format!("function {ordinal} (`{}`)", export.local_name),
        None => format!("function {ordinal}"),
    }
}

/// A read-only data segment: either embedded in the FlatBuffer or external (after it in the file);
/// either way, a verified range of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RodataSegmentDef {
    pub range: ByteRange,
    pub is_external: bool,
}

/// A read-write data segment reservation (`RwdataSegmentDef`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RwdataSegment {
    pub byte_size: u32,
}

/// Per-context state sizes (`ModuleStateDef`): zeroed global bytes and null global refs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ModuleState {
    pub global_bytes_capacity: u32,
    pub global_ref_count: u32,
}

/// Where an internal function's bytecode is and how big its frame is (`FunctionDescriptor`). The
/// bytecode range is verified to lie inside `bytecode_data`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FunctionDescriptor {
    pub bytecode_offset: u32,
    pub bytecode_length: u32,
    pub requirements: FeatureBits,
    pub block_count: u16,
    pub i32_register_count: u16,
    pub ref_register_count: u16,
}

/// One entry of the debug location table (`LocationTypeDef`). Indices into the table are verified
/// to be in range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LocationDef {
    /// A NONE entry.
    None,
    CallSite {
        callee: u32,
        caller: u32,
    },
    FileLineCol {
        filename: String,
        line: i32,
        column: i32,
    },
    Fused {
        metadata: Option<String>,
        locations: Vec<u32>,
    },
    Name {
        name: String,
        child_location: u32,
    },
    /// A member type added by a newer compiler; debug info must not make a module unloadable.
    Unknown(u8),
}

/// A bytecode offset within a function mapped to a location-table index (`BytecodeLocationDef`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BytecodeLocation {
    pub bytecode_offset: u32,
    pub location: u32,
}

/// Source map of one function (`FunctionSourceMapDef`). The compiler emits these only for functions
/// that have locations, so they are matched to functions by name, not by position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionSourceMap {
    pub local_name: String,
    pub locations: Vec<BytecodeLocation>,
}

/// The optional debug database (`DebugDatabaseDef`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DebugDatabase {
    pub location_table: Vec<LocationDef>,
    pub functions: Vec<FunctionSourceMap>,
}

impl DebugDatabase {
    /// The innermost file location recorded for `bytecode_offset` in function `local_name`:
    /// the last recorded op at or before the offset, with call sites and names unwrapped.
    pub fn file_location(&self, local_name: &str, bytecode_offset: u32) -> Option<(&str, i32, i32)> {
        let map = self.functions.iter().find(|f| f.local_name == local_name)?;
        let entry =
            map.locations.iter().filter(|l| l.bytecode_offset <= bytecode_offset).max_by_key(|l| l.bytecode_offset)?;
        let mut index = entry.location;
        // Each step follows a verified index; the bound stops cycles in hostile tables.
        for _ in 0..=self.location_table.len() {
            match self.location_table.get(index as usize)? {
                LocationDef::FileLineCol { filename, line, column } => return Some((filename, *line, *column)),
                LocationDef::CallSite { callee, .. } => index = *callee,
                LocationDef::Name { child_location, .. } => index = *child_location,
                LocationDef::Fused { locations, .. } => index = *locations.first()?,
                LocationDef::None | LocationDef::Unknown(_) => return None,
            }
        }
        None
    }
}

/// Everything the runtime reads from a `.vmfb`, verified.
#[derive(Clone, Debug)]
pub struct ModuleDef {
    pub name: String,
    pub version: u32,
    pub requirements: FeatureBits,
    pub attrs: Vec<Attr>,
    pub types: Vec<TypeDef>,
    pub dependencies: Vec<Dependency>,
    pub imported_functions: Vec<ImportFunction>,
    pub exported_functions: Vec<ExportFunction>,
    /// 1:1 with `function_descriptors` (internal functions, exports included).
    pub function_signatures: Vec<FunctionSignature>,
    pub rodata_segments: Vec<RodataSegmentDef>,
    pub rwdata_segments: Vec<RwdataSegment>,
    pub module_state: ModuleState,
    pub function_descriptors: Vec<FunctionDescriptor>,
    pub bytecode_version: BytecodeVersion,
    pub bytecode_data: ByteRange,
    pub debug_database: Option<DebugDatabase>,
    /// File offset external rodata is relative to.
    pub rodata_base: usize,
    /// Whether the file is a ZIP archive (the compiler's default) rather than a bare FlatBuffer.
    pub is_zip: bool,
}

impl ModuleDef {
    /// Locates, verifies and decodes the module in `file` (the whole `.vmfb`).
    pub fn parse(file: &[u8]) -> Result<ModuleDef> {
        let container = Container::parse(file)?;
        let root = container.flatbuffer.root("BytecodeModuleDef")?;
        let b = Budget::new(file.len(), root.offset());

        // The version comes first: a module from a different compiler generation is reported as
        // such rather than as whatever structural difference happens to be hit first.
        let raw_version: u32 = root.scalar(MODULE_BYTECODE_VERSION, 0)?;
        let bytecode_version = BytecodeVersion::from_raw(raw_version);
        if !bytecode_version.is_supported() {
            return Err(LoadError::unsupported(
                root.field_offset(MODULE_BYTECODE_VERSION).unwrap_or(root.offset()),
                format!(
                    "module bytecode version {bytecode_version} is not supported: this runtime runs version \
                     {BYTECODE_VERSION_MAJOR}.{BYTECODE_VERSION_MINOR} (the major version must match and the \
                     minor version must be at most {BYTECODE_VERSION_MINOR}); recompile the module with a \
                     matching iree-compile"
                ),
            ));
        }

        let name = b.own(required_string(&root, MODULE_NAME)?)?;
        let version = root.scalar(MODULE_VERSION, 0u32)?;
        let requirements = FeatureBits(root.scalar(MODULE_REQUIREMENTS, 0u32)?);
        let attrs = parse_attrs(&b, &root, MODULE_ATTRS)?;
        let types = collect_tables(&b, &root, MODULE_TYPES, "TypeDef", |_, t| {
            Ok(TypeDef { full_name: b.own(required_string(&t, TYPE_FULL_NAME)?)? })
        })?;
        let dependencies = collect_tables(&b, &root, MODULE_DEPENDENCIES, "ModuleDependencyDef", |_, t| {
            Ok(Dependency {
                name: b.own(required_string(&t, DEPENDENCY_NAME)?)?,
                minimum_version: t.scalar(DEPENDENCY_MINIMUM_VERSION, 0)?,
                flags: t.scalar(DEPENDENCY_FLAGS, LINK_REQUIRED)?,
            })
        })?;
        let imported_functions = collect_tables(&b, &root, MODULE_IMPORTED_FUNCTIONS, "ImportFunctionDef", |_, t| {
            Ok(ImportFunction {
                full_name: b.own(required_string(&t, IMPORT_FULL_NAME)?)?,
                signature: match t.table(IMPORT_SIGNATURE, "FunctionSignatureDef")? {
                    Some(s) => Some(parse_signature(&b, &s)?),
                    None => None,
                },
                flags: t.scalar(IMPORT_FLAGS, LINK_REQUIRED)?,
            })
        })?;
        let function_signatures =
            collect_tables(&b, &root, MODULE_FUNCTION_SIGNATURES, "FunctionSignatureDef", |_, t| {
                parse_signature(&b, &t)
            })?;
        let module_state = match root.table(MODULE_MODULE_STATE, "ModuleStateDef")? {
            Some(t) => ModuleState {
                global_bytes_capacity: non_negative(&t, STATE_GLOBAL_BYTES_CAPACITY)?,
                global_ref_count: non_negative(&t, STATE_GLOBAL_REF_COUNT)?,
            },
            None => ModuleState::default(),
        };
        let rwdata_segments = collect_tables(&b, &root, MODULE_RWDATA_SEGMENTS, "RwdataSegmentDef", |_, t| {
            Ok(RwdataSegment { byte_size: non_negative(&t, RWDATA_BYTE_SIZE)? })
        })?;
        let rodata_segments = collect_tables(&b, &root, MODULE_RODATA_SEGMENTS, "RodataSegmentDef", |i, t| {
            parse_rodata_segment(i, &t, container.rodata_base, file.len())
        })?;

        let bytecode = root.bytes(MODULE_BYTECODE_DATA)?;
        let bytecode_data =
            bytecode.map_or(ByteRange::default(), |b| ByteRange { offset: b.offset, len: b.data.len() });
        let function_descriptors = parse_function_descriptors(&root, bytecode_data.len)?;

        if function_signatures.len() != function_descriptors.len() {
            return Err(LoadError::malformed(
                root.field_offset(MODULE_FUNCTION_SIGNATURES).unwrap_or(root.offset()),
                format!(
                    "the module has {} function signatures but {} function descriptors; they must be 1:1",
                    function_signatures.len(),
                    function_descriptors.len()
                ),
            ));
        }
        let exported_functions = collect_tables(&b, &root, MODULE_EXPORTED_FUNCTIONS, "ExportFunctionDef", |i, t| {
            let local_name = b.own(required_string(&t, EXPORT_LOCAL_NAME)?)?;
            let ordinal: i32 = t.scalar(EXPORT_INTERNAL_ORDINAL, 0)?;
            let signature = usize::try_from(ordinal).ok().and_then(|o| function_signatures.get(o));
            let Some(signature) = signature else {
                return Err(LoadError::malformed(
                    t.field_offset(EXPORT_INTERNAL_ORDINAL).unwrap_or(t.offset()),
                    format!(
                        "export {i} (`{local_name}`) names internal function {ordinal}, but the module has {}",
                        function_descriptors.len()
                    ),
                ));
            };
            if signature.calling_convention.is_none() {
                return Err(LoadError::malformed(
                    t.offset(),
                    format!("export {i} (`{local_name}`) has no calling convention in its function signature"),
                ));
            }
            Ok(ExportFunction { local_name, internal_ordinal: ordinal as u32 })
        })?;
        let debug_database = match root.table(MODULE_DEBUG_DATABASE, "DebugDatabaseDef")? {
            Some(t) => Some(parse_debug_database(&b, &t)?),
            None => None,
        };

        Ok(ModuleDef {
            name,
            version,
            requirements,
            attrs,
            types,
            dependencies,
            imported_functions,
            exported_functions,
            function_signatures,
            rodata_segments,
            rwdata_segments,
            module_state,
            function_descriptors,
            bytecode_version,
            bytecode_data,
            debug_database,
            rodata_base: container.rodata_base,
            is_zip: container.is_zip,
        })
    }
}

/// Vectors are allocated up front only up to this many elements; longer ones grow as their
/// elements are verified, so a claimed length alone cannot make the loader allocate.
const PREALLOCATION_LIMIT: usize = 1024;
/// What decoding one table counts against the [`Budget`].
const TABLE_COST: usize = 8;

/// A cap on how much the decoder copies and walks, proportional to the file size.
///
/// FlatBuffer offsets may point many times at the same table or string, so a small hostile file
/// could otherwise decode into gigabytes (a million imports sharing one huge signature). An honest
/// module copies less metadata than it stores; four times the file size leaves ample room for
/// strings the compiler shares.
struct Budget {
    left: std::cell::Cell<usize>,
    offset: usize,
}

impl Budget {
    fn new(file_len: usize, offset: usize) -> Budget {
        Budget { left: std::cell::Cell::new(file_len.saturating_mul(4).saturating_add(4096)), offset }
    }

    fn charge(&self, units: usize) -> Result<()> {
        match self.left.get().checked_sub(units) {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => Err(LoadError::malformed(
                self.offset,
                "the module's tables and strings are shared so often that decoding it would take far more \
                 memory than the file's size justifies",
            )),
        }
    }

    fn own(&self, s: &str) -> Result<String> {
        self.charge(s.len().saturating_add(1))?;
        Ok(s.to_owned())
    }
}

/// A string that must be present and non-empty (names used for linking and lookup).
fn required_string<'a>(table: &Table<'a>, field: Field) -> Result<&'a str> {
    match table.string(field)? {
        Some(s) if !s.is_empty() => Ok(s),
        Some(_) => Err(LoadError::malformed(
            table.field_offset(field).unwrap_or(table.offset()),
            format!("{}.{} is empty", table.type_name(), field.name),
        )),
        None => Err(LoadError::malformed(table.offset(), format!("{}.{} is missing", table.type_name(), field.name))),
    }
}

/// An `int32` count or size that is meaningless when negative.
fn non_negative(table: &Table<'_>, field: Field) -> Result<u32> {
    let value: i32 = table.scalar(field, 0)?;
    u32::try_from(value).map_err(|_| {
        LoadError::malformed(
            table.field_offset(field).unwrap_or(table.offset()),
            format!("{}.{} is negative ({value})", table.type_name(), field.name),
        )
    })
}

/// Decodes each table of a vector; an absent vector is empty.
fn collect_tables<'a, T>(
    budget: &Budget,
    parent: &Table<'a>,
    field: Field,
    type_name: &'static str,
    mut decode: impl FnMut(usize, Table<'a>) -> Result<T>,
) -> Result<Vec<T>> {
    let Some(vector) = parent.tables(field, type_name)? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(vector.len().min(PREALLOCATION_LIMIT));
    for i in 0..vector.len() {
        budget.charge(TABLE_COST)?;
        out.push(decode(i, vector.get(i)?)?);
    }
    Ok(out)
}

fn parse_attrs(b: &Budget, parent: &Table<'_>, field: Field) -> Result<Vec<Attr>> {
    collect_tables(b, parent, field, "AttrDef", |_, t| {
        Ok(Attr {
            key: b.own(required_string(&t, ATTR_KEY)?)?,
            value: b.own(t.string(ATTR_VALUE)?.unwrap_or_default())?,
        })
    })
}

fn parse_signature(b: &Budget, table: &Table<'_>) -> Result<FunctionSignature> {
    Ok(FunctionSignature {
        calling_convention: table.string(SIGNATURE_CALLING_CONVENTION)?.map(|s| b.own(s)).transpose()?,
        attrs: parse_attrs(b, table, SIGNATURE_ATTRS)?,
    })
}

fn parse_rodata_segment(index: usize, t: &Table<'_>, rodata_base: usize, file_len: usize) -> Result<RodataSegmentDef> {
    if let Some(compression) = t.union(RODATA_COMPRESSION_TYPE, RODATA_COMPRESSION, &["UncompressedDataDef"])? {
        if compression.kind != 1 {
            return Err(LoadError::unsupported(
                t.field_offset(RODATA_COMPRESSION_TYPE).unwrap_or(t.offset()),
                format!("rodata segment {index} uses compression type {}, which is not supported", compression.kind),
            ));
        }
    }
    let embedded = t.bytes(RODATA_EMBEDDED_DATA)?;
    let external_offset: u64 = t.scalar(RODATA_EXTERNAL_OFFSET, 0)?;
    let external_length: u64 = t.scalar(RODATA_EXTERNAL_LENGTH, 0)?;
    match embedded {
        Some(_) if external_length != 0 => {
            Err(LoadError::malformed(t.offset(), format!("rodata segment {index} has both embedded and external data")))
        }
        Some(bytes) => Ok(RodataSegmentDef {
            range: ByteRange { offset: bytes.offset, len: bytes.data.len() },
            is_external: false,
        }),
        None => {
            let start = usize::try_from(external_offset).ok().and_then(|o| rodata_base.checked_add(o));
            let end = start.zip(usize::try_from(external_length).ok()).and_then(|(s, l)| s.checked_add(l));
            match (start, end) {
                (Some(start), Some(end)) if end <= file_len => {
                    Ok(RodataSegmentDef { range: ByteRange { offset: start, len: end - start }, is_external: true })
                }
                _ => Err(LoadError::truncated(
                    t.field_offset(RODATA_EXTERNAL_OFFSET).unwrap_or(t.offset()),
                    format!(
                        "rodata segment {index}: external data ({external_length} bytes at rodata base {rodata_base} \
                         + {external_offset}) lies past the end of the {file_len}-byte file"
                    ),
                )),
            }
        }
    }
}

fn parse_function_descriptors(root: &Table<'_>, bytecode_len: usize) -> Result<Vec<FunctionDescriptor>> {
    let Some(vector) = root.structs(MODULE_FUNCTION_DESCRIPTORS, FUNCTION_DESCRIPTOR_SIZE, 4)? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(vector.len().min(PREALLOCATION_LIMIT));
    for (i, s) in vector.iter().enumerate() {
        let offset: i32 = s.field(0)?;
        let length: i32 = s.field(4)?;
        let requirements: u32 = s.field(8)?;
        let counts = [s.field::<i16>(14)?, s.field::<i16>(16)?, s.field::<i16>(18)?];
        let range = u32::try_from(offset).ok().zip(u32::try_from(length).ok());
        let fits = range.and_then(|(o, l)| (o as usize).checked_add(l as usize)).is_some_and(|end| end <= bytecode_len);
        let Some((bytecode_offset, bytecode_length)) = range.filter(|_| fits) else {
            return Err(LoadError::malformed(
                s.offset(),
                format!(
                    "function {i}: bytecode range {offset}+{length} lies outside the {bytecode_len}-byte bytecode_data"
                ),
            ));
        };
        let [block_count, i32_register_count, ref_register_count] = counts.map(|c| u16::try_from(c).ok());
        let (Some(block_count), Some(i32_register_count), Some(ref_register_count)) =
            (block_count, i32_register_count, ref_register_count)
        else {
            return Err(LoadError::malformed(
                s.offset(),
                format!("function {i}: negative block or register count {counts:?}"),
            ));
        };
        out.push(FunctionDescriptor {
            bytecode_offset,
            bytecode_length,
            requirements: FeatureBits(requirements),
            block_count,
            i32_register_count,
            ref_register_count,
        });
    }
    Ok(out)
}

fn parse_debug_database(b: &Budget, t: &Table<'_>) -> Result<DebugDatabase> {
    let mut location_table = Vec::new();
    if let Some(unions) = t.unions(DEBUG_LOCATION_TABLE_TYPE, DEBUG_LOCATION_TABLE, LOCATION_MEMBERS)? {
        location_table.reserve(unions.len().min(PREALLOCATION_LIMIT));
        b.charge(unions.len())?;
        let count = unions.len();
        let index = |table: &Table<'_>, field: Field| -> Result<u32> {
            let value: i32 = table.scalar(field, 0)?;
            location_index(value, count, table.field_offset(field).unwrap_or(table.offset()))
        };
        for i in 0..count {
            let location = match unions.get(i)? {
                None => LocationDef::None,
                Some(u) => match u.kind {
                    1 => LocationDef::CallSite {
                        callee: index(&u.table, CALL_SITE_CALLEE)?,
                        caller: index(&u.table, CALL_SITE_CALLER)?,
                    },
                    2 => LocationDef::FileLineCol {
                        filename: b.own(u.table.string(FILE_LINE_COL_FILENAME)?.unwrap_or_default())?,
                        line: u.table.scalar(FILE_LINE_COL_LINE, 0)?,
                        column: u.table.scalar(FILE_LINE_COL_COLUMN, 0)?,
                    },
                    3 => {
                        let mut locations = Vec::new();
                        if let Some(v) = u.table.scalars::<i32>(FUSED_LOCATIONS)? {
                            b.charge(v.len().saturating_mul(4))?;
                            for value in v.iter() {
                                locations.push(location_index(value, count, u.table.offset())?);
                            }
                        }
                        LocationDef::Fused {
                            metadata: u.table.string(FUSED_METADATA)?.map(|s| b.own(s)).transpose()?,
                            locations,
                        }
                    }
                    4 => LocationDef::Name {
                        name: b.own(u.table.string(NAME_NAME)?.unwrap_or_default())?,
                        child_location: index(&u.table, NAME_CHILD_LOCATION)?,
                    },
                    other => LocationDef::Unknown(other),
                },
            };
            location_table.push(location);
        }
    }
    let count = location_table.len();
    let functions = collect_tables(b, t, DEBUG_FUNCTIONS, "FunctionSourceMapDef", |_, f| {
        let mut locations = Vec::new();
        if let Some(v) = f.structs(SOURCE_MAP_LOCATIONS, BYTECODE_LOCATION_SIZE, 4)? {
            locations.reserve(v.len().min(PREALLOCATION_LIMIT));
            b.charge(v.len().saturating_mul(BYTECODE_LOCATION_SIZE))?;
            for s in v.iter() {
                let offset: i32 = s.field(0)?;
                let bytecode_offset = u32::try_from(offset).map_err(|_| {
                    LoadError::malformed(s.offset(), format!("debug location has a negative bytecode offset {offset}"))
                })?;
                let location = location_index(s.field(4)?, count, s.offset() + 4)?;
                locations.push(BytecodeLocation { bytecode_offset, location });
            }
        }
        Ok(FunctionSourceMap { local_name: b.own(f.string(SOURCE_MAP_LOCAL_NAME)?.unwrap_or_default())?, locations })
    })?;
    Ok(DebugDatabase { location_table, functions })
}

fn location_index(value: i32, count: usize, offset: usize) -> Result<u32> {
    match u32::try_from(value) {
        Ok(index) if (index as usize) < count => Ok(index),
        _ => Err(LoadError::malformed(
            offset,
            format!("debug location index {value} is out of range for a location table of {count} entries"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytecode_version_splits_into_major_and_minor_halves() {
        let version = BytecodeVersion::from_raw(0x0011_0000);
        assert_eq!((version.major, version.minor), (17, 0));
        assert!(version.is_supported());
        assert_eq!(BytecodeVersion::from_raw(0x0011_0002).to_string(), "17.2");
        assert!(!BytecodeVersion::from_raw(0x0011_0002).is_supported());
        assert!(!BytecodeVersion::from_raw(0x0010_0000).is_supported());
    }

    #[test]
    fn budget_refuses_decoding_beyond_a_multiple_of_the_file_size() {
        let budget = Budget::new(10, 68);
        assert_eq!(budget.own("0r_r").unwrap(), "0r_r");
        budget.charge(4000).unwrap();
        let err = budget.charge(200).unwrap_err();
        assert_eq!(err.offset, 68);
        assert!(err.message.contains("shared so often"), "{err}");
    }

    #[test]
    fn file_location_follows_call_sites_and_names_and_stops_on_cycles() {
        let db = DebugDatabase {
            location_table: vec![
                LocationDef::FileLineCol { filename: "a.mlir".into(), line: 3, column: 7 },
                LocationDef::Name { name: "x".into(), child_location: 0 },
                LocationDef::CallSite { callee: 1, caller: 0 },
                LocationDef::CallSite { callee: 3, caller: 3 },
            ],
            functions: vec![FunctionSourceMap {
                local_name: "f".into(),
                locations: vec![
                    BytecodeLocation { bytecode_offset: 0, location: 2 },
                    BytecodeLocation { bytecode_offset: 10, location: 3 },
                ],
            }],
        };
        assert_eq!(db.file_location("f", 5), Some(("a.mlir", 3, 7)));
        assert_eq!(db.file_location("f", 10), None);
        assert_eq!(db.file_location("g", 0), None);
    }
}
