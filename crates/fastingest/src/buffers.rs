//! Fetch buffers kept for reuse. A span's buffer is handed to the decoder as
//! `Bytes`; when the last reference to it goes, its memory comes back here
//! and the next span of about its size is fetched into it.
//!
//! Why: a fresh buffer is zeroed (5 % of a steady local read's CPU went to
//! `memset`), and on a machine where new memory is slow to fault in (a VM
//! whose host took back free pages), every read that grew the heap paid
//! for it again. A buffer from here is written over whole by the fetch and
//! never zeroed; its old bytes are never seen, since a span is only handed
//! on once every byte of it has been written.

use std::sync::Mutex;

use bytes::{Bytes, BytesMut};

/// At most this many bytes of buffers wait here between reads.
const MOST_POOLED_BYTES: usize = 256 << 20;
/// At most this many buffers wait here.
const MOST_POOLED: usize = 64;

/// Buffers waiting for reuse. Each is initialized (its bytes written) up to
/// its length.
static POOL: Mutex<Pool> = Mutex::new(Pool {
    buffers: Vec::new(),
    bytes: 0,
});

struct Pool {
    buffers: Vec<Vec<u8>>,
    bytes: usize,
}

/// A buffer of at least `len` bytes, every one of them initialized (zeros
/// or an earlier span's bytes): one kept here when one fits (up to twice
/// `len`), else a new one.
pub(crate) fn take(len: usize) -> Vec<u8> {
    // `try_lock`: a forked child may find the lock held by a thread it does
    // not have, and no read should wait here for another.
    if let Ok(mut pool) = POOL.try_lock() {
        let fits = pool
            .buffers
            .iter()
            .enumerate()
            .filter(|(_, b)| b.len() >= len && b.len() <= len.saturating_mul(2))
            .min_by_key(|(_, b)| b.len())
            .map(|(i, _)| i);
        if let Some(i) = fits {
            let buffer = pool.buffers.swap_remove(i);
            pool.bytes -= buffer.len();
            return buffer;
        }
    }
    vec![0u8; len]
}

/// A buffer for `len` bytes, to be written whole and then passed to
/// [`share`]: a kept one or a new zeroed one, as `BytesMut` (so that it
/// can be split into the span's slices and joined again without copying).
pub(crate) fn writable(len: usize) -> (BytesMut, Origin) {
    let buffer = take(len);
    let origin = Origin {
        address: buffer.as_ptr() as usize,
        initialized: buffer.len(),
    };
    // `Bytes` from a `Vec` and a unique `Bytes` into `BytesMut`: no copy.
    let mut writable = BytesMut::from(Bytes::from(buffer));
    writable.truncate(len);
    (writable, origin)
}

/// Where a buffer from [`take`] started and how much of it was initialized,
/// to tell whether the filled buffer is still that allocation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Origin {
    address: usize,
    initialized: usize,
}

/// `filled` (from [`writable`], every byte written) as `Bytes`; its memory
/// returns here when the last reference is dropped.
pub(crate) fn share(filled: BytesMut, origin: Origin) -> Bytes {
    if filled.is_empty() {
        return Bytes::new();
    }
    // The same allocation when it was filled in place and is not shared.
    let buffer = Vec::from(filled);
    Bytes::from_owner(Kept { buffer, origin })
}

/// The owner behind a shared fetch buffer.
struct Kept {
    buffer: Vec<u8>,
    origin: Origin,
}

impl AsRef<[u8]> for Kept {
    fn as_ref(&self) -> &[u8] {
        &self.buffer
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        let mut buffer = std::mem::take(&mut self.buffer);
        if buffer.as_ptr() as usize == self.origin.address
            && buffer.capacity() >= self.origin.initialized
        {
            // SAFETY: still the allocation `take` handed out, whose first
            // `initialized` bytes were written before (and bytes are never
            // de-initialized); the capacity holds them.
            unsafe { buffer.set_len(self.origin.initialized) };
        }
        give_back(buffer);
    }
}

fn give_back(buffer: Vec<u8>) {
    let Ok(mut pool) = POOL.try_lock() else {
        return;
    };
    if pool.buffers.len() < MOST_POOLED && pool.bytes + buffer.len() <= MOST_POOLED_BYTES {
        pool.bytes += buffer.len();
        pool.buffers.push(buffer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_buffer_is_reused_for_a_span_of_about_its_size() {
        // Sizes no other test fetches, so buffers they give back do not fit.
        let (mut first, origin) = writable(37_000_003);
        assert!(first.iter().all(|&b| b == 0));
        // Split into slices and joined again, as a span's fetch does.
        let mut tail = first.split_off(1_000);
        tail.truncate(37_000_001 - 1_000);
        tail.fill(7);
        first.fill(7);
        first.unsplit(tail);
        let shared = share(first, origin);
        assert_eq!(shared.len(), 37_000_001);
        assert_eq!(shared.as_ptr() as usize, origin.address);
        let slice = shared.slice(10..20);
        drop(shared);
        // Still referenced by a slice: not back yet.
        let other = take(37_000_001);
        assert_ne!(other.as_ptr() as usize, origin.address);
        drop(slice);
        // Back, whole (its full length again), and handed out for a span
        // it fits, with the earlier bytes in it rather than zeros.
        let again = take(37_000_001);
        assert_eq!(again.as_ptr() as usize, origin.address);
        assert_eq!(again.len(), 37_000_003);
        assert_eq!(again[0], 7);
        // Too large for a span under half its size.
        give_back(again);
        let small = take(18_000_000);
        assert_ne!(small.as_ptr() as usize, origin.address);
        assert_eq!(small.len(), 18_000_000);
    }
}
