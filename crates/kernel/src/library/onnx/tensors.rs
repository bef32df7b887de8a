//! What every `onnx.<Op>` kernel reads and makes: its inputs by ONNX index ([`Inputs`]), their
//! elements in the type it computes in ([`Typed`], [`Value`]), and new tensors of any element
//! type for its outputs.

use std::cmp::Ordering;

use half::{bf16, f16};
use rtx_host::{Diagnostic, StatusCode};

use super::dispatch::{float, numeric};
use crate::dtype::DType;
pub(crate) use crate::library::nn::layout::strides;
use crate::library::nn::{int, ints};
use crate::tensor::{DenseHostTensor, TensorShape};
use crate::{KernelError, KernelFrame, KernelSite};

/// A type an operator computes in, and how an element of each [`DType`] it stands for is read
/// and written (little-endian, as dense host tensors hold them; half floats as `f32`).
pub(crate) trait Value: Copy + PartialEq + PartialOrd + Send + Sync + 'static {
    fn load(dtype: DType, bytes: &[u8]) -> Self;
    fn store(self, dtype: DType, bytes: &mut [u8]);
    /// Every element of `bytes` (of `dtype`, `size` bytes each): [`Value::load`] on each, which a
    /// type may do faster by choosing its conversion once.
    fn load_all(dtype: DType, size: usize, bytes: &[u8]) -> Vec<Self> {
        bytes.chunks_exact(size).map(|b| Self::load(dtype, b)).collect()
    }
    /// [`Value::store`] of each of `values` into `bytes`.
    fn store_all(values: &[Self], dtype: DType, size: usize, bytes: &mut [u8]) {
        for (value, out) in values.iter().zip(bytes.chunks_exact_mut(size)) {
            value.store(dtype, out);
        }
    }
    /// The value as a double (exact for every type but the widest integers).
    fn to_f64(self) -> f64;
    /// `value` converted as a C cast converts it (truncation towards zero, saturation of the
    /// float-to-integer casts as Rust's `as` does).
    fn from_f64(value: f64) -> Self;
    /// The value exactly, for integers and booleans (`None` for floats).
    fn to_integer(self) -> Option<i128>;
    /// `value` converted as C converts an integer (wrapping to the width of an integer type).
    fn from_integer(value: i128) -> Self;
}

macro_rules! integer_value {
    ($($t:ty => $exact:expr),*) => {$(
        impl Value for $t {
            #[inline]
            fn load(_: DType, bytes: &[u8]) -> $t {
                <$t>::from_le_bytes(bytes.try_into().expect("callers pass the element's size"))
            }
            #[inline]
            fn store(self, _: DType, bytes: &mut [u8]) {
                bytes.copy_from_slice(&self.to_le_bytes());
            }
            #[inline]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline]
            fn from_f64(value: f64) -> $t {
                value as $t
            }
            #[inline]
            fn to_integer(self) -> Option<i128> {
                $exact.then_some(self as i128)
            }
            #[inline]
            fn from_integer(value: i128) -> $t {
                value as $t
            }
        }
    )*};
}
integer_value!(u8 => true, u16 => true, u32 => true, u64 => true, i8 => true, i16 => true, i32 => true,
               i64 => true, f64 => false);

