//! The LLVM dialect's attributes whose bytecode encoding (`LLVMDialectBytecode.td`) is a list of
//! their parameters: each parameter's kind, in declaration order, which is both the order the
//! encoding writes them and the order their `struct(params)` assembly format prints them. The
//! bytecode reader decodes them into upstream's text with this table, and the writer encodes
//! that text back with it.

use super::dwarf::Names;

/// How one parameter is encoded, and how it prints.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Param {
    /// An optional `DistinctAttr` (`distinct[N]<>`).
    Distinct,
    /// An optional attribute printed in full (strings, locations, attributes of a base class).
    Attr,
    Required,
    /// An optional attribute of class `#llvm.<mnemonic>`, printed without that prefix.
    Stripped(&'static str),
    RequiredStripped(&'static str),
    /// A byte, printed `true` when set and left out otherwise ...
    Bool,
    /// ... or always printed.
    BoolAlways,
    /// A varint, left out when 0 ...
    Uint,
    /// ... or always printed, as an unsigned 32-bit value.
    UintAlways,
    /// `writeOptionalInt`: the value with a presence flag in its low bit (an unsigned 32-bit
    /// value when present).
    OptionalUint,
    /// A DWARF constant by name, left out when 0.
    Dwarf(Names),
    /// A compile unit's `DW_LANG_*`: an attribute `#llvm.di_source_language_name<...>` of its own.
    Language,
    /// `DIEmissionKind`, `DINameTableKind`, `DIFlags`, `DISubprogramFlags` by name (see
    /// [`super::llvm_flags`]), left out when 0.
    Emission,
    NameTable,
    DiFlags,
    SubprogramFlags,
    /// `writeOptionalArrayRef` of attributes printed as a bare comma-separated list ...
    List,
    /// ... in brackets ...
    Bracketed,
    /// ... or bare, each without its `#llvm.<mnemonic>` prefix.
    StrippedList(&'static str),
}

use Param as P;

/// `(mnemonic, code, parameters in order)`.
pub(crate) type Spec = (&'static str, u64, &'static [(&'static str, Param)]);

/// The parameter-list attributes: every debug-info attribute that can hold others, and loop
/// annotations. (Basic types, files and expressions have encodings of their own.)
pub(crate) const STRUCTS: &[Spec] = &[
    (
        "di_compile_unit",
        1,
        &[
            ("recId", P::Distinct),
            ("isRecSelf", P::Bool),
            ("id", P::Distinct),
            ("sourceLanguage", P::Language),
            ("file", P::Stripped("di_file")),
            ("producer", P::Attr),
            ("isOptimized", P::Bool),
            ("emissionKind", P::Emission),
            ("isDebugInfoForProfiling", P::Bool),
            ("nameTableKind", P::NameTable),
            ("splitDebugFilename", P::Attr),
            ("importedEntities", P::List),
        ],
    ),
    (
        "di_composite_type",
        2,
        &[
            ("recId", P::Distinct),
            ("isRecSelf", P::Bool),
            ("tag", P::Dwarf(super::dwarf::TAGS)),
            ("name", P::Attr),
            ("file", P::Stripped("di_file")),
            ("line", P::Uint),
            ("scope", P::Attr),
            ("baseType", P::Attr),
            ("flags", P::DiFlags),
            ("sizeInBits", P::Uint),
            ("alignInBits", P::Uint),
            ("dataLocation", P::Stripped("di_expression")),
            ("rank", P::Stripped("di_expression")),
            ("allocated", P::Stripped("di_expression")),
            ("associated", P::Stripped("di_expression")),
            ("identifier", P::Attr),
            ("discriminator", P::Stripped("di_derived_type")),
            ("elements", P::List),
        ],
    ),
    (
        "di_derived_type",
        3,
        &[
            ("tag", P::Dwarf(super::dwarf::TAGS)),
            ("name", P::Attr),
            ("file", P::Stripped("di_file")),
            ("line", P::Uint),
            ("scope", P::Attr),
            ("baseType", P::Attr),
            ("sizeInBits", P::Uint),
            ("alignInBits", P::Uint),
            ("offsetInBits", P::Uint),
            ("dwarfAddressSpace", P::OptionalUint),
            ("flags", P::DiFlags),
            ("extraData", P::Attr),
        ],
    ),
    (
        "di_global_variable",
        7,
        &[
            ("scope", P::Attr),
            ("name", P::Attr),
            ("linkageName", P::Attr),
            ("file", P::RequiredStripped("di_file")),
            ("line", P::UintAlways),
            ("type", P::Required),
            ("isLocalToUnit", P::Bool),
            ("isDefined", P::Bool),
            ("alignInBits", P::Uint),
        ],
    ),
    (
        "di_global_variable_expression",
        8,
        &[("var", P::RequiredStripped("di_global_variable")), ("expr", P::Stripped("di_expression"))],
    ),
    (
        "di_imported_entity",
        9,
        &[
            ("tag", P::Dwarf(super::dwarf::TAGS)),
            ("scope", P::Required),
            ("entity", P::Required),
            ("file", P::Stripped("di_file")),
            ("line", P::Uint),
            ("name", P::Attr),
            ("elements", P::List),
        ],
    ),
    ("di_label", 10, &[("scope", P::Required), ("name", P::Attr), ("file", P::Stripped("di_file")), ("line", P::Uint)]),
    (
        "di_lexical_block",
        11,
        &[("scope", P::Required), ("file", P::Stripped("di_file")), ("line", P::Uint), ("column", P::Uint)],
    ),
    (
        "di_lexical_block_file",
        12,
        &[("scope", P::Required), ("file", P::Stripped("di_file")), ("discriminator", P::UintAlways)],
    ),
    (
        "di_local_variable",
        13,
        &[
            ("scope", P::Required),
            ("name", P::Attr),
            ("file", P::Stripped("di_file")),
            ("line", P::Uint),
            ("arg", P::Uint),
            ("alignInBits", P::Uint),
            ("type", P::Attr),
            ("flags", P::DiFlags),
        ],
    ),
    ("di_namespace", 14, &[("name", P::Attr), ("scope", P::Attr), ("exportSymbols", P::BoolAlways)]),
    (
        "di_subprogram",
        15,
        &[
            ("recId", P::Distinct),
            ("isRecSelf", P::Bool),
            ("id", P::Distinct),
            ("compileUnit", P::Stripped("di_compile_unit")),
            ("scope", P::Attr),
            ("name", P::Attr),
            ("linkageName", P::Attr),
            ("file", P::Stripped("di_file")),
            ("line", P::Uint),
            ("scopeLine", P::Uint),
            ("subprogramFlags", P::SubprogramFlags),
            ("type", P::Stripped("di_subroutine_type")),
            ("retainedNodes", P::Bracketed),
            ("annotations", P::Bracketed),
        ],
    ),
    ("di_subrange", 16, &[("count", P::Attr), ("lowerBound", P::Attr), ("upperBound", P::Attr), ("stride", P::Attr)]),
    (
        "di_subroutine_type",
        17,
        &[("callingConvention", P::Dwarf(super::dwarf::CALLING_CONVENTIONS)), ("types", P::List)],
    ),
    (
        "loop_annotation",
        18,
        &[
            ("disableNonforced", P::Attr),
            ("vectorize", P::Stripped("loop_vectorize")),
            ("interleave", P::Stripped("loop_interleave")),
            ("unroll", P::Stripped("loop_unroll")),
            ("unrollAndJam", P::Stripped("loop_unroll_and_jam")),
            ("licm", P::Stripped("loop_licm")),
            ("distribute", P::Stripped("loop_distribute")),
            ("pipeline", P::Stripped("loop_pipeline")),
            ("peeled", P::Stripped("loop_peeled")),
            ("unswitch", P::Stripped("loop_unswitch")),
            ("mustProgress", P::Attr),
            ("isVectorized", P::Attr),
            ("startLoc", P::Attr),
            ("endLoc", P::Attr),
            ("parallelAccesses", P::StrippedList("access_group")),
        ],
    ),
];

/// The attribute with encoding `code`.
pub(crate) fn by_code(code: u64) -> Option<&'static Spec> {
    STRUCTS.iter().find(|s| s.1 == code)
}

/// The attribute printed `#llvm.<mnemonic><...>`.
pub(crate) fn by_mnemonic(mnemonic: &[u8]) -> Option<&'static Spec> {
    STRUCTS.iter().find(|s| s.0.as_bytes() == mnemonic)
}
