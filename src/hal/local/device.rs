//! The CPU devices (`local-sync`, `local-task`): identity and capability queries, host memory,
//! the executable formats rtx loads, and a queue that runs work inline.
//!
//! Queue operations run inline when their wait fence is reached (the usual case: everything
//! before them ran inline too) and otherwise once it is, from the fence's continuation, so no
//! thread ever blocks on a fence.

use std::sync::Arc;

use super::command_buffer::{self, host_bytes, run_transfer};
use super::cpu;
use super::executable::{ExecutableCode, LocalExecutable};
use super::library::ExecutableFormat;
use super::memory::HostAllocator;
use super::native::NativeExecutable;
use super::transient::TransientPool;
use super::vmvx::{self, VmvxExecutable};
use super::workers::Workers;
use crate::hal::backend::{DeviceBackend, QueueFences, Transfer};
use crate::hal::buffer::Buffer;
use crate::hal::command_buffer::{command_list, CommandBuffer, SpareLists, TableEntry};
use crate::hal::device::{glob_match, unknown_query, Allocator, Device};
use crate::hal::executable::Executable;
use crate::hal::fence::{after, Fence, Reached};
use crate::hal::file::File;
use crate::host::{Diagnostic, StatusCode};
use crate::vm::buffer::Buffer as Bytes;

/// Which CPU device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    /// Everything inline on the calling thread.
    LocalSync,
    /// Queue work inline too, but a dispatch's workgroups spread over a pool of worker threads
    /// (one per core, possibly shared with other devices) and the submitting thread. Dispatches of
    /// one workgroup, work timed under a few microseconds and VMVX dispatches run on one thread.
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
                format!(
                    "no device `{other}`: rtx runs tensor programs on `local-sync`, `local-task` or `vulkan` (`vulkan://N`)"
                ),
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
pub struct LocalDevice {
    kind: DeviceKind,
    allocator: Allocator,
    /// `local-task`'s workers.
    pool: Option<Arc<Workers>>,
    /// What `queue_alloca` lends and takes back.
    transients: TransientPool,
    /// Storage of released command buffers, for the next ones.
    spare_lists: Arc<SpareLists>,
}

impl LocalDevice {
    /// A device; `local-task` with one worker per available core.
    pub fn new(kind: DeviceKind) -> LocalDevice {
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        LocalDevice::with_workers(kind, workers)
    }

    /// A device whose `local-task` pool has `workers` threads of its own (ignored for
    /// `local-sync`). If the threads cannot be started the device runs workgroups inline, like
    /// `local-sync`.
    pub fn with_workers(kind: DeviceKind, workers: usize) -> LocalDevice {
        let pool = match kind {
            DeviceKind::LocalSync => None,
            DeviceKind::LocalTask => Workers::new(workers).map(Arc::new),
        };
        LocalDevice::with_pool(kind, pool)
    }

    /// A device whose `local-task` workgroups run on `pool`, which other devices may share (as
    /// IREE's devices of one instance share its task executor): many contexts, one set of
    /// threads. `None`, and `local-sync` whatever the pool, run workgroups inline.
    pub fn with_pool(kind: DeviceKind, pool: Option<Arc<Workers>>) -> LocalDevice {
        let pool = pool.filter(|_| kind == DeviceKind::LocalTask);
        LocalDevice {
            kind,
            allocator: Allocator::new(Arc::new(HostAllocator)),
            pool,
            transients: TransientPool::default(),
            spare_lists: Arc::default(),
        }
    }

    pub fn kind(&self) -> DeviceKind {
        self.kind
    }

    /// The worker pool dispatches spread over, if any.
    pub fn pool(&self) -> Option<&Arc<Workers>> {
        self.pool.as_ref()
    }

    /// The device as the `hal` module holds it.
    pub fn into_device(self) -> Device {
        Device::new(Arc::new(self))
    }
}

