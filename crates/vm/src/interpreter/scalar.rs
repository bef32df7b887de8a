//! The scalar instructions' semantics, one function per opcode, on raw register bits.
//!
//! Registers hold bits: i32 and f32 values are `u32`, i64 and f64 values are `u64`. Every function
//! here has one of a handful of shapes so that the lowered program can store it as a plain function
//! pointer next to its register operands; the hottest instructions also get variants of their own
//! in [`super::op::Op`].
//!
//! The semantics are IREE 3.13's (`runtime/src/iree/vm/ops.h`), which are C's on x86-64: integer
//! arithmetic wraps, shift amounts are masked to the width, signed division by zero or
//! `MIN / -1` is an error here (IREE's runtime dies of SIGFPE), float→int casts round half away
//! from zero through `lroundf`/`llround` and wrap to the destination width, and out-of-range or
//! NaN conversions give what x86's `cvtt*2si` gives (the minimum signed value). Float math calls the
//! platform libm through std, as IREE's runtime does, so results match bit for bit on the same libc.

use crate::bytecode::isa::{instructions, Opcode, Scalar};

pub type Un32 = fn(u32) -> u32;
pub type Bin32 = fn(u32, u32) -> u32;
pub type Tern32 = fn(u32, u32, u32) -> u32;
pub type Un64 = fn(u64) -> u64;
pub type Bin64 = fn(u64, u64) -> u64;
pub type Tern64 = fn(u64, u64, u64) -> u64;
pub type Shift64 = fn(u64, u32) -> u64;
pub type Narrow = fn(u64) -> u32;
pub type Widen = fn(u32) -> u64;
pub type Cmp64 = fn(u64, u64) -> u32;
/// Division and remainder: `None` when IREE's C code would trap.
pub type Div32 = fn(u32, u32) -> Option<u32>;
pub type Div64 = fn(u64, u64) -> Option<u64>;

/// A scalar instruction's semantics: its function here, by shape. The shape fixes the register
/// operands (reads then one write) and their widths.
#[derive(Clone, Copy, Debug)]
pub enum Semantics {
    Un32(Un32),
    Bin32(Bin32),
    Tern32(Tern32),
    Un64(Un64),
    Bin64(Bin64),
    Tern64(Tern64),
    Shift64(Shift64),
    Narrow(Narrow),
    Widen(Widen),
    Cmp64(Cmp64),
    Div32(Div32),
    Div64(Div64),
}

impl Semantics {
    /// The table's class for semantics of this shape.
    pub const fn shape(self) -> Scalar {
        match self {
            Semantics::Un32(_) => Scalar::Un32,
            Semantics::Bin32(_) => Scalar::Bin32,
            Semantics::Tern32(_) => Scalar::Tern32,
            Semantics::Un64(_) => Scalar::Un64,
            Semantics::Bin64(_) => Scalar::Bin64,
            Semantics::Tern64(_) => Scalar::Tern64,
            Semantics::Shift64(_) => Scalar::Shift64,
            Semantics::Narrow(_) => Scalar::Narrow,
            Semantics::Widen(_) => Scalar::Widen,
            Semantics::Cmp64(_) => Scalar::Cmp64,
            Semantics::Div32(_) => Scalar::Div32,
            Semantics::Div64(_) => Scalar::Div64,
        }
    }
}

