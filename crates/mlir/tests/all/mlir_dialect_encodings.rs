//! Other dialects' own attribute/type encodings (stablehlo, chlo, quant, llvm, vhlo) against
//! upstream MLIR:
//! every fixture written by `scripts/regen/mlir-dialect-fixtures.sh` (IREE 3.13's iree-opt,
//! bytecode versions 0–6) reads with no entry left in its dialect encoding, and each decoded
//! entry's text is exactly what iree-opt printed for it (checked-in `<name>.generic.mlir`, no
//! aliases). With `RTX_CHECK_FIXTURES=1` and the IREE tools, iree-opt must re-print rtx's generic
//! text and rtx's bytecode exactly as its own print of the source. Corrupted payloads give errors,
//! never panics.

use std::path::PathBuf;

use rtx_mlir::ir::{Attribute, Module, Type};
use rtx_mlir::{print_generic, read_bytecode, write_bytecode, PrintOptions, WriteOptions};
use rtx_test_support::{fixtures_dir, iree_tools_or_skip, mlir_fixtures, upstream_generic, upstream_print};

fn fixture_dir() -> PathBuf {
    fixtures_dir().join("mlir/dialects")
}

/// Every `.mlirbc` fixture, sorted: (name, version, path).
fn fixtures() -> Vec<(String, u32, PathBuf)> {
    mlir_fixtures(&fixture_dir(), 35)
}

fn expected(name: &str) -> String {
    std::fs::read_to_string(fixture_dir().join(format!("{name}.generic.mlir"))).expect("expected text")
}

/// The texts of every non-builtin attribute and type of the module; panics on an entry still in
/// its dialect's encoding.
fn dialect_texts(module: &Module, what: &str) -> Vec<String> {
    let ctx = &module.context;
    let mut texts = Vec::new();
    for attr in ctx.attrs() {
        match attr {
            Attribute::Text { text, .. } => texts.push(ctx.str(*text).into_owned()),
            Attribute::Custom { dialect, payload } => {
                panic!("{what}: attribute of {} left encoded: {:?}", ctx.dialect_name(*dialect), payload.bytes())
            }
            _ => {}
        }
    }
    for ty in ctx.types() {
        match ty {
            Type::Text { text, .. } => texts.push(ctx.str(*text).into_owned()),
            Type::Custom { dialect, .. } => panic!("{what}: type of {} left encoded", ctx.dialect_name(*dialect)),
            _ => {}
        }
    }
    texts
}

