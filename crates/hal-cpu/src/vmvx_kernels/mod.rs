//! The `vmvx` native module (version 0): the 32 microkernels that VMVX executables compiled with
//! `--iree-vmvx-enable-microkernels` import (IREE 3.13 `runtime/src/iree/modules/vmvx/exports.inl`
//! and `module.c`, kernels from `runtime/src/iree/builtins/ukernel/`).
//!
//! Every buffer operand arrives as `(buffer, element offset, strides…)` plus sizes, and is mapped
//! the way IREE maps it before any element is touched: sizes and strides must fit IREE's 32-bit
//! limits (`INVALID_ARGUMENT`, "buffer overflow for <operand>"), and the byte range IREE computes
//! from them must lie in the buffer (`OUT_OF_RANGE`, IREE's out-of-bounds message). IREE then
//! trusts its kernels to stay inside that range, which a negative stride or inconsistent
//! pack/unpack sizes can defeat; here those cases are errors too, so no call ever reads or writes
//! outside what was mapped.
//!
//! Inputs are copied out of their buffers once per call; outputs are stored element by element, so
//! the gaps of a strided output (which another dispatch may be writing at the same time) are never
//! rewritten.

mod elementwise;
mod fill_copy;
mod mmt4d;
mod pack;

use std::sync::Arc;

use rtx_hal::args::Args;
use rtx_host::{Diagnostic, StatusCode};
use rtx_vm::buffer::ByteBuffer;
use rtx_vm::native::{Arguments, NativeFunction, NativeModule, NativeOutcome, NativeState};
use rtx_vm::value::Value;

use elementwise::{Binary, Unary};

/// The module name imports use (`vmvx.add.2d.f32`).
pub const NAME: &str = "vmvx";

const UNARY_2D: &str = "0rIIIrIIIII_v";
const BINARY_2D: &str = "0rIIIrIIIrIIIII_v";

