//! The MLIR bytecode reader and generic printer against upstream MLIR: every fixture written by
//! `scripts/regen-mlir-fixtures.sh` (IREE 3.13's iree-opt, bytecode versions 0–6) is read by rtx and
//! printed in generic form. With `RTX_CHECK_FIXTURES=1` and the IREE tools available, iree-opt must
//! parse rtx's text to the module it printed itself. Without the tools, hand-checked structural
//! facts stand in. Corruption tests prove that malformed input gives an error with an offset and
//! never a panic.

mod common;

use std::path::PathBuf;
use std::process::Command;

use rtx::mlir::bytecode::{ReadError, ReadErrorKind};
use rtx::mlir::ir::{Attribute, Module, Properties};
use rtx::mlir::{mlirbc_to_mlir, print_generic, read_bytecode, PrintOptions};

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mlir")
}

/// Every `.mlirbc` fixture, sorted: (name, version, path).
fn fixtures() -> Vec<(String, u32, PathBuf)> {
    common::mlir_fixtures(&fixture_dir(), 60)
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
    let Some(tools) = common::iree_tools_or_skip() else { return };
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
        match common::upstream_generic(&tools, &ours) {
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

fn find_op(module: &Module, name: &str) -> Vec<rtx::mlir::ir::OpId> {
    module.walk().into_iter().filter(|&op| module.op_name(op) == name).collect()
}

fn attr_named<'m>(module: &'m Module, op: rtx::mlir::ir::OpId, key: &str) -> Option<&'m Attribute> {
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
            rtx::mlir::ir::ResourceValue::Blob { alignment, data } => Some((*alignment, data.len())),
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

/// `rtx translate --mlirbc-to-mlir` prints what the library prints, to stdout or `-o FILE`, and
/// names the file and byte offset of a corrupt input.
#[test]
fn rtx_translate_writes_the_generic_text() {
    let input = fixture_dir().join("locations.v6.mlirbc");
    let expected = mlirbc_to_mlir(&fixture("locations", 6), true).expect("reads");
    let out = std::env::temp_dir().join(format!("rtx-translate-{}.mlir", std::process::id()));
    let run =
        |args: &[&std::ffi::OsStr]| Command::new(env!("CARGO_BIN_EXE_rtx")).args(args).output().expect("rtx runs");
    let output = run(&[
        "translate".as_ref(),
        "--mlirbc-to-mlir".as_ref(),
        input.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
        "--print-debuginfo".as_ref(),
    ]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(std::fs::read_to_string(&out).expect("written"), expected);
    let _ = std::fs::remove_file(&out);
    let output = run(&["translate".as_ref(), "--mlirbc-to-mlir".as_ref(), input.as_os_str()]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), mlirbc_to_mlir(&fixture("locations", 6), false).unwrap());
    let truncated = std::env::temp_dir().join(format!("rtx-translate-{}.mlirbc", std::process::id()));
    std::fs::write(&truncated, &fixture("locations", 6)[..100]).unwrap();
    let output = run(&["translate".as_ref(), "--mlirbc-to-mlir".as_ref(), truncated.as_os_str()]);
    let _ = std::fs::remove_file(&truncated);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("rtx-translate-") && stderr.contains("at byte "), "{stderr}");
}

/// `rtx translate --mlir-to-mlirbc` turns upstream's generic text into bytecode of the asked
/// version that rtx reads back to the same module and, with the IREE tools, iree-opt prints
/// exactly as it printed the original.
#[test]
fn rtx_translate_writes_bytecode_from_text() {
    let tools = common::iree_tools().ok();
    for name in ["locations", "attributes", "unregistered"] {
        let input = fixture_dir().join(format!("{name}.generic.mlir"));
        let expected = std::fs::read_to_string(&input).expect("fixture");
        for version in [0, 3, 6] {
            let out =
                std::env::temp_dir().join(format!("rtx-translate-{}-{name}-{version}.mlirbc", std::process::id()));
            let output = Command::new(env!("CARGO_BIN_EXE_rtx"))
                .args(["translate", "--mlir-to-mlirbc", &format!("--bytecode-version={version}")])
                .arg(&input)
                .arg("-o")
                .arg(&out)
                .output()
                .expect("rtx runs");
            if name == "unregistered" && version < 5 {
                // Upstream would silently drop the properties of unregistered ops; rtx refuses.
                let stderr = String::from_utf8_lossy(&output.stderr);
                assert!(!output.status.success() && stderr.contains("cannot express the properties"), "{stderr}");
                continue;
            }
            assert!(output.status.success(), "{name} v{version}: {}", String::from_utf8_lossy(&output.stderr));
            let bytes = std::fs::read(&out).expect("written");
            assert_eq!(bytes[4], (version << 1 | 1) as u8, "{name}: the version (a one-byte varint)");
            let reread = print_generic(
                &read_bytecode(&bytes).expect("rtx reads its own file"),
                PrintOptions { debuginfo: true },
            );
            let direct = mlirbc_to_mlir(expected.as_bytes(), true).expect("rtx parses the text");
            // Below v5 properties travel as attributes, so the text differs there by design.
            if version >= 5 {
                assert_eq!(reread.expect("prints"), direct, "{name} v{version}");
            }
            if let Some(tools) = &tools {
                // Old versions lose what they cannot hold exactly as upstream's own files do.
                let upstream = if version >= 5 {
                    Ok(expected.clone())
                } else {
                    common::upstream_generic(tools, &fixture_dir().join(format!("{name}.v{version}.mlirbc")))
                };
                assert_eq!(common::upstream_generic(tools, &out), upstream, "{name} v{version}");
            }
            let _ = std::fs::remove_file(&out);
        }
    }
}