impl Value for f32 {
    fn load_all(dtype: DType, size: usize, bytes: &[u8]) -> Vec<f32> {
        match dtype {
            DType::F32 => bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect(),
            _ => bytes.chunks_exact(size).map(|b| f32::load(dtype, b)).collect(),
        }
    }
    fn store_all(values: &[f32], dtype: DType, size: usize, bytes: &mut [u8]) {
        match dtype {
            DType::F32 => {
                for (value, out) in values.iter().zip(bytes.chunks_exact_mut(4)) {
                    out.copy_from_slice(&value.to_le_bytes());
                }
            }
            _ => {
                for (value, out) in values.iter().zip(bytes.chunks_exact_mut(size)) {
                    value.store(dtype, out);
                }
            }
        }
    }
    #[inline]
    fn load(dtype: DType, bytes: &[u8]) -> f32 {
        let bits16 = || u16::from_le_bytes([bytes[0], bytes[1]]);
        match dtype {
            DType::F16 => f16::from_bits(bits16()).to_f32(),
            DType::BF16 => bf16::from_bits(bits16()).to_f32(),
            _ => f32::from_le_bytes(bytes.try_into().expect("callers pass the element's size")),
        }
    }
    #[inline]
    fn store(self, dtype: DType, bytes: &mut [u8]) {
        match dtype {
            DType::F16 => bytes.copy_from_slice(&f16::from_f32(self).to_bits().to_le_bytes()),
            DType::BF16 => bytes.copy_from_slice(&bf16::from_f32(self).to_bits().to_le_bytes()),
            _ => bytes.copy_from_slice(&self.to_le_bytes()),
        }
    }
    #[inline]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    #[inline]
    fn from_f64(value: f64) -> f32 {
        value as f32
    }
    #[inline]
    fn to_integer(self) -> Option<i128> {
        None
    }
    #[inline]
    fn from_integer(value: i128) -> f32 {
        value as f32
    }
}

impl Value for bool {
    #[inline]
    fn load(_: DType, bytes: &[u8]) -> bool {
        bytes[0] != 0
    }
    #[inline]
    fn store(self, _: DType, bytes: &mut [u8]) {
        bytes[0] = u8::from(self);
    }
    #[inline]
    fn to_f64(self) -> f64 {
        f64::from(u8::from(self))
    }
    #[inline]
    fn from_f64(value: f64) -> bool {
        value != 0.0
    }
    #[inline]
    fn to_integer(self) -> Option<i128> {
        Some(i128::from(self))
    }
    #[inline]
    fn from_integer(value: i128) -> bool {
        value != 0
    }
}

/// A tensor's dimensions and its elements in the type an operator computes in.
pub(crate) struct Typed<T> {
    pub dims: Vec<usize>,
    pub values: Vec<T>,
}

impl<T: Value> Typed<T> {
    /// The elements of `tensor`, whose element type must be one `T` stands for.
    pub fn read(tensor: &DenseHostTensor) -> Typed<T> {
        let dtype = tensor.dtype();
        let size = dtype.byte_size().expect("dense tensors have sized elements");
        let values = tensor.with_bytes(|bytes| T::load_all(dtype, size, bytes));
        Typed { dims: dims(tensor), values }
    }

    /// A tensor of `dtype` (one `T` stands for) with these dimensions and elements.
    pub fn into_tensor(self, frame: &KernelFrame<'_>, dtype: DType) -> Result<DenseHostTensor, KernelError> {
        let shape = TensorShape::new(self.dims.iter().map(|&d| d as i64).collect())?;
        let tensor = DenseHostTensor::new_zeroed(frame.host(), dtype, shape)?;
        let size = dtype.byte_size().expect("dense tensors have sized elements");
        tensor.buffer().with_bytes_mut(|bytes| T::store_all(&self.values, dtype, size, bytes))?;
        Ok(tensor)
    }
}

/// A tensor's dimensions as sizes (shapes hold no negative dimension).
pub(crate) fn dims(tensor: &DenseHostTensor) -> Vec<usize> {
    tensor.shape().dims().iter().map(|&d| d as usize).collect()
}

/// The inputs of a node by their ONNX index: the operands present (tensors share their
/// buffers: holding them does not copy), and where each stands.
pub(crate) struct Inputs {
    tensors: Vec<DenseHostTensor>,
    /// The ONNX index of each operand, in order.
    slots: Vec<usize>,
    kernel: String,
}

impl Inputs {
    pub fn new(frame: &KernelFrame<'_>) -> Result<Inputs, KernelError> {
        let count = frame.num_arguments();
        let listed = ints(frame, "_inputs", &[])?;
        let slots = if listed.is_empty() {
            (0..count).collect()
        } else if listed.len() == count {
            listed.iter().map(|&slot| slot as usize).collect()
        } else {
            return Err(error(frame, format_args!("`_inputs` lists {} inputs for {count} operands", listed.len())));
        };
        let tensors =
            (0..count).map(|i| Ok(frame.get::<DenseHostTensor>(i)?.clone())).collect::<Result<_, KernelError>>()?;
        Ok(Inputs { tensors, slots, kernel: frame.kernel_name().to_owned() })
    }

