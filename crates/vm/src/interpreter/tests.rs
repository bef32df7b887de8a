//! Runs real compiled programs through the interpreter's unchecked register and op accesses.
//! These are the tests CI runs under Miri (`cargo miri test -p rtx-vm --lib interpreter::`), so the
//! inputs are small; the fixtures are embedded because Miri cannot map files.

use std::sync::Arc;

use crate::context::VmContext;
use crate::value::Value;
use crate::Module;

fn context(bytes: &[u8]) -> VmContext {
    let context = VmContext::new();
    context.add_module(Arc::new(Module::load_memory(bytes).expect("fixture loads"))).expect("links");
    context
}

fn call(context: &VmContext, name: &str, arguments: Vec<Value>) -> Vec<Value> {
    let function = context.lookup(name).expect("exported");
    context.invoke(&function, arguments).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn loops_branches_and_i64_pairs() {
    let context = context(include_bytes!("../../../../tests/fixtures/vm/control_flow.vmfb"));
    assert_eq!(call(&context, "sum_to_n", vec![Value::I32(10)]), vec![Value::I32(45)]);
    assert_eq!(call(&context, "product_i64", vec![Value::I64(5)]), vec![Value::I64(120)]);
    assert_eq!(call(&context, "collatz_steps", vec![Value::I64(6)]), vec![Value::I32(8)]);
    assert_eq!(call(&context, "sign_cf", vec![Value::I32(-4)]), vec![Value::I32(-1)]);
    assert_eq!(call(&context, "nested_loops_f32", vec![Value::I32(3)]), vec![Value::F32(2.0)]);
}

#[test]
fn internal_calls_and_recursion() {
    let context = context(include_bytes!("../../../../tests/fixtures/vm/calls.vmfb"));
    let function = context.lookup("fibonacci").expect("exported");
    assert_eq!(context.invoke(&function, vec![Value::I32(7)]).unwrap(), vec![Value::I32(13)]);
}

#[test]
fn globals_keep_state_across_calls() {
    let context = context(include_bytes!("../../../../tests/fixtures/vm/globals.vmfb"));
    assert_eq!(call(&context, "read_counter", Vec::new()), vec![Value::I32(0)]);
    assert_eq!(call(&context, "count_three_times", Vec::new()), vec![Value::I32(1), Value::I32(2), Value::I32(3)]);
    assert_eq!(call(&context, "read_counter", Vec::new()), vec![Value::I32(3)]);
    assert_eq!(call(&context, "count_three_times", Vec::new()), vec![Value::I32(4), Value::I32(5), Value::I32(6)]);
}

#[test]
fn lists_and_refs() {
    let context = context(include_bytes!("../../../../tests/fixtures/vm/lists.vmfb"));
    assert_eq!(call(&context, "squares_sum", vec![Value::I32(4)]), vec![Value::I32(14), Value::I32(4)]);
    assert_eq!(call(&context, "store_load_i64", vec![Value::I32(2), Value::I64(1 << 40)]), vec![Value::I64(1 << 40)]);
}
