//! NumPy `.npz` archives as `rtx run` reads and writes a sequence of tensors (an ONNX sequence,
//! which IREE's tools have no form for): a zip of `.npy` members, one per element, in archive
//! order, as `np.savez(path, *arrays)` writes them (`arr_0.npy`, `arr_1.npy`, ...) and
//! `np.load(path)` reads them back. Members may be stored or deflated (`np.savez_compressed`).

use std::io::{Cursor, Read, Write};

use super::npy::{self, Array};
use super::tensor_io::HostTensor;
use rtx_host::{Diagnostic, StatusCode};

fn invalid(message: impl Into<String>) -> Diagnostic {
    Diagnostic::new(StatusCode::InvalidArgument, message)
}

/// The arrays of the archive `bytes`, in archive order. A member claiming more bytes than the
/// archive could inflate to is refused before it is read.
pub fn decode(bytes: &[u8]) -> Result<Vec<Array>, Diagnostic> {
    let mut archive =
        zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| invalid(format!("not a .npz (zip) archive: {e}")))?;
    (0..archive.len())
        .map(|index| {
            let mut member = archive.by_index(index).map_err(|e| invalid(format!("npz member {index}: {e}")))?;
            let name = member.name().to_owned();
            // Deflate expands at most ~1032:1; a larger claim is a lie that would allocate.
            let limit = (bytes.len() as u64).saturating_mul(1032).saturating_add(4096);
            if member.size() > limit {
                return Err(invalid(format!("npz member `{name}` claims {} bytes", member.size())));
            }
            let mut contents = Vec::with_capacity(member.size() as usize);
            member
                .by_ref()
                .take(limit)
                .read_to_end(&mut contents)
                .map_err(|e| invalid(format!("npz member `{name}`: {e}")))?;
            let (array, used) =
                npy::decode_array(&contents).map_err(|e| e.context(format_args!("npz member `{name}`")))?;
            if used != contents.len() {
                return Err(invalid(format!("npz member `{name}` holds more than one array")));
            }
            Ok(array)
        })
        .collect()
}

/// The archive `np.savez(path, *tensors)` writes: members `arr_0.npy`... stored uncompressed.
pub fn encode(tensors: &[HostTensor]) -> Result<Vec<u8>, Diagnostic> {
    let failed =
        |e: zip::result::ZipError| Diagnostic::new(StatusCode::Internal, format!("writing a .npz archive: {e}"));
    let mut archive = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .large_file(tensors.iter().any(|t| t.data.len() >= u32::MAX as usize));
    for (index, tensor) in tensors.iter().enumerate() {
        archive.start_file(format!("arr_{index}.npy"), options).map_err(failed)?;
        archive.write_all(&npy::encode(tensor)?).map_err(|e| failed(e.into()))?;
    }
    Ok(archive.finish().map_err(failed)?.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::element_type::ElementType;

    #[test]
    fn written_archives_read_back_in_order() {
        let tensors = vec![
            HostTensor {
                shape: vec![2],
                element_type: ElementType::FLOAT_32,
                data: [1f32, 2.].map(f32::to_le_bytes).concat(),
            },
            HostTensor { shape: vec![], element_type: ElementType::SINT_64, data: 7i64.to_le_bytes().to_vec() },
        ];
        let bytes = encode(&tensors).unwrap();
        assert!(bytes.starts_with(b"PK\x03\x04"));
        let arrays = decode(&bytes).unwrap();
        assert_eq!(arrays, tensors.into_iter().map(Array::Tensor).collect::<Vec<_>>());
        assert!(decode(&encode(&[]).unwrap()).unwrap().is_empty());
    }

    #[test]
    fn broken_archives_are_errors() {
        assert!(decode(b"not a zip").unwrap_err().message.starts_with("not a .npz (zip) archive"));
        let mut bytes =
            encode(&[HostTensor { shape: vec![1], element_type: ElementType::UINT_8, data: vec![9] }]).unwrap();
        let at = bytes.windows(6).position(|w| w == b"\x93NUMPY").unwrap();
        bytes[at] = b'X';
        let error = decode(&bytes).unwrap_err();
        assert!(error.message.contains("arr_0.npy"), "{error}");
    }
}
