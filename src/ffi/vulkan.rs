//! Vulkan devices: listing them, opening one as a handle, and giving it to contexts. The Vulkan
//! loader is opened at run time, so these work (and list no device) where no Vulkan exists. In a
//! build without the `vulkan` feature every one of them fails with UNIMPLEMENTED.

use std::ffi::c_char;
use std::sync::{Arc, OnceLock};

use super::context::rtx_context_t;
use super::error::rtx_error_t;
use super::handle::{self, Handle, OwnershipArc};
use super::{catch_error, catch_or, check_struct_size, invalid_argument};
use crate::host::{Diagnostic, ResultExt, StatusCode};
use crate::runtime::vulkan::{self, VulkanDevice, VulkanDeviceInfo};

/// An open Vulkan device (a logical device with a compute queue on one physical device).
/// Opaque; reference counted; thread-safe. Contexts it is added to keep it alive.
#[allow(non_camel_case_types)]
pub struct rtx_vulkan_device {
    _private: [u8; 0],
}

/// The handle type C sees.
#[allow(non_camel_case_types)]
pub type rtx_vulkan_device_t = rtx_vulkan_device;

impl Handle for rtx_vulkan_device {
    type RustType = VulkanDevice;
    type Ownership = OwnershipArc;
}

/// What `rtx_vulkan_device_info` says of a physical device. Set `struct_size` to
/// `sizeof(rtx_vulkan_device_info_t)` before the call, so that a library newer than the header
/// writes only the fields the caller knows. The strings live as long as the library.
#[repr(C)]
#[allow(non_camel_case_types)]
pub struct rtx_vulkan_device_info_t {
    /// `sizeof(rtx_vulkan_device_info_t)` as the caller's header knows it.
    pub struct_size: usize,
    /// The device's name (`VkPhysicalDeviceProperties::deviceName`).
    pub name: *const c_char,
    pub vendor_id: u32,
    pub device_id: u32,
    /// The Vulkan API version the device offers (`VK_MAKE_API_VERSION` encoding).
    pub api_version: u32,
    /// `VkPhysicalDeviceIDProperties::deviceUUID`: stable across processes, for
    /// `rtx_vulkan_device_create_by_uuid`.
    pub uuid: [u8; 16],
    /// The driver's name (`VkPhysicalDeviceDriverProperties::driverName`; empty before 1.2).
    pub driver: *const c_char,
    /// The size of the device-local memory heaps, together.
    pub device_local_bytes: u64,
}

/// Devices listed at most (more are not shown by `rtx_vulkan_device_info`).
const MAX_LISTED: usize = 32;
/// Vulkan's bound on device and driver names (`VK_MAX_PHYSICAL_DEVICE_NAME_SIZE`,
/// `VK_MAX_DRIVER_NAME_SIZE`), NUL included.
const NAME_SIZE: usize = 256;

/// The process's list of physical devices, made on the first call and kept in static storage
/// (no heap: the strings handed out must live as long as the library, and a program's leak
/// check must not see them).
struct Listing {
    count: usize,
    devices: [Listed; MAX_LISTED],
}

#[derive(Clone, Copy)]
struct Listed {
    name: [u8; NAME_SIZE],
    driver: [u8; NAME_SIZE],
    vendor_id: u32,
    device_id: u32,
    api_version: u32,
    uuid: [u8; 16],
    device_local_bytes: u64,
}

impl Listed {
    const EMPTY: Listed = Listed {
        name: [0; NAME_SIZE],
        driver: [0; NAME_SIZE],
        vendor_id: 0,
        device_id: 0,
        api_version: 0,
        uuid: [0; 16],
        device_local_bytes: 0,
    };

    fn new(info: &VulkanDeviceInfo) -> Listed {
        Listed {
            name: c_text(&info.name),
            driver: c_text(&info.driver),
            vendor_id: info.vendor_id,
            device_id: info.device_id,
            api_version: info.api_version,
            uuid: info.uuid,
            device_local_bytes: info.device_local_bytes,
        }
    }
}