/// The semantics of every register-only scalar instruction (those with a [`Scalar`] class in
/// the table), `None` for the rest (consts, selects, refs, globals, lists, buffers, control
/// flow), which the lowering handles one by one. The one place that says what each scalar opcode
/// computes: the lowering, the inline ops of the dispatch loop (at compile time, through
/// [`bin32`], [`bin64`] and [`cmp64`]) and the JIT's tests all take it from here.
pub const fn semantics(opcode: Opcode) -> Option<Semantics> {
    use Opcode as O;
    use Semantics::*;
    Some(match opcode {
        O::AddI32 => Bin32(add_i32),
        O::SubI32 => Bin32(sub_i32),
        O::MulI32 => Bin32(mul_i32),
        O::DivI32S => Div32(div_i32_s),
        O::DivI32U => Div32(div_i32_u),
        O::RemI32S => Div32(rem_i32_s),
        O::RemI32U => Div32(rem_i32_u),
        O::FMAI32 => Tern32(fma_i32),
        O::AddI64 => Bin64(add_i64),
        O::SubI64 => Bin64(sub_i64),
        O::MulI64 => Bin64(mul_i64),
        O::DivI64S => Div64(div_i64_s),
        O::DivI64U => Div64(div_i64_u),
        O::RemI64S => Div64(rem_i64_s),
        O::RemI64U => Div64(rem_i64_u),
        O::FMAI64 => Tern64(fma_i64),
        O::NotI32 => Un32(not_i32),
        O::AndI32 => Bin32(and_i32),
        O::OrI32 => Bin32(or_i32),
        O::XorI32 => Bin32(xor_i32),
        O::NotI64 => Un64(not_i64),
        O::AndI64 => Bin64(and_i64),
        O::OrI64 => Bin64(or_i64),
        O::XorI64 => Bin64(xor_i64),
        O::ShlI32 => Bin32(shl_i32),
        O::ShrI32S => Bin32(shr_i32_s),
        O::ShrI32U => Bin32(shr_i32_u),
        O::ShlI64 => Shift64(shl_i64),
        O::ShrI64S => Shift64(shr_i64_s),
        O::ShrI64U => Shift64(shr_i64_u),
        O::TruncI32I8 => Un32(trunc_i32_i8),
        O::TruncI32I16 => Un32(trunc_i32_i16),
        O::TruncI64I32 => Narrow(trunc_i64_i32),
        O::ExtI8I32S => Un32(ext_i8_i32_s),
        O::ExtI8I32U => Un32(ext_i8_i32_u),
        O::ExtI16I32S => Un32(ext_i16_i32_s),
        O::ExtI16I32U => Un32(ext_i16_i32_u),
        O::ExtI32I64S => Widen(ext_i32_i64_s),
        O::ExtI32I64U => Widen(ext_i32_i64_u),
        O::CmpEQI32 => Bin32(cmp_eq_i32),
        O::CmpNEI32 => Bin32(cmp_ne_i32),
        O::CmpLTI32S => Bin32(cmp_lt_i32_s),
        O::CmpLTI32U => Bin32(cmp_lt_i32_u),
        O::CmpNZI32 => Un32(cmp_nz_i32),
        O::CmpEQI64 => Cmp64(cmp_eq_i64),
        O::CmpNEI64 => Cmp64(cmp_ne_i64),
        O::CmpLTI64S => Cmp64(cmp_lt_i64_s),
        O::CmpLTI64U => Cmp64(cmp_lt_i64_u),
        O::CmpNZI64 => Narrow(cmp_nz_i64),
        O::CtlzI32 => Un32(ctlz_i32),
        O::CtlzI64 => Un64(ctlz_i64),
        O::AbsI32 => Un32(abs_i32),
        O::AbsI64 => Un64(abs_i64),
        O::MinI32S => Bin32(min_i32_s),
        O::MinI32U => Bin32(min_i32_u),
        O::MaxI32S => Bin32(max_i32_s),
        O::MaxI32U => Bin32(max_i32_u),
        O::MinI64S => Bin64(min_i64_s),
        O::MinI64U => Bin64(min_i64_u),
        O::MaxI64S => Bin64(max_i64_s),
        O::MaxI64U => Bin64(max_i64_u),
        O::AddF32 => Bin32(add_f32),
        O::SubF32 => Bin32(sub_f32),
        O::MulF32 => Bin32(mul_f32),
        O::DivF32 => Bin32(div_f32),
        O::RemF32 => Bin32(rem_f32),
        O::FMAF32 => Tern32(fma_f32),
        O::AbsF32 => Un32(abs_f32),
        O::NegF32 => Un32(neg_f32),
        O::CeilF32 => Un32(ceil_f32),
        O::FloorF32 => Un32(floor_f32),
        O::CastSI32F32 => Un32(cast_si32_f32),
        O::CastUI32F32 => Un32(cast_ui32_f32),
        O::CastF32SI32 => Un32(cast_f32_si32),
        O::CastF32UI32 => Un32(cast_f32_ui32),
        O::BitcastI32F32 => Un32(identity_32),
        O::BitcastF32I32 => Un32(identity_32),
        O::AtanF32 => Un32(atan_f32),
        O::Atan2F32 => Bin32(atan2_f32),
        O::CosF32 => Un32(cos_f32),
        O::SinF32 => Un32(sin_f32),
        O::ExpF32 => Un32(exp_f32),
        O::Exp2F32 => Un32(exp2_f32),
        O::ExpM1F32 => Un32(expm1_f32),
        O::LogF32 => Un32(log_f32),
        O::Log10F32 => Un32(log10_f32),
        O::Log1pF32 => Un32(log1p_f32),
        O::Log2F32 => Un32(log2_f32),
        O::PowF32 => Bin32(pow_f32),
        O::RsqrtF32 => Un32(rsqrt_f32),
        O::SqrtF32 => Un32(sqrt_f32),
        O::TanhF32 => Un32(tanh_f32),
        O::ErfF32 => Un32(erf_f32),
        O::CmpEQF32O => Bin32(cmp_eq_f32_o),
        O::CmpEQF32U => Bin32(cmp_eq_f32_u),
        O::CmpNEF32O => Bin32(cmp_ne_f32_o),
        O::CmpNEF32U => Bin32(cmp_ne_f32_u),
        O::CmpLTF32O => Bin32(cmp_lt_f32_o),
        O::CmpLTF32U => Bin32(cmp_lt_f32_u),
        O::CmpLTEF32O => Bin32(cmp_lte_f32_o),
        O::CmpLTEF32U => Bin32(cmp_lte_f32_u),
        O::CmpNaNF32 => Un32(cmp_nan_f32),
        O::RoundF32 => Un32(round_f32),
        O::MinF32 => Bin32(min_f32),
        O::MaxF32 => Bin32(max_f32),
        O::RoundF32Even => Un32(round_f32_even),
        O::CastF32SI64 => Widen(cast_f32_si64),
        O::CastF32UI64 => Widen(cast_f32_ui64),
        O::CastSI64F32 => Narrow(cast_si64_f32),
        O::CastUI64F32 => Narrow(cast_ui64_f32),
        O::AddF64 => Bin64(add_f64),
        O::SubF64 => Bin64(sub_f64),
        O::MulF64 => Bin64(mul_f64),
        O::DivF64 => Bin64(div_f64),
        O::RemF64 => Bin64(rem_f64),
        O::FMAF64 => Tern64(fma_f64),
        O::AbsF64 => Un64(abs_f64),
        O::NegF64 => Un64(neg_f64),
        O::CeilF64 => Un64(ceil_f64),
        O::FloorF64 => Un64(floor_f64),
        O::TruncF64F32 => Narrow(trunc_f64_f32),
        O::ExtF32F64 => Widen(ext_f32_f64),
        O::CastSI32F64 => Widen(cast_si32_f64),
        O::CastUI32F64 => Widen(cast_ui32_f64),
        O::CastF64SI32 => Narrow(cast_f64_si32),
        O::CastF64UI32 => Narrow(cast_f64_ui32),
        O::CastSI64F64 => Un64(cast_si64_f64),
        O::CastUI64F64 => Un64(cast_ui64_f64),
        O::CastF64SI64 => Un64(cast_f64_si64),
        O::CastF64UI64 => Un64(cast_f64_ui64),
        O::BitcastI64F64 => Un64(identity_64),
        O::BitcastF64I64 => Un64(identity_64),
        O::AtanF64 => Un64(atan_f64),
        O::Atan2F64 => Bin64(atan2_f64),
        O::CosF64 => Un64(cos_f64),
        O::SinF64 => Un64(sin_f64),
        O::ExpF64 => Un64(exp_f64),
        O::Exp2F64 => Un64(exp2_f64),
        O::ExpM1F64 => Un64(expm1_f64),
        O::LogF64 => Un64(log_f64),
        O::Log10F64 => Un64(log10_f64),
        O::Log1pF64 => Un64(log1p_f64),
        O::Log2F64 => Un64(log2_f64),
        O::PowF64 => Bin64(pow_f64),
        O::RsqrtF64 => Un64(rsqrt_f64),
        O::SqrtF64 => Un64(sqrt_f64),
        O::TanhF64 => Un64(tanh_f64),
        O::ErfF64 => Un64(erf_f64),
        O::CmpEQF64O => Cmp64(cmp_eq_f64_o),
        O::CmpEQF64U => Cmp64(cmp_eq_f64_u),
        O::CmpNEF64O => Cmp64(cmp_ne_f64_o),
        O::CmpNEF64U => Cmp64(cmp_ne_f64_u),
        O::CmpLTF64O => Cmp64(cmp_lt_f64_o),
        O::CmpLTF64U => Cmp64(cmp_lt_f64_u),
        O::CmpLTEF64O => Cmp64(cmp_lte_f64_o),
        O::CmpLTEF64U => Cmp64(cmp_lte_f64_u),
        O::CmpNaNF64 => Narrow(cmp_nan_f64),
        O::RoundF64 => Un64(round_f64),
        O::MinF64 => Bin64(min_f64),
        O::MaxF64 => Bin64(max_f64),
        O::RoundF64Even => Un64(round_f64_even),
        // Not scalar: the table gives these no `Scalar` class (checked at compile time below).
        _ => return None,
    })
}

