//! The usage text of `rtx` and of each of its commands (`rtx help`, `rtx <command> --help`).

/// One line per command, for `rtx help` and for a command line `rtx` cannot make sense of.
pub const OVERVIEW: &str = "usage: rtx <command> [flags...]

commands:
  run        call a function of an IREE-compiled module and print its results (like iree-run-module)
  bench      time repeated calls of a function, beside iree-benchmark-module when it is at hand
  check      run a module's test functions with the check module (like iree-check-module)
  dump       print a module's metadata and disassembly (like iree-dump-module)
  translate  convert MLIR between bytecode and generic text, and to and from BEF
  opt        parse MLIR and print it in custom op syntax (like tfrt_opt)
  bef-exec   run the functions of a BEF file (or TFRT MLIR) and print what they do (like bef_executor)
  import-onnx  turn an ONNX model into a BEF kernel graph (like iree-import-onnx, then mlir_to_bef)
  profile    sum up a trace (`--trace=FILE.json`) by kernel, VM call and dispatch

  rtx help <command>, rtx <command> --help   that command's flags
  rtx --version                              the version of rtx";

pub const RUN: &str = "usage: rtx run --module=X.vmfb [--module=Y.vmfb ...] [--function=F] [--input=V ...] [flags...]

Loads the modules in order into one context and calls F, an export of the last module (it may be
left out when that module exports one function). Prints `EXEC @F`, then the results, exactly as
iree-run-module 3.13 does; a failing call gives the same stdout and exit status as it.

  --module=X.vmfb                   a module to load (repeatable; the last one holds F)
  --function=F                      the function to call
  --input=V                         an argument, in order (repeatable): a scalar (`5`, `1.5`), a
                                    tensor (`2x3xf32=1 2 3 4 5 6`, `4xi32=@raw.bin`), `@f.npy`,
                                    `+f.npy` (the next array of the same file), `*f.npy` (all
                                    arrays of a file), `(null)`; a kernel graph (`.bef`,
                                    `.onnx`) also takes `.npy` arrays of strings (numpy's
                                    `str`), `@f.npz` (a sequence: the archive's arrays in
                                    order, as `np.savez` writes them) and `(null)` (an empty
                                    optional)
  --device=D                        where tensor programs run: local-sync (default), local-task,
                                    vulkan (the first usable Vulkan device) or vulkan://N
  --task_topology_group_count=N     worker threads of local-task
  --output=-|@f.npy|+f.npy|@f.bin   where each result goes, in order (repeatable; `-` prints it);
                                    a graph's sequence goes to `@f.npz`
  --output_max_element_count=N      elements printed per tensor (default 1024; -1 prints all)
  --expected_output=V               compare result n with V (repeatable) instead of printing it
  --expected_f16_threshold=T, --expected_bf16_threshold=T, --expected_f32_threshold=T,
  --expected_f64_threshold=T        absolute tolerance per float type
  --expected_rtol=R                 relative tolerance
  --equality_mode=approximate|exact how floats are compared (default approximate)
  --trace=FILE.json                 write a trace of the run (kernels, VM calls, dispatches) as
                                    Chrome trace-event JSON, for Perfetto or `rtx profile`";

pub const BENCH: &str = "usage: rtx bench --module=X.vmfb --function=F [--input=V ...] [flags...]

