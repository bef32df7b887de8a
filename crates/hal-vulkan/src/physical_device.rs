//! Physical devices: what each is (name, vendor, UUID, driver, API version) and what it offers a
//! compute runtime (limits and features), queried once.

use std::fmt;

use ash::vk;

use super::error::VulkanError;
use super::instance::Instance;

/// A Vulkan API version as the driver packs it.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ApiVersion(pub u32);

impl fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        write!(f, "{}.{}.{}", vk::api_version_major(v), vk::api_version_minor(v), vk::api_version_patch(v))
    }
}

impl fmt::Debug for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// `VkPhysicalDeviceType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceType {
    Other,
    IntegratedGpu,
    DiscreteGpu,
    VirtualGpu,
    Cpu,
}

impl DeviceType {
    fn from_vk(device_type: vk::PhysicalDeviceType) -> DeviceType {
        match device_type {
            vk::PhysicalDeviceType::INTEGRATED_GPU => DeviceType::IntegratedGpu,
            vk::PhysicalDeviceType::DISCRETE_GPU => DeviceType::DiscreteGpu,
            vk::PhysicalDeviceType::VIRTUAL_GPU => DeviceType::VirtualGpu,
            vk::PhysicalDeviceType::CPU => DeviceType::Cpu,
            _ => DeviceType::Other,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DeviceType::Other => "other",
            DeviceType::IntegratedGpu => "integrated-gpu",
            DeviceType::DiscreteGpu => "discrete-gpu",
            DeviceType::VirtualGpu => "virtual-gpu",
            DeviceType::Cpu => "cpu",
        }
    }
}

/// The limits a compute runtime meets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ComputeLimits {
    pub max_workgroup_size: [u32; 3],
    pub max_workgroup_count: [u32; 3],
    pub max_workgroup_invocations: u32,
    pub max_push_constants_size: u32,
    pub min_storage_buffer_offset_alignment: u64,
    pub max_storage_buffer_range: u32,
    /// Host flushes and invalidations of non-coherent memory cover multiples of this.
    pub non_coherent_atom_size: u64,
}

/// The features that decide what executables run (all reported; timeline semaphores required).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Features {
    pub timeline_semaphore: bool,
    pub storage_buffer_8bit: bool,
    pub storage_buffer_16bit: bool,
    pub shader_int8: bool,
    pub shader_float16: bool,
    pub shader_int64: bool,
    pub shader_float64: bool,
    pub buffer_device_address: bool,
    /// The default subgroup size.
    pub subgroup_size: u32,
    /// The sizes a pipeline may ask for (Vulkan 1.3 devices), smallest and largest.
    pub subgroup_size_range: Option<(u32, u32)>,
}

/// One physical device, as enumerated.
#[derive(Clone, Debug)]
pub struct PhysicalDeviceInfo {
    /// Position in the instance's enumeration (`vulkan://N`).
    pub index: usize,
    pub name: String,
    pub vendor_id: u32,
    pub device_id: u32,
    pub device_type: DeviceType,
    /// `VkPhysicalDeviceIDProperties::deviceUUID`: stable across processes.
    pub uuid: [u8; 16],
    pub driver_name: String,
    pub driver_info: String,
    pub api_version: ApiVersion,
    /// The size of the device-local memory heaps, together.
    pub device_local_bytes: u64,
    pub limits: ComputeLimits,
    pub features: Features,
}

impl PhysicalDeviceInfo {
    /// The UUID as `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
    pub fn uuid_string(&self) -> String {
        format_uuid(&self.uuid)
    }

    /// Why rtx cannot run on this device, if it cannot.
    pub fn unusable_reason(&self) -> Option<String> {
        if self.api_version < ApiVersion(vk::API_VERSION_1_2) {
            Some(format!("Vulkan device {} '{}' offers API {}; rtx needs 1.2", self.index, self.name, self.api_version))
        } else if !self.features.timeline_semaphore {
            Some(format!("Vulkan device {} '{}' has no timeline semaphores, which rtx needs", self.index, self.name))
        } else {
            None
        }
    }
}

