//! NumPy `.npy` arrays as `iree-run-module` reads them (`--input=@a.npy`) and writes them
//! (`--output=@f.npy`, `+f.npy` appends another array to the file).
//!
//! The reader accepts what IREE's accepts — format versions 1 to 3, a header dict with keys in
//! any order, little-endian or byte-order-free descrs, C order — and refuses the rest with
//! IREE's messages: big-endian data (IREE does not swap bytes, so neither do we: the tensor
//! would differ from the one `iree-run-module` passes), Fortran order, object and string
//! dtypes. The writer produces IREE's bytes exactly: a version 1 header (2 when the dict
//! needs it) padded with spaces to 64 bytes, then the tensor's bytes.
//!
//! Kernel graphs also take and return tensors of strings (ONNX's STRING), which IREE's
//! programs never do: [`decode_array`] reads numpy's fixed-width string dtypes (`<U`, UTF-32;
//! `S`, bytes, which must be UTF-8) where [`decode`] refuses them as IREE does, and
//! [`encode_strings`] writes `<U`, what `np.save` writes for an array of `str`.

use super::element_type::{ElementType, NumericalType};
use super::tensor_io::{c_atoi_u32, c_atoi_u64, c_trim, view_byte_length, HostTensor, StringArray, MAX_RANK};
use rtx_host::{Diagnostic, StatusCode};

const MAGIC: &[u8; 6] = b"\x93NUMPY";

fn invalid(message: impl Into<String>) -> Diagnostic {
    Diagnostic::new(StatusCode::InvalidArgument, message)
}

fn end_of_file(context: &str) -> Diagnostic {
    Diagnostic::new(StatusCode::OutOfRange, format!("end-of-file encountered during read; {context}"))
}

/// An array of a `.npy` file: numbers, or strings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Array {
    Tensor(HostTensor),
    Strings(StringArray),
}

/// Reads the array at the start of `bytes`; returns it and how many bytes it took, so that the
/// next array of a concatenated file starts there. A string array is refused, as IREE refuses
/// it.
pub fn decode(bytes: &[u8]) -> Result<(HostTensor, usize), Diagnostic> {
    match decode_array(bytes)? {
        (Array::Tensor(tensor), used) => Ok((tensor, used)),
        (Array::Strings(_), _) => Err(Diagnostic::new(StatusCode::Unimplemented, "unsupported data type U")),
    }
}

/// [`decode`], with string arrays read too.
pub fn decode_array(bytes: &[u8]) -> Result<(Array, usize), Diagnostic> {
    if bytes.is_empty() {
        return Err(Diagnostic::new(StatusCode::OutOfRange, "end-of-file"));
    }
    let prefix = bytes.get(..8).ok_or_else(|| end_of_file("unable to read entire header prefix"))?;
    if &prefix[..6] != MAGIC {
        return Err(invalid("npy header magic mismatch"));
    }
    let (major, minor) = (prefix[6], prefix[7]);
    if major == 0 || major > 3 {
        return Err(Diagnostic::new(StatusCode::Unimplemented, format!("npy version {major}.{minor} not supported")));
    }
    let length_size = if major == 1 { 2 } else { 4 };
    let length_bytes = bytes.get(8..8 + length_size).ok_or_else(|| {
        end_of_file(&format!("failed to read version {major}.{minor} {length_size}-byte header length"))
    })?;
    let header_length = length_bytes.iter().rev().fold(0usize, |length, &b| (length << 8) | usize::from(b));
    let header_start = 8 + length_size;
    let header = bytes
        .get(header_start..header_start + header_length)
        .ok_or_else(|| end_of_file(&format!("failed to read header string of {header_length} bytes")))?;
    let header = String::from_utf8_lossy(header);
    let (shape, descr, row_major) = parse_header(c_trim(&header))?;
    if !row_major {
        return Err(Diagnostic::new(StatusCode::Unimplemented, "unimplemented encoding type size calculation"));
    }
    let data_start = header_start + header_length;
    let (element_type, string_width) = match descr {
        Descr::Element(element_type) => (element_type, None),
        Descr::Utf32(chars) => (ElementType::NONE, Some((chars, 4))),
        Descr::Bytes(width) => (ElementType::NONE, Some((width, 1))),
    };
    let length = match string_width {
        None => view_byte_length(&shape, element_type)?,
        Some((width, unit)) => width
            .checked_mul(unit)
            .and_then(|size| shape.iter().try_fold(size, |size, &dim| size.checked_mul(dim)))
            .ok_or_else(|| invalid("npy string array size overflows"))?,
    };
    let data = data_start
        .checked_add(length)
        .and_then(|end| bytes.get(data_start..end))
        .ok_or_else(|| end_of_file(&format!("failed to read npy contents of {length} bytes")))?;
    let array = match string_width {
        None => Array::Tensor(HostTensor { shape, element_type, data: data.to_vec() }),
        Some((width, unit)) => Array::Strings(StringArray { strings: decode_strings(data, width, unit)?, shape }),
    };
    Ok((array, data_start + length))
}

