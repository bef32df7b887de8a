//! Builtin attribute and location syntax.

use std::fmt::Write;

use super::{PrintError, Printer};
use crate::ir::{AffineExpr, ApInt, AttrId, Attribute, ScalarKind, Signedness, Type, DYNAMIC};

/// The decimal digits of an integer given as little-endian words (unsigned).
fn decimal(words: &[u64]) -> String {
    let mut words: Vec<u64> = words.to_vec();
    while words.last() == Some(&0) {
        words.pop();
    }
    if words.is_empty() {
        return "0".into();
    }
    if words.len() == 1 {
        return words[0].to_string();
    }
    const CHUNK: u64 = 10_000_000_000_000_000_000;
    let mut chunks = Vec::new();
    while !words.is_empty() {
        let mut rem: u128 = 0;
        for word in words.iter_mut().rev() {
            let cur = (rem << 64) | u128::from(*word);
            *word = (cur / u128::from(CHUNK)) as u64;
            rem = cur % u128::from(CHUNK);
        }
        chunks.push(rem as u64);
        while words.last() == Some(&0) {
            words.pop();
        }
    }
    let mut s = chunks.pop().expect("one chunk").to_string();
    for chunk in chunks.iter().rev() {
        let _ = write!(s, "{chunk:019}");
    }
    s
}

/// Two's complement negation within `width` bits.
fn negate(value: &ApInt) -> Vec<u64> {
    let mut words: Vec<u64> = value.words().iter().map(|w| !w).collect();
    let mut carry = true;
    for word in words.iter_mut() {
        if carry {
            let (sum, overflow) = word.overflowing_add(1);
            *word = sum;
            carry = overflow;
        }
    }
    let rem = value.width % 64;
    if rem != 0 {
        if let Some(last) = words.last_mut() {
            *last &= (1u64 << rem) - 1;
        }
    }
    words
}

/// An integer as MLIR writes it: signed unless the type is unsigned.
pub(crate) fn int_text(value: &ApInt, signed: bool) -> String {
    if signed && value.is_negative() {
        format!("-{}", decimal(&negate(value)))
    } else {
        decimal(value.words())
    }
}

/// Reads element `index` of little-endian storage as an [`ApInt`] of `bits` bits.
fn read_scalar(data: &[u8], offset: usize, bytes: usize, bits: u32) -> ApInt {
    let slice = &data[offset..offset + bytes];
    let mut words = vec![0u64; bytes.div_ceil(8).max(1)];
    for (i, &b) in slice.iter().enumerate() {
        words[i / 8] |= u64::from(b) << (8 * (i % 8));
    }
    ApInt::from_words(bits, words)
}

