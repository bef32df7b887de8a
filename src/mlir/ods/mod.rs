//! What rtx knows about registered (ODS-defined) operations: the inherent attributes their native
//! properties encoding holds. A registered op's properties blob in bytecode v5+ is meaningless
//! without this schema, so the reader decodes it into the dictionary it stands for, and a writer
//! can encode that dictionary back.

mod schemas;

/// The properties layout of one ODS operation.
#[derive(Debug)]
pub struct OpSchema {
    pub name: &'static str,
    /// Inherent attributes in encoding (name) order, each with whether it is required.
    pub attrs: &'static [(&'static str, bool)],
    /// Number of operand segments (`operandSegmentSizes`), 0 when the op has none.
    pub operand_segments: u8,
    /// Number of result segments (`resultSegmentSizes`), 0 when the op has none.
    pub result_segments: u8,
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
}
