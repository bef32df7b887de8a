//! The attribute/type sections: builtin attributes and types in the builtin dialect's bytecode
//! encoding (codes in `mlir-bytecode-notes.md` §3, the inverse of the reader's decoding), other
//! dialects' as the text they were kept as.

use super::emitter::Emitter;
use super::llvm::{Item, Native};
use super::numbering::{self, by_reference, malformed, AttrKey, Entry, Plan, Result, Slot};
use crate::ir::{AffineExpr, AffineMap, ApInt, AttrId, Attribute, FloatKind, MlirContext, Signedness, Type, TypeId};

/// How the references of an attribute being encoded become entry numbers.
trait Refs {
    fn attr(&self, id: AttrId) -> Result<u64>;
    fn ty(&self, id: TypeId) -> Result<TypeId>;
}

/// A canonical entry's references are entry numbers already.
struct Canonical;

impl Refs for Canonical {
    fn attr(&self, id: AttrId) -> Result<u64> {
        Ok(u64::from(id.0))
    }
    fn ty(&self, id: TypeId) -> Result<TypeId> {
        Ok(id)
    }
}

/// A context attribute's references are numbered by the plan's tables.
struct Numbered<'a>(&'a Plan);

impl Refs for Numbered<'_> {
    fn attr(&self, id: AttrId) -> Result<u64> {
        self.0.attr_index(AttrKey::Module(id))
    }
    fn ty(&self, id: TypeId) -> Result<TypeId> {
        Ok(TypeId(self.0.type_index(id)? as u32))
    }
}

/// Writes the offset section (3) and the attribute/type section (2), in that order. The offsets
/// hold each entry's size, so every entry is sized first — a text (an attribute or type kept as
/// its text, such as a model's weights in the attribute of a dialect rtx does not know) by its
/// length, any other by encoding it into a small scratch buffer — and the data is then written
/// after its header, its length known: built apart and appended, or moved past a header written
/// last, a large module's data would be held twice or moved whole.
pub(super) fn write_attr_type_sections(out: &mut Emitter, plan: &Plan, ctx: &MlirContext) -> Result<()> {
    let mut scratch = Emitter::new();
    let mut data_len = 0;
    let mut sized = |known: Option<usize>, encode: &dyn Fn(&mut Emitter) -> Result<bool>| -> Result<(u64, bool)> {
        let (len, custom) = match known {
            Some(len) => (len + 1, false),
            None => {
                scratch.clear();
                let custom = encode(&mut scratch)?;
                (scratch.len(), custom)
            }
        };
        data_len += len;
        Ok((len as u64, custom))
    };
    let offsets = out.begin_section();
    out.varint(plan.attrs.len() as u64);
    out.varint(plan.types.len() as u64);
    for run in plan.attrs.chunk_by(|a, b| a.0 == b.0) {
        out.varint(u64::from(run[0].0));
        out.varint(run.len() as u64);
        for &(_, slot) in run {
            let (size, custom) = sized(attr_text_len(plan, slot), &|e| encode_slot(e, plan, ctx, slot))?;
            out.varint_with_flag(size, custom);
        }
    }
    for run in plan.types.chunk_by(|a, b| a.0 == b.0) {
        out.varint(u64::from(run[0].0));
        out.varint(run.len() as u64);
        for (_, ty) in run {
            let (size, custom) = sized(type_text_len(plan, ty), &|e| encode_type(e, plan, ty))?;
            out.varint_with_flag(size, custom);
        }
    }
    out.end_section(3, offsets);
    let start = out.known_section(2, data_len);
    for &(_, slot) in &plan.attrs {
        encode_slot(out, plan, ctx, slot)?;
    }
    for (_, ty) in &plan.types {
        encode_type(out, plan, ty)?;
    }
    if out.len() - start != data_len {
        return Err(malformed("an attribute or type encoded to another size than it was sized to"));
    }
    Ok(())
}

/// Encodes the attribute entry of `slot`; whether the encoding is its dialect's own.
fn encode_slot(e: &mut Emitter, plan: &Plan, ctx: &MlirContext, slot: Slot) -> Result<bool> {
    match slot {
        Slot::Context(id) => match numbering::attr(ctx, id)? {
            attr if by_reference(attr) => encode_attr(e, plan, attr, &Numbered(plan)),
            _ => Err(malformed("a context attribute that must be copied was not")),
        },
        Slot::Owned(item) => match plan.owned.get(item as usize) {
            Some(Entry::Attr(attr)) => encode_attr(e, plan, attr, &Canonical),
            Some(Entry::Native(native)) => Ok(encode_native(e, native)),
            None => Err(malformed("attribute entry out of range")),
        },
    }
}