    /// Input `index` when the node has it.
    pub fn optional(&self, index: usize) -> Option<&DenseHostTensor> {
        self.slots.iter().position(|&slot| slot == index).map(|operand| &self.tensors[operand])
    }

    /// Input `index`, which the operator needs.
    pub fn required(&self, index: usize) -> Result<&DenseHostTensor, KernelError> {
        self.optional(index).ok_or_else(|| format!("{}: input {index} is missing", self.kernel).into())
    }

    /// Every input present, in order (a variadic operator's).
    pub fn all(&self) -> &[DenseHostTensor] {
        &self.tensors
    }
}

/// An error in what a kernel was given (shapes, values, attributes), naming the kernel:
/// `INVALID_ARGUMENT; onnx.Add: cannot broadcast [2, 3] with [4]`.
pub(crate) fn error(site: &KernelSite<'_>, what: impl std::fmt::Display) -> KernelError {
    KernelError::new(StatusCode::InvalidArgument, format!("{}: {what}", site.kernel_name()))
}

/// UNIMPLEMENTED for an element type the operator does not take.
pub(crate) fn unsupported(site: &KernelSite<'_>, dtype: DType) -> KernelError {
    let what = format!("{}: {} elements are not supported", site.kernel_name(), crate::tensor::dtype_name(dtype));
    KernelError::new(StatusCode::Unimplemented, what)
}

/// The model's opset (`_opset`), the latest when the kernel has none.
pub(crate) fn opset(site: &KernelSite<'_>) -> Result<i64, KernelError> {
    int(site, "_opset", i64::MAX)
}

/// The number of elements of a tensor of `dims`, or an error when it overflows.
pub(crate) fn count(dims: &[usize]) -> Result<usize, String> {
    dims.iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| format!("a shape of {dims:?} has too many elements"))
}

/// The string attribute `name`, `default` when the kernel has none.
pub(crate) fn string<'a>(site: &KernelSite<'a>, name: &str, default: &'a str) -> Result<&'a str, KernelError> {
    match site.find_attribute(name)? {
        Some(attribute) => Ok(attribute.string()?),
        None => Ok(default),
    }
}

/// `f` on the element offsets, in each of the `strides` (one stride per dimension), of every
/// index of `dims` in row-major order; offsets move by the strides, which may be 0 (a repeat).
pub(crate) fn walk(dims: &[usize], strides: &[&[usize]], mut f: impl FnMut(&[usize])) {
    if dims.contains(&0) {
        return;
    }
    let mut index = vec![0; dims.len()];
    let mut offsets = vec![0; strides.len()];
    loop {
        f(&offsets);
        let mut axis = dims.len();
        loop {
            if axis == 0 {
                return;
            }
            axis -= 1;
            index[axis] += 1;
            for (offset, stride) in offsets.iter_mut().zip(strides) {
                *offset += stride[axis];
            }
            if index[axis] < dims[axis] {
                break;
            }
            for (offset, stride) in offsets.iter_mut().zip(strides) {
                *offset -= stride[axis] * dims[axis];
            }
            index[axis] = 0;
        }
    }
}

/// The elements of a tensor of any number type as f64s (exact up to 53 bits): scales, zero
/// points, quantized values.
pub(crate) fn wide(site: &KernelSite<'_>, tensor: &DenseHostTensor) -> Result<Typed<f64>, KernelError> {
    let dtype = tensor.dtype();
    super::dispatch::numeric!(dtype, T => {
        let typed = Typed::<T>::read(tensor);
        Ok(Typed { dims: typed.dims, values: typed.values.iter().map(|v| v.to_f64()).collect() })
    }, Err(unsupported(site, dtype)))
}

/// `value` rounded to the precision of the floats of `dtype` (f64 itself for other types).
pub(crate) fn stored(dtype: DType, value: f64) -> f64 {
    match dtype {
        DType::F32 => f64::from(value as f32),
        DType::F16 => f16::from_f64(value).to_f64(),
        DType::BF16 => bf16::from_f64(value).to_f64(),
        _ => value,
    }
}

