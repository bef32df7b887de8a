//! Unit tests of the thread pool, sized so Miri finishes them (`cfg!(miri)` shrinks the counts).
//! None asserts on time: waits are on values, channels or the pool's own state.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;

use rtx_test_support::deadline::wait_until;

use super::*;
use crate::async_value::AsyncValueRef;

fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

fn bump(count: &Arc<AtomicUsize>) -> Task {
    let count = Arc::clone(count);
    Box::new(move || {
        count.fetch_add(1, Ordering::Relaxed);
    })
}

#[test]
fn every_task_added_from_outside_runs_once() {
    let queue = MultiThreadedWorkQueue::new(2, 2);
    let n = if cfg!(miri) { 30 } else { 10_000 };
    let count = counter();
    for _ in 0..n {
        queue.add_task(bump(&count));
    }
    queue.quiesce().unwrap();
    assert_eq!(count.load(Ordering::Relaxed), n);
}

#[test]
fn quiesce_waits_for_tasks_added_by_tasks_in_both_pools() {
    fn spawn_tree(queue: &Arc<MultiThreadedWorkQueue>, count: &Arc<AtomicUsize>, depth: u32) {
        let (q, c) = (Arc::clone(queue), Arc::clone(count));
        let task: Task = Box::new(move || {
            c.fetch_add(1, Ordering::Relaxed);
            if depth > 0 {
                spawn_tree(&q, &c, depth - 1);
                spawn_tree(&q, &c, depth - 1);
            }
        });
        if depth.is_multiple_of(2) {
            queue.add_task(task);
        } else {
            assert!(queue.add_blocking_task(task, true).is_ok());
        }
    }
    let queue = Arc::new(MultiThreadedWorkQueue::new(2, 2));
    let count = counter();
    let depth = if cfg!(miri) { 3 } else { 10 };
    spawn_tree(&queue, &count, depth);
    queue.quiesce().unwrap();
    assert_eq!(count.load(Ordering::Relaxed), (1 << (depth + 1)) - 1);
}

#[test]
fn quiesce_on_an_idle_queue_returns() {
    let queue = MultiThreadedWorkQueue::new(1, 1);
    queue.quiesce().unwrap();
    queue.quiesce().unwrap();
}

#[test]
fn await_values_set_by_tasks_and_by_a_foreign_thread() {
    let queue = MultiThreadedWorkQueue::new(2, 1);
    let by_task = AsyncValueRef::<u32>::unconstructed();
    let by_blocking_task = AsyncValueRef::<u32>::unconstructed();
    let by_thread = AsyncValueRef::<u32>::unconstructed();
    let v = by_task.clone();
    queue.add_task(Box::new(move || v.emplace(1).unwrap()));
    let v = by_blocking_task.clone();
    assert!(queue.add_blocking_task(Box::new(move || v.emplace(2).unwrap()), false).is_ok());
    let v = by_thread.clone();
    let setter = thread::spawn(move || v.emplace(3).unwrap());
    let values =
        [by_task.clone().into_untyped(), by_blocking_task.clone().into_untyped(), by_thread.clone().into_untyped()];
    queue.await_values(&values).unwrap();
    assert_eq!((*by_task.get(), *by_blocking_task.get(), *by_thread.get()), (1, 2, 3));
    setter.join().unwrap();
}

#[test]
fn await_and_quiesce_fail_on_workers_and_blocking_threads() {
    let queue = Arc::new(MultiThreadedWorkQueue::new(1, 1));
    let errors = Arc::new(Mutex::new(Vec::new()));
    let probe = |queue: &Arc<MultiThreadedWorkQueue>, errors: &Arc<Mutex<Vec<Diagnostic>>>| -> Task {
        let (q, e) = (Arc::clone(queue), Arc::clone(errors));
        Box::new(move || {
            let never = AsyncValueRef::<i32>::unconstructed().into_untyped();
            e.lock().unwrap().push(q.await_values(&[never]).unwrap_err());
            e.lock().unwrap().push(q.quiesce().unwrap_err());
        })
    };
    queue.add_task(probe(&queue, &errors));
    assert!(queue.add_blocking_task(probe(&queue, &errors), true).is_ok());
    queue.quiesce().unwrap();
    let errors = errors.lock().unwrap();
    assert_eq!(errors.len(), 4);
    for error in errors.iter() {
        assert_eq!(error.code, StatusCode::FailedPrecondition);
        assert!(error.message.contains("thread of work queue 'mstd'"), "{}", error.message);
    }
}

