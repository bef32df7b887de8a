//! Tensors known at import: initializers, `Constant` nodes, and what shape computations on them
//! fold to. Their elements stay where the decoder found them — a slice of the model file's bytes
//! for `raw_data` — until the writer copies them once into the output.

use std::sync::Arc;

use bytes::Bytes;

use super::proto::tensor_proto::{DataLocation, DataType};
use super::proto::TensorProto;
use super::source::Source;
use super::ModelBytes;
use rtx_mlir::ir::Blob;

/// The element types a tensor may hold: ONNX's numbers and booleans. The `nn.*` layers take
/// f32 tensors, the `onnx.*` kernels any of these; integer constants are also shapes, axes and
/// indices that fold into attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    F32,
    F64,
    F16,
    BF16,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    Bool,
}

impl Elem {
    pub fn size(self) -> usize {
        match self {
            Elem::I8 | Elem::U8 | Elem::Bool => 1,
            Elem::F16 | Elem::BF16 | Elem::I16 | Elem::U16 => 2,
            Elem::F32 | Elem::I32 | Elem::U32 => 4,
            Elem::F64 | Elem::I64 | Elem::U64 => 8,
        }
    }

    /// The element type of ONNX's `TensorProto.DataType` code, or its name when unsupported.
    pub fn from_onnx(code: i32) -> Result<Elem, String> {
        Ok(match DataType::try_from(code) {
            Ok(DataType::Float) => Elem::F32,
            Ok(DataType::Double) => Elem::F64,
            Ok(DataType::Float16) => Elem::F16,
            Ok(DataType::Bfloat16) => Elem::BF16,
            Ok(DataType::Int8) => Elem::I8,
            Ok(DataType::Int16) => Elem::I16,
            Ok(DataType::Int32) => Elem::I32,
            Ok(DataType::Int64) => Elem::I64,
            Ok(DataType::Uint8) => Elem::U8,
            Ok(DataType::Uint16) => Elem::U16,
            Ok(DataType::Uint32) => Elem::U32,
            Ok(DataType::Uint64) => Elem::U64,
            Ok(DataType::Bool) => Elem::Bool,
            Ok(other) => return Err(format!("{} elements are not supported", other.as_str_name())),
            Err(_) => return Err(format!("element type {code} is not an ONNX type")),
        })
    }
}

/// A tensor whose elements are known: `dims` (row-major) and little-endian elements.
#[derive(Clone, Debug)]
pub struct Constant {
    pub elem: Elem,
    pub dims: Vec<i64>,
    pub data: Blob,
}

/// The number of elements of `dims`, or `None` when a dimension is negative or the product
/// overflows.
pub fn element_count(dims: &[i64]) -> Option<usize> {
    dims.iter().try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?))
}

impl Constant {
    /// A constant over `data`, which must hold exactly the elements of `dims`.
    pub fn new(elem: Elem, dims: Vec<i64>, data: Blob) -> Result<Constant, String> {
        let count = element_count(&dims).ok_or_else(|| format!("shape {dims:?} is not a valid shape"))?;
        if count.checked_mul(elem.size()) != Some(data.len()) {
            return Err(format!("{} bytes of data for {count} {elem:?} elements of shape {dims:?}", data.len()));
        }
        Ok(Constant { elem, dims, data })
    }

    /// A 1-D i64 constant.
    pub fn from_i64s(values: &[i64]) -> Constant {
        let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        Constant { elem: Elem::I64, dims: vec![values.len() as i64], data: Blob::from_vec(bytes) }
    }

    /// An f32 constant of `dims`, which must hold exactly `values`.
    pub fn from_f32s(dims: Vec<i64>, values: &[f32]) -> Result<Constant, String> {
        let mut bytes = Vec::with_capacity(std::mem::size_of_val(values));
        values.iter().for_each(|v| bytes.extend_from_slice(&v.to_le_bytes()));
        Constant::new(Elem::F32, dims, Blob::from_vec(bytes))
    }

