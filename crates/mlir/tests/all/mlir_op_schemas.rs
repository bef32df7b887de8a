//! Registered ops' native properties (the op schemas of `crates/mlir/src/ods/schemas.rs`) against
//! upstream MLIR: every fixture written by `scripts/regen/mlir-schema-fixtures.sh` (IREE 3.13's
//! iree-opt, bytecode versions 5 and 6; stablehlo, chlo, iree_linalg_ext, iree_encoding,
//! iree_vector_ext, hal_inline, hal_loader, io_parameters and llvm ops with optional attributes
//! present and absent, and segment sizes; llvm, affine and util ops with non-attribute properties;
//! ub, bufferization, quant and ml_program ops; torch, torch_c and tm_tensor ops; spirv ops with
//! their optional attributes and implicit `sym_visibility`; spirv group, non-uniform, cooperative
//! matrix, image, integer dot product and spec-constant ops; emitc, pdl_interp, arm_sve, arm_sme
//! and nvgpu ops) reads with no properties left opaque,
//! prints as iree-opt's generic print (checked-in `<name>.generic.mlir`, parsed and printed by rtx), and
//! survives rtx's own write→read.
//! With `RTX_CHECK_FIXTURES=1` and the IREE tools, iree-opt must re-print rtx's generic text and
//! rtx's v5/v6 bytecode exactly as its own print of the source.

use std::path::PathBuf;

use rtx_mlir::ir::{Module, Properties};
use rtx_mlir::{parse_text, print_generic, read_bytecode, write_bytecode, PrintOptions, WriteOptions};
use rtx_test_support::{fixtures_dir, iree_tools_or_skip, mlir_fixtures, upstream_generic};

fn fixture_dir() -> PathBuf {
    fixtures_dir().join("mlir/schemas")
}

/// Every `.mlirbc` fixture, sorted: (name, version, path).
fn fixtures() -> Vec<(String, u32, PathBuf)> {
    mlir_fixtures(&fixture_dir(), 10)
}

fn expected(name: &str) -> String {
    std::fs::read_to_string(fixture_dir().join(format!("{name}.generic.mlir"))).expect("expected text")
}

