//! BEF files the fuzzer (`fuzz/fuzz_targets/bef_file.rs`) found trouble with, run the way the
//! fuzz target runs them: opened with the core kernels and every function without arguments run
//! by TFRT's driver on the `s` queue, the host context cancelled after 200 ms. Each must end.
//!
//! - `parallel_for_2g_blocks.bef`: a `tfrt.parallel_for.i32` over 2^31 blocks of one element,
//!   which once built a list of every block (16 GiB) before running any.

use std::sync::{mpsc, Arc};
use std::time::Duration;

use rtx_bef::driver::{Driver, DriverOptions};
use rtx_bef::reader::BefFile;
use rtx_host::HostContext;
use rtx_kernel::KernelRegistry;
use rtx_test_support::fixtures_dir;

#[test]
fn hostile_files_end() {
    let dir = fixtures_dir().join("bef/hostile");
    let mut files: Vec<_> = std::fs::read_dir(&dir).expect("the hostile folder").map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(!files.is_empty(), "no files in {}", dir.display());
    let registry = KernelRegistry::with_core_kernels();
    let mut ran = 0;
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        let Ok(file) = BefFile::from_bytes(&bytes, &registry) else { continue };
        ran += 1;
        let host = Arc::new(HostContext::with_work_queue_spec("s").unwrap());
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
        host.quiesce().unwrap();
        drop(done);
        watchdog.join().unwrap();
    }
    // A file the reader now refuses never reaches the executor: had every one stopped parsing,
    // this test would pass while checking nothing.
    assert!(ran > 0, "none of the {} files in {} opens: the executor ran none of them", files.len(), dir.display());
}
