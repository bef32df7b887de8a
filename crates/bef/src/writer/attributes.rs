//! Attribute encoding: which BEF kind an MLIR attribute is ([`kind`]), and its bytes in the
//! attributes section ([`AttributeWriter`]), laid out as TFRT's `BefAttrEmitter` lays them out.
//!
//! Scalars sit at their natural alignment; strings and arrays are a `u32` count (4-aligned, or
//! placed so that 8-byte elements are 8-aligned) then the elements; shapes, dense elements and
//! aggregates start with an 8-byte header (`alignment:u8 dtype:u8 prefix_size:u16 byte_size:u32`)
//! placed so that the data after the prefix is aligned. An aggregate's elements each follow a
//! one-byte kind tag (written into the byte just before the element, which may be padding).

use super::emitter::Emitter;
use crate::format::{AttributeType, DType};
use rtx_mlir::ir::{AttrId, Attribute, FloatKind, MlirContext, Signedness, Type, TypeId};

/// TFRT's element type of an MLIR type (`ConvertMlirTypeToDType`); `None` for types it has none
/// for. `corert`'s string, resource, variant and quantized types are known by their text.
pub(super) fn dtype(ctx: &MlirContext, ty: TypeId) -> Option<DType> {
    Some(match ctx.ty(ty) {
        Type::Integer { width, signedness: Signedness::Unsigned } => match width {
            8 => DType::UI8,
            16 => DType::UI16,
            32 => DType::UI32,
            64 => DType::UI64,
            _ => return None,
        },
        Type::Integer { width, .. } => match width {
            1 => DType::I1,
            8 => DType::I8,
            16 => DType::I16,
            32 => DType::I32,
            64 => DType::I64,
            _ => return None,
        },
        Type::Float(kind) => float_dtype(*kind)?,
        Type::Complex(part) => match ctx.ty(*part) {
            Type::Float(FloatKind::F32) => DType::Complex64,
            Type::Float(FloatKind::F64) => DType::Complex128,
            _ => return None,
        },
        Type::Text { text, .. } => match &*ctx.str(*text) {
            "!corert.string" => DType::String,
            "!corert.resource" => DType::Resource,
            "!corert.variant" => DType::Variant,
            "!corert.quint8" => DType::QUI8,
            "!corert.quint16" => DType::QUI16,
            "!corert.qint8" => DType::QI8,
            "!corert.qint16" => DType::QI16,
            "!corert.qint32" => DType::QI32,
            _ => return None,
        },
        _ => return None,
    })
}

fn float_dtype(kind: FloatKind) -> Option<DType> {
    Some(match kind {
        FloatKind::BF16 => DType::BF16,
        FloatKind::F16 => DType::F16,
        FloatKind::F32 => DType::F32,
        FloatKind::F64 => DType::F64,
        _ => return None,
    })
}

/// Element types a dense elements attribute may hold: fixed-size numbers.
fn is_dense_element(dtype: DType) -> bool {
    use DType::*;
    matches!(
        dtype,
        UI8 | UI16 | UI32 | UI64 | I1 | I8 | I16 | I32 | I64 | BF16 | F16 | F32 | F64 | Complex64 | Complex128
    )
}

/// The BEF kind of an attribute, or `None` when BEF cannot encode it. An array whose elements
/// are all of one fixed-size kind is an array of it (the empty array counts as `i32`s); any other
/// array is an aggregate. Symbol references are kinds of their own, never array elements.
pub(super) fn kind(ctx: &MlirContext, attr: AttrId) -> Option<AttributeType> {
    Some(match ctx.attr(attr) {
        Attribute::Integer { ty, .. } => match ctx.ty(*ty) {
            Type::Integer { .. } => AttributeType::Scalar(dtype(ctx, *ty)?),
            _ => return None,
        },
        Attribute::Float { ty, .. } => match ctx.ty(*ty) {
            Type::Float(kind) => AttributeType::Scalar(float_dtype(*kind)?),
            _ => return None,
        },
        Attribute::String { .. } => AttributeType::Scalar(DType::String),
        Attribute::Type(ty) => {
            dtype(ctx, *ty)?;
            AttributeType::Type
        }
        Attribute::Text { .. } => {
            shape(ctx, attr)?;
            AttributeType::Shape
        }
        Attribute::DenseElements { ty, .. } => {
            let elem = ctx.ty(*ty).element_type()?;
            ctx.ty(*ty).shape()?;
            if !is_dense_element(dtype(ctx, elem)?) {
                return None;
            }
            AttributeType::Dense
        }
        Attribute::Array(items) => {
            let Some((&first, _)) = items.split_first() else { return Some(AttributeType::Array(DType::I32)) };
            let first = kind(ctx, first)?;
            let mut uniform = true;
            for &item in items.iter() {
                let item = kind(ctx, item)?;
                if item == AttributeType::SymbolRef {
                    return None;
                }
                uniform &= item == first;
            }
            match first {
                AttributeType::Type if uniform => AttributeType::TypeArray,
                AttributeType::Scalar(d) if uniform && d != DType::String => AttributeType::Array(d),
                _ => AttributeType::Aggregate,
            }
        }
        Attribute::FlatSymbolRef(_) | Attribute::SymbolRef { .. } => AttributeType::SymbolRef,
        _ => return None,
    })
}

