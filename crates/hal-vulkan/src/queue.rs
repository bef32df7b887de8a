//! The device's compute queue and its timeline semaphore. Each submission signals the next value
//! of the timeline; one waiter thread per device waits (`vkWaitSemaphores`) for the oldest value
//! still pending, then finishes every submission the timeline has passed: runs its host step,
//! frees its command buffer and the buffers it kept alive, and signals (or fails) its HAL fences —
//! which makes the fences' AsyncValues available. Queue work that only orders makes no
//! submission: its fence rides on the last pending one.
//!
//! Every command buffer starts with a barrier that makes all earlier device writes visible to its
//! commands (a barrier's first scope covers earlier submissions to the queue) and ends with one
//! that makes its writes visible to the host.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use ash::vk;

use super::error::VulkanError;
use super::timestamps::{DeviceClock, Timestamps};
use rtx_hal::fence::Fence;
use rtx_host::tracing::{self, Track};
use rtx_host::Diagnostic;

/// What runs on the host once a submission's device work is done (copying read-back bytes out).
pub type HostStep = Box<dyn FnOnce() -> Result<(), Diagnostic> + Send>;

/// Something a submission holds until the device is done with it.
type Kept = Box<dyn Send>;

struct Pending {
    value: u64,
    commands: vk::CommandBuffer,
    /// What the commands use (staging buffers, descriptor pools, the HAL objects recorded),
    /// released once the device is done with them.
    _keep: Vec<Kept>,
    then: Option<HostStep>,
    /// The fences the submission reaches: its own, and those of queue work that only waited
    /// for it.
    signals: Vec<Fence>,
    /// The device's times of its commands, while tracing.
    timestamps: Option<Timestamps>,
}

#[derive(Default)]
struct State {
    /// The last value a submission signals.
    submitted: u64,
    /// The last value the waiter saw the timeline reach.
    reached: u64,
    pending: VecDeque<Pending>,
    stopping: bool,
    /// Set when the device is lost: every later submission fails with it.
    lost: Option<Diagnostic>,
}

struct Shared {
    device: ash::Device,
    queue: Mutex<vk::Queue>,
    timeline: vk::Semaphore,
    /// Command buffers are recorded and freed under this lock (Vulkan wants the pool's host
    /// access externally synchronized).
    pool: Mutex<vk::CommandPool>,
    state: Mutex<State>,
    wake: Condvar,
    /// Signalled when the waiter sees the timeline move (or the device lost).
    moved: Condvar,
    /// How the queue's timestamps count; `None` where it has none.
    clock: Option<DeviceClock>,
    /// Where traced submissions go.
    track: Track,
}

thread_local! {
    /// On a waiter thread, the address of its queue's shared state; 0 elsewhere (a const
    /// initialiser, no destructor: unlike `thread::current()`, it allocates nothing).
    static WAITER_OF: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A queue with its timeline and waiter thread.
pub struct Queue {
    shared: Arc<Shared>,
    waiter: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue").field("submitted", &self.shared.lock_state().submitted).finish()
    }
}

impl Shared {
    fn lock_state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the calling thread is this queue's waiter.
    fn on_waiter_thread(&self) -> bool {
        WAITER_OF.get() == self as *const Shared as usize
    }
}

impl Queue {
    /// The queue `family`'s first queue of `device`, with a new timeline and command pool;
    /// `clock` says how the family's timestamps count, if it has them.
    pub fn new(device: &ash::Device, family: u32, clock: Option<DeviceClock>) -> Result<Queue, VulkanError> {
        // SAFETY: the device is live and created with a queue of `family`.
        let queue = unsafe { device.get_device_queue(family, 0) };
        let mut timeline_info =
            vk::SemaphoreTypeCreateInfo::default().semaphore_type(vk::SemaphoreType::TIMELINE).initial_value(0);
        let semaphore_info = vk::SemaphoreCreateInfo::default().push_next(&mut timeline_info);
        // SAFETY: the device was created with timeline semaphores enabled.
        let timeline = unsafe { device.create_semaphore(&semaphore_info, None) }
            .map_err(VulkanError::call("vkCreateSemaphore"))?;
        let pool_info = vk::CommandPoolCreateInfo::default()
            .flags(vk::CommandPoolCreateFlags::TRANSIENT)
            .queue_family_index(family);
        // SAFETY: as above.
        let pool = match unsafe { device.create_command_pool(&pool_info, None) } {
            Ok(pool) => pool,
            Err(result) => {
                // SAFETY: the semaphore was just made and nothing uses it.
                unsafe { device.destroy_semaphore(timeline, None) };
                return Err(VulkanError::Call { call: "vkCreateCommandPool", result });
            }
        };
        let shared = Arc::new(Shared {
            device: device.clone(),
            queue: Mutex::new(queue),
            timeline,
            pool: Mutex::new(pool),
            state: Mutex::default(),
            wake: Condvar::new(),
            moved: Condvar::new(),
            clock,
            track: Track::new("Vulkan queue"),
        });
        let waiter_shared = shared.clone();
        let waiter = std::thread::Builder::new()
            .name("rtx-vulkan-waiter".into())
            .spawn(move || {
                WAITER_OF.set(Arc::as_ptr(&waiter_shared) as usize);
                wait_loop(&waiter_shared)
            })
            .map_err(|e| VulkanError::Unsupported(format!("cannot start the Vulkan queue's waiter thread: {e}")));
        match waiter {
            Ok(waiter) => Ok(Queue { shared, waiter: Some(waiter) }),
            Err(error) => {
                destroy(&shared);
                Err(error)
            }
        }
    }

