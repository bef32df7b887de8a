//! [`Module`]: a loaded program of any format rtx runs, recognised by its first bytes, so that
//! hosts load every program with one call and name no format.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use crate::host::{Diagnostic, StatusCode};
use crate::vm;

/// The formats a module file may be in, by magic number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModuleFormat {
    /// An IREE VM bytecode module (`.vmfb`): a ZIP whose first entry is the FlatBuffer, or the
    /// bare size-prefixed FlatBuffer with file identifier `IREE`.
    VmBytecode,
    /// TFRT's Binary Executable Format (`.bef`), magic `0B EF`.
    Bef,
    /// MLIR bytecode (`.mlirbc`), magic `ML\xEFR`.
    MlirBytecode,
}

impl ModuleFormat {
    /// The format `head` (a file's first bytes, at least 8 when the file has them) starts with.
    pub fn detect(head: &[u8]) -> Option<ModuleFormat> {
        if head.starts_with(b"PK\x03\x04") || head.get(4..8) == Some(&vm::container::FILE_IDENTIFIER[..]) {
            Some(ModuleFormat::VmBytecode)
        } else if head.starts_with(&[0x0B, 0xEF]) {
            Some(ModuleFormat::Bef)
        } else if head.starts_with(b"ML\xEFR") {
            Some(ModuleFormat::MlirBytecode)
        } else {
            None
        }
    }

    fn name(self) -> &'static str {
        match self {
            ModuleFormat::VmBytecode => "IREE VM bytecode (.vmfb)",
            ModuleFormat::Bef => "BEF (.bef)",
            ModuleFormat::MlirBytecode => "MLIR bytecode",
        }
    }
}

/// A loaded, verified module. Immutable; cheap to clone (the program is shared), so one module
/// can be added to many contexts on many threads.
#[derive(Clone, Debug)]
pub enum Module {
    Vm(Arc<vm::Module>),
}

impl Module {
    /// Loads the module in the file at `path` (mapped, not copied, where the format allows).
    pub fn load_file(path: impl AsRef<Path>) -> Result<Module, Diagnostic> {
        let path = path.as_ref();
        let mut head = Vec::with_capacity(8);
        std::fs::File::open(path)
            .and_then(|file| file.take(8).read_to_end(&mut head))
            .map_err(|e| Diagnostic::from(vm::LoadError::io(path, &e)))?;
        match ModuleFormat::detect(&head) {
            Some(other @ (ModuleFormat::Bef | ModuleFormat::MlirBytecode)) => {
                Err(not_runnable(other, &format!("`{}`", path.display())))
            }
            // Anything else goes to the VM loader, whose errors say what is wrong where.
            Some(ModuleFormat::VmBytecode) | None => Ok(Module::Vm(Arc::new(vm::Module::load_file(path)?))),
        }
    }

    /// Loads a module from memory (copied, so `bytes` may go away after the call).
    pub fn load_memory(bytes: &[u8]) -> Result<Module, Diagnostic> {
        match ModuleFormat::detect(bytes) {
            Some(other @ (ModuleFormat::Bef | ModuleFormat::MlirBytecode)) => Err(not_runnable(other, "the module")),
            Some(ModuleFormat::VmBytecode) | None => Ok(Module::Vm(Arc::new(vm::Module::load_memory(bytes)?))),
        }
    }

    /// The module's name (what `module.function` names refer to).
    pub fn name(&self) -> &str {
        match self {
            Module::Vm(module) => module.name(),
        }
    }
}

impl From<vm::Module> for Module {
    fn from(module: vm::Module) -> Module {
        Module::Vm(Arc::new(module))
    }
}

/// A format rtx recognises but cannot run yet: said plainly rather than as "malformed".
fn not_runnable(format: ModuleFormat, what: &str) -> Diagnostic {
    Diagnostic::new(
        StatusCode::Unimplemented,
        format!("{what} is {}, which rtx cannot run yet: it runs IREE VM bytecode modules (.vmfb)", format.name()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_apart_by_their_magic() {
        assert_eq!(ModuleFormat::detect(b"PK\x03\x04rest"), Some(ModuleFormat::VmBytecode));
        assert_eq!(ModuleFormat::detect(b"\x10\0\0\0IREE"), Some(ModuleFormat::VmBytecode));
        assert_eq!(ModuleFormat::detect(&[0x0B, 0xEF, 0x00, 0x01]), Some(ModuleFormat::Bef));
        assert_eq!(ModuleFormat::detect(b"ML\xEFR\x00"), Some(ModuleFormat::MlirBytecode));
        assert_eq!(ModuleFormat::detect(b"module {"), None);
        assert_eq!(ModuleFormat::detect(b""), None);
    }

    #[test]
    fn unknown_and_not_yet_runnable_formats_say_what_they_are() {
        let unknown = Module::load_memory(b"\x10\0\0\0ABCDxxxxxxxxxxxx").unwrap_err();
        assert!(unknown.message.contains("not an IREE bytecode module"), "{}", unknown.message);
        let bef = Module::load_memory(&[0x0B, 0xEF, 0x00, 0x00]).unwrap_err();
        assert_eq!(bef.code, StatusCode::Unimplemented);
        assert!(bef.message.contains("BEF"), "{}", bef.message);
    }

    #[test]
    fn a_missing_file_is_not_found_and_names_the_path() {
        let error = Module::load_file("/nonexistent/rtx/module.vmfb").unwrap_err();
        assert_eq!(error.code, StatusCode::NotFound);
        assert!(error.message.contains("/nonexistent/rtx/module.vmfb"), "{}", error.message);
    }
}
