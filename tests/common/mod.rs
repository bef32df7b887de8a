//! Helpers shared by the VM integration tests: where the IREE-compiled fixtures live.

use std::path::PathBuf;

/// A folder under `tests/fixtures/vm` ("" for the folder itself).
pub fn fixture_dir(sub: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vm").join(sub)
}

/// Every `.vmfb` in `tests/fixtures/vm` and `tests/fixtures/vm/loader`, sorted.
pub fn fixtures() -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for dir in [fixture_dir(""), fixture_dir("loader")] {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display())) {
            let path = entry.expect("readable directory entry").path();
            if path.extension().is_some_and(|ext| ext == "vmfb") {
                paths.push(path);
            }
        }
    }
    paths.sort();
    assert!(paths.len() >= 13, "expected the 7 + 6 fixtures, found {paths:?}");
    paths
}
