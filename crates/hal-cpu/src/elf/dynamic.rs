//! The dynamic section and what it points at (symbols, strings, relocations, initializers), read
//! from the loaded image where their virtual addresses are meaningful, and the x86-64 relocations
//! IREE's own loader supports (`elf/arch/x86_64.c`).

use super::file::{read_u16, read_u32, read_u64, Segment, PF_X, PT_DYNAMIC, PT_LOAD};
use super::image::WritableImage;
use super::ElfError;

const DT_NULL: u64 = 0;
const DT_NEEDED: u64 = 1;
const DT_PLTRELSZ: u64 = 2;
const DT_HASH: u64 = 4;
const DT_STRTAB: u64 = 5;
const DT_SYMTAB: u64 = 6;
const DT_RELA: u64 = 7;
const DT_RELASZ: u64 = 8;
const DT_RELAENT: u64 = 9;
const DT_STRSZ: u64 = 10;
const DT_SYMENT: u64 = 11;
const DT_INIT: u64 = 12;
const DT_REL: u64 = 17;
const DT_RELSZ: u64 = 18;
const DT_PLTREL: u64 = 20;
const DT_JMPREL: u64 = 23;
const DT_INIT_ARRAY: u64 = 25;
const DT_INIT_ARRAYSZ: u64 = 27;
const DT_RELRSZ: u64 = 35;
const DT_RELR: u64 = 36;

const DYN_SIZE: u64 = 16;
const SYM_SIZE: u64 = 24;
const RELA_SIZE: u64 = 24;

const SHN_UNDEF: u16 = 0;
const STB_GLOBAL: u8 = 1;
const STB_WEAK: u8 = 2;

const R_X86_64_NONE: u32 = 0;
const R_X86_64_64: u32 = 1;
const R_X86_64_PC32: u32 = 2;
const R_X86_64_COPY: u32 = 5;
const R_X86_64_GLOB_DAT: u32 = 6;
const R_X86_64_JUMP_SLOT: u32 = 7;
const R_X86_64_RELATIVE: u32 = 8;
const R_X86_64_32: u32 = 10;
const R_X86_64_32S: u32 = 11;

/// What the dynamic section says, as virtual addresses and sizes.
#[derive(Default)]
struct DynamicEntries {
    strtab: Option<u64>,
    strsz: u64,
    symtab: Option<u64>,
    hash: Option<u64>,
    rela: Option<u64>,
    relasz: u64,
    jmprel: Option<u64>,
    pltrelsz: u64,
    init: Option<u64>,
    init_array: Option<u64>,
    init_arraysz: u64,
}

fn dynamic_error(problem: String) -> ElfError {
    ElfError::Dynamic(problem)
}

fn read_entries(image: &WritableImage, segments: &[Segment]) -> Result<DynamicEntries, ElfError> {
    let dynamic = segments.iter().find(|s| s.kind == PT_DYNAMIC).ok_or(ElfError::NoDynamicSegment)?;
    let count = dynamic.file_size / DYN_SIZE;
    let start = image.offset_of(dynamic.vaddr, count * DYN_SIZE, "dynamic section")?;
    let bytes = image.bytes();
    let mut entries = DynamicEntries::default();
    let expect_size = |tag: &str, value: u64, size: u64| {
        if value == size {
            Ok(())
        } else {
            Err(dynamic_error(format!("{tag} is {value}; only {size}-byte entries are supported")))
        }
    };
    for index in 0..count {
        let at = start as u64 + index * DYN_SIZE;
        let tag = read_u64(bytes, at, "dynamic entry")?;
        let value = read_u64(bytes, at + 8, "dynamic entry")?;
        match tag {
            DT_NULL => break,
            DT_NEEDED => {
                return Err(dynamic_error(format!(
                    "entry {index} is DT_NEEDED (string 0x{value:x}): the executable depends on a shared library, \
                     which an embedded executable must not"
                )))
            }
            DT_STRTAB => entries.strtab = Some(value),
            DT_STRSZ => entries.strsz = value,
            DT_SYMTAB => entries.symtab = Some(value),
            DT_SYMENT => expect_size("DT_SYMENT", value, SYM_SIZE)?,
            DT_HASH => entries.hash = Some(value),
            DT_RELA => entries.rela = Some(value),
            DT_RELASZ => entries.relasz = value,
            DT_RELAENT => expect_size("DT_RELAENT", value, RELA_SIZE)?,
            DT_JMPREL => entries.jmprel = Some(value),
            DT_PLTRELSZ => entries.pltrelsz = value,
            DT_PLTREL => expect_size("DT_PLTREL (the PLT relocation kind)", value, DT_RELA)?,
            DT_REL | DT_RELSZ => {
                return Err(dynamic_error(format!(
                    "entry {index} asks for DT_REL relocations; only DT_RELA is supported"
                )))
            }
            DT_RELR | DT_RELRSZ => {
                return Err(dynamic_error(format!(
                    "entry {index} asks for packed DT_RELR relocations, which are not supported"
                )))
            }
            DT_INIT => entries.init = Some(value),
            DT_INIT_ARRAY => entries.init_array = Some(value),
            DT_INIT_ARRAYSZ => entries.init_arraysz = value,
            _ => {}
        }
    }
    Ok(entries)
}

