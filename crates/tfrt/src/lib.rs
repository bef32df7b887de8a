//! TFRT's host runtime on rtx: the kernel layer ([`kernel`]: registry, frames, the kernel
//! library) and the Binary Executable Format with its executor ([`bef`]).

pub mod bef;
pub mod kernel;
