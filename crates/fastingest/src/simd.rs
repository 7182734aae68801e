//! Hot decode loops compiled twice: for any x86-64 CPU (the wheel's
//! baseline, SSE2) and for CPUs with AVX2, picked at run time.
//!
//! Why: the wheel must load on every x86-64 CPU, so the compiler may only
//! assume SSE2, and the loops that bound a decoded read (bit-unpacking
//! dictionary indices, gathering values from a dictionary) then move 16
//! bytes at a time. Built for x86-64-v3 as a whole, a steady read of the
//! suite's `mixed-card1000` file took 8.0 ms instead of 9.9 (interleaved
//! medians): unpacking a third faster, numeric gathers a quarter. Only the
//! innermost loops are compiled twice, each behind one check of the CPU per
//! call (a cached load) on a chunk of up to 1,024 values. Bit-unpacking is
//! written with AVX2 intrinsics instead (`parquet/hybrid.rs`): compiled for
//! AVX2 on its own, its loop was not vectorised.

/// Fewer values than this go through the code compiled for any CPU: the
/// check and the call out of line cost more than vectors save on them (the
/// suite's `rl32` files hand over chunks of 8-24 indices between runs).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) const MIN_VALUES: usize = 64;

/// Runs `kernel` on `values` values, compiled with AVX2 when this CPU has
/// it and there are enough values to repay the call.
///
/// Only what is inlined is compiled with it: the closure itself must be
/// marked `#[inline(always)]` (a large one was left out of line, compiled
/// for SSE2, behind a jump), and so must the functions its loop calls.
#[inline(always)]
pub(crate) fn wide<R>(values: usize, kernel: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if values >= MIN_VALUES && has_avx2() {
        // SAFETY: the CPU has AVX2.
        return unsafe { avx2(kernel) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = values;
    kernel()
}

/// [`wide`] whatever the number of values: for a kernel whose work per
/// value is large enough to repay the call (values copied as 32-byte
/// blocks, one AVX store each instead of two).
#[inline(always)]
pub(crate) fn wide_always<R>(kernel: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU has AVX2.
        return unsafe { avx2(kernel) };
    }
    kernel()
}

/// Whether this CPU has AVX2, and POPCNT with it (every CPU with AVX2 has
/// it; the standard library detects both once and caches the answers, so
/// this is two loads).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn has_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("popcnt")
}

/// `kernel()`, with it inlined and compiled for AVX2 and POPCNT (without
/// it, counting a word's bits is a dozen instructions: the list builders
/// count bits for every list they start).
///
/// # Safety
/// The CPU must have AVX2 and POPCNT ([`has_avx2`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn avx2<R>(kernel: impl FnOnce() -> R) -> R {
    kernel()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_gives_the_same_answer_whichever_way_it_runs() {
        let values: Vec<u64> = (0..10_000u64).map(|i| i * 2_654_435_761 % 1_000).collect();
        let sum = |v: &[u64]| v.iter().map(|x| x * x).sum::<u64>();
        assert_eq!(wide(values.len(), || sum(&values)), sum(&values));
        assert_eq!(wide(1, || sum(&values[..1])), sum(&values[..1]));
    }
}
