//! The builtin forms that VHLO's printers go through: `integer_v1`, `float_v1` and `tensor_v1`
//! print their value as a builtin `IntegerAttr` / `DenseElementsAttr` of the VHLO type converted
//! to its builtin counterpart (`!vhlo.i32_v1` is `i32`, `!vhlo.tensor_v1<2x!vhlo.f32_v1>` is
//! `tensor<2xf32>`). The printed text depends on the type's structure, so these decoders look
//! into the payloads of the VHLO types they name (still encoded while the table is decoded).

use super::super::Payload;
use crate::bytecode::reader::cursor::Cursor;
use crate::bytecode::reader::error::Result;
use crate::float::print_float;
use crate::ir::{AttrId, FloatKind, Type, TypeId};

/// The element types of builtin integer, float and dense attributes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Scalar {
    Bool,
    Int { width: u32, unsigned: bool },
    Index,
    Float(FloatKind),
    Complex(Box<Scalar>),
}

/// What a VHLO type is, as far as builtin printing cares.
pub(super) enum View {
    Scalar(Scalar),
    RankedTensor { shape: Vec<i64>, element: TypeId, encoding: Option<AttrId> },
    Other,
}

/// `(code, mnemonic, scalar)` of the VHLO types without parameters.
pub(super) const SIMPLE_TYPES: &[(u64, &str, Option<Scalar>)] = {
    use Scalar::{Bool, Index, Int};
    const fn int(width: u32) -> Option<Scalar> {
        Some(Int { width, unsigned: false })
    }
    const fn uint(width: u32) -> Option<Scalar> {
        Some(Int { width, unsigned: true })
    }
    const fn float(kind: FloatKind) -> Option<Scalar> {
        Some(Scalar::Float(kind))
    }
    &[
        (0, "bool_v1", Some(Bool)),
        (2, "bf16_v1", float(FloatKind::BF16)),
        (3, "f16_v1", float(FloatKind::F16)),
        (4, "f32_v1", float(FloatKind::F32)),
        (5, "f64_v1", float(FloatKind::F64)),
        (6, "f8E4M3FN_v1", float(FloatKind::F8E4M3FN)),
        (7, "f8E5M2_v1", float(FloatKind::F8E5M2)),
        (9, "index_v1", Some(Index)),
        (10, "i4_v1", int(4)),
        (11, "i8_v1", int(8)),
        (12, "i16_v1", int(16)),
        (13, "i32_v1", int(32)),
        (14, "i64_v1", int(64)),
        (15, "ui4_v1", uint(4)),
        (16, "ui8_v1", uint(8)),
        (17, "ui16_v1", uint(16)),
        (18, "ui32_v1", uint(32)),
        (19, "ui64_v1", uint(64)),
        (22, "token_v1", None),
        (26, "witness_v1", None),
        (27, "f8E4M3FNUZ_v1", float(FloatKind::F8E4M3FNUZ)),
        (28, "f8E5M2FNUZ_v1", float(FloatKind::F8E5M2FNUZ)),
        (29, "f8E4M3B11FNUZ_v1", float(FloatKind::F8E4M3B11FNUZ)),
        (31, "i2_v1", int(2)),
        (32, "ui2_v1", uint(2)),
        (33, "none_v1", None),
        // Upstream's mnemonic for TF32 really is `tf31_v1`.
        (34, "tf31_v1", float(FloatKind::TF32)),
        (35, "f8E4M3_v1", float(FloatKind::F8E4M3)),
        (36, "f8E3M4_v1", float(FloatKind::F8E3M4)),
        (37, "f4E2M1FN_v1", float(FloatKind::F4E2M1FN)),
        (38, "f6E2M3FN_v1", float(FloatKind::F6E2M3FN)),
        (39, "f6E3M2FN_v1", float(FloatKind::F6E3M2FN)),
        (40, "f8E8M0FNU_v1", float(FloatKind::F8E8M0FNU)),
    ]
};

/// How many complex types may nest in an element type before rtx gives up (upstream's builtin
/// conversion accepts one level).
const MAX_COMPLEX_DEPTH: u32 = 1;

