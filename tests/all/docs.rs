//! The documentation stays true to the repository: docs/C_API.md names exactly the functions of
//! include/rtx.h, every repository path the README and docs/ name exists (including the files the
//! README's "Repository layout" lists), and nothing sends the reader outside the repository.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

pub(crate) fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The repository file at `path`, which must exist.
pub(crate) fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The texts between backticks in `text`.
pub(crate) fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The functions `include/rtx.h` declares: every `rtx_name(` that starts a declaration.
fn header_functions() -> BTreeSet<String> {
    let header = read("include/rtx.h");
    let mut names = BTreeSet::new();
    for line in header.lines().filter(|line| !line.starts_with([' ', '*', '/', '#', '}', '\t'])) {
        let Some(open) = line.find('(') else { continue };
        let before = &line[..open];
        if let Some(start) = before.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            let name = &before[start + 1..];
            if name.starts_with("rtx_") && !before.contains("typedef") {
                names.insert(name.to_owned());
            }
        }
    }
    names
}

/// The functions docs/C_API.md names in its list: `rtx_...` spans, where a span like `_i32`
/// after `rtx_async_value_new_i1` stands for `rtx_async_value_new_i32`.
fn documented_functions() -> BTreeSet<String> {
    let text = read("docs/C_API.md");
    let list = &text[text.find("## The functions").expect("a function list")..];
    let list = &list[..list.find("\n## ").unwrap_or(list.len())];
    let mut names = BTreeSet::new();
    let mut previous = String::new();
    for span in code_spans(list) {
        let name = if let Some(suffix) = span.strip_prefix('_').filter(|rest| !rest.starts_with('_')) {
            match previous.rsplit_once('_') {
                Some((stem, _)) => format!("{stem}_{suffix}"),
                None => continue,
            }
        } else {
            span.to_owned()
        };
        if name.starts_with("rtx_") && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            if !name.ends_with("_t") {
                names.insert(name.clone());
            }
            previous = name;
        }
    }
    names
}

#[test]
fn the_c_api_page_names_every_function_of_the_header_and_no_other() {
    let header = header_functions();
    assert!(header.len() >= 80, "found only {} functions in include/rtx.h", header.len());
    let documented = documented_functions();
    let missing: Vec<_> = header.difference(&documented).collect();
    let extra: Vec<_> = documented.difference(&header).collect();
    assert!(missing.is_empty(), "docs/C_API.md does not name {missing:?}");
    assert!(extra.is_empty(), "docs/C_API.md names functions include/rtx.h lacks: {extra:?}");
}

/// The files and folders the README's "Repository layout" block lists: each entry's path, and, for
/// a source folder, each file name its description mentions (which must exist under it).
#[test]
fn the_repository_layout_lists_only_what_exists() {
    let readme = read("README.md");
    let section = &readme[readme.find("## Repository layout").expect("a layout section")..];
    let block = section.split("```").nth(1).expect("a code block");
    let mut folder = PathBuf::new();
    let mut missing = Vec::new();
    for line in block.lines().filter(|line| !line.trim().is_empty()) {
        let (paths, description) = match line.starts_with(' ') {
            true => ("", line.trim()),
            false => line.split_once("  ").map_or((line, ""), |(p, d)| (p, d.trim())),
        };
        for path in paths.split(", ").map(str::trim).filter(|p| !p.is_empty()) {
            if !repo().join(path).exists() {
                missing.push(path.to_owned());
            }
            if path.ends_with('/') {
                folder = PathBuf::from(path);
            }
        }
        for word in description.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-')) {
            let is_file = [".rs", ".sh", ".py", ".c", ".cpp", ".md", ".in", ".cmake"].iter().any(|e| word.ends_with(e));
            if is_file && folder.starts_with("src") && !exists_under(&repo().join(&folder), word) {
                missing.push(format!("{word} (under {})", folder.display()));
            }
        }
    }
    assert!(missing.is_empty(), "README's Repository layout names what does not exist: {missing:?}");
}

fn exists_under(folder: &Path, name: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(folder) else { return false };
    entries.flatten().any(|entry| {
        let path = entry.path();
        path.file_name().is_some_and(|n| n == name) || (path.is_dir() && exists_under(&path, name))
    })
}

/// Every repository path in backticks in the README and docs/ exists.
#[test]
fn paths_in_the_docs_exist() {
    let roots =
        ["src/", "tests/", "scripts/", "benches/", "c-examples/", "include/", "fuzz/", "models/", "docs/", "cmake/"];
    let mut missing = Vec::new();
    for page in ["README.md", "docs/ARCHITECTURE.md", "docs/C_API.md", "docs/PERFORMANCE.md", "docs/FORMATS.md"] {
        for span in code_spans(&read(page)) {
            let path = span.split_whitespace().next().unwrap_or("");
            let plain = path.chars().all(|c| c.is_ascii_alphanumeric() || "/_.-".contains(c));
            if plain && roots.iter().any(|root| path.starts_with(root)) && !repo().join(path).exists() {
                missing.push(format!("{page}: {path}"));
            }
        }
    }
    assert!(missing.is_empty(), "paths that do not exist: {missing:?}");
}

/// A reader of the repository has only the repository: no page points at the team's `shared/`
/// folder.
#[test]
fn no_page_points_outside_the_repository() {
    for page in [
        "README.md",
        "docs/ARCHITECTURE.md",
        "docs/C_API.md",
        "docs/PERFORMANCE.md",
        "docs/FORMATS.md",
        "fuzz/README.md",
    ] {
        let text = read(page);
        assert!(!text.contains("shared/"), "{page} refers to a shared/ folder outside the repository");
    }
}
