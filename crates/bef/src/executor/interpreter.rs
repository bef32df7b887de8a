//! The straight-line interpreter for sync functions: kernels in file order on plain
//! [`Value`]s (no AsyncValue per register), each register cleared after its last use.

use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

use crate::reader::{BefFile, FunctionBody};
use rtx_host::{Diagnostic, StatusCode};
use rtx_kernel::{ExecutionContext, Kernel, KernelError, KernelSite, Program, SyncKernelFrame, Value};

use super::panicked;

/// Runs `body` on `arguments`; the first failing kernel's error (with its location) ends it.
pub(super) fn execute(
    file: &Arc<BefFile>,
    body: &FunctionBody,
    context: &ExecutionContext,
    arguments: &[Value],
) -> Result<Vec<Value>, Diagnostic> {
    let list = file.kernel_list(body);
    let program: Arc<dyn Program> = Arc::clone(file) as Arc<dyn Program>;
    let mut registers = vec![Value::Empty; body.num_registers()];
    let pseudo = body.record(list, 0);
    for (i, argument) in arguments.iter().enumerate() {
        let register = pseudo.results().get(i + 1) as usize;
        registers[register] = argument.clone();
    }
    for k in 1..body.kernels.len() {
        let record = body.record(list, k);
        let located =
            |diagnostic: Diagnostic| diagnostic.with_location(file.image().location(record.location()).to_location());
        let _span = super::spans::kernel_span(file, record);
        let name = || file.kernel_name(record.code());
        // A panic is the kernel's error, as in the dataflow executor.
        let contained = |run: &mut dyn FnMut() -> Result<(), KernelError>| {
            panic::catch_unwind(AssertUnwindSafe(run)).unwrap_or_else(|payload| Err(panicked(name(), payload.as_ref())))
        };
        match file.kernel(record.code()) {
            Kernel::Sync(kernel) => {
                let mut frame = SyncKernelFrame::new(KernelSite::new(record, &program, context), &mut registers);
                contained(&mut || kernel(&mut frame)).map_err(|e| located(e.into_diagnostic()))?;
            }
            Kernel::Pure(kernel) => {
                let mut frame = SyncKernelFrame::new(KernelSite::new(record, &program, context), &mut registers);
                contained(&mut || kernel.run_sync(&mut frame)).map_err(|e| located(e.into_diagnostic()))?;
            }
            Kernel::Async(_) => {
                return Err(located(Diagnostic::new(
                    StatusCode::InvalidArgument,
                    format!(
                        "`{}` is an async kernel; sync functions run only sync and pure kernels",
                        file.kernel_name(record.code())
                    ),
                )));
            }
        }
        for (i, r) in record.results().iter().enumerate() {
            if registers[r as usize].is_empty() {
                return Err(located(Diagnostic::new(
                    StatusCode::Internal,
                    format!("kernel `{}` did not set its result {i}", file.kernel_name(record.code())),
                )));
            }
        }
        for &r in body.retire[k].iter() {
            registers[r as usize] = Value::Empty;
        }
    }
    Ok(body.results.iter().map(|&r| registers[r as usize].clone()).collect())
}
