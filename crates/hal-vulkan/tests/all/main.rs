//! The integration tests of rtx-hal-vulkan, in one binary (vulkan_barriers.rs and
//! vulkan_teardown.rs beside it are binaries of their own: the first sets `RTX_VULKAN_VALIDATION`
//! before the process's Vulkan instance exists, the second waits for that instance to go).

mod vulkan_device;
mod vulkan_dispatch;
mod vulkan_executables;
mod vulkan_fixtures;
mod vulkan_pipelines;
