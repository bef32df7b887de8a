//! `rtx bef-exec`: TFRT's `bef_executor` test driver. The driver itself is `rtx::bef::driver`;
//! this parses its LLVM-style flags, loads the inputs and reports.

use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::Arc;

use rtx::bef::driver::{Driver, DriverOptions};
use rtx::bef::reader::{BefError, BefFile};
use rtx::host::tracing::{self, Level};
use rtx::host::work_queue::WorkQueueSpec;
use rtx::host::{CountingAllocator, Diagnostic, FixedCapacityAllocator, HostAllocator, SystemAllocator};
use rtx::kernel::KernelRegistry;
use rtx::runtime::{Context, ContextOptions, Module, QueueChoice, Runtime};

/// Flags that take a value (after `=` or as the next argument).
const VALUED: &[&str] = &[
    "work_queue_type",
    "host_allocator_type",
    "functions",
    "test_init_function",
    "vm_module",
    "device",
    "trace",
    "tracing_level",
];
/// Flags that take none.
const SWITCHES: &[&str] = &["print_error_code", "enable_tracing"];

struct Options {
    files: Vec<String>,
    work_queue: String,
    allocator: AllocatorType,
    driver: DriverOptions,
    /// IREE VM modules (`.vmfb`) added to the context, in order, for `rtx.vm.call` to call.
    vm_modules: Vec<String>,
    /// The device those modules run on (`--device`; local-task when not given).
    device: Option<String>,
    /// `--trace=FILE.json`: where the run's trace goes.
    trace: Option<String>,
    /// `--enable_tracing`: TFRT's scope lines of this level and below, printed at the end.
    scopes: Option<Level>,
    /// `--tracing_level`: the level `--enable_tracing` shows (default: `default`).
    tracing_level: Level,
}

/// TFRT's `--host_allocator_type` choices.
#[derive(Clone, Copy, PartialEq, Eq)]
enum AllocatorType {
    /// `malloc`: the process allocator.
    Malloc,
    /// `test_fixed_size_1k`: 1 KiB in all, each request and return reported on stderr.
    FixedSize1k,
    /// `profiled_allocator`: the process allocator, counted, the counts printed at the end.
    Profiled,
    /// `leak_check_allocator` (the default): counted, and a failure when memory is left
    /// allocated at the end.
    LeakCheck,
}

impl AllocatorType {
    fn parse(name: &str) -> Result<AllocatorType, String> {
        Ok(match name {
            "malloc" => AllocatorType::Malloc,
            "test_fixed_size_1k" => AllocatorType::FixedSize1k,
            "profiled_allocator" => AllocatorType::Profiled,
            "leak_check_allocator" => AllocatorType::LeakCheck,
            other => {
                return Err(format!(
                    "host allocator type `{other}` is not supported (malloc, test_fixed_size_1k, profiled_allocator, \
                     leak_check_allocator)"
                ))
            }
        })
    }

    /// The line TFRT's driver prints for the choice.
    fn announcement(self) -> &'static str {
        match self {
            AllocatorType::Malloc => "Choosing malloc.\n",
            AllocatorType::FixedSize1k => "Choosing fixed size malloc.\n",
            AllocatorType::Profiled => "Choosing profiled allocator based on malloc.\n",
            AllocatorType::LeakCheck => "Choosing memory leak check allocator.\n",
        }
    }

    /// The allocator, and the counts behind it when the choice reports them at the end.
    fn create(self) -> (Arc<dyn HostAllocator>, Option<Arc<CountingAllocator>>) {
        let system = Arc::new(SystemAllocator);
        match self {
            AllocatorType::Malloc => (system, None),
            AllocatorType::FixedSize1k => {
                (Arc::new(FixedCapacityAllocator::new(system, 1024, |line: &str| eprintln!("{line}"))), None)
            }
            AllocatorType::Profiled | AllocatorType::LeakCheck => {
                let counting = Arc::new(CountingAllocator::new(system));
                (counting.clone(), Some(counting))
            }
        }
    }
}

