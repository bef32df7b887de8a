//! VHLO, StableHLO's versioned dialect (what StableHLO portable artifacts hold): its attribute
//! and type encodings (`VhloBytecode.cpp` in openxla/stablehlo, attribute codes 1–25 and type
//! codes 0–42) and the text its ODS printers give each of them. VHLO writes no dialect version
//! of its own into the bytecode (the artifact's version lives in the producer string), so the
//! file's dialect section needs nothing here.
//!
//! Nested VHLO entries print in full (`!vhlo.tensor_v1<2x!vhlo.f32_v1>`); `integer_v1`,
//! `float_v1` and `tensor_v1` print builtin forms, see [`builtin`].

mod builtin;

use self::builtin::{dense_text, scalar, unpack_bools, view, Scalar, View, SIMPLE_TYPES};
use super::stablehlo::{enum_attr, COMPARISON_DIRECTIONS, COMPARISON_TYPES};
use super::{Decoded, Payload, Template};
use crate::bytecode::reader::error::Result;
use crate::float::print_float;
use crate::ir::{AttrId, FloatKind, TypeId, DYNAMIC};

const API_VERSIONS: &[(u64, &str)] = &[
    (0, "API_VERSION_UNSPECIFIED"),
    (1, "API_VERSION_ORIGINAL"),
    (2, "API_VERSION_STATUS_RETURNING"),
    (3, "API_VERSION_STATUS_RETURNING_UNIFIED"),
    (4, "API_VERSION_TYPED_FFI"),
];
const FFT_TYPES: &[(u64, &str)] = &[(0, "FFT"), (1, "IFFT"), (2, "RFFT"), (3, "IRFFT")];
const PRECISIONS: &[(u64, &str)] = &[(0, "DEFAULT"), (1, "HIGH"), (2, "HIGHEST")];
const RNG_ALGORITHMS: &[(u64, &str)] = &[(0, "DEFAULT"), (1, "THREE_FRY"), (2, "PHILOX")];
const RNG_DISTRIBUTIONS: &[(u64, &str)] = &[(1, "UNIFORM"), (2, "NORMAL")];
const TRANSPOSES: &[(u64, &str)] = &[(0, "TRANSPOSE_INVALID"), (1, "NO_TRANSPOSE"), (2, "TRANSPOSE"), (3, "ADJOINT")];
const RESULT_ACCURACY_MODES: &[(u64, &str)] = &[(0, "DEFAULT"), (1, "HIGHEST"), (2, "TOLERANCE")];

/// `[1, ?, 3]`: VHLO's dimension lists (`?` is a dynamic size).
fn dims(values: &[i64]) -> String {
    let items: Vec<String> = values.iter().map(|&d| dim(d)).collect();
    format!("[{}]", items.join(", "))
}

fn dim(value: i64) -> String {
    if value == DYNAMIC {
        "?".to_owned()
    } else {
        value.to_string()
    }
}

/// A comma-separated list of entries between `open` and `close`.
fn list<T: Copy>(t: &mut Template, open: &str, items: &[T], close: &str, mut each: impl FnMut(&mut Template, T)) {
    t.text(open);
    for (i, &item) in items.iter().enumerate() {
        if i > 0 {
            t.text(", ");
        }
        each(t, item);
    }
    t.text(close);
}

fn types(p: &mut Payload<'_, '_>, what: &'static str) -> Result<Vec<TypeId>> {
    let n = p.c.count(what, 1)?;
    (0..n).map(|_| p.ty()).collect()
}

fn attrs(p: &mut Payload<'_, '_>, what: &'static str) -> Result<Vec<AttrId>> {
    let n = p.c.count(what, 1)?;
    (0..n).map(|_| p.attr()).collect()
}

/// `readAPIntWithKnownWidth`: one byte up to 8 bits, else a signed varint (wider values do not
/// occur in VHLO); the value keeps its low `width` bits.
fn ap_int(p: &mut Payload<'_, '_>, width: u32, what: &'static str) -> Result<u64> {
    let raw = if width <= 8 { u64::from(p.c.byte(what)?) } else { p.svarint(what)? as u64 };
    Ok(if width >= 64 { raw } else { raw & ((1u64 << width) - 1) })
}

