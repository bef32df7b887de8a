//! The `iree.abi.declaration` and `iree.abi.model` reflection attributes of an exported function.
//!
//! The compiler writes the declaration from the *source* function, before lowering, so it keeps
//! what the calling convention has erased: tensor shapes and element types, value names, and
//! whether the function is `async` (the `coarse-fences` model, whose calling convention carries two
//! extra trailing refs, the wait and signal fences, that the declaration does not list). Its form is
//! `sync func @name(%input0: type {attrs}, ...) -> (%output0: type, ...)`; this parser also takes
//! unnamed values, a single unparenthesized result type and a missing `-> (...)`.
//!
//! A frontend may replace the declaration with free text of its own, so callers that only want
//! reflection should treat a parse failure as "not an MLIR declaration", not as a broken module.

use std::fmt;

use super::cconv::{CallingConvention, CconvItem, ValueKind};
use super::{AbiError, AbiText, Dim};

/// The attribute key of the declaration.
pub const DECLARATION_ATTR: &str = "iree.abi.declaration";
/// The attribute key of the invocation model.
pub const MODEL_ATTR: &str = "iree.abi.model";

/// How an export is invoked (`iree.abi.model`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AbiModel {
    /// No attribute: the call returns when the results are ready.
    #[default]
    Sync,
    /// `coarse-fences`: the caller appends a wait fence and a signal fence; the call returns at once
    /// and the results are ready when the signal fence is.
    CoarseFences,
}

impl AbiModel {
    /// The model named by the attribute's value (`None` when the function has no such attribute).
    pub fn from_attr(value: Option<&str>) -> Result<AbiModel, AbiError> {
        match value {
            None => Ok(AbiModel::Sync),
            Some("coarse-fences") => Ok(AbiModel::CoarseFences),
            Some(other) => Err(AbiError::attribute(MODEL_ATTR, other, "unknown ABI model, expected `coarse-fences`")),
        }
    }

    /// The refs the calling convention has after the declared arguments.
    pub fn fence_arguments(self) -> usize {
        match self {
            AbiModel::Sync => 0,
            AbiModel::CoarseFences => 2,
        }
    }
}

/// Whether an MLIR integer type says anything about its sign (`i8` does not, `si8`/`ui8` do).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Signedness {
    Signless,
    Signed,
    Unsigned,
}

/// A builtin scalar type: the value type of a scalar argument or the element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarType {
    Integer { bits: u32, signedness: Signedness },
    Index,
    F16,
    BF16,
    F32,
    F64,
}

/// MLIR's limit on integer widths; wider "types" are not types.
const MAX_INTEGER_BITS: u32 = 1 << 24;

impl ScalarType {
    /// The type `text` spells exactly (`i32`, `ui8`, `index`, `bf16`, ...), if it is one.
    pub fn parse(text: &str) -> Option<ScalarType> {
        match text {
            "index" => return Some(ScalarType::Index),
            "f16" => return Some(ScalarType::F16),
            "bf16" => return Some(ScalarType::BF16),
            "f32" => return Some(ScalarType::F32),
            "f64" => return Some(ScalarType::F64),
            _ => {}
        }
        let (signedness, digits) = if let Some(digits) = text.strip_prefix("si") {
            (Signedness::Signed, digits)
        } else if let Some(digits) = text.strip_prefix("ui") {
            (Signedness::Unsigned, digits)
        } else {
            (Signedness::Signless, text.strip_prefix('i')?)
        };
        if digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let bits: u32 = digits.parse().ok()?;
        (bits <= MAX_INTEGER_BITS).then_some(ScalarType::Integer { bits, signedness })
    }

