//! The `corert.*` kernels BEF functions run Core Runtime through: op handlers made, registered
//! and looked up; ops executed (`executeop`, `.seq`, composite ops); tensor handles made from
//! constants and converted; `cond` and `while` on a tensor's truth; op attributes built and
//! printed; and TFRT's test kernels of Core Runtime.

use std::sync::{Arc, Mutex, PoisonError};

use rtx_host::{join, AsyncValueRef, Chain, Diagnostic, IndirectAsyncValue, RcAsyncValue, StatusCode};
use rtx_kernel::attribute::AttributeType;
use rtx_kernel::tensor::{DenseHostTensor, StringHostTensor, TensorShape};
use rtx_kernel::{DType, ExecutionContext, KernelError, KernelFrame, KernelRegistry, ProgramFunction};

use crate::attrs::{OpAttr, OpAttrs};
use crate::composite::composite_op;
use crate::cpu::CpuOpHandler;
use crate::handle::TensorHandle;
use crate::handler::{CoreRuntimeOp, ErrorSink, NullOpHandler, OpHandler, OpHandlers, OpInvocation};
use crate::logging::LoggingOpHandler;
use crate::metadata::TensorMetadata;
use crate::predicate::truth;
use crate::print::handle_text;

/// `!corert.opattrs`: attributes the `corert.op_attrs_set.*` kernels add to in place, ordered by
/// the chains they take and return.
#[derive(Default)]
pub struct OpAttrsBuilder(Mutex<OpAttrs>);

