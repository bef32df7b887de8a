//! The MLIR bytecode writer, versions 0–6: the inverse of [`super::reader`], laid out the way
//! upstream's `BytecodeWriter.cpp` lays files out (same sections, same order, same alignment
//! rules), so that upstream MLIR reads what rtx writes.
//!
//! Output is deterministic but not byte-identical to upstream's: attributes, types and strings are
//! numbered in the order the IR meets them (upstream sorts them by use count), and resources the
//! module holds are all kept (upstream keeps only referenced ones).
//!
//! **What each version can hold, and what happens when it cannot:**
//! - Properties of registered ops (bytecode v5+) are written in their native ODS encoding when
//!   [`crate::ods`] knows the op and the properties fit its schema (v6 writes segment sizes as
//!   a sparse array, v5 as an attribute); otherwise they are folded into its attribute dictionary,
//!   from which upstream restores them (it would misread a dictionary as the native encoding of
//!   an op it has registered). Unregistered ops' properties are a dictionary attribute.
//!   Below v5, a registered op's properties are folded into its attribute dictionary, exactly as
//!   upstream does (upstream restores them when reading; rtx's reader shows them as attributes).
//! - Not expressible, so an error unless [`WriteOptions::allow_lossy_downgrade`] is set (in which
//!   case they are dropped, as upstream's writer silently does): unregistered ops' properties below
//!   v5, use-list orders below v3, dialect version payloads in v0.
//! - LLVM debug-info attributes and loop annotations that hold a `distinct` id are written in the
//!   llvm dialect's own encoding (see [`llvm`]), so that an id two of them share stays one
//!   attribute; every other dialect attribute or type kept as text is written as text.
//! - Never writable: attributes/types in another dialect's own custom encoding and undecoded
//!   native properties ([`crate::ir::Properties::Opaque`]), since they hold indices into the
//!   file they came from.
//! - Regions of ops that use no value from outside are flagged isolated (structurally, as
//!   upstream does) and, from v2 on, written as nested sections a reader may load lazily.

mod attr_type;
mod emitter;
pub(crate) mod error;
mod interner;
mod ir;
mod llvm;
mod numbering;

pub use error::WriteError;

use super::reader::version as reader_version;
use crate::ir::{Module, ResourceValue};
use emitter::Emitter;
use numbering::{Plan, ResourceEntries, Result};

/// Version gates, as `u32`s for [`WriteOptions::version`].
pub(crate) mod version {
    use super::reader_version as r;
    pub const DIALECT_VERSIONING: u32 = r::DIALECT_VERSIONING as u32;
    pub const LAZY_LOADING: u32 = r::LAZY_LOADING as u32;
    pub const USE_LIST_ORDERING: u32 = r::USE_LIST_ORDERING as u32;
    pub const ELIDE_UNKNOWN_BLOCK_ARG_LOCATION: u32 = r::ELIDE_UNKNOWN_BLOCK_ARG_LOCATION as u32;
    pub const NATIVE_PROPERTIES: u32 = r::NATIVE_PROPERTIES as u32;
    pub const NATIVE_PROPERTIES_ODS_SEGMENT_SIZE: u32 = r::NATIVE_PROPERTIES_ODS_SEGMENT_SIZE as u32;
}

/// The newest version rtx writes, and the default (as upstream's).
pub const DEFAULT_VERSION: u32 = 6;

/// How to write a module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    /// The bytecode version, 0–6 (default 6).
    pub version: u32,
    /// The producer string in the file header (default `"rtx <crate version>"`).
    pub producer: String,
    /// Drop what the target version cannot express (unregistered ops' properties below v5,
    /// use-list orders below v3, dialect versions in v0) instead of failing, matching what
    /// upstream's writer does. Off by default: then such a module gives
    /// [`WriteError::NotRepresentable`].
    pub allow_lossy_downgrade: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        Self {
            version: DEFAULT_VERSION,
            producer: concat!("rtx ", env!("CARGO_PKG_VERSION")).to_owned(),
            allow_lossy_downgrade: false,
        }
    }
}

impl WriteOptions {
    /// The default options for `version`.
    pub fn version(version: u32) -> Self {
        Self { version, ..Self::default() }
    }
}

const MAGIC: &[u8; 4] = b"ML\xEFR";

/// Writes `module` as MLIR bytecode.
pub fn write_bytecode(module: &Module, options: &WriteOptions) -> std::result::Result<Vec<u8>, WriteError> {
    let v = options.version;
    if v > DEFAULT_VERSION {
        return Err(WriteError::UnsupportedVersion(v));
    }
    if v < version::USE_LIST_ORDERING && !module.use_list_orders.is_empty() && !options.allow_lossy_downgrade {
        return Err(WriteError::NotRepresentable {
            version: v,
            needs: version::USE_LIST_ORDERING,
            what: format!("use-list orders ({} values)", module.use_list_orders.len()),
        });
    }
    let mut plan = numbering::plan(module, options)?;
    if v < version::DIALECT_VERSIONING && !options.allow_lossy_downgrade {
        if let Some(d) = plan.dialects.iter().find(|d| d.version.is_some()) {
            return Err(WriteError::NotRepresentable {
                version: v,
                needs: version::DIALECT_VERSIONING,
                what: format!("the version of dialect `{}`", String::from_utf8_lossy(&d.name)),
            });
        }
    }

    let mut out = Emitter::with_capacity(size_estimate(module, &plan));
    out.bytes(MAGIC);
    out.varint(u64::from(v));
    out.cstr(options.producer.as_bytes());
    write_dialect_section(&mut out, &mut plan, v);
    attr_type::write_attr_type_sections(&mut out, &plan, &module.context)?;
    let mut ir = ir::IrWriter::new(module, &plan, v)?;
    ir.write(&mut out)?;
    let properties = std::mem::take(&mut ir.properties);
    drop(ir);
    write_resource_sections(&mut out, &mut plan, module)?;
    let strings = out.begin_section();
    out.varint(plan.strings.strings().len() as u64);
    for s in plan.strings.strings().iter().rev() {
        out.varint(s.len() as u64 + 1);
    }
    for s in plan.strings.strings() {
        out.cstr(s);
    }
    out.end_section(0, strings);
    if v >= version::NATIVE_PROPERTIES {
        let section = out.begin_section();
        out.varint(properties.len() as u64);
        for entry in &properties {
            out.bytes(entry);
        }
        out.end_section(8, section);
    }
    Ok(out.into_bytes())
}