/// The counts as TFRT's profiled allocator prints them.
fn print_profile(counting: &CountingAllocator) {
    println!(
        "HostAllocator profile:\nCurrent number of allocations = {}\nMax number of allocations = {}\nTotal number of \
         allocations = {}\nCurrent number of bytes allocated = {}\nMax number of bytes allocated = {}",
        counting.live_allocations(),
        counting.peak_allocations(),
        counting.total_allocations(),
        counting.live_bytes(),
        counting.peak_bytes()
    );
}

pub fn bef_exec(arguments: &[String]) -> Result<ExitCode, String> {
    let Some(options) = parse(arguments)? else {
        println!("{}", crate::usage::BEF_EXEC);
        return Ok(ExitCode::SUCCESS);
    };
    if let Some(level) = options.scopes {
        tracing::begin_scopes(level);
    }
    let result = crate::traced(options.trace.as_deref(), || execute(&options));
    if options.scopes.is_some() {
        // TFRT's debug sink writes through a buffered stream flushed at exit: after the run's
        // own output.
        print!("{}", tracing::end_scopes());
    }
    result
}

/// Runs the files as `options` say.
fn execute(options: &Options) -> Result<ExitCode, String> {
    let (allocator, counting) = options.allocator.create();
    let queue = WorkQueueSpec::parse(&options.work_queue)
        .map_err(|e| format!("couldn't create work queue type {}: {}", options.work_queue, e.message))?;
    let context = Runtime::new()
        .context_with(ContextOptions {
            work_queue: QueueChoice::Spec(queue),
            allocator: Some(allocator),
            memory_limit: None,
        })
        .map_err(|e| format!("couldn't create work queue type {}: {}", options.work_queue, e.message))?;
    add_vm_modules(&context, options)?;
    let host = Arc::clone(context.host());
    let out = |text: &str| {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
    };
    out(options.allocator.announcement());
    out(&format!("Choosing {} work queue.\n", host.work_queue().name()));
    let driver = Driver::new(Arc::clone(&host), Arc::new(out), Arc::new(|text: &str| eprint!("{text}")));
    let mut registry = KernelRegistry::with_all_kernels();
    rtx::corert::register_kernels(&mut registry);
    context.register_bridge_kernels(&mut registry);
    let inputs = if options.files.is_empty() { vec!["-".to_owned()] } else { options.files.clone() };
    for input in &inputs {
        let file = match load(input, &registry)? {
            Ok(file) => file,
            Err(diagnostic) => {
                driver.report(&diagnostic, &diagnostic.message);
                continue;
            }
        };
        driver.run(&file, &options.driver)?;
    }
    let mut ok = driver.verify();
    drop(driver);
    drop(context);
    if let Some(counting) = counting {
        let leaked = counting.live_bytes() != 0;
        if options.allocator == AllocatorType::Profiled || leaked {
            print_profile(&counting);
        }
        if options.allocator == AllocatorType::LeakCheck && leaked {
            // TFRT's driver reports a leak on standard output, where its tests look for it.
            println!(
                "Memory leak detected: {} alive allocations, {} alive bytes",
                counting.live_allocations(),
                counting.live_bytes()
            );
            ok = false;
        }
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// TFRT's flags: one dash or two, the value after `=` or as the next argument; the rest are files.
fn parse(arguments: &[String]) -> Result<Option<Options>, String> {
    let mut options = Options {
        files: Vec::new(),
        work_queue: "s".to_owned(),
        allocator: AllocatorType::LeakCheck,
        driver: DriverOptions::default(),
        vm_modules: Vec::new(),
        device: None,
        trace: None,
        scopes: None,
        tracing_level: Level::Default,
    };
    let mut rest = arguments.iter();
    while let Some(argument) = rest.next() {
        let Some(flag) = argument.strip_prefix("--").or_else(|| argument.strip_prefix('-')).filter(|f| !f.is_empty())
        else {
            options.files.push(argument.clone());
            continue;
        };
        let (name, inline) = match flag.split_once('=') {
            Some((name, value)) => (name.replace('-', "_"), Some(value.to_owned())),
            None => (flag.replace('-', "_"), None),
        };
        if name == "help" || name == "h" {
            return Ok(None);
        }
        if SWITCHES.contains(&name.as_str()) {
            if inline.is_some() {
                return Err(format!("`--{name}` takes no value"));
            }
            match name.as_str() {
                "enable_tracing" => options.scopes = Some(Level::Default),
                _ => options.driver.print_error_code = true,
            }
            continue;
        }
        if !VALUED.contains(&name.as_str()) {
            return Err(format!("unknown flag `{argument}`\n{}", crate::usage::BEF_EXEC));
        }
        let value = match inline {
            Some(value) => value,
            None => rest.next().ok_or_else(|| format!("`--{name}` needs a value"))?.clone(),
        };
        match name.as_str() {
            "work_queue_type" => options.work_queue = value,
            "host_allocator_type" => options.allocator = AllocatorType::parse(&value)?,
            "functions" => {
                options.driver.functions.extend(value.split(',').filter(|f| !f.is_empty()).map(str::to_owned))
            }
            "test_init_function" => options.driver.test_init_function = Some(value).filter(|v| !v.is_empty()),
            "vm_module" => options.vm_modules.push(value),
            "device" => options.device = Some(value),
            "trace" => options.trace = Some(value),
            "tracing_level" => {
                options.tracing_level = Level::parse(&value)
                    .ok_or_else(|| format!("`--tracing_level={value}`: one of default, verbose and debug"))?
            }
            _ => unreachable!("every valued flag is matched"),
        }
    }
    options.scopes = options.scopes.map(|_| options.tracing_level);
    if options.device.is_some() && options.vm_modules.is_empty() {
        return Err("`--device` is the device of the `--vm_module` modules, and none is given".to_owned());
    }
    Ok(Some(options))
}

/// Adds the device and the VM modules `--vm_module` names to `context` (nothing without one).
fn add_vm_modules(context: &Context, options: &Options) -> Result<(), String> {
    if options.vm_modules.is_empty() {
        return Ok(());
    }
    let device = options.device.as_deref().unwrap_or("local-task");
    context.add_device(device).map_err(|e| format!("device `{device}`: {e}"))?;
    for path in &options.vm_modules {
        let module = Module::load_file(path).map_err(|e| format!("`{path}`: {e}"))?;
        context.add_module(&module).map_err(|e| format!("`{path}`: {e}"))?;
    }
    Ok(())
}

/// Opens `input` (`-` is stdin): a BEF file as it is, MLIR translated to BEF first. The inner
/// error is a load error to report as a diagnostic (an unknown kernel, at its location).
fn load(input: &str, registry: &KernelRegistry) -> Result<Result<Arc<BefFile>, Diagnostic>, String> {
    let bytes = if input == "-" {
        let mut bytes = Vec::new();
        std::io::stdin().read_to_end(&mut bytes).map_err(|e| format!("reading stdin: {e}"))?;
        bytes
    } else {
        std::fs::read(input).map_err(|e| format!("reading `{input}`: {e}"))?
    };
    let opened = if bytes.starts_with(&rtx::bef::format::MAGIC) {
        if input == "-" {
            BefFile::from_bytes(&bytes, registry)
        } else {
            BefFile::open(input, registry)
        }
    } else {
        let module = rtx::mlir::read_any(&bytes, Some(input)).map_err(|e| format!("`{input}`: {e}"))?;
        let bef = rtx::bef::mlir_to_bef(&module, &rtx::bef::WriteOptions::default())
            .map_err(|e| format!("`{input}`: {e}"))?;
        BefFile::from_bytes(&bef, registry)
    };
    match opened {
        Ok(file) => Ok(Ok(file)),
        Err(error @ BefError::UnknownKernel { .. }) => Ok(Err(error.into())),
        Err(error) => Err(format!("`{input}`: {error}")),
    }
}