/// Every instruction the table classes as scalar has semantics here, of the class's shape, and
/// no other has: checked when the crate compiles, so that `semantics` may send every other
/// opcode to `None` without listing them and still miss none.
const _: () = {
    let instructions = instructions();
    let mut i = 0;
    while i < instructions.len() {
        let instruction = &instructions[i];
        let agrees = match (semantics(instruction.id), instruction.scalar) {
            (None, None) => true,
            (Some(semantics), Some(shape)) => semantics.shape() as u8 == shape as u8,
            _ => false,
        };
        assert!(agrees, "scalar::semantics disagrees with the table's Scalar class of an instruction");
        i += 1;
    }
};

/// The function of an instruction whose semantics are [`Semantics::Bin32`]; evaluated at compile
/// time, where any other instruction is a compile error.
pub const fn bin32(opcode: Opcode) -> Bin32 {
    match semantics(opcode) {
        Some(Semantics::Bin32(f)) => f,
        _ => panic!("not a binary i32-bank instruction"),
    }
}

/// The function of an instruction whose semantics are [`Semantics::Bin64`] (see [`bin32`]).
pub const fn bin64(opcode: Opcode) -> Bin64 {
    match semantics(opcode) {
        Some(Semantics::Bin64(f)) => f,
        _ => panic!("not a binary i64-bank instruction"),
    }
}

