//! [`OpAttrs`]: the attributes of one op invocation, by name — what `corert.executeop`'s
//! `op_attrs` and `op_func_attrs` hold, what the `corert.op_attrs_set.*` kernels build, and
//! what an eager caller passes. Printed as TFRT prints them (`OpAttrs contains 2 entries:`).

use std::fmt;

use rtx_kernel::attribute::{Aggregate, AttributeType};
use rtx_kernel::tensor::format_element;
use rtx_kernel::{Attribute, AttributeError, DType};

/// How many elements of an array attribute are printed before `...`.
const PRINTED_ELEMENTS: usize = 5;

/// One attribute value.
#[derive(Clone, Debug, PartialEq)]
pub enum OpAttr {
    Bool(bool),
    I32(i32),
    I64(i64),
    /// The bits of an `f16`.
    F16(u16),
    F32(f32),
    F64(f64),
    /// An element type.
    DType(DType),
    /// A string (TFRT stores it as an array of characters).
    String(String),
    /// Fixed-size elements of one type, little-endian, back to back.
    Array {
        dtype: DType,
        bytes: Vec<u8>,
    },
    /// Element types.
    DTypeArray(Vec<DType>),
    /// Dimensions (-1 unknown), or `None` for an unranked shape.
    Shape(Option<Vec<i64>>),
    /// Dense elements.
    Dense {
        dtype: DType,
        shape: Vec<i64>,
        data: Vec<u8>,
    },
    /// Values of mixed kinds.
    Aggregate(Vec<OpAttr>),
    /// The name of a function (an op's function attribute).
    Func(String),
}