    /// The register kind a scalar of this type is passed as. The VM widens integers narrower than
    /// 32 bits to i32, and lowers `index` to i64 (the compiler's default index width); `f16`/`bf16`
    /// and integers wider than 64 bits have no VM scalar form.
    pub fn value_kind(self) -> Option<ValueKind> {
        match self {
            ScalarType::Integer { bits: 0..=32, .. } => Some(ValueKind::I32),
            ScalarType::Integer { bits: 33..=64, .. } | ScalarType::Index => Some(ValueKind::I64),
            ScalarType::Integer { .. } | ScalarType::F16 | ScalarType::BF16 => None,
            ScalarType::F32 => Some(ValueKind::F32),
            ScalarType::F64 => Some(ValueKind::F64),
        }
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScalarType::Integer { bits, signedness: Signedness::Signless } => write!(f, "i{bits}"),
            ScalarType::Integer { bits, signedness: Signedness::Signed } => write!(f, "si{bits}"),
            ScalarType::Integer { bits, signedness: Signedness::Unsigned } => write!(f, "ui{bits}"),
            ScalarType::Index => f.write_str("index"),
            ScalarType::F16 => f.write_str("f16"),
            ScalarType::BF16 => f.write_str("bf16"),
            ScalarType::F32 => f.write_str("f32"),
            ScalarType::F64 => f.write_str("f64"),
        }
    }
}

/// A tensor's element type: a scalar, or one kept as text (`complex<f32>`, `f8E4M3FN`, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ElementType {
    Scalar(ScalarType),
    Other(String),
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElementType::Scalar(scalar) => scalar.fmt(f),
            ElementType::Other(text) => f.write_str(text),
        }
    }
}

/// `tensor<4x?xf32>` (rank 0: `tensor<f32>`), optionally with an encoding after a comma.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorType {
    pub dims: Vec<Dim>,
    pub element: ElementType,
    pub encoding: Option<String>,
}

/// The type of one declared argument or result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AbiType {
    Scalar(ScalarType),
    /// Passed as a `!hal.buffer_view` ref.
    Tensor(TensorType),
    BufferView,
    Buffer,
    Fence,
    /// `!vm.list<element>`, the element type kept as text (`?` for any).
    List(String),
    /// Any other dialect type (`!hal.device`, `!util.list<?>`, ...): some ref.
    Opaque(String),
    /// A builtin type this runtime does not interpret (`tuple<...>`, `vector<4xf32>`, `none`).
    Other(String),
}

impl AbiType {
    /// Classifies the type spelled by `text` (nothing else around it).
    pub fn parse(text: &str) -> Result<AbiType, AbiError> {
        classify(text, 0, text)
    }

    /// How a value of this type crosses the call boundary; `None` when that is unknown.
    pub fn value_kind(&self) -> Option<ValueKind> {
        match self {
            AbiType::Scalar(scalar) => scalar.value_kind(),
            AbiType::Tensor(_)
            | AbiType::BufferView
            | AbiType::Buffer
            | AbiType::Fence
            | AbiType::List(_)
            | AbiType::Opaque(_) => Some(ValueKind::Ref),
            AbiType::Other(_) => None,
        }
    }
}

impl fmt::Display for AbiType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AbiType::Scalar(scalar) => scalar.fmt(f),
            AbiType::Tensor(tensor) => {
                f.write_str("tensor<")?;
                for dim in &tensor.dims {
                    write!(f, "{dim}x")?;
                }
                write!(f, "{}", tensor.element)?;
                if let Some(encoding) = &tensor.encoding {
                    write!(f, ", {encoding}")?;
                }
                f.write_str(">")
            }
            AbiType::BufferView => f.write_str("!hal.buffer_view"),
            AbiType::Buffer => f.write_str("!hal.buffer"),
            AbiType::Fence => f.write_str("!hal.fence"),
            AbiType::List(element) => write!(f, "!vm.list<{element}>"),
            AbiType::Opaque(text) | AbiType::Other(text) => f.write_str(text),
        }
    }
}

/// One declared argument or result: `%input0: tensor<4xf32> {iree.abi.encoding = ...}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedType {
    /// Without the `%`; `None` when the declaration lists a bare type.
    pub name: Option<String>,
    pub ty: AbiType,
    /// The text between the braces of a trailing attribute dictionary, uninterpreted.
    pub attributes: Option<String>,
}

impl fmt::Display for NamedType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(name) = &self.name {
            write!(f, "%{name}: ")?;
        }
        write!(f, "{}", self.ty)?;
        if let Some(attributes) = &self.attributes {
            write!(f, " {{{attributes}}}")?;
        }
        Ok(())
    }
}

