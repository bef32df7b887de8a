//! What the runtime needs to know from inside a SPIR-V module before handing it to a driver: that it
//! is SPIR-V at all, that an entry point really is a compute entry point of the module (a driver given
//! a name the module lacks may crash instead of failing), that entry point's workgroup size (its
//! `LocalSize` execution mode), which IREE reports per export and the command buffer uses to size
//! dispatches, and whether the module reads the dispatch's workgroup count (the `NumWorkgroups`
//! built-in): one that does not can run a grid larger than the device's limit in pieces, each
//! offset by its base. Only the instruction stream's framing is checked; the full SPIR-V rules are the
//! validation layers' business.

use rtx_vm::error::LoadError;

/// The first word of every SPIR-V module.
pub const MAGIC: u32 = 0x0723_0203;
/// Magic, version, generator, id bound, schema.
const HEADER_WORDS: usize = 5;
const OP_ENTRY_POINT: u32 = 15;
const OP_EXECUTION_MODE: u32 = 16;
const EXECUTION_MODEL_GL_COMPUTE: u32 = 5;
const EXECUTION_MODE_LOCAL_SIZE: u32 = 17;
const OP_DECORATE: u32 = 71;
const DECORATION_BUILT_IN: u32 = 11;
const BUILT_IN_NUM_WORKGROUPS: u32 = 24;

/// A compute entry point found in a module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ComputeEntryPoint {
    /// The workgroup size from `OpExecutionMode ... LocalSize x y z`, if the module declares one
    /// (a module may instead use `LocalSizeId` with specialization constants).
    pub workgroup_size: Option<[u32; 3]>,
    /// Whether the module declares the `NumWorkgroups` built-in (any of its entry points may read
    /// the dispatch's workgroup count).
    pub reads_workgroup_count: bool,
}

/// Finds the compute entry point `name` in `words`. `offset` is where the words start in the file,
/// so errors name file offsets; `what` names the module in them.
pub fn find_compute_entry_point(
    words: &[u32],
    name: &str,
    offset: usize,
    what: &str,
) -> Result<Option<ComputeEntryPoint>, LoadError> {
    let at = |word: usize| offset.saturating_add(word.saturating_mul(4));
    if words.len() < HEADER_WORDS || words[0] != MAGIC {
        return Err(LoadError::malformed(
            offset,
            format!("{what} is not SPIR-V (it needs a {HEADER_WORDS}-word header starting with magic {MAGIC:#010x})"),
        ));
    }
    let mut entry_id = None;
    let mut workgroup_size = None;
    let mut reads_workgroup_count = false;
    let mut position = HEADER_WORDS;
    while let Some(&first) = words.get(position) {
        let (opcode, length) = (first & 0xffff, (first >> 16) as usize);
        let Some(operands) = words.get(position + 1..position.saturating_add(length)).filter(|_| length > 0) else {
            return Err(LoadError::malformed(
                at(position),
                format!("{what}: the instruction at word {position} claims {length} words, past the module's end"),
            ));
        };
        match opcode {
            OP_ENTRY_POINT if operands.first() == Some(&EXECUTION_MODEL_GL_COMPUTE) => {
                let entry_name = literal_string(operands.get(2..).unwrap_or_default()).ok_or_else(|| {
                    LoadError::malformed(at(position), format!("{what}: OpEntryPoint at word {position} has no name"))
                })?;
                if entry_name == name.as_bytes() {
                    if entry_id.is_some() {
                        return Err(LoadError::malformed(
                            at(position),
                            format!("{what} declares compute entry point `{name}` twice"),
                        ));
                    }
                    entry_id = operands.get(1).copied();
                }
            }
            OP_DECORATE if operands.get(1..3) == Some(&[DECORATION_BUILT_IN, BUILT_IN_NUM_WORKGROUPS]) => {
                reads_workgroup_count = true;
            }
            OP_EXECUTION_MODE
                if entry_id.is_some()
                    && operands.first() == entry_id.as_ref()
                    && operands.get(1) == Some(&EXECUTION_MODE_LOCAL_SIZE) =>
            {
                let size = match operands.get(2..5) {
                    Some(&[x, y, z]) if x > 0 && y > 0 && z > 0 => [x, y, z],
                    _ => {
                        return Err(LoadError::malformed(
                            at(position),
                            format!("{what}: the LocalSize of `{name}` needs three non-zero sizes"),
                        ))
                    }
                };
                if workgroup_size.replace(size).is_some() {
                    return Err(LoadError::malformed(
                        at(position),
                        format!("{what} declares the LocalSize of `{name}` twice"),
                    ));
                }
            }
            _ => {}
        }
        position += length;
    }
    Ok(entry_id.map(|_| ComputeEntryPoint { workgroup_size, reads_workgroup_count }))
}

