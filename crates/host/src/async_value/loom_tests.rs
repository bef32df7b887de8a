//! Model checks of the AsyncValue protocol with loom: every interleaving (up to loom's preemption
//! bound) of pushing waiters, claiming, publishing and dropping references.
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test --release --lib loom`.

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

use super::*;
use crate::{Diagnostic, StatusCode};

fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

#[test]
fn and_then_racing_set_runs_the_waiter_exactly_once() {
    loom::model(|| {
        let value = AsyncValueRef::<i32>::unconstructed();
        let runs = counter();
        let (waiter_value, waiter_runs) = (value.clone(), Arc::clone(&runs));
        let waiter = thread::spawn(move || {
            let seen = waiter_value.clone();
            waiter_value.and_then(move || {
                assert_eq!(*seen.get(), 1);
                waiter_runs.fetch_add(1, Ordering::SeqCst);
            });
        });
        value.emplace(1).unwrap();
        waiter.join().unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn two_waiters_and_a_setter_all_agree() {
    loom::model(|| {
        let value = RcAsyncValue::unavailable_slot();
        let runs = counter();
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (value, runs) = (value.clone(), Arc::clone(&runs));
                thread::spawn(move || {
                    value.and_then(move || {
                        runs.fetch_add(1, Ordering::SeqCst);
                    })
                })
            })
            .collect();
        value.emplace(5i64).unwrap();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    });
}

#[test]
fn racing_setters_have_one_winner_and_the_waiter_sees_its_result() {
    loom::model(|| {
        let value = RcAsyncValue::unavailable_slot();
        let runs = counter();
        let (observer, observer_runs) = (value.clone(), Arc::clone(&runs));
        value.and_then(move || {
            assert!(observer.is_available());
            observer_runs.fetch_add(1, Ordering::SeqCst);
        });
        let other = value.clone();
        let erring = thread::spawn(move || other.set_error(Diagnostic::new(StatusCode::Internal, "e")).is_ok());
        let setting = value.emplace(2i32).is_ok();
        let erred = erring.join().unwrap();
        assert!(setting ^ erred, "exactly one setter wins");
        assert_eq!(value.is_error(), erred);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn dropping_the_last_references_concurrently_frees_once() {
    loom::model(|| {
        let value = AsyncValueRef::available(3i32);
        let other = value.clone();
        let dropper = thread::spawn(move || drop(other));
        drop(value);
        dropper.join().unwrap();
    });
}

#[test]
fn forwarding_racing_the_target_set_completes_the_indirect_value() {
    loom::model(|| {
        let indirect = IndirectAsyncValue::new();
        let target = AsyncValueRef::<i32>::unconstructed();
        let runs = counter();
        let (typed, r) = (indirect.typed::<i32>(), Arc::clone(&runs));
        indirect.and_then(move || {
            assert_eq!(*typed.get(), 9);
            r.fetch_add(1, Ordering::SeqCst);
        });
        let setter_target = target.clone();
        let setter = thread::spawn(move || setter_target.emplace(9).unwrap());
        indirect.forward_to(target.into_untyped()).unwrap();
        setter.join().unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    });
}
