//! Unit tests of the AsyncValue state machine. Small enough to run under Miri, which also
//! proves no value or waiter node leaks (Miri reports leaked allocations).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use super::*;
use crate::{Chain, Diagnostic, StatusCode};

/// A payload that counts its drops, to prove every value is freed exactly once.
struct Tracked {
    value: i64,
    drops: Arc<AtomicUsize>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

fn tracked(value: i64) -> (Tracked, Arc<AtomicUsize>) {
    let drops = Arc::new(AtomicUsize::new(0));
    (Tracked { value, drops: Arc::clone(&drops) }, drops)
}

fn error(message: &str) -> Diagnostic {
    Diagnostic::new(StatusCode::Internal, message)
}

#[test]
fn available_value_reads_back_and_is_freed_once() {
    let (payload, drops) = tracked(42);
    let value = AsyncValueRef::available(payload);
    let copy = value.clone();
    assert_eq!(value.state(), State::Concrete);
    assert_eq!(copy.get().value, 42);
    drop(value);
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(copy);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn continuation_attached_before_set_runs_once_on_the_setter() {
    let value = AsyncValueRef::<i32>::unconstructed();
    let runs = Arc::new(AtomicUsize::new(0));
    let (r, v) = (Arc::clone(&runs), value.clone());
    value.and_then(move || {
        assert_eq!(*v.get(), 7);
        r.fetch_add(1, Ordering::SeqCst);
    });
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    value.emplace(7).unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn continuation_attached_after_set_runs_at_once() {
    let value = AsyncValueRef::available(Chain);
    let ran = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&ran);
    value.and_then(move || {
        r.fetch_add(1, Ordering::SeqCst);
    });
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}

#[test]
fn waiters_run_in_the_order_they_were_attached() {
    let value = AsyncValueRef::<i32>::unconstructed();
    let order = Arc::new(Mutex::new(Vec::new()));
    for i in 0..4 {
        let order = Arc::clone(&order);
        value.and_then(move || order.lock().unwrap().push(i));
    }
    value.emplace(1).unwrap();
    assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3]);
}

#[test]
fn a_value_is_set_once() {
    let value = AsyncValueRef::<i32>::unconstructed();
    value.emplace(1).unwrap();
    assert_eq!(value.emplace(2), Err(AccessError::AlreadySet(State::Concrete)));
    assert_eq!(value.set_error(error("late")), Err(AccessError::AlreadySet(State::Concrete)));
    assert_eq!(*value.get(), 1);
}

#[test]
fn error_value_reports_its_diagnostic_to_typed_reads() {
    let value = AsyncValueRef::<f32>::unconstructed();
    value.set_error(error("shape mismatch")).unwrap();
    assert!(value.is_error() && value.is_available());
    assert_eq!(value.get_error().unwrap().message, "shape mismatch");
    assert_eq!(value.try_get::<f32>(), Err(AccessError::IsError(error("shape mismatch"))));
    let untyped = RcAsyncValue::error(Diagnostic::cancelled());
    assert_eq!(untyped.get_error().unwrap().code, StatusCode::Cancelled);
}

#[test]
fn constructed_payload_is_published_or_dropped_for_an_error() {
    let (payload, drops) = tracked(5);
    let value = AsyncValueRef::constructed(payload);
    assert_eq!(value.state(), State::Constructed);
    assert!(!value.is_available());
    value.set_state_concrete().unwrap();
    assert_eq!(value.get().value, 5);
    assert!(value.set_state_concrete().is_err());
    drop(value);
    assert_eq!(drops.load(Ordering::SeqCst), 1);

    let (payload, drops) = tracked(6);
    let value = AsyncValueRef::constructed(payload);
    value.set_error(error("gave up")).unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 1, "the constructed payload is dropped when the error replaces it");
    drop(value);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn wrong_type_is_refused() {
    let value = AsyncValueRef::available(1i32).into_untyped();
    assert!(matches!(value.try_get::<i64>(), Err(AccessError::WrongType { .. })));
    assert!(value.is_type::<i32>() && !value.is_type::<u32>());
    assert!(AsyncValueRef::<f64>::downcast(value.clone()).is_err());
    assert_eq!(*AsyncValueRef::<i32>::downcast(value).unwrap().get(), 1);
    let promise = AsyncValueRef::<i32>::unconstructed();
    assert!(matches!(promise.emplace_untyped_check(), Err(AccessError::WrongType { .. })));
}

impl AsyncValueRef<i32> {
    /// Emplacing a different type into a typed promise must fail.
    fn emplace_untyped_check(&self) -> Result<(), AccessError> {
        self.as_untyped().emplace(1.5f64)
    }
}

