//! Calling-convention strings (`FunctionSignatureDef.calling_convention`), e.g. `0rIIiiCID_r`.
//!
//! The string is a version digit `0`, one character per argument value, `_`, one per result value:
//! `i` i32, `I` i64, `f` f32, `F` f64, `r` a ref, `v` alone for "no values", and `C…D` around the
//! flattened element tuple of a variadic span (imports only, e.g. `hal.command_buffer.dispatch`).
//! Import resolution compares these strings exactly, so [`CallingConvention`]'s `Display` prints the
//! form the compiler writes (`v` for an empty half, `_` always present).

use std::fmt;

use super::{AbiError, AbiText};

/// The most values one half of a calling convention may hold. Bytecode register ordinals are
/// 16-bit, so no function that runs here can take more; the bound keeps every register count of a
/// parsed convention far inside `u32`.
pub const MAX_VALUES_PER_HALF: usize = u16::MAX as usize;

/// The type of one value crossing a call boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueKind {
    I32,
    I64,
    F32,
    F64,
    Ref,
}

impl ValueKind {
    /// The kind a calling-convention character stands for; `None` for `v`, `C`, `D`, `_` and
    /// anything unknown.
    pub fn from_code(code: char) -> Option<ValueKind> {
        match code {
            'i' => Some(ValueKind::I32),
            'I' => Some(ValueKind::I64),
            'f' => Some(ValueKind::F32),
            'F' => Some(ValueKind::F64),
            'r' => Some(ValueKind::Ref),
            _ => None,
        }
    }

    /// The type name messages and tools print (`i32`, `f64`, `ref`).
    pub fn name(self) -> &'static str {
        match self {
            ValueKind::I32 => "i32",
            ValueKind::I64 => "i64",
            ValueKind::F32 => "f32",
            ValueKind::F64 => "f64",
            ValueKind::Ref => "ref",
        }
    }

    pub fn code(self) -> char {
        match self {
            ValueKind::I32 => 'i',
            ValueKind::I64 => 'I',
            ValueKind::F32 => 'f',
            ValueKind::F64 => 'F',
            ValueKind::Ref => 'r',
        }
    }
}

/// One top-level argument or result: a plain value, or a variadic span whose call site passes a
/// count and then that many copies of the element tuple (the `segment_sizes` of `vm.call.variadic`
/// count one entry per item, a whole span being one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CconvItem {
    Value(ValueKind),
    Span(Vec<ValueKind>),
}

/// A parsed calling convention.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallingConvention {
    pub arguments: Vec<CconvItem>,
    pub results: Vec<CconvItem>,
}

impl CallingConvention {
    /// Parses `text`. A missing `_` means no results and an empty half is the same as `v`, as the
    /// IREE runtime reads them; everything else that is not the grammar above is an error naming
    /// the byte offset.
    pub fn parse(text: &str) -> Result<CallingConvention, AbiError> {
        let error = |offset, message: String| AbiError::syntax(AbiText::CallingConvention, text, offset, message);
        let Some(body) = text.strip_prefix('0') else {
            let message = match text.chars().next() {
                None => "empty; expected the version `0`".to_owned(),
                Some(c) => format!("unsupported version `{c}`, expected `0`"),
            };
            return Err(error(0, message));
        };
        let (arguments, results) = match body.split_once('_') {
            Some((arguments, results)) => (arguments, Some(results)),
            None => (body, None),
        };
        let results_start = 1 + arguments.len() + 1;
        let arguments = parse_half(text, 1, arguments, "argument")?;
        let results = match results {
            Some(results) => parse_half(text, results_start, results, "result")?,
            None => Vec::new(),
        };
        Ok(CallingConvention { arguments, results })
    }

    /// Whether any argument or result is a variadic span (only imports have them).
    pub fn has_spans(&self) -> bool {
        self.arguments.iter().chain(&self.results).any(|item| matches!(item, CconvItem::Span(_)))
    }

