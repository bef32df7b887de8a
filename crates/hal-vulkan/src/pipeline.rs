//! An executable's Vulkan objects on one device: its descriptor set layouts, pipeline layouts and
//! one compute pipeline per export, built from a verified [`ExecutableDef`] and destroyed together
//! when [`Pipelines`] is dropped. Shader modules live only while the pipelines are made.
//!
//! What the file asks of the device (push-constant bytes, descriptors per stage, a subgroup size)
//! is checked against the device's limits first, so an executable the device cannot run is an
//! error here rather than undefined behaviour in the driver.

use std::ffi::CString;
use std::ops::RangeInclusive;

use ash::vk;

use super::executable_def::{BindingSlot, DescriptorType, ExecutableDef, PipelineLayoutDef};

/// Why an executable's pipelines could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// The device lacks something the executable needs.
    #[error("{0}")]
    Unsupported(String),
    /// A Vulkan call failed.
    #[error("{what}: {result}")]
    Vulkan { what: String, result: vk::Result },
}

/// What the device offers that executables ask for.
#[derive(Clone, Debug)]
pub struct PipelineSupport {
    pub limits: vk::PhysicalDeviceLimits,
    /// The subgroup sizes a compute pipeline may require, when `subgroupSizeControl` is enabled.
    pub required_subgroup_sizes: Option<RangeInclusive<u32>>,
    /// `maxPushDescriptors`, when `VK_KHR_push_descriptor` is enabled.
    pub max_push_descriptors: Option<u32>,
}

/// One export's pipeline and what a command buffer needs to dispatch it.
#[derive(Debug)]
pub struct Pipeline {
    /// The export name (the SPIR-V entry point).
    pub name: String,
    pub handle: vk::Pipeline,
    pub layout: vk::PipelineLayout,
    /// The layouts of sets `0..n`, for allocating or pushing descriptor sets.
    pub set_layouts: Vec<vk::DescriptorSetLayout>,
    /// Where each HAL binding ordinal goes.
    pub bindings: Vec<BindingSlot>,
    /// How many 32-bit dispatch constants are pushed.
    pub push_constant_count: usize,
    /// The stages of the push-constant ranges (a push names all of them).
    pub push_constant_stages: vk::ShaderStageFlags,
    pub workgroup_size: Option<[u32; 3]>,
    /// Whether its code may read the dispatch's workgroup count: a grid past the device's limit
    /// then cannot run in pieces.
    pub reads_workgroup_count: bool,
}

/// The Vulkan objects of one executable.
pub struct Pipelines {
    device: ash::Device,
    set_layouts: Vec<vk::DescriptorSetLayout>,
    pipeline_layouts: Vec<vk::PipelineLayout>,
    pipelines: Vec<Pipeline>,
    push_descriptors: bool,
}

impl std::fmt::Debug for Pipelines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipelines").field("pipelines", &self.pipelines).finish_non_exhaustive()
    }
}

impl Pipelines {
    /// Makes every pipeline of `def` on `device`, with `constants` as specialization constants
    /// `0..n` (the constants of `hal.executable.create`).
    ///
    /// # Safety
    /// `device` must be a live logical device, `support` must describe its physical device and
    /// enabled features, and the device must outlive the returned value (its drop destroys the
    /// objects made here through `device`).
    pub unsafe fn create(
        device: &ash::Device,
        def: &ExecutableDef,
        constants: &[u32],
        support: &PipelineSupport,
    ) -> Result<Pipelines, PipelineError> {
        for (index, layout) in def.pipeline_layouts.iter().enumerate() {
            check_layout(def, layout, index, support)?;
        }
        let push_descriptors = uses_push_descriptors(def, support);
        let mut pipelines = Pipelines {
            device: device.clone(),
            set_layouts: Vec::new(),
            pipeline_layouts: Vec::new(),
            pipelines: Vec::new(),
            push_descriptors,
        };
        // SAFETY: the caller's contract; everything made is recorded in `pipelines` as soon as it
        // exists, so an early return destroys it.
        unsafe { pipelines.build(def, constants, support)? };
        Ok(pipelines)
    }

    /// Whether the set layouts were made for `vkCmdPushDescriptorSetKHR` (rather than pools).
    pub fn push_descriptors(&self) -> bool {
        self.push_descriptors
    }

    /// The pipelines by export ordinal.
    pub fn pipelines(&self) -> &[Pipeline] {
        &self.pipelines
    }

