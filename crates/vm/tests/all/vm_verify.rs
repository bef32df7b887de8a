//! The bytecode verifier on real IREE 3.13 output: every fixture verifies; copies of fixtures with
//! one field patched at an instruction found by the decoder are rejected with the expected message
//! and file offset; and single-byte corruptions of the bytecode never make loading panic.

use rtx_test_support::{fixture_dir, fixtures};

use rtx_vm::bytecode::decode::{decode_function, DecodedInstruction};
use rtx_vm::bytecode::verify::{verify_function, ModuleContext};
use rtx_vm::bytecode::{ImmediateType, InstructionKind, OpcodeSet, OperandKind, RegisterBank};
use rtx_vm::module_def::{FeatureBits, FunctionSignature};
use rtx_vm::{LoadError, Module};

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixture_dir("").join(name)).unwrap_or_else(|e| panic!("reading {name}: {e}"))
}

/// File offset of internal function `ordinal`'s first bytecode byte.
fn function_start(module: &Module, ordinal: usize) -> usize {
    module.def().bytecode_data.offset + module.function_descriptors()[ordinal].bytecode_offset as usize
}

/// Byte position, from the instruction start, of operand field `index`; every field before it
/// must have a fixed size.
fn field_position(instruction: &DecodedInstruction<'_>, index: usize) -> usize {
    let mut position = if instruction.instruction.set == OpcodeSet::Core { 1 } else { 2 };
    for field in &instruction.instruction.operands[..index] {
        position += match field.kind {
            OperandKind::Register { .. } | OperandKind::ConstI16 => 2,
            OperandKind::Immediate(ImmediateType::I32 | ImmediateType::F32) => 4,
            OperandKind::Immediate(ImmediateType::I64 | ImmediateType::F64) => 8,
            OperandKind::FunctionOrdinal
            | OperandKind::GlobalByteOffset
            | OperandKind::GlobalRefOrdinal
            | OperandKind::TypeId
            | OperandKind::RodataOrdinal
            | OperandKind::BranchTarget => 4,
            other => panic!("{}: variable-size field {other:?} before field {index}", instruction.instruction.name),
        };
    }
    position
}

/// A patch site: the first instruction (over all functions, in order) with a field that `pick`
/// accepts; returns (function ordinal, instruction offset, file offset of the field, mnemonic,
/// field name).
struct Site {
    function: usize,
    offset: usize,
    field_at: usize,
    name: &'static str,
    field: &'static str,
}

