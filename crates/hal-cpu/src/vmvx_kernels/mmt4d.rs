//! `mmt4d` (a matrix multiplication of data-tiled operands, the "matrix times transposed matrix"
//! of IREE's `builtins/ukernel/mmt4d.c`) and `query_tile_sizes.2d` (which tile sizes the
//! data-tiled layout uses when the compiler left them to the runtime).
//!
//! Layouts: LHS is `M x K` tiles of `M0 x K0`, RHS `N x K` tiles of `N0 x K0` (so both walk K
//! contiguously), OUT `M x N` tiles of `M0 x N0`; only the outermost dimension has a free stride.
//! `out[i][j][m0][n0] (+)= sum over k, k0 of lhs[i][k][m0][k0] * rhs[j][k][n0][k0]`.
//!
//! Bit-exactness depends on the CPU, because IREE's does: on x86-64 it picks tile sizes by CPU
//! features (AVX-512 16x16x1, AVX2+FMA 8x8x1, otherwise 8x4x1 for f32) and runs f32 tiles it has
//! an AVX2/AVX-512 kernel for with fused multiply-adds, and every other tile with its portable C
//! loop (a multiply and an add, each rounded). Both are reproduced here, with the same feature
//! tests; the fused multiply-add is std's software one, with denormals flushed as the hardware
//! does in a dispatch. On other architectures the portable loop and IREE's generic tile sizes are used.

use super::{flushed, Access, Args, Layout, Mapped};
use crate::cpu;
use rtx_host::{Diagnostic, StatusCode};
use rtx_vm::value::Value;

/// `IREE_UK_FLAG_MMT4D_*` and `IREE_UK_FLAG_QUERY_TILE_SIZES_*` (`exported_bits.h`).
const TYPE_MASK: u32 = 0xff;
const TYPE_F32F32F32: u32 = 0x01;
const TYPE_S8S8S32: u32 = 0x02;
const ACCUMULATE: u32 = 0x100;
const ROLE_MASK: u32 = 0xff;
const ROLE_LHS: u32 = 0x01;
const ROLE_RHS: u32 = 0x02;
const ROLE_RESULT: u32 = 0x03;
const OPERATION_MASK: u32 = 0xff00;
const MATMUL_F32F32F32: u32 = 0x0100;
const MATMUL_I8I8I32: u32 = 0x0200;
/// The other matmul operations IREE's query accepts (f16, bf16 variants); they get its generic
/// tile sizes.
const MATMUL_OTHERS: [u32; 4] = [0x0300, 0x0400, 0x0500, 0x0600];

/// The CPU features IREE's x86-64 microkernels test for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Cpu {
    /// AVX2, FMA and F16C.
    avx2_fma: bool,
    /// The above and AVX-512 F, BW, DQ, VL and CD.
    avx512_base: bool,
    /// The above and AVX-512 VNNI.
    avx512_vnni: bool,
}

impl Cpu {
    fn detect() -> Cpu {
        let has = |name| cpu::feature(name) == Some(1);
        let avx2_fma = has("avx2") && has("fma") && has("f16c");
        let avx512_base = avx2_fma && ["avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd"].into_iter().all(has);
        Cpu { avx2_fma, avx512_base, avx512_vnni: avx512_base && has("avx512vnni") }
    }

    /// Matmul tile sizes `(M0, K0, N0)` for a query operation, as IREE's x86-64 query answers.
    fn matmul_tiles(self, operation: u32) -> Option<(i64, i64, i64)> {
        let x86 = cfg!(target_arch = "x86_64");
        match operation {
            MATMUL_F32F32F32 if x86 && self.avx512_base => Some((16, 1, 16)),
            MATMUL_F32F32F32 if x86 && self.avx2_fma => Some((8, 1, 8)),
            MATMUL_F32F32F32 if x86 => Some((8, 1, 4)),
            MATMUL_I8I8I32 if x86 && self.avx512_vnni => Some((16, 2, 16)),
            MATMUL_I8I8I32 if x86 && self.avx2_fma => Some((8, 2, 8)),
            MATMUL_I8I8I32 if x86 => Some((8, 2, 4)),
            MATMUL_F32F32F32 | MATMUL_I8I8I32 => Some((8, 4, 8)),
            op if MATMUL_OTHERS.contains(&op) => Some((8, 4, 8)),
            _ => None,
        }
    }

