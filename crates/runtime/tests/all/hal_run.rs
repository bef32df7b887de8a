//! Tensor programs compiled by iree-compile 3.13 for every CPU executable format run on
//! `local-sync` and give the values computed by hand. With `RTX_CHECK_FIXTURES=1` the modules are
//! also rebuilt by scripts/regen/hal-run-fixtures.sh and must match the checked-in ones. `rtx run`
//! and `rtx check` on them are tests/all/hal_run.rs's, at the repository root.

use rtx_hal::buffer_view::{self, BufferView};
use rtx_runtime::{Context, ContextOptions, Module, Runtime};
use rtx_test_support::{fixtures_dir, iree_tools_or_skip, repo_root};
use rtx_vm::value::Value;

const F32: u32 = 0x2100_0020;
const I32: u32 = 0x1000_0020;
const FORMATS: [&str; 3] = ["vmvx", "embedded", "system"];

/// A CPU device: its name and, for `local-task`, its number of workers.
type Device = (&'static str, usize);

const LOCAL_SYNC: Device = ("local-sync", 1);

fn context(format: &str) -> Context {
    context_on(format, LOCAL_SYNC)
}

fn context_on(format: &str, device: Device) -> Context {
    module_context("programs", format, device)
}

/// A context with `<name>_<format>.vmfb` on `device`, running calls on the calling thread.
fn module_context(name: &str, format: &str, (device, workers): Device) -> Context {
    context_in(&Runtime::with_task_workers(workers), name, format, device)
}

/// As [`module_context`], in `runtime`.
fn context_in(runtime: &Runtime, name: &str, format: &str, device: &str) -> Context {
    let path = fixtures_dir().join(format!("hal_run/{name}_{format}.vmfb"));
    let module = Module::load_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let context = runtime.context_with(ContextOptions::from_spec("s").unwrap()).unwrap();
    context.add_device(device).unwrap();
    context.add_module(&module).unwrap();
    context
}

fn f32s(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn i32s(values: &[i32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn tensor(shape: &[i64], element_type: u32, bytes: &[u8]) -> Value {
    Value::Ref(Some(BufferView::from_host(shape.to_vec(), element_type, bytes).unwrap().into_ref()))
}

fn call(context: &Context, function: &str, arguments: Vec<Value>) -> Vec<(Vec<i64>, u32, Vec<u8>)> {
    let handle = context.function(function).unwrap().as_vm().unwrap().handle.clone();
    let results = context.call(&handle, arguments).unwrap_or_else(|e| panic!("{function}: {e}"));
    results
        .iter()
        .map(|value| match value {
            Value::Ref(Some(r)) => {
                let view = buffer_view::deref(r).unwrap();
                (view.shape().to_vec(), view.element_type(), view.to_vec().unwrap())
            }
            other => panic!("{function} returned {other:?}"),
        })
        .collect()
}

#[test]
fn elementwise_programs_compute_what_the_source_says() {
    for format in FORMATS {
        let context = context(format);
        let out = call(&context, "abs", vec![tensor(&[4], F32, &f32s(&[-1.0, 2.0, -3.5, 0.0]))]);
        assert_eq!(out, [(vec![4], F32, f32s(&[1.0, 2.0, 3.5, 0.0]))], "{format}");
        let a = tensor(&[2, 3], I32, &i32s(&[1, 2, 3, 4, 5, i32::MAX]));
        let b = tensor(&[2, 3], I32, &i32s(&[10, 20, 30, 40, 50, 1]));
        let out = call(&context, "add", vec![a, b]);
        assert_eq!(out, [(vec![2, 3], I32, i32s(&[11, 22, 33, 44, 55, i32::MIN]))], "{format}");
    }
}

#[test]
fn matmul_and_a_dense_layer_with_constant_weights() {
    let a: Vec<f32> = (0..32).map(|i| (i % 7) as f32 - 3.0).collect();
    let b: Vec<f32> = (0..32).map(|i| (i % 5) as f32 * 0.5).collect();
    let mut expected = [0f32; 16];
    for i in 0..4 {
        for j in 0..4 {
            expected[i * 4 + j] = (0..8).map(|k| a[i * 8 + k] * b[k * 4 + j]).sum();
        }
    }
    // dense_relu: x = [0.5, -1, 2, 1] against the constant weights and bias in programs.mlir.
    let w = [[1.0, -1.0, 0.5], [2.0, 0.0, -0.5], [-1.0, 1.0, 1.0], [0.5, 2.0, -2.0]];
    let (x, bias) = ([0.5f32, -1.0, 2.0, 1.0], [0.5f32, -1.0, 0.25]);
    let dense: Vec<f32> = (0..3).map(|j| ((0..4).map(|k| x[k] * w[k][j]).sum::<f32>() + bias[j]).max(0.0)).collect();
    assert_eq!(dense, [0.0, 2.5, 1.0], "hand check of the layer");
    for format in FORMATS {
        let context = context(format);
        let out = call(&context, "matmul", vec![tensor(&[4, 8], F32, &f32s(&a)), tensor(&[8, 4], F32, &f32s(&b))]);
        assert_eq!(out, [(vec![4, 4], F32, f32s(&expected))], "{format}");
        let out = call(&context, "dense_relu", vec![tensor(&[1, 4], F32, &f32s(&x))]);
        assert_eq!(out, [(vec![1, 3], F32, f32s(&dense))], "{format}");
    }
}

#[test]
fn dynamic_shapes_and_rank_zero_results() {
    for format in FORMATS {
        let context = context(format);
        for n in [0usize, 1, 5, 1000] {
            let input: Vec<f32> = (0..n).map(|i| i as f32 - 2.5).collect();
            let out = call(&context, "scale_dynamic", vec![tensor(&[n as i64], F32, &f32s(&input)), Value::F32(-2.0)]);
            let expected: Vec<f32> = input.iter().map(|v| v * -2.0).collect();
            assert_eq!(out, [(vec![n as i64], F32, f32s(&expected))], "{format} n={n}");
        }
        let values: Vec<i32> = (1..=15).collect();
        let out = call(&context, "sum", vec![tensor(&[3, 5], I32, &i32s(&values))]);
        assert_eq!(out, [(vec![], I32, i32s(&[120]))], "{format}");
    }
}

/// `local-task` spreads a dispatch's workgroups over worker threads: the dynamic-shape program
/// with 100000 elements runs 25 workgroups, which must give what one thread gives.
#[test]
fn local_task_spreads_workgroups_and_computes_the_same() {
    let input: Vec<f32> = (0..100_000).map(|i| (i % 1000) as f32 * 0.25 - 7.0).collect();
    let expected: Vec<f32> = input.iter().map(|v| v * 3.0).collect();
    for workers in [1, 2, 4] {
        for format in FORMATS {
            let context = context_on(format, ("local-task", workers));
            let arguments = vec![tensor(&[100_000], F32, &f32s(&input)), Value::F32(3.0)];
            let out = call(&context, "scale_dynamic", arguments);
            assert_eq!(out, [(vec![100_000], F32, f32s(&expected))], "{format} on {workers} workers");
            let out = call(&context, "abs", vec![tensor(&[4], F32, &f32s(&[-1.0, 2.0, -3.5, 0.0]))]);
            assert_eq!(out, [(vec![4], F32, f32s(&[1.0, 2.0, 3.5, 0.0]))], "{format}");
        }
    }
}

/// The contexts of one runtime share its `local-task` pool (as IREE's devices share their
/// instance's task executor): contexts on four host threads dispatch onto the same two workers at
/// once, each getting its own results.
#[test]
fn contexts_sharing_one_pool_dispatch_at_once_and_compute_the_same() {
    let runtime = Runtime::with_task_workers(2);
    let input: Vec<f32> = (0..100_000).map(|i| (i % 1000) as f32 * 0.25 - 7.0).collect();
    std::thread::scope(|scope| {
        for thread in 0..4 {
            let (runtime, input) = (&runtime, &input);
            scope.spawn(move || {
                let format = ["embedded", "system"][thread % 2];
                let context = context_in(runtime, "programs", format, "local-task");
                for round in 0..10 {
                    let factor = (thread * 10 + round) as f32 - 17.5;
                    let expected: Vec<f32> = input.iter().map(|v| v * factor).collect();
                    let arguments = vec![tensor(&[100_000], F32, &f32s(input)), Value::F32(factor)];
                    let out = call(&context, "scale_dynamic", arguments);
                    assert_eq!(out, [(vec![100_000], F32, f32s(&expected))], "{format} x{factor}");
                }
            });
        }
    });
}

/// `coarse-fences` functions (src/async.mlir) called to completion: a null wait fence, a new
/// signal fence, results read once it is reached; on both devices, several dispatches deep.
#[test]
fn coarse_fences_functions_finish_when_their_signal_fence_is_reached() {
    let x = tensor(&[2, 3], F32, &f32s(&[1.0, 0.0, -1.0, 0.5, 2.0, 1.0]));
    let w = tensor(&[3, 4], F32, &f32s(&[1.0, 2.0, 3.0, 4.0, 0.0, 1.0, 0.0, 1.0, -1.0, 0.0, 1.0, 2.0]));
    // logits = x·w = [[2 2 2 2] [-0.5 3 2.5 6]]; softmax per row; the sum of the logits is 19.
    let row = [-0.5f32, 3.0, 2.5, 6.0];
    let total: f32 = row.iter().map(|v| v.exp()).sum();
    let softmax: Vec<f32> = [0.25; 4].into_iter().chain(row.iter().map(|v| v.exp() / total)).collect();
    for format in FORMATS {
        for device in [LOCAL_SYNC, ("local-task", 2)] {
            let context = module_context("async", format, device);
            assert_eq!(
                context.function("scores").unwrap().as_vm().unwrap().handle.model,
                rtx_vm::abi::AbiModel::CoarseFences
            );
            let out = call(&context, "scores", vec![x.clone(), w.clone()]);
            assert_eq!(out.len(), 2, "{format}");
            assert_eq!((&out[0].0, out[0].1), (&vec![2, 4], F32), "{format}");
            let probabilities: Vec<f32> =
                out[0].2.chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
            for (got, want) in probabilities.iter().zip(&softmax) {
                assert!((got - want).abs() <= 1e-6, "{format}: {probabilities:?} vs {softmax:?}");
            }
            assert_eq!(out[1], (vec![], F32, f32s(&[19.0])), "{format}");
            let out = call(&context, "scale", vec![tensor(&[5], I32, &i32s(&[1, 2, 3, -4, 5])), Value::I32(-3)]);
            assert_eq!(out, [(vec![5], I32, i32s(&[-3, -6, -9, 12, -15]))], "{format}");
            // A shape the program rejects fails the call itself, before any fence matters.
            let handle = context.function("scale").unwrap().as_vm().unwrap().handle.clone();
            let error = context.call(&handle, vec![tensor(&[5, 2], I32, &[0; 40]), Value::I32(1)]).unwrap_err();
            assert!(error.message.contains("input0 shape rank mismatch; expected 1 but have 2"), "{error}");
        }
    }
}

/// Dispatches run with denormals flushed to zero, as on IREE's CPU devices (programs are tested
/// against that): a denormal input reads as zero and a product below f32's normal range is zero.
/// The host side keeps IEEE semantics: the denormal input itself arrives intact.
#[test]
fn dispatches_flush_denormals_to_zero() {
    let input = [1e-40f32, -1e-20, 1e-20, 2.0];
    for format in FORMATS {
        for device in [LOCAL_SYNC, ("local-task", 2)] {
            let context = context_on(format, device);
            let out = call(&context, "scale_dynamic", vec![tensor(&[4], F32, &f32s(&input)), Value::F32(1e-20)]);
            assert_eq!(out, [(vec![4], F32, f32s(&[0.0, -0.0, 0.0, 2e-20]))], "{format}");
        }
    }
    assert!(std::hint::black_box(1e-20f32) * std::hint::black_box(1e-20f32) > 0.0, "the caller's mode is restored");
}

#[test]
fn wrong_inputs_fail_with_the_programs_message() {
    let context = context("vmvx");
    let handle = context.function("abs").unwrap().as_vm().unwrap().handle.clone();
    let error = context.call(&handle, vec![tensor(&[5], F32, &f32s(&[0.0; 5]))]).unwrap_err();
    assert!(error.message.contains("input0 shape dimension 0 mismatch; expected 4 but have 5"), "{error}");
    let error = context.call(&handle, vec![tensor(&[4], I32, &i32s(&[0; 4]))]).unwrap_err();
    assert!(error.message.contains("input0 element type mismatch"), "{error}");
    let error = context.call(&handle, vec![Value::Ref(None)]).unwrap_err();
    assert!(error.message.contains("null"), "{error}");
}

#[test]
fn fixtures_are_what_the_compiler_makes_of_their_source() {
    if iree_tools_or_skip().is_none() {
        return;
    }
    let repo = repo_root();
    let scratch = std::env::temp_dir().join(format!("rtx-hal-run-fixtures-{}", std::process::id()));
    let status = std::process::Command::new(repo.join("scripts/regen/hal-run-fixtures.sh"))
        .arg("--out")
        .arg(&scratch)
        .status()
        .expect("the regeneration script runs");
    assert!(status.success(), "scripts/regen/hal-run-fixtures.sh failed");
    let modules = |dir: &std::path::Path| -> Vec<(String, Vec<u8>)> {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .expect("module directory")
            .map(|entry| entry.expect("entry").path())
            .filter(|path| path.extension().is_some_and(|e| e == "vmfb"))
            .map(|path| (path.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&path).unwrap()))
            .collect();
        files.sort();
        files
    };
    let (fresh, checked_in) = (modules(&scratch), modules(&repo.join("tests/fixtures/hal_run")));
    let names = |files: &[(String, Vec<u8>)]| files.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&fresh), names(&checked_in), "module sets differ");
    for ((name, fresh), (_, checked_in)) in fresh.iter().zip(&checked_in) {
        assert!(fresh == checked_in, "{name} is stale: run scripts/regen/hal-run-fixtures.sh");
    }
    let _ = std::fs::remove_dir_all(&scratch);
}
