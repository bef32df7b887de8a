//! Types as data: builtin types structured, other dialects' kept as text or raw encoding.

use super::attribute::Blob;
use super::context::{AttrId, DialectId, Sym, TypeId};

/// A dynamic dimension in a shape (`?`).
pub const DYNAMIC: i64 = i64::MIN;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Signedness {
    Signless,
    Signed,
    Unsigned,
}

/// Every builtin float type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FloatKind {
    BF16,
    F16,
    F32,
    F64,
    F80,
    F128,
    TF32,
    F8E5M2,
    F8E4M3,
    F8E4M3FN,
    F8E5M2FNUZ,
    F8E4M3FNUZ,
    F8E4M3B11FNUZ,
    F8E3M4,
    F4E2M1FN,
    F6E2M3FN,
    F6E3M2FN,
    F8E8M0FNU,
}

impl FloatKind {
    /// Every kind, for lookups by keyword.
    pub const ALL: [FloatKind; 18] = [
        FloatKind::BF16,
        FloatKind::F16,
        FloatKind::F32,
        FloatKind::F64,
        FloatKind::F80,
        FloatKind::F128,
        FloatKind::TF32,
        FloatKind::F8E5M2,
        FloatKind::F8E4M3,
        FloatKind::F8E4M3FN,
        FloatKind::F8E5M2FNUZ,
        FloatKind::F8E4M3FNUZ,
        FloatKind::F8E4M3B11FNUZ,
        FloatKind::F8E3M4,
        FloatKind::F4E2M1FN,
        FloatKind::F6E2M3FN,
        FloatKind::F6E3M2FN,
        FloatKind::F8E8M0FNU,
    ];

    /// The keyword MLIR uses for the type.
    pub fn keyword(self) -> &'static str {
        match self {
            FloatKind::BF16 => "bf16",
            FloatKind::F16 => "f16",
            FloatKind::F32 => "f32",
            FloatKind::F64 => "f64",
            FloatKind::F80 => "f80",
            FloatKind::F128 => "f128",
            FloatKind::TF32 => "tf32",
            FloatKind::F8E5M2 => "f8E5M2",
            FloatKind::F8E4M3 => "f8E4M3",
            FloatKind::F8E4M3FN => "f8E4M3FN",
            FloatKind::F8E5M2FNUZ => "f8E5M2FNUZ",
            FloatKind::F8E4M3FNUZ => "f8E4M3FNUZ",
            FloatKind::F8E4M3B11FNUZ => "f8E4M3B11FNUZ",
            FloatKind::F8E3M4 => "f8E3M4",
            FloatKind::F4E2M1FN => "f4E2M1FN",
            FloatKind::F6E2M3FN => "f6E2M3FN",
            FloatKind::F6E3M2FN => "f6E3M2FN",
            FloatKind::F8E8M0FNU => "f8E8M0FNU",
        }
    }

    /// Bits of the value (APFloat's bitcast width).
    pub fn bit_width(self) -> u32 {
        match self {
            FloatKind::BF16 | FloatKind::F16 => 16,
            FloatKind::F32 => 32,
            FloatKind::F64 => 64,
            FloatKind::F80 => 80,
            FloatKind::F128 => 128,
            FloatKind::TF32 => 19,
            FloatKind::F4E2M1FN => 4,
            FloatKind::F6E2M3FN | FloatKind::F6E3M2FN => 6,
            _ => 8,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    Integer {
        width: u32,
        signedness: Signedness,
    },
    Index,
    Float(FloatKind),
    Function {
        inputs: Box<[TypeId]>,
        results: Box<[TypeId]>,
    },
    Complex(TypeId),
    /// `layout` is what the file stored (the default is an identity affine map attribute).
    MemRef {
        shape: Box<[i64]>,
        elem: TypeId,
        layout: AttrId,
        memory_space: Option<AttrId>,
    },
    UnrankedMemRef {
        elem: TypeId,
        memory_space: Option<AttrId>,
    },
    RankedTensor {
        shape: Box<[i64]>,
        elem: TypeId,
        encoding: Option<AttrId>,
    },
    UnrankedTensor {
        elem: TypeId,
    },
    /// `scalable` is `None` or one flag per dimension.
    Vector {
        shape: Box<[i64]>,
        scalable: Option<Box<[bool]>>,
        elem: TypeId,
    },
    Tuple(Box<[TypeId]>),
    None,
    /// A type kept as its full textual form (`!dialect.type<...>`).
    Text {
        dialect: DialectId,
        text: Sym,
    },
    /// A type in its dialect's own bytecode encoding, which rtx does not interpret.
    Custom {
        dialect: DialectId,
        payload: Blob,
    },
}

impl Type {
    /// The shape of a ranked shaped type (tensor, memref, vector).
    pub fn shape(&self) -> Option<&[i64]> {
        match self {
            Type::MemRef { shape, .. } | Type::RankedTensor { shape, .. } | Type::Vector { shape, .. } => Some(shape),
            _ => None,
        }
    }

    /// The element type of a shaped type.
    pub fn element_type(&self) -> Option<TypeId> {
        match self {
            Type::MemRef { elem, .. }
            | Type::UnrankedMemRef { elem, .. }
            | Type::RankedTensor { elem, .. }
            | Type::UnrankedTensor { elem }
            | Type::Vector { elem, .. } => Some(*elem),
            _ => None,
        }
    }
}