Calls F repeatedly in process and prints the median over rounds of the mean time per call in a
round. When iree-benchmark-module is in RTX_IREE_TOOLS or on PATH, runs it on the same call in
alternation (its rounds timed the same way) and prints the ratio of the two medians (rtx/IREE).

  --module, --function, --input, --device, --task_topology_group_count   as for `rtx run`
  --benchmark_min_time=SECONDS      total measuring time (default 1; a trailing `s` is allowed)
  --benchmark_min_time=Nx           exactly N calls per round instead (after one warm-up call)
  --rounds=N                        alternations with iree-benchmark-module or traced rounds
                                    (default 5)
  --no_iree                         time rtx alone
  --dispatch_times                  also time each dispatch on the CPU devices and print the time
                                    per call by export (for IREE's: its tool's host-execution
                                    profiling mode, then `iree-profile statistics`)
  --trace=FILE.json                 write a trace of every call (as for `rtx run`)
  --profile                         trace the calls and print the trace's `rtx profile` table
                                    after the timing: the kernels, VM calls and dispatches that
                                    took the time
  --trace_cost                      alternate each round with one traced (to a file removed
                                    afterwards) and print the ratio of the medians
                                    (traced/untraced): what tracing costs the call";

pub const CHECK: &str =
    "usage: rtx check --module=X.vmfb [--module=Y.vmfb ...] [--device=local-sync|local-task|vulkan[://N]]

Runs every exported function of the last module that takes and returns nothing, with the check
module linked (check.expect_eq, expect_almost_eq, ...), and prints PASS or FAIL with the failed
expectations for each, then a count. Exits 1 when any test fails.

  --module, --device, --task_topology_group_count   as for `rtx run`";

pub const DUMP: &str = "usage: rtx dump [--output=all|metadata|disassembly] [--function=F] [--bytecode_offsets] X.vmfb

Prints what a module holds, in iree-dump-module's layout: imports, exports, signatures,
attributes, and the disassembly of its functions.

  --output=all|metadata|disassembly  what to print (default all)
  --function=F                       disassemble only F (a name or an internal ordinal)
  --bytecode_offsets                 prefix each instruction with its bytecode offset";

pub const TRANSLATE: &str = "usage: rtx translate --mlirbc-to-mlir IN [-o OUT.mlir] [--print-debuginfo]
       rtx translate --mlir-to-mlirbc IN [-o OUT.mlirbc] [--bytecode-version=N]
       rtx translate --mlir-to-bef IN [-o OUT.bef] [--disable-optional-sections[=true|false]]
       rtx translate --bef-to-mlir IN.bef [-o OUT.mlir] [--mlir-print-op-generic] [--mlir-print-debuginfo]

Converts MLIR between bytecode (versions 0-6) and MLIR's generic text form, MLIR of TFRT kernels
to a BEF file as TFRT's `tfrt_translate -mlir-to-bef` writes it, or a BEF file back to MLIR as
`tfrt_translate -bef-to-mlir` rebuilds it. IN may be text or bytecode (for --bef-to-mlir, BEF);
IN absent or `-` reads stdin; without `-o`, or with `-o -`, the output goes to stdout. Flags may have one dash
or two.

  --mlirbc-to-mlir                write generic text
  --mlir-to-mlirbc                write bytecode
  --mlir-to-bef                   write BEF
  --bef-to-mlir                   write MLIR text in TFRT's custom op syntax
  --print-debuginfo               keep locations in the text (--mlirbc-to-mlir)
  --bytecode-version=N            the bytecode version to write (default 6)
  --disable-optional-sections     leave out BEF's attribute-types, attribute-names and
                                  register-types sections (only BEF-to-MLIR reads them)
  --mlir-print-op-generic         print every op in the generic form (--bef-to-mlir)
  --mlir-print-debuginfo          print locations (--bef-to-mlir)";

pub const IMPORT_ONNX: &str = "usage: rtx import-onnx IN.onnx -o OUT.bef|OUT.mlir|OUT.mlirbc

Turns the ONNX model IN into one function of `nn.*` kernels, named after the model's graph (as
iree-import-onnx names it), taking the graph's inputs in order and returning its outputs; its
weights become dense constants. OUT's extension picks what is written: BEF (run it with
`rtx run --module=OUT.bef`, `rtx bench` or `rtx bef-exec`), MLIR text, or MLIR bytecode.
Shape computations on constants fold at import; an operator or element type rtx does not
support is an error naming its node.";

