//! The parts of an ELF64 file read straight from its bytes: the file header and the program
//! headers. Every field is read through a bounds check, and every segment is validated before
//! anything is mapped, so a hostile file is rejected while it is still just bytes.

use super::ElfError;

const HEADER_SIZE: usize = 64;
const PROGRAM_HEADER_SIZE: usize = 56;
const EM_X86_64: u16 = 62;
const ET_DYN: u16 = 3;

pub(super) const PT_LOAD: u32 = 1;
pub(super) const PT_DYNAMIC: u32 = 2;
pub(super) const PT_GNU_RELRO: u32 = 0x6474_e552;

pub(super) const PF_X: u32 = 1;
pub(super) const PF_W: u32 = 2;

/// Reads `N` little-endian bytes at `offset`, naming `what` when they are not there.
pub(super) fn read_bytes<const N: usize>(bytes: &[u8], offset: u64, what: &str) -> Result<[u8; N], ElfError> {
    let start = usize::try_from(offset).ok();
    let field = start.and_then(|start| bytes.get(start..start.checked_add(N)?));
    match field {
        Some(field) => Ok(field.try_into().expect("slice of length N")),
        None => {
            Err(ElfError::OutOfBounds { what: what.to_string(), offset, size: N as u64, limit: bytes.len() as u64 })
        }
    }
}

pub(super) fn read_u16(bytes: &[u8], offset: u64, what: &str) -> Result<u16, ElfError> {
    read_bytes(bytes, offset, what).map(u16::from_le_bytes)
}

pub(super) fn read_u32(bytes: &[u8], offset: u64, what: &str) -> Result<u32, ElfError> {
    read_bytes(bytes, offset, what).map(u32::from_le_bytes)
}

pub(super) fn read_u64(bytes: &[u8], offset: u64, what: &str) -> Result<u64, ElfError> {
    read_bytes(bytes, offset, what).map(u64::from_le_bytes)
}

/// One program header, with the fields a loader needs.
#[derive(Clone, Copy, Debug)]
pub(super) struct Segment {
    /// Position in the program header table, for error messages.
    pub index: usize,
    pub kind: u32,
    pub flags: u32,
    pub file_offset: u64,
    pub vaddr: u64,
    pub file_size: u64,
    pub memory_size: u64,
}

impl Segment {
    /// One past the last virtual address the segment occupies (checked at parse time not to wrap).
    pub fn vaddr_end(&self) -> u64 {
        self.vaddr + self.memory_size
    }

    pub fn contains_vaddr(&self, vaddr: u64) -> bool {
        (self.vaddr..self.vaddr_end()).contains(&vaddr)
    }
}

/// Checks the file header and returns every program header, each PT_LOAD already validated
/// against the file and against the other PT_LOADs.
pub(super) fn parse(bytes: &[u8]) -> Result<Vec<Segment>, ElfError> {
    if bytes.len() < HEADER_SIZE {
        return Err(ElfError::OutOfBounds {
            what: "ELF file header".to_string(),
            offset: 0,
            size: HEADER_SIZE as u64,
            limit: bytes.len() as u64,
        });
    }
    let magic: [u8; 4] = read_bytes(bytes, 0, "ELF magic")?;
    if magic != *b"\x7fELF" {
        return Err(ElfError::BadMagic(magic));
    }
    let expect = |field: &'static str, value: u64, wanted: u64, expected: &'static str| {
        if value == wanted {
            Ok(())
        } else {
            Err(ElfError::Unsupported { field, value, expected })
        }
    };
    expect("class (EI_CLASS)", bytes[4].into(), 2, "2 (ELFCLASS64)")?;
    expect("data encoding (EI_DATA)", bytes[5].into(), 1, "1 (little-endian)")?;
    expect("version (e_version)", read_u32(bytes, 20, "e_version")?.into(), 1, "1 (EV_CURRENT)")?;
    expect("machine (e_machine)", read_u16(bytes, 18, "e_machine")?.into(), EM_X86_64.into(), "62 (x86-64)")?;
    expect("file type (e_type)", read_u16(bytes, 16, "e_type")?.into(), ET_DYN.into(), "3 (ET_DYN, a shared object)")?;
    expect("header size (e_ehsize)", read_u16(bytes, 52, "e_ehsize")?.into(), HEADER_SIZE as u64, "64")?;
    let entry_size = read_u16(bytes, 54, "e_phentsize")?;
    expect("program header size (e_phentsize)", entry_size.into(), PROGRAM_HEADER_SIZE as u64, "56")?;

    let table_offset = read_u64(bytes, 32, "e_phoff")?;
    let count = usize::from(read_u16(bytes, 56, "e_phnum")?);
    let table_size = (count * PROGRAM_HEADER_SIZE) as u64;
    if table_offset.checked_add(table_size).is_none_or(|end| end > bytes.len() as u64) {
        return Err(ElfError::OutOfBounds {
            what: format!("program header table ({count} entries)"),
            offset: table_offset,
            size: table_size,
            limit: bytes.len() as u64,
        });
    }

    let mut segments = Vec::with_capacity(count);
    for index in 0..count {
        let at = table_offset + (index * PROGRAM_HEADER_SIZE) as u64;
        let field = |offset: u64| read_u64(bytes, at + offset, "program header");
        let segment = Segment {
            index,
            kind: read_u32(bytes, at, "program header")?,
            flags: read_u32(bytes, at + 4, "program header")?,
            file_offset: field(8)?,
            vaddr: field(16)?,
            file_size: field(32)?,
            memory_size: field(40)?,
        };
        validate_segment(bytes, &segment)?;
        segments.push(segment);
    }
    check_load_overlaps(&segments)?;
    Ok(segments)
}

fn validate_segment(bytes: &[u8], segment: &Segment) -> Result<(), ElfError> {
    let bad = |problem: &'static str| ElfError::BadSegment { index: segment.index, problem };
    if segment.vaddr.checked_add(segment.memory_size).is_none() {
        return Err(bad("its memory range wraps around the address space"));
    }
    if segment.kind != PT_LOAD {
        return Ok(());
    }
    if segment.file_offset.checked_add(segment.file_size).is_none_or(|end| end > bytes.len() as u64) {
        return Err(ElfError::OutOfBounds {
            what: format!("contents of program header {}", segment.index),
            offset: segment.file_offset,
            size: segment.file_size,
            limit: bytes.len() as u64,
        });
    }
    if segment.file_size > segment.memory_size {
        return Err(bad("its file size exceeds its memory size"));
    }
    if segment.flags & PF_W != 0 && segment.flags & PF_X != 0 {
        return Err(bad("it is both writable and executable"));
    }
    Ok(())
}

fn check_load_overlaps(segments: &[Segment]) -> Result<(), ElfError> {
    let mut loads: Vec<&Segment> = segments.iter().filter(|s| s.kind == PT_LOAD && s.memory_size > 0).collect();
    loads.sort_by_key(|s| s.vaddr);
    for pair in loads.windows(2) {
        if pair[1].vaddr < pair[0].vaddr_end() {
            return Err(ElfError::OverlappingSegments { first: pair[0].index, second: pair[1].index });
        }
    }
    Ok(())
}
