//! `copy.2d.x8/x16/x32/x64` (a strided 2-D copy of 1-, 2-, 4- or 8-byte elements, the compiler's
//! lowering of transposes, slices and other pure data movement) and `fill.2d.x32` (a 2-D block of
//! rows with unit column stride set to one 32-bit value).

use super::{element, Access, Args, Layout, Mapped};
use rtx_host::Diagnostic;
use rtx_vm::value::Value;

/// `(in, out)` strided operands and the sizes: `out[i][j] = in[i][j]`.
pub(super) fn copy(args: &mut Args<'_>, element_size: usize) -> Result<Vec<Value>, Diagnostic> {
    let (input, out) = (Layout::strided(args, "in")?, Layout::strided(args, "out")?);
    let sizes = (args.i64()?, args.i64()?);
    let input = Mapped::new(args, &input, element_size, sizes, Access::Read)?;
    let out = Mapped::new(args, &out, element_size, sizes, Access::Write)?;
    let bytes = input.read()?;
    for i in 0..sizes.0 as usize {
        for j in 0..sizes.1 as usize {
            out.store_bytes(out.at(i, j), element(&bytes, element_size, input.at(i, j))?)?;
        }
    }
    Ok(Vec::new())
}

/// `(value, out, offset, row stride, rows, columns)`.
pub(super) fn fill(args: &mut Args<'_>) -> Result<Vec<Value>, Diagnostic> {
    let value = args.i32()?;
    let layout = Layout::rows(args, "out")?;
    let sizes = (args.i64()?, args.i64()?);
    let out = Mapped::new(args, &layout, 4, sizes, Access::Write)?;
    for i in 0..sizes.0 as usize {
        for j in 0..sizes.1 as usize {
            out.store_u32(out.at(i, j), value as u32)?;
        }
    }
    Ok(Vec::new())
}

#[cfg(test)]
mod tests {
    use super::super::tests::{call, read_words, words, Arg};
    use rtx_host::StatusCode;
    use rtx_vm::buffer::ByteBuffer;

    fn copy(function: &str, input: std::sync::Arc<ByteBuffer>, out_len: usize, layout: [i64; 8]) -> Vec<u8> {
        let out = ByteBuffer::from_bytes(&vec![0xee; out_len]).unwrap();
        let [in_offset, in_stride0, in_stride1, out_offset, out_stride0, out_stride1, size0, size1] = layout;
        call(
            function,
            vec![
                Arg::Buf(input),
                Arg::L(in_offset),
                Arg::L(in_stride0),
                Arg::L(in_stride1),
                Arg::Buf(out.clone()),
                Arg::L(out_offset),
                Arg::L(out_stride0),
                Arg::L(out_stride1),
                Arg::L(size0),
                Arg::L(size1),
            ],
        )
        .unwrap();
        out.to_vec()
    }

    #[test]
    fn copies_transpose_each_element_width() {
        // A 2x3 matrix transposed into 3x2: read with strides (1, 3), written row-major.
        let matrix: Vec<u8> = (1..=6).collect();
        let input = ByteBuffer::from_bytes(&matrix).unwrap();
        assert_eq!(copy("copy.2d.x8", input, 6, [0, 1, 3, 0, 2, 1, 3, 2]), [1, 4, 2, 5, 3, 6]);

        let widen = |size: usize| -> Vec<u8> {
            matrix
                .iter()
                .flat_map(|&v| {
                    let mut e = vec![0u8; size];
                    e[0] = v;
                    e[size - 1] |= 0x80;
                    e
                })
                .collect()
        };
        for (function, size) in [("copy.2d.x16", 2), ("copy.2d.x32", 4), ("copy.2d.x64", 8)] {
            let input = ByteBuffer::from_bytes(&widen(size)).unwrap();
            let out = copy(function, input, 6 * size, [0, 1, 3, 0, 2, 1, 3, 2]);
            let firsts: Vec<u8> = out.chunks_exact(size).map(|e| e[0]).collect();
            assert_eq!(firsts, [1, 4, 2, 5, 3, 6], "{function}");
            assert!(out.chunks_exact(size).all(|e| e[size - 1] & 0x80 != 0), "{function} copies whole elements");
        }
    }

    #[test]
    fn copies_honour_offsets_and_leave_gaps_alone() {
        // Every other element of row 1 of a 3x4 i16 matrix, into elements 1 and 2 of the output.
        let matrix: Vec<u8> = (0..12u16).flat_map(|v| v.to_le_bytes()).collect();
        let input = ByteBuffer::from_bytes(&matrix).unwrap();
        let out = copy("copy.2d.x16", input, 8, [4, 0, 2, 1, 0, 1, 1, 2]);
        assert_eq!(out, [0xee, 0xee, 4, 0, 6, 0, 0xee, 0xee]);
    }

    #[test]
    fn copy_ranges_are_checked_in_elements_of_the_width() {
        let input = ByteBuffer::from_bytes(&[0; 16]).unwrap();
        let out = ByteBuffer::from_bytes(&[0; 16]).unwrap();
        let error = call(
            "copy.2d.x64",
            vec![
                Arg::Buf(input),
                Arg::L(1),
                Arg::L(1),
                Arg::L(1),
                Arg::Buf(out),
                Arg::L(0),
                Arg::L(1),
                Arg::L(1),
                Arg::L(1),
                Arg::L(2),
            ],
        )
        .unwrap_err();
        assert_eq!(error.code, StatusCode::OutOfRange);
        assert_eq!(
            error.message,
            "vmvx.copy.2d.x64: in: out-of-bounds access detected (offset=8, length=16, alignment=8, buffer length=16)"
        );
    }

    #[test]
    fn fill_sets_rows_with_a_row_stride() {
        let out = words(&[0; 12]);
        let args = vec![Arg::W(-5), Arg::Buf(out.clone()), Arg::L(1), Arg::L(4), Arg::L(3), Arg::L(2)];
        call("fill.2d.x32", args).unwrap();
        let f = -5i32 as u32;
        assert_eq!(read_words(&out), [0, f, f, 0, 0, f, f, 0, 0, f, f, 0]);
        let args = vec![Arg::W(1), Arg::Buf(out.clone()), Arg::L(1), Arg::L(4), Arg::L(3), Arg::L(4)];
        let error = call("fill.2d.x32", args).unwrap_err();
        assert_eq!(error.code, StatusCode::OutOfRange);
        assert_eq!(
            error.message,
            "vmvx.fill.2d.x32: out: out-of-bounds access detected (offset=4, length=48, alignment=4, buffer length=48)"
        );
        let args = vec![Arg::W(1), Arg::Buf(out), Arg::L(0), Arg::L(-2), Arg::L(2), Arg::L(1)];
        assert_eq!(call("fill.2d.x32", args).unwrap_err().code, StatusCode::InvalidArgument, "row stride -2");
    }
}
