//! The generic-form text parser against upstream MLIR and against rtx's own bytecode reader and
//! printer: upstream's generic prints of every fixture parse to the module the bytecode holds;
//! what rtx prints parses back to the same module; with `RTX_CHECK_FIXTURES=1` and the IREE tools,
//! iree-opt re-prints rtx's text of a parsed fixture exactly as upstream's own generic print.
//! Malformed text gives an error with a line and column, never a panic.

use std::path::PathBuf;

use rtx_mlir::ir::{Attribute, Properties};
use rtx_mlir::{parse_text, parse_text_with, print_generic, read_bytecode, ParseOptions, PrintOptions};
use rtx_test_support::{fixtures_dir, iree_tools_or_skip, upstream_generic};

fn fixture_dir() -> PathBuf {
    fixtures_dir().join("mlir")
}

fn print(module: &rtx_mlir::Module) -> String {
    print_generic(module, PrintOptions { debuginfo: true }).expect("print")
}

/// Every upstream generic print: (file, the bytecode fixture holding the same module).
fn generic_fixtures() -> Vec<(PathBuf, PathBuf)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(fixture_dir()).expect("fixture dir") {
        let path = entry.expect("entry").path();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(stem) = file.strip_suffix(".generic.mlir") else { continue };
        let bytecode = match stem.rsplit_once(".v") {
            Some((name, version)) if version.parse::<u32>().is_ok() => format!("{name}.v{version}.mlirbc"),
            _ => format!("{stem}.v6.mlirbc"),
        };
        out.push((path, fixture_dir().join(bytecode)));
    }
    out.sort();
    assert!(out.len() >= 8, "expected the generic fixtures, found {}", out.len());
    out
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
fn rtx_text_of_every_bytecode_fixture_parses_back_to_the_same_module() {
    let mut checked = 0;
    for entry in std::fs::read_dir(fixture_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "mlirbc") {
            continue;
        }
        let module = read_bytecode(&std::fs::read(&path).unwrap()).unwrap();
        let Ok(text) = print_generic(&module, PrintOptions { debuginfo: true }) else { continue };
        let verbatim = ParseOptions { verbatim_properties: true, ..ParseOptions::default() };
        let parsed = parse_text_with(&text, &verbatim).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let again = print(&parsed);
        assert!(text == again, "{}: {}", path.display(), first_difference(&text, &again));
        // Without debuginfo too (every location becomes unknown).
        let plain = print_generic(&module, PrintOptions { debuginfo: false }).unwrap();
        let parsed =
            parse_text_with(&plain, &verbatim).unwrap_or_else(|e| panic!("{} (no debuginfo): {e}", path.display()));
        assert_eq!(plain, print_generic(&parsed, PrintOptions { debuginfo: false }).unwrap());
        checked += 1;
    }
    assert!(checked >= 60, "only {checked} fixtures checked");
}

