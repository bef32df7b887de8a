//! Stress: many threads race `and_then` against `set` on many values at once. Every waiter must
//! run exactly once (no lost and no doubled wake-up), see the value that was set, and every value
//! must be freed (payloads count their drops).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use rtx_host::{run_when_ready, AsyncValueRef, IndirectAsyncValue, RcAsyncValue};

struct Payload {
    value: usize,
    drops: Arc<AtomicUsize>,
}

impl Drop for Payload {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn many_threads_race_and_then_against_set_without_lost_or_doubled_wakeups() {
    const VALUES: usize = 2_000;
    const WAITER_THREADS: usize = 6;
    const WAITERS_PER_THREAD: usize = 4;
    let drops = Arc::new(AtomicUsize::new(0));
    let runs: Arc<Vec<AtomicUsize>> = Arc::new((0..VALUES).map(|_| AtomicUsize::new(0)).collect());
    let values: Arc<Vec<AsyncValueRef<Payload>>> =
        Arc::new((0..VALUES).map(|_| AsyncValueRef::unconstructed()).collect());
    let start = Arc::new(Barrier::new(WAITER_THREADS + 2));

    let mut threads = Vec::new();
    for t in 0..WAITER_THREADS {
        let (values, runs, start) = (Arc::clone(&values), Arc::clone(&runs), Arc::clone(&start));
        threads.push(thread::spawn(move || {
            start.wait();
            // Alternate directions so waiters meet the setters at different points.
            let order: Vec<usize> = if t % 2 == 0 { (0..VALUES).collect() } else { (0..VALUES).rev().collect() };
            for i in order {
                for _ in 0..WAITERS_PER_THREAD {
                    let (runs, seen) = (Arc::clone(&runs), values[i].clone());
                    values[i].and_then(move || {
                        assert_eq!(seen.get().value, i, "a waiter sees the value that was set");
                        runs[i].fetch_add(1, Ordering::Relaxed);
                    });
                }
            }
        }));
    }
    for half in 0..2 {
        let (values, drops, start) = (Arc::clone(&values), Arc::clone(&drops), Arc::clone(&start));
        threads.push(thread::spawn(move || {
            start.wait();
            for i in (half..VALUES).step_by(2) {
                values[i].emplace(Payload { value: i, drops: Arc::clone(&drops) }).unwrap();
            }
        }));
    }
    for thread in threads {
        thread.join().unwrap();
    }
    for (i, count) in runs.iter().enumerate() {
        assert_eq!(count.load(Ordering::Relaxed), WAITER_THREADS * WAITERS_PER_THREAD, "value {i}");
    }
    drop(Arc::try_unwrap(values).expect("all threads are done"));
    assert_eq!(drops.load(Ordering::Relaxed), VALUES, "every payload was dropped exactly once");
}

#[test]
fn racing_joins_and_indirections_complete_exactly_once() {
    const ROUNDS: usize = 2_000;
    let completed = Arc::new(AtomicUsize::new(0));
    for round in 0..ROUNDS {
        let (a, b) = (AsyncValueRef::<usize>::unconstructed(), AsyncValueRef::<usize>::unconstructed());
        let indirect = IndirectAsyncValue::new();
        let values: Vec<RcAsyncValue> = vec![a.as_untyped().clone(), b.as_untyped().clone(), indirect.value()];
        let (done, typed) = (Arc::clone(&completed), indirect.typed::<usize>());
        run_when_ready(&values, move || {
            assert_eq!(*typed.get(), round);
            done.fetch_add(1, Ordering::Relaxed);
        });
        let (a2, b2) = (a.clone(), b.clone());
        let forward = thread::spawn(move || indirect.forward_to(a2.into_untyped()).unwrap());
        let set_b = thread::spawn(move || b2.emplace(0).unwrap());
        a.emplace(round).unwrap();
        forward.join().unwrap();
        set_b.join().unwrap();
    }
    assert_eq!(completed.load(Ordering::Relaxed), ROUNDS);
}
