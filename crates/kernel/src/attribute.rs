//! Attributes, decoded in place from the attributes section by the kind the kernel expects.
//!
//! BEF does not say what an attribute is (the optional attribute-types section is for
//! disassembly); the kernel knows, and reads it as that. Every read is bounds-checked against the
//! section, so a wrong expectation or a corrupt offset is an error, never a read out of bounds.
//! Layouts (all little-endian): scalars at their natural alignment; a type is one [`DType`] byte;
//! a string is a `u32` length then the bytes; an array a `u32` count then the elements; shapes,
//! dense elements and aggregates start with an 8-byte header (alignment, dtype, prefix size,
//! byte size), an aggregate's elements each after a one-byte [`AttributeType`] tag; a symbol in
//! a `tfrt.compiled` module is a [`CompilationUnit`]. The kernels' frames and the disassembler
//! both read attributes through this view, so each kind has one decoder.

use std::marker::PhantomData;

use crate::dtype::DType;
use crate::vbr;

/// Bit set in an [`AttributeType`] code for an array of fixed-width elements.
pub const ARRAY_ATTRIBUTE_FLAG: u8 = 0x80;

/// What an attribute in the attributes section holds, as the attribute-types section records
/// it: a scalar of a [`DType`], one of the structured kinds, or an array of fixed-width elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttributeType {
    Scalar(DType),
    /// A type, stored as one [`DType`] byte.
    Type,
    /// A function reference (an index into the function index, never in the attributes section).
    Func,
    Shape,
    Dense,
    /// A symbol in a `tfrt.compiled` module, with that module's serialized operation.
    SymbolRef,
    /// Elements of mixed kinds: a count, offsets, and each element after its one-byte tag.
    Aggregate,
    /// A count, then the elements: scalars of a [`DType`] ...
    Array(DType),
    /// ... or types. An empty array of any kind is recorded as `Array(DType::I32)`.
    TypeArray,
}

impl AttributeType {
    // TFRT numbers these after its last DType (23) and the `Unsupported` marker (24).
    const TYPE: u8 = 25;
    const FUNC: u8 = 26;
    const SHAPE: u8 = 27;
    const DENSE: u8 = 28;
    const SYMBOL_REF: u8 = 29;
    const AGGREGATE: u8 = 30;

    pub fn code(self) -> u8 {
        match self {
            AttributeType::Scalar(d) => d as u8,
            AttributeType::Type => Self::TYPE,
            AttributeType::Func => Self::FUNC,
            AttributeType::Shape => Self::SHAPE,
            AttributeType::Dense => Self::DENSE,
            AttributeType::SymbolRef => Self::SYMBOL_REF,
            AttributeType::Aggregate => Self::AGGREGATE,
            AttributeType::Array(d) => ARRAY_ATTRIBUTE_FLAG | d as u8,
            AttributeType::TypeArray => ARRAY_ATTRIBUTE_FLAG | Self::TYPE,
        }
    }

    pub fn from_code(code: u8) -> Option<AttributeType> {
        if code & ARRAY_ATTRIBUTE_FLAG != 0 {
            return match code & !ARRAY_ATTRIBUTE_FLAG {
                Self::TYPE => Some(AttributeType::TypeArray),
                element => DType::from_u8(element).filter(|d| d.byte_size().is_some()).map(AttributeType::Array),
            };
        }
        Some(match code {
            Self::TYPE => AttributeType::Type,
            Self::FUNC => AttributeType::Func,
            Self::SHAPE => AttributeType::Shape,
            Self::DENSE => AttributeType::Dense,
            Self::SYMBOL_REF => AttributeType::SymbolRef,
            Self::AGGREGATE => AttributeType::Aggregate,
            scalar => AttributeType::Scalar(DType::from_u8(scalar)?),
        })
    }
}