fn find_site(module: &Module, pick: impl Fn(&DecodedInstruction<'_>, usize) -> bool) -> Site {
    for ordinal in 0..module.function_descriptors().len() {
        let decoded = decode_function(module.function_bytecode(ordinal).unwrap()).unwrap();
        for instruction in &decoded {
            for index in 0..instruction.instruction.operands.len() {
                if pick(instruction, index) {
                    return Site {
                        function: ordinal,
                        offset: instruction.offset,
                        field_at: function_start(module, ordinal)
                            + instruction.offset
                            + field_position(instruction, index),
                        name: instruction.instruction.name,
                        field: instruction.instruction.operands[index].name,
                    };
                }
            }
        }
    }
    panic!("no instruction matches");
}

/// Only fixed-size fields before `index`, so its position can be computed.
fn fixed_prefix(instruction: &DecodedInstruction<'_>, index: usize) -> bool {
    instruction.instruction.operands[..index].iter().all(|field| {
        !matches!(
            field.kind,
            OperandKind::String
                | OperandKind::BranchOperands
                | OperandKind::BranchTableCases
                | OperandKind::VariadicOperands { .. }
                | OperandKind::VariadicResults { .. }
        )
    })
}

fn register_field(instruction: &DecodedInstruction<'_>, index: usize, wanted: RegisterBank) -> bool {
    matches!(instruction.instruction.operands[index].kind, OperandKind::Register { bank, .. } if bank == wanted)
        && fixed_prefix(instruction, index)
}

/// Loads `bytes` with the field at `site` overwritten by `value`; the load must fail at the
/// site's instruction, with a message containing every piece of `expected`.
fn expect_rejected(name: &str, bytes: &[u8], site: &Site, value: &[u8], expected: &[&str]) -> LoadError {
    let module = Module::load_memory(bytes).unwrap();
    let mut patched = bytes.to_vec();
    patched[site.field_at..site.field_at + value.len()].copy_from_slice(value);
    let error = Module::load_memory(&patched).expect_err(name);
    assert_eq!(error.offset, function_start(&module, site.function) + site.offset, "{name}: {error}");
    let function = format!("function {}", site.function);
    for piece in [function.as_str(), site.name, site.field].iter().chain(expected) {
        assert!(error.message.contains(piece), "{name}: `{piece}` missing from {error}");
    }
    error
}

#[test]
fn every_fixture_verifies() {
    let mut functions = 0;
    for path in fixtures() {
        let module = Module::load_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let context = ModuleContext::from_def(module.def());
        for (ordinal, descriptor) in module.function_descriptors().iter().enumerate() {
            let signature = &module.function_signatures()[ordinal];
            let bytecode = module.function_bytecode(ordinal).unwrap();
            verify_function(&context, ordinal, descriptor, signature, bytecode)
                .unwrap_or_else(|e| panic!("{} function {ordinal}: {e}", path.display()));
            functions += 1;
        }
    }
    assert!(functions >= 80, "only {functions} functions verified");
}

#[test]
fn register_out_of_range_is_rejected() {
    let bytes = read("integer_math.vmfb");
    let module = Module::load_memory(&bytes).unwrap();
    let site = find_site(&module, |i, k| i.instruction.name == "vm.add.i32" && register_field(i, k, RegisterBank::I32));
    let count = module.function_descriptors()[site.function].i32_register_count;
    let message = format!("i32 register {count} is out of range");
    expect_rejected("i32 out of range", &bytes, &site, &count.to_le_bytes(), &[&message]);

    let bytes = read("lists.vmfb");
    let module = Module::load_memory(&bytes).unwrap();
    let site = find_site(&module, |i, k| register_field(i, k, RegisterBank::Ref));
    let count = module.function_descriptors()[site.function].ref_register_count;
    let message = format!("ref register {count} is out of range");
    expect_rejected("ref out of range", &bytes, &site, &(count | 0x8000).to_le_bytes(), &[&message]);
}

#[test]
fn odd_and_overhanging_i64_pairs_are_rejected() {
    let bytes = read("integer_math.vmfb");
    let module = Module::load_memory(&bytes).unwrap();
    let site = find_site(&module, |i, k| i.instruction.name == "vm.add.i64" && register_field(i, k, RegisterBank::I64));
    expect_rejected("odd pair", &bytes, &site, &1u16.to_le_bytes(), &["starts at odd i32 register 1"]);
    let count = module.function_descriptors()[site.function].i32_register_count;
    let last_even = (count - 1) & !1;
    if count % 2 == 1 {
        // The pair's second register would be `count`.
        expect_rejected("overhanging pair", &bytes, &site, &last_even.to_le_bytes(), &["is out of range"]);
    } else {
        expect_rejected("pair past the end", &bytes, &site, &count.to_le_bytes(), &["is out of range"]);
    }
}

#[test]
fn wrong_bank_is_rejected() {
    let bytes = read("integer_math.vmfb");
    let module = Module::load_memory(&bytes).unwrap();
    let site = find_site(&module, |i, k| i.instruction.name == "vm.add.i32" && register_field(i, k, RegisterBank::I32));
    expect_rejected("ref in an i32 field", &bytes, &site, &0x8000u16.to_le_bytes(), &["is a ref register"]);

    let bytes = read("lists.vmfb");
    let module = Module::load_memory(&bytes).unwrap();
    let site = find_site(&module, |i, k| register_field(i, k, RegisterBank::Ref));
    expect_rejected("int in a ref field", &bytes, &site, &0u16.to_le_bytes(), &["is an integer register"]);
}

#[test]
fn branch_into_an_instruction_is_rejected() {
    let bytes = read("control_flow.vmfb");
    let module = Module::load_memory(&bytes).unwrap();
    let site = find_site(&module, |i, k| {
        i.instruction.name == "vm.br" && i.instruction.operands[k].kind == OperandKind::BranchTarget
    });
    let decoded = decode_function(module.function_bytecode(site.function).unwrap()).unwrap();
    let target = decoded.iter().find(|i| i.offset == site.offset).unwrap().branch_targets()[0];
    let inside = target + 1;
    let message = format!("branch target {inside} is not a Block marker");
    expect_rejected("br into an instruction", &bytes, &site, &inside.to_le_bytes(), &[&message]);
}

#[test]
fn call_ordinal_out_of_range_is_rejected() {
    let bytes = read("calls.vmfb");
    let module = Module::load_memory(&bytes).unwrap();
    let site = find_site(&module, |i, k| {
        i.instruction.name == "vm.call" && i.instruction.operands[k].kind == OperandKind::FunctionOrdinal
    });
    let count = module.function_descriptors().len() as u32;
    let message = format!("function ordinal {count} is out of range");
    expect_rejected("internal callee", &bytes, &site, &count.to_le_bytes(), &[&message]);
    let imports = module.imported_functions().len() as u32;
    let message = format!("import ordinal {imports} is out of range");
    expect_rejected("import callee", &bytes, &site, &(imports | 0x8000_0000).to_le_bytes(), &[&message]);
}

#[test]
fn global_offset_beyond_capacity_is_rejected() {
    let bytes = read("globals.vmfb");
    let module = Module::load_memory(&bytes).unwrap();
    let capacity = module.module_state().global_bytes_capacity;
    for (mnemonic, width) in [("vm.global.load.i32", 4u32), ("vm.global.store.i64", 8)] {
        let site = find_site(&module, |i, k| {
            i.instruction.name == mnemonic
                && i.instruction.operands[k].kind == OperandKind::GlobalByteOffset
                && fixed_prefix(i, k)
        });
        // The last offset where the access still fits is accepted, one byte further is not.
        let mut patched = bytes.clone();
        patched[site.field_at..site.field_at + 4].copy_from_slice(&(capacity - width).to_le_bytes());
        Module::load_memory(&patched).unwrap_or_else(|e| panic!("{mnemonic} at the end of the globals: {e}"));
        let offset = capacity - width + 1;
        let message = format!("global bytes {offset}..{} lie beyond", offset + width);
        expect_rejected(mnemonic, &bytes, &site, &offset.to_le_bytes(), &[&message]);
    }
}

/// The file offset of function `ordinal`'s `FunctionDescriptor` struct, found by its contents
/// (offset, length, requirements, u16 reserved, block_count, i32 and ref register counts; 20 bytes).
fn descriptor_position(bytes: &[u8], module: &Module, ordinal: usize) -> usize {
    let d = module.function_descriptors()[ordinal];
    let mut pattern = Vec::new();
    pattern.extend_from_slice(&d.bytecode_offset.to_le_bytes());
    pattern.extend_from_slice(&d.bytecode_length.to_le_bytes());
    pattern.extend_from_slice(&d.requirements.0.to_le_bytes());
    pattern.extend_from_slice(&0u16.to_le_bytes());
    pattern.extend_from_slice(&d.block_count.to_le_bytes());
    pattern.extend_from_slice(&d.i32_register_count.to_le_bytes());
    pattern.extend_from_slice(&d.ref_register_count.to_le_bytes());
    let hits: Vec<usize> =
        bytes.windows(pattern.len()).enumerate().filter(|(_, w)| *w == pattern).map(|(i, _)| i).collect();
    assert_eq!(hits.len(), 1, "descriptor {ordinal} should occur exactly once");
    hits[0]
}

#[test]
fn block_count_mismatch_is_rejected() {
    let bytes = read("control_flow.vmfb");
    let module = Module::load_memory(&bytes).unwrap();
    let ordinal = module.function_descriptors().iter().position(|d| d.block_count > 1).unwrap();
    let blocks = module.function_descriptors()[ordinal].block_count;
    let at = descriptor_position(&bytes, &module, ordinal) + 14;
    let mut patched = bytes.clone();
    patched[at..at + 2].copy_from_slice(&(blocks + 1).to_le_bytes());
    let error = Module::load_memory(&patched).unwrap_err();
    assert_eq!(error.offset, function_start(&module, ordinal), "{error}");
    let message = format!("has {blocks} Block markers but the descriptor's block_count is {}", blocks + 1);
    assert!(error.message.contains(&message) && error.message.contains(&format!("function {ordinal}")), "{error}");
}

#[test]
fn missing_terminator_is_rejected() {
    let bytes = read("integer_math.vmfb");
    let module = Module::load_memory(&bytes).unwrap();
    let context = ModuleContext::from_def(module.def());
    // A function whose second-to-last instruction is not a terminator: cut the body before the
    // last one, in the descriptor (through the loader) and directly.
    let (ordinal, last, previous) = (0..module.function_descriptors().len())
        .find_map(|ordinal| {
            let decoded = decode_function(module.function_bytecode(ordinal).unwrap()).unwrap();
            let [.., previous, last] = decoded.as_slice() else { return None };
            let simple =
                previous.instruction.kind == InstructionKind::Operation && !previous.instruction.id.is_terminator();
            simple.then_some((ordinal, last.offset, (previous.offset, previous.instruction.name)))
        })
        .unwrap();
    let mut descriptor = module.function_descriptors()[ordinal];
    descriptor.bytecode_length = last as u32;
    let body = &module.function_bytecode(ordinal).unwrap()[..last];
    let signature = &module.function_signatures()[ordinal];
    let error = verify_function(&context, ordinal, &descriptor, signature, body).unwrap_err();
    assert_eq!(error.offset, previous.0, "{error}");
    assert!(error.message.contains(previous.1) && error.message.contains("not a terminator"), "{error}");

    let at = descriptor_position(&bytes, &module, ordinal) + 4;
    let mut patched = bytes.clone();
    patched[at..at + 4].copy_from_slice(&(last as u32).to_le_bytes());
    let error = Module::load_memory(&patched).unwrap_err();
    assert_eq!(error.offset, function_start(&module, ordinal) + previous.0, "{error}");
    assert!(error.message.contains("not a terminator"), "{error}");
}

#[test]
fn arguments_must_fit_the_frame() {
    let bytes = read("calls.vmfb");
    let module = Module::load_memory(&bytes).unwrap();
    let context = ModuleContext::from_def(module.def());
    let ordinal = 0;
    let bytecode = module.function_bytecode(ordinal).unwrap();
    let descriptor = module.function_descriptors()[ordinal];
    let count = descriptor.i32_register_count;
    // `count` i32 arguments fit exactly; one more does not; an i64 after an odd count is aligned.
    let fits =
        FunctionSignature { calling_convention: Some(format!("0{}_v", "i".repeat(count.into()))), attrs: vec![] };
    verify_function(&context, ordinal, &descriptor, &fits, bytecode).unwrap();
    let cconv = format!("0{}_v", "i".repeat(usize::from(count) + 1));
    let too_many = FunctionSignature { calling_convention: Some(cconv.clone()), attrs: vec![] };
    let error = verify_function(&context, ordinal, &descriptor, &too_many, bytecode).unwrap_err();
    assert_eq!(error.offset, 0);
    assert!(error.message.contains(&cconv) && error.message.contains("needs"), "{error}");
    let refs = FunctionSignature {
        calling_convention: Some(format!("0{}_v", "r".repeat(usize::from(descriptor.ref_register_count) + 1))),
        attrs: vec![],
    };
    assert!(verify_function(&context, ordinal, &descriptor, &refs, bytecode).is_err());
    let variadic = FunctionSignature { calling_convention: Some("0CiD_v".into()), attrs: vec![] };
    assert!(verify_function(&context, ordinal, &descriptor, &variadic, bytecode).is_err());
}

/// xorshift64: a fixed, dependency-free stream for reproducible corruptions.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn corrupted_bytecode_loads_or_fails_without_panicking() {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let (mut loads, mut rejections) = (0, 0);
    for path in fixtures() {
        let bytes = std::fs::read(&path).unwrap();
        let module = Module::load_memory(&bytes).unwrap();
        let range = module.def().bytecode_data;
        assert!(range.len > 0, "{} has no bytecode", path.display());
        let mut copy = bytes.clone();
        for _ in 0..300 {
            let at = range.offset + (xorshift(&mut state) % range.len as u64) as usize;
            let value = xorshift(&mut state) as u8;
            let original = copy[at];
            copy[at] = if value == original { !value } else { value };
            match Module::load_memory(&copy) {
                Ok(_) => loads += 1,
                Err(error) => {
                    assert!(error.offset < copy.len(), "{}: offset past the file: {error}", path.display());
                    rejections += 1;
                }
            }
            copy[at] = original;
        }
    }
    assert!(loads + rejections >= 3000);
    assert!(rejections > loads / 4, "only {rejections} of {} corruptions rejected", loads + rejections);
}

