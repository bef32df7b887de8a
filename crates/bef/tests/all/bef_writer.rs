//! `mlir_to_bef` against BEF files derived by hand from TFRT's emitter
//! (`lib/bef_converter/mlir_to_bef/mlir_to_bef.cc`, `bef_emitter.cc`, `bef_location_emitter.cc`
//! at 4ecc3a44): whole files for small programs, single sections where a program is larger, the
//! errors for what BEF cannot encode. The `rtx translate --mlir-to-bef` command is
//! tests/all/bef_writer.rs's, at the repository root.
//!
//! Inputs are MLIR's generic form. Notation in the derivations: `vbr(n)` is BEF's big-endian
//! 7-bit-group integer, words are little-endian `u32`s, `CC` is padding.

use rtx_bef::format::vbr;
use rtx_bef::{mlir_to_bef, WriteError, WriteOptions};

fn parse(text: &str) -> rtx_mlir::Module {
    rtx_mlir::parse_text(text).expect("test input parses")
}

fn bef(text: &str) -> Vec<u8> {
    mlir_to_bef(&parse(text), &WriteOptions::default()).expect("writes")
}

fn bef_without_optional_sections(text: &str) -> Vec<u8> {
    mlir_to_bef(&parse(text), &WriteOptions { disable_optional_sections: true }).expect("writes")
}

fn error(text: &str) -> WriteError {
    mlir_to_bef(&parse(text), &WriteOptions::default()).expect_err("BEF cannot encode this")
}

/// The sections of a file, `(id, body)`, checking the framing on the way.
fn sections(file: &[u8]) -> Vec<(u8, Vec<u8>)> {
    assert_eq!(file[..3], [0x0B, 0xEF, 0x00], "magic and version");
    let mut pos = 3;
    let mut out = Vec::new();
    while pos < file.len() {
        let id = file[pos];
        pos += 1;
        let word = vbr::read(file, &mut pos).expect("section length");
        if word & 1 == 1 {
            let alignment = file[pos] as usize;
            pos += 1;
            while pos % alignment != 0 {
                assert_eq!(file[pos], 0xCC, "section padding");
                pos += 1;
            }
        }
        let len = (word >> 1) as usize;
        out.push((id, file[pos..pos + len].to_vec()));
        pos += len;
    }
    out
}

fn section(file: &[u8], id: u8) -> Vec<u8> {
    sections(file).into_iter().find(|(i, _)| *i == id).map(|(_, body)| body).expect("section present")
}

