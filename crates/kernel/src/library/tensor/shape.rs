//! `ts.*`: shapes built from attributes, printed (`shape = [1, 2]`, `partial_tensor_shape = ...`,
//! `fixed_rank_shape = ...`), compared, counted, read one dimension at a time and converted
//! between their kinds.

use super::shape_attribute;
use crate::tensor::{FixedRankShape, PartialTensorShape, TensorShape};
use crate::{KernelError, KernelFrame, KernelRegistry};
use rtx_host::Chain;

/// The highest rank `ts.as_fixed_rank_shape.R` is registered for.
const MAX_FIXED_RANK: usize = 3;

fn print(frame: &mut KernelFrame<'_>, line: String) -> Result<(), KernelError> {
    frame.context().print(&line);
    frame.emplace_result(0, Chain)
}

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("ts.build_shape", |f| {
        let shape = shape_attribute(f, 0)?;
        f.emplace_result(0, shape)
    });
    registry.add_kernel("ts.print_shape", |f| {
        let line = format!("shape = {}\n", f.get::<TensorShape>(0)?);
        print(f, line)
    });
    registry.add_kernel("ts.equal_shape", |f| {
        let equal = f.get::<TensorShape>(0)? == f.get::<TensorShape>(1)?;
        f.emplace_result(0, equal)
    });
    registry.add_kernel("ts.get_num_elements", |f| {
        let shape = f.get::<TensorShape>(0)?;
        let count = shape.num_elements().ok_or_else(|| format!("shape {shape} has more than 2^63 elements"))?;
        f.emplace_result(0, count)
    });
    registry.add_kernel("ts.get_dimension", |f| {
        let (shape, index) = (f.get::<TensorShape>(0)?, *f.get::<i32>(1)?);
        let size = usize::try_from(index).ok().and_then(|i| shape.dims().get(i)).copied();
        let size =
            size.ok_or_else(|| format!("shape {shape} has no dimension {index} (its rank is {})", shape.rank()))?;
        f.emplace_result(0, size)
    });
    for rank in 1..=MAX_FIXED_RANK {
        registry.add_kernel(&format!("ts.as_fixed_rank_shape.{rank}"), move |f| {
            let fixed = FixedRankShape::new(f.get::<TensorShape>(0)?, rank)?;
            f.emplace_result(0, fixed)
        });
        registry.add_kernel(&format!("ts.print_fixed_rank_shape.{rank}"), |f| {
            let line = format!("fixed_rank_shape = {}\n", f.get::<FixedRankShape>(0)?);
            print(f, line)
        });
    }
    registry.add_kernel("ts.build_partial_shape", |f| {
        let dims = f.attribute(0)?.array::<i64>()?.to_vec();
        f.emplace_result(0, PartialTensorShape::new(Some(dims)))
    });
    registry.add_kernel("ts.build_unranked_partial_shape", |f| f.emplace_result(0, PartialTensorShape::new(None)));
    registry.add_kernel("ts.print_partial_shape", |f| {
        let line = format!("partial_tensor_shape = {}\n", f.get::<PartialTensorShape>(0)?);
        print(f, line)
    });
    registry.add_kernel("ts.to_shape", |f| {
        let shape = f.get::<PartialTensorShape>(0)?.to_shape()?;
        f.emplace_result(0, shape)
    });
    registry.add_kernel("ts.to_partial_shape", |f| {
        let partial = PartialTensorShape::from(f.get::<TensorShape>(0)?);
        f.emplace_result(0, partial)
    });
}
