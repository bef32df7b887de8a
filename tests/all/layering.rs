//! The layering holds: each crate depends on exactly the crates docs/ARCHITECTURE.md's "Crates"
//! table says it stands on (so the table is the crate graph, and the compiler enforces it), the
//! graph has no cycle, and the C ABI (`src/ffi/`) names no layer but `runtime` and `host`.

use std::collections::{BTreeMap, BTreeSet};

use super::docs::{code_spans, read, repo};

/// The "Crates" table: crate name -> (folder, the crates it stands on).
fn documented() -> BTreeMap<String, (String, BTreeSet<String>)> {
    let text = read("docs/ARCHITECTURE.md");
    let section = &text[text.find("\n## Crates\n").expect("docs/ARCHITECTURE.md has a Crates section")..];
    let section = &section[..section[1..].find("\n## ").map_or(section.len(), |end| end + 1)];
    let mut crates = BTreeMap::new();
    for row in section.lines().filter(|line| line.starts_with("| `")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (name, folder, stands_on) = (code_spans(cells[1])[0], code_spans(cells[2])[0], cells[3]);
        let dependencies = if stands_on.starts_with("every") {
            BTreeSet::from(["*".to_owned()])
        } else {
            code_spans(stands_on).into_iter().map(str::to_owned).collect()
        };
        crates.insert(name.to_owned(), (folder.trim_end_matches('/').to_owned(), dependencies));
    }
    assert!(crates.len() > 5, "the Crates table lists the crates: {crates:?}");
    crates
}

/// The `rtx-*` crates of a manifest's `[dependencies]` table (not dev- or target-specific ones).
fn rtx_dependencies(manifest: &str) -> BTreeSet<String> {
    let mut in_table = false;
    let mut found = BTreeSet::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_table = line == "[dependencies]";
        } else if in_table && line.starts_with("rtx-") {
            let name = line.split(['.', ' ', '=']).next().unwrap_or_default();
            found.insert(name.to_owned());
        }
    }
    found
}

#[test]
fn every_crate_depends_on_exactly_what_the_architecture_says() {
    let crates = documented();
    let layers: BTreeSet<String> =
        crates.keys().filter(|name| !["rtx", "rtx-test-support"].contains(&name.as_str())).cloned().collect();
    for (name, (folder, documented)) in &crates {
        let manifest = if folder == "src" { "Cargo.toml".to_owned() } else { format!("{folder}/Cargo.toml") };
        let actual = rtx_dependencies(&read(&manifest));
        let expected = if documented.contains("*") { layers.clone() } else { documented.clone() };
        assert_eq!(actual, expected, "{name} ({folder}/Cargo.toml) against docs/ARCHITECTURE.md");
    }
    let on_disk: BTreeSet<String> = std::fs::read_dir(repo().join("crates"))
        .unwrap()
        .map(|entry| format!("crates/{}", entry.unwrap().file_name().to_string_lossy()))
        .collect();
    let listed: BTreeSet<String> = crates.values().map(|(folder, _)| folder.clone()).collect();
    let unlisted: Vec<&String> = on_disk.difference(&listed).collect();
    assert!(unlisted.is_empty(), "crates the table does not list: {unlisted:?}");
}

#[test]
fn the_crate_graph_has_no_cycle() {
    let crates = documented();
    let mut placed: Vec<&str> = Vec::new();
    while placed.len() < crates.len() {
        let next = crates.iter().find(|(name, (_, dependencies))| {
            !placed.contains(&name.as_str())
                && dependencies.iter().all(|d| d == "*" || placed.contains(&d.as_str()))
                && (!dependencies.contains("*") || placed.len() == crates.len() - 1)
        });
        let (name, _) = next.unwrap_or_else(|| panic!("a cycle among {:?}", crates.keys().collect::<Vec<_>>()));
        placed.push(name);
    }
}

#[test]
fn the_c_abi_names_no_layer_but_runtime_and_host() {
    let layers = ["bef", "hal", "kernel", "mlir", "onnx", "vm"];
    let mut offending = Vec::new();
    for entry in std::fs::read_dir(repo().join("src/ffi")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        for (number, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            let named = layers.iter().any(|layer| {
                code.contains(&format!("crate::{layer}::"))
                    || code.contains(&format!("crate::{layer};"))
                    || code.contains(&format!("rtx_{layer}::"))
            });
            if named {
                offending.push(format!("{}:{}: {}", path.display(), number + 1, line.trim()));
            }
        }
    }
    assert!(offending.is_empty(), "src/ffi uses layers other than runtime and host:\n{}", offending.join("\n"));
}
