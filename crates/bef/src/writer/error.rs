//! What BEF cannot encode, each error naming the op and its location.

use rtx_mlir::text::print::PrintError;

/// An op and its location (`"file.mlir":3:5`, as `loc(...)` holds it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    pub op: String,
    pub location: String,
}

impl std::fmt::Display for Site {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: `{}`", self.location, self.op)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// The source text of [`super::mlir_text_to_bef`] is not MLIR.
    #[error(transparent)]
    Parse(#[from] rtx_mlir::ParseError),
    #[error("expected one top-level `builtin.module`")]
    NotOneModule,
    #[error("{0}: return op must be at the end of its block")]
    ReturnNotLast(Site),
    #[error("{0}: BEF executor only supports references to kernels within the current region")]
    OuterValue(Site),
    #[error("{0}: external functions are not allowed")]
    ExternalFunction(Site),
    #[error("{0}: all functions need to have a tfrt.return")]
    MissingReturn(Site),
    #[error("{site}: return value {index} is an argument in a sync function")]
    SyncReturnsArgument { site: Site, index: usize },
    #[error("{site}: return value {index} is duplicated in a sync function")]
    SyncReturnsDuplicate { site: Site, index: usize },
    #[error("{0}: multi-block regions cannot be emitted to BEF files")]
    MultiBlockRegion(Site),
    #[error("{0}: a region must end with tfrt.return, whose operands are its results")]
    RegionWithoutReturn(Site),
    #[error("{site}: BEF files cannot encode the '{name}' attribute")]
    UnsupportedAttribute { site: Site, name: String },
    #[error("{site}: function {symbol} not defined")]
    UndefinedFunction { site: Site, symbol: String },
    #[error("{0}: the cost attribute `_tfrt_cost` must be a positive integer")]
    BadCost(Site),
    #[error(transparent)]
    Print(#[from] PrintError),
}
