//! Command buffers of a Vulkan device. The HAL's commands are kept as recorded and turned into a
//! Vulkan command buffer when the queue executes them: only then are the binding table's buffers
//! known, so one-shot and reusable command buffers take the same path. Dispatches bind their
//! pipeline, their buffers (pushed where the device has push descriptors, otherwise in sets from a
//! pool made for the submission), and push constants; barriers
//! make earlier writes visible to later dispatches, transfers and indirect dispatch reads.

use std::collections::BTreeMap;
use std::sync::Arc;

use ash::vk;

use super::error::VulkanError;
use super::executable::{vulkan_executable, VulkanExecutable};
use super::executable_def::DescriptorType;
use super::logical_device::LogicalDevice;
use super::queue::Recording;
use super::timestamps::Timestamps;
use super::transfer::{self, resolve, same_device, Bound};
use rtx_hal::command_buffer::{BufferRange, Command, CommandList, ExecutableCheck, SpareLists, TableEntry, Workgroups};
use rtx_hal::executable::Executable;
use rtx_host::{Diagnostic, StatusCode};

/// A command buffer of `device` (it dispatches only executables the device loaded), its storage
/// one of `spares` if there is one.
pub fn new(device: Arc<LogicalDevice>, binding_capacity: u32, spares: &Arc<SpareLists>) -> CommandList {
    let accepts: ExecutableCheck = Box::new(move |executable| loaded_by(executable, device.handle()).map(drop));
    CommandList::new(binding_capacity, accepts, spares)
}

/// The executable as `device` loaded it: INVALID_ARGUMENT for another device's.
fn loaded_by<'a>(executable: &'a Executable, device: &ash::Device) -> Result<&'a VulkanExecutable, Diagnostic> {
    let loaded = vulkan_executable(executable)?;
    if loaded.device().handle().handle() != device.handle() {
        return Err(Diagnostic::new(StatusCode::InvalidArgument, "executable was loaded by another Vulkan device"));
    }
    Ok(loaded)
}

/// Records the commands of `list` into `recording`, `table` supplying the buffers of slots. The
/// descriptor pool the dispatches use the recording keeps; the submission must keep `list` and
/// `table` (the buffers and executables they name).
pub fn record(list: &CommandList, recording: &mut Recording<'_>, table: &[TableEntry]) -> Result<(), Diagnostic> {
    list.with_commands(|recorded| {
        let commands = recorded.commands();
        let pool = DescriptorPool::for_commands(recording.device(), commands)?;
        let mut timestamps = Timestamps::start(recording, commands)?;
        for command in commands {
            match command {
                Command::Dispatch { executable, export, workgroups, constants, bindings } => {
                    let (constants, bindings) = (recorded.constants(*constants), recorded.bindings(*bindings));
                    let command = DispatchCommand { executable, export: *export, workgroups, constants, bindings };
                    if let Some(timestamps) = &timestamps {
                        timestamps.before(recording);
                    }
                    let (name, bytes) = dispatch(recording, pool.as_ref(), &command, table)?;
                    if let Some(timestamps) = &mut timestamps {
                        timestamps.after(recording, name, workgroups, bytes);
                    }
                }
                Command::Transfer(transfer) => transfer::record(recording, transfer, table)?,
                Command::Barrier => recording.barrier(
                    vk::AccessFlags::SHADER_READ
                        | vk::AccessFlags::SHADER_WRITE
                        | vk::AccessFlags::TRANSFER_READ
                        | vk::AccessFlags::TRANSFER_WRITE
                        | vk::AccessFlags::INDIRECT_COMMAND_READ,
                    vk::PipelineStageFlags::COMPUTE_SHADER
                        | vk::PipelineStageFlags::TRANSFER
                        | vk::PipelineStageFlags::DRAW_INDIRECT,
                ),
            }
        }
        if let Some(pool) = pool {
            recording.keep(pool);
        }
        if let Some(timestamps) = timestamps {
            timestamps.end(recording);
            recording.time(timestamps);
        }
        Ok(())
    })
}

