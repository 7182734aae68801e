//! BYTE_STREAM_SPLIT values of 4 and 8 bytes (floats and doubles, and since
//! format 2.11 32- and 64-bit integers): a page of `n` values holds one
//! stream of `n` bytes for each byte of a value, stream `k` holding byte
//! `k` of every value. Joining them again is a byte transpose.
//!
//! Why here and not the `parquet` crate: the crate joins the streams a byte
//! at a time, and that loop was a third of the samples of a read of a
//! DuckDB-written double column (`PARQUET_VERSION v2`), which then took
//! 1.5× pyarrow's time. Here 16 values are joined at once with SSE2 byte
//! interleaves (every x86-64 CPU has them), into a block on the stack that
//! is converted and appended as plain values are.
//!
//! Other widths (2-byte floats, fixed-length byte arrays) stay with the
//! crate.

use super::flat::{append_values, Decoded, Failure};
use crate::nontemporal::{self, Reads};

/// Appends the first `count` values of the byte-stream-split `values` (one
/// stream of `values.len() / N` bytes for each byte of a value) to `out`,
/// which is read when `reads` says. Streams longer than `count` are read as
/// the `parquet` crate and Arrow C++ read them: their length comes from the
/// page's bytes, and the values past `count` are not taken.
pub(super) fn decode<T: Copy, const N: usize>(
    values: &[u8],
    count: usize,
    convert: impl Fn([u8; N]) -> T,
    out: &mut Vec<T>,
    reads: Reads,
) -> Decoded<()> {
    if N != 4 && N != 8 {
        return Err(Failure::Unsupported);
    }
    if !values.len().is_multiple_of(N) {
        return Err(Failure::Corrupt(format!(
            "{} bytes of byte-stream-split values are not whole values of {N} bytes",
            values.len()
        )));
    }
    let stride = values.len() / N;
    if stride < count {
        return Err(Failure::Corrupt(format!(
            "{count} values of {N} bytes in {} bytes",
            values.len()
        )));
    }
    // A chunk's values, joined (`N` is at most 8).
    let mut joined = [0u8; 8 * nontemporal::CHUNK];
    let mut out = nontemporal::Appender::new(out, count, reads);
    let mut at = 0;
    while at < count {
        let n = (count - at).min(nontemporal::CHUNK);
        let bytes = &mut joined[..n * N];
        join::<N>(values, stride, at, bytes);
        append_values(&mut out, bytes, &convert);
        at += n;
    }
    Ok(())
}

/// Writes values `from..from + dst.len() / N` of the `N` streams of
/// `values` (each `stride` bytes long) to `dst`, each value's bytes in
/// order.
fn join<const N: usize>(values: &[u8], stride: usize, from: usize, dst: &mut [u8]) {
    let n = dst.len() / N;
    // Each stream's bytes of these values, checked once here.
    let streams: [&[u8]; N] = std::array::from_fn(|k| &values[k * stride + from..][..n]);
    let joined = join_blocks(&streams, dst);
    for i in joined..n {
        for (k, stream) in streams.iter().enumerate() {
            dst[i * N + k] = stream[i];
        }
    }
}

/// Joins the first values of `streams` (each as long) into `dst`, 16 at a
/// time, as many as make whole blocks of 16; returns how many.
#[cfg(target_arch = "x86_64")]
fn join_blocks<const N: usize>(streams: &[&[u8]; N], dst: &mut [u8]) -> usize {
    // `decode` takes no other width: the kernels below are for these two.
    assert!(N == 4 || N == 8);
    let n = dst.len() / N;
    let starts: [*const u8; N] = std::array::from_fn(|k| streams[k].as_ptr());
    let mut i = 0;
    while i + 16 <= n {
        let to = dst[i * N..][..16 * N].as_mut_ptr();
        // SAFETY: every stream holds `n` bytes (the caller cut them so),
        // so 16 from `i`; `to` has room for 16 values of `N` bytes; there
        // are `N` streams (4 or 8, as each kernel takes).
        unsafe {
            match N {
                8 => join16_of_8(&starts, i, to),
                _ => join16_of_4(&starts, i, to),
            }
        }
        i += 16;
    }
    i
}

/// Elsewhere every value is joined a byte at a time.
#[cfg(not(target_arch = "x86_64"))]
fn join_blocks<const N: usize>(_streams: &[&[u8]; N], _dst: &mut [u8]) -> usize {
    0
}

