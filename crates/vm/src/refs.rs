//! `!vm.ref<T>`: reference-counted objects that registers, globals and lists hold.
//!
//! IREE keeps a per-instance registry of ref types and checks a ref's type on every typed access
//! (`vm.global.load.ref`, `vm.list.get.ref`, `vm.cast.any.ref`). Here the object kinds the VM itself
//! knows are enum variants, and everything else (HAL objects, host objects) is a trait object that
//! names its type; a type-table entry from the module (`!vm.buffer`, `!vm.list<i32>`, `!hal.fence`)
//! is matched by name, so there is no registry to populate or race on.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use super::buffer::ByteBuffer;
use super::list::List;

/// An object type defined outside the VM core (the HAL's buffers and fences, host objects).
pub trait RefObject: Any + Send + Sync + fmt::Debug {
    /// The registered type name without the `!`, as it appears in module type tables
    /// (`hal.buffer_view`).
    fn type_name(&self) -> &'static str;

    /// Upcast for downcasting to the concrete type.
    fn as_any(&self) -> &dyn Any;
}

/// A non-null reference.
#[derive(Clone)]
pub enum Ref {
    Buffer(Arc<ByteBuffer>),
    List(Arc<List>),
    Object(Arc<dyn RefObject>),
}

impl Ref {
    /// The type name without `!` and without type parameters (`vm.list`, not `vm.list<i32>`):
    /// lists of any element type are one ref type, as in IREE.
    pub fn type_name(&self) -> &str {
        match self {
            Ref::Buffer(_) => "vm.buffer",
            Ref::List(_) => "vm.list",
            Ref::Object(object) => object.type_name(),
        }
    }

    /// Identity, which is what `vm.cmp.eq.ref` compares.
    pub fn ptr_eq(&self, other: &Ref) -> bool {
        match (self, other) {
            (Ref::Buffer(a), Ref::Buffer(b)) => Arc::ptr_eq(a, b),
            (Ref::List(a), Ref::List(b)) => Arc::ptr_eq(a, b),
            (Ref::Object(a), Ref::Object(b)) => std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b)),
            _ => false,
        }
    }

    /// Whether this ref may be used where the module type `type_name` (a type-table entry such as
    /// `!vm.list<i32>`, `!hal.buffer` or `!vm.ref<?>`) is expected.
    pub fn is_a(&self, type_name: &str) -> bool {
        match RefType::parse(type_name) {
            RefType::Any => true,
            RefType::Named(name) => name == self.type_name(),
            RefType::NotARef => false,
        }
    }

    /// The buffer this ref holds, if it is one.
    pub fn as_buffer(&self) -> Option<&Arc<ByteBuffer>> {
        match self {
            Ref::Buffer(buffer) => Some(buffer),
            _ => None,
        }
    }

    /// The list this ref holds, if it is one.
    pub fn as_list(&self) -> Option<&Arc<List>> {
        match self {
            Ref::List(list) => Some(list),
            _ => None,
        }
    }

    /// The host object this ref holds, if it is one of type `T`.
    #[inline]
    pub fn downcast<T: RefObject>(&self) -> Option<&T> {
        match self {
            Ref::Object(object) => object.as_any().downcast_ref::<T>(),
            _ => None,
        }
    }
}

impl fmt::Debug for Ref {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ref::Buffer(buffer) => buffer.fmt(f),
            Ref::List(list) => list.fmt(f),
            Ref::Object(object) => object.fmt(f),
        }
    }
}

/// What a module type-table entry says about refs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefType<'a> {
    /// `!vm.ref<?>` or `?`: any ref.
    Any,
    /// A concrete ref type, by registered name (`vm.list`, `hal.buffer`).
    Named(&'a str),
    /// A primitive type (`i32`, `f64`).
    NotARef,
}

impl<'a> RefType<'a> {
    /// Reads a type-table name such as `!vm.list<!vm.buffer>` or `!vm.ref<!hal.fence>`.
    pub fn parse(type_name: &'a str) -> RefType<'a> {
        let Some(name) = type_name.strip_prefix('!') else {
            return if type_name == "?" { RefType::Any } else { RefType::NotARef };
        };
        if let Some(inner) = name.strip_prefix("vm.ref<").and_then(|rest| rest.strip_suffix('>')) {
            return RefType::parse(inner);
        }
        RefType::Named(name.split_once('<').map_or(name, |(base, _)| base))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_table_names_map_to_ref_types() {
        assert_eq!(RefType::parse("!vm.list<i32>"), RefType::Named("vm.list"));
        assert_eq!(RefType::parse("!vm.buffer"), RefType::Named("vm.buffer"));
        assert_eq!(RefType::parse("!vm.ref<!hal.fence>"), RefType::Named("hal.fence"));
        assert_eq!(RefType::parse("!vm.ref<?>"), RefType::Any);
        assert_eq!(RefType::parse("i32"), RefType::NotARef);
    }
}
