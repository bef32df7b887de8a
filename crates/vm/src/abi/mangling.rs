//! IREE's length-prefixed signature mangling (`function_abi.md`): the raw function signature
//! (attribute `f`, version `fv`) that types buffers and scalars, and the structured index path
//! signature (attribute `sip`, version `sipv`) that maps the flat argument list onto nested
//! sequences and dicts, as Python callers pass them.
//!
//! Both are built from one lexical form: a tag character followed either by an integer
//! (`-?[0-9]+`; tags `_` and `a`-`z`) or by a length-prefixed span (tags `A`-`Z`): `length!bytes`,
//! where `length` counts the bytes plus one for the `!`. An empty span is therefore `X1!`.

use std::collections::BTreeMap;
use std::fmt;

use super::{AbiError, AbiText, Dim};

/// How deeply SIP structures may nest. Parsing recurses per level and each level costs only a few
/// bytes of input, so without a bound a long attribute could exhaust the stack.
pub const MAX_SIP_DEPTH: usize = 64;

/// One lexical component: its tag, where the tag is, and its value.
struct Component<'t> {
    tag: char,
    offset: usize,
    value: ComponentValue<'t>,
}

enum ComponentValue<'t> {
    Integer(i64),
    /// The span's bytes (after the `!`) and their offset in the whole text.
    Span(&'t str, usize),
}

/// Reads components from `text[pos..end]`, reporting offsets into the whole `text`.
struct Lexer<'t> {
    what: AbiText,
    text: &'t str,
    pos: usize,
    end: usize,
}

impl<'t> Lexer<'t> {
    fn new(what: AbiText, text: &'t str) -> Lexer<'t> {
        Lexer { what, text, pos: 0, end: text.len() }
    }

    /// A lexer over the contents of a span that starts at `offset`.
    fn nested(&self, contents: &'t str, offset: usize) -> Lexer<'t> {
        Lexer { what: self.what, text: self.text, pos: offset, end: offset + contents.len() }
    }

    fn error(&self, offset: usize, message: impl Into<String>) -> AbiError {
        AbiError::syntax(self.what, self.text, offset, message)
    }

    /// The run of bytes from `start` that `accept` takes (ASCII only, so it ends on a boundary).
    fn run(&self, start: usize, accept: impl Fn(usize, u8) -> bool) -> usize {
        let bytes = self.text.as_bytes().get(start..self.end).unwrap_or_default();
        bytes.iter().enumerate().take_while(|&(index, &byte)| accept(index, byte)).count()
    }

    fn next(&mut self) -> Result<Option<Component<'t>>, AbiError> {
        let offset = self.pos;
        let Some(tag) = self.text.get(offset..self.end).and_then(|rest| rest.chars().next()) else {
            return Ok(None);
        };
        let digits_start = offset + tag.len_utf8();
        if tag == '_' || tag.is_ascii_lowercase() {
            let length = self.run(digits_start, |index, byte| byte.is_ascii_digit() || (index == 0 && byte == b'-'));
            let digits = self.text.get(digits_start..digits_start + length).unwrap_or_default();
            if digits.is_empty() || digits == "-" {
                return Err(self.error(digits_start, format!("tag `{tag}` must be followed by an integer")));
            }
            let value = digits.parse().map_err(|_| self.error(digits_start, "integer does not fit 64 bits"))?;
            self.pos = digits_start + length;
            Ok(Some(Component { tag, offset, value: ComponentValue::Integer(value) }))
        } else if tag.is_ascii_uppercase() {
            let length = self.run(digits_start, |_, byte| byte.is_ascii_digit());
            let bang = digits_start + length;
            let digits = self.text.get(digits_start..bang).unwrap_or_default();
            if digits.is_empty() {
                return Err(self.error(digits_start, format!("span `{tag}` must be followed by a length prefix")));
            }
            if self.text.as_bytes().get(bang).filter(|_| bang < self.end) != Some(&b'!') {
                return Err(self.error(bang, format!("length prefix of span `{tag}` is not followed by `!`")));
            }
            let Ok(span_length) = digits.parse::<usize>() else {
                return Err(self.error(digits_start, "length prefix does not fit in memory"));
            };
            if span_length == 0 {
                return Err(self.error(digits_start, "length prefix 0 does not count the `!`"));
            }
            let contents_start = bang + 1;
            let contents_end = bang.checked_add(span_length).filter(|&end| end <= self.end).ok_or_else(|| {
                self.error(
                    digits_start,
                    format!("span `{tag}` of {span_length} bytes runs past the end at byte {}", self.end),
                )
            })?;
            let Some(contents) = self.text.get(contents_start..contents_end) else {
                return Err(self.error(digits_start, "length prefix ends inside a character"));
            };
            self.pos = contents_end;
            Ok(Some(Component { tag, offset, value: ComponentValue::Span(contents, contents_start) }))
        } else {
            Err(self.error(offset, format!("unknown tag `{tag}`")))
        }
    }

    /// The next component, which must be span `tag` (`what` names it in errors).
    fn expect_span(&mut self, tag: char, what: &str) -> Result<(&'t str, usize), AbiError> {
        let at = self.pos;
        match self.next()? {
            Some(Component { tag: found, value: ComponentValue::Span(contents, offset), .. }) if found == tag => {
                Ok((contents, offset))
            }
            Some(component) => Err(self.error(component.offset, format!("expected the {what} span `{tag}`"))),
            None => Err(self.error(at, format!("missing the {what} span `{tag}`"))),
        }
    }

    fn expect_end(&mut self) -> Result<(), AbiError> {
        match self.next()? {
            None => Ok(()),
            Some(component) => Err(self.error(component.offset, "unexpected text after the results span")),
        }
    }
}

/// Writes the lexical form; the tags passed are the printers' own, so always valid.
fn write_integer(out: &mut String, tag: char, value: i64) {
    out.push(tag);
    out.push_str(&value.to_string());
}

fn write_span(out: &mut String, tag: char, contents: &str) {
    out.push(tag);
    out.push_str(&(contents.len() + 1).to_string());
    out.push('!');
    out.push_str(contents);
}

/// Element type codes of the raw signature (`t` fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MangledScalar {
    F32 = 0,
    F16 = 1,
    F64 = 2,
    BF16 = 3,
    SI8 = 4,
    SI16 = 5,
    SI32 = 6,
    SI64 = 7,
    UI8 = 8,
    UI16 = 9,
    UI32 = 10,
    UI64 = 11,
}

