//! A small, zero-copy, verifying FlatBuffers reader over untrusted bytes.
//!
//! `.vmfb` files come from anywhere, so nothing here trusts an offset: every table, vtable, field,
//! string and vector is bounds- and alignment-checked before it is read, and a bad one becomes a
//! [`LoadError`] naming the absolute file offset and the schema field involved. There is no
//! indexing that can panic and no `unsafe`.
//!
//! Accessors return `Result` instead of relying on a separate verification pass: the module loader
//! walks every field it exposes exactly once while it decodes (`module_def.rs`), so "verify" and
//! "read" are the same walk and cannot disagree about what was checked. Anything built from a
//! successful walk is verified by construction.
//!
//! Only what the IREE schema needs is supported: little-endian scalars, tables, structs in vectors,
//! strings, vectors of scalars/structs/tables/strings, unions and vectors of unions.

use std::marker::PhantomData;

use super::error::LoadError;

pub type Result<T> = std::result::Result<T, LoadError>;

/// A field of a table: its vtable slot and its schema name, used only to make errors readable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub id: u16,
    pub name: &'static str,
}

impl Field {
    pub const fn new(id: u16, name: &'static str) -> Field {
        Field { id, name }
    }
}

/// A little-endian scalar that can live in a table field, a vector or a struct.
pub trait Scalar: Copy + 'static {
    const SIZE: usize;
    fn from_le_slice(bytes: &[u8]) -> Option<Self>;
}

macro_rules! impl_scalar {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn from_le_slice(bytes: &[u8]) -> Option<Self> {
                bytes.get(..Self::SIZE)?.try_into().ok().map(<$t>::from_le_bytes)
            }
        }
    )*};
}
impl_scalar!(u8, i8, u16, i16, u32, i32, u64, i64);

/// The bytes of one FlatBuffer plus where they sit in the file, so that errors can report file
/// offsets instead of FlatBuffer-relative ones.
#[derive(Clone, Copy, Debug)]
pub struct FlatBuffer<'a> {
    bytes: &'a [u8],
    base: usize,
}

