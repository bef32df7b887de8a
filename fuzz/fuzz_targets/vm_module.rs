//! Arbitrary bytes through the whole `.vmfb` path a host runs: load (container, FlatBuffer,
//! module def, verifier, lowering), link into a context (`__init` runs), then invoke every export
//! with plausible arguments. Every stage must answer with an error, never a panic, abort, hang or
//! unbounded allocation; the budget turns hostile loops and recursion into DEADLINE_EXCEEDED.
//! `tests/vm_hostile.rs` runs the checked-in reproducers through the same steps.

#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use rtx::vm::abi::{CallingConvention, CconvItem, ValueKind};
use rtx::vm::context::Context;
use rtx::vm::value::Value;
use rtx::vm::Module;

/// Branches plus calls one invocation may spend: enough for every fixture's real work, small
/// enough that a loop of the slowest ops still ends well inside libFuzzer's timeout.
const BUDGET: u64 = 10_000;

fuzz_target!(|data: &[u8]| {
    let Ok(module) = Module::load_memory(data) else { return };
    let exports: Vec<String> = module.exported_functions().iter().map(|e| e.local_name.clone()).collect();
    let context = Context::new();
    context.set_budget(BUDGET);
    if context.add_module(Arc::new(module)).is_err() {
        return;
    }
    for name in exports {
        let Ok(handle) = context.lookup(&name) else { continue };
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
        let _ = context.invoke(&handle, arguments);
    }
});
