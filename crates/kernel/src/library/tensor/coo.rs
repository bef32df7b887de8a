//! `coo.*.T.R`: dense to sparse and back, and equality of sparse tensors, for `f32` and `i32`
//! of rank 0 to 3. Each takes a chain after its tensors and returns one after its result.

use crate::tensor::{CooHostTensor, DenseHostTensor, Element, TensorShape};
use crate::{KernelError, KernelFrame, KernelRegistry};

/// The highest rank the kernels are registered for.
const MAX_RANK: usize = 3;

fn check_rank(frame: &KernelFrame<'_>, shape: &TensorShape, rank: usize) -> Result<(), KernelError> {
    if shape.rank() != rank {
        return Err(format!("{} takes a tensor of rank {rank}, not {shape}", frame.kernel_name()).into());
    }
    Ok(())
}

fn register_type<T: Element + Default>(registry: &mut KernelRegistry, suffix: &str) {
    for rank in 0..=MAX_RANK {
        registry.add_kernel(&format!("coo.convert_dht_to_coo.{suffix}.{rank}"), move |f| {
            let dense = f.get::<DenseHostTensor>(0)?;
            check_rank(f, dense.shape(), rank)?;
            let coo = CooHostTensor::from_dense::<T>(f.host(), dense)?;
            let chain = f.argument(1)?.clone();
            f.emplace_result(0, coo)?;
            f.set_result(1, chain)
        });
        registry.add_kernel(&format!("coo.convert_coo_to_dht.{suffix}.{rank}"), move |f| {
            let coo = f.get::<CooHostTensor>(0)?;
            check_rank(f, coo.shape(), rank)?;
            let dense = coo.to_dense::<T>(f.host())?;
            let chain = f.argument(1)?.clone();
            f.emplace_result(0, dense)?;
            f.set_result(1, chain)
        });
        registry.add_kernel(&format!("coo.tensor_equal.{suffix}.{rank}"), |f| {
            let equal = f.get::<CooHostTensor>(0)? == f.get::<CooHostTensor>(1)?;
            let chain = f.argument(2)?.clone();
            f.emplace_result(0, equal)?;
            f.set_result(1, chain)
        });
    }
}

pub(crate) fn register(registry: &mut KernelRegistry) {
    register_type::<f32>(registry, "f32");
    register_type::<i32>(registry, "i32");
}