impl MangledScalar {
    const ALL: [MangledScalar; 12] = [
        MangledScalar::F32,
        MangledScalar::F16,
        MangledScalar::F64,
        MangledScalar::BF16,
        MangledScalar::SI8,
        MangledScalar::SI16,
        MangledScalar::SI32,
        MangledScalar::SI64,
        MangledScalar::UI8,
        MangledScalar::UI16,
        MangledScalar::UI32,
        MangledScalar::UI64,
    ];

    pub fn from_code(code: i64) -> Option<MangledScalar> {
        usize::try_from(code).ok().and_then(|code| MangledScalar::ALL.get(code).copied())
    }

    pub fn code(self) -> i64 {
        self as i64
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            MangledScalar::SI8 | MangledScalar::UI8 => 1,
            MangledScalar::F16 | MangledScalar::BF16 | MangledScalar::SI16 | MangledScalar::UI16 => 2,
            MangledScalar::F32 | MangledScalar::SI32 | MangledScalar::UI32 => 4,
            MangledScalar::F64 | MangledScalar::SI64 | MangledScalar::UI64 => 8,
        }
    }
}

/// A buffer (`B`): element type and shape, `d-1` for a dynamic dimension.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BufferType {
    /// `None` when the signature leaves it out, which means f32; kept apart from an explicit
    /// `t0` so that printing gives back the parsed text.
    pub element: Option<MangledScalar>,
    pub dims: Vec<Dim>,
}

impl BufferType {
    pub fn element_type(&self) -> MangledScalar {
        self.element.unwrap_or(MangledScalar::F32)
    }
}