fn double(bits: u64) -> String {
    print_float(bits, FloatKind::F64)
}

pub(super) fn attr(p: &mut Payload<'_, '_>) -> Decoded {
    let code_offset = p.offset();
    let code = p.varint("vhlo attribute code")?;
    let mut t = Template::default();
    match code {
        1 => {
            let items = attrs(p, "vhlo array elements")?;
            list(&mut t, "#vhlo.array_v1<[", &items, "]>", |t, a| t.attr(a));
        }
        2 => {
            let offset = p.offset();
            let value = match p.varint("vhlo bool")? {
                0 => "false",
                1 => "true",
                v => return Err(p.invalid(offset, format!("vhlo bool value {v} is neither 0 nor 1"))),
            };
            t.text(&format!("#vhlo.bool_v1<{value}>"));
        }
        3 => return enum_attr("vhlo", p, "comparison_direction_v1", COMPARISON_DIRECTIONS),
        4 => return enum_attr("vhlo", p, "comparison_type_v1", COMPARISON_TYPES),
        5 => return enum_attr("vhlo", p, "api_version_v1", API_VERSIONS),
        6 => {
            let n = p.c.count("vhlo dictionary entries", 2)?;
            let entries = (0..n).map(|_| Ok((p.attr()?, p.attr()?))).collect::<Result<Vec<_>>>()?;
            list(&mut t, "#vhlo.dict_v1<{", &entries, "}>", |t, (k, v)| {
                t.attr(k);
                t.text(" = ");
                t.attr(v);
            });
        }
        7 => return enum_attr("vhlo", p, "fft_type_v1", FFT_TYPES),
        8 => {
            let offset = p.offset();
            let ty = p.ty()?;
            let format = match scalar(p, ty, offset, 0)? {
                Some(Scalar::Float(format)) => format,
                Some(_) => return Err(p.invalid(offset, "vhlo float_v1 of a non-float type")),
                None => return Ok(None),
            };
            let bits = ap_int(p, format.bit_width(), "vhlo float value")?;
            t.text(&format!("#vhlo.float_v1<{} : ", print_float(bits, format)));
            t.ty(ty);
            t.text(">");
        }
        9 => {
            let offset = p.offset();
            let ty = p.ty()?;
            let (width, unsigned, name) = match scalar(p, ty, offset, 0)? {
                Some(Scalar::Index) => (64, false, "index".to_owned()),
                // Upstream reads no 2-bit (or 1-bit) integer_v1 values.
                Some(s @ Scalar::Int { width, unsigned }) if width >= 4 => (width, unsigned, s.builtin_name()),
                Some(_) => return Err(p.invalid(offset, "vhlo integer_v1 of an unsupported type")),
                None => return Ok(None),
            };
            let value = ap_int(p, width, "vhlo integer value")?;
            t.text(&format!("#vhlo.integer_v1<{} : {name}>", Scalar::int_text(value, width, unsigned)));
        }
        10 => {
            let output = p.svarints("vhlo output tuple indices")?;
            let operand = p.svarint("vhlo operand index")?;
            let operand_tuple = p.svarints("vhlo operand tuple indices")?;
            t.text(&format!(
                "#vhlo.output_operand_alias_v1<outputTupleIndices = {}, operandIndex = {operand}, operandTupleIndices \
                 = {}>",
                dims(&output),
                dims(&operand_tuple)
            ));
        }
        11 => return enum_attr("vhlo", p, "precision_v1", PRECISIONS),
        12 => return enum_attr("vhlo", p, "rng_algorithm_v1", RNG_ALGORITHMS),
        13 => return enum_attr("vhlo", p, "rng_distribution_v1", RNG_DISTRIBUTIONS),
        14 => {
            let value = p.string("vhlo string")?.to_vec();
            t.text("#vhlo.string_v1<");
            t.string(&value);
            t.text(">");
        }
        15 => return tensor_attr(p),
        16 => return enum_attr("vhlo", p, "transpose_v1", TRANSPOSES),
        17 => {
            let ty = p.ty()?;
            t.text("#vhlo.type_v1<");
            t.ty(ty);
            t.text(">");
        }
        18 => {
            let bounds = p.svarints("vhlo bounds")?;
            t.text(&format!("#vhlo.type_extensions_v1<bounds = {}>", dims(&bounds)));
        }
        19 => return enum_attr("vhlo", p, "result_accuracy_mode_v1", RESULT_ACCURACY_MODES),
        20 => {
            let atol = p.f64_bits("vhlo atol")?;
            let rtol = p.f64_bits("vhlo rtol")?;
            let ulps = p.svarint("vhlo ulps")?;
            let mode = p.attr()?;
            t.text(&format!(
                "#vhlo.result_accuracy_v1<atol = {}, rtol = {}, ulps = {ulps}, mode = ",
                double(atol),
                double(rtol)
            ));
            t.attr(mode);
            t.text(">");
        }
        21 => {
            let pre_size = p.svarint("vhlo sub-axis pre-size")?;
            let size = p.svarint("vhlo sub-axis size")?;
            t.text(&format!("#vhlo.sub_axis_info_v1<pre_size = {pre_size}, size = {size}>"));
        }
        22 => {
            let name = p.attr()?;
            let sub_axis = if p.varint("vhlo sub-axis flag")? != 0 { Some(p.attr()?) } else { None };
            t.text("#vhlo.axis_ref_v1<name = ");
            t.attr(name);
            if let Some(sub_axis) = sub_axis {
                t.text(", sub_axis_info = ");
                t.attr(sub_axis);
            }
            t.text(">");
        }
        23 => {
            let mesh = p.attr()?;
            let axes = p.attr()?;
            t.text("#vhlo.replica_group_mesh_axes_v1<mesh = ");
            t.attr(mesh);
            t.text(", axes = ");
            t.attr(axes);
            t.text(">");
        }
        24 => {
            let name = p.attr()?;
            let size = p.svarint("vhlo mesh axis size")?;
            t.text("#vhlo.mesh_axis_v1<name = ");
            t.attr(name);
            t.text(&format!(", size = {size}>"));
        }
        25 => {
            let axes = p.attr()?;
            // `readOptionalAttribute`: an index with a presence flag in its low bit.
            let offset = p.offset();
            let (index, present) = p.c.varint_with_flag("vhlo mesh device ids")?;
            t.text("#vhlo.mesh_v1<axes = ");
            t.attr(axes);
            if present {
                if index >= p.num_attrs as u64 {
                    return Err(p.invalid(offset, format!("vhlo mesh device ids attribute {index} out of range")));
                }
                t.text(", device_ids = ");
                t.attr(AttrId(index as u32));
            }
            t.text(">");
        }
        _ => return Err(p.invalid(code_offset, format!("unknown vhlo attribute code {code}"))),
    }
    Ok(Some(t))
}