/// `#corert.shape<2x?x3>` (`?` is -1) or `#corert.shape<*>`: `Some(None)` for unranked.
pub(super) fn shape(ctx: &MlirContext, attr: AttrId) -> Option<Option<Vec<i64>>> {
    let Attribute::Text { text, .. } = ctx.attr(attr) else { return None };
    let text = ctx.str_bytes(*text);
    let mut rest = text.strip_prefix(b"#corert.shape<")?;
    if rest.starts_with(b"*>") {
        return Some(None);
    }
    let mut dims = Vec::new();
    while let Some((&first, tail)) = rest.split_first() {
        if first == b'>' {
            return Some(Some(dims));
        }
        if first == b'?' {
            dims.push(-1);
            rest = tail;
        } else {
            let negative = first == b'-';
            let digits = if negative { tail } else { rest };
            let len = digits.iter().take_while(|b| b.is_ascii_digit()).count();
            let magnitude: i64 = std::str::from_utf8(&digits[..len]).ok()?.parse().ok()?;
            dims.push(if negative { -magnitude } else { magnitude });
            rest = &digits[len..];
        }
        rest = rest.strip_prefix(b"x").unwrap_or(rest);
    }
    None
}

/// An attribute's alignment as an aggregate element (TFRT's `GetAlignment`): a scalar's size
/// (`i1` counts 0), 4 for strings, 1 for types and symbols, 8 for ranked shapes and dense
/// elements, and at least 8 for arrays.
fn element_alignment(ctx: &MlirContext, attr: AttrId) -> usize {
    match ctx.attr(attr) {
        Attribute::Integer { value, .. } => value.width as usize / 8,
        Attribute::Float { bits, .. } => bits.width as usize / 8,
        Attribute::String { .. } => 4,
        Attribute::Text { .. } if matches!(shape(ctx, attr), Some(Some(_))) => 8,
        Attribute::DenseElements { .. } => 8,
        Attribute::Array(items) => max_alignment(ctx, items).max(8),
        _ => 1,
    }
}

fn max_alignment(ctx: &MlirContext, items: &[AttrId]) -> usize {
    items.iter().map(|&item| element_alignment(ctx, item)).max().unwrap_or(1).max(1)
}

/// Bytes an attribute's header asks for: padding so that `prefix_size` bytes after the header's
/// start end aligned, then the header and `extra` words.
fn header(out: &mut Emitter, alignment: u8, dtype: u8, prefix_size: u16, byte_size: u32, extra: &[u32]) -> usize {
    let align = usize::from(alignment);
    let end = out.len() + usize::from(prefix_size);
    out.pad(align, end.next_multiple_of(align) - end);
    let offset = out.len();
    out.bytes(&[alignment, dtype]);
    out.bytes(&prefix_size.to_le_bytes());
    out.bytes(&byte_size.to_le_bytes());
    for word in extra {
        out.bytes(&word.to_le_bytes());
    }
    offset
}

/// The attributes section being built.
pub(super) struct AttributeWriter<'c> {
    ctx: &'c MlirContext,
    pub(super) out: Emitter,
}

impl<'c> AttributeWriter<'c> {
    pub(super) fn new(ctx: &'c MlirContext) -> Self {
        AttributeWriter { ctx, out: Emitter::new() }
    }

