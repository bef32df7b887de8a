//! Builtin type syntax.

use std::fmt::Write;

use super::{PrintError, Printer};
use crate::ir::{AffineExpr, AttrId, Attribute, MlirContext, Signedness, Type, TypeId, DYNAMIC};

/// Whether a memref layout is the identity map of its rank (upstream leaves it out).
fn is_identity(ctx: &MlirContext, layout: AttrId, rank: usize) -> bool {
    matches!(ctx.attr(layout), Attribute::AffineMap(map)
        if map.num_symbols == 0
            && map.num_dims as usize == rank
            && map.results.iter().enumerate().all(|(i, e)| *e == AffineExpr::Dim(i as u32)))
}

impl Printer<'_> {
    pub(crate) fn ty(&mut self, id: TypeId) {
        let m = self.module;
        match m.context.ty(id) {
            Type::Integer { width, signedness } => {
                let prefix = match signedness {
                    Signedness::Signless => "i",
                    Signedness::Signed => "si",
                    Signedness::Unsigned => "ui",
                };
                let _ = write!(self.out, "{prefix}{width}");
            }
            Type::Index => self.out.push_str("index"),
            Type::Float(kind) => self.out.push_str(kind.keyword()),
            Type::Function { inputs, results } => {
                self.type_list(inputs);
                self.out.push_str(" -> ");
                let bare =
                    self.upstream && results.len() == 1 && !matches!(m.context.ty(results[0]), Type::Function { .. });
                if bare {
                    self.ty(results[0]);
                } else {
                    self.type_list(results);
                }
            }
            Type::Complex(elem) => {
                self.out.push_str("complex<");
                self.ty(*elem);
                self.out.push('>');
            }
            Type::MemRef { shape, elem, layout, memory_space } => {
                self.out.push_str("memref<");
                self.shape(shape, None);
                self.ty(*elem);
                if !(self.upstream && is_identity(&m.context, *layout, shape.len())) {
                    self.out.push_str(", ");
                    self.attr(*layout);
                }
                if let Some(space) = memory_space {
                    self.out.push_str(", ");
                    self.attr(*space);
                }
                self.out.push('>');
            }
            Type::UnrankedMemRef { elem, memory_space } => {
                self.out.push_str("memref<*x");
                self.ty(*elem);
                if let Some(space) = memory_space {
                    self.out.push_str(", ");
                    self.attr(*space);
                }
                self.out.push('>');
            }
            Type::RankedTensor { shape, elem, encoding } => {
                self.out.push_str("tensor<");
                self.shape(shape, None);
                self.ty(*elem);
                if let Some(encoding) = encoding {
                    self.out.push_str(", ");
                    self.attr(*encoding);
                }
                self.out.push('>');
            }
            Type::UnrankedTensor { elem } => {
                self.out.push_str("tensor<*x");
                self.ty(*elem);
                self.out.push('>');
            }
            Type::Vector { shape, scalable, elem } => {
                self.out.push_str("vector<");
                self.shape(shape, scalable.as_deref());
                self.ty(*elem);
                self.out.push('>');
            }
            Type::Tuple(items) => {
                self.out.push_str("tuple<");
                for (i, &item) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.ty(item);
                }
                self.out.push('>');
            }
            Type::None => self.out.push_str("none"),
            Type::Text { text, .. } => self.out.push_str(&m.context.str(*text)),
            Type::Custom { dialect, .. } => {
                if let Some(text) = self.resolved.and_then(|r| r.types.get(&id)) {
                    self.out.push_str(text);
                    return;
                }
                self.out.push_str("none");
                self.fail(PrintError::CustomType(m.context.dialect_name(*dialect).into_owned()));
            }
        }
    }

    fn type_list(&mut self, types: &[TypeId]) {
        self.out.push('(');
        for (i, &ty) in types.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.ty(ty);
        }
        self.out.push(')');
    }

    /// `4x?x[8]x` (each dimension followed by `x`).
    fn shape(&mut self, shape: &[i64], scalable: Option<&[bool]>) {
        for (i, &dim) in shape.iter().enumerate() {
            let scalable = scalable.is_some_and(|s| s.get(i).copied().unwrap_or(false));
            if scalable {
                self.out.push('[');
            }
            if dim == DYNAMIC {
                self.out.push('?');
            } else {
                let _ = write!(self.out, "{dim}");
            }
            if scalable {
                self.out.push(']');
            }
            self.out.push('x');
        }
    }
}