    /// # Safety
    /// As for [`Pipelines::create`].
    unsafe fn build(
        &mut self,
        def: &ExecutableDef,
        constants: &[u32],
        support: &PipelineSupport,
    ) -> Result<(), PipelineError> {
        let device = self.device.clone();
        for (index, set) in def.descriptor_set_layouts.iter().enumerate() {
            let bindings: Vec<vk::DescriptorSetLayoutBinding<'_>> = set
                .bindings
                .iter()
                .map(|b| {
                    vk::DescriptorSetLayoutBinding::default()
                        .binding(b.binding)
                        .descriptor_type(vk::DescriptorType::from_raw(b.descriptor_type.raw() as i32))
                        .descriptor_count(b.descriptor_count)
                        .stage_flags(vk::ShaderStageFlags::from_raw(b.stage_flags))
                })
                .collect();
            let flags = if self.push_descriptors && !bindings.is_empty() {
                vk::DescriptorSetLayoutCreateFlags::PUSH_DESCRIPTOR_KHR
            } else {
                vk::DescriptorSetLayoutCreateFlags::empty()
            };
            let info = vk::DescriptorSetLayoutCreateInfo::default().flags(flags).bindings(&bindings);
            // SAFETY: a live device (the caller's contract) and a well-formed create info.
            let layout = unsafe { device.create_descriptor_set_layout(&info, None) }
                .map_err(|result| vulkan(format!("creating descriptor_set_layouts[{index}]"), result))?;
            self.set_layouts.push(layout);
        }
        for (index, layout) in def.pipeline_layouts.iter().enumerate() {
            let sets: Vec<vk::DescriptorSetLayout> =
                layout.descriptor_set_layouts.iter().map(|&ordinal| self.set_layouts[ordinal]).collect();
            let ranges: Vec<vk::PushConstantRange> = layout
                .push_constant_ranges
                .iter()
                .map(|r| vk::PushConstantRange {
                    stage_flags: vk::ShaderStageFlags::from_raw(r.stage_flags),
                    offset: r.offset,
                    size: r.size,
                })
                .collect();
            let info = vk::PipelineLayoutCreateInfo::default().set_layouts(&sets).push_constant_ranges(&ranges);
            // SAFETY: as above; the set layouts were made on this device.
            let made = unsafe { device.create_pipeline_layout(&info, None) }
                .map_err(|result| vulkan(format!("creating pipeline_layouts[{index}]"), result))?;
            self.pipeline_layouts.push(made);
        }
        let mut modules = Vec::with_capacity(def.shader_modules.len());
        // SAFETY: the caller's contract, passed on.
        let result = unsafe { self.build_pipelines(def, constants, support, &mut modules) };
        for module in modules {
            // SAFETY: made on this device below; pipelines no longer need their modules once made.
            unsafe { device.destroy_shader_module(module, None) };
        }
        result
    }

    /// # Safety
    /// As for [`Pipelines::create`]; the layouts are already made. The shader modules made are
    /// pushed to `modules` for the caller to destroy.
    unsafe fn build_pipelines(
        &mut self,
        def: &ExecutableDef,
        constants: &[u32],
        support: &PipelineSupport,
        modules: &mut Vec<vk::ShaderModule>,
    ) -> Result<(), PipelineError> {
        let device = self.device.clone();
        for (index, module) in def.shader_modules.iter().enumerate() {
            let info = vk::ShaderModuleCreateInfo::default().code(&module.spirv);
            // SAFETY: a live device; the words start with the SPIR-V header (checked when parsed).
            let made = unsafe { device.create_shader_module(&info, None) }
                .map_err(|result| vulkan(format!("creating shader_modules[{index}]"), result))?;
            modules.push(made);
        }
        let map: Vec<vk::SpecializationMapEntry> = (0..constants.len() as u32)
            .map(|id| vk::SpecializationMapEntry { constant_id: id, offset: id * 4, size: 4 })
            .collect();
        let data: Vec<u8> = constants.iter().flat_map(|c| c.to_ne_bytes()).collect();
        let specialization = vk::SpecializationInfo::default().map_entries(&map).data(&data);
        for (index, def_pipeline) in def.pipelines.iter().enumerate() {
            let what = || format!("pipelines[{index}] (`{}`)", def_pipeline.entry_point);
            if let Some(size) = def_pipeline.subgroup_size {
                if !support.required_subgroup_sizes.as_ref().is_some_and(|sizes| sizes.contains(&size)) {
                    return Err(PipelineError::Unsupported(format!(
                        "{} requires subgroup size {size}, which the device cannot guarantee (supported: {:?})",
                        what(),
                        support.required_subgroup_sizes
                    )));
                }
            }
            let name = CString::new(def_pipeline.entry_point.as_str())
                .map_err(|_| PipelineError::Unsupported(format!("{} has a NUL in its entry point name", what())))?;
            let mut subgroup = vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default()
                .required_subgroup_size(def_pipeline.subgroup_size.unwrap_or(0));
            let mut stage = vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::COMPUTE)
                .module(modules[def_pipeline.shader_module])
                .name(&name);
            if !constants.is_empty() {
                stage = stage.specialization_info(&specialization);
            }
            if def_pipeline.subgroup_size.is_some() {
                stage = stage.push_next(&mut subgroup);
            }
            let layout = self.pipeline_layouts[def_pipeline.pipeline_layout];
            // Dispatchable with a base workgroup (`vkCmdDispatchBase`), so that a grid past the
            // device's limit can run in pieces.
            let info = vk::ComputePipelineCreateInfo::default()
                .flags(vk::PipelineCreateFlags::DISPATCH_BASE)
                .stage(stage)
                .layout(layout);
            // SAFETY: a live device; module, layout and entry point were made or checked above.
            let made = unsafe { device.create_compute_pipelines(vk::PipelineCache::null(), &[info], None) }
                .map_err(|(_, result)| vulkan(format!("creating {}", what()), result))?;
            let layout_def = &def.pipeline_layouts[def_pipeline.pipeline_layout];
            self.pipelines.push(Pipeline {
                name: def_pipeline.entry_point.clone(),
                handle: made[0],
                layout,
                set_layouts: layout_def.descriptor_set_layouts.iter().map(|&o| self.set_layouts[o]).collect(),
                bindings: def.binding_slots(layout_def),
                push_constant_count: layout_def.push_constant_count(),
                push_constant_stages: layout_def
                    .push_constant_ranges
                    .iter()
                    .fold(vk::ShaderStageFlags::empty(), |stages, r| {
                        stages | vk::ShaderStageFlags::from_raw(r.stage_flags)
                    }),
                workgroup_size: def_pipeline.workgroup_size,
                reads_workgroup_count: def_pipeline.reads_workgroup_count,
            });
        }
        Ok(())
    }
}