/// A tensor of `dtype` (any number type) holding `values` converted as C casts them.
pub(crate) fn narrow(
    frame: &KernelFrame<'_>,
    dims: Vec<usize>,
    values: &[f64],
    dtype: DType,
) -> Result<DenseHostTensor, KernelError> {
    super::dispatch::numeric!(dtype, T => {
        Typed { dims, values: values.iter().map(|&v| T::from_f64(v)).collect::<Vec<T>>() }.into_tensor(frame, dtype)
    }, Err(unsupported(frame, dtype)))
}

/// Whether the kernel has the attribute `name` (where its absence means something of its own).
pub(crate) fn has_attribute(site: &KernelSite<'_>, name: &str) -> bool {
    matches!(site.find_attribute(name), Ok(Some(_)))
}

/// The elements of a tensor of integers as i64s (saturating), or of floats truncated: shapes,
/// axes, indices, counts.
pub(crate) fn integers(site: &KernelSite<'_>, tensor: &DenseHostTensor) -> Result<Vec<i64>, KernelError> {
    let dtype = tensor.dtype();
    numeric!(dtype, T => {
        Ok(Typed::<T>::read(tensor).values.into_iter().map(|v| match v.to_integer() {
            Some(i) => i64::try_from(i).unwrap_or(if i < 0 { i64::MIN } else { i64::MAX }),
            None => v.to_f64() as i64,
        }).collect())
    }, Err(unsupported(site, dtype)))
}

/// The one element of a scalar (or one-element) integer tensor.
pub(crate) fn integer(site: &KernelSite<'_>, tensor: &DenseHostTensor) -> Result<i64, KernelError> {
    match integers(site, tensor)?[..] {
        [value] => Ok(value),
        ref values => Err(error(site, format_args!("{} elements where one is expected", values.len()))),
    }
}

/// `axis` (negative counts from the end) as an index below `rank`.
pub(crate) fn axis(site: &KernelSite<'_>, axis: i64, rank: usize) -> Result<usize, KernelError> {
    let index = if axis < 0 { axis.checked_add(rank as i64) } else { Some(axis) };
    index
        .and_then(|i| usize::try_from(i).ok())
        .filter(|&i| i < rank)
        .ok_or_else(|| error(site, format_args!("axis {axis} is outside a rank of {rank}")))
}

/// `axes` normalized against `rank`, each once.
pub(crate) fn distinct_axes(site: &KernelSite<'_>, axes: &[i64], rank: usize) -> Result<Vec<usize>, KernelError> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let a = axis(site, a, rank)?;
        if out.contains(&a) {
            return Err(error(site, format_args!("axes {axes:?} repeat an axis")));
        }
        out.push(a);
    }
    Ok(out)
}

/// [`count`] as a kernel error.
pub(crate) fn element_count(site: &KernelSite<'_>, dims: &[usize]) -> Result<usize, KernelError> {
    count(dims).map_err(|e| error(site, e))
}

/// Non-negative `values` (requested dimensions, repeats) as sizes, or an error naming `what`.
pub(crate) fn sizes(site: &KernelSite<'_>, what: &str, values: &[i64]) -> Result<Vec<usize>, KernelError> {
    values
        .iter()
        .map(|&v| usize::try_from(v).map_err(|_| error(site, format_args!("{what} {values:?} holds a negative value"))))
        .collect()
}

/// A zeroed tensor of `dtype` and `dims`; an error, not an abort, when it is too large.
pub(crate) fn new_tensor(site: &KernelSite<'_>, dtype: DType, dims: &[usize]) -> Result<DenseHostTensor, KernelError> {
    let dims = dims
        .iter()
        .map(|&d| i64::try_from(d).map_err(|_| error(site, format_args!("dimension {d} is too large"))))
        .collect::<Result<_, _>>()?;
    let shape = TensorShape::new(dims)?;
    DenseHostTensor::new_zeroed(site.host(), dtype, shape)
        .map_err(|e| KernelError(Diagnostic { message: format!("{}: {}", site.kernel_name(), e.message), ..e }))
}

