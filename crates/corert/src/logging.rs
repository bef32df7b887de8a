//! The logging op handler: runs ops through another handler and writes each dispatch, its
//! attributes and its input tensors to standard error — with `sync_log_results`, its output
//! tensors too — as TFRT's does (`[0] dispatch 'op' 1 argument, 1 result, no attributes`).

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rtx_host::{join, Diagnostic, HostContext, RcAsyncValue};

use crate::handler::{CoreRuntimeOp, OpHandler};
use crate::print::tensor_text;
use crate::scalar::ScalarHostTensor;

pub struct LoggingOpHandler {
    fallback: Arc<dyn OpHandler>,
    log_results: bool,
    /// The number of the next dispatch, counted across the handler's ops.
    next: Arc<AtomicU64>,
}

impl LoggingOpHandler {
    pub fn new(fallback: Arc<dyn OpHandler>, log_results: bool) -> LoggingOpHandler {
        LoggingOpHandler { fallback, log_results, next: Arc::new(AtomicU64::new(0)) }
    }
}

/// `1 argument`, `0 arguments`.
fn counted(count: usize, noun: &str) -> String {
    format!("{count} {noun}{}", if count == 1 { "" } else { "s" })
}

/// One block written at once, so that concurrent dispatches do not interleave within it.
fn log(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// `Inputs for [N]: 'op':` and a line per tensor (scalars written out dense, as TFRT's handler
/// converts them), then an empty line.
fn tensors_block(host: &HostContext, kind: &str, id: u64, op: &str, tensors: &[RcAsyncValue]) -> String {
    let mut text = format!("{kind}s for [{id}]: '{op}':\n");
    for (i, tensor) in tensors.iter().enumerate() {
        let shown = match (tensor.get_error(), tensor.try_get::<ScalarHostTensor>()) {
            (Some(error), _) => format!("error '{}'", error.message),
            (None, Ok(scalar)) => scalar.to_dense(host).map_or_else(|e| e.message, |d| d.to_string()),
            (None, Err(_)) => tensor_text(tensor).unwrap_or_else(|| tensor.type_name().to_owned()),
        };
        text.push_str(&format!("  {kind} for [{id}] tensor {i}: {shown}\n"));
    }
    text.push('\n');
    text
}

impl OpHandler for LoggingOpHandler {
    fn name(&self) -> &str {
        if self.log_results {
            "sync_logging"
        } else {
            "logging"
        }
    }

    fn make_op(&self, name: &str) -> Result<CoreRuntimeOp, Diagnostic> {
        let inner = self.fallback.make_op(name)?;
        let (next, log_results) = (Arc::clone(&self.next), self.log_results);
        let op: Arc<str> = Arc::from(name);
        let handler = self.name().to_owned();
        Ok(CoreRuntimeOp::new(name, &handler, move |invocation| {
            let id = next.fetch_add(1, Ordering::Relaxed);
            let attrs =
                if invocation.attrs.is_empty() { "no attributes\n".to_owned() } else { invocation.attrs.to_string() };
            log(&format!(
                "[{id}] dispatch '{op}' {}, {}, {attrs}",
                counted(invocation.arguments.len(), "argument"),
                counted(invocation.num_results, "result")
            ));
            let host = Arc::clone(invocation.context.host());
            let inputs: Vec<RcAsyncValue> = invocation.arguments.iter().map(|a| a.tensor().clone()).collect();
            let (shown, name, on) = (inputs.clone(), Arc::clone(&op), Arc::clone(&host));
            join::run_when_ready(&inputs, move || log(&tensors_block(&on, "Input", id, &name, &shown)));
            let outcome = inner.invoke(invocation);
            if log_results && !outcome.results.is_empty() {
                let outputs: Vec<RcAsyncValue> = outcome.results.iter().map(|r| r.tensor().clone()).collect();
                let (shown, name) = (outputs.clone(), Arc::clone(&op));
                join::run_when_ready(&outputs, move || log(&tensors_block(&host, "Output", id, &name, &shown)));
            }
            outcome
        }))
    }
}