#[test]
fn blocks_are_delimited_by_terminators() {
    use rtx_vm::bytecode::isa::find_by_name;
    use rtx_vm::module_def::{FeatureBits, FunctionDescriptor};

    let zero = find_by_name("vm.const.i32.zero").unwrap().opcode;
    let ret = find_by_name("vm.return").unwrap().opcode;
    let context = ModuleContext {
        internal_function_count: 1,
        import_count: 0,
        global_bytes_capacity: 0,
        global_ref_count: 0,
        type_count: 0,
        rodata_segment_count: 0,
        exports: &[],
    };
    let descriptor = |block_count| FunctionDescriptor {
        bytecode_offset: 0,
        bytecode_length: 0,
        requirements: FeatureBits(0),
        block_count,
        i32_register_count: 1,
        ref_register_count: 0,
    };
    let signature = FunctionSignature { calling_convention: Some("0v_v".into()), attrs: vec![] };
    let verify = |body: &[u8], blocks| verify_function(&context, 0, &descriptor(blocks), &signature, body);

    // ^bb0: %i0 = vm.const.i32.zero; vm.return
    verify(&[0x79, zero, 0, 0, ret, 0, 0, 0], 1).unwrap();
    // ^bb0: %i0 = zero; ^bb1: vm.return — the first block falls through.
    let error = verify(&[0x79, zero, 0, 0, 0x79, ret, 0, 0], 2).unwrap_err();
    assert_eq!(error.offset, 1, "{error}");
    assert!(error.message.contains("vm.const.i32.zero") && error.message.contains("falls through"), "{error}");
    // ^bb0: vm.return; %i0 = zero; vm.return — code after a terminator outside any block.
    let error = verify(&[0x79, ret, 0, 0, zero, 0, 0, ret, 0, 0], 1).unwrap_err();
    assert_eq!(error.offset, 4, "{error}");
    assert!(error.message.contains("follows the terminator vm.return"), "{error}");
    // Not starting with a Block marker; empty.
    let error = verify(&[ret, 0, 0, 0], 0).unwrap_err();
    assert!(error.message.contains("starts with vm.return instead of a Block marker"), "{error}");
    assert!(verify(&[], 0).unwrap_err().message.contains("empty"));
    // A decode error keeps its offset and gains the function's name.
    let error = verify(&[0x79, zero, 0], 1).unwrap_err();
    assert!(error.message.starts_with("function 0: vm.const.i32.zero"), "{error}");
}

#[test]
fn extension_opcodes_need_the_declared_requirement() {
    let bytes = read("float_math.vmfb");
    let module = Module::load_memory(&bytes).unwrap();
    let ordinal = module
        .function_descriptors()
        .iter()
        .position(|d| d.requirements.contains(FeatureBits::EXT_F32))
        .expect("float_math has an EXT_F32 function");
    let at = descriptor_position(&bytes, &module, ordinal) + 8;
    let mut patched = bytes.clone();
    patched[at..at + 4].copy_from_slice(&0u32.to_le_bytes());
    let error = Module::load_memory(&patched).unwrap_err();
    assert!(error.message.contains("needs the EXT_F32 extension"), "{error}");
    assert!(error.offset >= function_start(&module, ordinal), "{error}");
}
