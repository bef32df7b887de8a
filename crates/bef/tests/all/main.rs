//! The integration tests of rtx-bef, in one binary.

mod bef_hostile;
mod bef_round_trip;
mod bef_writer;
mod sync_function_kernels;