    /// Whether IREE runs an f32 `M0 x N0 x K0` tile with its fused multiply-add kernels.
    fn fuses_f32(self, m0: usize, n0: usize, k0: usize) -> bool {
        let small = |limit: usize| m0.is_power_of_two() && m0 <= limit;
        cfg!(target_arch = "x86_64")
            && k0 == 1
            && ((n0 == 8 && small(8) && self.avx2_fma) || (n0 == 16 && small(16) && self.avx512_base))
    }
}

/// `(size0, size1, flags) -> (tile0, tile1)`: the tile sizes of one matmul operand.
pub(super) fn query_tile_sizes(args: &mut Args<'_>) -> Result<Vec<Value>, Diagnostic> {
    let (_size0, _size1, flags) = (args.i64()?, args.i64()?, args.i32()? as u32);
    let (m, k, n) = Cpu::detect().matmul_tiles(flags & OPERATION_MASK).ok_or_else(|| {
        args.error(StatusCode::InvalidArgument, format!("flags 0x{flags:x} name no matmul operation"))
    })?;
    let (tile0, tile1) = match flags & ROLE_MASK {
        ROLE_LHS => (m, k),
        ROLE_RHS => (n, k),
        ROLE_RESULT => (m, n),
        _ => return Err(args.error(StatusCode::InvalidArgument, format!("flags 0x{flags:x} name no operand role"))),
    };
    Ok(vec![Value::I64(tile0), Value::I64(tile1)])
}

/// `(lhs, offset, row stride, rhs, …, out, …, M, N, K, M0, N0, K0, flags)`.
pub(super) fn mmt4d(args: &mut Args<'_>) -> Result<Vec<Value>, Diagnostic> {
    let (lhs, rhs, out) = (Layout::rows(args, "lhs")?, Layout::rows(args, "rhs")?, Layout::rows(args, "out")?);
    let (m, n, k) = (args.i64()?, args.i64()?, args.i64()?);
    let (m0, n0, k0, flags) = (args.i32()?, args.i32()?, args.i32()?, args.i32()? as u32);
    let (in_size, out_size) = match flags & TYPE_MASK {
        TYPE_F32F32F32 => (4, 4),
        TYPE_S8S8S32 => (1, 4),
        _ => return Err(args.error(StatusCode::InvalidArgument, format!("unhandled flags 0x{flags:x}"))),
    };
    // IREE keeps the tile sizes in 16 bits and the tile counts in 31.
    let tile = |v: i32| (0..=i32::from(i16::MAX)).contains(&v);
    let count = |v: i64| (0..=i64::from(i32::MAX)).contains(&v);
    if !(tile(m0) && tile(n0) && tile(k0) && count(m) && count(n) && count(k)) {
        return Err(args.error(
            StatusCode::InvalidArgument,
            format!("sizes M={m} N={n} K={k} M0={m0} N0={n0} K0={k0} out of range"),
        ));
    }
    let (m0, n0, k0) = (m0 as usize, n0 as usize, k0 as usize);
    let lhs_tile = m0 * k0;
    let rhs_tile = n0 * k0;
    let out_tile = m0 * n0;
    // Sizes as IREE maps them: rows of `K` (or `N`) whole tiles.
    let lhs = Mapped::new(args, &lhs, in_size, (m, k.wrapping_mul(lhs_tile as i64)), Access::Read)?;
    let rhs = Mapped::new(args, &rhs, in_size, (n, k.wrapping_mul(rhs_tile as i64)), Access::Read)?;
    let out = Mapped::new(args, &out, out_size, (m, n.wrapping_mul(out_tile as i64)), Access::Write)?;
    let accumulate = flags & ACCUMULATE != 0;
    if m == 0 || n == 0 || (k == 0 && accumulate) {
        return Ok(Vec::new());
    }
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let previous = if accumulate { out.read_u32()? } else { Vec::new() };
    let shape = Tiles { k, m0, n0, k0 };
    if flags & TYPE_MASK == TYPE_F32F32F32 {
        let (lhs_values, rhs_values) = (floats(&lhs.read_u32()?), floats(&rhs.read_u32()?));
        let fused = Cpu::detect().fuses_f32(m0, n0, k0);
        for i in 0..m {
            for j in 0..n {
                let at = |m0i, n0i| out.at(i, j * out_tile + m0i * n0 + n0i);
                let tile = shape.multiply(
                    |kk, m0i, k0i| lhs_values.get(lhs.at(i, kk * lhs_tile + m0i * k0 + k0i)).copied(),
                    |kk, n0i, k0i| rhs_values.get(rhs.at(j, kk * rhs_tile + n0i * k0 + k0i)).copied(),
                    |m0i, n0i| {
                        if accumulate {
                            previous.get(at(m0i, n0i)).map(|&b| f32::from_bits(b))
                        } else {
                            Some(0.0)
                        }
                    },
                    |acc: f32, a: f32, b: f32| {
                        if fused {
                            flushed(flushed(a).mul_add(flushed(b), flushed(acc)))
                        } else {
                            acc + a * b
                        }
                    },
                )?;
                for (index, value) in tile.into_iter().enumerate() {
                    out.store_u32(at(index / n0, index % n0), value.to_bits())?;
                }
            }
        }
    } else {
        let (lhs_bytes, rhs_bytes) = (lhs.read()?, rhs.read()?);
        for i in 0..m {
            for j in 0..n {
                let at = |m0i, n0i| out.at(i, j * out_tile + m0i * n0 + n0i);
                let tile = shape.multiply(
                    |kk, m0i, k0i| {
                        lhs_bytes.get(lhs.at(i, kk * lhs_tile + m0i * k0 + k0i)).map(|&b| i32::from(b as i8))
                    },
                    |kk, n0i, k0i| {
                        rhs_bytes.get(rhs.at(j, kk * rhs_tile + n0i * k0 + k0i)).map(|&b| i32::from(b as i8))
                    },
                    |m0i, n0i| if accumulate { previous.get(at(m0i, n0i)).map(|&b| b as i32) } else { Some(0) },
                    |acc: i32, a: i32, b: i32| acc.wrapping_add(a * b),
                )?;
                for (index, value) in tile.into_iter().enumerate() {
                    out.store_u32(at(index / n0, index % n0), value as u32)?;
                }
            }
        }
    }
    Ok(Vec::new())
}

