//! Attributes as data. Builtin attributes (and locations, which are attributes in MLIR) are
//! structured; those of other dialects keep their exact text or their raw dialect encoding.

use std::sync::Arc;

use super::context::{AttrId, DialectId, Sym, TypeId};

/// Bytes shared with the buffer they were read from (dense element data, resource blobs): a
/// slice of an `Arc`, so reading a large constant copies nothing after the file itself.
#[derive(Clone)]
pub struct Blob {
    buffer: Shared,
    start: usize,
    len: usize,
}

/// What a blob's bytes are a slice of: a buffer, or anything else that holds bytes (a vector, a
/// mapped file).
#[derive(Clone)]
enum Shared {
    Slice(Arc<[u8]>),
    Owner(Arc<dyn AsRef<[u8]> + Send + Sync>),
}

impl Blob {
    pub fn new(buffer: Arc<[u8]>, start: usize, len: usize) -> Self {
        assert!(start.checked_add(len).is_some_and(|end| end <= buffer.len()), "blob out of range");
        Self { buffer: Shared::Slice(buffer), start, len }
    }

    /// `len` bytes at `start` of what `owner` holds, or `None` when they are not all inside it.
    pub fn shared(owner: Arc<dyn AsRef<[u8]> + Send + Sync>, start: usize, len: usize) -> Option<Self> {
        let size = (*owner).as_ref().len();
        start.checked_add(len).filter(|&end| end <= size)?;
        Some(Self { buffer: Shared::Owner(owner), start, len })
    }

    /// The bytes of `bytes`, which the blob takes over (no copy).
    pub fn from_vec(bytes: Vec<u8>) -> Self {
        let len = bytes.len();
        Self { buffer: Shared::Owner(Arc::new(bytes)), start: 0, len }
    }

    pub fn bytes(&self) -> &[u8] {
        let all = match &self.buffer {
            Shared::Slice(buffer) => &buffer[..],
            Shared::Owner(owner) => (**owner).as_ref(),
        };
        &all[self.start..self.start + self.len]
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl PartialEq for Blob {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}
impl Eq for Blob {}
/// A large blob (a model's weights) hashes its length and a sample of its bytes, not all of them:
/// interning hashes every dense attribute, and hashing hundreds of megabytes of weights was a
/// tenth of an ONNX model's load. Equal blobs still hash alike; unequal ones of one length that
/// agree on the sample only cost a full comparison.
impl std::hash::Hash for Blob {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        const WHOLE: usize = 256;
        const PIECE: usize = 16;
        const PIECES: usize = 16;
        let bytes = self.bytes();
        state.write_usize(bytes.len());
        if bytes.len() <= WHOLE {
            state.write(bytes);
            return;
        }
        let last = bytes.len() - PIECE;
        for index in 0..=PIECES {
            let start = last / PIECES * index;
            state.write(&bytes[start..start + PIECE]);
        }
        state.write(&bytes[last..]);
    }
}
impl std::fmt::Debug for Blob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Blob({} bytes)", self.len)
    }
}

/// An arbitrary-precision integer value: `width` bits, two's complement, little-endian 64-bit
/// words (only the low `width` bits are meaningful; the rest are zero).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ApInt {
    pub width: u32,
    pub words: ApWords,
}

/// Storage of an [`ApInt`]: inline up to 64 bits, on the heap beyond.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ApWords {
    Inline(u64),
    Heap(Box<[u64]>),
}

impl ApInt {
    pub fn from_u64(width: u32, value: u64) -> Self {
        let mask = if width >= 64 { u64::MAX } else { (1u64 << width) - 1 };
        if width <= 64 {
            ApInt { width, words: ApWords::Inline(value & mask) }
        } else {
            let mut words = vec![0u64; width.div_ceil(64) as usize];
            words[0] = value;
            ApInt { width, words: ApWords::Heap(words.into()) }
        }
    }

    /// Low word first; masked to `width`.
    pub fn from_words(width: u32, mut words: Vec<u64>) -> Self {
        if width <= 64 {
            return Self::from_u64(width, words.first().copied().unwrap_or(0));
        }
        let count = width.div_ceil(64) as usize;
        words.resize(count, 0);
        let rem = width % 64;
        if rem != 0 {
            words[count - 1] &= (1u64 << rem) - 1;
        }
        ApInt { width, words: ApWords::Heap(words.into()) }
    }

    pub fn words(&self) -> &[u64] {
        match &self.words {
            ApWords::Inline(word) => std::slice::from_ref(word),
            ApWords::Heap(words) => words,
        }
    }

    /// Whether the sign bit (bit `width - 1`) is set.
    pub fn is_negative(&self) -> bool {
        if self.width == 0 {
            return false;
        }
        let bit = self.width - 1;
        (self.words()[(bit / 64) as usize] >> (bit % 64)) & 1 == 1
    }
}

/// The storage of `dense<...>` elements given one after another in row-major order (`unit`
/// bytes each; `i1`s one byte each, 0 or 1): a splat kept as one element and `i1`s packed
/// LSB-first, a splat of them as one byte `00`/`FF` — what upstream stores.
pub fn dense_storage(mut data: Vec<u8>, unit: usize, is_i1: bool) -> Vec<u8> {
    if !data.is_empty() && data.chunks(unit).all(|c| c == &data[..unit]) {
        data.truncate(unit);
        if is_i1 {
            data[0] = if data[0] != 0 { 0xFF } else { 0 };
        }
    } else if is_i1 {
        let mut packed = vec![0u8; data.len().div_ceil(8)];
        for (i, &b) in data.iter().enumerate() {
            packed[i / 8] |= (b & 1) << (i % 8);
        }
        data = packed;
    }
    data
}

