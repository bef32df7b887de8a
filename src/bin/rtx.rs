//! The `rtx` command: `run` (a drop-in for `iree-run-module`), `dump` (like `iree-dump-module`)
//! and `bench` (repeated in-process calls).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use rtx::hal::check::CheckModule;
use rtx::hal::device::{Device, DeviceKind};
use rtx::hal::invoke;
use rtx::hal::module::HalModule;
use rtx::hal::run_io::{self, OutputOptions};
use rtx::hal::tensor_io::{Equality, EqualityMode, InputFiles};
use rtx::vm::abi::{CconvItem, ValueKind};
use rtx::vm::context::{Context, FunctionHandle};
use rtx::vm::dump::{write_dump, DumpOptions, DumpOutput};
use rtx::vm::value::Value;
use rtx::vm::Module;

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
    result_kinds: Vec<ValueKind>,
}

/// A context with the `--module`s linked in order, after the `hal` module with the `--device`
/// when a module imports it, and after `check` when given; returns the last module too.
fn link(flags: &Flags, check: Option<&CheckModule>) -> Result<(Context, Arc<Module>), String> {
    let device = flags.last("device").unwrap_or("local-sync");
    let paths = flags.all("module");
    if paths.is_empty() {
        return Err(format!("no --module given\n{USAGE}"));
    }
    let modules = paths
        .iter()
        .map(|path| Module::load_file(path).map(Arc::new).map_err(|e| format!("loading `{path}`: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let context = Context::new();
    // Programs with tensors import the `hal` module: give them the device. Scalar programs run
    // in the VM alone and, as with IREE's tools, never open the `--device`.
    if modules.iter().any(|m| m.dependencies().iter().any(|d| d.name == "hal")) {
        let kind = DeviceKind::parse(device).map_err(|e| e.message)?;
        // IREE's flag for the number of local-task workers.
        let device = match flags.last("task_topology_group_count") {
            None => Device::new(kind),
            Some(text) => {
                let workers = text.parse().map_err(|_| format!("bad --task_topology_group_count `{text}`"))?;
                Device::with_workers(kind, workers)
            }
        };
        let hal = HalModule::new(vec![device]);
        context.add_native_module(Arc::new(hal)).map_err(|e| e.to_string())?;
    }
    if let Some(check) = check {
        context.add_native_module(Arc::new(check.clone())).map_err(|e| e.to_string())?;
    }
    let mut last = None;
    for (path, module) in paths.iter().zip(modules) {
        context.add_module(module.clone()).map_err(|e| format!("adding `{path}` to the context: {e}"))?;
        last = Some(module);
    }
    Ok((context, last.expect("at least one module")))
}

fn prepare(flags: &Flags) -> Result<Prepared, String> {
    let (context, module) = link(flags, None)?;
    let name = match flags.last("function") {
        Some(name) => name.to_owned(),
        None => single_exported_function(&module)?,
    };
    // As in iree-run-module, `--function` names an export of the last module, never another
    // module's.
    let not_found = || format!("NOT_FOUND; no function `{name}` exported by module; looking up function '{name}'");
    let export = module.lookup_export(&name).ok_or_else(not_found)?;
    let function = context.lookup(&format!("{}.{name}", module.name())).map_err(|e| e.to_string())?;
    let declaration =
        module.export_signature(export).and_then(|signature| signature.attr("iree.abi.declaration")).map(str::to_owned);
    let cconv = rtx::vm::abi::CallingConvention::parse(&function.cconv).map_err(|e| e.to_string())?;
    // The fences of a `coarse-fences` function are the tool's to supply, not the user's.
    let declared = invoke::declared_arguments(&function, cconv.arguments.len());
    let kinds = |items: &[CconvItem]| -> Result<Vec<ValueKind>, String> {
        items
            .iter()
            .map(|item| match item {
                CconvItem::Value(kind) => Ok(*kind),
                CconvItem::Span(_) => {
                    Err("functions with variadic arguments or results cannot be run from the command line".to_owned())
                }
            })
            .collect()
    };
    let result_kinds = kinds(&cconv.results)?;
    let arguments =
        run_io::parse_inputs(&flags.all("input"), &kinds(&cconv.arguments[..declared])?, &mut InputFiles::new())
            .map_err(|line| with_declaration(tooling_error(&line), &declaration))?;
    Ok(Prepared { context, function, name, declaration, arguments, result_kinds })
}

/// The function to run when no `--function` is given: the module's only export that is neither
/// internal (`__init`) nor special (`$async`), as iree-run-module picks it.
fn single_exported_function(module: &Module) -> Result<String, String> {
    let mut runnable = module
        .exported_functions()
        .iter()
        .map(|export| export.local_name.as_str())
        .filter(|name| !name.starts_with("__") && !name.contains('$'));
    match (runnable.next(), runnable.next()) {
        (Some(name), None) => Ok(name.to_owned()),
        (None, _) => Err("no exported functions found in module; at least one must be present".to_owned()),
        (Some(_), Some(_)) => {
            Err("more than one exported function present; --function= must be specified explicitly".to_owned())
        }
    }
}

/// A status line with the function's declaration appended, as IREE annotates every failure
/// after the function was found.
fn with_declaration(mut line: String, declaration: &Option<String>) -> String {
    if let Some(declaration) = declaration {
        line.push_str(&format!("; `{declaration}`"));
    }
    line
}

/// A failure of the tool's own input or output handling, with a location prefix in the place
/// of IREE's C source position.
fn tooling_error(status_line: &str) -> String {
    format!("<tooling>:0: {status_line}")
}

/// `--output`, `--expected_output` and their options. Their values are read as IREE's flag
/// library reads them, which never rejects one: a number is its longest numeric prefix (0 when
/// there is none), and an `--equality_mode` other than `approximate` means exact.
fn output_options(flags: &Flags) -> OutputOptions {
    let real = |name: &str, default: f64| flags.last(name).map_or(default, c_atof);
    let defaults = Equality::default();
    let equality = Equality {
        mode: match flags.last("equality_mode") {
            None | Some("approximate") => EqualityMode::Approximate,
            Some(_) => EqualityMode::Exact,
        },
        f16_atol: real("expected_f16_threshold", defaults.f16_atol as f64) as f32,
        bf16_atol: real("expected_bf16_threshold", defaults.bf16_atol as f64) as f32,
        f32_atol: real("expected_f32_threshold", defaults.f32_atol as f64) as f32,
        f64_atol: real("expected_f64_threshold", defaults.f64_atol),
        rtol: real("expected_rtol", defaults.rtol),
    };
    // An int32 cast to a size, as IREE does: -1 prints everything.
    let max_element_count = flags.last("output_max_element_count").map_or(1024, |text| c_atoi(text) as isize as usize);
    let owned = |name: &str| flags.all(name).into_iter().map(str::to_owned).collect();
    OutputOptions { outputs: owned("output"), expected: owned("expected_output"), max_element_count, equality }
}

/// C's `atoi` as IREE's flags use it for int32 values: leading blanks, a sign, decimal digits.
fn c_atoi(text: &str) -> i32 {
    let text = text.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let magnitude = digits
        .bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0i64, |value, digit| value.saturating_mul(10).saturating_add(i64::from(digit - b'0')));
    (if negative { -magnitude } else { magnitude }) as i32
}

/// C's `atof` (`strtod` with its hex, `inf` and `nan` forms; 0 when nothing parses).
fn c_atof(text: &str) -> f64 {
    match rtx::vm::function_io::parse_scalar(text, ValueKind::F64) {
        Ok(Value::F64(value)) => value,
        _ => 0.0,
    }
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
    let options = output_options(flags);
    let prepared = prepare(flags)?;
    println!("EXEC @{}", prepared.name);
    match invoke::call_to_completion(&prepared.context, &prepared.function, prepared.arguments) {
        Ok(results) => {
            let report = run_io::report(&results, &prepared.result_kinds, &options, std::path::Path::new("."));
            print!("{}", report.stdout);
            if let Some(line) = report.error {
                eprintln!("{}", with_declaration(tooling_error(&line), &prepared.declaration));
            }
            Ok(ExitCode::from(report.status))
        }
        Err(error) => {
            // The layout of IREE's status printing: `<vm>:0: CODE; message`, then annotations.
            let line = format!("<vm>:0: {}; {}; ; invoking function '{}'", error.code, error.message, prepared.name);
            eprintln!("{}", with_declaration(line, &prepared.declaration));
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
    let tests: Vec<(&str, FunctionHandle)> = module
        .exported_functions()
        .iter()
        .filter(|export| !export.local_name.starts_with("__"))
        .filter_map(|export| Some((export.local_name.as_str(), context.lookup(&export.local_name).ok()?)))
        .filter(|(_, function)| {
            let fences = "r".repeat(function.model.fence_arguments());
            function.cconv == format!("0{}_v", if fences.is_empty() { "v" } else { &fences })
        })
        .collect();
    let (mut passed, mut failed) = (0, 0);
    for (name, function) in tests {
        let outcome = invoke::call_to_completion(&context, &function, Vec::new());
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
    let call = || invoke::call_to_completion(&prepared.context, &prepared.function, prepared.arguments.clone());
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
    let module = Module::load_file(path).map_err(|e| format!("loading `{path}`: {e}"))?;
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
