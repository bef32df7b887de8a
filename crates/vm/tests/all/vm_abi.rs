//! The function ABI strings of real modules compiled by IREE 3.13: every calling convention parses
//! and prints back unchanged, and every export's `iree.abi.declaration` parses, prints back
//! unchanged, and describes the same values as its calling convention.

use rtx_test_support::{fixture_dir, fixtures};
use rtx_vm::abi::{
    AbiModel, AbiType, CallingConvention, CconvItem, DeclarationAttr, Dim, ElementType, FunctionReflection, ScalarType,
    TensorType, ValueKind,
};
use rtx_vm::Module;

/// Every module compiled for the tests: the interpreter fixtures and the loader fixtures.
fn load_all() -> Vec<(String, Module)> {
    let paths = fixtures();
    paths
        .into_iter()
        .map(|path| {
            let module = Module::load_file(&path).unwrap_or_else(|e| panic!("loading {}: {e}", path.display()));
            (path.display().to_string(), module)
        })
        .collect()
}

fn parse_cconv(fixture: &str, text: &str) -> CallingConvention {
    let cconv = CallingConvention::parse(text).unwrap_or_else(|e| panic!("{fixture}: {e}"));
    assert_eq!(cconv.to_string(), text, "{fixture}: `{text}` does not print back unchanged");
    cconv
}

#[test]
fn every_fixture_calling_convention_round_trips() {
    let (mut parsed, mut with_spans) = (0, 0);
    for (fixture, module) in load_all() {
        let signatures = module
            .function_signatures()
            .iter()
            .chain(module.imported_functions().iter().filter_map(|i| i.signature.as_ref()));
        for signature in signatures {
            let Some(text) = &signature.calling_convention else { continue };
            let cconv = parse_cconv(&fixture, text);
            parsed += 1;
            if cconv.has_spans() {
                with_spans += 1;
                assert_eq!(cconv.argument_registers(), None, "{fixture}: `{text}`");
            }
        }
        for (ordinal, signature) in module.function_signatures().iter().enumerate() {
            let Some(text) = &signature.calling_convention else { continue };
            let cconv = parse_cconv(&fixture, text);
            assert!(!cconv.has_spans(), "{fixture}: internal function {ordinal} has spans: `{text}`");
            let (i32_count, ref_count) = cconv.argument_registers().expect("no spans");
            let descriptor = &module.function_descriptors()[ordinal];
            assert!(
                i32_count <= u32::from(descriptor.i32_register_count)
                    && ref_count <= u32::from(descriptor.ref_register_count),
                "{fixture}: function {ordinal} `{text}` does not fit its frame"
            );
        }
    }
    assert!(parsed > 100, "only {parsed} calling conventions in the fixtures");
    // `hal.buffer_view.create`, `hal.command_buffer.dispatch`, ... in the HAL-using fixtures.
    assert!(with_spans > 5, "only {with_spans} variadic calling conventions in the fixtures");
}

#[test]
fn exported_declarations_agree_with_calling_conventions() {
    let mut checked = 0;
    for (fixture, module) in load_all() {
        for export in module.exported_functions() {
            let name = &export.local_name;
            let signature =
                module.export_signature(export).unwrap_or_else(|| panic!("{fixture}: `{name}` has no signature"));
            let cconv = signature
                .calling_convention
                .as_deref()
                .map_or_else(CallingConvention::default, |t| parse_cconv(&fixture, t));
            let reflection =
                FunctionReflection::from_signature(signature).unwrap_or_else(|e| panic!("{fixture}: `{name}`: {e}"));
            let Some(declaration) = &reflection.declaration else { continue };
            let DeclarationAttr::Parsed(declaration) = declaration else {
                panic!("{fixture}: `{name}`: the compiler's declaration did not parse: {declaration:?}");
            };
            let text = signature.attr("iree.abi.declaration").unwrap_or_default();
            assert_eq!(
                declaration.to_string(),
                text,
                "{fixture}: `{name}`: the declaration does not print back unchanged"
            );
            assert_eq!(&declaration.name, name, "{fixture}");
            assert_eq!(declaration.is_async, reflection.model == AbiModel::CoarseFences, "{fixture}: `{name}`");
            reflection.check_calling_convention(&cconv).unwrap_or_else(|e| panic!("{fixture}: `{name}`: {e}"));
            // The check above skips types of unknown kind; the fixtures have none.
            let declared = declaration.arguments.iter().chain(&declaration.results);
            assert!(declared.clone().all(|value| value.ty.value_kind().is_some()), "{fixture}: `{name}`");
            assert_eq!(declared.count(), cconv.arguments.len() + cconv.results.len(), "{fixture}: `{name}`");
            checked += 1;
        }
    }
    // 73 scalar exports in the interpreter fixtures, plus `abs`, `add`, `accumulate`, ... in the
    // loader fixtures.
    assert!(checked >= 80, "only {checked} exports with a declaration");
}