#[test]
fn is_in_worker_thread_is_per_queue() {
    let a = Arc::new(MultiThreadedWorkQueue::new(1, 1));
    let b = Arc::new(MultiThreadedWorkQueue::new(1, 1));
    assert!(!a.is_in_worker_thread());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let probe = |seen: &Arc<Mutex<Vec<(bool, bool)>>>| -> Task {
        let (a, b, seen) = (Arc::clone(&a), Arc::clone(&b), Arc::clone(seen));
        Box::new(move || seen.lock().unwrap().push((a.is_in_worker_thread(), b.is_in_worker_thread())))
    };
    a.add_task(probe(&seen));
    assert!(a.add_blocking_task(probe(&seen), true).is_ok());
    b.add_task(probe(&seen));
    a.quiesce().unwrap();
    b.quiesce().unwrap();
    let mut seen = seen.lock().unwrap().clone();
    seen.sort();
    assert_eq!(seen, vec![(false, true), (true, false), (true, false)]);
}

#[test]
fn without_queuing_a_blocking_task_needs_a_free_thread() {
    let queue = MultiThreadedWorkQueue::new(1, 1);
    let (release, gate) = mpsc::channel::<()>();
    let (started_tx, started) = mpsc::channel::<()>();
    queue
        .add_blocking_task(
            Box::new(move || {
                started_tx.send(()).unwrap();
                gate.recv().unwrap();
            }),
            false,
        )
        .unwrap_or_else(|_| panic!("the first blocking task starts a thread"));
    started.recv().unwrap();
    let count = counter();
    let refused = queue.add_blocking_task(bump(&count), false);
    let task = refused.expect_err("the only blocking thread is busy");
    assert!(queue.add_blocking_task(task, true).is_ok(), "queuing is allowed");
    release.send(()).unwrap();
    queue.quiesce().unwrap();
    assert_eq!(count.load(Ordering::Relaxed), 1);
    // The thread is idle now (it lingers before exiting) or gone: either way there is room.
    assert!(queue.add_blocking_task(bump(&count), false).is_ok());
    queue.quiesce().unwrap();
    assert_eq!(count.load(Ordering::Relaxed), 2);
}

#[test]
fn blocking_pool_runs_at_most_m_tasks_at_once_and_reaches_m() {
    let m = 3;
    let n = if cfg!(miri) { 8 } else { 60 };
    let queue = MultiThreadedWorkQueue::new(1, m);
    let running = counter();
    let peak = counter();
    let reached = Arc::new(AtomicBool::new(false));
    let done = counter();
    for _ in 0..n {
        let (running, peak, reached, done) = (running.clone(), peak.clone(), reached.clone(), done.clone());
        let task: Task = Box::new(move || {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            if now == m {
                reached.store(true, Ordering::SeqCst);
            }
            // The first m tasks can only get past this together, on m threads at once.
            wait_until("the task reached its gate", || reached.load(Ordering::SeqCst));
            running.fetch_sub(1, Ordering::SeqCst);
            done.fetch_add(1, Ordering::SeqCst);
        });
        assert!(queue.add_blocking_task(task, true).is_ok());
    }
    queue.quiesce().unwrap();
    assert_eq!(done.load(Ordering::SeqCst), n);
    assert_eq!(peak.load(Ordering::SeqCst), m);
}

#[test]
fn a_task_added_while_every_worker_sleeps_is_run() {
    let workers = 2;
    let queue = MultiThreadedWorkQueue::new(workers, 1);
    let rounds = if cfg!(miri) { 3 } else { 200 };
    let count = counter();
    for round in 0..rounds {
        // Parked, not spinning: every worker has announced itself as a sleeper.
        wait_until("every worker asleep", || queue.shared.non_blocking.sleepers.load(Ordering::SeqCst) == workers);
        queue.add_task(bump(&count));
        queue.quiesce().unwrap();
        assert_eq!(count.load(Ordering::Relaxed), round + 1);
    }
}

/// The worker that went to sleep last wakes first: with every worker asleep between tasks, the
/// one that ran a task is the one woken for the next, every time. (Asleep, not only announced: a
/// worker still taking its last look may find the task before the one woken for it.)
#[test]
fn the_last_worker_to_sleep_is_the_first_woken() {
    let workers = 3;
    let queue = MultiThreadedWorkQueue::new(workers, 1);
    let rounds = if cfg!(miri) { 3 } else { 50 };
    let ran_on = Arc::new(Mutex::new(Vec::new()));
    for _ in 0..rounds {
        wait_until("every worker waiting", || queue.shared.non_blocking.waiting() == workers);
        let ran_on = Arc::clone(&ran_on);
        queue.add_task(Box::new(move || ran_on.lock().unwrap().push(thread::current().id())));
        queue.quiesce().unwrap();
    }
    let ran_on = ran_on.lock().unwrap();
    assert_eq!(ran_on.len(), rounds);
    assert!(ran_on.iter().all(|&id| id == ran_on[0]), "tasks moved between workers: {ran_on:?}");
}

