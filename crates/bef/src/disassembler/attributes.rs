//! Attributes back to MLIR: each kind read through the reader's [`Attribute`] view (the one the
//! kernels read attributes through) and rebuilt as the MLIR attribute `mlir_to_bef` encodes as
//! that kind. Types of attributes and dense elements come from [`DType::mlir_type`].

use std::collections::HashMap;

use super::error::DisassembleError;
use crate::format::{AttributeType, DType};
use rtx_kernel::attribute::{Attribute, AttributeError, CompilationUnit};
use rtx_mlir::ir::{dense_storage, ApInt, AttrId, Attribute as Attr, Blob, MlirContext, Type, TypeId};
use rtx_mlir::text::parse::{parse_attribute_in, parse_type_in};

/// Aggregates nest no deeper than this (each level is a recursion; a hostile file could make an
/// aggregate hold itself).
const MAX_DEPTH: usize = 64;

/// Rebuilds attributes in one context, remembering the MLIR type of each element type.
pub(super) struct AttributeDecoder<'c> {
    pub(super) ctx: &'c mut MlirContext,
    dtypes: HashMap<DType, TypeId>,
}

impl<'c> AttributeDecoder<'c> {
    pub(super) fn new(ctx: &'c mut MlirContext) -> Self {
        AttributeDecoder { ctx, dtypes: HashMap::new() }
    }

    /// The MLIR type of `dtype`.
    pub(super) fn dtype(&mut self, dtype: DType) -> TypeId {
        if let Some(&ty) = self.dtypes.get(&dtype) {
            return ty;
        }
        let ty = parse_type_in(self.ctx, dtype.mlir_type()).expect("every DType's MLIR spelling parses");
        self.dtypes.insert(dtype, ty);
        ty
    }

    /// The attribute at `offset` of `section`, of kind `kind`.
    pub(super) fn decode(
        &mut self,
        section: &[u8],
        offset: u32,
        kind: AttributeType,
    ) -> Result<AttrId, DisassembleError> {
        self.attribute(Attribute::new(section, offset as usize), kind, 0).map_err(|error| DisassembleError::Attribute {
            offset,
            kind,
            error,
        })
    }

    fn attribute(&mut self, attr: Attribute<'_>, kind: AttributeType, depth: usize) -> Result<AttrId, AttributeError> {
        let malformed = |what: String| AttributeError::Malformed { offset: attr.offset(), what };
        let value = match kind {
            AttributeType::Scalar(DType::String) => {
                let value = self.ctx.intern_str(attr.string_bytes()?);
                Attr::String { value, ty: None }
            }
            AttributeType::Scalar(dtype) => return self.scalar(dtype, attr.raw_scalar(dtype)?, attr.offset()),
            AttributeType::Type => Attr::Type(self.dtype(attr.dtype()?)),
            AttributeType::Shape => {
                let text = match attr.shape()? {
                    None => "#corert.shape<*>".to_owned(),
                    Some(dims) => {
                        let dims: Vec<String> =
                            dims.iter().map(|&d| if d == -1 { "?".to_owned() } else { d.to_string() }).collect();
                        format!("#corert.shape<{}>", dims.join("x"))
                    }
                };
                return parse_attribute_in(self.ctx, &text).map_err(|e| malformed(format!("`{text}`: {e}")));
            }
            AttributeType::Dense => {
                let dense = attr.dense()?;
                if let Some(&dim) = dense.shape.iter().find(|&&d| d < 0) {
                    return Err(malformed(format!("dense elements with dimension {dim}")));
                }
                let count = dense.shape.iter().try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?));
                let size = dense.dtype.byte_size().unwrap_or(1);
                if count.and_then(|n| n.checked_mul(size)) != Some(dense.data.len()) {
                    return Err(malformed(format!(
                        "dense elements of shape {:?} hold {} bytes",
                        dense.shape,
                        dense.data.len()
                    )));
                }
                let elem = self.dtype(dense.dtype);
                let ty = self.ctx.intern_type(Type::RankedTensor { shape: dense.shape.into(), elem, encoding: None });
                let is_i1 = dense.dtype == DType::I1;
                let data =
                    dense_storage(dense.data.iter().map(|&b| if is_i1 { b & 1 } else { b }).collect(), size, is_i1);
                Attr::DenseElements { ty, data: Blob::from_vec(data) }
            }
            AttributeType::Array(dtype) => {
                let size = dtype.byte_size().unwrap_or(1);
                let elements = attr.raw_array(dtype)?;
                let items = elements
                    .chunks_exact(size)
                    .map(|bytes| self.scalar(dtype, bytes, attr.offset()))
                    .collect::<Result<Vec<_>, _>>()?;
                Attr::Array(items.into())
            }
            AttributeType::TypeArray => {
                let items: Vec<AttrId> = attr
                    .dtype_array()?
                    .into_iter()
                    .map(|d| {
                        let ty = self.dtype(d);
                        self.ctx.intern_attr(Attr::Type(ty))
                    })
                    .collect();
                Attr::Array(items.into())
            }
            AttributeType::Aggregate => {
                if depth >= MAX_DEPTH {
                    return Err(malformed(format!("aggregates nest deeper than {MAX_DEPTH} levels")));
                }
                let aggregate = attr.aggregate()?;
                let items = (0..aggregate.len())
                    .map(|i| self.attribute(aggregate.get(i)?, aggregate.kind(i)?, depth + 1))
                    .collect::<Result<Vec<_>, _>>()?;
                Attr::Array(items.into())
            }
            AttributeType::SymbolRef => return Ok(self.symbol(&attr.compilation_unit()?)),
            AttributeType::Func => return Err(malformed("a function reference is no attribute".to_owned())),
        };
        Ok(self.ctx.intern_attr(value))
    }

    /// An integer or float of `dtype` from its little-endian bytes.
    fn scalar(&mut self, dtype: DType, bytes: &[u8], offset: usize) -> Result<AttrId, AttributeError> {
        let mut word = [0u8; 8];
        let len = bytes.len().min(8);
        word[..len].copy_from_slice(&bytes[..len]);
        let bits = u64::from_le_bytes(word);
        let ty = self.dtype(dtype);
        let value = match *self.ctx.ty(ty) {
            Type::Integer { width, .. } => Attr::Integer { ty, value: ApInt::from_u64(width, bits) },
            Type::Float(kind) => Attr::Float { ty, bits: ApInt::from_u64(kind.bit_width(), bits) },
            _ => {
                return Err(AttributeError::Malformed {
                    offset,
                    what: format!("{dtype:?} values are no scalar attribute"),
                })
            }
        };
        Ok(self.ctx.intern_attr(value))
    }

    /// `@root::@nested...` (a flat reference when nothing is nested).
    pub(super) fn symbol(&mut self, unit: &CompilationUnit<'_>) -> AttrId {
        let root = self.ctx.intern_string_attr(unit.root.as_bytes());
        if unit.nested.is_empty() {
            return self.ctx.intern_attr(Attr::FlatSymbolRef(root));
        }
        let nested: Vec<AttrId> = unit
            .nested
            .iter()
            .map(|name| {
                let name = self.ctx.intern_string_attr(name.as_bytes());
                self.ctx.intern_attr(Attr::FlatSymbolRef(name))
            })
            .collect();
        self.ctx.intern_attr(Attr::SymbolRef { root, nested: nested.into() })
    }
}
