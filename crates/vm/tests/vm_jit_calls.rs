//! Calls, branch tables and buffer accesses in compiled code (`crates/vm/src/jit`) held against the
//! interpreter: `calls.vmfb`, `control_flow.vmfb` and `buffers.vmfb` loaded with the loop compiler
//! on (`RTX_VM_JIT` unset, and `all`) and off (`0`), and every call compared — results, errors
//! (status, message, source location) and where a run budget runs out, which shows compiled code
//! spends it exactly as interpreted code does.
//!
//! `RTX_VM_JIT` is read when a module loads, so loads take turns (one lock) while the tests run in
//! parallel, in a process of their own: no other test's load may see the variable.

use std::sync::{Arc, Mutex};

use rtx_host::Diagnostic;
use rtx_test_support::fixture_dir;
use rtx_vm::context::VmContext;
use rtx_vm::value::Value;
use rtx_vm::Module;

static LOADING: Mutex<()> = Mutex::new(());

fn load(file: &str, mode: Option<&str>) -> Arc<Module> {
    let _turn = LOADING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    match mode {
        Some(mode) => std::env::set_var("RTX_VM_JIT", mode),
        None => std::env::remove_var("RTX_VM_JIT"),
    }
    let module = Module::load_file(fixture_dir(file)).expect("the fixture loads");
    std::env::remove_var("RTX_VM_JIT");
    Arc::new(module)
}

/// `file` loaded with the loop compiler off, on, and entered everywhere.
fn load_modes(file: &str) -> [Arc<Module>; 3] {
    [load(file, Some("0")), load(file, None), load(file, Some("all"))]
}

fn call(module: &Arc<Module>, budget: Option<u64>, name: &str, arguments: &[Value]) -> Result<Vec<Value>, Diagnostic> {
    let context = VmContext::new();
    if let Some(budget) = budget {
        context.set_budget(budget);
    }
    context.add_module(Arc::clone(module)).expect("links");
    let function = context.lookup(name).expect("exported");
    context.invoke(&function, arguments.to_vec())
}

/// The ops of exported function `name` where the loader put compiled code.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn compiled_entries(module: &Module, name: &str) -> usize {
    let export = module.lookup_export(name).expect("exported");
    let function = &module.functions()[export.internal_ordinal as usize];
    function.ops.iter().filter(|op| format!("{op:?}").starts_with("Native")).count()
}

/// Whether the loader put compiled code at the start of exported function `name`.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn entered_compiled(module: &Module, name: &str) -> bool {
    let export = module.lookup_export(name).expect("exported");
    let function = &module.functions()[export.internal_ordinal as usize];
    format!("{:?}", function.ops[0]).starts_with("Native")
}

