//! The byte layout of a BEF file, defined once: magic, section ids, function kinds, element and
//! attribute type codes, the kernel record's header, and BEF's variable-length integers.
//!
//! A file is the magic `0B EF`, a version byte (only `00` exists), then sections until the end:
//! `id:u8`, `vbr(length << 1 | has_alignment)`, when `has_alignment` an `alignment:u8` and
//! [`PADDING`] bytes up to an address that is a multiple of it, then `length` body bytes.
//! `docs/FORMATS.md` describes every section body.

/// The first two bytes of every BEF file.
pub const MAGIC: [u8; 2] = [0x0B, 0xEF];
/// The only version of the format.
pub const VERSION: u8 = 0;
/// The byte the writer pads with (alignment of sections, function bodies, attributes).
pub const PADDING: u8 = 0xCC;
/// A BEF file must be loaded at an address that is a multiple of this: attributes and kernel
/// records are read in place at their natural alignment.
pub const FILE_ALIGNMENT: usize = 8;
/// Kernel records are sequences of little-endian `u32` words, 4-aligned within the file.
pub const KERNEL_ENTRY_ALIGNMENT: usize = 4;
/// The largest alignment an attribute asks for (dense elements and shapes hold `i64`s).
pub const ATTRIBUTE_MAX_ALIGNMENT: usize = 8;

/// The first kernel of every function is a pseudo kernel that stands for the function's
/// arguments; these are its `code` and `location` words.
pub const PSEUDO_KERNEL_CODE: u32 = 0xABAB_ABAB;
pub const PSEUDO_KERNEL_LOCATION: u32 = 0xCDCD_CDCD;

rtx_kernel::code_enum! {
    /// Section ids in the order the writer emits them. Sections 8–10 are optional: the executor
    /// never reads them; they let `bef_to_mlir` print attribute types, names and register types.
    SectionId {
        Strings = 0,
        Attributes = 1,
        Kernels = 2,
        Types = 3,
        FunctionIndex = 4,
        Functions = 5,
        LocationStrings = 6,
        Locations = 7,
        AttributeTypes = 8,
        AttributeNames = 9,
        RegisterTypes = 10,
    }
}

impl SectionId {
    /// The alignment the writer gives the section's body.
    pub fn alignment(self) -> usize {
        match self {
            SectionId::Attributes => ATTRIBUTE_MAX_ALIGNMENT,
            SectionId::Functions => KERNEL_ENTRY_ALIGNMENT,
            _ => 1,
        }
    }
}

rtx_kernel::code_enum! {
    /// What a function-index entry describes.
    FunctionKind {
        /// Registers and kernels run by the dataflow executor.
        Async = 0,
        /// Code supplied by the host, found by name at load; no body in the file.
        Native = 1,
        /// Registers and kernels run in order by the straight-line interpreter.
        Sync = 2,
    }
}

pub use rtx_kernel::attribute::{AttributeType, ARRAY_ATTRIBUTE_FLAG};
pub use rtx_kernel::dtype::DType;
pub use rtx_kernel::record::KERNEL_HEADER_WORDS;
pub use rtx_kernel::vbr;