/// Records the dispatch; the name of the pipeline it runs, and the bytes it binds.
fn dispatch<'c>(
    recording: &mut Recording<'_>,
    pool: Option<&DescriptorPool>,
    command: &DispatchCommand<'c>,
    table: &[TableEntry],
) -> Result<(&'c str, u64), Diagnostic> {
    let loaded = loaded_by(command.executable, recording.device())?;
    let pipeline = loaded.pipeline(command.executable.check_export(command.export)?);
    let name = &pipeline.name;
    if command.bindings.len() != pipeline.bindings.len() {
        return Err(Diagnostic::new(
            StatusCode::InvalidArgument,
            format!(
                "dispatch of `{name}` gives {} bindings; its layout has {}",
                command.bindings.len(),
                pipeline.bindings.len()
            ),
        ));
    }
    if command.constants.len() != pipeline.push_constant_count {
        return Err(Diagnostic::new(
            StatusCode::InvalidArgument,
            format!(
                "dispatch of `{name}` gives {} constants; its layout pushes {}",
                command.constants.len(),
                pipeline.push_constant_count
            ),
        ));
    }
    let bound = command
        .bindings
        .iter()
        .enumerate()
        .map(|(index, range)| {
            let context = |e: Diagnostic| e.context(format_args!("dispatch of `{name}` binding {index}"));
            let bound = resolve(range, table).map_err(context)?;
            same_device(recording, &bound)?;
            check_binding(&bound, pipeline.bindings[index].descriptor_type, loaded.device().limits())
                .map_err(context)?;
            Ok(bound)
        })
        .collect::<Result<Vec<Bound>, Diagnostic>>()?;
    let max = loaded.device().limits().max_compute_work_group_count;
    if let Workgroups::Fixed(counts) = command.workgroups {
        if pipeline.reads_workgroup_count && counts.iter().zip(max).any(|(&count, max)| count > max) {
            return Err(Diagnostic::new(
                StatusCode::OutOfRange,
                format!(
                    "dispatch of `{name}` asks for {counts:?} workgroups; the device runs at most {max:?} at once, \
                     and its code reads the workgroup count, so it cannot run in pieces"
                ),
            ));
        }
    }
    let device = recording.device().clone();
    let commands = recording.commands();
    let pushed = if loaded.push_descriptors() { loaded.device().push_descriptors() } else { None };
    let sets = match (pushed, pool) {
        (None, Some(pool)) if !pipeline.set_layouts.is_empty() => pool.allocate(&pipeline.set_layouts)?,
        _ => Vec::new(),
    };
    let infos: Vec<[vk::DescriptorBufferInfo; 1]> = bound
        .iter()
        .map(|b| {
            let range = if b.length == 0 { vk::WHOLE_SIZE } else { b.length };
            [vk::DescriptorBufferInfo { buffer: b.buffer.handle(), offset: b.offset, range }]
        })
        .collect();
    let writes: Vec<(u32, vk::WriteDescriptorSet<'_>)> = pipeline
        .bindings
        .iter()
        .zip(&infos)
        .map(|(slot, info)| {
            let write = vk::WriteDescriptorSet::default()
                // Pushed writes name no set (the pool has room for every set a dispatch that
                // binds them needs).
                .dst_set(sets.get(slot.set as usize).copied().unwrap_or_default())
                .dst_binding(slot.binding)
                .dst_array_element(slot.array_element)
                .descriptor_type(vk::DescriptorType::from_raw(slot.descriptor_type.raw() as i32))
                .buffer_info(info);
            (slot.set, write)
        })
        .collect();
    let push: Vec<u8> = command.constants.iter().flat_map(|c| c.to_ne_bytes()).collect();
    let indirect = match command.workgroups {
        Workgroups::Fixed(_) => None,
        Workgroups::Indirect(range) => Some(indirect_counts(recording, range, table)?),
    };
    // SAFETY: recording into a command buffer of the locked pool; the sets were allocated
    // from layouts of this pipeline and every buffer they name is live and of this device
    // (kept alive by the submission, which holds the command buffer and the table).
    unsafe {
        device.cmd_bind_pipeline(commands, vk::PipelineBindPoint::COMPUTE, pipeline.handle);
        match pushed {
            Some(loader) => {
                let mut by_set: BTreeMap<u32, Vec<vk::WriteDescriptorSet<'_>>> = BTreeMap::new();
                for (set, write) in writes {
                    by_set.entry(set).or_default().push(write);
                }
                for (set, writes) in by_set {
                    loader.cmd_push_descriptor_set(
                        commands,
                        vk::PipelineBindPoint::COMPUTE,
                        pipeline.layout,
                        set,
                        &writes,
                    );
                }
            }
            None => {
                let writes: Vec<vk::WriteDescriptorSet<'_>> = writes.into_iter().map(|(_, write)| write).collect();
                if !writes.is_empty() {
                    device.update_descriptor_sets(&writes, &[]);
                }
                if !sets.is_empty() {
                    device.cmd_bind_descriptor_sets(
                        commands,
                        vk::PipelineBindPoint::COMPUTE,
                        pipeline.layout,
                        0,
                        &sets,
                        &[],
                    );
                }
            }
        }
        if !push.is_empty() {
            device.cmd_push_constants(commands, pipeline.layout, pipeline.push_constant_stages, 0, &push);
        }
        match (command.workgroups, indirect) {
            (Workgroups::Fixed(counts), _) if counts.iter().all(|&count| count > 0) => {
                for (base, count) in pieces(*counts, max) {
                    device.cmd_dispatch_base(commands, base[0], base[1], base[2], count[0], count[1], count[2]);
                }
            }
            (_, Some(counts)) => device.cmd_dispatch_indirect(commands, counts.buffer.handle(), counts.offset),
            _ => {}
        }
    }
    Ok((name, bound.iter().map(|b| b.length).sum()))
}

/// The pieces of a grid of `counts` workgroups, each within `max` on every axis: its base and its
/// counts. A grid within the limit is one piece; past it, the code sees each workgroup's id as in
/// one dispatch (the base is added to the ids), which is the same unless it reads the count.
fn pieces(counts: [u32; 3], max: [u32; 3]) -> impl Iterator<Item = ([u32; 3], [u32; 3])> {
    let max = max.map(|max| max.max(1));
    let starts = move |axis: usize| (0..counts[axis]).step_by(max[axis] as usize);
    starts(2).flat_map(move |z| {
        starts(1).flat_map(move |y| {
            starts(0).map(move |x| {
                let base = [x, y, z];
                (base, std::array::from_fn(|axis| (counts[axis] - base[axis]).min(max[axis])))
            })
        })
    })
}

/// One recorded dispatch's parts.
struct DispatchCommand<'a> {
    executable: &'a Executable,
    export: usize,
    workgroups: &'a Workgroups,
    constants: &'a [u32],
    bindings: &'a [BufferRange],
}