#[test]
fn upstream_generic_prints_parse_to_the_bytecode_module() {
    let mut failures = Vec::new();
    for (generic, bytecode) in generic_fixtures() {
        let text = std::fs::read_to_string(&generic).unwrap();
        // The reader keeps a registered op's properties as the file had them: from v5 on as
        // properties (upstream's semantics, which the parser follows by default), before v5
        // among the attributes (which `verbatim_properties` keeps).
        let pre_v5 = bytecode.to_string_lossy().ends_with(|c: char| c < '5' && c.is_ascii_digit())
            || [".v0.", ".v1.", ".v2.", ".v3.", ".v4."].iter().any(|v| bytecode.to_string_lossy().contains(v));
        let options = ParseOptions { verbatim_properties: pre_v5, ..ParseOptions::default() };
        let parsed = match parse_text_with(&text, &options) {
            Ok(m) => m,
            Err(e) => {
                failures.push(format!("{}: {e}", generic.display()));
                continue;
            }
        };
        let expected = print(&read_bytecode(&std::fs::read(&bytecode).unwrap()).unwrap());
        let actual = print(&parsed);
        if expected != actual {
            failures.push(format!(
                "{} vs {}: {}",
                generic.display(),
                bytecode.display(),
                first_difference(&expected, &actual)
            ));
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn generic_sources_parse_with_upstream_source_locations() {
    // Sources in generic form; ops and block arguments without `loc` get `"file":line:col`.
    for name in ["attributes", "locations", "types", "unregistered"] {
        let file = format!("tests/fixtures/mlir/src/{name}.mlir");
        let text = std::fs::read_to_string(fixture_dir().join(format!("src/{name}.mlir"))).unwrap();
        let parsed = parse_text_with(&text, &ParseOptions { file_name: Some(file), ..ParseOptions::default() })
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let expected =
            print(&read_bytecode(&std::fs::read(fixture_dir().join(format!("{name}.v6.mlirbc"))).unwrap()).unwrap());
        let actual = print(&parsed);
        assert!(expected == actual, "{name}: {}", first_difference(&expected, &actual));
    }
}

#[test]
fn custom_syntax_of_ops_without_a_known_form_is_refused_with_a_hint() {
    for name in ["large_dense", "nested_modules", "registered", "resources"] {
        let text = std::fs::read_to_string(fixture_dir().join(format!("src/{name}.mlir"))).unwrap();
        let error = parse_text(&text).unwrap_err();
        assert!(error.message.contains("unknown custom operation 'arith."), "{name}: {error}");
        assert!(error.message.contains("is written generic"), "{name}: {error}");
        assert!(error.line > 1, "{name}: {error}");
    }
}

#[test]
fn upstream_reprints_rtx_text_of_parsed_fixtures_exactly() {
    let Some(tools) = iree_tools_or_skip() else { return };
    let scratch = std::env::temp_dir().join(format!("rtx-mlir-parse-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let mut failures = Vec::new();
    for (generic, _) in generic_fixtures() {
        let expected = std::fs::read_to_string(&generic).unwrap();
        let text = print(&parse_text(&expected).unwrap());
        let ours = scratch.join(generic.file_name().unwrap());
        std::fs::write(&ours, &text).unwrap();
        match upstream_generic(&tools, &ours) {
            Ok(reprint) if reprint == expected => {}
            Ok(reprint) => failures.push(format!("{}: {}", generic.display(), first_difference(&expected, &reprint))),
            Err(error) => failures.push(format!("{}: upstream rejects rtx's text: {error}", generic.display())),
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    let _ = std::fs::remove_dir_all(&scratch);
}

// ---- structure ----

#[test]
fn forward_references_multiple_results_and_implicit_module() {
    let text = r#"
%x:2 = "test.pair"() : () -> (i32, i64)
"test.use"(%later, %x#1) : (f32, i64) -> ()
%later = "test.def"() : () -> f32
"#;
    let module = parse_text(text).unwrap();
    assert_eq!(module.top_level.len(), 1);
    assert_eq!(module.op_name(module.top_level[0]), "builtin.module");
    let names: Vec<_> = module.walk().into_iter().map(|op| module.op_name(op).into_owned()).collect();
    assert_eq!(names, ["builtin.module", "test.pair", "test.use", "test.def"]);
    let walk = module.walk();
    let operands = module.operands(walk[2]);
    assert_eq!(module.value(operands[0]).def, rtx_mlir::ir::ValueDef::OpResult { op: walk[3], index: 0 });
    assert_eq!(module.value(operands[1]).def, rtx_mlir::ir::ValueDef::OpResult { op: walk[1], index: 1 });
}

#[test]
fn values_in_nested_regions_see_outer_values_and_may_reuse_names_when_isolated() {
    let text = r#"
"test.outer"() ({
^bb0(%a: i32):
  %0 = "test.x"(%a) : (i32) -> i32
  "test.inner"() ({
    "test.use"(%0) : (i32) -> ()
  }) : () -> ()
  "test.isolated"() ({
    "test.use"(%0) : (index) -> ()
    %0 = "test.y"() : () -> index
  }) : () -> ()
  "test.br"()[^next] : () -> ()
^next:
  "test.end"() : () -> ()
}) : () -> ()
"#;
    let module = parse_text(text).unwrap();
    let text = print(&module);
    assert_eq!(print(&parse_text(&text).unwrap()), text);
}

#[test]
fn attributes_and_properties_are_structured() {
    let text = r#""test.op"() <{n = 3 : i64}> {b = 1 : i8, a = dense<[1, 1]> : tensor<2xi32>, c = #foo.bar<"x", #foo.baz<1>>} : () -> ()"#;
    let module = parse_text(text).unwrap();
    let op = module.walk()[1];
    let ctx = &module.context;
    let Properties::Dict(props) = module.op(op).properties else { panic!("properties") };
    assert!(matches!(ctx.attr(props), Attribute::Dictionary(e) if e.len() == 1));
    let Attribute::Dictionary(entries) = ctx.attr(module.op(op).attrs.unwrap()) else { panic!() };
    let key = |i: usize| match ctx.attr(entries[i].0) {
        Attribute::String { value, .. } => ctx.str(*value).into_owned(),
        _ => panic!(),
    };
    assert_eq!([key(0), key(1), key(2)], ["a", "b", "c"], "dictionaries are sorted");
    // All-equal dense data is a splat of one element, as upstream stores it.
    assert!(matches!(ctx.attr(entries[0].1), Attribute::DenseElements { data, .. } if data.len() == 4));
    assert!(matches!(ctx.attr(entries[2].1), Attribute::Text { .. }));
}

#[test]
fn registered_ops_take_inherent_attributes_from_the_dictionary_into_properties() {
    let text = r#"%0 = "arith.constant"() {value = 1 : i32, other} : () -> i32"#;
    let module = parse_text(text).unwrap();
    let op = module.walk()[1];
    assert!(matches!(module.op(op).properties, Properties::Dict(_)));
    assert!(module.context.op_name(module.op(op).name).registered);
    let printed = print(&module);
    assert!(printed.contains(r#"<{"value" = 1 : i32}> {"other" = unit}"#), "{printed}");
}

#[test]
fn aliases_are_substituted_into_dialect_text() {
    let text = r#"
#map = affine_map<(d0) -> (d0)>
!t = !foo.type<#map>
"test.op"() {a = #map, t = !t} : () -> () loc(#l)
#l = loc("f.py":1:2)
"#;
    let module = parse_text(text).unwrap();
    let printed = print(&module);
    assert!(printed.contains(r#""t" = !foo.type<affine_map<(d0) -> (d0)>>"#), "{printed}");
    assert!(printed.contains("loc(\"f.py\":1:2)"), "{printed}");
}

/// Upstream prints a typed dialect attribute with its type (`#util.byte_pattern<1> : tensor<4xi8>`),
/// also in alias definitions; the type belongs to the attribute, and an alias defined without one
/// ends where its attribute does.
#[test]
fn typed_dialect_attributes_keep_their_type() {
    let text = "#t = #hal.device.target<\"local\"> : !hal.device\n#e = #foo.e<1>\n\
                \"test.op\"() {a = #util.byte_pattern<1> : tensor<4xi8>, b = #t, c = [#e]} : () -> ()\n";
    let printed = print(&parse_text(text).unwrap());
    assert!(printed.contains(r#""a" = #util.byte_pattern<1> : tensor<4xi8>"#), "{printed}");
    assert!(printed.contains(r#""b" = #hal.device.target<"local"> : !hal.device"#), "{printed}");
    assert!(printed.contains(r#""c" = [#foo.e<1>]"#), "{printed}");
}

#[test]
fn resources_keep_their_alignment() {
    let text = r#"
"test.op"() {r = dense_resource<blob> : tensor<2xi16>, e = dense_resource<missing> : tensor<1xi8>} : () -> ()
{-#
  dialect_resources: { builtin: { blob: "0x080000000100020" } }
#-}
"#;
    let error = parse_text(text).unwrap_err();
    assert!(error.message.contains("hex"), "{error}");
    let module = parse_text(&text.replace("020\"", "0200\"")).unwrap();
    let group = &module.resources.dialect[0];
    assert!(
        matches!(&group.entries[0].value, rtx_mlir::ir::ResourceValue::Blob { alignment: 8, data } if data.bytes() == [1, 0, 2, 0])
    );
    assert_eq!(group.entries[1].value, rtx_mlir::ir::ResourceValue::Elided);
}

// ---- errors ----

fn error_of(text: &str) -> rtx_mlir::ParseError {
    parse_text(text).expect_err("must fail")
}

#[test]
fn errors_carry_line_and_column() {
    let cases: &[(&str, u32, u32, &str)] = &[
        ("\"test.op\"(%a : () -> ()", 1, 14, "expected ')' to end the operand list"),
        ("\"test.op\"() ({\n  \"test.x\"() : () -> ()\n) : () -> ()", 3, 1, "expected '}' to end a region"),
        ("\"test.op\"(%nope) : (i32) -> ()", 1, 11, "use of undeclared SSA value name '%nope'"),
        ("%0 = \"a.b\"() : () -> i32\n%0 = \"a.c\"() : () -> i32", 2, 1, "redefinition of SSA value '%0'"),
        ("\"test.op\"() {x = 256 : i8} : () -> ()", 1, 18, "integer constant out of range"),
        ("\"test.op\"() {x = -1 : ui8} : () -> ()", 1, 18, "negative integer literal"),
        ("\"test.op\"() {x = \"abc} : () -> ()", 1, 18, "unterminated string literal"),
        ("\"test.op\"() {x = #foo.bar<[1, 2>} : () -> ()", 1, 32, "unbalanced '>'"),
        ("\"test.op\"() {x = [1, 2} : () -> ()", 1, 23, "expected ']'"),
        ("\"test.op\"()[^missing] : () -> ()", 1, 13, "reference to an undefined block"),
        ("func.func @f() {\n  arith.addi %a, %b : i32\n}", 2, 3, "unknown custom operation 'arith.addi'"),
        ("\"test.op\"() : () -> () loc(#nowhere)", 1, 28, "undefined location alias '#nowhere'"),
        ("\"test.op\"() : (i32) -> ()", 1, 15, "expected 0 operand types but had 1"),
        ("%0 = \"a.b\"() : () -> i32\n\"a.c\"(%0) : (i64) -> ()", 2, 7, "expects a different type"),
        ("\"test.op\"() {x = 1.5 : i32} : () -> ()", 1, 18, "floating point value not valid"),
        ("\"test.op\"() {x = dense<[1, 2, 3]> : tensor<2xi32>} : () -> ()", 1, 24, "does not match type"),
    ];
    for &(text, line, column, message) in cases {
        let error = error_of(text);
        assert!(error.message.contains(message), "{text:?}: {error}");
        assert_eq!((error.line, error.column), (line, column), "{text:?}: {error}");
        assert!(error.to_string().starts_with(&format!("{line}:{column}: ")));
    }
    // Upstream's generic form puts `]` before the successor block on the previous line: the error
    // for the missing block points at its first reference.
    let error = error_of("\"a.b\"() ({\n  \"a.br\"()[^bb9] : () -> ()\n}) : () -> ()");
    assert_eq!((error.line, error.column), (2, 12), "{error}");
}

#[test]
fn excessive_nesting_is_an_error_not_a_stack_overflow() {
    let depth = 5000;
    let arrays = format!("\"t.op\"() {{x = {}{}}} : () -> ()", "[".repeat(depth), "]".repeat(depth));
    assert!(error_of(&arrays).message.contains("nesting deeper than"));
    let regions = format!("{}{}", "\"t.op\"() ({\n".repeat(depth), "}) : () -> ()\n".repeat(depth));
    assert!(error_of(&regions).message.contains("nesting deeper than"));
    let types = format!("\"t.op\"() : () -> ({}i32{})", "tuple<".repeat(depth), ">".repeat(depth));
    assert!(error_of(&types).message.contains("nesting deeper than"));
    let dense =
        format!("\"t.op\"() {{x = dense<{}1{}> : tensor<1xi32>}} : () -> ()", "[".repeat(depth), "]".repeat(depth));
    assert!(error_of(&dense).message.contains("nesting deeper than"));
    let body = format!("\"t.op\"() {{x = #a.b<{}{}>}} : () -> ()", "(".repeat(depth), ")".repeat(depth));
    assert!(error_of(&body).message.contains("nesting deeper than"));
    let affine =
        format!("\"t.op\"() {{x = affine_map<(d0) -> ({}d0{})>}} : () -> ()", "(".repeat(depth), ")".repeat(depth));
    assert!(error_of(&affine).message.contains("nesting deeper than"));
    let locs =
        format!("\"t.op\"() : () -> () loc({}unknown{})", "callsite(".repeat(depth), " at unknown)".repeat(depth));
    assert!(error_of(&locs).message.contains("nesting deeper than"));
    // Within the limit, deep nesting parses.
    let ok = format!("{}{}", "\"t.op\"() ({\n".repeat(120), "}) : () -> ()\n".repeat(120));
    parse_text(&ok).unwrap();
}

/// A small deterministic generator (xorshift), so the mutation test is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn random_edits_of_fixture_text_never_panic() {
    const INTERESTING: &[u8] = b"%^#!@\"(){}[]<>:,=-0123456789x.?*\\ \nabcdefiuloc";
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut sources = Vec::new();
    for (generic, _) in generic_fixtures() {
        let text = std::fs::read_to_string(&generic).unwrap();
        if text.len() < 200_000 {
            sources.push(text.into_bytes());
        }
    }
    let mut outcomes = [0usize; 2];
    for round in 0..4000 {
        let mut bytes = sources[round % sources.len()].clone();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(bytes.len());
            match rng.below(4) {
                0 => bytes[at] = INTERESTING[rng.below(INTERESTING.len())],
                1 => {
                    bytes.remove(at);
                }
                2 => bytes.insert(at, INTERESTING[rng.below(INTERESTING.len())]),
                _ => {
                    let end = (at + rng.below(64)).min(bytes.len());
                    bytes.drain(at..end);
                }
            }
        }
        let text = String::from_utf8_lossy(&bytes);
        match parse_text(&text) {
            Ok(module) => {
                outcomes[0] += 1;
                // Whatever parses must print (unless it holds something unprintable) and parse again.
                if let Ok(printed) = print_generic(&module, PrintOptions { debuginfo: true }) {
                    let again = parse_text(&printed).unwrap_or_else(|e| panic!("reparse: {e}\n{printed}"));
                    assert_eq!(print(&again), printed);
                }
            }
            Err(error) => {
                outcomes[1] += 1;
                assert!(error.line >= 1 && error.column >= 1);
            }
        }
    }
    assert!(outcomes[1] > 1000, "{outcomes:?}");
}

/// Repeated dictionaries and function types are looked up by their text; text that merely starts
/// like an earlier one (an alias name going on with `-`, a type body after it, a longer
/// dictionary) must still parse to its own attribute or type. Expected: the same ops one per
/// module, where nothing repeats.
#[test]
fn repeated_dictionaries_and_function_types_parse_as_written() {
    let ops = [
        r#""t.a"() {a = {b = 1 : i64}} : () -> !t.x"#,
        r#""t.b"() {a = {b = 1 : i64}, c = 2 : i64} : () -> !t.x<1>"#,
        r#""t.c"() {a = {b = 1 : i64}} : () -> !xy"#,
        r#""t.g"() {a = {b = 1 : i64}} : () -> !xy-z"#,
        r#""t.d"() {a = {b = "}"}} : () -> (!t.x, i32)"#,
        r#""t.e"() {a = {b = 1 : i64}} : () -> !t.x"#,
        r#""t.f"() {a = {b = "}"}} : () -> !t.x<1>"#,
        r#""t.h"() {a = {b = "\"}{\\"}} : () -> !t.x"#,
        r#""t.i"() {a = {b = "\"}{\\"}, c = 3 : i64} : () -> !t.x"#,
    ];
    let aliases = "!xy = i8\n!xy-z = i16\n";
    let together = parse_text(&format!("{aliases}{}\n", ops.join("\n"))).expect("module parses");
    let printed = print(&together);
    for op in ops {
        let alone = print(&parse_text(&format!("{aliases}{op}\n")).expect("op parses"));
        let line = alone.lines().find_map(|l| l.find("\"t.").map(|at| &l[at..])).expect("the op");
        assert!(printed.lines().any(|l| l.ends_with(line)), "{line} not in\n{printed}");
    }
}

/// A dialect attribute whose text is a model's weights (here 300 KB of hex, past the size the
/// context keeps apart): aliased, used twice and spelled out once more, it is one attribute, its
/// text substituted whole where an alias names it inside another dialect's text, and written to
/// bytecode and read back unchanged, beside a small one.
#[test]
fn large_dialect_texts_are_one_attribute_written_and_read_whole() {
    let hex: String = (0..150_000).map(|i| format!("{:02X}", (i * 7 % 256) as u8)).collect();
    let weights = format!("#util.composite<150000xi8, [dense<\"0x{hex}\"> : tensor<150000xi8>]>");
    let text = format!(
        "#w = {weights}\n\"test.op\"() {{a = #w, b = #w, c = {weights}, d = #foo.wrap<#w>, e = #foo.small<1>}} : () -> ()\n"
    );
    let module = parse_text(&text).unwrap();
    let op = module.walk()[1];
    let printed = print(&module);
    assert!(printed.contains(&format!("\"a\" = {weights}, \"b\" = {weights}, \"c\" = {weights}")), "a, b, c");
    assert!(printed.contains(&format!("\"d\" = #foo.wrap<{weights}>")), "the alias inside another text");
    let attrs = |m: &rtx_mlir::Module, o| match m.op(o).attrs.map(|a| m.context.attr(a).clone()) {
        Some(Attribute::Dictionary(entries)) => entries.iter().map(|&(_, v)| v).collect::<Vec<_>>(),
        other => panic!("a dictionary, not {other:?}"),
    };
    let values = attrs(&module, op);
    assert!(values[0] == values[1] && values[1] == values[2], "equal texts are one attribute");

    let bytes = rtx_mlir::write_bytecode(&module, &rtx_mlir::WriteOptions::default()).unwrap();
    let read = rtx_mlir::read_any(&bytes, None).unwrap();
    assert_eq!(print(&read), printed);
    let back = read.walk()[1];
    let values = attrs(&read, back);
    assert!(values[0] == values[1] && values[1] == values[2], "still one attribute once read back");
}
