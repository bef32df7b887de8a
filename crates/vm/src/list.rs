//! `!vm.list<T>`: a growable list of primitives (dense typed storage), of refs of one type, or of
//! variants (any value or ref).
//!
//! Semantics follow IREE's `vm/list.c` and the `vm.list.*` handlers in `vm/bytecode/dispatch.c`:
//! - an index at or past the size is `OUT_OF_RANGE` `index I out of bounds (SIZE)`; the bytecode ops
//!   reinterpret the i32 register as unsigned, so index -1 reads `index 4294967295 …`, as in IREE;
//! - `get_i32`/`get_i64`/`get_f32`/`get_f64` convert the stored value the way
//!   `iree_vm_list_get_value_as` does: integers sign-extend or truncate into each other, f32 and f64
//!   convert into each other, and between an integer and a float the result is 0;
//! - the setters convert into a primitive list's element type by the same rules, while a variant
//!   list stores the value with its own type;
//! - a variant element that holds no value (unset, or a ref) read as a value is
//!   `FAILED_PRECONDITION`; a ref list read or written as values, or a primitive list read or
//!   written as refs, is `FAILED_PRECONDITION` too;
//! - storing a ref of the wrong type into a ref list is `INVALID_ARGUMENT` `source ref type
//!   mismatch`; null refs are always accepted;
//! - shrinking releases the dropped refs, and growing again yields zeros and nulls.
//!
//! One mutex guards each list: list ops are short and IREE does not lock at all (a list shared
//! between threads needs outside synchronisation there), so the lock is uncontended in practice.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::refs::{Ref, RefType};
use super::value::Value;
use rtx_host::{Diagnostic, StatusCode};

/// What a list holds, from the element type in the module's type table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListElementType {
    /// `?` (`!vm.opaque` in type tables) and `!vm.ref<?>`: any value or ref, per element.
    Variant,
    I8,
    I16,
    I32,
    I64,
    F32,
    F64,
    /// Refs of one registered type, named without `!` and type parameters (`vm.buffer`,
    /// `vm.list`, `hal.buffer_view`).
    Ref(String),
}

impl ListElementType {
    /// Reads an element type name as the compiler writes it in the type table (`i32`, `!vm.opaque`,
    /// `!vm.buffer`, `!vm.list<f32>`); this is the type operand of `vm.list.alloc`. An unknown
    /// primitive is `NOT_FOUND`, as IREE reports unresolvable type-table entries.
    pub fn from_type_name(name: &str) -> Result<ListElementType, Diagnostic> {
        let element_type = match name {
            "i8" => ListElementType::I8,
            "i16" => ListElementType::I16,
            "i32" => ListElementType::I32,
            "i64" => ListElementType::I64,
            "f32" => ListElementType::F32,
            "f64" => ListElementType::F64,
            // IREE resolves `!vm.opaque` to the undefined type, which selects variant storage; a
            // `!vm.ref<?>` element is printed as `!vm.opaque` by the compiler.
            "!vm.opaque" => ListElementType::Variant,
            _ => match RefType::parse(name) {
                RefType::Any => ListElementType::Variant,
                RefType::Named(type_name) => ListElementType::Ref(type_name.to_string()),
                RefType::NotARef => {
                    return Err(Diagnostic::new(StatusCode::NotFound, format!("no type registered with name '{name}'")))
                }
            },
        };
        Ok(element_type)
    }

    /// Reads the element type out of a list type name (`!vm.list<i32>`, `!vm.list<?>`).
    pub fn from_list_type_name(name: &str) -> Result<ListElementType, Diagnostic> {
        let element = name.strip_prefix("!vm.list<").and_then(|rest| rest.strip_suffix('>'));
        match element {
            Some(element) => ListElementType::from_type_name(element),
            None => Err(Diagnostic::new(StatusCode::InvalidArgument, format!("'{name}' is not a list type"))),
        }
    }
}

impl fmt::Display for ListElementType {
    /// The MLIR spelling, as inside `!vm.list<…>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListElementType::Variant => f.write_str("?"),
            ListElementType::I8 => f.write_str("i8"),
            ListElementType::I16 => f.write_str("i16"),
            ListElementType::I32 => f.write_str("i32"),
            ListElementType::I64 => f.write_str("i64"),
            ListElementType::F32 => f.write_str("f32"),
            ListElementType::F64 => f.write_str("f64"),
            ListElementType::Ref(name) => write!(f, "!{name}"),
        }
    }
}

/// A `!vm.list`.
pub struct List {
    element_type: ListElementType,
    state: Mutex<State>,
}

struct State {
    /// IREE's capacity (grown to a multiple of 64, at least doubling); the vector may hold more.
    capacity: usize,
    elements: Elements,
}

enum Elements {
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    Ref(Vec<Option<Ref>>),
    /// `Value::None` is an unset element; a null ref is stored as unset, as in IREE.
    Variant(Vec<Value>),
}

