//! Function structures `mlir_to_bef` never writes, which a hostile or foreign file may hold.

use super::*;
use crate::test_file::{assemble, function, kernel};
use rtx_mlir::print_asm;

fn disassemble(functions: &[crate::test_file::TestFunction]) -> Result<Disassembly, DisassembleError> {
    bef_to_mlir(&assemble(functions), "t.bef")
}

#[test]
fn anonymous_functions_become_the_regions_of_their_kernels() {
    let disassembly = disassemble(&[
        function("", &[], &[]),
        function("main", &[], &[]).kernel(kernel("t.loop", &[], &[]).function(0)),
    ])
    .unwrap();
    assert_eq!(disassembly.warnings, [MISSING_OPTIONAL_SECTIONS]);
    let text = print_asm(&disassembly.module, rtx_mlir::AsmOptions::default()).unwrap();
    assert!(text.contains("\"t.loop\"() ({\n      tfrt.return\n    }) : () -> ()"), "{text}");
}

#[test]
fn an_anonymous_function_must_be_the_region_of_exactly_one_kernel() {
    let unused = disassemble(&[function("", &[], &[]), function("main", &[], &[])]).unwrap_err();
    assert_eq!(unused.to_string(), "function 0: anonymous, yet no kernel's region");
    let shared = disassemble(&[
        function("", &[], &[]),
        function("main", &[], &[])
            .kernel(kernel("t.a", &[], &[]).function(0))
            .kernel(kernel("t.b", &[], &[]).function(0)),
    ])
    .unwrap_err();
    assert!(shared.to_string().contains("already another kernel's region"), "{shared}");
}

#[test]
fn regions_that_nest_in_each_other_are_refused() {
    let error = disassemble(&[
        function("", &[], &[]).kernel(kernel("t.a", &[], &[]).function(1)),
        function("", &[], &[]).kernel(kernel("t.b", &[], &[]).function(0)),
    ])
    .unwrap_err();
    assert!(error.to_string().contains("its region nests in itself"), "{error}");
}

#[test]
fn a_register_used_before_its_kernel_runs_is_refused() {
    // Kernel 1 uses the register kernel 2 defines: a valid dataflow graph, but not a block.
    let error = disassemble(&[function("main", &[], &[]).kernel(kernel("t.use", &[0], &[])).kernel(kernel(
        "t.def",
        &[],
        &[0],
    ))])
    .unwrap_err();
    assert_eq!(error.to_string(), "function 0, kernel 1: register 0 is used before it is defined");
}
