//! [`Module`]: a loaded program of any format rtx runs, recognised by its first bytes, so that
//! hosts load every program with one call and name no format, and [`ExportedFunction`], the
//! reflection of one of its functions.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

#[cfg(not(feature = "onnx"))]
use super::feature::left_out;
#[cfg(feature = "tfrt")]
use rtx_bef::format::FunctionKind;
#[cfg(feature = "tfrt")]
use rtx_bef::reader::BefImage;
use rtx_host::{Diagnostic, StatusCode};
use rtx_vm as vm;
use rtx_vm::abi::{plain_kinds, CallingConvention, ValueKind};

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
    /// An ONNX model (`.onnx`), a protobuf `ModelProto`, which has no magic: a file is taken for one
    /// by its extension, or bytes by their first field, `ir_version` (byte `08`), which every
    /// exporter writes first. Imported in memory to the BEF graph `rtx import-onnx` writes.
    Onnx,
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
        } else if head.len() > 1 && head[0] == 0x08 {
            Some(ModuleFormat::Onnx)
        } else {
            None
        }
    }

    fn name(self) -> &'static str {
        match self {
            ModuleFormat::VmBytecode => "IREE VM bytecode (.vmfb)",
            ModuleFormat::Bef => "BEF (.bef)",
            ModuleFormat::MlirBytecode => "MLIR bytecode",
            ModuleFormat::Onnx => "an ONNX model (.onnx)",
        }
    }
}

/// A loaded, verified module. Immutable; cheap to clone (the program is shared), so one module
/// can be added to many contexts on many threads.
#[derive(Clone, Debug)]
pub enum Module {
    Vm(Arc<vm::Module>),
    /// A verified BEF image; its kernel names are resolved when it is added to a context,
    /// against that context's kernels.
    #[cfg(feature = "tfrt")]
    Bef {
        name: Arc<str>,
        image: Arc<BefImage>,
    },
}

/// The name of a BEF module loaded from memory (a file's is its stem): BEF files carry none.
pub const BEF_MEMORY_MODULE_NAME: &str = "bef";

/// The name of an ONNX model loaded from memory (a file's is its stem); its function is named
/// after its graph.
pub const ONNX_MEMORY_MODULE_NAME: &str = "onnx";

/// A file's stem as a module name, or `default` for a path without one.
#[cfg(feature = "tfrt")]
fn stem_or(path: &Path, default: &str) -> Arc<str> {
    path.file_stem().map_or_else(|| default.into(), |s| s.to_string_lossy()).into()
}

/// The ONNX model in the file at `path`, mapped where the importer can keep its weights in place.
fn onnx_file(path: &Path) -> Result<Module, Diagnostic> {
    let what = format!("`{}`", path.display());
    #[cfg(feature = "onnx")]
    {
        let file = rtx_onnx::ModelFile::read(path).map_err(|e| Diagnostic::from(vm::LoadError::io(path, &e)))?;
        let bef = rtx_onnx::import_bef_file(file, path.parent());
        onnx_module(stem_or(path, ONNX_MEMORY_MODULE_NAME), bef, &what)
    }
    #[cfg(not(feature = "onnx"))]
    Err(left_out("onnx", format_args!("{what}, an ONNX model,")))
}

/// The ONNX model in `bytes`, copied (the caller may free them when the load returns).
fn onnx_memory(bytes: &[u8]) -> Result<Module, Diagnostic> {
    #[cfg(feature = "onnx")]
    return onnx_module(
        ONNX_MEMORY_MODULE_NAME.into(),
        rtx_onnx::import_bef(Arc::new(bytes.to_vec()), None),
        "the module",
    );
    #[cfg(not(feature = "onnx"))]
    {
        let _ = bytes;
        Err(left_out("onnx", "the module, an ONNX model,"))
    }
}

/// An ONNX model's import, `bef`, as a BEF module named `name`; `what` names the model in errors.
#[cfg(feature = "onnx")]
fn onnx_module(name: Arc<str>, bef: Result<Vec<u8>, rtx_onnx::ImportError>, what: &str) -> Result<Module, Diagnostic> {
    let bef = bef.map_err(|e| Diagnostic::new(e.status_code(), format!("{what}, an ONNX model: {e}")))?;
    Ok(Module::Bef { name, image: Arc::new(BefImage::from_vec(bef)?) })
}

