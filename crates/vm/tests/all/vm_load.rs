//! Loading real `.vmfb` modules compiled by IREE 3.13 (`scripts/regen/vm-fixtures.sh`, `tests/fixtures/vm/loader/variants.txt`): the
//! metadata must match what the sources and `iree-dump-module` say, and hostile variants of the same
//! files (truncated, corrupted, hand-patched) must fail with a located error, never a panic.

use std::path::PathBuf;

use rtx_host::{Diagnostic, StatusCode};
use rtx_test_support::fixtures_dir;
use rtx_vm::container::Container;
use rtx_vm::flatbuffer::Field;
use rtx_vm::module_def::{BytecodeVersion, FeatureBits, LocationDef};
use rtx_vm::{LoadError, Module};

const FIXTURES: &[&str] = &[
    "scalar_vmvx.vmfb",
    "scalar_bare.vmfb",
    "abs_vmvx.vmfb",
    "with_check_vmvx.vmfb",
    "abs_llvm_cpu.vmfb",
    "abs_llvm_cpu_bare.vmfb",
];

fn fixture_path(name: &str) -> PathBuf {
    fixtures_dir().join("vm/loader").join(name)
}

fn fixture_bytes(name: &str) -> Vec<u8> {
    std::fs::read(fixture_path(name)).unwrap_or_else(|e| panic!("reading fixture {name}: {e}"))
}

fn load(name: &str) -> Module {
    Module::load_file(fixture_path(name)).unwrap_or_else(|e| panic!("loading {name}: {e}"))
}

/// File offset of a field of the root `BytecodeModuleDef`, found with the loader's own reader so
/// that hand-made corruptions hit exactly the field they mean to.
fn root_field_offset(bytes: &[u8], id: u16) -> usize {
    let container = Container::parse(bytes).unwrap();
    let root = container.flatbuffer.root("BytecodeModuleDef").unwrap();
    root.field_offset(Field::new(id, "field")).expect("field is present")
}

