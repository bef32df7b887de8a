//! The custom (pretty) assembly forms rtx reads and writes: which ops have one and its shape.
//!
//! Each op (or family of ops that differ only in a dtype or rank suffix, like `tfrt.add.i32` /
//! `tfrt.add.f64`) is one row here, defined once and used by both the parser
//! (`text::parse::custom`) and the printer (`text::print::custom`). Ops whose form is ODS's
//! declarative `operands attr-dict` family are pure data: their operand and result types, which
//! the custom form leaves implicit, are written as type text (`$t` stands for the type the dtype
//! suffix names, `$r` for the rank suffix). Ops with hand-written parsers upstream have a [`Form`]
//! of their own. An op without a row has only the generic form (as under
//! `-allow-unregistered-dialect`).
//!
//! The rows follow TFRT's op definitions (`basic_kernels.td`, `test_kernels.td`,
//! `tensor_shape.td`, `dense_host_tensor.td`, `coo_host_tensor.td`, `core_runtime.td` at TFRT
//! 4ecc3a44) and MLIR's
//! `builtin.module`, `func.func` and `func.return`.

/// `!tfrt.chain`, the type of TFRT's ordering tokens.
pub const CHAIN: &str = "!tfrt.chain";
const TENSOR: &str = "!tfrt_tensor.tensor";
const BUFFER: &str = "!ht.host_buffer";
const SHAPE: &str = "!ts.shape";
const PARTIAL_SHAPE: &str = "!ts.partial_shape";
const STRING: &str = "!tfrt.string";
/// `!corert.tensorhandle`, the type of Core Runtime's tensors.
pub const TENSOR_HANDLE: &str = "!corert.tensorhandle";
/// `!corert.ophandler`, the type of Core Runtime's op handlers.
pub const OP_HANDLER: &str = "!corert.ophandler";

/// How an op's name may end.
#[derive(Debug)]
pub enum Suffix {
    /// The name is exactly the row's name.
    None,
    /// `name` + one of these dtypes (`$t` is the dtype's type).
    Dtype(&'static [&'static str]),
    /// `name` + a rank `0..=max` (`$r`).
    Rank(u8),
    /// `name` + dtype + `.` + rank `0..=max`.
    DtypeRank(&'static [&'static str], u8),
}

