//! The `vulkan-spirv-fb` executable format, read and verified: what `iree-compile
//! --iree-hal-target-device=vulkan` puts in a `.vmfb` for each `hal.executable` and a program passes
//! to `hal.executable.create` (schema: iree-org/iree `runtime/src/iree/schemas/
//! vulkan_executable_def.fbs`; layout in docs/FORMATS.md).
//!
//! The bytes are a 64-byte header (`VKE1`, version 0, the FlatBuffer's size) and then a FlatBuffer
//! with identifier `VKE1`. [`ExecutableDef::parse`] walks all of it once with the verifying reader
//! of `vm::flatbuffer`, checking structure and meaning together — ordinals in range, binding and
//! push-constant facts a pipeline layout needs, the SPIR-V magic, each entry point present in its
//! module — so an `ExecutableDef` that exists can be turned into Vulkan objects without further
//! checks of the file. Errors name the byte offset from the executable's first byte.

use super::spirv;
use rtx_vm::error::LoadError;
use rtx_vm::flatbuffer::{Field, FlatBuffer, Table};

/// The format string programs pass to `hal.executable.create` for these executables.
pub const FORMAT: &str = "vulkan-spirv-fb";
/// The header magic and the FlatBuffer file identifier.
pub const IDENTIFIER: &[u8; 4] = b"VKE1";
/// `{u32 magic, u32 version, u64 content_size, u64 reserved[6]}` in front of the FlatBuffer.
const HEADER_SIZE: usize = 64;
/// `VK_SHADER_STAGE_COMPUTE_BIT` and `VK_SHADER_STAGE_ALL`: a binding or push-constant range the
/// compute stage cannot see would leave the dispatch without its data.
const STAGE_COMPUTE: u32 = 0x20;
const STAGE_ALL: u32 = 0x7fff_ffff;

type Result<T> = std::result::Result<T, LoadError>;

// Field slots of each table, in schema order.
mod fields {
    use super::Field;

    pub const EXECUTABLE_PIPELINES: Field = Field::new(0, "pipelines");
    pub const EXECUTABLE_DESCRIPTOR_SET_LAYOUTS: Field = Field::new(1, "descriptor_set_layouts");
    pub const EXECUTABLE_PIPELINE_LAYOUTS: Field = Field::new(2, "pipeline_layouts");
    pub const EXECUTABLE_SHADER_MODULES: Field = Field::new(3, "shader_modules");
    pub const EXECUTABLE_SOURCE_FILES: Field = Field::new(4, "source_files");

    pub const PIPELINE_SHADER_MODULE_ORDINAL: Field = Field::new(0, "shader_module_ordinal");
    pub const PIPELINE_ENTRY_POINT: Field = Field::new(1, "entry_point");
    pub const PIPELINE_PIPELINE_LAYOUT_ORDINAL: Field = Field::new(2, "pipeline_layout_ordinal");
    pub const PIPELINE_SUBGROUP_SIZE: Field = Field::new(3, "subgroup_size");
    pub const PIPELINE_DEBUG_INFO: Field = Field::new(4, "debug_info");
    pub const PIPELINE_DISPATCH_ABI: Field = Field::new(5, "dispatch_abi");
    pub const PIPELINE_BDA_DISPATCH_LAYOUT: Field = Field::new(6, "bda_dispatch_layout");

    pub const SET_LAYOUT_BINDINGS: Field = Field::new(0, "bindings");

    pub const BINDING_BINDING: Field = Field::new(0, "binding");
    pub const BINDING_DESCRIPTOR_TYPE: Field = Field::new(1, "descriptor_type");
    pub const BINDING_DESCRIPTOR_COUNT: Field = Field::new(2, "descriptor_count");
    pub const BINDING_STAGE_FLAGS: Field = Field::new(3, "stage_flags");

    pub const LAYOUT_SET_LAYOUT_ORDINALS: Field = Field::new(0, "descriptor_set_layout_ordinals");
    pub const LAYOUT_PUSH_CONSTANT_RANGES: Field = Field::new(1, "push_constant_ranges");