#[test]
fn compiled_calls_match_the_interpreter() {
    let [interpreted, compiled, everywhere] = load_modes("calls.vmfb");

    // Recursion on every scalar width runs whole in machine code; a function with a division
    // (which may leave to the interpreter) does not, nor does a caller that reaches it.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        for name in ["fibonacci", "factorial", "parity_is_even", "halving_sum"] {
            assert!(entered_compiled(&compiled, name), "{name} is not compiled");
            assert!(!entered_compiled(&interpreted, name), "{name} is compiled with RTX_VM_JIT=0");
        }
        for name in ["halves", "halves_tree"] {
            assert!(!entered_compiled(&compiled, name), "{name} cannot run whole in machine code");
        }
    }

    let (i32, i64, f32, f64) = (Value::I32, Value::I64, Value::F32, Value::F64);
    let calls: Vec<(&str, Vec<Value>)> = vec![
        ("fibonacci", vec![i32(0)]),
        ("fibonacci", vec![i32(1)]),
        ("fibonacci", vec![i32(2)]),
        ("fibonacci", vec![i32(15)]),
        ("fibonacci", vec![i32(-5)]),
        ("factorial", vec![i64(20)]),
        ("factorial", vec![i64(25)]),
        ("parity_is_even", vec![i32(0)]),
        ("parity_is_even", vec![i32(9)]),
        ("parity_is_even", vec![i32(1000)]),
        ("call_mixed", vec![i32(-3), i64(8_589_934_592), f32(2.5), i64(4_294_967_301)]),
        ("halving_sum", vec![f64(3.0), i64(40)]),
        ("halving_sum", vec![f64(-1.5), i64(0)]),
        ("halves", vec![i32(100), i32(2)]),
        ("halves_tree", vec![i32(10), i32(3)]),
        // Errors: a division by zero in an interpreted callee of a compiled caller, and
        // recursion past the frame limit inside compiled code (16384 frames: the interpreter's
        // limit, counted across interpreted and compiled frames alike).
        ("halves_tree", vec![i32(3), i32(0)]),
        ("parity_is_even", vec![i32(100_000)]),
        ("fibonacci", vec![i32(100_000)]),
    ];
    for (name, arguments) in &calls {
        let expected = call(&interpreted, None, name, arguments);
        for (mode, module) in [("loops", &compiled), ("all", &everywhere)] {
            let got = call(module, None, name, arguments);
            assert_eq!(got, expected, "{name}{arguments:?} with RTX_VM_JIT={mode}");
        }
    }
    // Hand-computed values, so the comparison above is not between two wrong answers.
    let one = |name, arguments: &[Value]| call(&compiled, None, name, arguments).expect(name);
    assert_eq!(one("fibonacci", &[i32(15)]), [i32(610)]);
    assert_eq!(one("factorial", &[i64(20)]), [i64(2_432_902_008_176_640_000)]);
    assert_eq!(one("parity_is_even", &[i32(1000)]), [i32(1)]);
    assert_eq!(one("halving_sum", &[f64(3.0), i64(3)]), [f64(5.25)]);
    assert_eq!(one("call_mixed", &[i32(2), i64(1 << 40), f32(1.5), i64(5)]), [i64((1 << 40) + 7), f32(3.0), i32(5)]);
    let overflow = call(&compiled, None, "parity_is_even", &[i32(100_000)]).unwrap_err();
    assert_eq!(overflow.message, "VM stack overflow: 16384 frames deep (unbounded recursion?)");
    assert!(overflow.location.is_some(), "the error names where it arose: {overflow:?}");

    let calls = [("fibonacci", vec![i32(7)]), ("halves_tree", vec![i32(4), i32(2)])];
    same_on_every_budget([&interpreted, &compiled, &everywhere], 60, &calls);
}

/// Every budget from too small to enough: the same call fails at the same op, or succeeds, on
/// the modules loaded with the loop compiler off, on and everywhere.
fn same_on_every_budget(modules: [&Arc<Module>; 3], most: u64, calls: &[(&str, Vec<Value>)]) {
    let [interpreted, compiled, everywhere] = modules;
    for budget in 0..=most {
        for (name, arguments) in calls {
            let expected = call(interpreted, Some(budget), name, arguments);
            for (mode, module) in [("loops", compiled), ("all", everywhere)] {
                let got = call(module, Some(budget), name, arguments);
                assert_eq!(got, expected, "{name}{arguments:?} with budget {budget}, RTX_VM_JIT={mode}");
            }
        }
    }
}

#[test]
fn compiled_branch_tables_match_the_interpreter() {
    let interpreted = load("control_flow.vmfb", Some("0"));
    let everywhere = load("control_flow.vmfb", Some("all"));
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    assert!(entered_compiled(&everywhere, "switch_case"), "the br_table block is compiled");
    for x in [i32::MIN, -1, 0, 1, 2, 3, 4, i32::MAX] {
        let expected = call(&interpreted, None, "switch_case", &[Value::I32(x)]);
        assert_eq!(call(&everywhere, None, "switch_case", &[Value::I32(x)]), expected, "switch_case({x})");
    }
    // cf.switch 0 -> 100, 1 -> 200, 2 -> 300, default -> -1.
    let cases: Vec<_> = (-1..4).map(|x| call(&everywhere, None, "switch_case", &[Value::I32(x)]).unwrap()).collect();
    assert_eq!(cases, [[Value::I32(-1)], [Value::I32(100)], [Value::I32(200)], [Value::I32(300)], [Value::I32(-1)]]);
}

