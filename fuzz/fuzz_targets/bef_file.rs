//! Arbitrary bytes as a BEF file: the reader (`BefFile::from_bytes`, which verifies every
//! section, table, index and the dataflow graph, and resolves kernel names against the registry)
//! and, for what opens, TFRT's driver running every function without arguments on a
//! single-threaded queue. A watchdog cancels the host context after 200 ms so that hostile loops
//! (`tfrt.while`, `tfrt.repeat.i32` with huge counts) end in `Cancelled` errors rather than
//! timeouts. Each input must end in a value or an error, never a panic, hang or crash.

#![no_main]

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use rtx::bef::driver::{Driver, DriverOptions};
use rtx::bef::reader::BefFile;
use rtx::host::HostContext;
use rtx::kernel::KernelRegistry;

fuzz_target!(|data: &[u8]| {
    let registry = KernelRegistry::with_core_kernels();
    let Ok(file) = BefFile::from_bytes(data, &registry) else { return };
    let host = Arc::new(HostContext::with_work_queue_spec("s").expect("the s queue"));
    let discard = Arc::new(|_: &str| {});
    let driver = Driver::new(Arc::clone(&host), discard.clone(), discard);
    let (done, finished) = mpsc::channel::<()>();
    let watched = Arc::clone(&host);
    let watchdog = std::thread::spawn(move || {
        if finished.recv_timeout(Duration::from_millis(200)).is_err() {
            watched.cancel();
        }
    });
    let _ = driver.run(&file, &DriverOptions::default());
    let _ = host.quiesce();
    drop(done);
    watchdog.join().expect("the watchdog ends");
});
