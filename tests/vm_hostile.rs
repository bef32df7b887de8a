//! Hostile modules run end to end, exactly as the `vm_module` fuzz target runs them (fuzz/): load,
//! link into a context with a small budget (`__init` runs), invoke every export with fixed
//! arguments. Nothing may panic, abort, hang or exhaust memory, and every error must say what went
//! wrong. `tests/vm_load.rs` and `tests/vm_verify.rs` pin *which* error the loader gives for
//! hand-made corruptions; this file only checks that whatever loads also runs safely.
//!
//! `tests/fixtures/vm/hostile/` holds the fuzzer's minimized reproducers, one per distinct bug
//! found, each run here so a fixed bug stays fixed: `list_resize_4gib.vmfb` resized a list to
//! 0x20000004 i64 elements, which zero-filled 4 GiB before lists got a size limit.

use std::path::PathBuf;
use std::sync::Arc;

use rtx::vm::abi::{CallingConvention, CconvItem, ValueKind};
use rtx::vm::context::Context;
use rtx::vm::value::Value;
use rtx::vm::Module;

mod common;

/// The fuzz target's budget (branches + calls per invocation); keep the two in step.
const BUDGET: u64 = 10_000;

/// What running one module did: how far it got, for the tests' sanity checks.
#[derive(Debug, Default, PartialEq, Eq)]
struct Outcome {
    loaded: bool,
    linked: bool,
    invoked: usize,
}

/// Loads `bytes` and runs it like the fuzz target, asserting that every error carries a message.
fn run_like_the_fuzzer(what: &str, bytes: &[u8]) -> Outcome {
    let mut outcome = Outcome::default();
    let module = match Module::load_memory(bytes) {
        Ok(module) => module,
        Err(error) => {
            assert!(!error.message.is_empty(), "{what}: load error without a message");
            assert!(error.offset <= bytes.len(), "{what}: load error offset past the file: {error}");
            return outcome;
        }
    };
    outcome.loaded = true;
    let exports: Vec<String> = module.exported_functions().iter().map(|e| e.local_name.clone()).collect();
    let context = Context::new();
    context.set_budget(BUDGET);
    if let Err(error) = context.add_module(Arc::new(module)) {
        assert!(!error.message.is_empty(), "{what}: link error without a message");
        return outcome;
    }
    outcome.linked = true;
    for name in exports {
        let handle = match context.lookup(&name) {
            Ok(handle) => handle,
            Err(error) => {
                assert!(!error.message.is_empty(), "{what}: lookup error without a message");
                continue;
            }
        };
        let Ok(cconv) = CallingConvention::parse(&handle.cconv) else { continue };
        if cconv.has_spans() {
            continue;
        }
        let arguments = cconv
            .arguments
            .iter()
            .map(|item| match item {
                CconvItem::Value(ValueKind::I32) => Value::I32(7),
                CconvItem::Value(ValueKind::I64) => Value::I64(-3),
                CconvItem::Value(ValueKind::F32) => Value::F32(1.5),
                CconvItem::Value(ValueKind::F64) => Value::F64(1.5),
                CconvItem::Value(ValueKind::Ref) | CconvItem::Span(_) => Value::Ref(None),
            })
            .collect();
        if let Err(error) = context.invoke(&handle, arguments) {
            assert!(!error.message.is_empty(), "{what}: `{name}` failed without a message");
        }
        outcome.invoked += 1;
    }
    outcome
}

fn hostile_dir() -> PathBuf {
    common::fixture_dir("hostile")
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
    for path in common::fixtures() {
        let bytes = std::fs::read(&path).unwrap();
        let outcome = run_like_the_fuzzer(&path.display().to_string(), &bytes);
        assert!(outcome.loaded, "{}", path.display());
        invoked += outcome.invoked;
    }
    assert!(invoked >= 50, "only {invoked} exports ran");
}

#[test]
fn truncated_fixtures_fail_cleanly_when_run() {
    // tests/vm_load.rs loads every truncation of the loader fixtures; here every 97th cut of every
    // fixture is also linked and run, which is where a cut that still loads would do harm.
    for path in common::fixtures() {
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
    // tests/vm_verify.rs checks that corrupted bytecode loads or is rejected; the corruptions that
    // load (a changed constant, a different register of the right bank, a swapped opcode with the
    // same operands) are run here.
    let mut state = 0x5DEE_CE66_D1CE_4E5Bu64;
    let mut ran = 0;
    for path in common::fixtures() {
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