#[test]
fn compiled_buffer_loops_match_the_interpreter() {
    let [interpreted, compiled, everywhere] = load_modes("buffers.vmfb");
    let i32 = Value::I32;
    // (function, loops in it, arguments): every loop of every function is entered as machine
    // code, those that fail part-way included.
    let calls: Vec<(&str, usize, Vec<Value>)> = vec![
        ("fill_sum", 2, vec![i32(1000)]),
        ("byte_sums", 2, vec![i32(700)]),
        ("half_sums", 2, vec![i32(700)]),
        ("prefix_i64", 2, vec![i32(700)]),
        ("dot_f32", 2, vec![i32(700)]),
        ("harmonic_f64", 2, vec![i32(700)]),
        ("table_sum", 1, vec![i32(700)]),
        ("stride_sum", 2, vec![i32(4), i32(8)]),
        ("stride_sum", 2, vec![i32(5), i32(8)]),
        ("fill_past", 1, vec![i32(9), i32(8)]),
        ("write_constant", 1, vec![i32(3)]),
    ];
    for (name, loops, arguments) in &calls {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        {
            assert_eq!(compiled_entries(&compiled, name), *loops, "{name}: each loop compiled");
            assert_eq!(compiled_entries(&interpreted, name), 0, "{name} is compiled with RTX_VM_JIT=0");
        }
        let _ = loops;
        let expected = call(&interpreted, None, name, arguments);
        for (mode, module) in [("loops", &compiled), ("all", &everywhere)] {
            assert_eq!(call(module, None, name, arguments), expected, "{name}{arguments:?} with RTX_VM_JIT={mode}");
        }
    }
    // Hand-computed: the sum of i*i for i < 1000, and of 0 + 2 + 4 + 6.
    assert_eq!(call(&compiled, None, "fill_sum", &[i32(1000)]).unwrap(), [i32(332_833_500)]);
    assert_eq!(call(&compiled, None, "stride_sum", &[i32(4), i32(8)]).unwrap(), [i32(12)]);
    let past = call(&compiled, None, "fill_past", &[i32(9), i32(8)]).unwrap_err();
    assert!(past.message.contains("out-of-bounds access detected (offset=32, length=4"), "{past:?}");
    assert!(past.location.is_some(), "the error names where it arose: {past:?}");

    let calls = [("fill_sum", vec![i32(12)]), ("stride_sum", vec![i32(9), i32(16)])];
    same_on_every_budget([&interpreted, &compiled, &everywhere], 40, &calls);
}

#[test]
fn compiled_global_loops_match_the_interpreter() {
    let [interpreted, compiled, everywhere] = load_modes("globals.vmfb");
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    assert_eq!(compiled_entries(&compiled, "tally"), 1, "the loop over the globals is compiled");
    let (i32, i64, f32) = (Value::I32, Value::I64, Value::F32);
    for n in [0, 1, 10, 1000] {
        let arguments = [i32(n), f32(0.75)];
        let expected = call(&interpreted, None, "tally", &arguments);
        for (mode, module) in [("loops", &compiled), ("all", &everywhere)] {
            assert_eq!(call(module, None, "tally", &arguments), expected, "tally({n}) with RTX_VM_JIT={mode}");
        }
    }
    // Hand-computed: counters 0..=9 loaded, the total 2^32 + 0 + ... + 8, 1.5 * 0.5^9.
    let got = call(&compiled, None, "tally", &[i32(10), f32(0.5)]).unwrap();
    assert_eq!(got, [i32(45), i64((1 << 32) + 36), f32(1.5 / 512.0)]);
    same_on_every_budget([&interpreted, &compiled, &everywhere], 15, &[("tally", vec![i32(12), f32(2.0)])]);
}