fn patch_u32(bytes: &mut [u8], at: usize, value: u32) {
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

fn load_err(bytes: &[u8]) -> LoadError {
    Module::load_memory(bytes).expect_err("the patched module must be rejected")
}

#[test]
fn scalar_module_metadata_matches_its_source() {
    let module = load("scalar_vmvx.vmfb");
    assert!(module.is_zip());
    assert_eq!(module.name(), "scalar");
    assert_eq!(module.version(), 0);
    assert_eq!(module.bytecode_version(), BytecodeVersion { major: 17, minor: 0 });
    assert_eq!(module.requirements(), FeatureBits(0));
    let types: Vec<&str> = module.types().iter().map(|t| t.full_name.as_str()).collect();
    assert_eq!(types, ["i32", "i64"]);
    assert!(module.dependencies().is_empty());
    assert!(module.imported_functions().is_empty());
    assert_eq!(module.rodata_segment_count(), 0);

    let exports: Vec<(&str, u32)> =
        module.exported_functions().iter().map(|e| (e.local_name.as_str(), e.internal_ordinal)).collect();
    assert_eq!(exports, [("add", 0), ("accumulate", 1)]);
    let add = module.lookup_export("add").unwrap();
    let signature = module.export_signature(add).unwrap();
    assert_eq!(signature.calling_convention.as_deref(), Some("0ii_i"));
    assert_eq!(
        signature.attr("iree.abi.declaration"),
        Some("sync func @add(%input0: i32, %input1: i32) -> (%output0: i32)")
    );
    let accumulate = module.export_signature(module.lookup_export("accumulate").unwrap()).unwrap();
    assert_eq!(accumulate.calling_convention.as_deref(), Some("0I_I"));

    // One i32 global and one i64 global: 4 bytes padded to 8, then 8 → 16 bytes, no refs.
    assert_eq!(module.module_state().global_bytes_capacity, 16);
    assert_eq!(module.module_state().global_ref_count, 0);

    let descriptors: Vec<(u32, u32, u16, u16, u16)> = module
        .function_descriptors()
        .iter()
        .map(|d| (d.bytecode_offset, d.bytecode_length, d.block_count, d.i32_register_count, d.ref_register_count))
        .collect();
    assert_eq!(descriptors, [(0, 14, 1, 2, 0), (16, 56, 1, 6, 0)]);
    assert_eq!(module.bytecode_data().len(), 72);
    // Each function body starts with the block marker opcode 0x79.
    assert_eq!(module.function_bytecode(0).unwrap().len(), 14);
    assert_eq!(module.function_bytecode(1).unwrap()[0], 0x79);
    assert_eq!(module.function_bytecode(2), None);
}

#[test]
fn debug_database_maps_bytecode_offsets_to_source_lines() {
    let module = load("scalar_vmvx.vmfb");
    let db = module.debug_database().expect("debug info is kept by default");
    assert_eq!(db.location_table.len(), 15);
    assert!(
        matches!(&db.location_table[0], LocationDef::FileLineCol { filename, line: 17, column: 12 } if filename == "scalar.mlir")
    );
    assert_eq!(db.location_table[2], LocationDef::CallSite { callee: 0, caller: 1 });
    let names: Vec<&str> = db.functions.iter().map(|f| f.local_name.as_str()).collect();
    assert_eq!(names, ["accumulate"]);
    assert_eq!(db.functions[0].locations.len(), 8);
    // The first op of `accumulate` is `arith.constant 1` on line 17; offset 43 is the i32 store on 15.
    assert_eq!(db.file_location("accumulate", 1), Some(("scalar.mlir", 17, 12)));
    assert_eq!(db.file_location("accumulate", 43), Some(("scalar.mlir", 15, 5)));
    assert_eq!(db.file_location("add", 0), None);
}

#[test]
fn bare_flatbuffer_loads_like_the_zip() {
    let zip = load("scalar_vmvx.vmfb");
    let bare = load("scalar_bare.vmfb");
    assert!(!bare.is_zip());
    assert_eq!(bare.name(), zip.name());
    assert_eq!(bare.function_signatures(), zip.function_signatures());
    assert_eq!(bare.function_descriptors(), zip.function_descriptors());
    assert_eq!(bare.bytecode_data(), zip.bytecode_data());
    assert_eq!(bare.module_state(), zip.module_state());
}

#[test]
fn llvm_cpu_module_has_hal_imports_and_an_external_elf() {
    let module = load("abs_llvm_cpu.vmfb");
    assert_eq!(module.name(), "module");
    assert_eq!(module.requirements(), FeatureBits(FeatureBits::YIELD.0 | FeatureBits::UNWIND.0));
    let types: Vec<&str> = module.types().iter().map(|t| t.full_name.as_str()).collect();
    assert_eq!(
        types,
        [
            "i32",
            "i64",
            "!hal.allocator",
            "!hal.buffer",
            "!hal.buffer_view",
            "!hal.command_buffer",
            "!hal.device",
            "!hal.executable",
            "!hal.fence",
            "!vm.buffer"
        ]
    );
    let deps = module.dependencies();
    assert_eq!(deps.len(), 1);
    assert_eq!((deps[0].name.as_str(), deps[0].minimum_version, deps[0].is_optional()), ("hal", 7, false));

    let imports = module.imported_functions();
    assert_eq!(imports.len(), 18);
    assert!(imports.iter().all(|i| i.module_name() == "hal" && !i.is_optional()));
    let cconv = |i: usize| imports[i].signature.as_ref().and_then(|s| s.calling_convention.as_deref());
    assert_eq!((imports[0].full_name.as_str(), cconv(0)), ("hal.buffer.assert", Some("0rrrIii_v")));
    assert_eq!((imports[17].full_name.as_str(), cconv(17)), ("hal.fence.await", Some("0iICrD_i")));

    let exports: Vec<(&str, u32)> =
        module.exported_functions().iter().map(|e| (e.local_name.as_str(), e.internal_ordinal)).collect();
    assert_eq!(exports, [("abs", 1), ("__init", 2)]);
    let cconvs: Vec<Option<&str>> =
        module.function_signatures().iter().map(|s| s.calling_convention.as_deref()).collect();
    assert_eq!(cconvs, [Some("0v_r"), Some("0r_r"), Some("0v_v")]);
    assert_eq!(
        module.function_signatures()[1].attr("iree.abi.declaration"),
        Some("sync func @abs(%input0: tensor<4xf32>) -> (%output0: tensor<4xf32>)")
    );
    assert_eq!(module.module_state().global_bytes_capacity, 0);
    assert_eq!(module.module_state().global_ref_count, 3);
    let abs = module.function_descriptors()[1];
    assert_eq!((abs.bytecode_offset, abs.bytecode_length, abs.block_count), (232, 438, 4));
    assert_eq!(abs.requirements, FeatureBits(FeatureBits::YIELD.0 | FeatureBits::UNWIND.0));
    assert_eq!(module.bytecode_data().len(), 1824);

    let segments: Vec<_> = module.rodata_segments().collect();
    assert_eq!(segments.len(), 8);
    assert_eq!(segments[0].data, b"hal.device.id");
    assert_eq!(segments[3].data, b"embedded-elf-x86_64");
    assert!(segments.iter().enumerate().all(|(i, s)| s.is_external == (i == 4)));
    // The FlatBuffer occupies 68..4864; rodata starts at the next 64-byte boundary, and the ELF
    // sits 96 bytes further, after the second ZIP entry's local header.
    assert_eq!(module.rodata_base(), 4864);
    let elf = segments[4];
    assert_eq!((elf.offset, elf.data.len()), (4864 + 96, 3568));
    assert_eq!(&elf.data[..4], b"\x7fELF");
}

#[test]
fn bare_llvm_cpu_module_puts_the_elf_at_the_rodata_base() {
    let module = load("abs_llvm_cpu_bare.vmfb");
    assert!(!module.is_zip());
    assert_eq!(module.rodata_base(), 4800);
    let elf = module.rodata_segment(4).unwrap();
    assert!(elf.is_external);
    assert_eq!((elf.offset, elf.data.len()), (4800, 3568));
    assert_eq!(&elf.data[..4], b"\x7fELF");
    assert_eq!(elf.offset % 64, 0);
}

#[test]
fn vmvx_executable_is_itself_a_loadable_module() {
    let module = load("abs_vmvx.vmfb");
    assert_eq!(module.rodata_segment(3).unwrap().data, b"vmvx-bytecode-fb");
    let executable = module.rodata_segment(4).unwrap();
    assert!(executable.is_external);
    assert_eq!(executable.data.len(), 1205);

    let inner = Module::load_memory(executable.data).unwrap();
    assert!(inner.is_zip());
    assert_eq!(inner.requirements(), FeatureBits(FeatureBits::EXT_F32.0 | FeatureBits::UNWIND.0));
    let types: Vec<&str> = inner.types().iter().map(|t| t.full_name.as_str()).collect();
    assert_eq!(types, ["f32", "i32", "i64", "!vm.buffer", "!vm.list<!vm.buffer>"]);
    let export = &inner.exported_functions()[0];
    assert_eq!(export.local_name, "abs_dispatch_0_elementwise_4_f32");
    let signature = inner.export_signature(export).unwrap();
    assert_eq!(signature.calling_convention.as_deref(), Some("0rrriiiiiiiii_v"));
    assert_eq!(signature.attr("binding_count"), Some("2"));
    assert!(inner.function_descriptors()[0].requirements.contains(FeatureBits::EXT_F32));
}

#[test]
fn check_module_is_an_optional_dependency_with_optional_imports() {
    let module = load("with_check_vmvx.vmfb");
    let deps: Vec<(&str, u32, bool)> =
        module.dependencies().iter().map(|d| (d.name.as_str(), d.minimum_version, d.is_optional())).collect();
    assert_eq!(deps, [("hal", 7, false), ("check", 0, true)]);
    assert_eq!(module.imported_functions().len(), 22);
    let check: Vec<_> = module.imported_functions().iter().filter(|i| i.module_name() == "check").collect();
    assert_eq!(check.len(), 1);
    assert_eq!(check[0].full_name, "check.expect_almost_eq");
    assert!(check[0].is_optional());
    assert_eq!(check[0].signature.as_ref().unwrap().calling_convention.as_deref(), Some("0rrrff_v"));
    assert!(module.imported_functions().iter().filter(|i| i.module_name() == "hal").all(|i| !i.is_optional()));
    let exports: Vec<(&str, u32)> =
        module.exported_functions().iter().map(|e| (e.local_name.as_str(), e.internal_ordinal)).collect();
    assert_eq!(exports, [("check_abs", 0), ("__init", 2)]);
    let signature = module.export_signature(module.lookup_export("check_abs").unwrap()).unwrap();
    assert_eq!(signature.calling_convention.as_deref(), Some("0v_v"));
    assert_eq!(signature.attr("iree.abi.declaration"), Some("sync func @check_abs() -> ()"));
}

#[test]
fn memory_and_file_loads_agree_and_memory_copies_are_aligned() {
    for name in FIXTURES {
        let bytes = fixture_bytes(name);
        let from_memory = Module::load_memory(&bytes).unwrap();
        let from_file = load(name);
        assert_eq!(from_memory.bytes(), &bytes[..]);
        assert_eq!(from_memory.bytes().as_ptr() as usize % 64, 0);
        assert_eq!(from_memory.def().function_signatures, from_file.def().function_signatures);
        assert_eq!(from_memory.rodata_segments().count(), from_file.rodata_segments().count());
        for (a, b) in from_memory.rodata_segments().zip(from_file.rodata_segments()) {
            assert_eq!((a.data, a.offset), (b.data, b.offset));
            // External rodata lies on the 64-byte grid of the file, so in memory too.
            if a.is_external {
                assert_eq!(a.data.as_ptr() as usize % 32, 0, "{name}");
            }
        }
    }
}

#[test]
fn module_is_shareable_across_threads() {
    let module = std::sync::Arc::new(load("abs_llvm_cpu.vmfb"));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let module = module.clone();
            std::thread::spawn(move || module.rodata_segment(4).unwrap().data.len())
        })
        .collect();
    for handle in handles {
        assert_eq!(handle.join().unwrap(), 3568);
    }
}

