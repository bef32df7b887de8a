//! [`Runtime`]: what the contexts of one runtime share — the worker threads of their work queues
//! and of their CPU devices — as IREE's instance shares one task executor between its devices. A
//! host that opens many contexts, or opens and closes them in a loop, gets one set of threads,
//! not one per context; the threads stop when the runtime and every context made from it are gone.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use super::context::{Context, ContextOptions, QueueChoice};
#[cfg(not(feature = "vulkan"))]
use super::feature::left_out;
#[cfg(feature = "vulkan")]
use rtx_hal::backend::DeviceBackend;
use rtx_hal::device::Device;
use rtx_hal_cpu::device::{DeviceKind, LocalDevice};
use rtx_hal_cpu::workers::Workers;
#[cfg(feature = "vulkan")]
use rtx_hal_vulkan::{DeviceOptions, DeviceSelector, VulkanDevice};
use rtx_host::work_queue::{ScopedWorkQueue, WorkQueueSpec};
use rtx_host::{Diagnostic, HostAllocator, HostContext, WorkQueue};

/// A handle to a set of shared pools. Cheap to clone; every clone is the same runtime.
/// Thread-safe.
#[derive(Clone)]
pub struct Runtime {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    /// Multi-threaded queues, one per spec, created when a context first asks for one.
    queues: Mutex<Vec<(WorkQueueSpec, Arc<dyn WorkQueue>)>>,
    /// `local-task`'s workers, created when a device first needs them.
    task_workers: Mutex<Option<Arc<Workers>>>,
    /// How many workers `local-task` devices get; `None` is one per core.
    task_worker_count: Option<usize>,
    /// The Vulkan devices open, by how they were named, held weakly: contexts naming the same
    /// device share one logical device (its pipelines, memory and queue) while any uses it.
    #[cfg(feature = "vulkan")]
    vulkan_devices: Mutex<Vec<(DeviceSelector, Weak<dyn DeviceBackend>)>>,
}

/// The process-wide runtime of [`Runtime::shared`], held weakly so that it (and its threads) go
/// away with the last context using it.
static PROCESS_RUNTIME: Mutex<Weak<Shared>> = Mutex::new(Weak::new());

impl Runtime {
    /// A runtime of its own: its pools are shared only by the contexts it makes.
    pub fn new() -> Runtime {
        Runtime { shared: Arc::default() }
    }

    /// A runtime whose `local-task` devices get `workers` threads (IREE's
    /// `--task_topology_group_count`).
    pub fn with_task_workers(workers: usize) -> Runtime {
        Runtime {
            shared: Arc::new(Shared {
                queues: Mutex::default(),
                task_workers: Mutex::default(),
                task_worker_count: Some(workers.max(1)),
                #[cfg(feature = "vulkan")]
                vulkan_devices: Mutex::default(),
            }),
        }
    }

    /// The process-wide runtime: every caller gets the same one while any of them (or a context
    /// made from it) is alive. This is what C contexts use.
    pub fn shared() -> Runtime {
        let mut process = PROCESS_RUNTIME.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(shared) = process.upgrade() {
            return Runtime { shared };
        }
        let shared = Arc::new(Shared::default());
        *process = Arc::downgrade(&shared);
        Runtime { shared }
    }

    /// A context with the default options: the runtime's shared multi-threaded queue (one worker
    /// per core) and the system allocator.
    pub fn context(&self) -> Result<Context, Diagnostic> {
        self.context_with(ContextOptions::default())
    }

    /// A context with its queue and allocator chosen by `options`.
    pub fn context_with(&self, options: ContextOptions) -> Result<Context, Diagnostic> {
        let (allocator, memory) = options.memory();
        let queue: Arc<dyn WorkQueue> = match options.work_queue {
            QueueChoice::Spec(spec @ WorkQueueSpec::MultiThreaded { .. }) => {
                Arc::new(ScopedWorkQueue::new(self.shared_queue(spec)?))
            }
            // A single-threaded queue runs tasks on the thread that waits: nothing to share.
            QueueChoice::Spec(spec @ WorkQueueSpec::SingleThreaded) => spec.create()?,
            QueueChoice::Own(queue) => queue,
        };
        Ok(Context::new(self.clone(), HostContext::new(queue, allocator), memory))
    }