impl Printer<'_> {
    /// An attribute in attribute position (locations as `loc(...)`).
    pub(crate) fn attr(&mut self, id: AttrId) {
        let m = self.module;
        let ctx = &m.context;
        match ctx.attr(id) {
            Attribute::Array(items) => {
                self.out.push('[');
                for (i, &item) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.attr(item);
                }
                self.out.push(']');
            }
            Attribute::Dictionary(entries) => {
                self.out.push('{');
                for (i, &(name, value)) in entries.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    if self.upstream {
                        self.symbol_or_key(name);
                        if matches!(ctx.attr(value), Attribute::Unit) {
                            continue;
                        }
                    } else {
                        self.string_attr_value(name);
                    }
                    self.out.push_str(" = ");
                    self.attr(value);
                }
                self.out.push('}');
            }
            Attribute::String { value, ty } => {
                self.string(ctx.str_bytes(*value));
                if let Some(ty) = ty {
                    self.out.push_str(" : ");
                    self.ty(*ty);
                }
            }
            Attribute::FlatSymbolRef(root) => {
                self.out.push('@');
                self.symbol_or_key(*root);
            }
            Attribute::SymbolRef { root, nested } => {
                self.out.push('@');
                self.symbol_or_key(*root);
                for &n in nested.iter() {
                    self.out.push_str("::");
                    self.attr(n);
                }
            }
            Attribute::Type(ty) => self.ty(*ty),
            Attribute::Unit => self.out.push_str("unit"),
            Attribute::Integer { ty, value } => {
                let (signed, is_i1) = match ctx.ty(*ty) {
                    Type::Integer { width, signedness } => {
                        (*signedness != Signedness::Unsigned, *width == 1 && *signedness == Signedness::Signless)
                    }
                    _ => (true, false),
                };
                if is_i1 {
                    self.out.push_str(if value.words()[0] & 1 == 1 { "true" } else { "false" });
                } else {
                    self.out.push_str(&int_text(value, signed));
                    let i64 = matches!(ctx.ty(*ty), Type::Integer { width: 64, signedness: Signedness::Signless });
                    if !(self.upstream && i64) {
                        self.out.push_str(" : ");
                        self.ty(*ty);
                    }
                }
            }
            Attribute::Float { ty, bits } => {
                let kind = match ctx.ty(*ty) {
                    Type::Float(kind) => Some(*kind),
                    _ => None,
                };
                let hex = self.float(bits, kind);
                if !(self.upstream && !hex && kind == Some(crate::ir::FloatKind::F64)) {
                    self.out.push_str(" : ");
                    self.ty(*ty);
                }
            }
            Attribute::DenseArray { elem, count, data } => {
                self.out.push_str("array<");
                self.ty(*elem);
                if let Some(storage) = ctx.element_storage(*elem) {
                    let bytes = storage.scalar_bytes();
                    for i in 0..*count as usize {
                        self.out.push_str(if i == 0 { ": " } else { ", " });
                        let value = read_scalar(data.bytes(), i * bytes, bytes, storage.bits);
                        self.scalar(storage.scalar, &value);
                    }
                }
                self.out.push('>');
            }
            Attribute::DenseElements { ty, data } => {
                self.out.push_str("dense<");
                if self.upstream {
                    self.dense_literal(*ty, data.bytes());
                } else {
                    self.dense_hex(*ty, data.bytes());
                }
                self.out.push_str("> : ");
                self.ty(*ty);
            }
            Attribute::DenseString { ty, splat, values } => {
                self.out.push_str("dense<");
                if *splat {
                    self.string(ctx.str_bytes(values[0]));
                } else {
                    let shape = ctx.ty(*ty).shape().unwrap_or(&[]).to_vec();
                    let mut next = 0usize;
                    self.nested(&shape, &mut |p: &mut Self| {
                        p.string(ctx.str_bytes(values[next]));
                        next += 1;
                    });
                }
                self.out.push_str("> : ");
                self.ty(*ty);
            }
            Attribute::DenseResource { ty, resource } => {
                self.out.push_str("dense_resource<");
                self.keyword_or_string(ctx.str_bytes(resource.key));
                self.out.push_str("> : ");
                self.ty(*ty);
            }
            Attribute::Sparse { ty, indices, values } => {
                self.out.push_str("sparse<");
                if let Attribute::DenseElements { ty: index_ty, data } = ctx.attr(*indices) {
                    self.dense_decimal(*index_ty, data.bytes());
                }
                self.out.push_str(", ");
                match ctx.attr(*values) {
                    Attribute::DenseElements { ty: values_ty, data } => self.dense_hex(*values_ty, data.bytes()),
                    Attribute::DenseString { values: strings, .. } => {
                        self.out.push('[');
                        for (i, &s) in strings.iter().enumerate() {
                            if i > 0 {
                                self.out.push_str(", ");
                            }
                            self.string(ctx.str_bytes(s));
                        }
                        self.out.push(']');
                    }
                    _ => {}
                }
                self.out.push_str("> : ");
                self.ty(*ty);
            }
            Attribute::Distinct { id, referenced } => {
                let next = self.distinct_ids.len();
                let n = *self.distinct_ids.entry(*id).or_insert(next);
                let _ = write!(self.out, "distinct[{n}]<");
                self.attr(*referenced);
                self.out.push('>');
            }
            Attribute::AffineMap(map) => {
                self.out.push_str("affine_map<");
                self.dims_and_symbols(map.num_dims, map.num_symbols);
                self.out.push_str(" -> (");
                for (i, e) in map.results.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.affine(e);
                }
                self.out.push_str(")>");
            }
            Attribute::IntegerSet(set) => {
                self.out.push_str("affine_set<");
                self.dims_and_symbols(set.num_dims, set.num_symbols);
                self.out.push_str(" : (");
                for (i, (e, eq)) in set.constraints.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.affine(e);
                    self.out.push_str(if *eq { " == 0" } else { " >= 0" });
                }
                self.out.push_str(")>");
            }
            Attribute::StridedLayout { offset, strides } => {
                self.out.push_str("strided<[");
                for (i, &s) in strides.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.dynamic(s);
                }
                self.out.push_str("], offset: ");
                self.dynamic(*offset);
                self.out.push('>');
            }
            Attribute::UnknownLoc
            | Attribute::FileLineColLoc { .. }
            | Attribute::FileLineColRange { .. }
            | Attribute::NameLoc { .. }
            | Attribute::CallSiteLoc { .. }
            | Attribute::FusedLoc { .. } => {
                self.out.push_str("loc(");
                self.loc_body(id);
                self.out.push(')');
            }
            Attribute::Text { text, .. } => self.out.push_str(&ctx.str(*text)),
            Attribute::Custom { dialect, .. } => {
                if let Some(text) = self.resolved.and_then(|r| r.attrs.get(&id)) {
                    self.out.push_str(text);
                    return;
                }
                self.out.push_str("unit");
                self.fail(PrintError::CustomAttribute(ctx.dialect_name(*dialect).into_owned()));
            }
        }
    }

    /// A symbol name or dictionary key: quoted in the exact form, bare where it can be upstream.
    fn symbol_or_key(&mut self, id: AttrId) {
        let ctx = &self.module.context;
        match ctx.attr(id) {
            Attribute::String { value, .. } if self.upstream => self.keyword_or_string(ctx.str_bytes(*value)),
            _ => self.string_attr_value(id),
        }
    }

    /// A float's bits: in hex, or in upstream's decimal when that reads back exactly. Returns
    /// whether it was printed in hex.
    fn float(&mut self, bits: &ApInt, kind: Option<crate::ir::FloatKind>) -> bool {
        match kind.filter(|_| self.upstream) {
            Some(kind) => {
                let words = bits.words();
                let raw = u128::from(words[0]) | (u128::from(words.get(1).copied().unwrap_or(0)) << 64);
                let text = crate::float::print_float(raw, kind);
                let hex = text.starts_with("0x");
                self.out.push_str(&text);
                hex
            }
            None => {
                self.float_bits(bits);
                true
            }
        }
    }

    /// The quoted value of a string attribute (dictionary keys, symbol names, file names).
    fn string_attr_value(&mut self, id: AttrId) {
        let ctx = &self.module.context;
        match ctx.attr(id) {
            Attribute::String { value, .. } => self.string(ctx.str_bytes(*value)),
            _ => self.attr(id),
        }
    }

    /// A location without the `loc(...)` around it.
    pub(crate) fn loc_body(&mut self, id: AttrId) {
        let ctx = &self.module.context;
        match ctx.attr(id) {
            Attribute::UnknownLoc => self.out.push_str("unknown"),
            Attribute::FileLineColLoc { filename, line, column } => {
                self.string_attr_value(*filename);
                let _ = write!(self.out, ":{line}:{column}");
            }
            Attribute::FileLineColRange { filename, parts } => {
                self.string_attr_value(*filename);
                let _ = match **parts {
                    [] => write!(self.out, ":0:0"),
                    [line] => write!(self.out, ":{line}:0"),
                    [line, col] => write!(self.out, ":{line}:{col}"),
                    [line, col, end_col] => write!(self.out, ":{line}:{col} to :{end_col}"),
                    [line, col, end_line, end_col, ..] => write!(self.out, ":{line}:{col} to {end_line}:{end_col}"),
                };
            }
            Attribute::NameLoc { name, child } => {
                self.string_attr_value(*name);
                if !matches!(ctx.attr(*child), Attribute::UnknownLoc) {
                    self.out.push('(');
                    self.loc_body(*child);
                    self.out.push(')');
                }
            }
            Attribute::CallSiteLoc { callee, caller } => {
                self.out.push_str("callsite(");
                self.loc_body(*callee);
                self.out.push_str(" at ");
                self.loc_body(*caller);
                self.out.push(')');
            }
            Attribute::FusedLoc { locations, metadata } => {
                self.out.push_str("fused");
                if let Some(metadata) = metadata {
                    self.out.push('<');
                    self.attr(*metadata);
                    self.out.push('>');
                }
                self.out.push('[');
                for (i, &l) in locations.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.loc_body(l);
                }
                self.out.push(']');
            }
            _ => self.attr(id),
        }
    }

    fn dynamic(&mut self, value: i64) {
        if value == DYNAMIC {
            self.out.push('?');
        } else {
            let _ = write!(self.out, "{value}");
        }
    }

    fn float_bits(&mut self, bits: &ApInt) {
        self.out.push_str("0x");
        let words = bits.words();
        let digits = bits.width.div_ceil(4) as usize;
        let mut hex = String::with_capacity(digits);
        for i in (0..digits).rev() {
            let nibble = (words[i / 16] >> ((i % 16) * 4)) & 15;
            hex.push(char::from_digit(nibble as u32, 16).expect("nibble").to_ascii_uppercase());
        }
        self.out.push_str(&hex);
    }

    fn scalar(&mut self, kind: ScalarKind, value: &ApInt) {
        match kind {
            ScalarKind::Integer(Signedness::Signless) if value.width == 1 => {
                self.out.push_str(if value.words()[0] & 1 == 1 { "true" } else { "false" })
            }
            ScalarKind::Integer(Signedness::Unsigned) => self.out.push_str(&int_text(value, false)),
            ScalarKind::Integer(_) | ScalarKind::Index => self.out.push_str(&int_text(value, true)),
            ScalarKind::Float(kind) => {
                self.float(value, Some(kind));
            }
        }
    }

    fn dims_and_symbols(&mut self, dims: u32, symbols: u32) {
        self.out.push('(');
        for d in 0..dims {
            if d > 0 {
                self.out.push_str(", ");
            }
            let _ = write!(self.out, "d{d}");
        }
        self.out.push(')');
        if symbols > 0 {
            self.out.push('[');
            for s in 0..symbols {
                if s > 0 {
                    self.out.push_str(", ");
                }
                let _ = write!(self.out, "s{s}");
            }
            self.out.push(']');
        }
    }

    /// An affine expression, fully parenthesised.
    fn affine(&mut self, e: &AffineExpr) {
        let (op, lhs, rhs) = match e {
            AffineExpr::Dim(d) => {
                let _ = write!(self.out, "d{d}");
                return;
            }
            AffineExpr::Symbol(s) => {
                let _ = write!(self.out, "s{s}");
                return;
            }
            AffineExpr::Constant(c) => {
                if *c < 0 {
                    let _ = write!(self.out, "({c})");
                } else {
                    let _ = write!(self.out, "{c}");
                }
                return;
            }
            AffineExpr::Add(l, r) => ("+", l, r),
            AffineExpr::Mul(l, r) => ("*", l, r),
            AffineExpr::Mod(l, r) => ("mod", l, r),
            AffineExpr::FloorDiv(l, r) => ("floordiv", l, r),
            AffineExpr::CeilDiv(l, r) => ("ceildiv", l, r),
        };
        self.out.push('(');
        self.affine(lhs);
        let _ = write!(self.out, " {op} ");
        self.affine(rhs);
        self.out.push(')');
    }

    /// Dense int/float data as MLIR's hex form (`"0x..."`, i1 one byte per element), or `` for no
    /// elements.
    fn dense_hex(&mut self, ty: crate::ir::TypeId, data: &[u8]) {
        let ctx = &self.module.context;
        let elem = ctx.ty(ty).element_type();
        let storage = elem.and_then(|e| ctx.element_storage(e));
        let n = ctx.num_elements(ty).unwrap_or(0);
        if n == 0 {
            return;
        }
        self.out.push_str("\"0x");
        match storage {
            Some(s) if s.is_i1() => {
                // One byte 00/FF is a splat (it means the same when read as packed bits).
                if data.len() == 1 && matches!(data[0], 0 | 0xff) {
                    self.hex(&[data[0] & 1]);
                } else {
                    let unpacked: Vec<u8> = (0..n as usize).map(|i| (data[i / 8] >> (i % 8)) & 1).collect();
                    self.hex(&unpacked);
                }
            }
            _ => self.hex(data),
        }
        self.out.push('"');
    }

    /// Dense int, float or complex data as upstream writes it: one element for a splat, nested
    /// lists of elements, or hex for more than 100 elements.
    fn dense_literal(&mut self, ty: crate::ir::TypeId, data: &[u8]) {
        let ctx = &self.module.context;
        let Some(storage) = ctx.ty(ty).element_type().and_then(|e| ctx.element_storage(e)) else { return };
        let n = ctx.num_elements(ty).unwrap_or(0) as usize;
        if n == 0 {
            return;
        }
        let size = storage.element_bytes();
        // A splat is stored as one element (for i1, as one byte 00/FF); i1 data is packed bits.
        let stored_splat =
            if storage.is_i1() { data.len() == 1 && matches!(data[0], 0 | 0xff) } else { data.len() == size };
        let element = |i: usize| -> Vec<u8> {
            let i = if stored_splat { 0 } else { i };
            if storage.is_i1() {
                vec![(data.get(i / 8).copied().unwrap_or(0) >> (i % 8)) & 1]
            } else {
                data.get(i * size..(i + 1) * size).unwrap_or(&[]).to_vec()
            }
        };
        let first = element(0);
        let splat = (1..n).all(|i| element(i) == first);
        if !splat && n > 100 {
            self.dense_hex(ty, data);
            return;
        }
        let shape = if splat { Vec::new() } else { ctx.ty(ty).shape().unwrap_or(&[]).to_vec() };
        let scalar_bytes = if storage.is_i1() { 1 } else { storage.scalar_bytes() };
        let bits = storage.bits;
        let mut next = 0usize;
        self.nested(&shape, &mut |p: &mut Self| {
            let bytes = element(next);
            next += 1;
            if storage.complex {
                p.out.push('(');
                p.scalar(storage.scalar, &read_scalar(&bytes, 0, scalar_bytes, bits));
                p.out.push(',');
                p.scalar(storage.scalar, &read_scalar(&bytes, scalar_bytes, scalar_bytes, bits));
                p.out.push(')');
            } else {
                p.scalar(storage.scalar, &read_scalar(&bytes, 0, scalar_bytes, bits));
            }
        });
    }

    /// Dense integer data as nested decimal lists (sparse indices).
    fn dense_decimal(&mut self, ty: crate::ir::TypeId, data: &[u8]) {
        let ctx = &self.module.context;
        let Some(storage) = ctx.ty(ty).element_type().and_then(|e| ctx.element_storage(e)) else { return };
        let shape = ctx.ty(ty).shape().unwrap_or(&[]).to_vec();
        let n = ctx.num_elements(ty).unwrap_or(0) as usize;
        let bytes = storage.scalar_bytes();
        if data.len() != n * bytes {
            return;
        }
        let mut next = 0usize;
        self.nested(&shape, &mut |p: &mut Self| {
            let index = next;
            next += 1;
            let value = read_scalar(data, index * bytes, bytes, storage.bits);
            p.scalar(storage.scalar, &value);
        });
    }

    /// Prints elements nested by `shape` (`[[a, b], [c, d]]`; a scalar for rank 0).
    fn nested(&mut self, shape: &[i64], element: &mut dyn FnMut(&mut Self)) {
        match shape.split_first() {
            None => element(self),
            Some((&dim, rest)) => {
                self.out.push('[');
                for i in 0..dim.max(0) {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.nested(rest, element);
                }
                self.out.push(']');
            }
        }
    }
}