/// One input or result of a raw signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RawType {
    Buffer(BufferType),
    /// `O`: a ref object; the format defines no fields for it.
    RefObject,
    /// `S`: a scalar, f32 when the element type is left out.
    Scalar(Option<MangledScalar>),
    /// `U`: a type the producer could not describe; its bytes are kept as they were.
    Unrecognized(String),
}

/// A raw function signature: `I<len>!<types>R<len>!<types>`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawSignature {
    pub inputs: Vec<RawType>,
    pub results: Vec<RawType>,
}

impl RawSignature {
    pub fn parse(text: &str) -> Result<RawSignature, AbiError> {
        let mut lexer = Lexer::new(AbiText::RawSignature, text);
        let (inputs, inputs_at) = lexer.expect_span('I', "inputs")?;
        let (results, results_at) = lexer.expect_span('R', "results")?;
        lexer.expect_end()?;
        let inputs = parse_raw_types(lexer.nested(inputs, inputs_at))?;
        let results = parse_raw_types(lexer.nested(results, results_at))?;
        Ok(RawSignature { inputs, results })
    }
}

fn parse_raw_types(mut lexer: Lexer<'_>) -> Result<Vec<RawType>, AbiError> {
    let mut types = Vec::new();
    while let Some(component) = lexer.next()? {
        let ComponentValue::Span(contents, at) = component.value else {
            return Err(lexer.error(
                component.offset,
                format!("expected a type span (`B`, `O`, `S`, `U`), found `{}`", component.tag),
            ));
        };
        let ty = match component.tag {
            'B' => RawType::Buffer(parse_type_fields(lexer.nested(contents, at), true)?),
            'S' => RawType::Scalar(parse_type_fields(lexer.nested(contents, at), false)?.element),
            'O' if contents.is_empty() => RawType::RefObject,
            'O' => return Err(lexer.error(at, "ref object spans have no fields")),
            'U' => RawType::Unrecognized(contents.to_owned()),
            tag => return Err(lexer.error(component.offset, format!("unknown type tag `{tag}`"))),
        };
        types.push(ty);
    }
    Ok(types)
}

/// The fields of a buffer (`t`, then `d`s) or, without `dims_allowed`, a scalar (`t` only).
fn parse_type_fields(mut lexer: Lexer<'_>, dims_allowed: bool) -> Result<BufferType, AbiError> {
    let mut buffer = BufferType::default();
    while let Some(component) = lexer.next()? {
        let offset = component.offset;
        let value = match component.value {
            ComponentValue::Integer(value) => value,
            ComponentValue::Span(..) => {
                return Err(lexer.error(offset, format!("unexpected span `{}` in a type", component.tag)))
            }
        };
        match component.tag {
            't' if buffer.element.is_some() => return Err(lexer.error(offset, "second element type")),
            't' if !buffer.dims.is_empty() => return Err(lexer.error(offset, "element type after a dimension")),
            't' => {
                let scalar = MangledScalar::from_code(value)
                    .ok_or_else(|| lexer.error(offset, format!("unknown scalar type code {value}")))?;
                buffer.element = Some(scalar);
            }
            'd' if dims_allowed => buffer.dims.push(match value {
                -1 => Dim::Dynamic,
                _ => Dim::Static(
                    u64::try_from(value).map_err(|_| lexer.error(offset, format!("negative dimension {value}")))?,
                ),
            }),
            tag => return Err(lexer.error(offset, format!("unknown type field `{tag}`"))),
        }
    }
    Ok(buffer)
}

fn encode_raw_types(types: &[RawType]) -> String {
    let mut out = String::new();
    for ty in types {
        let mut fields = String::new();
        match ty {
            RawType::Buffer(buffer) => {
                if let Some(element) = buffer.element {
                    write_integer(&mut fields, 't', element.code());
                }
                for dim in &buffer.dims {
                    let value = match *dim {
                        // A dimension beyond i64 cannot describe memory; print it saturated.
                        Dim::Static(size) => i64::try_from(size).unwrap_or(i64::MAX),
                        Dim::Dynamic => -1,
                    };
                    write_integer(&mut fields, 'd', value);
                }
                write_span(&mut out, 'B', &fields);
            }
            RawType::RefObject => write_span(&mut out, 'O', ""),
            RawType::Scalar(element) => {
                if let Some(element) = element {
                    write_integer(&mut fields, 't', element.code());
                }
                write_span(&mut out, 'S', &fields);
            }
            RawType::Unrecognized(contents) => write_span(&mut out, 'U', contents),
        }
    }
    out
}