    /// The runtime's queue for `spec`, started on first use.
    fn shared_queue(&self, spec: WorkQueueSpec) -> Result<Arc<dyn WorkQueue>, Diagnostic> {
        let mut queues = self.shared.queues.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, queue)) = queues.iter().find(|(s, _)| *s == spec) {
            return Ok(Arc::clone(queue));
        }
        let queue = spec.create()?;
        queues.push((spec, Arc::clone(&queue)));
        Ok(queue)
    }

    /// The device `uri` names: `local-sync`, `local-task` (sharing the runtime's worker pool), or
    /// a Vulkan device (`vulkan`, `vulkan://N`, `vulkan://UUID`; the one already open under that
    /// name in this runtime, else opened). NOT_FOUND for an unknown name; UNAVAILABLE where
    /// Vulkan or the device is missing; UNIMPLEMENTED for a Vulkan device in a build without the
    /// `vulkan` feature.
    pub fn open_device(&self, uri: &str) -> Result<Device, Diagnostic> {
        self.open_device_with(uri, None)
    }

    /// As [`open_device`](Self::open_device), a CPU device taking its memory from `allocator` (a
    /// context's). A Vulkan device's memory is the device's own, and the device is shared.
    pub fn open_device_allocating_from(
        &self,
        uri: &str,
        allocator: &Arc<dyn HostAllocator>,
    ) -> Result<Device, Diagnostic> {
        self.open_device_with(uri, Some(allocator))
    }

    fn open_device_with(&self, uri: &str, allocator: Option<&Arc<dyn HostAllocator>>) -> Result<Device, Diagnostic> {
        if uri.starts_with("vulkan") {
            #[cfg(feature = "vulkan")]
            return self.vulkan_device(DeviceSelector::parse(uri)?);
            #[cfg(not(feature = "vulkan"))]
            return Err(left_out("vulkan", format_args!("the device `{uri}`")));
        }
        let device = self.device(DeviceKind::parse(uri)?);
        Ok(match allocator {
            Some(allocator) => device.allocating_from(Arc::clone(allocator)),
            None => device,
        }
        .into_device())
    }

    #[cfg(feature = "vulkan")]
    fn vulkan_device(&self, selector: DeviceSelector) -> Result<Device, Diagnostic> {
        let mut open = self.shared.vulkan_devices.lock().unwrap_or_else(PoisonError::into_inner);
        open.retain(|(_, device)| device.strong_count() > 0);
        if let Some(device) = open.iter().find(|(s, _)| *s == selector).and_then(|(_, d)| d.upgrade()) {
            return Ok(Device::new(device));
        }
        let device: Arc<dyn DeviceBackend> = Arc::new(VulkanDevice::open(selector, DeviceOptions::default())?);
        open.push((selector, Arc::downgrade(&device)));
        Ok(Device::new(device))
    }

    /// A device of `kind`; `local-task` devices share the runtime's worker pool.
    pub fn device(&self, kind: DeviceKind) -> LocalDevice {
        match kind {
            DeviceKind::LocalSync => LocalDevice::with_pool(kind, None),
            DeviceKind::LocalTask => LocalDevice::with_pool(kind, self.task_workers()),
        }
    }

    /// The shared `local-task` pool; `None` if its threads cannot be started (devices then run
    /// workgroups inline).
    fn task_workers(&self) -> Option<Arc<Workers>> {
        let mut workers = self.shared.task_workers.lock().unwrap_or_else(PoisonError::into_inner);
        if workers.is_none() {
            let count = self
                .shared
                .task_worker_count
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            *workers = Workers::new(count).map(Arc::new);
        }
        workers.clone()
    }

    /// Whether two handles are the same runtime.
    pub fn ptr_eq(&self, other: &Runtime) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

impl Default for Runtime {
    fn default() -> Runtime {
        Runtime::new()
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let queues = self.shared.queues.lock().unwrap_or_else(PoisonError::into_inner);
        let specs: Vec<String> = queues.iter().map(|(spec, _)| spec.to_string()).collect();
        f.debug_struct("Runtime").field("queues", &specs).finish_non_exhaustive()
    }
}

/// The process-wide runtime lets go of its weak reference when it dies, so its memory is freed
/// now and not left behind at exit (a host's valgrind would see it).
impl Drop for Shared {
    fn drop(&mut self) {
        let mut process = PROCESS_RUNTIME.lock().unwrap_or_else(PoisonError::into_inner);
        if std::ptr::eq(process.as_ptr(), self) {
            *process = Weak::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_runtime_is_one_while_held() {
        let first = Runtime::shared();
        let second = Runtime::shared();
        assert!(first.ptr_eq(&second));
        assert!(!first.ptr_eq(&Runtime::new()));
    }

    #[test]
    fn contexts_of_one_runtime_share_one_queue_per_spec() {
        let runtime = Runtime::new();
        let a = runtime.context().unwrap();
        let b = runtime.context().unwrap();
        let c = runtime.context_with(ContextOptions::from_spec("mstd:1,1").unwrap()).unwrap();
        assert_eq!(runtime.shared.queues.lock().unwrap().len(), 2);
        drop((a, b, c));
    }

    #[test]
    fn local_task_devices_of_one_runtime_share_their_workers() {
        let runtime = Runtime::with_task_workers(2);
        let first = runtime.device(DeviceKind::LocalTask);
        let second = runtime.device(DeviceKind::LocalTask);
        let (Some(a), Some(b)) = (first.pool(), second.pool()) else { panic!("local-task has workers") };
        assert!(Arc::ptr_eq(a, b));
        assert!(runtime.device(DeviceKind::LocalSync).pool().is_none());
    }
}