/// Applies `$body` to the vector inside any `Elements`, whatever its element type.
macro_rules! with_vec {
    ($elements:expr, $vec:ident => $body:expr) => {
        match $elements {
            Elements::I8($vec) => $body,
            Elements::I16($vec) => $body,
            Elements::I32($vec) => $body,
            Elements::I64($vec) => $body,
            Elements::F32($vec) => $body,
            Elements::F64($vec) => $body,
            Elements::Ref($vec) => $body,
            Elements::Variant($vec) => $body,
        }
    };
}

impl Elements {
    fn new(element_type: &ListElementType) -> Elements {
        match element_type {
            ListElementType::Variant => Elements::Variant(Vec::new()),
            ListElementType::I8 => Elements::I8(Vec::new()),
            ListElementType::I16 => Elements::I16(Vec::new()),
            ListElementType::I32 => Elements::I32(Vec::new()),
            ListElementType::I64 => Elements::I64(Vec::new()),
            ListElementType::F32 => Elements::F32(Vec::new()),
            ListElementType::F64 => Elements::F64(Vec::new()),
            ListElementType::Ref(_) => Elements::Ref(Vec::new()),
        }
    }

    fn len(&self) -> usize {
        with_vec!(self, v => v.len())
    }

    fn try_reserve_total(&mut self, capacity: usize) -> bool {
        with_vec!(self, v => v.try_reserve_exact(capacity.saturating_sub(v.len())).is_ok())
    }

    /// Grows with zeros and nulls.
    fn grow(&mut self, size: usize) {
        with_vec!(self, v => v.resize_with(size, Default::default))
    }

    /// Shrinks, handing back the removed refs so they are dropped after the lock is released (a
    /// dropped list may be the last holder of other lists).
    fn shrink(&mut self, size: usize) -> Vec<Value> {
        match self {
            Elements::Ref(v) => v.split_off(size).into_iter().map(Value::Ref).collect(),
            Elements::Variant(v) => v.split_off(size),
            other => {
                with_vec!(other, v => v.truncate(size));
                Vec::new()
            }
        }
    }
}

/// A host value sorted by how a list stores it.
enum HostValue {
    Scalar(Scalar),
    Ref(Option<Ref>),
    Empty,
}

impl From<Value> for HostValue {
    fn from(value: Value) -> HostValue {
        match value {
            Value::None => HostValue::Empty,
            Value::I32(v) => HostValue::Scalar(Scalar::I32(v)),
            Value::I64(v) => HostValue::Scalar(Scalar::I64(v)),
            Value::F32(v) => HostValue::Scalar(Scalar::F32(v)),
            Value::F64(v) => HostValue::Scalar(Scalar::F64(v)),
            Value::Ref(r) => HostValue::Ref(r),
        }
    }
}

/// A primitive as stored, before conversion to what the reader asked for.
#[derive(Clone, Copy, Debug)]
enum Scalar {
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
}

impl Scalar {
    fn from_value(value: &Value) -> Option<Scalar> {
        match *value {
            Value::I32(v) => Some(Scalar::I32(v)),
            Value::I64(v) => Some(Scalar::I64(v)),
            Value::F32(v) => Some(Scalar::F32(v)),
            Value::F64(v) => Some(Scalar::F64(v)),
            Value::None | Value::Ref(_) => None,
        }
    }

    /// The integer, sign-extended; `None` for floats.
    fn integer(self) -> Option<i64> {
        match self {
            Scalar::I8(v) => Some(v.into()),
            Scalar::I16(v) => Some(v.into()),
            Scalar::I32(v) => Some(v.into()),
            Scalar::I64(v) => Some(v),
            Scalar::F32(_) | Scalar::F64(_) => None,
        }
    }

    // Integer-to-integer conversions truncate (`as`), like C's casts in IREE; an integer read as a
    // float or a float read as an integer is 0, because IREE's conversion leaves it zeroed.

    fn to_i8(self) -> i8 {
        self.integer().map_or(0, |v| v as i8)
    }

    fn to_i16(self) -> i16 {
        self.integer().map_or(0, |v| v as i16)
    }

    fn to_i32(self) -> i32 {
        self.integer().map_or(0, |v| v as i32)
    }

    fn to_i64(self) -> i64 {
        self.integer().unwrap_or(0)
    }

    fn to_f32(self) -> f32 {
        match self {
            Scalar::F32(v) => v,
            Scalar::F64(v) => v as f32,
            _ => 0.0,
        }
    }

    fn to_f64(self) -> f64 {
        match self {
            Scalar::F32(v) => v.into(),
            Scalar::F64(v) => v,
            _ => 0.0,
        }
    }

    fn into_value(self) -> Value {
        match self {
            Scalar::I8(_) | Scalar::I16(_) | Scalar::I32(_) => Value::I32(self.to_i32()),
            Scalar::I64(v) => Value::I64(v),
            Scalar::F32(v) => Value::F32(v),
            Scalar::F64(v) => Value::F64(v),
        }
    }
}