/// `tensor_v1`: a ranked tensor type and a blob of its elements, printed as the builtin dense
/// attribute of the converted type.
fn tensor_attr(p: &mut Payload<'_, '_>) -> Decoded {
    let offset = p.offset();
    let ty = p.ty()?;
    let Some(view) = view(p, ty, offset)? else { return Ok(None) };
    let View::RankedTensor { shape, element, encoding } = view else {
        return Err(p.invalid(offset, "vhlo tensor_v1 of a type that is not a ranked tensor"));
    };
    if shape.iter().any(|&d| d < 0) {
        return Err(p.invalid(offset, "vhlo tensor_v1 of a tensor type with a dynamic shape"));
    }
    let Some(element) = scalar(p, element, offset, 0)? else { return Ok(None) };
    let blob_offset = p.offset();
    let len = p.varint("vhlo tensor blob length")?;
    let blob = p.c.bytes(len, "vhlo tensor blob")?;
    let raw = match element {
        Scalar::Bool => {
            let count = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d as u64));
            match count {
                Some(count) => unpack_bools(blob, count),
                None => return Err(p.invalid(offset, "vhlo tensor_v1 has too many elements")),
            }
        }
        _ => blob.to_vec(),
    };
    let Some(dense) = dense_text(&element, &shape, &raw) else {
        return Err(p.invalid(blob_offset, "vhlo tensor_v1 data does not match its type"));
    };
    let mut t = Template::default();
    t.text(&format!("#vhlo.tensor_v1<{dense} : tensor<"));
    for &d in &shape {
        t.text(&format!("{d}x"));
    }
    t.text(&element.builtin_name());
    if let Some(encoding) = encoding {
        t.text(", ");
        t.attr(encoding);
    }
    t.text(">>");
    Ok(Some(t))
}

