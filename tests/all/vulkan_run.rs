//! Compiled programs run on a Vulkan device (lavapipe in CI) and print exactly what
//! `iree-run-module --device=vulkan` printed for them: every invocation of
//! tests/fixtures/vulkan/invocations.txt, through the runtime in this process on each way the
//! device binds buffers and reaches memory (where the
//! validation layers, on with `RTX_VULKAN_VALIDATION=1` (as the test command sets), must report nothing — a Vulkan object left alive
//! when the device goes is one of their reports) and through `rtx run --device=vulkan`, whose
//! stderr must be as empty as IREE's was.
//!
//! Without a Vulkan device each test skips (`rtx_test_support::skip`; a failure under `CI=true`).

use std::path::PathBuf;
use std::process::Command;

use rtx::hal::run_io::{self, OutputOptions};
use rtx::hal::tensor_io::InputFiles;
use rtx::hal::vulkan::{DeviceOptions, DeviceSelector, VulkanDevice};
use rtx::runtime::{ContextOptions, Module, Runtime};
use rtx_test_support::{invocations_in, Invocation};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vulkan")
}

/// Whether a Vulkan device opens (a skip where none does).
fn have_vulkan() -> bool {
    rtx_test_support::vulkan::device(DeviceOptions::default()).is_some()
}

/// An expected-output file's stdout and stderr sections.
fn expected(name: &str) -> (String, String) {
    let path = fixtures().join("expected").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (_, rest) = text.split_once("--- stdout\n").unwrap_or_else(|| panic!("{name}: no stdout section"));
    let (stdout, stderr) = rest.split_once("--- stderr\n").unwrap_or_else(|| panic!("{name}: no stderr section"));
    (stdout.to_owned(), stderr.to_owned())
}

/// The `--input=` values of an invocation (the only flags the fixtures use).
fn inputs(invocation: &Invocation) -> Vec<&str> {
    invocation
        .flags
        .iter()
        .map(|flag| {
            flag.strip_prefix("--input=")
                .unwrap_or_else(|| panic!("invocations.txt:{}: unexpected flag {flag}", invocation.line))
        })
        .collect()
}

/// The device paths: push descriptors where the device has them (lavapipe does) and mapped
/// memory; descriptor sets from pools; device-local memory reached through staging copies.
const OPTIONS: [DeviceOptions; 3] = [
    DeviceOptions { stage_device_local: false, descriptor_pools: false },
    DeviceOptions { stage_device_local: false, descriptor_pools: true },
    DeviceOptions { stage_device_local: true, descriptor_pools: false },
];

#[test]
fn every_invocation_run_by_the_runtime_on_vulkan_prints_what_iree_printed() {
    if !have_vulkan() {
        return;
    }
    let invocations = invocations_in(&fixtures());
    assert!(invocations.len() >= 7, "expected the fixture invocations, found {}", invocations.len());
    let runtime = Runtime::new();
    for (options, invocation) in OPTIONS.iter().flat_map(|o| invocations.iter().map(move |i| (o, i))) {
        let path = fixtures().join(format!("{}.vmfb", invocation.module));
        let module = Module::load_file(path.to_str().unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let Module::Vm(vm_module) = &module else { panic!("{} is not a VM module", path.display()) };
        let context = runtime.context_with(ContextOptions::from_spec("s").unwrap()).unwrap();
        context.add_hal_device(VulkanDevice::open(DeviceSelector::First, *options).unwrap().into_device()).unwrap();
        context.add_module(&module).unwrap();
        let function = context.function(&format!("{}.{}", vm_module.name(), invocation.function)).unwrap();
        let function = function.as_vm().unwrap().clone();
        let kinds = &function.arguments[..function.declared_arguments()];
        let arguments = run_io::parse_inputs(&inputs(invocation), kinds, &mut InputFiles::new()).unwrap();
        let results = context
            .call(&function.handle, arguments)
            .unwrap_or_else(|e| panic!("invocations.txt:{} ({options:?}): {e}", invocation.line));
        let report = run_io::report(&results, &function.results, &OutputOptions::default(), &fixtures());
        let line = invocation.line;
        assert_eq!((report.status, report.error), (0, None), "invocations.txt:{line} ({options:?})");
        let printed = format!("EXEC @{}\n{}", invocation.function, report.stdout);
        assert_eq!(printed, expected(&invocation.expected).0, "invocations.txt:{line} ({options:?})");
        drop(results);
        // The device goes with the context: the layers report any object still alive.
        drop(context);
        rtx_test_support::vulkan::assert_validation_silent();
    }
}

/// `rtx run --device=vulkan` of an invocation, from the fixtures' folder.
fn rtx_run_on_vulkan(invocation: &Invocation) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_rtx"));
    command
        .current_dir(fixtures())
        .arg("run")
        .arg("--device=vulkan")
        .arg(format!("--module={}.vmfb", invocation.module))
        .arg(format!("--function={}", invocation.function))
        .args(&invocation.flags);
    command
}