type Kernel = fn(&mut Args<'_>) -> Result<Vec<Value>, Diagnostic>;

/// Name, calling convention and implementation of every function, in IREE's (sorted) order.
const FUNCTIONS: [(&str, &str, Kernel); 32] = [
    ("abs.2d.f32", UNARY_2D, |a| elementwise::unary(a, Unary::AbsF32)),
    ("add.2d.f32", BINARY_2D, |a| elementwise::binary(a, Binary::AddF32)),
    ("add.2d.i32", BINARY_2D, |a| elementwise::binary(a, Binary::AddI32)),
    ("and.2d.i32", BINARY_2D, |a| elementwise::binary(a, Binary::AndI32)),
    ("ceil.2d.f32", UNARY_2D, |a| elementwise::unary(a, Unary::CeilF32)),
    ("copy.2d.x16", UNARY_2D, |a| fill_copy::copy(a, 2)),
    ("copy.2d.x32", UNARY_2D, |a| fill_copy::copy(a, 4)),
    ("copy.2d.x64", UNARY_2D, |a| fill_copy::copy(a, 8)),
    ("copy.2d.x8", UNARY_2D, |a| fill_copy::copy(a, 1)),
    ("ctlz.2d.i32", UNARY_2D, |a| elementwise::unary(a, Unary::CtlzI32)),
    ("div.2d.f32", BINARY_2D, |a| elementwise::binary(a, Binary::DivF32)),
    ("divs.2d.i32", BINARY_2D, |a| elementwise::binary(a, Binary::DivSI32)),
    ("divu.2d.i32", BINARY_2D, |a| elementwise::binary(a, Binary::DivUI32)),
    ("exp.2d.f32", UNARY_2D, |a| elementwise::unary(a, Unary::ExpF32)),
    ("fill.2d.x32", "0irIIII_v", fill_copy::fill),
    ("floor.2d.f32", UNARY_2D, |a| elementwise::unary(a, Unary::FloorF32)),
    ("log.2d.f32", UNARY_2D, |a| elementwise::unary(a, Unary::LogF32)),
    ("mmt4d", "0rIIrIIrIIIIIiiii_v", mmt4d::mmt4d),
    ("mul.2d.f32", BINARY_2D, |a| elementwise::binary(a, Binary::MulF32)),
    ("mul.2d.i32", BINARY_2D, |a| elementwise::binary(a, Binary::MulI32)),
    ("neg.2d.f32", UNARY_2D, |a| elementwise::unary(a, Unary::NegF32)),
    ("or.2d.i32", BINARY_2D, |a| elementwise::binary(a, Binary::OrI32)),
    ("pack", "0rIIIrIIIIIIIIIIi_v", pack::pack),
    ("query_tile_sizes.2d", "0IIi_II", mmt4d::query_tile_sizes),
    ("rsqrt.2d.f32", UNARY_2D, |a| elementwise::unary(a, Unary::RsqrtF32)),
    ("shl.2d.i32", BINARY_2D, |a| elementwise::binary(a, Binary::ShlI32)),
    ("shrs.2d.i32", BINARY_2D, |a| elementwise::binary(a, Binary::ShrSI32)),
    ("shru.2d.i32", BINARY_2D, |a| elementwise::binary(a, Binary::ShrUI32)),
    ("sub.2d.f32", BINARY_2D, |a| elementwise::binary(a, Binary::SubF32)),
    ("sub.2d.i32", BINARY_2D, |a| elementwise::binary(a, Binary::SubI32)),
    ("unpack", "0rIIIrIIIIIIIIIi_v", pack::unpack),
    ("xor.2d.i32", BINARY_2D, |a| elementwise::binary(a, Binary::XorI32)),
];

/// The `vmvx` module. It keeps no state: every kernel works on its arguments alone.
#[derive(Debug)]
pub struct VmvxModule {
    functions: Vec<NativeFunction>,
}

impl Default for VmvxModule {
    fn default() -> VmvxModule {
        VmvxModule { functions: FUNCTIONS.iter().map(|(name, cconv, _)| NativeFunction::new(*name, *cconv)).collect() }
    }
}

impl VmvxModule {
    pub fn new() -> VmvxModule {
        VmvxModule::default()
    }
}

impl NativeModule for VmvxModule {
    fn name(&self) -> &str {
        NAME
    }

    fn functions(&self) -> &[NativeFunction] {
        &self.functions
    }

    fn call(
        &self,
        _state: &mut NativeState,
        ordinal: usize,
        arguments: Arguments<'_>,
        results: &mut Vec<Value>,
    ) -> Result<NativeOutcome, Diagnostic> {
        let (name, _, kernel) = FUNCTIONS
            .get(ordinal)
            .ok_or_else(|| Diagnostic::new(StatusCode::NotFound, format!("vmvx function {ordinal} does not exist")))?;
        results.extend(kernel(&mut Args::new(NAME, name, arguments))?);
        Ok(NativeOutcome::Ready)
    }
}

/// An operand as passed, before it is mapped.
struct Layout<'a> {
    operand: &'static str,
    buffer: &'a Arc<ByteBuffer>,
    offset: i64,
    stride0: i64,
    stride1: i64,
}

impl<'a> Layout<'a> {
    /// Reads a `(buffer, offset, stride0, stride1)` group.
    fn strided(args: &mut Args<'a>, operand: &'static str) -> Result<Layout<'a>, Diagnostic> {
        Ok(Layout {
            operand,
            buffer: args.buffer(operand)?,
            offset: args.i64()?,
            stride0: args.i64()?,
            stride1: args.i64()?,
        })
    }

    /// Reads a `(buffer, offset, row stride)` group: rows of contiguous elements.
    fn rows(args: &mut Args<'a>, operand: &'static str) -> Result<Layout<'a>, Diagnostic> {
        Ok(Layout { operand, buffer: args.buffer(operand)?, offset: args.i64()?, stride0: args.i64()?, stride1: 1 })
    }
}

/// Whether an operand is written, which requires a mutable buffer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}

/// An operand mapped like IREE's `MAP_BUFFER_2D_*`: `size0 x size1` elements of `element_size`
/// bytes, element `(i, j)` at element `origin + i * stride0 + j * stride1` of the buffer, all of
/// them proven to lie within the mapped elements `origin..origin + mapped`.
struct Mapped<'a> {
    buffer: &'a ByteBuffer,
    element_size: usize,
    origin: usize,
    mapped: usize,
    stride0: i64,
    stride1: i64,
}