/// The bytes of a SPIR-V literal string (NUL-terminated, packed little-endian into words), or
/// `None` if the words end before the NUL.
fn literal_string(words: &[u32]) -> Option<Vec<u8>> {
    let bytes: Vec<u8> = words.iter().flat_map(|word| word.to_le_bytes()).collect();
    let end = bytes.iter().position(|&b| b == 0)?;
    Some(bytes[..end].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `name` as SPIR-V literal-string words.
    fn string_words(name: &str) -> Vec<u32> {
        let mut bytes = name.as_bytes().to_vec();
        bytes.resize(name.len() / 4 * 4 + 4, 0);
        bytes.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
    }

    fn instruction(opcode: u32, operands: &[u32]) -> Vec<u32> {
        let mut words = vec![((operands.len() as u32 + 1) << 16) | opcode];
        words.extend_from_slice(operands);
        words
    }

    /// A module header, `OpEntryPoint GLCompute %7 "<name>"` and, if given, its LocalSize.
    fn module(name: &str, local_size: Option<[u32; 3]>) -> Vec<u32> {
        let mut words = vec![MAGIC, 0x0001_0300, 0, 8, 0];
        let mut operands = vec![EXECUTION_MODEL_GL_COMPUTE, 7];
        operands.extend(string_words(name));
        words.extend(instruction(OP_ENTRY_POINT, &operands));
        if let Some([x, y, z]) = local_size {
            words.extend(instruction(OP_EXECUTION_MODE, &[7, EXECUTION_MODE_LOCAL_SIZE, x, y, z]));
        }
        words
    }

    #[test]
    fn finds_a_compute_entry_point_and_its_local_size() {
        let words = module("main_dispatch", Some([64, 2, 1]));
        let found = find_compute_entry_point(&words, "main_dispatch", 0, "m").unwrap();
        assert_eq!(found, Some(ComputeEntryPoint { workgroup_size: Some([64, 2, 1]), reads_workgroup_count: false }));
        assert_eq!(find_compute_entry_point(&words, "main", 0, "m").unwrap(), None);
        let without = module("main", None);
        assert_eq!(
            find_compute_entry_point(&without, "main", 0, "m").unwrap(),
            Some(ComputeEntryPoint { workgroup_size: None, reads_workgroup_count: false })
        );
    }

    /// `OpDecorate %9 BuiltIn NumWorkgroups` anywhere says the count may be read; another
    /// built-in (`WorkgroupId`) does not.
    #[test]
    fn finds_whether_the_module_reads_the_workgroup_count() {
        let mut words = module("main", Some([64, 1, 1]));
        words.extend(instruction(OP_DECORATE, &[9, DECORATION_BUILT_IN, 26]));
        let found = find_compute_entry_point(&words, "main", 0, "m").unwrap().unwrap();
        assert!(!found.reads_workgroup_count);
        words.extend(instruction(OP_DECORATE, &[10, DECORATION_BUILT_IN, BUILT_IN_NUM_WORKGROUPS]));
        let found = find_compute_entry_point(&words, "main", 0, "m").unwrap().unwrap();
        assert!(found.reads_workgroup_count);
    }

    #[test]
    fn rejects_what_is_not_spirv() {
        let err = find_compute_entry_point(&[0x1234_5678, 0, 0, 0, 0], "x", 40, "shader_modules[0]").unwrap_err();
        assert_eq!(err.offset, 40);
        assert!(err.message.contains("shader_modules[0] is not SPIR-V"), "{err}");
        assert!(find_compute_entry_point(&[MAGIC], "x", 0, "m").is_err());
    }

    #[test]
    fn rejects_an_instruction_running_past_the_end_and_a_zero_length_one() {
        let mut words = module("main", Some([1, 1, 1]));
        let last = words.len() - 6;
        words[last] = (40 << 16) | OP_EXECUTION_MODE;
        let err = find_compute_entry_point(&words, "main", 100, "m").unwrap_err();
        assert_eq!(err.offset, 100 + 4 * last);
        assert!(err.message.contains("claims 40 words"), "{err}");
        words[last] = OP_EXECUTION_MODE;
        assert!(find_compute_entry_point(&words, "main", 0, "m").is_err());
    }

    #[test]
    fn rejects_a_zero_local_size_and_duplicates() {
        let zero = module("main", Some([0, 1, 1]));
        assert!(find_compute_entry_point(&zero, "main", 0, "m").unwrap_err().message.contains("non-zero"));
        let mut twice = module("main", Some([1, 1, 1]));
        twice.extend(instruction(OP_EXECUTION_MODE, &[7, EXECUTION_MODE_LOCAL_SIZE, 2, 1, 1]));
        assert!(find_compute_entry_point(&twice, "main", 0, "m").unwrap_err().message.contains("twice"));
    }

    #[test]
    fn every_truncation_and_byte_flip_is_an_error_or_an_answer_never_a_panic() {
        let words = module("main", Some([8, 1, 1]));
        for len in 0..words.len() {
            let _ = find_compute_entry_point(&words[..len], "main", 0, "m");
        }
        for index in 0..words.len() {
            for flip in [1u32, 0x8000_0000, 0xffff_ffff, 0x00ff_0000] {
                let mut copy = words.clone();
                copy[index] ^= flip;
                let _ = find_compute_entry_point(&copy, "main", 0, "m");
            }
        }
    }
}
