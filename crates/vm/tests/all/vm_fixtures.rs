//! Consistency of the VM fixture set in tests/fixtures/vm (see scripts/regen/vm-fixtures.sh):
//! every source has its module and dump, every invocation names a module and has its expected
//! output, and every module looks like a `.vmfb`. With `RTX_CHECK_FIXTURES=1` and the IREE tools at
//! hand, the fixtures are also regenerated into a scratch directory and compared byte for byte, so a
//! stale fixture fails.

use std::collections::BTreeSet;
use std::fs;
use std::path::PathBuf;

use rtx_test_support::{assert_fixtures_fresh, fixture_dir, invocations, stems};

fn fixtures() -> PathBuf {
    fixture_dir("")
}

#[test]
fn every_source_has_a_module_and_a_dump() {
    let sources = stems(&fixtures().join("src"), ".mlir");
    assert!(sources.len() >= 7, "expected the seven fixture sources, found {sources:?}");
    assert_eq!(stems(&fixtures(), ".vmfb"), sources, "one .vmfb per src/*.mlir, and no others");
    assert_eq!(stems(&fixtures(), ".dump.txt"), sources, "one .dump.txt per src/*.mlir, and no others");
}

#[test]
fn modules_start_with_zip_or_flatbuffer_magic() {
    for name in stems(&fixtures(), ".vmfb") {
        let bytes = fs::read(fixtures().join(format!("{name}.vmfb"))).expect("readable module");
        let zip = bytes.starts_with(b"PK\x03\x04");
        // A bare size-prefixed FlatBuffer carries the file identifier `IREE` after the size and root offset.
        let flatbuffer = bytes.get(8..12) == Some(b"IREE".as_slice());
        assert!(zip || flatbuffer, "{name}.vmfb starts with neither PK\\3\\4 nor a FlatBuffer with identifier IREE");
    }
}

#[test]
fn every_invocation_names_a_module_function_and_expected_output() {
    let modules = stems(&fixtures(), ".vmfb");
    let invocations = invocations();
    let mut expected_files = BTreeSet::new();
    for invocation in &invocations {
        assert!(
            modules.contains(&invocation.module),
            "invocations.txt:{}: no module {:?}",
            invocation.line,
            invocation.module
        );
        let dump = fs::read_to_string(fixtures().join(format!("{}.dump.txt", invocation.module))).expect("dump");
        assert!(
            dump.contains(&format!("vm.export @{}", invocation.function))
                || dump.contains(&format!("as(\"{}\")", invocation.function))
                || dump.contains(&format!("] {}(", invocation.function)),
            "invocations.txt:{}: {} exports no function {:?}",
            invocation.line,
            invocation.module,
            invocation.function
        );
        let path = fixtures().join("expected").join(&invocation.expected);
        let expected = fs::read_to_string(&path)
            .unwrap_or_else(|error| panic!("invocations.txt:{}: {}: {error}", invocation.line, path.display()));
        let mut command = format!(
            "$ iree-run-module --device=local-sync --module={}.vmfb --function={}",
            invocation.module, invocation.function
        );
        for flag in &invocation.flags {
            command.push(' ');
            command.push_str(flag);
        }
        assert_eq!(expected.lines().next(), Some(command.as_str()), "{} ran another command", path.display());
        assert!(
            expected.lines().nth(1).is_some_and(|line| line.starts_with("exit status: ")),
            "{} lacks its exit status",
            path.display()
        );
        expected_files.insert(invocation.expected.clone());
    }
    let on_disk: BTreeSet<String> =
        stems(&fixtures().join("expected"), ".txt").into_iter().map(|s| s + ".txt").collect();
    assert_eq!(on_disk, expected_files, "expected/ holds exactly one file per invocation");
}

#[test]
fn every_exported_function_has_an_invocation() {
    let invoked: BTreeSet<(String, String)> =
        invocations().into_iter().map(|invocation| (invocation.module, invocation.function)).collect();
    for module in stems(&fixtures(), ".dump.txt") {
        let dump = fs::read_to_string(fixtures().join(format!("{module}.dump.txt"))).expect("dump");
        // The metadata section lists exports as `  [  0] name(args) -> (results)`.
        let exports = dump
            .split("Exported Functions:")
            .nth(1)
            .expect("dump lists exported functions")
            .lines()
            .skip(1)
            .take_while(|line| !line.trim().is_empty())
            .filter_map(|line| line.trim().strip_prefix('[')?.split_once("] ")?.1.split_once('(').map(|(n, _)| n))
            .map(str::to_owned)
            .collect::<Vec<_>>();
        assert!(!exports.is_empty(), "{module}.dump.txt lists no exports");
        // `__init` and other `__`-prefixed exports are the compiler's module initialisers, which the
        // runtime calls itself when the module is loaded.
        for function in exports.into_iter().filter(|function| !function.starts_with("__")) {
            assert!(
                invoked.contains(&(module.clone(), function.clone())),
                "{module}.{function} has no line in invocations.txt"
            );
        }
    }
}

#[test]
fn checked_in_fixtures_match_a_fresh_regeneration() {
    assert_fixtures_fresh(
        "regen/vm-fixtures.sh",
        &fixtures(),
        &["expected", "loader"],
        &["invocations.txt", "loader/variants.txt"],
    );
}
