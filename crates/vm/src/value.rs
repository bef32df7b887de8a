//! Values that cross function boundaries: call arguments and results, list elements, native
//! module arguments. Inside a frame the interpreter keeps registers unboxed; a `Value` exists only
//! where the type is not known statically.

use super::refs::Ref;

/// One VM value. f32/f64 are kept as floats (not bit patterns) because that is what hosts pass.
#[derive(Clone, Debug, Default)]
pub enum Value {
    /// No value: an unset variant list element.
    #[default]
    None,
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
    /// A reference; `None` is the null ref.
    Ref(Option<Ref>),
}

impl Value {
    /// The type name IREE's tools print before `=` (`i32`, `f64`), or the ref's type name.
    pub fn type_name(&self) -> &str {
        match self {
            Value::None => "none",
            Value::I32(_) => "i32",
            Value::I64(_) => "i64",
            Value::F32(_) => "f32",
            Value::F64(_) => "f64",
            Value::Ref(None) => "null",
            Value::Ref(Some(r)) => r.type_name(),
        }
    }
}

impl PartialEq for Value {
    /// Bitwise for floats (so NaN == NaN and 0.0 != -0.0), identity for refs: this is what tests
    /// comparing against recorded outputs want.
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::None, Value::None) => true,
            (Value::I32(a), Value::I32(b)) => a == b,
            (Value::I64(a), Value::I64(b)) => a == b,
            (Value::F32(a), Value::F32(b)) => a.to_bits() == b.to_bits(),
            (Value::F64(a), Value::F64(b)) => a.to_bits() == b.to_bits(),
            (Value::Ref(a), Value::Ref(b)) => match (a, b) {
                (None, None) => true,
                (Some(a), Some(b)) => a.ptr_eq(b),
                _ => false,
            },
            _ => false,
        }
    }
}