/// The view of type `id`, or `None` when it is not a still-encoded VHLO type (rtx then leaves
/// the entry that names it encoded). Errors point at `at`, where the referring entry names it.
pub(super) fn view(p: &Payload<'_, '_>, id: TypeId, at: usize) -> Result<Option<View>> {
    let ctx = p.ctx;
    let Type::Custom { dialect, payload } = ctx.ty(id) else { return Ok(None) };
    if ctx.str_bytes(ctx.dialect(*dialect).name) != b"vhlo" {
        return Ok(None);
    }
    let mut c = Cursor::new(payload.bytes(), at);
    let code = c.varint("vhlo type code")?;
    if let Some((_, _, scalar)) = SIMPLE_TYPES.iter().find(|(c, _, _)| *c == code) {
        return Ok(Some(scalar.clone().map_or(View::Other, View::Scalar)));
    }
    Ok(Some(match code {
        20 | 21 => {
            let encoding = if code == 21 { Some(AttrId(c.index("attribute", p.num_attrs)? as u32)) } else { None };
            let n = c.count("tensor shape", 1)?;
            let shape = (0..n).map(|_| c.signed_varint("tensor dimension")).collect::<Result<Vec<_>>>()?;
            let element = TypeId(c.index("type", p.num_types)? as u32);
            View::RankedTensor { shape, element, encoding }
        }
        _ => View::Other,
    }))
}

/// The element type `id` as a builtin scalar; `Ok(None)` when it is not an encoded VHLO type.
pub(super) fn scalar(p: &Payload<'_, '_>, id: TypeId, at: usize, depth: u32) -> Result<Option<Scalar>> {
    let ctx = p.ctx;
    let Some(view) = view(p, id, at)? else { return Ok(None) };
    match view {
        View::Scalar(s) => Ok(Some(s)),
        View::Other if depth < MAX_COMPLEX_DEPTH => {
            // A complex type: its payload is the code and the element type.
            let Type::Custom { payload, .. } = ctx.ty(id) else { return Ok(None) };
            let mut c = Cursor::new(payload.bytes(), at);
            if c.varint("vhlo type code")? != 1 {
                return Err(p.invalid(at, "vhlo element type has no builtin counterpart"));
            }
            let inner = TypeId(c.index("type", p.num_types)? as u32);
            match scalar(p, inner, at, depth + 1)? {
                Some(s @ (Scalar::Int { .. } | Scalar::Float(_))) => Ok(Some(Scalar::Complex(Box::new(s)))),
                Some(_) => Err(p.invalid(at, "vhlo complex type of a non-number element")),
                None => Ok(None),
            }
        }
        _ => Err(p.invalid(at, "vhlo element type has no builtin counterpart")),
    }
}

impl Scalar {
    pub(super) fn storage_bytes(&self) -> usize {
        match self {
            Scalar::Bool => 1,
            Scalar::Int { width, .. } => width.div_ceil(8) as usize,
            Scalar::Index => 8,
            Scalar::Float(f) => f.bit_width().div_ceil(8) as usize,
            Scalar::Complex(inner) => 2 * inner.storage_bytes(),
        }
    }

    pub(super) fn builtin_name(&self) -> String {
        match self {
            Scalar::Bool => "i1".to_owned(),
            Scalar::Int { width, unsigned: false } => format!("i{width}"),
            Scalar::Int { width, unsigned: true } => format!("ui{width}"),
            Scalar::Index => "index".to_owned(),
            Scalar::Float(f) => f.keyword().to_owned(),
            Scalar::Complex(inner) => format!("complex<{}>", inner.builtin_name()),
        }
    }

    /// An integer of `width` bits (the low bits of `raw`) as the builtin type prints it.
    pub(super) fn int_text(raw: u64, width: u32, unsigned: bool) -> String {
        let raw = if width >= 64 { raw } else { raw & ((1u64 << width) - 1) };
        if unsigned || width == 0 {
            raw.to_string()
        } else {
            let shift = 64 - width.min(64);
            (((raw << shift) as i64) >> shift).to_string()
        }
    }

