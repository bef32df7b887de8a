//! Every executable of the Vulkan fixtures (tests/fixtures/vulkan) made into pipelines on a real
//! Vulkan device — lavapipe in CI — with the Khronos validation layers on when they are installed:
//! any warning or error they report fails the test, and they check that every object is destroyed.
//!
//! The instance and device here are the test's own minimal ones. Without a Vulkan loader or device
//! the tests skip (`rtx_test_support::skip`), as do the layers' checks where they are missing.

use std::ffi::{c_void, CStr};
use std::sync::Mutex;

use ash::vk;
use rtx_hal_vulkan::executable_def::{ExecutableDef, IDENTIFIER};
use rtx_hal_vulkan::pipeline::{PipelineError, PipelineSupport, Pipelines};
use rtx_test_support::fixtures_dir;
use rtx_test_support::skip::{skip, Need};
use rtx_vm::Module;

const VALIDATION_LAYER: &CStr = c"VK_LAYER_KHRONOS_validation";

/// Warnings and errors the validation layers reported.
static MESSAGES: Mutex<Vec<String>> = Mutex::new(Vec::new());

unsafe extern "system" fn collect(
    _severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    _user: *mut c_void,
) -> vk::Bool32 {
    // SAFETY: the layers pass a valid callback data whose message is a NUL-terminated string.
    let message = unsafe { data.as_ref().and_then(|d| d.message_as_c_str()) };
    let text = message.map_or_else(|| "(no message)".to_owned(), |m| m.to_string_lossy().into_owned());
    MESSAGES.lock().unwrap_or_else(|e| e.into_inner()).push(text);
    vk::FALSE
}

/// A Vulkan instance and logical device for one test, destroyed (messenger last) on drop.
struct TestDevice {
    _entry: ash::Entry,
    instance: ash::Instance,
    messenger: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    device: ash::Device,
    support: PipelineSupport,
}

impl TestDevice {
    /// The first device with a compute queue; `None` after a skip where there is none.
    /// `push_descriptors` enables `VK_KHR_push_descriptor` when the device has it. Without the
    /// validation layers the device is still made, and that their checks are missing is a skip.
    fn open(push_descriptors: bool) -> Option<TestDevice> {
        let no_device = |why: String| {
            skip(Need::VulkanDevice, why);
            None
        };
        // SAFETY: loading the system's Vulkan loader runs its initialisers, which is what it is for.
        let entry = match unsafe { ash::Entry::load() } {
            Ok(entry) => entry,
            Err(error) => return no_device(format!("the Vulkan loader cannot be loaded: {error}")),
        };
        // SAFETY: plain queries and object creation on a loaded entry; every object made is owned
        // by the returned value and destroyed by its drop in reverse order.
        unsafe {
            let layers = entry.enumerate_instance_layer_properties().unwrap_or_default();
            let validation = layers.iter().any(|l| l.layer_name_as_c_str() == Ok(VALIDATION_LAYER));
            if !validation {
                skip(
                    Need::VulkanValidation,
                    "the Khronos validation layers are not installed: pipelines made unchecked",
                );
            }
            let layer_names = if validation { vec![VALIDATION_LAYER.as_ptr()] } else { Vec::new() };
            let extensions = if validation { vec![ash::ext::debug_utils::NAME.as_ptr()] } else { Vec::new() };
            let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
            let info = vk::InstanceCreateInfo::default()
                .application_info(&app)
                .enabled_layer_names(&layer_names)
                .enabled_extension_names(&extensions);
            let instance = match entry.create_instance(&info, None) {
                Ok(instance) => instance,
                Err(result) => return no_device(format!("vkCreateInstance failed: {result}")),
            };
            let messenger = validation.then(|| {
                let loader = ash::ext::debug_utils::Instance::new(&entry, &instance);
                let info = vk::DebugUtilsMessengerCreateInfoEXT::default()
                    .message_severity(
                        vk::DebugUtilsMessageSeverityFlagsEXT::WARNING | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
                    )
                    .message_type(
                        vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                            | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                            | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
                    )
                    .pfn_user_callback(Some(collect));
                let messenger = loader.create_debug_utils_messenger(&info, None).expect("debug messenger");
                (loader, messenger)
            });
            let physical = instance.enumerate_physical_devices().unwrap_or_default().into_iter().find_map(|p| {
                let families = instance.get_physical_device_queue_family_properties(p);
                let family = families.iter().position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))?;
                Some((p, family as u32))
            });
            let Some((physical, family)) = physical else {
                TestDevice::destroy_instance(&instance, messenger);
                return no_device("no physical device has a compute queue".to_owned());
            };
            let has_push = instance
                .enumerate_device_extension_properties(physical)
                .unwrap_or_default()
                .iter()
                .any(|e| e.extension_name_as_c_str() == Ok(ash::khr::push_descriptor::NAME));
            let push = push_descriptors && has_push;
            let device_extensions = if push { vec![ash::khr::push_descriptor::NAME.as_ptr()] } else { Vec::new() };
            let priorities = [1.0f32];
            let queues =
                [vk::DeviceQueueCreateInfo::default().queue_family_index(family).queue_priorities(&priorities)];
            let info =
                vk::DeviceCreateInfo::default().queue_create_infos(&queues).enabled_extension_names(&device_extensions);
            let device = instance.create_device(physical, &info, None).expect("vkCreateDevice");
            let mut push_properties = vk::PhysicalDevicePushDescriptorPropertiesKHR::default();
            let mut properties = vk::PhysicalDeviceProperties2::default().push_next(&mut push_properties);
            instance.get_physical_device_properties2(physical, &mut properties);
            let support = PipelineSupport {
                limits: properties.properties.limits,
                required_subgroup_sizes: None,
                max_push_descriptors: push.then_some(push_properties.max_push_descriptors),
            };
            Some(TestDevice { _entry: entry, instance, messenger, device, support })
        }
    }

    /// # Safety
    /// Every child of `instance` other than the messenger is destroyed.
    unsafe fn destroy_instance(
        instance: &ash::Instance,
        messenger: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    ) {
        // SAFETY: the caller's contract.
        unsafe {
            if let Some((loader, messenger)) = messenger {
                loader.destroy_debug_utils_messenger(messenger, None);
            }
            instance.destroy_instance(None);
        }
    }

    fn pipelines(&self, def: &ExecutableDef, constants: &[u32]) -> Result<Pipelines, PipelineError> {
        // SAFETY: the device is live and outlives the pipelines (they are dropped within each test,
        // before the device).
        unsafe { Pipelines::create(&self.device, def, constants, &self.support) }
    }
}

