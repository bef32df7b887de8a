//! Host tensors and shapes, the values TFRT's tensor kernels pass around: [`TensorShape`]
//! (known dimensions), [`PartialTensorShape`] (unknown rank or dimensions), [`FixedRankShape`],
//! [`DenseHostTensor`] (typed elements in one aligned host buffer), [`StringHostTensor`] and
//! [`CooHostTensor`] (sparse: indices and values), and [`TensorType`], the names of those kinds.
//! Element types are BEF's [`DType`], with the Rust types that hold them given by [`Element`].
//!
//! [`DType`]: crate::dtype::DType

pub(crate) mod coo;
pub mod dense;
pub(crate) mod element;
pub(crate) mod shape;
pub(crate) mod string;
pub(crate) mod tensor_type;

pub use coo::CooHostTensor;
pub use dense::DenseHostTensor;
pub use element::{dtype_name, format_element, Element};
pub use shape::{FixedRankShape, PartialTensorShape, TensorShape};
pub use string::StringHostTensor;
pub use tensor_type::TensorType;
