//! Eager ops: one op at a time by name on a context, through Core Runtime's op handlers, without
//! blocking — what `rtx_context_execute_op`, C++'s `execute_op` and Python's `execute_op` call.
//!
//! Every context has the handler `cpu`: TFRT's cpu ops, then every kernel of the context (the
//! `nn.*` layers, the `onnx.*` operators, the tensor kernels, those the host registered) run as a
//! one-op function ([`kernel_ops`]), then nothing. Programs and hosts may register more. An op
//! is prepared once per context ([`Context::make_op`]) and kept.

mod kernel_ops;

use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};

use rtx_corert::{
    CoreRuntimeOp, CpuOpHandler, ErrorSink, NullOpHandler, OpAttrs, OpHandlers, OpInvocation, ScalarHostTensor,
    TensorHandle,
};
use rtx_hal::buffer_view::BufferView;
use rtx_host::work_queue::refuse_on_own_thread;
use rtx_host::{Diagnostic, HostContext, IndirectAsyncValue, RcAsyncValue, ResultExt, StatusCode};
use rtx_kernel::context::print_output;
use rtx_kernel::tensor::{DenseHostTensor, StringHostTensor};
use rtx_kernel::{ExecutionContext, KernelRegistry};
use smallvec::SmallVec;

use super::bridge::tensors::{tensor_to_view, view_to_tensor};
use super::context::Context;
use super::invocation::held_type;

/// What a context keeps for eager ops.
pub(crate) struct Eager {
    /// The request eager ops run in (made on first use): its errors reach the results only.
    request: OnceLock<ExecutionContext>,
    /// Prepared ops by handler, then op name (looked up on every eager call: a fast hash).
    ops: Mutex<foldhash::HashMap<String, foldhash::HashMap<String, CoreRuntimeOp>>>,
    /// Where eager ops report errors: nowhere, the results carry them.
    errors: ErrorSink,
    /// The attributes of an op given none.
    no_attrs: Arc<OpAttrs>,
    /// Ops the host made of BEF functions, by name; the `cpu` handler runs them.
    composites: kernel_ops::Composites,
}

impl Default for Eager {
    fn default() -> Eager {
        Eager {
            request: OnceLock::new(),
            ops: Mutex::default(),
            errors: Arc::new(|_: &Diagnostic| {}),
            no_attrs: Arc::default(),
            composites: Arc::default(),
        }
    }
}

/// Registers a context's `cpu` handler: TFRT's cpu ops, then the context's composite ops and
/// kernels.
pub(crate) fn register_cpu_handler(host: &HostContext, kernels: &Arc<RwLock<KernelRegistry>>, eager: &Eager) {
    let kernels =
        kernel_ops::KernelOpHandler::new(Arc::clone(kernels), Arc::clone(&eager.composites), Arc::new(NullOpHandler));
    OpHandlers::of(host).register("cpu", Arc::new(CpuOpHandler::new(Arc::new(kernels))));
}

impl Context {
    /// The op handlers of this context by name (`cpu` is always there).
    pub fn op_handlers(&self) -> Arc<OpHandlers> {
        OpHandlers::of(self.host())
    }

    /// Makes the BEF function `function` (named as for [`Context::function`]) the op `name` of
    /// the `cpu` handler: it takes a chain and tensor handles and returns a chain and tensor
    /// handles, and its results are the op's. INVALID_ARGUMENT for a function of another
    /// signature or a VM function, ALREADY_EXISTS for a name taken by a composite op or a kernel.
    pub fn register_composite_op(&self, name: &str, function: &str) -> Result<(), Diagnostic> {
        let found = self.function(function)?;
        let bef = found.bef().ok_or_else(|| {
            Diagnostic::new(
                StatusCode::InvalidArgument,
                format!("`{function}` is a VM function; a composite op is a BEF function"),
            )
        })?;
        let op = rtx_corert::composite_op(bef.clone())?;
        let taken = || Diagnostic::new(StatusCode::AlreadyExists, format!("op `{name}` exists already"));
        if self.kernels.read().unwrap_or_else(PoisonError::into_inner).kernel(name).is_some() {
            return Err(taken());
        }
        let mut composites = self.eager().composites.write().unwrap_or_else(PoisonError::into_inner);
        if composites.contains_key(name) {
            return Err(taken());
        }
        composites.insert(name.to_owned(), op);
        Ok(())
    }

