//! What rtx knows about registered (ODS-defined) operations: the inherent attributes their native
//! properties encoding holds. A registered op's properties blob in bytecode v5+ is meaningless
//! without this schema, so the reader decodes it into the dictionary it stands for, and a writer
//! can encode that dictionary back.
//!
//! Besides attributes, an op may have ODS *properties* that are not attributes (`IntProp`,
//! `EnumProp`, `BoolProp`, ... of upstream's `Properties.td`): each has its own bytecode encoding,
//! and upstream shows it as the attribute its `convertToAttribute` makes (`noWrapFlags = 0 : i32`).

mod schemas;

/// The properties layout of one ODS operation.
#[derive(Debug)]
pub struct OpSchema {
    pub name: &'static str,
    /// Inherent attributes in encoding (name) order, each with whether it is required.
    pub attrs: &'static [(&'static str, bool)],
    /// Non-attribute properties in declaration order (their encoding order, after the attributes).
    pub props: &'static [(&'static str, PropKind)],
    /// Number of operand segments (`operandSegmentSizes`), 0 when the op has none.
    pub operand_segments: u8,
    /// Number of result segments (`resultSegmentSizes`), 0 when the op has none.
    pub result_segments: u8,
}

/// How a non-attribute ODS property is encoded in bytecode, and the attribute it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PropKind {
    /// `IntProp<"int32_t">`/`I32Prop`, and `EnumProp`s (stored as their `int32_t`-sized value): a
    /// varint, shown as `N : i32`.
    I32,
    /// `IntProp<"int64_t">`/`I64Prop`: a varint, shown as `N : i64`.
    I64,
    /// `BoolProp`: one byte (0 or 1), shown as `true`/`false`.
    Bool,
    /// `UnitProp`: one byte (0 or 1), shown as `unit` when set and `false` when not.
    Unit,
    /// `StringProp`: a string table index, shown as a string.
    String,
}

impl PropKind {
    /// The width of the integer attribute (`0 : iN`, `false` for 1) that stands for the property's
    /// storage default, what upstream shows when a file or text does not set it; `None` for a
    /// string, whose default is the empty string.
    pub fn default_width(self) -> Option<u32> {
        match self {
            PropKind::I32 => Some(32),
            PropKind::I64 => Some(64),
            PropKind::Bool | PropKind::Unit => Some(1),
            PropKind::String => None,
        }
    }
}

/// The schema of a registered operation, by full name.
pub fn op_schema(name: &[u8]) -> Option<&'static OpSchema> {
    schemas::SCHEMAS.binary_search_by(|s| s.name.as_bytes().cmp(name)).ok().map(|i| &schemas::SCHEMAS[i])
}

#[cfg(test)]
mod tests {
    #[test]
    fn schemas_are_sorted_for_binary_search() {
        assert!(super::schemas::SCHEMAS.windows(2).all(|w| w[0].name < w[1].name));
        assert!(super::op_schema(b"func.func").is_some());
    }

    #[test]
    fn gep_schema_has_its_no_wrap_flags_property() {
        let gep = super::op_schema(b"llvm.getelementptr").expect("llvm.getelementptr");
        assert_eq!(gep.props, &[("noWrapFlags", super::PropKind::I32)]);
        assert!(super::op_schema(b"ub.poison").is_some());
    }
}
