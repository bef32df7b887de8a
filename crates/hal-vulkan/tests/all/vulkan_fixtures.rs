//! Consistency of the Vulkan fixture set in tests/fixtures/vulkan (see
//! scripts/regen/vulkan-fixtures.sh): every source has its module and its record of dumped SPIR-V,
//! every invocation names a module function and has the output `iree-run-module --device=vulkan`
//! printed. With `RTX_CHECK_FIXTURES=1` and the IREE tools at hand, the fixtures are regenerated into
//! a scratch directory and compared byte for byte, so a stale fixture fails.

use rtx_test_support::{assert_fixtures_fresh, fixtures_dir, invocations_in, stems};
use std::collections::BTreeSet;
use std::fs;
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    fixtures_dir().join("vulkan")
}

#[test]
fn every_source_has_a_module_and_an_executable_record() {
    let sources = stems(&fixtures().join("src"), ".mlir");
    assert!(sources.len() >= 4, "expected at least four fixture sources, found {sources:?}");
    assert_eq!(stems(&fixtures(), ".vmfb"), sources, "one .vmfb per src/*.mlir, and no others");
    assert_eq!(stems(&fixtures(), ".executables.txt"), sources, "one .executables.txt per src/*.mlir");
}

#[test]
fn every_invocation_has_the_expected_output_of_its_command() {
    let modules = stems(&fixtures(), ".vmfb");
    let mut expected_files = BTreeSet::new();
    for invocation in invocations_in(&fixtures()) {
        assert!(
            modules.contains(&invocation.module),
            "invocations.txt:{}: no module {:?}",
            invocation.line,
            invocation.module
        );
        let path = fixtures().join("expected").join(&invocation.expected);
        let expected = fs::read_to_string(&path)
            .unwrap_or_else(|error| panic!("invocations.txt:{}: {}: {error}", invocation.line, path.display()));
        let mut command = format!(
            "$ iree-run-module --device=vulkan --module={}.vmfb --function={}",
            invocation.module, invocation.function
        );
        for flag in &invocation.flags {
            command.push(' ');
            command.push_str(flag);
        }
        let mut lines = expected.lines();
        assert_eq!(lines.next(), Some(command.as_str()), "{} ran another command", path.display());
        assert_eq!(lines.next(), Some("exit status: 0"), "{}: the fixture invocations all succeed", path.display());
        assert_eq!(lines.nth(1), Some(format!("EXEC @{}", invocation.function).as_str()), "{}", path.display());
        expected_files.insert(invocation.expected);
    }
    let on_disk: BTreeSet<String> =
        stems(&fixtures().join("expected"), ".txt").into_iter().map(|s| s + ".txt").collect();
    assert_eq!(on_disk, expected_files, "expected/ holds exactly one file per invocation");
}

#[test]
fn checked_in_fixtures_match_a_fresh_regeneration() {
    assert_fixtures_fresh("regen/vulkan-fixtures.sh", &fixtures(), &["expected"], &["invocations.txt"]);
}
