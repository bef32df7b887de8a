//! Every kernel of a context as an op: the kernel op handler runs the composite ops a host made
//! of BEF functions, and any kernel (`nn.*`, `onnx.*`, the tensor kernels, those a host
//! registered) on tensor handles as a one-op BEF function, written once per op name, attributes
//! and arity and kept, so an eager op and the same op in a graph run one implementation and give
//! one result.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use rtx_bef::reader::BefFile;
use rtx_bef::{mlir_text_to_bef, WriteOptions};
use rtx_corert::{CoreRuntimeOp, OpAttrs, OpHandler, OpOutcome, ScalarHostTensor, TensorHandle};
use rtx_host::{join, AsyncValueRef, Diagnostic, IndirectAsyncValue, RcAsyncValue, StatusCode};
use rtx_kernel::{KernelRegistry, ProgramFunction};

/// The type one-op functions give their tensors (BEF records it; kernels do not read it).
const TENSOR: &str = "!t.tensor";

/// How many one-op functions (distinct op, attributes and arity) a context keeps.
const MAX_KEPT_FUNCTIONS: usize = 1024;

/// Composite ops by name, shared by a context and its kernel op handler.
pub(crate) type Composites = Arc<RwLock<HashMap<String, CoreRuntimeOp>>>;

pub(crate) struct KernelOpHandler {
    kernels: Arc<RwLock<KernelRegistry>>,
    composites: Composites,
    fallback: Arc<dyn OpHandler>,
    /// One-op functions by their source text.
    functions: Arc<Mutex<HashMap<String, ProgramFunction>>>,
}

impl KernelOpHandler {
    pub(crate) fn new(
        kernels: Arc<RwLock<KernelRegistry>>,
        composites: Composites,
        fallback: Arc<dyn OpHandler>,
    ) -> KernelOpHandler {
        KernelOpHandler { kernels, composites, fallback, functions: Arc::default() }
    }
}

impl OpHandler for KernelOpHandler {
    fn name(&self) -> &str {
        "kernels"
    }

    fn make_op(&self, op: &str) -> Result<CoreRuntimeOp, Diagnostic> {
        if let Some(composite) = self.composites.read().unwrap_or_else(PoisonError::into_inner).get(op) {
            return Ok(composite.clone());
        }
        if self.kernels.read().unwrap_or_else(PoisonError::into_inner).kernel(op).is_none() {
            return self.fallback.make_op(op);
        }
        let (kernels, functions, name) = (Arc::clone(&self.kernels), Arc::clone(&self.functions), op.to_owned());
        // The function of the op's last run: a run like the last (the common case) neither writes
        // the source nor looks it up.
        let last: Mutex<Option<LastRun>> = Mutex::default();
        Ok(CoreRuntimeOp::new(op, "kernels", move |invocation| {
            let (count, arity, attrs) = (invocation.num_results, invocation.arguments.len(), invocation.attrs);
            let kept = last
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .as_ref()
                .filter(|run| run.matches(arity, count, attrs))
                .map(|run| run.function.clone());
            let function = match kept {
                Some(function) => Ok(function),
                None => one_op_function(&kernels, &functions, &name, arity, count, attrs).inspect(|function| {
                    let run = LastRun { arity, results: count, attrs: Arc::clone(attrs), function: function.clone() };
                    *last.lock().unwrap_or_else(PoisonError::into_inner) = Some(run);
                }),
            };
            let function = match function {
                Ok(function) => function,
                Err(error) => {
                    (invocation.errors)(&error);
                    return OpOutcome {
                        results: vec![TensorHandle::error(error); count],
                        chain: invocation.chain.clone(),
                    };
                }
            };
            let results: Vec<IndirectAsyncValue> = (0..count).map(|_| IndirectAsyncValue::new()).collect();
            let handles = results.iter().map(|r| TensorHandle::from_tensor(r.value())).collect();
            let tensors: Vec<RcAsyncValue> = invocation.arguments.iter().map(|a| a.tensor().clone()).collect();
            let (context, errors) = (invocation.context.clone(), Arc::clone(invocation.errors));
            join::run_when_ready(&tensors.clone(), move || {
                let host = context.host();
                let dense: Result<Vec<RcAsyncValue>, Diagnostic> = tensors
                    .iter()
                    .map(|t| match t.try_get::<ScalarHostTensor>() {
                        Ok(scalar) => Ok(AsyncValueRef::available(scalar.to_dense(host)?).into_untyped()),
                        Err(_) => Ok(t.clone()),
                    })
                    .collect();
                let values = match dense {
                    Ok(dense) => function.execute(&context, &dense),
                    Err(error) => {
                        errors(&error);
                        vec![RcAsyncValue::error(error); results.len()]
                    }
                };
                for (result, value) in results.into_iter().zip(values) {
                    forward_result(result, value);
                }
            });
            OpOutcome { results: handles, chain: invocation.chain.clone() }
        }))
    }
}