// ---- hand-made hostile inputs -------------------------------------------------------------------

#[test]
fn wrong_file_identifier_is_rejected_with_its_offset() {
    let mut bytes = fixture_bytes("scalar_vmvx.vmfb");
    bytes[72..76].copy_from_slice(b"IREX");
    let err = load_err(&bytes);
    assert_eq!(err.offset, 72);
    assert_eq!(err.code, StatusCode::InvalidArgument);
    assert!(err.message.contains("file identifier is \"IREX\", expected \"IREE\""), "{err}");
}

#[test]
fn size_prefix_larger_than_the_file_is_data_loss() {
    let mut bytes = fixture_bytes("scalar_vmvx.vmfb");
    patch_u32(&mut bytes, 64, 5000);
    let err = load_err(&bytes);
    assert_eq!(err.offset, 64);
    assert_eq!(err.code, StatusCode::DataLoss);
    assert!(err.message.contains("size prefix says 5000 bytes but only 1265 follow"), "{err}");
}

#[test]
fn zip_header_pointing_past_the_file_is_rejected() {
    let mut bytes = fixture_bytes("scalar_vmvx.vmfb");
    bytes[28..30].copy_from_slice(&u16::MAX.to_le_bytes());
    let err = load_err(&bytes);
    assert_eq!(err.offset, 26);
    assert!(err.message.contains("ZIP local header"), "{err}");
    assert_eq!(load_err(b"PK\x03\x04short").code, StatusCode::DataLoss);
}