impl List {
    /// An empty list (`vm.list.alloc`) with room for `capacity` elements.
    pub fn new(element_type: ListElementType, capacity: i32) -> Result<Arc<List>, Diagnostic> {
        let list =
            List { state: Mutex::new(State { capacity: 0, elements: Elements::new(&element_type) }), element_type };
        list.reserve(capacity)?;
        Ok(Arc::new(list))
    }

    pub fn element_type(&self) -> &ListElementType {
        &self.element_type
    }

    /// Number of elements (`vm.list.size`); never above `i32::MAX`, so it fits the result register.
    pub fn size(&self) -> usize {
        self.lock().elements.len()
    }

    pub fn capacity(&self) -> usize {
        self.lock().capacity
    }

    /// Makes room for at least `minimum` elements (`vm.list.reserve`).
    pub fn reserve(&self, minimum: i32) -> Result<(), Diagnostic> {
        let minimum = non_negative(minimum, "capacity")?;
        self.lock().reserve(minimum)
    }

    /// Sets the size (`vm.list.resize`): new elements are zero, unset or null.
    pub fn resize(&self, size: i32) -> Result<(), Diagnostic> {
        let size = non_negative(size, "size")?;
        let dropped = {
            let mut state = self.lock();
            if size <= state.elements.len() {
                state.elements.shrink(size)
            } else {
                state.reserve(size)?;
                state.elements.grow(size);
                Vec::new()
            }
        };
        drop(dropped);
        Ok(())
    }

    /// `vm.list.get.i32`, converting as described in the module docs.
    pub fn get_i32(&self, index: i32) -> Result<i32, Diagnostic> {
        self.get_scalar(op_index(index)).map(Scalar::to_i32)
    }

    pub fn get_i64(&self, index: i32) -> Result<i64, Diagnostic> {
        self.get_scalar(op_index(index)).map(Scalar::to_i64)
    }

    pub fn get_f32(&self, index: i32) -> Result<f32, Diagnostic> {
        self.get_scalar(op_index(index)).map(Scalar::to_f32)
    }

    pub fn get_f64(&self, index: i32) -> Result<f64, Diagnostic> {
        self.get_scalar(op_index(index)).map(Scalar::to_f64)
    }

    /// `vm.list.set.i32`, converting to a primitive list's element type.
    pub fn set_i32(&self, index: i32, value: i32) -> Result<(), Diagnostic> {
        self.set_scalar(op_index(index), Scalar::I32(value))
    }

    pub fn set_i64(&self, index: i32, value: i64) -> Result<(), Diagnostic> {
        self.set_scalar(op_index(index), Scalar::I64(value))
    }

    pub fn set_f32(&self, index: i32, value: f32) -> Result<(), Diagnostic> {
        self.set_scalar(op_index(index), Scalar::F32(value))
    }

    pub fn set_f64(&self, index: i32, value: f64) -> Result<(), Diagnostic> {
        self.set_scalar(op_index(index), Scalar::F64(value))
    }

    /// The ref at `index`, of any type; an unset variant element reads as null.
    pub fn get_ref(&self, index: i32) -> Result<Option<Ref>, Diagnostic> {
        self.get_ref_at(op_index(index))
    }

    /// `vm.list.get.ref` with its result type: a ref that is not a `type_name` reads as null rather
    /// than failing, as IREE's handler does.
    pub fn get_ref_as(&self, index: i32, type_name: &str) -> Result<Option<Ref>, Diagnostic> {
        Ok(self.get_ref(index)?.filter(|r| r.is_a(type_name)))
    }

    /// `vm.list.set.ref`; a ref list checks the ref's type.
    pub fn set_ref(&self, index: i32, value: Option<Ref>) -> Result<(), Diagnostic> {
        self.set_ref_at(op_index(index), value)
    }

    /// The element at `index` for hosts: i8 and i16 elements widen to `I32`.
    pub fn get(&self, index: usize) -> Result<Value, Diagnostic> {
        let state = self.lock();
        let elements = &state.elements;
        check_index(index, elements.len())?;
        let value = match elements {
            Elements::Ref(v) => v.get(index).cloned().map(Value::Ref),
            Elements::Variant(v) => v.get(index).cloned(),
            _ => scalar_at(elements, index).map(Scalar::into_value),
        };
        value.ok_or_else(|| out_of_bounds(index, elements.len()))
    }

    /// Sets the element at `index` from a host value, with the rules of the typed setters.
    /// `Value::None` is rejected (`UNIMPLEMENTED`), as IREE rejects an empty variant.
    pub fn set(&self, index: usize, value: Value) -> Result<(), Diagnostic> {
        match HostValue::from(value) {
            HostValue::Scalar(scalar) => self.set_scalar(index, scalar),
            HostValue::Ref(r) => self.set_ref_at(index, r),
            HostValue::Empty => {
                check_index(index, self.size())?;
                Err(unhandled_empty())
            }
        }
    }

