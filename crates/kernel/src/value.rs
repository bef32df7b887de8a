//! [`Value`]: a register of a sync function — a plain value, not a future.

use rtx_host::{AsyncValueRef, Chain, RcAsyncValue};

/// What a sync function's register holds. Scalars and chains are stored inline; anything else
/// is shared (an available AsyncValue, so values move between sync and async functions without
/// a copy).
#[derive(Clone, Debug, Default)]
pub enum Value {
    /// Not set yet (or retired after its last use).
    #[default]
    Empty,
    I1(bool),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
    Chain,
    /// Any other payload: an available value.
    Shared(RcAsyncValue),
}

macro_rules! value_from {
    ($($t:ty => $variant:ident),*) => {$(
        impl From<$t> for Value {
            fn from(value: $t) -> Value {
                Value::$variant(value)
            }
        }
    )*};
}
value_from!(bool => I1, i32 => I32, i64 => I64, f32 => F32, f64 => F64);

impl From<Chain> for Value {
    fn from(_: Chain) -> Value {
        Value::Chain
    }
}

impl Value {
    /// A value of any type (scalars should use `From`, which stores them inline).
    pub fn new<T: Send + Sync + 'static>(payload: T) -> Value {
        Value::Shared(AsyncValueRef::available(payload).into_untyped())
    }

    /// The payload, if the value holds a `T`.
    pub fn get<T: 'static>(&self) -> Option<&T> {
        use std::any::Any;
        match self {
            Value::Empty => None,
            Value::I1(v) => (v as &dyn Any).downcast_ref(),
            Value::I32(v) => (v as &dyn Any).downcast_ref(),
            Value::I64(v) => (v as &dyn Any).downcast_ref(),
            Value::F32(v) => (v as &dyn Any).downcast_ref(),
            Value::F64(v) => (v as &dyn Any).downcast_ref(),
            Value::Chain => (&Chain as &dyn Any).downcast_ref(),
            Value::Shared(value) => value.try_get::<T>().ok(),
        }
    }

    pub fn is_empty(&self) -> bool {
        matches!(self, Value::Empty)
    }

    /// The name of the payload type, for errors.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Empty => "nothing",
            Value::I1(_) => "bool",
            Value::I32(_) => "i32",
            Value::I64(_) => "i64",
            Value::F32(_) => "f32",
            Value::F64(_) => "f64",
            Value::Chain => "chain",
            Value::Shared(value) => value.type_name(),
        }
    }

    /// As an available AsyncValue (for async callers of sync functions).
    pub fn into_async(self) -> RcAsyncValue {
        match self {
            Value::Empty => RcAsyncValue::error(rtx_host::Diagnostic::new(
                rtx_host::StatusCode::Internal,
                "a sync function left a result unset",
            )),
            Value::I1(v) => AsyncValueRef::available(v).into_untyped(),
            Value::I32(v) => AsyncValueRef::available(v).into_untyped(),
            Value::I64(v) => AsyncValueRef::available(v).into_untyped(),
            Value::F32(v) => AsyncValueRef::available(v).into_untyped(),
            Value::F64(v) => AsyncValueRef::available(v).into_untyped(),
            Value::Chain => Chain::ready().into_untyped(),
            Value::Shared(value) => value,
        }
    }

    /// An available AsyncValue as a value: scalars come inline, others stay shared.
    pub fn from_async(value: RcAsyncValue) -> Value {
        macro_rules! inline {
            ($($t:ty),*) => {$(
                if let Ok(v) = value.try_get::<$t>() {
                    return Value::from(*v);
                }
            )*};
        }
        inline!(bool, i32, i64, f32, f64);
        if value.is_type::<Chain>() {
            return Value::Chain;
        }
        Value::Shared(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_keep_their_type_across_the_async_boundary() {
        assert_eq!(Value::from(7i32).get::<i32>(), Some(&7));
        assert_eq!(Value::from(7i32).get::<i64>(), None);
        let shared = Value::new(String::from("s"));
        assert_eq!(shared.get::<String>().map(String::as_str), Some("s"));
        let back = Value::from_async(Value::from(2.5f64).into_async());
        assert!(matches!(back, Value::F64(v) if v == 2.5));
        assert!(matches!(Value::from_async(Chain::ready().into_untyped()), Value::Chain));
        assert!(Value::Empty.into_async().is_error());
    }
}