    pub const SHADER_MODULE_SPIRV_CODE: Field = Field::new(0, "spirv_code");

    pub const EXPORT_NAME: Field = Field::new(0, "name");
    pub const EXPORT_LOCATION: Field = Field::new(1, "location");
    pub const EXPORT_STAGE_LOCATIONS: Field = Field::new(2, "stage_locations");

    pub const LOCATION_FILENAME: Field = Field::new(0, "filename");
    pub const LOCATION_LINE: Field = Field::new(1, "line");

    pub const STAGE_LOCATION_STAGE: Field = Field::new(0, "stage");
    pub const STAGE_LOCATION_LOCATION: Field = Field::new(1, "location");

    pub const SOURCE_FILE_PATH: Field = Field::new(0, "path");
    pub const SOURCE_FILE_CONTENT: Field = Field::new(1, "content");
}
use fields::*;

/// A descriptor type the format allows (the values are Vulkan's `VkDescriptorType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DescriptorType {
    Sampler,
    UniformBuffer,
    StorageBuffer,
}

impl DescriptorType {
    fn from_raw(raw: u32) -> Option<DescriptorType> {
        match raw {
            0 => Some(DescriptorType::Sampler),
            6 => Some(DescriptorType::UniformBuffer),
            7 => Some(DescriptorType::StorageBuffer),
            _ => None,
        }
    }

    /// The `VkDescriptorType` value.
    pub fn raw(self) -> u32 {
        match self {
            DescriptorType::Sampler => 0,
            DescriptorType::UniformBuffer => 6,
            DescriptorType::StorageBuffer => 7,
        }
    }
}

/// One binding of a descriptor set layout (a subset of `VkDescriptorSetLayoutBinding`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DescriptorSetLayoutBinding {
    pub binding: u32,
    pub descriptor_type: DescriptorType,
    /// Non-zero.
    pub descriptor_count: u32,
    /// `VkShaderStageFlags`, including the compute stage.
    pub stage_flags: u32,
}

/// A descriptor set layout: its bindings, whose binding numbers are distinct.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DescriptorSetLayoutDef {
    pub bindings: Vec<DescriptorSetLayoutBinding>,
}

/// `VkPushConstantRange`: offset and size are multiples of 4, the stages include compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PushConstantRange {
    pub stage_flags: u32,
    pub offset: u32,
    pub size: u32,
}

/// A pipeline layout: descriptor set layouts by ordinal (set `i` is `descriptor_set_layouts[i]`,
/// each in range) and push-constant ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipelineLayoutDef {
    pub descriptor_set_layouts: Vec<usize>,
    pub push_constant_ranges: Vec<PushConstantRange>,
}

impl PipelineLayoutDef {
    /// How many 32-bit dispatch constants the layout takes: the end of its furthest range.
    pub fn push_constant_count(&self) -> usize {
        let end = self.push_constant_ranges.iter().map(|r| u64::from(r.offset) + u64::from(r.size)).max();
        (end.unwrap_or(0) / 4) as usize
    }
}

/// Where a HAL binding ordinal lands: bindings are numbered in order over the layout's sets, each
/// set's bindings in the order the file lists them, each array element of a binding in turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BindingSlot {
    pub set: u32,
    pub binding: u32,
    pub array_element: u32,
    pub descriptor_type: DescriptorType,
}

/// One SPIR-V module (starts with the SPIR-V magic and a full header).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShaderModuleDef {
    pub spirv: Vec<u32>,
}

/// A line of a source file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceLocation {
    pub file: String,
    pub line: i32,
}

/// The optional debug information of an export (`iree.hal.debug.ExportDef`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportDebugInfo {
    /// The export's name in the producer.
    pub name: Option<String>,
    pub location: Option<SourceLocation>,
    /// Locations by compilation stage name (a stage may have none).
    pub stage_locations: Vec<(String, Option<SourceLocation>)>,
}