/// The strings of fixed-width elements of `width` units of `unit` bytes (4: UTF-32LE code
/// points, 1: bytes), each ending at its first NUL as numpy reads them.
fn decode_strings(data: &[u8], width: usize, unit: usize) -> Result<Vec<String>, Diagnostic> {
    data.chunks_exact(width * unit)
        .enumerate()
        .map(|(index, element)| {
            let text = if unit == 4 {
                element
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .take_while(|&c| c != 0)
                    .map(|c| char::from_u32(c).ok_or(c))
                    .collect::<Result<String, u32>>()
                    .map_err(|c| {
                        invalid(format!("string element {index} holds {c:#x}, which is not a Unicode scalar"))
                    })?
            } else {
                let end = element.iter().position(|&b| b == 0).unwrap_or(element.len());
                String::from_utf8(element[..end].to_vec())
                    .map_err(|_| invalid(format!("bytes element {index} is not UTF-8")))?
            };
            Ok(text)
        })
        .collect()
}

/// What an array's `descr` says its elements are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Descr {
    Element(ElementType),
    /// `<U8`: strings of at most this many code points, in UTF-32LE.
    Utf32(usize),
    /// `|S8`: strings of at most this many bytes.
    Bytes(usize),
}

/// The dict `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`: shape, element
/// type, and whether a `fortran_order: False` said the data is row-major.
fn parse_header(header: &str) -> Result<(Vec<usize>, Descr, bool), Diagnostic> {
    let mut rest = header.strip_prefix('{').unwrap_or(header);
    rest = rest.strip_suffix('}').unwrap_or(rest);
    let mut shape = Vec::new();
    let mut descr = Descr::Element(ElementType::NONE);
    let mut row_major = false;
    while !rest.is_empty() {
        let (key, value, remainder) = next_key_value(rest)?;
        rest = remainder;
        match key {
            "descr" => descr = parse_descr(value)?,
            "fortran_order" if value == "False" => row_major = true,
            "fortran_order" => {
                return Err(Diagnostic::new(StatusCode::Unimplemented, "fortran order arrays not supported"))
            }
            "shape" => shape = parse_shape(value)?,
            _ => {}
        }
    }
    Ok((shape, descr, row_major))
}

/// Splits `'key': value, rest` where value is `True`, `False`, `'text'` or `(tuple)`.
fn next_key_value(dict: &str) -> Result<(&str, &str, &str), Diagnostic> {
    let malformed = || invalid("malformed header dict");
    let (key, rest) = dict.split_once(':').ok_or_else(malformed)?;
    let key = key.strip_prefix('\'').unwrap_or(key);
    let key = key.strip_suffix('\'').unwrap_or(key);
    let rest = c_trim(rest);
    let (value, rest) = if let Some(rest) = rest.strip_prefix("True") {
        ("True", rest)
    } else if let Some(rest) = rest.strip_prefix("False") {
        ("False", rest)
    } else if let Some(rest) = rest.strip_prefix('\'') {
        rest.split_once('\'').unwrap_or((rest, ""))
    } else if let Some(rest) = rest.strip_prefix('(') {
        rest.split_once(')').unwrap_or((rest, ""))
    } else {
        return Err(malformed());
    };
    let rest = rest.strip_prefix(',').ok_or_else(malformed)?;
    Ok((key, value, c_trim(rest)))
}

