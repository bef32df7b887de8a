//! The Vulkan instance: the loader opened at run time (so librtx runs where there is no Vulkan
//! and says so), API 1.3 where the loader offers it and 1.2 otherwise, and, when
//! `RTX_VULKAN_VALIDATION` asks for them, the Khronos validation layers with a messenger feeding
//! [`super::validation`] — an error where they are not installed, so that checks asked for never
//! go missing unseen. Off by default, as in IREE's tools: the layers cost several times the time
//! of a small call.
//!
//! One instance serves every device of the process while any of them lives
//! ([`Instance::shared`]); it is destroyed with the last.

use std::ffi::{c_char, CStr};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use ash::vk;

use super::error::{VulkanError, LOADER_LIBRARY};
#[cfg(target_os = "linux")]
use super::libraries::Libraries;
use super::validation;

const VALIDATION_LAYER: &CStr = c"VK_LAYER_KHRONOS_validation";

/// An instance and the loader it came from.
pub struct Instance {
    entry: ash::Entry,
    instance: ash::Instance,
    api_version: u32,
    /// The messenger, when the validation layers are on.
    debug: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    /// The libraries loaded before the loader was opened, and those kept loaded since.
    #[cfg(target_os = "linux")]
    libraries: Mutex<Libraries>,
}

impl std::fmt::Debug for Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instance")
            .field("api_version", &super::physical_device::ApiVersion(self.api_version))
            .field("validation", &self.debug.is_some())
            .finish()
    }
}

/// How much the validation layers check, from `RTX_VULKAN_VALIDATION`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ValidationLevel {
    /// Unset, `0` or `false`: no layers.
    Off,
    /// `1` or anything else: the layers' standard checks of API use.
    Standard,
    /// `sync`: the synchronization checks too. Not part of `1`: they take a descriptor's whole
    /// range as accessed, so compiled programs whose dispatches and copies touch disjoint parts
    /// of one binding without a barrier between them (as IREE's compiler emits) read as hazards.
    Synchronization,
}

impl ValidationLevel {
    fn from_env() -> ValidationLevel {
        match std::env::var_os("RTX_VULKAN_VALIDATION") {
            None => ValidationLevel::Off,
            Some(v) if v.is_empty() || v == "0" || v == "false" => ValidationLevel::Off,
            Some(v) if v == "sync" => ValidationLevel::Synchronization,
            Some(_) => ValidationLevel::Standard,
        }
    }
}

static SHARED: Mutex<Weak<Instance>> = Mutex::new(Weak::new());

impl Instance {
    /// The process's instance: the live one, or a new one.
    pub fn shared() -> Result<Arc<Instance>, VulkanError> {
        let mut shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(instance) = shared.upgrade() {
            return Ok(instance);
        }
        let instance = Arc::new(Instance::new()?);
        *shared = Arc::downgrade(&instance);
        Ok(instance)
    }