/// One export: a compute pipeline of an entry point of a shader module with a pipeline layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipelineDef {
    /// The SPIR-V entry point, which is also the export's name (`hal.executable.lookup.function`);
    /// a compute entry point of the module.
    pub entry_point: String,
    /// Index into [`ExecutableDef::shader_modules`], in range.
    pub shader_module: usize,
    /// Index into [`ExecutableDef::pipeline_layouts`], in range.
    pub pipeline_layout: usize,
    /// The subgroup size the pipeline requires (`VK_EXT_subgroup_size_control`), if any.
    pub subgroup_size: Option<u32>,
    /// The entry point's `LocalSize`, when the module declares one.
    pub workgroup_size: Option<[u32; 3]>,
    /// Whether its module may read the dispatch's workgroup count (see `spirv`).
    pub reads_workgroup_count: bool,
    pub debug_info: Option<ExportDebugInfo>,
}

/// A source file embedded for debugging.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFile {
    pub path: String,
    pub content: Vec<u8>,
}

/// A verified `vulkan-spirv-fb` executable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecutableDef {
    /// The exports, in ordinal order; at least one.
    pub pipelines: Vec<PipelineDef>,
    pub descriptor_set_layouts: Vec<DescriptorSetLayoutDef>,
    pub pipeline_layouts: Vec<PipelineLayoutDef>,
    pub shader_modules: Vec<ShaderModuleDef>,
    pub source_files: Vec<SourceFile>,
}

impl ExecutableDef {
    /// Reads and verifies an executable from the bytes given to `hal.executable.create`.
    pub fn parse(data: &[u8]) -> Result<ExecutableDef> {
        let buffer = flatbuffer(data)?;
        if buffer.identifier() != Some(IDENTIFIER.as_slice()) {
            return Err(LoadError::malformed(
                HEADER_SIZE + 4,
                format!("the FlatBuffer's file identifier is not `VKE1` (found {:?})", buffer.identifier()),
            ));
        }
        let root = buffer.root("ExecutableDef")?;
        let descriptor_set_layouts =
            each_table(&root, EXECUTABLE_DESCRIPTOR_SET_LAYOUTS, "DescriptorSetLayoutDef", parse_set_layout)?;
        let pipeline_layouts = each_table(&root, EXECUTABLE_PIPELINE_LAYOUTS, "PipelineLayoutDef", |t, i| {
            parse_pipeline_layout(t, i, &descriptor_set_layouts)
        })?;
        let mut shader_module_offsets = Vec::new();
        let shader_modules = each_table(&root, EXECUTABLE_SHADER_MODULES, "ShaderModuleDef", |table, index| {
            let (module, offset) = parse_shader_module(table, index)?;
            shader_module_offsets.push(offset);
            Ok(module)
        })?;
        let context = PipelineContext {
            shader_modules: &shader_modules,
            shader_module_offsets,
            pipeline_layouts: &pipeline_layouts,
        };
        let pipelines = each_table(&root, EXECUTABLE_PIPELINES, "PipelineDef", |t, i| parse_pipeline(t, i, &context))?;
        if pipelines.is_empty() {
            return Err(LoadError::malformed(root.offset(), "the executable declares no pipelines"));
        }
        let source_files = each_table(&root, EXECUTABLE_SOURCE_FILES, "SourceFileDef", |table, _| {
            Ok(SourceFile {
                path: table.string(SOURCE_FILE_PATH)?.unwrap_or_default().to_owned(),
                content: table.bytes(SOURCE_FILE_CONTENT)?.map(|b| b.data.to_vec()).unwrap_or_default(),
            })
        })?;
        Ok(ExecutableDef { pipelines, descriptor_set_layouts, pipeline_layouts, shader_modules, source_files })
    }

    /// Export names by ordinal.
    pub fn export_names(&self) -> Vec<String> {
        self.pipelines.iter().map(|p| p.entry_point.clone()).collect()
    }

    /// The HAL bindings of `layout`, by binding ordinal.
    pub fn binding_slots(&self, layout: &PipelineLayoutDef) -> Vec<BindingSlot> {
        let mut slots = Vec::new();
        for (set, &ordinal) in (0u32..).zip(&layout.descriptor_set_layouts) {
            for binding in self.descriptor_set_layouts.get(ordinal).map_or(&[][..], |s| &s.bindings) {
                slots.extend((0..binding.descriptor_count).map(|array_element| BindingSlot {
                    set,
                    binding: binding.binding,
                    array_element,
                    descriptor_type: binding.descriptor_type,
                }));
            }
        }
        slots
    }
}