impl DeviceBackend for LocalDevice {
    fn query_i64(&self, category: &str, key: &str) -> Result<i64, Diagnostic> {
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
            _ => Err(unknown_query(category, key)),
        }
    }

    fn allocator(&self) -> &Allocator {
        &self.allocator
    }

    fn create_executable(&self, format: &str, data: &[u8], constants: &[u32]) -> Result<Executable, Diagnostic> {
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
        Ok(Executable::new(Arc::new(LocalExecutable::new(code))))
    }

    fn create_command_buffer(&self, _mode: u32, binding_capacity: u32) -> Result<CommandBuffer, Diagnostic> {
        Ok(CommandBuffer::new(Arc::new(command_buffer::new(binding_capacity, &self.spare_lists))))
    }

    /// Host memory is ready at once (a buffer of an earlier alloca that nothing holds any more,
    /// where one fits); the queue only orders the signal.
    fn queue_alloca(
        &self,
        queue: &QueueFences<'_>,
        memory_types: u32,
        usage: u32,
        size: i64,
    ) -> Result<Arc<Buffer>, Diagnostic> {
        let buffer = self.transients.allocate(size, memory_types, usage)?;
        submit(queue, || Ok(()))?;
        Ok(buffer)
    }

    /// The memory goes with the buffer's last reference; the queue only orders the signal.
    fn queue_dealloca(&self, queue: &QueueFences<'_>, _buffer: &Buffer) -> Result<(), Diagnostic> {
        submit(queue, || Ok(()))
    }

    /// Inline, the commands and the table are only borrowed; work that waits gets its own.
    fn queue_execute(
        &self,
        queue: &QueueFences<'_>,
        commands: Option<&CommandBuffer>,
        table: &[TableEntry],
    ) -> Result<(), Diagnostic> {
        let Some(commands) = commands else { return submit(queue, || Ok(())) };
        command_list(commands)?;
        match queue.wait.map_or(Reached::Yes, Fence::reached) {
            Reached::No => {
                let (commands, table, pool) = (commands.clone(), table.to_vec(), self.pool.clone());
                submit(queue, move || {
                    command_buffer::execute(command_list(&commands)?, &table, host_bytes, pool.as_deref())
                })
            }
            reached => run_now(queue.signal, reached, || {
                command_buffer::execute(command_list(commands)?, table, host_bytes, self.pool.as_deref())
            }),
        }
    }

    fn queue_transfer(&self, queue: &QueueFences<'_>, transfer: Transfer) -> Result<(), Diagnostic> {
        submit(queue, move || run_transfer(&transfer, &[], host_bytes))
    }

    fn queue_read(
        &self,
        queue: &QueueFences<'_>,
        file: &File,
        file_offset: i64,
        buffer: &Buffer,
        buffer_offset: i64,
        length: i64,
    ) -> Result<(), Diagnostic> {
        let (source, target) = (file.bytes().clone(), buffer.clone());
        submit(queue, move || {
            let target = host_bytes(&target)?.range(buffer_offset, length).map_err(|e| e.at("read target"))?;
            Bytes::copy(&source, file_offset, target.buffer(), target.offset(), target.len() as i64)
        })
    }

    fn queue_write(
        &self,
        queue: &QueueFences<'_>,
        buffer: &Buffer,
        buffer_offset: i64,
        file: &File,
        file_offset: i64,
        length: i64,
    ) -> Result<(), Diagnostic> {
        let (source, target) = (buffer.clone(), file.bytes().clone());
        submit(queue, move || {
            let source = host_bytes(&source)?.range(buffer_offset, length).map_err(|e| e.at("write source"))?;
            Bytes::copy(source.buffer(), source.offset(), &target, file_offset, source.len() as i64)
        })
    }

    /// Queues run as work is submitted: there is nothing to flush.
    fn queue_flush(&self) -> Result<(), Diagnostic> {
        Ok(())
    }
}

/// Runs queue work once the wait fence (none: nothing) is reached, then signals the signal fence —
/// at once when the wait is already over (errors then surface from the call itself), or from the
/// wait's continuation (errors then fail the signal fence). The CPU devices' queue; any device
/// whose work runs inline may use it.
pub fn submit(
    queue: &QueueFences<'_>,
    work: impl FnOnce() -> Result<(), Diagnostic> + Send + 'static,
) -> Result<(), Diagnostic> {
    match queue.wait.map_or(Reached::Yes, Fence::reached) {
        Reached::No => {
            let signal = queue.signal.clone();
            after(queue.wait, move |waited| finish(&signal, waited.and_then(|()| work())))
        }
        reached => run_now(queue.signal, reached, work),
    }
}

/// Runs queue work whose wait is over (`reached`: reached or failed) at once, and signals or fails
/// `signal`. The signal fence is only borrowed: a new fence signalled before anything waits on it
/// then never makes its point.
fn run_now(signal: &Fence, reached: Reached, work: impl FnOnce() -> Result<(), Diagnostic>) -> Result<(), Diagnostic> {
    match reached {
        Reached::Failed(error) => finish(signal, Err(error)),
        _ => finish(signal, work()),
    }
}

