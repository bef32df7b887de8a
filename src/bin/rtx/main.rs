//! The `rtx` command: `run` (a drop-in for `iree-run-module`), `bench` (timed in-process calls),
//! `check` (like `iree-check-module`), `dump` (like `iree-dump-module`), `translate` (MLIR
//! bytecode and text), `opt` (MLIR text as `tfrt_opt` prints it), `bef-exec` (like `bef_executor`),
//! `import-onnx` (ONNX models as BEF kernel graphs) and `profile` (a trace summed up by kernel). A thin user of the library: each command parses its flags, calls into
//! `rtx`, and prints what the IREE tool would.

#[cfg(feature = "tfrt")]
mod bef_exec;
mod bench;
mod dump;
mod flags;
#[cfg(feature = "onnx")]
mod import_onnx;
mod opt;
mod profile;
mod translate;
mod usage;

use std::process::ExitCode;
use std::sync::Arc;

use rtx::hal::check::CheckModule;
use rtx::hal::run_io::{self, OutputOptions};
use rtx::hal::tensor_io::{Equality, EqualityMode, InputFiles};
use rtx::host::Diagnostic;
use rtx::runtime::{Context, ContextOptions, Module, Runtime, HAL_MODULE};
use rtx::vm::abi::ValueKind;
use rtx::vm::context::FunctionHandle;
use rtx::vm::value::Value;

use flags::{c_atof, c_atoi, Flags};
// What running a BEF function (`--module=graph.bef`) takes.
#[cfg(feature = "tfrt")]
use {rtx::host::RcAsyncValue, rtx::runtime::bridge::host_values};

/// Prints what the Vulkan validation layers (on with `RTX_VULKAN_VALIDATION=1`) reported while the command
/// ran a Vulkan device: each message is a bug, in rtx or in the program.
#[cfg(feature = "vulkan")]
fn report_validation() {
    let (messages, dropped) = rtx::hal::vulkan::validation::messages();
    for message in messages {
        eprintln!("rtx: Vulkan validation: {message}");
    }
    if dropped > 0 {
        eprintln!("rtx: Vulkan validation: {dropped} more messages");
    }
}

/// A build without Vulkan runs no Vulkan device, so nothing reports.
#[cfg(not(feature = "vulkan"))]
fn report_validation() {}

