//! Chain kernels: `tfrt.new.chain`, `tfrt.merge.chains` (ready once all its operands are: the
//! executor waits for them), `tfrt.alias.value` (a value that depends on a chain).

use crate::{KernelRegistry, PureKernel};

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_pure_kernel("tfrt.new.chain", PureKernel::ordering());
    registry.add_pure_kernel("tfrt.merge.chains", PureKernel::ordering());
    // Operands: the chain, then the value.
    registry.add_kernel("tfrt.alias.value", |f| {
        let value = f.argument(1)?.clone();
        f.set_result(0, value)
    });
}
