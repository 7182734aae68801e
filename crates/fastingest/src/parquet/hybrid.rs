//! Parquet's RLE / bit-packed hybrid encoding (definition levels, dictionary
//! indices, RLE booleans), read run by run so that callers can act on a
//! whole run at once: a run of valid rows is one copy, a run of one
//! dictionary index one fill.

/// One run of the encoding.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Run<'a> {
    /// `count` copies of `value`.
    Repeated { value: u32, count: usize },
    /// `count` values packed LSB first, `width` bits each, at the start of
    /// `bytes`. `bytes` runs on to the end of the stream: unpacking a short
    /// run may then load whole words past its last value (and drop what it
    /// read there) instead of taking the byte-at-a-time path for its tail.
    Packed { bytes: &'a [u8], count: usize },
}

/// The runs of one encoded stream of `width`-bit values.
pub(crate) struct Runs<'a> {
    data: &'a [u8],
    width: u8,
}

/// The longest run the format allows (2^31 - 1 values).
const MAX_RUN: u64 = i32::MAX as u64;

impl<'a> Runs<'a> {
    /// The runs of `data`, values `width` bits wide (at most 32).
    pub(crate) fn new(data: &'a [u8], width: u8) -> Result<Self, String> {
        if width > 32 {
            return Err(format!("a bit width of {width} (at most 32)"));
        }
        Ok(Runs { data, width })
    }

    /// The next run, `None` at the end of the data. A bit-packed run cut
    /// short by the end of the data keeps the values it has whole (writers
    /// pad the last run, readers stop at the count they expect).
    ///
    /// Inlined into its callers: a file of runs of 32 rows has a run for
    /// every 32 values of every column, and the call was a tenth of a
    /// steady read of the suite's `rl32` file.
    #[inline(always)]
    pub(crate) fn next_run(&mut self) -> Result<Option<Run<'a>>, String> {
        let header = match self.data.first() {
            None => return Ok(None),
            // A run of fewer than 64 values: its header is one byte.
            Some(&byte) if byte < 0x80 => {
                self.data = &self.data[1..];
                u64::from(byte)
            }
            Some(_) => self.varint()?,
        };
        let width = usize::from(self.width);
        if header & 1 == 1 {
            let groups = header >> 1;
            if groups * 8 > MAX_RUN {
                return Err(format!("a bit-packed run of {groups} groups"));
            }
            let bytes = self.data;
            let (groups, whole) = (groups as usize, groups as usize * width);
            // A run cut short keeps its whole values; the division is only
            // paid then (a run every 32 values of the `rl32` files).
            let (run, count) = match whole <= bytes.len() {
                true => (whole, groups * 8),
                false => (bytes.len(), (bytes.len() * 8) / width),
            };
            self.data = &bytes[run..];
            Ok(Some(Run::Packed { bytes, count }))
        } else {
            let count = header >> 1;
            if count > MAX_RUN {
                return Err(format!("a run of {count} values"));
            }
            let size = width.div_ceil(8);
            if self.data.len() < size {
                return Err("a run's value is cut off".into());
            }
            let mut value = 0u32;
            for (i, b) in self.data[..size].iter().enumerate() {
                value |= u32::from(*b) << (8 * i);
            }
            self.data = &self.data[size..];
            if width < 32 && value >> width != 0 {
                return Err(format!("a run's value {value} is wider than {width} bits"));
            }
            Ok(Some(Run::Repeated {
                value,
                count: count as usize,
            }))
        }
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for (i, b) in self.data.iter().enumerate().take(5) {
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                self.data = &self.data[i + 1..];
                return Ok(value);
            }
        }
        Err("a run header is cut off or longer than 5 bytes".into())
    }
}

/// Values unpacked at a time by [`unpack_chunks`]: their indices stay in
/// the L1 cache while they are used (a whole run of 100,000 indices went
/// through memory four times: zeroed, unpacked, checked, looked up).
const CHUNK: usize = 1024;

// A chunk of gathered values goes to an appender in one piece.
const _: () = assert!(CHUNK <= crate::nontemporal::CHUNK);

/// Unpacks the first `count` values of `width` bits from `bytes` (which
/// must hold them) [`CHUNK`] values at a time into `indices`, handing each
/// chunk to `use_chunk`; stops at its first error.
pub(crate) fn unpack_chunks<E>(
    bytes: &[u8],
    width: u8,
    count: usize,
    indices: &mut Vec<u32>,
    mut use_chunk: impl FnMut(&[u32]) -> Result<(), E>,
) -> Result<(), E> {
    indices.resize(CHUNK.min(count), 0);
    let mut done = 0;
    while done < count {
        let n = CHUNK.min(count - done);
        // A chunk of 1,024 values ends on a byte: it starts at byte
        // `done / 8 * width`.
        let from = (done / 8) * usize::from(width);
        unpack(&bytes[from.min(bytes.len())..], width, &mut indices[..n]);
        use_chunk(&indices[..n])?;
        done += n;
    }
    Ok(())
}

