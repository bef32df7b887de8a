//! Why a Vulkan operation failed, and the HAL status each failure becomes.

use ash::vk;

use rtx_host::{Diagnostic, StatusCode};

/// A failure of the Vulkan backend.
#[derive(Debug, thiserror::Error)]
pub enum VulkanError {
    /// There is no Vulkan loader to open: rtx works without Vulkan and says so.
    #[error("Vulkan is not available: the loader library ({library}) could not be opened: {reason}")]
    NoLoader { library: &'static str, reason: String },
    /// A Vulkan call returned an error code.
    #[error("{call} failed: {result}")]
    Call { call: &'static str, result: vk::Result },
    /// The loader, driver or device lacks something rtx needs.
    #[error("{0}")]
    Unsupported(String),
    /// `RTX_VULKAN_VALIDATION` asks for the validation layers and the loader does not list them:
    /// checks asked for never silently go missing.
    #[error(
        "RTX_VULKAN_VALIDATION asks for the Khronos validation layers (VK_LAYER_KHRONOS_validation), which the \
         Vulkan loader does not list: install them (Debian: vulkan-validationlayers) or set RTX_VULKAN_VALIDATION=0"
    )]
    NoValidationLayers,
    /// No physical device matches what was asked for.
    #[error("{0}")]
    NoDevice(String),
    /// gpu-allocator could not place an allocation.
    #[error("device memory allocation of {size} bytes failed: {source}")]
    Allocation { size: u64, source: gpu_allocator::AllocationError },
}

/// The library `ash::Entry::load` opens, for the error naming it.
#[cfg(target_os = "linux")]
pub const LOADER_LIBRARY: &str = "libvulkan.so.1";
#[cfg(target_os = "macos")]
pub const LOADER_LIBRARY: &str = "libvulkan.dylib";
#[cfg(windows)]
pub const LOADER_LIBRARY: &str = "vulkan-1.dll";
#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
pub const LOADER_LIBRARY: &str = "libvulkan.so";

impl VulkanError {
    /// A `Call` error, for `map_err`.
    pub fn call(call: &'static str) -> impl FnOnce(vk::Result) -> VulkanError {
        move |result| VulkanError::Call { call, result }
    }

    pub fn status_code(&self) -> StatusCode {
        match self {
            VulkanError::NoLoader { .. } => StatusCode::Unavailable,
            VulkanError::Call { result, .. } => match *result {
                vk::Result::ERROR_OUT_OF_HOST_MEMORY
                | vk::Result::ERROR_OUT_OF_DEVICE_MEMORY
                | vk::Result::ERROR_TOO_MANY_OBJECTS
                | vk::Result::ERROR_OUT_OF_POOL_MEMORY => StatusCode::ResourceExhausted,
                vk::Result::ERROR_DEVICE_LOST => StatusCode::Internal,
                vk::Result::ERROR_LAYER_NOT_PRESENT
                | vk::Result::ERROR_EXTENSION_NOT_PRESENT
                | vk::Result::ERROR_FEATURE_NOT_PRESENT
                | vk::Result::ERROR_INCOMPATIBLE_DRIVER => StatusCode::Unavailable,
                vk::Result::TIMEOUT => StatusCode::DeadlineExceeded,
                _ => StatusCode::Internal,
            },
            VulkanError::Unsupported(_) => StatusCode::Unavailable,
            VulkanError::NoValidationLayers => StatusCode::FailedPrecondition,
            VulkanError::NoDevice(_) => StatusCode::NotFound,
            VulkanError::Allocation { source, .. } => match source {
                gpu_allocator::AllocationError::OutOfMemory => StatusCode::ResourceExhausted,
                _ => StatusCode::Internal,
            },
        }
    }
}

impl From<VulkanError> for Diagnostic {
    fn from(error: VulkanError) -> Diagnostic {
        Diagnostic::new(error.status_code(), error.to_string())
    }
}