    /// `op` of the handler registered as `handler`, ready to run; kept for later calls.
    pub fn make_op(&self, handler: &str, op: &str) -> Result<CoreRuntimeOp, Diagnostic> {
        let ops = &self.eager().ops;
        if let Some(made) = ops.lock().unwrap_or_else(PoisonError::into_inner).get(handler).and_then(|h| h.get(op)) {
            return Ok(made.clone());
        }
        let made = self
            .op_handlers()
            .get(handler)
            .and_then(|h| h.make_op(op))
            .with_context(|| format!("op `{op}` on handler `{handler}`"))?;
        let mut ops = ops.lock().unwrap_or_else(PoisonError::into_inner);
        ops.entry(handler.to_owned()).or_default().insert(op.to_owned(), made.clone());
        Ok(made)
    }

    /// Runs `op` on `arguments` with `attrs`; returns a handle per result at once. Errors of the
    /// run (a wrong element type, an error argument) are the results' errors.
    pub fn execute_op(
        &self,
        op: &CoreRuntimeOp,
        arguments: &[TensorHandle],
        attrs: &Arc<OpAttrs>,
        num_results: usize,
    ) -> Vec<TensorHandle> {
        let errors = &self.eager().errors;
        let invocation = OpInvocation { context: self.request(), arguments, attrs, num_results, chain: None, errors };
        op.invoke(&invocation).results
    }

    /// [`Context::execute_op`] on async values, as C hosts pass tensors: each argument holds a
    /// buffer view, a dense, scalar or string host tensor, or a tensor handle (possibly still
    /// unavailable); each result becomes the result's tensor — a dense host tensor (a scalar one
    /// written out) or a string host tensor — or its error. `attrs`: `None` for none.
    pub fn execute_op_values(
        &self,
        handler: &str,
        op: &str,
        arguments: &[RcAsyncValue],
        attrs: Option<&Arc<OpAttrs>>,
        num_results: usize,
    ) -> Result<Vec<RcAsyncValue>, Diagnostic> {
        let made = self.make_op(handler, op)?;
        let attrs = attrs.unwrap_or(&self.eager().no_attrs);
        let handles: SmallVec<[TensorHandle; 4]> =
            arguments.iter().enumerate().map(|(i, value)| self.handle_of(op, i, value)).collect();
        let results = self.execute_op(&made, &handles, attrs, num_results);
        Ok(results.iter().map(|handle| self.tensor_value(op, handle)).collect())
    }

    /// [`Context::execute_op_values`] on buffer views, waited for: the synchronous form for hosts
    /// that would wait anyway (Python's `execute_op`), one crossing of the C ABI. Each result
    /// must be a tensor of numbers; an op's failure is the error. FAILED_PRECONDITION on a thread
    /// of the context's queue, which must not block.
    pub fn call_op(
        &self,
        handler: &str,
        op: &str,
        arguments: &[Arc<BufferView>],
        attrs: Option<&Arc<OpAttrs>>,
        num_results: usize,
    ) -> Result<Vec<Arc<BufferView>>, Diagnostic> {
        refuse_on_own_thread(&**self.host().work_queue(), "call_op")?;
        let made = self.make_op(handler, op)?;
        let handles = arguments
            .iter()
            .enumerate()
            .map(|(i, view)| {
                let tensor = view_to_tensor(self.host(), view).with_context(|| format!("argument {i} of op `{op}`"))?;
                Ok(TensorHandle::from_tensor(rtx_host::AsyncValueRef::available(tensor).into_untyped()))
            })
            .collect::<Result<Vec<_>, Diagnostic>>()?;
        let results = self.execute_op(&made, &handles, attrs.unwrap_or(&self.eager().no_attrs), num_results);
        let tensors: Vec<RcAsyncValue> = results.iter().map(|r| self.tensor_value(op, r)).collect();
        self.host().await_values(&tensors)?;
        tensors
            .iter()
            .enumerate()
            .map(|(index, tensor)| {
                if let Some(error) = tensor.get_error() {
                    return Err(error.clone());
                }
                let dense = tensor.try_get::<DenseHostTensor>().map_err(|_| {
                    Diagnostic::new(
                        StatusCode::InvalidArgument,
                        format!(
                            "result {index} of op `{op}` is {}, not a tensor of numbers; run the op with async values \
                             (execute_op)",
                            held_type(tensor)
                        ),
                    )
                })?;
                tensor_to_view(dense)
            })
            .collect()
    }

