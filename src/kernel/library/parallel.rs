//! `tfrt.parallel_for.i32` and `tfrt.parallel_call.i32`: run a body over `[start, end)` in
//! fixed-size blocks, each block `body(block_start, block_end, extra...)`, and return a chain
//! that is ready when every block is done. A body with no results is done when it returns; one
//! that returns a chain is done when that chain is available. The first block runs on this
//! thread, the others in tasks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::bef::executor::Function;
use crate::host::{AsyncValueRef, Chain, RcAsyncValue};
use crate::kernel::{ExecutionContext, KernelError, KernelFrame, KernelRegistry};

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
    let blocks: Vec<(i32, i32)> =
        (start..end.max(start)).step_by(block as usize).map(|s| (s, s.saturating_add(block).min(end))).collect();
    if blocks.is_empty() {
        done.emplace(Chain)?;
        return Ok(());
    }
    let group = Arc::new(Blocks {
        remaining: AtomicUsize::new(blocks.len()),
        done,
        body,
        context: frame.context().clone(),
        extra,
    });
    for &(s, e) in &blocks[1..] {
        let group = Arc::clone(&group);
        frame.host().work_queue().add_task(Box::new(move || group.run(s, e)));
    }
    group.run(blocks[0].0, blocks[0].1);
    Ok(())
}

/// The blocks of one parallel loop.
struct Blocks {
    remaining: AtomicUsize,
    done: AsyncValueRef<Chain>,
    body: Function,
    context: ExecutionContext,
    extra: Vec<RcAsyncValue>,
}

impl Blocks {
    fn run(self: Arc<Self>, start: i32, end: i32) {
        let mut arguments =
            vec![AsyncValueRef::available(start).into_untyped(), AsyncValueRef::available(end).into_untyped()];
        arguments.extend(self.extra.iter().cloned());
        let results = self.body.execute(&self.context, &arguments);
        match results.into_iter().next() {
            None => self.finish_one(),
            Some(chain) => {
                let waited = chain.clone();
                waited.and_then(move || {
                    drop(chain);
                    self.finish_one();
                });
            }
        }
    }

    fn finish_one(&self) {
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            let _ = self.done.emplace(Chain);
        }
    }
}
