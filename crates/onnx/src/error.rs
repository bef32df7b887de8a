//! What can go wrong importing a model: a file that is not a valid ONNX model, or a graph that
//! uses what rtx cannot run (named by its node, so a user finds it in the model).

/// An import failure, printed as one line.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The bytes are not a protobuf `ModelProto` (truncated, corrupt, or another format).
    #[error("not a valid ONNX model: {0}")]
    Decode(String),
    /// The model as a whole: its opsets, its graph's inputs and outputs, its initializers.
    #[error("{0}")]
    Model(String),
    /// One node: an attribute or operand that is missing or malformed, shapes that do not fit.
    #[error("node `{node}` ({op}): {message}")]
    Node { node: String, op: String, message: String },
    /// The model uses what rtx cannot run yet outside any node (a graph input's element type).
    #[error("{0}")]
    UnsupportedModel(String),
    /// One node uses what rtx cannot run yet: an operator, a domain, an element type, a form of an
    /// attribute.
    #[error("node `{node}` ({op}): {message}")]
    Unsupported { node: String, op: String, message: String },
    /// Writing the module out.
    #[error("{0}")]
    Write(String),
}

impl ImportError {
    /// The status a loader reports it with: UNIMPLEMENTED for what rtx does not support yet,
    /// INVALID_ARGUMENT for a model that is wrong, INTERNAL for a failure to write it out.
    pub fn status_code(&self) -> rtx_host::StatusCode {
        match self {
            ImportError::Unsupported { .. } | ImportError::UnsupportedModel(_) => rtx_host::StatusCode::Unimplemented,
            ImportError::Decode(_) | ImportError::Model(_) | ImportError::Node { .. } => {
                rtx_host::StatusCode::InvalidArgument
            }
            ImportError::Write(_) => rtx_host::StatusCode::Internal,
        }
    }
}