/// The dynamic symbol table, bounds-checked against the image.
struct Symbols<'a> {
    bytes: &'a [u8],
    symtab: usize,
    count: u64,
    strtab: &'a [u8],
}

struct Symbol<'a> {
    name: &'a [u8],
    bind: u8,
    section: u16,
    value: u64,
}

impl<'a> Symbols<'a> {
    fn new(image: &'a WritableImage, entries: &DynamicEntries) -> Result<Self, ElfError> {
        let missing = |what: &str| dynamic_error(format!("no {what}, so symbols cannot be looked up"));
        let strtab_vaddr = entries.strtab.ok_or_else(|| missing("DT_STRTAB"))?;
        let symtab_vaddr = entries.symtab.ok_or_else(|| missing("DT_SYMTAB"))?;
        let hash_vaddr = entries.hash.ok_or_else(|| missing("DT_HASH (the only source of the symbol count)"))?;
        let bytes = image.bytes();
        // The SysV hash table's second word is the number of symbols.
        let hash = image.offset_of(hash_vaddr, 8, "DT_HASH table")?;
        let count = u64::from(read_u32(bytes, hash as u64 + 4, "DT_HASH table")?);
        let symtab = image.offset_of(symtab_vaddr, count * SYM_SIZE, "dynamic symbol table")?;
        let strtab = image.offset_of(strtab_vaddr, entries.strsz, "dynamic string table")?;
        Ok(Symbols { bytes, symtab, count, strtab: &bytes[strtab..strtab + entries.strsz as usize] })
    }

    fn get(&self, index: u64) -> Result<Symbol<'a>, ElfError> {
        if index >= self.count {
            return Err(dynamic_error(format!("symbol index {index} is past the {} symbols", self.count)));
        }
        let at = self.symtab as u64 + index * SYM_SIZE;
        let name_offset = read_u32(self.bytes, at, "symbol")? as usize;
        let name = self
            .strtab
            .get(name_offset..)
            .and_then(|rest| rest.split(|&b| b == 0).next().filter(|_| rest.contains(&0)))
            .ok_or_else(|| {
                dynamic_error(format!("symbol {index} names string 0x{name_offset:x}, outside the string table"))
            })?;
        Ok(Symbol {
            name,
            bind: self.bytes[at as usize + 4] >> 4,
            section: read_u16(self.bytes, at + 6, "symbol")?,
            value: read_u64(self.bytes, at + 8, "symbol")?,
        })
    }
}

/// What loading needs from the dynamic section once relocations are applied: the query function
/// and the initializers, all as virtual addresses inside executable segments.
pub(super) struct Resolved {
    pub query_vaddr: u64,
    pub initializer_addresses: Vec<u64>,
}

