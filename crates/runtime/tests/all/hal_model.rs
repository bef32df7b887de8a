//! The main job's model (models/digits), a digit classifier MLP compiled by iree-compile 3.13 for
//! the CPU, through the runtime API: results kept across calls keep their values. The model's runs
//! by `rtx run` and `rtx bef-exec`, against iree-run-module, are tests/all/hal_model.rs's.

use rtx_test_support::repo_root;
use std::path::PathBuf;

fn digits() -> PathBuf {
    repo_root().join("models/digits")
}

/// The probabilities in `1x10xf32=[p0 p1 ...]`.
fn probabilities(printed: &str) -> Vec<f64> {
    let line = printed.lines().find(|l| l.starts_with("1x10xf32=")).expect("the result line");
    line.trim_start_matches("1x10xf32=[").trim_end_matches(']').split(' ').map(|p| p.parse().unwrap()).collect()
}

/// Results kept across calls keep their values: each call's transient buffers come from the
/// device's pool, which hands a buffer out again only once nothing holds it. Every digit is
/// classified in one context with all results kept, then again after they are dropped (the
/// second round reuses the first's buffers), each checked against what iree-run-module printed.
#[test]
fn results_kept_across_calls_keep_their_values_and_reused_memory_gives_the_same() {
    use std::sync::Arc;

    use rtx_hal::buffer_view::BufferView;
    use rtx_host::AsyncValueRef;
    use rtx_runtime::{Module, Runtime};

    let predictions = std::fs::read_to_string(digits().join("predictions.txt")).expect("predictions.txt");
    let upstream: Vec<Vec<f64>> = predictions.lines().map(probabilities).collect();
    let runtime = Runtime::new();
    for device in ["local-sync", "local-task"] {
        let context = runtime.context().unwrap();
        context.add_device(device).unwrap();
        context.add_module(&Module::load_file(digits().join("mlp.vmfb")).unwrap()).unwrap();
        let predict = context.function("predict").unwrap();
        let classify = |d: usize| {
            let bytes = std::fs::read(digits().join(format!("digit_{d}.npy"))).expect("the sample image");
            let (image, _) = rtx_hal::npy::decode(&bytes).unwrap();
            let shape = image.shape.iter().map(|&d| d as i64).collect();
            let view = BufferView::from_host(shape, image.element_type.0, &image.data).unwrap();
            let results = context.invoke(&predict, &[AsyncValueRef::available(Arc::new(view)).into_untyped()]).unwrap();
            context.await_values(&results).unwrap();
            results[0].try_get::<Arc<BufferView>>().expect("a tensor").clone()
        };
        let check = |d: usize, view: &BufferView, round: &str| {
            let bytes = view.to_vec().unwrap();
            let ours: Vec<f64> = bytes.chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap()) as f64).collect();
            for (got, want) in ours.iter().zip(&upstream[d]) {
                assert!((got - want).abs() <= 1e-5 * want.abs(), "{device}, {round}, digit {d}: {ours:?}");
            }
        };
        for round in ["results kept", "memory reused"] {
            let kept: Vec<_> = (0..10).map(classify).collect();
            for (d, view) in kept.iter().enumerate() {
                check(d, view, round);
            }
        }
    }
}
