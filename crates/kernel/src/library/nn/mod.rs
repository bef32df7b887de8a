//! `nn.*`: the f32 layers of convolutional networks over dense host tensors, with ONNX's
//! semantics (NCHW layouts, ONNX's attribute names and defaults) so that a converter maps each
//! ONNX node to one kernel: [`gemm`] (`nn.gemm.f32`, `nn.matmul.f32`), [`conv`] (`nn.conv2d.f32`),
//! [`pool`] (`nn.max_pool2d.f32`, `nn.average_pool2d.f32`, `nn.global_average_pool.f32`),
//! [`pointwise`] (activations, broadcasting arithmetic, `nn.batch_norm.f32`,
//! `nn.channel_affine.f32`), [`normalize`]
//! (`nn.softmax.f32`, `nn.layer_norm.f32`, `nn.lrn.f32`), [`layout`] (`nn.concat`, `nn.reshape`, `nn.flatten`,
//! `nn.transpose`, for any element type) and [`reduce`] (`nn.argmax.f32`).
//!
//! Unlike TFRT's test kernels, which write into an output tensor their caller made, these return
//! a new tensor: the data dependence orders them. A last chain operand, when given, is waited
//! for and not read (the way to read a tensor that chain-ordered kernels fill). Attributes are read by
//! name (BEF's optional attribute-names section, which `rtx translate` writes), and a missing
//! one takes ONNX's default. Operand shapes are checked before any work starts: a mismatch is
//! a kernel error that names the kernel and the shapes.

/// A loop-heavy function compiled once per vector width the CPU may have — AVX-512, AVX2 with
/// FMA, SSE4.1, NEON — the widest chosen at run time: the library's baseline is SSE2's four
/// lanes, and the `multiversion` crate's own `"simd"` set stops at AVX2.
macro_rules! vectorized {
    ($(#[$meta:meta])* $vis:vis fn $($rest:tt)*) => {
        $(#[$meta])*
        #[multiversion::multiversion(targets(
            "x86_64+avx512f+avx512vl+avx512bw+avx512dq+avx2+fma",
            "x86_64+avx2+fma",
            "x86_64+sse4.1",
            "aarch64+neon",
        ))]
        $vis fn $($rest)*
    };
}

/// Inside a [`vectorized!`] function: whether the version being compiled has fused
/// multiply-add (x86's FMA; every AArch64 CPU), the `FMA` argument of [`exp::mul_add`] and of
/// the functions built on it.
macro_rules! fma {
    () => {
        multiversion::target::target_cfg_f!(any(target_feature = "fma", target_arch = "aarch64"))
    };
}

pub(crate) mod constant;
pub(crate) mod conv;
mod depthwise;
mod epilogue;
pub(crate) mod exp;
mod gelu;
pub(crate) mod gemm;
pub(crate) mod layout;
pub(crate) mod normalize;
pub(crate) mod pointwise;
pub(crate) mod pool;
pub(crate) mod reduce;
pub(crate) mod split;
mod tap_vectors;
mod taps;
pub(crate) mod window;
mod winograd;

use std::sync::Arc;

use crate::dtype::DType;
use crate::tensor::{DenseHostTensor, Element};
use crate::{KernelError, KernelFrame, KernelRegistry, KernelSite};
use rtx_host::Chain;

/// Registers every `nn.*` kernel.
pub fn register_nn_kernels(registry: &mut KernelRegistry) {
    constant::register(registry);
    gemm::register(registry);
    conv::register(registry);
    pool::register(registry);
    pointwise::register(registry);
    normalize::register(registry);
    layout::register(registry);
    reduce::register(registry);
}

/// An f32 tensor operand, read once: its dimensions and its elements in row-major order.
pub(crate) struct Floats {
    pub dims: Vec<usize>,
    pub data: Elements,
}

/// The elements of an operand: a copy, taken under the buffer's lock, or — for a read-only
/// buffer, which nothing writes (a constant in the BEF file, such as the weights, or a sealed
/// layer's result) — the buffer's own elements, so that a layer copies neither its weights nor
/// the activations it reads.
pub(crate) enum Elements {
    Copied(Vec<f32>),
    /// The tensor's elements at `start` (`len` of them), read on every access of a layer's
    /// inner loops: kept here rather than asked of the buffer each time.
    InPlace {
        start: *const f32,
        len: usize,
        _tensor: DenseHostTensor,
    },
}

// SAFETY: `InPlace` points into a read-only buffer that the held tensor keeps alive, which no one
// writes: sharing the pointer between threads only ever reads immutable memory.
unsafe impl Send for Elements {}
// SAFETY: as above.
unsafe impl Sync for Elements {}

impl std::ops::Deref for Elements {
    type Target = [f32];