/// Signals `signal` for queue work that succeeded, fails it with the work's error otherwise.
fn finish(signal: &Fence, result: Result<(), Diagnostic>) -> Result<(), Diagnostic> {
    match &result {
        Ok(()) => signal.signal(),
        Err(e) => signal.fail(e),
    }
    result
}

/// The executable formats the CPU devices load.
const FORMATS: [&str; 3] = [vmvx::FORMAT, ExecutableFormat::EmbeddedElf.name(), ExecutableFormat::SystemElf.name()];

fn supports_format(format: &str) -> bool {
    FORMATS.iter().any(|f| glob_match(format, f))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hal::fence::status_code;

    #[test]
    fn queries_answer_like_a_cpu_device() {
        let device = LocalDevice::new(DeviceKind::LocalSync);
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

    /// The table a queue execution borrows runs at once; one whose wait is not over is kept
    /// until it runs, after its caller let go of it.
    #[test]
    fn a_table_is_borrowed_inline_and_kept_by_work_that_waits() {
        use crate::hal::backend::Transfer;
        use crate::hal::buffer::{memory_type, usage};
        use crate::hal::command_buffer::{BufferRange, BufferSource};

        let device = LocalDevice::new(DeviceKind::LocalSync);
        let commands = device.create_command_buffer(0, 1).unwrap();
        let fill = |pattern| Transfer::Fill {
            target: BufferRange { source: BufferSource::Slot(0), offset: 0, length: 4 },
            pattern,
            pattern_length: 1,
        };
        commands.backend().transfer(fill(9)).unwrap();
        commands.backend().finalize().unwrap();
        let buffer = device.allocator().allocate(memory_type::CPU, usage::CPU, 4).unwrap();
        let entry = || [TableEntry { buffer: Some(buffer.clone()), offset: 0, length: 4 }];

        let done = Fence::new();
        device.queue_execute(&QueueFences { wait: None, signal: &done }, Some(&commands), &entry()).unwrap();
        assert_eq!((done.reached(), buffer.to_vec().unwrap()), (Reached::Yes, vec![9; 4]), "ran at once");

        buffer.write(0, &[0; 4]).unwrap();
        let (gate, later) = (Fence::new(), Fence::new());
        {
            let table = entry();
            device.queue_execute(&QueueFences { wait: Some(&gate), signal: &later }, Some(&commands), &table).unwrap();
        }
        assert_eq!((later.reached(), buffer.to_vec().unwrap()), (Reached::No, vec![0; 4]), "waits for the gate");
        gate.signal();
        assert_eq!((later.reached(), buffer.to_vec().unwrap()), (Reached::Yes, vec![9; 4]), "its own table");

        let (failed, skipped) = (Fence::new(), Fence::new());
        failed.fail(&Diagnostic::new(StatusCode::Aborted, "lost"));
        buffer.write(0, &[0; 4]).unwrap();
        let error = device
            .queue_execute(&QueueFences { wait: Some(&failed), signal: &skipped }, Some(&commands), &entry())
            .unwrap_err();
        assert_eq!((error.code, status_code(&skipped.reached())), (StatusCode::Aborted, StatusCode::Aborted));
        assert_eq!(buffer.to_vec().unwrap(), [0; 4], "work after a failed wait does not run");
    }

    #[test]
    fn devices_sharing_a_pool_answer_its_thread_count() {
        let pool = Arc::new(Workers::new(3).unwrap());
        let devices = [
            LocalDevice::with_pool(DeviceKind::LocalTask, Some(pool.clone())),
            LocalDevice::with_pool(DeviceKind::LocalTask, Some(pool)),
        ];
        for device in &devices {
            assert_eq!(device.query_i64("hal.device", "concurrency").unwrap(), 3);
            assert_eq!(device.query_i64("hal.dispatch", "concurrency").unwrap(), 3);
        }
        let own = LocalDevice::with_workers(DeviceKind::LocalTask, 2);
        assert_eq!(own.query_i64("hal.device", "concurrency").unwrap(), 2);
        let sync = LocalDevice::with_pool(DeviceKind::LocalSync, Some(Arc::new(Workers::new(1).unwrap())));
        assert_eq!(sync.query_i64("hal.device", "concurrency").unwrap(), 1, "local-sync ignores the pool");
    }
}