    /// Starts a command buffer; its commands run once submitted.
    pub fn begin(&self) -> Result<Recording<'_>, Diagnostic> {
        let pool = self.shared.pool.lock().unwrap_or_else(PoisonError::into_inner);
        let device = &self.shared.device;
        let info = vk::CommandBufferAllocateInfo::default()
            .command_pool(*pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: the pool is live and locked.
        let commands = unsafe { device.allocate_command_buffers(&info) }
            .map_err(VulkanError::call("vkAllocateCommandBuffers"))?[0];
        let recording = Recording { queue: self, pool, commands: Some(commands), keep: Vec::new(), timestamps: None };
        let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        // SAFETY: a fresh command buffer of the locked pool.
        unsafe { device.begin_command_buffer(commands, &begin) }.map_err(VulkanError::call("vkBeginCommandBuffer"))?;
        recording.barrier(
            vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE,
            vk::PipelineStageFlags::ALL_COMMANDS,
        );
        Ok(recording)
    }

    /// Reaches `signal` once everything submitted so far is done, without a submission of its
    /// own: at once when nothing is pending, else with the last pending submission. Queue work
    /// that only orders (alloca, dealloca, an empty execute) costs no trip through the driver.
    pub fn signal_after_pending(&self, signal: Fence) -> Result<(), Diagnostic> {
        let mut state = self.shared.lock_state();
        if let Some(lost) = &state.lost {
            return Err(lost.clone());
        }
        match state.pending.back_mut() {
            Some(last) => last.signals.push(signal),
            None => {
                drop(state);
                signal.signal();
            }
        }
        Ok(())
    }

    /// Submits `recording`, then, once the device is done, runs `then` and signals `signal`
    /// (fails it when either failed). Returns the timeline value the submission signals.
    pub fn submit(
        &self,
        recording: Recording<'_>,
        then: Option<HostStep>,
        signal: Option<Fence>,
    ) -> Result<u64, Diagnostic> {
        let (commands, keep, timestamps) = recording.end()?;
        let queue = self.shared.queue.lock().unwrap_or_else(PoisonError::into_inner);
        let (value, lost) = {
            let state = self.shared.lock_state();
            (state.submitted + 1, state.lost.clone())
        };
        if let Some(lost) = lost {
            drop(queue);
            self.free(commands);
            return Err(lost);
        }
        let command_buffers = [commands];
        let values = [value];
        let semaphores = [self.shared.timeline];
        let mut timeline_info = vk::TimelineSemaphoreSubmitInfo::default().signal_semaphore_values(&values);
        let submit = vk::SubmitInfo::default()
            .command_buffers(&command_buffers)
            .signal_semaphores(&semaphores)
            .push_next(&mut timeline_info);
        // SAFETY: the queue is locked; the command buffer is recorded and ended; the timeline is
        // signalled with increasing values only (under the queue lock).
        if let Err(result) = unsafe { self.shared.device.queue_submit(*queue, &[submit], vk::Fence::null()) } {
            drop(queue);
            self.free(commands);
            return Err(VulkanError::Call { call: "vkQueueSubmit", result }.into());
        }
        let mut state = self.shared.lock_state();
        state.submitted = value;
        let signals = signal.into_iter().collect();
        state.pending.push_back(Pending { value, commands, _keep: keep, then, signals, timestamps });
        drop(state);
        drop(queue);
        self.shared.wake.notify_one();
        Ok(value)
    }

