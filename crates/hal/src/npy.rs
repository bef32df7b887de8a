//! NumPy `.npy` arrays as `iree-run-module` reads them (`--input=@a.npy`) and writes them
//! (`--output=@f.npy`, `+f.npy` appends another array to the file).
//!
//! The reader accepts what IREE's accepts — format versions 1 to 3, a header dict with keys in
//! any order, little-endian or byte-order-free descrs, C order — and refuses the rest with
//! IREE's messages: big-endian data (IREE does not swap bytes, so neither do we: the tensor
//! would differ from the one `iree-run-module` passes), Fortran order, object and string
//! dtypes. The writer produces IREE's bytes exactly: a version 1 header (2 when the dict
//! needs it) padded with spaces to 64 bytes, then the tensor's bytes.

use super::element_type::{ElementType, NumericalType};
use super::tensor_io::{c_atoi_u32, c_atoi_u64, c_trim, view_byte_length, HostTensor, MAX_RANK};
use rtx_host::{Diagnostic, StatusCode};

const MAGIC: &[u8; 6] = b"\x93NUMPY";

fn invalid(message: impl Into<String>) -> Diagnostic {
    Diagnostic::new(StatusCode::InvalidArgument, message)
}

fn end_of_file(context: &str) -> Diagnostic {
    Diagnostic::new(StatusCode::OutOfRange, format!("end-of-file encountered during read; {context}"))
}

/// Reads the array at the start of `bytes`; returns it and how many bytes it took, so that the
/// next array of a concatenated file starts there.
pub fn decode(bytes: &[u8]) -> Result<(HostTensor, usize), Diagnostic> {
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
    let (shape, element_type, row_major) = parse_header(c_trim(&header))?;
    if !row_major {
        return Err(Diagnostic::new(StatusCode::Unimplemented, "unimplemented encoding type size calculation"));
    }
    let length = view_byte_length(&shape, element_type)?;
    let data_start = header_start + header_length;
    let data = data_start
        .checked_add(length)
        .and_then(|end| bytes.get(data_start..end))
        .ok_or_else(|| end_of_file(&format!("failed to read npy contents of {length} bytes")))?;
    Ok((HostTensor { shape, element_type, data: data.to_vec() }, data_start + length))
}

/// The dict `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`: shape, element
/// type, and whether a `fortran_order: False` said the data is row-major.
fn parse_header(header: &str) -> Result<(Vec<usize>, ElementType, bool), Diagnostic> {
    let mut rest = header.strip_prefix('{').unwrap_or(header);
    rest = rest.strip_suffix('}').unwrap_or(rest);
    let mut shape = Vec::new();
    let mut element_type = ElementType::NONE;
    let mut row_major = false;
    while !rest.is_empty() {
        let (key, value, remainder) = next_key_value(rest)?;
        rest = remainder;
        match key {
            "descr" => element_type = descr_to_element_type(value)?,
            "fortran_order" if value == "False" => row_major = true,
            "fortran_order" => {
                return Err(Diagnostic::new(StatusCode::Unimplemented, "fortran order arrays not supported"))
            }
            "shape" => shape = parse_shape(value)?,
            _ => {}
        }
    }
    Ok((shape, element_type, row_major))
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
    let dims: Vec<String> = tensor.shape.iter().map(usize::to_string).collect();
    let trailing = if dims.len() == 1 { "," } else { "" };
    let dict = format!(
        "{{'descr': '{order}{kind}{width}', 'fortran_order': False, 'shape': ({}{trailing}), }}",
        dims.join(", ")
    );
    let version_2 = dict.len() > 65535;
    let length_size = if version_2 { 4 } else { 2 };
    let unpadded = MAGIC.len() + 2 + length_size + dict.len() + 1;
    let padding = unpadded.next_multiple_of(64) - unpadded;
    let header_length = dict.len() + padding + 1;
    let mut bytes = Vec::with_capacity(unpadded + padding + tensor.data.len());
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
    bytes.extend_from_slice(&tensor.data);
    Ok(bytes)
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
    fn bf16_has_no_numpy_dtype() {
        let tensor = HostTensor { shape: vec![1], element_type: ElementType::BFLOAT_16, data: vec![0, 0] };
        assert_eq!(encode(&tensor).unwrap_err().message, "unsupported data encoding");
    }
}