impl<'a> FlatBuffer<'a> {
    /// A FlatBuffer occupying all of `bytes`, which start at file offset `base`.
    pub fn new(bytes: &'a [u8], base: usize) -> FlatBuffer<'a> {
        FlatBuffer { bytes, base }
    }

    /// A size-prefixed FlatBuffer at the start of `bytes` (file offset `base`): a u32 length, then
    /// that many bytes of FlatBuffer. Trailing bytes after it (rodata, other ZIP entries) are fine.
    pub fn size_prefixed(bytes: &'a [u8], base: usize) -> Result<FlatBuffer<'a>> {
        let Some(prefix) = u32::from_le_slice(bytes) else {
            return Err(LoadError::truncated(
                base,
                format!("the file ends inside the 4-byte FlatBuffer size prefix ({} bytes left)", bytes.len()),
            ));
        };
        let available = bytes.len().saturating_sub(4);
        let length = prefix as usize;
        match 4usize.checked_add(length).and_then(|end| bytes.get(4..end)) {
            Some(contents) => Ok(FlatBuffer { bytes: contents, base: base.saturating_add(4) }),
            None => Err(LoadError::truncated(
                base,
                format!("the FlatBuffer size prefix says {length} bytes but only {available} follow it"),
            )),
        }
    }

    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// File offset of the first FlatBuffer byte (after any size prefix).
    pub fn base(&self) -> usize {
        self.base
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    fn file_offset(&self, pos: usize) -> usize {
        self.base.saturating_add(pos)
    }

    /// The 4-byte file identifier that follows the root offset, if the buffer is long enough.
    pub fn identifier(&self) -> Option<&'a [u8]> {
        self.bytes.get(4..8)
    }

    /// The root table, typed as `type_name` for error messages.
    pub fn root(&self, type_name: &'static str) -> Result<Table<'a>> {
        if self.bytes.len() < 8 {
            return Err(LoadError::truncated(
                self.base,
                format!("the FlatBuffer is {} bytes; a root offset and file identifier need 8", self.bytes.len()),
            ));
        }
        let target = self.follow(0, || format!("root offset to {type_name}"))?;
        self.table_at(target, type_name)
    }

    fn read<T: Scalar>(&self, pos: usize, what: impl FnOnce() -> String) -> Result<T> {
        pos.checked_add(T::SIZE).and_then(|end| self.bytes.get(pos..end)).and_then(T::from_le_slice).ok_or_else(|| {
            LoadError::malformed(
                self.file_offset(pos),
                format!("{} runs past the end of the FlatBuffer ({} bytes)", what(), self.bytes.len()),
            )
        })
    }

    /// Alignment is judged on the file offset, not the FlatBuffer-relative one: the builder aligns
    /// relative to the start of the size-prefixed block, and the loader keeps the file itself
    /// 64-byte aligned in memory, so file offsets are what decide real memory alignment.
    fn check_alignment(&self, pos: usize, align: usize, what: impl FnOnce() -> String) -> Result<()> {
        if align > 1 && !self.file_offset(pos).is_multiple_of(align) {
            return Err(LoadError::malformed(self.file_offset(pos), format!("{} is not {align}-byte aligned", what())));
        }
        Ok(())
    }

    /// Reads the unsigned offset stored at `pos` and returns the position it points to.
    fn follow(&self, pos: usize, what: impl Fn() -> String) -> Result<usize> {
        self.check_alignment(pos, 4, &what)?;
        let relative: u32 = self.read(pos, &what)?;
        match pos.checked_add(relative as usize) {
            Some(target) if target < self.bytes.len() && relative != 0 => Ok(target),
            _ => Err(LoadError::malformed(
                self.file_offset(pos),
                format!(
                    "{} points outside the FlatBuffer (relative offset {relative}, buffer is {} bytes)",
                    what(),
                    self.bytes.len()
                ),
            )),
        }
    }

    fn table_at(&self, pos: usize, type_name: &'static str) -> Result<Table<'a>> {
        self.check_alignment(pos, 4, || format!("table {type_name}"))?;
        let soffset: i32 = self.read(pos, || format!("table {type_name}"))?;
        let vtable = i64::try_from(pos).ok().and_then(|p| p.checked_sub(i64::from(soffset)));
        let vtable = match vtable.and_then(|v| usize::try_from(v).ok()) {
            Some(v) if v < self.bytes.len() => v,
            _ => {
                return Err(LoadError::malformed(
                    self.file_offset(pos),
                    format!("the vtable of table {type_name} lies outside the FlatBuffer (vtable offset {soffset})"),
                ))
            }
        };
        self.check_alignment(vtable, 2, || format!("the vtable of table {type_name}"))?;
        let vtable_len = usize::from(self.read::<u16>(vtable, || format!("the vtable of table {type_name}"))?);
        let size =
            usize::from(self.read::<u16>(vtable.saturating_add(2), || format!("the vtable of table {type_name}"))?);
        if vtable_len < 4 || vtable_len % 2 != 0 || vtable.saturating_add(vtable_len) > self.bytes.len() {
            return Err(LoadError::malformed(
                self.file_offset(vtable),
                format!("the vtable of table {type_name} has an invalid length {vtable_len}"),
            ));
        }
        if size < 4 || pos.saturating_add(size) > self.bytes.len() {
            return Err(LoadError::malformed(
                self.file_offset(pos),
                format!("table {type_name} claims {size} bytes, which do not fit in the FlatBuffer"),
            ));
        }
        Ok(Table { buf: *self, pos, vtable, vtable_len, size, type_name })
    }

    fn string_at(&self, pos: usize, what: impl Fn() -> String) -> Result<&'a str> {
        let (start, len) = self.vector_at(pos, 1, 1, &what)?;
        let end = start.saturating_add(len);
        match self.bytes.get(end) {
            Some(0) => {}
            Some(_) => {
                return Err(LoadError::malformed(self.file_offset(end), format!("{} is not NUL-terminated", what())))
            }
            None => {
                return Err(LoadError::malformed(
                    self.file_offset(pos),
                    format!("{} has no room for its NUL terminator before the end of the FlatBuffer", what()),
                ))
            }
        }
        let bytes = self.bytes.get(start..end).unwrap_or_default();
        std::str::from_utf8(bytes).map_err(|e| {
            LoadError::malformed(
                self.file_offset(start.saturating_add(e.valid_up_to())),
                format!("{} is not valid UTF-8", what()),
            )
        })
    }

    /// Checks a vector header at `pos`; returns the position of its first element and its length.
    fn vector_at(
        &self,
        pos: usize,
        elem_size: usize,
        elem_align: usize,
        what: impl Fn() -> String,
    ) -> Result<(usize, usize)> {
        self.check_alignment(pos, 4, &what)?;
        let len = self.read::<u32>(pos, &what)? as usize;
        let start = pos.saturating_add(4);
        self.check_alignment(start, elem_align, || format!("the elements of {}", what()))?;
        let fits = len.checked_mul(elem_size).and_then(|bytes| start.checked_add(bytes));
        match fits {
            Some(end) if end <= self.bytes.len() => Ok((start, len)),
            _ => Err(LoadError::malformed(
                self.file_offset(pos),
                format!(
                    "{} claims {len} elements of {elem_size} bytes, more than the {} bytes left in the FlatBuffer",
                    what(),
                    self.bytes.len().saturating_sub(start)
                ),
            )),
        }
    }
}

/// A verified table: its vtable and inline size were checked when it was reached.
#[derive(Clone, Copy, Debug)]
pub struct Table<'a> {
    buf: FlatBuffer<'a>,
    pos: usize,
    vtable: usize,
    vtable_len: usize,
    size: usize,
    type_name: &'static str,
}

impl<'a> Table<'a> {
    /// File offset of the table (its soffset to the vtable).
    pub fn offset(&self) -> usize {
        self.buf.file_offset(self.pos)
    }

    pub fn type_name(&self) -> &'static str {
        self.type_name
    }

    fn describe(&self, field: Field) -> String {
        format!("{}.{}", self.type_name, field.name)
    }

    /// Where a present field's inline data starts, after checking it lies inside the table and is
    /// aligned for a value of `size` bytes.
    fn field_pos(&self, field: Field, size: usize) -> Result<Option<usize>> {
        let entry = 4 + 2 * usize::from(field.id);
        if entry + 2 > self.vtable_len {
            return Ok(None);
        }
        let entry_pos = self.vtable.saturating_add(entry);
        let offset = usize::from(self.buf.read::<u16>(entry_pos, || self.describe(field))?);
        if offset == 0 {
            return Ok(None);
        }
        if offset < 4 || offset.saturating_add(size) > self.size {
            return Err(LoadError::malformed(
                self.buf.file_offset(entry_pos),
                format!(
                    "{}: field at table offset {offset} ({size} bytes) lies outside its {}-byte table",
                    self.describe(field),
                    self.size
                ),
            ));
        }
        let pos = self.pos.saturating_add(offset);
        self.buf.check_alignment(pos, size.min(8), || self.describe(field))?;
        Ok(Some(pos))
    }

    /// File offset of a present field, for errors about its value.
    pub fn field_offset(&self, field: Field) -> Option<usize> {
        self.field_pos(field, 1).ok().flatten().map(|pos| self.buf.file_offset(pos))
    }

    pub fn scalar<T: Scalar>(&self, field: Field, default: T) -> Result<T> {
        match self.field_pos(field, T::SIZE)? {
            Some(pos) => self.buf.read(pos, || self.describe(field)),
            None => Ok(default),
        }
    }

    fn follow_field(&self, field: Field) -> Result<Option<usize>> {
        match self.field_pos(field, 4)? {
            Some(pos) => self.buf.follow(pos, || self.describe(field)).map(Some),
            None => Ok(None),
        }
    }

    pub fn table(&self, field: Field, type_name: &'static str) -> Result<Option<Table<'a>>> {
        match self.follow_field(field)? {
            Some(target) => self.buf.table_at(target, type_name).map(Some),
            None => Ok(None),
        }
    }

    pub fn string(&self, field: Field) -> Result<Option<&'a str>> {
        match self.follow_field(field)? {
            Some(target) => self.buf.string_at(target, || format!("string {}", self.describe(field))).map(Some),
            None => Ok(None),
        }
    }

    /// A `[ubyte]` vector, borrowed straight from the file.
    pub fn bytes(&self, field: Field) -> Result<Option<Bytes<'a>>> {
        match self.follow_field(field)? {
            Some(target) => {
                let (start, len) = self.buf.vector_at(target, 1, 1, || format!("vector {}", self.describe(field)))?;
                let data = self.buf.bytes.get(start..start.saturating_add(len)).unwrap_or_default();
                Ok(Some(Bytes { data, offset: self.buf.file_offset(start) }))
            }
            None => Ok(None),
        }
    }