fn read(path: &std::path::Path, what: &str) -> Module {
    read_bytecode(&std::fs::read(path).unwrap()).unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// The names of the ops whose properties stayed in their native encoding.
fn opaque_ops(module: &Module) -> Vec<String> {
    module
        .walk()
        .into_iter()
        .filter(|&op| matches!(module.op(op).properties, Properties::Opaque(_)))
        .map(|op| module.op_name(op).into_owned())
        .collect()
}

fn first_difference(expected: &str, actual: &str) -> String {
    for (i, (e, a)) in expected.lines().zip(actual.lines()).enumerate() {
        if e != a {
            return format!("line {}:\n  expected: {e}\n  actual:   {a}", i + 1);
        }
    }
    format!("lengths differ: {} vs {} lines", expected.lines().count(), actual.lines().count())
}

fn print(module: &Module, what: &str) -> String {
    print_generic(module, PrintOptions { debuginfo: true }).unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// rtx's print of upstream's generic print: what rtx's print of the bytecode must equal. rtx's
/// printer has its own spelling (`%v0` names, quoted attribute names, no aliases), so the two
/// modules are compared through it rather than against upstream's text byte for byte; iree-opt's
/// re-print of rtx's text is compared exactly by `upstream_reads_rtx_text_and_bytecode_as_the_source`.
fn expected_in_rtx_spelling(name: &str) -> String {
    let module = parse_text(&expected(name)).unwrap_or_else(|e| panic!("{name}.generic.mlir: {e}"));
    print(&module, name)
}

#[test]
fn every_fixture_decodes_all_properties_and_prints_as_upstream() {
    let mut failures = Vec::new();
    for (name, version, path) in fixtures() {
        let what = format!("{name} v{version}");
        let module = read(&path, &what);
        let opaque = opaque_ops(&module);
        assert!(opaque.is_empty(), "{what}: properties left opaque: {opaque:?}");
        let text = print(&module, &what);
        let expected = expected_in_rtx_spelling(&name);
        if text != expected {
            failures.push(format!("{what}: {}", first_difference(&expected, &text)));
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn fixtures_exercise_optional_attributes_and_segment_sizes() {
    let stablehlo = expected("stablehlo");
    // Optional attributes both present and absent.
    assert!(stablehlo.contains("\"stablehlo.compare\"(%") && stablehlo.contains("compare_type = "));
    assert!(stablehlo.contains("\"stablehlo.dot_general\""));
    let linalg_ext = expected("iree_linalg_ext");
    assert!(linalg_ext.contains("operandSegmentSizes = array<i32: "), "no segment sizes in iree_linalg_ext");
    let order = expected("name_order");
    assert!(order.contains("<{CConv = #llvm.cconv<fastcc>, alignment = 16 : i64"), "{order}");
    assert!(order.contains("<{CConv = #llvm.cconv<fastcc>, TailCallKind = "), "{order}");
    let props = expected("llvm_props");
    assert!(props.contains("noWrapFlags = 0 : i32") && props.contains("noWrapFlags = 7 : i32"), "{props}");
    assert!(props.contains("overflowFlags = 3 : i32"), "{props}");
    assert!(props.contains("<{disjoint = false, ") && props.contains("<{disjoint, "), "{props}");
    let strings = expected("iree_props");
    assert!(strings.contains(r#"<{inverseTag = "to_x", tag = ""}>"#), "{strings}");
    let misc = expected("upstream_misc");
    for op in ["ub.poison", "bufferization.alloc_tensor", "quant.scast", "ml_program.global_load"] {
        assert!(misc.contains(&format!("\"{op}\"")), "no {op} in upstream_misc");
    }
    let torch = expected("torch");
    for op in ["torch.constant.int", "torch.class_type", "torch_c.to_builtin_tensor", "tm_tensor.scatter"] {
        assert!(torch.contains(&format!("\"{op}\"")), "no {op} in torch");
    }
    let spirv = expected("spirv");
    assert!(spirv.contains("\"spirv.Load\"(%") && spirv.contains("memory_access = #spirv.memory_access<Volatile>"));
    assert!(spirv.contains("\"spirv.BranchConditional\"") && spirv.contains("branch_weights = [5 : i32, 10 : i32]"));
    assert!(spirv.contains("built_in = \"GlobalInvocationId\""), "{spirv}");
    let spirv_more = expected("spirv_more");
    for op in [
        "spirv.GroupNonUniformFAdd",
        "spirv.KHR.CooperativeMatrixLoad",
        "spirv.SDotAccSat",
        "spirv.SpecConstantComposite",
        "spirv.ImageSampleExplicitLod",
    ] {
        assert!(spirv_more.contains(&format!("\"{op}\"")), "no {op} in spirv_more");
    }
    assert!(spirv_more.contains("alignment = 16 : i32, matrix_layout = #spirv.coop_matrix_layout_khr<RowMajor>, memory_operand = #spirv.memory_access<Aligned>"), "{spirv_more}");
    assert!(spirv_more.contains("<{format = #spirv.packed_vector_format<PackedVectorFormat4x8Bit>}>"), "{spirv_more}");
    let emitc = expected("emitc");
    assert!(
        emitc.contains("<{const_specifier, initial_value = 4 : i32, static_specifier, sym_name = \"g2\", type = i32}>"),
        "{emitc}"
    );
    assert!(emitc.contains("<{class_type = 0 : i32, final_specifier, sym_name = \"D\"}>"), "{emitc}");
    let arm = expected("arm_misc");
    assert!(
        arm.contains("<{layout = #arm_sme.layout<vertical>, operandSegmentSizes = array<i32: 1, 2, 1, 1>}>"),
        "{arm}"
    );
    assert!(arm.contains("<{kind = #arm_sme.kind<sub>, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>}>"), "{arm}");
    assert!(arm.contains("\"arm_sve.dupq_lane\"") && arm.contains("<{lane = 1 : i64}>"), "{arm}");
    let nvgpu = expected("nvgpu");
    assert!(
        nvgpu.contains("<{bypassL1, dstElements = 8 : index, operandSegmentSizes = array<i32: 1, 3, 1, 2, 1>}>"),
        "{nvgpu}"
    );
    assert!(nvgpu.contains("<{mmaShape = [16, 8, 4], tf32Enabled}>"), "{nvgpu}");
    let pdl_interp = expected("pdl_interp");
    assert!(pdl_interp.contains("<{isNegated = true, name = \"myConstraint\"}>"), "{pdl_interp}");
    assert!(
        pdl_interp.contains(
            "operandSegmentSizes = array<i32: 2, 1>, rewriter = @rewriters::@rewrite, rootKind = \"foo.op\"}>"
        ),
        "{pdl_interp}"
    );
}

#[test]
fn writer_refuses_a_property_that_does_not_fit_its_native_encoding() {
    let text = r#""builtin.module"() ({
  "llvm.func"() <{CConv = #llvm.cconv<ccc>, function_type = !llvm.func<ptr (ptr)>, linkage = #llvm.linkage<external>, sym_name = "f", unnamed_addr = 0 : i64, visibility_ = 0 : i64}> ({
  ^bb0(%arg0: !llvm.ptr):
    %0 = "llvm.getelementptr"(%arg0) <{elem_type = f32, noWrapFlags = "nuw", rawConstantIndices = array<i32: 1>}> : (!llvm.ptr) -> !llvm.ptr
    "llvm.return"(%0) : (!llvm.ptr) -> ()
  }) : () -> ()
}) : () -> ()
"#;
    let module = parse_text(text).expect("generic text");
    let error = write_bytecode(&module, &WriteOptions { version: 6, ..WriteOptions::default() })
        .expect_err("a string noWrapFlags has no native encoding");
    let message = error.to_string();
    assert!(message.contains("noWrapFlags") && message.contains("i32"), "{message}");
}

#[test]
fn rtx_bytecode_reads_back_to_the_same_print() {
    for (name, version, path) in fixtures() {
        let what = format!("{name} v{version}");
        let module = read(&path, &what);
        let before = print(&module, &what);
        for out_version in [5, 6] {
            let bytes = write_bytecode(&module, &WriteOptions { version: out_version, ..WriteOptions::default() })
                .unwrap_or_else(|e| panic!("{what} → v{out_version}: {e}"));
            let again = read_bytecode(&bytes).unwrap_or_else(|e| panic!("{what} → v{out_version}: {e}"));
            assert!(opaque_ops(&again).is_empty(), "{what} → v{out_version}");
            let after = print(&again, &what);
            assert!(before == after, "{what} → v{out_version}: {}", first_difference(&before, &after));
        }
    }
}

#[test]
fn upstream_reads_rtx_text_and_bytecode_as_the_source() {
    let Some(tools) = iree_tools_or_skip() else { return };
    let scratch = std::env::temp_dir().join(format!("rtx-mlir-schemas-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let mut failures = Vec::new();
    for (name, version, path) in fixtures() {
        let expected = expected(&name);
        // The checked-in expectation is still what iree-opt prints of the fixture.
        match upstream_generic(&tools, &path) {
            Ok(text) if text == expected => {}
            Ok(text) => failures.push(format!("{name} v{version}: stale: {}", first_difference(&expected, &text))),
            Err(error) => failures.push(format!("{name} v{version}: upstream cannot read the fixture: {error}")),
        }
        let module = read(&path, &name);
        let mut inputs = Vec::new();
        let text_path = scratch.join(format!("{name}.v{version}.mlir"));
        std::fs::write(&text_path, print(&module, &name)).unwrap();
        inputs.push(("text".to_owned(), text_path));
        for out_version in [5, 6] {
            let bytes =
                write_bytecode(&module, &WriteOptions { version: out_version, ..WriteOptions::default() }).unwrap();
            let bc_path = scratch.join(format!("{name}.v{version}.to-v{out_version}.mlirbc"));
            std::fs::write(&bc_path, bytes).unwrap();
            inputs.push((format!("v{out_version} bytecode"), bc_path));
        }
        for (kind, input) in inputs {
            match upstream_generic(&tools, &input) {
                Ok(reprint) if reprint == expected => {}
                Ok(reprint) => failures.push(format!(
                    "{name} v{version}: upstream's print of rtx's {kind} differs:\n{}",
                    first_difference(&expected, &reprint)
                )),
                Err(error) => failures.push(format!("{name} v{version}: upstream rejects rtx's {kind}: {error}")),
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    let _ = std::fs::remove_dir_all(&scratch);
}
