//! MLIR bytecode costs: the MLIR bytecode row of docs/PERFORMANCE.md, on a large module.
//!
//! Setup builds a module of 100 functions × 1000 unregistered ops (two operands, one result, an
//! integer and a string attribute, a file-line-col location each, two ops per source line as a
//! frontend emits them), in generic text parsed by rtx and written by rtx's own writer as bytecode
//! v6 (1,647,615 bytes; one location per op would make it 2,061,563). Rows:
//!
//! - `read_bytecode`: rtx reads the file into its IR. The anchor is upstream MLIR's parse of the
//!   same file: the `Parser` phase that `iree-opt --allow-unregistered-dialect --mlir-timing`
//!   reports (wall time of `parseSourceFile`, i.e. bytecode reading into upstream's IR, without
//!   process start, context setup, verification or printing). Each anchor round runs iree-opt once.
//!   Found through `RTX_IREE_TOOLS` or `target/iree-tools`; without it the row is skipped.
//! - `write_bytecode`: rtx writes the module back, anchored on rtx's own read (no upstream writer
//!   timing is reported separately by iree-opt), so the ratio says how writing compares to reading.
//!
//! The `registered` rows do the same on a module of registered ops as frontends emit them (100
//! `func.func`s × 1000 arith ops with properties, a `func.call` each, file-line-col locations;
//! the text `scripts/regen/registered-mlir.py` writes for timing whole `rtx translate` processes):
//! `read_text` (rtx parses the generic text; anchor: iree-opt's `Parser` phase on the same text),
//! `read_bytecode` and `write_bytecode` as above.
//!
//! `cargo bench --bench mlir [-- FILTER]`; `RTX_BENCH_MLIR_SAVE=PATH` also saves the bench file
//! (for profiling the reader alone, or timing iree-opt by hand).

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use rtx::mlir::{parse_text, read_bytecode, write_bytecode, WriteOptions};

#[allow(dead_code)] // `per_call` is for per-call rows, which this bench has none of.
mod support;

use support::row;

const FUNCTIONS: usize = 100;
const OPS_PER_FUNCTION: usize = 1000;

/// The generic text of the bench module.
fn module_text() -> String {
    let mut s = String::with_capacity(FUNCTIONS * OPS_PER_FUNCTION * 120);
    s.push_str("\"builtin.module\"() ({\n");
    for f in 0..FUNCTIONS {
        s.push_str("  \"bench.func\"() ({\n  ^bb0(%a: i32, %b: i32):\n");
        let mut prev = "%a".to_owned();
        for i in 0..OPS_PER_FUNCTION {
            let name = ["bench.add", "bench.mul", "bench.sub", "bench.xor"][i % 4];
            let _ = writeln!(
                s,
                "    %{i} = \"{name}\"({prev}, %b) {{index = {i} : i64, tag = \"t{}\"}} : (i32, i32) -> i32 loc(\"bench_{f}.py\":{}:5)",
                i % 16,
                i / 2 + 1
            );
            prev = format!("%{i}");
        }
        let _ =
            writeln!(s, "    \"bench.return\"({prev}) : (i32) -> () loc(\"bench_{f}.py\":{}:1)", OPS_PER_FUNCTION + 1);
        let _ = writeln!(s, "  }}) {{sym_name = \"f{f}\"}} : () -> () loc(\"bench_{f}.py\":0:0)");
    }
    s.push_str("}) : () -> ()\n");
    s
}

/// The generic text of the registered-ops module: what `scripts/regen/registered-mlir.py` writes.
fn registered_text() -> String {
    let mut s = String::with_capacity(FUNCTIONS * OPS_PER_FUNCTION * 110);
    s.push_str("\"builtin.module\"() ({\n");
    let none = "<{overflowFlags = #arith.overflow<none>}>";
    for f in 0..FUNCTIONS {
        let file = format!("model_{}.py", f % 7);
        let _ = write!(
            s,
            "  \"func.func\"() <{{function_type = (i32, i32, f32) -> i32, sym_name = \"f{f}\"}}> ({{\n  \
             ^bb0(%arg0: i32, %arg1: i32, %arg2: f32):\n"
        );
        let mut n = 0;
        let mut op = |s: &mut String, text: String| {
            let _ = writeln!(s, "    {text} loc(\"{file}\":{}:{})", n / 2 + 1, 5 + (n % 3) * 4);
            n += 1;
        };
        let (mut prev, mut fprev) = ("%arg0".to_owned(), "%arg2".to_owned());
        for k in 0..(OPS_PER_FUNCTION - 3).div_ceil(6) {
            op(&mut s, format!("%c{k} = \"arith.constant\"() <{{value = {} : i32}}> : () -> i32", k % 97));
            op(&mut s, format!("%a{k} = \"arith.addi\"({prev}, %c{k}) {none} : (i32, i32) -> i32"));
            op(&mut s, format!("%m{k} = \"arith.muli\"(%a{k}, %arg1) {none} : (i32, i32) -> i32"));
            op(
                &mut s,
                format!("%p{k} = \"arith.cmpi\"(%m{k}, %a{k}) <{{predicate = {} : i64}}> : (i32, i32) -> i1", k % 10),
            );
            op(&mut s, format!("%s{k} = \"arith.select\"(%p{k}, %m{k}, %a{k}) : (i1, i32, i32) -> i32"));
            op(
                &mut s,
                format!(
                    "%x{k} = \"arith.addf\"({fprev}, %arg2) <{{fastmath = #arith.fastmath<none>}}> : (f32, f32) -> f32"
                ),
            );
            (prev, fprev) = (format!("%s{k}"), format!("%x{k}"));
        }
        let callee = f.saturating_sub(1);
        op(
            &mut s,
            format!("%r = \"func.call\"({prev}, %arg1, {fprev}) <{{callee = @f{callee}}}> : (i32, i32, f32) -> i32"),
        );
        op(&mut s, format!("%t = \"arith.addi\"(%r, {prev}) {none} : (i32, i32) -> i32"));
        op(&mut s, "\"func.return\"(%t) : (i32) -> ()".to_owned());
        let _ = writeln!(s, "  }}) : () -> () loc(\"{file}\":0:0)");
    }
    s.push_str("}) : () -> () loc(\"model_0.py\":0:0)\n");
    s
}

