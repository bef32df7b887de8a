//! The cpu op handler: ops on host tensors, each a metadata function (result element types and
//! shapes from the arguments', run as soon as those are known, so a result's shape is known
//! before its data) and a dispatch function (the data, once every argument tensor is there).
//! Ops it does not have go to its fallback handler.

mod number;
mod test_ops;

use std::collections::HashMap;
use std::sync::Arc;

use rtx_host::{join, AsyncValueRef, Chain, Diagnostic, HostContext, IndirectAsyncValue, RcAsyncValue, StatusCode};
use rtx_kernel::tensor::{DenseHostTensor, StringHostTensor};
use rtx_kernel::ExecutionContext;
use smallvec::SmallVec;

use crate::attrs::OpAttrs;
use crate::handle::TensorHandle;
use crate::handler::{CoreRuntimeOp, ErrorSink, OpHandler, OpInvocation, OpOutcome};
use crate::metadata::TensorMetadata;
use crate::scalar::ScalarHostTensor;

/// What an op may do and take.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpFlags {
    /// The op has effects beyond its results (printing): it waits for the invocation's chain
    /// and makes a new one when done.
    pub side_effects: bool,
    /// Scalar tensors reach the op as they are (otherwise they are written out dense).
    pub allows_scalar: bool,
    /// String tensors reach the op (otherwise they are an error).
    pub allows_string: bool,
}

/// An op's results (metadata, tensors): most ops make one or two, kept without allocating.
pub type Results<T> = SmallVec<[T; 2]>;

/// Result metadata from the arguments' metadata and the attributes; the error message names what
/// is wrong.
pub type MetadataFn = fn(&[TensorMetadata], &OpAttrs) -> Result<Results<TensorMetadata>, String>;

/// What a dispatch function sees: available argument tensors (dense, or as the flags allow).
pub struct Dispatch<'a> {
    pub host: &'a Arc<HostContext>,
    pub arguments: &'a [RcAsyncValue],
    pub attrs: &'a OpAttrs,
    /// The results' metadata, when the op has a metadata function.
    pub results: &'a [TensorMetadata],
    pub num_results: usize,
    pub context: &'a ExecutionContext,
}

impl Dispatch<'_> {
    /// Argument `i` as a dense tensor.
    pub fn dense(&self, i: usize) -> Result<&DenseHostTensor, Diagnostic> {
        self.arguments[i].try_get::<DenseHostTensor>().map_err(|_| {
            Diagnostic::new(StatusCode::InvalidArgument, format!("argument {i} is a {}", self.arguments[i].type_name()))
        })
    }
}

/// What an op's few arguments are gathered in on every run, without allocating.
type Few<T> = SmallVec<[T; 4]>;