/// The length of the text of `slot`'s attribute when it is written as text (only owned entries
/// are: a text is never encoded by reference).
fn attr_text_len(plan: &Plan, slot: Slot) -> Option<usize> {
    match slot {
        Slot::Owned(item) => match plan.owned.get(item as usize) {
            Some(Entry::Attr(Attribute::Text { text, .. })) => plan.texts.items.get(text.0 as usize).map(|t| t.len()),
            _ => None,
        },
        Slot::Context(_) => None,
    }
}

/// The length of `ty`'s text when it is written as text.
fn type_text_len(plan: &Plan, ty: &Type) -> Option<usize> {
    match ty {
        Type::Text { text, .. } => plan.texts.items.get(text.0 as usize).map(|text| text.len()),
        _ => None,
    }
}

/// An attribute in its dialect's own encoding (whose references are final entry indices).
fn encode_native(e: &mut Emitter, native: &Native) -> bool {
    for item in native.items.iter() {
        match *item {
            Item::Varint(v) => e.varint(v),
            Item::Byte(b) => e.byte(b),
            Item::Attr(id) => e.varint(u64::from(id.0)),
            Item::OptAttr(id) => e.varint(id.map_or(0, |id| u64::from(id.0) << 1 | 1)),
        }
    }
    true
}

fn text(e: &mut Emitter, plan: &Plan, index: u32) -> Result<bool> {
    let text = plan.texts.items.get(index as usize).ok_or_else(|| malformed("text out of range"))?;
    e.cstr(text);
    Ok(false)
}

fn list<T>(e: &mut Emitter, items: &[T], mut each: impl FnMut(&mut Emitter, &T)) {
    e.varint(items.len() as u64);
    for item in items {
        each(e, item);
    }
}

/// [`list`] of references, which may fail to be numbered.
fn try_list<T>(e: &mut Emitter, items: &[T], mut each: impl FnMut(&mut Emitter, &T) -> Result<()>) -> Result<()> {
    e.varint(items.len() as u64);
    items.iter().try_for_each(|item| each(e, item))
}

/// `writeAPIntWithKnownWidth`: a byte up to 8 bits, a signed varint of the zero-extended value up
/// to 64, else the active words as signed varints.
fn apint(e: &mut Emitter, value: &ApInt) {
    let words = value.words();
    if value.width <= 8 {
        e.byte(words.first().copied().unwrap_or(0) as u8);
    } else if value.width <= 64 {
        e.signed_varint(words.first().copied().unwrap_or(0) as i64);
    } else {
        let active = words.iter().rposition(|&w| w != 0).map_or(1, |i| i + 1);
        e.varint(active as u64);
        for &word in &words[..active] {
            e.signed_varint(word as i64);
        }
    }
}

fn affine_expr(e: &mut Emitter, expr: &AffineExpr) {
    let binary = |e: &mut Emitter, kind: u64, lhs: &AffineExpr, rhs: &AffineExpr| {
        e.varint(kind);
        affine_expr(e, lhs);
        affine_expr(e, rhs);
    };
    match expr {
        AffineExpr::Dim(d) => {
            e.varint(0);
            e.varint(u64::from(*d));
        }
        AffineExpr::Symbol(s) => {
            e.varint(1);
            e.varint(u64::from(*s));
        }
        AffineExpr::Constant(c) => {
            e.varint(2);
            e.signed_varint(*c);
        }
        AffineExpr::Add(l, r) => binary(e, 3, l, r),
        AffineExpr::Mul(l, r) => binary(e, 4, l, r),
        AffineExpr::Mod(l, r) => binary(e, 5, l, r),
        AffineExpr::FloorDiv(l, r) => binary(e, 6, l, r),
        AffineExpr::CeilDiv(l, r) => binary(e, 7, l, r),
    }
}

/// Identity (kind 0), permutation (1), projected permutation (2) or general (3), whichever is the
/// most compact form that decodes to exactly `map`.
fn affine_map(e: &mut Emitter, map: &AffineMap) {
    let dims: Option<Vec<u32>> = if map.num_symbols == 0 {
        map.results.iter().map(|r| if let AffineExpr::Dim(d) = r { Some(*d) } else { None }).collect()
    } else {
        None
    };
    let header = u64::from(map.num_dims) << 2;
    if let Some(dims) = dims.filter(|dims| {
        let mut seen = vec![false; map.num_dims as usize];
        dims.iter().all(|&d| d < map.num_dims && !std::mem::replace(&mut seen[d as usize], true))
    }) {
        if dims.len() == map.num_dims as usize && dims.iter().enumerate().all(|(i, &d)| i as u32 == d) {
            e.varint(header);
        } else if dims.len() == map.num_dims as usize {
            e.varint(header | 1);
            dims.iter().for_each(|&d| e.varint(u64::from(d)));
        } else {
            e.varint(header | 2);
            list(e, &dims, |e, &d| e.varint(u64::from(d)));
        }
        return;
    }
    e.varint(header | 3);
    e.varint(u64::from(map.num_symbols));
    list(e, &map.results, affine_expr);
}

