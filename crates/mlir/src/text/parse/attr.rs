//! Builtin attribute and location syntax; dialect attributes as balanced text.

use std::borrow::Cow;

use super::{decode_hex, Parser, R};
use crate::float::decimal_to_bits;
use crate::ir::{
    dense_storage, AffineExpr, AffineMap, ApInt, AttrId, Attribute, Blob, DialectId, FloatKind, IntegerSet,
    ResourceRef, ScalarKind, Signedness, Sym, Type, TypeId,
};

/// A `#name` or `!name`: an alias to look up, or a dialect attribute or type as text.
pub(super) enum DialectSymbol<'s> {
    Alias(&'s [u8]),
    Text { dialect: DialectId, text: Sym },
}

/// One literal inside `dense<...>` or `array<...>`.
#[derive(Clone, Debug)]
enum Lit {
    /// Digits (decimal or `0x` hex) and whether a `-` came before them.
    Int {
        negative: bool,
        text: Vec<u8>,
    },
    Float(String),
    Bool(bool),
    Str(Vec<u8>),
    Complex(Box<Lit>, Box<Lit>),
}

/// The literal a number token stands for.
fn number_lit(negative: bool, text: Vec<u8>, is_float: bool) -> Lit {
    if is_float {
        let mut s = String::new();
        if negative {
            s.push('-');
        }
        s.push_str(&String::from_utf8_lossy(&text));
        Lit::Float(s)
    } else {
        Lit::Int { negative, text }
    }
}

/// A `dense<...>` body before its type is known.
enum DenseBody {
    Empty,
    /// A single literal (a splat).
    Scalar(Lit),
    /// Nested lists: the inferred shape and the elements in row-major order.
    Nested(Vec<i64>, Vec<Lit>),
}

/// Little-endian words of an unsigned decimal or `0x` hex literal.
fn magnitude(text: &[u8]) -> Vec<u64> {
    let mut words: Vec<u64> = Vec::new();
    let (radix, digits) = match text.strip_prefix(b"0x") {
        Some(hex) => (16u64, hex),
        None => (10u64, text),
    };
    for &d in digits {
        let digit = u64::from((d as char).to_digit(radix as u32).unwrap_or(0));
        let mut carry = digit;
        for w in words.iter_mut() {
            let v = u128::from(*w) * u128::from(radix) + u128::from(carry);
            *w = v as u64;
            carry = (v >> 64) as u64;
        }
        if carry != 0 {
            words.push(carry);
        }
    }
    while words.last() == Some(&0) {
        words.pop();
    }
    words
}

fn bit_len(words: &[u64]) -> u32 {
    match words.last() {
        None => 0,
        Some(&top) => (words.len() as u32 - 1) * 64 + (64 - top.leading_zeros()),
    }
}

/// Builds an integer of `width` bits from a literal, with upstream's range rules; `None` when the
/// value does not fit.
fn integer_value(width: u32, signedness: Option<Signedness>, negative: bool, text: &[u8]) -> Option<ApInt> {
    let mag = magnitude(text);
    if bit_len(&mag) > width {
        return None;
    }
    let value = ApInt::from_words(width, mag.clone());
    if width == 0 {
        return (!negative).then_some(value);
    }
    let sign_set = |v: &ApInt| v.is_negative();
    if negative {
        // Two's complement negation within `width` bits; the result must have its sign bit set.
        let mut words: Vec<u64> = value.words().iter().map(|w| !w).collect();
        let mut carry = true;
        for w in words.iter_mut() {
            if carry {
                let (s, o) = w.overflowing_add(1);
                *w = s;
                carry = o;
            }
        }
        let neg = ApInt::from_words(width, words);
        return sign_set(&neg).then_some(neg);
    }
    // signedness None stands for index (checked like a signed integer).
    if matches!(signedness, Some(Signedness::Signed) | None) && sign_set(&value) {
        return None;
    }
    Some(value)
}

fn words_to_bytes(value: &ApInt, bytes: usize, out: &mut Vec<u8>) {
    let words = value.words();
    for i in 0..bytes {
        out.push((words.get(i / 8).copied().unwrap_or(0) >> (8 * (i % 8))) as u8);
    }
}

impl<'s> Parser<'s> {
    pub(super) fn intern_attr(&mut self, attr: Attribute) -> AttrId {
        self.module.context.intern_attr(attr)
    }

    fn string_attr(&mut self, bytes: &[u8]) -> AttrId {
        let value = self.module.context.intern_str(bytes);
        self.intern_attr(Attribute::String { value, ty: None })
    }

    pub(super) fn attr(&mut self) -> R<AttrId> {
        self.enter()?;
        let result = self.attr_inner();
        self.leave();
        result
    }

    fn attr_inner(&mut self) -> R<AttrId> {
        self.ws();
        let start = self.pos;
        match self.peek() {
            None => return self.err("expected an attribute, found end of input"),
            Some(b'[') => {
                self.pos += 1;
                let mut items = Vec::new();
                if !self.eat(b']') {
                    loop {
                        items.push(self.attr()?);
                        if !self.eat(b',') {
                            break;
                        }
                    }
                    self.expect(b']', "to end an array attribute")?;
                }
                return Ok(self.intern_attr(Attribute::Array(items.into())));
            }
            Some(b'{') => return self.dictionary(),
            Some(b'"') => {
                let s = self.string_lit()?;
                let value = self.module.context.intern_str(&s);
                let ty = if self.eat(b':') { Some(self.ty()?) } else { None };
                return Ok(self.intern_attr(Attribute::String { value, ty }));
            }
            Some(b'@') => return self.symbol_ref(),
            Some(b'#') => return self.hash_attr(),
            Some(b'!') | Some(b'(') => {
                let ty = self.ty()?;
                return Ok(self.intern_attr(Attribute::Type(ty)));
            }
            Some(b'-') => return self.number_attr(),
            Some(b) if b.is_ascii_digit() => return self.number_attr(),
            _ => {}
        }
        let Some(word) = self.bare_ident() else {
            let found = self.describe_next();
            return self.err(format!("expected an attribute, found {found}"));
        };
        match word {
            b"true" | b"false" => {
                let ty = self.intern_type(Type::Integer { width: 1, signedness: Signedness::Signless });
                let value = ApInt::from_u64(1, u64::from(word == b"true"));
                if self.eat(b':') {
                    let pos = self.pos;
                    let t = self.ty()?;
                    if t != ty {
                        return self.err_at(pos, "expected i1 type for a 'true' or 'false' value");
                    }
                }
                Ok(self.intern_attr(Attribute::Integer { ty, value }))
            }
            b"unit" => Ok(self.intern_attr(Attribute::Unit)),
            b"dense" => self.dense(),
            b"dense_resource" => self.dense_resource(),
            b"array" => self.dense_array(),
            b"affine_map" => self.affine_map_attr(),
            b"affine_set" => self.affine_set_attr(),
            b"strided" => self.strided(),
            b"distinct" => self.distinct_attr(),
            b"loc" => {
                self.expect(b'(', "after 'loc'")?;
                let loc = self.loc_body()?;
                self.expect(b')', "to end the location")?;
                Ok(loc)
            }
            b"sparse" => self.sparse(),
            b"opaque" => self.err_at(start, "'opaque' elements attributes are not supported"),
            _ => {
                // A builtin type used as an attribute (`i64`, `tensor<...>`).
                self.pos = start;
                let ty = self.ty()?;
                Ok(self.intern_attr(Attribute::Type(ty)))
            }
        }
    }

