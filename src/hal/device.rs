//! `!hal.device` and `!hal.allocator` for the CPU: what the `hal` module's device functions ask
//! of a device — identity and capability queries, memory, executables — answered for host memory
//! and the executable formats rtx loads.

use std::any::Any;
use std::sync::Arc;

use super::buffer::{wrong_type, Buffer};
use super::executable::{Executable, ExecutableCode};
use super::local::cpu;
use super::local::library::ExecutableFormat;
use super::local::native::NativeExecutable;
use super::local::vmvx::{self, VmvxExecutable};
use super::local::workers::Workers;
use crate::host::{Diagnostic, StatusCode};
use crate::vm::refs::{Ref, RefObject};

/// Which CPU device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    /// Everything inline on the calling thread.
    LocalSync,
    /// Queue work inline too, but a dispatch's workgroups spread over a pool of worker threads
    /// (one per core, possibly shared with other devices) and the submitting thread. Dispatches of
    /// one workgroup and VMVX dispatches run inline.
    LocalTask,
}

impl DeviceKind {
    /// From `--device=`: `local-sync` or `local-task` (IREE's URI forms `local-sync://` too).
    pub fn parse(text: &str) -> Result<DeviceKind, Diagnostic> {
        match text.trim_end_matches("://") {
            "local-sync" => Ok(DeviceKind::LocalSync),
            "local-task" => Ok(DeviceKind::LocalTask),
            other => Err(Diagnostic::new(
                StatusCode::NotFound,
                format!("no device `{other}`: rtx runs tensor programs on `local-sync` or `local-task`"),
            )),
        }
    }

    /// The identifier `hal.device.id` queries match against.
    pub fn id(self) -> &'static str {
        match self {
            DeviceKind::LocalSync => "local-sync",
            DeviceKind::LocalTask => "local-task",
        }
    }
}

/// A CPU device.
#[derive(Debug)]
pub struct Device {
    kind: DeviceKind,
    allocator: Ref,
    /// `local-task`'s workers.
    pool: Option<Arc<Workers>>,
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
    /// A device; `local-task` with one worker per available core.
    pub fn new(kind: DeviceKind) -> Device {
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        Device::with_workers(kind, workers)
    }

    /// A device whose `local-task` pool has `workers` threads of its own (ignored for
    /// `local-sync`). If the threads cannot be started the device runs workgroups inline, like
    /// `local-sync`.
    pub fn with_workers(kind: DeviceKind, workers: usize) -> Device {
        let pool = match kind {
            DeviceKind::LocalSync => None,
            DeviceKind::LocalTask => Workers::new(workers).map(Arc::new),
        };
        Device::with_pool(kind, pool)
    }

    /// A device whose `local-task` workgroups run on `pool`, which other devices may share (as
    /// IREE's devices of one instance share its task executor): many contexts, one set of
    /// threads. `None`, and `local-sync` whatever the pool, run workgroups inline.
    pub fn with_pool(kind: DeviceKind, pool: Option<Arc<Workers>>) -> Device {
        let pool = pool.filter(|_| kind == DeviceKind::LocalTask);
        Device { kind, allocator: Ref::Object(Arc::new(Allocator)), pool }
    }

    pub fn kind(&self) -> DeviceKind {
        self.kind
    }

    /// The worker pool dispatches spread over, if any.
    pub fn pool(&self) -> Option<&Arc<Workers>> {
        self.pool.as_ref()
    }

    pub fn allocator(&self) -> &Ref {
        &self.allocator
    }

    /// `hal.device.query.i64`: `Ok(value)` for a key the device knows, NOT_FOUND otherwise.
    pub fn query_i64(&self, category: &str, key: &str) -> Result<i64, Diagnostic> {
        match (category, key) {
            ("hal.device.id", pattern) => Ok(glob_match(pattern, self.kind.id()) as i64),
            ("hal.executable.format", format) => Ok(supports_format(format) as i64),
            ("hal.device" | "hal.dispatch", "concurrency") => {
                Ok(self.pool.as_ref().map_or(1, |workers| workers.threads()) as i64)
            }
            ("hal.cpu", feature) => cpu::feature(feature).ok_or_else(|| {
                Diagnostic::new(
                    StatusCode::NotFound,
                    format!("CPU feature '{feature}' unknown on {}", std::env::consts::ARCH),
                )
            }),
            _ => Err(Diagnostic::new(
                StatusCode::NotFound,
                format!("unknown device configuration key value '{category} :: {key}'"),
            )),
        }
    }