fn int_width(plan: &Plan, ty: TypeId) -> Result<u32> {
    match plan.types.get(ty.0 as usize).map(|t| &t.1) {
        Some(Type::Integer { width, .. }) => Ok(*width),
        Some(Type::Index) => Ok(64),
        _ => Err(malformed("integer attribute of a non-integer type")),
    }
}

/// Encodes an attribute, its references numbered by `refs`; returns whether it used a custom
/// (non-text) encoding. Strings, texts and resources are canonical already (see [`by_reference`]).
fn encode_attr(e: &mut Emitter, plan: &Plan, attr: &Attribute, refs: &impl Refs) -> Result<bool> {
    let a = |e: &mut Emitter, id: &AttrId| -> Result<()> {
        e.varint(refs.attr(*id)?);
        Ok(())
    };
    let t = |e: &mut Emitter, id: &TypeId| -> Result<()> {
        e.varint(u64::from(refs.ty(*id)?.0));
        Ok(())
    };
    match attr {
        Attribute::Array(items) => {
            e.varint(0);
            try_list(e, items, a)?;
        }
        Attribute::Dictionary(entries) => {
            e.varint(1);
            try_list(e, entries, |e, (k, v)| {
                a(e, k)?;
                a(e, v)
            })?;
        }
        Attribute::String { value, ty: None } => {
            e.varint(2);
            e.varint(u64::from(value.0));
        }
        Attribute::String { value, ty: Some(ty) } => {
            e.varint(3);
            e.varint(u64::from(value.0));
            t(e, ty)?;
        }
        Attribute::FlatSymbolRef(root) => {
            e.varint(4);
            a(e, root)?;
        }
        Attribute::SymbolRef { root, nested } => {
            e.varint(5);
            a(e, root)?;
            try_list(e, nested, a)?;
        }
        Attribute::Type(ty) => {
            e.varint(6);
            t(e, ty)?;
        }
        Attribute::Unit => e.varint(7),
        Attribute::Integer { ty, value } => {
            let width = int_width(plan, refs.ty(*ty)?)?;
            if width != value.width {
                return Err(malformed("integer attribute width differs from its type's"));
            }
            e.varint(8);
            t(e, ty)?;
            apint(e, value);
        }
        Attribute::Float { ty, bits } => {
            match plan.types.get(refs.ty(*ty)?.0 as usize).map(|t| &t.1) {
                Some(Type::Float(kind)) if kind.bit_width() == bits.width => {}
                _ => return Err(malformed("float attribute of a non-float type or the wrong width")),
            }
            e.varint(9);
            t(e, ty)?;
            apint(e, bits);
        }
        Attribute::CallSiteLoc { callee, caller } => {
            e.varint(10);
            a(e, callee)?;
            a(e, caller)?;
        }
        Attribute::FileLineColLoc { filename, line, column } => {
            e.varint(11);
            a(e, filename)?;
            e.varint(u64::from(*line));
            e.varint(u64::from(*column));
        }
        Attribute::FusedLoc { locations, metadata: None } => {
            e.varint(12);
            try_list(e, locations, a)?;
        }
        Attribute::FusedLoc { locations, metadata: Some(metadata) } => {
            e.varint(13);
            try_list(e, locations, a)?;
            a(e, metadata)?;
        }
        Attribute::NameLoc { name, child } => {
            e.varint(14);
            a(e, name)?;
            a(e, child)?;
        }
        Attribute::UnknownLoc => e.varint(15),
        Attribute::DenseResource { ty, resource } => {
            e.varint(16);
            t(e, ty)?;
            e.varint(plan.resource_handle(*resource));
        }
        Attribute::DenseArray { elem, count, data } => {
            e.varint(17);
            t(e, elem)?;
            e.varint(*count);
            e.blob(data.bytes());
        }
        Attribute::DenseElements { ty, data } => {
            e.varint(18);
            t(e, ty)?;
            e.blob(data.bytes());
        }
        Attribute::DenseString { ty, splat, values } => {
            e.varint(19);
            t(e, ty)?;
            e.varint(u64::from(*splat));
            values.iter().for_each(|s| e.varint(u64::from(s.0)));
        }
        Attribute::Sparse { ty, indices, values } => {
            e.varint(20);
            t(e, ty)?;
            a(e, indices)?;
            a(e, values)?;
        }
        Attribute::Distinct { referenced, .. } => {
            e.varint(21);
            a(e, referenced)?;
        }
        Attribute::FileLineColRange { filename, parts } => {
            e.varint(22);
            a(e, filename)?;
            list(e, parts, |e, &p| e.varint(u64::from(p)));
        }
        Attribute::AffineMap(map) => {
            e.varint(23);
            affine_map(e, map);
        }
        Attribute::IntegerSet(set) => {
            e.varint(24);
            e.varint(u64::from(set.num_dims));
            e.varint(u64::from(set.num_symbols));
            e.varint(set.constraints.len() as u64);
            set.constraints.iter().for_each(|(expr, _)| affine_expr(e, expr));
            set.constraints.iter().for_each(|&(_, eq)| e.byte(u8::from(eq)));
        }
        Attribute::StridedLayout { offset, strides } => {
            e.varint(25);
            e.signed_varint(*offset);
            list(e, strides, |e, &s| e.signed_varint(s));
        }
        Attribute::Text { text: index, .. } => return text(e, plan, index.0),
        Attribute::Custom { .. } => return Err(malformed("custom attribute in canonical form")),
    }
    Ok(true)
}