    fn eager(&self) -> &Eager {
        &self.eager
    }

    fn request(&self) -> &ExecutionContext {
        self.eager().request.get_or_init(|| {
            ExecutionContext::with_handlers(
                Arc::clone(self.host()),
                Arc::new(|_: &Diagnostic| {}),
                Arc::new(print_output),
            )
        })
    }

    /// Argument `index` of `op` as a tensor handle.
    fn handle_of(&self, op: &str, index: usize, value: &RcAsyncValue) -> TensorHandle {
        if value.is_type::<DenseHostTensor>() {
            return TensorHandle::from_tensor(value.clone());
        }
        if let Ok(handle) = value.try_get::<TensorHandle>() {
            return handle.clone();
        }
        if let Some(error) = value.get_error() {
            return TensorHandle::error(error.clone());
        }
        if value.is_available() {
            return match host_tensor(self.host(), value).with_context(|| format!("argument {index} of op `{op}`")) {
                Ok(tensor) => TensorHandle::from_tensor(tensor),
                Err(error) => TensorHandle::error(error),
            };
        }
        let tensor = IndirectAsyncValue::new();
        let (slot, source, host, op) = (tensor.value(), value.clone(), Arc::clone(self.host()), op.to_owned());
        value.and_then(move || {
            let converted = match source.get_error() {
                Some(error) => Err(error.clone()),
                None => host_tensor(&host, &source).with_context(|| format!("argument {index} of op `{op}`")),
            };
            let _ = match converted {
                Ok(tensor) => slot.forward_indirect(tensor),
                Err(error) => slot.set_error(error),
            };
        });
        TensorHandle::from_tensor(tensor.value())
    }

    /// A handle's tensor as C reads it: dense (scalars written out) or strings; an error names
    /// the op.
    fn tensor_value(&self, op: &str, handle: &TensorHandle) -> RcAsyncValue {
        let tensor = handle.tensor();
        if tensor.is_concrete() && !tensor.is_type::<ScalarHostTensor>() {
            return tensor.clone();
        }
        let result = IndirectAsyncValue::new();
        let (slot, tensor, host) = (result.value(), handle.tensor().clone(), Arc::clone(self.host()));
        let op = op.to_owned();
        handle.tensor().and_then(move || {
            if let Some(error) = tensor.get_error() {
                let _ = slot.set_error(error.clone().context(format_args!("op `{op}`")));
                return;
            }
            let _ = match tensor.try_get::<ScalarHostTensor>() {
                Ok(scalar) => match scalar.to_dense(&host) {
                    Ok(dense) => slot.forward_indirect(rtx_host::AsyncValueRef::available(dense).into_untyped()),
                    Err(error) => slot.set_error(error),
                },
                Err(_) => slot.forward_indirect(tensor),
            };
        });
        result.value()
    }
}

/// An available value as a host tensor: a buffer view's elements in a dense tensor; host
/// tensors as they are.
fn host_tensor(host: &HostContext, value: &RcAsyncValue) -> Result<RcAsyncValue, Diagnostic> {
    if value.is_type::<DenseHostTensor>() || value.is_type::<StringHostTensor>() || value.is_type::<ScalarHostTensor>()
    {
        return Ok(value.clone());
    }
    if let Ok(view) = value.try_get::<Arc<BufferView>>() {
        return Ok(rtx_host::AsyncValueRef::available(view_to_tensor(host, view)?).into_untyped());
    }
    Err(Diagnostic::new(
        StatusCode::InvalidArgument,
        format!("the value holds {}, not a tensor (a buffer view or a host tensor)", held_type(value)),
    ))
}