pub(super) fn ty(p: &mut Payload<'_, '_>) -> Decoded {
    let code_offset = p.offset();
    let code = p.varint("vhlo type code")?;
    let mut t = Template::default();
    if let Some((_, mnemonic, _)) = SIMPLE_TYPES.iter().find(|(c, _, _)| *c == code) {
        t.text(&format!("!vhlo.{mnemonic}"));
        return Ok(Some(t));
    }
    match code {
        1 => {
            let element = p.ty()?;
            t.text("!vhlo.complex_v1<");
            t.ty(element);
            t.text(">");
        }
        8 => {
            let inputs = types(p, "vhlo function inputs")?;
            let outputs = types(p, "vhlo function outputs")?;
            // An empty list prints as `()`, others bare.
            let type_array = |t: &mut Template, items: &[TypeId]| {
                if items.is_empty() {
                    t.text("()");
                }
                list(t, "", items, "", |t, ty| t.ty(ty));
            };
            t.text("!vhlo.func_v1<(");
            type_array(&mut t, &inputs);
            t.text(") -> ");
            type_array(&mut t, &outputs);
            t.text(">");
        }
        20 | 21 | 41 => {
            let encoding = if code == 21 { Some(p.attr()?) } else { None };
            let shape = p.svarints("vhlo shape")?;
            let element = p.ty()?;
            t.text(if code == 41 { "!vhlo.buffer_v1<" } else { "!vhlo.tensor_v1<" });
            for &d in &shape {
                t.text(&format!("{}x", dim(d)));
            }
            t.ty(element);
            if let Some(encoding) = encoding {
                t.text(", ");
                t.attr(encoding);
            }
            t.text(">");
        }
        23 | 42 => {
            let items = types(p, "vhlo tuple types")?;
            let open = if code == 23 { "!vhlo.tuple_v1<" } else { "!vhlo.future_v1<" };
            list(&mut t, open, &items, ">", |t, ty| t.ty(ty));
        }
        24 => {
            let flags = p.varint("vhlo quantization flags")?;
            let storage = p.ty()?;
            let expressed = p.ty()?;
            let scale = p.f64_bits("vhlo scale")?;
            let zero_point = p.svarint("vhlo zero point")?;
            let min = p.svarint("vhlo storage min")?;
            let max = p.svarint("vhlo storage max")?;
            t.text("!vhlo.quant_v1<");
            t.ty(storage);
            t.text(":");
            t.ty(expressed);
            t.text(&format!(", {}:{zero_point}, {min}:{max}, {}>", double(scale), flags as u32));
        }
        30 => {
            let flags = p.varint("vhlo quantization flags")?;
            let storage = p.ty()?;
            let expressed = p.ty()?;
            let dimension = p.varint("vhlo quantized dimension")?;
            let min = p.svarint("vhlo storage min")?;
            let max = p.svarint("vhlo storage max")?;
            let n = p.c.count("vhlo scales", 1)?;
            let scales = (0..n).map(|_| p.f64_bits("vhlo scale")).collect::<Result<Vec<_>>>()?;
            let zero_points = p.svarints("vhlo zero points")?;
            let scales: Vec<String> = scales.into_iter().map(double).collect();
            let zero_points: Vec<String> = zero_points.iter().map(i64::to_string).collect();
            t.text("!vhlo.quant_per_axis_v1<");
            t.ty(storage);
            t.text(":");
            t.ty(expressed);
            t.text(&format!(
                ", {}, [{}], [{}], {min}:{max}, {}>",
                dimension as i32,
                scales.join(", "),
                zero_points.join(", "),
                flags as u32
            ));
        }
        25 => {
            let element = p.ty()?;
            t.text("!vhlo.unranked_tensor_v1<");
            t.ty(element);
            t.text(">");
        }
        _ => return Err(p.invalid(code_offset, format!("unknown vhlo type code {code}"))),
    }
    Ok(Some(t))
}