/// A parsed `iree.abi.declaration`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionDeclaration {
    pub is_async: bool,
    pub name: String,
    pub arguments: Vec<NamedType>,
    pub results: Vec<NamedType>,
}

impl FunctionDeclaration {
    pub fn parse(text: &str) -> Result<FunctionDeclaration, AbiError> {
        let mut parser = Parser { text, pos: 0 };
        parser.skip_whitespace();
        let is_async = if parser.eat_word("sync") {
            false
        } else if parser.eat_word("async") {
            true
        } else {
            return Err(parser.error(parser.pos, format!("expected `sync` or `async`, {}", parser.found())));
        };
        parser.skip_whitespace();
        if !parser.eat_word("func") {
            return Err(parser.error(parser.pos, format!("expected `func`, {}", parser.found())));
        }
        parser.skip_whitespace();
        parser.expect("@")?;
        let name_start = parser.pos;
        let Some(name_length) = parser.rest().find('(') else {
            return Err(parser.error(name_start, "expected `(` after the function name"));
        };
        let name = parser.slice(name_start, name_start + name_length).trim_end();
        if name.is_empty() {
            return Err(parser.error(name_start, "empty function name"));
        }
        parser.pos = name_start + name_length;
        let arguments = parser.list()?;
        parser.skip_whitespace();
        let results = if parser.eat("->") {
            parser.skip_whitespace();
            if parser.peek() == Some('(') {
                parser.list()?
            } else {
                vec![parser.named_type(&['{'])?]
            }
        } else {
            Vec::new()
        };
        parser.skip_whitespace();
        if parser.pos < text.len() {
            return Err(parser.error(parser.pos, format!("unexpected text after the declaration, {}", parser.found())));
        }
        Ok(FunctionDeclaration { is_async, name: name.to_owned(), arguments, results })
    }

    /// Checks that `cconv` passes the declared values: as many arguments (plus the two fences of
    /// an `async` declaration) and results, no spans, and each value of the kind its declared type
    /// lowers to (types whose kind is unknown are not compared).
    pub fn check_calling_convention(&self, cconv: &CallingConvention) -> Result<(), AbiError> {
        let mismatch =
            |message: String| AbiError::Mismatch { declaration: self.to_string(), cconv: cconv.to_string(), message };
        let fences = if self.is_async { AbiModel::CoarseFences } else { AbiModel::Sync }.fence_arguments();
        for (role, declared, extra_refs, items) in
            [("argument", &self.arguments, fences, &cconv.arguments), ("result", &self.results, 0, &cconv.results)]
        {
            if items.len() != declared.len() + extra_refs {
                let fences = if extra_refs > 0 { format!(" (+{extra_refs} fences)") } else { String::new() };
                return Err(mismatch(format!(
                    "{} {role}s declared{fences}, {} in the calling convention",
                    declared.len(),
                    items.len()
                )));
            }
            for (index, item) in items.iter().enumerate() {
                let CconvItem::Value(kind) = *item else {
                    return Err(mismatch(format!("{role} {index} is a variadic span")));
                };
                let expected = match declared.get(index) {
                    Some(named) => named.ty.value_kind(),
                    None => Some(ValueKind::Ref),
                };
                if let Some(expected) = expected.filter(|&expected| expected != kind) {
                    let what = declared.get(index).map_or_else(|| "a fence".to_owned(), |named| format!("`{named}`"));
                    return Err(mismatch(format!(
                        "{role} {index} ({what}) should be `{}`, the calling convention has `{}`",
                        expected.code(),
                        kind.code()
                    )));
                }
            }
        }
        Ok(())
    }
}

fn write_list(f: &mut fmt::Formatter<'_>, values: &[NamedType]) -> fmt::Result {
    f.write_str("(")?;
    for (index, value) in values.iter().enumerate() {
        if index > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{value}")?;
    }
    f.write_str(")")
}

/// Prints the form the compiler writes (results always parenthesized).
impl fmt::Display for FunctionDeclaration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} func @{}", if self.is_async { "async" } else { "sync" }, self.name)?;
        write_list(f, &self.arguments)?;
        f.write_str(" -> ")?;
        write_list(f, &self.results)
    }
}