impl Drop for TestDevice {
    fn drop(&mut self) {
        // SAFETY: the tests drop every Pipelines before the device, and made nothing else.
        unsafe {
            self.device.destroy_device(None);
            TestDevice::destroy_instance(&self.instance, self.messenger.take());
        }
    }
}

fn fixture_executables() -> Vec<(String, ExecutableDef)> {
    let dir = fixtures_dir().join("vulkan");
    let mut all = Vec::new();
    for name in ["elementwise", "reduction", "matmul", "dynamic"] {
        let module = Module::load_file(dir.join(format!("{name}.vmfb"))).expect("fixture loads");
        for segment in module.rodata_segments().filter(|s| s.data.starts_with(IDENTIFIER)) {
            all.push((name.to_owned(), ExecutableDef::parse(segment.data).expect("fixture parses")));
        }
    }
    assert_eq!(all.len(), 6, "the fixtures hold six executables");
    all
}

/// The layers' messages so far, emptied.
fn take_messages() -> Vec<String> {
    std::mem::take(&mut *MESSAGES.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Runs `body` on a fresh device and returns the validation messages reported until the device and
/// instance were destroyed (which reports objects left alive), and whether the layers were on;
/// `None` where there is no device.
fn on_device(push_descriptors: bool, body: impl FnOnce(&TestDevice)) -> Option<(Vec<String>, bool)> {
    static SERIAL: Mutex<()> = Mutex::new(());
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    take_messages();
    let device = TestDevice::open(push_descriptors)?;
    let validated = device.messenger.is_some();
    body(&device);
    drop(device);
    Some((take_messages(), validated))
}

/// [`on_device`], failing on any validation message.
fn with_device(push_descriptors: bool, body: impl FnOnce(&TestDevice)) {
    if let Some((messages, _)) = on_device(push_descriptors, body) {
        assert!(messages.is_empty(), "validation messages:\n{}", messages.join("\n"));
    }
}

#[test]
fn every_fixture_executable_becomes_pipelines_with_descriptor_pools() {
    with_device(false, |device| {
        for (name, def) in fixture_executables() {
            let pipelines = device.pipelines(&def, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!pipelines.push_descriptors());
            let made = pipelines.pipelines();
            assert_eq!(made.len(), def.pipelines.len());
            for (pipeline, expected) in made.iter().zip(&def.pipelines) {
                assert_eq!(pipeline.name, expected.entry_point);
                assert_ne!(pipeline.handle, vk::Pipeline::null());
                assert_eq!(pipeline.set_layouts.len(), 1, "{name}: set 0 only");
                assert_eq!(pipeline.bindings, def.binding_slots(&def.pipeline_layouts[0]));
                assert_eq!(pipeline.workgroup_size, expected.workgroup_size);
            }
        }
    });
}

#[test]
fn every_fixture_executable_becomes_pipelines_with_push_descriptors_where_the_device_has_them() {
    with_device(true, |device| {
        let expected = device.support.max_push_descriptors.is_some();
        for (name, def) in fixture_executables() {
            let pipelines = device.pipelines(&def, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(pipelines.push_descriptors(), expected, "{name}");
        }
    });
}

#[test]
fn specialization_constants_are_accepted_for_every_pipeline() {
    with_device(false, |device| {
        for (name, def) in fixture_executables() {
            // The fixtures declare no specialization constants; Vulkan ignores entries the module
            // does not use, so this checks only that the map is well formed.
            device.pipelines(&def, &[7, 0xffff_ffff]).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    });
}

#[test]
fn a_layout_beyond_the_device_limits_is_refused_before_vulkan_sees_it() {
    with_device(false, |device| {
        let (_, mut def) = fixture_executables().into_iter().find(|(name, _)| name == "dynamic").expect("dynamic");
        def.pipeline_layouts[0].push_constant_ranges[0].size = device.support.limits.max_push_constants_size + 4;
        let err = device.pipelines(&def, &[]).unwrap_err();
        assert!(matches!(err, PipelineError::Unsupported(_)), "{err}");
        assert!(err.to_string().contains("bytes of push constants"), "{err}");

        let (_, mut def) = fixture_executables().remove(0);
        def.pipelines[0].subgroup_size = Some(64);
        let err = device.pipelines(&def, &[]).unwrap_err();
        assert!(err.to_string().contains("requires subgroup size 64"), "{err}");
    });
}

#[test]
fn the_validation_layers_report_a_leaked_pipeline() {
    // The other tests pass only if no message came; this shows a message does come when one is due.
    let report = on_device(false, |device| {
        let (_, def) = fixture_executables().remove(0);
        std::mem::forget(device.pipelines(&def, &[]).expect("pipelines"));
    });
    // Without the layers or a device, opening the device said so (a skip).
    if let Some((messages, true)) = report {
        assert!(messages.iter().any(|m| m.contains("VkPipeline ")), "no leak reported: {messages:?}")
    }
}
