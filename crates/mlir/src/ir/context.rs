//! The owner of everything a module interns: strings, dialects, operation names, attributes and
//! types. Interned things are referred to by small copyable ids ([`Sym`], [`DialectId`],
//! [`OpNameId`], [`AttrId`], [`TypeId`]), so operations hold no heap strings of their own.

use std::sync::Arc;

use foldhash::HashMap;

use super::attribute::Attribute;
use super::types::Type;

/// An interned byte string (MLIR strings may hold any bytes, not only UTF-8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(pub u32);

/// A dialect known to the module (by name; rtx registers no dialects).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DialectId(pub u32);

/// An operation name (`dialect.op`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OpNameId(pub u32);

/// An interned attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AttrId(pub u32);

/// An interned type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TypeId(pub u32);

/// A dialect and, when the producing file carried one, its dialect-defined version payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dialect {
    pub name: Sym,
    /// The raw version payload of bytecode v1+ (builtin: one varint); kept for writing it back.
    pub version: Option<Box<[u8]>>,
}

/// An operation name. `registered` is what the producer recorded (bytecode v5+): a registered op
/// carries its properties in its dialect's native encoding, an unregistered one as a dictionary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpName {
    pub dialect: DialectId,
    /// The part after the dialect prefix (`addi` in `arith.addi`); empty for a legacy undotted name.
    pub short: Sym,
    /// The full name (`arith.addi`).
    pub full: Sym,
    pub registered: bool,
}

/// Strings at least this long are kept apart (see [`MlirContext`]'s `large`).
const LARGE_STRING: usize = 64 << 10;

/// The span start that marks a large string (a start in the shared buffer never reaches it:
/// strings there are shorter than [`LARGE_STRING`] and the buffer is indexed by `u32`).
const LARGE: u32 = u32::MAX;

/// The hash a large string is looked up by.
fn large_hash(bytes: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::default().hash_one(bytes)
}

/// Interning tables. Lookups by content (`intern_*`) build their hash maps on first use, so a
/// reader that fills the tables from a file's already-deduplicated tables pays nothing for them.
#[derive(Default, Debug, Clone)]
pub struct MlirContext {
    string_bytes: Vec<u8>,
    /// Each string's `(start, length)` in `string_bytes`, or `(LARGE, i)` for `large[i]`.
    string_spans: Vec<(u32, u32)>,
    /// Strings of [`LARGE_STRING`] bytes or more (a model's weights printed in an attribute's
    /// text): each in an allocation of its own, not the shared buffer, whose doubling would
    /// double them; shared, not copied, by a clone of the context and a writer.
    large: Vec<Arc<[u8]>>,
    string_map: HashMap<Box<[u8]>, Sym>,
    /// The large strings by the hash of their contents: looked up with one pass over the bytes,
    /// and no copy of them as a key.
    large_map: HashMap<u64, Vec<Sym>>,
    strings_indexed: usize,
    dialects: Vec<Dialect>,
    op_names: Vec<OpName>,
    attrs: Vec<Attribute>,
    attr_map: HashMap<Attribute, AttrId>,
    attrs_indexed: usize,
    types: Vec<Type>,
    type_map: HashMap<Type, TypeId>,
    types_indexed: usize,
}

impl MlirContext {
    pub fn new() -> Self {
        Self::default()
    }

    /// The bytes of an interned string.
    pub fn str_bytes(&self, sym: Sym) -> &[u8] {
        match self.string_spans[sym.0 as usize] {
            (LARGE, index) => &self.large[index as usize],
            (start, len) => &self.string_bytes[start as usize..(start + len) as usize],
        }
    }

    /// The bytes of an interned string as a shared value: the string itself where it is large,
    /// a copy otherwise.
    pub fn str_shared(&self, sym: Sym) -> Arc<[u8]> {
        match self.string_spans[sym.0 as usize] {
            (LARGE, index) => Arc::clone(&self.large[index as usize]),
            _ => self.str_bytes(sym).into(),
        }
    }