    /// Whether work submitted now is ordered after everything `fence` waits for without a host
    /// round trip: each of its points is reached, or is signalled by a submission already on
    /// this queue with no host step after it. Every recording starts with a barrier against all
    /// earlier submissions of the queue, so such work can be submitted at once; a failed point,
    /// or one the host or another queue signals, needs the host's wait.
    pub fn orders_after(&self, fence: &Fence) -> bool {
        let state = self.shared.lock_state();
        fence.points().iter().all(|point| {
            (point.is_available() && !point.is_error())
                || state.pending.iter().any(|pending| {
                    pending.then.is_none() && pending.signals.iter().any(|s| s.points().iter().any(|p| p.ptr_eq(point)))
                })
        })
    }

    /// Blocks the calling thread until the timeline reaches `value` (host reads that must be
    /// done when they return). The waiter thread, which waits on the device anyway, wakes it: a
    /// second thread in `vkWaitSemaphores` is slow on some drivers (NVIDIA's polls, taking
    /// 1-10 ms where the waiter's own wait takes tens of microseconds).
    pub fn wait(&self, value: u64) -> Result<(), Diagnostic> {
        if !self.shared.on_waiter_thread() {
            let mut state = self.shared.lock_state();
            loop {
                if state.reached >= value {
                    return Ok(());
                }
                if let Some(lost) = &state.lost {
                    return Err(lost.clone());
                }
                state = self.shared.moved.wait(state).unwrap_or_else(PoisonError::into_inner);
            }
        }
        // On the waiter thread itself (a host step reading a buffer) nobody else would wake it.
        let semaphores = [self.shared.timeline];
        let values = [value];
        let info = vk::SemaphoreWaitInfo::default().semaphores(&semaphores).values(&values);
        // SAFETY: the semaphore is live while `self` is.
        unsafe { self.shared.device.wait_semaphores(&info, u64::MAX) }
            .map_err(VulkanError::call("vkWaitSemaphores"))?;
        Ok(())
    }

    fn free(&self, commands: vk::CommandBuffer) {
        free_command_buffers(&self.shared, vec![commands]);
    }
}

/// A command buffer being recorded. Dropped unsubmitted, it is freed.
pub struct Recording<'a> {
    queue: &'a Queue,
    pool: MutexGuard<'a, vk::CommandPool>,
    commands: Option<vk::CommandBuffer>,
    keep: Vec<Kept>,
    timestamps: Option<Timestamps>,
}

impl Recording<'_> {
    /// How the queue's timestamps count, if it has them.
    pub fn clock(&self) -> Option<DeviceClock> {
        self.queue.shared.clock
    }

    /// Reads `timestamps`, written by these commands, once the device is done with them.
    pub fn time(&mut self, timestamps: Timestamps) {
        self.timestamps = Some(timestamps);
    }

    pub fn device(&self) -> &ash::Device {
        &self.queue.shared.device
    }

    pub fn commands(&self) -> vk::CommandBuffer {
        self.commands.expect("a recording has its command buffer until it ends")
    }

    /// Keeps `held` (a buffer, a pool, what the commands name) alive until the device is done
    /// with the submission.
    pub fn keep(&mut self, held: impl Send + 'static) {
        self.keep.push(Box::new(held));
    }

    /// A global memory barrier: every write of earlier commands is made visible to `access` by
    /// the `stages` of later ones.
    pub fn barrier(&self, access: vk::AccessFlags, stages: vk::PipelineStageFlags) {
        let barrier =
            vk::MemoryBarrier::default().src_access_mask(vk::AccessFlags::MEMORY_WRITE).dst_access_mask(access);
        // SAFETY: recording into a command buffer of the locked pool.
        unsafe {
            self.device().cmd_pipeline_barrier(
                self.commands(),
                vk::PipelineStageFlags::ALL_COMMANDS,
                stages,
                vk::DependencyFlags::empty(),
                &[barrier],
                &[],
                &[],
            )
        }
    }

    /// Orders the commands recorded so far before those that follow.
    pub fn order(&self) {
        self.barrier(
            vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE,
            vk::PipelineStageFlags::ALL_COMMANDS,
        );
    }

    fn end(mut self) -> Result<(vk::CommandBuffer, Vec<Kept>, Option<Timestamps>), Diagnostic> {
        self.barrier(vk::AccessFlags::HOST_READ, vk::PipelineStageFlags::HOST);
        // SAFETY: as above.
        unsafe { self.device().end_command_buffer(self.commands()) }
            .map_err(VulkanError::call("vkEndCommandBuffer"))?;
        let commands = self.commands.take().expect("ended once");
        Ok((commands, std::mem::take(&mut self.keep), self.timestamps.take()))
    }
}

impl Drop for Recording<'_> {
    fn drop(&mut self) {
        if let Some(commands) = self.commands.take() {
            // SAFETY: never submitted; the pool is locked.
            unsafe { self.queue.shared.device.free_command_buffers(*self.pool, &[commands]) };
        }
    }
}

