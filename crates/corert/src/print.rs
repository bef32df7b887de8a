//! How host tensors and tensor handles print, as TFRT prints them (`print_tensorhandle`,
//! `tfrt_test.print`, the logging handler).

use rtx_host::RcAsyncValue;
use rtx_kernel::tensor::{DenseHostTensor, StringHostTensor};

use crate::handle::TensorHandle;
use crate::scalar::ScalarHostTensor;

/// A host tensor's own print; `None` for another payload.
pub fn tensor_text(tensor: &RcAsyncValue) -> Option<String> {
    if let Ok(dense) = tensor.try_get::<DenseHostTensor>() {
        return Some(dense.to_string());
    }
    if let Ok(scalar) = tensor.try_get::<ScalarHostTensor>() {
        return Some(scalar.to_string());
    }
    tensor.try_get::<StringHostTensor>().ok().map(ToString::to_string)
}

/// A handle: its tensor's print once that is there, else what is known of it.
pub fn handle_text(handle: &TensorHandle) -> String {
    let tensor = handle.tensor();
    if let Some(error) = tensor.get_error() {
        return format!("Error TensorHandle: '{}'", error.message);
    }
    if tensor.is_available() {
        return tensor_text(tensor).unwrap_or_else(|| format!("TensorHandle of a {}", tensor.type_name()));
    }
    if let Some(error) = handle.metadata_error() {
        return format!("future TensorHandle with error metadata '{}'", error.message);
    }
    match handle.available_metadata() {
        Some(known) => {
            format!("future TensorHandle with metadata {} {}", rtx_kernel::tensor::dtype_name(known.dtype), known.shape)
        }
        None => "fully future TensorHandle with unresolved metadata".to_owned(),
    }
}
