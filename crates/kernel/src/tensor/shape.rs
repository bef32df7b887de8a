//! Tensor shapes, printed as TFRT prints them (`[1, 57, 92]`, `Unknown rank`).

use std::fmt;

use rtx_host::{Diagnostic, StatusCode};
use smallvec::SmallVec;

/// Dimensions kept inside the shape, as TFRT's `TensorShape` keeps small ranks: a shape of rank 4
/// or less is cloned (into every tensor, its metadata, an eager op's results) without allocating.
type Dims = SmallVec<[i64; 4]>;

/// A shape whose every dimension is known.
#[derive(Debug, Default, PartialEq, Eq, Hash)]
pub struct TensorShape {
    dims: Dims,
}

/// A copy of the dimensions (`SmallVec`'s own clone goes element by element).
impl Clone for TensorShape {
    fn clone(&self) -> TensorShape {
        TensorShape { dims: Dims::from_slice(&self.dims) }
    }
}

/// Writes `[a, b, c]`.
fn write_dims(f: &mut fmt::Formatter<'_>, dims: &[i64]) -> fmt::Result {
    write!(f, "[")?;
    for (i, dim) in dims.iter().enumerate() {
        if i > 0 {
            write!(f, ", ")?;
        }
        write!(f, "{dim}")?;
    }
    write!(f, "]")
}

impl TensorShape {
    /// A shape of these dimensions; a negative one is an error.
    pub fn new(dims: Vec<i64>) -> Result<TensorShape, Diagnostic> {
        TensorShape::from_dims(&dims)
    }

    /// [`TensorShape::new`] from borrowed dimensions: no allocation for a rank of 4 or less.
    pub fn from_dims(dims: &[i64]) -> Result<TensorShape, Diagnostic> {
        if let Some(i) = dims.iter().position(|&d| d < 0) {
            return Err(Diagnostic::new(
                StatusCode::InvalidArgument,
                format!("dimension {i} of shape {:?} is negative", dims),
            ));
        }
        Ok(TensorShape { dims: Dims::from_slice(dims) })
    }

    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    pub fn dims(&self) -> &[i64] {
        &self.dims
    }

    /// The product of the dimensions (1 for a scalar); `None` when it overflows.
    pub fn num_elements(&self) -> Option<i64> {
        self.dims.iter().try_fold(1i64, |n, &d| n.checked_mul(d))
    }
}

impl fmt::Display for TensorShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_dims(f, &self.dims)
    }
}

/// A shape of unknown rank (`None`), or of known rank with dimensions that may be unknown (-1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartialTensorShape {
    dims: Option<Vec<i64>>,
}

impl PartialTensorShape {
    pub fn new(dims: Option<Vec<i64>>) -> PartialTensorShape {
        PartialTensorShape { dims }
    }

    pub fn dims(&self) -> Option<&[i64]> {
        self.dims.as_deref()
    }

    /// The shape, if every dimension is known. TFRT's errors otherwise: `Unknown rank`, or the
    /// indices of the unknown dimensions.
    pub fn to_shape(&self) -> Result<TensorShape, Diagnostic> {
        let dims = self.dims.as_ref().ok_or_else(|| Diagnostic::new(StatusCode::Internal, "Unknown rank"))?;
        let unknown: Vec<String> =
            dims.iter().enumerate().filter(|(_, &d)| d < 0).map(|(i, _)| i.to_string()).collect();
        if !unknown.is_empty() {
            return Err(Diagnostic::new(
                StatusCode::Internal,
                format!("Unknown dimensions at following indices = [{}]", unknown.join(", ")),
            ));
        }
        Ok(TensorShape { dims: Dims::from_slice(dims) })
    }
}

impl From<&TensorShape> for PartialTensorShape {
    fn from(shape: &TensorShape) -> PartialTensorShape {
        PartialTensorShape { dims: Some(shape.dims.to_vec()) }
    }
}

impl fmt::Display for PartialTensorShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.dims {
            None => write!(f, "Unknown rank"),
            Some(dims) => write_dims(f, dims),
        }
    }
}

/// A shape whose rank is part of its type (`ts.as_fixed_rank_shape.R`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixedRankShape {
    shape: TensorShape,
}

impl FixedRankShape {
    /// `shape`, which must have rank `rank`.
    pub fn new(shape: &TensorShape, rank: usize) -> Result<FixedRankShape, Diagnostic> {
        if shape.rank() != rank {
            return Err(Diagnostic::new(
                StatusCode::InvalidArgument,
                format!("shape {shape} does not have rank {rank}"),
            ));
        }
        Ok(FixedRankShape { shape: shape.clone() })
    }

    pub fn shape(&self) -> &TensorShape {
        &self.shape
    }
}

/// As TFRT prints it: the dimensions, except that a shape of no elements prints as `[]`.
impl fmt::Display for FixedRankShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.shape.num_elements() {
            Some(0) => write!(f, "[]"),
            _ => write_dims(f, self.shape.dims()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_print_and_count_as_tfrt_does() {
        let shape = TensorShape::new(vec![1, 57, 92]).unwrap();
        assert_eq!(shape.to_string(), "[1, 57, 92]");
        assert_eq!(shape.num_elements(), Some(5244));
        assert_eq!(TensorShape::default().to_string(), "[]");
        assert_eq!(TensorShape::default().num_elements(), Some(1));
        assert!(TensorShape::new(vec![2, -1]).is_err());
        assert_eq!(TensorShape::new(vec![i64::MAX, 2]).unwrap().num_elements(), None);
        let empty = TensorShape::new(vec![3, 0]).unwrap();
        assert_eq!(FixedRankShape::new(&empty, 2).unwrap().to_string(), "[]");
        assert!(FixedRankShape::new(&empty, 3).is_err());
    }

    #[test]
    fn partial_shapes_name_what_is_unknown() {
        assert_eq!(PartialTensorShape::new(None).to_string(), "Unknown rank");
        assert_eq!(PartialTensorShape::new(None).to_shape().unwrap_err().message, "Unknown rank");
        let partial = PartialTensorShape::new(Some(vec![-1, 3, -1]));
        assert_eq!(partial.to_string(), "[-1, 3, -1]");
        assert_eq!(partial.to_shape().unwrap_err().message, "Unknown dimensions at following indices = [0, 2]");
        assert_eq!(PartialTensorShape::new(Some(vec![2])).to_shape().unwrap().dims(), &[2]);
    }
}
