//! Where a model's tensors are stored: in the model file (whose bytes constants share), or, for
//! tensors saved as external data (`data_location: EXTERNAL`, as exporters save models over
//! 2 GiB), in files named relative to the model's folder. Each external file is mapped once and
//! its tensors stay slices of the mapping until the writer copies them.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rtx_mlir::ir::Blob;

use super::proto::TensorProto;
use super::ModelBytes;

pub struct Source {
    /// The model's bytes.
    pub file: ModelBytes,
    /// The folder external data is read from: the model file's, none for a model in memory.
    folder: Option<PathBuf>,
    /// The external files mapped so far, by their path.
    opened: RefCell<HashMap<PathBuf, ModelBytes>>,
}

impl Source {
    pub fn new(file: ModelBytes, folder: Option<&Path>) -> Source {
        // A file named without a folder is in the current one.
        let folder = folder.map(|f| if f.as_os_str().is_empty() { PathBuf::from(".") } else { f.to_path_buf() });
        Source { file, folder, opened: RefCell::new(HashMap::new()) }
    }

    /// The bytes of `tensor`, stored as external data: `length` bytes (the rest of the file
    /// without one) at `offset` of the file `location`, which must lie inside the model's folder.
    pub fn external(&self, tensor: &TensorProto) -> Result<Blob, String> {
        let entry = |key: &str| tensor.external_data.iter().find(|e| e.key.as_deref() == Some(key)).map(|e| e.value());
        let location = entry("location").ok_or("its external data has no `location`")?;
        let number = |key: &str| -> Result<Option<usize>, String> {
            entry(key)
                .map(|v| v.parse::<usize>().map_err(|_| format!("its external data's `{key}` `{v}` is not a size")))
                .transpose()
        };
        let (offset, length) = (number("offset")?.unwrap_or(0), number("length")?);
        let folder = self.folder.as_deref().ok_or_else(|| {
            format!("its data is in the external file `{location}`, which a model loaded from memory cannot name: load the model from its file")
        })?;
        let relative = Path::new(location);
        if relative.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
            return Err(format!("its external data file `{location}` is not a path inside the model's folder"));
        }
        let bytes = self.open(folder, relative)?;
        let size = (*bytes).as_ref().len();
        let length = length.unwrap_or(size.saturating_sub(offset));
        Blob::shared(bytes, offset, length).ok_or_else(|| {
            format!("its external data ({length} bytes at offset {offset}) lies outside `{location}` ({size} bytes)")
        })
    }

    /// The file `relative` to `folder`, mapped once; an error when it cannot be read or a link
    /// takes it outside the folder.
    fn open(&self, folder: &Path, relative: &Path) -> Result<ModelBytes, String> {
        let path = folder.join(relative);
        let cannot = |e: std::io::Error| format!("its external data file `{}` cannot be read: {e}", path.display());
        let resolved = path.canonicalize().map_err(cannot)?;
        if !resolved.starts_with(folder.canonicalize().map_err(cannot)?) {
            return Err(format!("its external data file `{}` lies outside the model's folder", path.display()));
        }
        let mut opened = self.opened.borrow_mut();
        if let Some(bytes) = opened.get(&resolved) {
            return Ok(Arc::clone(bytes));
        }
        let bytes = super::ModelFile::read(&resolved).map_err(cannot)?.bytes;
        opened.insert(resolved, Arc::clone(&bytes));
        Ok(bytes)
    }
}
