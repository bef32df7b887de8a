//! Hostile modules run end to end, exactly as the `vm_module` fuzz target runs them (fuzz/): load,
//! link into a context with a small budget (`__init` runs), invoke every export with fixed
//! arguments. Nothing may panic, abort, hang or exhaust memory, and every error must say what went
//! wrong. `vm_load.rs` and `vm_verify.rs` beside this file pin *which* error the loader gives for
//! hand-made corruptions; this file only checks that whatever loads also runs safely.
//!
//! `tests/fixtures/vm/hostile/` holds the fuzzer's minimized reproducers, one per distinct bug
//! found, each run here so a fixed bug stays fixed: `list_resize_4gib.vmfb` resized a list to
//! 0x20000004 i64 elements, which zero-filled 4 GiB before lists got a size limit.

use std::path::PathBuf;

use rtx_vm::Module;

#[path = "../../../../fuzz/run_module.rs"]
mod run_module;

use rtx_test_support::{fixture_dir, fixtures};
use run_module::{run_module, Outcome};

/// Runs `bytes` like the fuzz target, asserting that every error carries a message and that a
/// load error's offset lies inside the file.
fn run_like_the_fuzzer(what: &str, bytes: &[u8]) -> Outcome {
    let outcome = run_module(bytes, |stage, message| {
        assert!(!message.is_empty(), "{what}: {stage} error without a message");
    });
    if let Some(offset) = outcome.load_error_offset {
        assert!(offset <= bytes.len(), "{what}: load error offset {offset} past the file");
    }
    outcome
}

fn hostile_dir() -> PathBuf {
    fixture_dir("hostile")
}

fn hostile_files() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(hostile_dir())
        .unwrap_or_else(|e| panic!("reading {}: {e}", hostile_dir().display()))
        .map(|entry| entry.expect("readable directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "vmfb"))
        .collect();
    paths.sort();
    paths
}

#[test]
fn fuzzer_reproducers_fail_cleanly() {
    let files = hostile_files();
    assert!(!files.is_empty(), "{} has no reproducers", hostile_dir().display());
    for path in &files {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        run_like_the_fuzzer(&path.display().to_string(), &bytes);
    }
}

#[test]
fn every_fixture_runs_under_the_fuzzers_budget() {
    // The baseline the other tests corrupt: unmodified fixtures load, and those without imports
    // link and run every export.
    let mut invoked = 0;
    for path in fixtures() {
        let bytes = std::fs::read(&path).unwrap();
        let outcome = run_like_the_fuzzer(&path.display().to_string(), &bytes);
        assert!(outcome.loaded, "{}", path.display());
        invoked += outcome.invoked;
    }
    assert!(invoked >= 50, "only {invoked} exports ran");
}

#[test]
fn truncated_fixtures_fail_cleanly_when_run() {
    // vm_load.rs loads every truncation of the loader fixtures; here every 97th cut of every
    // fixture is also linked and run, which is where a cut that still loads would do harm.
    for path in fixtures() {
        let bytes = std::fs::read(&path).unwrap();
        for len in (0..bytes.len()).step_by(97) {
            run_like_the_fuzzer(&format!("{}[..{len}]", path.display()), &bytes[..len]);
        }
    }
}

/// Deterministic xorshift64 so failures reproduce without a `rand` dependency.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn corrupted_bytecode_that_verifies_runs_safely() {
    // vm_verify.rs checks that corrupted bytecode loads or is rejected; the corruptions that
    // load (a changed constant, a different register of the right bank, a swapped opcode with the
    // same operands) are run here.
    let mut state = 0x5DEE_CE66_D1CE_4E5Bu64;
    let mut ran = 0;
    for path in fixtures() {
        let bytes = std::fs::read(&path).unwrap();
        let range = Module::load_memory(&bytes).unwrap().def().bytecode_data;
        let mut copy = bytes.clone();
        for _ in 0..120 {
            let at = range.offset + (xorshift(&mut state) % range.len as u64) as usize;
            let original = copy[at];
            copy[at] ^= (xorshift(&mut state) % 255 + 1) as u8;
            let outcome = run_like_the_fuzzer(&format!("{} byte {at}", path.display()), &copy);
            ran += usize::from(outcome.linked);
            copy[at] = original;
        }
    }
    assert!(ran > 150, "only {ran} corrupted modules got as far as running");
}
