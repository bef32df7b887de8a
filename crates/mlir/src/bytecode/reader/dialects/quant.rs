//! The quant dialect's type encodings (`QuantDialectBytecode.td` in MLIR: codes 1–6 are any,
//! any with an expressed type, calibrated, uniform, uniform per axis and uniform sub-channel) and
//! the text its type printer gives each of them. The storage type decides how the type prints
//! (`i8`/`u8` by the signed flag, bounds only when they differ from the storage type's full range),
//! so the decoder looks at the (builtin) types the payload names.

use super::{Decoded, Payload, Template};
use crate::bytecode::reader::error::Result;
use crate::float::print_float;
use crate::ir::{AttrId, Attribute, FloatKind, Signedness, Type, TypeId};

/// `QuantizationFlags::Signed`.
const SIGNED: u64 = 1;

/// The storage type as quant prints it, and its default bounds.
fn storage(p: &Payload<'_, '_>, offset: usize, ty: TypeId, flags: u64) -> Result<(String, i64, i64)> {
    let signed = flags & SIGNED != 0;
    match p.ctx.ty(ty) {
        Type::Integer { width, signedness } if (1..=64).contains(width) => {
            let width = *width;
            let (min, max) = if signed {
                (i64::MIN >> (64 - width), i64::MAX >> (64 - width))
            } else if width == 64 {
                // Upstream computes the unsigned 64-bit maximum in an int64_t: -1.
                (0, -1)
            } else {
                (0, (1i64 << width) - 1)
            };
            // Written as `i8`/`u8` the storage type is signless; written `si8`/`ui8` it keeps its
            // signedness, and prints as that integer type.
            let prefix = match signedness {
                Signedness::Signless if signed => "i",
                Signedness::Signless => "u",
                Signedness::Signed => "si",
                Signedness::Unsigned => "ui",
            };
            Ok((format!("{prefix}{width}"), min, max))
        }
        Type::Float(kind) => {
            let bound = match kind {
                FloatKind::F8E4M3FN => 448,
                FloatKind::F8E5M2 => 57344,
                FloatKind::F4E2M1FN => 6,
                _ => return Err(p.invalid(offset, "unsupported quantized storage type")),
            };
            Ok((kind.keyword().to_owned(), -bound, bound))
        }
        _ => Err(p.invalid(offset, "quantized storage type is not an integer or supported float type")),
    }
}

/// Reads `flags, storageType[, expressedType]` and returns the storage text with its bounds
/// (`i8<-127:127>`) once `min`/`max` are read by `bounds`.
struct Storage {
    text: String,
    default: (i64, i64),
}

impl Storage {
    fn read(p: &mut Payload<'_, '_>, flags: u64) -> Result<Storage> {
        let offset = p.offset();
        let ty = p.ty()?;
        let (text, min, max) = storage(p, offset, ty, flags)?;
        Ok(Storage { text, default: (min, max) })
    }

    fn with_bounds(&self, min: i64, max: i64) -> String {
        if (min, max) == self.default {
            self.text.clone()
        } else {
            format!("{}<{min}:{max}>", self.text)
        }
    }
}

fn double(bits: u64) -> String {
    print_float(bits, FloatKind::F64)
}

/// `scale` or `scale:zero_point` (a zero zero point is left out).
fn params(scale: &str, zero_point: &str) -> String {
    if zero_point == "0" {
        scale.to_owned()
    } else {
        format!("{scale}:{zero_point}")
    }
}

