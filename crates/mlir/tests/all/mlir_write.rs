//! The MLIR bytecode writer against upstream MLIR: every fixture written by
//! `scripts/regen/mlir-fixtures.sh` (IREE 3.13's iree-opt, versions 0–6) is read by rtx and written
//! again in every version; rtx must read its own file back to the same module, and, with
//! `RTX_CHECK_FIXTURES=1` and the IREE tools, iree-opt must read rtx's file to exactly what it
//! reads from its own file of that version (for old versions that is upstream's own
//! down-conversion: unregistered properties and use-list orders dropped, properties of registered
//! ops folded into attributes).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use rtx_mlir::bytecode::{read_bytecode_shared, WriteError};
use rtx_mlir::ir::{Attribute, Module, ResourceEntry, ResourceGroup, ResourceValue, ValueDef};
use rtx_mlir::{parse_text, print_generic, read_bytecode, write_bytecode, PrintOptions, WriteOptions};
use rtx_test_support::{fixtures_dir, iree_tools_or_skip};

fn fixture_dir() -> PathBuf {
    fixtures_dir().join("mlir")
}

/// Fixture names (each has `<name>.v0..v6.mlirbc`).
fn fixture_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixture_dir())
        .expect("fixture dir")
        .filter_map(|e| {
            let file = e.ok()?.file_name().to_string_lossy().into_owned();
            file.strip_suffix(".v6.mlirbc").map(str::to_owned)
        })
        .collect();
    names.sort();
    assert!(names.len() >= 9, "expected the generated fixtures, found {names:?}");
    names
}

fn fixture_path(name: &str, version: u32) -> PathBuf {
    fixture_dir().join(format!("{name}.v{version}.mlirbc"))
}

fn read_fixture(name: &str, version: u32) -> Module {
    let bytes = std::fs::read(fixture_path(name, version)).expect("fixture");
    read_bytecode(&bytes).unwrap_or_else(|e| panic!("{name} v{version}: {e}"))
}

fn print(module: &Module) -> String {
    print_generic(module, PrintOptions { debuginfo: true }).expect("printable")
}

fn lossy(version: u32) -> WriteOptions {
    WriteOptions { allow_lossy_downgrade: true, ..WriteOptions::version(version) }
}

/// The (source version, target version) pairs checked: v6 to every version, and each version to
/// itself.
fn pairs() -> Vec<(u32, u32)> {
    let mut pairs: Vec<(u32, u32)> = (0..=6).map(|n| (6, n)).collect();
    pairs.extend((0..6).map(|m| (m, m)));
    pairs
}