    /// Where the arguments land in a bytecode callee's frame; `None` if there are spans, which a
    /// bytecode function cannot take.
    pub fn argument_layout(&self) -> Option<RegisterLayout> {
        RegisterLayout::of(&self.arguments)
    }

    /// The same packing for the results, as a bytecode callee returns them.
    pub fn result_layout(&self) -> Option<RegisterLayout> {
        RegisterLayout::of(&self.results)
    }

    /// `(i32 registers, ref registers)` the arguments occupy; `None` if there are spans.
    pub fn argument_registers(&self) -> Option<(u32, u32)> {
        self.argument_layout().map(|layout| (layout.i32_count(), layout.ref_count()))
    }

    /// `(i32 registers, ref registers)` the results occupy; `None` if there are spans.
    pub fn result_registers(&self) -> Option<(u32, u32)> {
        self.result_layout().map(|layout| (layout.i32_count(), layout.ref_count()))
    }
}

/// Parses one half (`half` starts at byte `start` of `text`).
fn parse_half(text: &str, start: usize, half: &str, role: &str) -> Result<Vec<CconvItem>, AbiError> {
    let error = |offset, message: String| AbiError::syntax(AbiText::CallingConvention, text, offset, message);
    if half == "v" {
        return Ok(Vec::new());
    }
    let mut items = Vec::new();
    // The open span: the offset of its `C` and the values seen so far.
    let mut span: Option<(usize, Vec<ValueKind>)> = None;
    let mut value_count = 0usize;
    for (index, c) in half.char_indices() {
        let offset = start + index;
        match c {
            'C' => {
                if let Some((open, _)) = span {
                    return Err(error(offset, format!("`C` inside the variadic span opened at byte {open}")));
                }
                span = Some((offset, Vec::new()));
            }
            'D' => match span.take() {
                None => return Err(error(offset, "`D` closes no variadic span".to_owned())),
                Some((open, values)) if values.is_empty() => {
                    return Err(error(open, "empty variadic span".to_owned()));
                }
                Some((_, values)) => items.push(CconvItem::Span(values)),
            },
            'v' => return Err(error(offset, format!("`v` (no values) must be the only {role} character"))),
            '_' => return Err(error(offset, "a second `_` separator".to_owned())),
            _ => {
                let Some(kind) = ValueKind::from_code(c) else {
                    return Err(error(offset, format!("unknown {role} type character `{c}`")));
                };
                value_count += 1;
                if value_count > MAX_VALUES_PER_HALF {
                    return Err(error(offset, format!("more than {MAX_VALUES_PER_HALF} {role} values")));
                }
                match &mut span {
                    Some((_, values)) => values.push(kind),
                    None => items.push(CconvItem::Value(kind)),
                }
            }
        }
    }
    if let Some((open, _)) = span {
        return Err(error(open, "variadic span `C` is never closed by `D`".to_owned()));
    }
    Ok(items)
}

fn write_half(f: &mut fmt::Formatter<'_>, items: &[CconvItem]) -> fmt::Result {
    if items.is_empty() {
        return f.write_str("v");
    }
    for item in items {
        match item {
            CconvItem::Value(kind) => write!(f, "{}", kind.code())?,
            CconvItem::Span(values) => {
                f.write_str("C")?;
                for kind in values {
                    write!(f, "{}", kind.code())?;
                }
                f.write_str("D")?;
            }
        }
    }
    Ok(())
}

impl fmt::Display for CallingConvention {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("0")?;
        write_half(f, &self.arguments)?;
        f.write_str("_")?;
        write_half(f, &self.results)
    }
}

/// The values of one half of a calling convention when it has no variadic span (bytecode
/// functions never do; only imports of native modules may), else `None`.
pub fn plain_kinds(items: &[CconvItem]) -> Option<Vec<ValueKind>> {
    items
        .iter()
        .map(|item| match item {
            CconvItem::Value(kind) => Some(*kind),
            CconvItem::Span(_) => None,
        })
        .collect()
}

