//! Stress tests of the work queues through the public API only, as an embedder sees them.
//!
//! Sized to take a few seconds on a 2-core machine in debug builds. No test asserts on time:
//! speed is measured by `benches/work_queue.rs`; each runs within a deadline far beyond that, so
//! that a lost wake-up or a deadlock fails it, saying which, instead of hanging the run.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::thread;

use rtx_host::work_queue::{create_work_queue, MultiThreadedWorkQueue, SingleThreadedWorkQueue, WorkQueueSpec};
use rtx_host::{AsyncValueRef, RcAsyncValue, StatusCode, Task, WorkQueue};
use rtx_test_support::deadline::{wait_until, within_deadline};

const SPECS: [&str; 4] = ["s", "mstd:1,1", "mstd:2", "mstd:4,8"];

fn queue(spec: &str) -> Arc<dyn WorkQueue> {
    create_work_queue(spec).unwrap_or_else(|e| panic!("{spec}: {e}"))
}

fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

fn bump(count: &Arc<AtomicUsize>) -> Task {
    let count = Arc::clone(count);
    Box::new(move || {
        count.fetch_add(1, Ordering::Relaxed);
    })
}

/// One flag per task: a lost task leaves a 0, a task run twice a 2.
struct RunOnceCheck(Vec<AtomicU8>);

impl RunOnceCheck {
    fn new(n: usize) -> Arc<RunOnceCheck> {
        Arc::new(RunOnceCheck((0..n).map(|_| AtomicU8::new(0)).collect()))
    }

    fn task(self: &Arc<Self>, id: usize) -> Task {
        let this = Arc::clone(self);
        Box::new(move || {
            this.0[id].fetch_add(1, Ordering::Relaxed);
        })
    }

    fn assert_each_ran_once(&self, what: &str) {
        for (id, flag) in self.0.iter().enumerate() {
            assert_eq!(flag.load(Ordering::Relaxed), 1, "{what}: task {id}");
        }
    }
}

fn untyped<T>(values: &[AsyncValueRef<T>]) -> Vec<RcAsyncValue> {
    values.iter().map(|v| v.as_untyped().clone()).collect()
}

#[test]
fn every_spec_parses_or_is_rejected_with_invalid_argument() {
    within_deadline("every_spec_parses_or_is_rejected_with_invalid_argument", || {
        for good in ["s", "mstd", "mstd:1", "mstd:2,3", "mstd:1024,4096"] {
            let spec = WorkQueueSpec::parse(good).unwrap();
            let expected_name = if good == "s" { "s" } else { "mstd" };
            if good != "mstd:1024,4096" {
                assert_eq!(spec.create().unwrap().name(), expected_name);
            }
        }
        for bad in ["", "x", "mstd:", "mstd:0", "mstd:a,b", "mstd:1,2,3", " s", "s:1", "mstd:1, 2", "mstd:2,0"] {
            let error = create_work_queue(bad).err().unwrap_or_else(|| panic!("{bad:?} was accepted"));
            assert_eq!(error.code, StatusCode::InvalidArgument);
            assert!(error.message.contains(&format!("{bad:?}")), "{}", error.message);
        }
    });
}

#[test]
fn many_producers_many_tasks_each_runs_exactly_once() {
    within_deadline("many_producers_many_tasks_each_runs_exactly_once", || {
        let producers = 4;
        let per_producer = 20_000;
        for spec in SPECS {
            let queue = queue(spec);
            let check = RunOnceCheck::new(producers * per_producer);
            let threads: Vec<_> = (0..producers)
                .map(|p| {
                    let (queue, check) = (Arc::clone(&queue), Arc::clone(&check));
                    thread::spawn(move || {
                        for i in 0..per_producer {
                            queue.add_task(check.task(p * per_producer + i));
                        }
                    })
                })
                .collect();
            for thread in threads {
                thread.join().unwrap();
            }
            queue.quiesce().unwrap();
            check.assert_each_ran_once(spec);
        }
    });
}

#[test]
fn quiesce_while_producers_run_covers_each_callers_own_tasks() {
    within_deadline("quiesce_while_producers_run_covers_each_callers_own_tasks", || {
        let producers = 3;
        let per_producer = 5_000;
        for spec in SPECS {
            let queue = queue(spec);
            let stop = Arc::new(AtomicBool::new(false));
            let threads: Vec<_> = (0..producers)
                .map(|p| {
                    let queue = Arc::clone(&queue);
                    thread::spawn(move || {
                        let mine = counter();
                        for i in 0..per_producer {
                            if (i + p) % 7 == 0 {
                                assert!(queue.add_blocking_task(bump(&mine), true).is_ok());
                            } else {
                                queue.add_task(bump(&mine));
                            }
                            if i % 1000 == 999 {
                                // Everything this producer added before the call has run after it.
                                queue.quiesce().unwrap();
                                assert_eq!(mine.load(Ordering::Relaxed), i + 1);
                            }
                        }
                        queue.quiesce().unwrap();
                        assert_eq!(mine.load(Ordering::Relaxed), per_producer);
                    })
                })
                .collect();
            // An unrelated host thread quiescing all along must neither hang nor disturb anyone.
            let quiescer = {
                let (queue, stop) = (Arc::clone(&queue), Arc::clone(&stop));
                thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        queue.quiesce().unwrap();
                        thread::yield_now();
                    }
                })
            };
            for thread in threads {
                thread.join().unwrap();
            }
            stop.store(true, Ordering::Relaxed);
            quiescer.join().unwrap();
        }
    });
}

