//! Lazy loading of isolated regions (`read_bytecode_lazy`): the bodies stored in their own
//! sections (bytecode v2+) are read on demand, and reading them all gives exactly the module an
//! eager read gives. A corrupt body fails when it is materialized, leaving the module as it was.
//!
//! Modules are compared by what rtx writes for them (canonical numbering in walk order), since
//! the generic print names values and blocks by their arena ids, which depend on reading order.

use std::sync::Arc;

use rtx_mlir::bytecode::{read_bytecode_lazy, LazyModule};
use rtx_mlir::ir::Module;
use rtx_mlir::{print_generic, read_bytecode, write_bytecode, PrintOptions, WriteOptions};
use rtx_test_support::fixtures_dir;

/// Every bytecode fixture of `tests/fixtures/mlir`: (file name, bytes).
fn fixtures() -> Vec<(String, Vec<u8>)> {
    let dir = fixtures_dir().join("mlir");
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .expect("fixture dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "mlirbc"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect();
    out.sort();
    assert!(out.len() >= 60, "expected the generated fixtures, found {}", out.len());
    out
}

/// The module as bytecode v6 (lossy where v6 cannot hold it, as for any version).
fn canonical(module: &Module) -> Vec<u8> {
    write_bytecode(module, &WriteOptions::default()).expect("writes")
}

fn version(name: &str) -> u32 {
    let stem = name.strip_suffix(".mlirbc").unwrap();
    stem.rsplit_once(".v").unwrap().1.parse().unwrap()
}

/// The canonical form of a module read from a corrupt file, which may be unwritable; and its
/// print, which shows the regions of pending ops as empty.
fn try_canonical(module: &Module) -> (Option<Vec<u8>>, Option<String>) {
    (
        write_bytecode(module, &WriteOptions::default()).ok(),
        print_generic(module, PrintOptions { debuginfo: true }).ok(),
    )
}

fn lazy(bytes: &[u8]) -> LazyModule {
    read_bytecode_lazy(Arc::from(bytes)).expect("lazy read")
}

#[test]
fn finishing_a_lazy_read_gives_the_eager_module() {
    let mut with_pending = 0;
    for (name, bytes) in fixtures() {
        let eager = canonical(&read_bytecode(&bytes).unwrap());
        let module = lazy(&bytes);
        let pending = module.pending().len();
        if version(&name) < 2 {
            assert_eq!(pending, 0, "{name}: v0/v1 have no lazily loadable sections");
        }
        with_pending += usize::from(pending > 0);
        assert_eq!(canonical(&module.finish().unwrap()), eager, "{name}");
    }
    assert!(with_pending >= 30, "only {with_pending} fixtures had lazily loadable regions");
}

#[test]
fn ops_materialize_one_at_a_time_and_reveal_nested_ones() {
    let bytes = std::fs::read(fixtures_dir().join("mlir/nested_modules.v6.mlirbc")).unwrap();
    let eager = canonical(&read_bytecode(&bytes).unwrap());
    let mut module = lazy(&bytes);
    let first: Vec<_> = module.pending().collect();
    assert!(!first.is_empty());
    // Top-level ops are read; a pending op's regions exist but have no blocks yet.
    for &op in &first {
        let m = module.module();
        assert!(!m.op_regions(op).is_empty());
        assert!(m.op_regions(op).iter().all(|&r| m.region(r).blocks.is_empty()));
    }
    let mut revealed = 0;
    let mut steps = 0;
    loop {
        let Some(op) = module.pending().next() else { break };
        let before = module.pending().len();
        module.materialize(op).unwrap();
        assert!(!module.is_pending(op));
        revealed += module.pending().len() + 1 - before;
        // Materializing again, or an op that never was pending, changes nothing.
        let text = canonical(module.module());
        module.materialize(op).unwrap();
        module.materialize(module.module().top_level[0]).unwrap();
        assert_eq!(canonical(module.module()), text);
        steps += 1;
        assert!(steps < 1000);
    }
    assert!(revealed > 0, "nested isolated ops become pending when their parent is materialized");
    assert_eq!(canonical(module.module()), eager);
    assert_eq!(canonical(&module.finish().unwrap()), eager);
}

#[test]
fn a_corrupt_body_fails_when_materialized_and_leaves_the_module_as_it_was() {
    let mut failures_seen = 0;
    for (name, bytes) in fixtures().into_iter().filter(|(n, _)| version(n) >= 2) {
        // Flip bytes in the second half of the file, where the bodies are.
        let step = (bytes.len() / 400).max(7);
        for pos in (bytes.len() / 2..bytes.len()).step_by(step) {
            let mut bad = bytes.clone();
            bad[pos] ^= 0x5a;
            let Ok(mut module) = read_bytecode_lazy(Arc::from(&bad[..])) else { continue };
            let pending: Vec<_> = module.pending().collect();
            for op in pending {
                let before = try_canonical(module.module());
                match module.materialize(op) {
                    Ok(()) => {}
                    Err(e) => {
                        failures_seen += 1;
                        assert!(e.offset <= bad.len(), "{name} @{pos}: {e}");
                        assert!(module.is_pending(op), "{name} @{pos}: a failed op stays pending");
                        assert_eq!(
                            try_canonical(module.module()),
                            before,
                            "{name} @{pos}: module changed by a failed read"
                        );
                    }
                }
            }
            // Whatever could be read reads; what could not keeps failing, as the eager reader does.
            let eager = read_bytecode(&bad);
            match module.finish() {
                Ok(m) => assert_eq!(try_canonical(&m).0, try_canonical(&eager.expect("eager reads what lazy reads")).0),
                Err(e) => assert!(eager.is_err(), "{name} @{pos}: lazy fails ({e}) where eager reads"),
            }
        }
    }
    assert!(failures_seen > 10, "only {failures_seen} corrupt bodies found");
}