/// `<U5` and `|S5` (string dtypes), or an element type ([`descr_to_element_type`]).
fn parse_descr(descr: &str) -> Result<Descr, Diagnostic> {
    let body = descr.strip_prefix(['|', '=', '<']).unwrap_or(descr);
    // A width of 0 holds nothing numpy writes (its empty strings are `<U1`).
    let width =
        |text: &str| text.parse::<usize>().ok().filter(|&w| w > 0).ok_or_else(|| invalid("invalid descr byte width"));
    if let Some(chars) = body.strip_prefix('U') {
        return Ok(Descr::Utf32(width(chars)?));
    }
    if let Some(bytes) = body.strip_prefix('S') {
        return Ok(Descr::Bytes(width(bytes)?));
    }
    descr_to_element_type(descr).map(Descr::Element)
}

/// `<f4`, `|b1`, `i8`, ...: kind and byte width; `>` (big-endian) is refused.
fn descr_to_element_type(descr: &str) -> Result<ElementType, Diagnostic> {
    let body = match descr.as_bytes().first() {
        Some(b'|' | b'=' | b'<') => &descr[1..],
        Some(b'>') => {
            return Err(Diagnostic::new(
                StatusCode::Unimplemented,
                format!("big-endian data type '{descr}' unsupported"),
            ))
        }
        _ => descr,
    };
    let kind = body.chars().next().ok_or_else(|| invalid("descr missing kind"))?;
    let numerical_type = match kind {
        'b' => NumericalType::BOOLEAN,
        'i' => NumericalType::INTEGER_SIGNED,
        'u' => NumericalType::INTEGER_UNSIGNED,
        'f' => NumericalType::FLOAT_IEEE,
        'c' => NumericalType::FLOAT_COMPLEX,
        'V' => NumericalType::UNKNOWN,
        _ => return Err(Diagnostic::new(StatusCode::Unimplemented, format!("unsupported data type {kind}"))),
    };
    let width = c_atoi_u32(&body[kind.len_utf8()..]).ok_or_else(|| invalid("invalid descr byte width"))?;
    // IREE does not bound the width: `* 8` may spill into the code's reserved bits, as there.
    Ok(ElementType((u32::from(numerical_type.0) << 24) | width.wrapping_mul(8)))
}

/// `2, 3` (a trailing comma allowed, empty for rank 0).
fn parse_shape(text: &str) -> Result<Vec<usize>, Diagnostic> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let dims = text.strip_suffix(',').unwrap_or(text);
    let rank = dims.bytes().filter(|b| *b == b',').count() + 1;
    if rank > MAX_RANK {
        return Err(invalid(format!("shape rank {rank} too large; be reasonable please")));
    }
    let mut parts = text.splitn(rank + 1, ',');
    (0..rank)
        .map(|index| {
            let dim = c_trim(parts.next().unwrap_or(""));
            c_atoi_u64(dim)
                .and_then(|value| usize::try_from(value).ok())
                .ok_or_else(|| invalid(format!("invalid dimension {index} value {dim}")))
        })
        .collect()
}

