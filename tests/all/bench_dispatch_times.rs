//! `rtx bench --dispatch_times`: the time of each export of the digits MLP (three dispatches per
//! call, named by iree-compile), per timed call, on both CPU devices.

use std::process::Command;

const EXPORTS: [&str; 3] = [
    "predict_dispatch_0_matmul_1x32x64_f32",
    "predict_dispatch_1_matmul_1x10x32_f32",
    "predict_dispatch_2_softmax_1x10xf32_dispatch_tensor_store",
];

fn bench(extra: &[&str]) -> String {
    let digits = concat!(env!("CARGO_MANIFEST_DIR"), "/models/digits");
    let output = Command::new(env!("CARGO_BIN_EXE_rtx"))
        .args([
            "bench",
            &format!("--module={digits}/mlp.vmfb"),
            "--function=predict",
            &format!("--input=@{digits}/digit_3.npy"),
            "--no_iree",
            "--benchmark_min_time=3x",
        ])
        .args(extra)
        .output()
        .expect("rtx runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("utf-8 stdout")
}

#[test]
fn each_export_is_timed_once_per_call() {
    for device in ["--device=local-sync", "--device=local-task"] {
        let text = bench(&[device, "--dispatch_times"]);
        let lines: Vec<&str> =
            text.lines().skip_while(|line| !line.starts_with("dispatches per call")).skip(1).collect();
        let mut names: Vec<&str> = lines.iter().filter_map(|line| line.trim().split(':').next()).collect();
        names.sort();
        assert_eq!(names, EXPORTS, "{device}:\n{text}");
        let mut shares = 0.0;
        for line in &lines {
            assert!(line.contains(": 1 per call, "), "{device}: one dispatch of each export per call:\n{text}");
            let share = line.rsplit_once('(').and_then(|(_, share)| share.strip_suffix(" %)")).expect("a share");
            shares += share.parse::<f64>().expect("a number");
        }
        assert!((shares - 100.0).abs() < 0.5, "{device}: shares add up to {shares}:\n{text}");
    }
}

#[test]
fn dispatches_are_not_timed_unless_asked() {
    let text = bench(&["--device=local-sync"]);
    assert!(text.starts_with("predict: median "), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
}