/// The directory with `iree-opt`, if installed.
fn iree_tools() -> Option<PathBuf> {
    let dir = std::env::var_os("RTX_IREE_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/iree-tools"));
    dir.join("iree-opt").is_file().then_some(dir)
}

/// Nanoseconds of the `Parser` phase of one `iree-opt --mlir-timing` run over `file`.
fn upstream_parse_ns(iree_opt: &PathBuf, file: &PathBuf) -> f64 {
    let out = Command::new(iree_opt)
        .args(["--allow-unregistered-dialect", "--mlir-timing", "--mlir-disable-threading", "-o", "/dev/null"])
        .arg(file)
        .output()
        .expect("run iree-opt");
    assert!(out.status.success(), "iree-opt failed: {}", String::from_utf8_lossy(&out.stderr));
    let report = String::from_utf8_lossy(&out.stderr);
    // `  0.0931 (100.0%)  Parser` (wall time in seconds, optionally preceded by user+system time).
    let line = report.lines().find(|l| l.trim_end().ends_with("Parser")).expect("Parser phase in --mlir-timing");
    let secs: f64 = line.split_whitespace().next().and_then(|t| t.parse().ok()).expect("Parser time");
    secs * 1e9
}

/// Nanoseconds of one call.
fn timed<T>(f: impl FnOnce() -> T) -> f64 {
    let start = Instant::now();
    let out = f();
    let ns = start.elapsed().as_nanos() as f64;
    drop(black_box(out));
    ns
}

/// Runs the rows wanted for one module: `bytes` is its bytecode, `text` (when given) its text.
fn rows(label: &str, bytes: &[u8], text: Option<&str>, wanted: &dyn Fn(&str) -> bool) {
    let read_ns = |bytes: &[u8]| timed(|| read_bytecode(black_box(bytes)).expect("rtx reads its own file"));
    let iree_opt = iree_tools().map(|dir| dir.join("iree-opt"));
    let upstream_row = |name: &str, file: &[u8], subject: &mut dyn FnMut() -> f64| match &iree_opt {
        Some(iree_opt) => {
            let path = std::env::temp_dir().join(format!("rtx-bench-mlir-{}", std::process::id()));
            std::fs::write(&path, file).expect("write temp file");
            row(
                &format!("{name} ({label})"),
                "iree-opt Parser phase",
                &mut || upstream_parse_ns(iree_opt, &path),
                subject,
            );
            let _ = std::fs::remove_file(&path);
        }
        None => println!("{name} ({label}): skipped, no iree-opt (set RTX_IREE_TOOLS)"),
    };
    if let Some(text) = text.filter(|_| wanted("read_text")) {
        upstream_row("read_text", text.as_bytes(), &mut || timed(|| parse_text(black_box(text)).expect("rtx parses")));
    }
    if wanted("read_bytecode") {
        upstream_row("read_bytecode", bytes, &mut || read_ns(bytes));
    }
    if wanted("write_bytecode") {
        let module = read_bytecode(bytes).expect("rtx reads its own file");
        let options = WriteOptions::default();
        row(&format!("write_bytecode ({label})"), "rtx read_bytecode", &mut || read_ns(bytes), &mut || {
            timed(|| write_bytecode(black_box(&module), &options).expect("rtx writes"))
        });
    }
}

fn main() {
    let wanted = support::filter();
    let start = Instant::now();
    let module = parse_text(&module_text()).expect("bench module parses");
    let bytes = write_bytecode(&module, &WriteOptions::default()).expect("bench module writes");
    drop(module);
    if let Some(path) = std::env::var_os("RTX_BENCH_MLIR_SAVE") {
        std::fs::write(path, &bytes).expect("save bench module");
    }
    println!(
        "module: {} ops, {} bytes of bytecode v6 (built in {:.2} s); {} alternating rounds; medians; ratio = rtx / anchor",
        FUNCTIONS * (OPS_PER_FUNCTION + 2) + 1,
        bytes.len(),
        start.elapsed().as_secs_f64(),
        support::ROUNDS
    );
    rows("100k ops", &bytes, None, &wanted);
    if wanted("registered") || ["read_text", "read_bytecode", "write_bytecode"].iter().any(|row| wanted(row)) {
        let text = registered_text();
        let module = parse_text(&text).expect("registered module parses");
        let bytes = write_bytecode(&module, &WriteOptions::default()).expect("registered module writes");
        println!("registered module: {} bytes of text, {} of bytecode v6", text.len(), bytes.len());
        rows("registered, 100k ops", &bytes, Some(&text), &|name| wanted(name) || wanted("registered"));
    }
}
