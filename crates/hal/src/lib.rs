//! The HAL: the backend interface devices implement (`backend`) and the refs programs hold over it
//! (buffers and buffer views, devices, command buffers, executables, fences on AsyncValue), and
//! the `hal` VM module that compiled programs import. Stands on `host` and plugs into `vm` as a
//! native module; backends (the CPU devices in `rtx-hal-cpu`, Vulkan in `rtx-hal-vulkan`)
//! implement its traits, and it names none of them.

pub mod args;
pub mod backend;
pub mod buffer;
pub mod buffer_view;
pub mod byte_range;
pub mod check;
pub mod command_buffer;
pub mod device;
pub mod element_type;
pub mod executable;
pub mod fence;
pub mod file;
pub mod heap;
pub mod module;
pub mod npy;
pub mod npz;
pub mod run_io;
pub mod tensor_io;