/// Joins values `i..i + 16` of 8 streams into 16 values of 8 bytes at
/// `dst`: bytes interleaved in pairs, the pairs in fours, the fours in
/// eights.
///
/// # Safety
/// `streams` must hold 8 pointers, each readable for 16 bytes from `i`;
/// `dst` must be writable for 128 bytes.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn join16_of_8(streams: &[*const u8], i: usize, dst: *mut u8) {
    use std::arch::x86_64::*;
    // SAFETY: the caller's promises; SSE2 is in every x86-64 CPU.
    unsafe {
        let a: [__m128i; 8] = std::array::from_fn(|k| _mm_loadu_si128(streams[k].add(i).cast()));
        // Bytes 0-1, 2-3, 4-5, 6-7 of values 0-7 (lo) and 8-15 (hi).
        let b01 = [_mm_unpacklo_epi8(a[0], a[1]), _mm_unpackhi_epi8(a[0], a[1])];
        let b23 = [_mm_unpacklo_epi8(a[2], a[3]), _mm_unpackhi_epi8(a[2], a[3])];
        let b45 = [_mm_unpacklo_epi8(a[4], a[5]), _mm_unpackhi_epi8(a[4], a[5])];
        let b67 = [_mm_unpacklo_epi8(a[6], a[7]), _mm_unpackhi_epi8(a[6], a[7])];
        for half in 0..2 {
            // Bytes 0-3 and 4-7 of values 8h + 0-3 (lo) and 8h + 4-7 (hi).
            let low = [
                _mm_unpacklo_epi16(b01[half], b23[half]),
                _mm_unpackhi_epi16(b01[half], b23[half]),
            ];
            let high = [
                _mm_unpacklo_epi16(b45[half], b67[half]),
                _mm_unpackhi_epi16(b45[half], b67[half]),
            ];
            for quarter in 0..2 {
                let at = dst.add(64 * half + 32 * quarter).cast::<__m128i>();
                _mm_storeu_si128(at, _mm_unpacklo_epi32(low[quarter], high[quarter]));
                _mm_storeu_si128(at.add(1), _mm_unpackhi_epi32(low[quarter], high[quarter]));
            }
        }
    }
}

/// Joins values `i..i + 16` of 4 streams into 16 values of 4 bytes at
/// `dst`: bytes interleaved in pairs, then the pairs in fours.
///
/// # Safety
/// `streams` must hold 4 pointers, each readable for 16 bytes from `i`;
/// `dst` must be writable for 64 bytes.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn join16_of_4(streams: &[*const u8], i: usize, dst: *mut u8) {
    use std::arch::x86_64::*;
    // SAFETY: the caller's promises; SSE2 is in every x86-64 CPU.
    unsafe {
        let a: [__m128i; 4] = std::array::from_fn(|k| _mm_loadu_si128(streams[k].add(i).cast()));
        let b01 = [_mm_unpacklo_epi8(a[0], a[1]), _mm_unpackhi_epi8(a[0], a[1])];
        let b23 = [_mm_unpacklo_epi8(a[2], a[3]), _mm_unpackhi_epi8(a[2], a[3])];
        let at = dst.cast::<__m128i>();
        for half in 0..2 {
            _mm_storeu_si128(at.add(2 * half), _mm_unpacklo_epi16(b01[half], b23[half]));
            _mm_storeu_si128(
                at.add(2 * half + 1),
                _mm_unpackhi_epi16(b01[half], b23[half]),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `values` split into their byte streams, as a writer lays them out.
    fn split<const N: usize>(values: &[[u8; N]]) -> Vec<u8> {
        (0..N)
            .flat_map(|k| values.iter().map(move |v| v[k]))
            .collect()
    }

    fn words<const N: usize>(count: usize, seed: u64) -> Vec<[u8; N]> {
        let mut x = seed;
        (0..count)
            .map(|_| {
                std::array::from_fn(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (x >> 56) as u8
                })
            })
            .collect()
    }

    fn decoded<const N: usize>(page: &[u8], count: usize, reads: Reads) -> Decoded<Vec<[u8; N]>> {
        let mut out = Vec::new();
        decode(page, count, |w: [u8; N]| w, &mut out, reads)?;
        Ok(out)
    }

    #[test]
    fn joined_streams_are_the_values_written_for_every_length() {
        // Across the 16-value blocks, the tail, and the 1,024-value chunks.
        for count in [0, 1, 15, 16, 17, 31, 33, 1023, 1024, 1025, 3000] {
            for reads in [Reads::Soon, Reads::Later] {
                let eights = words::<8>(count, count as u64);
                assert_eq!(decoded::<8>(&split(&eights), count, reads).unwrap(), eights);
                let fours = words::<4>(count, count as u64 + 1);
                assert_eq!(decoded::<4>(&split(&fours), count, reads).unwrap(), fours);
            }
        }
    }

    #[test]
    fn values_are_converted_as_plain_ones_are() {
        let doubles: Vec<f64> = (0..100).map(|i| i as f64 * -1.25).collect();
        let bytes: Vec<[u8; 8]> = doubles.iter().map(|d| d.to_le_bytes()).collect();
        let mut out = Vec::new();
        decode(
            &split(&bytes),
            100,
            f64::from_le_bytes,
            &mut out,
            Reads::Later,
        )
        .unwrap();
        assert_eq!(out, doubles);
    }

    #[test]
    fn longer_streams_give_their_first_values() {
        // A page whose streams hold more values than asked for (a count
        // of non-null values under a longer page): each stream still
        // starts `len / N` bytes after the one before.
        let values = words::<4>(40, 7);
        let got = decoded::<4>(&split(&values), 33, Reads::Soon).unwrap();
        assert_eq!(got, values[..33]);
    }

    #[test]
    fn cut_off_or_uneven_streams_are_refused() {
        let page = split(&words::<8>(20, 3));
        assert!(matches!(
            decoded::<8>(&page, 21, Reads::Soon),
            Err(Failure::Corrupt(_))
        ));
        assert!(matches!(
            decoded::<8>(&page[..page.len() - 1], 19, Reads::Soon),
            Err(Failure::Corrupt(_))
        ));
        // Other widths are the crate's.
        assert!(matches!(
            decode(&[0u8; 8], 4, |w: [u8; 2]| w, &mut Vec::new(), Reads::Soon),
            Err(Failure::Unsupported)
        ));
    }
}
