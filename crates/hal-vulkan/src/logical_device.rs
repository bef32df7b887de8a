//! The logical device: one physical device chosen by index, UUID or as the first usable one,
//! opened with a compute queue, the features executables use that it has, and gpu-allocator for
//! its memory. Every buffer and submission holds it alive; it is destroyed after the last.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use ash::vk;
use gpu_allocator::vulkan::{Allocator, AllocatorCreateDesc};

use super::error::VulkanError;
use super::instance::Instance;
use super::physical_device::{self, parse_uuid, PhysicalDeviceInfo};
use super::pipeline::PipelineSupport;
use super::queue::Queue;
use super::timestamps::DeviceClock;
use rtx_host::{Diagnostic, StatusCode};

/// Which physical device to open.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeviceSelector {
    /// The first one rtx can run on.
    #[default]
    First,
    /// Position in the enumeration.
    Index(usize),
    /// `VkPhysicalDeviceIDProperties::deviceUUID`.
    Uuid([u8; 16]),
}

impl DeviceSelector {
    /// From a device URI: `vulkan` or `vulkan://` (the first), `vulkan://N`, or
    /// `vulkan://UUID` (32 hex digits, dashes allowed).
    pub fn parse(uri: &str) -> Result<DeviceSelector, Diagnostic> {
        let rest = uri.strip_prefix("vulkan").ok_or_else(|| not_vulkan(uri))?;
        let path = match rest {
            "" | "://" => return Ok(DeviceSelector::First),
            _ => rest.strip_prefix("://").ok_or_else(|| not_vulkan(uri))?,
        };
        if let Ok(index) = path.parse::<usize>() {
            return Ok(DeviceSelector::Index(index));
        }
        parse_uuid(path).map(DeviceSelector::Uuid).ok_or_else(|| {
            Diagnostic::new(
                StatusCode::InvalidArgument,
                format!("Vulkan device `{path}` in `{uri}` is neither an index nor a 32-hex-digit UUID"),
            )
        })
    }
}

fn not_vulkan(uri: &str) -> Diagnostic {
    Diagnostic::new(
        StatusCode::InvalidArgument,
        format!("`{uri}` is not a Vulkan device URI (vulkan, vulkan://N or vulkan://UUID)"),
    )
}

/// How the device's memory is reached from the host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceOptions {
    /// Reach buffers that were not asked to be host-visible through staging copies even where
    /// their memory is host-visible (as on integrated GPUs and CPU devices): the path a discrete
    /// GPU's device-local memory always takes, made testable anywhere.
    pub stage_device_local: bool,
    /// Bind dispatches' descriptor sets from pools even where the device offers push descriptors:
    /// the path of devices without them, made testable anywhere.
    pub descriptor_pools: bool,
}

/// An open device.
pub struct LogicalDevice {
    info: PhysicalDeviceInfo,
    limits: vk::PhysicalDeviceLimits,
    device: ash::Device,
    /// `VK_KHR_push_descriptor` and its `maxPushDescriptors`, where the device has it: dispatches
    /// then push their bindings rather than allocate descriptor sets (as IREE's driver does).
    push_descriptors: Option<(ash::khr::push_descriptor::Device, u32)>,
    /// Taken when the device is destroyed (it must go before the device).
    allocator: Mutex<Option<Allocator>>,
    /// Dropped (finishing what is pending) before the device is destroyed.
    queue: Option<Queue>,
    options: DeviceOptions,
    /// Destroyed after the device.
    instance: Arc<Instance>,
}

impl std::fmt::Debug for LogicalDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogicalDevice").field("name", &self.info.name).field("index", &self.info.index).finish()
    }
}