/// How an op is spelt after its name.
#[derive(Debug)]
pub enum Form {
    /// `%a, %b {attrs}` (ODS `operands attr-dict`): operand and result types fixed by the op.
    Operands { operands: &'static [&'static str], results: &'static [&'static str] },
    /// `%a, %b ATTR {attrs}` (ODS `operands $attr attr-dict`): after the operands, the inherent
    /// attribute `attr`; with `literal`, a bare number or `true`/`false` of that type whose type
    /// the text leaves out (`tfrt.constant.i32 42`), else a full attribute.
    OperandsAttr {
        operands: &'static [&'static str],
        results: &'static [&'static str],
        attr: &'static str,
        literal: Option<&'static str>,
    },
    /// `RE, IM {attrs}`: `tfrt.constant.complex64/128`, attributes `real` and `imaginary`.
    ComplexConstant,
    /// `%a, %b {attrs} : T1, T2`: any number of operands, their types after a colon.
    TypedOperands { results: &'static [&'static str] },
    /// `%a, %b : T1, T2` or nothing: `tfrt.return`, `func.return`.
    Return,
    /// `@f(%a) {attrs} : (T) -> R`: `tfrt.call` (attribute `callee`).
    Call,
    /// `%c, %a {attrs} : (T) -> (R) {then} else {else}`: `tfrt.if`.
    If,
    /// `%c @t @f (%a) {attrs} : (T) -> (R)`: `tfrt.cond` (`a_true_fn`, `b_false_fn`).
    Cond,
    /// `%i [@b0, @b1] (%a) {attrs} : (T) -> (R)`: `tfrt.case` (`branches`).
    Case,
    /// `%c @body(%a) {attrs} parallel_iterations(N) : (T) -> (R)`: `tfrt.while`.
    While,
    /// `@f(%a) {attrs} : (T) -> (R)`: `tfrt.once` (`function`).
    Once,
    /// `(%handler[, %chain]) "op.name"(%a) {op attrs} {func attrs} : N`: `corert.executeop` and
    /// `.seq` (with `chains` = 1). The op's own attributes are kept in written order as
    /// `op_attrs` (an array of `[key, value]` pairs), its function attributes as
    /// `op_func_attrs`, its name as `op_name`; `N` tensor handles come back (after the chains).
    ExecuteOp { chains: u8 },
    /// `%c @t @f(%chain, %a) {attrs} : (T) -> (R)`: `corert.cond` on a tensor handle
    /// (`a_true_fn`, `b_false_fn`); a chain comes back before the results.
    TensorCond,
    /// `@cond @body(%chain, %a) {attrs} : (T) -> (R)`: `corert.while` (`a_cond_fn`,
    /// `b_body_fn`); a chain comes back before the results.
    TensorWhile,
    /// `%n, %a [attributes {attrs}] : T {body}`: `tfrt.repeat.i32`.
    Repeat,
    /// `%s to %e fixed %b, %a : T {body}`: `tfrt.parallel_for.i32`.
    ParallelFor,
    /// `%s to %e fixed %b @f(%a) : T`: `tfrt.parallel_call.i32` (`callee`).
    ParallelCall,
    /// `%a [attributes {attrs}] : (T) -> (R) {body}`: `tfrt_test.do.async`.
    DoAsync,
    /// `"name"(%a : T) key = N, ... {body}`: `tfrt_test.benchmark`.
    Benchmark,
    /// `[@name] [attributes {attrs}] {body}`: `builtin.module`.
    Module,
    /// `[visibility] @name(%a: T {attrs} loc(..)) -> R [attributes {attrs}] [{body}]`: `func.func`.
    Func,
}

/// The attributes through which an op names the functions it calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Callees {
    /// Their names, in name order (the order a kernel receives the functions).
    pub names: &'static [&'static str],
    /// Whether the one attribute is an array of symbols (else each is one symbol).
    pub array: bool,
}

impl Form {
    /// How an op of this form names its callees (`None`: it names none).
    pub fn callees(&self) -> Option<Callees> {
        let (names, array): (&'static [&'static str], bool) = match self {
            Form::Call | Form::ParallelCall => (&["callee"], false),
            Form::Once => (&["function"], false),
            Form::Cond => (&["a_true_fn", "b_false_fn"], false),
            Form::While => (&["body_fn"], false),
            Form::Case => (&["branches"], true),
            Form::TensorCond => (&["a_true_fn", "b_false_fn"], false),
            Form::TensorWhile => (&["a_cond_fn", "b_body_fn"], false),
            _ => return None,
        };
        Some(Callees { names, array })
    }
}

/// Where each group of an op's results starts, for ops whose results upstream names in groups
/// (`%ch, %r = corert.executeop.seq ...`: the chain, then the tensor handles); one group
/// (`%4:3`) for every other op.
pub fn result_groups(full: &str, results: usize) -> Vec<usize> {
    match lookup(full).map(|m| &m.syntax.form) {
        Some(Form::ExecuteOp { chains }) if results > usize::from(*chains) && *chains > 0 => {
            (0..=usize::from(*chains)).collect()
        }
        _ => vec![0],
    }
}

/// One op or family of ops with a custom form.
#[derive(Debug)]
pub struct OpSyntax {
    /// The full name, or the part before the suffix.
    pub name: &'static str,
    pub suffix: Suffix,
    pub form: Form,
}