/// A kernel op's one-op function and the run it was made for.
struct LastRun {
    arity: usize,
    results: usize,
    attrs: Arc<OpAttrs>,
    function: ProgramFunction,
}

impl LastRun {
    /// Whether a run of `arity` arguments and `results` results with `attrs` takes this function.
    fn matches(&self, arity: usize, results: usize, attrs: &Arc<OpAttrs>) -> bool {
        (self.arity, self.results) == (arity, results) && (Arc::ptr_eq(&self.attrs, attrs) || *self.attrs == **attrs)
    }
}

/// Makes `result` what `value` becomes. An error loses its location: that of the one-op function,
/// a place no caller wrote (the error names the op already).
fn forward_result(result: IndirectAsyncValue, value: RcAsyncValue) {
    let source = value.clone();
    let forward = move || {
        let _ = match source.get_error() {
            Some(error) => result.set_error(Diagnostic { location: None, ..error.clone() }),
            None => result.forward_to(source),
        };
    };
    if value.is_available() {
        forward();
    } else {
        value.and_then(forward);
    }
}

/// The function `@op` that runs kernel `name` on `arguments` tensors with `attrs`, giving
/// `results` tensors: made on first use, then kept.
fn one_op_function(
    kernels: &RwLock<KernelRegistry>,
    functions: &Mutex<HashMap<String, ProgramFunction>>,
    name: &str,
    arguments: usize,
    results: usize,
    attrs: &OpAttrs,
) -> Result<ProgramFunction, Diagnostic> {
    let source = one_op_source(name, arguments, results, attrs)?;
    if let Some(function) = functions.lock().unwrap_or_else(PoisonError::into_inner).get(&source) {
        return Ok(function.clone());
    }
    let invalid = |what: String| Diagnostic::new(StatusCode::InvalidArgument, format!("op `{name}`: {what}"));
    let bytes = mlir_text_to_bef(&source, &WriteOptions::default()).map_err(|e| invalid(e.to_string()))?;
    let file = BefFile::from_bytes(&bytes, &kernels.read().unwrap_or_else(PoisonError::into_inner))
        .map_err(|e| invalid(e.to_string()))?;
    let function = file.function_named("op").ok_or_else(|| invalid("the one-op function is missing".to_owned()))?;
    let mut kept = functions.lock().unwrap_or_else(PoisonError::into_inner);
    if kept.len() >= MAX_KEPT_FUNCTIONS {
        // Attributes that change on every call would grow the cache without end: start again.
        kept.clear();
    }
    kept.insert(source, function.clone());
    Ok(function)
}

/// `func.func @op(%a0: T, ...) -> (T, ...) { %r = "name"(%a0, ...) {attrs} ...; tfrt.return }`.
fn one_op_source(name: &str, arguments: usize, results: usize, attrs: &OpAttrs) -> Result<String, Diagnostic> {
    let attributes = attrs
        .iter()
        .map(|(key, value)| {
            let text = value.mlir_text().ok_or_else(|| {
                Diagnostic::new(
                    StatusCode::InvalidArgument,
                    format!("op `{name}`: attribute `{key}` is a function, which a kernel op cannot take"),
                )
            })?;
            Ok(format!("\"{}\" = {text}", key.replace('\\', "\\\\").replace('"', "\\\"")))
        })
        .collect::<Result<Vec<_>, Diagnostic>>()?;
    let list = |prefix: &str, count: usize| (0..count).map(|i| format!("%{prefix}{i}")).collect::<Vec<_>>().join(", ");
    let types = |count: usize| vec![TENSOR; count].join(", ");
    let parameters = (0..arguments).map(|i| format!("%a{i}: {TENSOR}")).collect::<Vec<_>>().join(", ");
    let defined = match results {
        0 => String::new(),
        1 => "%r0 = ".to_owned(),
        n => format!("%r:{n} = "),
    };
    let returned = match results {
        0 => String::new(),
        1 => format!(" %r0 : {TENSOR}"),
        n => format!(" {} : {}", (0..n).map(|i| format!("%r#{i}")).collect::<Vec<_>>().join(", "), types(n)),
    };
    Ok(format!(
        "func.func @op({parameters}) -> ({}) {{\n  {defined}\"{name}\"({}) {{{}}} : ({}) -> ({})\n  tfrt.return{returned}\n}}\n",
        types(results),
        list("a", arguments),
        attributes.join(", "),
        types(arguments),
        types(results),
    ))
}
