//! The CPU devices (`local-sync`, `local-task`): identity and capability queries, host memory,
//! the executable formats rtx loads, and a queue that runs work inline or on a thread of its own.
//!
//! Queue operations run inline when their wait fence is reached (the usual case: everything
//! before them ran inline too) and otherwise once it is, from the fence's continuation, so no
//! thread ever blocks on a fence. On `local-task`, a command buffer that a host thread submits
//! without having waited on a fence since its last submission runs on the device's queue thread
//! instead, while the host records the next (see `queue_execute`).

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::command_buffer::{self, host_bytes, run_transfer};
use super::cpu;
use super::executable::{ExecutableCode, LocalExecutable};
use super::library::ExecutableFormat;
use super::native::NativeExecutable;
use super::queue::QueueThread;
use super::transient::TransientPool;
use super::vmvx::{self, VmvxExecutable};
use super::workers::Workers;
use rtx_hal::backend::{DeviceBackend, QueueFences, Transfer};
use rtx_hal::buffer::Buffer;
use rtx_hal::command_buffer::{command_list, CommandBuffer, SpareLists, TableEntry};
use rtx_hal::device::{glob_match, unknown_query, Allocator, Device};
use rtx_hal::executable::Executable;
use rtx_hal::fence::{self, after, Fence, Reached};
use rtx_hal::file::File;
use rtx_hal::heap::HeapAllocator;
use rtx_host::work_queue::panic_message;
use rtx_host::{Diagnostic, HostAllocator, StatusCode};
use rtx_vm::buffer::ByteBuffer;

/// Which CPU device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    /// Everything inline on the calling thread.
    LocalSync,
    /// Queue work inline too, but a dispatch's workgroups spread over a pool of worker threads
    /// (one per core, possibly shared with other devices) and the submitting thread. Dispatches of
    /// one workgroup, work timed under a few microseconds and VMVX dispatches run on one thread.
    /// Command buffers a host thread submits one after another without waiting run on the
    /// device's queue thread while it records the next.
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
    /// Where the device's memory comes from, and the `hal.allocator` over it.
    heap: HeapAllocator,
    allocator: Allocator,
    /// `local-task`'s workers.
    pool: Option<Arc<Workers>>,
    /// What `queue_alloca` lends and takes back.
    transients: TransientPool,
    /// Storage of released command buffers, for the next ones.
    spare_lists: Arc<SpareLists>,
    /// Where `local-task` runs the command buffers of a host thread that submits one after
    /// another without waiting (see [`LocalDevice::queue_execute`]).
    queue: QueueThread,
    /// How long `local-task`'s command buffers took lately (see [`Recent`]); none without a pool,
    /// where nothing is handed over and nothing is timed.
    recent: Option<Arc<Recent>>,
}

/// A running average of how long a device's command buffers took to run, wherever they ran: what
/// decides whether handing the next to the queue thread pays.
#[derive(Debug, Default)]
struct Recent(AtomicU64);

impl Recent {
    /// Runs `work`, adding its time to the average (a quarter of the weight to the newest).
    fn time<R>(&self, work: impl FnOnce() -> R) -> R {
        let started = Instant::now();
        let result = work();
        let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let before = self.0.load(Ordering::Relaxed);
        self.0.store((3 * (before / 4)).saturating_add(nanos / 4), Ordering::Relaxed);
        result
    }

