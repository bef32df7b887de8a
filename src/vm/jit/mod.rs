//! Machine code for scalar loops (x86-64 Linux).
//!
//! The interpreter's floor on a loop is its dispatch: every op costs a fetch, an indirect jump and
//! a dependent load of the next op's address, which is most of an iteration of a scalar loop (see
//! README "VM performance"). At load time each function whose loops consist only of scalar
//! arithmetic, compares and branches is compiled to straight x86-64 that works on the same frame
//! registers; the interpreter enters it at loop headers and takes over again wherever the code
//! stops (an instruction it does not handle, or an error case). Verified bytecode is the only
//! input: the verifier proved every register ordinal within the frame and every branch onto a
//! block, which is what makes the emitted loads and stores stay inside the frame.
//!
//! `RTX_VM_JIT=0` (or `off`) at module load turns it off; `RTX_VM_JIT=all` enters compiled code
//! at every block that compiled, which the tests use to check each compiled instruction against
//! the interpreter.

mod compile;
mod memory;
mod x64;

use std::sync::Arc;

pub use compile::{compile, Compiled, Entries};
pub use memory::CodeMemory;

/// Compiled code entered at one op: takes the frame's i32 register bank and the invocation's
/// remaining budget (one unit per backward branch, as the interpreter counts; `u64::MAX` never
/// runs out in practice) and says where the interpreter goes on.
pub type Entry = unsafe extern "sysv64" fn(*mut u32, u64) -> Exit;

/// Where compiled code stopped (returned in rax:rdx).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exit {
    /// The op index to resume at, with [`Exit::EXHAUSTED`] set when the budget ran out at the
    /// backward branch of that op (which then has not run).
    pub op: u64,
    /// The budget left.
    pub budget: u64,
}

impl Exit {
    pub const EXHAUSTED: u64 = 1 << 63;
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

/// One function's entries as code addresses.
pub struct Linked {
    /// The mapping the entries point into (shared by the module's functions).
    pub code: Arc<CodeMemory>,
    /// (op index, entry) pairs.
    pub entries: Vec<(u32, Entry)>,
}

/// Maps the compiled functions of one module into one executable mapping. Returns, per function,
/// its entries, or `None` where the function has none — for all of them when the system refuses
/// executable memory.
pub fn link(functions: Vec<Option<Compiled>>) -> Vec<Option<Linked>> {
    let mut code = Vec::new();
    let mut starts = Vec::with_capacity(functions.len());
    for compiled in &functions {
        starts.push(code.len());
        if let Some(compiled) = compiled {
            code.extend_from_slice(&compiled.code);
        }
    }
    let Some(memory) = CodeMemory::new(&code).map(Arc::new) else {
        return functions.iter().map(|_| None).collect();
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
                    // SAFETY: `address` is the start of code the compiler emitted for this entry
                    // (an op boundary of a function with the `Entry` signature: System V, frame
                    // bank in rdi, budget in rsi, `Exit` in rax:rdx, touching only caller-saved
                    // registers).
                    let entry = unsafe { std::mem::transmute::<*const u8, Entry>(address) };
                    (op, entry)
                })
                .collect();
            Some(Linked { code: Arc::clone(&memory), entries })
        })
        .collect()
}

#[cfg(test)]
mod tests;