/// `text` NUL-terminated in a name buffer (Vulkan's names fit; anything longer is cut at a
/// character boundary).
fn c_text(text: &str) -> [u8; NAME_SIZE] {
    let mut end = text.len().min(NAME_SIZE - 1);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut bytes = [0; NAME_SIZE];
    bytes[..end].copy_from_slice(&text.as_bytes()[..end]);
    bytes
}

static LISTING: OnceLock<Listing> = OnceLock::new();

/// The listing, made once enumeration succeeds (no Vulkan: an empty one; a failure is
/// returned and tried again next time).
fn listing() -> Result<&'static Listing, Diagnostic> {
    if let Some(listing) = LISTING.get() {
        return Ok(listing);
    }
    let infos = vulkan::physical_devices()?;
    let mut listing = Listing { count: infos.len().min(MAX_LISTED), devices: [Listed::EMPTY; MAX_LISTED] };
    for (slot, info) in listing.devices.iter_mut().zip(&infos) {
        *slot = Listed::new(info);
    }
    Ok(LISTING.get_or_init(|| listing))
}

/// Sets `*out` to the number of Vulkan physical devices: 0 where no Vulkan loader or driver
/// exists. Devices that rtx cannot run on (before Vulkan 1.2, no timeline semaphores) are
/// counted; `rtx_vulkan_device_create` says why it refuses them. The list is made once per
/// process. Errors: INVALID_ARGUMENT for NULL `out`; the loader's error when enumeration fails;
/// UNIMPLEMENTED in a build without the `vulkan` feature.
#[no_mangle]
pub unsafe extern "C" fn rtx_vulkan_device_count(out: *mut usize) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_vulkan_device_count";
        if out.is_null() {
            return Err(invalid_argument(format!("{FUNCTION}: argument 'out' is NULL")));
        }
        let count = listing().context(FUNCTION)?.count;
        // SAFETY: `out` is non-null and writable by contract.
        unsafe { out.write(count) };
        Ok(())
    })
}

/// Fills `*out` with physical device `index` (`0 <= index < rtx_vulkan_device_count`). Errors:
/// OUT_OF_RANGE for an index past the devices; INVALID_ARGUMENT for NULL `out` or a
/// `struct_size` smaller than the first version of the struct. `*out` is written only on success.
#[no_mangle]
pub unsafe extern "C" fn rtx_vulkan_device_info(index: usize, out: *mut rtx_vulkan_device_info_t) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_vulkan_device_info";
        if out.is_null() {
            return Err(invalid_argument(format!("{FUNCTION}: argument 'out' is NULL")));
        }
        // SAFETY: a non-null `out` points to a struct of at least `struct_size` bytes, whose
        // first field is `struct_size`.
        let declared = unsafe { out.cast::<usize>().read() };
        check_struct_size(declared, std::mem::size_of::<rtx_vulkan_device_info_t>(), "out", FUNCTION)?;
        let listing = listing().context(FUNCTION)?;
        let device = listing.devices[..listing.count].get(index).ok_or_else(|| {
            Diagnostic::new(
                StatusCode::OutOfRange,
                format!("{FUNCTION}: no Vulkan device {index}; there are {}", listing.count),
            )
        })?;
        let info = rtx_vulkan_device_info_t {
            struct_size: declared,
            name: device.name.as_ptr().cast(),
            vendor_id: device.vendor_id,
            device_id: device.device_id,
            api_version: device.api_version,
            uuid: device.uuid,
            driver: device.driver.as_ptr().cast(),
            device_local_bytes: device.device_local_bytes,
        };
        // SAFETY: `out` holds at least this version of the struct (checked above).
        unsafe { out.write(info) };
        Ok(())
    })
}

