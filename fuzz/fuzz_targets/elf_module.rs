//! Arbitrary bytes through our loader for `embedded-elf-x86_64` executables: parsing, mapping the
//! segments, applying relocations and finding the query symbol. `ElfModule::load` runs none of
//! the file's code, so every input must end in a module or an error — never a panic, a fault in
//! the loader, a hang or an unbounded allocation.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rtx::hal::local::elf::ElfModule;

fuzz_target!(|data: &[u8]| {
    let _ = ElfModule::load(data, "iree_hal_executable_library_query");
});