impl Drop for Pipelines {
    fn drop(&mut self) {
        // SAFETY: every handle was made on `device`, which outlives `self` (the contract of
        // `create`); the command buffers using them have finished (the owner of the executable
        // keeps it alive until then, as the HAL requires).
        unsafe {
            for pipeline in &self.pipelines {
                self.device.destroy_pipeline(pipeline.handle, None);
            }
            for &layout in &self.pipeline_layouts {
                self.device.destroy_pipeline_layout(layout, None);
            }
            for &layout in &self.set_layouts {
                self.device.destroy_descriptor_set_layout(layout, None);
            }
        }
    }
}

fn vulkan(what: String, result: vk::Result) -> PipelineError {
    PipelineError::Vulkan { what, result }
}

/// Checks a pipeline layout against the device's limits.
fn check_layout(
    def: &ExecutableDef,
    layout: &PipelineLayoutDef,
    index: usize,
    support: &PipelineSupport,
) -> Result<(), PipelineError> {
    let limits = &support.limits;
    let unsupported = |what: String| Err(PipelineError::Unsupported(format!("pipeline_layouts[{index}] {what}")));
    if layout.descriptor_set_layouts.len() > limits.max_bound_descriptor_sets as usize {
        return unsupported(format!(
            "uses {} descriptor sets; the device binds at most {}",
            layout.descriptor_set_layouts.len(),
            limits.max_bound_descriptor_sets
        ));
    }
    let count = |kind: DescriptorType| {
        def.binding_slots(layout).iter().filter(|slot| slot.descriptor_type == kind).count() as u64
    };
    if count(DescriptorType::Sampler) > 0 {
        return unsupported("uses sampler descriptors, which compute dispatches do not support".to_owned());
    }
    for (kind, limit) in [
        (DescriptorType::StorageBuffer, limits.max_per_stage_descriptor_storage_buffers),
        (DescriptorType::UniformBuffer, limits.max_per_stage_descriptor_uniform_buffers),
    ] {
        if count(kind) > u64::from(limit) {
            return unsupported(format!("declares {} {kind:?} descriptors; the device allows {limit}", count(kind)));
        }
    }
    let push_bytes = layout.push_constant_count() as u64 * 4;
    if push_bytes > u64::from(limits.max_push_constants_size) {
        return unsupported(format!(
            "needs {push_bytes} bytes of push constants; the device allows {}",
            limits.max_push_constants_size
        ));
    }
    Ok(())
}

/// Push descriptors (as IREE's driver chooses them) serve when the extension is enabled and every
/// layout binds at most one non-empty set within the device's push-descriptor limit.
fn uses_push_descriptors(def: &ExecutableDef, support: &PipelineSupport) -> bool {
    let Some(max) = support.max_push_descriptors.filter(|&max| max > 0) else {
        return false;
    };
    def.pipeline_layouts.iter().all(|layout| {
        let non_empty = layout
            .descriptor_set_layouts
            .iter()
            .filter(|&&ordinal| !def.descriptor_set_layouts[ordinal].bindings.is_empty())
            .count();
        non_empty <= 1 && def.binding_slots(layout).len() <= max as usize
    })
}
