//! [`TensorHandle`]: TFRT's value of Core Runtime — a tensor that may still be computed, with
//! its metadata (element type and shape) as a value of its own, often available before the
//! data, and the device it lives on.

use std::fmt;
use std::sync::Arc;

use rtx_host::{AsyncValueRef, Diagnostic, RcAsyncValue, StatusCode};

use crate::metadata::TensorMetadata;

/// The device name of tensors in host memory.
pub const HOST_DEVICE: &str = "CPU:0";

/// Cheap to clone: reference counts, a shared name and, when known, the metadata (a small shape
/// is kept inline).
#[derive(Clone)]
pub struct TensorHandle {
    /// `None` for the host ([`HOST_DEVICE`]), which needs no name of its own.
    device: Option<Arc<str>>,
    metadata: Metadata,
    tensor: RcAsyncValue,
}

/// A handle's metadata: inline when known as the handle is made (an op run at once, an
/// available tensor), as TFRT keeps it, so such a handle needs no async value of its own.
#[derive(Clone)]
enum Metadata {
    Known(TensorMetadata),
    Async(AsyncValueRef<TensorMetadata>),
}

impl TensorHandle {
    /// A handle of `tensor` (a host tensor, possibly unavailable) whose metadata is `metadata`.
    pub fn new(device: Arc<str>, metadata: AsyncValueRef<TensorMetadata>, tensor: RcAsyncValue) -> TensorHandle {
        TensorHandle { device: Some(device), metadata: Metadata::Async(metadata), tensor }
    }

    /// A handle of `tensor` (a host tensor, possibly unavailable) in host memory.
    pub fn host(metadata: AsyncValueRef<TensorMetadata>, tensor: RcAsyncValue) -> TensorHandle {
        TensorHandle { device: None, metadata: Metadata::Async(metadata), tensor }
    }

    /// A handle of `tensor` (a host tensor, possibly unavailable) in host memory, whose metadata
    /// is known already.
    pub fn host_with_metadata(metadata: TensorMetadata, tensor: RcAsyncValue) -> TensorHandle {
        TensorHandle { device: None, metadata: Metadata::Known(metadata), tensor }
    }

    /// A handle of `tensor` on the host whose metadata is taken from the tensor once it is
    /// available (an error tensor gives error metadata).
    pub fn from_tensor(tensor: RcAsyncValue) -> TensorHandle {
        if let Some(known) = TensorMetadata::of_tensor(&tensor) {
            // Available already: no continuation to wait for it.
            return TensorHandle::host_with_metadata(known, tensor);
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
        TensorHandle::host(metadata, tensor)
    }

    /// A handle whose metadata and tensor are both `error`.
    pub fn error(error: Diagnostic) -> TensorHandle {
        TensorHandle::host(AsyncValueRef::error(error.clone()), RcAsyncValue::error(error))
    }

    pub fn device(&self) -> &str {
        self.device.as_deref().unwrap_or(HOST_DEVICE)
    }

    /// The metadata as an async value (made for metadata kept inline): for users that wait.
    pub fn async_metadata(&self) -> AsyncValueRef<TensorMetadata> {
        match &self.metadata {
            Metadata::Known(known) => AsyncValueRef::available(known.clone()),
            Metadata::Async(metadata) => metadata.clone(),
        }
    }

    /// Whether the metadata (or its error) is there.
    pub fn is_metadata_available(&self) -> bool {
        match &self.metadata {
            Metadata::Known(_) => true,
            Metadata::Async(metadata) => metadata.as_untyped().is_available(),
        }
    }

    /// The metadata, if it is there and not an error.
    pub fn available_metadata(&self) -> Option<&TensorMetadata> {
        match &self.metadata {
            Metadata::Known(known) => Some(known),
            Metadata::Async(metadata) => metadata.as_untyped().try_get::<TensorMetadata>().ok(),
        }
    }

    /// The metadata's error, if it is there and one.
    pub fn metadata_error(&self) -> Option<&Diagnostic> {
        match &self.metadata {
            Metadata::Known(_) => None,
            Metadata::Async(metadata) => metadata.as_untyped().get_error(),
        }
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
            .field("metadata_available", &self.is_metadata_available())
            .field("tensor", &self.tensor.state())
            .finish()
    }
}
