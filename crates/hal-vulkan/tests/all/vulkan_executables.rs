//! The `vulkan-spirv-fb` executables IREE 3.13 puts in the `.vmfb` fixtures of tests/fixtures/vulkan
//! (scripts/regen/vulkan-fixtures.sh), read by `rtx_hal_vulkan::executable_def`.
//!
//! What each executable holds is checked against what the compiler said independently: its
//! `hal.executable.export` ops (`iree-compile --compile-to=executable-targets` of the same sources:
//! export name, binding count, constant count, workgroup size) and the SPIR-V binaries it dumped
//! (`<name>.executables.txt`: entry point and byte size).

use std::path::PathBuf;

use rtx_hal_vulkan::executable_def::{BindingSlot, DescriptorType, ExecutableDef, IDENTIFIER};
use rtx_test_support::fixtures_dir;
use rtx_vm::Module;

fn fixture(name: &str) -> PathBuf {
    fixtures_dir().join("vulkan").join(name)
}

/// The bytes of every Vulkan executable of fixture `name`, in rodata order.
fn executables(name: &str) -> Vec<Vec<u8>> {
    let module = Module::load_file(fixture(&format!("{name}.vmfb"))).expect("fixture loads");
    module.rodata_segments().filter(|s| s.data.starts_with(IDENTIFIER)).map(|s| s.data.to_vec()).collect()
}

fn parse(bytes: &[u8]) -> ExecutableDef {
    ExecutableDef::parse(bytes).unwrap_or_else(|e| panic!("parsing a fixture executable: {e}"))
}