    #[inline]
    fn deref(&self) -> &[f32] {
        match self {
            Elements::Copied(values) => values,
            // SAFETY: `floats` chose this only for a read-only buffer of f32s aligned for them on
            // a little-endian target: its bytes are never written, and live as long as the
            // tensor, which this holds.
            Elements::InPlace { start, len, .. } => unsafe { std::slice::from_raw_parts(*start, *len) },
        }
    }
}

impl Floats {
    /// Dimensions as ONNX prints them, for errors: `[1, 3, 224, 224]`.
    pub fn shape(&self) -> String {
        format!("{:?}", self.dims)
    }
}

/// The sum of `f` over `values`, in sixteen lanes so that it vectorizes (one running sum could
/// not be reordered); inlined into the vectorized loop that calls it.
#[inline(always)]
pub(crate) fn lane_sum(values: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut lanes = [0.0f32; 16];
    let chunks = values.chunks_exact(16);
    let tail: f32 = chunks.remainder().iter().map(|&v| f(v)).sum();
    for chunk in chunks {
        for (lane, &v) in lanes.iter_mut().zip(chunk) {
            *lane += f(v);
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// How many tensor operands `frame` has: its arguments less a last chain.
pub(crate) fn operands(frame: &KernelFrame<'_>) -> usize {
    let count = frame.num_arguments();
    match frame.arguments().last() {
        Some(last) if last.try_get::<Chain>().is_ok() => count - 1,
        _ => count,
    }
}

/// Operand `i` of `frame`, which must be an f32 dense tensor, shared so that tasks can read it.
pub(crate) fn floats(frame: &KernelFrame<'_>, i: usize) -> Result<Arc<Floats>, KernelError> {
    let tensor = frame.get::<DenseHostTensor>(i)?;
    if tensor.dtype() != DType::F32 {
        return Err(format!("{}: operand {i} holds {:?} elements, not f32", frame.kernel_name(), tensor.dtype()).into());
    }
    Ok(shared_floats(tensor))
}

/// The elements of `tensor`, which holds f32s, shared so that tasks can read them: in place
/// when its buffer is read-only, else a copy.
pub(crate) fn shared_floats(tensor: &DenseHostTensor) -> Arc<Floats> {
    // Shapes hold no negative dimensions (`TensorShape::new` refuses them).
    let dims = tensor.shape().dims().iter().map(|&d| d as usize).collect();
    let buffer = tensor.buffer();
    let in_place = buffer.is_read_only()
        && cfg!(target_endian = "little")
        && buffer.as_ptr().align_offset(std::mem::align_of::<f32>()) == 0;
    let data = if in_place {
        Elements::InPlace { start: buffer.as_ptr().cast(), len: tensor.num_elements(), _tensor: tensor.clone() }
    } else {
        Elements::Copied(tensor.with_bytes(|bytes| bytes.chunks_exact(4).map(f32::read).collect()))
    };
    Arc::new(Floats { dims, data })
}

/// The i64 array attribute `name`, `default` when absent.
pub(crate) fn ints(site: &KernelSite<'_>, name: &str, default: &[i64]) -> Result<Vec<i64>, KernelError> {
    Ok(match site.find_attribute(name)? {
        Some(attribute) => attribute.array::<i64>()?.to_vec(),
        None => default.to_vec(),
    })
}

/// The i64 attribute `name`, `default` when absent.
pub(crate) fn int(site: &KernelSite<'_>, name: &str, default: i64) -> Result<i64, KernelError> {
    Ok(match site.find_attribute(name)? {
        Some(attribute) => attribute.scalar::<i64>()?,
        None => default,
    })
}

/// The f32 attribute `name`, `default` when absent.
pub(crate) fn float(site: &KernelSite<'_>, name: &str, default: f32) -> Result<f32, KernelError> {
    Ok(match site.find_attribute(name)? {
        Some(attribute) => attribute.scalar::<f32>()?,
        None => default,
    })
}

/// `values` (dimensions, strides, counts) as non-negative sizes, or an error naming the attribute.
pub(crate) fn sizes(site: &KernelSite<'_>, name: &str, values: &[i64]) -> Result<Vec<usize>, KernelError> {
    values
        .iter()
        .map(|&v| {
            usize::try_from(v).map_err(|_| format!("{}: {name} {values:?} holds a negative value", site.kernel_name()))
        })
        .collect::<Result<_, _>>()
        .map_err(KernelError::from)
}

/// Shapes of the operands in an error: `nn.add.f32: cannot broadcast [2, 3] with [4]`.
pub(crate) fn shape_error(site: &KernelSite<'_>, what: impl std::fmt::Display) -> KernelError {
    format!("{}: {what}", site.kernel_name()).into()
}
