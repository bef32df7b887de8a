//! The integration tests of rtx-hal, in one binary.

mod vm_native;