/// About the size of the file, from counts the module and the plan know: a few bytes per op,
/// operand, value and attribute or type entry, plus the strings and resources. Reserving it up
/// front spares the output the copies of growing by doubling; a little too much costs only
/// address space, pages never written being never touched.
fn size_estimate(m: &Module, plan: &Plan) -> usize {
    let strings: usize = plan.strings.strings().iter().map(|s| s.len() + 2).sum();
    // Texts are written whole: a model's weights can be one, as large as the rest together.
    let texts: usize = plan.texts.items.iter().map(|t| t.len() + 1).sum();
    1024 + m.ops.len() * 6
        + m.operand_pool.len() * 3
        + m.values.len() * 2
        + (plan.attrs.len() + plan.types.len()) * 8
        + strings
        + texts
        + resource_size_estimate(plan)
}

/// About the size of the resource section: the blobs' bytes (padding aside) and a few bytes for
/// each entry.
fn resource_size_estimate(plan: &Plan) -> usize {
    plan.external_resources
        .iter()
        .flat_map(|(_, entries)| entries)
        .chain(plan.dialect_resources.iter().flat_map(|(_, entries)| entries))
        .map(|(_, value)| match value {
            ResourceValue::Blob { data, .. } => data.len() + 16,
            _ => 8,
        })
        .sum()
}

fn write_dialect_section(e: &mut Emitter, plan: &mut Plan, v: u32) {
    let section = e.begin_section();
    e.varint(plan.dialects.len() as u64);
    for i in 0..plan.dialects.len() {
        let name = plan.strings.insert(&plan.dialects[i].name);
        let dialect = &plan.dialects[i];
        match &dialect.version {
            Some(payload) if v >= version::DIALECT_VERSIONING => {
                e.varint_with_flag(u64::from(name), true);
                let version = e.begin_section();
                e.bytes(payload);
                e.end_section(7, version);
            }
            _ if v >= version::DIALECT_VERSIONING => e.varint_with_flag(u64::from(name), false),
            _ => e.varint(u64::from(name)),
        }
    }
    if v >= version::ELIDE_UNKNOWN_BLOCK_ARG_LOCATION {
        e.varint(plan.op_names.len() as u64);
    }
    for run in plan.op_names.chunk_by(|a, b| a.dialect == b.dialect) {
        e.varint(u64::from(run[0].dialect));
        e.varint(run.len() as u64);
        for name in run {
            if v >= version::NATIVE_PROPERTIES {
                e.varint_with_flag(u64::from(name.short), name.registered);
            } else {
                e.varint(u64::from(name.short));
            }
        }
    }
    e.end_section(1, section);
}

/// Resource offset (6) then resource (5) sections; always present, as upstream writes them. The
/// offsets are written in place; the data, which follows them but is encoded along with them,
/// apart.
fn write_resource_sections(out: &mut Emitter, plan: &mut Plan, m: &Module) -> Result<()> {
    let mut data = Emitter::with_capacity(resource_size_estimate(plan));
    let offsets = out.begin_section();
    let mut group = |plan: &mut Plan, offsets: &mut Emitter, owner: u64, entries: &ResourceEntries| -> Result<()> {
        offsets.varint(owner);
        offsets.varint(entries.len() as u64);
        for (key, value) in entries {
            let start = data.len();
            let kind = match value {
                ResourceValue::Blob { alignment, data: blob } => {
                    if !alignment.is_power_of_two() || *alignment > 1 << 32 {
                        return Err(WriteError::BadResourceAlignment {
                            key: String::from_utf8_lossy(key).into_owned(),
                            alignment: *alignment,
                        });
                    }
                    data.varint(*alignment);
                    data.varint(blob.len() as u64);
                    data.align_to(*alignment);
                    data.bytes(blob.bytes());
                    0
                }
                ResourceValue::Bool(b) => {
                    data.byte(u8::from(*b));
                    1
                }
                ResourceValue::String(s) => {
                    let index = plan.strings.insert(numbering::string(&m.context, *s)?);
                    data.varint(u64::from(index));
                    2
                }
                ResourceValue::Elided => 0,
            };
            let key = plan.strings.insert(key);
            offsets.varint(u64::from(key));
            offsets.varint((data.len() - start) as u64);
            offsets.byte(kind);
        }
        Ok(())
    };
    let external = std::mem::take(&mut plan.external_resources);
    out.varint(external.len() as u64);
    for (owner, entries) in &external {
        let owner = plan.strings.insert(owner);
        group(plan, out, u64::from(owner), entries)?;
    }
    let dialect = std::mem::take(&mut plan.dialect_resources);
    for (owner, entries) in &dialect {
        group(plan, out, u64::from(*owner), entries)?;
    }
    plan.external_resources = external;
    plan.dialect_resources = dialect;
    out.end_section(6, offsets);
    out.section(5, &data);
    Ok(())
}