pub(super) fn ty(p: &mut Payload<'_, '_>) -> Decoded {
    let code_offset = p.offset();
    let code = p.varint("quant type code")?;
    let mut t = Template::default();
    match code {
        1 | 2 => {
            let flags = p.varint("quant flags")?;
            let storage = Storage::read(p, flags)?;
            let expressed = if code == 2 { Some(p.ty()?) } else { None };
            let min = p.svarint("storage min")?;
            let max = p.svarint("storage max")?;
            t.text("!quant.any<");
            t.text(&storage.with_bounds(min, max));
            if let Some(expressed) = expressed {
                t.text(":");
                t.ty(expressed);
            }
            t.text(">");
        }
        3 => {
            let expressed = p.ty()?;
            let min = p.f64_bits("calibrated min")?;
            let max = p.f64_bits("calibrated max")?;
            t.text("!quant.calibrated<");
            t.ty(expressed);
            t.text(&format!("<{}:{}>>", double(min), double(max)));
        }
        4 => {
            let flags = p.varint("quant flags")?;
            let storage = Storage::read(p, flags)?;
            let expressed = p.ty()?;
            let scale = p.f64_bits("scale")?;
            let zero_point = p.svarint("zero point")?;
            let min = p.svarint("storage min")?;
            let max = p.svarint("storage max")?;
            t.text("!quant.uniform<");
            t.text(&storage.with_bounds(min, max));
            t.text(":");
            t.ty(expressed);
            t.text(&format!(", {}>", params(&double(scale), &zero_point.to_string())));
        }
        5 => {
            let flags = p.varint("quant flags")?;
            let storage = Storage::read(p, flags)?;
            let expressed = p.ty()?;
            let dimension = p.varint("quantized dimension")?;
            let min = p.svarint("storage min")?;
            let max = p.svarint("storage max")?;
            let offset = p.offset();
            let n = p.c.count("scales", 1)?;
            let scales = (0..n).map(|_| p.f64_bits("scale")).collect::<Result<Vec<_>>>()?;
            let zero_points = p.svarints("zero points")?;
            if zero_points.len() != scales.len() {
                return Err(p.invalid(offset, "per-axis scales and zero points differ in number"));
            }
            t.text("!quant.uniform<");
            t.text(&storage.with_bounds(min, max));
            t.text(":");
            t.ty(expressed);
            let items: Vec<String> =
                scales.iter().zip(&zero_points).map(|(&s, z)| params(&double(s), &z.to_string())).collect();
            t.text(&format!(":{dimension}, {{{}}}>", items.join(",")));
        }
        6 => {
            let flags = p.varint("quant flags")?;
            let storage = Storage::read(p, flags)?;
            let expressed = p.ty()?;
            let min = p.svarint("storage min")?;
            let max = p.svarint("storage max")?;
            let offset = p.offset();
            let dims = p.svarints("quantized dimensions")?;
            let blocks = p.svarints("block sizes")?;
            if dims.len() != blocks.len() {
                return Err(p.invalid(offset, "sub-channel dimensions and block sizes differ in number"));
            }
            let scales_offset = p.offset();
            let scales = p.attr()?;
            let zero_points = p.attr()?;
            let Some(body) = dense_params(p, scales, zero_points) else {
                return Err(p.invalid(scales_offset, "sub-channel scales or zero points are not dense numbers"));
            };
            t.text("!quant.uniform<");
            t.text(&storage.with_bounds(min, max));
            t.text(":");
            t.ty(expressed);
            let info: Vec<String> = dims.iter().zip(&blocks).map(|(d, b)| format!("{d}:{b}")).collect();
            t.text(&format!(":{{{}}}, {body}>", info.join(", ")));
        }
        _ => return Err(p.invalid(code_offset, format!("unknown quant type code {code}"))),
    }
    Ok(Some(t))
}

/// The elements of a dense attribute of numbers: (shape, element type, raw little-endian element
/// bytes, element count).
fn dense<'c>(p: &'c Payload<'_, '_>, id: AttrId) -> Option<(&'c [i64], &'c Type, &'c [u8], usize)> {
    let Attribute::DenseElements { ty, data } = p.ctx.attr(id) else { return None };
    let shape = p.ctx.ty(*ty).shape()?;
    let elem = p.ctx.ty(p.ctx.ty(*ty).element_type()?);
    let count = usize::try_from(p.ctx.num_elements(*ty)?).ok()?;
    Some((shape, elem, data.bytes(), count))
}

/// The little-endian element `index` of `size` bytes (the only one when the data is a splat).
fn element(data: &[u8], size: usize, index: usize) -> Option<u64> {
    let start = if data.len() == size { 0 } else { index.checked_mul(size)? };
    let bytes = data.get(start..start + size)?;
    Some(bytes.iter().rev().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
}

/// `{{s:z, s}, {s, s}}`: the scales nested by their shape, as `printDenseQuantizationParameters`.
fn dense_params(p: &Payload<'_, '_>, scales: AttrId, zero_points: AttrId) -> Option<String> {
    let (shape, scale_elem, scale_data, count) = dense(p, scales)?;
    let (_, zp_elem, zp_data, zp_count) = dense(p, zero_points)?;
    let format = match scale_elem {
        Type::Float(kind @ (FloatKind::F16 | FloatKind::BF16 | FloatKind::F32 | FloatKind::F64)) => *kind,
        _ => return None,
    };
    let Type::Integer { width, .. } = zp_elem else { return None };
    let width = *width;
    if width == 0 || width > 64 || zp_count != count || shape.is_empty() || shape.iter().any(|&d| d <= 0) {
        return None;
    }
    let scale_size = (format.bit_width() / 8) as usize;
    let zp_size = width.div_ceil(8) as usize;
    if scale_data.len() != scale_size && scale_data.len() != scale_size.checked_mul(count)? {
        return None;
    }
    if zp_data.len() != zp_size && zp_data.len() != zp_size.checked_mul(count)? {
        return None;
    }
    let rank = shape.len();
    let mut counter = vec![0i64; rank];
    let mut open = 0usize;
    let mut out = String::new();
    for index in 0..count {
        if index != 0 {
            out.push_str(", ");
        }
        while open < rank {
            out.push('{');
            open += 1;
        }
        let scale = print_float(element(scale_data, scale_size, index)?, format);
        let raw = element(zp_data, zp_size, index)?;
        // Sign-extend from the storage width (an APInt prints signed).
        let zp = ((raw << (64 - width)) as i64) >> (64 - width);
        out.push_str(&params(&scale, &zp.to_string()));
        counter[rank - 1] += 1;
        for i in (1..rank).rev() {
            if counter[i] >= shape[i] {
                counter[i] = 0;
                counter[i - 1] += 1;
                open -= 1;
                out.push('}');
            }
        }
    }
    for _ in 0..open {
        out.push('}');
    }
    Some(out)
}