impl LogicalDevice {
    /// Opens the device `selector` names.
    pub fn open(
        instance: Arc<Instance>,
        selector: DeviceSelector,
        options: DeviceOptions,
    ) -> Result<Arc<LogicalDevice>, VulkanError> {
        let devices = physical_device::enumerate(&instance)?;
        let (physical, info) = match selector {
            DeviceSelector::First => devices
                .iter()
                .find(|(_, info)| info.unusable_reason().is_none())
                .or_else(|| devices.first())
                .ok_or_else(|| VulkanError::NoDevice("no Vulkan device found".into()))?,
            DeviceSelector::Index(index) => devices.get(index).ok_or_else(|| {
                VulkanError::NoDevice(format!("no Vulkan device {index} (there are {})", devices.len()))
            })?,
            DeviceSelector::Uuid(uuid) => devices.iter().find(|(_, info)| info.uuid == uuid).ok_or_else(|| {
                VulkanError::NoDevice(format!("no Vulkan device has UUID {}", physical_device::format_uuid(&uuid)))
            })?,
        };
        if let Some(reason) = info.unusable_reason() {
            return Err(VulkanError::Unsupported(reason));
        }
        let (family, timestamp_bits) = compute_queue_family(&instance, *physical).ok_or_else(|| {
            VulkanError::Unsupported(format!("Vulkan device {} '{}' has no compute queue", info.index, info.name))
        })?;
        let max_push_descriptors =
            if options.descriptor_pools { None } else { max_push_descriptors(&instance, *physical) };
        let device = create_device(&instance, *physical, info, family, max_push_descriptors.is_some())?;
        let push_descriptors =
            max_push_descriptors.map(|max| (ash::khr::push_descriptor::Device::new(instance.handle(), &device), max));
        let allocator = Allocator::new(&AllocatorCreateDesc {
            instance: instance.handle().clone(),
            device: device.clone(),
            physical_device: *physical,
            debug_settings: Default::default(),
            buffer_device_address: false,
            allocation_sizes: Default::default(),
        });
        let allocator = match allocator {
            Ok(allocator) => allocator,
            Err(source) => {
                // SAFETY: nothing was made from the device.
                unsafe { device.destroy_device(None) };
                return Err(VulkanError::Allocation { size: 0, source });
            }
        };
        // SAFETY: the physical device was enumerated from the live instance.
        let limits = unsafe { instance.handle().get_physical_device_properties(*physical) }.limits;
        let queue = match Queue::new(&device, family, DeviceClock::new(timestamp_bits, limits.timestamp_period)) {
            Ok(queue) => queue,
            Err(error) => {
                drop(allocator);
                // SAFETY: the allocator, the only user of the device, is gone.
                unsafe { device.destroy_device(None) };
                return Err(error);
            }
        };
        Ok(Arc::new(LogicalDevice {
            info: info.clone(),
            limits,
            device,
            push_descriptors,
            allocator: Mutex::new(Some(allocator)),
            queue: Some(queue),
            options,
            instance,
        }))
    }

    pub fn info(&self) -> &PhysicalDeviceInfo {
        &self.info
    }

    /// All of the device's limits (what dispatches and bindings must stay within).
    pub fn limits(&self) -> &vk::PhysicalDeviceLimits {
        &self.limits
    }

    pub fn handle(&self) -> &ash::Device {
        &self.device
    }

    /// What executables' pipelines may ask of this device: its limits and push descriptors where
    /// enabled; no required subgroup sizes (the device does not enable subgroup size control).
    pub fn pipeline_support(&self) -> PipelineSupport {
        PipelineSupport {
            limits: self.limits,
            required_subgroup_sizes: None,
            max_push_descriptors: self.push_descriptors.as_ref().map(|(_, max)| *max),
        }
    }

    /// `vkCmdPushDescriptorSetKHR` and friends, where the device enabled them.
    pub fn push_descriptors(&self) -> Option<&ash::khr::push_descriptor::Device> {
        self.push_descriptors.as_ref().map(|(loader, _)| loader)
    }

    pub fn queue(&self) -> &Queue {
        self.queue.as_ref().expect("the queue lives until the device is destroyed")
    }

    pub fn options(&self) -> DeviceOptions {
        self.options
    }