#[test]
fn every_entry_decodes_to_upstreams_text() {
    for (name, version, path) in fixtures() {
        let what = format!("{name} v{version}");
        let module = read_bytecode(&std::fs::read(&path).unwrap()).unwrap_or_else(|e| panic!("{what}: {e}"));
        let expected = expected(&name);
        let texts = dialect_texts(&module, &what);
        assert!(texts.len() >= 3, "{what}: {texts:?}");
        let expected = without_distinct_numbers(&expected);
        for text in texts {
            // `distinct[N]` numbers inside decoded texts follow rtx's order, not upstream's print.
            let text = without_distinct_numbers(&text);
            // Entries that upstream prints only nested, without their `#dialect.mnemonic` prefix
            // (and, for some, without their closing `>`).
            let nested_only = [
                ("#stablehlo<sub_axis_info", true),
                ("#stablehlo.mesh_axis", false),
                ("#llvm<di_expression_elem", true),
                ("#llvm.di_expression_elem", false),
                ("#llvm.di_source_language_name<language = ", true),
            ]
            .iter()
            .find_map(|&(prefix, close)| {
                let body = text.strip_prefix(prefix)?;
                Some(if close { body.strip_suffix('>').unwrap_or(body) } else { body })
            })
            // LLVM attribute parameters of a concrete class print as `<...>` without
            // `#llvm.mnemonic` (and `#llvm.di_expression_elem` as its bare body).
            .or_else(|| {
                let body = text.strip_prefix("#llvm.")?;
                Some(body.trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_'))
            });
            let found = match nested_only {
                Some(body) => expected.contains(body),
                // VHLO types named only by `#vhlo.tensor_v1` attributes print as builtin types.
                None => expected.contains(&text) || expected.contains(&vhlo_as_builtin(&text)),
            };
            assert!(found, "{what}: `{text}` is not in upstream's print");
        }
        print_generic(&module, PrintOptions::default()).unwrap_or_else(|e| panic!("{what}: {e}"));
    }
}

/// A VHLO type's text with its VHLO types spelled as their builtin counterparts
/// (`!vhlo.tensor_v1<2x!vhlo.i64_v1>` is `tensor<2xi64>`), as `#vhlo.tensor_v1` prints its type.
fn vhlo_as_builtin(text: &str) -> String {
    let mut out = text.replace("!vhlo.tensor_v1<", "tensor<").replace("!vhlo.complex_v1<", "complex<");
    out = out.replace("!vhlo.bool_v1", "i1").replace("!vhlo.tf31_v1", "tf32");
    while let Some(at) = out.find("!vhlo.") {
        let rest = &out[at + "!vhlo.".len()..];
        let Some(end) = rest.find("_v1") else { break };
        out = format!("{}{}{}", &out[..at], &rest[..end], &rest[end + "_v1".len()..]);
    }
    out
}

/// `text` with every `distinct[N]` written `distinct[_]`.
fn without_distinct_numbers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("distinct[") {
        out.push_str(&rest[..at + "distinct[".len()]);
        rest = rest[at + "distinct[".len()..].trim_start_matches(|c: char| c.is_ascii_digit());
        out.push('_');
    }
    out.push_str(rest);
    out
}

#[test]
fn known_entries_decode_exactly() {
    let module = read_bytecode(&std::fs::read(fixture_dir().join("stablehlo.v6.mlirbc")).unwrap()).unwrap();
    let texts = dialect_texts(&module, "stablehlo v6");
    for text in [
        "#stablehlo<comparison_direction EQ>",
        "#stablehlo.conv<[f, 2, 0, b, 1]x[o, 0, 1, 2, i]->[2, b, 1, 0, f]>",
        "#stablehlo.dot<>",
        "#stablehlo.result_accuracy<atol = 1.000000e-05, rtol = 0.1234565, ulps = 2, mode = \
         #stablehlo.result_accuracy_mode<TOLERANCE>>",
        "#stablehlo.axis_ref<name = \"y\\22\\\\z\", sub_axis_info = (1)2>",
        "#stablehlo.mesh<axes=[<name = \"x\", size = 2>, <name = \"y\", size = 4>]>",
        "!stablehlo.future<tensor<f32>, tensor<2xi32>>",
    ] {
        assert!(texts.iter().any(|t| t == text), "{text} missing from {texts:#?}");
    }
    let module = read_bytecode(&std::fs::read(fixture_dir().join("quant.v6.mlirbc")).unwrap()).unwrap();
    let texts = dialect_texts(&module, "quant v6");
    for text in [
        "!quant.uniform<i8:f32, 5.000000e-01:10>",
        "!quant.uniform<u4<1:14>:f16:1, {2.000000e+00:3,5.000000e-01,1.2345678899999999E-7:4}>",
        "!quant.calibrated<f64<-0.99699999999999999:0x419D6F3454000000>>",
        "!quant.uniform<i8:f32:{0:1, 1:2}, {{2.000000e+00:10, 3.000000e+00:20}, {4.000000e+00:30, 5.000000e+00:40}}>",
    ] {
        assert!(texts.iter().any(|t| t == text), "{text} missing from {texts:#?}");
    }
    let module = read_bytecode(&std::fs::read(fixture_dir().join("llvm.v6.mlirbc")).unwrap()).unwrap();
    let texts = dialect_texts(&module, "llvm v6");
    for text in [
        "#llvm.di_file<\"foo.c\" in \"/dir \\22q\\22\">",
        "#llvm.di_basic_type<tag = DW_TAG_base_type, name = \"int\", sizeInBits = 32, encoding = DW_ATE_signed>",
        "#llvm.di_expression<[DW_OP_deref, DW_OP_plus_uconst(3), DW_OP_LLVM_convert(16, DW_ATE_signed), \
         DW_OP_LLVM_fragment(0, 8)]>",
        "#llvm.di_composite_type<tag = DW_TAG_structure_type, flags = Public>",
        "#llvm.di_namespace<exportSymbols = false>",
        "#llvm.loop_annotation<>",
    ] {
        assert!(texts.iter().any(|t| t == text), "{text} missing from {texts:#?}");
    }
}