/// Why an attribute could not be read as what the kernel asked for.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AttributeError {
    #[error("attribute at offset {offset}: {what} needs {needed} bytes but the section has {available} left")]
    OutOfBounds { offset: usize, what: &'static str, needed: usize, available: usize },
    #[error("attribute at offset {offset}: the string is not UTF-8")]
    NotUtf8 { offset: usize },
    #[error("attribute at offset {offset}: {code} is not a BEF element type")]
    UnknownDType { offset: usize, code: u8 },
    #[error("attribute at offset {offset}: {what}")]
    Malformed { offset: usize, what: String },
    /// Attributes are looked up by name, but the writer left the optional sections out.
    #[error(
        "the BEF file has no attribute-names section (it was written with --disable-optional-sections), so \
         attributes can be read only by position"
    )]
    NoAttributeNames,
}

/// Fixed-width values an attribute may hold, read from their little-endian bytes.
pub trait Scalar: Copy + Send + Sync + 'static {
    const SIZE: usize;
    fn read_le(bytes: &[u8]) -> Self;
}

macro_rules! scalar {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            #[inline]
            fn read_le(bytes: &[u8]) -> $t {
                <$t>::from_le_bytes(bytes.try_into().expect("callers pass SIZE bytes"))
            }
        }
    )*};
}
scalar!(u8, i8, u16, i16, u32, i32, u64, i64, f32, f64);

impl Scalar for bool {
    const SIZE: usize = 1;
    #[inline]
    fn read_le(bytes: &[u8]) -> bool {
        bytes[0] != 0
    }
}

/// One attribute: the attributes section and the offset of this attribute in it.
#[derive(Clone, Copy, Debug)]
pub struct Attribute<'a> {
    section: &'a [u8],
    offset: usize,
}

impl<'a> Attribute<'a> {
    pub fn new(section: &'a [u8], offset: usize) -> Attribute<'a> {
        Attribute { section, offset }
    }

    pub fn offset(&self) -> usize {
        self.offset
    }

    fn bytes(&self, at: usize, len: usize, what: &'static str) -> Result<&'a [u8], AttributeError> {
        let start = self.offset.checked_add(at);
        start.and_then(|s| Some(s..s.checked_add(len)?)).and_then(|range| self.section.get(range)).ok_or(
            AttributeError::OutOfBounds {
                offset: self.offset,
                what,
                needed: at.saturating_add(len),
                available: self.section.len().saturating_sub(self.offset),
            },
        )
    }

    fn u32_at(&self, at: usize, what: &'static str) -> Result<u32, AttributeError> {
        Ok(<u32 as Scalar>::read_le(self.bytes(at, 4, what)?))
    }

    /// A scalar (`i32`, `f64`, `bool` for `i1`, `u16` for the bits of `f16`/`bf16`, ...).
    pub fn scalar<T: Scalar>(&self) -> Result<T, AttributeError> {
        Ok(T::read_le(self.bytes(0, T::SIZE, "a scalar")?))
    }

    /// A type attribute: one element-type byte.
    pub fn dtype(&self) -> Result<DType, AttributeError> {
        let code = self.bytes(0, 1, "a type")?[0];
        DType::from_u8(code).ok_or(AttributeError::UnknownDType { offset: self.offset, code })
    }

    /// A string's bytes (a `u32` length, then the bytes; no terminator).
    pub fn string_bytes(&self) -> Result<&'a [u8], AttributeError> {
        let len = self.u32_at(0, "a string length")? as usize;
        self.bytes(4, len, "a string")
    }

    /// A string that must be UTF-8.
    pub fn string(&self) -> Result<&'a str, AttributeError> {
        std::str::from_utf8(self.string_bytes()?).map_err(|_| AttributeError::NotUtf8 { offset: self.offset })
    }

