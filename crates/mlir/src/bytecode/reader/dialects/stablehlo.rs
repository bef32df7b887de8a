//! StableHLO's attribute and type encodings (`StablehloBytecode.cpp` in openxla/stablehlo, as
//! built into IREE 3.13) and the text its printers give each of them.

use super::{dialect_symbol, Decoded, Payload, Template};
use crate::bytecode::reader::error::Result;
use crate::float::print_float;
use crate::ir::FloatKind;

pub(super) const COMPARISON_DIRECTIONS: &[(u64, &str)] =
    &[(0, "EQ"), (1, "NE"), (2, "GE"), (3, "GT"), (4, "LE"), (5, "LT")];
pub(super) const COMPARISON_TYPES: &[(u64, &str)] =
    &[(0, "NOTYPE"), (1, "FLOAT"), (2, "TOTALORDER"), (3, "SIGNED"), (4, "UNSIGNED")];
const FFT_TYPES: &[(u64, &str)] = &[(0, "FFT"), (1, "IFFT"), (2, "RFFT"), (3, "IRFFT")];
const PRECISIONS: &[(u64, &str)] = &[(0, "DEFAULT"), (1, "HIGH"), (2, "HIGHEST")];
const RNG_ALGORITHMS: &[(u64, &str)] = &[(0, "DEFAULT"), (1, "THREE_FRY"), (2, "PHILOX")];
const RNG_DISTRIBUTIONS: &[(u64, &str)] = &[(1, "UNIFORM"), (2, "NORMAL")];
const TRANSPOSES: &[(u64, &str)] = &[(0, "TRANSPOSE_INVALID"), (1, "NO_TRANSPOSE"), (2, "TRANSPOSE"), (3, "ADJOINT")];
const RESULT_ACCURACY_MODES: &[(u64, &str)] = &[(0, "DEFAULT"), (1, "HIGHEST"), (2, "TOLERANCE")];

/// A whole attribute as text (`#stablehlo.<body>` or `#stablehlo<body>`).
fn whole(body: &str) -> Template {
    let mut t = Template::default();
    t.text(&dialect_symbol('#', "stablehlo", body));
    t
}