fn main() -> ExitCode {
    let mut arguments = std::env::args().skip(1);
    let command = arguments.next().unwrap_or_default();
    let raw: Vec<String> = arguments.collect();
    let flags = Flags::parse(raw.iter().cloned());
    if let Some(text) = usage::of(&command).filter(|_| flags.wants_help()) {
        return show(text);
    }
    let result = match command.as_str() {
        "run" => traced(flags.last("trace"), || run(&flags)),
        "bench" => bench::profiled(&flags),
        "check" => check(&flags),
        "dump" => dump::dump(&flags),
        "translate" => translate::translate(&flags),
        "opt" => opt::opt(&flags),
        #[cfg(feature = "tfrt")]
        "bef-exec" => bef_exec::bef_exec(&raw),
        #[cfg(not(feature = "tfrt"))]
        "bef-exec" => Err(left_out("tfrt", "running BEF kernel graphs")),
        #[cfg(feature = "onnx")]
        "import-onnx" => import_onnx::import_onnx(&flags),
        "profile" => profile::profile(&flags),
        #[cfg(not(feature = "onnx"))]
        "import-onnx" => Err(left_out("onnx", "importing ONNX models")),
        "help" | "--help" | "-h" => help(&flags),
        "--version" | "-V" | "version" => Ok(show(concat!("rtx ", env!("CARGO_PKG_VERSION")))),
        "" => Err(format!("no command given\n{}", usage::OVERVIEW)),
        other => Err(format!("unknown command `{other}`\n{}", usage::OVERVIEW)),
    };
    report_validation();
    match result {
        Ok(code) => code,
        Err(message) => {
            let prefix = if command.is_empty() { "rtx".to_owned() } else { format!("rtx {command}") };
            eprintln!("{prefix}: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Runs `command` with tracing on when `path` is given (`--trace=FILE.json`): the trace is
/// written when the command ends, whether it succeeded or not.
fn traced(path: Option<&str>, command: impl FnOnce() -> Result<ExitCode, String>) -> Result<ExitCode, String> {
    let Some(path) = path else { return command() };
    rtx::host::tracing::begin(path).map_err(|error| error.message)?;
    let result = command();
    let written = rtx::host::tracing::end().map_err(|error| error.message)?;
    if written.dropped > 0 {
        eprintln!("rtx: {} holds {} events; {} more did not fit", path, written.events, written.dropped);
    }
    result
}

/// What a command says when it needs a part this build of rtx leaves out.
#[cfg(not(all(feature = "tfrt", feature = "onnx")))]
fn left_out(feature: &str, what: &str) -> String {
    rtx::runtime::left_out(feature, what).message
}

/// Prints `text` and a newline on stdout; a reader that went away early (`rtx help | head`) is
/// not a failure of the command.
fn show(text: &str) -> ExitCode {
    use std::io::Write;
    let _ = writeln!(std::io::stdout(), "{text}");
    ExitCode::SUCCESS
}

/// `rtx help`: the overview; `rtx help <command>`: that command's usage.
fn help(flags: &Flags) -> Result<ExitCode, String> {
    match flags.positional.as_slice() {
        [] => Ok(show(usage::OVERVIEW)),
        [command] => match usage::of(command) {
            Some(text) => Ok(show(text)),
            None => Err(format!("unknown command `{command}`\n{}", usage::OVERVIEW)),
        },
        _ => Err(format!("help takes at most one command\n{}", usage::OVERVIEW)),
    }
}

/// A context with the `--module`s loaded in order, and the `--function` to call.
struct Prepared {
    context: Context,
    call: Call,
    name: String,
    declaration: Option<String>,
    result_kinds: Vec<ValueKind>,
}

/// The function with its arguments: a VM function's values, or a BEF function's async values.
enum Call {
    Vm {
        function: FunctionHandle,
        arguments: Vec<Value>,
    },
    #[cfg(feature = "tfrt")]
    Bef {
        function: rtx::runtime::Function,
        arguments: Vec<RcAsyncValue>,
    },
}

/// What a call returned: a VM function's values, or a BEF function's available async values.
enum Results {
    Vm(Vec<Value>),
    #[cfg(feature = "tfrt")]
    Bef(Vec<RcAsyncValue>),
}

impl Prepared {
    /// Calls the function and waits for its results; a BEF function's first error is the call's.
    fn call(&self) -> Result<Results, Diagnostic> {
        let _span = rtx::host::tracing::span(
            rtx::host::tracing::Category::Call,
            || self.name.clone(),
            rtx::host::tracing::Args::none,
        );
        match &self.call {
            Call::Vm { function, arguments } => self.context.call(function, arguments.clone()).map(Results::Vm),
            #[cfg(feature = "tfrt")]
            Call::Bef { function, arguments } => {
                let results = self.context.invoke(function, arguments)?;
                self.context.await_values(&results)?;
                if let Some(error) = results.iter().find_map(|result| result.get_error()) {
                    return Err(error.clone());
                }
                Ok(Results::Bef(results))
            }
        }
    }
}

/// A context with the `--module`s linked in order, after the `--device` when a module imports
/// `hal`, and after `check` when given; returns the last module too. Calls run on the calling
/// thread (a single-threaded queue: no worker threads to start).
fn link(flags: &Flags, check: Option<&CheckModule>) -> Result<(Context, Arc<rtx::vm::Module>), String> {
    let device = flags.last("device").unwrap_or("local-sync");
    let paths = flags.all("module");
    if paths.is_empty() {
        return Err("no --module given (see --help)".to_owned());
    }
    let modules = paths
        .iter()
        .map(|path| match Module::load_file(path).map_err(|e| format!("loading `{path}`: {e}"))? {
            Module::Vm(module) => Ok(module),
            #[cfg(feature = "tfrt")]
            Module::Bef { .. } => Err(format!("`{path}` is a BEF file: run its functions with `rtx bef-exec`")),
        })
        .collect::<Result<Vec<_>, String>>()?;
    // IREE's flag for the number of local-task workers.
    let runtime = match flags.last("task_topology_group_count") {
        None => Runtime::new(),
        Some(text) => {
            Runtime::with_task_workers(text.parse().map_err(|_| format!("bad --task_topology_group_count `{text}`"))?)
        }
    };
    let options = ContextOptions::from_spec("s").map_err(|e| e.to_string())?;
    let context = runtime.context_with(options).map_err(|e| e.to_string())?;
    // Programs with tensors import the `hal` module: give them the device. Scalar programs run
    // in the VM alone and, as with IREE's tools, never open the `--device`.
    if modules.iter().any(|m| m.dependencies().iter().any(|d| d.name == HAL_MODULE)) {
        context.add_device(device).map_err(|e| e.message)?;
    }
    if let Some(check) = check {
        context.add_native_module(Arc::new(check.clone())).map_err(|e| e.to_string())?;
    }
    let mut last = None;
    for (path, module) in paths.iter().zip(modules) {
        context
            .add_module(&Module::Vm(Arc::clone(&module)))
            .map_err(|e| format!("adding `{path}` to the context: {e}"))?;
        last = Some(module);
    }
    Ok((context, last.expect("at least one module")))
}

fn prepare(flags: &Flags) -> Result<Prepared, String> {
    #[cfg(feature = "tfrt")]
    if let [path] = flags.all("module").as_slice() {
        let module = Module::load_file(path).map_err(|e| format!("loading `{path}`: {e}"))?;
        if let Module::Bef { .. } = module {
            return prepare_bef(flags, path, &module);
        }
    }
    if flags.has("work_queue_type") {
        return Err("--work_queue_type applies to a BEF --module".to_owned());
    }
    let (context, module) = link(flags, None)?;
    let name = match flags.last("function") {
        Some(name) => name.to_owned(),
        None => single_exported_function(&module)?,
    };
    // As in iree-run-module, `--function` names an export of the last module, never another
    // module's.
    let not_found = || format!("NOT_FOUND; no function `{name}` exported by module; looking up function '{name}'");
    let export = module.lookup_export(&name).ok_or_else(not_found)?;
    let function = context.function(&format!("{}.{name}", module.name())).map_err(|e| e.to_string())?;
    let function = function.as_vm().expect("a VM module's function").clone();
    let declaration =
        module.export_signature(export).and_then(|signature| signature.attr("iree.abi.declaration")).map(str::to_owned);
    // The fences of a `coarse-fences` function are the tool's to supply, not the user's.
    let kinds = &function.arguments[..function.declared_arguments()];
    let mut arguments = run_io::parse_inputs(&flags.all("input"), kinds, &mut InputFiles::new())
        .map_err(|line| with_declaration(tooling_error(&line), &declaration))?;
    // On the device before the first call, as iree-run-module and iree-benchmark-module do.
    context.place_arguments(&mut arguments).map_err(|e| e.to_string())?;
    let result_kinds = function.results;
    let call = Call::Vm { function: function.handle, arguments };
    Ok(Prepared { context, call, name, declaration, result_kinds })
}

/// The BEF `module` loaded from `path` (a kernel graph, `rtx import-onnx`'s output) in a context on the
/// `--work_queue_type` (default `mstd`), its function's arguments parsed as IREE's tools parse
/// tensors, with strings, sequences and empty optionals besides (`run_io::parse_graph_inputs`).
#[cfg(feature = "tfrt")]
fn prepare_bef(flags: &Flags, path: &str, module: &Module) -> Result<Prepared, String> {
    let spec = flags.last("work_queue_type").unwrap_or("mstd");
    let options = ContextOptions::from_spec(spec).map_err(|e| format!("--work_queue_type: {e}"))?;
    let context = Runtime::new().context_with(options).map_err(|e| e.to_string())?;
    context.add_module(module).map_err(|e| format!("adding `{path}` to the context: {e}"))?;
    let name = match flags.last("function") {
        Some(name) => name.to_owned(),
        None => module.entry_function().ok_or("the module has more than one function: --function= must name one")?,
    };
    let function = context.function(&name).map_err(|e| e.to_string())?;
    let values =
        run_io::parse_graph_inputs(&flags.all("input"), &mut InputFiles::new()).map_err(|line| tooling_error(&line))?;
    let arguments = values
        .iter()
        .map(|value| host_values::to_async_value(context.host(), value))
        .collect::<Result<Vec<RcAsyncValue>, Diagnostic>>()
        .map_err(|e| e.to_string())?;
    let result_kinds = vec![ValueKind::Ref; function.num_results()];
    Ok(Prepared { context, call: Call::Bef { function, arguments }, name, declaration: None, result_kinds })
}

/// The function to run when no `--function` is given: the module's only export that is neither
/// internal (`__init`) nor special (`$async`), as iree-run-module picks it.
fn single_exported_function(module: &rtx::vm::Module) -> Result<String, String> {
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
        "work_queue_type",
        "trace",
    ])?;
    let options = output_options(flags);
    let prepared = prepare(flags)?;
    println!("EXEC @{}", prepared.name);
    match prepared.call() {
        Ok(results) => {
            let here = std::path::Path::new(".");
            let report = match results {
                Results::Vm(results) => run_io::report(&results, &prepared.result_kinds, &options, here),
                #[cfg(feature = "tfrt")]
                Results::Bef(results) => {
                    run_io::report_graph(results.iter().map(host_values::from_async_value).collect(), &options, here)
                }
            };
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
        .filter_map(|export| {
            Some((export.local_name.as_str(), context.function(&export.local_name).ok()?.as_vm()?.handle.clone()))
        })
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