/// The function of an instruction whose semantics are [`Semantics::Cmp64`] (see [`bin32`]).
pub const fn cmp64(opcode: Opcode) -> Cmp64 {
    match semantics(opcode) {
        Some(Semantics::Cmp64(f)) => f,
        _ => panic!("not an i64 compare"),
    }
}

fn f(bits: u32) -> f32 {
    f32::from_bits(bits)
}
fn d(bits: u64) -> f64 {
    f64::from_bits(bits)
}
fn b(value: bool) -> u32 {
    value as u32
}

/// C's `lround`/`llround` on x86-64 glibc: round half away from zero; NaN and values outside the
/// i64 range give `i64::MIN` (what the hardware conversion produces).
fn llround(value: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    let rounded = value.round();
    if (-LIMIT..LIMIT).contains(&rounded) {
        rounded as i64
    } else {
        i64::MIN
    }
}

/// `(uint64_t)` of a float on x86-64: values at or above 2^63 go through the high-bit trick, the
/// rest through the signed conversion (so negative values wrap, and NaN gives 2^63).
fn to_u64(value: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if value >= TWO_63 {
        (llround(value - TWO_63) as u64) ^ (1 << 63)
    } else {
        llround(value) as u64
    }
}

extern "C" {
    fn remainderf(x: f32, y: f32) -> f32;
    fn remainder(x: f64, y: f64) -> f64;
    fn erff(x: f32) -> f32;
    fn erf(x: f64) -> f64;
}

// i32
pub fn add_i32(a: u32, b: u32) -> u32 {
    a.wrapping_add(b)
}
pub fn sub_i32(a: u32, b: u32) -> u32 {
    a.wrapping_sub(b)
}
pub fn mul_i32(a: u32, b: u32) -> u32 {
    a.wrapping_mul(b)
}
pub fn div_i32_s(a: u32, b: u32) -> Option<u32> {
    (a as i32).checked_div(b as i32).map(|v| v as u32)
}
pub fn div_i32_u(a: u32, b: u32) -> Option<u32> {
    a.checked_div(b)
}
pub fn rem_i32_s(a: u32, b: u32) -> Option<u32> {
    (a as i32).checked_rem(b as i32).map(|v| v as u32)
}
pub fn rem_i32_u(a: u32, b: u32) -> Option<u32> {
    a.checked_rem(b)
}
pub fn fma_i32(a: u32, b: u32, c: u32) -> u32 {
    a.wrapping_mul(b).wrapping_add(c)
}
pub fn abs_i32(a: u32) -> u32 {
    (a as i32).wrapping_abs() as u32
}
pub fn min_i32_s(a: u32, b: u32) -> u32 {
    (a as i32).min(b as i32) as u32
}
pub fn min_i32_u(a: u32, b: u32) -> u32 {
    a.min(b)
}
pub fn max_i32_s(a: u32, b: u32) -> u32 {
    (a as i32).max(b as i32) as u32
}
pub fn max_i32_u(a: u32, b: u32) -> u32 {
    a.max(b)
}
pub fn not_i32(a: u32) -> u32 {
    !a
}
pub fn and_i32(a: u32, b: u32) -> u32 {
    a & b
}
pub fn or_i32(a: u32, b: u32) -> u32 {
    a | b
}
pub fn xor_i32(a: u32, b: u32) -> u32 {
    a ^ b
}
pub fn ctlz_i32(a: u32) -> u32 {
    a.leading_zeros()
}
pub fn shl_i32(a: u32, b: u32) -> u32 {
    a << (b & 31)
}
pub fn shr_i32_s(a: u32, b: u32) -> u32 {
    ((a as i32) >> (b & 31)) as u32
}
pub fn shr_i32_u(a: u32, b: u32) -> u32 {
    a >> (b & 31)
}
pub fn trunc_i32_i8(a: u32) -> u32 {
    a as u8 as u32
}
pub fn trunc_i32_i16(a: u32) -> u32 {
    a as u16 as u32
}
pub fn ext_i8_i32_s(a: u32) -> u32 {
    a as i8 as i32 as u32
}
pub fn ext_i8_i32_u(a: u32) -> u32 {
    a as u8 as u32
}
pub fn ext_i16_i32_s(a: u32) -> u32 {
    a as i16 as i32 as u32
}
pub fn ext_i16_i32_u(a: u32) -> u32 {
    a as u16 as u32
}
pub fn cmp_eq_i32(a: u32, c: u32) -> u32 {
    b(a == c)
}
pub fn cmp_ne_i32(a: u32, c: u32) -> u32 {
    b(a != c)
}
pub fn cmp_lt_i32_s(a: u32, c: u32) -> u32 {
    b((a as i32) < (c as i32))
}
pub fn cmp_lt_i32_u(a: u32, c: u32) -> u32 {
    b(a < c)
}
pub fn cmp_nz_i32(a: u32) -> u32 {
    b(a != 0)
}