    pub fn scalars<T: Scalar>(&self, field: Field) -> Result<Option<ScalarVector<'a, T>>> {
        match self.follow_field(field)? {
            Some(target) => {
                let what = || format!("vector {}", self.describe(field));
                let (start, len) = self.buf.vector_at(target, T::SIZE, T::SIZE, what)?;
                let data = self.buf.bytes.get(start..start.saturating_add(len * T::SIZE)).unwrap_or_default();
                Ok(Some(ScalarVector { data, offset: self.buf.file_offset(start), len, _marker: PhantomData }))
            }
            None => Ok(None),
        }
    }

    /// A vector of fixed-size structs of `struct_size` bytes, aligned to `align`.
    pub fn structs(&self, field: Field, struct_size: usize, align: usize) -> Result<Option<StructVector<'a>>> {
        match self.follow_field(field)? {
            Some(target) => {
                let what = || format!("vector {}", self.describe(field));
                let (start, len) = self.buf.vector_at(target, struct_size, align, what)?;
                let data = self.buf.bytes.get(start..start.saturating_add(len * struct_size)).unwrap_or_default();
                Ok(Some(StructVector { data, offset: self.buf.file_offset(start), struct_size, len }))
            }
            None => Ok(None),
        }
    }

    pub fn tables(&self, field: Field, type_name: &'static str) -> Result<Option<TableVector<'a>>> {
        match self.follow_field(field)? {
            Some(target) => {
                let (start, len) = self.buf.vector_at(target, 4, 4, || format!("vector {}", self.describe(field)))?;
                Ok(Some(TableVector { buf: self.buf, start, len, type_name, field: self.describe(field) }))
            }
            None => Ok(None),
        }
    }

    pub fn strings(&self, field: Field) -> Result<Option<StringVector<'a>>> {
        match self.follow_field(field)? {
            Some(target) => {
                let (start, len) = self.buf.vector_at(target, 4, 4, || format!("vector {}", self.describe(field)))?;
                Ok(Some(StringVector { buf: self.buf, start, len, field: self.describe(field) }))
            }
            None => Ok(None),
        }
    }

    /// A union stored as a `ubyte` type field plus an offset field. `members[k - 1]` names member
    /// type `k` (type 0 is NONE), for error messages and for `Union::table`'s type name.
    pub fn union(&self, type_field: Field, value_field: Field, members: &[&'static str]) -> Result<Option<Union<'a>>> {
        let kind: u8 = self.scalar(type_field, 0)?;
        if kind == 0 {
            return Ok(None);
        }
        let type_name = members.get(usize::from(kind) - 1).copied().unwrap_or("unknown union member");
        match self.table(value_field, type_name)? {
            Some(table) => Ok(Some(Union { kind, table })),
            None => Err(LoadError::malformed(
                self.field_offset(type_field).unwrap_or(self.offset()),
                format!("{} has union type {kind} but no value", self.describe(value_field)),
            )),
        }
    }

    /// A vector of unions: parallel `[ubyte]` types and `[offset]` values of equal length.
    pub fn unions(
        &self,
        types_field: Field,
        values_field: Field,
        members: &'static [&'static str],
    ) -> Result<Option<UnionVector<'a>>> {
        let types = self.bytes(types_field)?;
        let values = match self.follow_field(values_field)? {
            Some(target) => {
                let what = || format!("vector {}", self.describe(values_field));
                Some(self.buf.vector_at(target, 4, 4, what)?)
            }
            None => None,
        };
        match (types, values) {
            (None, None) => Ok(None),
            (Some(types), Some((start, len))) if types.data.len() == len => Ok(Some(UnionVector {
                buf: self.buf,
                types: types.data,
                start,
                members,
                field: self.describe(values_field),
            })),
            (types, values) => Err(LoadError::malformed(
                self.offset(),
                format!(
                    "{} has {} type entries but {} values",
                    self.describe(values_field),
                    types.map_or(0, |t| t.data.len()),
                    values.map_or(0, |(_, len)| len)
                ),
            )),
        }
    }
}