#[test]
fn vhlo_covers_every_code_at_every_version() {
    for version in 0..=6 {
        let what = format!("vhlo v{version}");
        let path = fixture_dir().join(format!("vhlo.v{version}.mlirbc"));
        let module = read_bytecode(&std::fs::read(path).unwrap()).unwrap_or_else(|e| panic!("{what}: {e}"));
        let texts = dialect_texts(&module, &what);
        for text in [
            "!vhlo.tf31_v1",
            "!vhlo.f8E8M0FNU_v1",
            "!vhlo.func_v1<(()) -> ()>",
            "!vhlo.func_v1<(!vhlo.i32_v1) -> !vhlo.i8_v1, !vhlo.tuple_v1<!vhlo.token_v1, !vhlo.tuple_v1<!vhlo.bool_v1>>>",
            "!vhlo.tensor_v1<?x3x!vhlo.f32_v1, #vhlo.type_extensions_v1<bounds = [4, ?]>>",
            "!vhlo.quant_per_axis_v1<!vhlo.i4_v1:!vhlo.f16_v1, 3, [1.000000e+00, 2.000000e-01, -0.99699999999999999], [0, \
             -1, 7], -8:7, 1>",
            "!vhlo.quant_v1<!vhlo.ui4_v1:!vhlo.bf16_v1, 9.9999999999999995E-8:-2, 0:15, 0>",
            "!vhlo.buffer_v1<2x?x!vhlo.index_v1>",
            "!vhlo.future_v1<!vhlo.tensor_v1<!vhlo.f32_v1>, !vhlo.none_v1>",
            "!vhlo.unranked_tensor_v1<!vhlo.ui64_v1>",
            "#vhlo<api_version_v1 API_VERSION_TYPED_FFI>",
            "#vhlo.integer_v1<18446744073709551615 : ui64>",
            "#vhlo.integer_v1<-9223372036854775808 : i64>",
            "#vhlo.float_v1<-0.99699999999999999 : !vhlo.f64_v1>",
            "#vhlo.string_v1<\"a\\22b\\0A\\\\\\C3\\BC\">",
            "#vhlo.mesh_v1<axes = #vhlo.array_v1<[#vhlo.mesh_axis_v1<name = #vhlo.string_v1<\"x\">, size = 2>]>, device_ids \
             = #vhlo.tensor_v1<dense<[1, 0]> : tensor<2xi64>>>",
            "#vhlo.tensor_v1<dense<[1.015630e-01, 4.480000e+02, -0.000000e+00, 1.953130e-03, 0x7F]> : tensor<5xf8E4M3FN>>",
            "#vhlo.tensor_v1<dense<[true, false, true, true, false, false, true, true, false, true]> : tensor<10xi1>>",
            "#vhlo.tensor_v1<dense<true> : tensor<10xi1>>",
            "#vhlo.tensor_v1<dense<7> : tensor<200x3xi32>>",
            "#vhlo.tensor_v1<dense<[(1,-2), (3,4)]> : tensor<2xcomplex<i16>>>",
            "#vhlo.tensor_v1<dense<[1.500000e+00, 2.000000e+00]> : tensor<2xf32, #vhlo.type_extensions_v1<bounds = [4]>>>",
        ] {
            assert!(texts.iter().any(|t| t == text), "{what}: {text} missing from {texts:#?}");
        }
        // Tensors of more than 100 elements print their data in hex, as upstream does.
        let hex = texts.iter().filter(|t| t.contains("dense<\"0x")).count();
        assert!(hex >= 2, "{what}: large tensors print as hex: {hex}");
        print_generic(&module, PrintOptions::default()).unwrap_or_else(|e| panic!("{what}: {e}"));
    }
}