    /// Appends a host value. Unlike IREE, a value the list cannot hold leaves the list unchanged
    /// instead of appending a zero element.
    pub fn push(&self, value: Value) -> Result<(), Diagnostic> {
        let mut state = self.lock();
        let index = state.elements.len();
        if index >= i32::MAX as usize {
            return Err(Diagnostic::new(StatusCode::ResourceExhausted, format!("list is full ({index} elements)")));
        }
        let value = HostValue::from(value);
        match (&state.elements, &value) {
            (_, HostValue::Empty) => return Err(unhandled_empty()),
            (Elements::Ref(_), HostValue::Ref(r)) => self.check_ref_type(r.as_ref())?,
            (Elements::Ref(_), HostValue::Scalar(_)) => return Err(cannot_store_values()),
            (Elements::Variant(_), _) | (_, HostValue::Scalar(_)) => {}
            (_, HostValue::Ref(_)) => return Err(cannot_store_refs()),
        }
        state.reserve(index + 1)?;
        state.elements.grow(index + 1);
        let old = match value {
            HostValue::Scalar(scalar) => state.put_scalar(index, scalar),
            HostValue::Ref(r) => state.put_ref(index, r),
            HostValue::Empty => None,
        };
        drop(state);
        drop(old);
        Ok(())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding the lock; if something ever did, the state is still valid.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn get_scalar(&self, index: usize) -> Result<Scalar, Diagnostic> {
        let state = self.lock();
        let elements = &state.elements;
        check_index(index, elements.len())?;
        match elements {
            Elements::Ref(_) => Err(Diagnostic::new(StatusCode::FailedPrecondition, "list does not store values")),
            Elements::Variant(v) => v.get(index).and_then(Scalar::from_value).ok_or_else(|| {
                Diagnostic::new(StatusCode::FailedPrecondition, format!("variant at index {index} is not a value type"))
            }),
            _ => scalar_at(elements, index).ok_or_else(|| out_of_bounds(index, elements.len())),
        }
    }

    fn set_scalar(&self, index: usize, value: Scalar) -> Result<(), Diagnostic> {
        let mut state = self.lock();
        check_index(index, state.elements.len())?;
        if matches!(state.elements, Elements::Ref(_)) {
            return Err(cannot_store_values());
        }
        let old = state.put_scalar(index, value);
        drop(state);
        drop(old);
        Ok(())
    }

    fn get_ref_at(&self, index: usize) -> Result<Option<Ref>, Diagnostic> {
        let state = self.lock();
        let elements = &state.elements;
        check_index(index, elements.len())?;
        match elements {
            Elements::Ref(v) => Ok(v.get(index).cloned().flatten()),
            Elements::Variant(v) => match v.get(index) {
                Some(Value::Ref(r)) => Ok(r.clone()),
                Some(Value::None) | None => Ok(None),
                Some(_) => Err(Diagnostic::new(
                    StatusCode::FailedPrecondition,
                    format!("variant at index {index} is not a ref type"),
                )),
            },
            _ => Err(Diagnostic::new(StatusCode::FailedPrecondition, "list does not store refs")),
        }
    }

    fn set_ref_at(&self, index: usize, value: Option<Ref>) -> Result<(), Diagnostic> {
        let mut state = self.lock();
        check_index(index, state.elements.len())?;
        match state.elements {
            Elements::Ref(_) => self.check_ref_type(value.as_ref())?,
            Elements::Variant(_) => {}
            _ => return Err(cannot_store_refs()),
        }
        let old = state.put_ref(index, value);
        drop(state);
        drop(old);
        Ok(())
    }

    fn check_ref_type(&self, value: Option<&Ref>) -> Result<(), Diagnostic> {
        match (&self.element_type, value) {
            (ListElementType::Ref(name), Some(r)) if r.type_name() != name => {
                Err(Diagnostic::new(StatusCode::InvalidArgument, "source ref type mismatch"))
            }
            _ => Ok(()),
        }
    }
}

/// Most elements one list may hold. IREE has no limit; without one, a module could make the host
/// allocate and zero-fill up to `i32::MAX` elements (tens of GiB) with one `vm.list.resize`. 16 Mi
/// elements is far beyond what compiled programs use lists for (bindings, arguments, results).
pub const MAX_LIST_ELEMENTS: usize = 1 << 24;

impl State {
    fn reserve(&mut self, minimum: usize) -> Result<(), Diagnostic> {
        if self.capacity >= minimum {
            return Ok(());
        }
        if minimum > MAX_LIST_ELEMENTS {
            return Err(Diagnostic::new(
                StatusCode::ResourceExhausted,
                format!("a list of {minimum} elements exceeds the limit of {MAX_LIST_ELEMENTS}"),
            ));
        }
        let capacity = minimum.next_multiple_of(64).max(self.capacity.saturating_mul(2)).min(MAX_LIST_ELEMENTS);
        if !self.elements.try_reserve_total(capacity) {
            return Err(Diagnostic::new(
                StatusCode::ResourceExhausted,
                format!("cannot reserve {capacity} list elements"),
            ));
        }
        self.capacity = capacity;
        Ok(())
    }