/// The FlatBuffer behind the header, after checking the header.
fn flatbuffer(data: &[u8]) -> Result<FlatBuffer<'_>> {
    let Some(header) = data.get(..HEADER_SIZE) else {
        return Err(LoadError::truncated(
            0,
            format!("a vulkan-spirv-fb executable starts with a {HEADER_SIZE}-byte header; only {} bytes", data.len()),
        ));
    };
    if &header[..4] != IDENTIFIER {
        return Err(LoadError::malformed(
            0,
            format!("the executable does not start with `VKE1` (found {:02x?})", &header[..4]),
        ));
    }
    let version = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    if version != 0 {
        return Err(LoadError::unsupported(4, format!("executable header version {version}; only version 0 is known")));
    }
    let mut size = [0u8; 8];
    size.copy_from_slice(&header[8..16]);
    let size = u64::from_le_bytes(size);
    let available = data.len() - HEADER_SIZE;
    match usize::try_from(size).ok().filter(|&s| s > 0 && s <= available) {
        Some(size) => Ok(FlatBuffer::new(&data[HEADER_SIZE..HEADER_SIZE + size], HEADER_SIZE)),
        None if size == 0 => Err(LoadError::malformed(8, "the executable header says the FlatBuffer is empty")),
        None => Err(LoadError::truncated(
            8,
            format!("the executable header says the FlatBuffer has {size} bytes but only {available} follow"),
        )),
    }
}

/// Parses every table (of schema type `type_name`) of a vector field (absent is empty) with
/// `parse(table, index)`.
fn each_table<'a, T>(
    parent: &Table<'a>,
    field: Field,
    type_name: &'static str,
    mut parse: impl FnMut(&Table<'a>, usize) -> Result<T>,
) -> Result<Vec<T>> {
    let Some(tables) = parent.tables(field, type_name)? else {
        return Ok(Vec::new());
    };
    (0..tables.len()).map(|index| parse(&tables.get(index)?, index)).collect()
}

/// Where to point an error about a field: the field if present, else its table.
fn at(table: &Table<'_>, field: Field) -> usize {
    table.field_offset(field).unwrap_or(table.offset())
}

fn stage_includes_compute(flags: u32) -> bool {
    flags == STAGE_ALL || flags & STAGE_COMPUTE != 0
}

fn parse_set_layout(table: &Table<'_>, index: usize) -> Result<DescriptorSetLayoutDef> {
    let bindings = each_table(table, SET_LAYOUT_BINDINGS, "DescriptorSetLayoutBindingDef", |binding, b| {
        let what = || format!("descriptor_set_layouts[{index}].bindings[{b}]");
        let raw_type = binding.scalar::<u32>(BINDING_DESCRIPTOR_TYPE, 0)?;
        let descriptor_type = DescriptorType::from_raw(raw_type).ok_or_else(|| {
            LoadError::malformed(
                at(binding, BINDING_DESCRIPTOR_TYPE),
                format!("{} has descriptor type {raw_type}; only SAMPLER (0), UNIFORM_BUFFER (6) and STORAGE_BUFFER (7) are allowed", what()),
            )
        })?;
        let descriptor_count = binding.scalar::<u32>(BINDING_DESCRIPTOR_COUNT, 0)?;
        if descriptor_count == 0 {
            return Err(LoadError::malformed(binding.offset(), format!("{} has no descriptors", what())));
        }
        let stage_flags = binding.scalar::<u32>(BINDING_STAGE_FLAGS, 0)?;
        if !stage_includes_compute(stage_flags) {
            return Err(LoadError::malformed(
                at(binding, BINDING_STAGE_FLAGS),
                format!("{} has stage flags {stage_flags:#x}, which exclude the compute stage", what()),
            ));
        }
        Ok((
            binding.offset(),
            DescriptorSetLayoutBinding {
                binding: binding.scalar::<u32>(BINDING_BINDING, 0)?,
                descriptor_type,
                descriptor_count,
                stage_flags,
            },
        ))
    })?;
    for (i, (offset, binding)) in bindings.iter().enumerate() {
        if bindings[..i].iter().any(|(_, earlier)| earlier.binding == binding.binding) {
            return Err(LoadError::malformed(
                *offset,
                format!("descriptor_set_layouts[{index}] declares binding {} twice", binding.binding),
            ));
        }
    }
    Ok(DescriptorSetLayoutDef { bindings: bindings.into_iter().map(|(_, b)| b).collect() })
}

