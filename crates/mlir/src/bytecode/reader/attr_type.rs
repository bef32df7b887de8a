//! The attribute/type tables: entry offsets, builtin dialect decoding (codes in
//! `mlir-bytecode-notes.md` §3), and the checks that make the tables safe to walk.

use super::cursor::Cursor;
use super::error::{ReadError, ReadErrorKind, Result};
use super::{FileState, Section, MAX_NESTING};
use crate::ir::{
    AffineExpr, AffineMap, ApInt, AttrId, Attribute, DialectId, FloatKind, IntegerSet, Signedness, Type, TypeId,
};

#[derive(Clone, Copy)]
struct Entry<'a> {
    dialect: DialectId,
    custom: bool,
    data: &'a [u8],
    offset: usize,
}

pub(super) fn read_attrs_and_types(state: &mut FileState<'_>, data: Section<'_>, offsets: Section<'_>) -> Result<()> {
    let mut c = offsets.cursor();
    let num_attrs = c.count("attribute count", 0)?;
    let num_types = c.count("type count", 0)?;
    // Each entry takes at least one byte in the offset section.
    c.check_count(num_attrs as u64 + num_types as u64, "attribute and type", 1, offsets.offset)?;
    let num_dialects = state.module.context.dialects().len();
    let mut entries: Vec<Entry<'_>> = Vec::with_capacity(num_attrs + num_types);
    let mut data_offset = 0usize;
    for total in [num_attrs, num_attrs + num_types] {
        while entries.len() < total {
            let dialect = DialectId(c.index("dialect", num_dialects)? as u32);
            let count_offset = c.offset();
            let count = c.varint("attribute/type group size")?;
            if count > (total - entries.len()) as u64 {
                return Err(ReadError::new(
                    count_offset,
                    ReadErrorKind::Invalid(format!("group of {count} entries overruns the table")),
                ));
            }
            for _ in 0..count {
                let offset = c.offset();
                let (size, custom) = c.varint_with_flag("attribute/type entry size")?;
                if size > (data.data.len() - data_offset) as u64 {
                    return Err(ReadError::new(
                        offset,
                        ReadErrorKind::Invalid("attribute/type entry overruns its section".into()),
                    ));
                }
                let size = size as usize;
                entries.push(Entry {
                    dialect,
                    custom,
                    data: &data.data[data_offset..data_offset + size],
                    offset: data.offset + data_offset,
                });
                data_offset += size;
            }
        }
    }
    c.expect_end("attribute/type offset section")?;

    let builtin = state.module.context.find_dialect(b"builtin");
    // Entries refer to each other by index only (bounded by the counts above), and decoding looks
    // at no other entry but the type of an integer or float attribute, so types are decoded first
    // and each entry is appended in order. Room is left for the few attributes and types that
    // decoding native properties makes up, so that they do not reallocate the whole table.
    state.module.context.reserve(num_attrs + 64, num_types + 8);
    for entry in &entries[num_attrs..] {
        let ty = decode_entry(state, entry, builtin, num_attrs, num_types, |d, c| d.builtin_type(c))?;
        let ty = match ty {
            Decoded::Builtin(ty) => ty,
            Decoded::Text(dialect, text) => Type::Text { dialect, text },
            Decoded::Custom(dialect, payload) => Type::Custom { dialect, payload },
        };
        state.module.context.push_type(ty);
    }
    for entry in &entries[..num_attrs] {
        let attr = decode_entry(state, entry, builtin, num_attrs, num_types, |d, c| d.builtin_attr(c))?;
        let attr = match attr {
            Decoded::Builtin(attr) => attr,
            Decoded::Text(dialect, text) => Attribute::Text { dialect, text },
            Decoded::Custom(dialect, payload) => Attribute::Custom { dialect, payload },
        };
        state.module.context.push_attr(attr);
    }
    // Other dialects' own encodings that rtx can print become text (the first table pass keeps
    // them encoded, since they may refer to any entry).
    let supported: Vec<bool> = state
        .module
        .context
        .dialects()
        .iter()
        .enumerate()
        .map(|(i, d)| {
            Some(DialectId(i as u32)) != builtin
                && super::dialects::is_supported(state.module.context.str_bytes(d.name))
        })
        .collect();
    let customs: Vec<super::dialects::CustomEntry<'_>> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.custom && supported[e.dialect.0 as usize])
        .map(|(node, e)| super::dialects::CustomEntry { node, dialect: e.dialect, data: e.data, offset: e.offset })
        .collect();
    // Before the decoded entries print the texts they refer to.
    let raw = entries[..num_attrs].iter().enumerate().filter(|(_, e)| !e.custom).map(|(i, _)| i);
    super::text_distinct::renumber(state, raw, num_attrs as u64);
    if !customs.is_empty() {
        let offsets: Vec<usize> = entries.iter().map(|e| e.offset).collect();
        super::dialects::resolve(state, &customs, &offsets, num_attrs)?;
    }
    check_graph(state, &entries, num_attrs)?;
    for (index, entry) in entries[..num_attrs].iter().enumerate() {
        check_attr(state, AttrId(index as u32))
            .map_err(|message| ReadError::new(entry.offset, ReadErrorKind::Invalid(message)))?;
    }
    Ok(())
}