struct Parser<'t> {
    text: &'t str,
    /// Always at a character boundary of `text`.
    pos: usize,
}

impl<'t> Parser<'t> {
    fn error(&self, offset: usize, message: impl Into<String>) -> AbiError {
        AbiError::syntax(AbiText::Declaration, self.text, offset, message)
    }

    fn slice(&self, start: usize, end: usize) -> &'t str {
        self.text.get(start..end).unwrap_or_default()
    }

    fn rest(&self) -> &'t str {
        self.text.get(self.pos..).unwrap_or_default()
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn found(&self) -> String {
        match self.peek() {
            None => "found the end".to_owned(),
            Some(c) => format!("found `{c}`"),
        }
    }

    fn skip_whitespace(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    fn eat(&mut self, token: &str) -> bool {
        let eaten = self.rest().starts_with(token);
        if eaten {
            self.pos += token.len();
        }
        eaten
    }

    /// Eats `word` only when whitespace follows it (`sync` must not match `syncfunc`).
    fn eat_word(&mut self, word: &str) -> bool {
        let followed_by_space =
            self.rest().strip_prefix(word).and_then(|after| after.chars().next()).is_some_and(char::is_whitespace);
        followed_by_space && self.eat(word)
    }

    fn expect(&mut self, token: &str) -> Result<(), AbiError> {
        if self.eat(token) {
            Ok(())
        } else {
            Err(self.error(self.pos, format!("expected `{token}`, {}", self.found())))
        }
    }

    /// A parenthesized, comma-separated list of values.
    fn list(&mut self) -> Result<Vec<NamedType>, AbiError> {
        self.expect("(")?;
        self.skip_whitespace();
        let mut values = Vec::new();
        if self.eat(")") {
            return Ok(values);
        }
        loop {
            values.push(self.named_type(&[',', ')', '{'])?);
            self.skip_whitespace();
            if self.eat(")") {
                return Ok(values);
            }
            if !self.eat(",") {
                return Err(self.error(self.pos, format!("expected `,` or `)`, {}", self.found())));
            }
        }
    }

    /// `[%name:] type [{attrs}]`, the type ending before the first of `stops` outside brackets.
    fn named_type(&mut self, stops: &[char]) -> Result<NamedType, AbiError> {
        self.skip_whitespace();
        let name = if self.eat("%") {
            let start = self.pos;
            let Some(length) = self.rest().find(':') else {
                return Err(self.error(start - 1, "`%name` without `: type`"));
            };
            let name = self.slice(start, start + length).trim();
            if name.is_empty() {
                return Err(self.error(start, "empty value name"));
            }
            self.pos = start + length + 1;
            self.skip_whitespace();
            Some(name.to_owned())
        } else {
            None
        };
        let type_start = self.pos;
        let type_text = self.scan(stops, false)?.trim_end();
        if type_text.is_empty() {
            self.pos = type_start;
            return Err(self.error(type_start, format!("expected a type, {}", self.found())));
        }
        let ty = classify(self.text, type_start, type_text)?;
        self.skip_whitespace();
        let attributes = if self.peek() == Some('{') {
            let group = self.scan(&[], true)?;
            let inner = group.strip_prefix('{').and_then(|g| g.strip_suffix('}')).unwrap_or(group);
            Some(inner.trim().to_owned())
        } else {
            None
        };
        Ok(NamedType { name, ty, attributes })
    }

    /// Consumes text up to (not including) the first of `stops` outside brackets and quoted
    /// strings, or the end; with `one_group`, exactly the bracket group that starts here.
    fn scan(&mut self, stops: &[char], one_group: bool) -> Result<&'t str, AbiError> {
        let start = self.pos;
        let mut open: Vec<(char, usize)> = Vec::new();
        let mut previous = None;
        let mut chars = self.rest().char_indices();
        while let Some((index, c)) = chars.next() {
            let offset = start + index;
            if open.is_empty() && stops.contains(&c) {
                self.pos = offset;
                return Ok(self.slice(start, offset));
            }
            match c {
                '<' | '(' | '[' | '{' => open.push((c, offset)),
                // The arrow of a function type, not a bracket.
                '>' if previous == Some('-') => {}
                '>' | ')' | ']' | '}' => {
                    let opener = match c {
                        '>' => '<',
                        ')' => '(',
                        ']' => '[',
                        _ => '{',
                    };
                    match open.pop() {
                        Some((found, _)) if found == opener => {}
                        Some((found, at)) => {
                            return Err(self.error(offset, format!("`{c}` closes the `{found}` opened at byte {at}")))
                        }
                        None => return Err(self.error(offset, format!("unbalanced `{c}`"))),
                    }
                    if one_group && open.is_empty() {
                        self.pos = offset + 1;
                        return Ok(self.slice(start, self.pos));
                    }
                }
                '"' => loop {
                    match chars.next() {
                        Some((_, '\\')) => {
                            chars.next();
                        }
                        Some((_, '"')) => break,
                        Some(_) => {}
                        None => return Err(self.error(offset, "unterminated string")),
                    }
                },
                _ => {}
            }
            previous = Some(c);
        }
        if let Some((found, at)) = open.pop() {
            return Err(self.error(at, format!("`{found}` is never closed")));
        }
        self.pos = self.text.len();
        Ok(self.slice(start, self.pos))
    }
}