    /// `{...}`, looked up by its text when balanced brackets say where it ends.
    fn dictionary(&mut self) -> R<AttrId> {
        self.ws();
        let end = self.bracket_end(self.pos, b'{', b'}');
        self.by_text(end, |p| &mut p.dictionaries, Self::dictionary_text)
    }

    fn dictionary_text(&mut self) -> R<AttrId> {
        self.expect(b'{', "to start a dictionary")?;
        let mut entries: Vec<(Cow<'_, [u8]>, AttrId, usize)> = Vec::new();
        if !self.eat(b'}') {
            loop {
                self.ws();
                let pos = self.pos;
                let key = self.key("an attribute name")?;
                if key.is_empty() {
                    return self.err_at(pos, "expected a non-empty attribute name");
                }
                let value = if self.eat(b'=') { self.attr()? } else { self.intern_attr(Attribute::Unit) };
                entries.push((key, value, pos));
                if !self.eat(b',') {
                    break;
                }
            }
            self.expect(b'}', "to end a dictionary")?;
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        if let Some(w) = entries.windows(2).find(|w| w[0].0 == w[1].0) {
            let pos = w[0].2.max(w[1].2);
            return self
                .err_at(pos, format!("duplicate key '{}' in dictionary attribute", String::from_utf8_lossy(&w[0].0)));
        }
        let entries: Vec<(AttrId, AttrId)> = entries.into_iter().map(|(k, v, _)| (self.string_attr(&k), v)).collect();
        Ok(self.intern_attr(Attribute::Dictionary(entries.into())))
    }

    fn symbol_name(&mut self) -> R<AttrId> {
        self.expect(b'@', "to start a symbol reference")?;
        let name = if self.src.get(self.pos) == Some(&b'"') {
            self.string_lit()?
        } else {
            let start = self.pos;
            while self.pos < self.src.len() && (is_symbol_char(self.src[self.pos])) {
                self.pos += 1;
            }
            if start == self.pos {
                return self.err("expected a symbol name after '@'");
            }
            Cow::Borrowed(&self.src[start..self.pos])
        };
        Ok(self.string_attr(&name))
    }

    fn symbol_ref(&mut self) -> R<AttrId> {
        let root = self.symbol_name()?;
        let mut nested = Vec::new();
        while self.src[self.pos..].starts_with(b"::@") {
            self.pos += 2;
            let name = self.symbol_name()?;
            nested.push(self.intern_attr(Attribute::FlatSymbolRef(name)));
        }
        if nested.is_empty() {
            Ok(self.intern_attr(Attribute::FlatSymbolRef(root)))
        } else {
            Ok(self.intern_attr(Attribute::SymbolRef { root, nested: nested.into() }))
        }
    }

    /// `#alias`, `#dialect.name<...>`, `#dialect<"...">`.
    fn hash_attr(&mut self) -> R<AttrId> {
        let start = self.pos;
        match self.dialect_symbol("an attribute")? {
            DialectSymbol::Alias(name) => match self.attr_aliases.get(name) {
                Some(&(attr, _)) => Ok(attr),
                None => self.err_at(start, format!("undefined attribute alias '#{}'", String::from_utf8_lossy(name))),
            },
            DialectSymbol::Text { dialect, text } => {
                // A typed dialect attribute carries its type after a colon
                // (`#util.byte_pattern<1> : tensor<4xi8>`), which upstream parses as part of the
                // attribute and prints back: it belongs to the text.
                let end = self.pos;
                if !self.eat(b':') {
                    // Whatever the search for a colon skipped is not part of the attribute (an
                    // alias definition keeps its text up to here).
                    self.pos = end;
                    return Ok(self.intern_attr(Attribute::Text { dialect, text }));
                }
                self.ws();
                let type_start = self.pos;
                self.ty()?;
                let type_text = self.substitute_aliases(&self.src[type_start..self.pos])?;
                let mut typed = self.module.context.str_bytes(text).to_vec();
                typed.extend_from_slice(b" : ");
                typed.extend_from_slice(&type_text);
                let text = self.module.context.intern_str(&typed);
                Ok(self.intern_attr(Attribute::Text { dialect, text }))
            }
        }
    }

    /// What follows a `#` or `!` sigil: an alias name, or a dialect attribute or type kept as its
    /// text (aliases inside substituted) with the dialect its name starts with.
    pub(super) fn dialect_symbol(&mut self, what: &str) -> R<DialectSymbol<'s>> {
        let start = self.pos;
        let sigil = self.src[start] as char;
        self.pos += 1;
        let name = self.suffix_ident();
        if name.is_empty() {
            return self.err_at(start, format!("expected {what} name after '{sigil}'"));
        }
        let has_body = self.src.get(self.pos) == Some(&b'<');
        if !name.contains(&b'.') && !has_body {
            return Ok(DialectSymbol::Alias(name));
        }
        let dialect_name = name.split(|&b| b == b'.').next().unwrap_or(name);
        let dialect = self.module.context.intern_dialect(&String::from_utf8_lossy(dialect_name));
        if has_body {
            self.balanced_body()?;
        }
        let text = self.substitute_aliases(&self.src[start..self.pos])?;
        let text = self.module.context.intern_str(&text);
        Ok(DialectSymbol::Text { dialect, text })
    }

    /// Just past the `close` that matches the `open` at `pos`, counting only these two brackets
    /// outside string literals; `None` when it does not close (the parser then reports why).
    pub(super) fn bracket_end(&self, pos: usize, open: u8, close: u8) -> Option<usize> {
        if self.src.get(pos) != Some(&open) {
            return None;
        }
        // Jumps from one byte that matters to the next (most bytes do not): in a large module
        // this scan runs over every op's properties before their text is looked up.
        let mut depth = 0usize;
        let mut i = pos;
        loop {
            i += self.src.get(i..)?.iter().position(|&b| b == open || b == close || b == b'"')?;
            match self.src[i] {
                b'"' => loop {
                    i += 1;
                    i += self.src.get(i..)?.iter().position(|&b| b == b'"' || b == b'\\')?;
                    if self.src[i] == b'"' {
                        break;
                    }
                    i += 1;
                },
                b if b == open => depth += 1,
                _ => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(i + 1);
                    }
                }
            }
            i += 1;
        }
    }

    /// Skips a dialect symbol body `<...>` (at its `<`), balancing `<>`, `()`, `[]`, `{}` and
    /// skipping strings; `->` is not a closing `>`.
    pub(super) fn balanced_body(&mut self) -> R<()> {
        let start = self.pos;
        let mut stack: Vec<u8> = Vec::new();
        loop {
            let Some(&b) = self.src.get(self.pos) else {
                return self.err_at(start, "unbalanced '<' in a dialect attribute or type body");
            };
            match b {
                b'<' => stack.push(b'>'),
                b'(' => stack.push(b')'),
                b'[' => stack.push(b']'),
                b'{' => stack.push(b'}'),
                b'-' if self.src.get(self.pos + 1) == Some(&b'>') => {
                    self.pos += 2;
                    continue;
                }
                b'>' | b')' | b']' | b'}' => {
                    if stack.pop() != Some(b) {
                        return self.err(format!("unbalanced '{}' in a dialect attribute or type body", b as char));
                    }
                    if stack.is_empty() {
                        self.pos += 1;
                        return Ok(());
                    }
                }
                b'"' => {
                    self.string_lit()?;
                    continue;
                }
                _ => {}
            }
            if stack.len() > super::MAX_NESTING {
                return self.err(format!("nesting deeper than {} levels", super::MAX_NESTING));
            }
            self.pos += 1;
        }
    }

    /// Replaces `#alias` and `!alias` references in dialect text by the aliased text.
    pub(super) fn substitute_aliases<'t>(&self, text: &'t [u8]) -> R<Cow<'t, [u8]>> {
        // Copied only from the first alias that is substituted: most texts have none, and a text
        // can be a model's weights.
        let mut out: Option<Vec<u8>> = None;
        let mut copied = 0;
        let mut i = 0;
        while let Some(at) = memchr::memchr3(b'"', b'#', b'!', &text[i..]) {
            i += at;
            let b = text[i];
            if b == b'"' {
                // Past a string literal: nothing inside one is an alias.
                i = crate::text::string_literal_end(text, i).unwrap_or(text.len());
                continue;
            }
            if i + 1 < text.len() && is_symbol_char(text[i + 1]) {
                let mut end = i + 1;
                while end < text.len() && is_symbol_char(text[end]) {
                    end += 1;
                }
                let name = &text[i + 1..end];
                let followed_by_body = text.get(end) == Some(&b'<');
                if !name.contains(&b'.') && !followed_by_body {
                    let found = if b == b'#' {
                        self.attr_aliases.get(name).map(|(_, t)| t)
                    } else {
                        self.type_aliases.get(name).map(|(_, t)| t)
                    };
                    if let Some(t) = found {
                        let out = out.get_or_insert_with(|| Vec::with_capacity(text.len()));
                        out.extend_from_slice(&text[copied..i]);
                        out.extend_from_slice(t);
                        copied = end;
                    }
                }
                i = end;
                continue;
            }
            i += 1;
        }
        Ok(match out {
            Some(mut out) => {
                out.extend_from_slice(&text[copied..]);
                Cow::Owned(out)
            }
            None => Cow::Borrowed(text),
        })
    }

    // ---- numbers ----

    /// `-`? then an integer or float token: (negative, text, is_float).
    fn number_token(&mut self) -> R<(bool, Vec<u8>, bool)> {
        self.ws();
        let start = self.pos;
        let negative = self.src.get(self.pos) == Some(&b'-');
        if negative {
            self.pos += 1;
        }
        let Some(int) = self.integer_token() else {
            return self.err_at(start, "expected a number");
        };
        let mut text = int.to_vec();
        if !int.starts_with(b"0x") && self.src.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            let frac_start = self.pos;
            while self.pos < self.src.len() && self.src[self.pos].is_ascii_digit() {
                self.pos += 1;
            }
            if matches!(self.src.get(self.pos), Some(b'e' | b'E')) {
                let save = self.pos;
                self.pos += 1;
                if matches!(self.src.get(self.pos), Some(b'+' | b'-')) {
                    self.pos += 1;
                }
                if self.src.get(self.pos).is_some_and(|b| b.is_ascii_digit()) {
                    while self.pos < self.src.len() && self.src[self.pos].is_ascii_digit() {
                        self.pos += 1;
                    }
                } else {
                    self.pos = save;
                }
            }
            text.push(b'.');
            text.extend_from_slice(&self.src[frac_start..self.pos]);
            return Ok((negative, text, true));
        }
        Ok((negative, text, false))
    }

    fn number_attr(&mut self) -> R<AttrId> {
        self.ws();
        let start = self.pos;
        let (negative, text, is_float) = self.number_token()?;
        let ty = if self.eat(b':') {
            self.ty()?
        } else if is_float {
            self.intern_type(Type::Float(FloatKind::F64))
        } else {
            self.intern_type(Type::Integer { width: 64, signedness: Signedness::Signless })
        };
        self.scalar_attr(number_lit(negative, text, is_float), ty, start)
    }

    /// A number or `true`/`false` that takes the type `ty` the context gives it (an op's custom
    /// form leaves it out: `tfrt.constant.i32 42`); anything else is a full attribute.
    pub(super) fn typed_literal_attr(&mut self, ty: TypeId) -> R<AttrId> {
        self.ws();
        let start = self.pos;
        let lit = match self.peek() {
            Some(b) if b == b'-' || b.is_ascii_digit() => {
                let (negative, text, is_float) = self.number_token()?;
                number_lit(negative, text, is_float)
            }
            Some(b't') if self.eat_keyword("true") => Lit::Bool(true),
            Some(b'f') if self.eat_keyword("false") => Lit::Bool(false),
            _ => return self.attr(),
        };
        self.scalar_attr(lit, ty, start)
    }

    /// An integer or float attribute of type `ty` holding `lit`.
    fn scalar_attr(&mut self, lit: Lit, ty: TypeId, start: usize) -> R<AttrId> {
        match self.module.context.ty(ty).clone() {
            Type::Float(kind) => {
                let bits = self.float_bits(&lit, kind, start)?;
                Ok(self.intern_attr(Attribute::Float { ty, bits }))
            }
            Type::Integer { .. } | Type::Index => {
                if matches!(lit, Lit::Float(_)) {
                    return self.err_at(start, "floating point value not valid for an integer type");
                }
                let value = self.int_value(&lit, ty, start)?;
                Ok(self.intern_attr(Attribute::Integer { ty, value }))
            }
            _ => self.err_at(start, "a number needs an integer, index or float type"),
        }
    }

    fn int_value(&self, lit: &Lit, ty: TypeId, pos: usize) -> R<ApInt> {
        let (width, signedness) = match *self.module.context.ty(ty) {
            Type::Integer { width, signedness } => (width, Some(signedness)),
            Type::Index => (64, None),
            _ => return self.err_at(pos, "expected an integer or index type"),
        };
        match lit {
            Lit::Int { negative, text } => {
                if *negative && signedness == Some(Signedness::Unsigned) {
                    return self.err_at(pos, "negative integer literal not valid for unsigned integer type");
                }
                integer_value(width, signedness, *negative, text)
                    .ok_or_else(|| self.error_at(pos, "integer constant out of range for its type"))
            }
            Lit::Bool(b) if width == 1 => Ok(ApInt::from_u64(1, u64::from(*b))),
            Lit::Bool(_) => self.err_at(pos, "'true' and 'false' are only valid for i1"),
            _ => self.err_at(pos, "expected an integer literal"),
        }
    }

    fn float_bits(&self, lit: &Lit, kind: FloatKind, pos: usize) -> R<ApInt> {
        let width = kind.bit_width();
        match lit {
            Lit::Float(text) => match decimal_to_bits(text, kind) {
                Some(bits) => Ok(ApInt::from_words(width, vec![bits as u64, (bits >> 64) as u64])),
                None => self.err_at(pos, "invalid floating point literal"),
            },
            Lit::Int { negative, text } if text.starts_with(b"0x") => {
                if *negative {
                    return self.err_at(pos, "hexadecimal float literal should not have a leading minus");
                }
                let mag = magnitude(text);
                if bit_len(&mag) > width {
                    return self.err_at(pos, "hexadecimal float constant out of range for type");
                }
                Ok(ApInt::from_words(width, mag))
            }
            Lit::Int { negative, text } => {
                // Decimal integers in dense float data are values (`dense<[1, 2]> : tensor<2xf32>`).
                let mut s = String::new();
                if *negative {
                    s.push('-');
                }
                s.push_str(&String::from_utf8_lossy(text));
                match decimal_to_bits(&s, kind) {
                    Some(bits) => Ok(ApInt::from_words(width, vec![bits as u64, (bits >> 64) as u64])),
                    None => self.err_at(pos, "invalid floating point literal"),
                }
            }
            _ => self.err_at(pos, "expected a floating point literal"),
        }
    }

    // ---- dense elements ----

    fn literal(&mut self) -> R<Lit> {
        match self.peek() {
            Some(b'"') => Ok(Lit::Str(self.string_lit()?.into_owned())),
            Some(b'(') => {
                self.pos += 1;
                let re = self.literal()?;
                self.expect(b',', "between the parts of a complex value")?;
                let im = self.literal()?;
                self.expect(b')', "to end a complex value")?;
                Ok(Lit::Complex(Box::new(re), Box::new(im)))
            }
            Some(b't') if self.eat_keyword("true") => Ok(Lit::Bool(true)),
            Some(b'f') if self.eat_keyword("false") => Ok(Lit::Bool(false)),
            _ => {
                let (negative, text, is_float) = self.number_token()?;
                Ok(number_lit(negative, text, is_float))
            }
        }
    }

    /// Nested lists: fills `out` and returns the shape of this level.
    fn nested_literals(&mut self, out: &mut Vec<Lit>) -> R<Vec<i64>> {
        self.enter()?;
        let pos = self.pos;
        self.expect(b'[', "to start a list of elements")?;
        let mut shape: Option<Vec<i64>> = None;
        let mut count = 0i64;
        if !self.eat(b']') {
            loop {
                let inner = if self.peek() == Some(b'[') {
                    self.nested_literals(out)?
                } else {
                    out.push(self.literal()?);
                    Vec::new()
                };
                match &shape {
                    None => shape = Some(inner),
                    Some(s) if *s != inner => {
                        return self.err_at(pos, "tensor literal is invalid; ranks are not consistent between elements")
                    }
                    _ => {}
                }
                count += 1;
                if !self.eat(b',') {
                    break;
                }
            }
            self.expect(b']', "to end a list of elements")?;
        }
        self.leave();
        let mut full = vec![count];
        full.extend(shape.unwrap_or_default());
        Ok(full)
    }

    fn dense_body(&mut self) -> R<DenseBody> {
        Ok(match self.peek() {
            Some(b'>') => DenseBody::Empty,
            Some(b'[') => {
                let mut lits = Vec::new();
                let shape = self.nested_literals(&mut lits)?;
                DenseBody::Nested(shape, lits)
            }
            _ => DenseBody::Scalar(self.literal()?),
        })
    }

    fn dense(&mut self) -> R<AttrId> {
        self.expect(b'<', "after 'dense'")?;
        self.ws();
        let body_pos = self.pos;
        let body = self.dense_body()?;
        self.expect(b'>', "to end the dense elements")?;
        self.expect(b':', "before the type of dense elements")?;
        let type_pos = self.pos;
        let ty = self.ty()?;
        self.dense_elements(body, ty, body_pos, type_pos)
    }

    /// `sparse<indices, values> : type`.
    fn sparse(&mut self) -> R<AttrId> {
        self.expect(b'<', "after 'sparse'")?;
        let i64_type = self.intern_type(Type::Integer { width: 64, signedness: Signedness::Signless });
        if self.eat(b'>') {
            self.expect(b':', "before the type of sparse elements")?;
            let type_pos = self.pos;
            let ty = self.ty()?;
            let (Some(shape), Some(elem)) =
                (self.module.context.ty(ty).shape().map(<[i64]>::to_vec), self.module.context.ty(ty).element_type())
            else {
                return self.err_at(type_pos, "sparse elements need a ranked tensor or vector type");
            };
            let indices_ty = self.intern_type(Type::RankedTensor {
                shape: [0, shape.len() as i64].into(),
                elem: i64_type,
                encoding: None,
            });
            let values_ty = self.intern_type(Type::RankedTensor { shape: [0].into(), elem, encoding: None });
            let indices = self.dense_elements(DenseBody::Empty, indices_ty, type_pos, type_pos)?;
            let values = self.dense_elements(DenseBody::Empty, values_ty, type_pos, type_pos)?;
            return Ok(self.intern_attr(Attribute::Sparse { ty, indices, values }));
        }
        self.ws();
        let indices_pos = self.pos;
        let indices_body = self.dense_body()?;
        self.expect(b',', "between sparse indices and values")?;
        self.ws();
        let values_pos = self.pos;
        let values_body = self.dense_body()?;
        self.expect(b'>', "to end the sparse elements")?;
        self.expect(b':', "before the type of sparse elements")?;
        let type_pos = self.pos;
        let ty = self.ty()?;
        let (Some(shape), Some(elem)) =
            (self.module.context.ty(ty).shape().map(<[i64]>::to_vec), self.module.context.ty(ty).element_type())
        else {
            return self.err_at(type_pos, "sparse elements need a ranked tensor or vector type");
        };
        let indices_shape: Vec<i64> = match &indices_body {
            DenseBody::Nested(s, _) => s.clone(),
            _ => vec![1, shape.len() as i64],
        };
        let values_shape: Vec<i64> = match &values_body {
            DenseBody::Nested(s, _) => s.clone(),
            _ => vec![indices_shape.first().copied().unwrap_or(0)],
        };
        let indices_ty =
            self.intern_type(Type::RankedTensor { shape: indices_shape.into(), elem: i64_type, encoding: None });
        let values_ty = self.intern_type(Type::RankedTensor { shape: values_shape.into(), elem, encoding: None });
        let indices = self.dense_elements(indices_body, indices_ty, indices_pos, type_pos)?;
        let values = self.dense_elements(values_body, values_ty, values_pos, type_pos)?;
        Ok(self.intern_attr(Attribute::Sparse { ty, indices, values }))
    }

    fn dense_elements(&mut self, body: DenseBody, ty: TypeId, body_pos: usize, type_pos: usize) -> R<AttrId> {
        let ctx = &self.module.context;
        let (Some(shape), Some(elem)) = (ctx.ty(ty).shape().map(<[i64]>::to_vec), ctx.ty(ty).element_type()) else {
            return self.err_at(type_pos, "dense elements need a ranked tensor or vector type");
        };
        if shape.iter().any(|&d| d < 0) {
            return self.err_at(type_pos, "dense elements need a statically shaped type");
        }
        let n = ctx.num_elements(ty).ok_or_else(|| self.error_at(type_pos, "too many elements"))?;
        let storage = ctx.element_storage(elem);
        let Some(storage) = storage else {
            // String (or other non-numeric) elements.
            let (splat, values) = match body {
                DenseBody::Scalar(Lit::Str(s)) => (true, vec![s]),
                DenseBody::Nested(inferred, lits) => {
                    if inferred != shape {
                        return self.err_at(body_pos, "inferred shape of elements literal does not match its type");
                    }
                    let mut values = Vec::with_capacity(lits.len());
                    for lit in lits {
                        match lit {
                            Lit::Str(s) => values.push(s),
                            _ => return self.err_at(body_pos, "expected string elements"),
                        }
                    }
                    (false, values)
                }
                DenseBody::Empty if n == 0 => (false, Vec::new()),
                _ => return self.err_at(body_pos, "expected string elements for this element type"),
            };
            let values: Vec<_> = values.iter().map(|s| self.module.context.intern_str(s)).collect();
            return Ok(self.intern_attr(Attribute::DenseString { ty, splat, values: values.into() }));
        };
        let elem_bytes = storage.element_bytes();
        let mut data: Vec<u8> = Vec::new();
        let is_i1 = storage.is_i1();
        match body {
            DenseBody::Empty => {
                if n != 0 {
                    return self.err_at(body_pos, "empty dense elements for a type with elements");
                }
            }
            DenseBody::Scalar(Lit::Str(s)) => {
                let Some(hex) = s.strip_prefix(b"0x") else {
                    return self.err_at(body_pos, "expected a hex string (\"0x...\") for numeric dense elements");
                };
                let bytes = decode_hex(hex).ok_or_else(|| self.error_at(body_pos, "bad hex in dense elements"))?;
                if is_i1 {
                    if bytes.len() as u64 == n || bytes.len() == 1 {
                        data = bytes.iter().map(|&b| u8::from(b != 0)).collect();
                    } else {
                        return self.err_at(body_pos, "elements hex data size is invalid for the provided type");
                    }
                } else if bytes.len() as u64 == n * elem_bytes as u64 || bytes.len() == elem_bytes {
                    data = bytes;
                } else {
                    return self.err_at(body_pos, "elements hex data size is invalid for the provided type");
                }
            }
            DenseBody::Scalar(lit) => self.encode_element(&lit, elem, storage, body_pos, &mut data)?,
            DenseBody::Nested(inferred, lits) => {
                if inferred != shape && !(inferred.len() == 1 && inferred[0] == 0 && n == 0) {
                    return self.err_at(
                        body_pos,
                        format!("inferred shape of elements literal ({inferred:?}) does not match type ({shape:?})"),
                    );
                }
                data.reserve(lits.len() * elem_bytes);
                for lit in &lits {
                    self.encode_element(lit, elem, storage, body_pos, &mut data)?;
                }
            }
        }
        let data = dense_storage(data, if is_i1 { 1 } else { elem_bytes }, is_i1);
        Ok(self.intern_attr(Attribute::DenseElements { ty, data: Blob::from_vec(data) }))
    }

    /// One element in dense storage (i1 as one byte 0/1).
    fn encode_element(
        &self,
        lit: &Lit,
        elem: TypeId,
        storage: crate::ir::ElementStorage,
        pos: usize,
        out: &mut Vec<u8>,
    ) -> R<()> {
        let scalar_type = match self.module.context.ty(elem) {
            Type::Complex(inner) => *inner,
            _ => elem,
        };
        let scalar = |lit: &Lit, out: &mut Vec<u8>| -> R<()> {
            let value = match storage.scalar {
                ScalarKind::Float(kind) => self.float_bits(lit, kind, pos)?,
                _ => self.int_value(lit, scalar_type, pos)?,
            };
            words_to_bytes(&value, storage.scalar_bytes(), out);
            Ok(())
        };
        match (storage.complex, lit) {
            (true, Lit::Complex(re, im)) => {
                scalar(re, out)?;
                scalar(im, out)
            }
            (true, _) => self.err_at(pos, "expected a complex element `(re, im)`"),
            (false, Lit::Complex(..)) => self.err_at(pos, "complex element for a non-complex type"),
            (false, lit) => scalar(lit, out),
        }
    }

    fn dense_resource(&mut self) -> R<AttrId> {
        self.expect(b'<', "after 'dense_resource'")?;
        let pos = self.pos;
        let key = self.key("a resource key")?;
        self.expect(b'>', "to end the resource reference")?;
        self.expect(b':', "before the type of a dense resource")?;
        let ty = self.ty()?;
        let key = self.module.context.intern_str(&key);
        let dialect = self.module.context.intern_dialect("builtin");
        if !self.resource_uses.iter().any(|&(k, _)| k == key) {
            self.resource_uses.push((key, pos));
        }
        Ok(self.intern_attr(Attribute::DenseResource { ty, resource: ResourceRef { dialect, key } }))
    }

    fn dense_array(&mut self) -> R<AttrId> {
        self.expect(b'<', "after 'array'")?;
        let type_pos = self.pos;
        let elem = self.ty()?;
        let Some(storage) = self.module.context.element_storage(elem).filter(|s| !s.complex) else {
            return self.err_at(type_pos, "array<...> needs an integer, index or float element type");
        };
        let mut data = Vec::new();
        let mut count = 0u64;
        if self.eat(b':') {
            loop {
                self.ws();
                let pos = self.pos;
                let lit = self.literal()?;
                self.encode_element(&lit, elem, storage, pos, &mut data)?;
                count += 1;
                if !self.eat(b',') {
                    break;
                }
            }
        }
        self.expect(b'>', "to end the array")?;
        Ok(self.intern_attr(Attribute::DenseArray { elem, count, data: Blob::from_vec(data) }))
    }

    fn strided(&mut self) -> R<AttrId> {
        self.expect(b'<', "after 'strided'")?;
        self.expect(b'[', "to start the strides")?;
        let mut strides = Vec::new();
        if !self.eat(b']') {
            loop {
                strides.push(self.dynamic_int()?);
                if !self.eat(b',') {
                    break;
                }
            }
            self.expect(b']', "to end the strides")?;
        }
        let mut offset = 0;
        if self.eat(b',') {
            if !self.eat_keyword("offset") {
                return self.err("expected 'offset' in a strided layout");
            }
            self.expect(b':', "after 'offset'")?;
            offset = self.dynamic_int()?;
        }
        self.expect(b'>', "to end the strided layout")?;
        Ok(self.intern_attr(Attribute::StridedLayout { offset, strides: strides.into() }))
    }

    fn dynamic_int(&mut self) -> R<i64> {
        if self.eat(b'?') {
            return Ok(crate::ir::DYNAMIC);
        }
        self.ws();
        let pos = self.pos;
        let (negative, text, is_float) = self.number_token()?;
        let value = (!is_float && !text.starts_with(b"0x"))
            .then(|| std::str::from_utf8(&text).ok()?.parse::<i64>().ok())
            .flatten()
            .ok_or_else(|| self.error_at(pos, "expected an integer or '?'"))?;
        Ok(if negative { -value } else { value })
    }

    fn distinct_attr(&mut self) -> R<AttrId> {
        self.expect(b'[', "after 'distinct'")?;
        let id = self.parse_u32("a distinct id")?;
        self.expect(b']', "after the distinct id")?;
        self.expect(b'<', "to start the distinct attribute")?;
        let pos = self.pos;
        let referenced = if self.peek() == Some(b'>') { self.intern_attr(Attribute::Unit) } else { self.attr()? };
        self.expect(b'>', "to end the distinct attribute")?;
        match self.distinct.get(&id) {
            Some(&prior) if prior != referenced => {
                self.err_at(pos, "referenced attribute does not match the previous definition of this distinct id")
            }
            _ => {
                self.distinct.insert(id, referenced);
                Ok(self.intern_attr(Attribute::Distinct { id, referenced }))
            }
        }
    }

    // ---- locations ----

    /// A location without `loc(...)` around it.
    pub(super) fn loc_body(&mut self) -> R<AttrId> {
        self.enter()?;
        let result = self.loc_body_inner();
        self.leave();
        result
    }

    /// The quoted name a file or name location starts with, as a string attribute (see
    /// [`Parser::last_loc_file`]).
    fn loc_file_name(&mut self) -> R<AttrId> {
        let text = self.string_lit()?;
        if let Some((last, attr)) = &self.last_loc_file {
            if *last == text {
                return Ok(*attr);
            }
        }
        let attr = self.string_attr(&text);
        self.last_loc_file = Some((text, attr));
        Ok(attr)
    }

    fn loc_body_inner(&mut self) -> R<AttrId> {
        self.ws();
        let pos = self.pos;
        match self.peek() {
            Some(b'#') => {
                let attr = self.hash_attr()?;
                self.check_location(attr, pos)?;
                return Ok(attr);
            }
            Some(b'"') => {
                let name = self.loc_file_name()?;
                if self.eat(b':') {
                    let line = self.parse_u32("a line number")?;
                    if !self.eat(b':') {
                        return Ok(
                            self.intern_attr(Attribute::FileLineColRange { filename: name, parts: [line].into() })
                        );
                    }
                    let col = self.parse_u32("a column number")?;
                    if !self.eat_keyword("to") {
                        return Ok(self.intern_attr(Attribute::FileLineColLoc { filename: name, line, column: col }));
                    }
                    let parts: Box<[u32]> = if self.eat(b':') {
                        [line, col, self.parse_u32("an end column")?].into()
                    } else {
                        let end_line = self.parse_u32("an end line")?;
                        self.expect(b':', "in a location range")?;
                        [line, col, end_line, self.parse_u32("an end column")?].into()
                    };
                    return Ok(self.intern_attr(Attribute::FileLineColRange { filename: name, parts }));
                }
                let child = if self.eat(b'(') {
                    let child = self.loc_body()?;
                    self.expect(b')', "to end a name location")?;
                    child
                } else {
                    self.intern_attr(Attribute::UnknownLoc)
                };
                return Ok(self.intern_attr(Attribute::NameLoc { name, child }));
            }
            _ => {}
        }
        if self.eat_keyword("unknown") {
            return Ok(self.intern_attr(Attribute::UnknownLoc));
        }
        if self.eat_keyword("callsite") {
            self.expect(b'(', "after 'callsite'")?;
            let callee = self.loc_body()?;
            if !self.eat_keyword("at") {
                return self.err("expected 'at' in a callsite location");
            }
            let caller = self.loc_body()?;
            self.expect(b')', "to end a callsite location")?;
            return Ok(self.intern_attr(Attribute::CallSiteLoc { callee, caller }));
        }
        if self.eat_keyword("fused") {
            let metadata = if self.eat(b'<') {
                let m = self.attr()?;
                self.expect(b'>', "after fused location metadata")?;
                Some(m)
            } else {
                None
            };
            self.expect(b'[', "to start fused locations")?;
            let mut locations = Vec::new();
            if !self.eat(b']') {
                loop {
                    locations.push(self.loc_body()?);
                    if !self.eat(b',') {
                        break;
                    }
                }
                self.expect(b']', "to end fused locations")?;
            }
            return Ok(self.fused(locations, metadata));
        }
        let found = self.describe_next();
        self.err(format!("expected a location, found {found}"))
    }

    /// `FusedLoc::get`: unknown locations dropped, duplicates removed, nested fused locations
    /// with the same metadata flattened; one location without metadata is itself.
    fn fused(&mut self, locations: Vec<AttrId>, metadata: Option<AttrId>) -> AttrId {
        let mut unique: Vec<AttrId> = Vec::new();
        for loc in locations {
            match self.module.context.attr(loc).clone() {
                Attribute::FusedLoc { locations: inner, metadata: m } if m == metadata => {
                    for l in inner.iter() {
                        if !unique.contains(l) {
                            unique.push(*l);
                        }
                    }
                }
                Attribute::UnknownLoc => {}
                _ => {
                    if !unique.contains(&loc) {
                        unique.push(loc);
                    }
                }
            }
        }
        if metadata.is_none() {
            match unique.len() {
                0 => return self.intern_attr(Attribute::UnknownLoc),
                1 => return unique[0],
                _ => {}
            }
        }
        self.intern_attr(Attribute::FusedLoc { locations: unique.into(), metadata })
    }

    // ---- affine ----

    /// `(d0, d1)[s0]`: names of dims and symbols.
    fn dims_symbols(&mut self) -> R<Vec<(Vec<u8>, AffineExpr)>> {
        let mut names = Vec::new();
        self.expect(b'(', "to start the dimension list")?;
        let mut d = 0;
        if !self.eat(b')') {
            loop {
                let Some(name) = self.bare_ident() else { return self.err("expected a dimension name") };
                names.push((name.to_vec(), AffineExpr::Dim(d)));
                d += 1;
                if !self.eat(b',') {
                    break;
                }
            }
            self.expect(b')', "to end the dimension list")?;
        }
        if self.eat(b'[') {
            let mut s = 0;
            if !self.eat(b']') {
                loop {
                    let Some(name) = self.bare_ident() else { return self.err("expected a symbol name") };
                    names.push((name.to_vec(), AffineExpr::Symbol(s)));
                    s += 1;
                    if !self.eat(b',') {
                        break;
                    }
                }
                self.expect(b']', "to end the symbol list")?;
            }
        }
        Ok(names)
    }

    fn counts(names: &[(Vec<u8>, AffineExpr)]) -> (u32, u32) {
        let dims = names.iter().filter(|(_, e)| matches!(e, AffineExpr::Dim(_))).count() as u32;
        (dims, names.len() as u32 - dims)
    }

    fn affine_map_attr(&mut self) -> R<AttrId> {
        self.expect(b'<', "after 'affine_map'")?;
        let names = self.dims_symbols()?;
        self.expect_str("->", "in an affine map")?;
        self.expect(b'(', "to start the affine map results")?;
        let mut results = Vec::new();
        if !self.eat(b')') {
            loop {
                results.push(self.affine_expr(&names)?);
                if !self.eat(b',') {
                    break;
                }
            }
            self.expect(b')', "to end the affine map results")?;
        }
        self.expect(b'>', "to end the affine map")?;
        let (num_dims, num_symbols) = Self::counts(&names);
        Ok(self.intern_attr(Attribute::AffineMap(AffineMap { num_dims, num_symbols, results: results.into() })))
    }

    fn affine_set_attr(&mut self) -> R<AttrId> {
        self.expect(b'<', "after 'affine_set'")?;
        let names = self.dims_symbols()?;
        self.expect(b':', "in an integer set")?;
        self.expect(b'(', "to start the constraints")?;
        let mut constraints = Vec::new();
        if !self.eat(b')') {
            loop {
                let lhs = self.affine_expr(&names)?;
                let (eq, flip) = if self.eat_str("==") {
                    (true, false)
                } else if self.eat_str(">=") {
                    (false, false)
                } else if self.eat_str("<=") {
                    (false, true)
                } else {
                    return self.err("expected '==', '>=' or '<=' in a constraint");
                };
                let rhs = self.affine_expr(&names)?;
                let expr = if flip {
                    add(rhs, mul(lhs, AffineExpr::Constant(-1)))
                } else if rhs == AffineExpr::Constant(0) {
                    lhs
                } else {
                    add(lhs, mul(rhs, AffineExpr::Constant(-1)))
                };
                constraints.push((expr, eq));
                if !self.eat(b',') {
                    break;
                }
            }
            self.expect(b')', "to end the constraints")?;
        }
        self.expect(b'>', "to end the integer set")?;
        let (num_dims, num_symbols) = Self::counts(&names);
        Ok(self.intern_attr(Attribute::IntegerSet(IntegerSet {
            num_dims,
            num_symbols,
            constraints: constraints.into(),
        })))
    }

    /// Sums and differences of terms.
    fn affine_expr(&mut self, names: &[(Vec<u8>, AffineExpr)]) -> R<AffineExpr> {
        self.enter()?;
        let mut lhs = self.affine_term(names)?;
        loop {
            if self.peek() == Some(b'+') {
                self.pos += 1;
                let rhs = self.affine_term(names)?;
                lhs = add(lhs, rhs);
            } else if self.peek() == Some(b'-') && self.peek_at(1) != Some(b'>') {
                self.pos += 1;
                let rhs = self.affine_term(names)?;
                lhs = add(lhs, mul(rhs, AffineExpr::Constant(-1)));
            } else {
                break;
            }
        }
        self.leave();
        Ok(lhs)
    }

    fn affine_term(&mut self, names: &[(Vec<u8>, AffineExpr)]) -> R<AffineExpr> {
        let mut lhs = self.affine_operand(names)?;
        loop {
            if self.eat(b'*') {
                let rhs = self.affine_operand(names)?;
                lhs = mul(lhs, rhs);
            } else if self.eat_keyword("floordiv") {
                let rhs = self.affine_operand(names)?;
                lhs = binary(lhs, rhs, AffineExpr::FloorDiv);
            } else if self.eat_keyword("ceildiv") {
                let rhs = self.affine_operand(names)?;
                lhs = binary(lhs, rhs, AffineExpr::CeilDiv);
            } else if self.eat_keyword("mod") {
                let rhs = self.affine_operand(names)?;
                lhs = binary(lhs, rhs, AffineExpr::Mod);
            } else {
                return Ok(lhs);
            }
        }
    }

    fn affine_operand(&mut self, names: &[(Vec<u8>, AffineExpr)]) -> R<AffineExpr> {
        self.enter()?;
        let result = match self.peek() {
            Some(b'(') => {
                self.pos += 1;
                let e = self.affine_expr(names)?;
                self.expect(b')', "in an affine expression")?;
                Ok(e)
            }
            Some(b'-') => {
                self.pos += 1;
                let e = self.affine_operand(names)?;
                Ok(mul(e, AffineExpr::Constant(-1)))
            }
            Some(b) if b.is_ascii_digit() => {
                let v = self.parse_u64("an integer")?;
                i64::try_from(v).map(AffineExpr::Constant).map_err(|_| self.error_at(self.pos, "constant too large"))
            }
            _ => {
                let pos = self.pos;
                match self.bare_ident() {
                    Some(name) => match names.iter().find(|(n, _)| n == name) {
                        Some((_, e)) => Ok(e.clone()),
                        None => self
                            .err_at(pos, format!("use of undeclared identifier '{}'", String::from_utf8_lossy(name))),
                    },
                    None => {
                        let found = self.describe_next();
                        self.err(format!("expected an affine expression, found {found}"))
                    }
                }
            }
        };
        self.leave();
        result
    }
}