fn float_code(kind: FloatKind) -> u64 {
    match kind {
        FloatKind::BF16 => 3,
        FloatKind::F16 => 4,
        FloatKind::F32 => 5,
        FloatKind::F64 => 6,
        FloatKind::F80 => 7,
        FloatKind::F128 => 8,
        FloatKind::TF32 => 21,
        FloatKind::F8E5M2 => 22,
        FloatKind::F8E4M3 => 23,
        FloatKind::F8E4M3FN => 24,
        FloatKind::F8E5M2FNUZ => 25,
        FloatKind::F8E4M3FNUZ => 26,
        FloatKind::F8E4M3B11FNUZ => 27,
        FloatKind::F8E3M4 => 28,
        FloatKind::F4E2M1FN => 29,
        FloatKind::F6E2M3FN => 30,
        FloatKind::F6E3M2FN => 31,
        FloatKind::F8E8M0FNU => 32,
    }
}

fn encode_type(e: &mut Emitter, plan: &Plan, ty: &Type) -> Result<bool> {
    let a = |e: &mut Emitter, id: &crate::ir::AttrId| e.varint(u64::from(id.0));
    let t = |e: &mut Emitter, id: &TypeId| e.varint(u64::from(id.0));
    let shape = |e: &mut Emitter, dims: &[i64]| list(e, dims, |e, &d| e.signed_varint(d));
    match ty {
        Type::Integer { width, signedness } => {
            e.varint(0);
            let s = match signedness {
                Signedness::Signless => 0,
                Signedness::Signed => 1,
                Signedness::Unsigned => 2,
            };
            e.varint((u64::from(*width) << 2) | s);
        }
        Type::Index => e.varint(1),
        Type::Function { inputs, results } => {
            e.varint(2);
            list(e, inputs, t);
            list(e, results, t);
        }
        Type::Float(kind) => e.varint(float_code(*kind)),
        Type::Complex(inner) => {
            e.varint(9);
            t(e, inner);
        }
        Type::MemRef { shape: dims, elem, layout, memory_space: None } => {
            e.varint(10);
            shape(e, dims);
            t(e, elem);
            a(e, layout);
        }
        Type::MemRef { shape: dims, elem, layout, memory_space: Some(space) } => {
            e.varint(11);
            a(e, space);
            shape(e, dims);
            t(e, elem);
            a(e, layout);
        }
        Type::None => e.varint(12),
        Type::RankedTensor { shape: dims, elem, encoding: None } => {
            e.varint(13);
            shape(e, dims);
            t(e, elem);
        }
        Type::RankedTensor { shape: dims, elem, encoding: Some(encoding) } => {
            e.varint(14);
            a(e, encoding);
            shape(e, dims);
            t(e, elem);
        }
        Type::Tuple(items) => {
            e.varint(15);
            list(e, items, t);
        }
        Type::UnrankedMemRef { elem, memory_space: None } => {
            e.varint(16);
            t(e, elem);
        }
        Type::UnrankedMemRef { elem, memory_space: Some(space) } => {
            e.varint(17);
            a(e, space);
            t(e, elem);
        }
        Type::UnrankedTensor { elem } => {
            e.varint(18);
            t(e, elem);
        }
        Type::Vector { shape: dims, scalable: None, elem } => {
            e.varint(19);
            shape(e, dims);
            t(e, elem);
        }
        Type::Vector { shape: dims, scalable: Some(flags), elem } => {
            if flags.len() != dims.len() {
                return Err(malformed("vector scalable flags do not match its rank"));
            }
            e.varint(20);
            list(e, flags, |e, &f| e.byte(u8::from(f)));
            shape(e, dims);
            t(e, elem);
        }
        Type::Text { text: index, .. } => return text(e, plan, index.0),
        Type::Custom { .. } => return Err(malformed("custom type in canonical form")),
    }
    Ok(true)
}