impl OpAttr {
    /// TFRT's name of the attribute's type, as its print shows it.
    pub fn type_name(&self) -> &'static str {
        match self {
            OpAttr::Bool(_) => "BOOL",
            OpAttr::I32(_) => "I32",
            OpAttr::I64(_) => "I64",
            OpAttr::F16(_) => "F16",
            OpAttr::F32(_) => "F32",
            OpAttr::F64(_) => "F64",
            OpAttr::DType(_) => "DTYPE",
            OpAttr::String(_) => "CHAR",
            OpAttr::Array { dtype, .. } => type_name(*dtype),
            OpAttr::DTypeArray(_) => "DTYPE",
            OpAttr::Shape(_) => "SHAPE",
            OpAttr::Dense { .. } => "DENSE",
            OpAttr::Aggregate(_) => "AGGREGATE",
            OpAttr::Func(_) => "FUNC",
        }
    }

    /// The elements of an array of `T`s (a one-element array for a scalar of `T`'s type).
    pub fn elements<T: rtx_kernel::tensor::Element>(&self) -> Option<Vec<T>> {
        match self {
            OpAttr::Array { dtype, bytes } if *dtype == T::DTYPE => {
                let size = dtype.byte_size()?;
                Some(bytes.chunks_exact(size).map(T::read).collect())
            }
            _ => None,
        }
    }

    /// The attribute in MLIR's syntax, as a kernel's attribute would be written (floats in hex,
    /// so that they are exact); `None` for a function name, which names nothing in MLIR alone.
    pub fn mlir_text(&self) -> Option<String> {
        Some(match self {
            OpAttr::Bool(v) => v.to_string(),
            OpAttr::I32(v) => format!("{v} : i32"),
            OpAttr::I64(v) => format!("{v} : i64"),
            OpAttr::F16(bits) => format!("0x{bits:04X} : f16"),
            OpAttr::F32(v) => format!("0x{:08X} : f32", v.to_bits()),
            OpAttr::F64(v) => format!("0x{:016X} : f64", v.to_bits()),
            OpAttr::DType(dtype) => dtype.mlir_type().to_owned(),
            OpAttr::String(text) => quoted(text),
            OpAttr::Array { dtype, bytes } => {
                let size = dtype.byte_size()?;
                let items: Option<Vec<String>> = bytes.chunks_exact(size).map(|e| element_text(*dtype, e)).collect();
                format!("[{}]", items?.join(", "))
            }
            OpAttr::DTypeArray(dtypes) => {
                format!("[{}]", dtypes.iter().map(|d| d.mlir_type()).collect::<Vec<_>>().join(", "))
            }
            OpAttr::Shape(None) => "#corert.shape<*>".to_owned(),
            OpAttr::Shape(Some(dims)) => {
                let dims: Vec<String> =
                    dims.iter().map(|&d| if d < 0 { "?".to_owned() } else { d.to_string() }).collect();
                format!("#corert.shape<{}>", dims.join("x"))
            }
            OpAttr::Dense { dtype, shape, data } => {
                let mut ty: String = shape.iter().map(|d| format!("{d}x")).collect();
                ty.push_str(dtype.mlir_type());
                let body = if *dtype == DType::I1 {
                    let bits: Vec<&str> = data.iter().map(|&b| if b != 0 { "true" } else { "false" }).collect();
                    format!("[{}]", bits.join(", "))
                } else {
                    let hex: String = data.iter().map(|b| format!("{b:02X}")).collect();
                    format!("\"0x{hex}\"")
                };
                format!("dense<{body}> : tensor<{ty}>")
            }
            OpAttr::Aggregate(elements) => {
                let items: Option<Vec<String>> = elements.iter().map(OpAttr::mlir_text).collect();
                format!("[{}]", items?.join(", "))
            }
            OpAttr::Func(_) => return None,
        })
    }

    /// Decodes a BEF attribute of kind `kind`.
    pub fn from_bef(kind: AttributeType, attribute: Attribute<'_>) -> Result<OpAttr, AttributeError> {
        let unsupported = |what: String| AttributeError::Malformed { offset: attribute.offset(), what };
        Ok(match kind {
            AttributeType::Scalar(dtype) => match dtype {
                DType::I1 => OpAttr::Bool(attribute.scalar::<bool>()?),
                DType::I32 => OpAttr::I32(attribute.scalar()?),
                DType::I64 => OpAttr::I64(attribute.scalar()?),
                DType::F16 => OpAttr::F16(attribute.scalar()?),
                DType::F32 => OpAttr::F32(attribute.scalar()?),
                DType::F64 => OpAttr::F64(attribute.scalar()?),
                DType::String => OpAttr::String(attribute.string()?.to_owned()),
                other => return Err(unsupported(format!("an op attribute cannot be a {other:?} scalar"))),
            },
            AttributeType::Type => OpAttr::DType(attribute.dtype()?),
            AttributeType::Array(dtype) => OpAttr::Array { dtype, bytes: attribute.raw_array(dtype)?.to_vec() },
            AttributeType::TypeArray => OpAttr::DTypeArray(attribute.dtype_array()?),
            AttributeType::Shape => OpAttr::Shape(attribute.shape()?),
            AttributeType::Dense => {
                let dense = attribute.dense()?;
                OpAttr::Dense { dtype: dense.dtype, shape: dense.shape, data: dense.data.to_vec() }
            }
            AttributeType::Aggregate => {
                let aggregate = attribute.aggregate()?;
                let elements = (0..aggregate.len())
                    .map(|i| OpAttr::from_bef(aggregate.kind(i)?, aggregate.get(i)?))
                    .collect::<Result<_, _>>()?;
                OpAttr::Aggregate(elements)
            }
            AttributeType::Func | AttributeType::SymbolRef => {
                return Err(unsupported("an op attribute cannot be a function reference".to_owned()))
            }
        })
    }
}

/// `text` as an MLIR string literal.
fn quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for byte in text.bytes() {
        match byte {
            b'"' | b'\\' => out.push_str(&format!("\\{}", char::from(byte))),
            0x20..=0x7E => out.push(char::from(byte)),
            _ => out.push_str(&format!("\\{byte:02X}")),
        }
    }
    out.push('"');
    out
}

/// One element of an array attribute in MLIR's syntax.
fn element_text(dtype: DType, bytes: &[u8]) -> Option<String> {
    use DType::*;
    let ty = dtype.mlir_type();
    Some(match dtype {
        I1 => (bytes[0] != 0).to_string(),
        F16 | BF16 => format!("0x{:04X} : {ty}", u16::from_le_bytes(bytes.try_into().ok()?)),
        F32 => format!("0x{:08X} : {ty}", u32::from_le_bytes(bytes.try_into().ok()?)),
        F64 => format!("0x{:016X} : {ty}", u64::from_le_bytes(bytes.try_into().ok()?)),
        UI8 | UI16 | UI32 | UI64 | I8 | I16 | I32 | I64 => {
            format!("{} : {ty}", format_element(dtype, bytes)?)
        }
        _ => return None,
    })
}

