//! `!hal.device` and `!hal.allocator`: the refs a program holds for a backend's device and its
//! allocator. What they do is the backend's ([`DeviceBackend`], [`AllocatorBackend`]).

use std::any::Any;
use std::sync::Arc;

use super::backend::{AllocatorBackend, DeviceBackend};
use super::buffer::{memory_type, wrong_type, Buffer};
use rtx_host::{Diagnostic, StatusCode};
use rtx_vm::buffer::ByteBuffer;
use rtx_vm::refs::{Ref, RefObject};

/// A device.
#[derive(Debug)]
pub struct Device {
    backend: Arc<dyn DeviceBackend>,
    /// The backend's allocator as a ref, made once (`hal.device.allocator` hands it out).
    allocator: Ref,
}

impl RefObject for Device {
    fn type_name(&self) -> &'static str {
        "hal.device"
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Device {
    pub fn new(backend: Arc<dyn DeviceBackend>) -> Device {
        let allocator = backend.allocator().clone().into_ref();
        Device { backend, allocator }
    }

    pub fn backend(&self) -> &dyn DeviceBackend {
        &*self.backend
    }

    /// The device's allocator, as a `hal.allocator` ref.
    pub fn allocator(&self) -> &Ref {
        &self.allocator
    }

    pub fn into_ref(self) -> Ref {
        Ref::Object(Arc::new(self))
    }
}

/// A device's allocator.
#[derive(Clone, Debug)]
pub struct Allocator {
    backend: Arc<dyn AllocatorBackend>,
}

impl RefObject for Allocator {
    fn type_name(&self) -> &'static str {
        "hal.allocator"
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Allocator {
    pub fn new(backend: Arc<dyn AllocatorBackend>) -> Allocator {
        Allocator { backend }
    }

    pub fn allocate(&self, memory_types: u32, usage: u32, length: i64) -> Result<Buffer, Diagnostic> {
        self.backend.allocate(memory_types, usage, length)
    }

    pub fn import(&self, bytes: Arc<ByteBuffer>, memory_types: u32, usage: u32) -> Result<Buffer, Diagnostic> {
        self.backend.import(bytes, memory_types, usage)
    }

    /// `buffer` where the device can use it as it is, otherwise a device-local copy of its bytes
    /// with its usage: how a host tensor reaches a device with memory of its own.
    pub fn adopt(&self, buffer: &Buffer) -> Result<Buffer, Diagnostic> {
        if self.backend.can_use(buffer) {
            return Ok(buffer.clone());
        }
        let bytes = ByteBuffer::from_bytes(&buffer.to_vec()?)?;
        self.backend.import(bytes, memory_type::DEVICE_LOCAL, buffer.usage())
    }

    pub fn into_ref(self) -> Ref {
        Ref::Object(Arc::new(self))
    }
}

/// The device a ref holds, or INVALID_ARGUMENT naming what was there.
#[inline]
pub fn deref(value: &Ref) -> Result<&Device, Diagnostic> {
    value.downcast::<Device>().ok_or_else(|| wrong_type("hal.device", value))
}

/// The allocator a ref holds, or INVALID_ARGUMENT naming what was there.
#[inline]
pub fn deref_allocator(value: &Ref) -> Result<&Allocator, Diagnostic> {
    value.downcast::<Allocator>().ok_or_else(|| wrong_type("hal.allocator", value))
}

/// `*` matches any run of characters and `?` any one, as IREE's pattern matching does
/// (`hal.device.id` and `hal.executable.format` queries).
pub fn glob_match(pattern: &str, text: &str) -> bool {
    match pattern.chars().next() {
        None => text.is_empty(),
        Some('*') => {
            (0..=text.len()).filter(|&i| text.is_char_boundary(i)).any(|i| glob_match(&pattern[1..], &text[i..]))
        }
        Some(c) => {
            let mut chars = text.chars();
            match chars.next() {
                Some(t) if c == '?' || c == t => glob_match(&pattern[c.len_utf8()..], chars.as_str()),
                _ => false,
            }
        }
    }
}

/// NOT_FOUND for a `hal.device.query.i64` key a device does not know, as IREE words it.
pub fn unknown_query(category: &str, key: &str) -> Diagnostic {
    Diagnostic::new(StatusCode::NotFound, format!("unknown device configuration key value '{category} :: {key}'"))
}