fn parse_pipeline_layout(
    table: &Table<'_>,
    index: usize,
    set_layouts: &[DescriptorSetLayoutDef],
) -> Result<PipelineLayoutDef> {
    let mut descriptor_set_layouts = Vec::new();
    if let Some(ordinals) = table.scalars::<u32>(LAYOUT_SET_LAYOUT_ORDINALS)? {
        for (i, ordinal) in ordinals.iter().enumerate() {
            let ordinal = ordinal as usize;
            if ordinal >= set_layouts.len() {
                return Err(LoadError::malformed(
                    ordinals.offset() + 4 * i,
                    format!(
                        "pipeline_layouts[{index}] names descriptor set layout {ordinal}; the executable has {}",
                        set_layouts.len()
                    ),
                ));
            }
            descriptor_set_layouts.push(ordinal);
        }
    }
    let mut push_constant_ranges = Vec::new();
    if let Some(ranges) = table.structs(LAYOUT_PUSH_CONSTANT_RANGES, 12, 4)? {
        for (i, range) in ranges.iter().enumerate() {
            let range =
                PushConstantRange { stage_flags: range.field(0)?, offset: range.field(4)?, size: range.field(8)? };
            let what = format!("pipeline_layouts[{index}].push_constant_ranges[{i}]");
            let offset = ranges.get(i).map_or(table.offset(), |r| r.offset());
            if !stage_includes_compute(range.stage_flags) {
                return Err(LoadError::malformed(
                    offset,
                    format!("{what} has stage flags {:#x}, which exclude the compute stage", range.stage_flags),
                ));
            }
            if !range.offset.is_multiple_of(4) || !range.size.is_multiple_of(4) || range.size == 0 {
                return Err(LoadError::malformed(
                    offset,
                    format!(
                        "{what} (offset {}, size {}) is not a non-empty run of 4-byte words",
                        range.offset, range.size
                    ),
                ));
            }
            push_constant_ranges.push(range);
        }
    }
    Ok(PipelineLayoutDef { descriptor_set_layouts, push_constant_ranges })
}

fn parse_shader_module(table: &Table<'_>, index: usize) -> Result<(ShaderModuleDef, usize)> {
    let Some(code) = table.scalars::<u32>(SHADER_MODULE_SPIRV_CODE)? else {
        return Err(LoadError::malformed(table.offset(), format!("shader_modules[{index}] has no SPIR-V")));
    };
    let spirv: Vec<u32> = code.iter().collect();
    if spirv.first() != Some(&spirv::MAGIC) {
        return Err(LoadError::malformed(
            code.offset(),
            format!("shader_modules[{index}] does not start with the SPIR-V magic {:#010x}", spirv::MAGIC),
        ));
    }
    Ok((ShaderModuleDef { spirv }, code.offset()))
}

/// What pipelines refer to, parsed before them.
struct PipelineContext<'d> {
    shader_modules: &'d [ShaderModuleDef],
    shader_module_offsets: Vec<usize>,
    pipeline_layouts: &'d [PipelineLayoutDef],
}

