//! [`ExecutionContext`]: what one run of a BEF function (a request) shares with its kernels —
//! the host context, where diagnostics and printed output go, its own cancellation, and the
//! resources kernels keep for the length of the request (`tfrt.once`'s results).

use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rtx_host::{AsyncValueRef, Chain, Diagnostic, HostContext, RcAsyncValue, StatusCode};

/// Receives each runtime error once, with the location of the kernel that reported it.
pub type DiagnosticHandler = Arc<dyn Fn(&Diagnostic) + Send + Sync>;
/// Receives the text print kernels write (each call one whole line or more).
pub type OutputHandler = Arc<dyn Fn(&str) + Send + Sync>;

/// The context of one request: cheap to clone (one reference count), shared by every kernel and
/// nested function call of the request.
#[derive(Clone)]
pub struct ExecutionContext {
    inner: Arc<Inner>,
}

struct Inner {
    host: Arc<HostContext>,
    diagnostics: DiagnosticHandler,
    output: OutputHandler,
    cancelled: AtomicBool,
    cancel_value: Mutex<Option<RcAsyncValue>>,
    resources: Mutex<HashMap<String, Arc<dyn Any + Send + Sync>>>,
}

/// The error every kernel skipped by cancellation produces (TFRT's message).
pub fn cancelled_error() -> Diagnostic {
    Diagnostic::new(StatusCode::Cancelled, "Cancelled")
}

impl ExecutionContext {
    /// A request on `host` whose diagnostics go to standard error as
    /// `LOCATION: error: runtime error: MESSAGE` and whose output goes to standard output.
    pub fn new(host: Arc<HostContext>) -> ExecutionContext {
        ExecutionContext::with_handlers(host, Arc::new(print_diagnostic), Arc::new(print_output))
    }

    /// A request that reports diagnostics and output to the host's own handlers.
    pub fn with_handlers(
        host: Arc<HostContext>,
        diagnostics: DiagnosticHandler,
        output: OutputHandler,
    ) -> ExecutionContext {
        ExecutionContext {
            inner: Arc::new(Inner {
                host,
                diagnostics,
                output,
                cancelled: AtomicBool::new(false),
                cancel_value: Mutex::new(None),
                resources: Mutex::new(HashMap::new()),
            }),
        }
    }

    pub fn host(&self) -> &Arc<HostContext> {
        &self.inner.host
    }

    /// Reports a runtime error (once per error: kernels that merely pass an error on do not).
    pub fn emit_error(&self, diagnostic: &Diagnostic) {
        (self.inner.diagnostics)(diagnostic);
    }

    /// Writes what a print kernel prints.
    pub fn print(&self, text: &str) {
        (self.inner.output)(text);
    }

    /// Where printed text goes, for values that print after the kernel that made them returns
    /// (when they are destroyed, say).
    pub fn output_handler(&self) -> OutputHandler {
        std::sync::Arc::clone(&self.inner.output)
    }

    /// Cancels the request: kernels that have not started are skipped and produce the
    /// `Cancelled` error. Cancelling the host context cancels every request on it.
    pub fn cancel(&self) {
        let mut value = self.inner.cancel_value.lock().unwrap_or_else(PoisonError::into_inner);
        if value.is_none() {
            *value = Some(RcAsyncValue::error(cancelled_error()));
        }
        self.inner.cancelled.store(true, Ordering::Release);
    }

    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::Acquire) || self.inner.host.is_cancelled()
    }

    /// The error value kernels take instead of running once the request or its host is
    /// cancelled; `None` while neither is.
    #[inline]
    pub fn cancel_value(&self) -> Option<RcAsyncValue> {
        if !self.is_cancelled() {
            return None;
        }
        let mut value = self.inner.cancel_value.lock().unwrap_or_else(PoisonError::into_inner);
        // Only the host was cancelled: its cancellation becomes this request's.
        Some(value.get_or_insert_with(|| RcAsyncValue::error(cancelled_error())).clone())
    }

    /// The request's instance of `T` under `key`, made by `make` on first use.
    pub fn resource<T: Send + Sync + 'static>(
        &self,
        key: &str,
        make: impl FnOnce() -> T,
    ) -> Result<Arc<T>, Diagnostic> {
        let mut resources = self.inner.resources.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = resources.entry(key.to_owned()).or_insert_with(|| Arc::new(make()));
        Arc::clone(entry).downcast::<T>().map_err(|_| {
            Diagnostic::new(
                StatusCode::Internal,
                format!("resource `{key}` holds another type than {}", std::any::type_name::<T>()),
            )
        })
    }

    /// An available chain (kernels that only order work return one).
    pub fn ready_chain(&self) -> AsyncValueRef<Chain> {
        Chain::ready()
    }
}

impl std::fmt::Debug for ExecutionContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecutionContext")
            .field("host", &self.inner.host)
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

/// How TFRT's driver shows a runtime error: `LOCATION: error: runtime error: MESSAGE`.
pub fn format_runtime_error(diagnostic: &Diagnostic) -> String {
    let location = diagnostic.location.as_ref().map_or_else(|| "<unknown>:0".to_owned(), ToString::to_string);
    format!("{location}: error: runtime error: {}", diagnostic.message)
}

fn print_diagnostic(diagnostic: &Diagnostic) {
    eprintln!("{}", format_runtime_error(diagnostic));
}

pub fn print_output(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    // Output is best effort: a closed pipe must not fail the kernel.
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancelling_the_request_or_its_host_gives_the_cancelled_value() {
        let host = Arc::new(HostContext::with_work_queue_spec("s").unwrap());
        let context = ExecutionContext::new(Arc::clone(&host));
        assert!(context.cancel_value().is_none());
        context.cancel();
        let value = context.cancel_value().unwrap();
        assert_eq!(value.get_error().unwrap().message, "Cancelled");
        assert!(value.ptr_eq(&context.cancel_value().unwrap()), "one error value per request");

        let other = ExecutionContext::new(Arc::clone(&host));
        assert!(other.cancel_value().is_none(), "requests are cancelled one by one");
        host.cancel();
        assert_eq!(other.cancel_value().unwrap().get_error().unwrap().code, StatusCode::Cancelled);
    }

    #[test]
    fn resources_are_per_request_and_typed() {
        let host = Arc::new(HostContext::with_work_queue_spec("s").unwrap());
        let context = ExecutionContext::new(host);
        let first = context.resource("once", || 5u32).unwrap();
        assert!(Arc::ptr_eq(&first, &context.resource::<u32>("once", || unreachable!()).unwrap()));
        assert!(context.resource::<String>("once", String::new).is_err());
    }

    #[test]
    fn runtime_errors_are_shown_with_their_location() {
        let located = Diagnostic::new(StatusCode::Internal, "Divide by zero")
            .with_location(rtx_host::Location::new("t.mlir", 3, 8));
        assert_eq!(format_runtime_error(&located), "t.mlir:3:8: error: runtime error: Divide by zero");
    }
}
