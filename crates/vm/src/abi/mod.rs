//! The IREE function ABI: the strings a compiled function carries about how to call it.
//!
//! * [`cconv`]: the calling-convention string of every function (`0iI_r`), which decides how
//!   values are packed into registers and marshalling buffers;
//! * [`declaration`]: the `iree.abi.declaration` / `iree.abi.model` reflection attributes that
//!   describe an export in source terms (`sync func @f(%input0: tensor<4xf32>) -> ...`);
//! * [`mangling`]: the older length-prefixed signature encodings (raw `I…R…` buffer signatures and
//!   structured index paths, `sip`) that tools and bindings may still attach;
//! * [`reflection`]: everything of the above that one function's attributes hold, gathered once.
//!
//! All of it is text written by a compiler or a user, so every parser here rejects malformed input
//! with an [`AbiError`] that names the text and the byte offset of the problem.

pub(crate) mod cconv;
pub(crate) mod declaration;
pub(crate) mod mangling;
pub(crate) mod reflection;

use std::fmt;

pub use cconv::{plain_kinds, CallingConvention, CconvItem, RegisterLayout, RegisterSlot, ValueKind};
pub use declaration::{AbiModel, AbiType, ElementType, FunctionDeclaration, NamedType, ScalarType, TensorType};
pub use mangling::{BufferType, MangledScalar, RawSignature, RawType, SipKey, SipSignature, SipValue};
pub use reflection::{DeclarationAttr, FunctionReflection};

/// Which kind of ABI text an [`AbiError`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbiText {
    CallingConvention,
    Declaration,
    RawSignature,
    SipSignature,
}

impl fmt::Display for AbiText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AbiText::CallingConvention => "calling convention",
            AbiText::Declaration => "ABI declaration",
            AbiText::RawSignature => "raw signature",
            AbiText::SipSignature => "SIP signature",
        })
    }
}

/// An ABI string could not be understood, or two descriptions of one function disagree.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AbiError {
    /// The text is malformed at byte `offset` (counted from the start of `text`).
    #[error("{what} `{text}`, byte {offset}: {message}")]
    Syntax { what: AbiText, text: String, offset: usize, message: String },
    /// A reflection attribute holds a value this runtime does not know (an unknown ABI model, a
    /// signature version other than 1).
    #[error("attribute `{key}` = `{value}`: {message}")]
    Attribute { key: String, value: String, message: String },
    /// A programmatically built signature is inconsistent (two values at one index path, ...).
    #[error("building a {what}: {message}")]
    Build { what: AbiText, message: String },
    /// The declaration and the calling convention of one function describe different values.
    #[error("declaration `{declaration}` does not match calling convention `{cconv}`: {message}")]
    Mismatch { declaration: String, cconv: String, message: String },
}

impl AbiError {
    fn syntax(what: AbiText, text: &str, offset: usize, message: impl Into<String>) -> AbiError {
        AbiError::Syntax { what, text: text.to_owned(), offset, message: message.into() }
    }

    fn attribute(key: &str, value: &str, message: impl Into<String>) -> AbiError {
        AbiError::Attribute { key: key.to_owned(), value: value.to_owned(), message: message.into() }
    }
}

/// One dimension of a shape, in declarations (`tensor<?x4xf32>`) and raw signatures (`d-1d4`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    Static(u64),
    /// Known only at run time: `?` in a declaration, `-1` in a raw signature.
    Dynamic,
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Static(size) => write!(f, "{size}"),
            Dim::Dynamic => f.write_str("?"),
        }
    }
}
