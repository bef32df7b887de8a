//! `!hal.buffer_view`: a buffer seen as a tensor — shape, element type and encoding. This is what
//! tensor arguments and results of compiled functions are.

use std::any::Any;
use std::sync::Arc;

use smallvec::SmallVec;

use super::buffer::{self, memory_type, usage, Buffer};
use super::device::Allocator;
use super::element_type::{ElementType, NumericalType};
use super::heap::HeapAllocator;
use rtx_host::{Diagnostic, StatusCode};
use rtx_vm::buffer::ByteBuffer;
use rtx_vm::refs::{Ref, RefObject};

/// A view's dimensions, inline up to rank 4: a program makes a view for each result of each
/// call, and most tensors have at most four dimensions.
pub type Shape = SmallVec<[i64; 4]>;

/// `IREE_HAL_ENCODING_TYPE_DENSE_ROW_MAJOR`.
pub const DENSE_ROW_MAJOR: u32 = 1;
/// `IREE_HAL_ENCODING_TYPE_OPAQUE`: the data is not interpreted (assertions let it pass).
pub const OPAQUE_ENCODING: u32 = 0;

/// The bytes a dense row-major tensor of `shape` and `element_type` takes (sub-byte elements
/// packed, as the HAL stores them), or INVALID_ARGUMENT naming the problem.
pub fn dense_byte_length(element_type: u32, shape: &[i64]) -> Result<usize, Diagnostic> {
    let invalid = |message: String| Diagnostic::new(StatusCode::InvalidArgument, message);
    let bits = ElementType(element_type).bit_count();
    if bits == 0 {
        return Err(invalid(format!(
            "element type 0x{element_type:08X} has no size (its low byte, the bit count, is 0); use an IREE \
             element type code such as 0x21000020 (f32)"
        )));
    }
    let too_large =
        || invalid(format!("shape {shape:?} of {} elements is too large to address", ElementType(element_type)));
    let mut count: usize = 1;
    for (index, &dim) in shape.iter().enumerate() {
        let dim = usize::try_from(dim)
            .map_err(|_| invalid(format!("dimension {index} of shape {shape:?} is negative ({dim})")))?;
        count = count.checked_mul(dim).ok_or_else(too_large)?;
    }
    Ok(count.checked_mul(bits).ok_or_else(too_large)?.div_ceil(8))
}

/// A tensor view of a buffer.
#[derive(Debug)]
pub struct BufferView {
    /// The `hal.buffer` ref (returned as itself by `buffer_view.buffer`).
    buffer: Ref,
    shape: Shape,
    element_type: u32,
    encoding: u32,
}

