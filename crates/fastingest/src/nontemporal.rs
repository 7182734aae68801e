//! Appending decoded values to a large output buffer with stores that
//! bypass the cache (x86-64 `movntdq`).
//!
//! Why: a steady read of a file whose pages are already in memory is bound
//! by writing its Arrow output. An ordinary store first reads the cache
//! line it writes into (read for ownership), so writing 136 MB moves about
//! 272 MB over the memory bus: 8.4 GB/s on this project's VM, against
//! 21 GB/s with streaming stores, which write whole lines without reading
//! them (a 136 MB fill, one thread: 17.3 ms against 6.5). A column chunk's
//! output is written once and read later, after the whole table is built,
//! by when the cache holds other chunks anyway.
//!
//! Small outputs (below [`MIN_OUTPUT_BYTES`]) and short appends keep
//! ordinary stores: they may still be in cache when read, and a partly
//! written line costs a streaming store more than it saves.
//!
//! Streaming stores are weakly ordered: the thread that made them runs a
//! store fence before anything reads what they wrote. Each streaming copy
//! here ends with one ([`copy_out`]; an [`Appender`] when it is dropped),
//! so callers need not know: a fence per page or per few KB of values.

use std::mem::{size_of, MaybeUninit};

/// Outputs of fewer bytes than this (the vector's capacity) are written
/// with ordinary stores.
pub(crate) const MIN_OUTPUT_BYTES: usize = 1 << 20;

/// An appender expecting fewer bytes than this writes with ordinary
/// stores: the lines at either end are written in part and cost a
/// streaming store more.
const MIN_APPEND_BYTES: usize = 256;

/// Orders the streaming stores this thread made before anything after.
#[inline(always)]
fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2, which every x86-64 CPU has.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

#[cfg(test)]
thread_local! {
    /// Cache lines written with streaming stores on this thread.
    pub(crate) static STREAMED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// When what is appended is read next.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Reads {
    /// Soon, by the same decoder (a dictionary, the dense values of a page
    /// with nulls): kept in the cache.
    Soon,
    /// Once the table is built (a column's output): streamed when large.
    Later,
}

/// Most values [`Append::extend_with`] appends at a time.
pub(crate) const CHUNK: usize = 1024;

/// Values staged before they are streamed out: a chunk, plus what is left
/// over from the line a flush ends in.
const STAGED: usize = CHUNK + 64;

/// Somewhere decoded values are appended to: a vector, with ordinary
/// stores, or an [`Appender`], which streams them out when that pays. A
/// decoder generic over it compiles to one loop for each, with no branch
/// per append between them.
pub(crate) trait Append<T: Copy> {
    /// Appends `n` copies of `value`.
    fn fill(&mut self, value: T, n: usize);

    /// Appends `n` values (at most [`CHUNK`]) that `write` puts into the
    /// slots it is handed.
    ///
    /// # Safety
    /// `write` must write every one of the `n` slots it is handed.
    unsafe fn extend_with(&mut self, n: usize, write: impl FnOnce(&mut [MaybeUninit<T>]));
}

impl<T: Copy> Append<T> for Vec<T> {
    #[inline(always)]
    fn fill(&mut self, value: T, n: usize) {
        self.resize(self.len() + n, value);
    }

    #[inline(always)]
    unsafe fn extend_with(&mut self, n: usize, write: impl FnOnce(&mut [MaybeUninit<T>])) {
        self.reserve(n);
        let len = self.len();
        write(&mut self.spare_capacity_mut()[..n]);
        // SAFETY: the caller's promise: `write` wrote the `n` slots.
        unsafe { self.set_len(len + n) };
    }
}

/// Appends values to an output vector, streaming them out when that pays.
///
/// Values are first written to a small buffer on the stack, which stays in
/// the L1 cache, then streamed out a run of whole cache lines at a time: a
/// line written in part by a streaming store and in part by an ordinary one
/// costs more than either (appending runs of 32 values straight to the
/// output that way made a read of the suite's `rl32` file 60 % slower).
/// What is staged goes out, and is fenced, when the appender is dropped.
pub(crate) struct Appender<'a, T: Copy> {
    out: &'a mut Vec<T>,
    /// Whether values are staged and streamed (else they go straight to
    /// `out`).
    streaming: bool,
    staged: [MaybeUninit<T>; STAGED],
    len: usize,
}

