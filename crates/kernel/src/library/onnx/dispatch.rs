//! Element types chosen once per operator: each macro runs its body with `$T` the Rust type an
//! operator computes in for the operand's [`DType`](crate::DType), so that an operator is written
//! once over `$T`. Half floats (`f16`, `bf16`) compute in `f32` and are stored back as what they
//! were ([`Value`](super::tensors::Value) converts on the way in and out).

/// `$body` with `$T` the computing type of `$dtype` when it is a number (integers of 8 to 64
/// bits, signed or not, and floats); `$otherwise` for any other element type.
macro_rules! numeric {
    ($dtype:expr, $T:ident => $body:block, $otherwise:expr) => {
        match $dtype {
            $crate::DType::UI8 => {
                type $T = u8;
                $body
            }
            $crate::DType::UI16 => {
                type $T = u16;
                $body
            }
            $crate::DType::UI32 => {
                type $T = u32;
                $body
            }
            $crate::DType::UI64 => {
                type $T = u64;
                $body
            }
            $crate::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::DType::I16 => {
                type $T = i16;
                $body
            }
            $crate::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::DType::F16 | $crate::DType::BF16 | $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
            _ => $otherwise,
        }
    };
}

/// As [`numeric!`], for floats only.
macro_rules! float {
    ($dtype:expr, $T:ident => $body:block, $otherwise:expr) => {
        match $dtype {
            $crate::DType::F16 | $crate::DType::BF16 | $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
            _ => $otherwise,
        }
    };
}

/// As [`numeric!`], for integers only.
macro_rules! integer {
    ($dtype:expr, $T:ident => $body:block, $otherwise:expr) => {
        match $dtype {
            $crate::DType::UI8 => {
                type $T = u8;
                $body
            }
            $crate::DType::UI16 => {
                type $T = u16;
                $body
            }
            $crate::DType::UI32 => {
                type $T = u32;
                $body
            }
            $crate::DType::UI64 => {
                type $T = u64;
                $body
            }
            $crate::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::DType::I16 => {
                type $T = i16;
                $body
            }
            $crate::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::DType::I64 => {
                type $T = i64;
                $body
            }
            _ => $otherwise,
        }
    };
}

/// As [`numeric!`], with `bool` as well.
macro_rules! any {
    ($dtype:expr, $T:ident => $body:block, $otherwise:expr) => {
        match $dtype {
            $crate::DType::I1 => { type $T = bool; $body }
            other => $crate::library::onnx::dispatch::numeric!(other, $T => $body, $otherwise),
        }
    };
}

pub(crate) use {any, float, integer, numeric};