// i64
pub fn add_i64(a: u64, b: u64) -> u64 {
    a.wrapping_add(b)
}
pub fn sub_i64(a: u64, b: u64) -> u64 {
    a.wrapping_sub(b)
}
pub fn mul_i64(a: u64, b: u64) -> u64 {
    a.wrapping_mul(b)
}
pub fn div_i64_s(a: u64, b: u64) -> Option<u64> {
    (a as i64).checked_div(b as i64).map(|v| v as u64)
}
pub fn div_i64_u(a: u64, b: u64) -> Option<u64> {
    a.checked_div(b)
}
pub fn rem_i64_s(a: u64, b: u64) -> Option<u64> {
    (a as i64).checked_rem(b as i64).map(|v| v as u64)
}
pub fn rem_i64_u(a: u64, b: u64) -> Option<u64> {
    a.checked_rem(b)
}
pub fn fma_i64(a: u64, b: u64, c: u64) -> u64 {
    a.wrapping_mul(b).wrapping_add(c)
}
pub fn abs_i64(a: u64) -> u64 {
    (a as i64).wrapping_abs() as u64
}
pub fn min_i64_s(a: u64, b: u64) -> u64 {
    (a as i64).min(b as i64) as u64
}
pub fn min_i64_u(a: u64, b: u64) -> u64 {
    a.min(b)
}
pub fn max_i64_s(a: u64, b: u64) -> u64 {
    (a as i64).max(b as i64) as u64
}
pub fn max_i64_u(a: u64, b: u64) -> u64 {
    a.max(b)
}
pub fn not_i64(a: u64) -> u64 {
    !a
}
pub fn and_i64(a: u64, b: u64) -> u64 {
    a & b
}
pub fn or_i64(a: u64, b: u64) -> u64 {
    a | b
}
pub fn xor_i64(a: u64, b: u64) -> u64 {
    a ^ b
}
pub fn ctlz_i64(a: u64) -> u64 {
    a.leading_zeros() as u64
}
pub fn shl_i64(a: u64, b: u32) -> u64 {
    a << (b & 63)
}
pub fn shr_i64_s(a: u64, b: u32) -> u64 {
    ((a as i64) >> (b & 63)) as u64
}
pub fn shr_i64_u(a: u64, b: u32) -> u64 {
    a >> (b & 63)
}
pub fn trunc_i64_i32(a: u64) -> u32 {
    a as u32
}
pub fn ext_i32_i64_s(a: u32) -> u64 {
    a as i32 as i64 as u64
}
pub fn ext_i32_i64_u(a: u32) -> u64 {
    a as u64
}
pub fn cmp_eq_i64(a: u64, c: u64) -> u32 {
    b(a == c)
}
pub fn cmp_ne_i64(a: u64, c: u64) -> u32 {
    b(a != c)
}
pub fn cmp_lt_i64_s(a: u64, c: u64) -> u32 {
    b((a as i64) < (c as i64))
}
pub fn cmp_lt_i64_u(a: u64, c: u64) -> u32 {
    b(a < c)
}
pub fn cmp_nz_i64(a: u64) -> u32 {
    b(a != 0)
}