    /// Emits `attr` (of kind `kind`, not a symbol reference) and returns its offset.
    pub(super) fn emit(&mut self, attr: AttrId, kind: AttributeType) -> usize {
        let ctx = self.ctx;
        match (kind, ctx.attr(attr)) {
            (AttributeType::Scalar(DType::String), Attribute::String { value, .. }) => {
                let bytes = ctx.str_bytes(*value);
                let offset = self.count(bytes.len(), 1);
                self.out.bytes(bytes);
                offset
            }
            (AttributeType::Scalar(_), Attribute::Integer { value, .. }) => self.scalar(value.words()[0], value.width),
            (AttributeType::Scalar(_), Attribute::Float { bits, .. }) => self.scalar(bits.words()[0], bits.width),
            (AttributeType::Type, Attribute::Type(ty)) => {
                self.out.byte(dtype(ctx, *ty).map_or(0, |d| d as u8));
                self.out.len() - 1
            }
            (AttributeType::Shape, _) => match shape(ctx, attr).flatten() {
                None => self.empty(),
                Some(dims) => {
                    let rank = dims.len() as u32;
                    let offset = header(&mut self.out, 8, 0, 12, 12 + 8 * rank, &[rank]);
                    for dim in dims {
                        self.out.aligned(&dim.to_le_bytes());
                    }
                    offset
                }
            },
            (AttributeType::Dense, Attribute::DenseElements { ty, data }) => self.dense(*ty, data.bytes()),
            (AttributeType::Array(_) | AttributeType::TypeArray, Attribute::Array(items)) => {
                let payload_alignment = match kind {
                    AttributeType::Array(d) => d.alignment().unwrap_or(1),
                    _ => 1,
                };
                let offset = self.count(items.len(), payload_alignment);
                for &item in items.iter() {
                    self.emit(item, kind_of_element(ctx, item));
                }
                offset
            }
            (AttributeType::Aggregate, Attribute::Array(items)) => self.aggregate(items),
            _ => unreachable!("attribute kinds come from `kind` of the same attribute"),
        }
    }

    /// A `u32` 0: the empty string, array or aggregate, and the unranked shape.
    fn empty(&mut self) -> usize {
        self.out.u32(0);
        self.out.len() - 4
    }

    /// A little-endian scalar of `width` bits at its natural alignment (1-byte ones unaligned).
    fn scalar(&mut self, bits: u64, width: u32) -> usize {
        let size = (width as usize).div_ceil(8);
        self.out.aligned(&bits.to_le_bytes()[..size]);
        self.out.len() - size
    }

    /// The `u32` count before elements of `payload_alignment`: 4-aligned, or just before an
    /// 8-aligned address when the elements need 8. No elements is [`Self::empty`].
    fn count(&mut self, count: usize, payload_alignment: usize) -> usize {
        if count == 0 {
            return self.empty();
        }
        if payload_alignment <= 4 {
            self.out.align(4);
        } else {
            let end = self.out.len() + 4;
            self.out.pad(payload_alignment, end.next_multiple_of(payload_alignment) - end);
        }
        self.out.u32(count as u32);
        self.out.len() - 4
    }

    fn dense(&mut self, ty: TypeId, data: &[u8]) -> usize {
        let ctx = self.ctx;
        let shape = ctx.ty(ty).shape().unwrap_or(&[]);
        let elem = ctx.ty(ty).element_type().and_then(|e| dtype(ctx, e)).expect("checked by `kind`");
        let count = shape.iter().fold(1i64, |n, &d| n.wrapping_mul(d)).max(0) as usize;
        let size = elem.byte_size().expect("dense elements are fixed-size");
        let rank = shape.len() as u32;
        let element_offset = 20 + 8 * rank;
        let offset = header(
            &mut self.out,
            8,
            elem as u8,
            element_offset as u16,
            element_offset + (size * count) as u32,
            &[element_offset, count as u32, rank],
        );
        for &dim in shape {
            self.out.aligned(&dim.to_le_bytes());
        }
        if elem == DType::I1 {
            let splat = data.len() == 1 && matches!(data[0], 0 | 0xFF);
            for i in 0..count {
                let bit = if splat { data[0] & 1 } else { data.get(i / 8).map_or(0, |b| (b >> (i % 8)) & 1) };
                self.out.byte(bit);
            }
        } else if data.len() == size {
            for _ in 0..count {
                self.out.bytes(data);
            }
        } else {
            self.out.bytes(data);
        }
        offset
    }

    fn aggregate(&mut self, items: &'c [AttrId]) -> usize {
        if items.is_empty() {
            return self.empty();
        }
        let ctx = self.ctx;
        let alignment = max_alignment(ctx, items).max(4) as u8;
        let count = items.len() as u32;
        let offset = header(&mut self.out, alignment, 0, (12 + 4 * count) as u16, 0, &[count]);
        let mut slot = self.out.len();
        for _ in items {
            self.out.u32(0);
        }
        for &item in items {
            self.out.byte(crate::format::PADDING);
            let item_kind = kind_of_element(ctx, item);
            let at = self.emit(item, item_kind);
            self.out.overwrite(at - 1, &[item_kind.code()]);
            self.out.overwrite(slot, &((at - offset) as u32).to_le_bytes());
            slot += 4;
        }
        let total = (self.out.len() - offset) as u32;
        self.out.overwrite(offset + 4, &total.to_le_bytes());
        offset
    }
}

