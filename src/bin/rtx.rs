//! The `rtx` command: `run` (a drop-in for `iree-run-module`), `dump` (like `iree-dump-module`)
//! and `bench` (repeated in-process calls).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use rtx::host::Diagnostic;
use rtx::vm::abi::CconvItem;
use rtx::vm::context::{Context, FunctionHandle};
use rtx::vm::dump::{write_dump, DumpOptions, DumpOutput};
use rtx::vm::function_io::{format_value, parse_scalar};
use rtx::vm::value::Value;
use rtx::vm::Module;

const USAGE: &str = "usage:
  rtx run --module=X.vmfb [--module=Y.vmfb ...] --function=F [--input=V ...] [--device=local-sync]
  rtx bench --module=X.vmfb --function=F [--input=V ...] [--benchmark_min_time=SECONDS] [--rounds=N] [--no_iree]
            (alternates with iree-benchmark-module when it is in RTX_IREE_TOOLS or on PATH)
  rtx dump [--output=all|metadata|disassembly] [--function=F] [--bytecode_offsets] X.vmfb";

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
        "dump" => dump(&flags),
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

fn prepare(flags: &Flags) -> Result<Prepared, String> {
    let device = flags.last("device").unwrap_or("local-sync");
    if !matches!(device, "local-sync" | "local-task") {
        return Err(format!("device `{device}` is not available (scalar programs run on local-sync or local-task)"));
    }
    let modules = flags.all("module");
    if modules.is_empty() {
        return Err(format!("no --module given\n{USAGE}"));
    }
    let context = Context::new();
    let mut last = None;
    for path in modules {
        let module = Arc::new(Module::load_file(path).map_err(|e| format!("loading `{path}`: {e}"))?);
        context.add_module(module.clone()).map_err(|e| format!("adding `{path}` to the context: {e}"))?;
        last = Some(module);
    }
    let module = last.expect("at least one module");
    let name = flags.last("function").ok_or_else(|| format!("no --function given\n{USAGE}"))?.to_owned();
    let function = context.lookup(&name).map_err(|e| e.to_string())?;
    let local = name.rsplit_once('.').map_or(name.as_str(), |(_, f)| f);
    let declaration = module
        .lookup_export(local)
        .and_then(|export| module.export_signature(export))
        .and_then(|signature| signature.attr("iree.abi.declaration"))
        .map(str::to_owned);
    let cconv = rtx::vm::abi::CallingConvention::parse(&function.cconv).map_err(|e| e.to_string())?;
    let inputs = flags.all("input");
    let kinds: Vec<_> = cconv
        .arguments
        .iter()
        .map(|item| match item {
            CconvItem::Value(kind) => Ok(*kind),
            CconvItem::Span(_) => {
                Err("functions with variadic arguments cannot be run from the command line".to_owned())
            }
        })
        .collect::<Result<_, _>>()?;
    if inputs.len() != kinds.len() {
        return Err(format!(
            "parsing function inputs: input list and function mismatch; expected {} arguments but passed {}",
            kinds.len(),
            inputs.len()
        ));
    }
    let arguments = inputs
        .iter()
        .zip(kinds)
        .map(|(text, kind)| parse_scalar(text, kind))
        .collect::<Result<Vec<_>, Diagnostic>>()
        .map_err(|e| format!("parsing function inputs: {}: {}", e.code, e.message))?;
    Ok(Prepared { context, function, name: local.to_owned(), declaration, arguments })
}

fn run(flags: &Flags) -> Result<ExitCode, String> {
    flags.only(&["module", "function", "input", "device"])?;
    let prepared = prepare(flags)?;
    println!("EXEC @{}", prepared.name);
    match prepared.context.invoke(&prepared.function, prepared.arguments) {
        Ok(results) => {
            for (index, value) in results.iter().enumerate() {
                println!("result[{index}]: {}", format_value(value));
            }
            Ok(ExitCode::SUCCESS)
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

fn bench(flags: &Flags) -> Result<ExitCode, String> {
    flags.only(&["module", "function", "input", "device", "benchmark_min_time", "rounds", "no_iree"])?;
    let min_time: f64 = match flags.last("benchmark_min_time") {
        Some(text) => text.trim_end_matches('s').parse().map_err(|_| format!("bad --benchmark_min_time `{text}`"))?,
        None => 1.0,
    };
    let rounds: usize = match flags.last("rounds") {
        Some(text) => text.parse().map_err(|_| format!("bad --rounds `{text}`"))?,
        None => 5,
    };
    let prepared = prepare(flags)?;
    let call = || prepared.context.invoke(&prepared.function, prepared.arguments.clone());
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