/// Classifies `ty`, which starts at byte `start` of `text` (for error offsets).
fn classify(text: &str, start: usize, ty: &str) -> Result<AbiType, AbiError> {
    if let Some(scalar) = ScalarType::parse(ty) {
        return Ok(AbiType::Scalar(scalar));
    }
    if let Some(inner) = ty.strip_prefix("tensor<") {
        let Some(inner) = inner.strip_suffix('>') else {
            return Err(AbiError::syntax(AbiText::Declaration, text, start, "text after the tensor type's `>`"));
        };
        return tensor(text, start + "tensor<".len(), inner).map(AbiType::Tensor);
    }
    Ok(match ty {
        "!hal.buffer_view" => AbiType::BufferView,
        "!hal.buffer" => AbiType::Buffer,
        "!hal.fence" => AbiType::Fence,
        _ => match ty.strip_prefix("!vm.list<").and_then(|inner| inner.strip_suffix('>')) {
            Some(element) => AbiType::List(element.to_owned()),
            None if ty.starts_with('!') => AbiType::Opaque(ty.to_owned()),
            None => AbiType::Other(ty.to_owned()),
        },
    })
}

/// Parses the inside of `tensor<...>`, which starts at byte `start` of `text`.
fn tensor(text: &str, start: usize, inner: &str) -> Result<TensorType, AbiError> {
    let error = |offset, message: &str| AbiError::syntax(AbiText::Declaration, text, offset, message);
    let mut depth = 0usize;
    let comma = inner.char_indices().find_map(|(index, c)| {
        match c {
            '<' | '(' | '[' | '{' => depth += 1,
            '>' | ')' | ']' | '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => return Some(index),
            _ => {}
        }
        None
    });
    let (shape, encoding) = match comma {
        Some(index) => (inner.get(..index).unwrap_or_default(), inner.get(index + 1..).map(str::trim)),
        None => (inner, None),
    };
    let mut dims = Vec::new();
    let mut rest = shape.trim_end();
    let mut offset = start;
    loop {
        let length = match rest.chars().next() {
            Some('?') => {
                dims.push(Dim::Dynamic);
                1
            }
            Some('*') => return Err(error(offset, "unranked tensors have no fixed ABI")),
            Some(c) if c.is_ascii_digit() => {
                let length = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
                let size = rest.get(..length).unwrap_or_default();
                let size = size.parse().map_err(|_| error(offset, "dimension does not fit 64 bits"))?;
                dims.push(Dim::Static(size));
                length
            }
            _ => break,
        };
        rest = rest.get(length..).unwrap_or_default();
        offset += length;
        let Some(after) = rest.strip_prefix('x') else {
            return Err(error(offset, "expected `x` after a dimension"));
        };
        rest = after;
        offset += 1;
    }
    if rest.is_empty() {
        return Err(error(offset, "missing element type"));
    }
    let element = ScalarType::parse(rest).map_or_else(|| ElementType::Other(rest.to_owned()), ElementType::Scalar);
    Ok(TensorType { dims, element, encoding: encoding.map(str::to_owned) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> FunctionDeclaration {
        FunctionDeclaration::parse(text).unwrap_or_else(|e| panic!("{e}"))
    }

    fn error_at(text: &str) -> (usize, String) {
        match FunctionDeclaration::parse(text) {
            Err(AbiError::Syntax { what: AbiText::Declaration, offset, message, .. }) => (offset, message),
            other => panic!("`{text}` gave {other:?}"),
        }
    }

    fn named(name: &str, ty: AbiType) -> NamedType {
        NamedType { name: Some(name.to_owned()), ty, attributes: None }
    }

    #[test]
    fn compiler_written_declarations_parse_and_round_trip() {
        let text = "sync func @cast_f32(%input0: f32) -> (%output0: i32, %output1: i32, %output2: i64)";
        let declaration = parse(text);
        assert!(!declaration.is_async);
        assert_eq!(declaration.name, "cast_f32");
        assert_eq!(declaration.arguments, [named("input0", AbiType::Scalar(ScalarType::F32))]);
        assert_eq!(declaration.results.len(), 3);
        assert_eq!(
            declaration.results[2].ty,
            AbiType::Scalar(ScalarType::Integer { bits: 64, signedness: Signedness::Signless })
        );
        assert_eq!(declaration.to_string(), text);

        for text in [
            "sync func @count_three_times() -> (%output0: i32, %output1: i32, %output2: i32)",
            "sync func @dynamicEntry(%input0: tensor<?x8x8x3xf32>, %input1: tensor<?x8x8x3xf32>) -> (%output0: tensor<?x8x8x3xf32>, %output1: tensor<?x8x8x3xf32>)",
            "sync func @exportEncodings(%input0: tensor<?x8x8x3xf32> {iree.abi.encoding = tensor<?x8x8x3xi32>}) -> (%output0: tensor<?x8x8x3xf32> {iree.abi.encoding = tensor<?x8x8x3xi32>})",
            "sync func @outputStorage(%input0: tensor<?x8x8x3xf32>, %input1: !hal.buffer {iree.abi.output = 1 : index}) -> (%output0: tensor<?x8x8x3xf32>, %output1: tensor<?x8x8x3xf32>)",
            "async func @async_add(%input0: tensor<4xf32>, %input1: tensor<4xf32>) -> (%output0: tensor<4xf32>)",
            "sync func @noop() -> ()",
        ] {
            assert_eq!(parse(text).to_string(), text);
        }
    }

    #[test]
    fn types_are_classified() {
        let declaration = parse(
            "async func @f(%a: tensor<4x?xbf16>, %b: tensor<i8>, %c: !hal.buffer_view, %d: !hal.fence, \
             %e: !vm.list<?>, %f: !hal.device, %g: index, %h: ui16, %i: tensor<2xcomplex<f32>, #enc<{a, b}>>, \
             %j: tuple<i32, f32>)",
        );
        let types: Vec<&AbiType> = declaration.arguments.iter().map(|a| &a.ty).collect();
        assert_eq!(
            types[0],
            &AbiType::Tensor(TensorType {
                dims: vec![Dim::Static(4), Dim::Dynamic],
                element: ElementType::Scalar(ScalarType::BF16),
                encoding: None
            })
        );
        assert_eq!(
            types[1],
            &AbiType::Tensor(TensorType {
                dims: vec![],
                element: ElementType::Scalar(ScalarType::Integer { bits: 8, signedness: Signedness::Signless }),
                encoding: None
            })
        );
        assert_eq!(types[2], &AbiType::BufferView);
        assert_eq!(types[3], &AbiType::Fence);
        assert_eq!(types[4], &AbiType::List("?".to_owned()));
        assert_eq!(types[5], &AbiType::Opaque("!hal.device".to_owned()));
        assert_eq!(types[6], &AbiType::Scalar(ScalarType::Index));
        assert_eq!(types[7], &AbiType::Scalar(ScalarType::Integer { bits: 16, signedness: Signedness::Unsigned }));
        assert_eq!(
            types[8],
            &AbiType::Tensor(TensorType {
                dims: vec![Dim::Static(2)],
                element: ElementType::Other("complex<f32>".to_owned()),
                encoding: Some("#enc<{a, b}>".to_owned())
            })
        );
        assert_eq!(types[9], &AbiType::Other("tuple<i32, f32>".to_owned()));
        assert!(declaration.results.is_empty());
        let kinds: Vec<Option<ValueKind>> = types.iter().map(|t| t.value_kind()).collect();
        let (r, i, wide) = (Some(ValueKind::Ref), Some(ValueKind::I32), Some(ValueKind::I64));
        assert_eq!(kinds, [r, r, r, r, r, r, wide, i, r, None]);
    }

    #[test]
    fn scalar_types_and_their_kinds() {
        assert_eq!(ScalarType::parse("i1").and_then(ScalarType::value_kind), Some(ValueKind::I32));
        assert_eq!(ScalarType::parse("si64").and_then(ScalarType::value_kind), Some(ValueKind::I64));
        assert_eq!(ScalarType::parse("f64").and_then(ScalarType::value_kind), Some(ValueKind::F64));
        assert_eq!(ScalarType::parse("f16").map(ScalarType::value_kind), Some(None));
        assert_eq!(ScalarType::parse("i128").map(ScalarType::value_kind), Some(None));
        for not_scalar in ["i", "i0", "i08", "ix", "u8", "i99999999", "f8E4M3FN", ""] {
            assert_eq!(ScalarType::parse(not_scalar), None, "{not_scalar}");
        }
        assert_eq!(AbiType::parse("ui32").unwrap().to_string(), "ui32");
    }

    #[test]
    fn lenient_forms_are_accepted() {
        let declaration = parse("  sync   func @f(i32, tensor<4xf32>) -> i64");
        assert_eq!(declaration.arguments[0].name, None);
        assert_eq!(declaration.results.len(), 1);
        assert_eq!(declaration.to_string(), "sync func @f(i32, tensor<4xf32>) -> (i64)");
        let declaration = parse("sync func @g(%x: i32)");
        assert!(declaration.results.is_empty());
        let declaration = parse("sync func @h() -> tensor<4xf32> {iree.abi.name = \"out}\"}");
        assert_eq!(declaration.results[0].attributes.as_deref(), Some("iree.abi.name = \"out}\""));
        let declaration = parse("sync func @k(%fn: (i32) -> i32)");
        assert_eq!(declaration.arguments[0].ty, AbiType::Other("(i32) -> i32".to_owned()));
    }

    #[test]
    fn malformed_declarations_name_the_offset() {
        assert_eq!(error_at("some.python.thing(x)"), (0, "expected `sync` or `async`, found `s`".to_owned()));
        assert_eq!(error_at("sync"), (0, "expected `sync` or `async`, found `s`".to_owned()));
        assert_eq!(error_at("sync fn @f()"), (5, "expected `func`, found `f`".to_owned()));
        assert_eq!(error_at("sync func f()"), (10, "expected `@`, found `f`".to_owned()));
        assert_eq!(error_at("sync func @f"), (11, "expected `(` after the function name".to_owned()));
        assert_eq!(error_at("sync func @()"), (11, "empty function name".to_owned()));
        assert_eq!(error_at("sync func @f(%a: i32"), (20, "expected `,` or `)`, found the end".to_owned()));
        assert_eq!(error_at("sync func @f(%a: i32 {x} i64)"), (25, "expected `,` or `)`, found `i`".to_owned()));
        assert_eq!(error_at("sync func @f(%a)"), (13, "`%name` without `: type`".to_owned()));
        assert_eq!(error_at("sync func @f(%: i32)"), (14, "empty value name".to_owned()));
        assert_eq!(error_at("sync func @f(%a: )"), (17, "expected a type, found `)`".to_owned()));
        assert_eq!(error_at("sync func @f(%a: i32,)"), (21, "expected a type, found `)`".to_owned()));
        assert_eq!(
            error_at("sync func @f() -> (i32) extra"),
            (24, "unexpected text after the declaration, found `e`".to_owned())
        );
        assert_eq!(error_at("sync func @f() -> i32)"), (21, "unbalanced `)`".to_owned()));
        assert_eq!(error_at("sync func @f(%a: tensor<4xf32)"), (29, "`)` closes the `<` opened at byte 23".to_owned()));
        assert_eq!(error_at("sync func @f() -> tensor<4xf32"), (24, "`<` is never closed".to_owned()));
        assert_eq!(error_at("sync func @f(%a: i32 {x = \"a)"), (26, "unterminated string".to_owned()));
        assert_eq!(error_at("sync func @f(%a: tensor<4xf32>x)"), (17, "text after the tensor type's `>`".to_owned()));
        assert_eq!(error_at("sync func @f(%a: tensor<*xf32>)"), (24, "unranked tensors have no fixed ABI".to_owned()));
        assert_eq!(error_at("sync func @f(%a: tensor<4?xf32>)"), (25, "expected `x` after a dimension".to_owned()));
        assert_eq!(error_at("sync func @f(%a: tensor<4x>)"), (26, "missing element type".to_owned()));
        assert_eq!(
            error_at("sync func @f(%a: tensor<99999999999999999999xf32>)"),
            (24, "dimension does not fit 64 bits".to_owned())
        );
    }

    #[test]
    fn model_attribute() {
        assert_eq!(AbiModel::from_attr(None), Ok(AbiModel::Sync));
        assert_eq!(AbiModel::from_attr(Some("coarse-fences")), Ok(AbiModel::CoarseFences));
        assert_eq!(AbiModel::CoarseFences.fence_arguments(), 2);
        let error = AbiModel::from_attr(Some("fine-fences")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "attribute `iree.abi.model` = `fine-fences`: unknown ABI model, expected `coarse-fences`"
        );
    }

    #[test]
    fn declarations_are_checked_against_calling_conventions() {
        let check = |declaration: &str, cconv: &str| {
            parse(declaration).check_calling_convention(&CallingConvention::parse(cconv).unwrap())
        };
        let message = |result: Result<(), AbiError>| match result {
            Err(AbiError::Mismatch { message, .. }) => message,
            other => panic!("{other:?}"),
        };
        assert_eq!(check("sync func @f(%a: i32, %b: i64) -> (%c: f32)", "0iI_f"), Ok(()));
        assert_eq!(check("sync func @f() -> ()", "0v_v"), Ok(()));
        assert_eq!(check("async func @f(%a: tensor<4xf32>) -> (%b: tensor<4xf32>)", "0rrr_r"), Ok(()));
        assert_eq!(check("sync func @f(%a: tuple<i32>) -> ()", "0I_v"), Ok(()));
        assert_eq!(
            message(check("sync func @f(%a: i32)", "0ii_v")),
            "1 arguments declared, 2 in the calling convention"
        );
        assert_eq!(
            message(check("async func @f(%a: i32)", "0i_v")),
            "1 arguments declared (+2 fences), 1 in the calling convention"
        );
        assert_eq!(
            message(check("sync func @f() -> (%a: i32)", "0v_v")),
            "1 results declared, 0 in the calling convention"
        );
        assert_eq!(
            message(check("sync func @f(%a: i32)", "0I_v")),
            "argument 0 (`%a: i32`) should be `i`, the calling convention has `I`"
        );
        assert_eq!(
            message(check("async func @f(%a: i32)", "0iri_v")),
            "argument 2 (a fence) should be `r`, the calling convention has `i`"
        );
        assert_eq!(message(check("sync func @f(%a: i32)", "0CiD_v")), "argument 0 is a variadic span");
        let error = check("sync func @f(%a: i32)", "0f_v").unwrap_err();
        assert_eq!(
            error.to_string(),
            "declaration `sync func @f(%a: i32) -> ()` does not match calling convention `0f_v`: \
             argument 0 (`%a: i32`) should be `i`, the calling convention has `f`"
        );
    }
}