    /// The same elements under other dimensions (their count must match; the bytes are shared).
    pub fn reshaped(&self, dims: Vec<i64>) -> Result<Constant, String> {
        Constant::new(self.elem, dims, self.data.clone())
    }

    /// The elements as integers: shapes, axes and indices.
    pub fn to_i64s(&self) -> Result<Vec<i64>, String> {
        let bytes = self.data.bytes();
        match self.elem {
            Elem::I64 => {
                Ok(bytes.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes"))).collect())
            }
            Elem::I32 => {
                Ok(bytes.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().expect("4 bytes")) as i64).collect())
            }
            other => Err(format!("expected 32- or 64-bit integers, found {other:?} elements")),
        }
    }

    /// The elements as f32s (Clip's bounds).
    pub fn to_f32s(&self) -> Result<Vec<f32>, String> {
        match self.elem {
            Elem::F32 => Ok(self
                .data
                .bytes()
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
                .collect()),
            other => Err(format!("expected f32 elements, found {other:?}")),
        }
    }

    /// `ConstantOfShape`: `dims` filled with the one element of `value`.
    pub fn filled(value: &Constant, dims: Vec<i64>) -> Result<Constant, String> {
        if value.data.len() != value.elem.size() {
            return Err(format!("the fill value holds {} elements, not one", value.data.len() / value.elem.size()));
        }
        let count = element_count(&dims).ok_or_else(|| format!("shape {dims:?} is not a valid shape"))?;
        let too_large = || format!("a constant of shape {dims:?} does not fit in memory");
        let len = count.checked_mul(value.elem.size()).ok_or_else(too_large)?;
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(len).map_err(|_| too_large())?;
        for _ in 0..count {
            bytes.extend_from_slice(value.data.bytes());
        }
        Constant::new(value.elem, dims, Blob::from_vec(bytes))
    }
}

/// The constant an initializer or `Constant` node's tensor holds, its elements read from where
/// `source` says: `raw_data` inside the model's bytes is shared, not copied, and so is external
/// data.
pub fn from_proto(tensor: &TensorProto, source: &Source) -> Result<Constant, String> {
    if tensor.segment.is_some() {
        return Err("it is segmented, which rtx does not read".to_owned());
    }
    let elem = Elem::from_onnx(tensor.data_type.unwrap_or(0))?;
    let dims = tensor.dims.clone();
    let data = if tensor.data_location == Some(DataLocation::External as i32) {
        source.external(tensor)?
    } else if let Some(raw) = tensor.raw_data.as_ref().filter(|raw| !raw.is_empty()) {
        shared(raw, &source.file)
    } else {
        // Each type's typed field, as onnx.proto says: the narrow integers, booleans and half
        // floats' bits in int32_data, the unsigned 32- and 64-bit ones in uint64_data.
        let narrow = |size: usize| -> Vec<u8> {
            tensor.int32_data.iter().flat_map(|v| v.to_le_bytes()[..size].to_vec()).collect()
        };
        let bytes: Vec<u8> = match elem {
            Elem::F32 => tensor.float_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
            Elem::F64 => tensor.double_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
            Elem::I32 => tensor.int32_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
            Elem::I64 => tensor.int64_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
            Elem::U32 => tensor.uint64_data.iter().flat_map(|v| (*v as u32).to_le_bytes()).collect(),
            Elem::U64 => tensor.uint64_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
            Elem::I8 | Elem::U8 | Elem::Bool => narrow(1),
            Elem::I16 | Elem::U16 | Elem::F16 | Elem::BF16 => narrow(2),
        };
        Blob::from_vec(bytes)
    };
    Constant::new(elem, dims, data)
}

/// `bytes` as a slice of `file` when the decoder left them there (it does for a model decoded
/// from `file` itself), else a copy.
fn shared(bytes: &Bytes, file: &ModelBytes) -> Blob {
    let start = (bytes.as_ptr() as usize).wrapping_sub((**file).as_ref().as_ptr() as usize);
    Blob::shared(Arc::clone(file), start, bytes.len()).unwrap_or_else(|| Blob::from_vec(bytes.to_vec()))
}
