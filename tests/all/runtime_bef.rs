//! The checked-in BEF files are what `rtx translate --mlir-to-bef` makes of their sources:
//! c-examples/bef_kernel.bef, which the C example loads, tests/fixtures/bef/composite_op.bef,
//! which the Python tests load, and models/digits/graphs.bef, which c-examples/allocator_faults.c
//! runs. BEF modules through the runtime API are
//! crates/runtime/tests/all/runtime_bef.rs's.

#[test]
fn the_checked_in_bef_files_are_what_their_mlir_sources_translate_to() {
    let root = env!("CARGO_MANIFEST_DIR");
    for source in ["c-examples/bef_kernel.mlir", "tests/fixtures/bef/composite_op.mlir", "models/digits/graphs.mlir"] {
        let out = std::env::temp_dir().join(format!("rtx-checked-in-{}.bef", std::process::id()));
        // The command each source names, run from the repository root.
        let status = std::process::Command::new(env!("CARGO_BIN_EXE_rtx"))
            .current_dir(root)
            .args(["translate", "--mlir-to-bef", source, "-o"])
            .arg(&out)
            .status()
            .unwrap();
        assert!(status.success(), "{source}");
        let fresh = std::fs::read(&out).unwrap();
        std::fs::remove_file(&out).unwrap();
        let bef = source.replace(".mlir", ".bef");
        assert!(fresh == std::fs::read(format!("{root}/{bef}")).unwrap(), "regenerate {bef} as {source} says");
    }
}
