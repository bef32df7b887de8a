//! Helpers the integration tests of the rtx crates share (a dev-dependency only, never
//! published): where the repository and its fixtures are, the IREE-compiled VM fixtures and their
//! invocations, the IREE tools (`RTX_IREE_TOOLS`) and the fixture regeneration checks
//! (`RTX_CHECK_FIXTURES=1`), upstream MLIR's prints, the `.mlir` files of a folder, skips said
//! where the test command counts them, deadlines for waits on other threads, and, with the feature `vulkan`, the Vulkan tests' device
//! and validation checks.

pub mod deadline;
pub mod skip;
#[cfg(feature = "vulkan")]
pub mod vulkan;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The repository: the workspace root, two folders above this crate's manifest.
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).expect("crates/test-support lies two folders deep")
}

/// `tests/fixtures` at the repository root, where every crate's test fixtures live.
pub fn fixtures_dir() -> PathBuf {
    repo_root().join("tests/fixtures")
}

/// A folder under `tests/fixtures/vm` ("" for the folder itself).
pub fn fixture_dir(sub: &str) -> PathBuf {
    fixtures_dir().join("vm").join(sub)
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

/// One line of invocations.txt.
#[derive(Debug)]
pub struct Invocation {
    pub line: usize,
    pub module: String,
    pub function: String,
    pub flags: Vec<String>,
    /// Expected-output file name: `<module>.<function>.<n>.txt`, n counting per function from 1.
    pub expected: String,
}

pub fn invocations() -> Vec<Invocation> {
    invocations_in(&fixture_dir(""))
}

/// The invocations listed in `dir/invocations.txt` (the format of the VM and Vulkan fixtures).
pub fn invocations_in(dir: &Path) -> Vec<Invocation> {
    let text = std::fs::read_to_string(dir.join("invocations.txt")).expect("invocations.txt is readable");
    let mut counts: std::collections::BTreeMap<(String, String), usize> = Default::default();
    let mut invocations = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let mut fields = trimmed.split_whitespace().map(str::to_owned);
        let (Some(module), Some(function)) = (fields.next(), fields.next()) else {
            panic!("invocations.txt:{}: expected `<name> <function> [flags...]`, got {line:?}", index + 1);
        };
        let n = counts.entry((module.clone(), function.clone())).or_default();
        *n += 1;
        let expected = format!("{module}.{function}.{n}.txt");
        invocations.push(Invocation { line: index + 1, module, function, flags: fields.collect(), expected });
    }
    invocations
}

/// The folder holding the IREE 3.13 tools, when a check against them may run here; otherwise why
/// not. The checks need `RTX_CHECK_FIXTURES=1` and the tools (`RTX_IREE_TOOLS`, or
/// scripts/setup/iree-tools.sh). Found once per test binary: the script checks the installed
/// versions with Python (0.4 s).
pub fn iree_tools() -> Result<PathBuf, String> {
    static TOOLS: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    TOOLS.get_or_init(find_iree_tools).clone()
}

fn find_iree_tools() -> Result<PathBuf, String> {
    if std::env::var("RTX_CHECK_FIXTURES").as_deref() != Ok("1") {
        return Err("RTX_CHECK_FIXTURES is not 1".to_owned());
    }
    let script = repo_root().join("scripts/setup/iree-tools.sh");
    match Command::new(script).output() {
        Ok(output) if output.status.success() => Ok(PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())),
        Ok(output) => {
            Err(format!("scripts/setup/iree-tools.sh failed: {}", String::from_utf8_lossy(&output.stderr).trim()))
        }
        Err(error) => Err(format!("cannot run scripts/setup/iree-tools.sh: {error}")),
    }
}

/// [`iree_tools`], or `None` after a skip saying why the comparison cannot run.
pub fn iree_tools_or_skip() -> Option<PathBuf> {
    iree_tools().map_err(|reason| skip::skip(skip::Need::IreeTools, reason)).ok()
}

/// Upstream MLIR's generic print of `input` (text or bytecode), locations included, or its
/// error output.
pub fn upstream_generic(tools: &std::path::Path, input: &std::path::Path) -> Result<String, String> {
    upstream_print(tools, input, "--mlir-print-debuginfo")
}

