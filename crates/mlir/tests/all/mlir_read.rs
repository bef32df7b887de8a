//! The MLIR bytecode reader and generic printer against upstream MLIR: every fixture written by
//! `scripts/regen/mlir-fixtures.sh` (IREE 3.13's iree-opt, bytecode versions 0–6) is read by rtx and
//! printed in generic form. With `RTX_CHECK_FIXTURES=1` and the IREE tools available, iree-opt must
//! parse rtx's text to the module it printed itself. Without the tools, hand-checked structural
//! facts stand in. Corruption tests prove that malformed input gives an error with an offset and
//! never a panic. `rtx translate` between bytecode and text is tests/all/mlir_read.rs's, at the
//! repository root.

use std::path::PathBuf;

use rtx_mlir::bytecode::{ReadError, ReadErrorKind};
use rtx_mlir::ir::{Attribute, Module, Properties};
use rtx_mlir::{mlirbc_to_mlir, print_generic, read_bytecode, PrintOptions};
use rtx_test_support::{fixtures_dir, iree_tools_or_skip, mlir_fixtures, upstream_generic};

fn fixture_dir() -> PathBuf {
    fixtures_dir().join("mlir")
}

/// Every `.mlirbc` fixture, sorted: (name, version, path).
fn fixtures() -> Vec<(String, u32, PathBuf)> {
    mlir_fixtures(&fixture_dir(), 60)
}

fn fixture(name: &str, version: u32) -> Vec<u8> {
    std::fs::read(fixture_dir().join(format!("{name}.v{version}.mlirbc"))).expect("fixture")
}

#[test]
fn every_fixture_reads_and_prints() {
    for (name, version, path) in fixtures() {
        let bytes = std::fs::read(&path).unwrap();
        let module = read_bytecode(&bytes).unwrap_or_else(|e| panic!("{name} v{version}: {e}"));
        assert_eq!(module.bytecode_version, Some(u64::from(version)));
        let text = print_generic(&module, PrintOptions { debuginfo: true })
            .unwrap_or_else(|e| panic!("{name} v{version}: {e}"));
        assert!(text.contains("\"builtin.module\"") || text.contains("\"test."), "{name} v{version}");
    }
}

