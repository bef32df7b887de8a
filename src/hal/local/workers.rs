//! The worker threads of `local-task`: a rayon pool whose threads are joined when it goes away,
//! so a host that releases its device (or a tool that exits) leaves no thread running behind it.

use std::sync::Mutex;
use std::thread::JoinHandle;

use rayon::{ThreadPool, ThreadPoolBuilder};

use super::fpu;

/// A pool of worker threads for spreading workgroups.
#[derive(Debug)]
pub struct Workers {
    pool: Option<ThreadPool>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Workers {
    /// `count` workers, or `None` when threads cannot be started (the device then runs
    /// workgroups inline).
    pub fn new(count: usize) -> Option<Workers> {
        let threads = Mutex::new(Vec::with_capacity(count));
        let pool = ThreadPoolBuilder::new()
            .num_threads(count.max(1))
            .spawn_handler(|thread| {
                let handle =
                    std::thread::Builder::new().name(format!("rtx-local-task-{}", thread.index())).spawn(|| {
                        fpu::flush_denormals_on_this_thread();
                        thread.run()
                    })?;
                threads.lock().unwrap_or_else(|p| p.into_inner()).push(handle);
                Ok(())
            })
            .build()
            .ok()?;
        Some(Workers { pool: Some(pool), threads })
    }

    pub fn pool(&self) -> &ThreadPool {
        self.pool.as_ref().expect("present until dropped")
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        // Dropping the pool tells its threads to finish; then wait for them (never from one of
        // them: a worker cannot join itself).
        let own = self.pool.as_ref().is_some_and(|pool| pool.current_thread_index().is_some());
        drop(self.pool.take());
        if own {
            return;
        }
        for handle in self.threads.get_mut().unwrap_or_else(|p| p.into_inner()).drain(..) {
            let _ = handle.join();
        }
    }
}
