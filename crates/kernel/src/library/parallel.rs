//! `tfrt.parallel_for.i32` and `tfrt.parallel_call.i32`: run a body over `[start, end)` in
//! fixed-size blocks, each block `body(block_start, block_end, extra...)`, and return a chain
//! that is ready when every block is done. A body with no results is done when it returns; one
//! that returns a chain is done when that chain is available.
//!
//! The blocks are dealt to a few tasks (four per worker of the queue), each running a contiguous
//! run of blocks in order; the first run goes on this thread. So a loop of a billion blocks costs
//! a handful of tasks, not a billion, and each task checks for cancellation before every block:
//! a cancelled loop stops, and its chain becomes the `Cancelled` error.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::function::ProgramFunction;
use crate::{cancelled_error, ExecutionContext, KernelError, KernelFrame, KernelRegistry};
use rtx_host::{AsyncValueRef, Chain, RcAsyncValue};

/// Tasks per worker of the queue that a loop's blocks are dealt to.
const TASKS_PER_WORKER: u64 = 4;

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("tfrt.parallel_for.i32", parallel_for);
    registry.add_kernel("tfrt.parallel_call.i32", parallel_for);
}

fn parallel_for(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let (start, end, block) = (*frame.get::<i32>(0)?, *frame.get::<i32>(1)?, *frame.get::<i32>(2)?);
    let body = frame.function(0)?;
    if body.num_results() > 1 {
        return Err("Invalid parallel body function result types".into());
    }
    if block <= 0 {
        return Err(format!("parallel_for block size {block} is not positive").into());
    }
    let extra = frame.arguments()[3..].to_vec();
    let done = frame.allocate_result::<Chain>(0)?;
    let num_blocks = ((i64::from(end) - i64::from(start)).max(0) as u64).div_ceil(block as u64);
    if num_blocks == 0 {
        done.emplace(Chain)?;
        return Ok(());
    }
    let workers = frame.host().parallelism_level().max(1) as u64;
    let tasks = num_blocks.min(workers * TASKS_PER_WORKER);
    let group = Arc::new(Blocks {
        remaining: AtomicUsize::new(num_blocks as usize),
        cancelled: AtomicBool::new(false),
        done,
        body,
        context: frame.context().clone(),
        extra,
        start,
        end,
        block,
    });
    // Task `t` runs blocks `[t * n / tasks, (t + 1) * n / tasks)`.
    let first_block = |t: u64| t * num_blocks / tasks;
    for t in 1..tasks {
        let group = Arc::clone(&group);
        let (first, last) = (first_block(t), first_block(t + 1));
        frame.host().work_queue().add_task(Box::new(move || group.run(first, last)));
    }
    group.run(0, first_block(1));
    Ok(())
}

/// The blocks of one parallel loop.
struct Blocks {
    remaining: AtomicUsize,
    cancelled: AtomicBool,
    done: AsyncValueRef<Chain>,
    body: ProgramFunction,
    context: ExecutionContext,
    extra: Vec<RcAsyncValue>,
    start: i32,
    end: i32,
    block: i32,
}

impl Blocks {
    /// Runs blocks `first..last` in order, each after checking for cancellation.
    fn run(self: Arc<Self>, first: u64, last: u64) {
        for index in first..last {
            if self.context.is_cancelled() {
                self.cancelled.store(true, Ordering::Relaxed);
                self.finish((last - index) as usize);
                return;
            }
            // In range: `index` is below the block count, so the block starts before `end`.
            let start = (i64::from(self.start) + index as i64 * i64::from(self.block)) as i32;
            let end = start.saturating_add(self.block).min(self.end);
            self.run_block(start, end);
        }
    }

    fn run_block(self: &Arc<Self>, start: i32, end: i32) {
        let mut arguments =
            vec![AsyncValueRef::available(start).into_untyped(), AsyncValueRef::available(end).into_untyped()];
        arguments.extend(self.extra.iter().cloned());
        let results = self.body.execute(&self.context, &arguments);
        match results.into_iter().next() {
            None => self.finish(1),
            Some(chain) => {
                let waited = chain.clone();
                let group = Arc::clone(self);
                waited.and_then(move || {
                    drop(chain);
                    group.finish(1);
                });
            }
        }
    }

    /// Counts `blocks` as done; the last one makes the loop's chain available.
    fn finish(&self, blocks: usize) {
        if self.remaining.fetch_sub(blocks, Ordering::AcqRel) == blocks {
            let _ = if self.cancelled.load(Ordering::Relaxed) {
                self.done.as_untyped().set_error(cancelled_error())
            } else {
                self.done.emplace(Chain)
            };
        }
    }
}