impl fmt::Display for RawSignature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        write_span(&mut out, 'I', &encode_raw_types(&self.inputs));
        write_span(&mut out, 'R', &encode_raw_types(&self.results));
        f.write_str(&out)
    }
}

/// A step of an index path: a position in a sequence or a key of a dict.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SipKey {
    Index(u32),
    Name(String),
}

impl fmt::Display for SipKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SipKey::Index(index) => write!(f, "[{index}]"),
            SipKey::Name(name) => write!(f, "[{name:?}]"),
        }
    }
}

/// A node of a SIP structure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SipValue {
    /// `_n`: the n-th value of the flat (raw) argument or result list.
    Raw(u32),
    /// `S`: `k<key>` / value pairs.
    Sequence(Vec<(u32, SipValue)>),
    /// `D`: `K<name>` / value pairs.
    Dict(Vec<(String, SipValue)>),
}

impl SipValue {
    /// Every raw index with the path of keys that leads to it, in structure order. For
    /// `S…!k0_0k1D…!K4!bar_1` that is `[0] → 0` and `[1]["bar"] → 1`.
    pub fn index_paths(&self) -> Vec<(Vec<SipKey>, u32)> {
        let mut paths = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut paths);
        paths
    }

    fn collect_paths(&self, prefix: &mut Vec<SipKey>, out: &mut Vec<(Vec<SipKey>, u32)>) {
        match self {
            SipValue::Raw(index) => out.push((prefix.clone(), *index)),
            SipValue::Sequence(items) => {
                for (key, value) in items {
                    prefix.push(SipKey::Index(*key));
                    value.collect_paths(prefix, out);
                    prefix.pop();
                }
            }
            SipValue::Dict(items) => {
                for (key, value) in items {
                    prefix.push(SipKey::Name(key.clone()));
                    value.collect_paths(prefix, out);
                    prefix.pop();
                }
            }
        }
    }

    /// Builds the structure that puts each raw index at its path (the inverse of
    /// [`SipValue::index_paths`]); `None` for no paths. Keys come out sorted. Fails when a path is
    /// both a leaf and a structure, two leaves share a path, or one level mixes index and name keys.
    pub fn from_paths(paths: &[(Vec<SipKey>, u32)]) -> Result<Option<SipValue>, AbiError> {
        if paths.is_empty() {
            return Ok(None);
        }
        let paths: Vec<(&[SipKey], u32)> = paths.iter().map(|(path, index)| (path.as_slice(), *index)).collect();
        build(&mut Vec::new(), &paths).map(Some)
    }
}

fn path_text(prefix: &[SipKey]) -> String {
    if prefix.is_empty() {
        return "the root".to_owned();
    }
    prefix.iter().map(SipKey::to_string).collect()
}

fn build(prefix: &mut Vec<SipKey>, paths: &[(&[SipKey], u32)]) -> Result<SipValue, AbiError> {
    let error = |message: String| AbiError::Build { what: AbiText::SipSignature, message };
    if let [(path, index)] = paths {
        if path.is_empty() {
            return Ok(SipValue::Raw(*index));
        }
    }
    if paths.iter().any(|(path, _)| path.is_empty()) {
        return Err(error(format!("{} holds a value and something else", path_text(prefix))));
    }
    let mut sequence: BTreeMap<u32, Vec<(&[SipKey], u32)>> = BTreeMap::new();
    let mut dict: BTreeMap<&str, Vec<(&[SipKey], u32)>> = BTreeMap::new();
    for &(path, index) in paths {
        let Some((first, rest)) = path.split_first() else { continue };
        match first {
            SipKey::Index(key) => sequence.entry(*key).or_default().push((rest, index)),
            SipKey::Name(key) => dict.entry(key.as_str()).or_default().push((rest, index)),
        }
    }
    if !sequence.is_empty() && !dict.is_empty() {
        return Err(error(format!("{} mixes index and name keys", path_text(prefix))));
    }
    if dict.is_empty() {
        let mut items = Vec::with_capacity(sequence.len());
        for (key, paths) in sequence {
            prefix.push(SipKey::Index(key));
            items.push((key, build(prefix, &paths)?));
            prefix.pop();
        }
        Ok(SipValue::Sequence(items))
    } else {
        let mut items = Vec::with_capacity(dict.len());
        for (key, paths) in dict {
            prefix.push(SipKey::Name(key.to_owned()));
            items.push((key.to_owned(), build(prefix, &paths)?));
            prefix.pop();
        }
        Ok(SipValue::Dict(items))
    }
}

