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

mod cursor;
mod error;
mod function;
mod image;
mod location;
mod optional;
mod storage;

use std::path::Path;
use std::sync::{Arc, OnceLock};

pub use error::BefError;
pub(crate) use function::FunctionBody;
pub use image::{BefImage, FunctionInfo};
pub use location::{BefLocation, LocationEntry};
pub use optional::OptionalSections;

use crate::executor::{KernelSpans, Plan};
use crate::format::FunctionKind;
use rtx_kernel::derived::DerivedCache;
use rtx_kernel::{Kernel, KernelRegistry, NativeFn};

/// A BEF file bound to a kernel registry: its kernels and native functions resolved. Immutable
/// and shared (`Arc`): functions keep their file alive. It dereferences to its [`BefImage`], which
/// several files may share — one verified image, bound once per registry (a runtime context with
/// kernels of its own binds the module's image to its registry).
pub struct BefFile {
    image: Arc<BefImage>,
    kernels: Box<[Kernel]>,
    /// By function index; `Some` for native functions.
    natives: Box<[Option<NativeFn>]>,
    /// By function index: the function's plan, built on its first call (`None` when it has none).
    plans: Box<[OnceLock<Option<Plan>>]>,
    /// What kernels derived from the file's constants.
    pub(crate) derived: DerivedCache,
    /// Its kernels' tracing spans, decoded as they are first traced.
    pub(crate) spans: KernelSpans,
}

impl BefFile {
    /// Maps and opens the file at `path`.
    pub fn open(path: impl AsRef<Path>, registry: &KernelRegistry) -> Result<Arc<BefFile>, BefError> {
        BefFile::bind(&Arc::new(BefImage::open(path)?), registry)
    }

    /// Opens a BEF file held in memory (copied into aligned memory).
    pub fn from_bytes(bytes: &[u8], registry: &KernelRegistry) -> Result<Arc<BefFile>, BefError> {
        BefFile::bind(&Arc::new(BefImage::from_bytes(bytes)?), registry)
    }

    /// Resolves the image's native functions and kernels against `registry`: an unknown kernel
    /// is an error naming it and the location of its first use.
    pub fn bind(image: &Arc<BefImage>, registry: &KernelRegistry) -> Result<Arc<BefFile>, BefError> {
        let natives = image
            .functions
            .iter()
            .map(|info| match info.kind {
                FunctionKind::Native => registry
                    .native_function(&info.name)
                    .map(|native| Some(Arc::clone(native)))
                    .ok_or_else(|| BefError::UnknownNativeFunction(info.name.clone())),
                _ => Ok(None),
            })
            .collect::<Result<Box<[_]>, _>>()?;
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
        let plans = image.functions.iter().map(|_| OnceLock::new()).collect();
        Ok(Arc::new(BefFile {
            image: Arc::clone(image),
            kernels: kernels.into_boxed_slice(),
            natives,
            plans,
            derived: DerivedCache::default(),
            spans: KernelSpans::default(),
        }))
    }

    /// The verified image this file binds.
    pub fn image(&self) -> &Arc<BefImage> {
        &self.image
    }

    #[inline]
    pub(crate) fn kernel(&self, code: u32) -> &Kernel {
        &self.kernels[code as usize]
    }

    /// Where function `index`'s plan is kept (an index the image verified or enumerated).
    pub(crate) fn plan_cell(&self, index: usize) -> &OnceLock<Option<Plan>> {
        &self.plans[index]
    }

    /// The host's code for native function `index` (`None` for functions with a body).
    pub(crate) fn native_function(&self, index: usize) -> Option<&NativeFn> {
        self.natives.get(index)?.as_ref()
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