/// Where one value sits in a bytecode frame: `ordinal` indexes the ref bank for
/// [`ValueKind::Ref`] and the i32 bank otherwise (an i64/f64 takes `ordinal` and `ordinal + 1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterSlot {
    pub kind: ValueKind,
    pub ordinal: u32,
}

/// The register placement of one half of a calling convention, computed once per function so that
/// a call copies values slot by slot without re-reading the string.
///
/// The packing is the one IREE 3.13 uses on entry to a bytecode function (iree-notes §1.4): values
/// in order from register 0 of each bank; i32/f32 one register, i64/f64 the next even-aligned
/// pair, refs one ref register.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegisterLayout {
    slots: Vec<RegisterSlot>,
    i32_count: u32,
    ref_count: u32,
}

impl RegisterLayout {
    /// Packs `items`; `None` if one is a span (its length is only known per call) or the values
    /// need more registers than `u32` counts (only possible for a hand-built convention: parsed ones
    /// are bounded by [`MAX_VALUES_PER_HALF`]).
    pub fn of(items: &[CconvItem]) -> Option<RegisterLayout> {
        let mut layout = RegisterLayout { slots: Vec::with_capacity(items.len()), ..RegisterLayout::default() };
        for item in items {
            let CconvItem::Value(kind) = *item else { return None };
            let ordinal = match kind {
                ValueKind::I32 | ValueKind::F32 => {
                    let ordinal = layout.i32_count;
                    layout.i32_count = ordinal.checked_add(1)?;
                    ordinal
                }
                ValueKind::I64 | ValueKind::F64 => {
                    let ordinal = layout.i32_count.checked_next_multiple_of(2)?;
                    layout.i32_count = ordinal.checked_add(2)?;
                    ordinal
                }
                ValueKind::Ref => {
                    let ordinal = layout.ref_count;
                    layout.ref_count = ordinal.checked_add(1)?;
                    ordinal
                }
            };
            layout.slots.push(RegisterSlot { kind, ordinal });
        }
        Some(layout)
    }

    /// One slot per value, in calling-convention order.
    pub fn slots(&self) -> &[RegisterSlot] {
        &self.slots
    }

    /// i32 registers the values span (pairs and alignment holes included).
    pub fn i32_count(&self) -> u32 {
        self.i32_count
    }