/// `x`'s elements under other dimensions (of as many elements), sharing its buffer.
pub(crate) fn reshaped(
    site: &KernelSite<'_>,
    x: &DenseHostTensor,
    dims: &[usize],
) -> Result<DenseHostTensor, KernelError> {
    let count = element_count(site, dims)?;
    if count != x.num_elements() {
        return Err(error(site, format_args!("cannot give {} elements the shape {dims:?}", x.num_elements())));
    }
    let shape = TensorShape::new(dims.iter().map(|&d| d as i64).collect())?;
    Ok(DenseHostTensor::from_buffer(x.dtype(), shape, x.buffer().clone())?)
}

/// A tensor of `x`'s element type and `dims` whose elements, in row-major order, are `x`'s at
/// the element offsets `sources` gives, or `fill` (zeros without one) where it gives `None`.
/// `sources` is called once the result is allocated, and only when it has elements.
pub(crate) fn take<I: Iterator<Item = Option<usize>>>(
    frame: &KernelSite<'_>,
    x: &DenseHostTensor,
    dims: &[usize],
    fill: Option<&[u8]>,
    sources: impl FnOnce() -> I,
) -> Result<DenseHostTensor, KernelError> {
    x.with_bytes(|bytes| take_bytes(frame, x.dtype(), bytes, dims, fill, sources))
}

/// As [`take`], from the elements of `dtype` that `source` holds (an attribute's, a few made).
pub(crate) fn take_bytes<I: Iterator<Item = Option<usize>>>(
    frame: &KernelSite<'_>,
    dtype: DType,
    source: &[u8],
    dims: &[usize],
    fill: Option<&[u8]>,
    sources: impl FnOnce() -> I,
) -> Result<DenseHostTensor, KernelError> {
    let size = dtype.byte_size().ok_or_else(|| unsupported(frame, dtype))?;
    if fill.is_some_and(|fill| fill.len() != size) {
        return Err(error(frame, "the fill value is not one element of the tensor's type"));
    }
    let out = new_tensor(frame, dtype, dims)?;
    if out.num_elements() == 0 {
        return Ok(out);
    }
    let outside = out.buffer().with_bytes_mut(|bytes| {
        for (element, from) in bytes.chunks_exact_mut(size).zip(sources()) {
            match (from, fill) {
                (Some(at), _) => match at.checked_mul(size).and_then(|start| source.get(start..start + size)) {
                    Some(value) => element.copy_from_slice(value),
                    None => return Some(at),
                },
                (None, Some(fill)) => element.copy_from_slice(fill),
                (None, None) => {}
            }
        }
        None
    })?;
    match outside {
        Some(at) => Err(error(frame, format_args!("element {at} is outside the input"))),
        None => Ok(out),
    }
}

/// The element offsets of a row-major walk over dimensions whose every index maps, axis by
/// axis, to an offset in the source (the offsets of each axis summed) or to nothing (the fill).
/// The dimensions are the maps' lengths.
pub(crate) struct Walk {
    maps: Vec<Vec<Option<usize>>>,
    index: Vec<usize>,
    done: bool,
}

impl Walk {
    pub fn new(maps: Vec<Vec<Option<usize>>>) -> Walk {
        let done = maps.iter().any(Vec::is_empty);
        Walk { index: vec![0; maps.len()], maps, done }
    }

    /// The walk of a strided view: axis `k` reads `dims[k]` indices `strides[k]` elements apart.
    pub fn strided(dims: &[usize], strides: &[usize]) -> Walk {
        Walk::new(dims.iter().zip(strides).map(|(&d, &s)| (0..d).map(|i| Some(i * s)).collect()).collect())
    }
}

impl Iterator for Walk {
    type Item = Option<usize>;

    fn next(&mut self) -> Option<Option<usize>> {
        if self.done {
            return None;
        }
        let offset = self.maps.iter().zip(&self.index).try_fold(0, |sum, (map, &i)| map[i].map(|at| sum + at));
        let mut axis = self.maps.len();
        loop {
            if axis == 0 {
                self.done = true;
                break;
            }
            axis -= 1;
            self.index[axis] += 1;
            if self.index[axis] < self.maps[axis].len() {
                break;
            }
            self.index[axis] = 0;
        }
        Some(offset)
    }
}

