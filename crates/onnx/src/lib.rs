//! ONNX models as BEF kernel graphs: what `rtx import-onnx` does in place of `iree-import-onnx`
//! then `mlir_to_bef`. A model's graph becomes one async function — named as `iree-import-onnx`
//! names it, after the graph — taking the graph's inputs (those that are not initializers) in
//! order and returning its outputs, its nodes lowered one by one to the `nn.*` kernels
//! ([`lower`]) to `nn.*` kernels where those fit and to `onnx.<Op>` kernels otherwise. Weights
//! become dense attributes that `nn.constant` wraps as tensors; external data is read from the
//! model's folder ([`source`]).
//!
//! The protobuf messages are prost's, generated from `onnx.proto` and checked in
//! ([`proto`], `scripts/regen/onnx-proto.sh`): prost is the maintained protobuf crate, small
//! and pure Rust, so users need neither Python nor protoc; the ONNX crates that carry these types
//! come with whole inference engines. Bytes fields are `bytes::Bytes`, and the model is decoded
//! from one shared buffer: initializers' `raw_data` stay slices of the file's bytes, and the
//! writer copies them once, into the output — a model is held about twice, never more.
//!
//! A file that is not a model is an [`ImportError::Decode`]; an operator, attribute or element
//! type rtx does not support is an [`ImportError::Unsupported`] naming the node.

mod constant;
mod emit;
mod error;
mod fuse;
mod lower;
mod node;
#[allow(clippy::all, clippy::pedantic)]
mod proto;
mod source;

use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

use prost::Message;

pub use error::ImportError;

use constant::Elem;
use emit::Emitter;
use lower::{Lowering, Val};
use node::Node;
use proto::type_proto;
use source::Source;

/// ONNX's code of STRING elements.
const STRING: i32 = proto::tensor_proto::DataType::String as i32;

/// The name `iree-import-onnx` gives the function of a graph without a name.
const UNNAMED_GRAPH: &str = "main_graph";

/// ONNX's domain of classical machine-learning operators.
const ML_DOMAIN: &str = "ai.onnx.ml";

/// A model's bytes: a vector, a mapped file. Weights stay slices of them until written out.
pub type ModelBytes = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// [`ModelBytes`] as the protobuf decoder's buffer.
struct Owner(ModelBytes);

impl AsRef<[u8]> for Owner {
    fn as_ref(&self) -> &[u8] {
        (*self.0).as_ref()
    }
}

/// The kernel graph of the ONNX model `bytes` as an MLIR module (`builtin.module` with one
/// `func.func`), ready for `mlir_to_bef` or the MLIR writers. A model with external data needs
/// [`import_from`].
pub fn import(bytes: ModelBytes) -> Result<rtx_mlir::Module, ImportError> {
    import_from(bytes, None)
}

