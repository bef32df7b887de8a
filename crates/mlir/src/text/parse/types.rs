//! Builtin type syntax; other dialects' types as their balanced text.

use super::attr::DialectSymbol;
use super::{Parser, R};
use crate::ir::{AffineExpr, AffineMap, Attribute, FloatKind, Signedness, Type, TypeId, DYNAMIC};

/// The float kind a keyword names.
pub(super) fn float_kind(word: &[u8]) -> Option<FloatKind> {
    FloatKind::ALL.into_iter().find(|k| k.keyword().as_bytes() == word)
}

/// `i32`, `si8`, `ui64`: (width, signedness).
fn integer_type(word: &[u8]) -> Option<(u32, Signedness)> {
    let (signedness, digits) = if let Some(d) = word.strip_prefix(b"si") {
        (Signedness::Signed, d)
    } else if let Some(d) = word.strip_prefix(b"ui") {
        (Signedness::Unsigned, d)
    } else {
        (Signedness::Signless, word.strip_prefix(b"i")?)
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) || (digits.len() > 1 && digits[0] == b'0') {
        return None;
    }
    let width: u32 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some((width, signedness))
}

/// Upstream's limit on integer type widths.
const MAX_INT_WIDTH: u32 = 16_777_215;

impl Parser<'_> {
    pub(super) fn intern_type(&mut self, ty: Type) -> TypeId {
        self.module.context.intern_type(ty)
    }

    pub(super) fn ty(&mut self) -> R<TypeId> {
        self.enter()?;
        let result = self.ty_inner();
        self.leave();
        result
    }

    fn ty_inner(&mut self) -> R<TypeId> {
        self.ws();
        let start = self.pos;
        match self.peek() {
            Some(b'(') => return self.function_type(),
            Some(b'!') => return self.dialect_type(),
            _ => {}
        }
        let Some(word) = self.bare_ident() else {
            let found = self.describe_next();
            return self.err(format!("expected a type, found {found}"));
        };
        if let Some((width, signedness)) = integer_type(word) {
            if width > MAX_INT_WIDTH {
                return self.err_at(start, format!("integer bitwidth is limited to {MAX_INT_WIDTH} bits"));
            }
            return Ok(self.intern_type(Type::Integer { width, signedness }));
        }
        if let Some(kind) = float_kind(word) {
            return Ok(self.intern_type(Type::Float(kind)));
        }
        match word {
            b"index" => Ok(self.intern_type(Type::Index)),
            b"none" => Ok(self.intern_type(Type::None)),
            b"complex" => {
                self.expect(b'<', "after 'complex'")?;
                let elem = self.ty()?;
                self.expect(b'>', "to end the complex type")?;
                Ok(self.intern_type(Type::Complex(elem)))
            }
            b"tuple" => {
                self.expect(b'<', "after 'tuple'")?;
                let mut items = Vec::new();
                if !self.eat(b'>') {
                    loop {
                        items.push(self.ty()?);
                        if !self.eat(b',') {
                            break;
                        }
                    }
                    self.expect(b'>', "to end the tuple type")?;
                }
                Ok(self.intern_type(Type::Tuple(items.into())))
            }
            b"tensor" => self.tensor_type(),
            b"memref" => self.memref_type(),
            b"vector" => self.vector_type(),
            _ => self.err_at(start, format!("unknown type '{}'", String::from_utf8_lossy(word))),
        }
    }

    fn type_list_parens(&mut self) -> R<Vec<TypeId>> {
        self.expect(b'(', "to start a type list")?;
        let mut types = Vec::new();
        if !self.eat(b')') {
            loop {
                types.push(self.ty()?);
                if !self.eat(b',') {
                    break;
                }
            }
            self.expect(b')', "to end a type list")?;
        }
        Ok(types)
    }

    /// `(inputs) -> results`, looked up by its text when brackets say where it ends: every
    /// generic op spells one, and ops of a kind repeat the same.
    fn function_type(&mut self) -> R<TypeId> {
        let end = self.function_type_end();
        self.by_text(end, |p| &mut p.function_types, Self::function_type_text)
    }

    /// Where the function type at the current position ends, judged from its brackets: the
    /// input list, `->`, then a parenthesized result list or one type (a name, alias names' `-`
    /// included, possibly with an adjacent `<...>` body). `None` where that is unclear (a body
    /// after spaces, a comment).
    fn function_type_end(&mut self) -> Option<usize> {
        let src = self.src;
        let skip_spaces = |mut i: usize| {
            while src.get(i).is_some_and(|&b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
                i += 1;
            }
            i
        };
        let mut i = skip_spaces(self.bracket_end(self.pos, b'(', b')')?);
        if !src[i..].starts_with(b"->") {
            return None;
        }
        i = skip_spaces(i + 2);
        if src.get(i) == Some(&b'(') {
            return self.bracket_end(i, b'(', b')');
        }
        let name_start = i;
        while src.get(i).is_some_and(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.' | b'!' | b'-')) {
            i += 1;
        }
        if i == name_start {
            return None;
        }
        if src.get(i) == Some(&b'<') {
            let save = self.pos;
            self.pos = i;
            let body = self.balanced_body();
            i = self.pos;
            self.pos = save;
            return body.ok().map(|()| i);
        }
        (src.get(skip_spaces(i)) != Some(&b'<')).then_some(i)
    }

    fn function_type_text(&mut self) -> R<TypeId> {
        let inputs = self.type_list_parens()?;
        self.expect_str("->", "in a function type")?;
        let results = if self.peek() == Some(b'(') { self.type_list_parens()? } else { vec![self.ty()?] };
        Ok(self.intern_type(Type::Function { inputs: inputs.into(), results: results.into() }))
    }

    /// `!alias`, `!dialect.name<...>`, `!dialect<"...">`.
    fn dialect_type(&mut self) -> R<TypeId> {
        let start = self.pos;
        match self.dialect_symbol("a type")? {
            DialectSymbol::Alias(name) => match self.type_aliases.get(name) {
                Some(&(ty, _)) => Ok(ty),
                None => self.err_at(start, format!("undefined type alias '!{}'", String::from_utf8_lossy(name))),
            },
            DialectSymbol::Text { dialect, text } => Ok(self.intern_type(Type::Text { dialect, text })),
        }
    }

    /// `4x?x[8]x` before an element type: dimensions and scalable flags.
    fn dimensions(&mut self, allow_scalable: bool) -> R<(Vec<i64>, Vec<bool>)> {
        let mut shape = Vec::new();
        let mut scalable = Vec::new();
        loop {
            self.ws();
            let save = self.pos;
            let (dim, is_scalable) = match self.src.get(self.pos) {
                Some(b'?') => {
                    self.pos += 1;
                    (DYNAMIC, false)
                }
                Some(b) if b.is_ascii_digit() => {
                    let start = self.pos;
                    while self.pos < self.src.len() && self.src[self.pos].is_ascii_digit() {
                        self.pos += 1;
                    }
                    let text = std::str::from_utf8(&self.src[start..self.pos]).unwrap_or("");
                    let dim = text.parse::<i64>().map_err(|_| self.error_at(start, "dimension is too large"))?;
                    (dim, false)
                }
                Some(b'[') if allow_scalable => {
                    self.pos += 1;
                    let start = self.pos;
                    let dim = self.parse_u64("a scalable dimension")?;
                    let dim = i64::try_from(dim).map_err(|_| self.error_at(start, "dimension is too large"))?;
                    self.expect(b']', "to end a scalable dimension")?;
                    (dim, true)
                }
                _ => return Ok((shape, scalable)),
            };
            self.ws();
            if self.src.get(self.pos) != Some(&b'x') {
                if dim == DYNAMIC || is_scalable {
                    return self.err("expected 'x' in a dimension list");
                }
                // A number not followed by `x` is not a dimension (never valid here anyway).
                self.pos = save;
                return self.err("expected 'x' in a dimension list");
            }
            self.pos += 1;
            shape.push(dim);
            scalable.push(is_scalable);
        }
    }

    fn tensor_type(&mut self) -> R<TypeId> {
        self.expect(b'<', "after 'tensor'")?;
        if self.eat(b'*') {
            self.expect(b'x', "after '*' in an unranked tensor")?;
            let elem = self.ty()?;
            self.expect(b'>', "to end the tensor type")?;
            return Ok(self.intern_type(Type::UnrankedTensor { elem }));
        }
        let (shape, _) = self.dimensions(false)?;
        let elem = self.ty()?;
        let encoding = if self.eat(b',') { Some(self.attr()?) } else { None };
        self.expect(b'>', "to end the tensor type")?;
        Ok(self.intern_type(Type::RankedTensor { shape: shape.into(), elem, encoding }))
    }

    fn vector_type(&mut self) -> R<TypeId> {
        self.expect(b'<', "after 'vector'")?;
        let (shape, scalable) = self.dimensions(true)?;
        let elem = self.ty()?;
        self.expect(b'>', "to end the vector type")?;
        let scalable = scalable.iter().any(|&s| s).then(|| scalable.into_boxed_slice());
        Ok(self.intern_type(Type::Vector { shape: shape.into(), scalable, elem }))
    }

    /// A memory space: `0` (or `0 : i64`) is the default and is dropped, as upstream does.
    fn memory_space(&mut self, attr: crate::ir::AttrId) -> Option<crate::ir::AttrId> {
        match self.module.context.attr(attr) {
            Attribute::Integer { value, .. } if value.words().iter().all(|&w| w == 0) => None,
            _ => Some(attr),
        }
    }

    fn memref_type(&mut self) -> R<TypeId> {
        self.expect(b'<', "after 'memref'")?;
        if self.eat(b'*') {
            self.expect(b'x', "after '*' in an unranked memref")?;
            let elem = self.ty()?;
            let memory_space = if self.eat(b',') {
                let attr = self.attr()?;
                self.memory_space(attr)
            } else {
                None
            };
            self.expect(b'>', "to end the memref type")?;
            return Ok(self.intern_type(Type::UnrankedMemRef { elem, memory_space }));
        }
        let (shape, _) = self.dimensions(false)?;
        let elem = self.ty()?;
        let mut layout = None;
        let mut memory_space = None;
        if self.eat(b',') {
            let attr = self.attr()?;
            if matches!(self.module.context.attr(attr), Attribute::AffineMap(_) | Attribute::StridedLayout { .. }) {
                layout = Some(attr);
                if self.eat(b',') {
                    let space = self.attr()?;
                    memory_space = self.memory_space(space);
                }
            } else {
                memory_space = self.memory_space(attr);
            }
        }
        self.expect(b'>', "to end the memref type")?;
        let layout = match layout {
            Some(layout) => layout,
            None => {
                let rank = shape.len() as u32;
                self.module.context.intern_attr(Attribute::AffineMap(AffineMap {
                    num_dims: rank,
                    num_symbols: 0,
                    results: (0..rank).map(AffineExpr::Dim).collect(),
                }))
            }
        };
        Ok(self.intern_type(Type::MemRef { shape: shape.into(), elem, layout, memory_space }))
    }
}
