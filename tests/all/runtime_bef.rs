//! c-examples/bef_kernel.bef, the BEF file the C example loads, is what `rtx translate
//! --mlir-to-bef` makes of its source c-examples/bef_kernel.mlir. BEF modules through the runtime
//! API are crates/runtime/tests/all/runtime_bef.rs's.

#[test]
fn the_c_example_bef_file_is_what_its_mlir_source_translates_to() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = std::env::temp_dir().join(format!("rtx-bef-kernel-{}.bef", std::process::id()));
    // The command c-examples/bef_kernel.mlir names, run from the repository root.
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_rtx"))
        .current_dir(root)
        .args(["translate", "--mlir-to-bef", "c-examples/bef_kernel.mlir", "-o"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    let fresh = std::fs::read(&out).unwrap();
    std::fs::remove_file(&out).unwrap();
    assert!(fresh == std::fs::read(format!("{root}/c-examples/bef_kernel.bef")).unwrap(), "regenerate bef_kernel.bef");
}
