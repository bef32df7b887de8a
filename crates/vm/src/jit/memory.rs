//! Executable memory for compiled loops: written once, then read + execute, never both (W^X).

use std::ptr::NonNull;

/// A private anonymous mapping holding machine code, unmapped on drop.
#[derive(Debug)]
pub struct CodeMemory {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is immutable after `new` returns (read + execute only) and owned by this
// value alone, so sharing or sending it across threads cannot race.
unsafe impl Send for CodeMemory {}
// SAFETY: as above.
unsafe impl Sync for CodeMemory {}

impl CodeMemory {
    /// Copies `code` into fresh pages and makes them executable. `None` when the system refuses
    /// (no memory, or a policy forbidding executable mappings): callers then interpret.
    pub fn new(code: &[u8]) -> Option<CodeMemory> {
        if code.is_empty() {
            return None;
        }
        // SAFETY: a request for a fresh anonymous mapping touches no existing memory.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                code.len(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        let memory = CodeMemory { base: NonNull::new(base.cast())?, len: code.len() };
        // SAFETY: the mapping is `code.len()` writable bytes that nothing else references.
        unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), memory.base.as_ptr(), code.len()) };
        // SAFETY: changes the protection of the mapping made above, which this value owns.
        let protected = unsafe { libc::mprotect(base, code.len(), libc::PROT_READ | libc::PROT_EXEC) };
        // On failure `memory` drops and unmaps.
        (protected == 0).then_some(memory)
    }

    /// The address of byte `offset` of the code.
    pub fn at(&self, offset: usize) -> *const u8 {
        assert!(offset < self.len, "code offset {offset} outside {} bytes", self.len);
        // SAFETY: in bounds, checked above.
        unsafe { self.base.as_ptr().add(offset) }
    }
}

impl Drop for CodeMemory {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `new` made; no code in it can be running, because
        // entries into it are only reachable through the module that owns this value.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}