/// Opens physical device `index` (as `rtx_vulkan_device_info` numbers them) with a compute
/// queue. Errors: NOT_FOUND for no such device; UNAVAILABLE where no Vulkan exists;
/// FAILED_PRECONDITION (or the driver's error) for a device rtx cannot run on, saying why;
/// INVALID_ARGUMENT for NULL `out`; UNIMPLEMENTED in a build without the `vulkan` feature.
/// `*out` is written only on success; release it with `rtx_vulkan_device_release`.
#[no_mangle]
pub unsafe extern "C" fn rtx_vulkan_device_create(
    index: usize,
    out: *mut *mut rtx_vulkan_device_t,
) -> *mut rtx_error_t {
    // SAFETY: forwarded from the caller.
    unsafe { create("rtx_vulkan_device_create", || vulkan::open_index(index), out) }
}

/// Opens the physical device whose `VkPhysicalDeviceIDProperties::deviceUUID` is the 16 bytes
/// at `uuid` (see `rtx_vulkan_device_info_t::uuid`). Errors as `rtx_vulkan_device_create`, and
/// INVALID_ARGUMENT for NULL `uuid`.
#[no_mangle]
pub unsafe extern "C" fn rtx_vulkan_device_create_by_uuid(
    uuid: *const u8,
    out: *mut *mut rtx_vulkan_device_t,
) -> *mut rtx_error_t {
    if uuid.is_null() {
        return catch_error(|| Err(invalid_argument("rtx_vulkan_device_create_by_uuid: argument 'uuid' is NULL")));
    }
    // SAFETY: a non-null `uuid` points to 16 readable bytes by contract.
    let uuid = unsafe { uuid.cast::<[u8; 16]>().read_unaligned() };
    // SAFETY: forwarded from the caller.
    unsafe { create("rtx_vulkan_device_create_by_uuid", || vulkan::open_uuid(uuid), out) }
}

/// # Safety
/// A non-null `out` must be writable.
unsafe fn create(
    function: &str,
    open: impl FnOnce() -> Result<Arc<VulkanDevice>, Diagnostic>,
    out: *mut *mut rtx_vulkan_device_t,
) -> *mut rtx_error_t {
    catch_error(|| {
        if out.is_null() {
            return Err(invalid_argument(format!("{function}: argument 'out' is NULL")));
        }
        let device = open().context(function)?;
        // SAFETY: `out` is non-null and writable by contract.
        unsafe { out.write(handle::to_handle::<rtx_vulkan_device_t>(device)) };
        Ok(())
    })
}

/// Adds a reference and returns `device` (NULL stays NULL).
#[no_mangle]
pub unsafe extern "C" fn rtx_vulkan_device_retain(device: *mut rtx_vulkan_device_t) -> *mut rtx_vulkan_device_t {
    // SAFETY: a non-null `device` is a live handle by contract.
    catch_or(device, || unsafe { handle::retain(device) })
}

/// Drops a reference; the last one (counting the contexts it was added to) closes the device
/// once its queued work is done. NULL does nothing.
#[no_mangle]
pub unsafe extern "C" fn rtx_vulkan_device_release(device: *mut rtx_vulkan_device_t) {
    // SAFETY: the caller gives up one reference it owns.
    catch_or((), || unsafe { handle::release(device) })
}

/// Gives the context `device` to run tensor programs on, as `rtx_context_add_device` does for a
/// device it picks by name; the context keeps a reference. Errors: ALREADY_EXISTS if the context
/// already has a device; INVALID_ARGUMENT for NULL arguments. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_add_vulkan_device(
    context: *mut rtx_context_t,
    device: *mut rtx_vulkan_device_t,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_context_add_vulkan_device";
        // SAFETY: forwarded from the caller.
        let context = unsafe { handle::borrow(context, FUNCTION, "context") }?;
        // SAFETY: as above.
        let device: Arc<VulkanDevice> = unsafe { handle::clone(device, FUNCTION, "device") }?;
        context.add_vulkan_device(device).context(FUNCTION)
    })
}