#[test]
fn every_fixture_round_trips_through_every_version() {
    let mut failures = Vec::new();
    for name in fixture_names() {
        for (from, to) in pairs() {
            let module = read_fixture(&name, from);
            let bytes = match write_bytecode(&module, &lossy(to)) {
                Ok(bytes) => bytes,
                Err(e) => {
                    failures.push(format!("{name} v{from} -> v{to}: {e}"));
                    continue;
                }
            };
            let back = match read_bytecode(&bytes) {
                Ok(back) => back,
                Err(e) => {
                    failures.push(format!("{name} v{from} -> v{to}: rtx cannot read its own file: {e}"));
                    continue;
                }
            };
            assert_eq!(back.bytecode_version, Some(u64::from(to)));
            // What rtx reads from upstream's own file of the target version.
            let expected = print(&read_fixture(&name, to));
            let actual = print(&back);
            if actual != expected {
                failures.push(format!("{name} v{from} -> v{to}: {}", first_difference(&expected, &actual)));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn writing_is_deterministic_and_idempotent() {
    for name in fixture_names() {
        let module = read_fixture(&name, 6);
        let first = write_bytecode(&module, &WriteOptions::default()).unwrap();
        assert_eq!(first, write_bytecode(&module, &WriteOptions::default()).unwrap(), "{name}");
        // Writing what rtx wrote reproduces it byte for byte.
        let again = write_bytecode(&read_bytecode(&first).unwrap(), &WriteOptions::default()).unwrap();
        assert_eq!(first, again, "{name}");
    }
}

#[test]
fn default_version_is_6_with_the_producer_in_the_header() {
    let module = read_fixture("unregistered", 6);
    let bytes = write_bytecode(&module, &WriteOptions::default()).unwrap();
    let producer = concat!("rtx ", env!("CARGO_PKG_VERSION"));
    assert_eq!(&bytes[..5], b"ML\xEFR\x0d");
    assert_eq!(&bytes[5..5 + producer.len()], producer.as_bytes());
    assert_eq!(bytes[5 + producer.len()], 0);
    let file = Sections::parse(&bytes);
    // Dialect, attr/type offset, attr/type, IR, resource offset, resource, string, properties.
    assert_eq!(file.order, [1, 3, 2, 4, 6, 5, 0, 8]);
    let custom = WriteOptions { producer: "MLIR24.0.0git".into(), ..WriteOptions::version(3) };
    let bytes = write_bytecode(&module, &WriteOptions { allow_lossy_downgrade: true, ..custom }).unwrap();
    assert_eq!(&bytes[..19], b"ML\xEFR\x07MLIR24.0.0git\0");
    assert_eq!(Sections::parse(&bytes).order, [1, 3, 2, 4, 6, 5, 0]);
}

#[test]
fn unsupported_version_and_unexpressible_features_are_errors() {
    let module = read_fixture("unregistered", 6);
    assert_eq!(write_bytecode(&module, &WriteOptions::version(7)), Err(WriteError::UnsupportedVersion(7)));
    for version in 0..5 {
        match write_bytecode(&module, &WriteOptions::version(version)) {
            Err(WriteError::NotRepresentable { needs: 5, what, .. }) => assert!(what.contains("test.cond"), "{what}"),
            other => panic!("v{version}: {other:?}"),
        }
    }
    let uselists = read_fixture("uselists", 6);
    assert!(!uselists.use_list_orders.is_empty());
    for version in 0..3 {
        assert!(
            matches!(
                write_bytecode(&uselists, &WriteOptions::version(version)),
                Err(WriteError::NotRepresentable { needs: 3, .. })
            ),
            "v{version}"
        );
    }
    for version in 3..=6 {
        write_bytecode(&uselists, &WriteOptions::version(version)).unwrap();
    }
}

#[test]
fn use_list_orders_survive_every_version_that_has_them() {
    let module = read_fixture("uselists", 6);
    for version in 3..=6 {
        let back = read_bytecode(&write_bytecode(&module, &WriteOptions::version(version)).unwrap()).unwrap();
        assert_eq!(back.use_list_orders, module.use_list_orders, "v{version}");
    }
}

#[test]
fn resource_blobs_are_aligned_in_the_file() {
    let mut module = read_fixture("resources", 6);
    // Raise every blob's alignment so that padding is certainly needed.
    let mut blobs = 0;
    for group in &mut module.resources.dialect {
        for entry in &mut group.entries {
            if let ResourceValue::Blob { alignment, .. } = &mut entry.value {
                *alignment = 64;
                blobs += 1;
            }
        }
    }
    assert_eq!(blobs, 3);
    for version in [0, 6] {
        let buffer: Arc<[u8]> = write_bytecode(&module, &WriteOptions::version(version)).unwrap().into();
        let back = read_bytecode_shared(buffer.clone()).unwrap();
        for group in &back.resources.dialect {
            for entry in &group.entries {
                let ResourceValue::Blob { alignment, data } = &entry.value else { panic!("{entry:?}") };
                assert_eq!(*alignment, 64);
                let offset = data.bytes().as_ptr() as usize - buffer.as_ptr() as usize;
                assert_eq!(offset % 64, 0, "v{version}: blob at offset {offset}");
            }
        }
        if version == 6 {
            let (expected, actual) = (print(&module), print(&back));
            assert!(expected == actual, "{}", first_difference(&expected, &actual));
        }
    }
}

/// Below v4 a block argument without a location gets an `UnknownLoc` the writer makes; when the
/// module's own `UnknownLoc` was numbered before it, the two are one entry (the module's
/// attributes, written from the module until then, are looked up once the writer makes one).
#[test]
fn an_attribute_the_writer_makes_is_one_entry_with_an_equal_one_of_the_module() {
    let source = "\"test.outer\"() ({\n^bb0(%a: i32):\n  \"test.use\"(%a) : (i32) -> ()\n}) : () -> () loc(unknown)\n";
    let mut module = parse_text(source).unwrap();
    let unknown = module.context.intern_attr(Attribute::UnknownLoc);
    for op in &mut module.ops {
        op.loc = unknown;
    }
    for value in &mut module.values {
        if matches!(value.def, ValueDef::BlockArgument { .. }) {
            value.loc = None;
        }
    }
    for version in [3, 6] {
        let bytes = write_bytecode(&module, &WriteOptions::version(version)).unwrap();
        let entries = Sections::parse(&bytes).attr_entries();
        // `UnknownLoc` is builtin attribute code 15: the one-byte varint 0x1F.
        assert_eq!(entries.iter().filter(|e| *e == &[0x1F]).count(), 1, "v{version}: {entries:?}");
        read_bytecode(&bytes).unwrap();
    }
}

#[test]
fn strings_are_written_once() {
    let mut module = read_fixture("unregistered", 6);
    let ctx = &mut module.context;
    let dup = ctx.intern_str(b"test");
    let dup_attr = ctx.intern_attr(Attribute::String { value: dup, ty: None });
    let key = ctx.intern_str(b"other");
    let key_attr = ctx.intern_attr(Attribute::String { value: key, ty: None });
    // "test" as the dialect name, a dictionary key, a string value and resource keys.
    let dict = ctx.intern_attr(Attribute::Dictionary(vec![(key_attr, dup_attr), (dup_attr, dup_attr)].into()));
    let top = module.top_level[0];
    module.ops[top.0 as usize].attrs = Some(dict);
    let builtin = module.context.intern_dialect("builtin");
    module.resources.dialect.push(ResourceGroup {
        owner: builtin,
        entries: vec![ResourceEntry { key: dup, value: ResourceValue::String(dup) }],
    });
    module.resources.external.push(ResourceGroup {
        owner: dup,
        entries: vec![ResourceEntry { key: dup, value: ResourceValue::Bool(true) }],
    });
    for version in [0, 6] {
        let bytes = write_bytecode(&module, &lossy(version)).unwrap();
        let strings = Sections::parse(&bytes).strings();
        assert_eq!(strings.iter().filter(|s| s.as_slice() == b"test").count(), 1, "v{version}: {strings:?}");
        let mut sorted = strings.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), strings.len(), "v{version}: {strings:?}");
        let back = read_bytecode(&bytes).unwrap();
        assert_eq!(back.resources.external.len(), 1);
    }
    for name in fixture_names() {
        let bytes = write_bytecode(&read_fixture(&name, 6), &WriteOptions::default()).unwrap();
        let strings = Sections::parse(&bytes).strings();
        let mut sorted = strings.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), strings.len(), "{name}: {strings:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Against upstream.

fn upstream(tools: &Path, args: &[&str], input: &Path) -> Result<Vec<u8>, String> {
    let out = Command::new(tools.join("iree-opt"))
        .arg("--allow-unregistered-dialect")
        .args(args)
        .arg(input)
        .output()
        .map_err(|e| format!("run iree-opt: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(out.stdout)
}

const PRINT: &[&str] = &["--mlir-print-op-generic", "--mlir-print-debuginfo"];

#[test]
fn upstream_reads_rtx_files_as_its_own() {
    let Some(tools) = iree_tools_or_skip() else { return };
    let scratch = std::env::temp_dir().join(format!("rtx-mlir-write-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let mut jobs = Vec::new();
    for name in fixture_names() {
        for (from, to) in pairs() {
            let bytes = write_bytecode(&read_fixture(&name, from), &lossy(to)).unwrap();
            let path = scratch.join(format!("{name}.v{from}-to-v{to}.mlirbc"));
            std::fs::write(&path, &bytes).unwrap();
            let per_version = fixture_dir().join(format!("{name}.v{to}.generic.mlir"));
            let expected =
                if per_version.exists() { per_version } else { fixture_dir().join(format!("{name}.generic.mlir")) };
            jobs.push((format!("{name} v{from} -> v{to}"), path, expected));
        }
    }
    let failures = std::sync::Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((label, path, expected)) = jobs.get(i) else { break };
                let expected = std::fs::read_to_string(expected).unwrap();
                let failure = match upstream(&tools, PRINT, path) {
                    Ok(text) if text == expected.as_bytes() => None,
                    Ok(text) => Some(format!(
                        "{label}: upstream reads {} differently:\n{}",
                        path.display(),
                        first_difference(&expected, &String::from_utf8_lossy(&text))
                    )),
                    Err(e) => Some(format!("{label}: upstream rejects {}: {e}", path.display())),
                };
                failures.lock().unwrap().extend(failure);
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    let _ = std::fs::remove_dir_all(&scratch);
}

#[test]
fn upstream_keeps_rtx_use_list_orders() {
    let Some(tools) = iree_tools_or_skip() else { return };
    let scratch = std::env::temp_dir().join(format!("rtx-mlir-uselists-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let original = read_fixture("uselists", 6);
    for version in 3..=6 {
        let ours = scratch.join(format!("uselists.v{version}.mlirbc"));
        std::fs::write(&ours, write_bytecode(&original, &WriteOptions::version(version)).unwrap()).unwrap();
        // Upstream reads rtx's file, builds the use-lists, and writes them out again.
        let reemitted = upstream(&tools, &["--emit-bytecode", "--emit-bytecode-version=6"], &ours).unwrap();
        let back = read_bytecode(&reemitted).unwrap();
        assert_eq!(back.use_list_orders, original.use_list_orders, "v{version}");
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

/// rtx's files are the size of upstream's own (iree-opt's, checked in), per fixture and version,
/// with upstream's producer string: within 1%, so that a writer change that bloats the file (a
/// string or attribute written twice, a lost sharing) fails here. Today all but `attributes` are
/// exactly upstream's size, and that one is at most 5 bytes (0.2%) larger.
#[test]
fn rtx_files_are_the_size_of_upstreams() {
    let mut larger = Vec::new();
    for name in fixture_names() {
        for version in 0..=6 {
            let theirs = std::fs::read(fixture_path(&name, version)).unwrap().len();
            let options = WriteOptions { producer: "MLIR24.0.0git".into(), ..lossy(version) };
            let ours = write_bytecode(&read_fixture(&name, version), &options).unwrap().len();
            if ours * 100 > theirs * 101 {
                larger.push(format!("{name} v{version}: upstream {theirs} bytes, rtx {ours}"));
            }
        }
    }
    assert!(larger.is_empty(), "rtx writes files over 1% larger than upstream's:\n{}", larger.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// A minimal section splitter for checking layout.

struct Sections<'a> {
    order: Vec<u8>,
    payloads: Vec<(u8, &'a [u8])>,
}

fn varint(bytes: &[u8], pos: &mut usize) -> u64 {
    let first = bytes[*pos];
    if first == 0 {
        let v = u64::from_le_bytes(bytes[*pos + 1..*pos + 9].try_into().unwrap());
        *pos += 9;
        return v;
    }
    let extra = first.trailing_zeros() as usize;
    let mut buf = [0u8; 8];
    buf[..extra + 1].copy_from_slice(&bytes[*pos..*pos + extra + 1]);
    *pos += extra + 1;
    u64::from_le_bytes(buf) >> (extra + 1)
}

impl<'a> Sections<'a> {
    fn parse(bytes: &'a [u8]) -> Self {
        assert_eq!(&bytes[..4], b"ML\xEFR");
        let mut pos = 4;
        varint(bytes, &mut pos);
        pos += bytes[pos..].iter().position(|&b| b == 0).unwrap() + 1;
        let mut order = Vec::new();
        let mut payloads = Vec::new();
        while pos < bytes.len() {
            let id = bytes[pos];
            pos += 1;
            let len = varint(bytes, &mut pos) as usize;
            if id & 0x80 != 0 {
                let align = varint(bytes, &mut pos) as usize;
                while pos % align != 0 {
                    assert_eq!(bytes[pos], 0xCB);
                    pos += 1;
                }
            }
            order.push(id & 0x7f);
            payloads.push((id & 0x7f, &bytes[pos..pos + len]));
            pos += len;
        }
        Sections { order, payloads }
    }

    fn payload(&self, id: u8) -> &'a [u8] {
        self.payloads.iter().find(|(i, _)| *i == id).unwrap().1
    }

    /// The encodings of the attribute entries (offset section 3, data section 2).
    fn attr_entries(&self) -> Vec<&'a [u8]> {
        let (offsets, data) = (self.payload(3), self.payload(2));
        let mut pos = 0;
        let num_attrs = varint(offsets, &mut pos) as usize;
        varint(offsets, &mut pos);
        let (mut entries, mut start) = (Vec::new(), 0);
        while entries.len() < num_attrs {
            varint(offsets, &mut pos);
            for _ in 0..varint(offsets, &mut pos) {
                let size = (varint(offsets, &mut pos) >> 1) as usize;
                entries.push(&data[start..start + size]);
                start += size;
            }
        }
        entries
    }

    fn strings(&self) -> Vec<Vec<u8>> {
        let data = self.payloads.iter().find(|(id, _)| *id == 0).unwrap().1;
        let mut pos = 0;
        let n = varint(data, &mut pos) as usize;
        let mut sizes: Vec<usize> = (0..n).map(|_| varint(data, &mut pos) as usize).collect();
        sizes.reverse();
        let mut out = Vec::new();
        for size in sizes {
            out.push(data[pos..pos + size - 1].to_vec());
            pos += size;
        }
        assert_eq!(pos, data.len());
        out
    }
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
fn a_registered_op_whose_properties_do_not_fit_its_schema_is_written_for_upstream_to_read() {
    // `extra` is no inherent attribute of `arith.constant`: the native encoding cannot hold it, so
    // from v5 on the properties go to the attribute dictionary (upstream would misread a
    // dictionary as the native encoding of an op it has registered).
    upstream_reads_every_version(
        "misfit",
        r#""builtin.module"() ({
  %0 = "arith.constant"() <{extra = 7 : i64, value = 1 : i32}> : () -> i32
  %1 = "arith.constant"() <{value = 2 : i32}> : () -> i32
  "test.use"(%0, %1) : (i32, i32) -> ()
}) : () -> ()
"#,
        &[r#""arith.constant"() <{value = 1 : i32}> {extra = 7 : i64}"#, r#""arith.constant"() <{value = 2 : i32}>"#],
    );
}

#[test]
fn an_op_of_an_upstream_dialect_without_a_schema_is_written_for_upstream_to_read() {
    // rtx has no schema for emitc ops, but upstream registers the dialect: the properties must
    // reach it through the attribute dictionary, never as a dictionary blob.
    upstream_reads_every_version(
        "noschema",
        r#""builtin.module"() ({
  %0 = "emitc.constant"() <{value = 1 : i32}> : () -> i32
  "test.use"(%0) : (i32) -> ()
}) : () -> ()
"#,
        &[r#""emitc.constant"() <{value = 1 : i32}> : () -> i32"#],
    );
}

/// rtx parses `text` and writes it at every version; upstream reads each file, and its generic
/// print contains every one of `expected` (without the tools, writing must still succeed).
fn upstream_reads_every_version(name: &str, text: &str, expected: &[&str]) {
    let module = parse_text(text).unwrap();
    let Some(tools) = iree_tools_or_skip() else {
        for version in 0..=6 {
            write_bytecode(&module, &lossy(version)).unwrap();
        }
        return;
    };
    let scratch = std::env::temp_dir().join(format!("rtx-mlir-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    for version in 0..=6 {
        let path = scratch.join(format!("{name}.v{version}.mlirbc"));
        std::fs::write(&path, write_bytecode(&module, &lossy(version)).unwrap()).unwrap();
        let text = upstream(&tools, &["--mlir-print-op-generic"], &path)
            .unwrap_or_else(|e| panic!("v{version}: upstream rejects rtx's file: {e}"));
        let text = String::from_utf8(text).unwrap();
        for want in expected {
            assert!(text.contains(want), "v{version}: no {want} in\n{text}");
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
}
