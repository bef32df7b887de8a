//! The `rtx` command: `run` (a drop-in for `iree-run-module`), `dump` (like `iree-dump-module`)
//! and `bench` (repeated in-process calls).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use rtx::hal::check::CheckModule;
use rtx::hal::run_io::{self, OutputOptions};
use rtx::hal::tensor_io::{Equality, EqualityMode, InputFiles};
use rtx::runtime::{Context, ContextOptions, Module, Runtime, HAL_MODULE};
use rtx::vm::context::FunctionHandle;
use rtx::vm::dump::{write_dump, DumpOptions, DumpOutput};
use rtx::vm::value::Value;

const USAGE: &str = "usage:
  rtx run --module=X.vmfb [--module=Y.vmfb ...] --function=F [--input=V ...] [--device=local-sync]
          [--output=-|@f.npy|+f.npy|@f.bin ...] [--output_max_element_count=N]
          [--expected_output=V ...] [--expected_f32_threshold=T] [--expected_rtol=R] [--equality_mode=exact]
  rtx bench --module=X.vmfb --function=F [--input=V ...] [--benchmark_min_time=SECONDS] [--rounds=N] [--no_iree]
            (alternates with iree-benchmark-module when it is in RTX_IREE_TOOLS or on PATH)
  rtx check --module=X.vmfb [--device=local-sync]
            (runs every exported function without arguments with the check module, like iree-check-module)
  rtx dump [--output=all|metadata|disassembly] [--function=F] [--bytecode_offsets] X.vmfb
  rtx translate --mlirbc-to-mlir IN [-o OUT.mlir] [--print-debuginfo]
  rtx translate --mlir-to-mlirbc IN [-o OUT.mlirbc] [--bytecode-version=N]
            (MLIR bytecode, versions 0-6, to and from MLIR's generic text form; IN may be either)";

/// Flags as IREE's tools take them: `--name=value`, repeatable, plus bare positional arguments.
struct Flags {
    pairs: Vec<(String, String)>,
    positional: Vec<String>,
}

impl Flags {
    fn parse(arguments: impl Iterator<Item = String>) -> Flags {
        let mut flags = Flags { pairs: Vec::new(), positional: Vec::new() };
        for argument in arguments {
            match argument.strip_prefix("--") {
                Some(flag) => {
                    let (name, value) = flag.split_once('=').unwrap_or((flag, ""));
                    flags.pairs.push((name.replace('-', "_"), value.to_owned()));
                }
                None => flags.positional.push(argument),
            }
        }
        flags
    }

    fn all(&self, name: &str) -> Vec<&str> {
        self.pairs.iter().filter(|(n, _)| n == name).map(|(_, v)| v.as_str()).collect()
    }

    fn last(&self, name: &str) -> Option<&str> {
        self.all(name).last().copied()
    }

    fn has(&self, name: &str) -> bool {
        self.pairs.iter().any(|(n, _)| n == name)
    }

    /// Rejects flags the command does not know, so a typo is not silently ignored.
    fn only(&self, known: &[&str]) -> Result<(), String> {
        match self.pairs.iter().find(|(n, _)| !known.contains(&n.as_str())) {
            Some((name, _)) => Err(format!("unknown flag `--{name}`")),
            None => Ok(()),
        }
    }
}

fn main() -> ExitCode {
    let mut arguments = std::env::args().skip(1);
    let command = arguments.next().unwrap_or_default();
    let flags = Flags::parse(arguments);
    let result = match command.as_str() {
        "run" => run(&flags),
        "bench" => bench(&flags),
        "check" => check(&flags),
        "dump" => dump(&flags),
        "translate" => translate(&flags),
        "help" | "--help" | "-h" => {
            println!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        other => Err(format!("unknown command `{other}`\n{USAGE}")),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("rtx {command}: {message}");
            ExitCode::FAILURE
        }
    }
}

/// A context with the `--module`s loaded in order, and the `--function` to call.
struct Prepared {
    context: Context,
    function: FunctionHandle,
    name: String,
    declaration: Option<String>,
    arguments: Vec<Value>,
}

/// A context with the `--module`s linked in order, after the `--device` when a module imports
/// `hal`, and after `check` when given; returns the last module too.
fn link(flags: &Flags, check: Option<&CheckModule>) -> Result<(Context, Module), String> {
    let device = flags.last("device").unwrap_or("local-sync");
    let paths = flags.all("module");
    if paths.is_empty() {
        return Err(format!("no --module given\n{USAGE}"));
    }
    let modules = paths
        .iter()
        .map(|path| Module::load_file(path).map_err(|e| format!("loading `{path}`: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    // IREE's flag for the number of local-task workers.
    let runtime = match flags.last("task_topology_group_count") {
        None => Runtime::new(),
        Some(text) => {
            Runtime::with_task_workers(text.parse().map_err(|_| format!("bad --task_topology_group_count `{text}`"))?)
        }
    };
    // The tools run every call on the calling thread: no worker threads to start.
    let context =
        runtime.context_with(ContextOptions::from_spec("s").map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    // Programs with tensors import the `hal` module: give them the device. Scalar programs run
    // in the VM alone, on either CPU device name.
    let imports_hal =
        modules.iter().filter_map(Module::as_vm).any(|m| m.dependencies().iter().any(|d| d.name == HAL_MODULE));
    if imports_hal {
        context.add_device(device).map_err(|e| e.message)?;
    } else if !matches!(device, "local-sync" | "local-task") {
        return Err(format!("device `{device}` is not available (scalar programs run on local-sync or local-task)"));
    }
    if let Some(check) = check {
        context.add_native_module(Arc::new(check.clone())).map_err(|e| e.to_string())?;
    }
    let mut last = None;
    for (path, module) in paths.iter().zip(modules) {
        context.add_module(&module).map_err(|e| format!("adding `{path}` to the context: {e}"))?;
        last = Some(module);
    }
    Ok((context, last.expect("at least one module")))
}

fn prepare(flags: &Flags) -> Result<Prepared, String> {
    let (context, module) = link(flags, None)?;
    let name = flags.last("function").ok_or_else(|| format!("no --function given\n{USAGE}"))?.to_owned();
    let function = context.function(&name).map_err(|e| e.to_string())?;
    let local = name.rsplit_once('.').map_or(name.as_str(), |(_, f)| f);
    let declaration = module
        .as_vm()
        .and_then(|module| module.export_signature(module.lookup_export(local)?))
        .and_then(|signature| signature.attr("iree.abi.declaration"))
        .map(str::to_owned);
    // The fences of a `coarse-fences` function are the tool's to supply, not the user's.
    let kinds = &function.arguments[..function.declared_arguments()];
    let arguments = run_io::parse_inputs(&flags.all("input"), kinds, &mut InputFiles::new())
        .map_err(|line| tooling_error(&line))?;
    Ok(Prepared { context, function: function.handle, name: local.to_owned(), declaration, arguments })
}

/// A failure of the tool's own input or output handling, with a location prefix in the place
/// of IREE's C source position.
fn tooling_error(status_line: &str) -> String {
    format!("<tooling>:0: {status_line}")
}

/// `--output`, `--expected_output` and their options.
fn output_options(flags: &Flags) -> Result<OutputOptions, String> {
    fn number<T: std::str::FromStr>(flags: &Flags, name: &str, default: T) -> Result<T, String> {
        flags.last(name).map_or(Ok(default), |text| text.parse().map_err(|_| format!("bad --{name} `{text}`")))
    }
    let defaults = Equality::default();
    let equality = Equality {
        mode: match flags.last("equality_mode") {
            None | Some("approximate") => EqualityMode::Approximate,
            Some("exact") => EqualityMode::Exact,
            Some(other) => return Err(format!("bad --equality_mode `{other}` (approximate or exact)")),
        },
        f16_atol: number(flags, "expected_f16_threshold", defaults.f16_atol)?,
        bf16_atol: number(flags, "expected_bf16_threshold", defaults.bf16_atol)?,
        f32_atol: number(flags, "expected_f32_threshold", defaults.f32_atol)?,
        f64_atol: number(flags, "expected_f64_threshold", defaults.f64_atol)?,
        rtol: number(flags, "expected_rtol", defaults.rtol)?,
    };
    let max_element_count = match flags.last("output_max_element_count") {
        None => 1024,
        // An int32 cast to a size, as IREE does: -1 prints everything.
        Some(text) => {
            text.parse::<i32>().map_err(|_| format!("bad --output_max_element_count `{text}`"))? as isize as usize
        }
    };
    let owned = |name: &str| flags.all(name).into_iter().map(str::to_owned).collect();
    Ok(OutputOptions { outputs: owned("output"), expected: owned("expected_output"), max_element_count, equality })
}

fn run(flags: &Flags) -> Result<ExitCode, String> {
    flags.only(&[
        "module",
        "function",
        "input",
        "device",
        "task_topology_group_count",
        "output",
        "output_max_element_count",
        "expected_output",
        "expected_f16_threshold",
        "expected_bf16_threshold",
        "expected_f32_threshold",
        "expected_f64_threshold",
        "expected_rtol",
        "equality_mode",
    ])?;
    let options = output_options(flags)?;
    let prepared = prepare(flags)?;
    println!("EXEC @{}", prepared.name);
    match prepared.context.call(&prepared.function, prepared.arguments) {
        Ok(results) => {
            let report = run_io::report(&results, &options, std::path::Path::new("."));
            print!("{}", report.stdout);
            if let Some(line) = report.error {
                eprintln!("{}", tooling_error(&line));
            }
            Ok(ExitCode::from(report.status))
        }
        Err(error) => {
            // The layout of IREE's status printing: `<vm>:0: CODE; message`, then annotations.
            let mut line =
                format!("<vm>:0: {}; {}; ; invoking function '{}'", error.code, error.message, prepared.name);
            if let Some(declaration) = &prepared.declaration {
                line.push_str(&format!("; `{declaration}`"));
            }
            eprintln!("{line}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// Runs every exported function that takes and returns nothing as a test: it passes when it
/// returns and no `check.expect_*` failed.
fn check(flags: &Flags) -> Result<ExitCode, String> {
    flags.only(&["module", "device", "task_topology_group_count"])?;
    let checks = CheckModule::new();
    let (context, module) = link(flags, Some(&checks))?;
    // Tests take and return nothing but the fences of the `coarse-fences` model.
    let Some(module) = module.as_vm() else { return Err("`rtx check` runs IREE VM modules".to_owned()) };
    let tests: Vec<(&str, FunctionHandle)> = module
        .exported_functions()
        .iter()
        .filter(|export| !export.local_name.starts_with("__"))
        .filter_map(|export| Some((export.local_name.as_str(), context.function(&export.local_name).ok()?.handle)))
        .filter(|(_, function)| {
            let fences = "r".repeat(function.model.fence_arguments());
            function.cconv == format!("0{}_v", if fences.is_empty() { "v" } else { &fences })
        })
        .collect();
    let (mut passed, mut failed) = (0, 0);
    for (name, function) in tests {
        let outcome = context.call(&function, Vec::new());
        let mut failures = checks.take_failures();
        if let Err(error) = outcome {
            failures.push(format!("{}; {}", error.code, error.message));
        }
        if failures.is_empty() {
            passed += 1;
            println!("PASS {name}");
        } else {
            failed += 1;
            println!("FAIL {name}: {}", failures.join("\n"));
        }
    }
    println!("{passed} passed, {failed} failed");
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn bench(flags: &Flags) -> Result<ExitCode, String> {
    flags.only(&[
        "module",
        "function",
        "input",
        "device",
        "task_topology_group_count",
        "benchmark_min_time",
        "rounds",
        "no_iree",
    ])?;
    let min_time: f64 = match flags.last("benchmark_min_time") {
        Some(text) => text.trim_end_matches('s').parse().map_err(|_| format!("bad --benchmark_min_time `{text}`"))?,
        None => 1.0,
    };
    let rounds: usize = match flags.last("rounds") {
        Some(text) => text.parse().map_err(|_| format!("bad --rounds `{text}`"))?,
        None => 5,
    };
    let prepared = prepare(flags)?;
    let call = || prepared.context.call(&prepared.function, prepared.arguments.clone());
    call().map_err(|e| format!("{}: {}", e.code, e.message))?;
    // Batches long enough (~1 ms) that timer overhead vanishes.
    let mut batch = 1u64;
    loop {
        let start = Instant::now();
        for _ in 0..batch {
            let _ = call();
        }
        if start.elapsed().as_secs_f64() > 1e-3 || batch >= 1 << 30 {
            break;
        }
        batch *= 2;
    }
    let measure = |seconds: f64, samples: &mut Vec<f64>| {
        let started = Instant::now();
        while started.elapsed().as_secs_f64() < seconds || samples.is_empty() {
            let start = Instant::now();
            for _ in 0..batch {
                let _ = call();
            }
            samples.push(start.elapsed().as_nanos() as f64 / batch as f64);
        }
    };
    let iree = if flags.has("no_iree") { None } else { iree_benchmark_module() };
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    match &iree {
        // Alternate with IREE's own benchmark on the same module and inputs, so both see the same
        // machine state (PERFORMANCE.md), and report the median of each and their ratio.
        Some(tool) => {
            let slice = min_time / rounds.max(1) as f64;
            for _ in 0..rounds.max(1) {
                theirs.push(run_iree_benchmark(tool, flags, slice)?);
                measure(slice, &mut ours);
            }
        }
        None => measure(min_time, &mut ours),
    }
    let median = |samples: &mut Vec<f64>| {
        samples.sort_by(f64::total_cmp);
        samples[samples.len() / 2]
    };
    let our_median = median(&mut ours);
    if !theirs.is_empty() {
        let their_median = median(&mut theirs);
        println!(
            "iree-benchmark-module: median {their_median:.0} ns per call; rtx/IREE = {:.2}",
            our_median / their_median
        );
    }
    println!("{}: median {:.0} ns per call ({} calls)", prepared.name, our_median, ours.len() as u64 * batch);
    Ok(ExitCode::SUCCESS)
}

/// `iree-benchmark-module` from `RTX_IREE_TOOLS` or `PATH`, if there is one.
fn iree_benchmark_module() -> Option<std::path::PathBuf> {
    let name = "iree-benchmark-module";
    let mut directories: Vec<std::path::PathBuf> =
        std::env::var_os("RTX_IREE_TOOLS").map(std::path::PathBuf::from).into_iter().collect();
    directories
        .extend(std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect::<Vec<_>>()).unwrap_or_default());
    directories.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

/// One `iree-benchmark-module` run of the same call; its median real time per call in ns.
fn run_iree_benchmark(tool: &std::path::Path, flags: &Flags, seconds: f64) -> Result<f64, String> {
    let mut command = std::process::Command::new(tool);
    command.arg(format!("--device={}", flags.last("device").unwrap_or("local-sync")));
    if let Some(count) = flags.last("task_topology_group_count") {
        command.arg(format!("--task_topology_group_count={count}"));
    }
    for module in flags.all("module") {
        command.arg(format!("--module={module}"));
    }
    command.arg(format!("--function={}", flags.last("function").unwrap_or_default()));
    for input in flags.all("input") {
        command.arg(format!("--input={input}"));
    }
    command.arg(format!("--benchmark_min_time={seconds}s")).arg("--benchmark_format=json");
    let output = command.output().map_err(|e| format!("running {}: {e}", tool.display()))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let field = |name: &str| -> Option<&str> {
        let start = text.find(&format!("\"{name}\": "))? + name.len() + 4;
        let rest = &text[start..];
        Some(rest[..rest.find([',', '\n'])?].trim().trim_matches('"'))
    };
    let (Some(time), Some(unit)) = (field("real_time"), field("time_unit")) else {
        return Err(format!(
            "iree-benchmark-module gave no timing (exit {:?}): {}",
            output.status.code(),
            String::from_utf8_lossy(&output.stderr)
        ));
    };
    let time: f64 = time.parse().map_err(|_| format!("iree-benchmark-module real_time `{time}`"))?;
    let scale = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        other => return Err(format!("iree-benchmark-module time unit `{other}`")),
    };
    Ok(time * scale)
}

fn dump(flags: &Flags) -> Result<ExitCode, String> {
    flags.only(&["output", "function", "bytecode_offsets"])?;
    let [path] = flags.positional.as_slice() else {
        return Err(format!("expected one module path\n{USAGE}"));
    };
    let output = match flags.last("output").unwrap_or("all") {
        "all" => DumpOutput::All,
        "metadata" => DumpOutput::Metadata,
        "disassembly" => DumpOutput::Disassembly,
        other => return Err(format!("unknown --output `{other}` (all, metadata, disassembly)")),
    };
    let options = DumpOptions {
        output,
        function: flags.last("function").map(str::to_owned),
        bytecode_offsets: flags.has("bytecode_offsets"),
    };
    let module = rtx::vm::Module::load_file(path).map_err(|e| format!("loading `{path}`: {e}"))?;
    let mut text = String::new();
    write_dump(&module, &mut text, &options).map_err(|e| e.to_string())?;
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// `rtx translate --mlirbc-to-mlir IN [-o OUT] [--print-debuginfo]` and
/// `rtx translate --mlir-to-mlirbc IN [-o OUT] [--bytecode-version=N]`; IN is text or bytecode,
/// `-` or no `-o` is stdout.
fn translate(flags: &Flags) -> Result<ExitCode, String> {
    flags.only(&["mlirbc_to_mlir", "mlir_to_mlirbc", "print_debuginfo", "bytecode_version"])?;
    let (input, output) = match flags.positional.as_slice() {
        [input] => (input, None),
        [input, o, output] | [o, output, input] if o == "-o" => (input, Some(output)),
        _ => return Err(format!("expected one input file and an optional `-o OUT`\n{USAGE}")),
    };
    let bytes = std::fs::read(input).map_err(|e| format!("reading `{input}`: {e}"))?;
    let failed = |e: rtx::mlir::Error| format!("`{input}`: {e}");
    let out = match (flags.has("mlirbc_to_mlir"), flags.has("mlir_to_mlirbc")) {
        (true, false) => {
            if flags.has("bytecode_version") {
                return Err("--bytecode-version applies to --mlir-to-mlirbc".to_owned());
            }
            rtx::mlir::mlirbc_to_mlir(&bytes, flags.has("print_debuginfo")).map_err(failed)?.into_bytes()
        }
        (false, true) => {
            let version = match flags.last("bytecode_version") {
                None => rtx::mlir::WriteOptions::default().version,
                Some(text) => text.parse().map_err(|_| format!("bad --bytecode-version `{text}`"))?,
            };
            rtx::mlir::mlir_to_mlirbc(&bytes, Some(input), version).map_err(failed)?
        }
        _ => return Err(format!("say what to translate: --mlirbc-to-mlir or --mlir-to-mlirbc\n{USAGE}")),
    };
    match output.map(String::as_str) {
        None | Some("-") => {
            std::io::Write::write_all(&mut std::io::stdout(), &out).map_err(|e| format!("writing: {e}"))?
        }
        Some(path) => std::fs::write(path, out).map_err(|e| format!("writing `{path}`: {e}"))?,
    }
    Ok(ExitCode::SUCCESS)
}
