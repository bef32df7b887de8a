//! [`TensorHandle`]: TFRT's value of Core Runtime — a tensor that may still be computed, with
//! its metadata (element type and shape) as a value of its own, often available before the
//! data, and the device it lives on.

use std::fmt;
use std::sync::Arc;

use rtx_host::{AsyncValueRef, Diagnostic, RcAsyncValue, StatusCode};

use crate::metadata::TensorMetadata;

/// The device name of tensors in host memory.
pub const HOST_DEVICE: &str = "CPU:0";

/// Cheap to clone: two reference counts and a shared name.
#[derive(Clone)]
pub struct TensorHandle {
    /// `None` for the host ([`HOST_DEVICE`]), which needs no name of its own.
    device: Option<Arc<str>>,
    metadata: AsyncValueRef<TensorMetadata>,
    tensor: RcAsyncValue,
}

impl TensorHandle {
    /// A handle of `tensor` (a host tensor, possibly unavailable) whose metadata is `metadata`.
    pub fn new(device: Arc<str>, metadata: AsyncValueRef<TensorMetadata>, tensor: RcAsyncValue) -> TensorHandle {
        TensorHandle { device: Some(device), metadata, tensor }
    }

    /// A handle of `tensor` (a host tensor, possibly unavailable) in host memory.
    pub fn host(metadata: AsyncValueRef<TensorMetadata>, tensor: RcAsyncValue) -> TensorHandle {
        TensorHandle { device: None, metadata, tensor }
    }

    /// A handle of `tensor` on the host whose metadata is taken from the tensor once it is
    /// available (an error tensor gives error metadata).
    pub fn from_tensor(tensor: RcAsyncValue) -> TensorHandle {
        if let Some(known) = TensorMetadata::of_tensor(&tensor) {
            // Available already: no continuation to wait for it.
            return TensorHandle { device: None, metadata: AsyncValueRef::available(known), tensor };
        }
        let metadata = AsyncValueRef::<TensorMetadata>::unconstructed();
        let (slot, source) = (metadata.clone(), tensor.clone());
        tensor.and_then(move || {
            let _ = match source.get_error() {
                Some(error) => slot.as_untyped().set_error(error.clone()),
                None => match TensorMetadata::of_tensor(&source) {
                    Some(known) => slot.emplace(known),
                    None => slot.as_untyped().set_error(Diagnostic::new(
                        StatusCode::InvalidArgument,
                        format!("a tensor handle holds a {}, not a host tensor", source.type_name()),
                    )),
                },
            };
        });
        TensorHandle { device: None, metadata, tensor }
    }

    /// A handle whose metadata and tensor are both `error`.
    pub fn error(error: Diagnostic) -> TensorHandle {
        TensorHandle { device: None, metadata: AsyncValueRef::error(error.clone()), tensor: RcAsyncValue::error(error) }
    }

    pub fn device(&self) -> &str {
        self.device.as_deref().unwrap_or(HOST_DEVICE)
    }

    pub fn metadata(&self) -> &AsyncValueRef<TensorMetadata> {
        &self.metadata
    }

    /// The tensor: a `DenseHostTensor`, `ScalarHostTensor` or `StringHostTensor` once available.
    pub fn tensor(&self) -> &RcAsyncValue {
        &self.tensor
    }
}

impl fmt::Debug for TensorHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TensorHandle")
            .field("device", &self.device)
            .field("metadata", &self.metadata.as_untyped().state())
            .field("tensor", &self.tensor.state())
            .finish()
    }
}
