//! What rtx knows about registered (ODS-defined) operations: the inherent attributes their native
//! properties encoding holds. A registered op's properties blob in bytecode v5+ is meaningless
//! without this schema, so the reader decodes it into the dictionary it stands for, and a writer
//! can encode that dictionary back.
//!
//! Besides attributes, an op may have ODS *properties* that are not attributes (`IntProp`,
//! `EnumProp`, `BoolProp`, ... of upstream's `Properties.td`): each has its own bytecode encoding,
//! and upstream shows it as the attribute its `convertToAttribute` makes (`noWrapFlags = 0 : i32`).

mod inherent;
mod schemas;

pub(crate) use inherent::split_inherent;

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

/// The dialects upstream MLIR as shipped in IREE 3.13 registers (`iree-opt --show-dialects`),
/// sorted. An op of one of them is registered there even where rtx has no schema for it, so its
/// properties must never reach upstream as a dictionary blob, which it would read as the op's
/// native encoding.
const UPSTREAM_DIALECTS: &[&str] = &[
    "affine",
    "amdgpu",
    "arith",
    "arm_neon",
    "arm_sme",
    "arm_sve",
    "bufferization",
    "builtin",
    "cf",
    "check",
    "chlo",
    "complex",
    "emitc",
    "flow",
    "func",
    "gpu",
    "hal",
    "hal_inline",
    "hal_loader",
    "io_parameters",
    "iree_codegen",
    "iree_cpu",
    "iree_encoding",
    "iree_gpu",
    "iree_linalg_ext",
    "iree_map",
    "iree_tensor_ext",
    "iree_vector_ext",
    "linalg",
    "llvm",
    "math",
    "memref",
    "ml_program",
    "nvgpu",
    "nvvm",
    "pcf",
    "pdl",
    "pdl_interp",
    "quant",
    "rocdl",
    "rocm",
    "scf",
    "shape",
    "smt",
    "spirv",
    "stablehlo",
    "stream",
    "tensor",
    "tm_tensor",
    "torch",
    "torch_c",
    "tosa",
    "transform",
    "ub",
    "util",
    "vector",
    "vhlo",
    "vm",
    "vmvx",
];

/// Whether upstream registers the dialect of the op named `full_name` (`dialect.op`).
pub fn is_upstream_dialect_op(full_name: &[u8]) -> bool {
    let dialect = full_name.split(|&b| b == b'.').next().unwrap_or(full_name);
    UPSTREAM_DIALECTS.binary_search_by(|d| d.as_bytes().cmp(dialect)).is_ok()
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
        assert!(super::UPSTREAM_DIALECTS.windows(2).all(|w| w[0] < w[1]));
        assert!(super::is_upstream_dialect_op(b"emitc.constant"));
        assert!(!super::is_upstream_dialect_op(b"test.op"));
    }

    #[test]
    fn gep_schema_has_its_no_wrap_flags_property() {
        let gep = super::op_schema(b"llvm.getelementptr").expect("llvm.getelementptr");
        assert_eq!(gep.props, &[("noWrapFlags", super::PropKind::I32)]);
        assert!(super::op_schema(b"ub.poison").is_some());
    }
}