    /// The bytes of a scalar of `dtype`, which must have a fixed size.
    pub fn raw_scalar(&self, dtype: DType) -> Result<&'a [u8], AttributeError> {
        self.bytes(0, self.fixed_size(dtype)?, "a scalar")
    }

    fn fixed_size(&self, dtype: DType) -> Result<usize, AttributeError> {
        dtype.byte_size().ok_or_else(|| AttributeError::Malformed {
            offset: self.offset,
            what: format!("{dtype:?} values have no fixed size"),
        })
    }

    /// An array of fixed-width elements (a `u32` count, then the elements).
    pub fn array<T: Scalar>(&self) -> Result<ScalarArray<'a, T>, AttributeError> {
        Ok(ScalarArray { bytes: self.array_bytes(T::SIZE)?, _type: PhantomData })
    }

    /// The elements of an array of `dtype` scalars, back to back.
    pub fn raw_array(&self, dtype: DType) -> Result<&'a [u8], AttributeError> {
        self.array_bytes(self.fixed_size(dtype)?)
    }

    /// An array of types (one element-type byte each).
    pub fn dtype_array(&self) -> Result<Vec<DType>, AttributeError> {
        let codes = self.array_bytes(1)?;
        codes
            .iter()
            .map(|&code| DType::from_u8(code).ok_or(AttributeError::UnknownDType { offset: self.offset, code }))
            .collect()
    }

    fn array_bytes(&self, size: usize) -> Result<&'a [u8], AttributeError> {
        let count = self.u32_at(0, "an array count")? as usize;
        let len = count.checked_mul(size).ok_or(AttributeError::Malformed {
            offset: self.offset,
            what: format!("an array of {count} elements is larger than memory"),
        })?;
        // An empty array has no elements to align: a writer may end the section at its count.
        if len == 0 {
            return Ok(&[]);
        }
        // Elements wider than four bytes start at the next multiple of eight.
        let start = if size > 4 { (self.offset + 4).next_multiple_of(8) - self.offset } else { 4 };
        self.bytes(start, len, "array elements")
    }

    /// The 8-byte header of a structured attribute: (alignment, dtype byte, prefix size, byte size).
    fn header(&self) -> Result<(u8, u8, u16, u32), AttributeError> {
        let bytes = self.bytes(0, 8, "an attribute header")?;
        Ok((bytes[0], bytes[1], <u16 as Scalar>::read_le(&bytes[2..4]), <u32 as Scalar>::read_le(&bytes[4..8])))
    }

    /// A shape: its dimensions, or `None` for an unranked shape.
    pub fn shape(&self) -> Result<Option<Vec<i64>>, AttributeError> {
        if self.bytes(0, 1, "a shape")?[0] == 0 {
            return Ok(None);
        }
        self.header()?;
        let rank = self.u32_at(8, "a shape's rank")? as usize;
        Ok(Some(self.dims(12, rank)?))
    }

    fn dims(&self, at: usize, rank: usize) -> Result<Vec<i64>, AttributeError> {
        let len = rank
            .checked_mul(8)
            .ok_or(AttributeError::Malformed { offset: self.offset, what: format!("rank {rank} is too large") })?;
        Ok(self.bytes(at, len, "dimensions")?.chunks_exact(8).map(<i64 as Scalar>::read_le).collect())
    }

    /// Dense elements: element type, shape, and the raw element bytes.
    pub fn dense(&self) -> Result<DenseAttribute<'a>, AttributeError> {
        let (_, dtype, _, _) = self.header()?;
        let dtype = DType::from_u8(dtype).ok_or(AttributeError::UnknownDType { offset: self.offset, code: dtype })?;
        let element_offset = self.u32_at(8, "dense element offset")? as usize;
        let count = self.u32_at(12, "dense element count")? as usize;
        let rank = self.u32_at(16, "dense rank")? as usize;
        let shape = self.dims(20, rank)?;
        let size = self.fixed_size(dtype)?;
        let len = count.checked_mul(size).ok_or(AttributeError::Malformed {
            offset: self.offset,
            what: format!("{count} elements are larger than memory"),
        })?;
        Ok(DenseAttribute { dtype, shape, data: self.bytes(element_offset, len, "dense elements")? })
    }

    /// An aggregate (elements of mixed kinds): a count, then element offsets relative to the
    /// aggregate's start. An empty aggregate is a single zero count.
    pub fn aggregate(&self) -> Result<Aggregate<'a>, AttributeError> {
        let first = self.u32_at(0, "an aggregate")?;
        if first == 0 {
            return Ok(Aggregate { base: *self, count: 0, offsets_at: 0 });
        }
        self.header()?;
        let count = self.u32_at(8, "an aggregate's count")? as usize;
        self.bytes(12, count.saturating_mul(4), "aggregate offsets")?;
        Ok(Aggregate { base: *self, count, offsets_at: 12 })
    }

    /// A symbol in a `tfrt.compiled` module: `vbr id, vbr root length, vbr #nested, vbr nested
    /// length each, vbr text length`, the names back to back, the module's text, a NUL.
    pub fn compilation_unit(&self) -> Result<CompilationUnit<'a>, AttributeError> {
        let tail = self.section.get(self.offset..).unwrap_or_default();
        let mut pos = 0;
        let malformed = |what: &str| AttributeError::Malformed { offset: self.offset, what: what.to_owned() };
        let mut number = |what: &str| -> Result<usize, AttributeError> {
            let value =
                vbr::read(tail, &mut pos).ok_or_else(|| malformed(&format!("{what}: truncated or overlong")))?;
            usize::try_from(value).map_err(|_| malformed(&format!("{what} {value} is larger than memory")))
        };
        let id = number("a compilation unit id")?;
        let root_len = number("a root symbol length")?;
        let num_nested = number("a nested symbol count")?;
        if num_nested > tail.len() {
            return Err(malformed(&format!("{num_nested} nested symbols in {} bytes", tail.len())));
        }
        let nested_lens = (0..num_nested).map(|_| number("a nested symbol length")).collect::<Result<Vec<_>, _>>()?;
        let text_len = number("a module text length")?;
        let mut take = |len: usize, what: &'static str| -> Result<&'a str, AttributeError> {
            let bytes = self.bytes(pos, len, what)?;
            pos += len;
            std::str::from_utf8(bytes).map_err(|_| AttributeError::NotUtf8 { offset: self.offset })
        };
        let root = take(root_len, "a root symbol")?;
        let nested = nested_lens.into_iter().map(|len| take(len, "a nested symbol")).collect::<Result<_, _>>()?;
        let module = take(text_len, "a module's text")?;
        if self.bytes(pos, 1, "the module text's terminator")? != [0] {
            return Err(malformed("the module text does not end with a NUL"));
        }
        Ok(CompilationUnit { id, root, nested, module })
    }
}

