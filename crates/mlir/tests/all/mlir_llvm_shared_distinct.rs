//! `distinct` attributes shared between LLVM debug-info attributes, loop annotations and access
//! groups (`tests/fixtures/mlir/dialects/src/llvm_shared.mlir`): a compile unit named by every
//! subprogram, a recursive struct, two access groups that upstream writes as text entries each
//! printed `distinct[0]`. Each distinct attribute must stay exactly one attribute through every
//! path: upstream bytecode → rtx → text or bytecode, and upstream's text → rtx → bytecode.
//! Without the IREE tools the identities are counted (upstream's own print has 6); with them,
//! iree-opt must print what rtx wrote exactly as it prints the source, locations included.

use std::collections::BTreeSet;
use std::path::PathBuf;

use rtx_mlir::{parse_text, print_generic, read_bytecode, write_bytecode, Module, PrintOptions, WriteOptions};
use rtx_test_support::{fixtures_dir, iree_tools_or_skip, upstream_generic};

fn dir() -> PathBuf {
    fixtures_dir().join("mlir/dialects")
}

/// The distinct ids of a generic print (one numbering for the whole text).
fn distinct_ids(text: &str) -> BTreeSet<u64> {
    text.match_indices("distinct[")
        .map(|(at, key)| {
            let digits: String = text[at + key.len()..].chars().take_while(char::is_ascii_digit).collect();
            digits.parse().expect("a distinct id")
        })
        .collect()
}

fn print(module: &Module) -> String {
    print_generic(module, PrintOptions { debuginfo: false }).expect("prints")
}

fn reread(module: &Module, version: u32) -> Module {
    let bytes = write_bytecode(module, &WriteOptions { version, ..WriteOptions::default() }).expect("writes");
    read_bytecode(&bytes).expect("reads back")
}

#[test]
fn every_distinct_attribute_stays_one() {
    let expected = std::fs::read_to_string(dir().join("llvm_shared.generic.mlir")).unwrap();
    let identities = distinct_ids(&expected).len();
    assert_eq!(identities, 6, "upstream's print");
    for version in 0..=6 {
        let path = dir().join(format!("llvm_shared.v{version}.mlirbc"));
        let module = read_bytecode(&std::fs::read(&path).unwrap()).unwrap();
        let text = print(&module);
        assert_eq!(distinct_ids(&text).len(), identities, "v{version}: rtx's print of upstream's bytecode:\n{text}");
        for target in 0..=6 {
            let again = print(&reread(&module, target));
            assert_eq!(distinct_ids(&again).len(), identities, "v{version} -> rtx v{target}:\n{again}");
        }
        let parsed = parse_text(&text).expect("rtx parses its print");
        let again = print(&reread(&parsed, 6));
        assert_eq!(distinct_ids(&again).len(), identities, "v{version} -> text -> rtx v6:\n{again}");
    }
}

#[test]
fn upstream_reads_what_rtx_writes_from_upstreams_text() {
    let Some(tools) = iree_tools_or_skip() else { return };
    let source = dir().join("src/llvm_shared.mlir");
    let expected = upstream_generic(&tools, &source).expect("upstream prints the source");
    let module = parse_text(&expected).expect("rtx parses upstream's generic print with aliases");
    let scratch = std::env::temp_dir().join(format!("rtx-llvm-shared-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let mut failures = Vec::new();
    for version in 0..=6 {
        let bytes = write_bytecode(&module, &WriteOptions { version, ..WriteOptions::default() }).unwrap();
        let path = scratch.join(format!("v{version}.mlirbc"));
        std::fs::write(&path, bytes).unwrap();
        match upstream_generic(&tools, &path) {
            Ok(reprint) if reprint == expected => {}
            Ok(reprint) => failures.push(format!("v{version}: upstream prints rtx's bytecode as\n{reprint}")),
            Err(error) => failures.push(format!("v{version}: upstream rejects rtx's bytecode: {error}")),
        }
        let upstream_bc = dir().join(format!("llvm_shared.v{version}.mlirbc"));
        let expected = upstream_generic(&tools, &upstream_bc).expect("upstream prints its bytecode");
        let read = read_bytecode(&std::fs::read(&upstream_bc).unwrap()).unwrap();
        let bytes = write_bytecode(&read, &WriteOptions { version, ..WriteOptions::default() }).unwrap();
        std::fs::write(&path, bytes).unwrap();
        match upstream_generic(&tools, &path) {
            Ok(reprint) if reprint == expected => {}
            Ok(reprint) => failures.push(format!("upstream v{version} -> rtx: upstream prints\n{reprint}")),
            Err(error) => failures.push(format!("upstream v{version} -> rtx: upstream rejects it: {error}")),
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