/// A `[ubyte]` vector and the file offset of its first byte.
#[derive(Clone, Copy, Debug)]
pub struct Bytes<'a> {
    pub data: &'a [u8],
    pub offset: usize,
}

/// A vector of scalars whose extent was checked when it was reached.
#[derive(Clone, Copy, Debug)]
pub struct ScalarVector<'a, T> {
    data: &'a [u8],
    offset: usize,
    len: usize,
    _marker: PhantomData<T>,
}

impl<'a, T: Scalar> ScalarVector<'a, T> {
    /// File offset of the first element.
    pub fn offset(&self) -> usize {
        self.offset
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, index: usize) -> Option<T> {
        let start = index.checked_mul(T::SIZE)?;
        T::from_le_slice(self.data.get(start..)?)
    }

    pub fn iter(&self) -> impl Iterator<Item = T> + 'a {
        let this = *self;
        (0..self.len).filter_map(move |i| this.get(i))
    }
}

/// A vector of inline structs whose extent was checked when it was reached.
#[derive(Clone, Copy, Debug)]
pub struct StructVector<'a> {
    data: &'a [u8],
    offset: usize,
    struct_size: usize,
    len: usize,
}

impl<'a> StructVector<'a> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, index: usize) -> Option<Struct<'a>> {
        let start = index.checked_mul(self.struct_size)?;
        let data = self.data.get(start..start.checked_add(self.struct_size)?)?;
        Some(Struct { data, offset: self.offset.saturating_add(start) })
    }

    pub fn iter(&self) -> impl Iterator<Item = Struct<'a>> + 'a {
        let this = *self;
        (0..self.len).filter_map(move |i| this.get(i))
    }
}