#[test]
fn scalar_export_declaration_matches_its_kinds() {
    let module = Module::load_file(fixture_dir("").join("float_math.vmfb")).expect("float_math loads");
    let export = module.lookup_export("cast_f32").expect("cast_f32 is exported");
    let signature = module.export_signature(export).expect("signature");
    assert_eq!(signature.calling_convention.as_deref(), Some("0f_iiI"));
    let reflection = FunctionReflection::from_signature(signature).unwrap();
    let declaration = reflection.parsed_declaration().expect("declaration");
    assert_eq!(
        declaration.to_string(),
        "sync func @cast_f32(%input0: f32) -> (%output0: i32, %output1: i32, %output2: i64)"
    );
    let kinds: Vec<_> = declaration.results.iter().map(|r| r.ty.value_kind()).collect();
    assert_eq!(kinds, [Some(ValueKind::I32), Some(ValueKind::I32), Some(ValueKind::I64)]);
    let cconv = CallingConvention::parse("0f_iiI").unwrap();
    let layout = cconv.result_layout().expect("no spans");
    let ordinals: Vec<_> = layout.slots().iter().map(|slot| slot.ordinal).collect();
    assert_eq!(ordinals, [0, 1, 2]);
    assert_eq!(cconv.result_registers(), Some((4, 0)));
}

#[test]
fn tensor_export_declaration_is_classified() {
    let module = Module::load_file(fixture_dir("loader").join("abs_vmvx.vmfb")).expect("abs_vmvx loads");
    let export = module.lookup_export("abs").expect("abs is exported");
    let signature = module.export_signature(export).expect("signature");
    let reflection = FunctionReflection::from_signature(signature).unwrap();
    let declaration = reflection.parsed_declaration().expect("declaration");
    let tensor = AbiType::Tensor(TensorType {
        dims: vec![Dim::Static(4)],
        element: ElementType::Scalar(ScalarType::F32),
        encoding: None,
    });
    assert_eq!(declaration.arguments[0].ty, tensor);
    assert_eq!(declaration.results[0].ty, tensor);
    let cconv = CallingConvention::parse(signature.calling_convention.as_deref().unwrap()).unwrap();
    assert_eq!(cconv.arguments, [CconvItem::Value(ValueKind::Ref)]);
    assert_eq!(cconv.results, [CconvItem::Value(ValueKind::Ref)]);
}

#[test]
fn hal_import_spans_are_grouped() {
    let module = Module::load_file(fixture_dir("loader").join("abs_vmvx.vmfb")).expect("abs_vmvx loads");
    let dispatch = module
        .imported_functions()
        .iter()
        .find(|import| import.full_name == "hal.command_buffer.dispatch")
        .expect("abs dispatches");
    let text = dispatch.signature.as_ref().and_then(|s| s.calling_convention.as_deref()).expect("import cconv");
    let cconv = CallingConvention::parse(text).unwrap();
    // cmd, executable, ordinal, x, y, z, flags, constants..., bindings...: one segment per item.
    assert_eq!(cconv.arguments.len(), 9);
    assert_eq!(cconv.arguments[7], CconvItem::Span(vec![ValueKind::I32]));
    assert!(matches!(&cconv.arguments[8], CconvItem::Span(tuple) if tuple.len() == 5));
}