#[test]
fn a_panicking_task_leaves_workers_and_accounting_intact() {
    let queue = MultiThreadedWorkQueue::new(1, 1);
    let count = counter();
    queue.add_task(Box::new(|| panic!("deliberate test panic")));
    assert!(queue.add_blocking_task(Box::new(|| panic!("deliberate test panic")), true).is_ok());
    queue.quiesce().unwrap();
    for _ in 0..5 {
        queue.add_task(bump(&count));
    }
    assert!(queue.add_blocking_task(bump(&count), true).is_ok());
    queue.quiesce().unwrap();
    assert_eq!(count.load(Ordering::Relaxed), 6);
}

#[test]
fn drop_runs_every_queued_task_then_joins() {
    let n = if cfg!(miri) { 20 } else { 5_000 };
    let count = counter();
    {
        let queue = MultiThreadedWorkQueue::new(2, 2);
        for i in 0..n {
            if i % 10 == 0 {
                assert!(queue.add_blocking_task(bump(&count), true).is_ok());
            } else {
                queue.add_task(bump(&count));
            }
        }
    }
    assert_eq!(count.load(Ordering::Relaxed), n);
}

#[test]
fn dropping_the_queue_from_its_own_worker_does_not_deadlock() {
    for blocking in [false, true] {
        let queue: Arc<dyn WorkQueue> = Arc::new(MultiThreadedWorkQueue::new(2, 1));
        let count = counter();
        let (go, gate) = mpsc::channel::<()>();
        let (done_tx, done) = mpsc::channel::<bool>();
        let (q, c) = (Arc::clone(&queue), Arc::clone(&count));
        let last_owner: Task = Box::new(move || {
            gate.recv().unwrap();
            // Work added now must still run after the queue is gone.
            for _ in 0..3 {
                q.add_task(bump(&c));
            }
            let was_worker = q.is_in_worker_thread();
            drop(q);
            done_tx.send(was_worker).unwrap();
        });
        if blocking {
            assert!(queue.add_blocking_task(last_owner, false).is_ok());
        } else {
            queue.add_task(last_owner);
        }
        drop(queue);
        go.send(()).unwrap();
        assert!(done.recv().unwrap());
        wait_until("the three tasks run", || count.load(Ordering::SeqCst) == 3);
    }
}

#[test]
fn try_new_rejects_counts_outside_the_spec_range() {
    for (workers, blocking) in [(0, 1), (1, 0), (1025, 1), (1, 4097)] {
        let error = MultiThreadedWorkQueue::try_new(workers, blocking).err().unwrap();
        assert_eq!(error.code, StatusCode::InvalidArgument);
    }
}

#[test]
fn reports_name_and_parallelism() {
    let queue = MultiThreadedWorkQueue::new(3, 1);
    assert_eq!(queue.name(), "mstd");
    assert_eq!(queue.parallelism_level(), 3);
}

#[test]
fn a_task_that_keeps_readding_itself_does_not_starve_injected_tasks() {
    fn spin_until(queue: Arc<MultiThreadedWorkQueue>, stop: Arc<AtomicBool>, rounds: Arc<AtomicUsize>) {
        let q = Arc::clone(&queue);
        queue.add_task(Box::new(move || {
            rounds.fetch_add(1, Ordering::Relaxed);
            if !stop.load(Ordering::SeqCst) {
                spin_until(q, stop, rounds);
            }
        }));
    }
    let queue = Arc::new(MultiThreadedWorkQueue::new(1, 1));
    let stop = Arc::new(AtomicBool::new(false));
    let rounds = counter();
    let (started_tx, started) = mpsc::channel::<()>();
    // Start the self-re-adding task from the worker itself, so its copies go to the local deque.
    let (q, s, r) = (Arc::clone(&queue), Arc::clone(&stop), Arc::clone(&rounds));
    queue.add_task(Box::new(move || {
        spin_until(q, s, r);
        started_tx.send(()).unwrap();
    }));
    started.recv().unwrap();
    let s = Arc::clone(&stop);
    queue.add_task(Box::new(move || s.store(true, Ordering::SeqCst)));
    queue.quiesce().unwrap();
    assert!(stop.load(Ordering::SeqCst));
    assert!(rounds.load(Ordering::Relaxed) >= 1);
}