#[test]
fn upstream_parses_rtx_text_to_the_same_module() {
    let Some(tools) = iree_tools_or_skip() else { return };
    let scratch = std::env::temp_dir().join(format!("rtx-mlir-read-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let mut failures = Vec::new();
    for (name, version, path) in fixtures() {
        let text = match mlirbc_to_mlir(&std::fs::read(&path).unwrap(), true) {
            Ok(text) => text,
            Err(error) => {
                failures.push(format!("{name} v{version}: {error}"));
                continue;
            }
        };
        let ours = scratch.join(format!("{name}.v{version}.mlir"));
        std::fs::write(&ours, &text).unwrap();
        let per_version = fixture_dir().join(format!("{name}.v{version}.generic.mlir"));
        let expected_path =
            if per_version.exists() { per_version } else { fixture_dir().join(format!("{name}.generic.mlir")) };
        let expected = std::fs::read_to_string(&expected_path).unwrap();
        match upstream_generic(&tools, &ours) {
            Ok(reprint) if reprint == expected => {}
            Ok(reprint) => failures.push(format!(
                "{name} v{version}: upstream re-print differs from {}:\n{}",
                expected_path.display(),
                first_difference(&expected, &reprint)
            )),
            Err(error) => {
                failures.push(format!("{name} v{version}: upstream rejects rtx's text ({}): {error}", ours.display()))
            }
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

fn find_op(module: &Module, name: &str) -> Vec<rtx_mlir::ir::OpId> {
    module.walk().into_iter().filter(|&op| module.op_name(op) == name).collect()
}

fn attr_named<'m>(module: &'m Module, op: rtx_mlir::ir::OpId, key: &str) -> Option<&'m Attribute> {
    let ctx = &module.context;
    let dict = module.op(op).attrs?;
    let Attribute::Dictionary(entries) = ctx.attr(dict) else { return None };
    entries.iter().find_map(|&(k, v)| match ctx.attr(k) {
        Attribute::String { value, .. } if ctx.str_bytes(*value) == key.as_bytes() => Some(ctx.attr(v)),
        _ => None,
    })
}

#[test]
fn structure_of_unregistered_fixture_is_the_same_in_every_version() {
    for version in 0..=6 {
        let module = read_bytecode(&fixture("unregistered", version)).unwrap();
        let names: Vec<String> = module.walk().into_iter().map(|op| module.op_name(op).into_owned()).collect();
        assert_eq!(names.len(), 19, "v{version}: {names:?}");
        assert_eq!(names[0], "builtin.module");
        let top = find_op(&module, "test.top")[0];
        let region = module.op_regions(top)[0];
        assert_eq!(module.region(region).blocks.len(), 3, "v{version}");
        let entry = module.region(region).blocks[0];
        assert_eq!(module.block(entry).arguments.len, 2);
        let multi = find_op(&module, "test.multi")[0];
        assert_eq!(module.results(multi).len(), 2);
        let cond = find_op(&module, "test.cond")[0];
        assert_eq!(module.successors(cond).len(), 2);
        // Properties of an unregistered op survive only from v5 on (upstream drops them before).
        let has_props = matches!(module.op(cond).properties, Properties::Dict(_));
        assert_eq!(has_props, version >= 5, "v{version}");
        // The forward reference resolves to the later definition.
        let later = find_op(&module, "test.def")[0];
        let use_later = find_op(&module, "test.use_later")[0];
        assert_eq!(module.operands(use_later)[0], module.results(later).next().unwrap());
        assert_eq!(module.op_regions(find_op(&module, "test.region_op")[0]).len(), 3);
    }
}

#[test]
fn attribute_values_are_decoded_exactly() {
    let module = read_bytecode(&fixture("attributes", 6)).unwrap();
    let op = find_op(&module, "test.attrs")[0];
    let ctx = &module.context;
    match attr_named(&module, op, "g_i32") {
        Some(Attribute::Integer { value, .. }) => assert_eq!(value.words(), &[0xffff_ffff]),
        other => panic!("{other:?}"),
    }
    match attr_named(&module, op, "g_i128") {
        Some(Attribute::Integer { value, .. }) => assert_eq!(value.words(), &[u64::MAX, i64::MAX as u64]),
        other => panic!("{other:?}"),
    }
    match attr_named(&module, op, "h_f32") {
        Some(Attribute::Float { bits, .. }) => assert_eq!(bits.words()[0], 0x40490fd0 /* 3.14159f32 */),
        other => panic!("{other:?}"),
    }
    match attr_named(&module, op, "b_str") {
        Some(Attribute::String { value, .. }) => assert_eq!(ctx.str_bytes(*value), b"hello \"world\"\n\t\x01\xff"),
        other => panic!("{other:?}"),
    }
    match attr_named(&module, op, "j_i1") {
        // Bit-packed LSB first: 1,0,1,1,0,0,0,0 | 1,1.
        Some(Attribute::DenseElements { data, .. }) => assert_eq!(data.bytes(), &[0b0000_1101, 0b11]),
        other => panic!("{other:?}"),
    }
    match attr_named(&module, op, "j_splat") {
        Some(Attribute::DenseElements { data, .. }) => assert_eq!(data.bytes(), &7i64.to_le_bytes()),
        other => panic!("{other:?}"),
    }
    assert!(matches!(attr_named(&module, op, "o_dialect_attr"), Some(Attribute::Text { .. })));
    assert!(matches!(attr_named(&module, op, "m_set"), Some(Attribute::IntegerSet(_))));
    assert!(matches!(attr_named(&module, op, "n_strided"), Some(Attribute::StridedLayout { offset: i64::MIN, .. })));
}

#[test]
fn large_dense_constant_is_shared_not_copied_per_element() {
    let module = read_bytecode(&fixture("large_dense", 6)).unwrap();
    let sizes: Vec<usize> = module
        .context
        .attrs()
        .iter()
        .filter_map(|a| match a {
            Attribute::DenseElements { data, .. } => Some(data.len()),
            _ => None,
        })
        .collect();
    assert!(sizes.contains(&65536), "{sizes:?}");
}

#[test]
fn registered_op_properties_decode_through_the_schema() {
    for version in [5, 6] {
        let module = read_bytecode(&fixture("registered", version)).unwrap();
        for op in module.walk() {
            assert!(
                !matches!(module.op(op).properties, Properties::Opaque(_)),
                "v{version}: {} kept opaque",
                module.op_name(op)
            );
        }
        let text = print_generic(&module, PrintOptions::default()).unwrap();
        assert!(text.contains("operandSegmentSizes\" = array<i32: 1, 0, 0, 0>"), "v{version}");
        assert!(text.contains("operandSegmentSizes\" = array<i32: 1, 2, 0, 0>"), "v{version}");
    }
}

#[test]
fn resources_keep_their_aligned_blobs() {
    let module = read_bytecode(&fixture("resources", 6)).unwrap();
    let group = &module.resources.dialect[0];
    assert_eq!(module.context.dialect_name(group.owner), "builtin");
    let blobs: Vec<(u64, usize)> = group
        .entries
        .iter()
        .filter_map(|e| match &e.value {
            rtx_mlir::ir::ResourceValue::Blob { alignment, data } => Some((*alignment, data.len())),
            _ => None,
        })
        .collect();
    assert!(blobs.contains(&(16, 4096)), "{blobs:?}");
    assert!(blobs.contains(&(4, 16)), "{blobs:?}");
}

#[test]
fn use_list_orders_are_read() {
    for version in 3..=6 {
        let module = read_bytecode(&fixture("uselists", version)).unwrap();
        assert!(!module.use_list_orders.is_empty(), "v{version}");
    }
    assert!(read_bytecode(&fixture("uselists", 2)).unwrap().use_list_orders.is_empty());
}

// ---- malformed input ----

fn small_fixture() -> Vec<u8> {
    fixture("unregistered", 6)
}

#[test]
fn every_truncation_is_an_error_with_an_offset() {
    for version in [0, 3, 6] {
        let bytes = fixture("unregistered", version);
        for len in 0..bytes.len() {
            let error = read_bytecode(&bytes[..len]).expect_err("truncated file must not read");
            assert!(error.offset <= len, "v{version} len {len}: {error}");
        }
    }
}

#[test]
fn trailing_bytes_after_the_last_section_are_refused() {
    let mut bytes = small_fixture();
    bytes.push(0x42);
    assert!(read_bytecode(&bytes).is_err());
}

#[test]
fn bad_magic_and_newer_versions_are_refused() {
    let mut bytes = small_fixture();
    bytes[0] = b'X';
    assert_eq!(read_bytecode(&bytes).unwrap_err(), ReadError { offset: 0, kind: ReadErrorKind::BadMagic });
    let mut bytes = small_fixture();
    bytes[4] = (7 << 1) | 1;
    assert_eq!(read_bytecode(&bytes).unwrap_err().kind, ReadErrorKind::UnsupportedVersion(7));
}

/// xorshift64*: deterministic, dependency-free.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

#[test]
fn thousands_of_mutations_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let seeds: Vec<Vec<u8>> = ["unregistered", "attributes", "locations", "registered", "resources", "types"]
        .iter()
        .flat_map(|name| [fixture(name, 6), fixture(name, 2)])
        .collect();
    let mut errors = 0;
    for round in 0..6000 {
        let mut bytes = seeds[round % seeds.len()].clone();
        let flips = 1 + (rng.next() % 4) as usize;
        for _ in 0..flips {
            let pos = (rng.next() % bytes.len() as u64) as usize;
            match rng.next() % 4 {
                0 => bytes[pos] ^= 1 << (rng.next() % 8),
                1 => bytes[pos] = rng.next() as u8,
                2 => bytes[pos] = [0x00, 0xff, 0x01, 0x80][(rng.next() % 4) as usize],
                _ => {
                    let len = (rng.next() % 16) as usize;
                    bytes.truncate(bytes.len().saturating_sub(len).max(pos));
                    if bytes.is_empty() {
                        break;
                    }
                }
            }
        }
        match read_bytecode(&bytes) {
            Ok(module) => {
                // Whatever reads must also print (or refuse to print) without panicking.
                let _ = print_generic(&module, PrintOptions { debuginfo: true });
            }
            Err(error) => {
                assert!(error.offset <= bytes.len(), "{error}");
                errors += 1;
            }
        }
    }
    assert!(errors > 1000, "mutations should mostly fail: {errors}");
}