/// As [`import`], for a model read from a file in `folder`, where its external data files are.
pub fn import_from(bytes: ModelBytes, folder: Option<&Path>) -> Result<rtx_mlir::Module, ImportError> {
    let shared = bytes::Bytes::from_owner(Owner(Arc::clone(&bytes)));
    let model = proto::ModelProto::decode(shared).map_err(|e| ImportError::Decode(e.to_string()))?;
    let graph = model.graph.as_ref().ok_or_else(|| ImportError::Model("the model has no graph".to_owned()))?;
    let opset = model
        .opset_import
        .iter()
        .find(|o| matches!(o.domain.as_deref(), None | Some("" | "ai.onnx")))
        .and_then(|o| o.version);

    let source = Rc::new(Source::new(Arc::clone(&bytes), folder));
    let mut initializers = std::collections::HashMap::new();
    let mut string_initializers = Vec::new();
    for tensor in &graph.initializer {
        let name = tensor.name.clone().unwrap_or_default();
        // Strings are made by a kernel of the graph (see `Lowering::strings`).
        if lower::holds_strings(tensor) {
            string_initializers.push(tensor);
            continue;
        }
        let value = constant::from_proto(tensor, &source)
            .map_err(|e| ImportError::Model(format!("initializer `{name}`: {e}")))?;
        initializers.insert(name, value);
    }
    // Before IR version 4 initializers are listed among the inputs too: they are not arguments.
    let arguments: Vec<_> = graph
        .input
        .iter()
        .filter(|i| !initializers.contains_key(i.name()) && !string_initializers.iter().any(|t| t.name() == i.name()))
        .collect();
    let mut uses = std::collections::HashMap::new();
    lower::count_uses(graph, &mut uses);

    let name = graph.name.as_deref().filter(|name| !name.is_empty()).unwrap_or(UNNAMED_GRAPH);
    let emit = Emitter::new(arguments.len());
    let ids = emit.arguments();
    let ml_opset = model.opset_import.iter().find(|o| o.domain() == ML_DOMAIN).and_then(|o| o.version).unwrap_or(1);
    let mut lowering = Lowering::new(emit, (opset.unwrap_or(0), ml_opset), uses, source, name);
    for (name, value) in initializers {
        lowering.values.insert(name, Val::Const(value));
    }
    for tensor in string_initializers {
        let value = lowering
            .strings(tensor)
            .map_err(|e| ImportError::Model(format!("initializer `{}`: {e}", tensor.name())))?;
        lowering.values.insert(tensor.name().to_owned(), value);
    }
    for (input, id) in arguments.iter().zip(ids) {
        // A sequence or an optional passes as it is, to the kernels that take one.
        if matches!(
            input.r#type.as_ref().and_then(|t| t.value.as_ref()),
            Some(type_proto::Value::SequenceType(_) | type_proto::Value::OptionalType(_))
        ) {
            lowering.values.insert(input.name().to_owned(), Val::Tensor { id, shape: None, elem: None });
            continue;
        }
        let (declared, elem) = argument_type(input)?;
        let shape = declared.as_ref().and_then(|dims| dims.iter().all(|&d| d > 0).then(|| dims.clone()));
        // A tensor of another shape is refused at the door, naming the input, as a compiled
        // program refuses it, rather than deep inside whichever kernel it breaks.
        let id = match &declared {
            Some(dims) => {
                let attributes =
                    vec![("shape", lowering.emit.ints(dims)), ("input", lowering.emit.string(input.name()))];
                lowering.emit.kernel("nn.expect_shape", input.name(), &[id], attributes)
            }
            None => id,
        };
        lowering.values.insert(input.name().to_owned(), Val::Tensor { id, shape, elem });
    }
    for proto in &graph.node {
        lowering.node(&Node::new(proto))?;
    }
    let mut results = Vec::with_capacity(graph.output.len());
    for output in &graph.output {
        let node = Node { proto: &Default::default(), name: output.name().to_owned(), op: "graph output" };
        results.push(lowering.any_tensor(output.name(), &node)?);
    }
    Ok(lowering.emit.finish(name, &results))
}

/// A graph input's dimensions when it declares a shape (-1 for each not fixed), and its element
/// type (`None` for strings, which a tensor of strings holds); an error unless it is a tensor of a
/// type rtx holds.
fn argument_type(input: &proto::ValueInfoProto) -> Result<(Option<Vec<i64>>, Option<Elem>), ImportError> {
    let name = input.name();
    let tensor = match input.r#type.as_ref().and_then(|t| t.value.as_ref()) {
        Some(type_proto::Value::TensorType(tensor)) => tensor,
        _ => return Err(ImportError::Model(format!("graph input `{name}` is not a tensor"))),
    };
    let elem = match tensor.elem_type.unwrap_or(0) {
        STRING => None,
        code => Some(
            Elem::from_onnx(code).map_err(|e| ImportError::UnsupportedModel(format!("graph input `{name}`: {e}")))?,
        ),
    };
    let Some(shape) = &tensor.shape else { return Ok((None, elem)) };
    let dims = shape
        .dim
        .iter()
        .map(|d| match d.value {
            Some(proto::tensor_shape_proto::dimension::Value::DimValue(v)) if v >= 0 => v,
            _ => -1,
        })
        .collect();
    Ok((Some(dims), elem))
}

