//! BEF executor costs per kernel, each row beside an anchor measured in the same run
//! (`support::row`):
//!
//! - `serial_100`: one call of a function of 100 dependent `tfrt.add.i32` (each adds the
//!   argument to the previous sum), on the `s` queue, divided by 100. Anchor: the same 100
//!   additions, each making an available AsyncValue from the previous one (the value model's
//!   floor: what every kernel result costs anyway).
//! - `parallel_100`: 100 independent `tfrt.add.i32` of the argument and one `tfrt.merge.chains`
//!   of their results, divided by 101. Anchor: 100 available values made from the argument,
//!   then one more.
//!
//! `cargo bench --bench bef [-- FILTER]`

mod support;

use std::hint::black_box;
use std::sync::Arc;

use rtx::bef::executor::Function;
use rtx::bef::reader::BefFile;
use rtx::host::{AsyncValueRef, Chain, HostContext, RcAsyncValue};
use rtx::kernel::{ExecutionContext, KernelRegistry};
use support::{per_call, row};

const KERNELS: usize = 100;
const CALLS: u64 = 2_000;

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

fn main() {
    let wanted = support::filter();
    let module = rtx::mlir::read_any(program().as_bytes(), Some("bench.mlir")).expect("the bench program parses");
    let bytes =
        rtx::bef::mlir_to_bef(&module, &rtx::bef::WriteOptions::default()).expect("the bench program translates");
    let file = BefFile::from_bytes(&bytes, &KernelRegistry::with_core_kernels()).expect("the bench program opens");
    let host = Arc::new(HostContext::with_work_queue_spec("s").unwrap());
    let context = ExecutionContext::new(Arc::clone(&host));
    let argument = AsyncValueRef::available(1i32).into_untyped();
    let call = |name: &str, kernels: usize| {
        let function = Function::lookup(&file, name).unwrap();
        let (context, host, argument) = (&context, &host, &argument);
        move || {
            per_call(CALLS, &mut || {
                let results = function.execute(context, std::slice::from_ref(argument));
                host.await_values(&results).unwrap();
                black_box(results);
            }) / kernels as f64
        }
    };
    if wanted("serial_100") {
        let mut subject = call("serial", KERNELS);
        let mut anchor = || {
            per_call(CALLS, &mut || {
                let mut sum = AsyncValueRef::available(2i32);
                for _ in 1..KERNELS {
                    sum = AsyncValueRef::available(black_box(*sum.get() + 1));
                }
                black_box(sum);
            }) / KERNELS as f64
        };
        row("serial_100 (ns per kernel)", "an AsyncValue per add", &mut anchor, &mut subject);
    }
    if wanted("parallel_100") {
        let mut subject = call("parallel", KERNELS + 1);
        let mut anchor = || {
            per_call(CALLS, &mut || {
                let values: Vec<RcAsyncValue> =
                    (0..KERNELS).map(|i| AsyncValueRef::available(black_box(i as i32 * 2)).into_untyped()).collect();
                black_box((values, Chain::ready()));
            }) / (KERNELS + 1) as f64
        };
        row("parallel_100 (ns per kernel)", "an AsyncValue per add", &mut anchor, &mut subject);
    }
}