    /// The string, lossily converted to UTF-8 where it is not.
    pub fn str(&self, sym: Sym) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(self.str_bytes(sym))
    }

    pub fn num_strings(&self) -> usize {
        self.string_spans.len()
    }

    /// Adds a string without deduplicating it (the bytecode string table is already unique).
    pub(crate) fn push_string(&mut self, bytes: &[u8]) -> Sym {
        if bytes.len() >= LARGE_STRING {
            self.string_spans.push((LARGE, self.large.len() as u32));
            self.large.push(bytes.into());
        } else {
            let start = self.string_bytes.len() as u32;
            self.string_bytes.extend_from_slice(bytes);
            self.string_spans.push((start, bytes.len() as u32));
        }
        Sym(self.string_spans.len() as u32 - 1)
    }

    /// The large string with this hash and these bytes, if interned.
    fn find_large(&self, hash: u64, bytes: &[u8]) -> Option<Sym> {
        self.large_map.get(&hash)?.iter().copied().find(|&sym| self.str_bytes(sym) == bytes)
    }

    /// Interns a string: equal contents give the same [`Sym`].
    pub fn intern_str(&mut self, bytes: &[u8]) -> Sym {
        for index in self.strings_indexed..self.string_spans.len() {
            let sym = Sym(index as u32);
            let key = self.str_bytes(sym);
            if key.len() >= LARGE_STRING {
                let hash = large_hash(key);
                if self.find_large(hash, key).is_none() {
                    self.large_map.entry(hash).or_default().push(sym);
                }
            } else {
                let key: Box<[u8]> = key.into();
                self.string_map.entry(key).or_insert(sym);
            }
        }
        self.strings_indexed = self.string_spans.len();
        let sym = if bytes.len() >= LARGE_STRING {
            let hash = large_hash(bytes);
            if let Some(sym) = self.find_large(hash, bytes) {
                return sym;
            }
            let sym = self.push_string(bytes);
            self.large_map.entry(hash).or_default().push(sym);
            sym
        } else {
            if let Some(&sym) = self.string_map.get(bytes) {
                return sym;
            }
            let sym = self.push_string(bytes);
            self.string_map.insert(bytes.into(), sym);
            sym
        };
        self.strings_indexed = self.string_spans.len();
        sym
    }

    pub fn dialect(&self, id: DialectId) -> &Dialect {
        &self.dialects[id.0 as usize]
    }

    pub fn dialect_name(&self, id: DialectId) -> std::borrow::Cow<'_, str> {
        self.str(self.dialect(id).name)
    }

    pub fn dialects(&self) -> &[Dialect] {
        &self.dialects
    }

    /// The dialect named `name`, if the context has it.
    pub fn find_dialect(&self, name: &[u8]) -> Option<DialectId> {
        let index = self
            .dialects
            .iter()
            .position(|d| (d.name.0 as usize) < self.string_spans.len() && self.str_bytes(d.name) == name)?;
        Some(DialectId(index as u32))
    }

    /// The dialect named `name`, added if new.
    pub fn intern_dialect(&mut self, name: &str) -> DialectId {
        let sym = self.intern_str(name.as_bytes());
        if let Some(index) = self.dialects.iter().position(|d| d.name == sym) {
            return DialectId(index as u32);
        }
        self.push_dialect(Dialect { name: sym, version: None })
    }

    pub(crate) fn push_dialect(&mut self, dialect: Dialect) -> DialectId {
        self.dialects.push(dialect);
        DialectId(self.dialects.len() as u32 - 1)
    }

    pub fn op_name(&self, id: OpNameId) -> &OpName {
        &self.op_names[id.0 as usize]
    }

    pub fn op_names(&self) -> &[OpName] {
        &self.op_names
    }

    pub(crate) fn push_op_name(&mut self, name: OpName) -> OpNameId {
        self.op_names.push(name);
        OpNameId(self.op_names.len() as u32 - 1)
    }

    pub fn attr(&self, id: AttrId) -> &Attribute {
        &self.attrs[id.0 as usize]
    }

    pub fn attrs(&self) -> &[Attribute] {
        &self.attrs
    }

    pub fn ty(&self, id: TypeId) -> &Type {
        &self.types[id.0 as usize]
    }

    pub fn types(&self) -> &[Type] {
        &self.types
    }

    /// Appends without deduplicating (a bytecode attribute table is already unique).
    pub(crate) fn push_attr(&mut self, attr: Attribute) -> AttrId {
        self.attrs.push(attr);
        AttrId(self.attrs.len() as u32 - 1)
    }

    pub(crate) fn push_type(&mut self, ty: Type) -> TypeId {
        self.types.push(ty);
        TypeId(self.types.len() as u32 - 1)
    }

    /// Overwrites attribute `id`, for a reader that learns an entry's final form only after the
    /// whole table is read (other dialects' encodings); keeps the interning map in step.
    pub(crate) fn replace_attr(&mut self, id: AttrId, attr: Attribute) {
        let old = std::mem::replace(&mut self.attrs[id.0 as usize], attr);
        if (id.0 as usize) < self.attrs_indexed {
            if self.attr_map.get(&old) == Some(&id) {
                self.attr_map.remove(&old);
            }
            self.attr_map.entry(self.attrs[id.0 as usize].clone()).or_insert(id);
        }
    }

    /// [`MlirContext::replace_attr`] for types.
    pub(crate) fn replace_type(&mut self, id: TypeId, ty: Type) {
        let old = std::mem::replace(&mut self.types[id.0 as usize], ty);
        if (id.0 as usize) < self.types_indexed {
            if self.type_map.get(&old) == Some(&id) {
                self.type_map.remove(&old);
            }
            self.type_map.entry(self.types[id.0 as usize].clone()).or_insert(id);
        }
    }

    /// Makes room for `attrs` more attributes and `types` more types.
    pub(crate) fn reserve(&mut self, attrs: usize, types: usize) {
        self.attrs.reserve(attrs);
        self.types.reserve(types);
    }

    /// Interns an attribute: equal attributes give the same [`AttrId`].
    pub fn intern_attr(&mut self, attr: Attribute) -> AttrId {
        for index in self.attrs_indexed..self.attrs.len() {
            self.attr_map.entry(self.attrs[index].clone()).or_insert(AttrId(index as u32));
        }
        self.attrs_indexed = self.attrs.len();
        if let Some(&id) = self.attr_map.get(&attr) {
            return id;
        }
        let id = self.push_attr(attr.clone());
        self.attr_map.insert(attr, id);
        self.attrs_indexed = self.attrs.len();
        id
    }

    /// Interns a type: equal types give the same [`TypeId`].
    pub fn intern_type(&mut self, ty: Type) -> TypeId {
        for index in self.types_indexed..self.types.len() {
            self.type_map.entry(self.types[index].clone()).or_insert(TypeId(index as u32));
        }
        self.types_indexed = self.types.len();
        if let Some(&id) = self.type_map.get(&ty) {
            return id;
        }
        let id = self.push_type(ty.clone());
        self.type_map.insert(ty, id);
        self.types_indexed = self.types.len();
        id
    }
}
