//! The device's own times of traced work. While tracing, a submission's command buffer writes a
//! timestamp query at its start and end and around each dispatch; once the device is done, the
//! waiter thread reads them and records the submission and its dispatches on the queue's track,
//! placed on the trace's clock by the time the host saw the submission done (the least such
//! bound over the session, see `rtx_host::tracing::Track`).

use ash::vk;

use super::error::VulkanError;
use super::queue::Recording;
use rtx_hal::command_buffer::{Command, Workgroups};
use rtx_host::tracing::{self, Args, Category, Text, Track, Value};
use rtx_host::Diagnostic;

/// How the queue's timestamps count: nanoseconds per tick, and the bits that are valid.
#[derive(Clone, Copy, Debug)]
pub struct DeviceClock {
    period: f64,
    mask: u64,
}

impl DeviceClock {
    /// The clock of a queue family with `valid_bits` of timestamps (none: `None`) that tick every
    /// `period` nanoseconds (`VkPhysicalDeviceLimits::timestampPeriod`).
    pub fn new(valid_bits: u32, period: f32) -> Option<DeviceClock> {
        let mask = match valid_bits {
            0 => return None,
            64.. => u64::MAX,
            bits => (1 << bits) - 1,
        };
        Some(DeviceClock { period: f64::from(period), mask })
    }

    fn nanos(&self, ticks: u64) -> u64 {
        ((ticks & self.mask) as f64 * self.period) as u64
    }
}

/// The timestamp queries of one submission, and what its dispatches were.
pub struct Timestamps {
    device: ash::Device,
    pool: vk::QueryPool,
    clock: DeviceClock,
    /// The trace session the submission was recorded in.
    session: u64,
    /// Each dispatch's name and arguments, in recording order: its queries are `1 + 2 * i` and
    /// the next; query 0 is the command buffer's start, the last its end.
    dispatches: Vec<(Text, Args)>,
    queries: u32,
}

impl Timestamps {
    /// Queries for the dispatches of `commands`, their first one written now: `None` unless
    /// tracing, with dispatches to time, on a queue that has timestamps.
    pub fn start(recording: &Recording<'_>, commands: &[Command]) -> Result<Option<Timestamps>, Diagnostic> {
        let session = tracing::session();
        let Some(clock) = recording.clock().filter(|_| session != 0) else {
            return Ok(None);
        };
        let dispatches = commands.iter().filter(|command| matches!(command, Command::Dispatch { .. })).count();
        if dispatches == 0 {
            return Ok(None);
        }
        let queries = 2 * dispatches as u32 + 2;
        let device = recording.device().clone();
        let info = vk::QueryPoolCreateInfo::default().query_type(vk::QueryType::TIMESTAMP).query_count(queries);
        // SAFETY: the device is live; the pool is destroyed when the timestamps drop.
        let pool = unsafe { device.create_query_pool(&info, None) }.map_err(VulkanError::call("vkCreateQueryPool"))?;
        let timestamps =
            Timestamps { device, pool, clock, session, dispatches: Vec::with_capacity(dispatches), queries };
        // SAFETY: recording into the recording's command buffer, outside any render pass; the
        // queries are reset before their first write.
        unsafe { timestamps.device.cmd_reset_query_pool(recording.commands(), pool, 0, queries) };
        timestamps.write(recording, vk::PipelineStageFlags::TOP_OF_PIPE, 0);
        Ok(Some(timestamps))
    }

    /// Before the next dispatch.
    pub fn before(&self, recording: &Recording<'_>) {
        self.write(recording, vk::PipelineStageFlags::TOP_OF_PIPE, 1 + 2 * self.dispatches.len() as u32);
    }

    /// After the dispatch of `name` with `workgroups`, binding `bytes`.
    pub fn after(&mut self, recording: &Recording<'_>, name: &str, workgroups: &Workgroups, bytes: u64) {
        self.write(recording, vk::PipelineStageFlags::BOTTOM_OF_PIPE, 2 + 2 * self.dispatches.len() as u32);
        let args = match workgroups {
            Workgroups::Fixed(counts) => Args::none().with("workgroups", Value::Grid(*counts)),
            Workgroups::Indirect(_) => Args::none().with("workgroups", "indirect"),
        };
        let args = args.with("bytes bound", bytes);
        self.dispatches.push((name.to_owned().into(), args));
    }

    /// After the last command.
    pub fn end(&self, recording: &Recording<'_>) {
        self.write(recording, vk::PipelineStageFlags::BOTTOM_OF_PIPE, self.queries - 1);
    }

    fn write(&self, recording: &Recording<'_>, stage: vk::PipelineStageFlags, query: u32) {
        // SAFETY: as in `start`; the query is within the pool and reset.
        unsafe { self.device.cmd_write_timestamp(recording.commands(), stage, self.pool, query) };
    }

    /// Records the submission and its dispatches on `track`, the device having finished them
    /// by `seen` on the trace's clock. Queries that cannot be read are left out of the trace.
    pub fn record(&self, track: &Track, seen: u64) {
        let mut ticks = vec![0u64; self.queries as usize];
        // SAFETY: the pool is live and the submission that wrote every query is done.
        let read =
            unsafe { self.device.get_query_pool_results(self.pool, 0, &mut ticks, vk::QueryResultFlags::TYPE_64) };
        if read.is_err() {
            return;
        }
        let at = |query: usize| self.clock.nanos(ticks[query]);
        let (start, end) = (at(0), at(ticks.len() - 1));
        track.bound_offset(self.session, seen as i64 - end as i64);
        let args = Args::none().with("dispatches", self.dispatches.len() as u64);
        track.record(self.session, Category::Submission, "submission".into(), args, start, end);
        for (index, (name, args)) in self.dispatches.iter().enumerate() {
            let (start, end) = (at(1 + 2 * index), at(2 + 2 * index));
            track.record(self.session, Category::Dispatch, name.clone(), args.clone(), start, end);
        }
    }
}

impl Drop for Timestamps {
    fn drop(&mut self) {
        // SAFETY: the submission that used the pool is done, or was never made.
        unsafe { self.device.destroy_query_pool(self.pool, None) };
    }
}