impl RefObject for BufferView {
    fn type_name(&self) -> &'static str {
        "hal.buffer_view"
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl BufferView {
    /// A view of `buffer` (a `hal.buffer` ref).
    pub fn new(
        buffer: Ref,
        shape: impl Into<Shape>,
        element_type: u32,
        encoding: u32,
    ) -> Result<BufferView, Diagnostic> {
        let shape = shape.into();
        buffer::deref(&buffer)?;
        if let Some(dim) = shape.iter().find(|&&d| d < 0) {
            return Err(Diagnostic::new(StatusCode::InvalidArgument, format!("negative dimension {dim} in a shape")));
        }
        Ok(BufferView { buffer, shape, element_type, encoding })
    }

    /// A dense row-major view of a copy of host `bytes` (how hosts pass tensors in), which must
    /// be exactly what `shape` of `element_type` takes: INVALID_ARGUMENT naming the numbers
    /// otherwise.
    pub fn from_host(shape: Vec<i64>, element_type: u32, bytes: &[u8]) -> Result<BufferView, Diagnostic> {
        let needed = dense_byte_length(element_type, &shape)?;
        if bytes.len() != needed {
            return Err(Diagnostic::new(
                StatusCode::InvalidArgument,
                format!(
                    "shape {shape:?} of {} (0x{element_type:08X}) needs {needed} bytes, but {} were given",
                    ElementType(element_type),
                    bytes.len()
                ),
            ));
        }
        let buffer = HeapAllocator::wrap(ByteBuffer::from_bytes(bytes)?, memory_type::CPU, usage::CPU);
        BufferView::new(buffer.into_ref(), shape, element_type, DENSE_ROW_MAJOR)
    }

    /// A copy of the viewed bytes (how hosts read tensors out), read through the buffer's
    /// mapping or its device.
    pub fn to_vec(&self) -> Result<Vec<u8>, Diagnostic> {
        self.buffer().to_vec()
    }

    pub fn buffer_ref(&self) -> &Ref {
        &self.buffer
    }

    pub fn buffer(&self) -> &Buffer {
        buffer::deref(&self.buffer).expect("checked at construction")
    }

    pub fn shape(&self) -> &[i64] {
        &self.shape
    }

    pub fn element_type(&self) -> u32 {
        self.element_type
    }

    pub fn encoding(&self) -> u32 {
        self.encoding
    }

    /// This view where `allocator`'s device can use its buffer, otherwise the same view over a
    /// copy in the device's memory ([`Allocator::adopt`]).
    pub fn adopted_by(view: &Arc<BufferView>, allocator: &Allocator) -> Result<Arc<BufferView>, Diagnostic> {
        let buffer = view.buffer();
        let adopted = allocator.adopt(buffer)?;
        if Arc::ptr_eq(adopted.memory(), buffer.memory()) {
            return Ok(view.clone());
        }
        Ok(Arc::new(BufferView::new(adopted.into_ref(), view.shape.clone(), view.element_type, view.encoding)?))
    }

    pub fn into_ref(self) -> Ref {
        Ref::Object(Arc::new(self))
    }

    /// The VM ref of a shared view (what a `!hal.buffer_view` argument register holds).
    pub fn shared_to_ref(view: Arc<BufferView>) -> Ref {
        Ref::Object(view as Arc<dyn RefObject>)
    }

    /// The view a VM ref holds, as a shared `Arc` (what hosts hold), or `None` for another type.
    pub fn shared_from_ref(value: &Ref) -> Option<Arc<BufferView>> {
        let Ref::Object(object) = value else { return None };
        if !object.as_any().is::<BufferView>() {
            return None;
        }
        let raw = Arc::into_raw(Arc::clone(object));
        // SAFETY: the object's concrete type is `BufferView` (checked above), so the data pointer
        // of the `Arc<dyn RefObject>` is that of an `Arc<BufferView>` with the same allocation
        // layout: this is what `Arc::downcast` does for `dyn Any` (which `RefObject` cannot be
        // upcast to on the crate's minimum Rust version). The clone's reference moves to the
        // returned `Arc`.
        Some(unsafe { Arc::from_raw(raw.cast::<BufferView>()) })
    }

    /// `hal.buffer_view.assert`: encoding, element type, rank and dimensions as the program
    /// expects them, with IREE's messages (the caller prefixes the program's name for the value).
    pub fn check(&self, element_type: u32, encoding: u32, shape: &[i64]) -> Result<(), Diagnostic> {
        let fail = |message: String| Err(Diagnostic::new(StatusCode::InvalidArgument, message));
        if self.encoding != OPAQUE_ENCODING && self.encoding != encoding {
            return fail(format!("encoding mismatch; expected {encoding:08X} but have {:08X}", self.encoding));
        }
        if !element_types_compatible(self.element_type, element_type) {
            return fail(format!(
                "element type mismatch; expected {} ({element_type:08X}) but have {} ({:08X})",
                ElementType(element_type),
                ElementType(self.element_type),
                self.element_type
            ));
        }
        let scalar = |rank: usize| if rank == 0 { " (scalar)" } else { "" };
        // Shape failures carry both shapes, as IREE annotates them.
        let shapes = || {
            let text = |dims: &[i64]| dims.iter().map(i64::to_string).collect::<Vec<_>>().join("x");
            format!("; expected shape `{}`, actual shape `{}`", text(shape), text(&self.shape))
        };
        if self.shape.len() != shape.len() {
            return fail(format!(
                "shape rank mismatch; expected {}{} but have {}{}{}",
                shape.len(),
                scalar(shape.len()),
                self.shape.len(),
                scalar(self.shape.len()),
                shapes()
            ));
        }
        if let Some(i) = (0..shape.len()).find(|&i| self.shape[i] != shape[i]) {
            return fail(format!(
                "shape dimension {i} mismatch; expected {} but have {}{}",
                shape[i],
                self.shape[i],
                shapes()
            ));
        }
        Ok(())
    }
}

/// Whether data of `actual` type may be used as `expected`: opaque data passes, integers of one
/// width pass whatever their signedness, anything else must be equal (IREE's rule).
fn element_types_compatible(actual: u32, expected: u32) -> bool {
    let (actual, expected) = (ElementType(actual), ElementType(expected));
    actual.numerical_type() == NumericalType::UNKNOWN
        || (actual.is_integer() && expected.is_integer() && actual.bit_count() == expected.bit_count())
        || actual == expected
}

/// The buffer view a ref holds, or INVALID_ARGUMENT naming what was there.
#[inline]
pub fn deref(value: &Ref) -> Result<&BufferView, Diagnostic> {
    value.downcast::<BufferView>().ok_or_else(|| buffer::wrong_type("hal.buffer_view", value))
}

#[cfg(test)]
mod tests {
    use super::*;

    const F32: u32 = 0x2100_0020;
    const I32: u32 = 0x1000_0020;
    const SI32: u32 = 0x1100_0020;

    fn view(shape: Vec<i64>, element_type: u32) -> BufferView {
        let buffer = crate::backend::AllocatorBackend::allocate(
            &HeapAllocator::default(),
            memory_type::DEVICE_LOCAL,
            usage::TRANSFER,
            64,
        )
        .unwrap();
        BufferView::new(buffer.into_ref(), shape, element_type, DENSE_ROW_MAJOR).unwrap()
    }

    #[test]
    fn assertions_say_what_differs() {
        let v = view(vec![2, 3], F32);
        v.check(F32, DENSE_ROW_MAJOR, &[2, 3]).unwrap();
        let message = |r: Result<(), Diagnostic>| r.unwrap_err().message;
        assert_eq!(
            message(v.check(F32, DENSE_ROW_MAJOR, &[2, 4])),
            "shape dimension 1 mismatch; expected 4 but have 3; expected shape `2x4`, actual shape `2x3`"
        );
        assert_eq!(
            message(v.check(F32, DENSE_ROW_MAJOR, &[])),
            "shape rank mismatch; expected 0 (scalar) but have 2; expected shape ``, actual shape `2x3`"
        );
        assert_eq!(
            message(v.check(I32, DENSE_ROW_MAJOR, &[2, 3])),
            "element type mismatch; expected i32 (10000020) but have f32 (21000020)"
        );
        // Signless and signed integers of one width are interchangeable.
        view(vec![4], SI32).check(I32, DENSE_ROW_MAJOR, &[4]).unwrap();
    }
}