/// A binding's offset and length as the device's descriptors allow them for its kind of buffer.
fn check_binding(bound: &Bound, kind: DescriptorType, limits: &vk::PhysicalDeviceLimits) -> Result<(), Diagnostic> {
    let (alignment, max_range, what) = match kind {
        DescriptorType::UniformBuffer => {
            (limits.min_uniform_buffer_offset_alignment, limits.max_uniform_buffer_range, "uniform")
        }
        _ => (limits.min_storage_buffer_offset_alignment, limits.max_storage_buffer_range, "storage"),
    };
    if !bound.offset.is_multiple_of(alignment.max(1)) {
        return Err(Diagnostic::new(
            StatusCode::InvalidArgument,
            format!(
                "offset {} is not a multiple of the device's {what}-buffer offset alignment {alignment}",
                bound.offset
            ),
        ));
    }
    if bound.length > u64::from(max_range) {
        return Err(Diagnostic::new(
            StatusCode::OutOfRange,
            format!("{} bytes exceed the device's {what}-buffer range of {max_range}", bound.length),
        ));
    }
    Ok(())
}

/// The three u32 workgroup counts an indirect dispatch reads: 12 bytes at a 4-byte-aligned offset.
fn indirect_counts(recording: &Recording<'_>, range: &BufferRange, table: &[TableEntry]) -> Result<Bound, Diagnostic> {
    let bound = resolve(range, table).map_err(|e| e.context("indirect workgroup counts"))?;
    same_device(recording, &bound)?;
    if bound.length < 12 || bound.offset % 4 != 0 {
        return Err(Diagnostic::new(
            StatusCode::InvalidArgument,
            format!(
                "indirect workgroup counts need 12 bytes at a 4-byte-aligned offset (got {} bytes at {})",
                bound.length, bound.offset
            ),
        ));
    }
    Ok(bound)
}

