//! Why a BEF file could not be turned back into MLIR.

use crate::format::AttributeType;
use crate::reader::BefError;
use rtx_kernel::attribute::AttributeError;
use rtx_mlir::ParseError;

#[derive(Debug, thiserror::Error)]
pub enum DisassembleError {
    /// The file itself is malformed (the reader verifies it before anything is rebuilt).
    #[error(transparent)]
    Bef(#[from] BefError),
    /// An attribute the attribute-types section lists cannot be read as its kind.
    #[error("attribute at offset {offset} of the attributes section, a {kind:?}: {error}")]
    Attribute { offset: u32, kind: AttributeType, error: AttributeError },
    /// A name in the types section that is no MLIR type.
    #[error("type {index} `{name}` of the types section: {error}")]
    Type { index: u32, name: String, error: ParseError },
    /// The module text of a symbol reference into a `tfrt.compiled` module does not parse.
    #[error("compilation unit {id} (symbol @{root}): its module does not parse: {error}")]
    CompilationUnit { id: usize, root: String, error: ParseError },
    /// Each module parses on its own but not one after the other (one ends another's text).
    #[error("the tfrt.compiled modules do not parse together: {0}")]
    CompiledModules(ParseError),
    /// Function bodies that do not nest as regions of kernels do: an anonymous function used
    /// by no kernel or by several, a named one used as a region, nesting that loops.
    #[error("function {index}: {what}")]
    Function { index: usize, what: String },
    /// A kernel that uses a register before any kernel defines it.
    #[error("function {function}, kernel {kernel}: register {register} is used before it is defined")]
    UndefinedRegister { function: usize, kernel: usize, register: u32 },
}