/// The kind of an element of an array whose kind is known (so its elements have kinds).
fn kind_of_element(ctx: &MlirContext, item: AttrId) -> AttributeType {
    kind(ctx, item).expect("elements of an encodable array are encodable")
}

#[cfg(test)]
mod tests {
    //! Expected bytes are derived by hand from TFRT's `BefAttrEncoder`/`BefAttrEmitter`, for an
    //! attribute written first into an empty section (offset 0 is 8-aligned). `CC` is padding.
    use super::*;
    use rtx_mlir::ir::Module;

    /// The attribute named `a` of the only op in `text`'s module.
    fn attribute(text: &str) -> (Module, AttrId) {
        let module = rtx_mlir::parse_text(&format!("\"x.op\"() {{a = {text}}} : () -> ()")).expect("parses");
        let op = module.walk().into_iter().find(|&op| module.op_name(op) == "x.op").expect("x.op");
        let Attribute::Dictionary(entries) = module.context.attr(module.op(op).attrs.expect("attrs")) else {
            panic!("attributes are a dictionary")
        };
        let value = entries[0].1;
        (module, value)
    }

    /// The section bytes, the attribute's offset and its attribute-types code.
    fn encode(text: &str) -> (Vec<u8>, usize, u8) {
        let (module, attr) = attribute(text);
        let kind = kind(&module.context, attr).expect("encodable");
        let mut writer = AttributeWriter::new(&module.context);
        let offset = writer.emit(attr, kind);
        (writer.out.into_bytes(), offset, kind.code())
    }

    #[test]
    fn scalars_are_little_endian_at_their_size() {
        assert_eq!(encode("1 : i8"), (vec![1], 0, 6));
        assert_eq!(encode("true"), (vec![1], 0, 5));
        assert_eq!(encode("-2 : i16"), (vec![0xFE, 0xFF], 0, 7));
        assert_eq!(encode("7 : ui32"), (vec![7, 0, 0, 0], 0, 3));
        assert_eq!(encode("-1 : i64"), (vec![0xFF; 8], 0, 9));
        assert_eq!(encode("200 : ui8"), (vec![200], 0, 1));
        assert_eq!(encode("1.0 : f32"), (vec![0, 0, 0x80, 0x3F], 0, 10));
        assert_eq!(encode("1.0 : f64"), (vec![0, 0, 0, 0, 0, 0, 0xF0, 0x3F], 0, 11));
        assert_eq!(encode("1.0 : bf16"), (vec![0x80, 0x3F], 0, 15));
        assert_eq!(encode("1.0 : f16"), (vec![0, 0x3C], 0, 14));
    }

    #[test]
    fn strings_are_a_count_then_bytes_without_nul() {
        assert_eq!(encode("\"ab\""), (vec![2, 0, 0, 0, b'a', b'b'], 0, 16));
        assert_eq!(encode("\"\""), (vec![0, 0, 0, 0], 0, 16));
    }

    #[test]
    fn types_are_one_dtype_byte() {
        assert_eq!(encode("f64"), (vec![11], 0, 25));
        assert_eq!(encode("ui16"), (vec![2], 0, 25));
        assert_eq!(encode("complex<f32>"), (vec![12], 0, 25));
        assert_eq!(encode("!corert.string"), (vec![16], 0, 25));
        assert_eq!(encode("!corert.qint32"), (vec![23], 0, 25));
    }

    #[test]
    fn uniform_arrays_are_a_count_then_elements() {
        assert_eq!(encode("[1 : i32, 2 : i32]"), (vec![2, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0], 0, 0x88));
        assert_eq!(encode("[true, false]"), (vec![2, 0, 0, 0, 1, 0], 0, 0x85));
        assert_eq!(encode("[f64, f32]"), (vec![2, 0, 0, 0, 11, 10], 0, 0x99));
        assert_eq!(encode("[]"), (vec![0, 0, 0, 0], 0, 0x88));
        // 8-byte elements: the count goes at 4 so that the elements start 8-aligned.
        let mut i64s = vec![0xCC, 0xCC, 0xCC, 0xCC, 2, 0, 0, 0];
        i64s.extend_from_slice(&1i64.to_le_bytes());
        i64s.extend_from_slice(&2i64.to_le_bytes());
        assert_eq!(encode("[1, 2]"), (i64s, 4, 0x89));
    }