impl<'a> Mapped<'a> {
    /// Maps `layout` for `size0 x size1` elements. The checks are IREE's (sizes below 2^32,
    /// strides in `-1..2^32 - 1`, the byte range it derives — with its wrapping arithmetic, so
    /// degenerate sizes fail or pass as they do there — inside the buffer), then the one IREE
    /// leaves to its kernels: that every element addressed lies in that range.
    fn new(
        args: &Args<'_>,
        layout: &Layout<'a>,
        element_size: usize,
        (size0, size1): (i64, i64),
        access: Access,
    ) -> Result<Mapped<'a>, Diagnostic> {
        let Layout { operand, buffer, offset, stride0, stride1 } = *layout;
        let high = |value: u64| value & 0xffff_ffff_0000_0000 != 0;
        let (s0, s1, t0, t1) = (size0 as u64, size1 as u64, stride0 as u64, stride1 as u64);
        if high(s0) || high(s1) || high(t0.wrapping_add(1)) || high(t1.wrapping_add(1)) {
            return Err(args.error(
                StatusCode::InvalidArgument,
                format!("buffer overflow for {operand} (sizes {size0}x{size1}, strides {stride0}x{stride1})"),
            ));
        }
        if access == Access::Write && !buffer.is_mutable() {
            return Err(args.error(
                StatusCode::PermissionDenied,
                format!("{operand}: buffer is read-only and cannot be mapped for mutation"),
            ));
        }
        let last_index = s0.wrapping_sub(1).wrapping_mul(t0).wrapping_add(s1.wrapping_sub(1).wrapping_mul(t1));
        let size = element_size as u64;
        let length = last_index.wrapping_add(1).wrapping_mul(size);
        // IREE casts a negative offset to a huge one and multiplies with wrapping; here a negative
        // or overflowing offset is simply out of range.
        let start = u64::try_from(offset).ok().and_then(|offset| offset.checked_mul(size));
        let Some(start) = start.filter(|start| start.checked_add(length).is_some_and(|end| end <= buffer.len() as u64))
        else {
            let start = i128::from(offset) * i128::from(size);
            return Err(args.error(
                StatusCode::OutOfRange,
                format!(
                    "{operand}: out-of-bounds access detected (offset={start}, length={length}, alignment={size}, buffer \
                     length={})",
                    buffer.len()
                ),
            ));
        };
        // In bounds, so both fit in usize.
        let (origin, mapped) = ((start / size) as usize, (length / size) as usize);
        if size0 > 0 && size1 > 0 {
            let reach = |count: i64, stride: i64| {
                let span = i128::from(count - 1) * i128::from(stride);
                (span.min(0), span.max(0))
            };
            let ((low0, high0), (low1, high1)) = (reach(size0, stride0), reach(size1, stride1));
            if low0 + low1 < 0 || high0 + high1 >= mapped as i128 {
                return Err(args.error(
                    StatusCode::OutOfRange,
                    format!(
                        "{operand}: strides {stride0}x{stride1} over {size0}x{size1} elements reach outside the {mapped} \
                         elements mapped at offset {offset}"
                    ),
                ));
            }
        }
        Ok(Mapped { buffer, element_size, origin, mapped, stride0, stride1 })
    }

    /// The position of element `(i, j)` relative to the origin. Callers stay within the sizes
    /// the operand was mapped for, where this lies in `0..mapped`.
    fn at(&self, i: usize, j: usize) -> usize {
        (i as i64).wrapping_mul(self.stride0).wrapping_add((j as i64).wrapping_mul(self.stride1)) as usize
    }

    /// A copy of the mapped bytes, for reading.
    fn read(&self) -> Result<Vec<u8>, Diagnostic> {
        self.buffer.read_bytes(self.origin * self.element_size, self.mapped * self.element_size)
    }

    /// The mapped elements as 32-bit words.
    fn read_u32(&self) -> Result<Vec<u32>, Diagnostic> {
        Ok(self.read()?.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect())
    }

    /// Stores a 32-bit element at position `at` (from [`Mapped::at`]).
    fn store_u32(&self, at: usize, value: u32) -> Result<(), Diagnostic> {
        self.buffer.store_i32(self.origin.wrapping_add(at) as i64, value as i32)
    }

    /// Stores one element given as its little-endian bytes (`element_size` of them).
    fn store_bytes(&self, at: usize, bytes: &[u8]) -> Result<(), Diagnostic> {
        let index = self.origin.wrapping_add(at) as i64;
        match *bytes {
            [b] => self.buffer.store_i8(index, b as i8),
            [b0, b1] => self.buffer.store_i16(index, i16::from_le_bytes([b0, b1])),
            [b0, b1, b2, b3] => self.buffer.store_i32(index, i32::from_le_bytes([b0, b1, b2, b3])),
            [b0, b1, b2, b3, b4, b5, b6, b7] => {
                self.buffer.store_i64(index, i64::from_le_bytes([b0, b1, b2, b3, b4, b5, b6, b7]))
            }
            _ => Err(Diagnostic::new(StatusCode::Internal, format!("no {}-byte elements", bytes.len()))),
        }
    }
}