// f32
pub fn add_f32(a: u32, c: u32) -> u32 {
    (f(a) + f(c)).to_bits()
}
pub fn sub_f32(a: u32, c: u32) -> u32 {
    (f(a) - f(c)).to_bits()
}
pub fn mul_f32(a: u32, c: u32) -> u32 {
    (f(a) * f(c)).to_bits()
}
pub fn div_f32(a: u32, c: u32) -> u32 {
    (f(a) / f(c)).to_bits()
}
pub fn rem_f32(a: u32, c: u32) -> u32 {
    // SAFETY: `remainderf` is a pure libm function of two floats.
    unsafe { remainderf(f(a), f(c)) }.to_bits()
}
/// Not fused: IREE's release runtime is built for baseline x86-64, where `FP_FAST_FMAF` is unset
/// and `vm_fma_f32` is `a * b + c` with two roundings.
pub fn fma_f32(a: u32, c: u32, e: u32) -> u32 {
    (f(a) * f(c) + f(e)).to_bits()
}
pub fn abs_f32(a: u32) -> u32 {
    f(a).abs().to_bits()
}
pub fn neg_f32(a: u32) -> u32 {
    (-f(a)).to_bits()
}
pub fn ceil_f32(a: u32) -> u32 {
    f(a).ceil().to_bits()
}
pub fn floor_f32(a: u32) -> u32 {
    f(a).floor().to_bits()
}
pub fn round_f32(a: u32) -> u32 {
    f(a).round().to_bits()
}
pub fn round_f32_even(a: u32) -> u32 {
    f(a).round_ties_even().to_bits()
}
pub fn min_f32(a: u32, c: u32) -> u32 {
    if f(c) < f(a) {
        c
    } else {
        a
    }
}
pub fn max_f32(a: u32, c: u32) -> u32 {
    if f(a) < f(c) {
        c
    } else {
        a
    }
}
pub fn atan_f32(a: u32) -> u32 {
    f(a).atan().to_bits()
}
pub fn atan2_f32(a: u32, c: u32) -> u32 {
    f(a).atan2(f(c)).to_bits()
}
pub fn cos_f32(a: u32) -> u32 {
    f(a).cos().to_bits()
}
pub fn sin_f32(a: u32) -> u32 {
    f(a).sin().to_bits()
}
pub fn exp_f32(a: u32) -> u32 {
    f(a).exp().to_bits()
}
pub fn exp2_f32(a: u32) -> u32 {
    f(a).exp2().to_bits()
}
pub fn expm1_f32(a: u32) -> u32 {
    f(a).exp_m1().to_bits()
}
pub fn log_f32(a: u32) -> u32 {
    f(a).ln().to_bits()
}
pub fn log10_f32(a: u32) -> u32 {
    f(a).log10().to_bits()
}
pub fn log1p_f32(a: u32) -> u32 {
    f(a).ln_1p().to_bits()
}
pub fn log2_f32(a: u32) -> u32 {
    f(a).log2().to_bits()
}
pub fn pow_f32(a: u32, c: u32) -> u32 {
    f(a).powf(f(c)).to_bits()
}
pub fn rsqrt_f32(a: u32) -> u32 {
    (1.0 / f(a).sqrt()).to_bits()
}
pub fn sqrt_f32(a: u32) -> u32 {
    f(a).sqrt().to_bits()
}
pub fn tanh_f32(a: u32) -> u32 {
    f(a).tanh().to_bits()
}
pub fn erf_f32(a: u32) -> u32 {
    // SAFETY: `erff` is a pure libm function of one float.
    unsafe { erff(f(a)) }.to_bits()
}
pub fn cast_si32_f32(a: u32) -> u32 {
    (a as i32 as f32).to_bits()
}
pub fn cast_ui32_f32(a: u32) -> u32 {
    (a as f32).to_bits()
}
pub fn cast_f32_si32(a: u32) -> u32 {
    llround(f(a) as f64) as u32
}
pub fn cast_f32_ui32(a: u32) -> u32 {
    llround(f(a) as f64) as u32
}
pub fn cast_si64_f32(a: u64) -> u32 {
    (a as i64 as f32).to_bits()
}
pub fn cast_ui64_f32(a: u64) -> u32 {
    (a as f32).to_bits()
}
pub fn cast_f32_si64(a: u32) -> u64 {
    llround(f(a) as f64) as u64
}
pub fn cast_f32_ui64(a: u32) -> u64 {
    to_u64(f(a).round() as f64)
}
pub fn identity_32(a: u32) -> u32 {
    a
}
pub fn cmp_eq_f32_o(a: u32, c: u32) -> u32 {
    b(f(a) == f(c))
}
pub fn cmp_eq_f32_u(a: u32, c: u32) -> u32 {
    b(f(a).is_nan() || f(c).is_nan() || f(a) == f(c))
}
pub fn cmp_ne_f32_o(a: u32, c: u32) -> u32 {
    b(f(a) != f(c))
}
pub fn cmp_ne_f32_u(a: u32, c: u32) -> u32 {
    b(f(a).is_nan() || f(c).is_nan() || f(a) != f(c))
}
pub fn cmp_lt_f32_o(a: u32, c: u32) -> u32 {
    b(f(a) < f(c))
}
pub fn cmp_lt_f32_u(a: u32, c: u32) -> u32 {
    b(f(a).is_nan() || f(c).is_nan() || f(a) < f(c))
}
pub fn cmp_lte_f32_o(a: u32, c: u32) -> u32 {
    b(f(a) <= f(c))
}
pub fn cmp_lte_f32_u(a: u32, c: u32) -> u32 {
    b(f(a).is_nan() || f(c).is_nan() || f(a) <= f(c))
}
pub fn cmp_nan_f32(a: u32) -> u32 {
    b(f(a).is_nan())
}