/// An op name matched against its row: what `$t` and `$r` stand for.
#[derive(Debug, Clone, Copy)]
pub struct Matched {
    pub syntax: &'static OpSyntax,
    /// The type text of the dtype suffix, if any.
    pub dtype: Option<&'static str>,
    /// The rank suffix, if any.
    pub rank: Option<u8>,
}

impl Matched {
    /// `text` with `$t` and `$r` replaced.
    pub fn type_text(&self, text: &str) -> String {
        let mut out = text.replace("$t", self.dtype.unwrap_or(""));
        if let Some(rank) = self.rank {
            out = out.replace("$r", &rank.to_string());
        }
        out
    }
}

/// Finds the row of the op named `full`.
pub fn lookup(full: &str) -> Option<Matched> {
    OPS.iter().find_map(|syntax| {
        let rest = full.strip_prefix(syntax.name)?;
        let rank_of = |text: &str, max: u8| text.parse::<u8>().ok().filter(|&r| r <= max && text.len() == 1);
        let (dtype, rank) = match syntax.suffix {
            Suffix::None => (rest.is_empty().then_some(None)?, None),
            Suffix::Dtype(dtypes) => (Some(dtypes.iter().find(|&&d| d == rest)?), None),
            Suffix::Rank(max) => (None, Some(rank_of(rest, max)?)),
            Suffix::DtypeRank(dtypes, max) => {
                let (dtype, rank) = rest.rsplit_once('.')?;
                (Some(dtypes.iter().find(|&&d| d == dtype)?), Some(rank_of(rank, max)?))
            }
        };
        Some(Matched { syntax, dtype: dtype.map(|d| dtype_type(d)), rank })
    })
}

/// The type a dtype suffix names.
fn dtype_type(dtype: &str) -> &'static str {
    match dtype {
        "bool" | "i1" => "i1",
        "i32" => "i32",
        "i64" => "i64",
        "ui8" => "ui8",
        "ui16" => "ui16",
        "ui32" => "ui32",
        "ui64" => "ui64",
        "f16" => "f16",
        "bf16" => "bf16",
        "f32" => "f32",
        "f64" => "f64",
        "complex64" => "complex<f32>",
        "complex128" => "complex<f64>",
        _ => "none",
    }
}

/// The full op name a bare name stands for: `func` is `func.func`'s old spelling, and a name
/// without a dialect belongs to the enclosing op's default dialect (`module` at the top level,
/// `return` in a function).
pub fn resolve_bare_name(name: &str, default_dialect: &str) -> Option<String> {
    if name == "func" {
        return Some("func.func".into());
    }
    if lookup(name).is_some() {
        return Some(name.into());
    }
    if default_dialect.is_empty() {
        return None;
    }
    let qualified = format!("{default_dialect}.{name}");
    lookup(&qualified).is_some().then_some(qualified)
}

/// The dialect whose op names an op's regions may spell without their prefix.
pub fn default_dialect(full: &str) -> &'static str {
    match full {
        "builtin.module" => "builtin",
        "func.func" => "func",
        _ => "",
    }
}

/// The name printed for `full` inside a region whose default dialect is `dialect`.
pub fn short_name<'a>(full: &'a str, dialect: &str) -> &'a str {
    match full.strip_prefix(dialect).and_then(|rest| rest.strip_prefix('.')) {
        Some(short) if !dialect.is_empty() && !short.contains('.') => short,
        _ => full,
    }
}

const INT_FLOAT: &[&str] = &["i32", "i64", "f32", "f64"];
const INTS: &[&str] = &["i32", "i64"];
const DHT_DTYPES: &[&str] = &["ui8", "ui16", "ui32", "ui64", "i32", "f32", "i64", "bool", "complex64", "complex128"];
const COO_DTYPES: &[&str] = &["i32", "f32"];
const CORERT_DTYPES: &[&str] = &[
    "ui8",
    "ui16",
    "ui32",
    "ui64",
    "i1",
    "i8",
    "i16",
    "i32",
    "i64",
    "bf16",
    "f16",
    "f32",
    "f64",
    "complex64",
    "complex128",
];

