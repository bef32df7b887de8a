//! The LLVM dialect's debug-info enums as their generated printers spell them (`LLVMEnums.td`):
//! `DIFlags` and `DISubprogramFlags` are bit enums printed with `printBitEnumPrimaryGroups` (group
//! cases first, in reverse declaration order, each clearing its bits; then every single-bit case
//! in declaration order), bare when the value is exactly one case and quoted otherwise.

/// `(value, name, is a group case)` in declaration order.
type BitCases = &'static [(u32, &'static str, bool)];

const DI_FLAGS: BitCases = &[
    (1, "Bit0", false),
    (2, "Bit1", false),
    (1, "Private", true),
    (2, "Protected", true),
    (3, "Public", true),
    (1 << 2, "FwdDecl", false),
    (1 << 3, "AppleBlock", false),
    (1 << 4, "ReservedBit4", false),
    (1 << 5, "Virtual", false),
    (1 << 6, "Artificial", false),
    (1 << 7, "Explicit", false),
    (1 << 8, "Prototyped", false),
    (1 << 9, "ObjcClassComplete", false),
    (1 << 10, "ObjectPointer", false),
    (1 << 11, "Vector", false),
    (1 << 12, "StaticMember", false),
    (1 << 13, "LValueReference", false),
    (1 << 14, "RValueReference", false),
    (1 << 15, "ExportSymbols", false),
    // Upstream gives all three inheritance cases bit 16.
    (1 << 16, "SingleInheritance", false),
    (1 << 16, "MultipleInheritance", false),
    (1 << 16, "VirtualInheritance", false),
    (1 << 18, "IntroducedVirtual", false),
    (1 << 19, "BitField", false),
    (1 << 20, "NoReturn", false),
    (1 << 22, "TypePassByValue", false),
    (1 << 23, "TypePassByReference", false),
    (1 << 24, "EnumClass", false),
    (1 << 25, "Thunk", false),
    (1 << 26, "NonTrivial", false),
    (1 << 27, "BigEndian", false),
    (1 << 28, "LittleEndian", false),
    (1 << 29, "AllCallsDescribed", false),
];

const SUBPROGRAM_FLAGS: BitCases = &[
    (1, "Virtual", false),
    (1 << 1, "PureVirtual", false),
    (1 << 2, "LocalToUnit", false),
    (1 << 3, "Definition", false),
    (1 << 4, "Optimized", false),
    (1 << 5, "Pure", false),
    (1 << 6, "Elemental", false),
    (1 << 7, "Recursive", false),
    (1 << 8, "MainSubprogram", false),
    (1 << 9, "Deleted", false),
    (1 << 11, "ObjCDirect", false),
];

/// The printed value: `Some(None)` for zero (the default, left out), `None` for bits no case
/// names (rtx then leaves the entry encoded).
fn bit_enum(cases: BitCases, value: u64) -> Option<Option<String>> {
    if value == 0 {
        return Some(None);
    }
    let all = cases.iter().fold(0u64, |all, &(bits, _, _)| all | u64::from(bits));
    if value & !all != 0 {
        return None;
    }
    let mut rest = value;
    let mut names = Vec::new();
    for &(bits, name, group) in cases.iter().rev() {
        let bits = u64::from(bits);
        if group && rest & bits == bits {
            names.push(name);
            rest &= !bits;
        }
    }
    for &(bits, name, group) in cases {
        let bits = u64::from(bits);
        if !group && rest & bits == bits {
            names.push(name);
        }
    }
    let text = names.join("|");
    let is_case = cases.iter().any(|&(bits, _, _)| u64::from(bits) == value);
    Some(Some(if is_case { text } else { format!("\"{text}\"") }))
}

/// The value of a bit enum as printed (`Definition`, `"Definition|Optimized"`), `None` for a name
/// no case has.
fn parse_bit_enum(cases: BitCases, text: &str) -> Option<u64> {
    let text = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')).unwrap_or(text);
    text.split('|').try_fold(0u64, |value, name| {
        let name = name.trim();
        cases.iter().find(|&&(_, n, _)| n == name).map(|&(bits, _, _)| value | u64::from(bits))
    })
}

/// `DIFlags`, for a `flags = ...` parameter.
pub(crate) fn di_flags(value: u64) -> Option<Option<String>> {
    bit_enum(DI_FLAGS, value)
}

/// `DISubprogramFlags`, for `subprogramFlags = ...`.
pub(crate) fn subprogram_flags(value: u64) -> Option<Option<String>> {
    bit_enum(SUBPROGRAM_FLAGS, value)
}

/// `DIEmissionKind` (`None`, the zero value, is left out).
pub(crate) fn emission_kind(value: u64) -> Option<Option<&'static str>> {
    Some(match value {
        0 => None,
        1 => Some("Full"),
        2 => Some("LineTablesOnly"),
        3 => Some("DebugDirectivesOnly"),
        _ => return None,
    })
}

/// `DINameTableKind` (`Default`, the zero value, is left out).
pub(crate) fn name_table_kind(value: u64) -> Option<Option<&'static str>> {
    Some(match value {
        0 => None,
        1 => Some("GNU"),
        2 => Some("None"),
        3 => Some("Apple"),
        _ => return None,
    })
}

/// The value of a printed `DIFlags`.
pub(crate) fn parse_di_flags(text: &str) -> Option<u64> {
    parse_bit_enum(DI_FLAGS, text)
}

/// The value of a printed `DISubprogramFlags`.
pub(crate) fn parse_subprogram_flags(text: &str) -> Option<u64> {
    parse_bit_enum(SUBPROGRAM_FLAGS, text)
}

/// The value of a printed `DIEmissionKind` or `DINameTableKind`: the value whose printer gives it.
pub(crate) fn parse_kind(print: fn(u64) -> Option<Option<&'static str>>, text: &str) -> Option<u64> {
    (1..16).find(|&v| print(v) == Some(Some(text)))
}
