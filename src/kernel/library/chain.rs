//! Chain kernels: `tfrt.new.chain`, `tfrt.merge.chains` (ready once all its operands are: the
//! executor waits for them), `tfrt.alias.value` (a value that depends on a chain).

use crate::host::Chain;
use crate::kernel::KernelRegistry;

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("tfrt.new.chain", |f| f.emplace_result(0, Chain));
    registry.add_kernel("tfrt.merge.chains", |f| f.emplace_result(0, Chain));
    // Operands: the chain, then the value.
    registry.add_kernel("tfrt.alias.value", |f| {
        let value = f.argument(1)?.clone();
        f.set_result(0, value)
    });
}