#[test]
fn fan_out_trees_across_both_pools_are_fully_quiesced() {
    within_deadline("fan_out_trees_across_both_pools_are_fully_quiesced", || {
        fn grow(queue: &Arc<dyn WorkQueue>, count: &Arc<AtomicUsize>, depth: u32) {
            let (q, c) = (Arc::clone(queue), Arc::clone(count));
            let task: Task = Box::new(move || {
                c.fetch_add(1, Ordering::Relaxed);
                if depth > 0 {
                    grow(&q, &c, depth - 1);
                    grow(&q, &c, depth - 1);
                }
            });
            if depth % 5 == 3 {
                assert!(queue.add_blocking_task(task, true).is_ok());
            } else {
                queue.add_task(task);
            }
        }
        let depth = 14;
        for spec in SPECS {
            let queue = queue(spec);
            let count = counter();
            for _ in 0..2 {
                grow(&queue, &count, depth);
            }
            queue.quiesce().unwrap();
            assert_eq!(count.load(Ordering::Relaxed), 2 * ((1 << (depth + 1)) - 1), "{spec}");
        }
    });
}

#[test]
fn await_values_set_by_tasks_blocking_tasks_and_foreign_threads() {
    within_deadline("await_values_set_by_tasks_blocking_tasks_and_foreign_threads", || {
        let n = 2_000;
        for spec in SPECS {
            let queue = queue(spec);
            let values: Vec<AsyncValueRef<usize>> = (0..n).map(|_| AsyncValueRef::unconstructed()).collect();
            let mut foreign = Vec::new();
            for (i, value) in values.iter().enumerate() {
                let value = value.clone();
                let set: Task = Box::new(move || value.emplace(i * 3).unwrap());
                match i % 4 {
                    0 | 1 => queue.add_task(set),
                    2 => assert!(queue.add_blocking_task(set, true).is_ok()),
                    _ => foreign.push(set),
                }
            }
            // Foreign threads set their values while (or before) the host thread waits.
            let setters = thread::spawn(move || foreign.into_iter().for_each(|set| set()));
            queue.await_values(&untyped(&values)).unwrap();
            for (i, value) in values.iter().enumerate() {
                assert_eq!(*value.get(), i * 3, "{spec}");
            }
            setters.join().unwrap();
            queue.quiesce().unwrap();
        }
    });
}

#[test]
fn awaiting_a_value_only_a_foreign_thread_sets_blocks_until_it_does() {
    within_deadline("awaiting_a_value_only_a_foreign_thread_sets_blocks_until_it_does", || {
        for spec in SPECS {
            let queue = queue(spec);
            for round in 0..50 {
                let value = AsyncValueRef::<u32>::unconstructed();
                let barrier = Arc::new(Barrier::new(2));
                let setter = {
                    let (value, barrier) = (value.clone(), Arc::clone(&barrier));
                    thread::spawn(move || {
                        barrier.wait();
                        value.emplace(round).unwrap();
                    })
                };
                barrier.wait();
                queue.await_values(&[value.as_untyped().clone()]).unwrap();
                assert_eq!(*value.get(), round);
                setter.join().unwrap();
            }
        }
    });
}

#[test]
fn error_values_count_as_available() {
    within_deadline("error_values_count_as_available", || {
        for spec in SPECS {
            let queue = queue(spec);
            let value = AsyncValueRef::<i64>::unconstructed();
            let v = value.clone();
            queue.add_task(Box::new(move || {
                v.set_error(rtx_host::Diagnostic::new(StatusCode::Internal, "deliberate")).unwrap();
            }));
            queue.await_values(&[value.as_untyped().clone()]).unwrap();
            assert!(value.is_error());
        }
    });
}

#[test]
fn await_and_quiesce_fail_from_inside_a_task() {
    within_deadline("await_and_quiesce_fail_from_inside_a_task", || {
        for spec in SPECS {
            let queue = queue(spec);
            let (tx, rx) = mpsc::channel();
            let q = Arc::clone(&queue);
            queue.add_task(Box::new(move || {
                let pending = AsyncValueRef::<u8>::unconstructed().into_untyped();
                tx.send((q.is_in_worker_thread(), q.await_values(&[pending]), q.quiesce())).unwrap();
            }));
            queue.quiesce().unwrap();
            let (in_worker, awaited, quiesced) = rx.recv().unwrap();
            assert!(in_worker, "{spec}");
            assert_eq!(awaited.unwrap_err().code, StatusCode::FailedPrecondition, "{spec}");
            assert_eq!(quiesced.unwrap_err().code, StatusCode::FailedPrecondition, "{spec}");
            assert!(!queue.is_in_worker_thread());
        }
    });
}