/// Result tensors (possibly unavailable), one per result.
pub type DispatchFn = fn(&Dispatch<'_>) -> Result<Results<RcAsyncValue>, Diagnostic>;

/// One op of the cpu handler.
#[derive(Clone, Copy)]
pub struct CpuOp {
    pub flags: OpFlags,
    pub metadata: Option<MetadataFn>,
    pub dispatch: DispatchFn,
}

/// The cpu handler's ops by name.
#[derive(Clone, Default)]
pub struct CpuOpRegistry {
    ops: HashMap<&'static str, CpuOp>,
}

impl CpuOpRegistry {
    /// The ops rtx's cpu handler has: TFRT's `tfrt_test.*` ops.
    pub fn with_builtin_ops() -> CpuOpRegistry {
        let mut registry = CpuOpRegistry::default();
        test_ops::register(&mut registry);
        registry
    }

    pub fn add(&mut self, name: &'static str, op: CpuOp) {
        self.ops.insert(name, op);
    }

    pub fn get(&self, name: &str) -> Option<&CpuOp> {
        self.ops.get(name)
    }
}

/// Runs the ops of its registry on the host; the rest go to `fallback`.
pub struct CpuOpHandler {
    fallback: Arc<dyn OpHandler>,
    ops: Arc<CpuOpRegistry>,
}

impl CpuOpHandler {
    pub fn new(fallback: Arc<dyn OpHandler>) -> CpuOpHandler {
        CpuOpHandler { fallback, ops: Arc::new(CpuOpRegistry::with_builtin_ops()) }
    }
}

impl OpHandler for CpuOpHandler {
    fn name(&self) -> &str {
        "cpu"
    }

    fn make_op(&self, name: &str) -> Result<CoreRuntimeOp, Diagnostic> {
        let Some(&op) = self.ops.get(name) else { return self.fallback.make_op(name) };
        Ok(CoreRuntimeOp::new(name, "cpu", move |invocation| run(op, invocation)))
    }
}

/// The first error among `values`, which are available.
fn first_error(values: &[RcAsyncValue]) -> Option<Diagnostic> {
    values.iter().find_map(|v| v.get_error().cloned())
}

/// Runs `op` at once when everything it waits for is there (the common case of an eager call),
/// else when it is.
fn run(op: CpuOp, invocation: &OpInvocation<'_>) -> OpOutcome {
    let available = |v: &RcAsyncValue| v.is_available();
    let ready = invocation.arguments.iter().all(|a| available(a.tensor()) && a.is_metadata_available())
        && !(op.flags.side_effects && invocation.chain.as_ref().is_some_and(|c| !available(c)));
    if ready {
        run_now(op, invocation)
    } else {
        run_later(op, invocation)
    }
}

/// `op` on available arguments, on this thread.
fn run_now(op: CpuOp, invocation: &OpInvocation<'_>) -> OpOutcome {
    let mut metadata = Results::new();
    match compute_now(op, invocation, &mut metadata) {
        Ok(values) => {
            let results = match op.metadata {
                Some(_) => {
                    values.into_iter().zip(metadata).map(|(v, m)| TensorHandle::host_with_metadata(m, v)).collect()
                }
                None => values.into_iter().map(TensorHandle::from_tensor).collect(),
            };
            let chain =
                if op.flags.side_effects { Some(Chain::ready().into_untyped()) } else { invocation.chain.clone() };
            OpOutcome { results, chain }
        }
        Err(error) => {
            let chain = match op.flags.side_effects {
                true => Some(RcAsyncValue::error(error.clone())),
                false => invocation.chain.clone(),
            };
            OpOutcome { results: vec![TensorHandle::error(error); invocation.num_results], chain }
        }
    }
}

/// The result tensors of `op` on available arguments, their metadata (for an op with a metadata
/// function) written to `metadata` first: filled in place rather than returned, as these values
/// are large to move.
fn compute_now(
    op: CpuOp,
    invocation: &OpInvocation<'_>,
    metadata: &mut Results<TensorMetadata>,
) -> Result<Results<RcAsyncValue>, Diagnostic> {
    let count = invocation.num_results;
    let tensors: Few<RcAsyncValue> = invocation.arguments.iter().map(|a| a.tensor().clone()).collect();
    let errors = invocation.arguments.iter().map(|a| a.metadata_error());
    if let Some(error) = first_error(&tensors).or_else(|| errors.flatten().next().cloned()) {
        return Err(error);
    }
    if let Some(error) = invocation.chain.as_ref().filter(|_| op.flags.side_effects).and_then(|c| c.get_error()) {
        return Err(error.clone());
    }
    if let Some(function) = op.metadata {
        // Available and not errors (checked above).
        let arguments: Few<TensorMetadata> =
            invocation.arguments.iter().filter_map(|a| a.available_metadata().cloned()).collect();
        *metadata = function(&arguments, invocation.attrs)
            .map_err(|message| Diagnostic::new(StatusCode::InvalidArgument, message))
            .inspect_err(|error| (invocation.errors)(error))?;
        check_count(metadata.len(), count).inspect_err(|error| (invocation.errors)(error))?;
    }
    if let Some(cancelled) = invocation.context.cancel_value() {
        return Err(cancelled.get_error().cloned().expect("cancellation is an error"));
    }
    dispatch(op, &tensors, metadata, invocation.attrs, count, invocation.context, invocation.errors)
}

/// `op` once its arguments (and the chain, for an op with side effects) are available: its
/// results' metadata as soon as the arguments' is.
fn run_later(op: CpuOp, invocation: &OpInvocation<'_>) -> OpOutcome {
    let count = invocation.num_results;
    let attrs = Arc::clone(invocation.attrs);
    let errors = Arc::clone(invocation.errors);
    let metadata: Option<Vec<AsyncValueRef<TensorMetadata>>> = op.metadata.map(|function| {
        let slots: Vec<AsyncValueRef<TensorMetadata>> = (0..count).map(|_| AsyncValueRef::unconstructed()).collect();
        let known: Vec<RcAsyncValue> = invocation.arguments.iter().map(|a| a.async_metadata().into_untyped()).collect();
        let (filled, attrs, errors) = (slots.clone(), Arc::clone(&attrs), Arc::clone(&errors));
        join::run_when_ready(&known.clone(), move || {
            let computed = match first_error(&known) {
                Some(error) => Err(error),
                None => {
                    let arguments: Vec<TensorMetadata> = known
                        .iter()
                        .map(|m| m.try_get::<TensorMetadata>().cloned().expect("argument metadata is metadata"))
                        .collect();
                    function(&arguments, &attrs)
                        .map_err(|message| Diagnostic::new(StatusCode::InvalidArgument, message))
                        .and_then(|results| check_count(results.len(), count).map(|()| results))
                        .inspect_err(|error| errors(error))
                }
            };
            match computed {
                Ok(results) => filled.iter().zip(results).for_each(|(slot, m)| drop(slot.emplace(m))),
                Err(error) => filled.iter().for_each(|slot| drop(slot.as_untyped().set_error(error.clone()))),
            }
        });
        slots
    });
    let tensors: Vec<IndirectAsyncValue> = (0..count).map(|_| IndirectAsyncValue::new()).collect();
    let done = op.flags.side_effects.then(AsyncValueRef::<Chain>::unconstructed);
    let mut waits: Vec<RcAsyncValue> = invocation.arguments.iter().map(|a| a.tensor().clone()).collect();
    let arguments = waits.len();
    if let Some(slots) = &metadata {
        waits.extend(slots.iter().map(|s| s.as_untyped().clone()));
    }
    if let (true, Some(chain)) = (op.flags.side_effects, &invocation.chain) {
        waits.push(chain.clone());
    }
    let context = invocation.context.clone();
    let (results, finished): (Vec<RcAsyncValue>, _) = (tensors.iter().map(|t| t.value()).collect(), done.clone());
    join::run_when_ready(&waits.clone(), move || {
        let outcome = first_error(&waits)
            .map(Err)
            .or_else(|| context.cancel_value().map(|c| Err(c.get_error().cloned().expect("cancellation is an error"))))
            .unwrap_or_else(|| {
                let results: Vec<TensorMetadata> =
                    waits[arguments..].iter().filter_map(|m| m.try_get::<TensorMetadata>().ok().cloned()).collect();
                dispatch(op, &waits[..arguments], &results, &attrs, count, &context, &errors)
            });
        match outcome {
            Ok(values) => {
                for (slot, value) in results.iter().zip(values) {
                    let _ = slot.forward_indirect(value);
                }
                if let Some(done) = finished {
                    let _ = done.emplace(Chain);
                }
            }
            Err(error) => {
                for slot in &results {
                    let _ = slot.set_error(error.clone());
                }
                if let Some(done) = finished {
                    let _ = done.as_untyped().set_error(error);
                }
            }
        }
    });
    let handles = tensors
        .iter()
        .enumerate()
        .map(|(i, tensor)| match &metadata {
            Some(slots) => TensorHandle::host(slots[i].clone(), tensor.value()),
            None => TensorHandle::from_tensor(tensor.value()),
        })
        .collect();
    let chain = match done {
        Some(done) => Some(done.into_untyped()),
        None => invocation.chain.clone(),
    };
    OpOutcome { results: handles, chain }
}

/// An error unless an op that makes `made` results was asked for `count`.
fn check_count(made: usize, count: usize) -> Result<(), Diagnostic> {
    if made != count {
        return Err(Diagnostic::new(
            StatusCode::InvalidArgument,
            format!("the op makes {made} results, but {count} are asked for"),
        ));
    }
    Ok(())
}

/// Converts the arguments as the op's flags ask and runs its dispatch function; errors it makes
/// are reported.
fn dispatch(
    op: CpuOp,
    arguments: &[RcAsyncValue],
    results: &[TensorMetadata],
    attrs: &OpAttrs,
    count: usize,
    context: &ExecutionContext,
    errors: &ErrorSink,
) -> Result<Results<RcAsyncValue>, Diagnostic> {
    let host = context.host();
    // Dense tensors (the common case) pass as they are; the rest are converted into a copy.
    let converted;
    let arguments = if arguments.iter().all(|a| a.is_type::<DenseHostTensor>()) {
        arguments
    } else {
        converted = arguments
            .iter()
            .map(|argument| convert_argument(argument, op.flags, host))
            .collect::<Result<Few<_>, _>>()
            .inspect_err(|error| errors(error))?;
        &converted[..]
    };
    let dispatch = Dispatch { host, arguments, attrs, results, num_results: count, context };
    (op.dispatch)(&dispatch)
        .and_then(|values| check_count(values.len(), count).map(|()| values))
        .inspect_err(|error| errors(error))
}

/// `argument` as the op takes it: a scalar written out dense unless the op allows scalars; a
/// string tensor only when the op allows strings.
fn convert_argument(argument: &RcAsyncValue, flags: OpFlags, host: &HostContext) -> Result<RcAsyncValue, Diagnostic> {
    if let Ok(scalar) = argument.try_get::<ScalarHostTensor>() {
        if !flags.allows_scalar {
            return Ok(AsyncValueRef::available(scalar.to_dense(host)?).into_untyped());
        }
    } else if argument.is_type::<StringHostTensor>() && !flags.allows_string {
        return Err(Diagnostic::new(StatusCode::InvalidArgument, "Cannot implicitly convert StringHost to DenseHost"));
    }
    Ok(argument.clone())
}