    /// Loads an executable of `format` (`hal.executable.create`).
    pub fn create_executable(&self, format: &str, data: &[u8], constants: &[u32]) -> Result<Executable, Diagnostic> {
        let code: Box<dyn ExecutableCode> = match (format, ExecutableFormat::from_name(format)) {
            (vmvx::FORMAT, _) => Box::new(VmvxExecutable::load(data, constants)?),
            (_, Some(native)) => Box::new(NativeExecutable::load(native, data, constants, self.pool.clone())?),
            (other, None) => {
                return Err(Diagnostic::new(
                    StatusCode::NotFound,
                    format!("no executable loader for format `{other}` (rtx loads {})", FORMATS.join(", ")),
                ))
            }
        };
        Ok(Executable::new(code))
    }

    pub fn into_ref(self) -> Ref {
        Ref::Object(Arc::new(self))
    }
}

/// The executable formats the CPU devices load.
const FORMATS: [&str; 3] = [vmvx::FORMAT, ExecutableFormat::EmbeddedElf.name(), ExecutableFormat::SystemElf.name()];

fn supports_format(format: &str) -> bool {
    FORMATS.iter().any(|f| glob_match(format, f))
}

/// `*` matches any run of characters and `?` any one, as IREE's pattern matching does.
fn glob_match(pattern: &str, text: &str) -> bool {
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

/// The device's allocator: host memory.
#[derive(Debug)]
pub struct Allocator;

impl RefObject for Allocator {
    fn type_name(&self) -> &'static str {
        "hal.allocator"
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Allocator {
    pub fn allocate(&self, memory_types: u32, usage: u32, length: i64) -> Result<Buffer, Diagnostic> {
        Buffer::allocate(memory_types, usage, length)
    }
}

/// The device a ref holds, or INVALID_ARGUMENT naming what was there.
pub fn deref(value: &Ref) -> Result<&Device, Diagnostic> {
    value.downcast::<Device>().ok_or_else(|| wrong_type("hal.device", value))
}

/// The allocator a ref holds, or INVALID_ARGUMENT naming what was there.
pub fn deref_allocator(value: &Ref) -> Result<&Allocator, Diagnostic> {
    value.downcast::<Allocator>().ok_or_else(|| wrong_type("hal.allocator", value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_answer_like_a_cpu_device() {
        let device = Device::new(DeviceKind::LocalSync);
        assert_eq!(device.query_i64("hal.device.id", "local*").unwrap(), 1);
        assert_eq!(device.query_i64("hal.device.id", "vulkan*").unwrap(), 0);
        assert_eq!(device.query_i64("hal.executable.format", "vmvx-bytecode-fb").unwrap(), 1);
        assert_eq!(device.query_i64("hal.executable.format", "cuda-nvptx-fb").unwrap(), 0);
        assert_eq!(device.query_i64("hal.executable.format", "vmvx-*").unwrap(), 1);
        assert_eq!(device.query_i64("hal.dispatch", "concurrency").unwrap(), 1);
        assert_eq!(device.query_i64("hal.cpu", "nope").unwrap_err().code, StatusCode::NotFound);
        assert_eq!(device.query_i64("hal.cpu", "sse3").unwrap(), 1, "x86-64 CPUs have SSE3");
        assert!(glob_match("l?cal-s*c", "local-sync"));
        assert_eq!(device.query_i64("hal.device", "concurrency").unwrap(), 1, "local-sync runs inline");
        assert!(!glob_match("local", "local-sync"));
    }

    #[test]
    fn devices_sharing_a_pool_answer_its_thread_count() {
        let pool = Arc::new(Workers::new(3).unwrap());
        let devices = [
            Device::with_pool(DeviceKind::LocalTask, Some(pool.clone())),
            Device::with_pool(DeviceKind::LocalTask, Some(pool)),
        ];
        for device in &devices {
            assert_eq!(device.query_i64("hal.device", "concurrency").unwrap(), 3);
            assert_eq!(device.query_i64("hal.dispatch", "concurrency").unwrap(), 3);
        }
        let own = Device::with_workers(DeviceKind::LocalTask, 2);
        assert_eq!(own.query_i64("hal.device", "concurrency").unwrap(), 2);
        let sync = Device::with_pool(DeviceKind::LocalSync, Some(Arc::new(Workers::new(1).unwrap())));
        assert_eq!(sync.query_i64("hal.device", "concurrency").unwrap(), 1, "local-sync ignores the pool");
    }
}