/// One function a module exports, described for hosts that call it.
#[derive(Clone, Debug)]
pub struct ExportedFunction {
    /// Without the module prefix.
    pub name: String,
    /// The VM calling convention (`0iI_f`); empty for BEF functions, which have none.
    pub calling_convention: String,
    /// How the source declared it: IREE's `iree.abi.declaration`, or for BEF functions their
    /// types (`@scale(i32) -> (i32)`).
    pub declaration: Option<String>,
    /// The kinds of the arguments and results, or why they are not all plain values.
    pub kinds: Result<(Vec<ValueKind>, Vec<ValueKind>), Diagnostic>,
}

impl Module {
    /// Loads the module in the file at `path` (mapped, not copied, where the format allows).
    pub fn load_file(path: impl AsRef<Path>) -> Result<Module, Diagnostic> {
        let path = path.as_ref();
        let mut head = Vec::with_capacity(8);
        std::fs::File::open(path)
            .and_then(|file| file.take(8).read_to_end(&mut head))
            .map_err(|e| Diagnostic::from(vm::LoadError::io(path, &e)))?;
        let onnx_extension = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("onnx"));
        let format = if onnx_extension { Some(ModuleFormat::Onnx) } else { ModuleFormat::detect(&head) };
        match format {
            Some(ModuleFormat::Onnx) => onnx_file(path),
            #[cfg(feature = "tfrt")]
            Some(ModuleFormat::Bef) => {
                let name = stem_or(path, BEF_MEMORY_MODULE_NAME);
                Ok(Module::Bef { name, image: Arc::new(BefImage::open(path)?) })
            }
            #[cfg(not(feature = "tfrt"))]
            Some(ModuleFormat::Bef) => Err(left_out("tfrt", format_args!("`{}`, a BEF module,", path.display()))),
            Some(other @ ModuleFormat::MlirBytecode) => Err(not_runnable(other, &format!("`{}`", path.display()))),
            // Anything else goes to the VM loader, whose errors say what is wrong where.
            Some(ModuleFormat::VmBytecode) | None => Ok(Module::Vm(Arc::new(vm::Module::load_file(path)?))),
        }
    }

    /// Loads a module from memory (copied, so `bytes` may go away after the call).
    pub fn load_memory(bytes: &[u8]) -> Result<Module, Diagnostic> {
        match ModuleFormat::detect(bytes) {
            Some(ModuleFormat::Onnx) => onnx_memory(bytes),
            #[cfg(feature = "tfrt")]
            Some(ModuleFormat::Bef) => {
                Ok(Module::Bef { name: BEF_MEMORY_MODULE_NAME.into(), image: Arc::new(BefImage::from_bytes(bytes)?) })
            }
            #[cfg(not(feature = "tfrt"))]
            Some(ModuleFormat::Bef) => Err(left_out("tfrt", "the module, a BEF module,")),
            Some(other @ ModuleFormat::MlirBytecode) => Err(not_runnable(other, "the module")),
            Some(ModuleFormat::VmBytecode) | None => Ok(Module::Vm(Arc::new(vm::Module::load_memory(bytes)?))),
        }
    }

    /// The module's name (what `module.function` names refer to).
    pub fn name(&self) -> &str {
        match self {
            Module::Vm(module) => module.name(),
            #[cfg(feature = "tfrt")]
            Module::Bef { name, .. } => name,
        }
    }

    /// The function a caller means when it names none: the only one, or the one every other
    /// function's name extends (`graph` of an ONNX model whose control-flow bodies are
    /// `graph.body0`, `graph.then_branch1`, ...); `None` when that does not pick one.
    pub fn entry_function(&self) -> Option<String> {
        let names: Vec<String> = self.exported_functions().into_iter().map(|f| f.name).collect();
        let mut entries = names.iter().filter(|entry| {
            names
                .iter()
                .all(|name| name == *entry || name.strip_prefix(entry.as_str()).is_some_and(|r| r.starts_with('.')))
        });
        match (entries.next(), entries.next()) {
            (Some(entry), None) => Some(entry.clone()),
            _ => None,
        }
    }

    /// The functions the module exports, in its order: a VM module's exports, a BEF file's
    /// named functions.
    pub fn exported_functions(&self) -> Vec<ExportedFunction> {
        match self {
            Module::Vm(module) => module.exported_functions().iter().map(|e| vm_export(module, e)).collect(),
            #[cfg(feature = "tfrt")]
            Module::Bef { image, .. } => (0..image.num_functions())
                .filter_map(|index| image.function_info(index))
                .filter(|info| !info.name.is_empty())
                .map(|info| {
                    let types = |indices: &[u32]| indices.iter().map(|&t| image.type_name(t)).collect::<Vec<_>>();
                    let (arguments, results) = (types(&info.arguments), types(&info.results));
                    let kinds = |types: &[&str]| {
                        types
                            .iter()
                            .map(|t| {
                                value_kind(t).ok_or_else(|| {
                                    Diagnostic::new(
                                        StatusCode::Unimplemented,
                                        format!(
                                            "function `{}` has a `{t}`, which is neither a plain value (i32, \
                                             i64, f32, f64) nor a tensor",
                                            info.name
                                        ),
                                    )
                                })
                            })
                            .collect::<Result<Vec<_>, _>>()
                    };
                    let sync = if info.kind == FunctionKind::Sync { "sync " } else { "" };
                    ExportedFunction {
                        name: info.name.clone(),
                        calling_convention: String::new(),
                        declaration: Some(format!(
                            "{sync}@{}({}) -> ({})",
                            info.name,
                            arguments.join(", "),
                            results.join(", ")
                        )),
                        kinds: kinds(&arguments).and_then(|a| Ok((a, kinds(&results)?))),
                    }
                })
                .collect(),
        }
    }
}