/// A descriptor pool with room for every set the dispatches of one submission bind, destroyed
/// (freeing its sets) once the device is done with the submission.
struct DescriptorPool {
    device: ash::Device,
    pool: vk::DescriptorPool,
}

impl DescriptorPool {
    /// The pool for `commands`; `None` when they bind no sets.
    fn for_commands(device: &ash::Device, commands: &[Command]) -> Result<Option<DescriptorPool>, Diagnostic> {
        let mut sets = 0u32;
        let mut counts: BTreeMap<i32, u32> = BTreeMap::new();
        for command in commands {
            let Command::Dispatch { executable, export, .. } = command else { continue };
            let loaded = vulkan_executable(executable)?;
            if loaded.push_descriptors() {
                continue;
            }
            let pipeline = loaded.pipeline(executable.check_export(*export)?);
            sets += pipeline.set_layouts.len() as u32;
            for slot in &pipeline.bindings {
                *counts.entry(slot.descriptor_type.raw() as i32).or_default() += 1;
            }
        }
        if sets == 0 {
            return Ok(None);
        }
        let sizes: Vec<vk::DescriptorPoolSize> = counts
            .into_iter()
            .map(|(kind, count)| vk::DescriptorPoolSize {
                ty: vk::DescriptorType::from_raw(kind),
                descriptor_count: count,
            })
            .collect();
        let info = vk::DescriptorPoolCreateInfo::default().max_sets(sets).pool_sizes(&sizes);
        // SAFETY: the device is live while the queue records for it.
        let pool = unsafe { device.create_descriptor_pool(&info, None) }
            .map_err(VulkanError::call("vkCreateDescriptorPool"))?;
        Ok(Some(DescriptorPool { device: device.clone(), pool }))
    }

    /// One set per layout, from the pool's room.
    fn allocate(&self, layouts: &[vk::DescriptorSetLayout]) -> Result<Vec<vk::DescriptorSet>, Diagnostic> {
        let info = vk::DescriptorSetAllocateInfo::default().descriptor_pool(self.pool).set_layouts(layouts);
        // SAFETY: the pool is live and used only by the recording that made it; the layouts are
        // live (their executable is held by the command buffer).
        Ok(unsafe { self.device.allocate_descriptor_sets(&info) }
            .map_err(VulkanError::call("vkAllocateDescriptorSets"))?)
    }
}

impl Drop for DescriptorPool {
    fn drop(&mut self) {
        // SAFETY: the submission using its sets is finished (or was never submitted); the device
        // outlives every pending submission.
        unsafe { self.device.destroy_descriptor_pool(self.pool, None) };
    }
}

#[cfg(test)]
mod tests {
    use super::pieces;

    /// A grid within the limit is itself; past it, pieces within the limit cover every workgroup
    /// once, on every axis.
    #[test]
    fn pieces_cover_the_grid_once_within_the_limit() {
        assert_eq!(pieces([7, 2, 1], [65_535; 3]).collect::<Vec<_>>(), [([0, 0, 0], [7, 2, 1])]);
        let along_x: Vec<_> = pieces([262_144, 1, 1], [65_535; 3]).collect();
        assert_eq!(along_x.len(), 5);
        assert_eq!(along_x[4], ([262_140, 0, 0], [4, 1, 1]));
        for (counts, max) in [([10, 7, 5], [3, 2, 4]), ([4, 4, 4], [4, 1, 3]), ([1, 1, 9], [1, 1, 1])] {
            let mut seen = vec![0; (counts[0] * counts[1] * counts[2]) as usize];
            for (base, count) in pieces(counts, max) {
                assert!(count.iter().zip(max).all(|(&c, m)| c >= 1 && c <= m), "{count:?} within {max:?}");
                for z in base[2]..base[2] + count[2] {
                    for y in base[1]..base[1] + count[1] {
                        for x in base[0]..base[0] + count[0] {
                            seen[((z * counts[1] + y) * counts[0] + x) as usize] += 1;
                        }
                    }
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "{counts:?} in pieces of {max:?}: {seen:?}");
        }
    }
}
