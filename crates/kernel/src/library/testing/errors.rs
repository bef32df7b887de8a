//! Failing test kernels: `tfrt_test.fail` (every result the error `something bad happened`),
//! `partial_fail` (one result set, then the error), `error_chain` (a failed chain) and `cancel`
//! (cancels the request; what has not started is skipped).

use crate::KernelRegistry;

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("tfrt_test.fail", |_| Err("something bad happened".into()));
    registry.add_kernel("tfrt_test.partial_fail", |f| {
        f.emplace_result(0, 1i32)?;
        f.report_error("something bad happened");
        Ok(())
    });
    registry.add_kernel("tfrt_test.error_chain", |_| Err("error chain".into()));
    registry.add_kernel("tfrt_test.cancel", |f| {
        f.context().cancel();
        let chain = f.argument(0)?.clone();
        f.emplace_result(0, 0i32)?;
        f.set_result(1, chain)
    });
}
