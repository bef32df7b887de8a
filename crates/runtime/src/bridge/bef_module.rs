//! [`BefNativeModule`]: a context's BEF module seen by VM modules as a native module of the same
//! name, so that a program compiled by IREE imports a kernel graph as it imports any host
//! function: `func.func private @graph.double(tensor<4xf32>) -> tensor<4xf32>` declares the
//! import `graph.double` with calling convention `0r_r`.
//!
//! Each async BEF function whose argument and result types all have a VM kind is exported:
//! `i32`, `i64`, `f32`, `f64` as themselves, dense host tensors (`!tfrt_tensor.tensor`,
//! `!t.tensor`) as buffer views. A view comes in as a tensor over its own bytes (a copy only where
//! the host cannot use them in place); a tensor goes back as a view of its own bytes
//! ([`tensors`](super::tensors)). The graph runs as
//! [`Context::invoke`](crate::Context::invoke) runs a BEF function, on the work queue;
//! the calling program suspends without holding a worker until the graph's results are ready,
//! and a graph error fails the program's call with the graph's message.

use std::sync::{Arc, Weak};

use super::tensors::{tensor_to_view, view_to_tensor, TENSOR_TYPES};
use crate::bef_call;
use crate::context::BefFunction;
use crate::invocation::{self, held_type};
use rtx_bef::format::FunctionKind;
use rtx_bef::reader::BefFile;
use rtx_hal::buffer_view::{self, BufferView};
use rtx_host::{join, AsyncValueRef, Diagnostic, HostContext, RcAsyncValue, StatusCode};
use rtx_kernel::tensor::DenseHostTensor;
use rtx_vm::abi::ValueKind;
use rtx_vm::native::{Arg, Arguments, NativeFunction, NativeModule, NativeOutcome, NativeState};
use rtx_vm::value::Value;

/// The exported functions of one BEF module.
pub(crate) struct BefNativeModule {
    name: String,
    functions: Vec<NativeFunction>,
    exported: Vec<Exported>,
    /// Weak: the context holds this module.
    host: Weak<HostContext>,
}

struct Exported {
    function: BefFunction,
    /// The VM checks the arguments against the calling convention; the results are ours to.
    results: Vec<ValueKind>,
}

impl BefNativeModule {
    /// The module `name` over `file`'s async functions that have VM kinds; `host` runs them.
    pub(crate) fn new(name: &str, file: &Arc<BefFile>, host: &Arc<HostContext>) -> BefNativeModule {
        let (functions, exported) = file
            .functions()
            .into_iter()
            .filter(|f| file.function_info(f.index()).is_some_and(|info| info.kind == FunctionKind::Async))
            .filter(|f| !f.name().is_empty())
            .filter_map(|function| {
                let arguments = kinds(&function.argument_types())?;
                let results = kinds(&function.result_types())?;
                let native = NativeFunction::new(function.name(), cconv(&arguments, &results));
                let function = BefFunction { name: format!("{name}.{}", function.name()), function };
                Some((native, Exported { function, results }))
            })
            .unzip();
        BefNativeModule { name: name.to_owned(), functions, exported, host: Arc::downgrade(host) }
    }
}

/// The VM kinds of BEF types, or `None` when one has none (a chain, a string tensor).
fn kinds(types: &[&str]) -> Option<Vec<ValueKind>> {
    types
        .iter()
        .map(|&name| match name {
            "i32" => Some(ValueKind::I32),
            "i64" => Some(ValueKind::I64),
            "f32" => Some(ValueKind::F32),
            "f64" => Some(ValueKind::F64),
            _ if TENSOR_TYPES.contains(&name) => Some(ValueKind::Ref),
            _ => None,
        })
        .collect()
}

/// `0ri_r`: IREE's calling convention string for these kinds.
fn cconv(arguments: &[ValueKind], results: &[ValueKind]) -> String {
    let letters = |kinds: &[ValueKind]| -> String {
        if kinds.is_empty() {
            return "v".to_owned();
        }
        kinds
            .iter()
            .map(|kind| match kind {
                ValueKind::I32 => 'i',
                ValueKind::I64 => 'I',
                ValueKind::F32 => 'f',
                ValueKind::F64 => 'F',
                ValueKind::Ref => 'r',
            })
            .collect()
    };
    format!("0{}_{}", letters(arguments), letters(results))
}

impl NativeModule for BefNativeModule {
    fn name(&self) -> &str {
        &self.name
    }

