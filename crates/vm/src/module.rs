//! A loaded, verified, immutable `.vmfb` module.
//!
//! The file's bytes stay where they are (a read-only mapping, or one 64-byte-aligned copy for
//! in-memory input) for the module's lifetime, because rodata (`vm.const.ref.rodata`, executables
//! handed to the HAL) aliases them instead of copying. A `Module` is `Send + Sync`; share it across
//! contexts and threads with `Arc<Module>`.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use super::bytecode::verify::{verify_function, ModuleContext};
use super::container::SEGMENT_ALIGNMENT;
use super::error::LoadError;
use super::interpreter::lower::{lower_module, LoweredFunction};
use super::module_def::{
    Attr, BytecodeVersion, DebugDatabase, Dependency, ExportFunction, FeatureBits, FunctionDescriptor,
    FunctionSignature, ImportFunction, ModuleDef, ModuleState, RodataSegmentDef, RwdataSegment, TypeDef,
};

/// Where a module's bytes live.
enum Storage {
    Mapped(memmap2::Mmap),
    /// A copy placed at a 64-byte-aligned address inside an over-allocated vector, so that rodata
    /// keeps the alignment the compiler gave it relative to the file start. Safe code cannot ask
    /// the allocator for 64-byte alignment of a byte buffer, so it over-allocates and offsets.
    Owned {
        buffer: Vec<u8>,
        start: usize,
        len: usize,
    },
}

impl Storage {
    fn copy_aligned(bytes: &[u8]) -> Storage {
        let mut buffer: Vec<u8> = Vec::with_capacity(bytes.len() + SEGMENT_ALIGNMENT);
        let start = buffer.as_ptr().align_offset(SEGMENT_ALIGNMENT).min(SEGMENT_ALIGNMENT);
        buffer.resize(start, 0);
        buffer.extend_from_slice(bytes);
        Storage::Owned { buffer, start, len: bytes.len() }
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Storage::Mapped(map) => map,
            Storage::Owned { buffer, start, len } => {
                start.checked_add(*len).and_then(|end| buffer.get(*start..end)).unwrap_or_default()
            }
        }
    }
}

/// An immutable, fully verified bytecode module.
pub struct Module {
    storage: Storage,
    def: ModuleDef,
    /// Every internal function, lowered for the interpreter (1:1 with the descriptors).
    functions: Vec<LoweredFunction>,
    /// The names of the functions' tracing spans (`module.function`), made at the first traced
    /// call.
    span_names: OnceLock<Box<[Arc<str>]>>,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Module").field("name", &self.def.name).field("bytes", &self.bytes().len()).finish()
    }
}

/// One read-only data segment, borrowed from the module's file bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RodataSegment<'m> {
    /// The segment's bytes.
    pub data: &'m [u8],
    /// Absolute file offset of the first byte.
    pub offset: usize,
    /// Whether the bytes live after the FlatBuffer (executables) rather than inside it.
    pub is_external: bool,
}