impl<'a, T: Copy> Appender<'a, T> {
    /// An appender to `out`, which will receive about `coming` values more,
    /// read when `reads` says.
    #[inline(always)]
    pub(crate) fn new(out: &'a mut Vec<T>, coming: usize, reads: Reads) -> Self {
        out.reserve(coming);
        let size = size_of::<T>();
        // Whole lines hold whole values only when a value's size divides 16.
        let streaming = cfg!(target_arch = "x86_64")
            && reads == Reads::Later
            && size > 0
            && 16 % size == 0
            && coming * size_of::<T>() >= MIN_APPEND_BYTES
            && out.capacity() * size_of::<T>() >= MIN_OUTPUT_BYTES;
        Appender {
            out,
            streaming,
            staged: [const { MaybeUninit::uninit() }; STAGED],
            len: 0,
        }
    }

    /// Streams the staged values out up to the last whole cache line of
    /// `out` they fill, or all of them when `all`; what is left moves to
    /// the front (less than a line).
    #[inline(never)]
    fn flush(&mut self, all: bool) {
        let size = size_of::<T>();
        if self.out.capacity() - self.out.len() < self.len {
            // Growing copies what was streamed out: fenced first.
            fence();
        }
        self.out.reserve(self.len);
        let at = self.out.len();
        // SAFETY: `reserve` made room for the `self.len` staged values,
        // which were all written; `dst` is `out`'s first spare slot.
        unsafe {
            let dst = self.out.as_mut_ptr().add(at).cast::<u8>();
            let bytes = self.len * size;
            // Ordinary stores up to the first line boundary (the line the
            // last flush ended in), streaming stores for the whole lines,
            // and ordinary ones for the rest when it all goes.
            let head = dst.align_offset(64).min(bytes);
            let lines = (bytes - head) / 64 * 64;
            let src = self.staged.as_ptr().cast::<u8>();
            std::ptr::copy_nonoverlapping(src, dst, head);
            stream_lines(src.add(head), dst.add(head), lines);
            let mut sent = head + lines;
            if all {
                std::ptr::copy_nonoverlapping(src.add(sent), dst.add(sent), bytes - sent);
                sent = bytes;
            }
            self.out.set_len(at + sent / size);
            let kept = self.len - sent / size;
            std::ptr::copy(
                self.staged.as_ptr().add(sent / size),
                self.staged.as_mut_ptr(),
                kept,
            );
            self.len = kept;
        }
    }
}

impl<T: Copy> Append<T> for Appender<'_, T> {
    #[inline(always)]
    fn fill(&mut self, value: T, mut n: usize) {
        if !self.streaming {
            return Append::fill(&mut *self.out, value, n);
        }
        while n > 0 {
            if self.len == STAGED {
                self.flush(false);
            }
            let take = n.min(STAGED - self.len);
            for slot in &mut self.staged[self.len..self.len + take] {
                slot.write(value);
            }
            self.len += take;
            n -= take;
        }
    }

    #[inline(always)]
    unsafe fn extend_with(&mut self, n: usize, write: impl FnOnce(&mut [MaybeUninit<T>])) {
        assert!(n <= CHUNK);
        if !self.streaming {
            // SAFETY: the caller's promise, passed on.
            return unsafe { Append::extend_with(&mut *self.out, n, write) };
        }
        if self.len + n > STAGED {
            self.flush(false);
        }
        write(&mut self.staged[self.len..self.len + n]);
        self.len += n;
    }
}

impl<T: Copy> Drop for Appender<'_, T> {
    fn drop(&mut self) {
        if self.len > 0 {
            self.flush(true);
        }
        if self.streaming {
            fence();
        }
    }
}

/// Copies `bytes` bytes from `src` to `dst`: the whole cache lines of
/// `dst` with streaming stores, the lines at either end that are only in
/// part `dst`'s with ordinary ones (a neighbour writes the rest of them, and
/// a line written both ways costs more than either); then fences.
///
/// # Safety
/// `src` readable and `dst` writable for `bytes` bytes, not overlapping.
#[inline(always)]
pub(crate) unsafe fn copy_out(src: *const u8, dst: *mut u8, bytes: usize) {
    let head = dst.align_offset(64).min(bytes);
    let lines = (bytes - head) / 64 * 64;
    std::ptr::copy_nonoverlapping(src, dst, head);
    stream_lines(src.add(head), dst.add(head), lines);
    let done = head + lines;
    std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), bytes - done);
    fence();
}