#[test]
fn blocking_pool_limit_holds_with_many_producers() {
    within_deadline("blocking_pool_limit_holds_with_many_producers", || {
        let limit = 4;
        let per_producer = 100;
        let queue: Arc<dyn WorkQueue> = Arc::new(MultiThreadedWorkQueue::new(2, limit));
        let running = counter();
        let peak = counter();
        let done = counter();
        let producers: Vec<_> = (0..3)
            .map(|_| {
                let (queue, running, peak, done) = (queue.clone(), running.clone(), peak.clone(), done.clone());
                thread::spawn(move || {
                    for _ in 0..per_producer {
                        let (running, peak, done) = (running.clone(), peak.clone(), done.clone());
                        let task: Task = Box::new(move || {
                            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                            peak.fetch_max(now, Ordering::SeqCst);
                            for _ in 0..20 {
                                thread::yield_now();
                            }
                            running.fetch_sub(1, Ordering::SeqCst);
                            done.fetch_add(1, Ordering::SeqCst);
                        });
                        assert!(queue.add_blocking_task(task, true).is_ok());
                    }
                })
            })
            .collect();
        for producer in producers {
            producer.join().unwrap();
        }
        queue.quiesce().unwrap();
        assert_eq!(done.load(Ordering::SeqCst), 3 * per_producer);
        let peak = peak.load(Ordering::SeqCst);
        assert!((1..=limit).contains(&peak), "peak {peak} with a limit of {limit}");
    });
}

#[test]
fn without_queuing_blocking_tasks_are_refused_only_when_every_thread_is_busy() {
    within_deadline("without_queuing_blocking_tasks_are_refused_only_when_every_thread_is_busy", || {
        let limit = 2;
        let queue: Arc<dyn WorkQueue> = Arc::new(MultiThreadedWorkQueue::new(1, limit));
        let (started_tx, started) = mpsc::channel::<()>();
        let mut gates = Vec::new();
        for _ in 0..limit {
            let (release, gate) = mpsc::channel::<()>();
            gates.push(release);
            let started_tx = started_tx.clone();
            let task: Task = Box::new(move || {
                started_tx.send(()).unwrap();
                gate.recv().unwrap();
            });
            assert!(queue.add_blocking_task(task, false).is_ok());
        }
        for _ in 0..limit {
            started.recv().unwrap();
        }
        let count = counter();
        let refused = queue.add_blocking_task(bump(&count), false).expect_err("every blocking thread is busy");
        assert!(queue.add_blocking_task(refused, true).is_ok());
        for release in gates {
            release.send(()).unwrap();
        }
        queue.quiesce().unwrap();
        assert_eq!(count.load(Ordering::Relaxed), 1);

        let single = SingleThreadedWorkQueue::new();
        assert!(single.add_blocking_task(bump(&count), false).is_err());
    });
}

#[test]
fn panicking_tasks_lose_no_other_task() {
    within_deadline("panicking_tasks_lose_no_other_task", || {
        for spec in SPECS {
            let queue = queue(spec);
            let count = counter();
            for i in 0..2_000 {
                if i % 500 == 0 {
                    queue.add_task(Box::new(move || panic!("deliberate test panic {i}")));
                } else {
                    queue.add_task(bump(&count));
                }
            }
            queue.quiesce().unwrap();
            assert_eq!(count.load(Ordering::Relaxed), 1_996, "{spec}");
        }
    });
}

#[test]
fn dropping_a_queue_runs_its_pending_tasks() {
    within_deadline("dropping_a_queue_runs_its_pending_tasks", || {
        for spec in SPECS {
            let check = RunOnceCheck::new(10_000);
            {
                let queue = queue(spec);
                for id in 0..10_000 {
                    if id % 100 == 0 {
                        assert!(queue.add_blocking_task(check.task(id), true).is_ok());
                    } else {
                        queue.add_task(check.task(id));
                    }
                }
            }
            check.assert_each_ran_once(spec);
        }
    });
}

#[test]
fn the_last_reference_may_be_dropped_by_a_task_of_the_queue() {
    within_deadline("the_last_reference_may_be_dropped_by_a_task_of_the_queue", || {
        for spec in ["mstd:1,1", "mstd:2"] {
            let queue = queue(spec);
            let count = counter();
            let (done_tx, done) = mpsc::channel();
            let (q, c) = (Arc::clone(&queue), Arc::clone(&count));
            let (go, gate) = mpsc::channel::<()>();
            queue.add_task(Box::new(move || {
                gate.recv().unwrap();
                for _ in 0..100 {
                    q.add_task(bump(&c));
                }
                drop(q);
                done_tx.send(()).unwrap();
            }));
            drop(queue);
            go.send(()).unwrap();
            done.recv().unwrap();
            wait_until("the 100 tasks a task added to its dropped queue", || count.load(Ordering::SeqCst) == 100);
        }
    });
}