/// A total order on elements: numbers as they compare, NaN above every number and equal to NaN.
pub(crate) fn order<T: Value>(a: T, b: T) -> Ordering {
    #[allow(clippy::eq_op)]
    let nan = |v: T| v != v;
    a.partial_cmp(&b).unwrap_or_else(|| nan(a).cmp(&nan(b)))
}

/// `count` copies of `value`, or an error (not an abort) when there is no memory for them.
pub(crate) fn filled<T: Clone>(count: usize, value: T) -> Result<Vec<T>, String> {
    let mut values = Vec::new();
    values.try_reserve_exact(count).map_err(|_| format!("no memory for {count} elements"))?;
    values.resize(count, value);
    Ok(values)
}

/// Registers `onnx.<name>`, a kernel whose one result `op` makes from the node's inputs.
pub(crate) fn register_one<F>(registry: &mut crate::KernelRegistry, name: &str, op: F)
where
    F: Fn(&KernelFrame<'_>, &Inputs) -> Result<DenseHostTensor, KernelError> + Send + Sync + 'static,
{
    registry.add_kernel(&format!("onnx.{name}"), move |frame: &mut KernelFrame<'_>| {
        let inputs = Inputs::new(frame)?;
        let result = op(frame, &inputs)?;
        frame.emplace_result(0, result)
    });
}

/// An empty vector with room for `len` elements; an error, not an abort, when memory for them
/// cannot be had.
pub(crate) fn with_capacity<T>(site: &KernelSite<'_>, len: usize) -> Result<Vec<T>, KernelError> {
    let mut values = Vec::new();
    values.try_reserve_exact(len).map_err(|_| error(site, format_args!("{len} elements do not fit in memory")))?;
    Ok(values)
}

/// The element offsets of a row-major walk over `dims` whose axis `k` steps `strides[k]`.
pub(crate) fn strided_offsets(
    site: &KernelSite<'_>,
    dims: &[usize],
    strides: &[usize],
) -> Result<Vec<usize>, KernelError> {
    let count = element_count(site, dims)?;
    let mut offsets = with_capacity(site, count)?;
    let mut index = vec![0; dims.len()];
    let mut offset = 0usize;
    while offsets.len() < count {
        offsets.push(offset);
        for k in (0..dims.len()).rev() {
            index[k] += 1;
            offset = offset.wrapping_add(strides[k]);
            if index[k] < dims[k] {
                break;
            }
            index[k] = 0;
            offset = offset.wrapping_sub(strides[k].wrapping_mul(dims[k]));
        }
    }
    Ok(offsets)
}

/// A tensor's elements in groups: those along the `grouped` axes (a reduction's axes, softmax's
/// axis) for each position along the other axes. Element `outer[g] + inner[i]` is the `i`th of
/// group `g`; groups run in row-major order over the other axes (as a reduction's results do),
/// each group's elements in row-major order over the grouped axes.
pub(crate) struct Groups {
    pub outer: Vec<usize>,
    pub inner: Vec<usize>,
}

impl Groups {
    pub fn new(site: &KernelSite<'_>, dims: &[usize], grouped: &[bool]) -> Result<Groups, KernelError> {
        let strides = strides(dims);
        let along = |inside: bool| -> Vec<usize> {
            dims.iter().zip(grouped).map(|(&d, &g)| if g == inside { d } else { 1 }).collect()
        };
        let outer = strided_offsets(site, &along(false), &strides)?;
        let inner = strided_offsets(site, &along(true), &strides)?;
        Ok(Groups { outer, inner })
    }

    /// The groups of a tensor's elements, none when it has none (where [`Groups::new`] gives
    /// every empty group of a reduction).
    pub fn of_elements(site: &KernelSite<'_>, dims: &[usize], grouped: &[bool]) -> Result<Groups, KernelError> {
        if dims.contains(&0) {
            return Ok(Groups { outer: Vec::new(), inner: Vec::new() });
        }
        Groups::new(site, dims, grouped)
    }

