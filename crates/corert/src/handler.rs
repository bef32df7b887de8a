//! Op handlers: what runs an op by name on tensor handles. [`OpHandler::make_op`] prepares an op
//! once (its implementation looked up, the handlers it falls back to consulted) and the
//! [`CoreRuntimeOp`] it gives runs it any number of times without blocking. Handlers stack: the
//! cpu handler falls back to another for the ops it does not have, the logging handler wraps
//! another — the seam where a device's handler will plug in.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use rtx_host::tracing::{self, Category};
use rtx_host::{Diagnostic, HostContext, RcAsyncValue, StatusCode};
use rtx_kernel::ExecutionContext;

use crate::attrs::OpAttrs;
use crate::handle::TensorHandle;

/// Reports an op's errors where its caller wants them (a BEF kernel's location, or nowhere for
/// an eager call, whose results carry them).
pub type ErrorSink = Arc<dyn Fn(&Diagnostic) + Send + Sync>;

/// One run of an op.
pub struct OpInvocation<'a> {
    pub context: &'a ExecutionContext,
    pub arguments: &'a [TensorHandle],
    pub attrs: &'a Arc<OpAttrs>,
    pub num_results: usize,
    /// The chain ops with side effects wait for (`corert.executeop.seq`); `None` for ops run
    /// without one.
    pub chain: Option<RcAsyncValue>,
    /// Where errors the op makes are reported, once each.
    pub errors: &'a ErrorSink,
}

/// What a run gives: one handle per result, and the chain that is available once the op's
/// side effects are done (the invocation's own chain for an op without any).
pub struct OpOutcome {
    pub results: Vec<TensorHandle>,
    pub chain: Option<RcAsyncValue>,
}

type Invoke = dyn Fn(&OpInvocation<'_>) -> OpOutcome + Send + Sync;

/// A prepared op: cheap to clone (one reference count), run with [`CoreRuntimeOp::invoke`].
#[derive(Clone)]
pub struct CoreRuntimeOp {
    prepared: Arc<Prepared>,
}

struct Prepared {
    name: Box<str>,
    /// The name of the handler that made it, for traces.
    handler: Box<str>,
    invoke: Box<Invoke>,
}

impl CoreRuntimeOp {
    /// Op `name` of the handler named `handler`, run by `invoke`.
    pub fn new(
        name: &str,
        handler: &str,
        invoke: impl Fn(&OpInvocation<'_>) -> OpOutcome + Send + Sync + 'static,
    ) -> CoreRuntimeOp {
        let prepared = Prepared { name: Box::from(name), handler: Box::from(handler), invoke: Box::new(invoke) };
        CoreRuntimeOp { prepared: Arc::new(prepared) }
    }

    pub fn name(&self) -> &str {
        &self.prepared.name
    }

    /// The name of the handler that made the op.
    pub fn handler(&self) -> &str {
        &self.prepared.handler
    }

    /// Runs the op; never blocks. Errors come back in the results (and are reported). Traced
    /// as TFRT traces an op: `OP#op_handler=HANDLER#`.
    pub fn invoke(&self, invocation: &OpInvocation<'_>) -> OpOutcome {
        let prepared = &*self.prepared;
        let _span = tracing::span(
            Category::Op,
            || format!("{}#op_handler={}#", prepared.name, prepared.handler),
            tracing::Args::none,
        );
        (prepared.invoke)(invocation)
    }
}

impl fmt::Debug for CoreRuntimeOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CoreRuntimeOp({})", self.prepared.name)
    }
}

/// Runs ops by name.
pub trait OpHandler: Send + Sync + 'static {
    /// The handler's own name (`cpu`, `logging`, `null`).
    fn name(&self) -> &str;

    /// `op` prepared to run, or why this handler (and those it falls back to) cannot run it.
    fn make_op(&self, op: &str) -> Result<CoreRuntimeOp, Diagnostic>;
}

/// The handler that runs nothing: the end of every fallback chain.
pub struct NullOpHandler;

impl OpHandler for NullOpHandler {
    fn name(&self) -> &str {
        "null"
    }

    fn make_op(&self, op: &str) -> Result<CoreRuntimeOp, Diagnostic> {
        Err(Diagnostic::new(StatusCode::Unimplemented, format!("{op} was not supported by NullOpHandler.")))
    }
}

/// The op handlers of a host context by the names they were registered under (TFRT's
/// `CoreRuntime`): shared by every function and eager call on it.
#[derive(Default)]
pub struct OpHandlers {
    by_name: Mutex<HashMap<String, Arc<dyn OpHandler>>>,
}

impl OpHandlers {
    /// The registry of `host`, made on first use.
    pub fn of(host: &HostContext) -> Arc<OpHandlers> {
        host.resource(OpHandlers::default)
    }

    /// Registers `handler` as `name`; a name registered already keeps its first handler, as in
    /// TFRT. Returns whether it was registered.
    pub fn register(&self, name: &str, handler: Arc<dyn OpHandler>) -> bool {
        let mut by_name = self.by_name.lock().unwrap_or_else(PoisonError::into_inner);
        if by_name.contains_key(name) {
            return false;
        }
        by_name.insert(name.to_owned(), handler);
        true
    }

    pub fn get(&self, name: &str) -> Result<Arc<dyn OpHandler>, Diagnostic> {
        let by_name = self.by_name.lock().unwrap_or_else(PoisonError::into_inner);
        by_name
            .get(name)
            .cloned()
            .ok_or_else(|| Diagnostic::new(StatusCode::NotFound, format!("op_handler not found: {name}")))
    }
}
