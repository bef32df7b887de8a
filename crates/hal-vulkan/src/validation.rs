//! What the Khronos validation layers say. Every warning and error they (or the loader) report
//! through `VK_EXT_debug_utils` is kept in one process-wide log, so tests can fail on any of them
//! and a host can print them; the log keeps the first [`KEPT`] messages and counts the rest.

use std::ffi::{c_void, CStr};
use std::sync::{Mutex, PoisonError};

use ash::vk;

/// How many messages the log keeps.
pub const KEPT: usize = 256;

#[derive(Default)]
struct Log {
    messages: Vec<String>,
    dropped: usize,
}

static LOG: Mutex<Log> = Mutex::new(Log { messages: Vec::new(), dropped: 0 });

/// The messages reported so far in this process, as `severity [id]: text`, and how many more
/// were reported past the first [`KEPT`].
pub fn messages() -> (Vec<String>, usize) {
    let log = LOG.lock().unwrap_or_else(PoisonError::into_inner);
    (log.messages.clone(), log.dropped)
}

fn record(message: String) {
    let mut log = LOG.lock().unwrap_or_else(PoisonError::into_inner);
    if log.messages.len() < KEPT {
        log.messages.push(message);
    } else {
        log.dropped += 1;
    }
}

/// The severities recorded: warnings and errors (information and verbose messages are chatter).
pub const SEVERITIES: vk::DebugUtilsMessageSeverityFlagsEXT = vk::DebugUtilsMessageSeverityFlagsEXT::from_raw(
    vk::DebugUtilsMessageSeverityFlagsEXT::WARNING.as_raw() | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR.as_raw(),
);

/// The messenger's callback: records the message and lets the call go on.
///
/// # Safety
/// Called by the Vulkan loader with a valid (or null) callback data pointer.
pub unsafe extern "system" fn on_message(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    _user_data: *mut c_void,
) -> vk::Bool32 {
    let severity = if severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::ERROR) { "error" } else { "warning" };
    // SAFETY: the loader passes callback data valid for the duration of the call, whose strings
    // are NUL-terminated when not null.
    let (id, text) = unsafe {
        match data.as_ref() {
            Some(data) => (c_text(data.p_message_id_name), c_text(data.p_message)),
            None => (String::new(), String::new()),
        }
    };
    record(format!("{severity} [{id}]: {text}"));
    vk::FALSE
}

/// # Safety
/// `text` is null or a NUL-terminated string.
unsafe fn c_text(text: *const std::ffi::c_char) -> String {
    if text.is_null() {
        String::new()
    } else {
        // SAFETY: per the contract.
        unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
    }
}
