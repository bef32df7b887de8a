//! [`CooHostTensor`]: a sparse tensor in coordinate form — the non-zero values and, for each,
//! its index (one row of `rank` coordinates in an `i64` tensor of shape `[count, rank]`).
//!
//! Coordinates are in TFRT's order: the flat position of an element is split by the
//! dimensions taken first to last, and the digits are written from the last coordinate to the
//! first (for a square shape this is the row-major index). [`CooHostTensor::to_dense`] inverts
//! it, so a round trip through the sparse form gives back the dense tensor for any shape.

use std::fmt;

use super::dense::{write_elements, DenseHostTensor};
use super::element::{dtype_name, Element};
use super::shape::TensorShape;
use rtx_host::{Diagnostic, HostContext, StatusCode};

#[derive(Clone, Debug)]
pub struct CooHostTensor {
    shape: TensorShape,
    indices: DenseHostTensor,
    values: DenseHostTensor,
}

fn to_usize(value: i64) -> usize {
    usize::try_from(value).expect("shapes have no negative dimensions")
}

impl CooHostTensor {
    /// The non-zero elements of `dense`, which must hold `T`s.
    pub fn from_dense<T: Element + Default>(
        host: &HostContext,
        dense: &DenseHostTensor,
    ) -> Result<CooHostTensor, Diagnostic> {
        let elements = dense.values::<T>()?;
        let shape = dense.shape().clone();
        let rank = shape.rank();
        let nonzero: Vec<(usize, T)> = elements.into_iter().enumerate().filter(|(_, v)| *v != T::default()).collect();
        let count = i64::try_from(nonzero.len()).expect("element counts fit in i64");
        let values = DenseHostTensor::new_zeroed(host, T::DTYPE, TensorShape::new(vec![count])?)?;
        values.set_values(&nonzero.iter().map(|&(_, v)| v).collect::<Vec<T>>())?;
        let mut coordinates = vec![0i64; nonzero.len() * rank];
        for (row, &(position, _)) in nonzero.iter().enumerate() {
            let mut rest = position;
            for (r, &dim) in shape.dims().iter().enumerate() {
                let dim = to_usize(dim);
                coordinates[row * rank + rank - 1 - r] = (rest % dim) as i64;
                rest /= dim;
            }
        }
        let indices =
            DenseHostTensor::new_zeroed(host, crate::dtype::DType::I64, TensorShape::new(vec![count, rank as i64])?)?;
        indices.set_values(&coordinates)?;
        Ok(CooHostTensor { shape, indices, values })
    }

    pub fn shape(&self) -> &TensorShape {
        &self.shape
    }

    pub fn indices(&self) -> &DenseHostTensor {
        &self.indices
    }

    pub fn values(&self) -> &DenseHostTensor {
        &self.values
    }

    /// The dense tensor: zeros, and each value at its coordinates. A coordinate outside its
    /// dimension is an error.
    pub fn to_dense<T: Element>(&self, host: &HostContext) -> Result<DenseHostTensor, Diagnostic> {
        let values = self.values.values::<T>()?;
        let coordinates = self.indices.values::<i64>()?;
        let dims = self.shape.dims();
        let rank = dims.len();
        let mut elements = vec![None; to_usize(self.shape.num_elements().unwrap_or(0))];
        for (row, value) in values.into_iter().enumerate() {
            let (mut position, mut stride) = (0usize, 1usize);
            for (r, &dim) in dims.iter().enumerate() {
                let coordinate = coordinates.get(row * rank + rank - 1 - r).copied().unwrap_or(-1);
                if !(0..dim).contains(&coordinate) {
                    return Err(Diagnostic::new(
                        StatusCode::InvalidArgument,
                        format!("coordinate {coordinate} of value {row} is outside dimension {dim}"),
                    ));
                }
                position += to_usize(coordinate) * stride;
                stride *= to_usize(dim);
            }
            elements[position] = Some(value);
        }
        let dense = DenseHostTensor::new_zeroed(host, T::DTYPE, self.shape.clone())?;
        let zero = dense.values::<T>()?.first().copied();
        if let Some(zero) = zero {
            dense.set_values(&elements.into_iter().map(|e| e.unwrap_or(zero)).collect::<Vec<T>>())?;
        }
        Ok(dense)
    }
}

/// Same shape, indices and values.
impl PartialEq for CooHostTensor {
    fn eq(&self, other: &CooHostTensor) -> bool {
        self.shape == other.shape && self.indices == other.indices && self.values == other.values
    }
}

/// `CooHostTensor dtype = i32, shape = [3, 2], indices = [...], values = [...]`, as TFRT prints
/// it (every index, at most sixteen values).
impl fmt::Display for CooHostTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dtype = self.values.dtype();
        write!(f, "CooHostTensor dtype = {}, shape = {}, indices = [", dtype_name(dtype), self.shape)?;
        let indices = self.indices.values::<i64>().unwrap_or_default();
        let indices: Vec<String> = indices.iter().map(i64::to_string).collect();
        write!(f, "{}], values = [", indices.join(", "))?;
        let size = dtype.byte_size().expect("dense tensors have sized elements");
        self.values.with_bytes(|bytes| write_elements(f, dtype, bytes, size))?;
        write!(f, "]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;

    #[test]
    fn sparse_form_lists_non_zeros_in_tfrts_coordinate_order() {
        let host = HostContext::with_work_queue_spec("s").unwrap();
        let dense = DenseHostTensor::new_zeroed(&host, DType::I32, TensorShape::new(vec![3, 2]).unwrap()).unwrap();
        dense.set_values(&[4i32, 0, 4, 4, 0, 5]).unwrap();
        let coo = CooHostTensor::from_dense::<i32>(&host, &dense).unwrap();
        // Positions 0, 2, 3, 5 split by 3 then 2: (0,0), (0,2), (1,0), (1,2).
        assert_eq!(
            coo.to_string(),
            "CooHostTensor dtype = i32, shape = [3, 2], indices = [0, 0, 0, 2, 1, 0, 1, 2], values = [4, 4, 4, 5]"
        );
        assert_eq!(coo.to_dense::<i32>(&host).unwrap(), dense, "the round trip restores every element");
        assert!(coo.to_dense::<f32>(&host).is_err());
    }
}
