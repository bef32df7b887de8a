//! The main job's model (models/digits): a digit classifier MLP compiled by iree-compile 3.13
//! for the CPU. `rtx run` classifies every sample digit as the digit it is, prints what
//! `iree-run-module` prints for it (when the IREE tools are at hand: `RTX_CHECK_FIXTURES=1`), and
//! the checked-in model is what models/digits/build.sh makes.

use std::path::PathBuf;
use std::process::Command;

mod common;

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
    let tools = common::iree_tools();
    for d in 0..10 {
        let ours = run(env!("CARGO_BIN_EXE_rtx").into(), Some("run"), d);
        let p = probabilities(&ours);
        assert_eq!(p.len(), 10);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-4, "softmax sums to one: {p:?}");
        let class = (0..10).max_by(|&a, &b| p[a].total_cmp(&p[b])).unwrap();
        assert_eq!(class, d, "digit {d}: {p:?}");
        if let Ok(tools) = &tools {
            assert_eq!(ours, run(tools.join("iree-run-module"), None, d), "digit {d}");
        }
    }
}

#[test]
fn the_model_is_what_its_script_makes() {
    if let Some(reason) = common::regeneration_skip_reason() {
        eprintln!("SKIP: {reason}");
        return;
    }
    let scratch = std::env::temp_dir().join(format!("rtx-digits-{}", std::process::id()));
    let status = Command::new(digits().join("build.sh")).arg("--out").arg(&scratch).status().expect("build.sh runs");
    assert!(status.success(), "models/digits/build.sh failed");
    for name in ["mlp.mlir", "mlp.vmfb", "predictions.txt"]
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