#[test]
fn untyped_slot_takes_the_type_of_its_setter() {
    let slot = RcAsyncValue::unavailable_slot();
    assert!(!slot.is_type::<i64>());
    slot.emplace(-9i64).unwrap();
    assert_eq!(*slot.try_get::<i64>().unwrap(), -9);
    assert!(slot.is_type::<i64>());
    let wide = RcAsyncValue::unavailable_slot();
    assert!(matches!(wide.emplace([0u64; 2]), Err(AccessError::WrongType { .. })));
    wide.emplace(Chain).unwrap();
    assert!(wide.is_type::<Chain>());
}

#[test]
fn unset_value_drops_its_waiters_without_running_them() {
    let value = AsyncValueRef::<i32>::unconstructed();
    let (capture, drops) = tracked(0);
    let ran = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&ran);
    value.and_then(move || {
        let _keep = &capture;
        r.fetch_add(1, Ordering::SeqCst);
    });
    drop(value);
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn a_panicking_waiter_does_not_stop_the_others() {
    let value = AsyncValueRef::<i32>::unconstructed();
    let ran = Arc::new(AtomicUsize::new(0));
    for i in 0..3 {
        let ran = Arc::clone(&ran);
        value.and_then(move || {
            ran.fetch_add(1, Ordering::SeqCst);
            if i == 1 {
                panic!("waiter {i} fails");
            }
        });
    }
    let setter = value.clone();
    let outcome = std::panic::catch_unwind(move || setter.emplace(3));
    assert!(outcome.is_err(), "the panic reaches the setter");
    assert_eq!(ran.load(Ordering::SeqCst), 3);
    assert_eq!(*value.get(), 3);
}

#[test]
fn over_aligned_payloads_and_their_errors_live_at_the_right_offset() {
    #[repr(align(64))]
    #[derive(Debug, PartialEq)]
    struct Wide([u8; 64]);
    let value = AsyncValueRef::available(Wide([7; 64]));
    assert_eq!(value.get() as *const Wide as usize % 64, 0);
    assert_eq!(value.get().0[63], 7);
    let failed = AsyncValueRef::<Wide>::unconstructed();
    failed.set_error(error("wide failure")).unwrap();
    assert_eq!(failed.get_error().unwrap().message, "wide failure");
}

#[test]
fn indirect_value_forwards_to_an_available_value() {
    let indirect = IndirectAsyncValue::new();
    let typed = indirect.typed::<i32>();
    assert!(!indirect.is_available());
    assert!(!indirect.is_type::<i32>());
    indirect.forward_to(AsyncValueRef::available(11i32).into_untyped()).unwrap();
    assert_eq!(*typed.get(), 11);
    assert!(indirect.is_type::<i32>());
    assert_eq!(indirect.type_name(), "i32");
}

#[test]
fn indirect_value_waits_for_an_unavailable_target_and_runs_its_waiters() {
    let indirect = IndirectAsyncValue::new();
    let target = AsyncValueRef::<i64>::unconstructed();
    let seen = Arc::new(AtomicUsize::new(0));
    let (s, typed) = (Arc::clone(&seen), indirect.typed::<i64>());
    indirect.and_then(move || {
        s.store(*typed.get() as usize, Ordering::SeqCst);
    });
    indirect.forward_to(target.clone().into_untyped()).unwrap();
    assert!(!indirect.is_available());
    target.emplace(99).unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 99);
}

#[test]
fn indirect_value_forwards_error_to_waiters() {
    let indirect = IndirectAsyncValue::new();
    let target = AsyncValueRef::<i32>::unconstructed();
    indirect.forward_to(target.clone().into_untyped()).unwrap();
    target.set_error(error("producer failed")).unwrap();
    assert!(indirect.is_error());
    assert_eq!(indirect.get_error().unwrap().message, "producer failed");
    let direct = IndirectAsyncValue::new();
    direct.set_error(error("no producer")).unwrap();
    assert_eq!(direct.get_error().unwrap().message, "no producer");
}

#[test]
fn chains_of_indirections_collapse_to_one_hop() {
    let (a, b, c) = (IndirectAsyncValue::new(), IndirectAsyncValue::new(), IndirectAsyncValue::new());
    let concrete = AsyncValueRef::available(5i32);
    a.forward_to(b.value()).unwrap();
    b.forward_to(c.value()).unwrap();
    c.forward_to(concrete.clone().into_untyped()).unwrap();
    for value in [&a, &b, &c] {
        assert!(value.is_available());
        // SAFETY: the value is available, so its target is published.
        let target = unsafe { value.ptr.resolved() };
        assert_eq!(target, concrete.ptr, "an indirect value points straight at the concrete one");
    }
    let late = IndirectAsyncValue::new();
    late.forward_to(a.value()).unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { late.ptr.resolved() }, concrete.ptr);
}

