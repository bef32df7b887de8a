//! BEF executor costs per kernel, each row beside an anchor measured in the same run
//! (`support::row`):
//!
//! - `serial_100/plan`, `serial_100/dataflow`: one call of a function of 100 dependent
//!   `tfrt.add.i32` (each adds the argument to the previous sum), on the `s` queue, divided by
//!   100: as a plan (the adds are pure kernels) and in the dataflow executor (the adds registered
//!   as async kernels). Anchor: IREE's VM running
//!   the same 100 additions (`tests/fixtures/vm/add_chain.vmfb`) through `iree-benchmark-module
//!   --device=local-sync`, found as `rtx bench` finds it (`RTX_IREE_TOOLS` or `PATH`); without
//!   the tool, rtx's own VM on the same module.
//! - `parallel_100/plan/s`, `parallel_100/dataflow/{s,mstd}`: 100 independent `tfrt.add.i32` of
//!   the argument and one `tfrt.merge.chains` of their results, divided by 101. Anchor: 100
//!   available values made from the argument, then one more (what every kernel result costs
//!   anyway).
//!
//! `cargo bench --bench bef [-- FILTER]`

mod support;

use std::hint::black_box;
use std::sync::Arc;

use rtx::bef::reader::BefFile;
use rtx::host::{AsyncValueRef, Chain, HostContext, RcAsyncValue};
use rtx::kernel::{ExecutionContext, KernelRegistry};
use rtx::vm::iree_benchmark;
use support::{per_call, row};

const KERNELS: usize = 100;
const CALLS: u64 = 2_000;
/// Seconds of each `iree-benchmark-module` round (one process per round).
const IREE_ROUND: iree_benchmark::MinTime = iree_benchmark::MinTime::Seconds(0.1);

fn program() -> String {
    let mut text = String::from("func.func @serial(%x: i32) -> i32 {\n  %s0 = tfrt.add.i32 %x, %x\n");
    for i in 1..KERNELS {
        text.push_str(&format!("  %s{i} = tfrt.add.i32 %s{}, %x\n", i - 1));
    }
    text.push_str(&format!("  tfrt.return %s{} : i32\n}}\n", KERNELS - 1));
    text.push_str("func.func @parallel(%x: i32) -> !tfrt.chain {\n");
    for i in 0..KERNELS {
        text.push_str(&format!("  %p{i} = tfrt.add.i32 %x, %x\n"));
    }
    let operands: Vec<String> = (0..KERNELS).map(|i| format!("%p{i}")).collect();
    let types = vec!["i32"; KERNELS].join(", ");
    text.push_str(&format!(
        "  %ch = tfrt.merge.chains {} : {types}\n  tfrt.return %ch : !tfrt.chain\n}}\n",
        operands.join(", ")
    ));
    text
}

/// ns per add of the anchor module's 100-add chain: `iree-benchmark-module` when at hand,
/// otherwise rtx's VM; and the anchor's name.
fn add_chain_anchor() -> (Box<dyn FnMut() -> f64>, &'static str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vm/add_chain.vmfb");
    if let Some(tool) = iree_benchmark::find_iree_benchmark_module() {
        let arguments: Vec<String> = ["--device=local-sync", "--function=add_chain", "--input=1", "--input=2"]
            .into_iter()
            .map(str::to_owned)
            .chain([format!("--module={}", path.display())])
            .collect();
        let anchor = move || {
            iree_benchmark::time_per_call(&tool, &arguments, IREE_ROUND).expect("iree-benchmark-module runs")
                / KERNELS as f64
        };
        return (Box::new(anchor), "IREE VM, add_chain.vmfb");
    }
    let module = rtx::vm::Module::load_file(&path).expect("add_chain.vmfb loads");
    let context = rtx::vm::context::VmContext::new();
    context.add_module(Arc::new(module)).expect("add_chain.vmfb links");
    let function = context.lookup("add_chain").expect("add_chain is exported");
    let anchor = move || {
        per_call(CALLS, &mut || {
            let arguments = vec![rtx::vm::value::Value::I32(1), rtx::vm::value::Value::I32(2)];
            black_box(context.invoke(&function, arguments).expect("add_chain runs"));
        }) / KERNELS as f64
    };
    (Box::new(anchor), "rtx VM, add_chain.vmfb (no IREE)")
}

/// The core kernels with `tfrt.add.i32` and `tfrt.merge.chains` registered as plain async
/// kernels instead of pure ones, so the bench functions run in the dataflow executor.
fn dataflow_registry() -> KernelRegistry {
    let mut registry = KernelRegistry::with_core_kernels();
    registry.add_kernel("tfrt.add.i32", |f| {
        let sum = f.get::<i32>(0)?.wrapping_add(*f.get::<i32>(1)?);
        f.emplace_result(0, sum)
    });
    registry.add_kernel("tfrt.merge.chains", |f| f.emplace_result(0, Chain));
    registry
}

fn main() {
    let wanted = support::filter();
    let module = rtx::mlir::read_any(program().as_bytes(), Some("bench.mlir")).expect("the bench program parses");
    let bytes =
        rtx::bef::mlir_to_bef(&module, &rtx::bef::WriteOptions::default()).expect("the bench program translates");
    let planned = BefFile::from_bytes(&bytes, &KernelRegistry::with_core_kernels()).expect("the bench program opens");
    let dataflow = BefFile::from_bytes(&bytes, &dataflow_registry()).expect("the bench program opens");
    let argument = AsyncValueRef::available(1i32).into_untyped();
    let call = |file: &Arc<BefFile>, name: &str, kernels: usize, queue: &str| {
        let function = file.function_named(name).unwrap();
        let host = Arc::new(HostContext::with_work_queue_spec(queue).unwrap());
        let context = ExecutionContext::new(Arc::clone(&host));
        let argument = &argument;
        move || {
            per_call(CALLS, &mut || {
                let results = function.execute(&context, std::slice::from_ref(argument));
                host.await_values(&results).unwrap();
                black_box(results);
            }) / kernels as f64
        }
    };
    for (way, file) in [("plan", &planned), ("dataflow", &dataflow)] {
        let name = format!("serial_100/{way} (ns per kernel)");
        if wanted(&name) {
            let mut subject = call(file, "serial", KERNELS, "s");
            let (mut anchor, anchor_name) = add_chain_anchor();
            row(&name, anchor_name, &mut anchor, &mut subject);
        }
    }
    for (way, queue, file) in [("plan", "s", &planned), ("dataflow", "s", &dataflow), ("dataflow", "mstd", &dataflow)] {
        let name = format!("parallel_100/{way}/{queue} (ns per kernel)");
        if !wanted(&name) {
            continue;
        }
        let mut subject = call(file, "parallel", KERNELS + 1, queue);
        let mut anchor = || {
            per_call(CALLS, &mut || {
                let values: Vec<RcAsyncValue> =
                    (0..KERNELS).map(|i| AsyncValueRef::available(black_box(i as i32 * 2)).into_untyped()).collect();
                black_box((values, Chain::ready()));
            }) / (KERNELS + 1) as f64
        };
        row(&name, "an AsyncValue per add", &mut anchor, &mut subject);
    }
}
