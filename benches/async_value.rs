//! AsyncValue costs: the AsyncValue rows of docs/PERFORMANCE.md.
//!
//! Every row alternates an anchor with the subject (`support::row`); a ratio below 1 means rtx is
//! faster than the anchor.
//!
//! `cargo bench --bench async_value [-- FILTER]`

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rtx::host::{run_when_ready, AsyncValueRef, IndirectAsyncValue, RcAsyncValue};

mod support;

use support::{per_call, row};

/// A row whose rounds are `CALLS` calls of a closure.
fn per_call_row(name: &str, anchor_name: &str, anchor: &mut dyn FnMut(), subject: &mut dyn FnMut()) {
    row(name, anchor_name, &mut || per_call(CALLS, anchor), &mut || per_call(CALLS, subject));
}

const CALLS: u64 = 200_000;

type Waiter = Box<dyn FnOnce() + Send>;

/// The lock-based promise the `and_then_set` anchor uses: what a lock-free AsyncValue replaces.
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
        waiters.into_iter().for_each(|waiter| waiter());
    }
}

fn main() {
    let wanted = support::filter();
    println!("{} alternating rounds of {CALLS} calls; medians; ratio = rtx / anchor", support::ROUNDS);

    if wanted("create_read_drop") {
        per_call_row(
            "create_read_drop (i32)",
            "Arc<i32> new+read+drop",
            &mut || _ = black_box(*black_box(Arc::new(black_box(7i32)))),
            &mut || _ = black_box(*AsyncValueRef::available(black_box(7i32)).get()),
        );
        per_call_row(
            "create_read_drop (i32)",
            "Box<i32> new+read+drop",
            &mut || _ = black_box(*black_box(Box::new(black_box(7i32)))),
            &mut || _ = black_box(*AsyncValueRef::available(black_box(7i32)).get()),
        );
    }

    if wanted("and_then_set") {
        let ran = Arc::new(AtomicUsize::new(0));
        let (r1, r2) = (Arc::clone(&ran), Arc::clone(&ran));
        per_call_row(
            "and_then_set (i32)",
            "Mutex+Vec promise",
            &mut || {
                // Shared between producer and consumer, so on the heap like an AsyncValue.
                let promise = Arc::new(LockedPromise { state: Mutex::new((None, Vec::new())) });
                let ran = Arc::clone(&r1);
                promise.and_then(Box::new(move || {
                    ran.fetch_add(1, Ordering::Relaxed);
                }));
                promise.set(black_box(3));
            },
            &mut || {
                let value = AsyncValueRef::<i32>::unconstructed();
                let ran = Arc::clone(&r2);
                value.and_then(move || {
                    ran.fetch_add(1, Ordering::Relaxed);
                });
                value.emplace(black_box(3)).unwrap();
            },
        );
        assert_eq!(ran.load(Ordering::Relaxed) as u64 % CALLS, 0, "every waiter ran");
    }

    if wanted("clone_drop") {
        let (arc, value) = (Arc::new(1i32), AsyncValueRef::available(1i32));
        per_call_row("clone_drop", "Arc clone+drop", &mut || drop(black_box(Arc::clone(&arc))), &mut || {
            drop(black_box(value.clone()))
        });
    }

    if wanted("and_then_available") {
        let value = AsyncValueRef::available(1i32);
        let hits = Arc::new(AtomicUsize::new(0));
        let (h1, h2) = (Arc::clone(&hits), Arc::clone(&hits));
        per_call_row(
            "and_then_available",
            "calling the closure",
            &mut || {
                let hits = Arc::clone(&h1);
                black_box(move || {
                    hits.fetch_add(1, Ordering::Relaxed);
                })()
            },
            &mut || {
                let hits = Arc::clone(&h2);
                value.and_then(move || {
                    hits.fetch_add(1, Ordering::Relaxed);
                })
            },
        );
    }

    if wanted("indirect_forward") {
        let value = AsyncValueRef::available(1i32).into_untyped();
        per_call_row(
            "indirect_forward",
            "unavailable slot + set",
            &mut || {
                let slot = RcAsyncValue::unavailable_slot();
                slot.emplace(black_box(1i32)).unwrap();
            },
            &mut || {
                let indirect = IndirectAsyncValue::new();
                indirect.forward_to(value.clone()).unwrap();
            },
        );
    }

    if wanted("run_when_ready") {
        let done = Arc::new(AtomicUsize::new(0));
        let (d1, d2) = (Arc::clone(&done), Arc::clone(&done));
        per_call_row(
            "run_when_ready (2 pending)",
            "two and_then, shared count",
            &mut || {
                let (x, y) = (AsyncValueRef::<i32>::unconstructed(), AsyncValueRef::<i32>::unconstructed());
                let count = Arc::new(AtomicUsize::new(2));
                for v in [&x, &y] {
                    let (count, done) = (Arc::clone(&count), Arc::clone(&d1));
                    v.and_then(move || {
                        if count.fetch_sub(1, Ordering::AcqRel) == 1 {
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                    });
                }
                x.emplace(1).unwrap();
                y.emplace(2).unwrap();
            },
            &mut || {
                let (x, y) = (AsyncValueRef::<i32>::unconstructed(), AsyncValueRef::<i32>::unconstructed());
                let done = Arc::clone(&d2);
                run_when_ready(&[x.as_untyped().clone(), y.as_untyped().clone()], move || {
                    done.fetch_add(1, Ordering::Relaxed);
                });
                x.emplace(1).unwrap();
                y.emplace(2).unwrap();
            },
        );
    }
}