/// `uuid` in the usual 8-4-4-4-12 hex form.
pub fn format_uuid(uuid: &[u8; 16]) -> String {
    let hex: String = uuid.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

/// The 16 bytes of a UUID written as 32 hex digits, dashes anywhere ignored; `None` otherwise.
pub fn parse_uuid(text: &str) -> Option<[u8; 16]> {
    let digits: Vec<u8> = text.bytes().filter(|&b| b != b'-').collect();
    if digits.len() != 32 {
        return None;
    }
    let mut uuid = [0; 16];
    for (byte, pair) in uuid.iter_mut().zip(digits.chunks(2)) {
        *byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(uuid)
}

/// Every physical device of `instance` with its handle.
pub fn enumerate(instance: &Instance) -> Result<Vec<(vk::PhysicalDevice, PhysicalDeviceInfo)>, VulkanError> {
    // SAFETY: the instance is live.
    let devices = unsafe { instance.handle().enumerate_physical_devices() }
        .map_err(VulkanError::call("vkEnumeratePhysicalDevices"))?;
    Ok(devices.into_iter().enumerate().map(|(index, device)| (device, query(instance, index, device))).collect())
}

fn query(instance: &Instance, index: usize, device: vk::PhysicalDevice) -> PhysicalDeviceInfo {
    let vk_instance = instance.handle();
    // SAFETY: `device` was enumerated from this live instance.
    let basic = unsafe { vk_instance.get_physical_device_properties(device) };
    let api_version = ApiVersion(basic.api_version);
    let is_1_2 = api_version >= ApiVersion(vk::API_VERSION_1_2);
    let is_1_3 = api_version >= ApiVersion(vk::API_VERSION_1_3);

    let mut id = vk::PhysicalDeviceIDProperties::default();
    let mut subgroup = vk::PhysicalDeviceSubgroupProperties::default();
    let mut driver = vk::PhysicalDeviceDriverProperties::default();
    let mut subgroup_control = vk::PhysicalDeviceSubgroupSizeControlProperties::default();
    let mut properties = vk::PhysicalDeviceProperties2::default().push_next(&mut id).push_next(&mut subgroup);
    // Structures of a later API version may only be chained for devices that have it.
    if is_1_2 {
        properties = properties.push_next(&mut driver);
    }
    if is_1_3 {
        properties = properties.push_next(&mut subgroup_control);
    }
    // SAFETY: the chain holds structures the device's API version knows, alive across the call.
    unsafe { vk_instance.get_physical_device_properties2(device, &mut properties) };
    let limits = properties.properties.limits;

    let mut features11 = vk::PhysicalDeviceVulkan11Features::default();
    let mut features12 = vk::PhysicalDeviceVulkan12Features::default();
    let mut features = vk::PhysicalDeviceFeatures2::default();
    if is_1_2 {
        features = features.push_next(&mut features11).push_next(&mut features12);
    }
    // SAFETY: as above.
    unsafe { vk_instance.get_physical_device_features2(device, &mut features) };
    let core = features.features;

    // SAFETY: as above.
    let memory = unsafe { vk_instance.get_physical_device_memory_properties(device) };
    let device_local_bytes = memory.memory_heaps[..memory.memory_heap_count as usize]
        .iter()
        .filter(|heap| heap.flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL))
        .map(|heap| heap.size)
        .sum();

    let text = |bytes: &[std::ffi::c_char]| {
        // Fixed-size arrays holding NUL-terminated strings; a driver that fills one to the end
        // without a NUL gets its bytes as they are.
        let bytes: Vec<u8> = bytes.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    PhysicalDeviceInfo {
        index,
        name: text(&basic.device_name),
        vendor_id: basic.vendor_id,
        device_id: basic.device_id,
        device_type: DeviceType::from_vk(basic.device_type),
        uuid: id.device_uuid,
        driver_name: if is_1_2 { text(&driver.driver_name) } else { String::new() },
        driver_info: if is_1_2 { text(&driver.driver_info) } else { String::new() },
        api_version,
        device_local_bytes,
        limits: ComputeLimits {
            max_workgroup_size: limits.max_compute_work_group_size,
            max_workgroup_count: limits.max_compute_work_group_count,
            max_workgroup_invocations: limits.max_compute_work_group_invocations,
            max_push_constants_size: limits.max_push_constants_size,
            min_storage_buffer_offset_alignment: limits.min_storage_buffer_offset_alignment,
            max_storage_buffer_range: limits.max_storage_buffer_range,
            non_coherent_atom_size: limits.non_coherent_atom_size,
        },
        features: Features {
            timeline_semaphore: features12.timeline_semaphore == vk::TRUE,
            storage_buffer_8bit: features12.storage_buffer8_bit_access == vk::TRUE,
            storage_buffer_16bit: features11.storage_buffer16_bit_access == vk::TRUE,
            shader_int8: features12.shader_int8 == vk::TRUE,
            shader_float16: features12.shader_float16 == vk::TRUE,
            shader_int64: core.shader_int64 == vk::TRUE,
            shader_float64: core.shader_float64 == vk::TRUE,
            buffer_device_address: features12.buffer_device_address == vk::TRUE,
            subgroup_size: subgroup.subgroup_size,
            subgroup_size_range: is_1_3
                .then_some((subgroup_control.min_subgroup_size, subgroup_control.max_subgroup_size)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_print_and_parse_in_the_dashed_hex_form() {
        let uuid: [u8; 16] = std::array::from_fn(|i| (i * 17) as u8);
        let text = format_uuid(&uuid);
        assert_eq!(text, "00112233-4455-6677-8899-aabbccddeeff");
        assert_eq!(parse_uuid(&text), Some(uuid));
        assert_eq!(parse_uuid("00112233445566778899AABBCCDDEEFF"), Some(uuid));
        assert_eq!(parse_uuid("00112233-4455-6677-8899-aabbccddeef"), None, "31 digits");
        assert_eq!(parse_uuid("0011223g-4455-6677-8899-aabbccddeeff"), None, "not hex");
        assert_eq!(ApiVersion(vk::make_api_version(0, 1, 3, 230)).to_string(), "1.3.230");
    }
}