    /// Stores a value at a checked index of a primitive or variant list; returns what a variant
    /// element held, to be dropped after the lock.
    fn put_scalar(&mut self, index: usize, value: Scalar) -> Option<Value> {
        fn put<T>(v: &mut [T], index: usize, value: T) {
            if let Some(slot) = v.get_mut(index) {
                *slot = value;
            }
        }
        match &mut self.elements {
            Elements::I8(v) => put(v, index, value.to_i8()),
            Elements::I16(v) => put(v, index, value.to_i16()),
            Elements::I32(v) => put(v, index, value.to_i32()),
            Elements::I64(v) => put(v, index, value.to_i64()),
            Elements::F32(v) => put(v, index, value.to_f32()),
            Elements::F64(v) => put(v, index, value.to_f64()),
            Elements::Variant(v) => return v.get_mut(index).map(|slot| std::mem::replace(slot, value.into_value())),
            Elements::Ref(_) => {}
        }
        None
    }

    /// Stores a ref at a checked index of a ref or variant list; returns the previous element.
    fn put_ref(&mut self, index: usize, value: Option<Ref>) -> Option<Value> {
        match &mut self.elements {
            Elements::Ref(v) => v.get_mut(index).map(|slot| Value::Ref(std::mem::replace(slot, value))),
            Elements::Variant(v) => {
                let value = value.map_or(Value::None, |r| Value::Ref(Some(r)));
                v.get_mut(index).map(|slot| std::mem::replace(slot, value))
            }
            _ => None,
        }
    }
}

impl fmt::Debug for List {
    /// Element type and size only: a list may contain itself.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.state.try_lock() {
            Ok(state) => write!(f, "vm.list<{}>({} elements)", self.element_type, state.elements.len()),
            Err(_) => write!(f, "vm.list<{}>(locked)", self.element_type),
        }
    }
}

fn scalar_at(elements: &Elements, index: usize) -> Option<Scalar> {
    match elements {
        Elements::I8(v) => v.get(index).copied().map(Scalar::I8),
        Elements::I16(v) => v.get(index).copied().map(Scalar::I16),
        Elements::I32(v) => v.get(index).copied().map(Scalar::I32),
        Elements::I64(v) => v.get(index).copied().map(Scalar::I64),
        Elements::F32(v) => v.get(index).copied().map(Scalar::F32),
        Elements::F64(v) => v.get(index).copied().map(Scalar::F64),
        Elements::Ref(_) | Elements::Variant(_) => None,
    }
}

/// The bytecode ops pass the i32 register reinterpreted as unsigned, so a negative index is a large
/// one and fails the bounds check with IREE's exact message.
fn op_index(index: i32) -> usize {
    index as u32 as usize
}

fn non_negative(value: i32, what: &str) -> Result<usize, Diagnostic> {
    usize::try_from(value)
        .map_err(|_| Diagnostic::new(StatusCode::OutOfRange, format!("list {what} {value} is negative")))
}

fn check_index(index: usize, size: usize) -> Result<(), Diagnostic> {
    if index < size {
        Ok(())
    } else {
        Err(out_of_bounds(index, size))
    }
}

fn out_of_bounds(index: usize, size: usize) -> Diagnostic {
    Diagnostic::new(StatusCode::OutOfRange, format!("index {index} out of bounds ({size})"))
}

fn cannot_store_values() -> Diagnostic {
    Diagnostic::new(StatusCode::FailedPrecondition, "list cannot store values")
}

/// IREE's answer to storing an empty variant.
fn unhandled_empty() -> Diagnostic {
    Diagnostic::new(StatusCode::Unimplemented, "unhandled variant value type")
}

