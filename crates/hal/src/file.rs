//! `!hal.file`: a source of bytes for `queue.read` (and a target for `queue.write`). Programs make
//! one from their own rodata (`hal.ex.file.from_memory`) when they upload constants instead of
//! importing them.

use std::any::Any;
use std::sync::Arc;

use super::buffer::wrong_type;
use rtx_host::Diagnostic;
use rtx_vm::buffer::ByteBuffer;
use rtx_vm::refs::{Ref, RefObject};

/// A file backed by host memory.
#[derive(Debug)]
pub struct File {
    bytes: Arc<ByteBuffer>,
}

impl RefObject for File {
    fn type_name(&self) -> &'static str {
        "hal.file"
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl File {
    pub fn new(bytes: Arc<ByteBuffer>) -> File {
        File { bytes }
    }

    pub fn bytes(&self) -> &Arc<ByteBuffer> {
        &self.bytes
    }

    pub fn into_ref(self) -> Ref {
        Ref::Object(Arc::new(self))
    }
}

/// The file a ref holds, or INVALID_ARGUMENT naming what was there.
#[inline]
pub fn deref(value: &Ref) -> Result<&File, Diagnostic> {
    value.downcast::<File>().ok_or_else(|| wrong_type("hal.file", value))
}