fn is_symbol_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.' | b'-')
}

fn constant(e: &AffineExpr) -> Option<i64> {
    match e {
        AffineExpr::Constant(c) => Some(*c),
        _ => None,
    }
}

/// `lhs + rhs` with upstream's simplifications (constants folded and kept on the right).
fn add(lhs: AffineExpr, rhs: AffineExpr) -> AffineExpr {
    match (constant(&lhs), constant(&rhs)) {
        (Some(a), Some(b)) => {
            if let Some(sum) = a.checked_add(b) {
                return AffineExpr::Constant(sum);
            }
        }
        (Some(_), None) => return add(rhs, lhs),
        (None, Some(0)) => return lhs,
        (None, Some(b)) => {
            if let AffineExpr::Add(l, r) = &lhs {
                if let Some(a) = constant(r) {
                    if let Some(sum) = a.checked_add(b) {
                        return add((**l).clone(), AffineExpr::Constant(sum));
                    }
                }
            }
        }
        (None, None) => {
            if let AffineExpr::Add(l, r) = &lhs {
                if constant(r).is_some() {
                    return add(add((**l).clone(), rhs), (**r).clone());
                }
            }
        }
    }
    AffineExpr::Add(Box::new(lhs), Box::new(rhs))
}

/// `lhs * rhs` with upstream's simplifications.
fn mul(lhs: AffineExpr, rhs: AffineExpr) -> AffineExpr {
    match (constant(&lhs), constant(&rhs)) {
        (Some(a), Some(b)) => {
            if let Some(p) = a.checked_mul(b) {
                return AffineExpr::Constant(p);
            }
        }
        (Some(_), None) => return mul(rhs, lhs),
        (None, Some(1)) => return lhs,
        (None, Some(0)) => return rhs,
        (None, Some(b)) => {
            if let AffineExpr::Mul(l, r) = &lhs {
                if let Some(a) = constant(r) {
                    if let Some(p) = a.checked_mul(b) {
                        return mul((**l).clone(), AffineExpr::Constant(p));
                    }
                }
            }
        }
        (None, None) => {
            if let AffineExpr::Mul(l, r) = &lhs {
                if constant(r).is_some() {
                    return mul(mul((**l).clone(), rhs), (**r).clone());
                }
            }
        }
    }
    AffineExpr::Mul(Box::new(lhs), Box::new(rhs))
}

/// `floordiv`, `ceildiv`, `mod` with constant folding and the trivial divisor 1.
fn binary(lhs: AffineExpr, rhs: AffineExpr, make: fn(Box<AffineExpr>, Box<AffineExpr>) -> AffineExpr) -> AffineExpr {
    let probe = make(Box::new(AffineExpr::Constant(0)), Box::new(AffineExpr::Constant(1)));
    if let (Some(a), Some(b)) = (constant(&lhs), constant(&rhs)) {
        if b > 0 {
            let folded = match probe {
                AffineExpr::FloorDiv(..) => a.div_euclid(b),
                AffineExpr::CeilDiv(..) => -((-a).div_euclid(b)),
                _ => a.rem_euclid(b),
            };
            return AffineExpr::Constant(folded);
        }
    }
    if constant(&rhs) == Some(1) {
        return match probe {
            AffineExpr::Mod(..) => AffineExpr::Constant(0),
            _ => lhs,
        };
    }
    make(Box::new(lhs), Box::new(rhs))
}
