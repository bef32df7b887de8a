//! Where a registered op keeps its inherent attributes: in its properties, as upstream builds
//! the op, whoever makes it (the text parser from an attribute dictionary, the BEF disassembler
//! from kernel attributes).

use super::OpSchema;
use crate::ir::{ApInt, AttrId, Attribute, MlirContext, OpNameId, Properties, Signedness, Type};

/// Splits `attrs` (a dictionary, or none) of an op named `name` into the discardable attributes
/// and the properties its schema gives it (every non-attribute property defaulted). An op
/// without a schema keeps everything in its dictionary; an empty dictionary is none.
pub(crate) fn split_inherent(
    ctx: &mut MlirContext,
    name: OpNameId,
    attrs: Option<AttrId>,
) -> (Option<AttrId>, Properties) {
    let attrs = attrs.filter(|&a| !matches!(ctx.attr(a), Attribute::Dictionary(e) if e.is_empty()));
    let Some(schema) = super::op_schema(ctx.str_bytes(ctx.op_name(name).full)) else {
        return (attrs, Properties::None);
    };
    let has_properties = !schema.attrs.is_empty()
        || !schema.props.is_empty()
        || schema.operand_segments > 0
        || schema.result_segments > 0;
    if !has_properties {
        return (attrs, Properties::None);
    }
    let Some(dict) = attrs else {
        let props = with_default_props(ctx, schema, Vec::new());
        return (attrs, Properties::Dict(ctx.intern_attr(Attribute::Dictionary(props.into()))));
    };
    let Attribute::Dictionary(entries) = ctx.attr(dict).clone() else { return (attrs, Properties::None) };
    let inherent = |key: &[u8]| {
        schema.attrs.iter().any(|(n, _)| n.as_bytes() == key)
            || schema.props.iter().any(|(n, _)| n.as_bytes() == key)
            || (schema.operand_segments > 0 && key == b"operandSegmentSizes")
            || (schema.result_segments > 0 && key == b"resultSegmentSizes")
    };
    let (props, rest): (Vec<_>, Vec<_>) = entries.iter().partition(|&&(k, _)| match ctx.attr(k) {
        Attribute::String { value, .. } => inherent(ctx.str_bytes(*value)),
        _ => false,
    });
    let props = with_default_props(ctx, schema, props);
    let props = ctx.intern_attr(Attribute::Dictionary(props.into()));
    let rest = (!rest.is_empty()).then(|| ctx.intern_attr(Attribute::Dictionary(rest.into())));
    (rest, Properties::Dict(props))
}

/// `props` (a registered op's properties, sorted by name) with each non-attribute property it
/// lacks set to its storage default, as upstream builds them.
fn with_default_props(
    ctx: &mut MlirContext,
    schema: &OpSchema,
    mut props: Vec<(AttrId, AttrId)>,
) -> Vec<(AttrId, AttrId)> {
    let name_of = |ctx: &MlirContext, key: AttrId| match ctx.attr(key) {
        Attribute::String { value, .. } => ctx.str_bytes(*value).to_vec(),
        _ => Vec::new(),
    };
    let mut added = false;
    for &(name, kind) in schema.props {
        if props.iter().any(|&(k, _)| name_of(ctx, k) == name.as_bytes()) {
            continue;
        }
        let value = match kind.default_width() {
            Some(width) => {
                let signedness = Signedness::Signless;
                let ty = ctx.intern_type(Type::Integer { width, signedness });
                ctx.intern_attr(Attribute::Integer { ty, value: ApInt::from_u64(width, 0) })
            }
            None => {
                let empty = ctx.intern_str(b"");
                ctx.intern_attr(Attribute::String { value: empty, ty: None })
            }
        };
        let value_sym = ctx.intern_str(name.as_bytes());
        let key = ctx.intern_attr(Attribute::String { value: value_sym, ty: None });
        props.push((key, value));
        added = true;
    }
    if added {
        props.sort_by_key(|&(k, _)| name_of(ctx, k));
    }
    props
}