    /// The element stored little-endian in `bytes` (exactly [`Scalar::storage_bytes`] long).
    fn element_text(&self, bytes: &[u8]) -> String {
        let raw = bytes.iter().rev().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
        match self {
            Scalar::Bool => (if raw & 1 == 1 { "true" } else { "false" }).to_owned(),
            Scalar::Int { width, unsigned } => Scalar::int_text(raw, *width, *unsigned),
            Scalar::Index => (raw as i64).to_string(),
            Scalar::Float(f) => print_float(raw, *f),
            Scalar::Complex(inner) => {
                let half = inner.storage_bytes();
                format!("({},{})", inner.element_text(&bytes[..half]), inner.element_text(&bytes[half..]))
            }
        }
    }
}

/// Upstream's `printElementsAttrWithHexIfLarger` default: more elements print as hex.
const HEX_ABOVE: u64 = 100;

/// `dense<...>` of a static `shape` holding `raw` (one element for a splat, else all of them),
/// or `None` when the buffer fits neither.
pub(super) fn dense_text(scalar: &Scalar, shape: &[i64], raw: &[u8]) -> Option<String> {
    let count = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(u64::try_from(d).ok()?))?;
    let size = scalar.storage_bytes();
    // One element is a splat (so is any one-element tensor).
    let splat = raw.len() == size;
    if !splat && (raw.len() as u64) != (size as u64).checked_mul(count)? {
        return None;
    }
    let mut out = String::from("dense<");
    if splat {
        out.push_str(&scalar.element_text(raw));
    } else if count > HEX_ABOVE {
        out.push_str("\"0x");
        for b in raw {
            out.push_str(&format!("{b:02X}"));
        }
        out.push('"');
    } else if count > 0 {
        let mut next = 0usize;
        nested(&mut out, shape, &mut |out: &mut String| {
            out.push_str(&scalar.element_text(&raw[next * size..(next + 1) * size]));
            next += 1;
        });
    }
    out.push('>');
    Some(out)
}

fn nested(out: &mut String, shape: &[i64], element: &mut dyn FnMut(&mut String)) {
    match shape.split_first() {
        None => element(out),
        Some((&dim, rest)) => {
            out.push('[');
            for i in 0..dim {
                if i > 0 {
                    out.push_str(", ");
                }
                nested(out, rest, element);
            }
            out.push(']');
        }
    }
}

/// VHLO's i1 tensor blobs: packed bits (one byte of all ones for a `true` splat), or, from older
/// writers, one byte per element. Returns the builtin buffer (one byte per element, or a splat).
pub(super) fn unpack_bools(blob: &[u8], count: u64) -> Vec<u8> {
    if blob.len() == 1 && blob[0] == 0xff {
        return vec![1];
    }
    let packed = count.div_ceil(8);
    if blob.len() as u64 == packed && blob.len() as u64 != count {
        return (0..count as usize).map(|i| (blob[i / 8] >> (i % 8)) & 1).collect();
    }
    blob.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_forms() {
        let i32s = Scalar::Int { width: 32, unsigned: false };
        assert_eq!(dense_text(&i32s, &[1], &5i32.to_le_bytes()).unwrap(), "dense<5>");
        let raw: Vec<u8> = [1i32, -2, 3, 4].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(dense_text(&i32s, &[2, 2], &raw).unwrap(), "dense<[[1, -2], [3, 4]]>");
        assert_eq!(dense_text(&i32s, &[0, 3], &[]).unwrap(), "dense<>");
        assert!(dense_text(&i32s, &[3], &raw).is_none());
        let c = Scalar::Complex(Box::new(Scalar::Int { width: 16, unsigned: false }));
        assert_eq!(dense_text(&c, &[], &[1, 0, 0xfe, 0xff]).unwrap(), "dense<(1,-2)>");
        assert_eq!(unpack_bools(&[0b101], 3), vec![1, 0, 1]);
        assert_eq!(unpack_bools(&[0xff], 10), vec![1]);
    }
}