/// A structured index path signature: `I<len>!<value?>R<len>!<value?>`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SipSignature {
    /// `None` when the span is empty (`I1!`).
    pub inputs: Option<SipValue>,
    pub results: Option<SipValue>,
}

impl SipSignature {
    pub fn parse(text: &str) -> Result<SipSignature, AbiError> {
        let mut lexer = Lexer::new(AbiText::SipSignature, text);
        let (inputs, inputs_at) = lexer.expect_span('I', "inputs")?;
        let (results, results_at) = lexer.expect_span('R', "results")?;
        lexer.expect_end()?;
        Ok(SipSignature {
            inputs: parse_sip_root(lexer.nested(inputs, inputs_at))?,
            results: parse_sip_root(lexer.nested(results, results_at))?,
        })
    }

    /// The signature that maps each raw input and result index to its path.
    pub fn from_paths(inputs: &[(Vec<SipKey>, u32)], results: &[(Vec<SipKey>, u32)]) -> Result<SipSignature, AbiError> {
        Ok(SipSignature { inputs: SipValue::from_paths(inputs)?, results: SipValue::from_paths(results)? })
    }
}

fn parse_sip_root(mut lexer: Lexer<'_>) -> Result<Option<SipValue>, AbiError> {
    let Some(component) = lexer.next()? else { return Ok(None) };
    let value = parse_sip_value(&lexer, component, 0)?;
    match lexer.next()? {
        None => Ok(Some(value)),
        Some(extra) => Err(lexer.error(extra.offset, "a second top-level value")),
    }
}

fn parse_sip_value(lexer: &Lexer<'_>, component: Component<'_>, depth: usize) -> Result<SipValue, AbiError> {
    if depth >= MAX_SIP_DEPTH {
        return Err(lexer.error(component.offset, format!("structures nest deeper than {MAX_SIP_DEPTH} levels")));
    }
    match (component.tag, component.value) {
        ('_', ComponentValue::Integer(index)) => u32::try_from(index)
            .map(SipValue::Raw)
            .map_err(|_| lexer.error(component.offset, format!("raw index {index} is out of range"))),
        (tag @ ('S' | 'D'), ComponentValue::Span(contents, at)) => {
            let mut fields = lexer.nested(contents, at);
            let mut sequence = Vec::new();
            let mut dict = Vec::new();
            while let Some(key) = fields.next()? {
                let key_offset = key.offset;
                match (tag, key.tag, key.value) {
                    ('S', 'k', ComponentValue::Integer(index)) => {
                        let index = u32::try_from(index)
                            .map_err(|_| fields.error(key_offset, format!("sequence key {index} is out of range")))?;
                        sequence.push((index, parse_sip_field(&mut fields, key_offset, depth)?));
                    }
                    ('D', 'K', ComponentValue::Span(name, _)) => {
                        dict.push((name.to_owned(), parse_sip_field(&mut fields, key_offset, depth)?));
                    }
                    (_, found, _) => {
                        let expected = if tag == 'S' { "an integer key `k`" } else { "a string key `K`" };
                        return Err(fields.error(key_offset, format!("expected {expected}, found `{found}`")));
                    }
                }
            }
            Ok(if tag == 'S' { SipValue::Sequence(sequence) } else { SipValue::Dict(dict) })
        }
        (tag, _) => Err(lexer.error(component.offset, format!("expected a value (`_`, `S` or `D`), found `{tag}`"))),
    }
}

