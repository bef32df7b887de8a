//! `rtx_vm::dump` against `iree-dump-module` (IREE 3.13): every fixture with a recorded
//! `.dump.txt` must dump byte for byte the same; and where the real tool is installed
//! (`scripts/setup/iree-tools.sh`, or `RTX_IREE_TOOLS`), every fixture and every output mode must match
//! what it prints now, including a module compiled from VM-dialect source that uses the
//! instructions the fixtures do not.

use std::path::{Path, PathBuf};
use std::process::Command;

use rtx_test_support::{fixture_dir, fixtures, iree_tools_or_skip};
use rtx_vm::dump::{dump_to_string, DumpOptions, DumpOutput};
use rtx_vm::Module;

fn load(path: &Path) -> Module {
    Module::load_file(path).unwrap_or_else(|e| panic!("loading {}: {e}", path.display()))
}

fn dump(path: &Path, options: &DumpOptions) -> String {
    dump_to_string(&load(path), options).unwrap_or_else(|e| panic!("dumping {}: {e}", path.display()))
}

/// Panics with the first differing line, numbered, and a few lines of context.
fn assert_same_text(what: &str, expected: &str, actual: &str) {
    if expected == actual {
        return;
    }
    let expected_lines: Vec<&str> = expected.split('\n').collect();
    let actual_lines: Vec<&str> = actual.split('\n').collect();
    let first = expected_lines
        .iter()
        .zip(&actual_lines)
        .position(|(e, a)| e != a)
        .unwrap_or_else(|| expected_lines.len().min(actual_lines.len()));
    let context = first.saturating_sub(3)..first;
    let mut message = format!("{what}: dumps differ at line {}\n", first + 1);
    for line in &expected_lines[context] {
        message.push_str(&format!("    {line}\n"));
    }
    let show = |line: Option<&&str>| line.map_or("<end of text>".to_owned(), |l| format!("{l:?}"));
    message.push_str(&format!("  expected: {}\n", show(expected_lines.get(first))));
    message.push_str(&format!("  actual:   {}\n", show(actual_lines.get(first))));
    panic!("{message}");
}

#[test]
fn every_recorded_dump_is_reproduced_exactly() {
    let mut compared = 0;
    for path in fixtures() {
        let recorded = path.with_extension("dump.txt");
        let Ok(expected) = std::fs::read_to_string(&recorded) else { continue };
        assert_same_text(&recorded.display().to_string(), &expected, &dump(&path, &DumpOptions::default()));
        compared += 1;
    }
    assert!(compared >= 7, "expected the 7 recorded dumps, compared {compared}");
}

#[test]
fn metadata_and_disassembly_together_make_the_full_dump() {
    let path = fixture_dir("").join("calls.vmfb");
    let metadata = dump(&path, &DumpOptions { output: DumpOutput::Metadata, ..DumpOptions::default() });
    let disassembly = dump(&path, &DumpOptions { output: DumpOutput::Disassembly, ..DumpOptions::default() });
    assert_eq!(format!("{metadata}\n{disassembly}"), dump(&path, &DumpOptions::default()));
    assert!(disassembly.starts_with("vm.module @calls version 0\n"));
}

#[test]
fn function_filter_takes_a_header_name_or_an_ordinal() {
    let path = fixture_dir("").join("calls.vmfb");
    let only = |filter: &str| {
        let options = DumpOptions {
            output: DumpOutput::Disassembly,
            function: Some(filter.to_owned()),
            ..DumpOptions::default()
        };
        dump(&path, &options)
    };
    assert_eq!(only("fn3"), only("3"));
    assert!(only("fn3").contains("vm.func @fn3(%i0: i32) -> (i32) {"));
    assert_eq!(only("factorial").matches("vm.func").count(), 1);
    assert_eq!(only("nonexistent").matches("vm.func").count(), 0);
}

