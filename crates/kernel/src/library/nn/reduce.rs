//! Reductions along one axis: `nn.argmax.f32` (ONNX ArgMax: the index of the largest element
//! along `axis`, default 0, as i64; `keepdims` keeps the axis as a dimension of 1, default 1;
//! `select_last_index` picks the last of equal maxima instead of the first, default 0).

use super::normalize::axis_index;
use super::{floats, int, shape_error};
use crate::dtype::DType;
use crate::tensor::{DenseHostTensor, TensorShape};
use crate::{KernelError, KernelFrame, KernelRegistry};

fn argmax(frame: &mut KernelFrame<'_>) -> Result<(), KernelError> {
    let x = floats(frame, 0)?;
    let axis = axis_index(frame, int(frame, "axis", 0)?, x.dims.len())?;
    let (keep, last) = (int(frame, "keepdims", 1)? != 0, int(frame, "select_last_index", 0)? != 0);
    let (length, inner) = (x.dims[axis], x.dims[axis + 1..].iter().product::<usize>());
    if length == 0 {
        return Err(shape_error(frame, format_args!("axis {axis} of X {} is empty", x.shape())));
    }
    let outer = x.dims[..axis].iter().product::<usize>();
    let mut indices = Vec::with_capacity(outer * inner);
    for block in x.data.chunks_exact(length * inner) {
        for k in 0..inner {
            let mut best = 0;
            for i in 1..length {
                let (value, max) = (block[i * inner + k], block[best * inner + k]);
                if value > max || (last && value == max) {
                    best = i;
                }
            }
            indices.push(best as i64);
        }
    }
    let mut dims: Vec<i64> = x.dims.iter().map(|&d| d as i64).collect();
    if keep {
        dims[axis] = 1;
    } else {
        dims.remove(axis);
    }
    let tensor = DenseHostTensor::new_zeroed(frame.host(), DType::I64, TensorShape::new(dims)?)?;
    tensor.set_values(&indices)?;
    frame.emplace_result(0, tensor)
}

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("nn.argmax.f32", argmax);
}