fn words(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// `func.func @main() -> i32 { %x = tfrt.constant.i32 42; tfrt.return %x }`, with locations (a
/// file, which the `rtx translate` test at the repository root translates too).
const MAIN_42: &str = include_str!("../../../../tests/fixtures/bef/main_42.mlir");

/// The functions section of [`MAIN_42`]: location 0 (the func's), one register used once, two
/// kernels (the pseudo kernel at 0 and the constant at 36, neither with operands, both in stream
/// 0), result register 0, padding to 4; the pseudo kernel (code ABABABAB, location CDCDCDCD, no
/// arguments, attributes or functions, one result: the pseudo register 1, used by kernel 1 — the
/// op without operands); the constant (kernel 0, location 4, one attribute at offset 0, one
/// result in register 0 used by no kernel: the return is no kernel).
fn main_42_functions() -> Vec<u8> {
    let mut body = vec![0x00, 0x01, 0x01, 0x02, 0x00, 0x00, 0x00, 0x24, 0x00, 0x00, 0x00, 0xCC];
    body.extend(words(&[0xABAB_ABAB, 0xCDCD_CDCD, 0, 0, 0, 1, 1, 1, 1]));
    body.extend(words(&[0, 4, 0, 1, 0, 1, 0, 0, 0]));
    body
}

#[test]
fn a_constant_function_is_byte_for_byte_what_tfrt_writes() {
    let mut expected = vec![0x0B, 0xEF, 0x00];
    // Strings, sorted: i32@0 main@4 tfrt.constant.i32@9 value@27 (33 bytes: vbr(66) = 42).
    expected.extend(b"\x00\x42i32\0main\0tfrt.constant.i32\0value\0");
    // Attributes: 42 as an i32; the body lands at 40, 4-aligned, so no alignment byte.
    expected.extend([0x01, 0x08, 0x2A, 0x00, 0x00, 0x00]);
    // Kernels: one, named at 9. Types: one, i32 named at 0.
    expected.extend([0x02, 0x04, 0x01, 0x09, 0x03, 0x04, 0x01, 0x00]);
    // Function index: one async function at offset 0, named at 4, no arguments, one i32 result.
    expected.extend([0x04, 0x0E, 0x01, 0x00, 0x00, 0x04, 0x00, 0x01, 0x00]);
    // Functions: 84 bytes, vbr(168) = 81 28; the body starts at 60, 4-aligned.
    expected.extend([0x05, 0x81, 0x28]);
    expected.extend(main_42_functions());
    // Location strings; locations: the func's (file 0, 1:1) at 0, the constant's (2:8) at 4.
    expected.extend(b"\x06\x0Et.mlir\0");
    expected.extend([0x07, 0x10, 0x01, 0x00, 0x01, 0x01, 0x01, 0x00, 0x02, 0x08]);
    // Attribute types: one, at 0, i32 (8). Attribute names: one function of two kernels, the
    // constant's attribute named at 27. Register types: one function, one register of type 0.
    expected.extend([0x08, 0x06, 0x01, 0x00, 0x08]);
    expected.extend([0x09, 0x06, 0x01, 0x02, 0x1B]);
    expected.extend([0x0A, 0x06, 0x01, 0x01, 0x00]);
    assert_eq!(bef(MAIN_42), expected);
}

#[test]
fn without_optional_sections_attribute_names_and_their_sections_are_left_out() {
    let mut expected = vec![0x0B, 0xEF, 0x00];
    // No attribute name among the strings: i32@0 main@4 tfrt.constant.i32@9 (27 bytes).
    expected.extend(b"\x00\x36i32\0main\0tfrt.constant.i32\0");
    // The attributes body would start at 34: an alignment byte (4) and padding to 36.
    expected.extend([0x01, 0x09, 0x04, 0xCC, 0x2A, 0x00, 0x00, 0x00]);
    expected.extend([0x02, 0x04, 0x01, 0x09, 0x03, 0x04, 0x01, 0x00]);
    expected.extend([0x04, 0x0E, 0x01, 0x00, 0x00, 0x04, 0x00, 0x01, 0x00]);
    expected.extend([0x05, 0x81, 0x28]);
    expected.extend(main_42_functions());
    expected.extend(b"\x06\x0Et.mlir\0");
    expected.extend([0x07, 0x10, 0x01, 0x00, 0x01, 0x01, 0x01, 0x00, 0x02, 0x08]);
    assert_eq!(bef_without_optional_sections(MAIN_42), expected);
}

#[test]
fn an_empty_module_has_every_section_but_the_locations() {
    // Zero counts everywhere; no op has a location, so no location sections.
    let expected = [
        0x0B, 0xEF, 0x00, 0x00, 0x00, 0x01, 0x00, 0x02, 0x02, 0x00, 0x03, 0x02, 0x00, 0x04, 0x02, 0x00, 0x05, 0x00,
        0x08, 0x02, 0x00, 0x09, 0x02, 0x00, 0x0A, 0x02, 0x00,
    ];
    assert_eq!(bef(""), expected);
    assert_eq!(bef_without_optional_sections(""), expected[..18]);
}

#[test]
fn users_are_listed_newest_use_first_and_registers_count_every_use() {
    let text = r#"
"func.func"() <{function_type = (i32) -> i32, sym_name = "f"}> ({
^bb0(%a: i32):
  %x = "tfrt.add.i32"(%a, %a) : (i32, i32) -> i32
  %y = "tfrt.add.i32"(%x, %a) : (i32, i32) -> i32
  "tfrt.return"(%y) : (i32) -> ()
}) : () -> ()
"#;
    // Registers a=0 (3 uses), x=1, y=2 (1 use each: the return counts). Three kernels: the
    // pseudo kernel at 0, x at 52 and y at 96, with 2 operands each, all in stream 0; result y.
    // These 16 bytes end 4-aligned: no padding before the kernels.
    let mut expected = vec![0x00, 0x03, 0x03, 0x01, 0x01, 0x03, 0x00, 0x00, 0x00, 0x34, 0x02, 0x00];
    expected.extend([0x60, 0x02, 0x00, 0x02]);
    // Pseudo kernel: results are the pseudo register 3 (no op lacks operands: no users) and a,
    // used by y, x, x (MLIR's use lists hold the newest use first).
    expected.extend(words(&[0xABAB_ABAB, 0xCDCD_CDCD, 0, 0, 0, 2, 0, 3, 3, 0, 2, 1, 1]));
    // x: kernel 0 at location 1, arguments a a, result x used by y.
    expected.extend(words(&[0, 1, 2, 0, 0, 1, 1, 0, 0, 1, 2]));
    // y: location 2, arguments x a, result y used by no kernel.
    expected.extend(words(&[0, 2, 2, 0, 0, 1, 0, 1, 0, 2]));
    assert_eq!(section(&bef(text), 5), expected);
}

const FUNCTION_KINDS: &str = r#"
"func.func"() <{function_type = (i32) -> i32, sym_name = "native", sym_visibility = "private"}> ({
}) {tfrt.native} : () -> ()
"func.func"() <{function_type = (i32) -> i32, sym_name = "sync"}> ({
^bb0(%a: i32):
  %r = "tfrt.add.i32"(%a, %a) : (i32, i32) -> i32
  "tfrt.return"(%r) : (i32) -> ()
}) {tfrt.sync} : () -> ()
"func.func"() <{function_type = (i32) -> i32, sym_name = "main"}> ({
^bb0(%a: i32):
  %r = "tfrt.call"(%a) {callee = @native} : (i32) -> i32
  %s = "test.region"(%r) ({
  ^bb0(%b: i32):
    "tfrt.return"(%b) : (i32) -> ()
  }) {fns = [@sync, @main]} : (i32) -> i32
  "tfrt.return"(%s) : (i32) -> ()
}) : () -> ()
"#;

#[test]
fn functions_are_indexed_in_walk_order_with_regions_before_their_function() {
    let file = bef(FUNCTION_KINDS);
    // Strings: ""@0 fns@1 i32@5 main@9 native@14 sync@21 test.region@26 tfrt.add.i32@38
    // tfrt.call@51 (`callee` names a function, so it is no attribute name; `fns` is).
    assert_eq!(section(&file, 0), b"\0fns\0i32\0main\0native\0sync\0test.region\0tfrt.add.i32\0tfrt.call\0");
    // native (kind 1, no body: offset 0), sync (kind 2) at 0, the region (kind 0, unnamed) after
    // sync's 100 bytes, main after the region's 48 (148 = vbr 81 14); all take and give one i32.
    let expected = [
        0x04, 0x01, 0x00, 0x0E, 0x01, 0x00, 0x01, 0x00, 0x02, 0x00, 0x15, 0x01, 0x00, 0x01, 0x00, 0x00, 0x64, 0x00,
        0x01, 0x00, 0x01, 0x00, 0x00, 0x81, 0x14, 0x09, 0x01, 0x00, 0x01, 0x00,
    ];
    assert_eq!(section(&file, 4), expected);
    // test.region (kernel 2) takes r (register 1) and function operands sync (1) and main (3)
    // from `fns`, then its region (2); its result s (register 2) has no kernel user.
    let functions = section(&file, 5);
    let record = words(&[1, 0, 3, 1, 0, 1, 1, 3, 2, 2]);
    assert!(functions.windows(record.len()).any(|w| w == record), "test.region's record");
    // tfrt.call (kernel 1) takes a and the function `native` (0); its result r is used by s.
    let record = words(&[1, 0, 1, 1, 1, 0, 0, 1, 2]);
    assert!(functions.windows(record.len()).any(|w| w == record), "tfrt.call's record");
}

#[test]
fn locations_of_every_kind_are_encoded_with_their_strings() {
    let text = r#"
"func.func"() <{function_type = () -> (), sym_name = "f"}> ({
  "x.a"() : () -> () loc("n"("f.mlir":3:4))
  "x.b"() : () -> () loc(callsite("a.mlir":1:1 at "b.mlir":2:2))
  "x.c"() : () -> () loc(fused["f.mlir":5:6, "m"])
  "x.d"() : () -> () loc(unknown)
  "x.e"() : () -> () loc("f.mlir":1:2 to 3:4)
  "tfrt.return"() : () -> ()
}) : () -> () loc("f.mlir":1:2)
"#;
    let file = bef(text);
    assert_eq!(section(&file, 6), b"f.mlir\0n\0a.mlir\0b.mlir\0m\0");
    let expected = [
        0x01, 0x00, 0x01, 0x02, // the func: file 0, 1:2
        0x02, 0x07, 0x01, 0x00, 0x03, 0x04, // name 7, child file 0, 3:4
        0x03, 0x01, 0x09, 0x01, 0x01, 0x01, 0x10, 0x02, 0x02, // callsite: callee, caller
        0x04, 0x02, 0x01, 0x00, 0x05, 0x06, 0x02, 0x17, 0x00, // fused: two children
        0x00, // unknown
    ];
    assert_eq!(section(&file, 7), expected);
    // The kernels' location words: 4, 10, 19, 28, and for the range BEF cannot say, an offset
    // counting down from u32::MAX.
    let functions = section(&file, 5);
    for (code, location) in [(0u32, 4u32), (1, 10), (2, 19), (3, 28), (4, u32::MAX - 1)] {
        let header = words(&[code, location, 0, 0, 0, 0]);
        assert!(functions.windows(24).any(|w| w == header), "kernel {code} at location {location:#x}");
    }
}

#[test]
fn locations_are_left_out_when_no_op_has_one_bef_can_say() {
    let text = r#"
"func.func"() <{function_type = () -> (), sym_name = "f"}> ({
  "tfrt.return"() : () -> () loc("f.mlir":1:2 to 3:4)
}) : () -> () loc("f.mlir":1:2 to 3:4)
"#;
    let ids: Vec<u8> = sections(&bef(text)).into_iter().map(|(id, _)| id).collect();
    assert_eq!(ids, [0, 1, 2, 3, 4, 5, 8, 9, 10]);
    // The function's location word is the first virtual offset.
    assert_eq!(section(&bef(text), 5)[..5], [0x8F, 0xFF, 0xFF, 0xFF, 0x7E]);
}

#[test]
fn attributes_are_deduplicated_in_first_seen_order_and_taken_in_name_order() {
    let text = r#"
"func.func"() <{function_type = () -> (), sym_name = "f"}> ({
  "x.a"() {z = 7 : i32, a = "s", _tfrt_cost = 3 : i64} : () -> ()
  "x.b"() {b = 7 : i32} : () -> ()
  "tfrt.return"() : () -> ()
}) : () -> ()
"#;
    let file = bef(text);
    // "s" (first in name order) at 0, 7 at 8; `_tfrt_cost` is never an operand.
    assert_eq!(section(&file, 1), [1, 0, 0, 0, b's', 0xCC, 0xCC, 0xCC, 7, 0, 0, 0]);
    // Attribute types: two, at 0 (string, 16) and at 8 (i32, 8).
    assert_eq!(section(&file, 8), [0x02, 0x00, 0x10, 0x08, 0x08]);
    // Strings: a@0 b@2 f@4 i32@6 x.a@10 x.b@14 z@18: x.a's attributes are named a, z; x.b's b.
    assert_eq!(section(&file, 9), [0x01, 0x03, 0x00, 0x12, 0x02]);
}

#[test]
fn translation_is_deterministic_and_ignores_attribute_spelling_order() {
    let first = bef(FUNCTION_KINDS);
    assert_eq!(bef(FUNCTION_KINDS), first);
    let a = MAIN_42.replace("{value = 42 : i32}", "{value = 42 : i32, other = 1 : i32}");
    let b = MAIN_42.replace("{value = 42 : i32}", "{other = 1 : i32, value = 42 : i32}");
    assert_eq!(bef(&a), bef(&b));
}

#[test]
fn symbols_in_compiled_modules_become_attributes_with_the_module_text() {
    let text = r#"
"builtin.module"() ({
  "builtin.module"() <{sym_name = "kernel"}> ({
    "func.func"() <{function_type = () -> (), sym_name = "main"}> ({
      "func.return"() : () -> ()
    }) : () -> ()
  }) {tfrt.compiled} : () -> ()
  "func.func"() <{function_type = () -> (), sym_name = "f"}> ({
    "simple.kernel"() {func = @kernel::@main} : () -> ()
    "tfrt.return"() : () -> ()
  }) : () -> ()
}) : () -> ()
"#;
    let file = bef(text);
    // Only `simple.kernel` (named at 7, after "f" and "func") is a kernel: nothing inside the
    // compiled module is.
    assert_eq!(section(&file, 2), [0x01, 0x07]);
    let attributes = section(&file, 1);
    // id 0, root name of 6 bytes, one nested name of 4, then the module's generic text.
    assert_eq!(attributes[..4], [0x00, 0x06, 0x01, 0x04]);
    let mut pos = 4;
    let length = vbr::read(&attributes, &mut pos).expect("module length") as usize;
    assert_eq!(attributes[pos..pos + 10], *b"kernelmain");
    let module = std::str::from_utf8(&attributes[pos + 10..pos + 10 + length]).expect("text");
    assert!(module.starts_with("\"builtin.module\"()") && module.contains("tfrt.compiled"), "{module}");
    assert_eq!(attributes[pos + 10 + length..], [0]);
    // Its attribute type is a symbol reference (29).
    assert_eq!(section(&file, 8), [0x01, 0x00, 0x1D]);
}

fn function(body: &str, attributes: &str) -> String {
    format!(
        "\"func.func\"() <{{function_type = (i32) -> (i32, i32), sym_name = \"f\"}}> ({{\n^bb0(%a: i32):\n{body}}}) \
         {attributes} : () -> () loc(\"e.mlir\":1:1)\n"
    )
}

#[test]
fn what_bef_cannot_encode_is_an_error_naming_the_op_and_where() {
    let cases: Vec<(String, &str)> = vec![
        (
            function("  %x = \"someop\"() : () -> i32 loc(\"e.mlir\":2:3)\n", ""),
            "\"e.mlir\":2:3: `someop`: all functions need to have a tfrt.return",
        ),
        (
            "\"func.func\"() <{function_type = () -> i32, sym_name = \"g\", sym_visibility = \"private\"}> ({\n}) : () -> () loc(\"e.mlir\":4:1)".to_owned(),
            "\"e.mlir\":4:1: `func.func`: external functions are not allowed",
        ),
        (
            function("  \"x.call\"(%a) {name = @missing} : (i32) -> () loc(\"e.mlir\":2:3)\n  \"tfrt.return\"(%a, %a) : (i32, i32) -> ()\n", ""),
            "\"e.mlir\":2:3: `x.call`: function @missing not defined",
        ),
        (
            function("  \"x.op\"() {type = tensor<1xf32>} : () -> () loc(\"e.mlir\":2:3)\n  \"tfrt.return\"(%a, %a) : (i32, i32) -> ()\n", ""),
            "\"e.mlir\":2:3: `x.op`: BEF files cannot encode the 'type' attribute",
        ),
        (
            function("  \"tfrt.return\"(%a, %a) : (i32, i32) -> () loc(\"e.mlir\":2:3)\n", "{tfrt.sync}"),
            "\"e.mlir\":2:3: `tfrt.return`: return value 0 is an argument in a sync function",
        ),
        (
            function("  %c = \"tfrt.constant.i32\"() {value = 1 : i32} : () -> i32\n  \"tfrt.return\"(%c, %c) : (i32, i32) -> () loc(\"e.mlir\":3:3)\n", "{tfrt.sync}"),
            "\"e.mlir\":3:3: `tfrt.return`: return value 1 is duplicated in a sync function",
        ),
        (
            function("  \"tfrt.return\"(%a, %a) : (i32, i32) -> () loc(\"e.mlir\":2:3)\n  \"tfrt.return\"(%a, %a) : (i32, i32) -> ()\n", ""),
            "\"e.mlir\":2:3: `tfrt.return`: return op must be at the end of its block",
        ),
        (
            function("  \"x.loop\"() ({\n    \"x.use\"(%a) : (i32) -> () loc(\"e.mlir\":3:5)\n    \"tfrt.return\"() : () -> ()\n  }) : () -> ()\n  \"tfrt.return\"(%a, %a) : (i32, i32) -> ()\n", ""),
            "\"e.mlir\":3:5: `x.use`: BEF executor only supports references to kernels within the current region",
        ),
        (
            function("  \"x.branch\"() ({\n    \"x.br\"()[^bb1] : () -> ()\n  ^bb1:\n    \"tfrt.return\"() : () -> ()\n  }) : () -> () loc(\"e.mlir\":2:3)\n  \"tfrt.return\"(%a, %a) : (i32, i32) -> ()\n", ""),
            "\"e.mlir\":2:3: `x.branch`: multi-block regions cannot be emitted to BEF files",
        ),
        (
            function("  \"x.loop\"() ({\n    \"x.body\"() : () -> ()\n  }) : () -> () loc(\"e.mlir\":2:3)\n  \"tfrt.return\"(%a, %a) : (i32, i32) -> ()\n", ""),
            "\"e.mlir\":2:3: `x.loop`: a region must end with tfrt.return, whose operands are its results",
        ),
        (
            function("  %c = \"tfrt_test.test_cost\"(%a) {id = 0 : i64} : (i32) -> i32 loc(\"e.mlir\":2:3)\n  \"tfrt.return\"(%c, %a) : (i32, i32) -> ()\n", ""),
            "\"e.mlir\":2:3: `tfrt_test.test_cost`: the cost attribute `_tfrt_cost` must be a positive integer",
        ),
    ];
    for (text, message) in cases {
        assert_eq!(error(&text).to_string(), message, "{text}");
    }
}

#[test]
fn tfrt_custom_syntax_writes_the_same_file_as_the_generic_form() {
    let custom = r#"
func.func @main() -> i32 {
  %x = tfrt.constant.i32 42 loc("t.mlir":2:8)
  tfrt.return %x : i32 loc("t.mlir":3:3)
} loc("t.mlir":1:1)
"#;
    assert_eq!(bef(custom), bef(MAIN_42));
}