/// An affine expression (a tree; `Box`ed because affine maps are small and rare).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AffineExpr {
    Dim(u32),
    Symbol(u32),
    Constant(i64),
    Add(Box<AffineExpr>, Box<AffineExpr>),
    Mul(Box<AffineExpr>, Box<AffineExpr>),
    Mod(Box<AffineExpr>, Box<AffineExpr>),
    FloorDiv(Box<AffineExpr>, Box<AffineExpr>),
    CeilDiv(Box<AffineExpr>, Box<AffineExpr>),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AffineMap {
    pub num_dims: u32,
    pub num_symbols: u32,
    pub results: Box<[AffineExpr]>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IntegerSet {
    pub num_dims: u32,
    pub num_symbols: u32,
    /// Each constraint is `expr == 0` (`true`) or `expr >= 0` (`false`).
    pub constraints: Box<[(AffineExpr, bool)]>,
}

/// What a `dense_resource` names: a resource key of a dialect (the builtin dialect's, in practice).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ResourceRef {
    pub dialect: DialectId,
    pub key: Sym,
}

/// An attribute. Locations are attributes too (`*Loc` variants), as in MLIR.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Attribute {
    Array(Box<[AttrId]>),
    /// Entries `(name, value)`, names being [`Attribute::String`]s, in the stored order (sorted).
    Dictionary(Box<[(AttrId, AttrId)]>),
    /// A string; `ty` is `None` for the usual NoneType-typed string.
    String {
        value: Sym,
        ty: Option<TypeId>,
    },
    /// `@name`; the attribute is a [`Attribute::String`].
    FlatSymbolRef(AttrId),
    /// `@root::@a::@b`; root is a string attribute, nested ones are `FlatSymbolRef`s.
    SymbolRef {
        root: AttrId,
        nested: Box<[AttrId]>,
    },
    Type(TypeId),
    Unit,
    /// An integer (or `true`/`false` when `ty` is `i1`, or an index).
    Integer {
        ty: TypeId,
        value: ApInt,
    },
    /// A float with its exact bits (width of its semantics).
    Float {
        ty: TypeId,
        bits: ApInt,
    },
    /// `array<T: ...>`: `count` elements of `elem`, little-endian (i1 one byte each).
    DenseArray {
        elem: TypeId,
        count: u64,
        data: Blob,
    },
    /// `dense<...>` of ints/floats/complex: raw row-major data in bytecode layout (element widths
    /// rounded up to bytes; i1 bit-packed LSB-first, or one byte `00`/`FF` for a splat). A splat
    /// holds exactly one element.
    DenseElements {
        ty: TypeId,
        data: Blob,
    },
    /// `dense<"...">` of strings: one value when `splat`, else one per element.
    DenseString {
        ty: TypeId,
        splat: bool,
        values: Box<[Sym]>,
    },
    DenseResource {
        ty: TypeId,
        resource: ResourceRef,
    },
    Sparse {
        ty: TypeId,
        indices: AttrId,
        values: AttrId,
    },
    /// `distinct[N]<attr>`: `id` distinguishes instances (the file's table index when read).
    Distinct {
        id: u32,
        referenced: AttrId,
    },
    AffineMap(AffineMap),
    IntegerSet(IntegerSet),
    /// `strided<[...], offset: N>`; dynamic values are `i64::MIN`.
    StridedLayout {
        offset: i64,
        strides: Box<[i64]>,
    },
    UnknownLoc,
    /// `"file":line:col`; `filename` is a string attribute.
    FileLineColLoc {
        filename: AttrId,
        line: u32,
        column: u32,
    },
    /// A range: `parts` are `[]`, `[line]`, `[line, col]`, `[line, col, end_col]` or
    /// `[line, col, end_line, end_col]`, exactly as stored.
    FileLineColRange {
        filename: AttrId,
        parts: Box<[u32]>,
    },
    NameLoc {
        name: AttrId,
        child: AttrId,
    },
    CallSiteLoc {
        callee: AttrId,
        caller: AttrId,
    },
    FusedLoc {
        locations: Box<[AttrId]>,
        metadata: Option<AttrId>,
    },
    /// An attribute kept as its full textual form (`#dialect.attr<...>`, or any builtin one the
    /// producer wrote as text).
    Text {
        dialect: DialectId,
        text: Sym,
    },
    /// An attribute in its dialect's own bytecode encoding, which rtx does not interpret.
    Custom {
        dialect: DialectId,
        payload: Blob,
    },
}

impl Attribute {
    /// Whether this attribute is a location.
    pub fn is_location(&self) -> bool {
        matches!(
            self,
            Attribute::UnknownLoc
                | Attribute::FileLineColLoc { .. }
                | Attribute::FileLineColRange { .. }
                | Attribute::NameLoc { .. }
                | Attribute::CallSiteLoc { .. }
                | Attribute::FusedLoc { .. }
        )
    }
}
