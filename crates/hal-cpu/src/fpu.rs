//! The floating-point mode dispatches run in. IREE's CPU devices flush denormals to zero (inputs
//! and results) around every dispatch and on every task worker, and programs are compiled and
//! tested against that: `1e-20 * 1e-20` is 0 in a dispatch, not 1e-40. Denormal arithmetic is
//! also many times slower on x86 (a model with tiny weights ran 3.3× slower without it). The
//! mode is a per-thread register, so it is set for the dispatch only and restored after: host
//! code (input parsing, the VM) keeps IEEE semantics.

/// The flush bits: x86 MXCSR FTZ (bit 15) | DAZ (bit 6); Arm FPCR FZ (bit 24) | FZ16 (bit 19).
#[cfg(all(target_arch = "x86_64", not(miri)))]
const FLUSH: u64 = 0x8040;
#[cfg(all(target_arch = "aarch64", not(miri)))]
const FLUSH: u64 = 0x0108_0000;

/// Flushes denormals on this thread until dropped, then restores the previous mode.
pub struct FlushDenormals {
    #[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
    saved: u64,
}

impl FlushDenormals {
    pub fn enter() -> FlushDenormals {
        let saved = read();
        write(saved | flush_bits());
        FlushDenormals { saved }
    }
}

impl Drop for FlushDenormals {
    fn drop(&mut self) {
        write(self.saved);
    }
}

/// For threads that only ever run dispatches (the local-task workers), as IREE's workers do.
pub fn flush_denormals_on_this_thread() {
    write(read() | flush_bits());
}

#[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), not(miri)))]
fn flush_bits() -> u64 {
    FLUSH
}

#[cfg(not(all(any(target_arch = "x86_64", target_arch = "aarch64"), not(miri))))]
fn flush_bits() -> u64 {
    0
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
fn read() -> u64 {
    let mut csr = 0u32;
    // SAFETY: stores the 32-bit MXCSR into a local we own; no other state changes.
    unsafe { std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack, preserves_flags)) };
    u64::from(csr)
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
fn write(value: u64) {
    let csr = value as u32;
    // SAFETY: loads MXCSR from a valid local; the value is a previously read MXCSR with only the
    // FTZ/DAZ bits changed, so no reserved bit is set (which would fault).
    unsafe { std::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack, preserves_flags, readonly)) };
}

#[cfg(all(target_arch = "aarch64", not(miri)))]
fn read() -> u64 {
    let fpcr: u64;
    // SAFETY: reads the FPCR system register; no memory or other state is touched.
    unsafe { std::arch::asm!("mrs {}, fpcr", out(reg) fpcr, options(nomem, nostack, preserves_flags)) };
    fpcr
}

#[cfg(all(target_arch = "aarch64", not(miri)))]
fn write(value: u64) {
    // SAFETY: writes FPCR with a previously read value with only the FZ/FZ16 bits changed.
    unsafe { std::arch::asm!("msr fpcr, {}", in(reg) value, options(nomem, nostack, preserves_flags)) };
}

#[cfg(not(all(any(target_arch = "x86_64", target_arch = "aarch64"), not(miri))))]
fn read() -> u64 {
    0
}

#[cfg(not(all(any(target_arch = "x86_64", target_arch = "aarch64"), not(miri))))]
fn write(_: u64) {}

#[cfg(all(test, target_arch = "x86_64", not(miri)))]
mod tests {
    use super::*;

    /// A product the optimiser cannot fold or reuse across the mode changes (it assumes the
    /// default mode, so it may otherwise compute once).
    #[inline(never)]
    fn product(a: f32, b: f32) -> f32 {
        std::hint::black_box(std::hint::black_box(a) * std::hint::black_box(b))
    }

    #[test]
    fn denormals_flush_inside_and_not_after() {
        let before = read();
        {
            let _mode = FlushDenormals::enter();
            assert_eq!(product(1e-20, 1e-20), 0.0, "results flush");
            assert_eq!(product(1e-40, 1.0), 0.0, "inputs flush");
            {
                let _nested = FlushDenormals::enter();
            }
            assert_eq!(product(1e-20, 1e-20), 0.0, "a nested guard restores the flushing mode");
        }
        assert_eq!(read(), before);
        assert!(product(1e-20, 1e-20) > 0.0, "IEEE again after the dispatch");
    }
}
