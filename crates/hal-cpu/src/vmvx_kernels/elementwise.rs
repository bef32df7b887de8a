//! The 2-D elementwise kernels on 32-bit elements (`add.2d.f32`, `ctlz.2d.i32`, …): IREE's
//! `elementwise.c`, which applies C's operators to each element in row-major order.
//!
//! C's semantics on x86-64 carry over: integer arithmetic wraps, shift amounts are taken modulo 32
//! (the hardware's masking), `expf` and `logf` are the same libm's via std, `ceil` and `floor` see
//! denormals as zero as the hardware rounding IREE's build uses does in a dispatch, and `rsqrt` is
//! `1.0f / sqrtf(x)` with both roundings. Integer division by
//! zero and `i32::MIN / -1` kill IREE's process with SIGFPE; here they are an `INVALID_ARGUMENT`
//! error, as in the VM's own division.

use super::{flushed, Access, Args, Layout, Mapped};
use rtx_host::{Diagnostic, StatusCode};
use rtx_vm::value::Value;

#[derive(Clone, Copy, Debug)]
pub(super) enum Binary {
    AddF32,
    AddI32,
    AndI32,
    DivF32,
    DivSI32,
    DivUI32,
    MulF32,
    MulI32,
    OrI32,
    ShlI32,
    ShrSI32,
    ShrUI32,
    SubF32,
    SubI32,
    XorI32,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Unary {
    AbsF32,
    CeilF32,
    CtlzI32,
    ExpF32,
    FloorF32,
    LogF32,
    NegF32,
    RsqrtF32,
}

impl Binary {
    /// The result bits, or `None` where C's division traps.
    fn apply(self, lhs: u32, rhs: u32) -> Option<u32> {
        let f = |op: fn(f32, f32) -> f32| op(f32::from_bits(lhs), f32::from_bits(rhs)).to_bits();
        Some(match self {
            Binary::AddF32 => f(|a, b| a + b),
            Binary::SubF32 => f(|a, b| a - b),
            Binary::MulF32 => f(|a, b| a * b),
            Binary::DivF32 => f(|a, b| a / b),
            Binary::AddI32 => lhs.wrapping_add(rhs),
            Binary::SubI32 => lhs.wrapping_sub(rhs),
            Binary::MulI32 => lhs.wrapping_mul(rhs),
            Binary::AndI32 => lhs & rhs,
            Binary::OrI32 => lhs | rhs,
            Binary::XorI32 => lhs ^ rhs,
            Binary::ShlI32 => lhs.wrapping_shl(rhs),
            Binary::ShrSI32 => (lhs as i32).wrapping_shr(rhs) as u32,
            Binary::ShrUI32 => lhs.wrapping_shr(rhs),
            Binary::DivSI32 => (lhs as i32).checked_div(rhs as i32)? as u32,
            Binary::DivUI32 => lhs.checked_div(rhs)?,
        })
    }
}

impl Unary {
    fn apply(self, bits: u32) -> u32 {
        let x = f32::from_bits(bits);
        match self {
            Unary::AbsF32 => x.abs().to_bits(),
            Unary::CeilF32 => flushed(x).ceil().to_bits(),
            Unary::FloorF32 => flushed(x).floor().to_bits(),
            Unary::NegF32 => (-x).to_bits(),
            Unary::ExpF32 => x.exp().to_bits(),
            Unary::LogF32 => x.ln().to_bits(),
            Unary::RsqrtF32 => (1.0 / x.sqrt()).to_bits(),
            Unary::CtlzI32 => bits.leading_zeros(),
        }
    }
}

/// `(lhs, rhs, out)` strided operands and the sizes: `out[i][j] = op(lhs[i][j], rhs[i][j])`.
pub(super) fn binary(args: &mut Args<'_>, op: Binary) -> Result<Vec<Value>, Diagnostic> {
    let (lhs, rhs, out) = (Layout::strided(args, "lhs")?, Layout::strided(args, "rhs")?, Layout::strided(args, "out")?);
    let sizes = (args.i64()?, args.i64()?);
    let lhs = Mapped::new(args, &lhs, 4, sizes, Access::Read)?;
    let rhs = Mapped::new(args, &rhs, 4, sizes, Access::Read)?;
    let out = Mapped::new(args, &out, 4, sizes, Access::Write)?;
    let (lhs_words, rhs_words) = (lhs.read_u32()?, rhs.read_u32()?);
    for i in 0..sizes.0 as usize {
        for j in 0..sizes.1 as usize {
            let (a, b) = (word(&lhs_words, lhs.at(i, j))?, word(&rhs_words, rhs.at(i, j))?);
            let result = op.apply(a, b).ok_or_else(|| {
                let what = if b == 0 { "division by zero" } else { "division overflow" };
                let (a, b) = match op {
                    Binary::DivSI32 => (i64::from(a as i32), i64::from(b as i32)),
                    _ => (i64::from(a), i64::from(b)),
                };
                args.error(StatusCode::InvalidArgument, format!("integer {what} ({a} / {b})"))
            })?;
            out.store_u32(out.at(i, j), result)?;
        }
    }
    Ok(Vec::new())
}

/// `(in, out)` strided operands and the sizes: `out[i][j] = op(in[i][j])`.
pub(super) fn unary(args: &mut Args<'_>, op: Unary) -> Result<Vec<Value>, Diagnostic> {
    let (input, out) = (Layout::strided(args, "in")?, Layout::strided(args, "out")?);
    let sizes = (args.i64()?, args.i64()?);
    let input = Mapped::new(args, &input, 4, sizes, Access::Read)?;
    let out = Mapped::new(args, &out, 4, sizes, Access::Write)?;
    let words = input.read_u32()?;
    for i in 0..sizes.0 as usize {
        for j in 0..sizes.1 as usize {
            out.store_u32(out.at(i, j), op.apply(word(&words, input.at(i, j))?))?;
        }
    }
    Ok(Vec::new())
}

fn word(words: &[u32], at: usize) -> Result<u32, Diagnostic> {
    words
        .get(at)
        .copied()
        .ok_or_else(|| Diagnostic::new(StatusCode::Internal, format!("element {at} lies outside the mapped words")))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{call, f32s, read_f32s, read_words, words, Arg};
    use super::*;

    /// Runs a binary function on `lhs` and `rhs` as 1 x n rows.
    fn binary_row(function: &str, lhs: &[u32], rhs: &[u32]) -> Result<Vec<u32>, Diagnostic> {
        let n = lhs.len() as i64;
        let out = words(&vec![0xdead_beef; lhs.len()]);
        let operand = |b| [Arg::Buf(b), Arg::L(0), Arg::L(n), Arg::L(1)];
        let mut arguments: Vec<Arg> = Vec::new();
        arguments.extend(operand(words(lhs)));
        arguments.extend(operand(words(rhs)));
        arguments.extend(operand(out.clone()));
        arguments.extend([Arg::L(1), Arg::L(n)]);
        call(function, arguments)?;
        Ok(read_words(&out))
    }

    fn unary_row(function: &str, input: &[u32]) -> Vec<u32> {
        let n = input.len() as i64;
        let out = words(&vec![0; input.len()]);
        call(
            function,
            vec![
                Arg::Buf(words(input)),
                Arg::L(0),
                Arg::L(n),
                Arg::L(1),
                Arg::Buf(out.clone()),
                Arg::L(0),
                Arg::L(n),
                Arg::L(1),
                Arg::L(1),
                Arg::L(n),
            ],
        )
        .unwrap();
        read_words(&out)
    }

    fn bits(values: &[f32]) -> Vec<u32> {
        values.iter().map(|v| v.to_bits()).collect()
    }

    fn ints(values: &[i32]) -> Vec<u32> {
        values.iter().map(|&v| v as u32).collect()
    }

    #[test]
    fn float_binaries_round_like_ieee_single_precision() {
        let (a, b) = (bits(&[1.5, 1e30, -0.0, 1.0]), bits(&[2.25, 1e30, 0.0, 3.0]));
        assert_eq!(binary_row("add.2d.f32", &a, &b).unwrap(), bits(&[3.75, 2e30, 0.0, 4.0]));
        assert_eq!(binary_row("sub.2d.f32", &a, &b).unwrap(), bits(&[-0.75, 0.0, -0.0, -2.0]));
        assert_eq!(binary_row("mul.2d.f32", &a, &b).unwrap(), bits(&[3.375, f32::INFINITY, -0.0, 3.0]));
        let quotient = binary_row("div.2d.f32", &a, &b).unwrap();
        assert_eq!(quotient[..2], bits(&[1.5 / 2.25, 1.0]));
        assert!(f32::from_bits(quotient[2]).is_nan(), "-0 / 0");
        assert_eq!(quotient[3], (1.0f32 / 3.0).to_bits());
    }

    #[test]
    fn integer_binaries_wrap_and_mask_shifts() {
        let (a, b) = (ints(&[i32::MAX, -7, 6, 1]), ints(&[1, 2, -3, 33]));
        assert_eq!(binary_row("add.2d.i32", &a, &b).unwrap(), ints(&[i32::MIN, -5, 3, 34]));
        assert_eq!(binary_row("sub.2d.i32", &a, &b).unwrap(), ints(&[i32::MAX - 1, -9, 9, -32]));
        assert_eq!(binary_row("mul.2d.i32", &a, &b).unwrap(), ints(&[i32::MAX, -14, -18, 33]));
        assert_eq!(binary_row("and.2d.i32", &a, &b).unwrap(), ints(&[1, 0, 4, 1]));
        assert_eq!(binary_row("or.2d.i32", &a, &b).unwrap(), ints(&[i32::MAX, -5, -1, 33]));
        assert_eq!(binary_row("xor.2d.i32", &a, &b).unwrap(), ints(&[i32::MAX - 1, -5, -5, 32]));
        // Shift amounts are taken modulo 32: 33 shifts by 1, -3 by 29.
        assert_eq!(binary_row("shl.2d.i32", &a, &b).unwrap(), ints(&[-2, -28, 6 << 29, 2]));
        assert_eq!(binary_row("shrs.2d.i32", &a, &b).unwrap(), ints(&[i32::MAX >> 1, -2, 0, 0]));
        assert_eq!(
            binary_row("shru.2d.i32", &a, &b).unwrap(),
            ints(&[i32::MAX >> 1, (-7i32 as u32 >> 2) as i32, 0, 0])
        );
        assert_eq!(
            binary_row("divs.2d.i32", &ints(&[-7, 7, i32::MIN]), &ints(&[2, -2, 1])).unwrap(),
            ints(&[-3, -3, i32::MIN])
        );
        assert_eq!(binary_row("divu.2d.i32", &ints(&[-7, 7]), &ints(&[2, 2])).unwrap(), vec![0x7fff_fffc, 3]);
    }

    #[test]
    fn integer_division_traps_are_errors() {
        let error = binary_row("divs.2d.i32", &ints(&[5, -7]), &ints(&[1, 0])).unwrap_err();
        assert_eq!(error.code, StatusCode::InvalidArgument);
        assert_eq!(error.message, "vmvx.divs.2d.i32: integer division by zero (-7 / 0)");
        let error = binary_row("divs.2d.i32", &ints(&[i32::MIN]), &ints(&[-1])).unwrap_err();
        assert_eq!(error.message, "vmvx.divs.2d.i32: integer division overflow (-2147483648 / -1)");
        let error = binary_row("divu.2d.i32", &[u32::MAX], &[0]).unwrap_err();
        assert_eq!(error.message, "vmvx.divu.2d.i32: integer division by zero (4294967295 / 0)");
    }

    #[test]
    fn unary_kernels_follow_libm_and_c() {
        let input = bits(&[-2.5, 0.5, -0.0, 4.0]);
        assert_eq!(unary_row("abs.2d.f32", &input), bits(&[2.5, 0.5, 0.0, 4.0]));
        assert_eq!(unary_row("ceil.2d.f32", &input), bits(&[-2.0, 1.0, -0.0, 4.0]));
        assert_eq!(unary_row("floor.2d.f32", &input), bits(&[-3.0, 0.0, -0.0, 4.0]));
        // Denormals are zero, as in IREE's flushed dispatches: not 1 and -1.
        let tiny = bits(&[1e-40, -1e-40]);
        assert_eq!(unary_row("ceil.2d.f32", &tiny), bits(&[0.0, -0.0]));
        assert_eq!(unary_row("floor.2d.f32", &tiny), bits(&[0.0, -0.0]));
        assert_eq!(unary_row("neg.2d.f32", &input), bits(&[2.5, -0.5, 0.0, -4.0]));
        assert_eq!(unary_row("rsqrt.2d.f32", &bits(&[4.0, 0.0, -0.0, 0.25]))[..2], bits(&[0.5, f32::INFINITY]));
        assert_eq!(unary_row("rsqrt.2d.f32", &bits(&[-0.0]))[0], f32::NEG_INFINITY.to_bits());
        assert!(f32::from_bits(unary_row("rsqrt.2d.f32", &bits(&[-1.0]))[0]).is_nan());
        assert_eq!(unary_row("exp.2d.f32", &bits(&[0.0, f32::NEG_INFINITY, 1.0])), bits(&[1.0, 0.0, 1f32.exp()]));
        assert_eq!(unary_row("log.2d.f32", &bits(&[1.0, 0.0, 2.0])), bits(&[0.0, f32::NEG_INFINITY, 2f32.ln()]));
        assert_eq!(unary_row("ctlz.2d.i32", &[0, 1, u32::MAX, 0x0001_0000]), vec![32, 31, 0, 15]);
    }

    #[test]
    fn strides_and_offsets_address_each_operand() {
        // lhs: 2x3 rows of a 2x4 buffer starting at element 1; rhs: stored transposed (strides
        // 1, 2); out: rows 5 elements apart, the gaps untouched.
        let lhs = f32s(&[99.0, 1.0, 2.0, 3.0, 99.0, 4.0, 5.0, 6.0]);
        let rhs = f32s(&[10.0, 40.0, 20.0, 50.0, 30.0, 60.0]);
        let out = f32s(&[-1.0; 10]);
        let args = vec![
            Arg::Buf(lhs),
            Arg::L(1),
            Arg::L(4),
            Arg::L(1),
            Arg::Buf(rhs),
            Arg::L(0),
            Arg::L(1),
            Arg::L(2),
            Arg::Buf(out.clone()),
            Arg::L(0),
            Arg::L(5),
            Arg::L(1),
            Arg::L(2),
            Arg::L(3),
        ];
        call("add.2d.f32", args).unwrap();
        assert_eq!(read_f32s(&out), [11.0, 22.0, 33.0, -1.0, -1.0, 44.0, 55.0, 66.0, -1.0, -1.0]);

        let lhs = f32s(&[1.0, 2.0, 3.0]);
        let rhs = f32s(&[10.0, 20.0]);
        let out = f32s(&[0.0; 6]);
        // lhs broadcast down the columns (stride0 = 0), rhs broadcast along rows (stride1 = 0).
        let args = vec![
            Arg::Buf(lhs),
            Arg::L(0),
            Arg::L(0),
            Arg::L(1),
            Arg::Buf(rhs),
            Arg::L(0),
            Arg::L(1),
            Arg::L(0),
            Arg::Buf(out.clone()),
            Arg::L(0),
            Arg::L(3),
            Arg::L(1),
            Arg::L(2),
            Arg::L(3),
        ];
        call("mul.2d.f32", args).unwrap();
        assert_eq!(read_f32s(&out), [10.0, 20.0, 30.0, 20.0, 40.0, 60.0]);
    }

    #[test]
    fn out_of_range_operands_are_named() {
        let lhs = f32s(&[0.0; 6]);
        let rhs = f32s(&[0.0; 5]);
        let out = f32s(&[0.0; 6]);
        let args = vec![
            Arg::Buf(lhs),
            Arg::L(0),
            Arg::L(3),
            Arg::L(1),
            Arg::Buf(rhs),
            Arg::L(0),
            Arg::L(3),
            Arg::L(1),
            Arg::Buf(out.clone()),
            Arg::L(0),
            Arg::L(3),
            Arg::L(1),
            Arg::L(2),
            Arg::L(3),
        ];
        let error = call("sub.2d.f32", args).unwrap_err();
        assert_eq!(error.code, StatusCode::OutOfRange);
        assert_eq!(
            error.message,
            "vmvx.sub.2d.f32: rhs: out-of-bounds access detected (offset=0, length=24, alignment=4, buffer length=20)"
        );
        assert_eq!(read_f32s(&out), [0.0; 6], "nothing was written");
    }
}