// f64
pub fn add_f64(a: u64, c: u64) -> u64 {
    (d(a) + d(c)).to_bits()
}
pub fn sub_f64(a: u64, c: u64) -> u64 {
    (d(a) - d(c)).to_bits()
}
pub fn mul_f64(a: u64, c: u64) -> u64 {
    (d(a) * d(c)).to_bits()
}
pub fn div_f64(a: u64, c: u64) -> u64 {
    (d(a) / d(c)).to_bits()
}
pub fn rem_f64(a: u64, c: u64) -> u64 {
    // SAFETY: `remainder` is a pure libm function of two doubles.
    unsafe { remainder(d(a), d(c)) }.to_bits()
}
/// Not fused, like [`fma_f32`].
pub fn fma_f64(a: u64, c: u64, e: u64) -> u64 {
    (d(a) * d(c) + d(e)).to_bits()
}
pub fn abs_f64(a: u64) -> u64 {
    d(a).abs().to_bits()
}
pub fn neg_f64(a: u64) -> u64 {
    (-d(a)).to_bits()
}
pub fn ceil_f64(a: u64) -> u64 {
    d(a).ceil().to_bits()
}
pub fn floor_f64(a: u64) -> u64 {
    d(a).floor().to_bits()
}
pub fn round_f64(a: u64) -> u64 {
    d(a).round().to_bits()
}
pub fn round_f64_even(a: u64) -> u64 {
    d(a).round_ties_even().to_bits()
}
pub fn min_f64(a: u64, c: u64) -> u64 {
    if d(c) < d(a) {
        c
    } else {
        a
    }
}
pub fn max_f64(a: u64, c: u64) -> u64 {
    if d(a) < d(c) {
        c
    } else {
        a
    }
}
pub fn atan_f64(a: u64) -> u64 {
    d(a).atan().to_bits()
}
pub fn atan2_f64(a: u64, c: u64) -> u64 {
    d(a).atan2(d(c)).to_bits()
}
pub fn cos_f64(a: u64) -> u64 {
    d(a).cos().to_bits()
}
pub fn sin_f64(a: u64) -> u64 {
    d(a).sin().to_bits()
}
pub fn exp_f64(a: u64) -> u64 {
    d(a).exp().to_bits()
}
pub fn exp2_f64(a: u64) -> u64 {
    d(a).exp2().to_bits()
}
pub fn expm1_f64(a: u64) -> u64 {
    d(a).exp_m1().to_bits()
}
pub fn log_f64(a: u64) -> u64 {
    d(a).ln().to_bits()
}
pub fn log10_f64(a: u64) -> u64 {
    d(a).log10().to_bits()
}
pub fn log1p_f64(a: u64) -> u64 {
    d(a).ln_1p().to_bits()
}
pub fn log2_f64(a: u64) -> u64 {
    d(a).log2().to_bits()
}
pub fn pow_f64(a: u64, c: u64) -> u64 {
    d(a).powf(d(c)).to_bits()
}
pub fn rsqrt_f64(a: u64) -> u64 {
    (1.0 / d(a).sqrt()).to_bits()
}
pub fn sqrt_f64(a: u64) -> u64 {
    d(a).sqrt().to_bits()
}
pub fn tanh_f64(a: u64) -> u64 {
    d(a).tanh().to_bits()
}
pub fn erf_f64(a: u64) -> u64 {
    // SAFETY: `erf` is a pure libm function of one double.
    unsafe { erf(d(a)) }.to_bits()
}
pub fn trunc_f64_f32(a: u64) -> u32 {
    (d(a) as f32).to_bits()
}
pub fn ext_f32_f64(a: u32) -> u64 {
    (f(a) as f64).to_bits()
}
pub fn cast_si32_f64(a: u32) -> u64 {
    (a as i32 as f64).to_bits()
}
pub fn cast_ui32_f64(a: u32) -> u64 {
    (a as f64).to_bits()
}
/// IREE rounds f64→i32 through `lroundf`, i.e. in single precision.
pub fn cast_f64_si32(a: u64) -> u32 {
    llround(d(a) as f32 as f64) as u32
}
pub fn cast_f64_ui32(a: u64) -> u32 {
    llround(d(a) as f32 as f64) as u32
}
pub fn cast_si64_f64(a: u64) -> u64 {
    (a as i64 as f64).to_bits()
}
pub fn cast_ui64_f64(a: u64) -> u64 {
    (a as f64).to_bits()
}
pub fn cast_f64_si64(a: u64) -> u64 {
    llround(d(a)) as u64
}
pub fn cast_f64_ui64(a: u64) -> u64 {
    llround(d(a)) as u64
}
pub fn identity_64(a: u64) -> u64 {
    a
}
pub fn cmp_eq_f64_o(a: u64, c: u64) -> u32 {
    b(d(a) == d(c))
}
pub fn cmp_eq_f64_u(a: u64, c: u64) -> u32 {
    b(d(a).is_nan() || d(c).is_nan() || d(a) == d(c))
}
pub fn cmp_ne_f64_o(a: u64, c: u64) -> u32 {
    b(d(a) != d(c))
}
pub fn cmp_ne_f64_u(a: u64, c: u64) -> u32 {
    b(d(a).is_nan() || d(c).is_nan() || d(a) != d(c))
}
pub fn cmp_lt_f64_o(a: u64, c: u64) -> u32 {
    b(d(a) < d(c))
}
pub fn cmp_lt_f64_u(a: u64, c: u64) -> u32 {
    b(d(a).is_nan() || d(c).is_nan() || d(a) < d(c))
}
pub fn cmp_lte_f64_o(a: u64, c: u64) -> u32 {
    b(d(a) <= d(c))
}
pub fn cmp_lte_f64_u(a: u64, c: u64) -> u32 {
    b(d(a).is_nan() || d(c).is_nan() || d(a) <= d(c))
}
pub fn cmp_nan_f64(a: u64) -> u32 {
    b(d(a).is_nan())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_follow_the_register_banks() {
        use crate::bytecode::isa::{instructions, OperandKind, RegisterBank as B};
        let mut checked = 0;
        for instruction in instructions() {
            let Some(semantics) = semantics(instruction.id) else { continue };
            checked += 1;
            let banks: Vec<bool> = instruction
                .operands
                .iter()
                .map(|operand| match operand.kind {
                    OperandKind::Register { bank, .. } => matches!(bank, B::I64 | B::F64),
                    other => panic!("{}: scalar with a {other:?} operand", instruction.name),
                })
                .collect();
            let expected: &[bool] = match semantics {
                Semantics::Un32(_) => &[false, false],
                Semantics::Bin32(_) | Semantics::Div32(_) => &[false, false, false],
                Semantics::Tern32(_) => &[false, false, false, false],
                Semantics::Un64(_) => &[true, true],
                Semantics::Bin64(_) | Semantics::Div64(_) => &[true, true, true],
                Semantics::Tern64(_) => &[true, true, true, true],
                Semantics::Shift64(_) => &[true, false, true],
                Semantics::Narrow(_) => &[true, false],
                Semantics::Widen(_) => &[false, true],
                Semantics::Cmp64(_) => &[true, true, false],
            };
            assert_eq!(banks, expected, "{} is {semantics:?}", instruction.name);
        }
        // The scalar table covers the integer arithmetic of both widths: scores of instructions.
        assert!(checked > 50, "only {checked} instructions have scalar semantics");
    }

    #[test]
    fn integer_edge_cases_match_c_on_x86() {
        assert_eq!(div_i32_s(i32::MIN as u32, -1i32 as u32), None);
        assert_eq!(div_i32_u(7, 0), None);
        assert_eq!(shl_i32(1, 32), 1);
        assert_eq!(shl_i32(3, 33), 6);
        assert_eq!(shr_i32_s(-16i32 as u32, 40), -1i32 as u32);
        assert_eq!(abs_i32(i32::MIN as u32), i32::MIN as u32);
        assert_eq!(ctlz_i32(0), 32);
        assert_eq!(ctlz_i64(0), 64);
        assert_eq!(shl_i64(1, 64), 1);
    }

    #[test]
    fn float_to_int_casts_round_half_away_and_wrap() {
        assert_eq!(cast_f32_si32((-3.7f32).to_bits()) as i32, -4);
        assert_eq!(cast_f32_si32(2.5f32.to_bits()) as i32, 3);
        assert_eq!(cast_f32_si32(5e9f32.to_bits()) as i32, 705_032_704);
        assert_eq!(cast_f32_si64(f32::NAN.to_bits()) as i64, i64::MIN);
        assert_eq!(cast_f32_ui64(1e19f32.to_bits()), 1e19f32 as u64);
    }

    #[test]
    fn float_min_max_and_compares_follow_c_operators() {
        let (neg0, pos0) = ((-0.0f32).to_bits(), 0.0f32.to_bits());
        assert_eq!(max_f32(neg0, pos0), neg0);
        assert_eq!(min_f32(pos0, neg0), pos0);
        let nan = f32::NAN.to_bits();
        assert_eq!(cmp_ne_f32_o(nan, nan), 1);
        assert_eq!(cmp_eq_f32_u(nan, 0), 1);
        assert_eq!(cmp_lt_f32_o(nan, 0), 0);
        assert_eq!(f32::from_bits(rem_f32(5.0f32.to_bits(), 3.0f32.to_bits())), -1.0);
    }
}