/// Appends the first `n` values of `width` bits from `bytes` (LSB first)
/// to `out`, a byte each, when `width` is 1 or 2 (the repetition and
/// definition levels of most nested columns) and `bytes` holds them: a
/// table look-up per input byte, where unpacking to `u32` and narrowing
/// after cost a pass more. Returns false, with nothing appended, otherwise.
pub(crate) fn unpack_narrow_to_bytes(bytes: &[u8], width: u8, n: usize, out: &mut Vec<u8>) -> bool {
    let per_byte = match width {
        1 => 8,
        2 => 4,
        _ => return false,
    };
    let Some(src) = bytes.get(..n.div_ceil(per_byte)) else {
        return false;
    };
    // Exactly `n` more: a buffer sized to its column's levels must not
    // grow (doubled) for the last byte's values past the run's end.
    out.reserve(n);
    let (whole, rest) = src.split_at(n / per_byte);
    if width == 1 {
        for &b in whole {
            out.extend_from_slice(&ONE_BIT_VALUES[usize::from(b)].to_le_bytes());
        }
        if let Some(&b) = rest.first() {
            out.extend_from_slice(&ONE_BIT_VALUES[usize::from(b)].to_le_bytes()[..n % 8]);
        }
    } else {
        for &b in whole {
            out.extend_from_slice(&TWO_BIT_VALUES[usize::from(b)].to_le_bytes()[..4]);
        }
        if let Some(&b) = rest.first() {
            out.extend_from_slice(&TWO_BIT_VALUES[usize::from(b)].to_le_bytes()[..n % 4]);
        }
    }
    true
}

/// For each byte, its 1-bit values as bytes (the first lowest).
const ONE_BIT_VALUES: [u64; 256] = values_of_bytes(1);
/// For each byte, its 2-bit values as bytes, in the low four.
const TWO_BIT_VALUES: [u64; 256] = values_of_bytes(2);

/// For each byte, its `width`-bit values (8 / `width` of them) as bytes,
/// the first lowest.
const fn values_of_bytes(width: u32) -> [u64; 256] {
    let mut table = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let mut i = 0;
        while i < 8 / width {
            let value = (b as u64 >> (width * i)) & ((1 << width) - 1);
            table[b] |= value << (8 * i);
            i += 1;
        }
        b += 1;
    }
    table
}

/// Unpacks the first `out.len()` values of `width` bits from `bytes`
/// (LSB first), which must hold them.
pub(crate) fn unpack(bytes: &[u8], width: u8, out: &mut [u32]) {
    #[cfg(target_arch = "x86_64")]
    if out.len() >= crate::simd::MIN_VALUES && crate::simd::has_avx2() {
        // SAFETY: the CPU has AVX2.
        return unsafe { avx2::unpack(bytes, width, out) };
    }
    unpack_by_width(bytes, width, out)
}

/// [`unpack`] on any CPU.
#[inline(always)]
fn unpack_by_width(bytes: &[u8], width: u8, out: &mut [u32]) {
    macro_rules! by_width {
        ($($w:literal)*) => {
            match width {
                $($w => unpack_groups::<$w>(bytes, out),)*
                _ => unpack_any(bytes, width, out),
            }
        };
    }
    by_width!(1 2 3 4 5 6 7 9 10 11 12 13 14 15 17 18 19 20 21 22 23 24);
}

