//! `onnx.<Op>`: ONNX's operators as kernels on dense host tensors of any element type, one kernel
//! per operator, with ONNX's attribute names and defaults. Where the `nn.*` layers are the f32
//! kernels of known-shape convolutional networks, these take what a model says only at run time:
//! element types and shapes are read from the operands, and each kernel computes its outputs'
//! shapes. The importer lowers a node to its `onnx.<Op>` kernel when it has no `nn.*` lowering.
//!
//! The kernel's operands are the node's inputs that are present, in order; the attribute
//! `_inputs` (i64 array) gives the ONNX input index of each when an optional input before the
//! last is left out, and `_opset` (i64) the model's opset where semantics changed with it. The
//! element type is dispatched once per operator by [`dispatch`]'s macros: each operator is
//! written once over a Rust element type, not once per type.
//!
//! Control flow (`If`, `Loop`, `Scan`, `SequenceMap`) runs subgraphs the importer writes as
//! functions of the program, passing them the outer-scope values they read (the last `_captures`
//! operands). Sequences are [`Sequence`] values and an empty optional is [`NoValue`] (a full one
//! is its value), carried through BEF as async values like tensors.

mod attention;
mod control;
mod conv;
mod detection;
pub(crate) mod dispatch;
pub(crate) mod elementwise;
mod generate;
mod index;
mod linalg;
mod losses;
mod ml;
mod moves;
mod normalize;
mod pad;
mod pool;
mod quantize;
mod recurrent;
mod reduce;
mod resize;
mod sample;
mod sequence;
mod shape;
mod strings;
mod tensors;

pub use sequence::{NoValue, Sequence};

use crate::KernelRegistry;

/// The ONNX operators that have an `onnx.<Op>` kernel.
pub fn operators() -> Vec<&'static str> {
    [
        elementwise::OPERATORS,
        shape::OPERATORS,
        index::OPERATORS,
        pad::OPERATORS,
        generate::OPERATORS,
        linalg::OPERATORS,
        conv::OPERATORS,
        pool::OPERATORS,
        quantize::OPERATORS,
        reduce::OPERATORS,
        normalize::OPERATORS,
        losses::OPERATORS,
        attention::OPERATORS,
        resize::OPERATORS,
        sample::OPERATORS,
        recurrent::OPERATORS,
        detection::OPERATORS,
        ml::OPERATORS,
        control::OPERATORS,
        sequence::OPERATORS,
        strings::OPERATORS,
    ]
    .concat()
}

/// Registers every `onnx.<Op>` kernel.
pub fn register_onnx_kernels(registry: &mut KernelRegistry) {
    elementwise::register(registry);
    shape::register(registry);
    index::register(registry);
    pad::register(registry);
    generate::register(registry);
    linalg::register(registry);
    conv::register(registry);
    pool::register(registry);
    quantize::register(registry);
    reduce::register(registry);
    normalize::register(registry);
    losses::register(registry);
    attention::register(registry);
    resize::register(registry);
    sample::register(registry);
    recurrent::register(registry);
    detection::register(registry);
    ml::register(registry);
    control::register(registry);
    sequence::register(registry);
    strings::register(registry);
    // Last: it wraps the kernels of the operators that move elements.
    moves::register(registry);
}