/// Applies every relocation, then finds `symbol_name` and the initializers.
pub(super) fn link(image: &mut WritableImage, segments: &[Segment], symbol_name: &str) -> Result<Resolved, ElfError> {
    let entries = read_entries(image, segments)?;
    let symbol_values = {
        let symbols = Symbols::new(image, &entries)?;
        let mut values = Vec::with_capacity(symbols.count as usize);
        for index in 0..symbols.count {
            let symbol = symbols.get(index)?;
            if index > 0 && symbol.section == SHN_UNDEF {
                return Err(ElfError::UndefinedSymbol(String::from_utf8_lossy(symbol.name).into_owned()));
            }
            values.push(symbol.value);
        }
        values
    };
    for (table, vaddr, size) in
        [("DT_RELA", entries.rela, entries.relasz), ("DT_JMPREL", entries.jmprel, entries.pltrelsz)]
    {
        if let Some(vaddr) = vaddr {
            relocate(image, segments, table, vaddr, size, &symbol_values)?;
        }
    }

    let in_code = |vaddr: u64, what: String| {
        let executable = segments.iter().any(|s| s.kind == PT_LOAD && s.flags & PF_X != 0 && s.contains_vaddr(vaddr));
        if executable {
            Ok(vaddr)
        } else {
            Err(ElfError::NotCode { what, vaddr })
        }
    };
    let symbols = Symbols::new(image, &entries)?;
    let mut query = None;
    // Globals follow locals in the table, so searching from the end finds them soonest.
    for index in (1..symbols.count).rev() {
        let symbol = symbols.get(index)?;
        if matches!(symbol.bind, STB_GLOBAL | STB_WEAK) && symbol.name == symbol_name.as_bytes() {
            query = Some(in_code(symbol.value, format!("symbol `{symbol_name}`"))?);
            break;
        }
    }
    let query_vaddr = query.ok_or_else(|| ElfError::MissingSymbol(symbol_name.to_string()))?;

    let mut initializer_addresses = Vec::new();
    if let Some(init) = entries.init.filter(|&init| init != 0) {
        initializer_addresses.push(image.load_bias().wrapping_add(in_code(init, "DT_INIT".to_string())?));
    }
    if let Some(array) = entries.init_array {
        let count = entries.init_arraysz / 8;
        let start = image.offset_of(array, count * 8, "DT_INIT_ARRAY")?;
        for index in 0..count {
            // Entries were relocated above, so they hold run-time addresses; 0 and -1 mean "none".
            let address = read_u64(image.bytes(), start as u64 + index * 8, "DT_INIT_ARRAY")?;
            if address == 0 || address == u64::MAX {
                continue;
            }
            let vaddr = address.wrapping_sub(image.load_bias());
            in_code(vaddr, format!("DT_INIT_ARRAY entry {index}"))?;
            initializer_addresses.push(address);
        }
    }
    Ok(Resolved { query_vaddr, initializer_addresses })
}

fn relocate(
    image: &mut WritableImage,
    segments: &[Segment],
    table: &'static str,
    table_vaddr: u64,
    table_size: u64,
    symbol_values: &[u64],
) -> Result<(), ElfError> {
    let count = table_size / RELA_SIZE;
    let start = image.offset_of(table_vaddr, count * RELA_SIZE, table)?;
    let bias = image.load_bias();
    for index in 0..count {
        let at = start as u64 + index * RELA_SIZE;
        let bytes = image.bytes();
        let target_vaddr = read_u64(bytes, at, table)?;
        let info = read_u64(bytes, at + 8, table)?;
        let addend = read_u64(bytes, at + 16, table)?;
        let kind = info as u32;
        let symbol_index = info >> 32;
        let bad = |problem: String| ElfError::BadRelocation { table, index, problem };
        if kind == R_X86_64_NONE {
            continue;
        }
        let symbol = if symbol_index == 0 {
            0
        } else {
            let value = symbol_values.get(symbol_index as usize).ok_or_else(|| {
                bad(format!("symbol index {symbol_index} is past the {} symbols", symbol_values.len()))
            })?;
            bias.wrapping_add(*value)
        };
        let place = bias.wrapping_add(target_vaddr);
        let value = symbol.wrapping_add(addend);
        let (width, written): (u64, u64) = match kind {
            R_X86_64_RELATIVE => (8, bias.wrapping_add(addend)),
            // IREE's loader stores the symbol's address for COPY too (a copy relocation has no
            // meaning inside a self-contained module), and we match it.
            R_X86_64_JUMP_SLOT | R_X86_64_GLOB_DAT | R_X86_64_COPY => (8, symbol),
            R_X86_64_64 => (8, value),
            R_X86_64_32 => {
                let narrow =
                    u32::try_from(value).map_err(|_| bad(format!("value 0x{value:x} does not fit R_X86_64_32")))?;
                (4, narrow.into())
            }
            R_X86_64_32S => {
                let narrow = i32::try_from(value as i64)
                    .map_err(|_| bad(format!("value 0x{value:x} does not fit R_X86_64_32S")))?;
                (4, narrow as u32 as u64)
            }
            R_X86_64_PC32 => {
                let relative = value.wrapping_sub(place) as i64;
                let narrow = i32::try_from(relative)
                    .map_err(|_| bad(format!("displacement {relative} does not fit R_X86_64_PC32")))?;
                (4, narrow as u32 as u64)
            }
            _ => return Err(ElfError::UnsupportedRelocation { table, index, kind }),
        };
        let in_segment = segments.iter().any(|s| {
            s.kind == PT_LOAD
                && s.contains_vaddr(target_vaddr)
                && target_vaddr.checked_add(width).is_some_and(|end| end <= s.vaddr_end())
        });
        if !in_segment {
            return Err(bad(format!("target 0x{target_vaddr:x} (+{width} bytes) lies outside every loaded segment")));
        }
        let offset = image.offset_of(target_vaddr, width, table)?;
        image.bytes_mut()[offset..offset + width as usize].copy_from_slice(&written.to_le_bytes()[..width as usize]);
    }
    Ok(())
}