/// The bytes `iree-run-module --output=@f.npy` writes for `tensor`.
pub fn encode(tensor: &HostTensor) -> Result<Vec<u8>, Diagnostic> {
    let element_type = tensor.element_type;
    let kind = match element_type.numerical_type() {
        NumericalType::UNKNOWN => 'V',
        NumericalType::BOOLEAN => 'b',
        NumericalType::INTEGER | NumericalType::INTEGER_SIGNED => 'i',
        NumericalType::INTEGER_UNSIGNED => 'u',
        NumericalType::FLOAT_IEEE => 'f',
        NumericalType::FLOAT_COMPLEX => 'c',
        // NumPy has no bf16 or 8-bit float dtypes.
        _ => return Err(Diagnostic::new(StatusCode::Unimplemented, "unsupported data encoding")),
    };
    let width = element_type.dense_byte_count();
    let order = if width == 1 { '|' } else { '<' };
    Ok(with_header(&format!("{order}{kind}{width}"), &tensor.shape, &tensor.data))
}

/// `data` after the header of an array of `shape` and numpy type `descr`: IREE's layout, a
/// version 1 header (2 when the dict needs it) padded with spaces to 64 bytes.
fn with_header(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let trailing = if dims.len() == 1 { "," } else { "" };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({}{trailing}), }}", dims.join(", "));
    let version_2 = dict.len() > 65535;
    let length_size = if version_2 { 4 } else { 2 };
    let unpadded = MAGIC.len() + 2 + length_size + dict.len() + 1;
    let padding = unpadded.next_multiple_of(64) - unpadded;
    let header_length = dict.len() + padding + 1;
    let mut bytes = Vec::with_capacity(unpadded + padding + data.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&[if version_2 { 2 } else { 1 }, 0]);
    if version_2 {
        bytes.extend_from_slice(&(header_length as u32).to_le_bytes());
    } else {
        bytes.extend_from_slice(&(header_length as u16).to_le_bytes());
    }
    bytes.extend_from_slice(dict.as_bytes());
    bytes.resize(bytes.len() + padding, b' ');
    bytes.push(b'\n');
    bytes.extend_from_slice(data);
    bytes
}