/// A symbol in a `tfrt.compiled` module, with the module that defines it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompilationUnit<'a> {
    /// Which such attribute of the file this is (counting from 0, in the order written).
    pub id: usize,
    pub root: &'a str,
    pub nested: Vec<&'a str>,
    /// The module op, in MLIR's generic form.
    pub module: &'a str,
}

/// An array attribute's elements, read in place.
#[derive(Clone, Copy, Debug)]
pub struct ScalarArray<'a, T> {
    bytes: &'a [u8],
    _type: PhantomData<T>,
}

impl<'a, T: Scalar> ScalarArray<'a, T> {
    pub fn len(&self) -> usize {
        self.bytes.len() / T::SIZE
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub fn get(&self, i: usize) -> Option<T> {
        self.bytes.get(i * T::SIZE..(i + 1) * T::SIZE).map(T::read_le)
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = T> + 'a {
        self.bytes.chunks_exact(T::SIZE).map(T::read_le)
    }

    pub fn to_vec(&self) -> Vec<T> {
        self.iter().collect()
    }
}

/// Dense elements: `data` holds `shape`'s product elements of `dtype`, little-endian.
#[derive(Clone, Debug)]
pub struct DenseAttribute<'a> {
    pub dtype: DType,
    pub shape: Vec<i64>,
    pub data: &'a [u8],
}

/// An aggregate's elements, each an attribute of its own.
#[derive(Clone, Copy, Debug)]
pub struct Aggregate<'a> {
    base: Attribute<'a>,
    count: usize,
    offsets_at: usize,
}