fn free_command_buffers(shared: &Shared, commands: Vec<vk::CommandBuffer>) {
    if commands.is_empty() {
        return;
    }
    let pool = shared.pool.lock().unwrap_or_else(PoisonError::into_inner);
    // SAFETY: the device is done with them (their timeline values passed, or never submitted).
    unsafe { shared.device.free_command_buffers(*pool, &commands) };
}

/// The waiter thread: finishes submissions as the timeline passes them, until told to stop.
fn wait_loop(shared: &Shared) {
    loop {
        let target = {
            let mut state = shared.lock_state();
            loop {
                if state.stopping {
                    return;
                }
                if let Some(first) = state.pending.front() {
                    break first.value;
                }
                state = shared.wake.wait(state).unwrap_or_else(PoisonError::into_inner);
            }
        };
        let semaphores = [shared.timeline];
        let values = [target];
        let info = vk::SemaphoreWaitInfo::default().semaphores(&semaphores).values(&values);
        // SAFETY: the semaphore lives until this thread is joined.
        let reached = unsafe { shared.device.wait_semaphores(&info, u64::MAX) }
            // SAFETY: as above.
            .and_then(|()| unsafe { shared.device.get_semaphore_counter_value(shared.timeline) })
            .map_err(|result| Diagnostic::from(VulkanError::Call { call: "vkWaitSemaphores", result }));
        // Only while tracing: the trace's clock is calibrated when a session begins.
        let seen = tracing::is_on().then(tracing::timestamp);
        let mut state = shared.lock_state();
        let (done, failure): (Vec<Pending>, Option<Diagnostic>) = match reached {
            Ok(reached) => {
                state.reached = state.reached.max(reached);
                let count = state.pending.iter().take_while(|p| p.value <= reached).count();
                (state.pending.drain(..count).collect(), None)
            }
            Err(error) => {
                state.lost = Some(error.clone());
                (state.pending.drain(..).collect(), Some(error))
            }
        };
        drop(state);
        shared.moved.notify_all();
        finish(shared, done, failure.as_ref(), seen);
    }
}

/// Frees the submissions' command buffers, records the device's times of those traced (seen
/// done at `seen` on the trace's clock, while tracing), then runs their host steps and signals
/// their fences.
fn finish(shared: &Shared, done: Vec<Pending>, failure: Option<&Diagnostic>, seen: Option<u64>) {
    free_command_buffers(shared, done.iter().map(|p| p.commands).collect());
    for Pending { then, signals, _keep: kept, timestamps, .. } in done {
        if let (Some(timestamps), None, Some(seen)) = (&timestamps, failure, seen) {
            timestamps.record(&shared.track, seen);
        }
        let result = match failure {
            Some(error) => Err(error.clone()),
            None => then.map_or(Ok(()), |then| then()),
        };
        // What the submission held goes before its fence is reached: a host that waits for the
        // fence and then exits must not race this thread destroying the device (and unloading
        // the Vulkan layers) when the submission held its last reference.
        drop(kept);
        for signal in signals {
            match &result {
                Ok(()) => signal.signal(),
                Err(error) => signal.fail(error),
            }
        }
    }
}

fn destroy(shared: &Shared) {
    // SAFETY: nothing uses the pool or the semaphore any more (the waiter is stopped).
    unsafe {
        shared.device.destroy_command_pool(*shared.pool.lock().unwrap_or_else(PoisonError::into_inner), None);
        shared.device.destroy_semaphore(shared.timeline, None);
    }
}

impl Drop for Queue {
    /// Waits for the device to finish everything submitted, finishes it, and destroys the pool and
    /// the timeline. Runs on the waiter thread itself when a finished submission let go of the
    /// last reference to the device: the thread is then told to stop instead of joined.
    fn drop(&mut self) {
        self.shared.lock_state().stopping = true;
        self.shared.wake.notify_one();
        if let Some(waiter) = self.waiter.take() {
            if !self.shared.on_waiter_thread() {
                // A waiter that panicked has nothing left to finish.
                let _ = waiter.join();
            }
        }
        // SAFETY: the queue is idle once this returns; nothing else submits to it.
        let idle = unsafe { self.shared.device.device_wait_idle() };
        let done: Vec<Pending> = self.shared.lock_state().pending.drain(..).collect();
        let failure = idle.err().map(|result| Diagnostic::from(VulkanError::Call { call: "vkDeviceWaitIdle", result }));
        finish(&self.shared, done, failure.as_ref(), tracing::is_on().then(tracing::timestamp));
        destroy(&self.shared);
    }
}
