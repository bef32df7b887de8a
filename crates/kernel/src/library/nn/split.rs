//! Computing a new f32 tensor on the host's work queue. The caller names the tensor's
//! dimensions, how many *units* (contiguous runs of equal length: rows, channel planes) it
//! is made of and what one unit costs; a kernel worth splitting has its units dealt to a few
//! tasks (as `tfrt.parallel_for` deals blocks), each writing its own runs of the new tensor,
//! and its result becomes available when the last task ends. Tasks never wait for each other,
//! so no worker blocks; a small kernel runs on the calling thread.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::dtype::DType;
use crate::tensor::{DenseHostTensor, TensorShape};
use crate::{KernelError, KernelFrame};
use rtx_host::AsyncValueRef;

/// Tasks per worker of the queue a kernel's units are dealt to.
const TASKS_PER_WORKER: usize = 4;

/// Work (roughly, multiply-adds) below which a task is not worth its scheduling.
const MIN_TASK_COST: usize = 1 << 15;

/// Sets result 0 of `frame` to a new f32 tensor of `dims`, made of `units` equal runs of
/// elements, run `first..last` written by `work(first..last, elements)`. `unit_cost` is the work
/// of one unit, which decides how many tasks share the units.
pub(crate) fn compute<W>(
    frame: &mut KernelFrame<'_>,
    dims: &[usize],
    units: usize,
    unit_cost: usize,
    work: W,
) -> Result<(), KernelError>
where
    W: Fn(Range<usize>, &mut [f32]) + Send + Sync + 'static,
{
    compute_in_runs(frame, dims, units, unit_cost, 1, work)
}

/// As [`compute`], giving each task at least `min_run` units: for work that each task repeats
/// once whatever its share (a GEMM packing the operand all its rows multiply), so that the
/// repetition stays small beside the task's share.
pub(crate) fn compute_in_runs<W>(
    frame: &mut KernelFrame<'_>,
    dims: &[usize],
    units: usize,
    unit_cost: usize,
    min_run: usize,
    work: W,
) -> Result<(), KernelError>
where
    W: Fn(Range<usize>, &mut [f32]) + Send + Sync + 'static,
{
    let shape = TensorShape::new(dims.iter().map(|&d| d as i64).collect())?;
    let out = DenseHostTensor::new_zeroed(frame.host(), DType::F32, shape)?;
    let len = out.num_elements();
    let unit_len = len.checked_div(units).unwrap_or(0);
    debug_assert_eq!(unit_len * units, len, "units tile the tensor");
    let workers = frame.host().parallelism_level().max(1);
    let tasks = units
        .min(workers * TASKS_PER_WORKER)
        .min(units.saturating_mul(unit_cost) / MIN_TASK_COST)
        .min(units / min_run.max(1))
        .max(1);
    if tasks == 1 || units == 0 {
        let split = Split { out, unit_len, work, remaining: AtomicUsize::new(1), done: None };
        split.write(0..units);
        return frame.emplace_result(0, split.out);
    }
    let done = frame.allocate_result::<DenseHostTensor>(0)?;
    let split = Arc::new(Split { out, unit_len, work, remaining: AtomicUsize::new(tasks), done: Some(done) });
    // Task `t` writes units `[t * units / tasks, (t + 1) * units / tasks)`.
    let first = move |t: usize| t * units / tasks;
    for t in 1..tasks {
        let split = Arc::clone(&split);
        frame.host().work_queue().add_task(Box::new(move || split.run(first(t)..first(t + 1))));
    }
    split.run(0..first(1));
    Ok(())
}

/// One kernel's new tensor while its tasks write it.
struct Split<W> {
    /// Made for this kernel and published only when every task is done: no one else sees it.
    out: DenseHostTensor,
    unit_len: usize,
    work: W,
    remaining: AtomicUsize,
    done: Option<AsyncValueRef<DenseHostTensor>>,
}

impl<W: Fn(Range<usize>, &mut [f32])> Split<W> {
    /// Writes units `units` of the tensor.
    fn write(&self, units: Range<usize>) {
        let (start, len) = (units.start * self.unit_len, units.len() * self.unit_len);
        // SAFETY: the tensor's buffer is a new block of `num_elements` f32s aligned to
        // TENSOR_ALIGNMENT; `units` lies within it (the units tile the tensor) and no other task
        // is given any of them; the tensor is not published until every task has ended
        // (`remaining`), so this is the only view of these elements.
        let elements = unsafe {
            std::slice::from_raw_parts_mut(self.out.buffer().as_ptr().cast_mut().cast::<f32>().add(start), len)
        };
        (self.work)(units, elements);
    }

    /// Writes `units`, then publishes the tensor if this was the last task.
    fn run(&self, units: Range<usize>) {
        self.write(units);
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            if let Some(done) = &self.done {
                // Only this task reaches here, once; the value was allocated unset.
                let _ = done.emplace(self.out.clone());
            }
        }
    }
}
