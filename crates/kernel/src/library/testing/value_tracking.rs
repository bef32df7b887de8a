//! `vt.*`: a value that announces its lifetime (`!vt.value`), so tests can check when the
//! executor creates and frees what kernels return. As in TFRT, a kernel builds the value and
//! moves it into its result (`constructed vt.value(N)`, `move constructed vt.value(N)`); the
//! last reference to the result frees it (`destroyed vt.value(N)`).

use crate::{ExecutionContext, KernelError, KernelFrame, KernelRegistry, OutputHandler};
use rtx_host::Chain;

/// An `i32` that prints when it is made, moved into a result and destroyed.
pub struct VtValue {
    value: i32,
    output: OutputHandler,
}

impl VtValue {
    /// Builds the value and moves it into result `i` of `frame`.
    fn emplace(frame: &mut KernelFrame<'_>, i: usize, value: i32) -> Result<(), KernelError> {
        let context: &ExecutionContext = frame.context();
        context.print(&format!("constructed vt.value({value})\n"));
        context.print(&format!("move constructed vt.value({value})\n"));
        frame.emplace_result(i, VtValue { value, output: context.output_handler() })
    }
}

impl Drop for VtValue {
    fn drop(&mut self) {
        (self.output)(&format!("destroyed vt.value({})\n", self.value));
    }
}

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("vt.constant", |f| {
        let value = f.scalar_attribute::<i32>(0)?;
        VtValue::emplace(f, 0, value)
    });
    registry.add_kernel("vt.add", |f| {
        let sum = f.get::<VtValue>(0)?.value.wrapping_add(f.get::<VtValue>(1)?.value);
        VtValue::emplace(f, 0, sum)
    });
    registry.add_kernel("vt.print", |f| {
        let line = format!("print vt_value({})\n", f.get::<VtValue>(0)?.value);
        f.context().print(&line);
        f.emplace_result(0, Chain)
    });
    // Both results are the argument itself: no copy is made.
    registry.add_kernel("tfrt_test.share_to_two", |f| {
        f.get::<VtValue>(0)?;
        let value = f.argument(0)?.clone();
        f.set_result(0, value.clone())?;
        f.set_result(1, value)
    });
}