const fn ops(operands: &'static [&'static str], results: &'static [&'static str]) -> Form {
    Form::Operands { operands, results }
}

const fn row(name: &'static str, suffix: Suffix, form: Form) -> OpSyntax {
    OpSyntax { name, suffix, form }
}

const fn exact(name: &'static str, form: Form) -> OpSyntax {
    OpSyntax { name, suffix: Suffix::None, form }
}

const fn constant(literal: &'static str) -> Form {
    Form::OperandsAttr { operands: &[], results: &["$t"], attr: "value", literal: Some(literal) }
}

static OPS: &[OpSyntax] = &[
    // MLIR's builtin and func dialects.
    exact("builtin.module", Form::Module),
    exact("func.func", Form::Func),
    exact("func.return", Form::Return),
    // basic_kernels.td
    row(
        "tfrt.constant.",
        Suffix::Dtype(&["i1", "i32", "i64", "ui32", "ui64", "f16", "bf16", "f32", "f64"]),
        constant("$t"),
    ),
    row("tfrt.constant.", Suffix::Dtype(&["complex64", "complex128"]), Form::ComplexConstant),
    row("tfrt.constant_s.", Suffix::Dtype(&["i64", "f16", "f32", "f64"]), constant("$t")),
    row("tfrt.add.", Suffix::Dtype(INT_FLOAT), ops(&["$t", "$t"], &["$t"])),
    row("tfrt.and.", Suffix::Dtype(&["i1"]), ops(&["$t", "$t"], &["$t"])),
    row("tfrt.equal.", Suffix::Dtype(INTS), ops(&["$t", "$t"], &["i1"])),
    row("tfrt.div.", Suffix::Dtype(INTS), ops(&["$t", "$t"], &["$t", "$t"])),
    row("tfrt.mul.", Suffix::Dtype(INTS), ops(&["$t", "$t"], &["$t"])),
    row("tfrt.mul_s.", Suffix::Dtype(INTS), ops(&["$t", "$t"], &["$t"])),
    row("tfrt.print.", Suffix::Dtype(&["i1", "i32", "i64", "f32", "f64"]), ops(&["$t", CHAIN], &[CHAIN])),
    exact("tfrt.get_device", ops(&[CHAIN], &["!tfrt.device"])),
    exact("tfrt.new.chain", ops(&[], &[CHAIN])),
    exact("tfrt.merge.chains", Form::TypedOperands { results: &[CHAIN] }),
    exact("tfrt.return", Form::Return),
    exact("tfrt.call", Form::Call),
    exact("tfrt.if", Form::If),
    exact("tfrt.cond", Form::Cond),
    exact("tfrt.case", Form::Case),
    exact("tfrt.while", Form::While),
    exact("tfrt.once", Form::Once),
    exact("tfrt.repeat.i32", Form::Repeat),
    exact("tfrt.parallel_for.i32", Form::ParallelFor),
    exact("tfrt.parallel_call.i32", Form::ParallelCall),
    // test_kernels.td
    exact("tfrt_test.do.async", Form::DoAsync),
    exact("tfrt_test.benchmark", Form::Benchmark),
    row("tfrt_test.count3.", Suffix::Dtype(INTS), ops(&["$t"], &["$t", "$t", "$t"])),
    exact("tfrt_test.decode_jpeg", ops(&[STRING], &[TENSOR])),
    exact("tfrt_test.resize_bilinear", ops(&[TENSOR, "i64", "i64"], &[TENSOR])),
    exact("tfrt_test.parse_example_from_bytes", ops(&[STRING], &["!proto.example"])),
    exact("tfrt_test.get_bytes_field_from_example", ops(&["!proto.example", STRING], &[STRING])),
    exact("tfrt_test.get_int64_field_from_example", ops(&["!proto.example", STRING], &["i64"])),
    exact("tfrt_test.get_string", ops(&[], &[STRING])),
    exact("tfrt_test.get_string_sync", ops(&[], &[STRING])),
    exact("tfrt_test.test_cost", Form::TypedOperands { results: &["i32"] }),
    // tensor_shape.td
    exact("ts.build_shape", Form::OperandsAttr { operands: &[], results: &[SHAPE], attr: "value", literal: None }),
    exact("ts.equal_shape", ops(&[SHAPE, SHAPE], &["i1"])),
    exact("ts.get_dimension", ops(&[SHAPE, "i32"], &["i64"])),
    exact("ts.get_num_elements", ops(&[SHAPE], &["i64"])),
    exact("ts.print_shape", ops(&[SHAPE, CHAIN], &[CHAIN])),
    row("ts.as_fixed_rank_shape.", Suffix::Rank(3), ops(&[SHAPE], &["!ts.fixed_rank_shape.$r"])),
    row("ts.print_fixed_rank_shape.", Suffix::Rank(3), ops(&["!ts.fixed_rank_shape.$r", CHAIN], &[CHAIN])),
    exact(
        "ts.build_partial_shape",
        Form::OperandsAttr { operands: &[], results: &[PARTIAL_SHAPE], attr: "value", literal: None },
    ),
    exact("ts.build_unranked_partial_shape", ops(&[], &[PARTIAL_SHAPE])),
    exact("ts.print_partial_shape", ops(&[PARTIAL_SHAPE, CHAIN], &[CHAIN])),
    exact("ts.to_shape", ops(&[PARTIAL_SHAPE], &[SHAPE])),
    exact("ts.to_partial_shape", ops(&[SHAPE], &[PARTIAL_SHAPE])),
    // dense_host_tensor.td
    row(
        "tfrt_dht.create_uninitialized_tensor.",
        Suffix::DtypeRank(DHT_DTYPES, 4),
        Form::OperandsAttr { operands: &[], results: &[TENSOR], attr: "shape", literal: None },
    ),
    row(
        "tfrt_dht.fill_tensor_with_constant.",
        Suffix::Dtype(DHT_DTYPES),
        Form::OperandsAttr { operands: &[TENSOR, CHAIN], results: &[CHAIN], attr: "value", literal: None },
    ),
    row("tfrt_dht.make_tensor.", Suffix::Dtype(DHT_DTYPES), ops(&[BUFFER, SHAPE, CHAIN], &[TENSOR, CHAIN])),
    row(
        "tfrt_dht.set_tensor_with_constant_values.",
        Suffix::Dtype(DHT_DTYPES),
        Form::OperandsAttr { operands: &[TENSOR, CHAIN], results: &[CHAIN], attr: "values", literal: None },
    ),
    row("tfrt_dht.tensor_equal.", Suffix::Dtype(DHT_DTYPES), ops(&[TENSOR, TENSOR, CHAIN], &["i1", CHAIN])),
    exact("tfrt_dht.print_tensor", ops(&[TENSOR, CHAIN], &[CHAIN])),
    exact("tfrt_dht.allocate_buffer", ops(&["i64", "i64"], &[BUFFER])),
    exact("tfrt_dht.get_buffer", ops(&[TENSOR, CHAIN], &[BUFFER, CHAIN])),
    exact("tfrt_dht.get_buffer_slice", ops(&[BUFFER, "i64", "i64"], &[BUFFER])),
    exact("tfrt_dht.print_buffer", ops(&[BUFFER, CHAIN], &[CHAIN])),
    exact("tfrt_dht.get_tensor_shape", ops(&[TENSOR], &[SHAPE])),
    // coo_host_tensor.td
    row("coo.convert_coo_to_dht.", Suffix::DtypeRank(COO_DTYPES, 3), ops(&[TENSOR, CHAIN], &[TENSOR, CHAIN])),
    row("coo.convert_dht_to_coo.", Suffix::DtypeRank(COO_DTYPES, 3), ops(&[TENSOR, CHAIN], &[TENSOR, CHAIN])),
    row("coo.tensor_equal.", Suffix::DtypeRank(COO_DTYPES, 3), ops(&[TENSOR, TENSOR, CHAIN], &["i1", CHAIN])),
    exact("coo.print_tensor", ops(&[TENSOR, CHAIN], &[CHAIN])),
    // core_runtime.td
    exact("corert.executeop", Form::ExecuteOp { chains: 0 }),
    exact("corert.executeop.seq", Form::ExecuteOp { chains: 1 }),
    exact(
        "corert.get_op_handler",
        Form::OperandsAttr { operands: &[CHAIN], results: &[OP_HANDLER], attr: "op_handler_name", literal: None },
    ),
    exact(
        "corert.register_op_handler",
        Form::OperandsAttr { operands: &[OP_HANDLER], results: &[CHAIN], attr: "op_handler_name", literal: None },
    ),
    exact(
        "corert.const_dense_tensor",
        Form::OperandsAttr { operands: &[], results: &[TENSOR_HANDLE], attr: "value", literal: None },
    ),
    exact("corert.const_string_tensor", ops(&[], &[TENSOR_HANDLE])),
    row("corert.create_dense_tensor.", Suffix::Dtype(CORERT_DTYPES), ops(&[], &[TENSOR_HANDLE])),
    exact("corert.tensorhandle_to_int32", ops(&[TENSOR_HANDLE], &["i32"])),
    exact("corert.get_dst_tensor_type", ops(&[TENSOR_HANDLE, "!tfrt.device"], &["!tfrt.tensor_type"])),
    exact("corert.transfer", ops(&[TENSOR_HANDLE, "!tfrt.device", "!tfrt.tensor_type"], &[TENSOR_HANDLE])),
    exact("corert.transfer_inferred_tensortype", ops(&[TENSOR_HANDLE, "!tfrt.device"], &[TENSOR_HANDLE])),
    exact("corert.cond", Form::TensorCond),
    exact("corert.while", Form::TensorWhile),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_match_their_dtype_and_rank_suffixes_only() {
        let add = lookup("tfrt.add.f64").expect("tfrt.add.f64");
        assert_eq!(add.type_text("($t, $t)"), "(f64, f64)");
        assert!(lookup("tfrt.add.i8").is_none());
        let complex = lookup("tfrt.constant.complex128").expect("complex constant");
        assert!(matches!(complex.syntax.form, Form::ComplexConstant));
        assert_eq!(complex.dtype, Some("complex<f64>"));
        let create = lookup("tfrt_dht.create_uninitialized_tensor.bool.4").expect("create");
        assert_eq!((create.dtype, create.rank), (Some("i1"), Some(4)));
        assert!(lookup("tfrt_dht.create_uninitialized_tensor.bool.5").is_none());
        assert_eq!(
            lookup("ts.as_fixed_rank_shape.2").expect("rank").type_text("!ts.fixed_rank_shape.$r"),
            "!ts.fixed_rank_shape.2"
        );
        assert!(lookup("tfrt.minimum.f32").is_none(), "kernels without an op definition stay generic");
    }

    #[test]
    fn bare_names_resolve_through_the_default_dialect() {
        assert_eq!(resolve_bare_name("module", "builtin").as_deref(), Some("builtin.module"));
        assert_eq!(resolve_bare_name("return", "func").as_deref(), Some("func.return"));
        assert_eq!(resolve_bare_name("func", "builtin").as_deref(), Some("func.func"));
        assert_eq!(resolve_bare_name("return", ""), None);
        assert_eq!(short_name("func.return", "func"), "return");
        assert_eq!(short_name("tfrt.return", "func"), "tfrt.return");
        assert_eq!(short_name("func.func", "builtin"), "func.func");
    }
}