    /// The memory allocator (locked).
    pub fn allocator(&self) -> MutexGuard<'_, Option<Allocator>> {
        self.allocator.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A queue family with compute: one without graphics where there is one (a dedicated compute
/// queue), the first with compute otherwise; with its timestamps' valid bits.
fn compute_queue_family(instance: &Instance, physical: vk::PhysicalDevice) -> Option<(u32, u32)> {
    // SAFETY: `physical` was enumerated from this live instance.
    let families = unsafe { instance.handle().get_physical_device_queue_family_properties(physical) };
    let has = |flags: vk::QueueFlags| {
        move |(_, family): &(usize, &vk::QueueFamilyProperties)| {
            family.queue_count > 0 && family.queue_flags.contains(flags)
        }
    };
    let dedicated = families
        .iter()
        .enumerate()
        .filter(has(vk::QueueFlags::COMPUTE))
        .find(|(_, family)| !family.queue_flags.contains(vk::QueueFlags::GRAPHICS));
    dedicated
        .or_else(|| families.iter().enumerate().find(has(vk::QueueFlags::COMPUTE)))
        .map(|(index, family)| (index as u32, family.timestamp_valid_bits))
}

/// `maxPushDescriptors` where the device offers `VK_KHR_push_descriptor`.
fn max_push_descriptors(instance: &Instance, physical: vk::PhysicalDevice) -> Option<u32> {
    // SAFETY: `physical` was enumerated from this live instance.
    let extensions = unsafe { instance.handle().enumerate_device_extension_properties(physical) }.ok()?;
    if !extensions.iter().any(|e| e.extension_name_as_c_str() == Ok(ash::khr::push_descriptor::NAME)) {
        return None;
    }
    let mut push = vk::PhysicalDevicePushDescriptorPropertiesKHR::default();
    let mut properties = vk::PhysicalDeviceProperties2::default().push_next(&mut push);
    // SAFETY: as above; the chain lives across the call.
    unsafe { instance.handle().get_physical_device_properties2(physical, &mut properties) };
    Some(push.max_push_descriptors)
}

/// The device with one queue of `family`, the executables' features it has, and push
/// descriptors when asked.
fn create_device(
    instance: &Instance,
    physical: vk::PhysicalDevice,
    info: &PhysicalDeviceInfo,
    family: u32,
    push_descriptors: bool,
) -> Result<ash::Device, VulkanError> {
    let available = &info.features;
    let flag = |on: bool| if on { vk::TRUE } else { vk::FALSE };
    let mut features11 =
        vk::PhysicalDeviceVulkan11Features::default().storage_buffer16_bit_access(available.storage_buffer_16bit);
    let mut features12 = vk::PhysicalDeviceVulkan12Features::default()
        .timeline_semaphore(true)
        .storage_buffer8_bit_access(available.storage_buffer_8bit)
        .shader_int8(available.shader_int8)
        .shader_float16(available.shader_float16);
    let core = vk::PhysicalDeviceFeatures {
        shader_int64: flag(available.shader_int64),
        shader_float64: flag(available.shader_float64),
        ..Default::default()
    };
    let mut features =
        vk::PhysicalDeviceFeatures2::default().features(core).push_next(&mut features11).push_next(&mut features12);
    let priorities = [1.0];
    let queues = [vk::DeviceQueueCreateInfo::default().queue_family_index(family).queue_priorities(&priorities)];
    let extensions = if push_descriptors { vec![ash::khr::push_descriptor::NAME.as_ptr()] } else { Vec::new() };
    let create_info = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queues)
        .enabled_extension_names(&extensions)
        .push_next(&mut features);
    // SAFETY: the create info and its chain live across the call; every feature enabled was
    // reported available.
    unsafe { instance.handle().create_device(physical, &create_info, None) }
        .map_err(VulkanError::call("vkCreateDevice"))
}

impl Drop for LogicalDevice {
    fn drop(&mut self) {
        // The queue finishes what was submitted; then no buffer is left (each held the device).
        drop(self.queue.take());
        drop(self.allocator.get_mut().unwrap_or_else(PoisonError::into_inner).take());
        self.instance.keep_libraries_loaded();
        // SAFETY: every object made from the device is destroyed.
        unsafe { self.device.destroy_device(None) };
    }
}