    fn functions(&self) -> &[NativeFunction] {
        &self.functions
    }

    fn call(
        &self,
        _: &mut NativeState,
        ordinal: usize,
        arguments: Arguments<'_>,
        _: &mut Vec<Value>,
    ) -> Result<NativeOutcome, Diagnostic> {
        let exported = &self.exported[ordinal];
        let name = &exported.function.name;
        let host = self
            .host
            .upgrade()
            .ok_or_else(|| Diagnostic::new(StatusCode::Cancelled, format!("the context of `{name}` was released")))?;
        let inputs = arguments
            .iter()
            .enumerate()
            .map(|(index, value)| {
                input(&host, value).map_err(|e| e.context(format_args!("argument {index} of `{name}`")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let ran = invocation::done_value();
        let outputs = bef_call::start(&host, &exported.function, &inputs, Some(ran.clone()))?;
        let promise = AsyncValueRef::<Vec<Value>>::unconstructed();
        let (done, kinds, name) = (promise.clone(), exported.results.clone(), name.clone());
        let mut waited = outputs.clone();
        waited.push(ran.clone());
        join::run_when_ready(&waited, move || {
            // A graph that could not run fails the call even when it returns nothing.
            let failed =
                ran.get_error().map(|error| Err(error.clone().context(format_args!("`{name}` (a BEF function)"))));
            let results = outputs.iter().zip(kinds).enumerate().map(|(index, (value, kind))| {
                output(value, kind).map_err(|e| e.context(format_args!("result {index} of `{name}` (a BEF function)")))
            });
            let _ = match failed.unwrap_or_else(|| results.collect::<Result<Vec<_>, _>>()) {
                Ok(values) => done.emplace(values),
                Err(error) => done.set_error(error),
            };
        });
        Ok(NativeOutcome::Pending(promise))
    }
}

/// A VM argument as the graph takes it: a scalar as a value holding it, a buffer view as a tensor
/// of its elements.
fn input(host: &HostContext, value: Arg<'_>) -> Result<RcAsyncValue, Diagnostic> {
    Ok(match value {
        Arg::I32(v) => AsyncValueRef::available(v).into_untyped(),
        Arg::I64(v) => AsyncValueRef::available(v).into_untyped(),
        Arg::F32(v) => AsyncValueRef::available(v).into_untyped(),
        Arg::F64(v) => AsyncValueRef::available(v).into_untyped(),
        Arg::Ref(Some(r)) => AsyncValueRef::available(view_to_tensor(host, buffer_view::deref(r)?)?).into_untyped(),
        other => {
            return Err(Diagnostic::new(
                StatusCode::InvalidArgument,
                format!("a BEF function takes no {}", other.type_name()),
            ))
        }
    })
}

/// A graph result as the program takes it: an error as itself, a tensor as a view of its bytes.
fn output(value: &RcAsyncValue, kind: ValueKind) -> Result<Value, Diagnostic> {
    if let Some(error) = value.get_error() {
        return Err(error.clone());
    }
    let read = match kind {
        ValueKind::I32 => value.try_get::<i32>().ok().map(|v| Value::I32(*v)),
        ValueKind::I64 => value.try_get::<i64>().ok().map(|v| Value::I64(*v)),
        ValueKind::F32 => value.try_get::<f32>().ok().map(|v| Value::F32(*v)),
        ValueKind::F64 => value.try_get::<f64>().ok().map(|v| Value::F64(*v)),
        ValueKind::Ref => match value.try_get::<DenseHostTensor>() {
            Ok(tensor) => Some(Value::Ref(Some(BufferView::shared_to_ref(tensor_to_view(tensor)?)))),
            Err(_) => None,
        },
    };
    read.ok_or_else(|| {
        Diagnostic::new(
            StatusCode::Internal,
            format!("expected {} but the graph returned {}", kind.name(), held_type(value)),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calling_conventions_spell_the_kinds_as_iree_does() {
        assert_eq!(cconv(&[ValueKind::Ref, ValueKind::I32], &[ValueKind::Ref]), "0ri_r");
        assert_eq!(cconv(&[], &[ValueKind::F64, ValueKind::I64]), "0v_FI");
        assert_eq!(kinds(&["!t.tensor", "f32"]), Some(vec![ValueKind::Ref, ValueKind::F32]));
        assert_eq!(kinds(&["!tfrt.chain"]), None);
    }
}
