//! Machine code for scalar loops and the calls between scalar functions (x86-64 Linux).
//!
//! The interpreter's floor on a loop is its dispatch: every op costs a fetch, an indirect jump and
//! a dependent load of the next op's address, which is most of an iteration of a scalar loop (see
//! docs/PERFORMANCE.md "VM"). At load time each function whose loops consist only of scalar
//! arithmetic, compares, branches, calls and typed buffer and global loads and stores is compiled
//! to straight x86-64 that works on the same frame registers; the interpreter enters it at loop
//! headers and takes over again wherever the code stops (an instruction it does not handle, or an
//! error case). Functions that compile whole call each other natively, recursion included (see
//! [`compile`] for the frames); the interpreter enters one that calls at its start. Verified
//! bytecode is the only input: the verifier proved every register ordinal within the frame and
//! every branch onto a block, which is what makes the emitted loads and stores stay inside the
//! frame; buffer and global accesses check their offsets against the [`Span`]s they are given.
//!
//! `RTX_VM_JIT=0` (or `off`) at module load turns it off; `RTX_VM_JIT=all` enters compiled code
//! at every block that compiled, which the tests use to check each compiled instruction against
//! the interpreter.

mod compile;
mod memory;
mod x64;

use std::collections::HashMap;
use std::sync::Arc;

use crate::bytecode::decode::DecodedInstruction;
use crate::refs::Ref;

pub use compile::{compile, Callee, Compiled, Entries, Scope, MAX_CALLEE_FRAME, RESULT_WORDS};
pub use memory::CodeMemory;

/// Compiled code entered at one op: takes the frame's i32 register bank, the invocation's
/// remaining budget (one unit per backward branch and call, as the interpreter counts;
/// `u64::MAX` never runs out in practice), the register stack for compiled calls (its start, and
/// where frames must end: [`RESULT_WORDS`] more words must be writable past that), how many
/// frames may still be pushed and the frame's span table (a [`Span`] per entry of
/// [`Compiled::spans`]); says where the interpreter goes on.
pub type Entry = unsafe extern "sysv64" fn(*mut u32, u64, *mut u32, *mut u32, u64, *const Span) -> Exit;

/// Bytes outside the frame that compiled code reads or writes: what the code needs of the
/// `!vm.buffer` a ref register holds (refs are Rust objects, so the interpreter lays out these
/// few words at each entry), or the module's global bytes. That is sound because compiled code
/// changes no ref register and calls no function that reads a span, so the buffers stay in their
/// registers (and alive) until it returns; neither a buffer's length nor the globals' ever
/// changes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Span {
    /// The first byte; null when the register holds no buffer.
    base: *mut u8,
    /// Bytes that may be read: the length, or 0 without a buffer.
    readable: u64,
    /// Bytes that may be written: the length of a mutable buffer, else 0.
    writable: u64,
}

/// What a [`Span`] of the table covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpanOf {
    /// The buffer in this ref register of the frame.
    Buffer(u16),
    /// The global bytes of the function's module.
    Globals,
}

impl Span {
    /// Size and field offsets, for the code.
    pub const BYTES: u32 = 24;
    pub const BASE: u32 = 0;
    pub const READABLE: u32 = 8;
    pub const WRITABLE: u32 = 16;

    /// The module's global bytes (`vm.global.load.*`/`store.*`).
    pub fn globals(bytes: &mut [u8]) -> Span {
        Span { base: bytes.as_mut_ptr(), readable: bytes.len() as u64, writable: bytes.len() as u64 }
    }

    /// The span of what a ref register holds. Anything but a buffer gets no bytes, so every
    /// access goes back to the interpreter, which raises its error.
    pub fn of(value: Option<&Ref>) -> Span {
        match value.and_then(Ref::as_buffer) {
            Some(buffer) => Span {
                // Written only through `writable`, which is 0 for rodata.
                base: buffer.as_ptr().cast_mut(),
                readable: buffer.len() as u64,
                writable: if buffer.is_mutable() { buffer.len() as u64 } else { 0 },
            },
            None => Span { base: std::ptr::null_mut(), readable: 0, writable: 0 },
        }
    }
}

/// Where compiled code stopped (returned in rax:rdx).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exit {
    /// The op index to resume at; with [`Exit::FAULT`] set, the error raised instead (see
    /// [`Exit::fault`]).
    pub op: u64,
    /// The budget left; for [`Exit::STACK_OVERFLOW`], the frames that could still be pushed.
    pub budget: u64,
}

/// An error compiled code raised, for the interpreter to report as its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// [`Exit::BRANCH_BUDGET`], [`Exit::CALL_BUDGET`] or [`Exit::STACK_OVERFLOW`].
    pub kind: u64,
    /// The function (of the entered function's module) and op that raised it: for the budget at
    /// a backward branch, that op has not run; for a call, the callee was not entered.
    pub function: u32,
    pub op: u32,
}

impl Exit {
    pub const FAULT: u64 = 1 << 63;
    /// The budget ran out at a backward branch.
    pub const BRANCH_BUDGET: u64 = 0;
    /// The budget ran out at a call.
    pub const CALL_BUDGET: u64 = 1;
    /// A call would pass the frame depth or register stack limit.
    pub const STACK_OVERFLOW: u64 = 2;
    const KIND_SHIFT: u32 = 61;
    /// Function ordinals up to 2^29 fit between the op and the kind.
    pub const FUNCTION_BITS: u32 = 29;