impl OpAttrsBuilder {
    fn set(&self, key: &str, value: OpAttr) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).set(key, value);
    }

    fn snapshot(&self) -> OpAttrs {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// `!corert.opattrs_ref`: attributes frozen, in name order.
pub struct FrozenOpAttrs(pub Arc<OpAttrs>);

/// Registers every Core Runtime kernel.
pub fn register_kernels(registry: &mut KernelRegistry) {
    register_handler_kernels(registry);
    registry.add_kernel("corert.executeop", |f| execute_op(f, 0));
    registry.add_kernel("corert.executeop.seq", |f| execute_op(f, 1));
    registry.add_kernel("corert.make_composite_op", |f| {
        let op = composite_op(f.function(0)?)?;
        f.emplace_result(0, op)
    });
    registry.add_kernel("corert.execute_crt_op", |f| {
        let op = f.get::<CoreRuntimeOp>(0)?.clone();
        let attrs = bef_attrs(f, 0, 1)?;
        invoke(f, &op, &attrs, 0)
    });
    register_tensor_kernels(registry);
    registry.add_kernel("corert.cond", cond);
    registry.add_kernel("corert.while", tensor_while);
    register_attrs_kernels(registry);
    registry.add_kernel("tfrt_test.error_tensorhandle", |_| Err("invalid tensorhandle".into()));
}

fn register_handler_kernels(registry: &mut KernelRegistry) {
    registry.add_kernel("corert.create_null_op_handler", |f| {
        f.emplace_result::<Arc<dyn OpHandler>>(0, Arc::new(NullOpHandler))
    });
    registry.add_kernel("corert.create_cpu_op_handler", |f| {
        let fallback = Arc::clone(f.get::<Arc<dyn OpHandler>>(0)?);
        f.emplace_result::<Arc<dyn OpHandler>>(0, Arc::new(CpuOpHandler::new(fallback)))
    });
    // `sync_log_results`: any nonzero value (TFRT reads the attribute's first byte).
    registry.add_kernel("corert.create_logging_op_handler", |f| {
        let fallback = Arc::clone(f.get::<Arc<dyn OpHandler>>(0)?);
        let log_results = match f.find_attribute("sync_log_results")? {
            Some(flag) => flag.scalar::<bool>()?,
            None => false,
        };
        f.emplace_result::<Arc<dyn OpHandler>>(0, Arc::new(LoggingOpHandler::new(fallback, log_results)))
    });
    registry.add_kernel("corert.register_op_handler", |f| {
        let handler = Arc::clone(f.get::<Arc<dyn OpHandler>>(0)?);
        let name = f.string_attribute(0)?;
        OpHandlers::of(f.host()).register(name, handler);
        f.emplace_result(0, Chain)
    });
    registry.add_kernel("corert.get_op_handler", |f| {
        let handler = OpHandlers::of(f.host()).get(f.string_attribute(0)?)?;
        f.emplace_result(0, handler)
    });
}

/// The `op_attrs` and `op_func_attrs` attributes (at positions `attrs` and `functions`).
fn bef_attrs(f: &KernelFrame<'_>, attrs: usize, functions: usize) -> Result<Arc<OpAttrs>, KernelError> {
    let mut decoded = OpAttrs::new();
    decoded.add_bef_pairs(f.attribute(attrs)?.aggregate()?, false)?;
    decoded.add_bef_pairs(f.attribute(functions)?.aggregate()?, true)?;
    Ok(Arc::new(decoded))
}

/// `corert.executeop(%handler) "op"(%args)` and `.seq(%handler, %chain)` (`chains` = 1).
fn execute_op(f: &mut KernelFrame<'_>, chains: usize) -> Result<(), KernelError> {
    let handler = Arc::clone(f.get::<Arc<dyn OpHandler>>(0)?);
    // Attributes come in name order: op_attrs, op_func_attrs, op_name.
    let op = handler.make_op(f.string_attribute(2)?)?;
    let attrs = bef_attrs(f, 0, 1)?;
    invoke(f, &op, &attrs, chains)
}

/// Runs `op` on the frame's tensor handles (after the op and `chains` chains) and sets the
/// results: the chain, then each handle once its tensor is there (its error if it failed).
fn invoke(f: &mut KernelFrame<'_>, op: &CoreRuntimeOp, attrs: &Arc<OpAttrs>, chains: usize) -> Result<(), KernelError> {
    let arguments = f.arguments()[1 + chains..]
        .iter()
        .map(|a| a.try_get::<TensorHandle>().cloned())
        .collect::<Result<Vec<_>, _>>()?;
    let chain = (chains == 1).then(|| f.arguments()[1].clone());
    let errors = error_sink(f);
    let invocation = OpInvocation {
        context: f.context(),
        arguments: &arguments,
        attrs,
        num_results: f.num_results() - chains,
        chain,
        errors: &errors,
    };
    let outcome = op.invoke(&invocation);
    if chains == 1 {
        f.set_result(0, outcome.chain.unwrap_or_else(|| Chain::ready().into_untyped()))?;
    }
    for (i, handle) in outcome.results.into_iter().enumerate() {
        let slot = f.allocate_result::<TensorHandle>(chains + i)?;
        settle_when_ready(handle, slot);
    }
    Ok(())
}

/// Sets `slot` to `handle` once its tensor is there, or to the tensor's error.
fn settle_when_ready(handle: TensorHandle, slot: AsyncValueRef<TensorHandle>) {
    let tensor = handle.tensor().clone();
    tensor.clone().and_then(move || {
        let _ = match tensor.get_error() {
            Some(error) => slot.as_untyped().set_error(error.clone()),
            None => slot.emplace(handle),
        };
    });
}

fn register_tensor_kernels(registry: &mut KernelRegistry) {
    registry.add_kernel("corert.const_dense_tensor", |f| {
        let dense = f.attribute(0)?.dense()?;
        let tensor = DenseHostTensor::from_bytes(f.host(), dense.dtype, TensorShape::new(dense.shape)?, dense.data)?;
        f.emplace_result(0, TensorHandle::from_tensor(AsyncValueRef::available(tensor).into_untyped()))
    });
    // `shape`, then `value`: the strings, or one string for every element.
    registry.add_kernel("corert.const_string_tensor", |f| {
        let shape = TensorShape::new(f.attribute(0)?.array::<i64>()?.to_vec())?;
        let values = f.attribute(1)?.aggregate()?;
        let strings = (0..values.len())
            .map(|i| Ok(values.get(i)?.string()?.to_owned()))
            .collect::<Result<Vec<_>, KernelError>>()?;
        let count = shape.num_elements().and_then(|n| usize::try_from(n).ok()).unwrap_or(usize::MAX);
        let strings = match strings.as_slice() {
            [one] if count != 1 => {
                let mut splat = Vec::new();
                splat
                    .try_reserve_exact(count)
                    .map_err(|_| format!("a string tensor of shape {shape} does not fit in memory"))?;
                splat.resize(count, one.clone());
                splat
            }
            _ => strings,
        };
        if strings.len() != count {
            return Err(format!("{} strings for a tensor of shape {shape}", strings.len()).into());
        }
        let tensor = StringHostTensor::new(shape, strings)?;
        f.emplace_result(0, TensorHandle::from_tensor(AsyncValueRef::available(tensor).into_untyped()))
    });
    for (suffix, dtype) in [
        ("ui8", DType::UI8),
        ("ui16", DType::UI16),
        ("ui32", DType::UI32),
        ("ui64", DType::UI64),
        ("i1", DType::I1),
        ("i8", DType::I8),
        ("i16", DType::I16),
        ("i32", DType::I32),
        ("i64", DType::I64),
        ("f16", DType::F16),
        ("bf16", DType::BF16),
        ("f32", DType::F32),
        ("f64", DType::F64),
    ] {
        // `shape`, then `value`: exactly one element per position of the shape.
        registry.add_kernel(&format!("corert.create_dense_tensor.{suffix}"), move |f| {
            let shape = TensorShape::new(f.attribute(0)?.array::<i64>()?.to_vec())?;
            let data = f.attribute(1)?.raw_array(dtype)?;
            let tensor = DenseHostTensor::from_bytes(f.host(), dtype, shape, data)?;
            f.emplace_result(0, TensorHandle::from_tensor(AsyncValueRef::available(tensor).into_untyped()))
        });
    }
    registry.add_kernel("corert.ht_to_tensorhandle", |f| {
        let tensor = f.argument(0)?.clone();
        f.emplace_result(0, TensorHandle::from_tensor(tensor))
    });
    registry.add_kernel("corert.tensorhandle_to_ht", |f| {
        let tensor = f.get::<TensorHandle>(0)?.tensor().clone();
        f.set_result(0, tensor)
    });
    registry.add_kernel("corert.tensorhandle_to_shape", |f| {
        let metadata = f.get::<TensorHandle>(0)?.async_metadata();
        let slot = f.allocate_result::<TensorShape>(0)?;
        metadata.as_untyped().clone().and_then(move || {
            let _ = match metadata.as_untyped().get_error() {
                Some(error) => slot.as_untyped().set_error(error.clone()),
                None => slot.emplace(metadata.get().shape.clone()),
            };
        });
        Ok(())
    });
    registry.add_kernel("corert.print_tensorhandle", |f| {
        let text = handle_text(f.get::<TensorHandle>(0)?);
        f.context().print(&format!("{text}\n"));
        f.emplace_result(0, Chain)
    });
    // The one `i32` of a tensor (a branch index for `tfrt.case`).
    registry.add_kernel("corert.tensorhandle_to_int32", |f| {
        let tensor = f.get::<TensorHandle>(0)?.tensor().clone();
        let slot = f.allocate_result::<i32>(0)?;
        let reporter = f.error_reporter();
        tensor.clone().and_then(move || {
            let _ = match tensor.get_error().cloned().map_or_else(|| index(&tensor), Err) {
                Ok(value) => slot.emplace(value),
                Err(error) if tensor.is_error() => slot.as_untyped().set_error(error),
                Err(error) => slot.as_untyped().set_error(reporter.report_diagnostic(error)),
            };
        });
        Ok(())
    });
}

fn index(tensor: &RcAsyncValue) -> Result<i32, Diagnostic> {
    let invalid = |message: &str| Diagnostic::new(StatusCode::InvalidArgument, message);
    let metadata = TensorMetadata::of_tensor(tensor).ok_or_else(|| invalid("not a host tensor"))?;
    if metadata.dtype != DType::I32 {
        return Err(invalid("Expecting a DenseHostTensor of int32 as branch index."));
    }
    if metadata.shape.num_elements() != Some(1) {
        return Err(invalid("The tensor should have only one element, which is the index."));
    }
    let value = crate::predicate::first_element(tensor).ok_or_else(|| invalid("not a host tensor"))?;
    Ok(i32::from_le_bytes(value[..4].try_into().expect("an i32 element")))
}

fn forward_all(results: &[IndirectAsyncValue], values: Vec<RcAsyncValue>) {
    for (result, value) in results.iter().zip(values) {
        let _ = result.forward_to(value);
    }
}

/// Calls `then` with the truth of the handle in `value` once its tensor is there; an error
/// value, handle or tensor gives `Err` without a report, a tensor with no truth a reported one.
fn when_true(value: RcAsyncValue, errors: ErrorSink, then: impl FnOnce(Result<bool, Diagnostic>) + Send + 'static) {
    let waited = value.clone();
    waited.and_then(move || {
        if let Some(error) = value.get_error() {
            return then(Err(error.clone()));
        }
        let handle = match value.try_get::<TensorHandle>() {
            Ok(handle) => handle.clone(),
            Err(_) => {
                let error = Diagnostic::new(
                    StatusCode::InvalidArgument,
                    format!("a condition must be a tensor handle, not a {}", value.type_name()),
                );
                errors(&error);
                return then(Err(error));
            }
        };
        let tensor = handle.tensor().clone();
        tensor.clone().and_then(move || match tensor.get_error() {
            Some(error) => then(Err(error.clone())),
            None => then(truth(&tensor).inspect_err(|error| errors(error))),
        });
    });
}

fn error_sink(f: &KernelFrame<'_>) -> ErrorSink {
    let reporter = f.error_reporter();
    Arc::new(move |error: &Diagnostic| drop(reporter.report_diagnostic(error.clone())))
}

/// `corert.cond %c @true @false(%chain, %args)`: one of the functions on the chain and the
/// arguments, as the first element of `%c` says.
fn cond(f: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let (when_true_fn, when_false_fn) = (f.function(0)?, f.function(1)?);
    let condition = f.argument(0)?.clone();
    let arguments = f.arguments()[1..].to_vec();
    let results = f.allocate_indirect_results()?;
    let context = f.context().clone();
    when_true(condition, error_sink(f), move |truth| match truth {
        Ok(chosen) => {
            let function = if chosen { when_true_fn } else { when_false_fn };
            forward_all(&results, function.execute(&context, &arguments));
        }
        Err(error) => fail_after(&arguments, results, error),
    });
    Ok(())
}

/// Once `arguments` settle, every result is `error`.
fn fail_after(arguments: &[RcAsyncValue], results: Vec<IndirectAsyncValue>, error: Diagnostic) {
    let waited = arguments.to_vec();
    join::run_when_ready(&waited, move || {
        for result in &results {
            let _ = result.set_error(error.clone());
        }
    });
}

/// A `corert.while` in progress: `args = body(args)` while `cond(args)` gives a true tensor.
struct TensorLoop {
    context: ExecutionContext,
    condition: ProgramFunction,
    body: ProgramFunction,
    results: Vec<IndirectAsyncValue>,
    errors: ErrorSink,
}

impl TensorLoop {
    fn iterate(self, arguments: Vec<RcAsyncValue>) {
        let tested = self.condition.execute(&self.context, &arguments);
        let Some(chain) = tested.first().cloned() else {
            let error = Diagnostic::new(StatusCode::InvalidArgument, "corert.while's condition returns nothing");
            (self.errors)(&error);
            return fail_after(&arguments, self.results, error);
        };
        let handle = tested.get(1).cloned().unwrap_or_else(|| {
            RcAsyncValue::error(Diagnostic::new(
                StatusCode::InvalidArgument,
                "corert.while's condition returns no tensor",
            ))
        });
        let errors = Arc::clone(&self.errors);
        chain.clone().and_then(move || {
            if let Some(error) = chain.get_error() {
                return fail_after(&arguments, self.results, error.clone());
            }
            when_true(handle, errors, move |truth| match truth {
                Ok(false) => forward_all(&self.results, arguments),
                Ok(true) => {
                    let next = self.body.execute(&self.context, &arguments);
                    let host = Arc::clone(self.context.host());
                    host.work_queue().add_task(Box::new(move || self.iterate(next)));
                }
                Err(error) => fail_after(&arguments, self.results, error),
            });
        });
    }
}

/// `corert.while @cond @body(%chain, %args)`.
fn tensor_while(f: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let (condition, body) = (f.function(0)?, f.function(1)?);
    if body.num_arguments() != f.num_arguments() || body.num_results() != f.num_results() {
        return Err(format!(
            "corert.while's body takes {} values and returns {}, but the loop carries {}",
            body.num_arguments(),
            body.num_results(),
            f.num_arguments()
        )
        .into());
    }
    let arguments = f.arguments().to_vec();
    let results = f.allocate_indirect_results()?;
    let looping = TensorLoop { context: f.context().clone(), condition, body, results, errors: error_sink(f) };
    looping.iterate(arguments);
    Ok(())
}

/// The `value` attribute of a `corert.op_attrs_set.*` kernel, read as `kind`.
fn set_attr(f: &mut KernelFrame<'_>, kind: AttributeType) -> Result<(), KernelError> {
    let key = f.string_attribute(0)?;
    let value = OpAttr::from_bef(kind, f.attribute(1)?)?;
    f.get::<OpAttrsBuilder>(0)?.set(key, value);
    f.emplace_result(0, Chain)
}

fn register_attrs_kernels(registry: &mut KernelRegistry) {
    registry.add_kernel("corert.create_op_attrs", |f| f.emplace_result(0, OpAttrsBuilder::default()));
    for (name, kind) in [
        ("bool", AttributeType::Scalar(DType::I1)),
        ("i32", AttributeType::Scalar(DType::I32)),
        ("f32", AttributeType::Scalar(DType::F32)),
        ("str", AttributeType::Scalar(DType::String)),
        ("dtype", AttributeType::Type),
        ("dense", AttributeType::Dense),
        ("aggregate", AttributeType::Aggregate),
        ("shape", AttributeType::Shape),
    ] {
        registry.add_kernel(&format!("corert.op_attrs_set.{name}"), move |f| set_attr(f, kind));
    }
    for (name, dtype) in [("i32", DType::I32), ("i64", DType::I64), ("f32", DType::F32)] {
        registry.add_kernel(&format!("corert.op_attrs_set_array.{name}"), move |f| {
            set_attr(f, AttributeType::Array(dtype))
        });
    }
    registry.add_kernel("tfrt_test.corert.op_attrs_print", |f| {
        let text = f.get::<OpAttrsBuilder>(0)?.snapshot().to_string();
        f.context().print(&text);
        f.emplace_result(0, Chain)
    });
    registry.add_kernel("tfrt_test.corert.op_attrs_freeze", |f| {
        let frozen = FrozenOpAttrs(Arc::new(f.get::<OpAttrsBuilder>(0)?.snapshot().sorted()));
        f.emplace_result(0, frozen)?;
        f.emplace_result(1, Chain)
    });
    registry.add_kernel("tfrt_test.corert.op_attrs_ref_print", |f| {
        let text = f.get::<FrozenOpAttrs>(0)?.0.to_string();
        f.context().print(&text);
        f.emplace_result(0, Chain)
    });
}