/// Copies `bytes` bytes, whole cache lines, from `src` to `dst` with
/// streaming stores.
///
/// # Safety
/// `src` readable and `dst` writable for `bytes` bytes, not overlapping;
/// `dst` 64-byte aligned (unless `bytes` is 0) and `bytes` a multiple of 64.
#[inline(always)]
unsafe fn stream_lines(src: *const u8, dst: *mut u8, bytes: usize) {
    // (No lines at all may start anywhere: a flush shorter than its head.)
    debug_assert!(bytes.is_multiple_of(64) && (bytes == 0 || dst.align_offset(64) == 0));
    #[cfg(test)]
    STREAMED.with(|n| n.set(n.get() + bytes / 64));
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        for line in 0..bytes / 64 {
            let s = src.add(line * 64).cast::<__m128i>();
            let d = dst.add(line * 64).cast::<__m128i>();
            let (a, b) = (_mm_loadu_si128(s), _mm_loadu_si128(s.add(1)));
            let (c, e) = (_mm_loadu_si128(s.add(2)), _mm_loadu_si128(s.add(3)));
            _mm_stream_si128(d, a);
            _mm_stream_si128(d.add(1), b);
            _mm_stream_si128(d.add(2), c);
            _mm_stream_si128(d.add(3), e);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    std::ptr::copy_nonoverlapping(src, dst, bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A vector large enough to stream into, holding `prefix` values.
    fn big<T: Copy + Default>(prefix: usize) -> Vec<T> {
        let mut v = Vec::with_capacity(MIN_OUTPUT_BYTES / size_of::<T>() + 64);
        v.resize(prefix, T::default());
        v
    }

    /// Appends runs and chunks of many lengths at many offsets, checked
    /// against what a vector's own methods make of them.
    fn check<T: Copy + Default + PartialEq + std::fmt::Debug>(value: impl Fn(usize) -> T) {
        let steps = [0, 1, 3, 15, 16, 17, 63, 64, 65, 200, 1000, 1024, 4099];
        let streams = cfg!(target_arch = "x86_64") && 16 % size_of::<T>() == 0;
        for prefix in 0..5 {
            for (k, &n) in steps.iter().enumerate() {
                let mut out = big::<T>(prefix);
                let mut expected = out.clone();
                {
                    let mut append = Appender::new(&mut out, 100_000, Reads::Later);
                    assert_eq!(append.streaming, streams);
                    for round in 0..3 {
                        let v = value(round + k);
                        append.fill(v, n);
                        expected.resize(expected.len() + n, v);
                        let m = steps[(k + round) % steps.len()].min(CHUNK);
                        // SAFETY: every slot is written.
                        unsafe {
                            append.extend_with(m, |room| {
                                for (i, slot) in room.iter_mut().enumerate() {
                                    slot.write(value(i));
                                }
                            })
                        };
                        expected.extend((0..m).map(&value));
                    }
                }
                assert_eq!(out, expected, "prefix {prefix}, n {n}");
            }
        }
    }

    #[test]
    fn appends_hold_every_value_at_every_offset_and_length() {
        check(|i| i as u8);
        check(|i| i as i16 - 7);
        check(|i| i as f32 * 1.5);
        check(|i| i as i64 * -3);
        check(|i| i128::MIN + i as i128);
        // A size that does not divide 16 goes straight to the vector.
        check(|i| [i as u8, 2, 3]);
    }

    #[test]
    fn copies_out_keep_every_byte_at_every_offset_and_length() {
        let src: Vec<u8> = (0..5000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        for offset in 0..70 {
            for len in [0, 1, 63, 64, 65, 127, 128, 129, 1000, 4900] {
                let mut out = vec![0xEEu8; 5200];
                // SAFETY: `offset + len` is within both buffers.
                unsafe { copy_out(src.as_ptr().add(3), out.as_mut_ptr().add(offset), len) };
                assert!(out[..offset].iter().all(|&b| b == 0xEE));
                assert_eq!(&out[offset..offset + len], &src[3..3 + len]);
                assert!(out[offset + len..].iter().all(|&b| b == 0xEE));
            }
        }
    }

    #[test]
    fn small_outputs_go_straight_to_the_vector() {
        let mut small: Vec<u64> = Vec::new();
        {
            let mut append = Appender::new(&mut small, 1003, Reads::Later);
            assert!(!append.streaming);
            append.fill(9, 1000);
            append.fill(1, 3);
        }
        assert_eq!(small.len(), 1003);
        assert_eq!(&small[998..], &[9, 9, 1, 1, 1]);
        // Values read soon are never streamed, however many.
        let mut scratch: Vec<u64> = Vec::with_capacity(MIN_OUTPUT_BYTES);
        assert!(!Appender::new(&mut scratch, 100_000, Reads::Soon).streaming);
    }
}
