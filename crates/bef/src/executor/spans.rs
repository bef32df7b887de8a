//! Kernels' tracing spans. A kernel's span name and argument come from the file (its kernel's
//! name; its location, which for an imported ONNX model names the node), decoded once per kernel
//! site while tracing and shared by every span of it after: decoding a location allocates, and a
//! model's call would pay it at every kernel.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::reader::BefFile;
use rtx_host::tracing::{self, Args, Category, Text};
use rtx_kernel::record::KernelRecord;

/// A kernel site's span: its name, and the argument beside it.
#[derive(Clone)]
struct Site {
    name: Arc<str>,
    /// The kernel's name where the span is named after the node, else the source location.
    arg: (&'static str, Arc<str>),
    /// What TFRT's scope lines call it: the kernel.
    kernel: Arc<str>,
}

/// The sites seen while tracing, by kernel code and location offset.
#[derive(Default)]
pub(crate) struct KernelSpans(Mutex<HashMap<(u32, u32), Site>>);

/// A tracing span of the kernel `record` calls (its synchronous part: what an async kernel
/// starts runs later, in spans of its own). A kernel at a name location (what `import-onnx`
/// gives each kernel: its ONNX node's name) is named after it, with the kernel beside; any other
/// is named after its kernel, with its source location beside.
pub(super) fn kernel_span(file: &BefFile, record: KernelRecord<'_>) -> tracing::Span {
    let site = site(file, record);
    let Site { name, arg: (key, value), kernel } = site;
    tracing::span_as(Category::Kernel, &kernel, || name, || Args::none().with(key, Text::Shared(value)))
}

fn site(file: &BefFile, record: KernelRecord<'_>) -> Site {
    let key = (record.code(), record.location());
    let mut sites = file.spans.0.lock().unwrap_or_else(PoisonError::into_inner);
    sites
        .entry(key)
        .or_insert_with(|| {
            let kernel: Arc<str> = Arc::from(file.kernel_name(record.code()));
            let image = file.image();
            match image.debug_name(record.location()).filter(|node| !node.is_empty()) {
                Some(node) => Site { name: Arc::from(node), arg: ("kernel", Arc::clone(&kernel)), kernel },
                None => {
                    let location = image.location(record.location()).to_location().to_string();
                    Site { name: Arc::clone(&kernel), arg: ("location", Arc::from(location)), kernel }
                }
            }
        })
        .clone()
}