fn floats(words: &[u32]) -> Vec<f32> {
    words.iter().map(|&w| f32::from_bits(w)).collect()
}

/// The shape of one output tile's computation.
struct Tiles {
    k: usize,
    m0: usize,
    n0: usize,
    k0: usize,
}

impl Tiles {
    /// One `M0 x N0` output tile, row-major: each element starts from `initial` and takes
    /// `step(acc, lhs, rhs)` for every `(k, k0)` in order, the order of IREE's loops. The element
    /// readers return `None` outside the mapped operands, which the mapping rules out.
    fn multiply<T: Copy>(
        &self,
        lhs: impl Fn(usize, usize, usize) -> Option<T>,
        rhs: impl Fn(usize, usize, usize) -> Option<T>,
        initial: impl Fn(usize, usize) -> Option<T>,
        step: impl Fn(T, T, T) -> T,
    ) -> Result<Vec<T>, Diagnostic> {
        let outside = || Diagnostic::new(StatusCode::Internal, "mmt4d element outside the mapped operands");
        let mut tile = Vec::with_capacity(self.m0 * self.n0);
        for m0 in 0..self.m0 {
            for n0 in 0..self.n0 {
                let mut acc = initial(m0, n0).ok_or_else(outside)?;
                for k in 0..self.k {
                    for k0 in 0..self.k0 {
                        acc = step(acc, lhs(k, m0, k0).ok_or_else(outside)?, rhs(k, n0, k0).ok_or_else(outside)?);
                    }
                }
                tile.push(acc);
            }
        }
        Ok(tile)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{call, f32s, read_f32s, read_words, words, Arg};
    use super::*;
    use rtx_vm::buffer::ByteBuffer;

    struct Problem {
        lhs: std::sync::Arc<ByteBuffer>,
        rhs: std::sync::Arc<ByteBuffer>,
        out: std::sync::Arc<ByteBuffer>,
        mnk: [i64; 3],
        tiles: [i32; 3],
        flags: i32,
    }

    fn run(p: &Problem, strides: [i64; 3]) -> Result<Vec<Value>, Diagnostic> {
        let [m, n, k] = p.mnk;
        let [m0, n0, k0] = p.tiles;
        call(
            "mmt4d",
            vec![
                Arg::Buf(p.lhs.clone()),
                Arg::L(0),
                Arg::L(strides[0]),
                Arg::Buf(p.rhs.clone()),
                Arg::L(0),
                Arg::L(strides[1]),
                Arg::Buf(p.out.clone()),
                Arg::L(0),
                Arg::L(strides[2]),
                Arg::L(m),
                Arg::L(n),
                Arg::L(k),
                Arg::W(m0),
                Arg::W(n0),
                Arg::W(k0),
                Arg::W(p.flags),
            ],
        )
    }

    #[test]
    fn f32_tiles_multiply_and_accumulate() {
        // M = N = 1 tile of 2x2, K = 2 tiles of K0 = 2: lhs rows [1 2 | 3 4] and [5 6 | 7 8]
        // (tile-major: k-tile 0 holds columns 0-1 of both rows), rhs rows likewise.
        let lhs = f32s(&[1.0, 2.0, 5.0, 6.0, 3.0, 4.0, 7.0, 8.0]);
        let rhs = f32s(&[1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0]);
        let out = f32s(&[100.0; 4]);
        let mut problem = Problem { lhs, rhs, out, mnk: [1, 1, 2], tiles: [2, 2, 2], flags: 0x601 };
        run(&problem, [8, 8, 4]).unwrap();
        // row . rhs row: [1 2 3 4].[1 0 1 0] = 4, .[0 1 0 1] = 6; [5 6 7 8] gives 12, 14.
        assert_eq!(read_f32s(&problem.out), [4.0, 6.0, 12.0, 14.0]);
        problem.flags = 0x101;
        run(&problem, [8, 8, 4]).unwrap();
        assert_eq!(read_f32s(&problem.out), [8.0, 12.0, 24.0, 28.0], "accumulates");
        // K = 0 without accumulation clears the tile; with it, leaves it.
        problem.mnk = [1, 1, 0];
        run(&problem, [0, 0, 4]).unwrap();
        assert_eq!(read_f32s(&problem.out), [8.0, 12.0, 24.0, 28.0]);
        problem.flags = 0x1;
        run(&problem, [0, 0, 4]).unwrap();
        assert_eq!(read_f32s(&problem.out), [0.0; 4]);
    }

    #[test]
    fn s8_tiles_sign_extend_and_wrap() {
        // 1x1 tiles, K = 3 (K0 = 1): (-128)(-128) * 3 in i32, then a second row tile via the stride.
        let lhs = ByteBuffer::from_bytes(&[0x80, 0x80, 0x80, 0xff, 0x02, 0x7f]).unwrap();
        let rhs = ByteBuffer::from_bytes(&[0x80, 0x80, 0x80]).unwrap();
        let out = words(&[7, 7]);
        let problem = Problem { lhs, rhs, out, mnk: [2, 1, 3], tiles: [1, 1, 1], flags: 0x2 };
        run(&problem, [3, 3, 1]).unwrap();
        assert_eq!(read_words(&problem.out), [3 * 16384, (128 - 256 - 127 * 128) as u32]);
    }

    #[test]
    fn fused_tiles_follow_the_cpu() {
        let cpu = Cpu { avx2_fma: true, avx512_base: true, avx512_vnni: false };
        let x86 = cfg!(target_arch = "x86_64");
        assert_eq!(cpu.fuses_f32(16, 16, 1), x86);
        assert_eq!(cpu.fuses_f32(4, 8, 1), x86);
        assert!(!cpu.fuses_f32(3, 8, 1), "M0 must be a power of two");
        assert!(!cpu.fuses_f32(4, 8, 4), "the static VMVX tiles have K0 = 4");
        assert!(!Cpu { avx2_fma: true, ..Cpu::default() }.fuses_f32(16, 16, 1));
        assert!(!Cpu::default().fuses_f32(8, 8, 1));
        if x86 {
            assert_eq!(cpu.matmul_tiles(MATMUL_F32F32F32), Some((16, 1, 16)));
            assert_eq!(cpu.matmul_tiles(MATMUL_I8I8I32), Some((8, 2, 8)), "no VNNI");
            assert_eq!(Cpu::default().matmul_tiles(MATMUL_F32F32F32), Some((8, 1, 4)));
        }
        assert_eq!(cpu.matmul_tiles(0x0400), Some((8, 4, 8)));
        assert_eq!(cpu.matmul_tiles(0x0700), None);
    }

    #[test]
    fn tiles_with_an_iree_kernel_accumulate_with_fused_multiply_adds() {
        // acc = 1 * -1, then acc += a * a with a = 1 + 2^-12: a * a = 1 + 2^-11 + 2^-24 rounds
        // to 1 + 2^-11 unless fused, so the tile tells which way it ran.
        let a = 1.0 + 2f32.powi(-12);
        let (unfused, fused) = (2f32.powi(-11), 2f32.powi(-11) + 2f32.powi(-24));
        let run_tiles = |n0: i32| {
            let rhs: Vec<f32> = [-1.0, a].iter().flat_map(|&v| vec![v; n0 as usize]).collect();
            let out = f32s(&vec![0.0; n0 as usize]);
            let problem =
                Problem { lhs: f32s(&[1.0, a]), rhs: f32s(&rhs), out, mnk: [1, 1, 2], tiles: [1, n0, 1], flags: 0x601 };
            run(&problem, [2, 2 * i64::from(n0), i64::from(n0)]).unwrap();
            read_f32s(&problem.out)
        };
        let expected = if Cpu::detect().fuses_f32(1, 8, 1) { fused } else { unfused };
        assert_eq!(run_tiles(8), [expected; 8]);
        assert_eq!(run_tiles(4), [unfused; 4], "no IREE kernel has N0 = 4");
    }

    #[test]
    fn mmt4d_checks_flags_sizes_and_ranges() {
        let problem = |flags, tiles, mnk| Problem {
            lhs: f32s(&[0.0; 8]),
            rhs: f32s(&[0.0; 8]),
            out: f32s(&[0.0; 4]),
            mnk,
            tiles,
            flags,
        };
        let error = run(&problem(0x3, [2, 2, 2], [1, 1, 2]), [8, 8, 4]).unwrap_err();
        assert_eq!(
            (error.code, error.message.as_str()),
            (StatusCode::InvalidArgument, "vmvx.mmt4d: unhandled flags 0x3")
        );
        let error = run(&problem(0x1, [-2, 2, 2], [1, 1, 2]), [8, 8, 4]).unwrap_err();
        assert_eq!(error.code, StatusCode::InvalidArgument);
        let error = run(&problem(0x1, [2, 2, 2], [1, 1, 3]), [8, 8, 4]).unwrap_err();
        assert_eq!(error.code, StatusCode::OutOfRange);
        assert!(error.message.starts_with("vmvx.mmt4d: lhs: out-of-bounds access detected"), "{}", error.message);
        let error = run(&problem(0x1, [2, 2, 2], [2, 1, 2]), [0, 8, 4]).unwrap_err();
        assert!(error.message.starts_with("vmvx.mmt4d: out: out-of-bounds"), "{}", error.message);
    }

    #[test]
    fn query_answers_per_operand_role() {
        let query = |flags: i32| call("query_tile_sizes.2d", vec![Arg::L(100), Arg::L(200), Arg::W(flags)]);
        let (m, k, n) = Cpu::detect().matmul_tiles(MATMUL_F32F32F32).unwrap();
        assert_eq!(query(0x101).unwrap(), [Value::I64(m), Value::I64(k)]);
        assert_eq!(query(0x102).unwrap(), [Value::I64(n), Value::I64(k)]);
        assert_eq!(query(0x103).unwrap(), [Value::I64(m), Value::I64(n)]);
        assert_eq!(query(0x303).unwrap(), [Value::I64(8), Value::I64(8)]);
        let error = query(0x100).unwrap_err();
        assert_eq!(error.message, "vmvx.query_tile_sizes.2d: flags 0x100 name no operand role");
        assert_eq!(query(0x0001).unwrap_err().code, StatusCode::InvalidArgument);
    }
}