#[test]
fn root_vtable_out_of_range_is_rejected() {
    let mut bytes = fixture_bytes("scalar_vmvx.vmfb");
    let root = 68 + u32::from_le_bytes(bytes[68..72].try_into().unwrap()) as usize;
    patch_u32(&mut bytes, root, 0x7000_0000);
    let err = load_err(&bytes);
    assert_eq!(err.offset, root);
    assert!(err.message.contains("vtable of table BytecodeModuleDef lies outside the FlatBuffer"), "{err}");
}

#[test]
fn string_without_nul_terminator_is_rejected() {
    let mut bytes = fixture_bytes("scalar_vmvx.vmfb");
    let at = bytes.windows(11).position(|w| w == b"\x06\0\0\0scalar\0").expect("module name string") + 10;
    bytes[at] = b'!';
    let err = load_err(&bytes);
    assert_eq!(err.offset, at);
    assert!(err.message.contains("string BytecodeModuleDef.name is not NUL-terminated"), "{err}");
}

#[test]
fn vector_length_overflow_is_rejected() {
    let mut bytes = fixture_bytes("scalar_vmvx.vmfb");
    let length_field = load("scalar_vmvx.vmfb").def().bytecode_data.offset - 4;
    patch_u32(&mut bytes, length_field, u32::MAX);
    let err = load_err(&bytes);
    assert_eq!(err.offset, length_field);
    assert!(err.message.contains("vector BytecodeModuleDef.bytecode_data claims 4294967295 elements"), "{err}");
}