    pub fn ref_count(&self) -> u32 {
        self.ref_count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> CallingConvention {
        CallingConvention::parse(text).unwrap_or_else(|e| panic!("{e}"))
    }

    fn error_at(text: &str) -> (usize, String) {
        match CallingConvention::parse(text) {
            Err(AbiError::Syntax { what: AbiText::CallingConvention, offset, message, .. }) => (offset, message),
            other => panic!("`{text}` gave {other:?}"),
        }
    }

    #[test]
    fn canonical_strings_round_trip() {
        for text in ["0v_v", "0i_i", "0rIIiiCID_r", "0rrIiiiICiDCiirIID_v", "0I_iIf", "0iICrD_i", "0fF_F"] {
            assert_eq!(parse(text).to_string(), text);
        }
    }

    #[test]
    fn lenient_forms_print_canonically() {
        assert_eq!(parse("0").to_string(), "0v_v");
        assert_eq!(parse("0i").to_string(), "0i_v");
        assert_eq!(parse("0_").to_string(), "0v_v");
        assert_eq!(parse("0_r").to_string(), "0v_r");
    }

    #[test]
    fn spans_group_their_values() {
        let cconv = parse("0rrIiiiICiDCiirIID_v");
        assert_eq!(cconv.arguments.len(), 9);
        assert_eq!(cconv.arguments[7], CconvItem::Span(vec![ValueKind::I32]));
        assert_eq!(
            cconv.arguments[8],
            CconvItem::Span(vec![ValueKind::I32, ValueKind::I32, ValueKind::Ref, ValueKind::I64, ValueKind::I64])
        );
        assert!(cconv.results.is_empty());
        assert!(cconv.has_spans());
        assert_eq!(cconv.argument_registers(), None);
        assert_eq!(cconv.result_registers(), Some((0, 0)));
        assert!(!parse("0rI_r").has_spans());
        assert!(parse("0v_CiD").has_spans());
    }

    #[test]
    fn wide_values_take_even_aligned_pairs() {
        let cconv = parse("0iIfrI_Ifi");
        let layout = cconv.argument_layout().unwrap();
        let slots: Vec<(ValueKind, u32)> = layout.slots().iter().map(|s| (s.kind, s.ordinal)).collect();
        assert_eq!(
            slots,
            [(ValueKind::I32, 0), (ValueKind::I64, 2), (ValueKind::F32, 4), (ValueKind::Ref, 0), (ValueKind::I64, 6)]
        );
        assert_eq!(cconv.argument_registers(), Some((8, 1)));
        assert_eq!(cconv.result_registers(), Some((4, 0)));
        assert_eq!(parse("0FfF_v").argument_registers(), Some((6, 0)));
        assert_eq!(parse("0v_v").argument_registers(), Some((0, 0)));
    }

    #[test]
    fn layout_of_hand_built_items_rejects_spans() {
        assert_eq!(RegisterLayout::of(&[CconvItem::Span(vec![ValueKind::I32])]), None);
        assert_eq!(RegisterLayout::of(&[]), Some(RegisterLayout::default()));
    }

    #[test]
    fn malformed_strings_name_offset_and_character() {
        assert_eq!(error_at(""), (0, "empty; expected the version `0`".to_owned()));
        assert_eq!(error_at("1i_i"), (0, "unsupported version `1`, expected `0`".to_owned()));
        assert_eq!(error_at("0ix_i"), (2, "unknown argument type character `x`".to_owned()));
        assert_eq!(error_at("0i_iq"), (4, "unknown result type character `q`".to_owned()));
        assert_eq!(error_at("0i_é"), (3, "unknown result type character `é`".to_owned()));
        assert_eq!(error_at("0iv_i"), (2, "`v` (no values) must be the only argument character".to_owned()));
        assert_eq!(error_at("0i_vv"), (3, "`v` (no values) must be the only result character".to_owned()));
        assert_eq!(error_at("0i_i_i"), (4, "a second `_` separator".to_owned()));
        assert_eq!(error_at("0CiCiDD_v"), (3, "`C` inside the variadic span opened at byte 1".to_owned()));
        assert_eq!(error_at("0iD_v"), (2, "`D` closes no variadic span".to_owned()));
        assert_eq!(error_at("0rCD_v"), (2, "empty variadic span".to_owned()));
        assert_eq!(error_at("0rCii_v"), (2, "variadic span `C` is never closed by `D`".to_owned()));
        assert_eq!(error_at("0v_rCi"), (4, "variadic span `C` is never closed by `D`".to_owned()));
        assert_eq!(error_at("0CvD_v"), (2, "`v` (no values) must be the only argument character".to_owned()));
    }

    #[test]
    fn too_many_values_are_rejected() {
        let text = format!("0{}_v", "i".repeat(MAX_VALUES_PER_HALF + 1));
        assert_eq!(
            error_at(&text),
            (MAX_VALUES_PER_HALF + 1, format!("more than {MAX_VALUES_PER_HALF} argument values"))
        );
        let text = format!("0{}_v", "I".repeat(MAX_VALUES_PER_HALF));
        assert_eq!(parse(&text).argument_registers(), Some((2 * MAX_VALUES_PER_HALF as u32, 0)));
    }

    #[test]
    fn error_message_shows_text_and_offset() {
        let error = CallingConvention::parse("0ix").unwrap_err();
        assert_eq!(error.to_string(), "calling convention `0ix`, byte 2: unknown argument type character `x`");
    }
}