enum Decoded<T> {
    Builtin(T),
    Text(DialectId, crate::ir::Sym),
    Custom(DialectId, crate::ir::Blob),
}

fn decode_entry<T>(
    state: &mut FileState<'_>,
    entry: &Entry<'_>,
    builtin: Option<DialectId>,
    num_attrs: usize,
    num_types: usize,
    decode: impl FnOnce(&mut Decoder<'_, '_>, &mut Cursor<'_>) -> Result<T>,
) -> Result<Decoded<T>> {
    let mut c = Cursor::new(entry.data, entry.offset);
    if !entry.custom {
        let text = c.cstr("attribute/type text")?;
        c.expect_end("attribute/type text entry")?;
        let text = state.module.context.push_string(text);
        return Ok(Decoded::Text(entry.dialect, text));
    }
    if Some(entry.dialect) != builtin {
        return Ok(Decoded::Custom(entry.dialect, state.blob(entry.data)));
    }
    let mut decoder = Decoder { state, num_attrs, num_types };
    let value = decode(&mut decoder, &mut c)?;
    c.expect_end("builtin attribute/type entry")?;
    Ok(Decoded::Builtin(value))
}

struct Decoder<'s, 'a> {
    state: &'s mut FileState<'a>,
    num_attrs: usize,
    num_types: usize,
}

impl Decoder<'_, '_> {
    fn attr(&self, c: &mut Cursor<'_>) -> Result<AttrId> {
        Ok(AttrId(c.index("attribute", self.num_attrs)? as u32))
    }

    fn ty(&self, c: &mut Cursor<'_>) -> Result<TypeId> {
        Ok(TypeId(c.index("type", self.num_types)? as u32))
    }

    fn attrs(&self, c: &mut Cursor<'_>) -> Result<Box<[AttrId]>> {
        let n = c.count("attribute list length", 1)?;
        (0..n).map(|_| self.attr(c)).collect()
    }

    fn types(&self, c: &mut Cursor<'_>) -> Result<Box<[TypeId]>> {
        let n = c.count("type list length", 1)?;
        (0..n).map(|_| self.ty(c)).collect()
    }

    fn shape(&self, c: &mut Cursor<'_>) -> Result<Box<[i64]>> {
        let n = c.count("shape rank", 1)?;
        (0..n).map(|_| c.signed_varint("dimension")).collect()
    }

    #[inline]
    fn u32(&self, c: &mut Cursor<'_>, what: &'static str) -> Result<u32> {
        let offset = c.offset();
        let value = c.varint(what)?;
        u32::try_from(value).map_err(|_| {
            ReadError::new(offset, ReadErrorKind::Invalid(format!("{what} {value} does not fit in 32 bits")))
        })
    }

    /// `readAPIntWithKnownWidth`.
    fn apint(&self, c: &mut Cursor<'_>, width: u32) -> Result<ApInt> {
        if width <= 8 {
            return Ok(ApInt::from_u64(width, u64::from(c.byte("integer")?)));
        }
        if width <= 64 {
            return Ok(ApInt::from_u64(width, c.signed_varint("integer")? as u64));
        }
        let offset = c.offset();
        let words = c.varint("integer word count")?;
        if words > u64::from(width.div_ceil(64)) {
            return Err(ReadError::new(
                offset,
                ReadErrorKind::Invalid(format!("{words} words for a {width}-bit integer")),
            ));
        }
        let words =
            (0..words).map(|_| c.signed_varint("integer word").map(|w| w as u64)).collect::<Result<Vec<_>>>()?;
        Ok(ApInt::from_words(width, words))
    }

    fn blob(&self, c: &mut Cursor<'_>) -> Result<crate::ir::Blob> {
        let len = c.varint("blob length")?;
        let bytes = c.bytes(len, "blob")?;
        Ok(self.state.blob(bytes))
    }

    fn builtin_type(&mut self, c: &mut Cursor<'_>) -> Result<Type> {
        let code_offset = c.offset();
        let code = c.varint("builtin type code")?;
        let float = |kind| Ok(Type::Float(kind));
        match code {
            0 => {
                let value = c.varint("integer type")?;
                let signedness = match value & 3 {
                    0 => Signedness::Signless,
                    1 => Signedness::Signed,
                    2 => Signedness::Unsigned,
                    _ => return Err(c.invalid("bad integer signedness")),
                };
                let width = value >> 2;
                if width > 1 << 24 {
                    return Err(c.invalid(format!("integer width {width} exceeds MLIR's limit")));
                }
                Ok(Type::Integer { width: width as u32, signedness })
            }
            1 => Ok(Type::Index),
            2 => Ok(Type::Function { inputs: self.types(c)?, results: self.types(c)? }),
            3 => float(FloatKind::BF16),
            4 => float(FloatKind::F16),
            5 => float(FloatKind::F32),
            6 => float(FloatKind::F64),
            7 => float(FloatKind::F80),
            8 => float(FloatKind::F128),
            9 => Ok(Type::Complex(self.ty(c)?)),
            10 => {
                Ok(Type::MemRef { shape: self.shape(c)?, elem: self.ty(c)?, layout: self.attr(c)?, memory_space: None })
            }
            11 => {
                let memory_space = Some(self.attr(c)?);
                Ok(Type::MemRef { shape: self.shape(c)?, elem: self.ty(c)?, layout: self.attr(c)?, memory_space })
            }
            12 => Ok(Type::None),
            13 => Ok(Type::RankedTensor { shape: self.shape(c)?, elem: self.ty(c)?, encoding: None }),
            14 => {
                let encoding = Some(self.attr(c)?);
                Ok(Type::RankedTensor { shape: self.shape(c)?, elem: self.ty(c)?, encoding })
            }
            15 => Ok(Type::Tuple(self.types(c)?)),
            16 => Ok(Type::UnrankedMemRef { elem: self.ty(c)?, memory_space: None }),
            17 => {
                let memory_space = Some(self.attr(c)?);
                Ok(Type::UnrankedMemRef { elem: self.ty(c)?, memory_space })
            }
            18 => Ok(Type::UnrankedTensor { elem: self.ty(c)? }),
            19 => Ok(Type::Vector { shape: self.shape(c)?, scalable: None, elem: self.ty(c)? }),
            20 => {
                let n = c.count("scalable dims", 1)?;
                let scalable =
                    (0..n).map(|_| c.byte("scalable flag").map(|b| b != 0)).collect::<Result<Box<[bool]>>>()?;
                let shape = self.shape(c)?;
                if shape.len() != scalable.len() {
                    return Err(c.invalid("scalable flags do not match the vector rank"));
                }
                Ok(Type::Vector { shape, scalable: Some(scalable), elem: self.ty(c)? })
            }
            21 => float(FloatKind::TF32),
            22 => float(FloatKind::F8E5M2),
            23 => float(FloatKind::F8E4M3),
            24 => float(FloatKind::F8E4M3FN),
            25 => float(FloatKind::F8E5M2FNUZ),
            26 => float(FloatKind::F8E4M3FNUZ),
            27 => float(FloatKind::F8E4M3B11FNUZ),
            28 => float(FloatKind::F8E3M4),
            29 => float(FloatKind::F4E2M1FN),
            30 => float(FloatKind::F6E2M3FN),
            31 => float(FloatKind::F6E3M2FN),
            32 => float(FloatKind::F8E8M0FNU),
            _ => Err(ReadError::new(code_offset, ReadErrorKind::Invalid(format!("unknown builtin type code {code}")))),
        }
    }

    fn affine_expr(&self, c: &mut Cursor<'_>, depth: usize) -> Result<AffineExpr> {
        if depth > MAX_NESTING {
            return Err(c.error(ReadErrorKind::TooDeep(MAX_NESTING)));
        }
        let kind = c.varint("affine expression kind")?;
        let mut binary = |make: fn(Box<AffineExpr>, Box<AffineExpr>) -> AffineExpr| -> Result<AffineExpr> {
            let lhs = self.affine_expr(c, depth + 1)?;
            let rhs = self.affine_expr(c, depth + 1)?;
            Ok(make(Box::new(lhs), Box::new(rhs)))
        };
        match kind {
            0 => Ok(AffineExpr::Dim(self.u32(c, "affine dim")?)),
            1 => Ok(AffineExpr::Symbol(self.u32(c, "affine symbol")?)),
            2 => Ok(AffineExpr::Constant(c.signed_varint("affine constant")?)),
            3 => binary(AffineExpr::Add),
            4 => binary(AffineExpr::Mul),
            5 => binary(AffineExpr::Mod),
            6 => binary(AffineExpr::FloorDiv),
            7 => binary(AffineExpr::CeilDiv),
            _ => Err(c.invalid(format!("unknown affine expression kind {kind}"))),
        }
    }

    fn builtin_attr(&mut self, c: &mut Cursor<'_>) -> Result<Attribute> {
        let code_offset = c.offset();
        let code = c.varint("builtin attribute code")?;
        match code {
            0 => Ok(Attribute::Array(self.attrs(c)?)),
            1 => {
                let n = c.count("dictionary size", 2)?;
                let entries = (0..n).map(|_| Ok((self.attr(c)?, self.attr(c)?))).collect::<Result<Box<[_]>>>()?;
                Ok(Attribute::Dictionary(entries))
            }
            2 => Ok(Attribute::String { value: self.state.string(c, "string attribute")?, ty: None }),
            3 => {
                let value = self.state.string(c, "string attribute")?;
                Ok(Attribute::String { value, ty: Some(self.ty(c)?) })
            }
            4 => Ok(Attribute::FlatSymbolRef(self.attr(c)?)),
            5 => Ok(Attribute::SymbolRef { root: self.attr(c)?, nested: self.attrs(c)? }),
            6 => Ok(Attribute::Type(self.ty(c)?)),
            7 => Ok(Attribute::Unit),
            8 => {
                let offset = c.offset();
                let ty = self.ty(c)?;
                let width = match self.state.module.context.ty(ty) {
                    Type::Integer { width, .. } => *width,
                    Type::Index => 64,
                    _ => {
                        return Err(ReadError::new(
                            offset,
                            ReadErrorKind::Invalid("integer attribute of a non-integer type".into()),
                        ))
                    }
                };
                Ok(Attribute::Integer { ty, value: self.apint(c, width)? })
            }
            9 => {
                let offset = c.offset();
                let ty = self.ty(c)?;
                let Type::Float(kind) = self.state.module.context.ty(ty) else {
                    return Err(ReadError::new(
                        offset,
                        ReadErrorKind::Invalid("float attribute of a non-float type".into()),
                    ));
                };
                let width = kind.bit_width();
                Ok(Attribute::Float { ty, bits: self.apint(c, width)? })
            }
            10 => Ok(Attribute::CallSiteLoc { callee: self.attr(c)?, caller: self.attr(c)? }),
            11 => Ok(Attribute::FileLineColLoc {
                filename: self.attr(c)?,
                line: self.u32(c, "line")?,
                column: self.u32(c, "column")?,
            }),
            12 => Ok(Attribute::FusedLoc { locations: self.attrs(c)?, metadata: None }),
            13 => Ok(Attribute::FusedLoc { locations: self.attrs(c)?, metadata: Some(self.attr(c)?) }),
            14 => Ok(Attribute::NameLoc { name: self.attr(c)?, child: self.attr(c)? }),
            15 => Ok(Attribute::UnknownLoc),
            16 => {
                let ty = self.ty(c)?;
                let handle = c.index("resource handle", self.state.resource_handles.len())?;
                Ok(Attribute::DenseResource { ty, resource: self.state.resource_handles[handle] })
            }
            17 => {
                let elem = self.ty(c)?;
                let count = c.varint("dense array size")?;
                Ok(Attribute::DenseArray { elem, count, data: self.blob(c)? })
            }
            18 => Ok(Attribute::DenseElements { ty: self.ty(c)?, data: self.blob(c)? }),
            19 => {
                let offset = c.offset();
                let ty = self.ty(c)?;
                let splat = c.varint("dense string splat flag")? != 0;
                let count = if splat {
                    1
                } else {
                    let Some(n) = self.state.module.context.num_elements(ty) else {
                        return Err(ReadError::new(
                            offset,
                            ReadErrorKind::Invalid("dense strings of a type without a static shape".into()),
                        ));
                    };
                    c.check_count(n, "dense string", 1, offset)?
                };
                let values = (0..count).map(|_| self.state.string(c, "dense string")).collect::<Result<Box<[_]>>>()?;
                Ok(Attribute::DenseString { ty, splat, values })
            }
            20 => Ok(Attribute::Sparse { ty: self.ty(c)?, indices: self.attr(c)?, values: self.attr(c)? }),
            21 => {
                let id = (code_offset & 0xffff_ffff) as u32;
                Ok(Attribute::Distinct { id, referenced: self.attr(c)? })
            }
            22 => {
                let filename = self.attr(c)?;
                let n = c.count("location range size", 1)?;
                if n > 4 {
                    return Err(c.invalid(format!("location range of {n} numbers")));
                }
                let parts = (0..n).map(|_| self.u32(c, "location")).collect::<Result<Box<[_]>>>()?;
                Ok(Attribute::FileLineColRange { filename, parts })
            }
            23 => {
                let header = c.varint("affine map header")?;
                let num_dims = u32::try_from(header >> 2).map_err(|_| c.invalid("too many affine dims"))?;
                let dim = |c: &mut Cursor<'_>| -> Result<AffineExpr> {
                    let offset = c.offset();
                    let d = c.varint("affine dim")?;
                    if d >= u64::from(num_dims) {
                        return Err(ReadError::new(
                            offset,
                            ReadErrorKind::IndexOutOfRange { what: "affine dim", index: d, limit: num_dims.into() },
                        ));
                    }
                    Ok(AffineExpr::Dim(d as u32))
                };
                let (num_symbols, results) = match header & 3 {
                    0 => {
                        c.check_count(num_dims.into(), "affine dim", 0, 0)?;
                        if num_dims as usize > c.remaining().max(1) * 64 + 4096 {
                            return Err(c.invalid("absurd identity map size"));
                        }
                        (0, (0..num_dims).map(AffineExpr::Dim).collect())
                    }
                    1 => {
                        let offset = c.offset();
                        c.check_count(num_dims.into(), "permutation", 1, offset)?;
                        (0, (0..num_dims).map(|_| dim(c)).collect::<Result<Box<[_]>>>()?)
                    }
                    2 => {
                        let n = c.count("projected permutation", 1)?;
                        (0, (0..n).map(|_| dim(c)).collect::<Result<Box<[_]>>>()?)
                    }
                    _ => {
                        let num_symbols = self.u32(c, "affine symbols")?;
                        let n = c.count("affine results", 1)?;
                        (num_symbols, (0..n).map(|_| self.affine_expr(c, 0)).collect::<Result<Box<[_]>>>()?)
                    }
                };
                Ok(Attribute::AffineMap(AffineMap { num_dims, num_symbols, results }))
            }
            24 => {
                let num_dims = self.u32(c, "integer set dims")?;
                let num_symbols = self.u32(c, "integer set symbols")?;
                let n = c.count("integer set constraints", 2)?;
                let exprs = (0..n).map(|_| self.affine_expr(c, 0)).collect::<Result<Vec<_>>>()?;
                let constraints =
                    exprs.into_iter().map(|e| Ok((e, c.byte("equality flag")? != 0))).collect::<Result<Box<[_]>>>()?;
                Ok(Attribute::IntegerSet(IntegerSet { num_dims, num_symbols, constraints }))
            }
            25 => {
                let offset = c.signed_varint("strided offset")?;
                let n = c.count("strides", 1)?;
                let strides = (0..n).map(|_| c.signed_varint("stride")).collect::<Result<Box<[_]>>>()?;
                Ok(Attribute::StridedLayout { offset, strides })
            }
            _ => Err(ReadError::new(
                code_offset,
                ReadErrorKind::Invalid(format!("unknown builtin attribute code {code}")),
            )),
        }
    }
}