    fn nanos(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Runs `work`, timed into `recent` where there is one.
fn timed<R>(recent: Option<&Recent>, work: impl FnOnce() -> R) -> R {
    match recent {
        Some(recent) => recent.time(work),
        None => work(),
    }
}

/// Command buffers that took less than this lately run inline even when the host records the
/// next without waiting: handing one to the queue thread and its signal back costs about as much
/// (a call of IREE's stablehlo LSTM, eight command buffers of about a microsecond, took 1.4 of
/// its time pipelined).
const PIPELINE_NANOS: u64 = 4_000;

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
            heap: HeapAllocator::default(),
            allocator: Allocator::new(Arc::new(HeapAllocator::default())),
            transients: TransientPool::default(),
            spare_lists: Arc::default(),
            queue: QueueThread::default(),
            recent: pool.as_ref().map(|_| Arc::default()),
            pool,
        }
    }

    /// The device with its memory (buffers, transients, writable copies of constants) from
    /// `allocator`, a context's, rather than the process's.
    pub fn allocating_from(mut self, allocator: Arc<dyn HostAllocator>) -> LocalDevice {
        self.heap = HeapAllocator::new(allocator);
        self.allocator = Allocator::new(Arc::new(self.heap.clone()));
        self
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
        let buffer = self.transients.allocate(&self.heap, size, memory_types, usage)?;
        submit(queue, || Ok(()))?;
        Ok(buffer)
    }

    /// The memory goes with the buffer's last reference; the queue only orders the signal.
    fn queue_dealloca(&self, queue: &QueueFences<'_>, _buffer: &Buffer) -> Result<(), Diagnostic> {
        submit(queue, || Ok(()))
    }

    /// Inline, the commands and the table are only borrowed; work that waits gets its own.
    ///
    /// On `local-task`, a host thread that submits again without having waited on a fence since
    /// its last submission is recording one command buffer after another (a recurrent model's
    /// time steps): its work goes to the device's queue thread, so that it records the next
    /// while the last runs, and the work after, which waits on it, follows there. Work that the
    /// host submits after a wait runs inline, on the submitting thread and the pool: a model of
    /// one command buffer per call is not handed between threads twice per call. Nor is work of
    /// under [`PIPELINE_NANOS`]. The LSTM tagger took 0.76-0.79 of its time this way and the GRU
    /// tagger 0.78-0.87 (two cores, two runs of nine alternating rounds).
    fn queue_execute(
        &self,
        queue: &QueueFences<'_>,
        commands: Option<&CommandBuffer>,
        table: &[TableEntry],
    ) -> Result<(), Diagnostic> {
        let Some(commands) = commands else { return submit(queue, || Ok(())) };
        command_list(commands)?;
        let pipelined =
            !fence::waited_since_asked() && self.recent.as_ref().is_some_and(|recent| recent.nanos() >= PIPELINE_NANOS);
        // The command buffer run later, elsewhere: with references of its own.
        let owned = || {
            let (commands, table, pool, recent) =
                (commands.clone(), table.to_vec(), self.pool.clone(), self.recent.clone());
            move || {
                timed(recent.as_deref(), || {
                    command_buffer::execute(command_list(&commands)?, &table, host_bytes, pool.as_deref())
                })
            }
        };
        match queue.wait.map_or(Reached::Yes, Fence::reached) {
            Reached::No => submit(queue, owned()),
            Reached::Yes if pipelined => {
                let (work, signal) = (owned(), queue.signal.clone());
                let task = Box::new(move || {
                    // The work's references (its buffers among them) go before the signal: the
                    // host, woken by it, may ask the transient pool for them again.
                    let result = caught(work);
                    let _ = finish(&signal, result);
                });
                // Without a thread, here.
                self.queue.run(task).or_else(|task| {
                    task();
                    Ok(())
                })
            }
            reached => run_now(queue.signal, reached, || {
                timed(self.recent.as_deref(), || {
                    command_buffer::execute(command_list(commands)?, table, host_bytes, self.pool.as_deref())
                })
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
            ByteBuffer::copy(&source, file_offset, target.buffer(), target.offset(), target.len() as i64)
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
            ByteBuffer::copy(source.buffer(), source.offset(), &target, file_offset, source.len() as i64)
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
            after(queue.wait, move |waited| finish(&signal, waited.and_then(|()| caught(work))))
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

/// Runs queue work away from its submitter (a fence's continuation, the queue thread), where a
/// panic would reach no caller: it fails the work as INTERNAL instead, and so its signal fence.
fn caught(work: impl FnOnce() -> Result<(), Diagnostic>) -> Result<(), Diagnostic> {
    panic::catch_unwind(AssertUnwindSafe(work)).unwrap_or_else(|payload| {
        Err(Diagnostic::new(StatusCode::Internal, format!("queue work panicked: {}", panic_message(payload.as_ref()))))
    })
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
    use rtx_hal::fence::status_code;

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
        use rtx_hal::backend::Transfer;
        use rtx_hal::buffer::{memory_type, usage};
        use rtx_hal::command_buffer::{BufferRange, BufferSource};

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

    /// Work that runs from its wait's continuation and panics fails its signal fence instead of
    /// leaving it unreached.
    #[test]
    fn deferred_work_that_panics_fails_its_signal_fence() {
        let (wait, signal) = (Fence::new(), Fence::new());
        submit(&QueueFences { wait: Some(&wait), signal: &signal }, || panic!("bad work")).unwrap();
        assert_eq!(signal.reached(), Reached::No);
        wait.signal();
        let error = signal.wait().unwrap_err();
        assert_eq!((error.code, error.message.as_str()), (StatusCode::Internal, "queue work panicked: bad work"));
    }

    /// On `local-task`, work submitted again without a wait since the last submission runs on
    /// the device's queue thread, each after the work it waits on, once the device's command
    /// buffers have been taking long enough; work submitted after a wait runs inline; failures
    /// reach the signal fence; the device's drop lets queued work finish.
    #[test]
    fn work_submitted_without_a_wait_runs_on_the_queue_thread_in_order() {
        use rtx_hal::backend::Transfer;
        use rtx_hal::buffer::{memory_type, usage};
        use rtx_hal::command_buffer::{BufferRange, BufferSource};

        let device = LocalDevice::with_workers(DeviceKind::LocalTask, 2);
        let slot = |slot| BufferRange { source: BufferSource::Slot(slot), offset: 0, length: 1 };
        // Copies slot 0 into slot 1, then slot 2 into slot 0.
        let step = device.create_command_buffer(0, 3).unwrap();
        let recorder = step.backend();
        recorder.transfer(Transfer::Copy { source: slot(0), target: slot(1) }).unwrap();
        recorder.barrier().unwrap();
        recorder.transfer(Transfer::Copy { source: slot(2), target: slot(0) }).unwrap();
        recorder.finalize().unwrap();
        let buffer = device.allocator().allocate(memory_type::CPU, usage::CPU, 128).unwrap();
        let byte = |offset: i64| TableEntry { buffer: Some(buffer.clone()), offset, length: 1 };
        buffer.write(64, &(0..64).collect::<Vec<u8>>()).unwrap();
        // Short command buffers run inline, waited for or not.
        let table = [byte(0), byte(1), byte(2)];
        for _ in 0..2 {
            device.recent.as_ref().unwrap().0.store(PIPELINE_NANOS - 1, Ordering::Relaxed);
            let signal = Fence::new();
            device.queue_execute(&QueueFences { wait: None, signal: &signal }, Some(&step), &table).unwrap();
            assert_eq!(signal.reached(), Reached::Yes);
        }
        assert!(device.queue.thread_id().is_none());

        // As if they had taken long. Step k copies byte 0 into byte k, then k into byte 0: byte k
        // ends holding k - 1 if the steps ran in order.
        device.recent.as_ref().unwrap().0.store(u64::MAX / 2, Ordering::Relaxed);
        buffer.write(0, &[0; 64]).unwrap();
        fence::note_wait();
        let mut last: Option<Fence> = None;
        for k in 1..64 {
            let signal = Fence::new();
            let fences = QueueFences { wait: last.as_ref(), signal: &signal };
            device.queue_execute(&fences, Some(&step), &[byte(0), byte(k), byte(64 + k)]).unwrap();
            if k == 1 {
                assert_eq!(signal.reached(), Reached::Yes, "the first runs inline");
            }
            last = Some(signal);
        }
        last.unwrap().wait().unwrap();
        let bytes = buffer.to_vec().unwrap();
        assert_eq!(bytes[0], 63);
        assert_eq!(bytes[1..64], (0..63).collect::<Vec<u8>>());
        let queue_thread = device.queue.thread_id();
        assert!(queue_thread.is_some_and(|id| id != std::thread::current().id()), "the others went there");

        // After a wait, inline again.
        let first = Fence::new();
        device.queue_execute(&QueueFences { wait: None, signal: &first }, Some(&step), &table).unwrap();
        assert_eq!(first.reached(), Reached::Yes, "after a wait, inline");

        // A failure reaches the signal fence, with what failed.
        let empty = [TableEntry { buffer: None, offset: 0, length: 0 }];
        let failed = Fence::new();
        device.queue_execute(&QueueFences { wait: None, signal: &first }, Some(&step), &table).unwrap();
        device.queue_execute(&QueueFences { wait: None, signal: &failed }, Some(&step), &empty).unwrap();
        let error = failed.wait().unwrap_err();
        assert_eq!(error.code, StatusCode::InvalidArgument, "{error}");

        // Queued work still runs when the device goes.
        let last = Fence::new();
        device.queue_execute(&QueueFences { wait: None, signal: &last }, Some(&step), &table).unwrap();
        drop(device);
        assert_eq!(last.reached(), Reached::Yes);
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
