//! Every instruction the loop compiler accepts, run as machine code on edge-case operands and
//! compared bit for bit with what the interpreter computes for it.
//!
//! Branches, constants and whole loops are covered by the VM fixtures, which `tests/all/vm_run.rs`
//! runs with compiled code entered at every block (`RTX_VM_JIT=all`) as well as by default.

use std::collections::HashMap;

use super::{compile, Callee, CodeMemory, Compiled, Entries, Entry, Exit, Scope, Span, SpanOf, RESULT_WORDS};
use crate::bytecode::decode::{DecodedInstruction, DecodedOperand, Register};
use crate::bytecode::isa::{self, find_by_name, Instruction, Jit, Opcode, OperandKind, RegisterBank, Transfer, Width};
use crate::interpreter::lower::generic_scalar_op;
use crate::interpreter::op::{Op, Reg};

const BANK: usize = 16;

/// A module of one function (the one under test) that takes and returns nothing.
fn lone() -> Vec<Callee> {
    vec![Callee { frame: BANK as u16, arguments: vec![], results: vec![], callable: false }]
}

/// Enters `compiled` at its only entry, `op`, on `regs`, with a register stack for calls of
/// its own and `buffers` for the buffer registers it reads.
fn enter(memory: &CodeMemory, compiled: &Compiled, op: u32, regs: &mut [u32], budget: u64, buffers: &[Span]) -> Exit {
    let [(entered, offset)] = compiled.entries[..] else { panic!("one entry: {:?}", compiled.entries) };
    assert_eq!(entered, op);
    let mut stack = vec![0u32; 64 + RESULT_WORDS as usize];
    // SAFETY: `offset` is the entry stub the compiler reported for `op`.
    let entry = unsafe { std::mem::transmute::<*const u8, Entry>(memory.at(offset as usize)) };
    assert_eq!(buffers.len(), compiled.spans.len(), "a span per buffer register");
    // SAFETY: the code touches only the registers of its frame, which the callers size, and the
    // bytes `buffers` allow, and calls nothing; the stack's limit leaves `RESULT_WORDS` after it.
    unsafe { entry(regs.as_mut_ptr(), budget, stack.as_mut_ptr(), stack.as_mut_ptr().add(64), 8, buffers.as_ptr()) }
}

const VALUES32: &[u32] = &[
    0,
    1,
    2,
    7,
    31,
    32,
    33,
    63,
    64,
    0x7F,
    0x80,
    0xFF,
    0x7FFF,
    0x8000,
    0xFFFF,
    0x7FFF_FFFF,
    0x8000_0000,
    0xFFFF_FFFF,
    0xFFFF_FFF9, // -7
    0x3FC0_0000, // 1.5
    0xC010_0000, // -2.25
    0x7F80_0000, // inf
    0xFF80_0000, // -inf
    0x7FC0_0000, // NaN
    0x7FA0_0001, // signalling NaN with a payload
    0xFFC1_2345, // negative NaN with a payload
    0x0000_0001, // smallest subnormal
    0x7F7F_FFFF, // largest finite
    0x4B00_0001, // 2^23 + 1
];

const VALUES64: &[u64] = &[
    0,
    1,
    2,
    7,
    63,
    64,
    65,
    0x7FFF_FFFF,
    0x8000_0000,
    0xFFFF_FFFF,
    0x1_0000_0000,
    i64::MAX as u64,
    i64::MIN as u64,
    u64::MAX,
    -7i64 as u64,
    0x3FF8_0000_0000_0000, // 1.5
    0xC002_0000_0000_0000, // -2.25
    0x7FF0_0000_0000_0000, // inf
    0xFFF0_0000_0000_0000, // -inf
    0x7FF8_0000_0000_0000, // NaN
    0x7FF4_0000_0000_0001, // signalling NaN with a payload
    0x0000_0000_0000_0001, // smallest subnormal
    0x7FEF_FFFF_FFFF_FFFF, // largest finite
    0x8000_0000_0000_0000, // -0.0
];

fn is_pair(bank: RegisterBank) -> bool {
    matches!(bank, RegisterBank::I64 | RegisterBank::F64)
}

/// The register banks of an instruction whose operands are all scalar registers.
fn scalar_shape(instruction: &Instruction) -> Option<Vec<RegisterBank>> {
    let banks: Option<Vec<RegisterBank>> = instruction
        .operands
        .iter()
        .map(|operand| match operand.kind {
            OperandKind::Register { bank, .. } if bank != RegisterBank::Ref => Some(bank),
            _ => None,
        })
        .collect();
    banks.filter(|b| !b.is_empty())
}