#[test]
fn unsupported_bytecode_versions_are_unimplemented_and_name_both_versions() {
    let original = fixture_bytes("abs_llvm_cpu.vmfb");
    let at = root_field_offset(&original, 13);
    assert_eq!(u32::from_le_bytes(original[at..at + 4].try_into().unwrap()), 0x0011_0000);
    for (raw, shown) in [(0x0012_0000u32, "18.0"), (0x0011_0001, "17.1"), (0x0010_0000, "16.0")] {
        let mut bytes = original.clone();
        patch_u32(&mut bytes, at, raw);
        let err = load_err(&bytes);
        assert_eq!(err.offset, at);
        assert_eq!(err.code, StatusCode::Unimplemented);
        assert!(err.message.contains(&format!("module bytecode version {shown} is not supported")), "{err}");
        assert!(err.message.contains("this runtime runs version 17.0"), "{err}");
        let diagnostic = Diagnostic::from(err);
        assert_eq!(diagnostic.code, StatusCode::Unimplemented);
        assert!(diagnostic.message.contains(&format!("offset {at}: ")), "{diagnostic}");
    }
}

#[test]
fn export_ordinal_out_of_range_is_rejected() {
    // The scalar module's second export says `internal_ordinal: 1`; make it 5.
    let mut bytes = fixture_bytes("scalar_vmvx.vmfb");
    let container = Container::parse(&bytes).unwrap();
    let root = container.flatbuffer.root("BytecodeModuleDef").unwrap();
    let exports = root.tables(Field::new(7, "exported_functions"), "ExportFunctionDef").unwrap().unwrap();
    let at = exports.get(1).unwrap().field_offset(Field::new(1, "internal_ordinal")).unwrap();
    patch_u32(&mut bytes, at, 5);
    let err = load_err(&bytes);
    assert_eq!(err.offset, at);
    assert!(err.message.contains("export 1 (`accumulate`) names internal function 5, but the module has 2"), "{err}");
}

#[test]
fn function_bytecode_outside_bytecode_data_is_rejected() {
    let mut bytes = fixture_bytes("scalar_vmvx.vmfb");
    let descriptors = root_field_offset(&bytes, 12);
    let vector = descriptors + u32::from_le_bytes(bytes[descriptors..descriptors + 4].try_into().unwrap()) as usize;
    let second_length = vector + 4 + 20 + 4;
    patch_u32(&mut bytes, second_length, 57);
    let err = load_err(&bytes);
    assert_eq!(err.offset, vector + 4 + 20);
    assert!(err.message.contains("function 1: bytecode range 16+57 lies outside the 72-byte bytecode_data"), "{err}");
}

