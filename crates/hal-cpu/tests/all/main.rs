//! The integration tests of rtx-hal-cpu, in one binary (hal_allocations.rs beside it is a binary
//! of its own: it counts the allocations of its whole process).

mod hal_executables;
