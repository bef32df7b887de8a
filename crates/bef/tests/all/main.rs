//! The integration tests of rtx-bef, in one binary.

mod sync_function_kernels;
