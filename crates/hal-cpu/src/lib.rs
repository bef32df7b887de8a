//! CPU devices and what they run: the executable library ABI and the loaders for executables the
//! IREE compiler emits for CPUs.

pub mod abi;
pub mod command_buffer;
pub mod cpu;
pub mod device;
pub mod dispatch_times;
pub mod elf;
pub mod executable;
pub mod fpu;
pub mod library;
pub mod native;
pub mod queue;
pub mod system_library;
pub mod transient;
pub mod vmvx;
pub mod vmvx_kernels;
pub mod workers;