/// Imports the model at `input` and writes it to `output`: MLIR text (`.mlir`), MLIR bytecode
/// (`.mlirbc`) or BEF (`.bef`), by extension.
pub fn import_file(input: &Path, output: &Path) -> Result<(), ImportError> {
    let format = match output.extension().and_then(|e| e.to_str()) {
        Some("mlir") => Format::Text,
        Some("mlirbc") => Format::Bytecode,
        Some("bef") => Format::Bef,
        _ => {
            return Err(ImportError::Write(format!(
                "`{}`: the output's extension says its format: .mlir, .mlirbc or .bef",
                output.display()
            )))
        }
    };
    let file = ModelFile::read(input).map_err(|e| ImportError::Model(format!("reading `{}`: {e}", input.display())))?;
    let module = import_from(file.bytes.clone(), input.parent())?;
    file.release_pages();
    let written = match format {
        Format::Text => rtx_mlir::print_asm(&module, rtx_mlir::AsmOptions::default())
            .map(String::into_bytes)
            .map_err(|e| e.to_string()),
        Format::Bytecode => {
            rtx_mlir::write_bytecode(&module, &rtx_mlir::WriteOptions::default()).map_err(|e| e.to_string())
        }
        Format::Bef => rtx_bef::mlir_to_bef(&module, &rtx_bef::WriteOptions::default()).map_err(|e| e.to_string()),
    }
    .map_err(ImportError::Write)?;
    drop(module);
    std::fs::write(output, written).map_err(|e| ImportError::Write(format!("writing `{}`: {e}", output.display())))
}

/// The model `bytes` (of a file in `folder`, where its external data is) as a BEF file: what
/// `rtx import-onnx` writes, for loaders that run it in memory (a runtime's `Module::load` of a
/// `.onnx`).
pub fn import_bef(bytes: ModelBytes, folder: Option<&Path>) -> Result<Vec<u8>, ImportError> {
    bef_of(&import_from(bytes, folder)?)
}

fn bef_of(module: &rtx_mlir::Module) -> Result<Vec<u8>, ImportError> {
    rtx_bef::mlir_to_bef(module, &rtx_bef::WriteOptions::default()).map_err(|e| ImportError::Write(e.to_string()))
}

/// A model file's bytes: mapped (a large model is not copied onto the heap) or, when it cannot
/// be (a pipe, an empty file), read.
pub struct ModelFile {
    bytes: ModelBytes,
    map: Option<Arc<memmap2::Mmap>>,
}

impl ModelFile {
    pub fn read(path: &Path) -> std::io::Result<ModelFile> {
        let file = std::fs::File::open(path)?;
        if file.metadata()?.is_file() && file.metadata()?.len() > 0 {
            // SAFETY: the mapping is read-only and private; like every mmap-based loader we rely
            // on the file not being truncated or rewritten by another process while we read it.
            if let Ok(map) = unsafe { memmap2::Mmap::map(&file) } {
                let map = Arc::new(map);
                return Ok(ModelFile { bytes: map.clone(), map: Some(map) });
            }
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut &file, &mut bytes)?;
        Ok(ModelFile { bytes: Arc::new(bytes), map: None })
    }

    /// The file's pages taken out of this process's memory once the import has read them:
    /// weights that were folded (batch norms into filters) are copies by then, so the pages
    /// would only add to the peak while the output is written. Pages still referenced fault
    /// back in from the page cache.
    fn release_pages(&self) {
        #[cfg(unix)]
        if let Some(map) = &self.map {
            // SAFETY: the mapping is private and read-only, so discarding its pages loses
            // nothing: a later read maps the file's bytes again.
            let _ = unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
        }
    }
}

/// The model in `file` (in `folder`, where its external data is) as a BEF file, as
/// [`import_bef`], with the file's pages released once imported (a lower peak of memory).
pub fn import_bef_file(file: ModelFile, folder: Option<&Path>) -> Result<Vec<u8>, ImportError> {
    let module = import_from(file.bytes.clone(), folder)?;
    file.release_pages();
    bef_of(&module)
}

enum Format {
    Text,
    Bytecode,
    Bef,
}