/// The kind a BEF type names for hosts: a plain value (`i32`, `f64`), or a ref for a dense host
/// tensor, which crosses as a buffer view (see `bridge::tensors`).
#[cfg(feature = "tfrt")]
fn value_kind(type_name: &str) -> Option<ValueKind> {
    if crate::bridge::tensors::TENSOR_TYPES.contains(&type_name) {
        return Some(ValueKind::Ref);
    }
    [ValueKind::I32, ValueKind::I64, ValueKind::F32, ValueKind::F64].into_iter().find(|k| k.name() == type_name)
}

/// A VM export's reflection, from its calling convention and ABI attributes.
fn vm_export(module: &vm::Module, export: &vm::module_def::ExportFunction) -> ExportedFunction {
    let signature = module.export_signature(export);
    let cconv = signature.and_then(|s| s.calling_convention.clone()).unwrap_or_default();
    let declaration = signature.and_then(|s| s.attr("iree.abi.declaration")).map(str::to_owned);
    let kinds = CallingConvention::parse(&cconv)
        .map_err(|e| Diagnostic::new(StatusCode::InvalidArgument, format!("function `{}`: {e}", export.local_name)))
        .and_then(|parsed| match (plain_kinds(&parsed.arguments), plain_kinds(&parsed.results)) {
            (Some(arguments), Some(results)) => Ok((arguments, results)),
            _ => Err(Diagnostic::new(
                StatusCode::Unimplemented,
                format!("function `{}`: calling convention `{cconv}` has a variadic span", export.local_name),
            )),
        });
    ExportedFunction { name: export.local_name.clone(), calling_convention: cconv, declaration, kinds }
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
        format!(
            "{what} is {}, which rtx cannot run yet: it runs IREE VM bytecode modules (.vmfb) and BEF files (.bef)",
            format.name()
        ),
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
        let mlir = Module::load_memory(b"ML\xEFR\x00").unwrap_err();
        assert_eq!(mlir.code, StatusCode::Unimplemented);
        assert!(mlir.message.contains("MLIR bytecode"), "{}", mlir.message);
    }

    #[test]
    #[cfg(feature = "tfrt")]
    fn a_bef_module_is_verified_at_load() {
        let error = Module::load_memory(&[0x0B, 0xEF, 0x00, 0x00]).unwrap_err();
        assert_eq!(error.code, StatusCode::InvalidArgument);
        assert!(error.message.contains("malformed BEF at byte"), "{}", error.message);
    }

    #[test]
    fn a_missing_file_is_not_found_and_names_the_path() {
        let error = Module::load_file("/nonexistent/rtx/module.vmfb").unwrap_err();
        assert_eq!(error.code, StatusCode::NotFound);
        assert!(error.message.contains("/nonexistent/rtx/module.vmfb"), "{}", error.message);
    }
}
