//! Devices for a context: where its tensor programs run. A module compiled from tensor code
//! imports the `hal` module, which rtx provides over the context's device; so a context gets a
//! device (`rtx_context_add_device`) before such modules are added to it.
//!
//! There is no device handle yet: the CPU devices have nothing to configure or query, so a name
//! is all a host gives. `rtx_device_t` comes with devices that have properties (Vulkan).

use std::ffi::c_char;
use std::sync::Arc;

use super::context::rtx_context_t;
use super::error::rtx_error_t;
use super::{c_str, catch_error, handle};
use crate::hal::device::{Device, DeviceKind};
use crate::hal::module::HalModule;
use crate::host::{Diagnostic, ResultExt, StatusCode};

/// The name of the native module that tensor programs import, and that a device provides.
pub(crate) const HAL_MODULE: &str = "hal";

/// Gives the context the device `device` to run tensor programs on: `"local-sync"` (the CPU,
/// every dispatch inline on the thread that runs the call) or `"local-task"` (the CPU, a
/// dispatch's workgroups spread over one worker thread per core); `"local-sync://"` and
/// `"local-task://"` are accepted too. This adds the `hal` module over that device to the context, so it must
/// come before `rtx_context_add_module` for modules that import `hal` (any module compiled from
/// tensor code, for any CPU target: vmvx, embedded or system ELF). One device per context.
///
/// Errors: NOT_FOUND for an unknown device name (the message lists the known ones);
/// ALREADY_EXISTS if the context already has a device (or a native module named `hal`);
/// INVALID_ARGUMENT for NULL arguments. On failure the context is left as it was. Thread-safe.
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
        let kind = DeviceKind::parse(name).context(FUNCTION)?;
        if context.vm.module_names().iter().any(|m| m == HAL_MODULE) {
            return Err(Diagnostic::new(
                StatusCode::AlreadyExists,
                format!(
                    "{FUNCTION}: the context already has a device (its `{HAL_MODULE}` module); rtx runs a context's \
                     tensor programs on one device"
                ),
            ));
        }
        context.vm.add_native_module(Arc::new(HalModule::new(vec![Device::new(kind)]))).context(FUNCTION)
    })
}

/// Why `module` cannot be added to a context without a device, if it imports `hal` and the
/// context has no `hal` module: FAILED_PRECONDITION saying to add a device first.
pub(crate) fn check_device_for(module: &crate::vm::Module, modules_in_context: &[String]) -> Result<(), Diagnostic> {
    let needs_hal = module.dependencies().iter().any(|d| d.name == HAL_MODULE && !d.is_optional())
        || module.imported_functions().iter().any(|import| {
            import.full_name.split_once('.').is_some_and(|(m, _)| m == HAL_MODULE) && !import.is_optional()
        });
    if needs_hal && !modules_in_context.iter().any(|m| m == HAL_MODULE) {
        return Err(Diagnostic::new(
            StatusCode::FailedPrecondition,
            format!(
                "module `{}` runs tensor programs (it imports `{HAL_MODULE}`), but the context has no device: call \
                 rtx_context_add_device(context, \"local-sync\") before adding it",
                module.name()
            ),
        ));
    }
    Ok(())
}
