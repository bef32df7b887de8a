//! The parts of the dispatch loop's handlers that are more than a line: register access, call
//! targets, `vm.fail`, and the errors the loop raises. Each is inlined into the loop.

use super::cold::error;
use super::op::{Callee, Reg};
use crate::context::Resolved;
use crate::module::Module;
use rtx_host::{Diagnostic, StatusCode};

/// One i32-bank register of the current frame, without a bounds check.
#[inline(always)]
pub(super) fn register(registers: &mut [u32], ordinal: Reg) -> &mut u32 {
    debug_assert!((ordinal as usize) < registers.len());
    // SAFETY: `registers` is exactly the frame's i32 bank (`i32_register_count` long) and every
    // ordinal an op holds was proved in range at load: the verifier checks each register field
    // against the function's register count (an i64/f64 pair as `n + 1 < count`), and the lowering
    // does the same for call, return and native-call slots it types itself.
    unsafe { registers.get_unchecked_mut(ordinal as usize) }
}

#[cold]
pub(super) fn budget_exhausted() -> Diagnostic {
    error(StatusCode::DeadlineExceeded, "the invocation's branch budget is exhausted (Invocation::set_budget)")
}

/// The budget ran out at a call (calls spend it too: recursion takes no backward branch).
#[cold]
pub(super) fn call_budget_exhausted() -> Diagnostic {
    error(StatusCode::DeadlineExceeded, "the invocation's branch budget is exhausted")
}

/// A call would stack frame `depth + 1`, or pass the register limit, at `depth` frames.
#[cold]
pub(super) fn stack_overflow(depth: usize) -> Diagnostic {
    error(StatusCode::ResourceExhausted, format!("VM stack overflow: {depth} frames deep (unbounded recursion?)"))
}

/// The error compiled code stopped on, as the interpreter raises it; `left` is the exit's second
/// word (the frames that could still be pushed, for a stack overflow).
#[cfg(rtx_jit)]
#[cold]
pub(super) fn fault(fault: crate::jit::Fault, left: u64) -> Diagnostic {
    use crate::jit::Exit;
    match fault.kind {
        Exit::BRANCH_BUDGET => budget_exhausted(),
        Exit::CALL_BUDGET => call_budget_exhausted(),
        _ => stack_overflow(super::MAX_FRAME_DEPTH.saturating_sub(left as usize)),
    }
}

#[cold]
pub(super) fn division_error(lhs: i64, rhs: i64) -> Diagnostic {
    if rhs == 0 {
        error(StatusCode::InvalidArgument, format!("integer division by zero ({lhs} / 0)"))
    } else {
        error(StatusCode::InvalidArgument, format!("integer division overflow ({lhs} / {rhs})"))
    }
}

/// Where a call goes: an internal function of the caller's instance, or the import's target in
/// this context; `None` for an optional import that did not resolve.
#[inline(always)]
pub(super) fn callee(callee: Callee, instance: u32, imports: &[Option<Resolved>]) -> Option<Resolved> {
    match callee {
        Callee::Internal(function) => Some(Resolved::Bytecode { instance, function }),
        Callee::Import(import) => imports.get(import as usize).copied().flatten(),
    }
}

/// The error of a call to an optional import that did not resolve.
#[cold]
pub(super) fn unresolved_import(callee: Callee, module: &Module) -> Diagnostic {
    let name = match callee {
        Callee::Import(import) => module.imported_functions()[import as usize].full_name.as_str(),
        Callee::Internal(_) => "?",
    };
    error(StatusCode::NotFound, format!("optional import `{name}` is not resolved in this context"))
}

/// `vm.fail` with `status`: an error unless the status is 0, which continues with the next op,
/// as in IREE; there must be one (`has_next`).
#[cold]
pub(super) fn fail(status: u32, message: &str, has_next: bool) -> Option<Diagnostic> {
    if status != 0 {
        let code = StatusCode::from_u32(status).unwrap_or(StatusCode::Unknown);
        return Some(error(code, message));
    }
    (!has_next).then(|| error(StatusCode::Internal, "`vm.fail` with status 0 at the end of a function"))
}
