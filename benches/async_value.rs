//! AsyncValue costs (the AsyncValue rows of shared/design/PERFORMANCE.md), each beside an anchor
//! measured in the same run so the figures read as ratios on a noisy machine:
//!
//! - `create_read_drop/*`: an available i32 made, read and dropped; anchors `Box<i32>` (one
//!   allocation) and `Arc<i32>` (one allocation + refcount atomics, the "physical limit").
//! - `and_then_set/*`: unavailable value → `and_then` → set → the waiter ran; anchor: the same
//!   promise built from `Mutex<Option<i32>>` + a `Vec` of boxed callbacks (the lock-based design
//!   TFRT's lock-free one replaces).
//! - `clone_drop`, `and_then_available`, `indirect_forward`, `run_when_ready_2`: the other
//!   operations the runtime's hot paths use.

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use criterion::{criterion_group, criterion_main, Criterion};
use rtx::host::{run_when_ready, AsyncValueRef, IndirectAsyncValue};

fn create_read_drop(c: &mut Criterion) {
    let mut group = c.benchmark_group("create_read_drop");
    group.bench_function("anchor_box_i32", |b| b.iter(|| *black_box(Box::new(black_box(7i32)))));
    group.bench_function("anchor_arc_i32", |b| b.iter(|| *black_box(Arc::new(black_box(7i32)))));
    group.bench_function("async_value_i32", |b| b.iter(|| *black_box(AsyncValueRef::available(black_box(7i32))).get()));
    group.finish();
}

type Waiter = Box<dyn FnOnce() + Send>;

/// The lock-based promise the anchor row uses.
struct LockedPromise {
    state: Mutex<(Option<i32>, Vec<Waiter>)>,
}

impl LockedPromise {
    fn and_then(&self, f: Waiter) {
        let mut state = self.state.lock().unwrap();
        if state.0.is_some() {
            drop(state);
            f();
        } else {
            state.1.push(f);
        }
    }

    fn set(&self, value: i32) {
        let waiters = {
            let mut state = self.state.lock().unwrap();
            state.0 = Some(value);
            std::mem::take(&mut state.1)
        };
        for waiter in waiters {
            waiter();
        }
    }
}

fn and_then_set(c: &mut Criterion) {
    let mut group = c.benchmark_group("and_then_set");
    let counter = Arc::new(AtomicUsize::new(0));
    let ran = Arc::clone(&counter);
    group.bench_function("anchor_mutex_promise", |b| {
        b.iter(|| {
            let promise = Arc::new(LockedPromise { state: Mutex::new((None, Vec::new())) });
            let ran = Arc::clone(&ran);
            promise.and_then(Box::new(move || {
                ran.fetch_add(1, Ordering::Relaxed);
            }));
            promise.set(black_box(3));
        })
    });
    let ran = Arc::clone(&counter);
    group.bench_function("async_value", |b| {
        b.iter(|| {
            let value = AsyncValueRef::<i32>::unconstructed();
            let ran = Arc::clone(&ran);
            value.and_then(move || {
                ran.fetch_add(1, Ordering::Relaxed);
            });
            value.emplace(black_box(3)).unwrap();
        })
    });
    group.finish();
    assert!(counter.load(Ordering::Relaxed) > 0);
}

fn other_operations(c: &mut Criterion) {
    let value = AsyncValueRef::available(1i32);
    c.bench_function("clone_drop", |b| b.iter(|| drop(black_box(value.clone()))));
    let hits = Arc::new(AtomicUsize::new(0));
    c.bench_function("and_then_available", |b| {
        b.iter(|| {
            let hits = Arc::clone(&hits);
            value.and_then(move || {
                hits.fetch_add(1, Ordering::Relaxed);
            });
        })
    });
    c.bench_function("indirect_forward", |b| {
        b.iter(|| {
            let indirect = IndirectAsyncValue::new();
            indirect.forward_to(value.clone().into_untyped()).unwrap();
            black_box(indirect.is_available())
        })
    });
    c.bench_function("run_when_ready_2", |b| {
        b.iter(|| {
            let (x, y) = (AsyncValueRef::<i32>::unconstructed(), AsyncValueRef::<i32>::unconstructed());
            let done = Arc::new(AtomicUsize::new(0));
            let d = Arc::clone(&done);
            run_when_ready(&[x.as_untyped().clone(), y.as_untyped().clone()], move || {
                d.fetch_add(1, Ordering::Relaxed);
            });
            x.emplace(1).unwrap();
            y.emplace(2).unwrap();
            black_box(done.load(Ordering::Relaxed))
        })
    });
}

criterion_group!(benches, create_read_drop, and_then_set, other_operations);
criterion_main!(benches);
