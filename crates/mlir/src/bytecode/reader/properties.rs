//! Decoding an op's properties blob: a dictionary attribute index for ops that were unregistered
//! when written, or an ODS native encoding (see [`crate::ods`]) for registered ones.

use super::cursor::Cursor;
use super::error::{ReadError, ReadErrorKind, Result};
use super::{version, FileState};
use crate::ir::{ApInt, AttrId, Attribute, Blob, OpNameId, Properties, Signedness, Type};
use crate::ods::{op_schema, OpSchema, PropKind};

pub(super) fn decode(state: &mut FileState<'_>, name: OpNameId, index: usize, num_attrs: usize) -> Result<Properties> {
    let entry = state.property(index);
    let mut c = entry.cursor();
    let op_name = state.module.context.op_name(name).clone();
    if !op_name.registered {
        let attr = AttrId(c.index("properties attribute", num_attrs)? as u32);
        c.expect_end("properties entry")?;
        return Ok(Properties::Dict(attr));
    }
    let schema = op_schema(state.module.context.str_bytes(op_name.full));
    match schema.and_then(|schema| decode_native(state, schema, &mut c, num_attrs).ok()) {
        Some(props) => Ok(props),
        None => {
            let blobs = &mut state.module.opaque_properties;
            blobs.push(entry.data.into());
            Ok(Properties::Opaque(blobs.len() as u32 - 1))
        }
    }
}

fn sparse_array(c: &mut Cursor<'_>, size: usize) -> Result<Vec<i32>> {
    let (n, is_sparse) = c.varint_with_flag("segment sizes")?;
    let mut values = vec![0i32; size];
    let to_i32 = |c: &Cursor<'_>, v: u64| i32::try_from(v).map_err(|_| c.invalid("segment size too large"));
    if !is_sparse {
        if n != size as u64 {
            return Err(c.invalid("segment sizes of the wrong length"));
        }
        for value in values.iter_mut() {
            let v = c.varint("segment size")?;
            *value = to_i32(c, v)?;
        }
    } else if n > 0 {
        // An all-zero array is just the flag: no index width follows.
        let bits = c.varint("segment index bits")?;
        if bits > 32 || n > size as u64 {
            return Err(c.invalid("bad sparse segment sizes"));
        }
        for _ in 0..n {
            let v = c.varint("segment size")?;
            let index = (v & ((1u64 << bits) - 1)) as usize;
            if index >= size {
                return Err(c.invalid("segment index out of range"));
            }
            values[index] = to_i32(c, v >> bits)?;
        }
    }
    Ok(values)
}

fn decode_native(
    state: &mut FileState<'_>,
    schema: &OpSchema,
    c: &mut Cursor<'_>,
    num_attrs: usize,
) -> Result<Properties> {
    let v6 = state.version >= version::NATIVE_PROPERTIES_ODS_SEGMENT_SIZE;
    // Names in encoding order; in v5 the segment sizes sit among them as attributes.
    let mut names: Vec<(&str, Option<bool>)> = schema.attrs.iter().map(|&(n, r)| (n, Some(r))).collect();
    if !v6 {
        if schema.operand_segments > 0 {
            names.push(("operandSegmentSizes", None));
        }
        if schema.result_segments > 0 {
            names.push(("resultSegmentSizes", None));
        }
        names.sort_by(|a, b| a.0.cmp(b.0));
    }
    let mut entries: Vec<(&str, AttrId)> = Vec::new();
    for &(name, required) in &names {
        match required {
            Some(false) => {
                let (index, present) = c.varint_with_flag("optional attribute")?;
                if present {
                    if index >= num_attrs as u64 {
                        return Err(c.invalid("attribute index out of range"));
                    }
                    entries.push((name, AttrId(index as u32)));
                } else if index != 0 {
                    return Err(c.invalid("bad optional attribute"));
                }
            }
            _ => entries.push((name, AttrId(c.index("attribute", num_attrs)? as u32))),
        }
    }
    // Non-attribute properties follow the attributes, in declaration order.
    let mut props: Vec<(&str, Attribute)> = Vec::new();
    for &(name, kind) in schema.props {
        props.push((name, decode_prop(state, c, kind)?));
    }
    let mut segments = Vec::new();
    if v6 {
        if schema.operand_segments > 0 {
            segments.push(("operandSegmentSizes", sparse_array(c, schema.operand_segments as usize)?));
        }
        if schema.result_segments > 0 {
            segments.push(("resultSegmentSizes", sparse_array(c, schema.result_segments as usize)?));
        }
    }
    if !c.is_empty() {
        return Err(ReadError::new(c.offset(), ReadErrorKind::TrailingBytes(c.remaining(), "properties")));
    }
    let mut dict: Vec<(Vec<u8>, AttrId)> = entries.into_iter().map(|(n, a)| (n.as_bytes().to_vec(), a)).collect();
    for (name, value) in props {
        let attr = state.intern_attr(value);
        dict.push((name.as_bytes().to_vec(), attr));
    }
    if !segments.is_empty() {
        let i32_type = state.module.context.intern_type(Type::Integer { width: 32, signedness: Signedness::Signless });
        for (name, values) in segments {
            let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            let attr = state.intern_attr(Attribute::DenseArray {
                elem: i32_type,
                count: values.len() as u64,
                data: Blob::from_vec(data),
            });
            dict.push((name.as_bytes().to_vec(), attr));
        }
    }
    dict.sort_by(|a, b| a.0.cmp(&b.0));
    let entries = dict
        .into_iter()
        .map(|(name, value)| {
            let value_sym = state.module.context.intern_str(&name);
            (state.intern_attr(Attribute::String { value: value_sym, ty: None }), value)
        })
        .collect();
    Ok(Properties::Dict(state.intern_attr(Attribute::Dictionary(entries))))
}

/// A non-attribute property as the attribute upstream converts it to (`convertToAttribute`).
fn decode_prop(state: &mut FileState<'_>, c: &mut Cursor<'_>, kind: PropKind) -> Result<Attribute> {
    let mut integer = |width: u32, value: u64| {
        let ty = state.module.context.intern_type(Type::Integer { width, signedness: Signedness::Signless });
        Attribute::Integer { ty, value: ApInt::from_u64(width, value) }
    };
    Ok(match kind {
        PropKind::I32 => {
            let v = c.varint("int32 property")?;
            integer(32, v)
        }
        PropKind::I64 => {
            let v = c.varint("int64 property")?;
            integer(64, v)
        }
        PropKind::Bool | PropKind::Unit => match c.byte("bool property")? {
            0 => integer(1, 0),
            1 if kind == PropKind::Unit => Attribute::Unit,
            1 => integer(1, 1),
            _ => return Err(c.invalid("bool property is neither 0 nor 1")),
        },
        PropKind::String => Attribute::String { value: state.string(c, "string property")?, ty: None },
    })
}