/// `x` as the FPU reads it in a dispatch. IREE's CPU devices run every dispatch with denormals
/// flushed to zero (`super::fpu`), and the instructions its kernels compile to (`roundss` for
/// `ceilf`, `vfmadd`) obey that mode; the software routines Rust's std uses for `ceil`, `floor`
/// and `mul_add` do not, so their operands and results are flushed here (to a zero of the same
/// sign, as the hardware does).
fn flushed(x: f32) -> f32 {
    if x.is_subnormal() {
        0f32.copysign(x)
    } else {
        x
    }
}

/// Element `at` of `bytes` read as `element_size`-byte elements.
fn element(bytes: &[u8], element_size: usize, at: usize) -> Result<&[u8], Diagnostic> {
    bytes
        .get(at * element_size..(at + 1) * element_size)
        .ok_or_else(|| Diagnostic::new(StatusCode::Internal, format!("element {at} lies outside the mapped bytes")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtx_vm::refs::Ref;

    /// Builds the argument list of a call: buffers, i64s and i32s in order.
    pub(super) enum Arg {
        Buf(Arc<ByteBuffer>),
        Null,
        L(i64),
        W(i32),
    }

    pub(super) fn call(function: &str, arguments: Vec<Arg>) -> Result<Vec<Value>, Diagnostic> {
        let module = VmvxModule::new();
        let ordinal = module.functions().iter().position(|f| f.name == function).expect("function exists");
        let values: Vec<Value> = arguments
            .into_iter()
            .map(|a| match a {
                Arg::Buf(b) => Value::Ref(Some(Ref::Buffer(b))),
                Arg::Null => Value::Ref(None),
                Arg::L(v) => Value::I64(v),
                Arg::W(v) => Value::I32(v),
            })
            .collect();
        let mut state: NativeState = Box::new(());
        let mut results = Vec::new();
        match module.call(&mut state, ordinal, Arguments::values(&values), &mut results)? {
            NativeOutcome::Ready => Ok(results),
            NativeOutcome::Pending(_) => panic!("vmvx functions never suspend"),
        }
    }

    pub(super) fn words(values: &[u32]) -> Arc<ByteBuffer> {
        ByteBuffer::from_bytes(&values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>()).unwrap()
    }

    pub(super) fn f32s(values: &[f32]) -> Arc<ByteBuffer> {
        words(&values.iter().map(|v| v.to_bits()).collect::<Vec<_>>())
    }

    pub(super) fn read_words(buffer: &ByteBuffer) -> Vec<u32> {
        buffer.to_vec().chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect()
    }

    pub(super) fn read_f32s(buffer: &ByteBuffer) -> Vec<f32> {
        read_words(buffer).into_iter().map(f32::from_bits).collect()
    }

    #[test]
    fn exports_are_sorted_with_iree_calling_conventions() {
        let module = VmvxModule::new();
        assert_eq!(module.functions().len(), 32);
        let names: Vec<&str> = module.functions().iter().map(|f| f.name.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        assert_eq!(module.name(), "vmvx");
        assert_eq!(module.version(), 0);
        let cconv = |name: &str| module.functions().iter().find(|f| f.name == name).unwrap().cconv.clone();
        assert_eq!(cconv("mmt4d"), "0rIIrIIrIIIIIiiii_v");
        assert_eq!(cconv("query_tile_sizes.2d"), "0IIi_II");
        assert_eq!(cconv("copy.2d.x64"), "0rIIIrIIIII_v");
    }

    #[test]
    fn operands_must_be_buffers() {
        let out = words(&[0; 4]);
        let error = call(
            "abs.2d.f32",
            vec![
                Arg::Null,
                Arg::L(0),
                Arg::L(2),
                Arg::L(1),
                Arg::Buf(out),
                Arg::L(0),
                Arg::L(2),
                Arg::L(1),
                Arg::L(2),
                Arg::L(2),
            ],
        )
        .unwrap_err();
        assert_eq!(error.code, StatusCode::InvalidArgument);
        assert_eq!(error.message, "vmvx.abs.2d.f32: in is a null vm.buffer");
        let error = call("abs.2d.f32", vec![Arg::W(1)]).unwrap_err();
        assert_eq!(error.message, "vmvx.abs.2d.f32: in is i32, not a ref");
        let error = call("abs.2d.f32", vec![]).unwrap_err();
        assert_eq!(error.message, "vmvx.abs.2d.f32: missing argument 0");
    }

    #[test]
    fn mapping_follows_iree_limits_and_bounds() {
        let run = |offset: i64, stride0: i64, stride1: i64, size0: i64, size1: i64| {
            let input = words(&[0; 8]);
            let out = words(&[0; 8]);
            call(
                "copy.2d.x32",
                vec![
                    Arg::Buf(input),
                    Arg::L(offset),
                    Arg::L(stride0),
                    Arg::L(stride1),
                    Arg::Buf(out),
                    Arg::L(0),
                    Arg::L(0),
                    Arg::L(0),
                    Arg::L(size0),
                    Arg::L(size1),
                ],
            )
        };
        assert!(run(0, 4, 1, 2, 4).is_ok(), "exactly the whole buffer");
        assert!(run(4, 2, 1, 2, 2).is_ok());
        let error = run(1, 4, 1, 2, 4).unwrap_err();
        assert_eq!(error.code, StatusCode::OutOfRange);
        assert_eq!(
            error.message,
            "vmvx.copy.2d.x32: in: out-of-bounds access detected (offset=4, length=32, alignment=4, buffer length=32)"
        );
        let error = run(0, 1 << 32, 1, 2, 1).unwrap_err();
        assert_eq!(error.code, StatusCode::InvalidArgument);
        assert_eq!(error.message, "vmvx.copy.2d.x32: buffer overflow for in (sizes 2x1, strides 4294967296x1)");
        assert_eq!(run(0, 1, 1, -1, 1).unwrap_err().code, StatusCode::InvalidArgument, "negative size");
        assert_eq!(run(0, 1, -2, 1, 1).unwrap_err().code, StatusCode::InvalidArgument, "stride below -1");
        assert_eq!(run(-1, 1, 1, 1, 1).unwrap_err().code, StatusCode::OutOfRange, "negative offset");
        assert_eq!(run(i64::MAX / 2, 1, 1, 1, 1).unwrap_err().code, StatusCode::OutOfRange, "offset wraps");
        // IREE's range check lets stride -1 through; the elements it would address come first.
        let error = run(4, -1, 1, 2, 3).unwrap_err();
        assert_eq!(error.code, StatusCode::OutOfRange);
        assert!(error.message.contains("reach outside"), "{}", error.message);
        // Zero sizes touch nothing, but IREE still maps (size - 1) * stride with wrapping: a
        // zero row count with a row stride of 2 maps 2^64 - 4 bytes and fails there.
        assert!(run(0, 0, 1, 0, 3).is_ok());
        assert_eq!(run(0, 2, 1, 0, 1).unwrap_err().code, StatusCode::OutOfRange);
    }

    #[test]
    fn outputs_must_be_mutable() {
        let rodata = {
            let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures/vm/loader/abs_vmvx.vmfb");
            let module = Arc::new(rtx_vm::Module::load_file(path).unwrap());
            ByteBuffer::rodata(module, 3).unwrap()
        };
        let input = words(&[1, 2]);
        let error = call(
            "copy.2d.x8",
            vec![
                Arg::Buf(input),
                Arg::L(0),
                Arg::L(0),
                Arg::L(1),
                Arg::Buf(rodata),
                Arg::L(0),
                Arg::L(0),
                Arg::L(1),
                Arg::L(1),
                Arg::L(2),
            ],
        )
        .unwrap_err();
        assert_eq!(error.code, StatusCode::PermissionDenied);
        assert_eq!(error.message, "vmvx.copy.2d.x8: out: buffer is read-only and cannot be mapped for mutation");
    }
}
