//! CPU devices and what they run: the executable library ABI and the loaders for executables the
//! IREE compiler emits for CPUs.

pub mod abi;
pub mod cpu;
pub mod elf;
pub mod fpu;
pub mod library;
pub mod native;
pub mod system_library;
pub mod vmvx;
pub mod vmvx_kernels;
pub mod workers;