/// [`unpack`] with AVX2: a group of 8 values is two 16-byte loads and one
/// byte shuffle, shifted by a vector of fixed shifts and masked at once.
/// The compiler vectorises [`unpack_groups`] only when the whole crate is
/// built for AVX2, not in a function compiled for it on its own. Eight
/// 4-byte loads put into a vector one at a time (this module's first form)
/// took 0.15 ns a value at widths 7-24 and 0.37 at width 3; the shuffle
/// takes 0.06 (1,024-value chunks, this VM's EPYC).
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::{
        __m128i, __m256i, _mm256_and_si256, _mm256_loadu2_m128i, _mm256_loadu_si256,
        _mm256_set1_epi32, _mm256_setr_epi32, _mm256_shuffle_epi8, _mm256_srlv_epi32,
        _mm256_storeu_si256,
    };

    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn unpack(bytes: &[u8], width: u8, out: &mut [u32]) {
        macro_rules! by_width {
            ($($w:literal)*) => {
                match width {
                    // SAFETY: the CPU has AVX2 (this function's promise).
                    $($w => unsafe { groups::<$w>(bytes, out) },)*
                    _ => super::unpack_any(bytes, width, out),
                }
            };
        }
        by_width!(1 2 3 4 5 6 7 9 10 11 12 13 14 15 17 18 19 20 21 22 23 24 25);
    }

    /// [`super::unpack_groups`] eight values at a time: the 16 bytes at a
    /// group's start feed its first four values and the 16 at its fifth
    /// value's first byte its last four; one byte shuffle puts the 4 bytes
    /// that hold each value in its lane, then a shift by a vector of fixed
    /// shifts and a mask.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn groups<const W: usize>(bytes: &[u8], out: &mut [u32]) {
        const { assert!(W >= 1 && W <= 25) };
        // Value `j` of a group starts at bit `j * W`, so at byte `j * W / 8`
        // of the group, and its 4 bytes there hold it (at most 7 bits of
        // offset plus 25 of value). Values 4-7 start at most `3 * W / 8 + 1`
        // bytes past value 4's first byte: with their 4 bytes, within 16.
        let high = 4 * W / 8;
        let reach = high + 16;
        let groups = if bytes.len() >= reach {
            ((bytes.len() - reach) / W + 1).min(out.len() / 8)
        } else {
            0
        };
        let mut picks = [0u8; 32];
        for j in 0..8 {
            let first = j * W / 8 - if j < 4 { 0 } else { high };
            for k in 0..4 {
                picks[4 * j + k] = (first + k) as u8;
            }
        }
        let shift = |j: usize| ((j * W) % 8) as i32;
        // SAFETY: `picks` holds 32 bytes.
        let picks = unsafe { _mm256_loadu_si256(picks.as_ptr().cast::<__m256i>()) };
        let shifts = _mm256_setr_epi32(
            shift(0),
            shift(1),
            shift(2),
            shift(3),
            shift(4),
            shift(5),
            shift(6),
            shift(7),
        );
        let mask = _mm256_set1_epi32(((1u64 << W) - 1) as i32);
        let (src, dst) = (bytes.as_ptr(), out.as_mut_ptr());
        for g in 0..groups {
            // SAFETY: group `g < groups` reads below `g * W + reach <=
            // bytes.len()` (see above) and writes values `8 * g..8 * g + 8`
            // of `out`, which has `8 * groups` of them.
            unsafe {
                let at = src.add(g * W);
                let words =
                    _mm256_loadu2_m128i(at.add(high).cast::<__m128i>(), at.cast::<__m128i>());
                let words = _mm256_shuffle_epi8(words, picks);
                let values = _mm256_and_si256(_mm256_srlv_epi32(words, shifts), mask);
                _mm256_storeu_si256(dst.add(g * 8).cast::<__m256i>(), values);
            }
        }
        super::unpack_any(&bytes[groups * W..], W as u8, &mut out[groups * 8..]);
    }
}

/// [`unpack`] for a width known when compiling: whole groups of 8 values
/// (`W` bytes) are read at fixed offsets with fixed shifts (0.21-0.23 ns
/// a value at widths 1-17, 2.5-2.8× faster than [`unpack_any`]), the rest
/// by [`unpack_any`].
#[inline(always)]
fn unpack_groups<const W: usize>(bytes: &[u8], out: &mut [u32]) {
    let mask = (1u64 << W) - 1;
    // A group's last value is read from the 8 bytes at its first byte, up
    // to `W + 8` bytes past the group's start.
    let groups = if bytes.len() >= W + 8 {
        ((bytes.len() - W - 8) / W + 1).min(out.len() / 8)
    } else {
        0
    };
    for (g, values) in out[..groups * 8].chunks_exact_mut(8).enumerate() {
        let src = &bytes[g * W..g * W + W + 8];
        for (j, slot) in values.iter_mut().enumerate() {
            let bit = j * W;
            let mut word = [0u8; 8];
            word.copy_from_slice(&src[bit / 8..bit / 8 + 8]);
            *slot = ((u64::from_le_bytes(word) >> (bit % 8)) & mask) as u32;
        }
    }
    unpack_any(&bytes[groups * W..], W as u8, &mut out[groups * 8..]);
}

