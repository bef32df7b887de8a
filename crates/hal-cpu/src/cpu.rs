//! This CPU described the way IREE's runtime describes it (`iree/schemas/cpu_feature_bits.inl`):
//! x86-64 features as bits of word 0, read by compiled code through the executable environment
//! (to pick among microkernel variants) and by programs through `hal.device.query` in the
//! `hal.cpu` category (keys are LLVM feature names). A clear bit only means a slower path.

use std::sync::OnceLock;

use super::abi::Processor;

/// (LLVM feature name, bit in word 0) for every x86-64 feature IREE names.
const X86_64_FEATURES: [(&str, u32); 27] = [
    ("sse3", 0),
    ("ssse3", 1),
    ("sse4.1", 2),
    ("sse4.2", 3),
    ("sse4a", 4),
    ("avx", 10),
    ("fma", 11),
    ("fma4", 12),
    ("xop", 13),
    ("f16c", 14),
    ("avx2", 15),
    ("avx512f", 20),
    ("avx512cd", 21),
    ("avx512vl", 22),
    ("avx512dq", 23),
    ("avx512bw", 24),
    ("avx512ifma", 25),
    ("avx512vbmi", 26),
    ("avx512vpopcntdq", 27),
    ("avx512vnni", 28),
    ("avx512vbmi2", 29),
    ("avx512bitalg", 30),
    ("avx512bf16", 31),
    ("avx512fp16", 32),
    ("amx-tile", 50),
    ("amx-int8", 51),
    ("amx-bf16", 52),
];

/// Whether the CPU and the OS support `feature` (the detection macro wants literals). Features
/// the standard library cannot detect (FMA4, XOP, AMX) read as absent: a slower path, never a
/// fault.
#[cfg(target_arch = "x86_64")]
fn detected(feature: &str) -> bool {
    use std::arch::is_x86_feature_detected as has;
    match feature {
        "sse3" => has!("sse3"),
        "ssse3" => has!("ssse3"),
        "sse4.1" => has!("sse4.1"),
        "sse4.2" => has!("sse4.2"),
        "sse4a" => has!("sse4a"),
        "avx" => has!("avx"),
        "fma" => has!("fma"),
        "f16c" => has!("f16c"),
        "avx2" => has!("avx2"),
        "avx512f" => has!("avx512f"),
        "avx512cd" => has!("avx512cd"),
        "avx512vl" => has!("avx512vl"),
        "avx512dq" => has!("avx512dq"),
        "avx512bw" => has!("avx512bw"),
        "avx512ifma" => has!("avx512ifma"),
        "avx512vbmi" => has!("avx512vbmi"),
        "avx512vpopcntdq" => has!("avx512vpopcntdq"),
        "avx512vnni" => has!("avx512vnni"),
        "avx512vbmi2" => has!("avx512vbmi2"),
        "avx512bitalg" => has!("avx512bitalg"),
        "avx512bf16" => has!("avx512bf16"),
        "avx512fp16" => has!("avx512fp16"),
        _ => false,
    }
}

/// The processor description handed to every executable, computed once.
pub fn host_processor() -> Processor {
    static PROCESSOR: OnceLock<Processor> = OnceLock::new();
    *PROCESSOR.get_or_init(|| {
        let mut processor = Processor::default();
        #[cfg(target_arch = "x86_64")]
        for (name, bit) in X86_64_FEATURES {
            if detected(name) {
                processor.data[0] |= 1 << bit;
            }
        }
        processor
    })
}

/// `hal.device.query("hal.cpu", key)`: 1 or 0 for a feature IREE names on this architecture,
/// `None` for any other key.
pub fn feature(key: &str) -> Option<i64> {
    if !cfg!(target_arch = "x86_64") {
        return None;
    }
    let (_, bit) = X86_64_FEATURES.iter().find(|(name, _)| *name == key)?;
    Some(((host_processor().data[0] >> bit) & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn features_read_as_the_cpu_reports_them() {
        assert_eq!(feature("sse3"), Some(1), "every x86-64 CPU we run on has SSE3");
        assert_eq!(feature("avx2"), Some(std::arch::is_x86_feature_detected!("avx2") as i64));
        assert_eq!(feature("xop"), Some(0));
        assert_eq!(feature("neon"), None);
        assert_eq!(host_processor().data[1..], [0; 7]);
        let bits: Vec<u32> = X86_64_FEATURES.iter().map(|(_, bit)| *bit).collect();
        let mut unique = bits.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), bits.len(), "one bit per feature");
    }
}