    /// The offsets of group `g`'s elements.
    fn group(&self, g: usize) -> impl Iterator<Item = usize> + '_ {
        let base = self.outer[g];
        self.inner.iter().map(move |&i| base + i)
    }

    /// `f` of each group of `values` (the tensor's elements), in order.
    pub fn reduce<T: Copy, R>(
        &self,
        site: &KernelSite<'_>,
        values: &[T],
        mut f: impl FnMut(&[T]) -> R,
    ) -> Result<Vec<R>, KernelError> {
        let mut results = with_capacity(site, self.outer.len())?;
        let mut group = Vec::with_capacity(self.inner.len());
        for g in 0..self.outer.len() {
            group.clear();
            group.extend(self.group(g).map(|i| values[i]));
            results.push(f(&group));
        }
        Ok(results)
    }

    /// `f` on each group of `values` (the tensor's elements) in turn: it reads the group's
    /// elements and writes them in place.
    pub fn update<T: Copy>(&self, values: &mut [T], mut f: impl FnMut(&mut [T])) {
        let mut group = Vec::with_capacity(self.inner.len());
        for g in 0..self.outer.len() {
            group.clear();
            group.extend(self.group(g).map(|i| values[i]));
            f(&mut group);
            for (i, value) in self.group(g).zip(&group) {
                values[i] = *value;
            }
        }
    }
}

/// A float tensor's elements (`f16`, `bf16`, `f32`, `f64`) as f64s; other types are an error.
pub(crate) fn read_floats(site: &KernelSite<'_>, tensor: &DenseHostTensor) -> Result<Typed<f64>, KernelError> {
    match tensor.dtype() {
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 => wide(site, tensor),
        dtype => Err(unsupported(site, dtype)),
    }
}

impl Typed<f64> {
    /// A tensor of the float type `dtype` with these dimensions and elements (rounded to it).
    pub fn into_floats(self, frame: &KernelFrame<'_>, dtype: DType) -> Result<DenseHostTensor, KernelError> {
        float!(dtype, T => {
            let values = self.values.into_iter().map(T::from_f64).collect();
            Typed::<T> { dims: self.dims, values }.into_tensor(frame, dtype)
        }, Err(unsupported(frame, dtype)))
    }

    /// The elements broadcast (numpy's rule, one way) to `dims`, or an error naming `what`.
    pub fn expanded(&self, site: &KernelSite<'_>, what: &str, dims: &[usize]) -> Result<Vec<f64>, KernelError> {
        let mismatch = || error(site, format_args!("{what} of shape {:?} does not broadcast to {dims:?}", self.dims));
        let (out, strides) = super::elementwise::broadcast(&[dims, &self.dims]).ok_or_else(mismatch)?;
        if out != dims {
            return Err(mismatch());
        }
        Ok(strided_offsets(site, dims, &strides[1])?.into_iter().map(|i| self.values[i]).collect())
    }
}

/// The float array attribute `name` (ONNX's FLOATS), empty when the kernel has none.
pub(crate) fn floats(site: &KernelSite<'_>, name: &str) -> Result<Vec<f32>, KernelError> {
    Ok(match site.find_attribute(name)? {
        Some(attribute) => attribute.array::<f32>()?.to_vec(),
        None => Vec::new(),
    })
}

/// The string array attribute `name` (ONNX's STRINGS, an aggregate of strings), empty when the
/// kernel has none.
pub(crate) fn strings(site: &KernelSite<'_>, name: &str) -> Result<Vec<String>, KernelError> {
    let Some(attribute) = site.find_attribute(name)? else { return Ok(Vec::new()) };
    let aggregate = attribute.aggregate()?;
    (0..aggregate.len()).map(|i| Ok(aggregate.get(i)?.string()?.to_owned())).collect()
}

/// The elements of the tensor attribute `name` (ONNX's TENSOR, any number type) as f64s, `None`
/// when the kernel has none.
pub(crate) fn dense_values(site: &KernelSite<'_>, name: &str) -> Result<Option<Vec<f64>>, KernelError> {
    let Some(attribute) = site.find_attribute(name)? else { return Ok(None) };
    let dense = attribute.dense()?;
    let dtype = dense.dtype;
    let size = dtype.byte_size().ok_or_else(|| unsupported(site, dtype))?;
    numeric!(dtype, T => {
        Ok(Some(dense.data.chunks_exact(size).map(|b| T::load(dtype, b).to_f64()).collect()))
    }, Err(unsupported(site, dtype)))
}
