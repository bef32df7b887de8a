//! Arbitrary bytes through the whole `.vmfb` path a host runs (see `fuzz/run_module.rs`). Every
//! stage must answer with an error, never a panic, abort, hang or unbounded allocation; the budget
//! turns hostile loops and recursion into DEADLINE_EXCEEDED. `crates/vm/tests/all/vm_hostile.rs`
//! runs the checked-in reproducers through the same steps.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../run_module.rs"]
mod run_module;

fuzz_target!(|data: &[u8]| {
    run_module::run_module(data, |_, _| {});
});