    #[test]
    fn dense_elements_have_a_header_and_expanded_data() {
        // Header at 4 so that the data after the 28-byte prefix (20 + 8 per dimension) is
        // 8-aligned: alignment 8, dtype i32 (8), prefix 28, byte size 28 + 8, then element
        // offset 28, 2 elements, rank 1, the dimension, the elements.
        let mut expected = vec![0xCC; 4];
        expected.extend_from_slice(&[8, 8, 28, 0, 36, 0, 0, 0, 28, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0]);
        expected.extend_from_slice(&2i64.to_le_bytes());
        expected.extend_from_slice(&[1, 0, 0, 0, 2, 0, 0, 0]);
        assert_eq!(encode("dense<[1, 2]> : tensor<2xi32>"), (expected, 4, 28));
        // A splat of i1 is expanded to one byte per element.
        let mut expected = vec![0xCC; 4];
        expected.extend_from_slice(&[8, 5, 28, 0, 31, 0, 0, 0, 28, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0]);
        expected.extend_from_slice(&3i64.to_le_bytes());
        expected.extend_from_slice(&[1, 1, 1]);
        assert_eq!(encode("dense<true> : tensor<3xi1>"), (expected, 4, 28));
        // Packed i1 bits are unpacked.
        let (bytes, _, _) = encode("dense<[true, false, true]> : tensor<3xi1>");
        assert_eq!(bytes[bytes.len() - 3..], [1, 0, 1]);
        // Rank 0 complex: prefix 20, one element of two f32 parts.
        let mut expected = vec![0xCC; 4];
        expected.extend_from_slice(&[8, 12, 20, 0, 28, 0, 0, 0, 20, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
        expected.extend_from_slice(&[0, 0, 0x80, 0x3F, 0, 0, 0, 0x40]);
        assert_eq!(encode("dense<(1.0, 2.0)> : tensor<complex<f32>>"), (expected, 4, 28));
    }

    #[test]
    fn shapes_have_a_header_then_dimensions() {
        // Prefix 12 (header and rank): the header goes at 4 so the dimensions are 8-aligned.
        let mut expected = vec![0xCC; 4];
        expected.extend_from_slice(&[8, 0, 12, 0, 28, 0, 0, 0, 2, 0, 0, 0]);
        expected.extend_from_slice(&2i64.to_le_bytes());
        expected.extend_from_slice(&(-1i64).to_le_bytes());
        assert_eq!(encode("#corert.shape<2x?>"), (expected, 4, 27));
        assert_eq!(encode("#corert.shape<*>"), (vec![0, 0, 0, 0], 0, 27));
    }

    #[test]
    fn mixed_arrays_are_aggregates_with_tagged_elements() {
        // Header (alignment 4, prefix 12 + 4 per element), offsets 24 and 32; each element
        // follows a reserved byte, and its tag goes in the byte just before it.
        let expected = vec![
            4, 0, 20, 0, 37, 0, 0, 0, 2, 0, 0, 0, 24, 0, 0, 0, 32, 0, 0, 0, //
            0xCC, 0xCC, 0xCC, 8, 1, 0, 0, 0, //
            0xCC, 0xCC, 0xCC, 16, 1, 0, 0, 0, b's',
        ];
        assert_eq!(encode("[1 : i32, \"s\"]"), (expected, 0, 30));
    }

    #[test]
    fn nested_arrays_make_the_aggregate_8_aligned() {
        let expected = vec![
            0xCC, 0xCC, 0xCC, 0xCC, // the outer header at 4: its 20-byte prefix ends 8-aligned
            8, 0, 20, 0, 69, 0, 0, 0, 2, 0, 0, 0, 24, 0, 0, 0, 32, 0, 0, 0, //
            0xCC, 0xCC, 0xCC, 8, 1, 0, 0, 0, // 1 : i32 at 28
            0xCC, 0xCC, 0xCC, 30, // the inner aggregate at 36, tagged 30
            4, 0, 20, 0, 37, 0, 0, 0, 2, 0, 0, 0, 24, 0, 0, 0, 32, 0, 0, 0, //
            0xCC, 0xCC, 0xCC, 8, 2, 0, 0, 0, //
            0xCC, 0xCC, 0xCC, 16, 1, 0, 0, 0, b'x',
        ];
        assert_eq!(encode("[1 : i32, [2 : i32, \"x\"]]"), (expected, 4, 30));
    }

    #[test]
    fn what_bef_cannot_encode_has_no_kind() {
        for text in ["unit", "{b = 1 : i32}", "tensor<1xf32>", "1 : i4", "1 : index", "array<i32: 1>", "#x.y<1>"] {
            let (module, attr) = attribute(text);
            assert_eq!(kind(&module.context, attr), None, "{text}");
        }
    }
}
