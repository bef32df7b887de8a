//! Plans: async functions made only of pure kernels (see [`rtx_kernel::pure`]), compiled once
//! into straight-line steps over an array of 64-bit slots, one slot per register.
//!
//! Such a function's dataflow graph needs no scheduling: its kernels never wait, so running them
//! in file order (each operand is defined earlier; checked when the plan is built) gives the
//! same results as the dataflow executor, without an AsyncValue, a reference count or a ready
//! count per kernel. Building a plan checks every register's type against what its users read,
//! so a step never meets a value of the wrong type. A call falls back to the dataflow executor
//! when the plan cannot answer it: an argument that is unavailable, an error or of another type,
//! a cancelled request, or a kernel that fails. Pure kernels have no effect, so running the
//! function again there is unobservable except for the diagnostics it reports, as it should.

use std::sync::Arc;

use crate::format::FunctionKind;
use crate::reader::{BefFile, FunctionInfo};
use rtx_host::RcAsyncValue;
use rtx_kernel::pure::{PureFn, MAX_SLOTS};
use rtx_kernel::{ExecutionContext, Kernel, KernelSite, Program, ScalarType};

/// Slots a plan's call keeps on the stack (beyond, on the heap).
const STACK_SLOTS: usize = 128;

/// A compiled pure function.
pub(crate) struct Plan {
    steps: Box<[Step]>,
    /// Registers, plus one scratch slot that unused operand and result positions point at.
    slots: usize,
    arguments: Box<[(u32, ScalarType)]>,
    results: Box<[(u32, ScalarType)]>,
}

/// One kernel: its code, its decoded attributes, and the slots it reads and writes.
struct Step {
    run: PureFn,
    immediate: u64,
    arguments: [u32; MAX_SLOTS],
    results: [u32; MAX_SLOTS],
}

impl Plan {
    /// The plan of the function `info` describes, when it is an async function of pure kernels
    /// whose types agree. Attributes are decoded with `context` as the kernels' request.
    pub(crate) fn build(file: &Arc<BefFile>, info: &FunctionInfo, context: &ExecutionContext) -> Option<Plan> {
        if info.kind != FunctionKind::Async {
            return None;
        }
        let body = info.body.as_ref()?;
        let list = file.kernel_list(body);
        let program: Arc<dyn Program> = Arc::clone(file) as Arc<dyn Program>;
        let scratch = u32::try_from(body.num_registers()).ok()?;
        let mut types: Vec<Option<ScalarType>> = vec![None; body.num_registers()];
        let type_of = |index: u32| ScalarType::from_type_name(file.type_name(index));

        let pseudo = body.record(list, 0);
        let mut arguments = Vec::with_capacity(info.arguments.len());
        for (i, &ty) in info.arguments.iter().enumerate() {
            let (register, ty) = (pseudo.results().get(i + 1), type_of(ty)?);
            types[register as usize] = Some(ty);
            arguments.push((register, ty));
        }

        let mut steps = Vec::with_capacity(body.kernels.len() - 1);
        for k in 1..body.kernels.len() {
            let record = body.record(list, k);
            let Kernel::Pure(kernel) = file.kernel(record.code()) else {
                return None;
            };
            let mut reads = [scratch; MAX_SLOTS];
            for (i, register) in record.arguments().iter().enumerate() {
                let held = types[register as usize]?;
                let Some(expected) = kernel.arguments() else {
                    continue; // an ordering kernel reads nothing
                };
                match expected.get(i) {
                    Some(&ty) if ty == held => reads[i] = register,
                    None if held == ScalarType::Chain => {} // a chain may trail the arguments (TFRT)
                    _ => return None,
                }
            }
            let expected = kernel.arguments().unwrap_or_default();
            if record.num_arguments() < expected.len() || record.num_results() != kernel.results().len() {
                return None;
            }
            let mut writes = [scratch; MAX_SLOTS];
            for (i, (register, &ty)) in record.results().iter().zip(kernel.results()).enumerate() {
                types[register as usize] = Some(ty);
                if ty != ScalarType::Chain {
                    writes[i] = register;
                }
            }
            // A kernel that only orders has nothing to compute.
            if kernel.arguments().is_none() {
                continue;
            }
            let site = KernelSite::new(record, &program, context);
            let immediate = kernel.immediate(&site).ok()?;
            steps.push(Step { run: kernel.run_fn(), immediate, arguments: reads, results: writes });
        }

        let mut results = Vec::with_capacity(info.results.len());
        for (&register, &ty) in body.results.iter().zip(info.results.iter()) {
            let declared = type_of(ty)?;
            if types[register as usize]? != declared {
                return None;
            }
            results.push((register, declared));
        }
        Some(Plan {
            steps: steps.into_boxed_slice(),
            slots: scratch as usize + 1,
            arguments: arguments.into_boxed_slice(),
            results: results.into_boxed_slice(),
        })
    }

    /// The function's results (available) for `arguments`; `None` when the dataflow executor must
    /// answer instead (see the module documentation).
    pub(crate) fn run(&self, context: &ExecutionContext, arguments: &[RcAsyncValue]) -> Option<Vec<RcAsyncValue>> {
        if context.is_cancelled() {
            return None;
        }
        // Small functions' slots live on the stack: a call then allocates only its results.
        let (mut stack, mut heap) = ([0u64; STACK_SLOTS], Vec::new());
        let slots = if self.slots <= STACK_SLOTS {
            &mut stack[..self.slots]
        } else {
            heap.resize(self.slots, 0);
            &mut heap[..]
        };
        for (&(register, ty), value) in self.arguments.iter().zip(arguments) {
            if !value.is_concrete() {
                return None;
            }
            slots[register as usize] = ty.slot_of_async(value).ok()?;
        }
        let mut error = None;
        for step in self.steps.iter() {
            // SAFETY: `build` made every slot index a register of the body or the scratch slot,
            // all below `self.slots`, the length of `slots`.
            unsafe {
                let [a, b] = step.arguments;
                let inputs = [*slots.get_unchecked(a as usize), *slots.get_unchecked(b as usize)];
                let outputs = (step.run)(inputs, step.immediate, &mut error);
                if error.is_some() {
                    return None;
                }
                let [r, s] = step.results;
                *slots.get_unchecked_mut(r as usize) = outputs[0];
                *slots.get_unchecked_mut(s as usize) = outputs[1];
            }
        }
        Some(self.results.iter().map(|&(register, ty)| ty.async_of_slot(slots[register as usize])).collect())
    }
}