#[test]
fn upstream_reads_rtx_text_and_bytecode_as_the_source() {
    let Some(tools) = iree_tools_or_skip() else { return };
    let scratch = std::env::temp_dir().join(format!("rtx-mlir-dialects-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let mut failures = Vec::new();
    for (name, version, path) in fixtures() {
        let expected = expected(&name);
        let module = read_bytecode(&std::fs::read(&path).unwrap()).unwrap();
        let text = print_generic(&module, PrintOptions { debuginfo: true }).unwrap();
        let text_path = scratch.join(format!("{name}.v{version}.mlir"));
        std::fs::write(&text_path, &text).unwrap();
        let bytes = write_bytecode(&module, &WriteOptions { version, ..WriteOptions::default() }).unwrap();
        let bc_path = scratch.join(format!("{name}.v{version}.mlirbc"));
        std::fs::write(&bc_path, &bytes).unwrap();
        for (kind, input) in [("text", &text_path), ("bytecode", &bc_path)] {
            match upstream_print(&tools, input, "--mlir-print-local-scope") {
                Ok(reprint) if reprint == expected => {}
                Ok(reprint) => failures.push(format!(
                    "{name} v{version}: upstream's print of rtx's {kind} differs:\n{}",
                    first_difference(&expected, &reprint)
                )),
                Err(error) => failures.push(format!("{name} v{version}: upstream rejects rtx's {kind}: {error}")),
            }
        }
        // The generic print with locations matches upstream's too.
        match upstream_generic(&tools, &path) {
            Ok(_) => {}
            Err(error) => failures.push(format!("{name} v{version}: upstream cannot read the fixture: {error}")),
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    let _ = std::fs::remove_dir_all(&scratch);
}

fn first_difference(expected: &str, actual: &str) -> String {
    for (i, (e, a)) in expected.lines().zip(actual.lines()).enumerate() {
        if e != a {
            return format!("line {}:\n  expected: {e}\n  actual:   {a}", i + 1);
        }
    }
    format!("lengths differ: {} vs {} lines", expected.lines().count(), actual.lines().count())
}

#[test]
fn truncated_and_corrupted_payloads_give_errors_not_panics() {
    let mut payload_errors = 0;
    for (name, version, path) in fixtures() {
        if version != 6 && version != 1 {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        for len in 0..bytes.len() {
            assert!(read_bytecode(&bytes[..len]).is_err(), "{name} v{version} truncated to {len} reads");
        }
        for position in 0..bytes.len() {
            for value in [0x00, 0x7f, 0xff, bytes[position] ^ 1] {
                let mut corrupt = bytes.clone();
                corrupt[position] = value;
                match read_bytecode(&corrupt) {
                    Ok(module) => {
                        let _ = print_generic(&module, PrintOptions::default());
                    }
                    Err(error) => {
                        assert!(error.offset <= bytes.len(), "{name}: offset {} past the end", error.offset);
                        let message = error.to_string();
                        if [
                            "stablehlo",
                            "chlo",
                            "quant",
                            "comparison",
                            "scale",
                            "conv",
                            "storage",
                            "llvm",
                            "DWARF",
                            "distinct",
                            "vhlo",
                        ]
                        .iter()
                        .any(|w| message.contains(w))
                        {
                            payload_errors += 1;
                        }
                    }
                }
            }
        }
    }
    assert!(payload_errors > 0, "no corruption hit a dialect payload");
}
