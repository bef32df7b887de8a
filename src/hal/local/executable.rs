//! Executables on the CPU: what the loaders (VMVX, native ELF) produce, run one dispatch at a time
//! over bound host memory.

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use super::dispatch_times;
use super::fpu::FlushDenormals;
use crate::hal::backend::ExecutableBackend;
use crate::hal::byte_range::{self, OutOfRange};
use crate::host::Diagnostic;
use crate::vm::buffer::Buffer as Bytes;

/// One dispatch: the grid, the push constants and the bound memory, in binding order.
pub struct Dispatch<'a> {
    pub export: usize,
    pub workgroup_count: [u32; 3],
    pub constants: &'a [u32],
    pub bindings: &'a [BoundBytes<'a>],
}

/// `length` bytes of a buffer from `offset`, bounds-checked: a binding as the command buffer
/// resolved it, borrowed rather than made into a span (which allocates) for every dispatch.
#[derive(Clone, Copy)]
pub struct BoundBytes<'a> {
    bytes: &'a Bytes,
    offset: usize,
    length: usize,
}

impl<'a> BoundBytes<'a> {
    /// The whole of `bytes`.
    pub fn whole(bytes: &'a Bytes) -> BoundBytes<'a> {
        BoundBytes { bytes, offset: 0, length: bytes.len() }
    }

    /// `length` bytes from `offset` within this range; `-1` is the rest.
    #[inline]
    pub fn range(self, offset: i64, length: i64) -> Result<BoundBytes<'a>, OutOfRange> {
        let (offset, length) = byte_range::check(offset, length, self.length)?;
        Ok(BoundBytes { bytes: self.bytes, offset: self.offset + offset, length })
    }

    pub fn buffer(&self) -> &'a Bytes {
        self.bytes
    }

    pub fn offset(&self) -> i64 {
        self.offset as i64
    }

    pub fn len(&self) -> usize {
        self.length
    }

    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    /// The first byte, for native code; writable unless the memory is read-only (rodata bound
    /// where the program does not write: writable imports are copies, `allocator.import`).
    pub fn address(&self) -> *mut u8 {
        let base = self.bytes.as_mut_ptr().unwrap_or(self.bytes.as_ptr().cast_mut());
        base.wrapping_add(self.offset)
    }

    /// The range as a buffer of its own (a span sharing the memory).
    pub fn span(&self) -> Result<Arc<Bytes>, Diagnostic> {
        self.bytes.span(self.offset, self.length)
    }
}

/// What a loader produces: dispatch functions by ordinal.
pub trait ExecutableCode: Send + Sync + fmt::Debug {
    /// Export names, by ordinal (the name `hal.executable.lookup.function` finds).
    fn export_names(&self) -> &[String];

    /// Runs every workgroup of one dispatch.
    fn dispatch(&self, dispatch: &Dispatch<'_>) -> Result<(), Diagnostic>;
}

/// A loaded CPU executable.
#[derive(Debug)]
pub struct LocalExecutable {
    code: Box<dyn ExecutableCode>,
}

impl LocalExecutable {
    pub fn new(code: Box<dyn ExecutableCode>) -> LocalExecutable {
        LocalExecutable { code }
    }

    /// Runs a dispatch (its export ordinal checked by the caller).
    pub fn dispatch(&self, dispatch: &Dispatch<'_>) -> Result<(), Diagnostic> {
        let _mode = FlushDenormals::enter();
        if !dispatch_times::enabled() {
            return self.code.dispatch(dispatch);
        }
        let started = Instant::now();
        let result = self.code.dispatch(dispatch);
        if let Some(export) = self.code.export_names().get(dispatch.export) {
            dispatch_times::record(export, started.elapsed());
        }
        result
    }
}

impl ExecutableBackend for LocalExecutable {
    fn export_names(&self) -> &[String] {
        self.code.export_names()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