/// Node `i < num_attrs` is attribute `i`; node `num_attrs + j` is type `j`.
pub(super) fn children(state: &FileState<'_>, num_attrs: usize, node: usize, out: &mut Vec<usize>) {
    let ctx = &state.module.context;
    let a = |id: AttrId| id.0 as usize;
    let t = |id: TypeId| num_attrs + id.0 as usize;
    out.clear();
    if node < num_attrs {
        match ctx.attr(AttrId(node as u32)) {
            Attribute::Array(items) => out.extend(items.iter().map(|&x| a(x))),
            Attribute::Dictionary(entries) => out.extend(entries.iter().flat_map(|&(k, v)| [a(k), a(v)])),
            Attribute::String { ty, .. } => out.extend(ty.map(t)),
            Attribute::FlatSymbolRef(x) => out.push(a(*x)),
            Attribute::SymbolRef { root, nested } => {
                out.push(a(*root));
                out.extend(nested.iter().map(|&x| a(x)));
            }
            Attribute::Type(ty) | Attribute::Integer { ty, .. } | Attribute::Float { ty, .. } => out.push(t(*ty)),
            Attribute::DenseArray { elem, .. } => out.push(t(*elem)),
            Attribute::DenseElements { ty, .. }
            | Attribute::DenseString { ty, .. }
            | Attribute::DenseResource { ty, .. } => out.push(t(*ty)),
            Attribute::Sparse { ty, indices, values } => out.extend([t(*ty), a(*indices), a(*values)]),
            Attribute::Distinct { referenced, .. } => out.push(a(*referenced)),
            Attribute::FileLineColLoc { filename, .. } | Attribute::FileLineColRange { filename, .. } => {
                out.push(a(*filename))
            }
            Attribute::NameLoc { name, child } => out.extend([a(*name), a(*child)]),
            Attribute::CallSiteLoc { callee, caller } => out.extend([a(*callee), a(*caller)]),
            Attribute::FusedLoc { locations, metadata } => {
                out.extend(locations.iter().map(|&x| a(x)));
                out.extend(metadata.map(a));
            }
            _ => {}
        }
    } else {
        match ctx.ty(TypeId((node - num_attrs) as u32)) {
            Type::Function { inputs, results } => out.extend(inputs.iter().chain(results.iter()).map(|&x| t(x))),
            Type::Complex(x) | Type::UnrankedTensor { elem: x } => out.push(t(*x)),
            Type::MemRef { elem, layout, memory_space, .. } => {
                out.extend([t(*elem), a(*layout)]);
                out.extend(memory_space.map(a));
            }
            Type::UnrankedMemRef { elem, memory_space } => {
                out.push(t(*elem));
                out.extend(memory_space.map(a));
            }
            Type::RankedTensor { elem, encoding, .. } => {
                out.push(t(*elem));
                out.extend(encoding.map(a));
            }
            Type::Vector { elem, .. } => out.push(t(*elem)),
            Type::Tuple(items) => out.extend(items.iter().map(|&x| t(x))),
            _ => {}
        }
    }
}