fn parse_pipeline(table: &Table<'_>, index: usize, context: &PipelineContext<'_>) -> Result<PipelineDef> {
    let what = format!("pipelines[{index}]");
    let ordinal = |field: Field, count: usize, of: &str| -> Result<usize> {
        let value = table.scalar::<u32>(field, 0)? as usize;
        if value >= count {
            return Err(LoadError::malformed(
                at(table, field),
                format!("{what} names {of} {value}; the executable has {count}"),
            ));
        }
        Ok(value)
    };
    let shader_module = ordinal(PIPELINE_SHADER_MODULE_ORDINAL, context.shader_modules.len(), "shader module")?;
    let pipeline_layout = ordinal(PIPELINE_PIPELINE_LAYOUT_ORDINAL, context.pipeline_layouts.len(), "pipeline layout")?;
    let entry_point = table.string(PIPELINE_ENTRY_POINT)?.unwrap_or_default();
    if entry_point.is_empty() {
        return Err(LoadError::malformed(at(table, PIPELINE_ENTRY_POINT), format!("{what} has no entry point name")));
    }
    match table.scalar::<u8>(PIPELINE_DISPATCH_ABI, 0)? {
        0 => {}
        1 => {
            return Err(LoadError::unsupported(
                at(table, PIPELINE_DISPATCH_ABI),
                format!(
                    "{what} uses the buffer-device-address dispatch ABI (vulkan-spirv-bda-v1), which is not supported"
                ),
            ))
        }
        abi => {
            return Err(LoadError::malformed(
                at(table, PIPELINE_DISPATCH_ABI),
                format!("{what} has unknown dispatch ABI {abi}"),
            ))
        }
    }
    if table.field_offset(PIPELINE_BDA_DISPATCH_LAYOUT).is_some() {
        return Err(LoadError::malformed(
            at(table, PIPELINE_BDA_DISPATCH_LAYOUT),
            format!("{what} uses descriptor sets but declares a buffer-device-address layout"),
        ));
    }
    let module_offset = context.shader_module_offsets.get(shader_module).copied().unwrap_or(0);
    let spirv = &context.shader_modules[shader_module].spirv;
    let module_name = format!("shader_modules[{shader_module}]");
    let Some(found) = spirv::find_compute_entry_point(spirv, entry_point, module_offset, &module_name)? else {
        return Err(LoadError::malformed(
            at(table, PIPELINE_ENTRY_POINT),
            format!("{what} names entry point `{entry_point}`, which is not a compute entry point of {module_name}"),
        ));
    };
    let subgroup_size = table.scalar::<u32>(PIPELINE_SUBGROUP_SIZE, 0)?;
    Ok(PipelineDef {
        entry_point: entry_point.to_owned(),
        shader_module,
        pipeline_layout,
        subgroup_size: (subgroup_size != 0).then_some(subgroup_size),
        workgroup_size: found.workgroup_size,
        reads_workgroup_count: found.reads_workgroup_count,
        debug_info: table.table(PIPELINE_DEBUG_INFO, "ExportDef")?.map(|t| parse_debug_info(&t, &what)).transpose()?,
    })
}

fn parse_debug_info(table: &Table<'_>, what: &str) -> Result<ExportDebugInfo> {
    let location = |parent: &Table<'_>, field: Field| -> Result<Option<SourceLocation>> {
        let Some(location) = parent.table(field, "FileLineLocDef")? else {
            return Ok(None);
        };
        let file = location.string(LOCATION_FILENAME)?.unwrap_or_default();
        if file.is_empty() {
            return Err(LoadError::malformed(
                location.offset(),
                format!("a source location of {what} has no file name"),
            ));
        }
        Ok(Some(SourceLocation { file: file.to_owned(), line: location.scalar::<i32>(LOCATION_LINE, 0)? }))
    };
    let stage_locations = each_table(table, EXPORT_STAGE_LOCATIONS, "StageLocationDef", |stage, i| {
        let name = stage.string(STAGE_LOCATION_STAGE)?.unwrap_or_default();
        if name.is_empty() {
            return Err(LoadError::malformed(
                stage.offset(),
                format!("stage location {i} of {what} has no stage name"),
            ));
        }
        Ok((name.to_owned(), location(stage, STAGE_LOCATION_LOCATION)?))
    })?;
    Ok(ExportDebugInfo {
        name: table.string(EXPORT_NAME)?.map(str::to_owned),
        location: location(table, EXPORT_LOCATION)?,
        stage_locations,
    })
}