/// Validation asked for where the layers are not installed fails the device's opening with an
/// error that names them, rather than running unchecked: the layers are hidden from the loader
/// by an empty `VK_LAYER_PATH`, which replaces its search folders for them.
#[test]
fn validation_asked_for_without_the_layers_is_an_error() {
    if !have_vulkan() {
        return;
    }
    let no_layers = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("no-vulkan-layers");
    std::fs::create_dir_all(&no_layers).unwrap();
    let invocation = &invocations_in(&fixtures())[0];
    let run = |validation: &str| {
        rtx_run_on_vulkan(invocation)
            .env("RTX_VULKAN_VALIDATION", validation)
            .env("VK_LAYER_PATH", &no_layers)
            .output()
            .unwrap()
    };
    let asked = run("1");
    let stderr = String::from_utf8_lossy(&asked.stderr);
    assert!(!asked.status.success(), "ran without the layers it asked for: {stderr}");
    assert!(stderr.contains("asks for the Khronos validation layers (VK_LAYER_KHRONOS_validation)"), "{stderr}");
    let unasked = run("0");
    assert!(unasked.status.success(), "{}", String::from_utf8_lossy(&unasked.stderr));
}

#[test]
fn rtx_run_on_vulkan_prints_what_iree_run_module_printed() {
    if !have_vulkan() {
        return;
    }
    let invocations = invocations_in(&fixtures());
    assert!(invocations.len() >= 7, "expected the fixture invocations, found {}", invocations.len());
    for invocation in invocations {
        let output = rtx_run_on_vulkan(&invocation).output().unwrap();
        let (stdout, stderr) = expected(&invocation.expected);
        let line = invocation.line;
        assert_eq!(String::from_utf8_lossy(&output.stdout), stdout, "invocations.txt:{line}");
        assert_eq!(String::from_utf8_lossy(&output.stderr), stderr, "invocations.txt:{line}");
        assert!(output.status.success(), "invocations.txt:{line}: {:?}", output.status);
    }
}

/// A grid past the device's limit (large_grid.mlir's 262,144 workgroups along x, past lavapipe's
/// 65,535) runs in pieces, each offset by its base workgroup: every element of the result is
/// twice the input's, and the validation layers (on where the test command turns them on) say
/// nothing. The trace shows the one dispatch the program issued, with its whole grid.
#[test]
fn a_grid_past_the_device_limit_runs_in_pieces() {
    let Some(device) = rtx_test_support::vulkan::device(DeviceOptions::default()) else {
        return;
    };
    let limit = device.info().limits.max_workgroup_count[0];
    drop(device);
    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("large-grid");
    std::fs::create_dir_all(&scratch).unwrap();
    let (result, trace) = (scratch.join("result.npy"), scratch.join("trace.json"));
    let output = Command::new(env!("CARGO_BIN_EXE_rtx"))
        .current_dir(fixtures())
        .args([
            "run",
            "--module=large_grid.vmfb",
            "--function=scale",
            "--input=16777216xf32=1.5",
            "--device=vulkan",
            &format!("--output=@{}", result.display()),
            &format!("--trace={}", trace.display()),
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
    let grid = std::fs::read_to_string(&trace).unwrap();
    let grid = grid.split("\"workgroups\":\"").nth(1).and_then(|rest| rest.split('"').next()).unwrap_or("");
    let x: u32 = grid.strip_suffix("x1x1").and_then(|x| x.parse().ok()).unwrap_or_else(|| panic!("grid {grid}"));
    assert!(x > limit, "{x} workgroups, past the device's {limit}");
    let (tensor, _) = rtx::hal::npy::decode(&std::fs::read(&result).unwrap()).unwrap();
    assert_eq!(tensor.shape, [16_777_216]);
    let wrong = tensor.data.chunks_exact(4).position(|bytes| f32::from_le_bytes(bytes.try_into().unwrap()) != 3.0);
    assert_eq!(wrong, None, "the first element not twice 1.5");
}