impl<'a> Aggregate<'a> {
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Element `i`'s kind, from the tag byte before it.
    pub fn kind(&self, i: usize) -> Result<AttributeType, AttributeError> {
        let element = self.get(i)?;
        let code = element.offset.checked_sub(1).and_then(|at| self.base.section.get(at)).copied().ok_or(
            AttributeError::Malformed { offset: element.offset, what: "an aggregate element has no tag".to_owned() },
        )?;
        AttributeType::from_code(code).ok_or(AttributeError::Malformed {
            offset: element.offset,
            what: format!("aggregate element tag {code} is no attribute type"),
        })
    }

    /// Element `i` (read it by the kind the kernel expects, or by [`Aggregate::kind`]).
    pub fn get(&self, i: usize) -> Result<Attribute<'a>, AttributeError> {
        if i >= self.count {
            return Err(AttributeError::Malformed {
                offset: self.base.offset,
                what: format!("element {i} of an aggregate of {}", self.count),
            });
        }
        let relative = self.base.u32_at(self.offsets_at + 4 * i, "an aggregate offset")? as usize;
        Ok(Attribute::new(self.base.section, self.base.offset + relative))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_strings_and_arrays_read_their_layouts() {
        let mut section = vec![0x2A, 0, 0, 0]; // i32 42 at 0
        section.extend([3, 0, 0, 0, b'a', b'b', b'c', 0xCC]); // string "abc" at 4
        section.extend([2, 0, 0, 0, 7, 0, 0, 0, 9, 0, 0, 0]); // i32 array [7, 9] at 12
        section.extend([1, 0, 0, 0]); // i64 array count at 24 (≡ 0 mod 8 → pad to 32)
        section.extend([0xCC; 4]);
        section.extend((-5i64).to_le_bytes()); // element at 32
        section.push(DType::F32 as u8); // type at 40
        let at = |offset| Attribute::new(&section, offset);
        assert_eq!(at(0).scalar::<i32>(), Ok(42));
        assert_eq!(at(4).string(), Ok("abc"));
        assert_eq!(at(12).array::<i32>().unwrap().to_vec(), vec![7, 9]);
        assert_eq!(at(24).array::<i64>().unwrap().to_vec(), vec![-5]);
        assert_eq!(at(40).dtype(), Ok(DType::F32));
        assert!(matches!(at(40).scalar::<i64>(), Err(AttributeError::OutOfBounds { needed: 8, available: 1, .. })));
    }

    #[test]
    fn an_empty_array_at_the_end_of_the_section_reads_empty() {
        // An i64 array's count at 4: its elements would start at 8, past the section's end.
        let section = [0xCC, 0xCC, 0xCC, 0xCC, 0, 0, 0, 0];
        assert_eq!(Attribute::new(&section, 4).array::<i64>().unwrap().to_vec(), Vec::<i64>::new());
    }

    #[test]
    fn a_corrupt_count_is_an_error_not_an_allocation() {
        let section = [0xFF, 0xFF, 0xFF, 0xFF];
        let attribute = Attribute::new(&section, 0);
        assert!(matches!(attribute.array::<i64>(), Err(AttributeError::OutOfBounds { .. })));
        assert!(matches!(attribute.string(), Err(AttributeError::OutOfBounds { .. })));
    }

    #[test]
    fn dense_shape_and_aggregate_follow_their_headers() {
        // Dense i32 [2] = [1, 2]: header, element offset 28, count 2, rank 1, dim 2, data.
        let mut dense = vec![8, DType::I32 as u8, 28, 0, 36, 0, 0, 0];
        dense.extend([28, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0]);
        dense.extend(2i64.to_le_bytes());
        dense.extend([1, 0, 0, 0, 2, 0, 0, 0]);
        let attribute = Attribute::new(&dense, 0).dense().unwrap();
        assert_eq!((attribute.dtype, attribute.shape.clone()), (DType::I32, vec![2]));
        assert_eq!(attribute.data, &[1, 0, 0, 0, 2, 0, 0, 0]);

        let mut shape = vec![8, 0, 12, 0, 28, 0, 0, 0, 2, 0, 0, 0];
        shape.extend(3i64.to_le_bytes());
        shape.extend((-1i64).to_le_bytes());
        assert_eq!(Attribute::new(&shape, 0).shape(), Ok(Some(vec![3, -1])));
        assert_eq!(Attribute::new(&[0, 0, 0, 0], 0).shape(), Ok(None));

        // Aggregate of one i32 (tag byte before it): header, count 1, offset 17.
        let mut aggregate = vec![4, 0, 16, 0, 21, 0, 0, 0, 1, 0, 0, 0, 17, 0, 0, 0, DType::I32 as u8];
        aggregate.extend(5i32.to_le_bytes());
        let aggregate = Attribute::new(&aggregate, 0).aggregate().unwrap();
        assert_eq!(aggregate.len(), 1);
        assert_eq!(aggregate.get(0).unwrap().scalar::<i32>(), Ok(5));
        assert!(aggregate.get(1).is_err());
    }

