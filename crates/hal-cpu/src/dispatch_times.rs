//! Wall time per export of the CPU devices' dispatches, for finding which kernels a call spends its
//! time in and comparing them one by one with IREE's (`iree-benchmark-module
//! --device_profiling_mode=host-execution`, then `iree-profile statistics`). Off unless a host
//! turns it on (`rtx bench --dispatch_times`): then every dispatch is timed on the thread that
//! submits it, all of its workgroups included, and added to one table for the process.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

static ENABLED: AtomicBool = AtomicBool::new(false);
static TABLE: Mutex<Option<Table>> = Mutex::new(None);

/// Starts timing dispatches, for the rest of the process.
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Whether dispatches are timed (one relaxed load per dispatch when they are not).
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Adds one dispatch of `export` that took `elapsed`.
pub fn record(export: &str, elapsed: Duration) {
    TABLE.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert_with(Table::default).record(export, elapsed);
}

/// The times recorded so far, most total time first; the table starts empty again.
pub fn take() -> Vec<ExportTime> {
    TABLE.lock().unwrap_or_else(PoisonError::into_inner).take().unwrap_or_default().into_sorted()
}

/// The dispatches of one export.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportTime {
    pub export: String,
    pub count: u64,
    pub total: Duration,
}

#[derive(Default)]
struct Table {
    exports: HashMap<String, (u64, Duration)>,
}

impl Table {
    fn record(&mut self, export: &str, elapsed: Duration) {
        match self.exports.get_mut(export) {
            Some((count, total)) => {
                *count += 1;
                *total += elapsed;
            }
            None => {
                self.exports.insert(export.to_string(), (1, elapsed));
            }
        }
    }

    fn into_sorted(self) -> Vec<ExportTime> {
        let mut times: Vec<ExportTime> =
            self.exports.into_iter().map(|(export, (count, total))| ExportTime { export, count, total }).collect();
        times.sort_by(|a, b| b.total.cmp(&a.total).then_with(|| a.export.cmp(&b.export)));
        times
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_sums_per_export_and_sorts_by_total() {
        let mut table = Table::default();
        let us = Duration::from_micros;
        table.record("conv", us(30));
        table.record("fill", us(5));
        table.record("conv", us(40));
        table.record("softmax", us(70));
        let entry = |export: &str, count, total| ExportTime { export: export.to_string(), count, total };
        assert_eq!(
            table.into_sorted(),
            [entry("conv", 2, us(70)), entry("softmax", 1, us(70)), entry("fill", 1, us(5))],
            "equal totals in name order"
        );
    }
}