/// An enum attribute printed as `#dialect<mnemonic VALUE>`.
pub(super) fn enum_attr(
    dialect: &str,
    p: &mut Payload<'_, '_>,
    mnemonic: &'static str,
    names: &[(u64, &'static str)],
) -> Decoded {
    let value = p.enum_case(mnemonic, names)?;
    let mut t = Template::default();
    t.text(&dialect_symbol('#', dialect, &format!("{mnemonic} {value}")));
    Ok(Some(t))
}

/// The fields that StableHLO's struct printer shows: empty lists and zero integers are left out.
enum Field<'v> {
    Dims(&'v str, Vec<i64>),
    Int(&'v str, i64),
}

fn dims_text(dims: &[i64]) -> String {
    let items: Vec<String> = dims.iter().map(i64::to_string).collect();
    format!("[{}]", items.join(", "))
}

fn struct_body(mnemonic: &str, fields: &[Field<'_>]) -> String {
    let mut parts = Vec::new();
    for field in fields {
        match field {
            Field::Dims(name, dims) if !dims.is_empty() => parts.push(format!("{name} = {}", dims_text(dims))),
            Field::Int(name, value) if *value != 0 => parts.push(format!("{name} = {value}")),
            _ => {}
        }
    }
    format!("{mnemonic}<{}>", parts.join(", "))
}

/// One side of a convolution layout (`[b, 0, 1, f]`): the non-spatial dimensions by letter and the
/// spatial ones by their position in `spatial`.
fn conv_layout(p: &Payload<'_, '_>, offset: usize, spatial: &[i64], named: [(i64, char); 2]) -> Result<String> {
    let rank = spatial.len() + 2;
    let mut slots: Vec<Option<String>> = vec![None; rank];
    let mut place = |dim: i64, text: String| -> bool {
        match usize::try_from(dim).ok().and_then(|d| slots.get_mut(d)) {
            Some(slot) => {
                *slot = Some(text);
                true
            }
            None => false,
        }
    };
    for (dim, letter) in named {
        if !place(dim, letter.to_string()) {
            return Err(p.invalid(offset, format!("convolution dimension {dim} out of range")));
        }
    }
    for (index, &dim) in spatial.iter().enumerate() {
        if !place(dim, index.to_string()) {
            return Err(p.invalid(offset, format!("convolution dimension {dim} out of range")));
        }
    }
    // Upstream fills unassigned slots with zero (the spatial index 0).
    let items: Vec<String> = slots.into_iter().map(|s| s.unwrap_or_else(|| "0".to_owned())).collect();
    Ok(format!("[{}]", items.join(", ")))
}

pub(super) fn attr(p: &mut Payload<'_, '_>) -> Decoded {
    let code_offset = p.offset();
    let code = p.varint("stablehlo attribute code")?;
    let t = match code {
        1 => {
            let handle = p.svarint("channel handle")?;
            let kind = p.svarint("channel type")?;
            whole(&format!("channel_handle<handle = {handle}, type = {kind}>"))
        }
        2 => return enum_attr("stablehlo", p, "comparison_direction", COMPARISON_DIRECTIONS),
        3 => return enum_attr("stablehlo", p, "comparison_type", COMPARISON_TYPES),
        4 => {
            let offset = p.offset();
            let input_batch = p.svarint("conv dimension")?;
            let input_feature = p.svarint("conv dimension")?;
            let input_spatial = p.svarints("conv dimensions")?;
            let kernel_in = p.svarint("conv dimension")?;
            let kernel_out = p.svarint("conv dimension")?;
            let kernel_spatial = p.svarints("conv dimensions")?;
            let output_batch = p.svarint("conv dimension")?;
            let output_feature = p.svarint("conv dimension")?;
            let output_spatial = p.svarints("conv dimensions")?;
            let input = conv_layout(p, offset, &input_spatial, [(input_batch, 'b'), (input_feature, 'f')])?;
            let kernel = conv_layout(p, offset, &kernel_spatial, [(kernel_in, 'i'), (kernel_out, 'o')])?;
            let output = conv_layout(p, offset, &output_spatial, [(output_batch, 'b'), (output_feature, 'f')])?;
            whole(&format!("conv<{input}x{kernel}->{output}>"))
        }
        5 => {
            let fields = [
                Field::Dims("lhs_batching_dimensions", p.svarints("dot dimensions")?),
                Field::Dims("rhs_batching_dimensions", p.svarints("dot dimensions")?),
                Field::Dims("lhs_contracting_dimensions", p.svarints("dot dimensions")?),
                Field::Dims("rhs_contracting_dimensions", p.svarints("dot dimensions")?),
            ];
            whole(&struct_body("dot", &fields))
        }
        6 => return enum_attr("stablehlo", p, "fft_type", FFT_TYPES),
        7 => {
            let fields = [
                Field::Dims("offset_dims", p.svarints("gather dimensions")?),
                Field::Dims("collapsed_slice_dims", p.svarints("gather dimensions")?),
                Field::Dims("operand_batching_dims", p.svarints("gather dimensions")?),
                Field::Dims("start_indices_batching_dims", p.svarints("gather dimensions")?),
                Field::Dims("start_index_map", p.svarints("gather dimensions")?),
                Field::Int("index_vector_dim", p.svarint("gather index vector dimension")?),
            ];
            whole(&struct_body("gather", &fields))
        }
        8 => return enum_attr("stablehlo", p, "precision", PRECISIONS),
        9 => return enum_attr("stablehlo", p, "rng_algorithm", RNG_ALGORITHMS),
        10 => return enum_attr("stablehlo", p, "rng_distribution", RNG_DISTRIBUTIONS),
        11 => {
            let fields = [
                Field::Dims("update_window_dims", p.svarints("scatter dimensions")?),
                Field::Dims("inserted_window_dims", p.svarints("scatter dimensions")?),
                Field::Dims("input_batching_dims", p.svarints("scatter dimensions")?),
                Field::Dims("scatter_indices_batching_dims", p.svarints("scatter dimensions")?),
                Field::Dims("scatter_dims_to_operand_dims", p.svarints("scatter dimensions")?),
                Field::Int("index_vector_dim", p.svarint("scatter index vector dimension")?),
            ];
            whole(&struct_body("scatter", &fields))
        }
        12 => return enum_attr("stablehlo", p, "transpose", TRANSPOSES),
        13 => {
            // The dialect prints its type extensions as `#stablehlo.bounds<...>`.
            let bounds = p.svarints("bounds")?;
            let items: Vec<String> =
                bounds.iter().map(|&b| if b == i64::MIN { "?".to_owned() } else { b.to_string() }).collect();
            whole(&format!("bounds<{}>", items.join(", ")))
        }
        14 => {
            let output = p.svarints("output tuple indices")?;
            let operand = p.svarint("operand index")?;
            let operand_tuple = p.svarints("operand tuple indices")?;
            whole(&format!(
                "output_operand_alias<output_tuple_indices = {}, operand_index = {operand}, operand_tuple_indices = {}>",
                dims_text(&output),
                dims_text(&operand_tuple)
            ))
        }
        15 => {
            let lhs = p.ty()?;
            let rhs = p.ty()?;
            let acc = p.ty()?;
            let lhs_count = p.svarint("component count")?;
            let rhs_count = p.svarint("component count")?;
            let primitive_ops = p.svarint("primitive operation count")?;
            let imprecise = p.bool("allow imprecise accumulation")?;
            let mut t = Template::default();
            t.text("#stablehlo.dot_algorithm<lhs_precision_type = ");
            t.ty(lhs);
            t.text(", rhs_precision_type = ");
            t.ty(rhs);
            t.text(", accumulation_type = ");
            t.ty(acc);
            t.text(&format!(
                ", lhs_component_count = {lhs_count}, rhs_component_count = {rhs_count}, num_primitive_operations = \
                 {primitive_ops}, allow_imprecise_accumulation = {imprecise}>"
            ));
            t
        }
        16 => {
            let value = p.enum_case("result accuracy mode", RESULT_ACCURACY_MODES)?;
            whole(&format!("result_accuracy_mode<{value}>"))
        }
        17 => {
            let atol = p.f64_bits("atol")?;
            let rtol = p.f64_bits("rtol")?;
            let ulps = p.svarint("ulps")?;
            let mode = p.attr()?;
            let mut t = Template::default();
            t.text("#stablehlo.result_accuracy<");
            // Zero tolerances and ulps are left out.
            if atol & !(1 << 63) != 0 {
                t.text(&format!("atol = {}, ", print_float(atol, FloatKind::F64)));
            }
            if rtol & !(1 << 63) != 0 {
                t.text(&format!("rtol = {}, ", print_float(rtol, FloatKind::F64)));
            }
            if ulps != 0 {
                t.text(&format!("ulps = {ulps}, "));
            }
            t.text("mode = ");
            t.attr(mode);
            t.text(">");
            t
        }
        18 => {
            let mesh = p.attr()?;
            let n = p.c.count("replica group axes", 1)?;
            let axes = (0..n).map(|_| p.attr()).collect::<Result<Vec<_>>>()?;
            let mut t = Template::default();
            t.text("#stablehlo.replica_group_mesh_axes<mesh = ");
            t.attr(mesh);
            t.text(", axes = [");
            for (i, axis) in axes.into_iter().enumerate() {
                if i > 0 {
                    t.text(", ");
                }
                t.attr(axis);
            }
            t.text("]>");
            t
        }
        19 => {
            let pre_size = p.svarint("sub-axis pre-size")?;
            let size = p.svarint("sub-axis size")?;
            whole(&format!("sub_axis_info({pre_size}){size}"))
        }
        20 => {
            let name = p.string("axis name")?.to_vec();
            let has_sub_axis = p.bool("sub-axis flag")?;
            let mut t = Template::default();
            t.text("#stablehlo.axis_ref<name = ");
            t.string(&name);
            if has_sub_axis {
                let offset = p.offset();
                let sub = p.attr()?;
                t.text(", sub_axis_info = ");
                t.stripped_attr(sub, "sub_axis_info", offset);
            }
            t.text(">");
            t
        }
        21 => {
            let name = p.string("mesh axis name")?.to_vec();
            let size = p.svarint("mesh axis size")?;
            let mut t = Template::default();
            t.text("#stablehlo.mesh_axis<name = ");
            t.string(&name);
            t.text(&format!(", size = {size}>"));
            t
        }
        22 => {
            let offset = p.offset();
            let axes = p.attr()?;
            let crate::ir::Attribute::Array(items) = p.ctx.attr(axes) else {
                return Err(p.invalid(offset, "mesh axes are not an array"));
            };
            let items = items.clone();
            let has_devices = p.bool("device ids flag")?;
            let mut t = Template::default();
            t.text("#stablehlo.mesh<axes=[");
            for (i, &item) in items.iter().enumerate() {
                if i > 0 {
                    t.text(", ");
                }
                t.stripped_attr(item, "mesh_axis", offset);
            }
            t.text("]");
            if has_devices {
                let devices = p.attr()?;
                t.text(", device_ids=");
                t.attr(devices);
            }
            t.text(">");
            t
        }
        _ => return Err(p.invalid(code_offset, format!("unknown stablehlo attribute code {code}"))),
    };
    Ok(Some(t))
}

pub(super) fn ty(p: &mut Payload<'_, '_>) -> Decoded {
    let code_offset = p.offset();
    let code = p.varint("stablehlo type code")?;
    let mut t = Template::default();
    match code {
        0 => t.text("!stablehlo.token"),
        1 => {
            let n = p.c.count("future types", 1)?;
            let types = (0..n).map(|_| p.ty()).collect::<Result<Vec<_>>>()?;
            t.text("!stablehlo.future<");
            for (i, ty) in types.into_iter().enumerate() {
                if i > 0 {
                    t.text(", ");
                }
                t.ty(ty);
            }
            t.text(">");
        }
        _ => return Err(p.invalid(code_offset, format!("unknown stablehlo type code {code}"))),
    }
    Ok(Some(t))
}