    /// The `op` word of a fault.
    pub fn fault(kind: u64, function: u32, op: u32) -> u64 {
        Exit::FAULT | kind << Exit::KIND_SHIFT | u64::from(function) << 32 | u64::from(op)
    }

    /// The fault this exit reports, if any.
    pub fn error(&self) -> Option<Fault> {
        (self.op & Exit::FAULT != 0).then_some(Fault {
            kind: (self.op >> Exit::KIND_SHIFT) & 3,
            function: ((self.op >> 32) & ((1 << Exit::FUNCTION_BITS) - 1)) as u32,
            op: self.op as u32,
        })
    }
}

/// Which entries modules loaded now get, from `RTX_VM_JIT`; `None` when code is not compiled.
pub fn entries() -> Option<Entries> {
    if cfg!(miri) {
        return None; // Miri cannot run machine code.
    }
    match std::env::var("RTX_VM_JIT").as_deref() {
        Ok("0" | "off") => None,
        Ok("all") => Some(Entries::Everywhere),
        _ => Some(Entries::Loops),
    }
}

/// What [`compile`] takes for one function: its instructions (after coalescing), the op index
/// each begins, and block marker offsets to op indices.
pub struct Input<'a> {
    pub decoded: Vec<DecodedInstruction<'a>>,
    pub starts: Vec<Option<u32>>,
    pub blocks: HashMap<u32, u32>,
}

/// Compiles every function of a module. `callees` describes each function, `callable` where its
/// signature and frame would allow compiled calls; a function stays callable only while its code
/// compiles whole with calls to callable functions alone, so this narrows the set until it holds
/// (recursion included: a cycle of functions that compile whole stays callable), compiling again
/// only the functions whose calls named a function it just dropped.
pub fn compile_module(
    inputs: &[Option<Input<'_>>],
    mut callees: Vec<Callee>,
    entries: Entries,
) -> Vec<Option<Compiled>> {
    let compile_one = |function: usize, callees: &[Callee]| {
        let input = inputs[function].as_ref()?;
        let scope = Scope { function: function as u32, callees };
        compile(&input.decoded, &input.starts, &input.blocks, entries, &scope)
    };
    let mut compiled: Vec<Option<Compiled>> = (0..inputs.len()).map(|f| compile_one(f, &callees)).collect();
    loop {
        let mut dropped = Vec::new();
        for (function, (callee, code)) in callees.iter_mut().zip(&compiled).enumerate() {
            if callee.callable && !code.as_ref().is_some_and(|c| c.whole) {
                callee.callable = false;
                dropped.push(function as u32);
            }
        }
        if dropped.is_empty() {
            return compiled;
        }
        for (function, code) in compiled.iter_mut().enumerate() {
            if code.as_ref().is_some_and(|c| c.calls.iter().any(|(_, callee)| dropped.contains(callee))) {
                *code = compile_one(function, &callees);
            }
        }
    }
}

/// One function's entries as code addresses.
pub struct Linked {
    /// The mapping the entries point into (shared by the module's functions).
    pub code: Arc<CodeMemory>,
    /// (op index, entry) pairs.
    pub entries: Vec<(u32, Entry)>,
    /// See [`Compiled::spans`].
    pub spans: Box<[SpanOf]>,
}

/// Maps the compiled functions of one module into one executable mapping, with each compiled
/// call pointed at its callee. Returns, per function, its entries, or `None` where the function
/// has none — for all of them when the system refuses executable memory.
pub fn link(functions: Vec<Option<Compiled>>) -> Vec<Option<Linked>> {
    let none = || functions.iter().map(|_| None).collect();
    let mut code = Vec::new();
    let mut starts = Vec::with_capacity(functions.len());
    for compiled in &functions {
        starts.push(code.len());
        if let Some(compiled) = compiled {
            code.extend_from_slice(&compiled.code);
        }
    }
    for (compiled, &start) in functions.iter().zip(&starts) {
        for &(at, callee) in compiled.iter().flat_map(|c| &c.calls) {
            // Callers only compile calls to functions whose code is whole, so the callee has code.
            let Some(Some(_)) = functions.get(callee as usize) else { return none() };
            let field = start + at as usize;
            let Ok(rel) = i32::try_from(starts[callee as usize] as i64 - (field as i64 + 4)) else { return none() };
            code[field..field + 4].copy_from_slice(&rel.to_le_bytes());
        }
    }
    let Some(memory) = CodeMemory::new(&code).map(Arc::new) else {
        return none();
    };
    functions
        .iter()
        .zip(starts)
        .map(|(compiled, start)| {
            let compiled = compiled.as_ref()?;
            let entries = compiled
                .entries
                .iter()
                .map(|&(op, offset)| {
                    let address = memory.at(start + offset as usize);
                    // SAFETY: `address` is the start of the stub the compiler emitted for this
                    // entry (a function with the `Entry` signature: System V, arguments in rdi,
                    // rsi, rdx, rcx, r8, r9, `Exit` in rax:rdx, touching only caller-saved
                    // registers).
                    let entry = unsafe { std::mem::transmute::<*const u8, Entry>(address) };
                    (op, entry)
                })
                .collect();
            Some(Linked { code: Arc::clone(&memory), entries, spans: compiled.spans.clone().into() })
        })
        .collect()
}

#[cfg(test)]
mod tests;
