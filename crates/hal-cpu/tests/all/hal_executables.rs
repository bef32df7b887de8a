//! The CPU executables IREE 3.13's llvm-cpu backend emits, loaded by both of our loaders and
//! called directly: `tests/fixtures/hal/<name>.<format>.so` are the raw binaries compiled by
//! `scripts/regen/hal-executable-fixtures.sh` from `tests/fixtures/hal/src/<name>.mlir`.
//!
//! Workgroup counts and constants are what the compiled host code passes (read from
//! `iree-dump-module` of the same compilation): every static-shape dispatch here runs as one
//! workgroup, and `negate_dynamic` runs ceil(n / 4096) workgroups with n as two 32-bit constants.
//! Outputs are bound with guard bytes behind them, checked untouched afterwards.

use std::ffi::{c_int, c_void};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use rtx_hal_cpu::elf::{ElfError, ElfModule};
use rtx_hal_cpu::library::{Binding, DispatchError, ExecutableFormat, ExecutableLibrary, ImportFunction, LibraryError};
use rtx_hal_cpu::system_library::{SystemLibrary, SystemLibraryError};
use rtx_test_support::fixtures_dir;

const FORMATS: [ExecutableFormat; 2] = [ExecutableFormat::EmbeddedElf, ExecutableFormat::SystemElf];
const QUERY: &str = "iree_hal_executable_library_query";
const GUARD: u8 = 0xa5;
const GUARD_LEN: usize = 64;

fn fixture_path(name: &str, format: ExecutableFormat) -> PathBuf {
    fixtures_dir().join("hal").join(format!("{name}.{}.so", format.name()))
}

