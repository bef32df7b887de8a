//! A loaded `vulkan-spirv-fb` executable: the verified definition's pipelines made on one device.
//! It holds the device, so the device outlives the pipelines; command buffers that dispatch it
//! hold it until the device is done with them.

use std::any::Any;
use std::sync::Arc;

use super::executable_def::ExecutableDef;
use super::logical_device::LogicalDevice;
use super::pipeline::{Pipeline, PipelineError, Pipelines};
use rtx_hal::backend::ExecutableBackend;
use rtx_hal::executable::Executable;
use rtx_host::{Diagnostic, StatusCode};

/// The executable as a Vulkan device loaded it.
#[derive(Debug)]
pub struct VulkanExecutable {
    names: Vec<String>,
    /// Dropped before `device` (fields drop in order).
    pipelines: Pipelines,
    device: Arc<LogicalDevice>,
}

impl VulkanExecutable {
    /// Reads `data` and makes its pipelines on `device`, specialised with `constants`.
    pub fn load(device: &Arc<LogicalDevice>, data: &[u8], constants: &[u32]) -> Result<VulkanExecutable, Diagnostic> {
        let def = ExecutableDef::parse(data)?;
        // SAFETY: the device is live, the support is its own, and the returned value holds the
        // device after the pipelines.
        let pipelines = unsafe { Pipelines::create(device.handle(), &def, constants, &device.pipeline_support()) }
            .map_err(|error| match error {
                PipelineError::Unsupported(why) => Diagnostic::new(StatusCode::Unavailable, why),
                PipelineError::Vulkan { what, result } => {
                    Diagnostic::new(StatusCode::Internal, format!("{what}: {result}"))
                }
            })?;
        Ok(VulkanExecutable { names: def.export_names(), pipelines, device: device.clone() })
    }

    /// The pipeline of export `export` (an ordinal checked by [`Executable::check_export`]).
    pub fn pipeline(&self, export: usize) -> &Pipeline {
        &self.pipelines.pipelines()[export]
    }

    /// Whether dispatches push their bindings (`vkCmdPushDescriptorSetKHR`) rather than bind
    /// allocated sets.
    pub fn push_descriptors(&self) -> bool {
        self.pipelines.push_descriptors()
    }

    pub fn device(&self) -> &Arc<LogicalDevice> {
        &self.device
    }
}

impl ExecutableBackend for VulkanExecutable {
    fn export_names(&self) -> &[String] {
        &self.names
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The Vulkan executable behind `executable`, or INVALID_ARGUMENT for another backend's.
pub fn vulkan_executable(executable: &Executable) -> Result<&VulkanExecutable, Diagnostic> {
    executable.backend().as_any().downcast_ref::<VulkanExecutable>().ok_or_else(|| {
        Diagnostic::new(StatusCode::InvalidArgument, "executable was loaded by another device than a Vulkan device")
    })
}