fn register(ordinal: u16) -> DecodedOperand<'static> {
    banked(ordinal, RegisterBank::I32)
}

/// A register field of `bank`, as the decoder types it from the table.
fn banked(ordinal: u16, bank: RegisterBank) -> DecodedOperand<'static> {
    DecodedOperand::Register(Register::with_bank(ordinal, bank))
}

/// The op before the instruction under test, which is where the code is entered (compiled code
/// is never entered at an op that may leave before finishing).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Lead {
    /// `%i0 = 0`, touching no operand.
    Zero,
    /// Rewrites operand k with its own value (`x | x`, `min(x, x)`), which leaves it in a machine
    /// register: the instruction then reads it from there.
    Hold(usize),
}

/// `lead`, then `instruction` with operand k in register 2 + 2k (even, so pairs fit), then
/// `vm.return`.
fn function(instruction: &'static Instruction, banks: &[RegisterBank], lead: Lead) -> Vec<DecodedInstruction<'static>> {
    let find = |name| find_by_name(name).expect("in the ISA table");
    let slot = |k: usize| 2 + 2 * k as u16;
    let first = match lead {
        Lead::Zero => DecodedInstruction {
            offset: 0,
            length: 0,
            instruction: find("vm.const.i32.zero"),
            operands: vec![register(0)],
        },
        Lead::Hold(k) => DecodedInstruction {
            offset: 0,
            length: 0,
            instruction: find(match banks[k] {
                RegisterBank::I64 => "vm.or.i64",
                RegisterBank::F32 => "vm.min.f32",
                RegisterBank::F64 => "vm.min.f64",
                _ => "vm.or.i32",
            }),
            operands: vec![banked(slot(k), banks[k]); 3],
        },
    };
    vec![
        first,
        DecodedInstruction {
            offset: 4,
            length: 0,
            instruction,
            operands: (0..banks.len()).map(|k| banked(slot(k), banks[k])).collect(),
        },
        DecodedInstruction {
            offset: 8,
            length: 0,
            instruction: find("vm.return"),
            operands: vec![DecodedOperand::Registers(vec![])],
        },
    ]
}

fn r64(regs: &[u32], r: Reg) -> u64 {
    u64::from(regs[r as usize]) | u64::from(regs[r as usize + 1]) << 32
}

fn w64(regs: &mut [u32], r: Reg, value: u64) {
    regs[r as usize] = value as u32;
    regs[r as usize + 1] = (value >> 32) as u32;
}

/// What the interpreter computes; false for a division it fails.
fn interpret(opcode: Opcode, op: Option<&Op>, regs: &mut [u32]) -> bool {
    match opcode.instruction().transfer {
        Some((Transfer::ConstZero, width)) => {
            w64(regs, 2, 0);
            if width == Width::W32 {
                regs[3] = 0x5A5A_5A5A; // untouched: the test's fill
            }
            return true;
        }
        Some((Transfer::Select, width)) => {
            let (c, t, f, d) = (2, 4, 6, 8);
            if width == Width::W64 {
                let v = if regs[c] != 0 { r64(regs, t as Reg) } else { r64(regs, f as Reg) };
                w64(regs, d, v);
            } else {
                regs[d as usize] = if regs[c] != 0 { regs[t] } else { regs[f] };
            }
            return true;
        }
        _ => {}
    }
    let name = opcode.name();
    let op = op.unwrap_or_else(|| panic!("{name} compiles but has no interpreter op to compare with"));
    let g = |r: Reg| regs[r as usize];
    match *op {
        Op::Un32 { f, a, d } => regs[d as usize] = f(g(a)),
        Op::Bin32 { f, a, b, d } => regs[d as usize] = f(g(a), g(b)),
        Op::Tern32 { f, a, b, c, d } => regs[d as usize] = f(g(a), g(b), g(c)),
        Op::Un64 { f, a, d } => w64(regs, d, f(r64(regs, a))),
        Op::Bin64 { f, a, b, d } => w64(regs, d, f(r64(regs, a), r64(regs, b))),
        Op::Tern64 { f, a, b, c, d } => w64(regs, d, f(r64(regs, a), r64(regs, b), r64(regs, c))),
        Op::Shift64 { f, a, b, d } => w64(regs, d, f(r64(regs, a), g(b))),
        Op::Narrow { f, a, d } => regs[d as usize] = f(r64(regs, a)),
        Op::Widen { f, a, d } => w64(regs, d, f(g(a))),
        Op::Cmp64 { f, a, b, d } => regs[d as usize] = f(r64(regs, a), r64(regs, b)),
        Op::Div32 { f, a, b, d } => match f(g(a), g(b)) {
            Some(v) => regs[d as usize] = v,
            None => return false,
        },
        Op::Div64 { f, a, b, d } => match f(r64(regs, a), r64(regs, b)) {
            Some(v) => w64(regs, d, v),
            None => return false,
        },
        ref other => panic!("{name}: no reference for {other:?}"),
    }
    true
}

/// Float results that are both NaNs (of any payload).
fn both_nan(bank: RegisterBank, got: &[u32], expected: &[u32]) -> bool {
    match bank {
        RegisterBank::F32 => f32::from_bits(got[0]).is_nan() && f32::from_bits(expected[0]).is_nan(),
        RegisterBank::F64 => f64::from_bits(r64(got, 0)).is_nan() && f64::from_bits(r64(expected, 0)).is_nan(),
        _ => false,
    }
}

/// Every combination of edge values for the inputs (the last operand is the result).
fn inputs(banks: &[RegisterBank]) -> Vec<[u32; BANK]> {
    let mut all = vec![[0x5A5A_5A5Au32; BANK]];
    let reads = &banks[..banks.len() - 1];
    // Three inputs: a thinner sample keeps the product small.
    let step = if reads.len() > 2 { 3 } else { 1 };
    for (k, &bank) in reads.iter().enumerate() {
        let r = 2 + 2 * k;
        let mut next = Vec::new();
        for regs in &all {
            if is_pair(bank) {
                for &v in VALUES64.iter().step_by(step) {
                    let mut regs = *regs;
                    w64(&mut regs, r as Reg, v);
                    next.push(regs);
                }
            } else {
                for &v in VALUES32.iter().step_by(step) {
                    let mut regs = *regs;
                    regs[r] = v;
                    next.push(regs);
                }
            }
        }
        all = next;
    }
    all
}

#[test]
fn compiled_instructions_match_the_interpreter() {
    let mut checked = Vec::new();
    for instruction in isa::instructions() {
        let Some(banks) = scalar_shape(instruction) else { continue };
        let reads = banks.len() - 1;
        let leads = [Lead::Zero, Lead::Hold(0), Lead::Hold(1)];
        for lead in leads.into_iter().filter(|lead| !matches!(lead, Lead::Hold(k) if *k >= reads)) {
            let decoded = function(instruction, &banks, lead);
            let callees = lone();
            let scope = Scope { function: 0, callees: &callees };
            let Some(compiled) =
                compile(&decoded, &[Some(0), Some(1), Some(2)], &HashMap::new(), Entries::Everywhere, &scope)
            else {
                panic!("{}: the lead op did not compile", instruction.name);
            };
            if lead == Lead::Zero {
                // The const is `mov dword [rdi], 0` (7 bytes); an instruction the compiler does
                // not handle is `mov eax, 1; mov rdx, rsi; ret` after it (back to the
                // interpreter at op 1, budget untouched).
                assert_eq!(compiled.code[..7], [0xC7, 0x47, 0, 0, 0, 0, 0]);
                let left = compiled.code[7..].starts_with(&[0xB8, 1, 0, 0, 0, 0x48, 0x8B, 0xD6, 0xC3]);
                assert_eq!(left, instruction.jit == Jit::Interpret, "{}: {:?}", instruction.name, instruction.jit);
                if left {
                    break;
                }
                checked.push(instruction.name);
            }
            check(instruction.name, &banks, lead, &decoded, &compiled);
        }
    }
    // The loop shapes real programs use must all be among the compiled instructions.
    for name in
        ["vm.add.i32", "vm.fma.i64", "vm.cmp.lt.i32.s", "vm.div.i64.s", "vm.mul.f32", "vm.cmp.lte.f64.u", "vm.shl.i64"]
    {
        assert!(checked.contains(&name), "{name} is not compiled");
    }
    assert!(checked.len() >= 80, "only {} instructions compiled: {checked:?}", checked.len());
}

/// Runs the compiled `decoded` on every input and compares with the interpreter.
fn check(name: &str, banks: &[RegisterBank], lead: Lead, decoded: &[DecodedInstruction<'_>], compiled: &Compiled) {
    let memory = CodeMemory::new(&compiled.code).expect("executable memory");
    let op = generic_scalar_op(&decoded[1]);
    let result = 2 + 2 * (banks.len() - 1);
    for mut input in inputs(banks) {
        if lead == Lead::Zero {
            input[0] = 0; // what the lead writes
        }
        let mut expected = input;
        let completes = interpret(decoded[1].opcode(), op.as_ref(), &mut expected);
        let mut got = input;
        if lead == Lead::Zero {
            got[0] = 0x5A5A_5A5A;
        }
        // The code touches only registers 0..=2 + 2 * operands + 1 < BANK.
        let exit = enter(&memory, compiled, 0, &mut got, 7, &[]);
        assert_eq!(exit.budget, 7, "{name}: no backward branch, nothing spent");
        let resume = exit.op;
        if resume == 1 {
            // Left to the interpreter: only divisions by zero or by -1 may do that.
            let (divisor, minus_one) =
                if is_pair(banks[1]) { (r64(&input, 4), u64::MAX) } else { (u64::from(input[4]), 0xFFFF_FFFF) };
            let Jit::IntDivide { signed, .. } = decoded[1].instruction.jit else {
                panic!("{name} left the compiled code on {input:x?}")
            };
            assert!(divisor == 0 || (signed && divisor == minus_one), "{name} left the compiled code on {input:x?}");
            assert_eq!(got, input, "{name} changed registers before leaving");
            continue;
        }
        assert_eq!(resume, 2, "{name} resumed at the wrong op");
        assert!(completes, "{name} completed where the interpreter fails, on {input:x?}");
        let width = if is_pair(banks[banks.len() - 1]) { 2 } else { 1 };
        if both_nan(banks[banks.len() - 1], &got[result..], &expected[result..]) {
            // Which NaN operand's payload comes out is not defined (IEEE 754, Rust's float
            // semantics): LLVM may swap a commutative operation's operands, and does.
            continue;
        }
        assert_eq!(
            got[result..result + width],
            expected[result..result + width],
            "{name} ({lead:?}) on {:x?}",
            &input[2..result]
        );
        assert_eq!(got, expected, "{name} ({lead:?}) wrote outside its result on {input:x?}");
    }
}

/// `do { i += step } while (i < n)` as one block branching back to itself, then a return.
fn counting_loop() -> (Vec<DecodedInstruction<'static>>, Vec<Option<u32>>, HashMap<u32, u32>) {
    let find = |name| find_by_name(name).expect("in the ISA table");
    let marker = |offset| DecodedInstruction { offset, length: 1, instruction: find("Block"), operands: vec![] };
    let at = |offset, name, operands| DecodedInstruction { offset, length: 1, instruction: find(name), operands };
    let decoded = vec![
        marker(0),
        at(1, "vm.add.i32", vec![register(0), register(2), register(0)]),
        at(2, "vm.cmp.lt.i32.s", vec![register(0), register(6), register(4)]),
        at(
            3,
            "vm.cond_br",
            vec![
                register(4),
                DecodedOperand::BranchTarget(0),
                DecodedOperand::BranchOperands(vec![]),
                DecodedOperand::BranchTarget(4),
                DecodedOperand::BranchOperands(vec![]),
            ],
        ),
        marker(4),
        at(5, "vm.return", vec![DecodedOperand::Registers(vec![])]),
    ];
    let starts = vec![None, Some(0), Some(1), Some(2), None, Some(3)];
    (decoded, starts, HashMap::from([(0, 0), (4, 3)]))
}

#[test]
fn loops_run_whole_and_spend_one_unit_per_backward_branch() {
    let (decoded, starts, blocks) = counting_loop();
    let callees = lone();
    let scope = Scope { function: 0, callees: &callees };
    let compiled = compile(&decoded, &starts, &blocks, Entries::Loops, &scope).expect("the loop compiles");
    let memory = CodeMemory::new(&compiled.code).expect("executable memory");
    let run = |budget| {
        let mut regs = [0u32; 8];
        (regs[2], regs[6]) = (1, 10);
        // The code touches registers 0..=6 of 8.
        let exit = enter(&memory, &compiled, 0, &mut regs, budget, &[]);
        (regs[0], exit)
    };
    // Ten adds, nine branches back, then out to the return (op 3).
    assert_eq!(run(100), (10, Exit { op: 3, budget: 91 }));
    assert_eq!(run(9), (10, Exit { op: 3, budget: 0 }));
    // With three units the fourth branch back finds none left: the interpreter is told to fail
    // at the branch (op 2), which has not run.
    let (count, exit) = run(3);
    assert_eq!((count, exit.budget), (4, 0));
    assert_eq!(exit.error(), Some(super::Fault { kind: Exit::BRANCH_BUDGET, function: 0, op: 2 }));
    assert_eq!(run(u64::MAX).1.budget, u64::MAX - 9);
}

/// A typed buffer access: its name, element bytes, and whether it stores.
const BUFFER_ACCESSES: &[(&str, u32, bool)] = &[
    ("vm.buffer.load.i8.u", 1, false),
    ("vm.buffer.load.i8.s", 1, false),
    ("vm.buffer.load.i16.u", 2, false),
    ("vm.buffer.load.i16.s", 2, false),
    ("vm.buffer.load.i32", 4, false),
    ("vm.buffer.load.f32", 4, false),
    ("vm.buffer.load.i64", 8, false),
    ("vm.buffer.load.f64", 8, false),
    ("vm.buffer.store.i8", 1, true),
    ("vm.buffer.store.i16", 2, true),
    ("vm.buffer.store.i32", 4, true),
    ("vm.buffer.store.f32", 4, true),
    ("vm.buffer.store.i64", 8, true),
    ("vm.buffer.store.f64", 8, true),
];

/// `%i0 = 0`, then `name` on `operands`, then `vm.return`, compiled to be entered at the zero.
fn after_zero(name: &str, operands: Vec<DecodedOperand<'static>>) -> Compiled {
    let find = |name| find_by_name(name).expect("in the ISA table");
    let at = |offset, name, operands| DecodedInstruction { offset, length: 0, instruction: find(name), operands };
    let decoded = vec![
        at(0, "vm.const.i32.zero", vec![register(0)]),
        at(4, name, operands),
        at(8, "vm.return", vec![DecodedOperand::Registers(vec![])]),
    ];
    let callees = lone();
    let scope = Scope { function: 0, callees: &callees };
    compile(&decoded, &[Some(0), Some(1), Some(2)], &HashMap::new(), Entries::Everywhere, &scope)
        .unwrap_or_else(|| panic!("{name}: nothing compiled"))
}

/// `name %r1, %i2:3, %i4[:5]` after a zero.
fn buffer_function(name: &str, size: u32) -> Compiled {
    let value = if size == 8 { RegisterBank::I64 } else { RegisterBank::I32 };
    let compiled = after_zero(name, vec![banked(1, RegisterBank::Ref), banked(2, RegisterBank::I64), banked(4, value)]);
    assert_eq!(compiled.spans, [SpanOf::Buffer(1)], "{name}: one buffer register");
    assert!(!compiled.whole, "{name}: code that reads buffers is never called natively");
    compiled
}

/// What the interpreter does for the access: the loaded register value, or the store made on
/// `buffer`; `None` where it raises an error.
fn interpret_access(name: &str, buffer: &crate::buffer::ByteBuffer, offset: i64, value: u64) -> Option<u64> {
    let ok = |result: Result<i32, _>| result.ok().map(|v| u64::from(v as u32));
    match name {
        "vm.buffer.load.i8.u" => ok(buffer.load_i8_u(offset)),
        "vm.buffer.load.i8.s" => ok(buffer.load_i8_s(offset)),
        "vm.buffer.load.i16.u" => ok(buffer.load_i16_u(offset)),
        "vm.buffer.load.i16.s" => ok(buffer.load_i16_s(offset)),
        "vm.buffer.load.i32" | "vm.buffer.load.f32" => ok(buffer.load_i32(offset)),
        "vm.buffer.load.i64" | "vm.buffer.load.f64" => buffer.load_i64(offset).ok().map(|v| v as u64),
        "vm.buffer.store.i8" => buffer.store_i8(offset, value as i8).ok().map(|()| 0),
        "vm.buffer.store.i16" => buffer.store_i16(offset, value as i16).ok().map(|()| 0),
        "vm.buffer.store.i32" | "vm.buffer.store.f32" => buffer.store_i32(offset, value as i32).ok().map(|()| 0),
        "vm.buffer.store.i64" | "vm.buffer.store.f64" => buffer.store_i64(offset, value as i64).ok().map(|()| 0),
        _ => panic!("{name} is not a buffer access"),
    }
}

/// The bytes of a buffer, read as the interpreter would.
fn contents(buffer: &crate::buffer::ByteBuffer) -> Vec<i32> {
    (0..buffer.len() as i64).map(|i| buffer.load_i8_u(i).expect("in range")).collect()
}

/// Element offsets in and around a buffer of `count` elements, and the extremes.
fn offsets_around(count: i64) -> Vec<i64> {
    let mut offsets = vec![-2, -1, 0, 1, count - 1, count, count + 1, i64::MIN, i64::MAX, 1 << 61, -(1 << 61)];
    offsets.retain(|&o| o != -2 || count > 0);
    offsets
}

#[test]
fn buffer_accesses_match_the_interpreter() {
    use crate::buffer::ByteBuffer;
    use crate::refs::Ref;
    let rodata = std::sync::Arc::new(
        crate::Module::load_file(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/vm/buffers.vmfb"))
            .expect("the buffers fixture loads"),
    );
    for &(name, size, stores) in BUFFER_ACCESSES {
        let compiled = buffer_function(name, size);
        let memory = CodeMemory::new(&compiled.code).expect("executable memory");
        for length in [0usize, 1, 7, 8, 9, 16, 23] {
            let bytes: Vec<u8> = (0..length).map(|i| 0x80 | (i as u8).wrapping_mul(37)).collect();
            let mut buffers = vec![ByteBuffer::from_bytes(&bytes).expect("allocates")];
            // A read-only buffer: the first rodata segment of the fixture (32 bytes).
            if length == 0 {
                buffers.push(ByteBuffer::rodata(std::sync::Arc::clone(&rodata), 0).expect("a rodata segment"));
            }
            for buffer in buffers {
                let count = (buffer.len() / size as usize) as i64;
                for offset in offsets_around(count) {
                    let value = 0x8182_8384_8586_8788u64;
                    let expected_buffer =
                        ByteBuffer::from_bytes(&contents(&buffer).iter().map(|&b| b as u8).collect::<Vec<_>>())
                            .expect("allocates");
                    let expected = if buffer.is_mutable() {
                        interpret_access(name, &expected_buffer, offset, value)
                    } else {
                        // The copy is mutable; a store to the original is refused.
                        (!stores).then(|| interpret_access(name, &buffer, offset, value)).flatten()
                    };
                    let mut regs = [0x5A5A_5A5Au32; BANK];
                    w64(&mut regs, 2, offset as u64);
                    w64(&mut regs, 4, value);
                    let before_regs = regs;
                    let before = contents(&buffer);
                    let span = Span::of(Some(&Ref::Buffer(std::sync::Arc::clone(&buffer))));
                    let exit = enter(&memory, &compiled, 0, &mut regs, 3, &[span]);
                    let case =
                        format!("{name} at {offset} of {} bytes (mutable: {})", buffer.len(), buffer.is_mutable());
                    assert_eq!(exit.budget, 3, "{case}");
                    match expected {
                        None => {
                            assert_eq!(exit.op, 1, "{case}: must leave for the interpreter to raise");
                            assert_eq!(regs[1..], before_regs[1..], "{case}: registers changed");
                            assert_eq!(contents(&buffer), before, "{case}: the buffer changed");
                        }
                        Some(loaded) => {
                            assert_eq!(exit.op, 2, "{case}: must finish the access");
                            if stores {
                                assert_eq!(regs[1..], before_regs[1..], "{case}: registers changed");
                                assert_eq!(contents(&buffer), contents(&expected_buffer), "{case}");
                            } else {
                                let got = if size == 8 { r64(&regs, 4) } else { u64::from(regs[4]) };
                                assert_eq!(got, loaded, "{case}");
                                let mut rest = before_regs;
                                rest[4] = regs[4];
                                if size == 8 {
                                    rest[5] = regs[5];
                                }
                                assert_eq!(regs[1..], rest[1..], "{case}: wrote outside its result");
                            }
                        }
                    }
                }
            }
        }
        // Without a buffer in the register (none, or another kind of ref) every access leaves.
        let list = crate::list::List::new(crate::list::ListElementType::I32, 4).expect("a list");
        for span in [Span::of(None), Span::of(Some(&Ref::List(list)))] {
            let mut regs = [0u32; BANK];
            let exit = enter(&memory, &compiled, 0, &mut regs, 3, &[span]);
            assert_eq!(exit.op, 1, "{name} without a buffer");
        }
    }
}

#[test]
fn buffer_length_matches_the_interpreter() {
    use crate::buffer::ByteBuffer;
    use crate::refs::Ref;
    let compiled = after_zero("vm.buffer.length", vec![banked(3, RegisterBank::Ref), banked(2, RegisterBank::I64)]);
    assert_eq!(compiled.spans, [SpanOf::Buffer(3)]);
    let memory = CodeMemory::new(&compiled.code).expect("executable memory");
    for length in [0, 1, 4096] {
        let buffer = ByteBuffer::allocate(None, length, 0).expect("allocates");
        let mut regs = [0x5A5A_5A5Au32; BANK];
        let exit = enter(&memory, &compiled, 0, &mut regs, 3, &[Span::of(Some(&Ref::Buffer(buffer)))]);
        assert_eq!((exit.op, r64(&regs, 2)), (2, length as u64));
    }
    let mut regs = [0x5A5A_5A5Au32; BANK];
    let exit = enter(&memory, &compiled, 0, &mut regs, 3, &[Span::of(None)]);
    assert_eq!(
        (exit.op, regs[2], regs[3]),
        (1, 0x5A5A_5A5A, 0x5A5A_5A5A),
        "a missing buffer is the interpreter's error"
    );
}

#[test]
fn global_accesses_match_the_interpreter() {
    const LENGTH: u32 = 24;
    for (name, size, stores) in [
        ("vm.global.load.i32", 4, false),
        ("vm.global.load.f64", 8, false),
        ("vm.global.store.f32", 4, true),
        ("vm.global.store.i64", 8, true),
    ] {
        for offset in
            [0, 4, 8, LENGTH - 8, LENGTH - 5, LENGTH - 4, LENGTH - 1, LENGTH, LENGTH + 4, i32::MAX as u32, u32::MAX - 3]
        {
            let bank = if size == 8 { RegisterBank::I64 } else { RegisterBank::I32 };
            let compiled = after_zero(name, vec![DecodedOperand::GlobalByteOffset(offset), banked(4, bank)]);
            let memory = CodeMemory::new(&compiled.code).expect("executable memory");
            let mut globals: Vec<u8> = (0..LENGTH as u8).map(|i| 0xA0 ^ i).collect();
            let before = globals.clone();
            let mut regs = [0x5A5A_5A5Au32; BANK];
            w64(&mut regs, 4, 0x0102_0304_0506_0708);
            let before_regs = regs;
            let spans: Vec<Span> = compiled.spans.iter().map(|_| Span::globals(&mut globals)).collect();
            let exit = enter(&memory, &compiled, 0, &mut regs, 3, &spans);
            let case = format!("{name} at byte {offset} of {LENGTH}");
            // The interpreter's check (`global_range`): the value's bytes lie within the globals.
            let range = offset as usize..offset as usize + size;
            if range.end > LENGTH as usize {
                assert_eq!(exit.op, 1, "{case}: must leave for the interpreter to raise");
                assert_eq!((globals, regs[1..].to_vec()), (before, before_regs[1..].to_vec()), "{case}");
                continue;
            }
            assert_eq!(compiled.spans, [SpanOf::Globals], "{case}");
            assert_eq!(exit.op, 2, "{case}: must finish the access");
            let mut expected_globals = before.clone();
            let mut expected_regs = before_regs;
            if stores {
                let value = r64(&before_regs, 4).to_le_bytes();
                expected_globals[range.clone()].copy_from_slice(&value[..size]);
            } else {
                let mut value = [0u8; 8];
                value[..size].copy_from_slice(&before[range.clone()]);
                if size == 8 {
                    w64(&mut expected_regs, 4, u64::from_le_bytes(value));
                } else {
                    expected_regs[4] = u32::from_le_bytes(value[..4].try_into().expect("4 bytes"));
                }
            }
            expected_regs[0] = 0;
            regs[0] = 0; // the lead's zero
            assert_eq!(globals, expected_globals, "{case}");
            assert_eq!(regs, expected_regs, "{case}");
        }
    }
}
