//! The Vulkan device C API through the exported functions: listing devices (what it reports
//! agrees with the Rust enumeration), opening one by index and by UUID, giving it to contexts,
//! and the errors for bad indices, NULLs and short structs.
//!
//! Without a Vulkan device the listing must be empty and opening must fail, and what needs a
//! device is skipped (`rtx_test_support::skip`).

use crate::common::{new_context, ok, take};
use rtx_test_support::skip::{skip, Need};

use std::ffi::CStr;
use std::ptr;

use rtx::ffi::context::*;
use rtx::ffi::error::rtx_status_code_t::*;
use rtx::ffi::vulkan::*;
use rtx::hal::vulkan;

fn blank_info() -> rtx_vulkan_device_info_t {
    rtx_vulkan_device_info_t {
        struct_size: std::mem::size_of::<rtx_vulkan_device_info_t>(),
        name: ptr::null(),
        vendor_id: 0,
        device_id: 0,
        api_version: 0,
        uuid: [0; 16],
        driver: ptr::null(),
        device_local_bytes: 0,
    }
}

fn count() -> usize {
    let mut count = usize::MAX;
    // SAFETY: `count` is writable.
    ok(unsafe { rtx_vulkan_device_count(&mut count) });
    count
}

#[test]
fn the_listing_agrees_with_the_enumeration() {
    let count = count();
    let Ok(infos) = vulkan::devices() else {
        assert_eq!(count, 0, "no Vulkan: nothing listed");
        return skip(Need::VulkanDevice, "no Vulkan loader");
    };
    assert_eq!(count, infos.len());
    if count == 0 {
        return skip(Need::VulkanDevice, "the Vulkan loader lists no device");
    }
    for (index, expected) in infos.iter().enumerate() {
        let mut info = blank_info();
        // SAFETY: `info` is a writable struct of the size it declares.
        ok(unsafe { rtx_vulkan_device_info(index, &mut info) });
        // SAFETY: the strings are NUL-terminated and live as long as the library.
        let (name, driver) = unsafe { (CStr::from_ptr(info.name), CStr::from_ptr(info.driver)) };
        assert_eq!(name.to_str().unwrap(), expected.name);
        assert_eq!(driver.to_str().unwrap(), expected.driver_name);
        assert_eq!(
            (info.vendor_id, info.device_id, info.api_version),
            (expected.vendor_id, expected.device_id, expected.api_version.0)
        );
        assert_eq!(info.uuid, expected.uuid);
        assert_eq!(info.device_local_bytes, expected.device_local_bytes);
        assert!(info.device_local_bytes > 0, "every Vulkan device has a device-local heap");
    }
    let mut info = blank_info();
    // SAFETY: as above.
    let (code, message) = take(unsafe { rtx_vulkan_device_info(count, &mut info) }).unwrap();
    assert_eq!(code, RTX_STATUS_CODE_OUT_OF_RANGE, "{message}");
    assert!(message.contains(&format!("no Vulkan device {count}; there are {count}")), "{message}");
    info.struct_size = 8;
    // SAFETY: as above.
    let (code, message) = take(unsafe { rtx_vulkan_device_info(0, &mut info) }).unwrap();
    assert_eq!(code, RTX_STATUS_CODE_INVALID_ARGUMENT, "{message}");
    // SAFETY: NULL outputs are refused.
    unsafe {
        assert_eq!(take(rtx_vulkan_device_count(ptr::null_mut())).unwrap().0, RTX_STATUS_CODE_INVALID_ARGUMENT);
        assert_eq!(take(rtx_vulkan_device_info(0, ptr::null_mut())).unwrap().0, RTX_STATUS_CODE_INVALID_ARGUMENT);
    }
}

#[test]
fn a_device_opens_by_index_and_uuid_and_joins_contexts() {
    let mut device = ptr::null_mut();
    // SAFETY: `device` is writable.
    let error = unsafe { rtx_vulkan_device_create(count(), &mut device) };
    let (code, message) = take(error).expect("no device past the last");
    assert!(matches!(code, RTX_STATUS_CODE_NOT_FOUND | RTX_STATUS_CODE_UNAVAILABLE), "{message}");
    assert!(device.is_null(), "written only on success");
    if count() == 0 {
        return skip(Need::VulkanDevice, "the Vulkan loader lists no device");
    }
    let mut info = blank_info();
    // SAFETY: the out-pointers are writable; handles are released once each.
    unsafe {
        ok(rtx_vulkan_device_info(0, &mut info));
        ok(rtx_vulkan_device_create(0, &mut device));
        let mut by_uuid = ptr::null_mut();
        ok(rtx_vulkan_device_create_by_uuid(info.uuid.as_ptr(), &mut by_uuid));
        let unknown = [0xA5u8; 16];
        let mut none = ptr::null_mut();
        assert_eq!(
            take(rtx_vulkan_device_create_by_uuid(unknown.as_ptr(), &mut none)).unwrap().0,
            RTX_STATUS_CODE_NOT_FOUND
        );
        assert_eq!(
            take(rtx_vulkan_device_create_by_uuid(ptr::null(), &mut none)).unwrap().0,
            RTX_STATUS_CODE_INVALID_ARGUMENT
        );

        let first = new_context(c"s");
        let second = new_context(c"s");
        ok(rtx_context_add_vulkan_device(first, device));
        ok(rtx_context_add_vulkan_device(second, device));
        let (code, message) = take(rtx_context_add_vulkan_device(first, by_uuid)).unwrap();
        assert_eq!(code, RTX_STATUS_CODE_ALREADY_EXISTS, "{message}");
        assert!(message.starts_with("rtx_context_add_vulkan_device: "), "{message}");
        assert_eq!(
            take(rtx_context_add_vulkan_device(first, ptr::null_mut())).unwrap().0,
            RTX_STATUS_CODE_INVALID_ARGUMENT
        );

        // The contexts keep the device alive past the handle's release.
        assert_eq!(rtx_vulkan_device_retain(device), device);
        rtx_vulkan_device_release(device);
        rtx_vulkan_device_release(device);
        rtx_vulkan_device_release(by_uuid);
        rtx_context_release(first);
        rtx_context_release(second);
        rtx_vulkan_device_release(ptr::null_mut());
    }
    let (messages, _) = vulkan::validation::messages();
    assert!(messages.is_empty(), "validation layers reported:\n{}", messages.join("\n"));
}