    fn new() -> Result<Instance, VulkanError> {
        #[cfg(target_os = "linux")]
        let libraries = Mutex::new(Libraries::now());
        // SAFETY: loading the system's Vulkan loader runs its initialisers; it is the library
        // every Vulkan application trusts.
        let entry = unsafe { ash::Entry::load() }
            .map_err(|e| VulkanError::NoLoader { library: LOADER_LIBRARY, reason: e.to_string() })?;
        // SAFETY: `entry` holds a loaded loader.
        let loader_version = unsafe { entry.try_enumerate_instance_version() }
            .map_err(VulkanError::call("vkEnumerateInstanceVersion"))?
            .unwrap_or(vk::API_VERSION_1_0);
        let api_version = if loader_version >= vk::API_VERSION_1_3 {
            vk::API_VERSION_1_3
        } else if loader_version >= vk::API_VERSION_1_2 {
            vk::API_VERSION_1_2
        } else {
            return Err(VulkanError::Unsupported(format!(
                "the Vulkan loader offers API {}; rtx needs 1.2 or later",
                super::physical_device::ApiVersion(loader_version)
            )));
        };
        let level = ValidationLevel::from_env();
        let validation = level != ValidationLevel::Off;
        if validation && !has_validation_layer(&entry)? {
            return Err(VulkanError::NoValidationLayers);
        }
        let layers: Vec<*const c_char> = if validation { vec![VALIDATION_LAYER.as_ptr()] } else { vec![] };
        let extensions: Vec<*const c_char> = if validation {
            vec![ash::ext::debug_utils::NAME.as_ptr(), ash::ext::validation_features::NAME.as_ptr()]
        } else {
            vec![]
        };
        let enabled_features: &[vk::ValidationFeatureEnableEXT] = if level == ValidationLevel::Synchronization {
            &[vk::ValidationFeatureEnableEXT::SYNCHRONIZATION_VALIDATION]
        } else {
            &[]
        };
        let mut validation_features =
            vk::ValidationFeaturesEXT::default().enabled_validation_features(enabled_features);
        let application =
            vk::ApplicationInfo::default().application_name(c"rtx").engine_name(c"rtx").api_version(api_version);
        let mut messenger_info = vk::DebugUtilsMessengerCreateInfoEXT::default()
            .message_severity(validation::SEVERITIES)
            .message_type(
                vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                    | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                    | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
            )
            .pfn_user_callback(Some(validation::on_message));
        let mut create_info = vk::InstanceCreateInfo::default()
            .application_info(&application)
            .enabled_layer_names(&layers)
            .enabled_extension_names(&extensions);
        if validation {
            // Chained, the messenger also hears what happens while the instance is created and
            // destroyed (objects left alive are reported then).
            create_info = create_info.push_next(&mut messenger_info).push_next(&mut validation_features);
        }
        // SAFETY: the create info and everything it points to live across the call.
        let instance =
            unsafe { entry.create_instance(&create_info, None) }.map_err(VulkanError::call("vkCreateInstance"))?;
        let debug = if validation {
            let debug_utils = ash::ext::debug_utils::Instance::new(&entry, &instance);
            // SAFETY: the instance was created with the debug utils extension enabled.
            match unsafe { debug_utils.create_debug_utils_messenger(&messenger_info, None) } {
                Ok(messenger) => Some((debug_utils, messenger)),
                Err(result) => {
                    // SAFETY: nothing else was made from the instance.
                    unsafe { instance.destroy_instance(None) };
                    return Err(VulkanError::Call { call: "vkCreateDebugUtilsMessengerEXT", result });
                }
            }
        } else {
            None
        };
        Ok(Instance {
            entry,
            instance,
            api_version,
            debug,
            #[cfg(target_os = "linux")]
            libraries,
        })
    }

    pub fn entry(&self) -> &ash::Entry {
        &self.entry
    }

    pub fn handle(&self) -> &ash::Instance {
        &self.instance
    }

    /// The API version the instance was created for.
    pub fn api_version(&self) -> u32 {
        self.api_version
    }

    /// Whether the validation layers are on.
    pub fn validation(&self) -> bool {
        self.debug.is_some()
    }

    /// Keeps the libraries Vulkan loaded so far loaded for good: before a device or this instance
    /// is destroyed (see [`super::libraries`]).
    pub(super) fn keep_libraries_loaded(&self) {
        #[cfg(target_os = "linux")]
        self.libraries.lock().unwrap_or_else(PoisonError::into_inner).keep_new();
    }
}

fn has_validation_layer(entry: &ash::Entry) -> Result<bool, VulkanError> {
    // SAFETY: `entry` holds a loaded loader.
    let layers = unsafe { entry.enumerate_instance_layer_properties() }
        .map_err(VulkanError::call("vkEnumerateInstanceLayerProperties"))?;
    Ok(layers.iter().any(|layer| layer.layer_name_as_c_str() == Ok(VALIDATION_LAYER)))
}

impl Drop for Instance {
    fn drop(&mut self) {
        // The static weak reference would keep this allocation alive (a weak reference holds the
        // memory of an `Arc`) until the process ends: let it go with the instance.
        let mut shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
        if std::ptr::eq(shared.as_ptr(), self) {
            *shared = Weak::new();
        }
        drop(shared);
        self.keep_libraries_loaded();
        // SAFETY: every device holds the instance alive, so nothing made from it remains.
        unsafe {
            if let Some((debug_utils, messenger)) = self.debug.take() {
                debug_utils.destroy_debug_utils_messenger(messenger, None);
            }
            self.instance.destroy_instance(None);
        }
    }
}