/// One inline struct. Its fields are read by byte offset, per the schema's struct layout.
#[derive(Clone, Copy, Debug)]
pub struct Struct<'a> {
    data: &'a [u8],
    offset: usize,
}

impl Struct<'_> {
    /// File offset of the struct.
    pub fn offset(&self) -> usize {
        self.offset
    }

    pub fn field<T: Scalar>(&self, at: usize) -> Result<T> {
        self.data.get(at..).and_then(T::from_le_slice).ok_or_else(|| {
            LoadError::malformed(
                self.offset,
                format!("struct field at byte {at} lies outside the {}-byte struct", self.data.len()),
            )
        })
    }
}

/// A vector of table offsets; each element is verified when it is fetched.
#[derive(Clone, Debug)]
pub struct TableVector<'a> {
    buf: FlatBuffer<'a>,
    start: usize,
    len: usize,
    type_name: &'static str,
    field: String,
}

impl<'a> TableVector<'a> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, index: usize) -> Result<Table<'a>> {
        let pos = self.element_pos(index)?;
        let target = self.buf.follow(pos, || format!("element {index} of {}", self.field))?;
        self.buf.table_at(target, self.type_name)
    }

    fn element_pos(&self, index: usize) -> Result<usize> {
        element_pos(&self.buf, self.start, self.len, index, &self.field)
    }
}

fn element_pos(buf: &FlatBuffer<'_>, start: usize, len: usize, index: usize, field: &str) -> Result<usize> {
    if index >= len {
        return Err(LoadError::malformed(
            buf.file_offset(start),
            format!("index {index} is out of range for {field} ({len} elements)"),
        ));
    }
    Ok(start.saturating_add(index.saturating_mul(4)))
}

/// A vector of string offsets; each element is verified when it is fetched.
#[derive(Clone, Debug)]
pub struct StringVector<'a> {
    buf: FlatBuffer<'a>,
    start: usize,
    len: usize,
    field: String,
}