pub const OPT: &str = "usage: rtx opt [IN] [-o OUT] [--mlir-print-op-generic] [--mlir-print-debuginfo]

Parses MLIR (text in custom or generic op syntax, or bytecode) and prints it as tfrt_opt does:
ops with a custom form that rtx knows (builtin.module, func.func, TFRT's tfrt, tfrt_test, ts,
tfrt_dht and coo ops) in it, other ops in the generic form. IN absent or `-` is stdin. A syntax
error prints `FILE:LINE:COL: error: MESSAGE` and exits 1. Flags may have one dash or two.

  --mlir-print-op-generic       print every op in the generic form
  --mlir-print-debuginfo        print locations
  --allow-unregistered-dialect  accepted; ops rtx has no custom form for are always allowed";

pub const BEF_EXEC: &str = "usage: rtx bef-exec [FILE...] [flags...]

Runs every function of each FILE that takes no arguments (or those --functions names), in the
order of the file, and prints what TFRT's bef_executor prints: `--- Running 'f':`, the kernels'
output, `'f' returned 1,2`. FILE is a BEF file, or MLIR of TFRT kernels (text or bytecode), which
is translated to BEF first; no FILE or `-` reads stdin. Runtime errors print as
`FILE:LINE:COL: error: runtime error: MESSAGE` on stderr unless the MLIR file expects them with
an `expected-error` comment; any unexpected or missing error exits 1. Flags take one dash or
two, and their value after `=` or as the next argument.

  --work_queue_type=s|mstd[:N[,M]]   the work queue (default s: no threads, tasks run when the
                                     driver waits)
  --host_allocator_type=TYPE         the host allocator: malloc; test_fixed_size_1k (1 KiB in
                                     all, each allocation and free reported on stderr);
                                     profiled_allocator (counts printed at the end); or
                                     leak_check_allocator (the default: a failure, with the
                                     counts, when host memory is left allocated at the end)
  --functions=a,b                    run these functions, in this order
  --test_init_function=f             run f first
  --print_error_code                 print error codes with error results
  --vm_module=FILE                   add an IREE VM module (.vmfb) to the context, whose
                                     functions `rtx.vm.call` kernels call (repeatable, in order)
  --device=URI                       the device those modules run on (default local-task; only
                                     with --vm_module)
  --trace=FILE.json                  write a trace of the run (as for `rtx run`)
  --enable_tracing                   print TFRT's tracing scopes after the run's output, as its
                                     bef_executor_debug_tracing does: `Scope:Bef Executor`,
                                     `Scope:Function: f`, each closed by `End Scope`
  --tracing_level=default|verbose|debug   which scopes (default: default); debug adds one per
                                     kernel run";

pub const PROFILE: &str = "usage: rtx profile FILE.json

Sums up a Chrome trace-event file (what `rtx run|bench|bef-exec --trace=FILE.json` write, or any
other tool's): for each category of span (kernel: BEF kernels, those of an imported ONNX model
named after their node and summed by kernel too, in `kernel (by kernel)`; task: work kernels and
dispatches share out; vm: VM function calls and the HAL's queue operations; dispatch: dispatches,
the CPU's and those a Vulkan device timed; submission: a Vulkan device's submissions; op: Core
Runtime's ops, as `OP#op_handler=HANDLER#`; wait: host waits; call: the calls made), the 20 names with the most total time, with their count, total and
mean time, and share of the category's total. A span inside another of its category counts in
both.";

/// The usage of `command`, if it is one.
pub fn of(command: &str) -> Option<&'static str> {
    Some(match command {
        "run" => RUN,
        "bench" => BENCH,
        "check" => CHECK,
        "dump" => DUMP,
        "translate" => TRANSLATE,
        "bef-exec" => BEF_EXEC,
        "opt" => OPT,
        "import-onnx" => IMPORT_ONNX,
        "profile" => PROFILE,
        _ => return None,
    })
}
