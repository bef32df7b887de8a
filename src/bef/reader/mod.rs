//! Opening a BEF file: [`BefImage`], a verified, zero-copy view of its sections, and
//! [`BefFile`], an image bound to the kernels of a registry.
//!
//! Reading an image reads the section framing, the string-indexed tables (kernel names, type
//! names, the function index) and every function body, and checks each index the executor will
//! follow: registers, kernels, attributes, functions, and the dataflow graph itself (each
//! register defined once, ready counts that match the user lists, no cycles). Binding resolves
//! kernel names once against a [`KernelRegistry`], native functions by name. Afterwards the
//! executor reads the kernel records in place. The optional sections, which only the
//! disassembler reads, are decoded when asked for ([`BefImage::optional_sections`]). Any defect
//! is a [`BefError`] naming the byte offset; nothing panics.

mod attribute;
mod cursor;
mod error;
mod function;
mod image;
mod kernel_record;
mod location;
mod optional;
mod storage;

use std::path::Path;
use std::sync::Arc;

pub use attribute::{Aggregate, Attribute, AttributeError, CompilationUnit, DenseAttribute, Scalar, ScalarArray};
pub use error::BefError;
pub(crate) use function::FunctionBody;
pub use image::{BefImage, FunctionInfo};
pub use kernel_record::{KernelRecord, Words};
pub use location::{BefLocation, LocationEntry};
pub use optional::OptionalSections;

use crate::bef::format::FunctionKind;
use crate::kernel::{Kernel, KernelRegistry};
use storage::Storage;

/// An open BEF file whose kernels and native functions are resolved. Immutable and shared
/// (`Arc`): functions keep their file alive. It dereferences to its [`BefImage`].
pub struct BefFile {
    image: BefImage,
    kernels: Box<[Kernel]>,
}

impl BefFile {
    /// Maps and opens the file at `path`.
    pub fn open(path: impl AsRef<Path>, registry: &KernelRegistry) -> Result<Arc<BefFile>, BefError> {
        let path = path.as_ref();
        let io = |e: std::io::Error| BefError::Io { path: path.display().to_string(), message: e.to_string() };
        let file = std::fs::File::open(path).map_err(io)?;
        // SAFETY: the mapping is read-only and private; rtx does not defend against another
        // process truncating a module file while it is in use (no loader does).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        BefFile::bind(BefImage::read(Storage::Mapped(map))?, registry)
    }

    /// Opens a BEF file held in memory (copied into aligned memory).
    pub fn from_bytes(bytes: &[u8], registry: &KernelRegistry) -> Result<Arc<BefFile>, BefError> {
        BefFile::bind(BefImage::from_bytes(bytes)?, registry)
    }

    /// Resolves the image's native functions and kernels against `registry`.
    pub fn bind(mut image: BefImage, registry: &KernelRegistry) -> Result<Arc<BefFile>, BefError> {
        for info in image.functions.iter_mut().filter(|info| info.kind == FunctionKind::Native) {
            let native = registry
                .native_function(&info.name)
                .ok_or_else(|| BefError::UnknownNativeFunction(info.name.clone()))?;
            info.native = Some(Arc::clone(native));
        }
        let mut kernels = Vec::with_capacity(image.kernel_names().len());
        for (code, name) in image.kernel_names().iter().enumerate() {
            let Some(kernel) = registry.kernel(name) else {
                let location = image
                    .first_use_of(code as u32)
                    .map_or(BefLocation::Unknown, |offset| image.location(offset))
                    .to_location();
                return Err(BefError::UnknownKernel { name: name.clone(), location });
            };
            kernels.push(kernel.clone());
        }
        Ok(Arc::new(BefFile { image, kernels: kernels.into_boxed_slice() }))
    }

    #[inline]
    pub(crate) fn kernel(&self, code: u32) -> &Kernel {
        &self.kernels[code as usize]
    }
}

impl std::ops::Deref for BefFile {
    type Target = BefImage;
    fn deref(&self) -> &BefImage {
        &self.image
    }
}

impl std::fmt::Debug for BefFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BefFile").field("image", &self.image).finish()
    }
}

#[cfg(test)]
mod tests;