/// The bytes `np.save` writes for an array of `str`: `<U` as wide as the longest string (at
/// least 1), each element's code points in UTF-32LE padded with NULs.
pub fn encode_strings(array: &StringArray) -> Vec<u8> {
    let width = array.strings.iter().map(|s| s.chars().count()).max().unwrap_or(0).max(1);
    let mut data = Vec::with_capacity(array.strings.len() * width * 4);
    for string in &array.strings {
        let start = data.len();
        for c in string.chars() {
            data.extend_from_slice(&u32::from(c).to_le_bytes());
        }
        data.resize(start + width * 4, 0);
    }
    with_header(&format!("<U{width}"), &array.shape, &data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(version: u8, dict: &str) -> Vec<u8> {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&[version, 0]);
        if version == 1 {
            bytes.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        } else {
            bytes.extend_from_slice(&(dict.len() as u32).to_le_bytes());
        }
        bytes.extend_from_slice(dict.as_bytes());
        bytes
    }

    #[test]
    fn encoded_arrays_decode_to_themselves() {
        let tensor = HostTensor { shape: vec![2, 2], element_type: ElementType::SINT_32, data: (0..16).collect() };
        let bytes = encode(&tensor).unwrap();
        assert_eq!(bytes.len(), 128 + 16);
        assert_eq!(&bytes[..10], b"\x93NUMPY\x01\x00\x76\x00");
        assert!(bytes[10..].starts_with(b"{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }   "));
        assert_eq!(bytes[127], b'\n');
        assert_eq!(decode(&bytes).unwrap(), (tensor, 144));
        let scalar = HostTensor { shape: vec![], element_type: ElementType::BOOL_8, data: vec![1] };
        let bytes = encode(&scalar).unwrap();
        assert!(String::from_utf8_lossy(&bytes).contains("'descr': '|b1'") && bytes.len() == 129);
        let vector = HostTensor { shape: vec![3], element_type: ElementType::UINT_8, data: vec![1, 2, 3] };
        assert!(String::from_utf8_lossy(&encode(&vector).unwrap()).contains("'shape': (3,)"));
    }

    #[test]
    fn version_3_headers_and_any_key_order_are_read() {
        let mut bytes = header(3, "{'shape': (3,), 'fortran_order': False, 'descr': '<f2', }\n");
        bytes.extend_from_slice(&[0, 0x3C, 0, 0x40, 0, 0x42]);
        let (tensor, used) = decode(&bytes).unwrap();
        assert_eq!((tensor.shape, tensor.element_type, used), (vec![3], ElementType::FLOAT_16, bytes.len()));
    }

    #[test]
    fn unsupported_arrays_are_refused_with_iree_messages() {
        let refuse = |dict: &str| decode(&header(1, dict)).unwrap_err();
        assert_eq!(
            refuse("{'descr': '>i4', 'fortran_order': False, 'shape': (), }").message,
            "big-endian data type '>i4' unsupported"
        );
        assert_eq!(
            refuse("{'descr': '<i4', 'fortran_order': True, 'shape': (), }").message,
            "fortran order arrays not supported"
        );
        assert_eq!(refuse("{'descr': '|O', 'fortran_order': False, 'shape': (), }").message, "unsupported data type O");
        assert_eq!(refuse("{'descr': '<i4' 'shape': (), }").message, "malformed header dict");
        assert_eq!(refuse("{'descr': '<ix', 'fortran_order': False, }").message, "invalid descr byte width");
        assert_eq!(
            refuse("{'descr': '<i4', 'fortran_order': False, 'shape': (2, a), }").message,
            "invalid dimension 1 value a"
        );
        assert_eq!(decode(b"\x93NUMPY\x04\x00").unwrap_err().message, "npy version 4.0 not supported");
        assert_eq!(decode(b"PK\x03\x04\x00\x00\x00\x00").unwrap_err().message, "npy header magic mismatch");
        assert_eq!(decode(b"\x93NUM").unwrap_err().code, StatusCode::OutOfRange);
        let short = header(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }");
        assert_eq!(
            decode(&short).unwrap_err().message,
            "end-of-file encountered during read; failed to read npy contents of 8 bytes"
        );
    }

    #[test]
    fn string_arrays_read_and_write_as_numpy_does() {
        let array =
            StringArray { shape: vec![2, 2], strings: ["a", "", "naïve", "日本"].map(String::from).to_vec() };
        let bytes = encode_strings(&array);
        assert!(String::from_utf8_lossy(&bytes).contains("'descr': '<U5'"));
        assert_eq!(bytes.len(), 128 + 4 * 5 * 4);
        assert_eq!(decode_array(&bytes).unwrap(), (Array::Strings(array), bytes.len()));
        assert_eq!(decode(&bytes).unwrap_err().message, "unsupported data type U");
        let mut ascii = header(1, "{'descr': '|S3', 'fortran_order': False, 'shape': (2,), }");
        ascii.extend_from_slice(b"ab\0xyz");
        let strings = StringArray { shape: vec![2], strings: vec!["ab".into(), "xyz".into()] };
        assert_eq!(decode_array(&ascii).unwrap().0, Array::Strings(strings));
        let mut invalid_utf8 = header(1, "{'descr': '|S1', 'fortran_order': False, 'shape': (1,), }");
        invalid_utf8.push(0xff);
        assert_eq!(decode_array(&invalid_utf8).unwrap_err().message, "bytes element 0 is not UTF-8");
        let zero_width = header(1, "{'descr': '<U0', 'fortran_order': False, 'shape': (9,), }");
        assert_eq!(decode_array(&zero_width).unwrap_err().message, "invalid descr byte width");
        let huge = header(1, "{'descr': '<U4611686018427387904', 'fortran_order': False, 'shape': (9,), }");
        assert_eq!(decode_array(&huge).unwrap_err().message, "npy string array size overflows");
    }

    #[test]
    fn bf16_has_no_numpy_dtype() {
        let tensor = HostTensor { shape: vec![1], element_type: ElementType::BFLOAT_16, data: vec![0, 0] };
        assert_eq!(encode(&tensor).unwrap_err().message, "unsupported data encoding");
    }
}
