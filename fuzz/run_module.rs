//! The steps the `vm_module` fuzz target takes on untrusted bytes, shared with
//! `crates/vm/tests/all/vm_hostile.rs` (through `#[path]`) so the regression tests run exactly what
//! the fuzzer ran: load (container, FlatBuffer, module def, verifier, lowering), link into a context with a
//! small budget (`__init` runs), then invoke every export with plausible arguments.

use std::sync::Arc;

use rtx_vm::abi::{CallingConvention, CconvItem, ValueKind};
use rtx_vm::context::VmContext;
use rtx_vm::value::Value;
use rtx_vm::Module;

/// Branches plus calls one invocation may spend: enough for every fixture's real work, small
/// enough that a loop of the slowest ops still ends well inside libFuzzer's timeout.
pub const BUDGET: u64 = 10_000;

/// How far one module got.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// `Some(offset)` when loading failed, with the offset the error names.
    pub load_error_offset: Option<usize>,
    pub loaded: bool,
    pub linked: bool,
    pub invoked: usize,
}

/// Runs `bytes` through every stage; `on_error(stage, message)` sees each error on the way.
pub fn run_module(bytes: &[u8], mut on_error: impl FnMut(&str, &str)) -> Outcome {
    let mut outcome = Outcome::default();
    let module = match Module::load_memory(bytes) {
        Ok(module) => module,
        Err(error) => {
            on_error("load", &error.message);
            outcome.load_error_offset = Some(error.offset);
            return outcome;
        }
    };
    outcome.loaded = true;
    let exports: Vec<String> = module.exported_functions().iter().map(|e| e.local_name.clone()).collect();
    let context = VmContext::new();
    context.set_budget(BUDGET);
    if let Err(error) = context.add_module(Arc::new(module)) {
        on_error("link", &error.message);
        return outcome;
    }
    outcome.linked = true;
    for name in exports {
        let handle = match context.lookup(&name) {
            Ok(handle) => handle,
            Err(error) => {
                on_error("lookup", &error.message);
                continue;
            }
        };
        let Ok(cconv) = CallingConvention::parse(&handle.cconv) else { continue };
        if cconv.has_spans() {
            continue;
        }
        let arguments = cconv
            .arguments
            .iter()
            .map(|item| match item {
                CconvItem::Value(ValueKind::I32) => Value::I32(7),
                CconvItem::Value(ValueKind::I64) => Value::I64(-3),
                CconvItem::Value(ValueKind::F32) => Value::F32(1.5),
                CconvItem::Value(ValueKind::F64) => Value::F64(1.5),
                CconvItem::Value(ValueKind::Ref) | CconvItem::Span(_) => Value::Ref(None),
            })
            .collect();
        if let Err(error) = context.invoke(&handle, arguments) {
            on_error(&name, &error.message);
        }
        outcome.invoked += 1;
    }
    outcome
}