    #[test]
    fn aggregate_elements_carry_their_kind_in_the_byte_before_them() {
        let mut aggregate = vec![4, 0, 16, 0, 21, 0, 0, 0, 1, 0, 0, 0, 17, 0, 0, 0, DType::I32 as u8];
        aggregate.extend(5i32.to_le_bytes());
        let view = Attribute::new(&aggregate, 0).aggregate().unwrap();
        assert_eq!(view.kind(0), Ok(AttributeType::Scalar(DType::I32)));
        aggregate[16] = 0x7F;
        let view = Attribute::new(&aggregate, 0).aggregate().unwrap();
        assert!(matches!(view.kind(0), Err(AttributeError::Malformed { .. })));
    }

    #[test]
    fn typed_arrays_read_by_element_type() {
        let types = [2, 0, 0, 0, DType::F64 as u8, DType::String as u8];
        assert_eq!(Attribute::new(&types, 0).dtype_array(), Ok(vec![DType::F64, DType::String]));
        let mut i64s = vec![0xCC; 4];
        i64s.extend([1, 0, 0, 0]);
        i64s.extend((-3i64).to_le_bytes());
        assert_eq!(Attribute::new(&i64s, 4).raw_array(DType::I64), Ok(&(-3i64).to_le_bytes()[..]));
        assert_eq!(Attribute::new(&[7, 0], 0).raw_scalar(DType::UI16), Ok(&[7, 0][..]));
        assert!(Attribute::new(&[7, 0], 0).raw_scalar(DType::String).is_err(), "strings have no fixed size");
    }

    #[test]
    fn a_compilation_unit_is_its_symbol_and_its_module_text() {
        // id 1, root "m" (1 byte), one nested name "f" (1 byte), text "abc" (3 bytes), NUL.
        let unit = [1, 1, 1, 1, 3, b'm', b'f', b'a', b'b', b'c', 0];
        let expected = CompilationUnit { id: 1, root: "m", nested: vec!["f"], module: "abc" };
        assert_eq!(Attribute::new(&unit, 0).compilation_unit(), Ok(expected));
        assert!(Attribute::new(&unit[..10], 0).compilation_unit().is_err(), "no terminator");
        assert!(Attribute::new(&unit[..3], 0).compilation_unit().is_err(), "cut in the lengths");
        let mut unterminated = unit;
        unterminated[10] = b'd';
        assert!(Attribute::new(&unterminated, 0).compilation_unit().is_err());
        let many = [0, 0, 0xFF, 0xFF, 0x7F];
        assert!(Attribute::new(&many, 0).compilation_unit().is_err(), "more nested names than bytes");
    }

    #[test]
    fn attribute_type_codes_match_tfrt() {
        assert_eq!(AttributeType::Scalar(DType::I32).code(), 8);
        assert_eq!(AttributeType::Type.code(), 25);
        assert_eq!(AttributeType::Aggregate.code(), 30);
        assert_eq!(AttributeType::Array(DType::I32).code(), 0x88);
        assert_eq!(AttributeType::TypeArray.code(), 0x99);
        for code in 0..=255u8 {
            if let Some(t) = AttributeType::from_code(code) {
                assert_eq!(t.code(), code);
            }
        }
    }
}
