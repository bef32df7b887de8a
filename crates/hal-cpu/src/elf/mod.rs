//! Our loader for the `embedded-elf-x86_64` executables IREE's llvm-cpu backend emits by default:
//! static-PIE shared objects with no dependencies, which IREE loads with its own small loader
//! rather than `dlopen` so that they work the same on every host and need no file system. We do
//! likewise: map the segments into one anonymous mapping, apply the RELA relocations, protect the
//! pages (never writable and executable at once) and resolve the one exported symbol.
//!
//! The bytes are untrusted until they are executed: every offset, size, address and index is
//! checked, and anything malformed is an [`ElfError`] naming what was wrong and where.

mod dynamic;
mod file;
mod image;

use std::io;
use std::ops::Range;

use image::{Mapping, WritableImage};

/// Why an ELF could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    #[error("not an ELF file: magic bytes are {0:02x?}")]
    BadMagic([u8; 4]),
    #[error("unsupported ELF {field} {value}: expected {expected}")]
    Unsupported { field: &'static str, value: u64, expected: &'static str },
    #[error("{what} at 0x{offset:x} (+{size} bytes) lies outside the {limit}-byte range it must fit in")]
    OutOfBounds { what: String, offset: u64, size: u64, limit: u64 },
    #[error("program header {index} is malformed: {problem}")]
    BadSegment { index: usize, problem: &'static str },
    #[error("loadable segments {first} and {second} overlap in memory")]
    OverlappingSegments { first: usize, second: usize },
    #[error(
        "segments {first} and {second} share the page at virtual address 0x{vaddr:x}, which would have \
         to be both writable and executable"
    )]
    WritableExecutablePage { first: usize, second: usize, vaddr: u64 },
    #[error("the ELF has no PT_LOAD segment")]
    NoLoadableSegments,
    #[error("the loaded image would take {size} bytes (limit {limit})")]
    ImageSize { size: u64, limit: u64 },
    #[error("{what} failed: {source}")]
    Os { what: &'static str, source: io::Error },
    #[error("the ELF has no PT_DYNAMIC segment")]
    NoDynamicSegment,
    #[error("dynamic section: {0}")]
    Dynamic(String),
    #[error("the ELF imports symbol `{0}`; embedded executables must be self-contained")]
    UndefinedSymbol(String),
    #[error("relocation {index} of {table}: unsupported x86-64 relocation type {kind}")]
    UnsupportedRelocation { table: &'static str, index: u64, kind: u32 },
    #[error("relocation {index} of {table}: {problem}")]
    BadRelocation { table: &'static str, index: u64, problem: String },
    #[error("{what} points at virtual address 0x{vaddr:x}, outside every executable segment")]
    NotCode { what: String, vaddr: u64 },
    #[error("the ELF does not export `{0}`")]
    MissingSymbol(String),
}

/// A loaded and relocated ELF, ready to run; unmapped on drop.
pub struct ElfModule {
    mapping: Mapping,
    query: usize,
    initializers: Vec<usize>,
}

impl ElfModule {
    /// Maps, relocates and protects `bytes`, and resolves `symbol` (a function). Runs nothing from
    /// the ELF: see [`ElfModule::run_initializers`].
    pub fn load(bytes: &[u8], symbol: &str) -> Result<Self, ElfError> {
        let segments = file::parse(bytes)?;
        let mut image = WritableImage::new(bytes, &segments)?;
        let resolved = dynamic::link(&mut image, &segments, symbol)?;
        let query = image.load_bias().wrapping_add(resolved.query_vaddr) as usize;
        let initializers = resolved.initializer_addresses.into_iter().map(|a| a as usize).collect();
        let mapping = image.protect(&segments)?;
        Ok(ElfModule { mapping, query, initializers })
    }

    /// The address of the symbol named at load, inside an executable segment of this module and
    /// valid for as long as the module lives.
    pub fn symbol_address(&self) -> usize {
        self.query
    }

    /// Runs DT_INIT and then DT_INIT_ARRAY, as IREE's loader does before querying the library
    /// (IREE's compiler emits neither today). Finalizers are never run, as in IREE.
    ///
    /// # Safety
    /// Executes code from the ELF: the caller trusts it.
    pub unsafe fn run_initializers(&self) {
        for &address in &self.initializers {
            // SAFETY: `address` lies in an executable segment of our mapping (checked at load)
            // and the caller trusts the code there to be a `void (void)` function.
            let initializer: unsafe extern "C" fn() = unsafe { std::mem::transmute(address) };
            // SAFETY: see above.
            unsafe { initializer() };
        }
    }

    /// Where the module lies in our address space (for profilers and for tests that check the
    /// page protections).
    pub fn address_range(&self) -> Range<usize> {
        self.mapping.address_range()
    }
}