/// [`unpack`] for any width.
#[inline(always)]
fn unpack_any(bytes: &[u8], width: u8, out: &mut [u32]) {
    let width = usize::from(width);
    if width == 0 {
        out.fill(0);
        return;
    }
    debug_assert!(bytes.len() * 8 >= out.len() * width);
    // Byte-aligned widths (a dictionary of up to 256 or 65,536 values):
    // plain loads the compiler vectorises.
    if width == 8 {
        for (slot, b) in out.iter_mut().zip(bytes) {
            *slot = u32::from(*b);
        }
        return;
    }
    if width == 16 {
        for (slot, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
            *slot = u32::from(u16::from_le_bytes([b[0], b[1]]));
        }
        return;
    }
    let mask = if width == 32 {
        u64::from(u32::MAX)
    } else {
        (1u64 << width) - 1
    };
    // Each value is read from the 8 bytes at its first byte: at most 7 bits
    // of offset plus 32 of value fit in them. Values whose 8 bytes would run
    // past the end are read from a zero-padded copy of the tail.
    let whole = if bytes.len() >= 8 {
        ((bytes.len() - 8) * 8 / width + 1).min(out.len())
    } else {
        0
    };
    for (i, slot) in out[..whole].iter_mut().enumerate() {
        let bit = i * width;
        let at = bit / 8;
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[at..at + 8]);
        *slot = ((u64::from_le_bytes(word) >> (bit % 8)) & mask) as u32;
    }
    if whole < out.len() {
        let first = whole * width / 8;
        let mut tail = [0u8; 16];
        let rest = &bytes[first..];
        tail[..rest.len()].copy_from_slice(rest);
        for (i, slot) in out.iter_mut().enumerate().skip(whole) {
            let bit = i * width - first * 8;
            let at = bit / 8;
            let mut word = [0u8; 8];
            word.copy_from_slice(&tail[at..at + 8]);
            *slot = ((u64::from_le_bytes(word) >> (bit % 8)) & mask) as u32;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn narrow_values_unpack_to_bytes_as_to_u32() {
        let bytes: Vec<u8> = (0..64u32).map(|i| (i * 37 + 11) as u8).collect();
        for width in 1..=3u8 {
            for n in [0, 1, 3, 4, 7, 8, 9, 31, 100, 200] {
                if n * usize::from(width) > bytes.len() * 8 {
                    continue;
                }
                let mut wide = vec![0u32; n];
                unpack(&bytes, width, &mut wide);
                let mut out = vec![9u8];
                let taken = unpack_narrow_to_bytes(&bytes, width, n, &mut out);
                assert_eq!(taken, width <= 2, "width {width}");
                if taken {
                    let want: Vec<u8> = std::iter::once(9)
                        .chain(wide.iter().map(|&v| v as u8))
                        .collect();
                    assert_eq!(out, want, "width {width}, {n} values");
                } else {
                    assert_eq!(out, vec![9u8]);
                }
            }
        }
        // A buffer with room for exactly the values is not grown.
        let mut out = Vec::with_capacity(13);
        assert!(unpack_narrow_to_bytes(&bytes, 1, 13, &mut out));
        assert_eq!(out.capacity(), 13);
        // Bytes that do not hold the values: nothing appended.
        let mut out = Vec::new();
        assert!(!unpack_narrow_to_bytes(&[0xff], 2, 5, &mut out));
        assert!(out.is_empty());
    }

    use super::*;

    /// Packs `values` of `width` bits LSB first (the test's own writer).
    fn pack(values: &[u32], width: usize) -> Vec<u8> {
        let mut out = vec![0u8; (values.len() * width).div_ceil(8)];
        for (i, v) in values.iter().enumerate() {
            for b in 0..width {
                if v >> b & 1 == 1 {
                    let bit = i * width + b;
                    out[bit / 8] |= 1 << (bit % 8);
                }
            }
        }
        out
    }

    #[test]
    fn chunks_hold_what_one_unpack_gives() {
        for width in [1u8, 5, 8, 13, 24, 32] {
            let values: Vec<u32> = (0..5_000u64)
                .map(|i| ((i * 2_654_435_761) >> 7) as u32 & ((1u64 << width) - 1) as u32)
                .collect();
            let bytes = pack(&values, usize::from(width));
            for count in [0, 1, 1_023, 1_024, 1_025, 5_000] {
                let mut got = Vec::new();
                let mut indices = Vec::new();
                unpack_chunks(&bytes, width, count, &mut indices, |chunk| {
                    assert!(chunk.len() <= CHUNK);
                    got.extend_from_slice(chunk);
                    Ok::<(), ()>(())
                })
                .unwrap();
                assert_eq!(got, values[..count], "width {width}, {count} values");
            }
        }
    }

    #[test]
    fn unpacks_every_width_at_every_length() {
        for width in 0..=32usize {
            for n in [0usize, 1, 7, 8, 9, 16, 17, 31, 33, 64, 100, 1000] {
                let values: Vec<u32> = (0..n as u64)
                    .map(|i| {
                        let v = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 17;
                        if width == 0 {
                            0
                        } else {
                            (v & ((1u64 << width) - 1)) as u32
                        }
                    })
                    .collect();
                let bytes = pack(&values, width);
                // The dispatcher, and each of the ways it can go.
                let mut out = vec![u32::MAX; n];
                unpack(&bytes, width as u8, &mut out);
                assert_eq!(out, values, "width {width}, {n} values");
                let mut out = vec![u32::MAX; n];
                unpack_by_width(&bytes, width as u8, &mut out);
                assert_eq!(out, values, "width {width}, {n} values, any CPU");
                #[cfg(target_arch = "x86_64")]
                if crate::simd::has_avx2() {
                    let mut out = vec![u32::MAX; n];
                    // SAFETY: the CPU has AVX2.
                    unsafe { avx2::unpack(&bytes, width as u8, &mut out) };
                    assert_eq!(out, values, "width {width}, {n} values, AVX2");
                }
            }
        }
    }

    #[test]
    fn reads_repeated_and_packed_runs() {
        // 5 × 3 (RLE, width 2), then one packed group of 8 values.
        let values = [0u32, 1, 2, 3, 3, 2, 1, 0];
        let mut data = vec![5 << 1, 3];
        data.push(1 << 1 | 1);
        data.extend(pack(&values, 2));
        let mut runs = Runs::new(&data, 2).unwrap();
        assert_eq!(
            runs.next_run().unwrap(),
            Some(Run::Repeated { value: 3, count: 5 })
        );
        let Some(Run::Packed { bytes, count }) = runs.next_run().unwrap() else {
            panic!("a packed run")
        };
        assert_eq!(count, 8);
        let mut out = [0u32; 8];
        unpack(bytes, 2, &mut out);
        assert_eq!(out, values);
        assert_eq!(runs.next_run().unwrap(), None);
    }

    #[test]
    fn a_short_packed_run_unpacks_only_its_own_values_whatever_follows_it() {
        // Runs of one group each, at widths the word-at-a-time paths take,
        // between repeated runs: each packed run's bytes run on into the
        // next run's header and value, which must not leak into it.
        for width in [3usize, 10, 14, 17, 24] {
            let mask = (1u32 << width) - 1;
            let first: Vec<u32> = (0..8)
                .map(|i: u32| i.wrapping_mul(2_654_435_761) & mask)
                .collect();
            let second: Vec<u32> = (0..16)
                .map(|i: u32| !i.wrapping_mul(40_503) & mask)
                .collect();
            let mut data = vec![1 << 1 | 1];
            data.extend(pack(&first, width));
            data.push(9 << 1);
            data.extend_from_slice(&mask.to_le_bytes()[..width.div_ceil(8)]);
            data.push(2 << 1 | 1);
            data.extend(pack(&second, width));
            data.push(40 << 1);
            data.extend_from_slice(&mask.to_le_bytes()[..width.div_ceil(8)]);
            let mut runs = Runs::new(&data, width as u8).unwrap();
            let mut got = Vec::new();
            while let Some(run) = runs.next_run().unwrap() {
                match run {
                    Run::Packed { bytes, count } => {
                        let mut out = vec![u32::MAX; count];
                        unpack(bytes, width as u8, &mut out);
                        got.push(out);
                    }
                    Run::Repeated { value, count } => got.push(vec![value; count]),
                }
            }
            let want = [first, vec![mask; 9], second, vec![mask; 40]];
            assert_eq!(got, want, "width {width}");
        }
    }

    #[test]
    fn refuses_what_the_format_cannot_hold() {
        assert!(Runs::new(&[], 33).is_err());
        // A value wider than the width, a value cut off, a header that never ends.
        assert!(Runs::new(&[2, 0xff], 3).unwrap().next_run().is_err());
        assert!(Runs::new(&[2], 8).unwrap().next_run().is_err());
        assert!(Runs::new(&[0x80; 6], 8).unwrap().next_run().is_err());
        // A packed run cut short keeps only its whole values.
        let mut runs = Runs::new(&[3 << 1 | 1, 0xff, 0xff], 4).unwrap();
        assert!(matches!(
            runs.next_run().unwrap(),
            Some(Run::Packed { count: 4, .. })
        ));
    }
}