impl Module {
    /// Maps `path` read-only and loads it.
    pub fn load_file(path: impl AsRef<Path>) -> Result<Module, LoadError> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|e| LoadError::io(path, &e))?;
        let len = file.metadata().map_err(|e| LoadError::io(path, &e))?.len();
        if len == 0 {
            return Err(LoadError::truncated(0, format!("`{}` is empty", path.display())));
        }
        // SAFETY: the mapping is read-only and private to this module. Like every mmap-based
        // loader (IREE's included), we rely on the file not being modified while it is mapped;
        // another process truncating or rewriting it is outside what safe code can prevent.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| LoadError::io(path, &e))?;
        Module::from_storage(Storage::Mapped(map))
    }

    /// Copies `bytes` into a 64-byte-aligned buffer owned by the module and loads it.
    pub fn load_memory(bytes: &[u8]) -> Result<Module, LoadError> {
        Module::from_storage(Storage::copy_aligned(bytes))
    }

    fn from_storage(storage: Storage) -> Result<Module, LoadError> {
        let def = ModuleDef::parse(storage.bytes())?;
        // A module the verifier rejects never runs: verify every internal function's bytecode.
        let context = ModuleContext::from_def(&def);
        for (ordinal, (descriptor, signature)) in
            def.function_descriptors.iter().zip(&def.function_signatures).enumerate()
        {
            let start = def.bytecode_data.offset + descriptor.bytecode_offset as usize;
            let end = start + descriptor.bytecode_length as usize;
            let bytecode = storage.bytes().get(start..end).unwrap_or_default();
            verify_function(&context, ordinal, descriptor, signature, bytecode)
                .map_err(|error| LoadError { offset: start + error.offset, ..error })?;
        }
        let functions = lower_module(&def, storage.bytes())?;
        Ok(Module { storage, def, functions, span_names: OnceLock::new() })
    }

    /// The internal functions, lowered and checked; indexed by internal ordinal.
    pub fn functions(&self) -> &[LoweredFunction] {
        &self.functions
    }

    /// A name for internal function `ordinal` in messages: its export name, else its name in the
    /// debug database, else its ordinal.
    pub fn function_name(&self, ordinal: usize) -> String {
        if let Some(export) = self.def.exported_functions.iter().find(|e| e.internal_ordinal as usize == ordinal) {
            return export.local_name.clone();
        }
        format!("function#{ordinal}")
    }

    /// The name of function `ordinal`'s tracing spans: `module.function`.
    pub(crate) fn span_name(&self, ordinal: usize) -> Arc<str> {
        let names = self.span_names.get_or_init(|| {
            let name = |ordinal| Arc::from(format!("{}.{}", self.name(), self.function_name(ordinal)));
            (0..self.functions.len()).map(name).collect()
        });
        names.get(ordinal).cloned().unwrap_or_else(|| Arc::from(format!("{}.function#{ordinal}", self.name())))
    }

    /// The whole file, as loaded.
    pub fn bytes(&self) -> &[u8] {
        self.storage.bytes()
    }

    /// Everything decoded from the FlatBuffer (the accessors below are shortcuts into it).
    pub fn def(&self) -> &ModuleDef {
        &self.def
    }

    pub fn name(&self) -> &str {
        &self.def.name
    }

    pub fn version(&self) -> u32 {
        self.def.version
    }

    pub fn requirements(&self) -> FeatureBits {
        self.def.requirements
    }

    pub fn bytecode_version(&self) -> BytecodeVersion {
        self.def.bytecode_version
    }

    pub fn attrs(&self) -> &[Attr] {
        &self.def.attrs
    }

    pub fn types(&self) -> &[TypeDef] {
        &self.def.types
    }

    pub fn dependencies(&self) -> &[Dependency] {
        &self.def.dependencies
    }

    pub fn imported_functions(&self) -> &[ImportFunction] {
        &self.def.imported_functions
    }

    pub fn exported_functions(&self) -> &[ExportFunction] {
        &self.def.exported_functions
    }

    /// Signatures of internal functions, indexed by internal ordinal.
    pub fn function_signatures(&self) -> &[FunctionSignature] {
        &self.def.function_signatures
    }

    /// Descriptors of internal functions, indexed by internal ordinal.
    pub fn function_descriptors(&self) -> &[FunctionDescriptor] {
        &self.def.function_descriptors
    }

    pub fn module_state(&self) -> ModuleState {
        self.def.module_state
    }

    pub fn rwdata_segments(&self) -> &[RwdataSegment] {
        &self.def.rwdata_segments
    }

    pub fn debug_database(&self) -> Option<&DebugDatabase> {
        self.def.debug_database.as_ref()
    }

    /// File offset external rodata offsets are relative to.
    pub fn rodata_base(&self) -> usize {
        self.def.rodata_base
    }

    pub fn is_zip(&self) -> bool {
        self.def.is_zip
    }

    /// The export named `local_name`, if any.
    pub fn lookup_export(&self, local_name: &str) -> Option<&ExportFunction> {
        self.def.exported_functions.iter().find(|e| e.local_name == local_name)
    }

    /// The signature of an export (its internal function's signature; verified to exist).
    pub fn export_signature(&self, export: &ExportFunction) -> Option<&FunctionSignature> {
        self.def.function_signatures.get(export.internal_ordinal as usize)
    }

    pub fn rodata_segment_count(&self) -> usize {
        self.def.rodata_segments.len()
    }

    /// Rodata segment `ordinal` (the operand of `vm.const.ref.rodata`).
    pub fn rodata_segment(&self, ordinal: usize) -> Option<RodataSegment<'_>> {
        self.def.rodata_segments.get(ordinal).map(|segment| self.view(segment))
    }

    pub fn rodata_segments(&self) -> impl ExactSizeIterator<Item = RodataSegment<'_>> + '_ {
        self.def.rodata_segments.iter().map(|segment| self.view(segment))
    }

    fn view(&self, segment: &RodataSegmentDef) -> RodataSegment<'_> {
        RodataSegment {
            data: segment.range.slice(self.bytes()),
            offset: segment.range.offset,
            is_external: segment.is_external,
        }
    }

    /// All functions' bytecode, one block.
    pub fn bytecode_data(&self) -> &[u8] {
        self.def.bytecode_data.slice(self.bytes())
    }

    /// The bytecode of internal function `ordinal` (verified to lie inside `bytecode_data`).
    pub fn function_bytecode(&self, ordinal: usize) -> Option<&[u8]> {
        let descriptor = self.def.function_descriptors.get(ordinal)?;
        let start = descriptor.bytecode_offset as usize;
        self.bytecode_data().get(start..start.checked_add(descriptor.bytecode_length as usize)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Module>();
    }

    #[test]
    fn in_memory_copies_start_at_a_64_byte_boundary() {
        for len in [0, 1, 63, 64, 65, 1000] {
            let bytes: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let storage = Storage::copy_aligned(&bytes);
            assert_eq!(storage.bytes().as_ptr() as usize % SEGMENT_ALIGNMENT, 0);
            assert_eq!(storage.bytes(), &bytes[..]);
        }
    }
}