/// TFRT's `OpAttrType` name of an element type.
fn type_name(dtype: DType) -> &'static str {
    use DType::*;
    match dtype {
        UI8 => "UI8",
        UI16 => "UI16",
        UI32 => "UI32",
        UI64 => "UI64",
        I1 => "BOOL",
        I8 => "I8",
        I16 => "I16",
        I32 => "I32",
        I64 => "I64",
        F32 => "F32",
        F64 => "F64",
        Complex64 => "COMPLEX64",
        Complex128 => "COMPLEX128",
        F16 => "F16",
        BF16 => "BF16",
        String => "CHAR",
        Resource => "RESOURCE",
        Variant => "VARIANT",
        QUI8 => "QUI8",
        QUI16 => "QUI16",
        QI8 => "QI8",
        QI16 => "QI16",
        QI32 => "QI32",
    }
}

/// Attributes by name, in the order they were set; setting a name twice keeps the first value,
/// as TFRT does.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpAttrs {
    entries: Vec<(String, OpAttr)>,
}

impl OpAttrs {
    pub fn new() -> OpAttrs {
        OpAttrs::default()
    }

    /// Sets `name` unless it is set already; returns whether it was set.
    pub fn set(&mut self, name: &str, value: OpAttr) -> bool {
        if self.get(name).is_some() {
            return false;
        }
        self.entries.push((name.to_owned(), value));
        true
    }

    pub fn get(&self, name: &str) -> Option<&OpAttr> {
        self.entries.iter().find(|(key, _)| key == name).map(|(_, value)| value)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &OpAttr)> {
        self.entries.iter().map(|(key, value)| (key.as_str(), value))
    }

    /// The same attributes ordered by name (what `tfrt_test.corert.op_attrs_freeze` keeps).
    pub fn sorted(&self) -> OpAttrs {
        let mut entries = self.entries.clone();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        OpAttrs { entries }
    }

    /// Adds the `[key, value]` pairs of a BEF aggregate (`corert.executeop`'s `op_attrs`); with
    /// `functions`, each value is a function name (`op_func_attrs`). An empty array has no pairs.
    pub fn add_bef_pairs(&mut self, pairs: Aggregate<'_>, functions: bool) -> Result<(), AttributeError> {
        for i in 0..pairs.len() {
            let pair = pairs.get(i)?.aggregate()?;
            if pair.len() != 2 {
                return Err(AttributeError::Malformed {
                    offset: pairs.get(i)?.offset(),
                    what: format!("op attribute {i} is not a [key, value] pair"),
                });
            }
            let key = pair.get(0)?.string()?;
            let value = if functions {
                OpAttr::Func(pair.get(1)?.string()?.to_owned())
            } else {
                OpAttr::from_bef(pair.kind(1)?, pair.get(1)?)?
            };
            self.set(key, value);
        }
        Ok(())
    }
}

/// `OpAttrs is empty`, or `OpAttrs contains N entries:` and a line per entry in name order, then
/// an empty line — TFRT's print, newlines included.
impl fmt::Display for OpAttrs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.entries.is_empty() {
            return writeln!(f, "OpAttrs is empty");
        }
        writeln!(f, "OpAttrs contains {} entries:", self.entries.len())?;
        for (key, value) in self.sorted().entries {
            write!(f, "  '{key}' type={} value=", value.type_name())?;
            write_value(f, &value)?;
            writeln!(f)?;
        }
        writeln!(f)
    }
}