#[test]
fn an_indirect_value_is_unique_only_with_its_target() {
    let indirect = IndirectAsyncValue::new();
    assert!(!indirect.is_unique(), "not forwarded yet: nothing to reuse");
    let target = AsyncValueRef::available(3i32).into_untyped();
    indirect.forward_to(target.clone()).unwrap();
    assert!(!indirect.is_unique(), "the target is still held by `target`");
    drop(target);
    assert!(indirect.is_unique());
    let second = indirect.value();
    assert!(!indirect.is_unique() && !second.is_unique());
}

#[test]
fn forwarding_to_itself_or_twice_is_refused() {
    let indirect = IndirectAsyncValue::new();
    assert!(indirect.forward_to(indirect.value()).is_err());
    indirect.forward_to(AsyncValueRef::available(1i32).into_untyped()).unwrap();
    assert!(matches!(
        indirect.forward_to(AsyncValueRef::available(2i32).into_untyped()),
        Err(AccessError::AlreadySet(State::Concrete))
    ));
    assert_eq!(*indirect.try_get::<i32>().unwrap(), 1);
}

#[test]
fn raw_round_trip_keeps_the_count() {
    let (payload, drops) = tracked(1);
    let value = AsyncValueRef::available(payload).into_untyped();
    let raw = value.clone().into_raw();
    // SAFETY: `raw` holds a live reference.
    let again = unsafe { RcAsyncValue::clone_from_raw(raw) };
    // SAFETY: give the raw reference back.
    drop(unsafe { RcAsyncValue::from_raw(raw) });
    drop(value);
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(again);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn racing_and_then_against_set_runs_every_waiter_exactly_once() {
    let (rounds, threads) = if cfg!(miri) { (4, 3) } else { (200, 4) };
    for _ in 0..rounds {
        let value = AsyncValueRef::<i32>::unconstructed();
        let runs = Arc::new(AtomicUsize::new(0));
        let waiters: Vec<_> = (0..threads)
            .map(|_| {
                let (value, runs) = (value.clone(), Arc::clone(&runs));
                thread::spawn(move || {
                    for _ in 0..3 {
                        let (runs, seen) = (Arc::clone(&runs), value.clone());
                        value.and_then(move || {
                            assert_eq!(*seen.get(), 17);
                            runs.fetch_add(1, Ordering::SeqCst);
                        });
                    }
                })
            })
            .collect();
        let setter = {
            let value = value.clone();
            thread::spawn(move || value.emplace(17).unwrap())
        };
        setter.join().unwrap();
        for waiter in waiters {
            waiter.join().unwrap();
        }
        assert_eq!(runs.load(Ordering::SeqCst), threads * 3);
    }
}

#[test]
fn racing_setters_have_exactly_one_winner() {
    let rounds = if cfg!(miri) { 4 } else { 200 };
    for _ in 0..rounds {
        let value = RcAsyncValue::unavailable_slot();
        let wins = Arc::new(AtomicUsize::new(0));
        let setters: Vec<_> = (0..3i32)
            .map(|i| {
                let (value, wins) = (value.clone(), Arc::clone(&wins));
                thread::spawn(move || {
                    let won = if i == 0 { value.set_error(error("e")).is_ok() } else { value.emplace(i).is_ok() };
                    if won {
                        wins.fetch_add(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for setter in setters {
            setter.join().unwrap();
        }
        assert_eq!(wins.load(Ordering::SeqCst), 1);
        assert!(value.is_available());
    }
}

#[test]
fn forwarding_to_a_target_that_is_never_set_frees_both() {
    // Miri's leak check is the judge here: a continuation that owned its own target would keep it
    // alive forever.
    let (payload, drops) = tracked(1);
    let keep_alive = AsyncValueRef::available(payload);
    let target = AsyncValueRef::<i32>::unconstructed();
    let indirect = IndirectAsyncValue::new();
    indirect.forward_to(target.clone().into_untyped()).unwrap();
    let holder = keep_alive.clone();
    target.and_then(move || drop(holder));
    drop(target);
    drop(indirect);
    drop(keep_alive);
    assert_eq!(drops.load(Ordering::SeqCst), 1, "the unset target and its waiters were freed");
}

#[test]
fn a_second_forward_while_the_first_is_pending_is_refused() {
    let indirect = IndirectAsyncValue::new();
    let (first, second) = (AsyncValueRef::<i32>::unconstructed(), AsyncValueRef::<i32>::unconstructed());
    indirect.forward_to(first.clone().into_untyped()).unwrap();
    assert!(matches!(indirect.forward_to(second.clone().into_untyped()), Err(AccessError::AlreadySet(_))));
    assert!(indirect.set_error(error("late")).is_err());
    assert!(matches!(
        indirect.forward_to(AsyncValueRef::available(3i32).into_untyped()),
        Err(AccessError::AlreadySet(_))
    ));
    second.emplace(2).unwrap();
    assert!(!indirect.is_available());
    first.emplace(1).unwrap();
    assert_eq!(*indirect.try_get::<i32>().unwrap(), 1);
}
