//! `pack` and `unpack`: between a plain 2-D matrix and its data-tiled form, a 4-D array of
//! `outer0 x outer1` tiles of `tile0 x tile1` elements (IREE's `builtins/ukernel/pack.c` and
//! `unpack.c`, the layout `mmt4d` works on).
//!
//! Flags may transpose the outer dimensions (tiles stored column of tiles first) and the inner
//! ones (each tile stored transposed). `pack` fills the part of the last tiles that lies beyond the
//! source with the padding value (its low bytes, little-endian); `unpack` drops it. Only the
//! outermost dimension of the tiled operand has a free stride; the tiles within a row follow each
//! other.

use super::{element, Access, Args, Layout, Mapped};
use rtx_host::{Diagnostic, StatusCode};
use rtx_vm::value::Value;

/// `IREE_UK_FLAG_PACK_*` / `IREE_UK_FLAG_UNPACK_*` (`exported_bits.h`).
const TYPE_MASK: u32 = 0xff;
const TYPE_F32: u32 = 0x01;
const TYPE_I8: u32 = 0x02;
const TYPE_I32: u32 = 0x03;
const TRANSPOSE_INNER: u32 = 0x100;
const TRANSPOSE_OUTER: u32 = 0x200;

/// How the tiled operand is laid out, in the plain matrix's terms.
struct Tiling {
    /// Tiles along the plain matrix's rows and columns.
    tiles: (usize, usize),
    /// Rows and columns of one tile.
    tile: (usize, usize),
    outer_transposed: bool,
    inner_transposed: bool,
}

impl Tiling {
    /// The tiling of a 4-D operand of `sizes` under `flags`.
    fn new(sizes: [usize; 4], flags: u32) -> Tiling {
        let [outer0, outer1, tile0, tile1] = sizes;
        let (outer_transposed, inner_transposed) = (flags & TRANSPOSE_OUTER != 0, flags & TRANSPOSE_INNER != 0);
        Tiling {
            tiles: if outer_transposed { (outer1, outer0) } else { (outer0, outer1) },
            tile: if inner_transposed { (tile1, tile0) } else { (tile0, tile1) },
            outer_transposed,
            inner_transposed,
        }
    }

    /// Whether the tiles span at least `rows x columns` elements.
    fn covers(&self, rows: usize, columns: usize) -> bool {
        let span = |tiles: usize, tile: usize| tiles.saturating_mul(tile);
        span(self.tiles.0, self.tile.0) >= rows && span(self.tiles.1, self.tile.1) >= columns
    }

    /// Element `(row, column)` of tile `(r, c)` as `(i, j)` of the mapped 4-D operand, whose
    /// second index runs over whole tiles.
    fn position(&self, (r, c): (usize, usize), (row, column): (usize, usize)) -> (usize, usize) {
        let (outer0, outer1) = if self.outer_transposed { (c, r) } else { (r, c) };
        let within = if self.inner_transposed { column * self.tile.0 + row } else { row * self.tile.1 + column };
        (outer0, outer1 * self.tile.0 * self.tile.1 + within)
    }