/// At most [`PRINTED_ELEMENTS`] items as `[a, b, c...]`.
fn write_items<T>(
    f: &mut fmt::Formatter<'_>,
    items: &[T],
    item: impl Fn(&mut fmt::Formatter<'_>, &T) -> fmt::Result,
) -> fmt::Result {
    write!(f, "[")?;
    for (i, element) in items.iter().take(PRINTED_ELEMENTS).enumerate() {
        if i > 0 {
            write!(f, ", ")?;
        }
        item(f, element)?;
    }
    if items.len() > PRINTED_ELEMENTS {
        write!(f, "...")?;
    }
    write!(f, "]")
}

/// One element of `dtype` as TFRT's attribute print shows it: bytes (`i8`, `u8`) as characters.
fn write_element(f: &mut fmt::Formatter<'_>, dtype: DType, bytes: &[u8]) -> fmt::Result {
    match dtype {
        DType::I8 | DType::UI8 => write!(f, "{}", char::from(bytes[0])),
        _ => write!(f, "{}", format_element(dtype, bytes).unwrap_or_default()),
    }
}

fn write_dense_summary(f: &mut fmt::Formatter<'_>, dtype: DType, shape: &[i64]) -> fmt::Result {
    let count: i64 = shape.iter().product();
    write!(f, "dtype={}, rank={}, elt_count={count}", type_name(dtype), shape.len())
}

fn write_value(f: &mut fmt::Formatter<'_>, value: &OpAttr) -> fmt::Result {
    match value {
        OpAttr::Bool(v) => write!(f, "{}", u8::from(*v)),
        OpAttr::I32(v) => write!(f, "{v}"),
        OpAttr::I64(v) => write!(f, "{v}"),
        OpAttr::F16(bits) => write!(f, "{}", format_element(DType::F16, &bits.to_le_bytes()).unwrap_or_default()),
        OpAttr::F32(v) => write!(f, "{}", format_element(DType::F32, &v.to_le_bytes()).unwrap_or_default()),
        OpAttr::F64(v) => write!(f, "{}", format_element(DType::F64, &v.to_le_bytes()).unwrap_or_default()),
        OpAttr::DType(dtype) => write!(f, "{}", type_name(*dtype)),
        OpAttr::String(text) => write_items(f, text.as_bytes(), |f, b| write!(f, "{}", char::from(*b))),
        OpAttr::Array { dtype, bytes } => {
            let size = dtype.byte_size().unwrap_or(1).max(1);
            let elements: Vec<&[u8]> = bytes.chunks_exact(size).collect();
            write_items(f, &elements, |f, e| write_element(f, *dtype, e))
        }
        OpAttr::DTypeArray(dtypes) => write_items(f, dtypes, |f, d| write!(f, "{}", type_name(*d))),
        OpAttr::Shape(None) => write!(f, "<*>"),
        OpAttr::Shape(Some(dims)) => {
            let dims: Vec<String> = dims.iter().map(i64::to_string).collect();
            write!(f, "<{}>", dims.join("x"))
        }
        OpAttr::Dense { dtype, shape, .. } => write_dense_summary(f, *dtype, shape),
        OpAttr::Aggregate(elements) => {
            write!(f, "elt_count={} [", elements.len())?;
            for (i, element) in elements.iter().enumerate() {
                if i > 0 {
                    write!(f, ", ")?;
                }
                write!(f, "{{")?;
                match element {
                    OpAttr::Dense { .. } | OpAttr::Aggregate(_) => write_value(f, element)?,
                    _ => write!(f, "unknown")?,
                }
                write!(f, "}}")?;
            }
            write!(f, "]")
        }
        OpAttr::Func(name) => {
            write_items(f, name.as_bytes(), |f, b| write!(f, "FUNC function_name: {}", char::from(*b)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_print_sorted_with_tfrt_formats() {
        let mut attrs = OpAttrs::new();
        assert_eq!(attrs.to_string(), "OpAttrs is empty\n");
        let ints: Vec<u8> = (1..=8i32).flat_map(i32::to_le_bytes).collect();
        attrs.set("h", OpAttr::Array { dtype: DType::I32, bytes: ints });
        attrs.set("value", OpAttr::F32(1.0));
        attrs.set("b", OpAttr::Bool(false));
        assert!(!attrs.set("b", OpAttr::Bool(true)), "the first value stays");
        attrs.set("s", OpAttr::String("abcdefg".into()));
        attrs.set("shape", OpAttr::Shape(Some(vec![1, -1, 3])));
        attrs.set("t", OpAttr::DType(DType::String));
        attrs.set(
            "agg",
            OpAttr::Aggregate(vec![
                OpAttr::Dense { dtype: DType::I32, shape: vec![2, 2], data: vec![0; 16] },
                OpAttr::I32(1),
            ]),
        );
        attrs.set("f", OpAttr::Func("fn".into()));
        assert_eq!(
            attrs.to_string(),
            "OpAttrs contains 8 entries:\n  'agg' type=AGGREGATE value=elt_count=2 [{dtype=I32, rank=2, elt_count=4}, \
             {unknown}]\n  'b' type=BOOL value=0\n  'f' type=FUNC value=[FUNC function_name: f, FUNC function_name: \
             n]\n  'h' type=I32 value=[1, 2, 3, 4, 5...]\n  's' type=CHAR value=[a, b, c, d, e...]\n  'shape' \
             type=SHAPE value=<1x-1x3>\n  't' type=DTYPE value=CHAR\n  'value' type=F32 value=1.000000e+00\n\n"
        );
        assert_eq!(attrs.get("h").and_then(|h| h.elements::<i32>()).map(|v| v.len()), Some(8));
        assert_eq!(attrs.get("h").and_then(|h| h.elements::<i64>()), None);
    }
}
