//! Why a module could not be written.

/// A module that cannot be written as bytecode of the requested version. Every variant names what
/// stood in the way; nothing is written partially.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    #[error("unsupported bytecode version {0}, must be in range [0, 6]")]
    UnsupportedVersion(u32),
    /// Something the target version cannot express (set `allow_lossy_downgrade` to drop it, as
    /// upstream's writer does).
    #[error("bytecode version {version} cannot express {what} (needs version {needs}; set allow_lossy_downgrade to drop it as upstream does)")]
    NotRepresentable { version: u32, needs: u32, what: String },
    #[error("{kind} of dialect `{dialect}` is held in that dialect's own bytecode encoding, whose references into the file it came from rtx cannot renumber")]
    CustomEncoding { kind: &'static str, dialect: String },
    /// An LLVM attribute that must be written in the dialect's own encoding (it holds a
    /// `distinct` id) but whose text does not read as that attribute.
    #[error("cannot encode `{text}` in the llvm dialect's encoding: {reason}")]
    DialectAttribute { text: String, reason: String },
    #[error("op `{0}` has native properties that rtx could not decode, so they cannot be written to another file")]
    OpaqueProperties(String),
    #[error("op `{op}` has attribute `{name}` both in its properties and in its attribute dictionary, which bytecode version {version} merges")]
    AttributeConflict { op: String, name: String, version: u32 },
    #[error("op `{0}` uses a value that is not defined in it or an enclosing region")]
    ValueNotVisible(String),
    #[error("op `{0}` uses an undefined value")]
    UndefinedValue(String),
    #[error("op `{0}` has a successor outside its own region")]
    SuccessorOutsideRegion(String),
    #[error("top-level op `{0}` has results, which bytecode cannot hold")]
    TopLevelResults(String),
    #[error("resource `{key}` has alignment {alignment}, which is not a power of two")]
    BadResourceAlignment { key: String, alignment: u64 },
    #[error("the module nests regions or attributes more than {0} deep")]
    TooDeep(usize),
    /// A dangling id or similar inconsistency in the in-memory module.
    #[error("malformed module: {0}")]
    Malformed(String),
}