fn run_tool(tool: &Path, args: &[&str], input: &Path) -> String {
    let output =
        Command::new(tool).args(args).arg(input).output().unwrap_or_else(|e| panic!("running {}: {e}", tool.display()));
    assert!(
        output.status.success(),
        "{} {args:?} {} failed: {}",
        tool.display(),
        input.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("the tool prints UTF-8 for these modules")
}

/// Each output mode of `iree-dump-module` with the options that select it here.
fn modes() -> Vec<(Vec<&'static str>, DumpOptions)> {
    let disassembly = DumpOptions { output: DumpOutput::Disassembly, ..DumpOptions::default() };
    vec![
        (vec![], DumpOptions::default()),
        (vec!["--output=metadata"], DumpOptions { output: DumpOutput::Metadata, ..DumpOptions::default() }),
        (
            vec!["--output=disassembly", "--bytecode_offsets"],
            DumpOptions { bytecode_offsets: true, ..disassembly.clone() },
        ),
        (vec!["--output=disassembly", "--function=1"], DumpOptions { function: Some("1".into()), ..disassembly }),
    ]
}

fn compare_with_tool(tools: &Path, module: &Path) {
    let tool = tools.join("iree-dump-module");
    for (args, options) in modes() {
        let expected = run_tool(&tool, &args, module);
        assert_same_text(&format!("{} {args:?}", module.display()), &expected, &dump(module, &options));
    }
}

#[test]
fn every_fixture_and_mode_matches_the_installed_tool() {
    let Some(tools) = iree_tools_or_skip() else { return };
    for path in fixtures() {
        compare_with_tool(&tools, &path);
    }
}

/// VM-dialect source using the instructions the compiled fixtures do not: buffers, ref lists,
/// globals of every kind, switches, casts, f64 constants, `br_table` with remaps, traces.
const ALL_OPS_MODULE: &str = r#"
vm.module @all_ops {
  vm.global.i32 mutable @g_i32 : i32
  vm.global.i64 mutable @g_i64 : i64
  vm.global.f32 mutable @g_f32 : f32
  vm.global.f64 mutable @g_f64 : f64
  vm.global.ref mutable @g_ref : !vm.buffer
  vm.rodata private @blob dense<[1, 2, 3, 4]> : tensor<4xi32>
  vm.rodata private @text dense<[104, 105]> : tensor<2xi8>
  vm.import private optional @other.maybe(%x : i32) -> i32
  vm.import private @other.spans(%a : i32, %b : tuple<i32, !vm.buffer> ...) -> ()

  vm.func @buffers(%len : i64, %value : i32) -> i64 {
    %c0 = vm.const.i64.zero
    %c4 = vm.const.i64 4
    %align = vm.const.i32 16
    %buf = vm.buffer.alloc %len, %align : !vm.buffer
    %clone = vm.buffer.clone %buf, %c0, %c4, %align : !vm.buffer -> !vm.buffer
    vm.buffer.fill.i8 %buf, %c0, %c4, %value : i32 -> !vm.buffer
    vm.buffer.fill.i32 %buf, %c0, %c4, %value : i32 -> !vm.buffer
    vm.buffer.fill.i64 %buf, %c0, %c4, %len : i64 -> !vm.buffer
    vm.buffer.store.i32 %value, %buf[%c0] : i32 -> !vm.buffer
    vm.buffer.store.i64 %len, %buf[%c4] : i64 -> !vm.buffer
    %l8 = vm.buffer.load.i8.s %buf[%c0] : !vm.buffer -> i32
    %l16 = vm.buffer.load.i16.u %buf[%c0] : !vm.buffer -> i32
    %l64 = vm.buffer.load.i64 %buf[%c0] : !vm.buffer -> i64
    vm.buffer.copy %buf, %c0, %clone, %c0, %c4 : !vm.buffer -> !vm.buffer
    %cmp = vm.buffer.compare %buf, %c0, %clone, %c0, %c4 : !vm.buffer, !vm.buffer
    %size = vm.buffer.length %buf : !vm.buffer -> i64
    %hash = vm.buffer.hash %buf, %c0, %c4 : !vm.buffer -> i64
    %sum = vm.add.i64 %size, %hash : i64
    %t = vm.add.i32 %l8, %l16 : i32
    %u = vm.add.i32 %t, %cmp : i32
    %w = vm.ext.i32.i64.u %u : i32 -> i64
    %x = vm.add.i64 %sum, %w : i64
    %y = vm.add.i64 %x, %l64 : i64
    vm.return %y : i64
  }

  vm.func @floats(%a : f32, %b : f64, %buf : !vm.buffer) -> f64 {
    %c0 = vm.const.i64.zero
    %k = vm.const.f64 0.1
    %n = vm.const.f64 -2.5e10
    %f = vm.const.f32 3.0e-10
    %z = vm.const.f64.zero
    %s = vm.add.f64 %b, %k : f64
    %m = vm.max.f64 %s, %n : f64
    %e = vm.ext.f32.f64 %a : f32 -> f64
    %r = vm.fma.f64 %m, %e, %z : f64
    %g = vm.add.f32 %a, %f : f32
    vm.buffer.store.f32 %g, %buf[%c0] : f32 -> !vm.buffer
    vm.buffer.store.f64 %r, %buf[%c0] : f64 -> !vm.buffer
    %lf = vm.buffer.load.f64 %buf[%c0] : !vm.buffer -> f64
    %q = vm.add.f64 %lf, %r : f64
    vm.return %q : f64
  }

  vm.func @globals(%v : i32, %b : !vm.buffer, %off : i32) -> !vm.buffer {
    vm.global.store.i32 %v, @g_i32 : i32
    %i = vm.global.load.i32 @g_i32 : i32
    %w = vm.ext.i32.i64.s %i : i32 -> i64
    vm.global.store.i64 %w, @g_i64 : i64
    %f = vm.cast.si32.f32 %i : i32 -> f32
    vm.global.store.f32 %f, @g_f32 : f32
    %d = vm.ext.f32.f64 %f : f32 -> f64
    vm.global.store.f64 %d, @g_f64 : f64
    %lf = vm.global.load.f64 @g_f64 : f64
    %ld = vm.global.load.f32 @g_f32 : f32
    vm.global.store.ref %b, @g_ref : !vm.buffer
    %r = vm.global.load.ref @g_ref : !vm.buffer
    vm.return %r : !vm.buffer
  }

  vm.func @lists(%n : i32, %b : !vm.buffer, %in : !vm.list<!vm.buffer>, %fin : !vm.list<f32>) -> !vm.buffer {
    %c0 = vm.const.i32.zero
    %list = vm.assign.ref %in : !vm.list<!vm.buffer> -> !vm.list<!vm.buffer>
    vm.list.reserve %list, %n : (!vm.list<!vm.buffer>, i32)
    vm.list.resize %list, %n : (!vm.list<!vm.buffer>, i32)
    vm.list.set.ref %list, %c0, %b : (!vm.list<!vm.buffer>, i32, !vm.buffer)
    %r = vm.list.get.ref %list, %c0 : (!vm.list<!vm.buffer>, i32) -> !vm.buffer
    %any = vm.list.alloc %n : (i32) -> !vm.list<?>
    vm.list.set.ref %any, %c0, %r : (!vm.list<?>, i32, !vm.buffer)
    %o = vm.list.get.ref %any, %c0 : (!vm.list<?>, i32) -> !vm.ref<?>
    %cast = vm.cast.any.ref %o : !vm.ref<?> -> !vm.buffer
    %fl = vm.list.alloc %n : (i32) -> !vm.list<f32>
    %fv = vm.const.f32 2.5
    vm.list.set.f32 %fl, %c0, %fv : (!vm.list<f32>, i32, f32)
    %g = vm.list.get.f32 %fl, %c0 : (!vm.list<f32>, i32) -> f32
    vm.list.set.f32 %fin, %c0, %g : (!vm.list<f32>, i32, f32)
    %eq = vm.cmp.eq.ref %r, %cast : !vm.buffer
    %sel = vm.select.ref %eq, %r, %cast : !vm.buffer
    vm.return %sel : !vm.buffer
  }

  vm.func @switches(%i : i32, %a : i32, %b : i64, %c : f32) -> (i32, i64, f32) {
    %c1 = vm.const.i32 1
    %c2 = vm.const.i32 2
    %s32 = vm.switch.i32 %i[%a, %c1, %c2] else %c1 : i32
    %l1 = vm.const.i64 1
    %s64 = vm.switch.i64 %i[%b, %l1] else %l1 : i64
    %f1 = vm.const.f32 1.0
    %sf = vm.switch.f32 %i[%c, %f1] else %f1 : f32
    vm.br_table %i {
      default: ^bb1(%s32, %s64 : i32, i64),
      0: ^bb1(%a, %b : i32, i64),
      1: ^bb2
    }
  ^bb1(%x : i32, %y : i64):
    vm.trace "event"(%x, %y) : i32, i64
    vm.print "value"(%x) : i32
    vm.return %x, %y, %sf : i32, i64, f32
  ^bb2:
    %r = vm.call @helper(%i) : (i32) -> i32
    %has = vm.import.resolved @other.maybe : i32
    vm.cond_br %has, ^bb3, ^bb4
  ^bb3:
    %m = vm.call @other.maybe(%r) : (i32) -> i32
    %e = vm.ext.i32.i64.s %m : i32 -> i64
    vm.return %m, %e, %sf : i32, i64, f32
  ^bb4:
    %span = vm.const.ref.rodata @blob : !vm.buffer
    vm.call.variadic @other.spans(%r, [(%r, %span), (%c1, %span)]) : (i32, tuple<i32, !vm.buffer> ...) -> ()
    %blob = vm.const.ref.rodata @blob : !vm.buffer
    %text = vm.const.ref.rodata @text : !vm.buffer
    %len = vm.buffer.length %blob : !vm.buffer -> i64
    vm.return %r, %len, %sf : i32, i64, f32
  }

  vm.func private @helper(%x : i32) -> i32 {
    %c = vm.const.i32 -7
    %y = vm.mul.i32 %x, %c : i32
    vm.return %y : i32
  }

  vm.export @buffers
  vm.export @floats
  vm.export @globals
  vm.export @lists
  vm.export @switches
  vm.export @switches as("switches_alias")
}
"#;

#[test]
fn instructions_beyond_the_fixtures_match_the_installed_tool() {
    let Some(tools) = iree_tools_or_skip() else { return };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("vm_dump");
    std::fs::create_dir_all(&dir).expect("creating the test's scratch folder");
    let source = dir.join("all_ops.mlir");
    let module = dir.join("all_ops.vmfb");
    std::fs::write(&source, ALL_OPS_MODULE).expect("writing the VM-dialect source");
    let status = Command::new(tools.join("iree-compile"))
        .args(["--compile-from=vm", "-o"])
        .arg(&module)
        .arg(&source)
        .status()
        .expect("running iree-compile");
    assert!(status.success(), "iree-compile rejected {}", source.display());
    compare_with_tool(&tools, &module);
}