/// The value after the key at `key_offset`.
fn parse_sip_field(fields: &mut Lexer<'_>, key_offset: usize, depth: usize) -> Result<SipValue, AbiError> {
    match fields.next()? {
        Some(value) => parse_sip_value(fields, value, depth + 1),
        None => Err(fields.error(key_offset, "key without a value")),
    }
}

fn encode_sip_value(out: &mut String, value: &SipValue) {
    match value {
        SipValue::Raw(index) => write_integer(out, '_', i64::from(*index)),
        SipValue::Sequence(items) => {
            let mut fields = String::new();
            for (key, value) in items {
                write_integer(&mut fields, 'k', i64::from(*key));
                encode_sip_value(&mut fields, value);
            }
            write_span(out, 'S', &fields);
        }
        SipValue::Dict(items) => {
            let mut fields = String::new();
            for (key, value) in items {
                write_span(&mut fields, 'K', key);
                encode_sip_value(&mut fields, value);
            }
            write_span(out, 'D', &fields);
        }
    }
}

impl fmt::Display for SipSignature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        for (tag, value) in [('I', &self.inputs), ('R', &self.results)] {
            let mut contents = String::new();
            if let Some(value) = value {
                encode_sip_value(&mut contents, value);
            }
            write_span(&mut out, tag, &contents);
        }
        f.write_str(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw_error(text: &str) -> (usize, String) {
        match RawSignature::parse(text) {
            Err(AbiError::Syntax { what: AbiText::RawSignature, offset, message, .. }) => (offset, message),
            other => panic!("`{text}` gave {other:?}"),
        }
    }

    fn sip_error(text: &str) -> (usize, String) {
        match SipSignature::parse(text) {
            Err(AbiError::Syntax { what: AbiText::SipSignature, offset, message, .. }) => (offset, message),
            other => panic!("`{text}` gave {other:?}"),
        }
    }

    fn build_error(result: Result<Option<SipValue>, AbiError>) -> String {
        match result {
            Err(AbiError::Build { what: AbiText::SipSignature, message }) => message,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn raw_signatures_parse_and_round_trip() {
        let text = "I15!B11!d10d128d64R15!B11!t6d32d8d64";
        let signature = RawSignature::parse(text).unwrap();
        assert_eq!(
            signature.inputs,
            [RawType::Buffer(BufferType {
                element: None,
                dims: vec![Dim::Static(10), Dim::Static(128), Dim::Static(64)]
            })]
        );
        let RawType::Buffer(result) = &signature.results[0] else { panic!() };
        assert_eq!(result.element_type(), MangledScalar::SI32);
        assert_eq!(result.element_type().size(), 4);
        assert_eq!(signature.to_string(), text);

        for text in [
            "I1!R1!",
            "I15!B11!d-1d128d64R15!B11!t6d-1d8d64",
            "I6!S3!t6R6!S3!t2",
            "I23!O1!B11!d-1d128d64S3!t6R17!B13!t11d32d-1d64",
            "I1!R9!U6!x y z",
            "I4!S1!R1!",
        ] {
            assert_eq!(RawSignature::parse(text).unwrap().to_string(), text);
        }
        let signature = RawSignature::parse("I23!O1!B11!d-1d128d64S3!t6R17!B13!t11d32d-1d64").unwrap();
        assert_eq!(signature.inputs[0], RawType::RefObject);
        assert_eq!(signature.inputs[2], RawType::Scalar(Some(MangledScalar::SI32)));
    }

    #[test]
    fn raw_signatures_are_built_programmatically() {
        let signature = RawSignature {
            inputs: vec![RawType::Buffer(BufferType {
                element: Some(MangledScalar::BF16),
                dims: vec![Dim::Dynamic, Dim::Static(3)],
            })],
            results: vec![RawType::Scalar(None), RawType::RefObject],
        };
        let text = signature.to_string();
        assert_eq!(text, "I11!B8!t3d-1d3R7!S1!O1!");
        assert_eq!(RawSignature::parse(&text).unwrap(), signature);
        assert_eq!(MangledScalar::from_code(11), Some(MangledScalar::UI64));
        assert_eq!(MangledScalar::from_code(12), None);
        assert_eq!(MangledScalar::from_code(-1), None);
    }

    #[test]
    fn malformed_raw_signatures_name_the_offset() {
        assert_eq!(raw_error(""), (0, "missing the inputs span `I`".to_owned()));
        assert_eq!(raw_error("R1!I1!"), (0, "expected the inputs span `I`".to_owned()));
        assert_eq!(raw_error("I1!"), (3, "missing the results span `R`".to_owned()));
        assert_eq!(raw_error("I1!R1!R1!"), (6, "unexpected text after the results span".to_owned()));
        assert_eq!(raw_error("I1!R1!x"), (7, "tag `x` must be followed by an integer".to_owned()));
        assert_eq!(raw_error("I1!R1!x-"), (7, "tag `x` must be followed by an integer".to_owned()));
        assert_eq!(raw_error("I!R1!"), (1, "span `I` must be followed by a length prefix".to_owned()));
        assert_eq!(raw_error("I-1!R1!"), (1, "span `I` must be followed by a length prefix".to_owned()));
        assert_eq!(raw_error("I1R1!"), (2, "length prefix of span `I` is not followed by `!`".to_owned()));
        assert_eq!(raw_error("I0!R1!"), (1, "length prefix 0 does not count the `!`".to_owned()));
        assert_eq!(raw_error("I9!R1!"), (1, "span `I` of 9 bytes runs past the end at byte 6".to_owned()));
        assert_eq!(raw_error("I99999999999999999999999!"), (1, "length prefix does not fit in memory".to_owned()));
        assert_eq!(raw_error("I2!éR1!"), (1, "length prefix ends inside a character".to_owned()));
        assert_eq!(raw_error("I1!R1!#"), (6, "unknown tag `#`".to_owned()));
        assert_eq!(raw_error("I3!d1R1!"), (3, "expected a type span (`B`, `O`, `S`, `U`), found `d`".to_owned()));
        assert_eq!(raw_error("I4!X1!R1!"), (3, "unknown type tag `X`".to_owned()));
        assert_eq!(raw_error("I6!B3!x1R1!"), (6, "unknown type field `x`".to_owned()));
        assert_eq!(raw_error("I6!S3!d1R1!"), (6, "unknown type field `d`".to_owned()));
        assert_eq!(raw_error("I7!B4!t12R1!"), (6, "unknown scalar type code 12".to_owned()));
        assert_eq!(raw_error("I8!B5!t1t2R1!"), (8, "second element type".to_owned()));
        assert_eq!(raw_error("I8!B5!d1t2R1!"), (8, "element type after a dimension".to_owned()));
        assert_eq!(raw_error("I7!B4!d-2R1!"), (6, "negative dimension -2".to_owned()));
        assert_eq!(raw_error("I7!B4!A1!R1!"), (6, "unexpected span `A` in a type".to_owned()));
        assert_eq!(raw_error("I5!O2!xR1!"), (6, "ref object spans have no fields".to_owned()));
        let huge = format!("I26!B22!d{}R1!", "9".repeat(20));
        assert_eq!(raw_error(&huge), (9, "integer does not fit 64 bits".to_owned()));
        // A span may not reach past the span that contains it.
        assert_eq!(raw_error("I4!B9!R1!"), (4, "span `B` of 9 bytes runs past the end at byte 6".to_owned()));
    }

    #[test]
    fn sip_signatures_parse_and_round_trip() {
        let text = "I12!S9!k0_0k1_1R3!_0";
        let signature = SipSignature::parse(text).unwrap();
        assert_eq!(signature.inputs, Some(SipValue::Sequence(vec![(0, SipValue::Raw(0)), (1, SipValue::Raw(1))])));
        assert_eq!(signature.results, Some(SipValue::Raw(0)));
        assert_eq!(signature.to_string(), text);

        let text = "I31!S27!k0D17!K4!bar_1K4!foo_0k1_2R12!S9!k0_0k1_1";
        let signature = SipSignature::parse(text).unwrap();
        assert_eq!(signature.to_string(), text);
        let paths = signature.inputs.as_ref().unwrap().index_paths();
        let name = |n: &str| SipKey::Name(n.to_owned());
        assert_eq!(
            paths,
            [
                (vec![SipKey::Index(0), name("bar")], 1),
                (vec![SipKey::Index(0), name("foo")], 0),
                (vec![SipKey::Index(1)], 2)
            ]
        );
        assert_eq!(SipSignature::parse("I1!R1!").unwrap(), SipSignature::default());
        assert_eq!(SipSignature::default().to_string(), "I1!R1!");
    }

    #[test]
    fn sip_signatures_are_built_from_index_paths() {
        let name = |n: &str| SipKey::Name(n.to_owned());
        let inputs = [
            (vec![SipKey::Index(1)], 2),
            (vec![SipKey::Index(0), name("foo")], 0),
            (vec![SipKey::Index(0), name("bar")], 1),
        ];
        let signature = SipSignature::from_paths(&inputs, &[(vec![], 0)]).unwrap();
        assert_eq!(signature.to_string(), "I31!S27!k0D17!K4!bar_1K4!foo_0k1_2R3!_0");
        let mut round_trip = signature.inputs.as_ref().unwrap().index_paths();
        round_trip.sort();
        let mut expected = inputs.to_vec();
        expected.sort();
        assert_eq!(round_trip, expected);
        assert_eq!(SipValue::from_paths(&[]), Ok(None));

        assert_eq!(
            build_error(SipValue::from_paths(&[(vec![], 0), (vec![], 1)])),
            "the root holds a value and something else"
        );
        assert_eq!(
            build_error(SipValue::from_paths(&[(vec![SipKey::Index(0)], 0), (vec![SipKey::Index(0), name("x")], 1)])),
            "[0] holds a value and something else"
        );
        assert_eq!(
            build_error(SipValue::from_paths(&[
                (vec![name("a"), SipKey::Index(0)], 0),
                (vec![name("a"), name("b")], 1)
            ])),
            "[\"a\"] mixes index and name keys"
        );
        let error = SipSignature::from_paths(&[], &[(vec![], 0), (vec![], 0)]).unwrap_err();
        assert_eq!(error.to_string(), "building a SIP signature: the root holds a value and something else");
    }

    #[test]
    fn malformed_sip_signatures_name_the_offset() {
        assert_eq!(sip_error("I5!_0_1R1!"), (5, "a second top-level value".to_owned()));
        assert_eq!(sip_error("I3!k0R1!"), (3, "expected a value (`_`, `S` or `D`), found `k`".to_owned()));
        assert_eq!(sip_error("I4!_-1R1!"), (3, "raw index -1 is out of range".to_owned()));
        assert_eq!(sip_error("I6!S3!_0R1!"), (6, "expected an integer key `k`, found `_`".to_owned()));
        assert_eq!(sip_error("I6!D3!k0R1!"), (6, "expected a string key `K`, found `k`".to_owned()));
        assert_eq!(sip_error("I6!S3!k0R1!"), (6, "key without a value".to_owned()));
        assert_eq!(sip_error("I9!S6!k-1_0R1!"), (6, "sequence key -1 is out of range".to_owned()));
        assert_eq!(sip_error("I8!D5!K1!_R1!"), (10, "tag `_` must be followed by an integer".to_owned()));
        let mut value = "_0".to_owned();
        for _ in 0..MAX_SIP_DEPTH {
            let mut fields = String::new();
            write_integer(&mut fields, 'k', 0);
            fields.push_str(&value);
            value.clear();
            write_span(&mut value, 'S', &fields);
        }
        let mut text = String::new();
        write_span(&mut text, 'I', &value);
        write_span(&mut text, 'R', "");
        let (_, message) = sip_error(&text);
        assert_eq!(message, format!("structures nest deeper than {MAX_SIP_DEPTH} levels"));
    }
}