impl<'a> StringVector<'a> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, index: usize) -> Result<&'a str> {
        let pos = element_pos(&self.buf, self.start, self.len, index, &self.field)?;
        let what = || format!("element {index} of {}", self.field);
        let target = self.buf.follow(pos, what)?;
        self.buf.string_at(target, what)
    }
}

/// A present union member: its type number (1-based, as in the schema) and its table.
#[derive(Clone, Copy, Debug)]
pub struct Union<'a> {
    pub kind: u8,
    pub table: Table<'a>,
}

/// A vector of unions; each element is verified when it is fetched.
#[derive(Clone, Debug)]
pub struct UnionVector<'a> {
    buf: FlatBuffer<'a>,
    types: &'a [u8],
    start: usize,
    members: &'static [&'static str],
    field: String,
}

impl<'a> UnionVector<'a> {
    pub fn len(&self) -> usize {
        self.types.len()
    }

    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }

    /// The element at `index`, or `None` for a NONE entry.
    pub fn get(&self, index: usize) -> Result<Option<Union<'a>>> {
        let pos = element_pos(&self.buf, self.start, self.types.len(), index, &self.field)?;
        let kind = self.types.get(index).copied().unwrap_or(0);
        if kind == 0 {
            return Ok(None);
        }
        let type_name = self.members.get(usize::from(kind) - 1).copied().unwrap_or("unknown union member");
        let target = self.buf.follow(pos, || format!("element {index} of {}", self.field))?;
        Ok(Some(Union { kind, table: self.buf.table_at(target, type_name)? }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A little hand-assembler for test buffers: bytes are placed at explicit positions so each
    /// test can say exactly which offset it breaks.
    struct Assembler(Vec<u8>);

    impl Assembler {
        fn new(len: usize) -> Assembler {
            Assembler(vec![0; len])
        }
        fn u16(&mut self, at: usize, v: u16) -> &mut Self {
            self.0[at..at + 2].copy_from_slice(&v.to_le_bytes());
            self
        }
        fn u32(&mut self, at: usize, v: u32) -> &mut Self {
            self.0[at..at + 4].copy_from_slice(&v.to_le_bytes());
            self
        }
        fn i32(&mut self, at: usize, v: i32) -> &mut Self {
            self.0[at..at + 4].copy_from_slice(&v.to_le_bytes());
            self
        }
        fn raw(&mut self, at: usize, v: &[u8]) -> &mut Self {
            self.0[at..at + v.len()].copy_from_slice(v);
            self
        }
    }

    const F_NUMBER: Field = Field::new(0, "number");
    const F_NAME: Field = Field::new(1, "name");
    const F_DATA: Field = Field::new(2, "data");
    const F_CHILDREN: Field = Field::new(3, "children");
    const F_WORDS: Field = Field::new(4, "words");
    const F_KIND: Field = Field::new(5, "kind_type");
    const F_VALUE: Field = Field::new(6, "kind");
    const F_INTS: Field = Field::new(7, "ints");
    const F_ABSENT: Field = Field::new(9, "absent");

    /// Root table with every kind of field the reader supports:
    ///
    /// ```text
    ///   0  root uoffset -> 28          4  "TEST"
    ///   8  vtable: len 20, size 36, fields at 4,8,12,16,20,24,28,32
    ///  28  table: soffset 20 | number u32 | name | data | children | words | kind u8 (+pad) | value | ints
    ///  64  string "hi"         72  [ubyte] 1,2,3      80  [Child] 1 element -> 96
    ///  88  Child vtable: len 6, size 8, field 0 at 4   96  Child table, x = 7 at 100
    /// 104  [string] 1 element -> 112     112  "yo"     120  [int] -5, 9
    /// ```
    fn sample() -> Assembler {
        let mut b = Assembler::new(132);
        b.u32(0, 28).raw(4, b"TEST");
        b.u16(8, 20).u16(10, 36);
        for (i, off) in [4u16, 8, 12, 16, 20, 24, 28, 32].iter().enumerate() {
            b.u16(12 + 2 * i, *off);
        }
        b.i32(28, 20).u32(32, 42);
        b.u32(36, 64 - 36).u32(40, 72 - 40).u32(44, 80 - 44).u32(48, 104 - 48);
        b.0[52] = 2;
        b.u32(56, 96 - 56).u32(60, 120 - 60);
        b.u32(64, 2).raw(68, b"hi\0");
        b.u32(72, 3).raw(76, &[1, 2, 3]);
        b.u32(80, 1).u32(84, 96 - 84);
        b.u16(88, 6).u16(90, 8).u16(92, 4);
        b.i32(96, 96 - 88).u32(100, 7);
        b.u32(104, 1).u32(108, 112 - 108);
        b.u32(112, 2).raw(116, b"yo\0");
        b.u32(120, 2).i32(124, -5).i32(128, 9);
        b
    }

    #[test]
    fn reads_every_field_kind_of_a_well_formed_buffer() {
        let bytes = sample();
        let buf = FlatBuffer::new(&bytes.0, 100);
        assert_eq!(buf.identifier(), Some(&b"TEST"[..]));
        let root = buf.root("Root").unwrap();
        assert_eq!(root.offset(), 128);
        assert_eq!(root.scalar::<u32>(F_NUMBER, 0).unwrap(), 42);
        assert_eq!(root.scalar::<u32>(F_ABSENT, 5).unwrap(), 5);
        assert_eq!(root.string(F_NAME).unwrap(), Some("hi"));
        let data = root.bytes(F_DATA).unwrap().unwrap();
        assert_eq!((data.data, data.offset), (&[1u8, 2, 3][..], 176));
        let children = root.tables(F_CHILDREN, "Child").unwrap().unwrap();
        assert_eq!(children.len(), 1);
        assert_eq!(children.get(0).unwrap().scalar::<u32>(F_NUMBER, 0).unwrap(), 7);
        assert!(children.get(1).is_err());
        let words = root.strings(F_WORDS).unwrap().unwrap();
        assert_eq!(words.get(0).unwrap(), "yo");
        let member = root.union(F_KIND, F_VALUE, &["A", "Child"]).unwrap().unwrap();
        assert_eq!((member.kind, member.table.type_name()), (2, "Child"));
        assert_eq!(member.table.scalar::<u32>(F_NUMBER, 0).unwrap(), 7);
        let ints = root.scalars::<i32>(F_INTS).unwrap().unwrap();
        assert_eq!(ints.iter().collect::<Vec<_>>(), vec![-5, 9]);
        assert_eq!(ints.offset(), 224);
        assert_eq!(root.table(F_ABSENT, "X").unwrap().map(|t| t.offset()), None);
    }

    #[test]
    fn size_prefix_larger_than_the_data_is_a_truncation() {
        let mut b = Assembler::new(12);
        b.u32(0, 100);
        let err = FlatBuffer::size_prefixed(&b.0, 64).unwrap_err();
        assert_eq!(err.offset, 64);
        assert!(err.message.contains("says 100 bytes but only 8 follow"), "{err}");
        assert!(FlatBuffer::size_prefixed(&[1, 0], 0).is_err());
        let ok = FlatBuffer::size_prefixed(&b.u32(0, 8).0, 64).unwrap();
        assert_eq!((ok.len(), ok.base()), (8, 68));
    }

    #[test]
    fn root_offset_outside_the_buffer_is_rejected() {
        let mut bytes = sample();
        bytes.u32(0, 4000);
        let err = FlatBuffer::new(&bytes.0, 0).root("Root").unwrap_err();
        assert_eq!(err.offset, 0);
        assert!(err.message.contains("points outside"), "{err}");
    }

    #[test]
    fn vtable_outside_the_buffer_is_rejected() {
        let mut bytes = sample();
        bytes.i32(28, -10_000);
        let err = FlatBuffer::new(&bytes.0, 0).root("Root").unwrap_err();
        assert_eq!(err.offset, 28);
        assert!(err.message.contains("vtable of table Root lies outside"), "{err}");
    }

    #[test]
    fn field_beyond_the_table_size_is_rejected() {
        let mut bytes = sample();
        bytes.u16(12, 40); // number at table offset 40 > size 36
        let root = FlatBuffer::new(&bytes.0, 0).root("Root").unwrap();
        let err = root.scalar::<u32>(F_NUMBER, 0).unwrap_err();
        assert_eq!(err.offset, 12);
        assert!(err.message.contains("Root.number"), "{err}");
    }

    #[test]
    fn misaligned_table_is_rejected() {
        let mut bytes = sample();
        bytes.u32(0, 29);
        let err = FlatBuffer::new(&bytes.0, 0).root("Root").unwrap_err();
        assert!(err.message.contains("not 4-byte aligned"), "{err}");
    }

    #[test]
    fn string_without_nul_is_rejected() {
        let mut bytes = sample();
        bytes.0[70] = b'!';
        let root = FlatBuffer::new(&bytes.0, 0).root("Root").unwrap();
        let err = root.string(F_NAME).unwrap_err();
        assert_eq!(err.offset, 70);
        assert!(err.message.contains("string Root.name is not NUL-terminated"), "{err}");
    }

    #[test]
    fn string_running_off_the_end_is_rejected() {
        let mut bytes = sample();
        bytes.u32(64, 100);
        let root = FlatBuffer::new(&bytes.0, 0).root("Root").unwrap();
        let err = root.string(F_NAME).unwrap_err();
        assert_eq!(err.offset, 64);
    }

    #[test]
    fn string_with_invalid_utf8_is_rejected() {
        let mut bytes = sample();
        bytes.0[69] = 0xFF;
        let root = FlatBuffer::new(&bytes.0, 0).root("Root").unwrap();
        let err = root.string(F_NAME).unwrap_err();
        assert_eq!(err.offset, 69);
        assert!(err.message.contains("UTF-8"), "{err}");
    }

    #[test]
    fn vector_length_that_overflows_is_rejected() {
        let mut bytes = sample();
        bytes.u32(120, u32::MAX);
        let root = FlatBuffer::new(&bytes.0, 0).root("Root").unwrap();
        let err = root.scalars::<i32>(F_INTS).unwrap_err();
        assert_eq!(err.offset, 120);
        assert!(err.message.contains("claims 4294967295 elements"), "{err}");
        bytes.u32(104, u32::MAX);
        let root = FlatBuffer::new(&bytes.0, 0).root("Root").unwrap();
        assert!(root.strings(F_WORDS).is_err());
    }

    #[test]
    fn union_vector_with_mismatched_lengths_is_rejected() {
        // Reuse `data` (3 type bytes) as types and `words` (1 offset) as values.
        let bytes = sample();
        let root = FlatBuffer::new(&bytes.0, 0).root("Root").unwrap();
        let err = root.unions(F_DATA, F_WORDS, &["A"]).unwrap_err();
        assert!(err.message.contains("3 type entries but 1 values"), "{err}");
    }

    #[test]
    fn every_truncation_and_byte_flip_of_the_sample_is_an_error_not_a_panic() {
        let bytes = sample();
        let walk = |data: &[u8]| -> Result<()> {
            let root = FlatBuffer::new(data, 0).root("Root")?;
            root.scalar::<u32>(F_NUMBER, 0)?;
            root.string(F_NAME)?;
            root.bytes(F_DATA)?;
            if let Some(children) = root.tables(F_CHILDREN, "Child")? {
                for i in 0..children.len() {
                    children.get(i)?.scalar::<u32>(F_NUMBER, 0)?;
                }
            }
            if let Some(words) = root.strings(F_WORDS)? {
                for i in 0..words.len() {
                    words.get(i)?;
                }
            }
            root.union(F_KIND, F_VALUE, &["A", "Child"])?;
            if let Some(ints) = root.scalars::<i32>(F_INTS)? {
                let _ = ints.iter().count();
            }
            Ok(())
        };
        walk(&bytes.0).unwrap();
        for len in 0..bytes.0.len() {
            let _ = walk(&bytes.0[..len]);
        }
        for at in 0..bytes.0.len() {
            for flip in [0x01u8, 0x80, 0xFF] {
                let mut copy = bytes.0.clone();
                copy[at] ^= flip;
                let _ = walk(&copy);
            }
        }
    }
}
