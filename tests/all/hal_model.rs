//! The main job's model (models/digits): a digit classifier MLP compiled by iree-compile 3.13
//! for the CPU. `rtx run` classifies every sample digit as the digit it is, prints what
//! `iree-run-module` prints for it (when the IREE tools are at hand: `RTX_CHECK_FIXTURES=1`), and
//! the checked-in model is what models/digits/build.sh makes. `rtx bef-exec` runs graphs.mlir: the
//! same MLP as a BEF kernel graph, and a pipeline of kernels around the compiled model; both give
//! the probabilities iree-run-module printed (predictions.txt) and the arg-max is the digit. The
//! model through the runtime API is crates/runtime/tests/all/hal_model.rs's.

use rtx_test_support::iree_tools_or_skip;
use std::path::PathBuf;
use std::process::Command;

fn digits() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/digits")
}

/// Runs `program` (with `first` as its first argument) on digit `d` in models/digits.
fn run(program: PathBuf, first: Option<&str>, d: usize) -> String {
    let output = Command::new(program)
        .current_dir(digits())
        .args(first)
        .args(["--device=local-sync", "--module=mlp.vmfb", "--function=predict"])
        .arg(format!("--input=@digit_{d}.npy"))
        .output()
        .expect("the tool runs");
    assert!(output.status.success(), "digit {d}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The probabilities in `1x10xf32=[p0 p1 ...]`.
fn probabilities(printed: &str) -> Vec<f64> {
    let line = printed.lines().find(|l| l.starts_with("1x10xf32=")).expect("the result line");
    line.trim_start_matches("1x10xf32=[").trim_end_matches(']').split(' ').map(|p| p.parse().unwrap()).collect()
}

#[test]
fn every_sample_digit_is_classified_as_itself() {
    // Without the IREE tools, the comparison with iree-run-module is skipped (and said so).
    let tools = iree_tools_or_skip();
    for d in 0..10 {
        let ours = run(env!("CARGO_BIN_EXE_rtx").into(), Some("run"), d);
        let p = probabilities(&ours);
        assert_eq!(p.len(), 10);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-4, "softmax sums to one: {p:?}");
        let class = (0..10).max_by(|&a, &b| p[a].total_cmp(&p[b])).unwrap();
        assert_eq!(class, d, "digit {d}: {p:?}");
        if let Some(tools) = &tools {
            assert_eq!(ours, run(tools.join("iree-run-module"), None, d), "digit {d}");
        }
    }
}

#[test]
fn the_model_is_what_its_script_makes() {
    if iree_tools_or_skip().is_none() {
        return;
    }
    let scratch = std::env::temp_dir().join(format!("rtx-digits-{}", std::process::id()));
    let status = Command::new(digits().join("build.sh")).arg("--out").arg(&scratch).status().expect("build.sh runs");
    assert!(status.success(), "models/digits/build.sh failed");
    for name in ["mlp.mlir", "graphs.mlir", "mlp.vmfb", "predictions.txt"]
        .into_iter()
        .map(String::from)
        .chain((0..10).map(|d| format!("digit_{d}.npy")))
    {
        let fresh = std::fs::read(scratch.join(&name)).expect("regenerated file");
        let checked_in = std::fs::read(digits().join(&name)).expect("checked-in file");
        assert!(fresh == checked_in, "{name} is stale: run models/digits/build.sh");
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

/// The numbers between `[` and `]` of a printed tensor line.
fn printed_values(line: &str) -> Vec<f64> {
    let values = line.rsplit_once("values = [").map(|(_, v)| v.trim_end_matches(']')).expect("a tensor line");
    values.split(", ").map(|v| v.parse().unwrap()).collect()
}

#[test]
fn the_kernel_graph_and_the_pipeline_give_what_iree_run_module_gives() {
    let predictions = std::fs::read_to_string(digits().join("predictions.txt")).expect("predictions.txt");
    let upstream: Vec<Vec<f64>> = predictions.lines().map(probabilities).collect();
    for queue in ["s", "mstd:2"] {
        let output = Command::new(env!("CARGO_BIN_EXE_rtx"))
            .current_dir(digits())
            .args(["bef-exec", "--vm_module=mlp.vmfb", &format!("--work_queue_type={queue}"), "graphs.mlir"])
            .output()
            .expect("rtx runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{queue}: {stdout}{}", String::from_utf8_lossy(&output.stderr));
        for (d, expected) in upstream.iter().enumerate() {
            let section = stdout.split(&format!("--- Running 'digit_{d}':\n")).nth(1).expect("the digit's section");
            let lines: Vec<&str> = section.lines().take(4).collect();
            // The kernel graph, its arg-max, the pipeline's probabilities, its arg-max.
            for (line, what) in [(lines[0], "the kernel graph"), (lines[2], "the pipeline")] {
                let ours = printed_values(line);
                assert_eq!(ours.len(), 10, "{line}");
                for (got, want) in ours.iter().zip(expected) {
                    // iree-run-module prints 6 significant digits.
                    assert!(
                        (got - want).abs() <= 1e-5 * want.abs(),
                        "{queue}, digit {d}, {what}: {ours:?} vs {expected:?}"
                    );
                }
            }
            for line in [lines[1], lines[3]] {
                assert_eq!(printed_values(line), [d as f64], "{queue}, digit {d}: {line}");
            }
        }
    }
}
