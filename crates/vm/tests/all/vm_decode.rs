//! Decoding every function of every `.vmfb` fixture (IREE 3.13 output): the decoder must consume
//! each body exactly, pass the verifier, and agree with `iree-dump-module`'s
//! disassembly; and hostile variants of the same bytecode must fail with an error, never a panic.

use rtx_test_support::fixtures;

use std::collections::HashSet;
use std::path::PathBuf;

use rtx_vm::bytecode::decode::{decode_function, DecodedInstruction};
use rtx_vm::bytecode::verify::{verify_function, ModuleContext};
use rtx_vm::bytecode::InstructionKind;
use rtx_vm::Module;

fn load(path: &PathBuf) -> Module {
    Module::load_file(path).unwrap_or_else(|e| panic!("loading {}: {e}", path.display()))
}

/// Decodes function `ordinal` of `module`, which must succeed.
fn decode<'m>(module: &'m Module, name: &str, ordinal: usize) -> Vec<DecodedInstruction<'m>> {
    let bytecode = module.function_bytecode(ordinal).expect("descriptor range is verified by the loader");
    decode_function(bytecode).unwrap_or_else(|e| panic!("{name} function {ordinal}: {e}"))
}

#[test]
fn every_fixture_function_decodes_consistently() {
    let mut functions = 0;
    let mut seen = HashSet::new();
    for path in fixtures() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let module = load(&path);
        let context = ModuleContext::from_def(module.def());
        for (ordinal, descriptor) in module.function_descriptors().iter().enumerate() {
            let at = format!("{name} function {ordinal}");
            let decoded = decode(&module, &name, ordinal);
            let bytecode = module.function_bytecode(ordinal).expect("verified by the loader");
            functions += 1;

            // Contiguous, and exactly the descriptor's length.
            let mut end = 0;
            for instruction in &decoded {
                assert_eq!(instruction.offset, end, "{at}: gap before {instruction:?}");
                assert_eq!(instruction.operands.len(), instruction.instruction.operands.len(), "{at}");
                end += instruction.length;
            }
            assert_eq!(end, descriptor.bytecode_length as usize, "{at}: decoded length");

            for instruction in &decoded {
                seen.insert(instruction.instruction.name);
            }
            // Blocks, branch targets, register ranges and pairs, callees: the verifier's checks.
            verify_function(&context, ordinal, descriptor, &module.function_signatures()[ordinal], bytecode)
                .unwrap_or_else(|e| panic!("{at}: {e}"));
        }
    }
    assert!(functions >= 80, "only {functions} functions decoded");
    for expected in ["vm.call", "vm.call.variadic", "vm.br_table", "vm.cond_br", "vm.fail", "vm.add.f64", "vm.mul.f32"]
    {
        assert!(seen.contains(expected), "the fixtures should exercise {expected}");
    }
}

/// Per `vm.func` of an `iree-dump-module` dump, in order: the first `vm.` word of each instruction
/// line. Block labels (`^bbN:`) are the Block markers, which are counted separately.
fn dump_functions(dump: &str) -> Vec<(String, Vec<String>, usize)> {
    let mut functions = Vec::new();
    let mut current: Option<(String, Vec<String>, usize)> = None;
    for line in dump.lines() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("vm.func @") {
            let name = rest.split('(').next().unwrap_or_default().to_owned();
            current = Some((name, Vec::new(), 0));
            continue;
        }
        let Some(function) = current.as_mut() else { continue };
        if trimmed == "}" {
            functions.extend(current.take());
        } else if trimmed.starts_with('^') {
            function.2 += 1;
        } else if !trimmed.is_empty() {
            let statement = trimmed.split_once(" = ").map_or(trimmed, |(_, rhs)| rhs);
            let word = statement.split_whitespace().next().unwrap_or_default();
            assert!(word.starts_with("vm."), "unexpected disassembly line {line:?}");
            function.1.push(word.to_owned());
        }
    }
    assert!(current.is_none(), "unterminated vm.func in dump");
    functions
}

#[test]
fn mnemonics_match_the_disassembly() {
    let mut compared = 0;
    for path in fixtures() {
        let dump_path = path.with_extension("dump.txt");
        if !dump_path.exists() {
            continue; // the loader fixtures have no dumps
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let dump = std::fs::read_to_string(&dump_path).expect("readable dump");
        let module = load(&path);
        let dumped = dump_functions(&dump);
        // The dump prints the functions in internal-ordinal order.
        assert_eq!(dumped.len(), module.function_descriptors().len(), "{name}: functions in the dump");
        for (ordinal, (function, mnemonics, labels)) in dumped.iter().enumerate() {
            let decoded = decode(&module, &name, ordinal);
            let ours: Vec<&str> = decoded
                .iter()
                .filter(|i| i.instruction.kind != InstructionKind::BlockMarker)
                .map(|i| i.instruction.name)
                .collect();
            assert_eq!(ours, *mnemonics, "{name} function {ordinal} (@{function})");
            let blocks = decoded.iter().filter(|i| i.instruction.kind == InstructionKind::BlockMarker).count();
            assert_eq!(blocks, *labels, "{name} @{function}: block labels");
            compared += 1;
        }
    }
    assert!(compared >= 70, "only {compared} functions compared");
}

/// xorshift64: a fixed, dependency-free stream for reproducible corruptions.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn hostile_bytecode_is_an_error_not_a_panic() {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut corruptions = 0;
    let mut errors = 0;
    for path in fixtures() {
        let module = load(&path);
        for ordinal in 0..module.function_descriptors().len() {
            let bytecode = module.function_bytecode(ordinal).unwrap();
            for len in 0..bytecode.len() {
                let truncated = &bytecode[..len];
                if let Err(error) = decode_function(truncated) {
                    assert!(error.offset <= len, "{}: offset {} past {len}", path.display(), error.offset);
                    errors += 1;
                }
            }
            let mut copy = bytecode.to_vec();
            for _ in 0..40 {
                if copy.is_empty() {
                    break;
                }
                let at = (xorshift(&mut state) % copy.len() as u64) as usize;
                let value = xorshift(&mut state) as u8;
                let original = copy[at];
                copy[at] = value;
                if let Err(error) = decode_function(&copy) {
                    assert!(error.offset <= copy.len());
                    errors += 1;
                }
                copy[at] = original;
                corruptions += 1;
            }
        }
    }
    assert!(corruptions >= 3000, "only {corruptions} corruptions");
    assert!(errors > 0);
}
