//! The time spans are stamped with, in nanoseconds since the first time anything asked. The
//! processor's time-stamp counter read through `quanta` (calibrated once against the monotonic
//! clock) costs a third of `Instant::now`, which a span pays twice; where there is no such
//! counter `quanta` reads the monotonic clock itself.

#[cfg(not(miri))]
mod source {
    use std::sync::OnceLock;

    struct Epoch {
        clock: quanta::Clock,
        start: u64,
    }

    static EPOCH: OnceLock<Epoch> = OnceLock::new();

    fn epoch() -> &'static Epoch {
        EPOCH.get_or_init(|| {
            let clock = quanta::Clock::new();
            let start = clock.raw();
            Epoch { clock, start }
        })
    }

    pub(in super::super) fn calibrate() {
        epoch();
    }

    #[inline]
    pub(in super::super) fn now() -> u64 {
        let epoch = epoch();
        epoch.clock.delta_as_nanos(epoch.start, epoch.clock.raw())
    }
}

/// Miri runs no `cpuid` nor `rdtsc`: the standard clock.
#[cfg(miri)]
mod source {
    use std::sync::OnceLock;
    use std::time::Instant;

    static EPOCH: OnceLock<Instant> = OnceLock::new();

    pub(in super::super) fn calibrate() {
        EPOCH.get_or_init(Instant::now);
    }

    pub(in super::super) fn now() -> u64 {
        EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

pub(super) use source::{calibrate, now};