fn cannot_store_refs() -> Diagnostic {
    Diagnostic::new(StatusCode::FailedPrecondition, "list cannot store refs")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::ByteBuffer;

    fn list(type_name: &str, size: i32) -> Arc<List> {
        let list = List::new(ListElementType::from_list_type_name(type_name).unwrap(), 0).unwrap();
        list.resize(size).unwrap();
        list
    }

    fn error<T: fmt::Debug>(result: Result<T, Diagnostic>) -> (StatusCode, String) {
        let error = result.expect_err("expected an error");
        (error.code, error.message)
    }

    fn buffer_ref() -> Ref {
        Ref::Buffer(ByteBuffer::from_bytes(b"x").unwrap())
    }

    #[test]
    fn lists_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<List>();
    }

    #[test]
    fn element_types_come_from_type_table_names() {
        use ListElementType as T;
        let cases = [
            ("i8", T::I8),
            ("i16", T::I16),
            ("i32", T::I32),
            ("i64", T::I64),
            ("f32", T::F32),
            ("f64", T::F64),
            ("!vm.opaque", T::Variant),
            ("?", T::Variant),
            ("!vm.ref<?>", T::Variant),
            ("!vm.buffer", T::Ref("vm.buffer".into())),
            ("!vm.list<i32>", T::Ref("vm.list".into())),
            ("!vm.ref<!hal.fence>", T::Ref("hal.fence".into())),
        ];
        for (name, expected) in cases {
            assert_eq!(T::from_type_name(name).unwrap(), expected, "{name}");
        }
        assert_eq!(T::from_list_type_name("!vm.list<?>").unwrap(), T::Variant);
        assert_eq!(T::from_list_type_name("!vm.list<!vm.list<f32>>").unwrap(), T::Ref("vm.list".into()));
        assert_eq!(
            error(T::from_type_name("index")),
            (StatusCode::NotFound, "no type registered with name 'index'".into())
        );
        assert_eq!(error(T::from_list_type_name("!vm.buffer")).0, StatusCode::InvalidArgument);
        assert_eq!(error(T::from_list_type_name("!vm.list<bf16>")).0, StatusCode::NotFound);
        let names: Vec<String> =
            [T::Variant, T::I8, T::I16, T::I32, T::I64, T::F32, T::F64, T::Ref("vm.buffer".into())]
                .iter()
                .map(ToString::to_string)
                .collect();
        assert_eq!(names, ["?", "i8", "i16", "i32", "i64", "f32", "f64", "!vm.buffer"]);
    }

    #[test]
    fn capacity_grows_to_multiples_of_64_and_at_least_doubles() {
        let list = List::new(ListElementType::I32, 0).unwrap();
        assert_eq!((list.size(), list.capacity()), (0, 0));
        list.reserve(1).unwrap();
        assert_eq!(list.capacity(), 64);
        list.reserve(64).unwrap();
        assert_eq!(list.capacity(), 64);
        list.reserve(65).unwrap();
        assert_eq!(list.capacity(), 128);
        list.resize(300).unwrap();
        assert_eq!((list.size(), list.capacity()), (300, 320));
        assert_eq!(List::new(ListElementType::Variant, 5).unwrap().capacity(), 64);
        assert_eq!(error(list.reserve(-1)), (StatusCode::OutOfRange, "list capacity -1 is negative".into()));
        assert_eq!(error(list.resize(-2)), (StatusCode::OutOfRange, "list size -2 is negative".into()));
        assert_eq!(error(List::new(ListElementType::I8, -1)).0, StatusCode::OutOfRange);
        assert_eq!(format!("{list:?}"), "vm.list<i32>(300 elements)");
    }

    #[test]
    fn out_of_range_indices_match_iree_messages() {
        let list = list("!vm.list<i32>", 4);
        let expected = (StatusCode::OutOfRange, "index 4 out of bounds (4)".to_string());
        assert_eq!(error(list.get_i32(4)), expected);
        assert_eq!(error(list.set_i32(4, 0)), expected);
        assert_eq!(error(list.get_i64(4)), expected);
        assert_eq!(error(list.set_i64(4, 0)), expected);
        assert_eq!(error(list.get_f32(4)), expected);
        assert_eq!(error(list.set_f32(4, 0.0)), expected);
        assert_eq!(error(list.get_f64(4)), expected);
        assert_eq!(error(list.set_f64(4, 0.0)), expected);
        assert_eq!(error(list.get_ref(4)), expected);
        assert_eq!(error(list.set_ref(4, None)), expected);
        assert_eq!(error(list.get(4)), expected);
        assert_eq!(error(list.set(4, Value::I32(0))), expected);
        assert_eq!(error(list.set(4, Value::None)), expected);
        // The register is reinterpreted as unsigned, as in IREE.
        assert_eq!(error(list.get_i32(-1)).1, "index 4294967295 out of bounds (4)");
    }

    #[test]
    fn primitive_lists_convert_like_get_value_as() {
        let ints = list("!vm.list<i32>", 2);
        ints.set_i32(0, -5).unwrap();
        assert_eq!(ints.get_i64(0).unwrap(), -5, "sign-extends");
        ints.set_i64(1, 0x1_0000_0007).unwrap();
        assert_eq!(ints.get_i32(1).unwrap(), 7, "truncates on store");
        assert_eq!(ints.get_f32(0).unwrap(), 0.0, "integer read as float is zero");
        assert_eq!(ints.get_f64(0).unwrap(), 0.0);
        ints.set_f32(0, 3.5).unwrap();
        assert_eq!(ints.get_i32(0).unwrap(), 0, "float stored into an integer list is zero");
        ints.set_f64(1, 3.5).unwrap();
        assert_eq!(ints.get(1).unwrap(), Value::I32(0));

        let wide = list("!vm.list<i64>", 1);
        wide.set_i64(0, -1 << 40).unwrap();
        assert_eq!(wide.get_i32(0).unwrap(), 0);
        assert_eq!(wide.get_i64(0).unwrap(), -1 << 40);
        assert_eq!(wide.get(0).unwrap(), Value::I64(-1 << 40));

        let bytes = list("!vm.list<i8>", 1);
        bytes.set_i32(0, 0x1ff).unwrap();
        assert_eq!((bytes.get_i32(0).unwrap(), bytes.get(0).unwrap()), (-1, Value::I32(-1)));
        let shorts = list("!vm.list<i16>", 1);
        shorts.set_i64(0, 0x18000).unwrap();
        assert_eq!(shorts.get_i64(0).unwrap(), -0x8000);

        let floats = list("!vm.list<f32>", 1);
        floats.set_f64(0, 0.1).unwrap();
        assert_eq!(floats.get_f32(0).unwrap(), 0.1f32);
        assert_eq!(floats.get_f64(0).unwrap(), f64::from(0.1f32));
        assert_eq!(floats.get_i32(0).unwrap(), 0);
        assert_eq!(floats.get(0).unwrap(), Value::F32(0.1));
        let doubles = list("!vm.list<f64>", 1);
        doubles.set_f32(0, 1.5).unwrap();
        assert_eq!((doubles.get_f64(0).unwrap(), doubles.get_f32(0).unwrap()), (1.5, 1.5));
        assert_eq!(doubles.get_i64(0).unwrap(), 0);
        assert_eq!(doubles.get(0).unwrap(), Value::F64(1.5));
    }

    #[test]
    fn primitive_lists_refuse_refs() {
        let ints = list("!vm.list<i32>", 1);
        assert_eq!(error(ints.get_ref(0)), (StatusCode::FailedPrecondition, "list does not store refs".into()));
        assert_eq!(error(ints.set_ref(0, None)), (StatusCode::FailedPrecondition, "list cannot store refs".into()));
        assert_eq!(error(ints.set(0, Value::Ref(Some(buffer_ref())))).0, StatusCode::FailedPrecondition);
        assert_eq!(error(ints.set(0, Value::None)).0, StatusCode::Unimplemented);
    }

    #[test]
    fn variant_lists_keep_each_elements_type() {
        let list = list("!vm.list<?>", 5);
        assert_eq!(list.get(0).unwrap(), Value::None);
        assert_eq!(
            error(list.get_i32(0)),
            (StatusCode::FailedPrecondition, "variant at index 0 is not a value type".into())
        );
        assert_eq!(list.get_ref(0).unwrap().map(|r| r.type_name().to_string()), None, "unset reads as null");
        list.set_i64(0, 1 << 33).unwrap();
        assert_eq!(list.get(0).unwrap(), Value::I64(1 << 33));
        assert_eq!(list.get_i32(0).unwrap(), 0, "i64 truncated to i32");
        list.set_f32(1, 2.5).unwrap();
        assert_eq!((list.get_f64(1).unwrap(), list.get_i32(1).unwrap()), (2.5, 0));
        list.set_i32(2, 9).unwrap();
        list.set_f64(3, -1.0).unwrap();
        assert_eq!(list.get_f32(3).unwrap(), -1.0);
        let buffer = buffer_ref();
        list.set_ref(4, Some(buffer.clone())).unwrap();
        assert!(list.get_ref(4).unwrap().unwrap().ptr_eq(&buffer));
        assert_eq!(list.get(4).unwrap(), Value::Ref(Some(buffer.clone())));
        assert_eq!(
            error(list.get_i64(4)),
            (StatusCode::FailedPrecondition, "variant at index 4 is not a value type".into())
        );
        assert_eq!(
            error(list.get_ref(2)),
            (StatusCode::FailedPrecondition, "variant at index 2 is not a ref type".into())
        );
        // A value replaces a ref, and a null ref leaves the element unset.
        list.set(4, Value::I32(1)).unwrap();
        assert_eq!(list.get(4).unwrap(), Value::I32(1));
        list.set(4, Value::Ref(None)).unwrap();
        assert_eq!(list.get(4).unwrap(), Value::None);
        assert_eq!(error(list.set(4, Value::None)).0, StatusCode::Unimplemented);
    }

    #[test]
    fn ref_lists_check_types_and_accept_null() {
        let list = list("!vm.list<!vm.buffer>", 2);
        assert!(list.get_ref(0).unwrap().is_none());
        assert_eq!(list.get(0).unwrap(), Value::Ref(None));
        let buffer = buffer_ref();
        list.set_ref(0, Some(buffer.clone())).unwrap();
        assert!(list.get_ref(0).unwrap().unwrap().ptr_eq(&buffer));
        let other_list = Ref::List(List::new(ListElementType::I32, 0).unwrap());
        assert_eq!(
            error(list.set_ref(1, Some(other_list.clone()))),
            (StatusCode::InvalidArgument, "source ref type mismatch".into())
        );
        assert_eq!(list.get(1).unwrap(), Value::Ref(None), "failed set changes nothing");
        list.set_ref(0, None).unwrap();
        assert_eq!(list.get(0).unwrap(), Value::Ref(None));
        list.set(1, Value::Ref(Some(buffer.clone()))).unwrap();
        assert_eq!(error(list.get_i32(0)), (StatusCode::FailedPrecondition, "list does not store values".into()));
        assert_eq!(error(list.set_i32(0, 1)), (StatusCode::FailedPrecondition, "list cannot store values".into()));
        assert_eq!(error(list.set_f64(0, 1.0)).1, "list cannot store values");
        assert_eq!(error(list.set(0, Value::F32(1.0))).1, "list cannot store values");
    }

    #[test]
    fn get_ref_as_reads_a_mismatched_ref_as_null() {
        let list = list("!vm.list<?>", 2);
        list.set_ref(0, Some(buffer_ref())).unwrap();
        assert!(list.get_ref_as(0, "!vm.buffer").unwrap().is_some());
        assert!(list.get_ref_as(0, "!vm.list<i32>").unwrap().is_none());
        assert!(list.get_ref_as(1, "!vm.buffer").unwrap().is_none());
        assert_eq!(error(list.get_ref_as(2, "!vm.buffer")).0, StatusCode::OutOfRange);
    }

    #[test]
    fn shrinking_releases_refs_and_regrowing_yields_nulls_and_zeros() {
        let buffer = ByteBuffer::from_bytes(b"abc").unwrap();
        let refs = list("!vm.list<!vm.buffer>", 2);
        refs.set_ref(1, Some(Ref::Buffer(buffer.clone()))).unwrap();
        let variants = list("!vm.list<?>", 2);
        variants.set_ref(1, Some(Ref::Buffer(buffer.clone()))).unwrap();
        assert_eq!(Arc::strong_count(&buffer), 3);
        refs.resize(1).unwrap();
        variants.resize(1).unwrap();
        assert_eq!(Arc::strong_count(&buffer), 1);
        refs.resize(2).unwrap();
        variants.resize(2).unwrap();
        assert_eq!((refs.get(1).unwrap(), variants.get(1).unwrap()), (Value::Ref(None), Value::None));

        let ints = list("!vm.list<i16>", 3);
        ints.set_i32(2, 7).unwrap();
        ints.resize(2).unwrap();
        ints.resize(3).unwrap();
        assert_eq!(ints.get_i32(2).unwrap(), 0);
        ints.resize(3).unwrap();
        assert_eq!(ints.size(), 3);
    }

    #[test]
    fn push_appends_or_leaves_the_list_unchanged() {
        let ints = List::new(ListElementType::I64, 0).unwrap();
        ints.push(Value::I32(-1)).unwrap();
        ints.push(Value::F64(1.0)).unwrap();
        assert_eq!((ints.get(0).unwrap(), ints.get(1).unwrap()), (Value::I64(-1), Value::I64(0)));
        assert_eq!(error(ints.push(Value::Ref(None))).1, "list cannot store refs");
        assert_eq!(error(ints.push(Value::None)).0, StatusCode::Unimplemented);
        assert_eq!(ints.size(), 2);

        let refs = List::new(ListElementType::Ref("vm.buffer".into()), 0).unwrap();
        refs.push(Value::Ref(Some(buffer_ref()))).unwrap();
        refs.push(Value::Ref(None)).unwrap();
        let list_ref = Ref::List(List::new(ListElementType::I8, 0).unwrap());
        assert_eq!(error(refs.push(Value::Ref(Some(list_ref)))).1, "source ref type mismatch");
        assert_eq!(error(refs.push(Value::I32(1))).1, "list cannot store values");
        assert_eq!(refs.size(), 2);

        let variants = List::new(ListElementType::Variant, 0).unwrap();
        variants.push(Value::F32(0.5)).unwrap();
        variants.push(Value::Ref(Some(buffer_ref()))).unwrap();
        assert_eq!(variants.get(0).unwrap(), Value::F32(0.5));
        assert!(variants.get_ref(1).unwrap().is_some());
        assert_eq!(variants.element_type(), &ListElementType::Variant);
    }

    #[test]
    fn a_list_may_hold_itself_without_deadlocking_debug() {
        let list = List::new(ListElementType::Variant, 1).unwrap();
        list.push(Value::Ref(Some(Ref::List(list.clone())))).unwrap();
        assert_eq!(format!("{list:?}"), "vm.list<?>(1 elements)");
        assert_eq!(format!("{:?}", list.get(0).unwrap()), "Ref(Some(vm.list<?>(1 elements)))");
        // Break the cycle so the test does not leak.
        list.resize(0).unwrap();
    }

    #[test]
    fn threads_share_one_list() {
        let list = List::new(ListElementType::I32, 0).unwrap();
        list.resize(800).unwrap();
        std::thread::scope(|scope| {
            for t in 0..8 {
                let list = Arc::clone(&list);
                scope.spawn(move || {
                    for i in 0..100 {
                        list.set_i32(t * 100 + i, t).unwrap();
                    }
                });
            }
        });
        assert!((0..800).all(|i| list.get_i32(i).unwrap() == i / 100));
    }
}
