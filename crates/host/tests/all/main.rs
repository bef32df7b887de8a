//! The integration tests of rtx-host, in one binary.

mod async_value_stress;
mod work_queue_stress;
