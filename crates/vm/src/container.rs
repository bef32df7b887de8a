//! The `.vmfb` container: where the `BytecodeModuleDef` FlatBuffer sits in the file and where
//! external rodata begins.
//!
//! The compiler writes a stored (uncompressed) ZIP whose first entry is the size-prefixed FlatBuffer
//! and whose further entries are external rodata (executables), so that `unzip` can inspect a
//! module. The runtime never reads the ZIP directory: it skips the first local header and finds
//! rodata by offset from the FlatBuffer's end. A bare size-prefixed FlatBuffer (no ZIP) is also a
//! valid module.

use super::error::LoadError;
use super::flatbuffer::FlatBuffer;

/// Every archive segment (the FlatBuffer, each rodata file) is aligned to this many bytes, and so
/// is the rodata base; mapping or copying the file at a 64-byte-aligned address keeps rodata
/// aligned for executables that rely on it.
pub const SEGMENT_ALIGNMENT: usize = 64;

/// The FlatBuffer file identifier of a bytecode module.
pub const FILE_IDENTIFIER: &[u8; 4] = b"IREE";

const ZIP_LOCAL_HEADER_SIGNATURE: &[u8; 4] = b"PK\x03\x04";
const ZIP_LOCAL_HEADER_SIZE: usize = 30;

/// The parts of a `.vmfb` the loader needs, as located in the file.
#[derive(Clone, Copy, Debug)]
pub struct Container<'a> {
    /// The FlatBuffer contents (after the size prefix); its `base()` is their file offset.
    pub flatbuffer: FlatBuffer<'a>,
    /// File offset that `RodataSegmentDef.external_data_offset` is relative to.
    pub rodata_base: usize,
    /// Whether the file was wrapped in a ZIP local header.
    pub is_zip: bool,
}

impl<'a> Container<'a> {
    /// Finds the FlatBuffer in `file` and checks its identifier.
    pub fn parse(file: &'a [u8]) -> Result<Container<'a>, LoadError> {
        let is_zip = file.get(..4) == Some(&ZIP_LOCAL_HEADER_SIGNATURE[..]);
        let start = if is_zip { zip_entry_data_offset(file)? } else { 0 };
        let rest = file.get(start..).unwrap_or_default();
        let flatbuffer = FlatBuffer::size_prefixed(rest, start)?;
        match flatbuffer.identifier() {
            Some(id) if id == FILE_IDENTIFIER => {}
            Some(id) => {
                return Err(LoadError::malformed(
                    flatbuffer.base() + 4,
                    format!(
                        "file identifier is {:?}, expected \"IREE\": this is not an IREE bytecode module",
                        String::from_utf8_lossy(id)
                    ),
                ))
            }
            None => {
                return Err(LoadError::truncated(
                    flatbuffer.base(),
                    format!(
                        "the FlatBuffer is {} bytes, too short to hold a root offset and identifier",
                        flatbuffer.len()
                    ),
                ))
            }
        }
        // Rodata follows the FlatBuffer contents (not counting the size prefix) at the next
        // segment boundary; upstream `archive.c` computes the same.
        let end = flatbuffer.base().saturating_add(flatbuffer.len());
        let rodata_base = end.checked_next_multiple_of(SEGMENT_ALIGNMENT).unwrap_or(usize::MAX);
        Ok(Container { flatbuffer, rodata_base, is_zip })
    }
}

/// Where the data of the first ZIP entry begins: after the fixed local header, the file name and
/// the extra field (the compiler puts ZIP64 sizes and alignment padding there).
fn zip_entry_data_offset(file: &[u8]) -> Result<usize, LoadError> {
    let field = |at: usize| {
        let bytes: [u8; 2] = file.get(at..at + 2)?.try_into().ok()?;
        Some(usize::from(u16::from_le_bytes(bytes)))
    };
    let (Some(name_len), Some(extra_len)) = (field(26), field(28)) else {
        return Err(LoadError::truncated(
            0,
            format!("the file starts like a ZIP but ends inside its {ZIP_LOCAL_HEADER_SIZE}-byte local header"),
        ));
    };
    let start = ZIP_LOCAL_HEADER_SIZE + name_len + extra_len;
    if start > file.len() {
        return Err(LoadError::truncated(
            26,
            format!(
                "the ZIP local header says the module starts at byte {start}, past the end of the {}-byte file",
                file.len()
            ),
        ));
    }
    Ok(start)
}