/// Refuses reference cycles and chains deeper than [`MAX_NESTING`] (iteratively, so a hostile
/// file cannot overflow the stack here, and later recursive walks stay shallow).
fn check_graph(state: &FileState<'_>, entries: &[Entry<'_>], num_attrs: usize) -> Result<()> {
    const UNSEEN: u32 = 0;
    const ACTIVE: u32 = u32::MAX;
    let n = entries.len();
    // depth[node]: UNSEEN, ACTIVE (on the stack), or 1 + the longest chain below it.
    let mut depth = vec![UNSEEN; n];
    let mut scratch = Vec::new();
    // Children of the nodes on the stack live in one arena; a frame is (node, start, next).
    let mut arena: Vec<usize> = Vec::new();
    let mut stack: Vec<(usize, usize, usize)> = Vec::new();
    for root in 0..n {
        if depth[root] != UNSEEN {
            continue;
        }
        children(state, num_attrs, root, &mut scratch);
        // Most entries refer only to entries already measured (or to none): no walk needed.
        if scratch.iter().all(|&k| depth[k] != UNSEEN && depth[k] != ACTIVE) {
            let d = 1 + scratch.iter().map(|&k| depth[k]).max().unwrap_or(0);
            if d as usize > MAX_NESTING {
                return Err(ReadError::new(entries[root].offset, ReadErrorKind::TooDeep(MAX_NESTING)));
            }
            depth[root] = d;
            continue;
        }
        depth[root] = ACTIVE;
        stack.push((root, arena.len(), arena.len()));
        arena.extend_from_slice(&scratch);
        while let Some(&mut (node, start, ref mut next)) = stack.last_mut() {
            if *next < arena.len() {
                let kid = arena[*next];
                *next += 1;
                match depth[kid] {
                    ACTIVE => return Err(ReadError::new(entries[kid].offset, ReadErrorKind::Cycle)),
                    UNSEEN => {
                        children(state, num_attrs, kid, &mut scratch);
                        depth[kid] = ACTIVE;
                        stack.push((kid, arena.len(), arena.len()));
                        arena.extend_from_slice(&scratch);
                    }
                    _ => {}
                }
            } else {
                let d = 1 + arena[start..].iter().map(|&k| depth[k]).max().unwrap_or(0);
                if d as usize > MAX_NESTING {
                    return Err(ReadError::new(entries[node].offset, ReadErrorKind::TooDeep(MAX_NESTING)));
                }
                depth[node] = d;
                arena.truncate(start);
                stack.pop();
            }
        }
    }
    Ok(())
}

