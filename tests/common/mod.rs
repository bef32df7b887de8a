//! Helpers shared by the integration tests: where the IREE-compiled fixtures live, and the
//! `.mlir` files of a folder.

// Each test crate compiles this file and uses only some of it.
#![allow(dead_code)]

pub mod ffi;

use std::path::{Path, PathBuf};
use std::process::Command;

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
    let text = std::fs::read_to_string(fixture_dir("invocations.txt")).expect("invocations.txt is readable");
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

/// Why a fixture regeneration check cannot run here, or `None` when it can: it needs
/// `RTX_CHECK_FIXTURES=1` and the IREE tools (`RTX_IREE_TOOLS`, or scripts/iree-tools.sh).
pub fn regeneration_skip_reason() -> Option<String> {
    if std::env::var("RTX_CHECK_FIXTURES").as_deref() != Ok("1") {
        return Some("RTX_CHECK_FIXTURES is not 1".to_owned());
    }
    if std::env::var_os("RTX_IREE_TOOLS").is_some() {
        return None;
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/iree-tools.sh");
    match Command::new(script).output() {
        Ok(output) if output.status.success() => None,
        Ok(output) => Some(format!("scripts/iree-tools.sh failed: {}", String::from_utf8_lossy(&output.stderr).trim())),
        Err(error) => Some(format!("cannot run scripts/iree-tools.sh: {error}")),
    }
}

/// The folder holding the IREE 3.13 tools, when a check against them may run here (see
/// [`regeneration_skip_reason`]); otherwise why not.
pub fn iree_tools() -> Result<PathBuf, String> {
    if let Some(reason) = regeneration_skip_reason() {
        return Err(reason);
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/iree-tools.sh");
    let output = Command::new(script).output().map_err(|e| format!("cannot run scripts/iree-tools.sh: {e}"))?;
    Ok(PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()))
}

/// [`iree_tools`], or `None` after printing why the comparison is skipped.
pub fn iree_tools_or_skip() -> Option<PathBuf> {
    iree_tools().map_err(|reason| eprintln!("SKIP: {reason}")).ok()
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

/// Appends the `.mlir` files under `folder` (recursively, each folder in name order) to `out`; a
/// folder that cannot be read adds nothing.
pub fn mlir_files(folder: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(folder) else { return };
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