#[test]
fn external_rodata_past_the_end_of_the_file_is_data_loss() {
    let bytes = fixture_bytes("abs_llvm_cpu_bare.vmfb");
    let err = load_err(&bytes[..bytes.len() - 1]);
    assert_eq!(err.code, StatusCode::DataLoss);
    assert!(err.message.contains("rodata segment 4: external data (3568 bytes at rodata base 4800 + 0)"), "{err}");
}

#[test]
fn io_and_empty_inputs_are_reported() {
    let missing = Module::load_file(fixture_path("does_not_exist.vmfb")).unwrap_err();
    assert_eq!(missing.code, StatusCode::NotFound);
    assert!(missing.message.contains("does_not_exist.vmfb"), "{missing}");
    assert_eq!(load_err(&[]).code, StatusCode::DataLoss);
    assert_eq!(load_err(&[4, 0, 0, 0, 0, 0, 0, 0]).offset, 4);
    let diagnostic = Diagnostic::from(load_err(b"\x08\0\0\0\x04\0\0\0IREX"));
    assert_eq!(diagnostic.code, StatusCode::InvalidArgument);
    assert_eq!(diagnostic.message, "loading VM module: offset 8: file identifier is \"IREX\", expected \"IREE\": this is not an IREE bytecode module");
}

// ---- generated hostile inputs -------------------------------------------------------------------

/// Loads `bytes` and, if that succeeds, touches everything a caller could, so a corruption that
/// slips past verification still cannot make an accessor panic.
fn load_and_touch(bytes: &[u8]) -> Result<(), LoadError> {
    let module = Module::load_memory(bytes)?;
    for segment in module.rodata_segments() {
        std::hint::black_box(segment.data.len());
    }
    for ordinal in 0..module.function_descriptors().len() {
        assert!(module.function_bytecode(ordinal).is_some());
    }
    for export in module.exported_functions() {
        assert!(module.export_signature(export).is_some());
    }
    if let Some(db) = module.debug_database() {
        for function in &db.functions {
            for location in &function.locations {
                db.file_location(&function.local_name, location.bytecode_offset);
            }
        }
    }
    Ok(())
}

/// Deterministic xorshift64 so failures reproduce without a `rand` dependency.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn every_truncation_of_every_fixture_is_an_error_not_a_panic() {
    for name in FIXTURES {
        let bytes = fixture_bytes(name);
        let mut ok = 0;
        for len in 0..bytes.len() {
            match load_and_touch(&bytes[..len]) {
                Ok(()) => ok += 1,
                Err(e) => assert!(e.offset <= bytes.len(), "{name}[..{len}]: offset {} out of file", e.offset),
            }
        }
        load_and_touch(&bytes).unwrap();
        // A ZIP's central directory follows the last segment and is never read, so cutting it off
        // still loads; any cut into the FlatBuffer or rodata must not.
        let needed = Module::load_memory(&bytes)
            .unwrap()
            .rodata_segments()
            .map(|s| s.offset + s.data.len())
            .max()
            .unwrap_or(0)
            .max(Container::parse(&bytes).map(|c| c.flatbuffer.base() + c.flatbuffer.len()).unwrap());
        assert_eq!(ok, bytes.len() - needed, "{name}: only cuts after byte {needed} may load");
    }
}

#[test]
fn thousands_of_single_byte_corruptions_are_errors_or_valid_modules() {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut rejected = 0;
    let mut total = 0;
    for name in FIXTURES {
        let original = fixture_bytes(name);
        let mut bytes = original.clone();
        for _ in 0..1500 {
            let at = (rng.next() % original.len() as u64) as usize;
            let mask = (rng.next() % 255 + 1) as u8;
            bytes[at] ^= mask;
            if let Err(e) = load_and_touch(&bytes) {
                rejected += 1;
                assert!(e.offset <= bytes.len(), "{name}: byte {at} ^ {mask:#x}: offset {} out of file", e.offset);
                assert!(!e.message.is_empty());
            }
            bytes[at] = original[at];
            total += 1;
        }
    }
    // Most bytes of a module are structure, so most corruptions must be caught.
    assert!(rejected > total / 10, "only {rejected} of {total} corruptions were rejected");
}