/// Checks what printing and walking an attribute rely on (kinds of referenced entries, dense data
/// sizes).
fn check_attr(state: &FileState<'_>, id: AttrId) -> std::result::Result<(), String> {
    let ctx = &state.module.context;
    let is_string = |a: AttrId| matches!(ctx.attr(a), Attribute::String { .. });
    let is_loc = |a: AttrId| {
        ctx.attr(a).is_location() || matches!(ctx.attr(a), Attribute::Text { .. } | Attribute::Custom { .. })
    };
    match ctx.attr(id) {
        Attribute::Dictionary(entries) if !entries.iter().all(|&(k, _)| is_string(k)) => {
            return Err("dictionary key is not a string".into());
        }
        Attribute::FlatSymbolRef(root) if !is_string(*root) => return Err("symbol reference to a non-string".into()),
        Attribute::SymbolRef { root, nested }
            if !is_string(*root) || !nested.iter().all(|&n| matches!(ctx.attr(n), Attribute::FlatSymbolRef(_))) =>
        {
            return Err("malformed symbol reference".into());
        }
        Attribute::FileLineColLoc { filename, .. } | Attribute::FileLineColRange { filename, .. }
            if !is_string(*filename) =>
        {
            return Err("location file name is not a string".into());
        }
        Attribute::NameLoc { name, child } if !is_string(*name) || !is_loc(*child) => {
            return Err("malformed name location".into())
        }
        Attribute::CallSiteLoc { callee, caller } if !is_loc(*callee) || !is_loc(*caller) => {
            return Err("malformed call site location".into());
        }
        Attribute::FusedLoc { locations, .. } if !locations.iter().all(|&l| is_loc(l)) => {
            return Err("malformed fused location".into())
        }
        Attribute::DenseArray { elem, count, data } => {
            let storage = ctx.element_storage(*elem).ok_or("dense array of a non-numeric element type")?;
            if storage.complex || (*count).checked_mul(storage.element_bytes() as u64) != Some(data.len() as u64) {
                return Err("dense array data size does not match its element count".into());
            }
        }
        Attribute::DenseElements { ty, data } => {
            let elem = ctx.ty(*ty).element_type().ok_or("dense elements of a non-shaped type")?;
            let storage = ctx.element_storage(elem).ok_or("dense elements of a non-numeric element type")?;
            let n = ctx.num_elements(*ty).ok_or("dense elements of a dynamically shaped type")?;
            let len = data.len() as u64;
            let ok = if storage.is_i1() {
                len == n.div_ceil(8) || (len == 1 && matches!(data.bytes()[0], 0 | 0xff))
            } else {
                let elem_bytes = storage.element_bytes() as u64;
                len == elem_bytes || Some(len) == n.checked_mul(elem_bytes)
            };
            if !ok {
                return Err(format!("dense elements data of {len} bytes does not fit {n} elements"));
            }
        }
        Attribute::DenseString { ty, splat, values }
            if !*splat && ctx.num_elements(*ty) != Some(values.len() as u64) =>
        {
            return Err("dense strings do not match their shape".into());
        }
        Attribute::Sparse { ty, indices, values } => {
            let dense =
                |a: AttrId| matches!(ctx.attr(a), Attribute::DenseElements { .. } | Attribute::DenseString { .. });
            // Indices print as decimal lists: plain integers, one stored per element.
            let indices_ok = match ctx.attr(*indices) {
                Attribute::DenseElements { ty, data } => {
                    let storage = ctx.ty(*ty).element_type().and_then(|e| ctx.element_storage(e));
                    let n = ctx.num_elements(*ty).unwrap_or(0);
                    storage.is_some_and(|s| {
                        !s.is_i1()
                            && !s.complex
                            && matches!(s.scalar, crate::ir::ScalarKind::Integer(_))
                            && Some(data.len() as u64) == n.checked_mul(s.scalar_bytes() as u64)
                    })
                }
                _ => false,
            };
            if ctx.ty(*ty).shape().is_none() || !indices_ok || !dense(*values) {
                return Err("malformed sparse elements".into());
            }
        }
        _ => {}
    }
    Ok(())
}