/// Upstream MLIR's generic print of `input` with one more printing flag, or its error output.
pub fn upstream_print(tools: &std::path::Path, input: &std::path::Path, flag: &str) -> Result<String, String> {
    let out = Command::new(tools.join("iree-opt"))
        .args(["--allow-unregistered-dialect", "--mlir-print-op-generic", flag])
        .arg(input)
        .output()
        .expect("run iree-opt");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8(out.stdout).expect("utf-8"))
}

/// Every `<name>.v<N>.mlirbc` in `dir`, sorted: (name, version, path); at least `min` of them.
pub fn mlir_fixtures(dir: &std::path::Path, min: usize) -> Vec<(String, u32, PathBuf)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("fixture dir") {
        let path = entry.expect("entry").path();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        if let Some(stem) = file.strip_suffix(".mlirbc") {
            let (name, version) = stem.rsplit_once(".v").expect("<name>.v<N>.mlirbc");
            out.push((name.to_owned(), version.parse().expect("version number"), path));
        }
    }
    out.sort();
    assert!(out.len() >= min, "expected the generated fixtures in {}, found {}", dir.display(), out.len());
    out
}

/// Appends the `.mlir` files under `folder` (recursively, each folder in name order) to `out`. A
/// folder that cannot be read fails: a suite named by a mistyped path must not pass empty.
pub fn mlir_files(folder: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(folder).unwrap_or_else(|error| panic!("cannot read {}: {error}", folder.display()));
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            mlir_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "mlir") {
            out.push(path);
        }
    }
}

/// Names of the files in `dir` whose name ends with `suffix`, with the suffix removed.
pub fn stems(dir: &Path, suffix: &str) -> std::collections::BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", dir.display()))
        .map(|entry| entry.expect("readable directory entry").file_name().to_string_lossy().into_owned())
        .filter_map(|name| name.strip_suffix(suffix).map(str::to_owned))
        .collect()
}

/// The files directly in `root` and in its folders `subdirs`, by path relative to `root`.
fn files_under(root: &Path, subdirs: &[&str]) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut files = std::collections::BTreeMap::new();
    for dir in std::iter::once(root.to_path_buf()).chain(subdirs.iter().map(|sub| root.join(sub))) {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|error| panic!("cannot read {}: {error}", dir.display())) {
            let path = entry.expect("readable directory entry").path();
            if path.is_file() {
                let name = path.strip_prefix(root).expect("under root").to_string_lossy().into_owned();
                files.insert(name, std::fs::read(&path).expect("readable file"));
            }
        }
    }
    files
}

/// Runs `scripts/<script> --out <scratch>` and asserts that it generates exactly the files checked in
/// under `fixtures` (directly and in `subdirs`), byte for byte, apart from the hand-written `inputs`.
/// Skipped, saying why, where [`iree_tools`] finds no tools.
pub fn assert_fixtures_fresh(script: &str, fixtures: &Path, subdirs: &[&str], inputs: &[&str]) {
    if let Err(reason) = iree_tools() {
        skip::skip(skip::Need::IreeTools, format_args!("the {script} regeneration check: {reason}"));
        return;
    }
    let scratch = std::env::temp_dir().join(format!("rtx-{script}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).expect("scratch directory");
    let output = Command::new(repo_root().join("scripts").join(script))
        .arg("--out")
        .arg(&scratch)
        .output()
        .unwrap_or_else(|error| panic!("cannot run scripts/{script}: {error}"));
    assert!(
        output.status.success(),
        "scripts/{script} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let fresh = files_under(&scratch, subdirs);
    let mut checked_in = files_under(fixtures, subdirs);
    for input in inputs {
        checked_in.remove(*input);
    }
    let _ = std::fs::remove_dir_all(&scratch);
    let fresh_names: Vec<_> = fresh.keys().collect();
    let checked_in_names: Vec<_> = checked_in.keys().collect();
    assert_eq!(checked_in_names, fresh_names, "the regenerated file set differs; run scripts/{script}");
    let stale: Vec<_> =
        fresh.iter().filter(|(name, bytes)| checked_in[*name] != **bytes).map(|(name, _)| name).collect();
    assert!(stale.is_empty(), "stale fixtures {stale:?}; run scripts/{script}");
}
