//! BEF to MLIR and back: every `.mlir` file under `tests/` that `mlir_to_bef` translates must
//! come back from `bef_to_mlir` as a module that translates to the same bytes — in memory, and
//! through the text `rtx translate --bef-to-mlir --mlir-print-debuginfo` prints. And every BEF
//! made so, truncated or with bytes flipped, is read and disassembled without a panic.
//!
//! Two kinds of module cannot come back, and are left out: ops outside functions (BEF keeps only
//! their kernel names) and kernels with a `_tfrt_cost` (BEF keeps only the stream ids the costs
//! led to), as with TFRT's tools.
//!
//! `RTX_BEF_SUITE=DIR[:DIR...]` adds the `.mlir` files of other folders (a checkout of TFRT's
//! `mlir_tests`, say) to the round trip.

use std::path::{Path, PathBuf};

use rtx_bef::{bef_to_mlir, mlir_to_bef, WriteOptions};
use rtx_mlir::{parse_text_with, print_asm, read_any, AsmOptions, Module, ParseOptions};
use rtx_test_support::{mlir_files, repo_root};

/// Whether BEF keeps all of `module`: every op in a function, no kernel cost.
fn bef_keeps_all_of(module: &Module) -> bool {
    let in_functions = module.top_level.iter().all(|&top| {
        module
            .op_regions(top)
            .iter()
            .flat_map(|&r| &module.region(r).blocks)
            .flat_map(|&b| &module.block(b).ops)
            .all(|&op| matches!(&*module.op_name(op), "func.func" | "builtin.module"))
    });
    let cost = |op| {
        module.attributes(op).iter().any(|&(name, _)| {
            matches!(module.context.attr(name),
            rtx_mlir::ir::Attribute::String { value, .. } if module.context.str_bytes(*value) == b"_tfrt_cost")
        })
    };
    in_functions && !module.walk().into_iter().any(cost)
}

/// The files to check and, for each that translates, its BEF.
fn translated() -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    mlir_files(&repo_root().join("tests"), &mut files);
    if let Ok(suites) = std::env::var("RTX_BEF_SUITE") {
        for suite in suites.split(':').filter(|s| !s.is_empty()) {
            mlir_files(Path::new(suite), &mut files);
        }
    }
    files
        .into_iter()
        .filter_map(|path| {
            let bytes = std::fs::read(&path).ok()?;
            let module = read_any(&bytes, Some(&path.display().to_string())).ok()?;
            if !bef_keeps_all_of(&module) {
                return None;
            }
            let bef = mlir_to_bef(&module, &WriteOptions::default()).ok()?;
            Some((path, bef))
        })
        .collect()
}

#[test]
fn bef_to_mlir_gives_back_a_module_that_translates_to_the_same_bytes() {
    let files = translated();
    assert!(files.len() >= 5, "only {} test files translate to BEF", files.len());
    let mut failures = Vec::new();
    for (path, bef) in &files {
        let name = path.display().to_string();
        let disassembly = match bef_to_mlir(bef, &name) {
            Ok(disassembly) => disassembly,
            Err(e) => {
                failures.push(format!("{name}: bef_to_mlir: {e}"));
                continue;
            }
        };
        assert!(disassembly.warnings.is_empty(), "{name}: {:?}", disassembly.warnings);
        match mlir_to_bef(&disassembly.module, &WriteOptions::default()) {
            Ok(again) if &again == bef => {}
            Ok(_) => failures.push(format!("{name}: the module's BEF differs")),
            Err(e) => failures.push(format!("{name}: mlir_to_bef of the disassembly: {e}")),
        }
        let text = print_asm(&disassembly.module, AsmOptions { debuginfo: true, generic: false }).unwrap();
        let reparsed = parse_text_with(&text, &ParseOptions { file_name: Some(name.clone()), ..Default::default() });
        match reparsed.map(|module| mlir_to_bef(&module, &WriteOptions::default())) {
            Ok(Ok(again)) if &again == bef => {}
            Ok(Ok(_)) => failures.push(format!("{name}: the printed module's BEF differs:\n{text}")),
            Ok(Err(e)) => failures.push(format!("{name}: mlir_to_bef of the printed module: {e}")),
            Err(e) => failures.push(format!("{name}: the printed module does not parse: {e}\n{text}")),
        }
    }
    eprintln!("{} files round-tripped, {} failures", files.len(), failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Where each section ends, and where the functions section (the last one a program needs)
/// ends: read from the framing as the format defines it.
fn section_ends(bef: &[u8]) -> (Vec<usize>, usize) {
    let (mut ends, mut functions_end, mut pos) = (Vec::new(), 0, 3);
    while pos < bef.len() {
        let id = bef[pos];
        pos += 1;
        let word = rtx_bef::format::vbr::read(bef, &mut pos).unwrap();
        if word & 1 != 0 {
            let align = bef[pos] as usize;
            pos = (pos + 1).next_multiple_of(align);
        }
        pos += (word >> 1) as usize;
        ends.push(pos);
        if id == rtx_bef::format::SectionId::Functions as u8 {
            functions_end = pos;
        }
    }
    (ends, functions_end)
}

/// Disassembles and prints `bytes`, which must not panic; whether it worked.
fn disassemble(bytes: &[u8]) -> bool {
    let image = rtx_bef::reader::BefImage::from_bytes(bytes);
    let disassembly = bef_to_mlir(bytes, "hostile.bef");
    assert!(image.is_ok() || disassembly.is_err(), "the disassembler took a file the reader refuses");
    match disassembly {
        Ok(disassembly) => print_asm(&disassembly.module, AsmOptions::default()).is_ok(),
        Err(_) => false,
    }
}

#[test]
fn truncated_bef_is_an_error_unless_cut_after_a_whole_section_a_program_can_do_without() {
    for (path, bef) in translated() {
        let (ends, functions_end) = section_ends(&bef);
        let stride = (bef.len() / 300).max(1);
        for len in (0..bef.len()).step_by(stride).chain(ends.iter().copied().filter(|&end| end < bef.len())) {
            let whole = ends.contains(&len) && len >= functions_end;
            assert_eq!(disassemble(&bef[..len]), whole, "{} cut to {len} of {} bytes", path.display(), bef.len());
        }
    }
}

#[test]
fn flipped_bytes_never_make_the_reader_or_the_disassembler_panic() {
    for (_, bef) in translated() {
        let stride = (bef.len() / 400).max(1);
        for at in (0..bef.len()).step_by(stride) {
            for flip in [0x01, 0x80, 0xFF] {
                let mut corrupt = bef.clone();
                corrupt[at] ^= flip;
                disassemble(&corrupt);
            }
        }
    }
}