fn fixture(name: &str, format: ExecutableFormat) -> Vec<u8> {
    let path = fixture_path(name, format);
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn no_imports(_: &str) -> Option<ImportFunction> {
    None
}

fn load(name: &str, format: ExecutableFormat) -> ExecutableLibrary {
    // SAFETY: the fixtures were compiled by iree-compile from our own sources.
    unsafe { ExecutableLibrary::load(format, &fixture(name, format), &[], &no_imports) }
        .unwrap_or_else(|e| panic!("loading {name} as {}: {e}", format.name()))
}

/// A buffer whose first `len` bytes are bound and whose tail must stay untouched.
struct Guarded {
    bytes: Vec<u8>,
    len: usize,
}

impl Guarded {
    fn from_bytes(data: &[u8]) -> Self {
        let mut bytes = data.to_vec();
        bytes.resize(data.len() + GUARD_LEN, GUARD);
        Guarded { bytes, len: data.len() }
    }

    fn zeroed(len: usize) -> Self {
        Guarded::from_bytes(&vec![0; len])
    }

    fn binding(&mut self) -> Binding<'_> {
        Binding::new(&mut self.bytes[..self.len])
    }

    fn contents(&self) -> &[u8] {
        assert!(self.bytes[self.len..].iter().all(|&b| b == GUARD), "a dispatch wrote past its binding");
        &self.bytes[..self.len]
    }
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn i32_bytes(values: &[i32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn i32s(bytes: &[u8]) -> Vec<i32> {
    bytes.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// Runs every workgroup of export `export` over `buffers` (inputs then outputs).
fn dispatch(
    library: &ExecutableLibrary,
    export: &str,
    workgroup_count: [u32; 3],
    constants: &[u32],
    buffers: &mut [Guarded],
) {
    let ordinal = library.export_ordinal(export).unwrap_or_else(|| panic!("no export {export}"));
    let bindings: Vec<Binding<'_>> = buffers.iter_mut().map(Guarded::binding).collect();
    let prepared = library.prepare_dispatch(ordinal, workgroup_count, constants, bindings).expect("prepare");
    let mut local_memory = vec![0u8; prepared.local_memory_size()];
    // SAFETY: the buffers have the sizes the export was compiled for.
    unsafe { prepared.run_all_workgroups(&mut local_memory) }.expect("dispatch");
}

#[test]
fn formats_are_named_as_in_vmfb_executable_tables() {
    for format in FORMATS {
        assert_eq!(ExecutableFormat::from_name(format.name()), Some(format));
    }
    assert_eq!(ExecutableFormat::from_name("vmvx-bytecode-fb"), None);
}

#[test]
fn every_fixture_declares_its_exports_with_both_loaders() {
    // (fixture, library name, exports)
    // (export, constants, bindings)
    type Export = (&'static str, usize, usize);
    let expected: [(&str, &str, &[Export]); 4] = [
        (
            "elementwise",
            "elementwise_linked",
            &[
                ("abs_f32_dispatch_0_elementwise_16_f32", 0, 2),
                ("add_f32_dispatch_0_elementwise_16_f32", 0, 3),
                ("abs_i32_dispatch_0_elementwise_16_i32", 0, 2),
                ("add_i32_dispatch_0_elementwise_16_i32", 0, 3),
            ],
        ),
        ("matmul", "matmul_dispatch_0", &[("matmul_dispatch_0_matmul_4x4x8_f32", 0, 3)]),
        (
            "transcendental",
            "transcendental_linked",
            &[
                ("exp_f32_dispatch_0_elementwise_8_f32", 0, 2),
                ("tanh_f32_dispatch_0_elementwise_8_f32", 0, 2),
                ("powf_f32_dispatch_0_elementwise_8_f32", 0, 3),
            ],
        ),
        ("dynamic", "negate_dynamic_dispatch_0", &[("negate_dynamic_dispatch_0_elementwise_D_f32", 2, 2)]),
    ];
    for format in FORMATS {
        for (fixture_name, library_name, exports) in expected {
            let library = load(fixture_name, format);
            assert_eq!(library.name(), library_name, "{fixture_name} {format:?}");
            assert_eq!(library.format(), format);
            assert!(library.imports().is_empty(), "{fixture_name} {format:?}: {:?}", library.imports());
            let actual: Vec<(&str, usize, usize)> =
                library.exports().iter().map(|e| (e.name.as_str(), e.constant_count, e.binding_count)).collect();
            assert_eq!(actual, exports, "{fixture_name} {format:?}");
            for export in library.exports() {
                assert_eq!(export.workgroup_size, [1, 1, 1], "{}", export.name);
                assert_eq!(export.local_memory_size, 0, "{}", export.name);
                assert!(!export.workgroup_size_dynamic, "{}", export.name);
            }
        }
    }
}

#[test]
fn abs_and_add_match_hand_computed_results() {
    let floats: [f32; 16] = [
        -1.5,
        2.25,
        -0.0,
        0.0,
        f32::NEG_INFINITY,
        f32::INFINITY,
        -f32::MAX,
        f32::MIN_POSITIVE,
        -1e-40,
        3.0,
        -7.75,
        100.0,
        -0.125,
        f32::NAN,
        -12345.678,
        1.0,
    ];
    let other: [f32; 16] = std::array::from_fn(|i| i as f32 * 0.5 - 3.0);
    let ints: [i32; 16] = [-1, 2, 0, i32::MIN, i32::MAX, -100, 7, -7, 123456, -123456, 1, -2, 3, -4, 5, -6];
    let other_ints: [i32; 16] = std::array::from_fn(|i| (i as i32 - 8) * 1000 + 1);
    for format in FORMATS {
        let library = load("elementwise", format);

        let mut buffers = [Guarded::from_bytes(&f32_bytes(&floats)), Guarded::zeroed(64)];
        dispatch(&library, "abs_f32_dispatch_0_elementwise_16_f32", [1, 1, 1], &[], &mut buffers);
        let expected: Vec<u32> = floats.iter().map(|v| v.to_bits() & 0x7fff_ffff).collect();
        let actual: Vec<u32> = f32s(buffers[1].contents()).iter().map(|v| v.to_bits()).collect();
        assert_eq!(actual, expected, "abs_f32 {format:?}");

        let mut buffers =
            [Guarded::from_bytes(&f32_bytes(&floats)), Guarded::from_bytes(&f32_bytes(&other)), Guarded::zeroed(64)];
        dispatch(&library, "add_f32_dispatch_0_elementwise_16_f32", [1, 1, 1], &[], &mut buffers);
        let expected: Vec<f32> = floats.iter().zip(other).map(|(a, b)| a + b).collect();
        let actual = f32s(buffers[2].contents());
        for (i, (a, e)) in actual.iter().zip(&expected).enumerate() {
            assert!(a.to_bits() == e.to_bits() || (a.is_nan() && e.is_nan()), "add_f32 {format:?} [{i}]: {a} != {e}");
        }

        let mut buffers = [Guarded::from_bytes(&i32_bytes(&ints)), Guarded::zeroed(64)];
        dispatch(&library, "abs_i32_dispatch_0_elementwise_16_i32", [1, 1, 1], &[], &mut buffers);
        let expected: Vec<i32> = ints.iter().map(|v| v.wrapping_abs()).collect();
        assert_eq!(i32s(buffers[1].contents()), expected, "abs_i32 {format:?}");

        let mut buffers =
            [Guarded::from_bytes(&i32_bytes(&ints)), Guarded::from_bytes(&i32_bytes(&other_ints)), Guarded::zeroed(64)];
        dispatch(&library, "add_i32_dispatch_0_elementwise_16_i32", [1, 1, 1], &[], &mut buffers);
        let expected: Vec<i32> = ints.iter().zip(other_ints).map(|(a, b)| a.wrapping_add(b)).collect();
        assert_eq!(i32s(buffers[2].contents()), expected, "add_i32 {format:?}");
    }
}

#[test]
fn matmul_matches_a_product_computed_here() {
    // Small integers keep every partial sum exact, whatever order the kernel accumulates in.
    let lhs: Vec<f32> = (0..32).map(|i| ((i * 5 + 3) % 11) as f32 - 5.0).collect();
    let rhs: Vec<f32> = (0..32).map(|i| ((i * 7 + 1) % 13) as f32 - 6.0).collect();
    let mut expected = vec![0f32; 16];
    for m in 0..4 {
        for n in 0..4 {
            expected[m * 4 + n] = (0..8).map(|k| lhs[m * 8 + k] * rhs[k * 4 + n]).sum();
        }
    }
    for format in FORMATS {
        let library = load("matmul", format);
        // The output starts as garbage: the dispatch must fill, not accumulate into it.
        let mut buffers = [
            Guarded::from_bytes(&f32_bytes(&lhs)),
            Guarded::from_bytes(&f32_bytes(&rhs)),
            Guarded::from_bytes(&f32_bytes(&[99.0; 16])),
        ];
        dispatch(&library, "matmul_dispatch_0_matmul_4x4x8_f32", [1, 1, 1], &[], &mut buffers);
        assert_eq!(f32s(buffers[2].contents()), expected, "{format:?}");
    }
}

#[test]
fn transcendentals_are_close_to_std() {
    let inputs: [f32; 8] = [-3.0, -1.0, -0.5, 0.0, 0.25, 1.0, 2.5, 8.0];
    let exponents: [f32; 8] = [2.0, 3.0, 0.5, 1.0, -1.0, 0.0, 1.5, -2.0];
    let bases: [f32; 8] = [2.0, -2.0, 4.0, 7.0, 0.5, 123.0, 9.0, 3.0];
    let close = |actual: f32, expected: f32| (actual - expected).abs() <= 4e-6 * expected.abs().max(1.0);
    for format in FORMATS {
        let library = load("transcendental", format);
        for (export, function) in [
            ("exp_f32_dispatch_0_elementwise_8_f32", f32::exp as fn(f32) -> f32),
            ("tanh_f32_dispatch_0_elementwise_8_f32", f32::tanh),
        ] {
            let mut buffers = [Guarded::from_bytes(&f32_bytes(&inputs)), Guarded::zeroed(32)];
            dispatch(&library, export, [1, 1, 1], &[], &mut buffers);
            for (input, actual) in inputs.iter().zip(f32s(buffers[1].contents())) {
                assert!(close(actual, function(*input)), "{export} {format:?}({input}) = {actual}");
            }
        }
        let mut buffers =
            [Guarded::from_bytes(&f32_bytes(&bases)), Guarded::from_bytes(&f32_bytes(&exponents)), Guarded::zeroed(32)];
        dispatch(&library, "powf_f32_dispatch_0_elementwise_8_f32", [1, 1, 1], &[], &mut buffers);
        for ((base, exponent), actual) in bases.iter().zip(exponents).zip(f32s(buffers[2].contents())) {
            // IREE expands powf through exp(y * log(x)), so a negative base gives NaN even with an
            // integral exponent; iree-run-module on the same compilation prints NAN too.
            let expected = if *base < 0.0 { f32::NAN } else { base.powf(exponent) };
            assert!(
                close(actual, expected) || (actual.is_nan() && expected.is_nan()),
                "powf({base}, {exponent}) = {actual}"
            );
        }
    }
}

#[test]
fn dynamic_shapes_take_their_length_from_constants_and_span_workgroups() {
    for format in FORMATS {
        let library = load("dynamic", format);
        for n in [1usize, 7, 4096, 5000] {
            let input: Vec<f32> = (0..n).map(|i| i as f32 - 100.5).collect();
            let workgroups = n.div_ceil(4096) as u32;
            let mut buffers = [Guarded::from_bytes(&f32_bytes(&input)), Guarded::zeroed(n * 4)];
            dispatch(
                &library,
                "negate_dynamic_dispatch_0_elementwise_D_f32",
                [workgroups, 1, 1],
                &[n as u32, 0],
                &mut buffers,
            );
            let expected: Vec<f32> = input.iter().map(|v| -v).collect();
            assert_eq!(f32s(buffers[1].contents()), expected, "n={n} {format:?}");
        }
    }
}

/// The packed parameters `import_call.mlir` passes its import.
#[repr(C)]
struct ScaleParams {
    base: *mut f32,
    offset: usize,
    count: usize,
}

/// Doubles `count` floats and counts its calls in the `AtomicUsize` its context points at.
unsafe extern "C" fn rtx_test_scale(params: *mut c_void, context: *mut c_void, _reserved: *mut c_void) -> c_int {
    // SAFETY: the dispatch passes its packed `ScaleParams`, and the context we registered.
    let (params, calls) = unsafe { (&*params.cast::<ScaleParams>(), &*context.cast::<AtomicUsize>()) };
    calls.fetch_add(1, Ordering::SeqCst);
    for i in 0..params.count {
        // SAFETY: the binding holds `offset + count` floats.
        unsafe { *params.base.add(params.offset + i) *= 2.0 };
    }
    0
}

#[test]
fn imports_resolve_through_the_provider_and_are_called_with_their_context() {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let provider = |name: &str| {
        (name == "rtx_test_scale")
            .then_some(ImportFunction { function: rtx_test_scale, context: std::ptr::from_ref(&CALLS).cast() })
    };
    for format in FORMATS {
        let bytes = fixture("import_call", format);
        // SAFETY: compiled by iree-compile from our own source.
        let missing = unsafe { ExecutableLibrary::load(format, &bytes, &[], &no_imports) };
        assert!(
            matches!(&missing, Err(LibraryError::UnresolvedImport(name)) if name == "rtx_test_scale"),
            "{format:?}: {:?}",
            missing.err()
        );

        // SAFETY: as above.
        let library = unsafe { ExecutableLibrary::load(format, &bytes, &[], &provider) }.expect("load");
        assert_eq!(library.imports(), ["rtx_test_scale"]);
        let export = &library.exports()[0];
        assert_eq!((export.name.as_str(), export.constant_count, export.binding_count), ("scale_by_import", 2, 1));
        let before = CALLS.load(Ordering::SeqCst);
        let mut buffers = [Guarded::from_bytes(&f32_bytes(&[1.0, -2.5, 3.0, 0.0, 10.0]))];
        dispatch(&library, "scale_by_import", [1, 1, 1], &[5, 0], &mut buffers);
        assert_eq!(f32s(buffers[0].contents()), [2.0, -5.0, 6.0, 0.0, 20.0], "{format:?}");
        assert_eq!(CALLS.load(Ordering::SeqCst), before + 1);
    }
}

#[test]
fn dispatches_with_wrong_arguments_are_refused_before_running() {
    let library = load("elementwise", ExecutableFormat::EmbeddedElf);
    let mut a = [0u8; 64];
    let mut b = [0u8; 64];
    let mut c = [0u8; 64];
    let abs = library.export_ordinal("abs_f32_dispatch_0_elementwise_16_f32").unwrap();
    fn error<T>(result: Result<T, DispatchError>) -> String {
        result.err().expect("refused").to_string()
    }

    assert_eq!(
        error(library.prepare_dispatch(9, [1, 1, 1], &[], [])),
        "export 9 does not exist (the executable has 4)"
    );
    assert_eq!(
        error(library.prepare_dispatch(abs, [1, 1, 1], &[], [Binding::new(&mut a)])),
        "`abs_f32_dispatch_0_elementwise_16_f32` takes 2 bindings, not 1"
    );
    assert_eq!(
        error(library.prepare_dispatch(abs, [1, 1, 1], &[3], [Binding::new(&mut a), Binding::new(&mut b)])),
        "`abs_f32_dispatch_0_elementwise_16_f32` takes 0 constants, not 1"
    );
    assert_eq!(
        error(library.prepare_dispatch(abs, [1, 1, 70000], &[], [Binding::new(&mut a), Binding::new(&mut b)])),
        "workgroup count Z 70000 exceeds 65535"
    );
    let bindings = [Binding::new(&mut b), Binding::new(&mut c)];
    let prepared = library.prepare_dispatch(abs, [1, 1, 1], &[], bindings).unwrap();
    // SAFETY: refused before anything runs.
    let outside = unsafe { prepared.run_workgroup([0, 1, 0], 0, &mut []) };
    assert_eq!(outside, Err(DispatchError::WorkgroupOutOfRange { id: [0, 1, 0], count: [1, 1, 1] }));
}

#[test]
fn a_dispatch_prepared_in_place_stays_empty_until_its_arguments_are_right() {
    let library = load("elementwise", ExecutableFormat::EmbeddedElf);
    let abs = library.export_ordinal("abs_f32_dispatch_0_elementwise_16_f32").unwrap();
    let (mut a, mut b, mut c) = ([0u8; 64], [0u8; 64], [0u8; 64]);
    let mut prepared = library.empty_dispatch();
    assert_eq!(prepared.workgroup_count(), [0, 0, 0]);
    // SAFETY: an empty dispatch has no workgroup to run, so nothing runs.
    let empty = unsafe { prepared.run_workgroup([0, 0, 0], 0, &mut []) };
    assert_eq!(empty, Err(DispatchError::WorkgroupOutOfRange { id: [0, 0, 0], count: [0, 0, 0] }));
    let refused = prepared.prepare(abs, [1, 1, 1], &[3], [Binding::new(&mut a), Binding::new(&mut b)]);
    assert_eq!(refused.unwrap_err().to_string(), "`abs_f32_dispatch_0_elementwise_16_f32` takes 0 constants, not 1");
    assert_eq!(prepared.workgroup_count(), [0, 0, 0], "a refused dispatch is left empty");
    let input: Vec<u8> = [-1.5f32, 2.0, -3.25, 4.0].iter().cycle().take(16).flat_map(|v| v.to_le_bytes()).collect();
    c.copy_from_slice(&input);
    let mut output = [0u8; 64];
    prepared.prepare(abs, [1, 1, 1], &[], [Binding::new(&mut c), Binding::new(&mut output)]).unwrap();
    // SAFETY: the export's bindings, 16 f32 in and out, as it was compiled for.
    unsafe { prepared.run_all_workgroups(&mut []) }.unwrap();
    let absolute: Vec<f32> = output.chunks(4).map(|v| f32::from_le_bytes(v.try_into().unwrap())).collect();
    assert_eq!(absolute[..4], [1.5, 2.0, 3.25, 4.0]);
}

#[test]
fn embedded_pages_are_never_writable_and_executable() {
    for name in ["elementwise", "matmul", "transcendental", "dynamic", "import_call"] {
        let module = ElfModule::load(&fixture(name, ExecutableFormat::EmbeddedElf), QUERY).expect("load");
        let range = module.address_range();
        assert!(range.contains(&module.symbol_address()), "{name}");
        let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
        let mut executable = 0;
        for line in maps.lines() {
            let (addresses, rest) = line.split_once(' ').unwrap();
            let (start, end) = addresses.split_once('-').unwrap();
            let (start, end) = (usize::from_str_radix(start, 16).unwrap(), usize::from_str_radix(end, 16).unwrap());
            if start >= range.end || end <= range.start {
                continue;
            }
            let permissions = &rest[..4];
            assert!(!(permissions.contains('w') && permissions.contains('x')), "{name}: {line}");
            executable += usize::from(permissions.contains('x'));
        }
        assert!(executable > 0, "{name}: no executable pages");
    }
}

/// Program headers of a fixture, for building hostile variants: (type, offset, vaddr, filesz).
fn program_headers(bytes: &[u8]) -> Vec<(u32, u64, u64, u64)> {
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    let phoff = u64_at(32) as usize;
    let phnum = u16::from_le_bytes([bytes[56], bytes[57]]) as usize;
    (0..phnum)
        .map(|i| {
            let at = phoff + i * 56;
            (
                u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()),
                u64_at(at + 8),
                u64_at(at + 16),
                u64_at(at + 32),
            )
        })
        .collect()
}

/// File offset of the dynamic entry with `tag`.
fn dynamic_entry(bytes: &[u8], tag: u64) -> usize {
    let (_, offset, _, size) = *program_headers(bytes).iter().find(|h| h.0 == 2).expect("PT_DYNAMIC");
    (offset as usize..(offset + size) as usize)
        .step_by(16)
        .find(|&at| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) == tag)
        .unwrap_or_else(|| panic!("no dynamic entry {tag}"))
}

/// File offset of virtual address `vaddr` (inside a PT_LOAD's file contents).
fn file_offset(bytes: &[u8], vaddr: u64) -> usize {
    let (_, offset, start, _) = *program_headers(bytes)
        .iter()
        .find(|h| h.0 == 1 && (h.2..h.2 + h.3).contains(&vaddr))
        .expect("vaddr in a PT_LOAD");
    (offset + vaddr - start) as usize
}

fn elf_error(bytes: &[u8]) -> ElfError {
    match ElfModule::load(bytes, QUERY) {
        Ok(_) => panic!("a hostile ELF loaded"),
        Err(error) => error,
    }
}

#[test]
fn truncated_embedded_executables_are_refused_until_their_segments_are_whole() {
    for name in ["elementwise", "dynamic"] {
        let bytes = fixture(name, ExecutableFormat::EmbeddedElf);
        let needed = program_headers(&bytes).iter().filter(|h| h.0 == 1).map(|h| h.1 + h.3).max().unwrap() as usize;
        for len in 0..needed {
            let message = elf_error(&bytes[..len]).to_string();
            assert!(!message.is_empty(), "{name} cut at {len}");
        }
        // The section headers at the end are not needed to load.
        for len in [needed, bytes.len()] {
            ElfModule::load(&bytes[..len], QUERY).unwrap_or_else(|e| panic!("{name} cut at {len}: {e}"));
        }
    }
}

#[test]
fn hostile_headers_segments_and_relocations_are_named_errors() {
    let original = fixture("elementwise", ExecutableFormat::EmbeddedElf);
    let patched = |patch: &dyn Fn(&mut Vec<u8>)| {
        let mut bytes = original.clone();
        patch(&mut bytes);
        elf_error(&bytes).to_string()
    };
    fn put(bytes: &mut [u8], at: usize, value: &[u8]) {
        bytes[at..at + value.len()].copy_from_slice(value);
    }
    fn phdr(index: usize) -> usize {
        64 + index * 56
    }
    let loads: Vec<usize> =
        program_headers(&original).iter().enumerate().filter(|h| h.1 .0 == 1).map(|h| h.0).collect();
    let text = loads[1];
    let data = loads[2];
    let rela = file_offset(
        &original,
        u64::from_le_bytes(original[dynamic_entry(&original, 7) + 8..][..8].try_into().unwrap()),
    );

    type Patch = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: Vec<(&str, Patch, String)> = vec![
        ("magic", Box::new(|b| b[0] = 0), "not an ELF file: magic bytes are [00, 45, 4c, 46]".into()),
        ("class", Box::new(|b| b[4] = 1), "unsupported ELF class (EI_CLASS) 1: expected 2 (ELFCLASS64)".into()),
        ("endianness", Box::new(|b| b[5] = 2), "unsupported ELF data encoding (EI_DATA) 2: expected 1 (little-endian)".into()),
        ("machine", Box::new(|b| put(b, 18, &183u16.to_le_bytes())), "unsupported ELF machine (e_machine) 183: expected 62 (x86-64)".into()),
        ("type", Box::new(|b| put(b, 16, &2u16.to_le_bytes())), "unsupported ELF file type (e_type) 2: expected 3 (ET_DYN, a shared object)".into()),
        (
            "phoff",
            Box::new(|b| put(b, 32, &0xffff_ff00u64.to_le_bytes())),
            format!("program header table (7 entries) at 0xffffff00 (+392 bytes) lies outside the {}-byte range it must fit in", original.len()),
        ),
        (
            "segment offset",
            Box::new(move |b| put(b, phdr(text) + 8, &0x10_0000u64.to_le_bytes())),
            format!("contents of program header {text} at 0x100000 (+289 bytes) lies outside the {}-byte range it must fit in", original.len()),
        ),
        (
            "file size over memory size",
            Box::new(move |b| put(b, phdr(text) + 40, &1u64.to_le_bytes())),
            format!("program header {text} is malformed: its file size exceeds its memory size"),
        ),
        (
            "writable code",
            Box::new(move |b| put(b, phdr(text) + 4, &7u32.to_le_bytes())),
            format!("program header {text} is malformed: it is both writable and executable"),
        ),
        (
            "overlap",
            Box::new(move |b| {
                let vaddr = b[phdr(text) + 16..][..8].to_vec();
                put(b, phdr(data) + 16, &vaddr);
            }),
            format!("loadable segments {text} and {data} overlap in memory"),
        ),
        (
            "huge memory size",
            Box::new(move |b| put(b, phdr(data) + 40, &(1u64 << 40).to_le_bytes())),
            "the loaded image would take 1099511640064 bytes (limit 1073741824)".into(),
        ),
        (
            "no dynamic segment",
            Box::new(|b| {
                let index = program_headers(b).iter().position(|h| h.0 == 2).unwrap();
                put(b, phdr(index), &0u32.to_le_bytes());
            }),
            "the ELF has no PT_DYNAMIC segment".into(),
        ),
        (
            "DT_NEEDED",
            Box::new(|b| {
                let at = dynamic_entry(b, 4);
                put(b, at, &1u64.to_le_bytes());
            }),
            "dynamic section: entry 10 is DT_NEEDED (string 0x1f8): the executable depends on a shared library, \
             which an embedded executable must not"
                .into(),
        ),
        (
            "no DT_HASH",
            Box::new(|b| {
                let at = dynamic_entry(b, 4);
                put(b, at, &21u64.to_le_bytes());
            }),
            "dynamic section: no DT_HASH (the only source of the symbol count), so symbols cannot be looked up".into(),
        ),
        (
            "unsupported relocation",
            Box::new(move |b| put(b, rela + 8, &37u64.to_le_bytes())),
            "relocation 0 of DT_RELA: unsupported x86-64 relocation type 37".into(),
        ),
        (
            "relocation target",
            Box::new(move |b| put(b, rela, &0x10_0000u64.to_le_bytes())),
            "relocation 0 of DT_RELA: target 0x100000 (+8 bytes) lies outside every loaded segment".into(),
        ),
        (
            "relocation symbol",
            Box::new(move |b| put(b, rela + 8, &((9u64 << 32) | 1).to_le_bytes())),
            "relocation 0 of DT_RELA: symbol index 9 is past the 2 symbols".into(),
        ),
        (
            "missing query",
            Box::new(|b| {
                let at = b.windows(QUERY.len()).position(|w| w == QUERY.as_bytes()).unwrap();
                b[at] = b'X';
            }),
            "the ELF does not export `iree_hal_executable_library_query`".into(),
        ),
    ];
    for (what, patch, expected) in cases {
        assert_eq!(patched(&*patch), expected, "{what}");
    }
}

#[test]
fn every_corrupted_byte_of_the_loader_visible_tables_is_survived() {
    // Loading runs no code from the ELF, so any corruption may be loaded: it must never crash.
    let original = fixture("dynamic", ExecutableFormat::EmbeddedElf);
    let headers = program_headers(&original);
    let dynamic = headers.iter().find(|h| h.0 == 2).unwrap();
    let first_load_end = headers.iter().find(|h| h.0 == 1).map(|h| (h.1 + h.3) as usize).unwrap();
    let regions = [0..first_load_end, dynamic.1 as usize..(dynamic.1 + dynamic.3) as usize];
    for region in regions {
        for at in region {
            for value in [0x00, 0xff, original[at] ^ 0x80] {
                let mut bytes = original.clone();
                bytes[at] = value;
                if let Err(error) = ElfModule::load(&bytes, QUERY) {
                    assert!(!error.to_string().is_empty());
                }
            }
        }
    }
}

#[test]
fn system_loader_refuses_garbage_and_missing_symbols() {
    // SAFETY: garbage is rejected by dlopen before anything runs.
    let garbage = unsafe { SystemLibrary::load(b"not a shared object", QUERY) };
    assert!(matches!(garbage, Err(SystemLibraryError::Open(_))), "{:?}", garbage.err());
    let bytes = fixture("matmul", ExecutableFormat::SystemElf);
    // SAFETY: compiled by iree-compile from our own source.
    let missing = unsafe { SystemLibrary::load(&bytes, "rtx_no_such_symbol") };
    assert_eq!(missing.err().map(|e| e.to_string()), Some("the library does not export `rtx_no_such_symbol`".into()));
}

#[test]
fn loaded_executables_are_independent_and_unload_cleanly() {
    // Load the same bytes many times: each load gets its own mapping or handle, and dropping
    // them releases them (a leak would show as growing memory in longer runs, a double free as a
    // crash here).
    for format in FORMATS {
        let libraries: Vec<ExecutableLibrary> = (0..8).map(|_| load("matmul", format)).collect();
        for library in &libraries {
            assert_eq!(library.exports().len(), 1);
        }
    }
}

/// Each system library is the one its bytes hold, even when loaded while others are open: the
/// dynamic linker knows loaded libraries by their path, and a reused `/proc/self/fd/N` once
/// handed back an earlier executable.
#[test]
fn every_system_library_loaded_alongside_others_is_its_own() {
    let names = ["matmul", "elementwise", "dynamic", "transcendental", "matmul", "elementwise"];
    let libraries: Vec<ExecutableLibrary> = names.iter().map(|name| load(name, ExecutableFormat::SystemElf)).collect();
    for (name, library) in names.iter().zip(&libraries) {
        let expected = load(name, ExecutableFormat::EmbeddedElf);
        assert_eq!(library.exports(), expected.exports(), "{name}");
    }
}

#[test]
fn workgroups_of_one_dispatch_run_on_several_threads() {
    let n = 3 * 4096 + 10;
    let input: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
    for format in FORMATS {
        let library = load("dynamic", format);
        let mut buffers = [Guarded::from_bytes(&f32_bytes(&input)), Guarded::zeroed(n * 4)];
        {
            let bindings: Vec<Binding<'_>> = buffers.iter_mut().map(Guarded::binding).collect();
            let mut prepared = library.prepare_dispatch(0, [4, 1, 1], &[n as u32, 0], bindings).expect("prepare");
            prepared.set_max_concurrency(4);
            let prepared = &prepared;
            std::thread::scope(|scope| {
                for x in 0..4 {
                    scope.spawn(move || {
                        // SAFETY: each workgroup writes its own 4096-element slice of the output.
                        unsafe { prepared.run_workgroup([x, 0, 0], x, &mut []) }.expect("workgroup");
                    });
                }
            });
        }
        let expected: Vec<f32> = input.iter().map(|v| -v).collect();
        assert_eq!(f32s(buffers[1].contents()), expected, "{format:?}");
    }
}

unsafe extern "C" fn rtx_test_scale_fails(
    _params: *mut c_void,
    _context: *mut c_void,
    _reserved: *mut c_void,
) -> c_int {
    7
}

#[test]
fn a_failing_import_fails_the_dispatch_with_its_status() {
    let provider = |name: &str| {
        (name == "rtx_test_scale")
            .then_some(ImportFunction { function: rtx_test_scale_fails, context: std::ptr::null() })
    };
    for format in FORMATS {
        // SAFETY: compiled by iree-compile from our own source.
        let library =
            unsafe { ExecutableLibrary::load(format, &fixture("import_call", format), &[], &provider) }.expect("load");
        let mut data = f32_bytes(&[1.0; 4]);
        let bindings = [Binding::new(&mut data)];
        let prepared = library.prepare_dispatch(0, [1, 1, 1], &[4, 0], bindings).expect("prepare");
        // SAFETY: the binding holds the 4 floats the constants announce.
        let result = unsafe { prepared.run_workgroup([0, 0, 0], 0, &mut []) };
        assert_eq!(
            result,
            Err(DispatchError::Failed { export: "scale_by_import".into(), workgroup: [0, 0, 0], status: 7 }),
            "{format:?}"
        );
    }
}
