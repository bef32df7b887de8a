//! The measuring discipline of docs/PERFORMANCE.md, shared by every bench: an anchor and
//! the subject alternate round after round (the order flips each round), and a row reports the
//! median time of each and the median of the per-round ratios. A ratio below 1 means rtx is
//! faster than the anchor. Medians of alternating rounds hold up on a shared, noisy machine
//! where a single timing does not.

use std::time::Instant;

pub const ROUNDS: usize = 31;

/// A bench's optional name filter: `cargo bench --bench NAME -- FILTER`.
pub fn filter() -> impl Fn(&str) -> bool {
    let filter = std::env::args().skip(1).find(|arg| !arg.starts_with("--"));
    move |name| filter.as_deref().is_none_or(|f| name.contains(f))
}

/// Nanoseconds per call of `body`, over `calls` calls: one round of a per-call row.
pub fn per_call(calls: u64, body: &mut dyn FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..calls {
        body();
    }
    start.elapsed().as_nanos() as f64 / calls as f64
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

/// Runs `ROUNDS` alternating rounds; each closure runs one round and returns nanoseconds per
/// operation. Prints one row.
pub fn row(name: &str, anchor_name: &str, anchor: &mut dyn FnMut() -> f64, subject: &mut dyn FnMut() -> f64) {
    // One untimed round of each warms caches, the allocator and thread pools.
    anchor();
    subject();
    let (mut anchors, mut subjects, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let (a, s) = if round % 2 == 0 {
            let a = anchor();
            (a, subject())
        } else {
            let s = subject();
            (anchor(), s)
        };
        anchors.push(a);
        subjects.push(s);
        ratios.push(s / a);
    }
    let (a, s, ratio) = (median(&mut anchors), median(&mut subjects), median(&mut ratios));
    println!("{name:<34} {s:>9.1} ns   anchor {anchor_name:<30} {a:>9.1} ns   ratio {ratio:.2}");
}