    /// Calls `visit` with every tile and element coordinate, in tile order.
    fn each(
        &self,
        mut visit: impl FnMut((usize, usize), (usize, usize)) -> Result<(), Diagnostic>,
    ) -> Result<(), Diagnostic> {
        for r in 0..self.tiles.0 {
            for c in 0..self.tiles.1 {
                for row in 0..self.tile.0 {
                    for column in 0..self.tile.1 {
                        visit((r, c), (row, column))?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Reads `count` i64 sizes, all of which must be non-negative.
fn sizes<const N: usize>(args: &mut Args<'_>) -> Result<[i64; N], Diagnostic> {
    let mut sizes = [0i64; N];
    for size in &mut sizes {
        *size = args.i64()?;
    }
    if sizes.iter().any(|&s| s < 0) {
        return Err(args.error(StatusCode::InvalidArgument, format!("negative size in {sizes:?}")));
    }
    Ok(sizes)
}

/// A 4-D operand as IREE maps it: `sizes[0]` rows of `sizes[1]` whole tiles, unit inner stride.
/// IREE multiplies the row length with wrapping; here a row that overflows is an error, since
/// the kernels walk every tile.
fn tiled<'a>(
    args: &Args<'_>,
    layout: Layout<'a>,
    element_size: usize,
    sizes: [i64; 4],
    access: Access,
) -> Result<Mapped<'a>, Diagnostic> {
    let row = sizes[1].checked_mul(sizes[2]).and_then(|r| r.checked_mul(sizes[3])).ok_or_else(|| {
        args.error(StatusCode::InvalidArgument, format!("buffer overflow for {} (sizes {sizes:?})", layout.operand))
    })?;
    Mapped::new(args, &Layout { stride1: 1, ..layout }, element_size, (sizes[0], row), access)
}

/// `(in, out, in sizes 2, out sizes 4, padding, flags)`: plain to tiled.
pub(super) fn pack(args: &mut Args<'_>) -> Result<Vec<Value>, Diagnostic> {
    let (input, out) = (Layout::strided(args, "in")?, Layout::strided(args, "out")?);
    let in_sizes = sizes::<2>(args)?;
    let out_sizes = sizes::<4>(args)?;
    let (padding, flags) = (args.i64()?, args.i32()? as u32);
    let element_size = match flags & TYPE_MASK {
        TYPE_F32 | TYPE_I32 => 4,
        TYPE_I8 => 1,
        _ => return Err(args.error(StatusCode::InvalidArgument, format!("unhandled flags 0x{flags:x}"))),
    };
    let input = Mapped::new(args, &input, element_size, (in_sizes[0], in_sizes[1]), Access::Read)?;
    let out = tiled(args, out, element_size, out_sizes, Access::Write)?;
    if out_sizes.contains(&0) {
        return Ok(Vec::new());
    }
    let tiling = Tiling::new(out_sizes.map(|s| s as usize), flags);
    let (rows, columns) = (in_sizes[0] as usize, in_sizes[1] as usize);
    if !tiling.covers(rows, columns) {
        return Err(args.error(
            StatusCode::InvalidArgument,
            format!("out tiles {out_sizes:?} (flags 0x{flags:x}) do not cover in {rows}x{columns}"),
        ));
    }
    let source = input.read()?;
    let padding = padding.to_le_bytes();
    let padding = &padding[..element_size];
    tiling.each(|(r, c), (row, column)| {
        let (i, j) = (r * tiling.tile.0 + row, c * tiling.tile.1 + column);
        let value = if i < rows && j < columns { element(&source, element_size, input.at(i, j))? } else { padding };
        let (o0, o1) = tiling.position((r, c), (row, column));
        out.store_bytes(out.at(o0, o1), value)
    })?;
    Ok(Vec::new())
}

/// `(in, out, in sizes 4, out sizes 2, flags)`: tiled to plain.
pub(super) fn unpack(args: &mut Args<'_>) -> Result<Vec<Value>, Diagnostic> {
    let (input, out) = (Layout::strided(args, "in")?, Layout::strided(args, "out")?);
    let in_sizes = sizes::<4>(args)?;
    let out_sizes = sizes::<2>(args)?;
    let flags = args.i32()? as u32;
    let element_size = match flags & TYPE_MASK {
        TYPE_F32 | TYPE_I32 => 4,
        _ => return Err(args.error(StatusCode::InvalidArgument, format!("unhandled flags 0x{flags:x}"))),
    };
    let input = tiled(args, input, element_size, in_sizes, Access::Read)?;
    let out = Mapped::new(args, &out, element_size, (out_sizes[0], out_sizes[1]), Access::Write)?;
    if out_sizes.contains(&0) {
        return Ok(Vec::new());
    }
    let tiling = Tiling::new(in_sizes.map(|s| s as usize), flags);
    let (rows, columns) = (out_sizes[0] as usize, out_sizes[1] as usize);
    if !tiling.covers(rows, columns) {
        return Err(args.error(
            StatusCode::InvalidArgument,
            format!("in tiles {in_sizes:?} (flags 0x{flags:x}) do not cover out {rows}x{columns}"),
        ));
    }
    let source = input.read()?;
    tiling.each(|(r, c), (row, column)| {
        let (i, j) = (r * tiling.tile.0 + row, c * tiling.tile.1 + column);
        if i >= rows || j >= columns {
            return Ok(());
        }
        let (p0, p1) = tiling.position((r, c), (row, column));
        out.store_bytes(out.at(i, j), element(&source, element_size, input.at(p0, p1))?)
    })?;
    Ok(Vec::new())
}

#[cfg(test)]
mod tests {
    use super::super::tests::{call, read_words, words, Arg};
    use super::*;
    use rtx_vm::buffer::ByteBuffer;

    /// Packs a 3x5 matrix of words `10 * row + column` into 2x2 tiles (padding 99): 2x3 tiles.
    fn pack_3x5(flags: i32, out_sizes: [i64; 4], out_stride0: i64) -> Vec<u32> {
        let matrix: Vec<u32> = (0..3).flat_map(|r| (0..5).map(move |c| 10 * r + c)).collect();
        let out = words(&[0; 24]);
        let mut arguments = vec![Arg::Buf(words(&matrix)), Arg::L(0), Arg::L(5), Arg::L(1)];
        arguments.extend([Arg::Buf(out.clone()), Arg::L(0), Arg::L(out_stride0), Arg::L(4), Arg::L(3), Arg::L(5)]);
        arguments.extend(out_sizes.map(Arg::L));
        arguments.extend([Arg::L(0x1234_5678_0000_0063), Arg::W(flags)]);
        call("pack", arguments).unwrap();
        read_words(&out)
    }

    #[test]
    fn pack_tiles_and_pads() {
        // Tile (0,0) = [0 1; 10 11], (0,1) = [2 3; 12 13], (0,2) = [4 P; 14 P], row 1 of tiles
        // holds source row 2 and a padding row.
        let p = 99;
        assert_eq!(
            pack_3x5(0x3, [2, 3, 2, 2], 12),
            [0, 1, 10, 11, 2, 3, 12, 13, 4, p, 14, p, 20, 21, p, p, 22, 23, p, p, 24, p, p, p]
        );
        // Inner transpose: each tile stored column-major.
        assert_eq!(
            pack_3x5(0x103, [2, 3, 2, 2], 12),
            [0, 10, 1, 11, 2, 12, 3, 13, 4, 14, p, p, 20, p, 21, p, 22, p, 23, p, 24, p, p, p]
        );
        // Outer transpose: 3 rows of 2 tiles, tile (r, c) at row c.
        assert_eq!(
            pack_3x5(0x203, [3, 2, 2, 2], 8),
            [0, 1, 10, 11, 20, 21, p, p, 2, 3, 12, 13, 22, 23, p, p, 4, p, 14, p, 24, p, p, p]
        );
    }

    #[test]
    fn pack_of_bytes_pads_with_the_low_byte() {
        let out = ByteBuffer::from_bytes(&[0; 4]).unwrap();
        let arguments = vec![
            Arg::Buf(ByteBuffer::from_bytes(&[1, 2, 3]).unwrap()),
            Arg::L(0),
            Arg::L(3),
            Arg::L(1),
            Arg::Buf(out.clone()),
            Arg::L(0),
            Arg::L(4),
            Arg::L(4),
            Arg::L(1),
            Arg::L(3),
            Arg::L(1),
            Arg::L(2),
            Arg::L(1),
            Arg::L(2),
            Arg::L(0x7f01),
            Arg::W(0x2),
        ];
        call("pack", arguments).unwrap();
        assert_eq!(out.to_vec(), [1, 2, 3, 1]);
    }

    #[test]
    fn pack_refuses_tiles_that_do_not_cover_the_source() {
        let out = words(&[0; 24]);
        let mut arguments = vec![Arg::Buf(words(&[0; 15])), Arg::L(0), Arg::L(5), Arg::L(1)];
        arguments.extend([Arg::Buf(out), Arg::L(0), Arg::L(8), Arg::L(4), Arg::L(3), Arg::L(5)]);
        arguments.extend([2, 2, 2, 2].map(Arg::L));
        arguments.extend([Arg::L(0), Arg::W(0x1)]);
        let error = call("pack", arguments).unwrap_err();
        assert_eq!(error.code, StatusCode::InvalidArgument);
        assert_eq!(error.message, "vmvx.pack: out tiles [2, 2, 2, 2] (flags 0x1) do not cover in 3x5");
    }

    #[test]
    fn unpack_inverts_pack_under_every_transpose() {
        let matrix: Vec<u32> = (0..3).flat_map(|r| (0..5).map(move |c| 10 * r + c)).collect();
        for (flags, out_sizes, stride) in [(0x1, [2, 3, 2, 2], 12), (0x101, [2, 3, 2, 2], 12), (0x301, [3, 2, 2, 2], 8)]
        {
            let packed = pack_3x5(flags, out_sizes, stride);
            // Unpack into a 3x5 window of a 4x7 matrix at offset 8 (row 1, column 1).
            let out = words(&[7; 28]);
            let mut arguments = vec![Arg::Buf(words(&packed)), Arg::L(0), Arg::L(stride), Arg::L(4)];
            arguments.extend([Arg::Buf(out.clone()), Arg::L(8), Arg::L(7), Arg::L(1)]);
            arguments.extend(out_sizes.map(Arg::L));
            arguments.extend([Arg::L(3), Arg::L(5), Arg::W(flags)]);
            call("unpack", arguments).unwrap();
            let window: Vec<u32> = read_words(&out).chunks(7).skip(1).take(3).flat_map(|r| r[1..6].to_vec()).collect();
            assert_eq!(window, matrix, "flags 0x{flags:x}");
            assert!(read_words(&out)[..8].iter().all(|&v| v == 7), "outside the window untouched");
        }
    }

    #[test]
    fn unpack_checks_types_and_coverage() {
        let arguments = |flags: i32, rows: i64| {
            let mut arguments = vec![Arg::Buf(words(&[0; 8])), Arg::L(0), Arg::L(4), Arg::L(4)];
            arguments.extend([Arg::Buf(words(&[0; 16])), Arg::L(0), Arg::L(4), Arg::L(1)]);
            arguments.extend([2, 1, 2, 2].map(Arg::L));
            arguments.extend([Arg::L(rows), Arg::L(2), Arg::W(flags)]);
            arguments
        };
        assert!(call("unpack", arguments(0x1, 4)).is_ok());
        let error = call("unpack", arguments(0x2, 4)).unwrap_err();
        assert_eq!(error.message, "vmvx.unpack: unhandled flags 0x2");
        let error = call("unpack", arguments(0x1, 5)).unwrap_err();
        assert_eq!(error.code, StatusCode::OutOfRange, "the output window is mapped first");
        let error = call("unpack", arguments(0x201, 4)).unwrap_err();
        assert_eq!(error.message, "vmvx.unpack: in tiles [2, 1, 2, 2] (flags 0x201) do not cover out 4x2");
        let error = call("unpack", arguments(0x1, -1)).unwrap_err();
        assert_eq!(error.message, "vmvx.unpack: negative size in [-1, 2]");
        // Tile sizes whose product wraps to 0 in 64 bits.
        let mut huge = vec![Arg::Buf(words(&[0; 8])), Arg::L(0), Arg::L(4), Arg::L(4)];
        huge.extend([Arg::Buf(words(&[0; 16])), Arg::L(0), Arg::L(4), Arg::L(1)]);
        huge.extend([1, 1, 1 << 40, 1 << 24].map(Arg::L));
        huge.extend([Arg::L(1), Arg::L(1), Arg::W(0x1)]);
        let error = call("unpack", huge).unwrap_err();
        assert_eq!(error.code, StatusCode::InvalidArgument);
        assert!(error.message.starts_with("vmvx.unpack: buffer overflow for in"), "{}", error.message);
    }
}
