//! CPU devices and what they run: the executable library ABI and the loaders for executables the
//! IREE compiler emits for CPUs.

pub(crate) mod abi;
pub mod command_buffer;
pub(crate) mod cpu;
pub mod device;
pub mod dispatch_times;
pub mod elf;
pub mod executable;
pub(crate) mod fpu;
pub mod library;
pub(crate) mod native;
pub(crate) mod queue;
pub mod system_library;
pub mod transient;
pub(crate) mod vmvx;
pub mod vmvx_kernels;
pub mod workers;