/// (export, HAL bindings, push constants, workgroup size) as a `hal.executable.export` declares them.
type Export = (&'static str, usize, usize, [u32; 3]);

/// Each fixture's executables, in rodata order.
const EXPECTED: [(&str, &[Export]); 4] = [
    ("elementwise", &[("add_dispatch_0_elementwise_4_f32", 3, 0, [64, 1, 1])]),
    ("reduction", &[("row_sum_dispatch_0_reduction_2x8_f32", 2, 0, [64, 1, 1])]),
    ("matmul", &[("matmul_dispatch_0_matmul_4x4x8_f32", 3, 0, [8, 8, 1])]),
    (
        "dynamic",
        &[
            ("scale_dispatch_0_elementwise_D_f32", 3, 4, [64, 1, 1]),
            ("add_negate_dispatch_0_elementwise_3_i32", 3, 0, [64, 1, 1]),
            ("add_negate_dispatch_1_elementwise_3_i32", 2, 0, [64, 1, 1]),
        ],
    ),
];

#[test]
fn every_fixture_executable_declares_the_exports_the_compiler_reported() {
    for (name, exports) in EXPECTED {
        let defs: Vec<ExecutableDef> = executables(name).iter().map(|bytes| parse(bytes)).collect();
        assert_eq!(defs.len(), exports.len(), "{name}: executables");
        for (def, &(export, bindings, constants, workgroup_size)) in defs.iter().zip(exports) {
            // IREE 3.13 does not link Vulkan dispatches: one pipeline, module and layout each.
            assert_eq!(def.export_names(), [export], "{name}");
            assert_eq!((def.shader_modules.len(), def.pipeline_layouts.len()), (1, 1), "{name}");
            let pipeline = &def.pipelines[0];
            assert_eq!((pipeline.shader_module, pipeline.pipeline_layout), (0, 0));
            let layout = &def.pipeline_layouts[pipeline.pipeline_layout];
            assert_eq!(def.binding_slots(layout).len(), bindings, "{export}: bindings");
            assert_eq!(layout.push_constant_count(), constants, "{export}: constants");
            assert_eq!(pipeline.workgroup_size, Some(workgroup_size), "{export}");
            // The default target (vp_android_baseline_2022) fixes no subgroup size at run time.
            assert_eq!(pipeline.subgroup_size, None, "{export}");
        }
    }
}

#[test]
fn bindings_are_storage_buffers_numbered_in_set_zero() {
    for (name, _) in EXPECTED {
        for bytes in executables(name) {
            let def = parse(&bytes);
            let layout = &def.pipeline_layouts[0];
            let slots = def.binding_slots(layout);
            let expected: Vec<BindingSlot> = (0..slots.len() as u32)
                .map(|binding| BindingSlot {
                    set: 0,
                    binding,
                    array_element: 0,
                    descriptor_type: DescriptorType::StorageBuffer,
                })
                .collect();
            assert_eq!(slots, expected, "{name}");
            for binding in &def.descriptor_set_layouts[layout.descriptor_set_layouts[0]].bindings {
                assert_eq!((binding.descriptor_count, binding.stage_flags), (1, 0x20), "{name}: one, compute only");
            }
        }
    }
}

#[test]
fn dynamic_shapes_reach_the_dispatch_as_one_compute_push_constant_range() {
    let def = parse(&executables("dynamic")[0]);
    let ranges = &def.pipeline_layouts[0].push_constant_ranges;
    assert_eq!(ranges.len(), 1);
    assert_eq!((ranges[0].stage_flags, ranges[0].offset, ranges[0].size), (0x20, 0, 16));
}

#[test]
fn shader_modules_are_the_spirv_the_compiler_dumped() {
    for (name, _) in EXPECTED {
        let record = std::fs::read_to_string(fixture(&format!("{name}.executables.txt"))).expect("record");
        let dumped: Vec<(&str, usize)> = record
            .lines()
            .map(|line| {
                let (file, size) = line.split_once(' ').expect("`<file> <bytes>`");
                (file, size.parse().expect("a byte count"))
            })
            .collect();
        let defs: Vec<ExecutableDef> = executables(name).iter().map(|bytes| parse(bytes)).collect();
        assert_eq!(defs.len(), dumped.len(), "{name}");
        for def in &defs {
            let entry = &def.pipelines[0].entry_point;
            let matching: Vec<_> = dumped.iter().filter(|(file, _)| file.ends_with(&format!("_{entry}.spv"))).collect();
            assert_eq!(matching.len(), 1, "{name}: one dumped binary for {entry}");
            assert_eq!(def.shader_modules[0].spirv.len() * 4, matching[0].1, "{entry}: SPIR-V bytes");
        }
    }
}

#[test]
fn exports_carry_their_name_and_source_location() {
    let def = parse(&executables("dynamic")[1]);
    let debug = def.pipelines[0].debug_info.as_ref().expect("the compiler embeds debug info by default");
    assert_eq!(debug.name.as_deref(), Some("add_negate_dispatch_0_elementwise_3_i32"));
    let location = debug.location.as_ref().expect("a source location");
    // The compiler locates the dispatch at its function: `func.func @add_negate` is on line 7 of
    // src/dynamic.mlir.
    assert_eq!((location.file.as_str(), location.line), ("dynamic.mlir", 7));
}

#[test]
fn a_cut_or_corrupted_header_is_an_error_naming_the_header() {
    let bytes = executables("elementwise").remove(0);
    let err = ExecutableDef::parse(&bytes[..40]).unwrap_err();
    assert_eq!(err.offset, 0);
    assert!(err.message.contains("64-byte header"), "{err}");

    let mut wrong_magic = bytes.clone();
    wrong_magic[0] = b'X';
    assert!(ExecutableDef::parse(&wrong_magic).unwrap_err().message.contains("does not start with `VKE1`"));

    let mut version = bytes.clone();
    version[4] = 1;
    let err = ExecutableDef::parse(&version).unwrap_err();
    assert_eq!((err.offset, err.code), (4, rtx_host::StatusCode::Unimplemented));

    let err = ExecutableDef::parse(&bytes[..bytes.len() - 1]).unwrap_err();
    assert_eq!((err.offset, err.code), (8, rtx_host::StatusCode::DataLoss));
    assert!(err.message.contains("only"), "{err}");

    let mut empty = bytes.clone();
    empty[8..16].fill(0);
    assert!(ExecutableDef::parse(&empty).unwrap_err().message.contains("empty"));
}

#[test]
fn a_wrong_flatbuffer_identifier_is_rejected() {
    let mut bytes = executables("elementwise").remove(0);
    bytes[64 + 4] = b'Z';
    let err = ExecutableDef::parse(&bytes).unwrap_err();
    assert_eq!(err.offset, 68);
    assert!(err.message.contains("file identifier"), "{err}");
}

#[test]
fn spirv_without_its_magic_is_rejected_where_it_lies() {
    let mut bytes = executables("matmul").remove(0);
    let magic = spirv_magic_offset(&bytes);
    bytes[magic] ^= 0xff;
    let err = ExecutableDef::parse(&bytes).unwrap_err();
    assert_eq!(err.offset, magic);
    assert!(err.message.contains("shader_modules[0] does not start with the SPIR-V magic"), "{err}");
}

#[test]
fn an_entry_point_missing_from_its_module_is_rejected() {
    let mut bytes = executables("reduction").remove(0);
    // The entry point name is stored twice in the FlatBuffer (pipeline and debug info) and once in
    // the SPIR-V OpEntryPoint; change the SPIR-V's copy only.
    let magic = spirv_magic_offset(&bytes);
    let name = b"row_sum_dispatch_0_reduction_2x8_f32";
    let in_spirv = magic + find(&bytes[magic..], name).expect("the SPIR-V names its entry point");
    bytes[in_spirv] = b'X';
    let err = ExecutableDef::parse(&bytes).unwrap_err();
    assert!(err.message.contains("not a compute entry point of shader_modules[0]"), "{err}");
}

#[test]
fn every_truncation_and_many_byte_flips_are_errors_or_answers_never_panics() {
    for (name, _) in EXPECTED {
        for bytes in executables(name) {
            for len in 0..bytes.len() {
                assert!(ExecutableDef::parse(&bytes[..len]).is_err(), "{name}: {len} of {} bytes parsed", bytes.len());
            }
            for at in 0..bytes.len() {
                for flip in [0x01u8, 0x80, 0xff] {
                    let mut copy = bytes.clone();
                    copy[at] ^= flip;
                    let _ = ExecutableDef::parse(&copy);
                }
            }
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}

fn spirv_magic_offset(bytes: &[u8]) -> usize {
    find(bytes, &0x0723_0203u32.to_le_bytes()).expect("the executable holds SPIR-V")
}
