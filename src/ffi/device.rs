//! Devices for a context: where its tensor programs run. A module compiled from tensor code
//! imports the `hal` module, which rtx provides over the context's device; so a context gets a
//! device (`rtx_context_add_device`) before such modules are added to it.

use std::ffi::c_char;

use super::context::rtx_context_t;
use super::error::rtx_error_t;
use super::{c_str, catch_error, handle};
use crate::host::ResultExt;

/// Gives the context the device `device` to run tensor programs on: `"local-sync"` (the CPU,
/// every dispatch inline on the thread that runs the call) or `"local-task"` (the CPU, a
/// dispatch's workgroups spread over worker threads, one per core, which every context of the
/// process shares); `"local-sync://"` and `"local-task://"` are accepted too; or `"vulkan"`,
/// `"vulkan://N"` or `"vulkan://UUID"` (a Vulkan device, when the system has one; contexts that
/// name it the same way share it while any of them lives). This adds the `hal` module over that
/// device to the context, so it must come before `rtx_context_add_module` for
/// modules that import `hal` (any module compiled from tensor code, for any CPU target: vmvx,
/// embedded or system ELF). One device per context.
///
/// Errors: NOT_FOUND for an unknown device name (the message lists the known ones);
/// ALREADY_EXISTS if the context already has a device (or a native module named `hal`);
/// UNIMPLEMENTED for a Vulkan device in a build without the `vulkan` feature; INVALID_ARGUMENT for
/// NULL arguments. On failure the context is left as it was. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rtx_context_add_device(
    context: *mut rtx_context_t,
    device: *const c_char,
) -> *mut rtx_error_t {
    catch_error(|| {
        const FUNCTION: &str = "rtx_context_add_device";
        // SAFETY: forwarded from the caller.
        let context = unsafe { handle::borrow(context, FUNCTION, "context") }?;
        // SAFETY: a non-null name is NUL-terminated by contract.
        let name = unsafe { c_str(device, FUNCTION, "device") }?;
        context.add_device(name).context(FUNCTION)
    })
}
