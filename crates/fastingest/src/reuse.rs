//! Handing the memory of decoded fetched spans to the next large
//! allocations, for an allocator to call (the Python extension's does; a
//! Rust service may wire it into its own with [`enable`], [`keep`] and
//! [`take`]).
//!
//! Why: a read through a link holds each fetched span until its row group
//! is decoded, and writes the output into memory allocated meanwhile. The
//! allocator keeps what is freed (see the binding's allocator), but placed
//! little of the output in freed spans: through the cloud profile, 66 of
//! the 256 MiB of the suite's `int` output landed in a span's block, the
//! rest in memory the process had never touched. Peak RSS was then the
//! fetched bytes plus most of the output: 510 MiB against polars' 435.
//! Kept here, a freed span's block goes to the next large allocation it
//! fits, whatever thread makes it: the same read peaked at 452 MiB, in the
//! same time (see docs/benchmarks.md, 2026-11-30).
//!
//! Only spans' blocks are kept ([`FreeingSpan`]), and only while a read
//! goes ([`ReadGoing`]): keeping every large block freed during a read
//! (grown vectors, page buffers) raised local reads' peaks by 24-30 MiB,
//! since the allocator could no longer carve other sizes from them. For
//! the same reason at most [`KEPT_AT_MOST`] blocks of [`KEPT_BYTES_AT_MOST`]
//! in all wait, the oldest going back to the allocator first, and all of
//! them go back when the last read ends.
//!
//! Every call here allocates nothing and never waits on a lock while an
//! allocator calls it (a busy shelf is skipped), so it is safe from inside
//! `GlobalAlloc`, and a process forked while the shelf was held only loses
//! the reuse.

use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Blocks from this size up are kept and handed out.
pub const KEPT_FROM: usize = 1 << 20;

/// The most blocks kept at once.
pub const KEPT_AT_MOST: usize = 8;

/// The most bytes kept at once: about a row group's spans. A freed span
/// waits for the output of the row groups decoded next; one that no
/// allocation fits soon is better back with the allocator, which can carve
/// other sizes from it. Peak MiB with 32, 48, 64 and 96 MiB kept (without
/// reuse), 9 interleaved fresh processes: the suite's `int` through the
/// cloud profile 453, 443, 441, 457 (503); `mixed` from MinIO 458, 467,
/// 481, 502 (480).
pub const KEPT_BYTES_AT_MOST: usize = 48 << 20;

/// A kept block serves an allocation of at least half its size: through
/// the cloud profile the suite's `int` file comes as spans of 6.7, 9.1 and
/// 17.3 MiB a row group, whose outputs are 2.1, 4.3, 8.5 and 17.1 MiB;
/// allowing only an eighth more than asked left the 6.7 MiB blocks unused
/// (peak 489-493 MiB against 448-461). What
/// an allocation leaves of its block stays idle until the output is freed.
const SERVES_FROM_HALF: usize = 2;

thread_local! {
    /// Set while this thread frees a fetched span ([`FreeingSpan`]).
    static FREEING_SPAN: Cell<bool> = const { Cell::new(false) };
}

/// Kept blocks, oldest first: `(address, usable size)`.
struct Kept {
    len: usize,
    blocks: [(usize, usize); KEPT_AT_MOST],
}

impl Kept {
    fn bytes(&self) -> usize {
        self.blocks[..self.len].iter().map(|b| b.1).sum()
    }

    fn remove(&mut self, at: usize) -> (usize, usize) {
        let block = self.blocks[at];
        self.blocks.copy_within(at + 1..self.len, at);
        self.len -= 1;
        block
    }
}

/// Kept blocks behind a flag that is taken, never waited for, with the
/// reads they are kept for. The process has one ([`SHELF`]); tests make
/// their own.
struct Shelf {
    busy: AtomicBool,
    kept: UnsafeCell<Kept>,
    /// How many blocks are kept now (read without the flag).
    kept_now: AtomicUsize,
    /// How many reads go.
    reads: AtomicUsize,
    /// How a kept block is given back to its allocator; set by [`enable`].
    release: OnceLock<unsafe fn(*mut u8)>,
    /// Bytes of the allocations served from kept blocks.
    handed_out: AtomicUsize,
    /// The most bytes kept at once.
    kept_bytes_at_most: usize,
}

// SAFETY: `kept` is only touched by the thread that set `busy` (see
// `Shelf::try_with`); the rest are atomics.
unsafe impl Sync for Shelf {}

static SHELF: Shelf = Shelf::new(KEPT_BYTES_AT_MOST);

impl Shelf {
    const fn new(kept_bytes_at_most: usize) -> Self {
        Shelf {
            busy: AtomicBool::new(false),
            kept: UnsafeCell::new(Kept {
                len: 0,
                blocks: [(0, 0); KEPT_AT_MOST],
            }),
            kept_now: AtomicUsize::new(0),
            reads: AtomicUsize::new(0),
            release: OnceLock::new(),
            handed_out: AtomicUsize::new(0),
            kept_bytes_at_most,
        }
    }

    /// Runs `f` on the kept blocks, unless another thread holds them.
    fn try_with<R>(&self, f: impl FnOnce(&mut Kept) -> R) -> Option<R> {
        self.busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()?;
        // SAFETY: the flag was set here, so no other thread touches `kept`
        // until it is cleared below.
        let kept = unsafe { &mut *self.kept.get() };
        let result = f(kept);
        self.kept_now.store(kept.len, Ordering::Relaxed);
        self.busy.store(false, Ordering::Release);
        Some(result)
    }

    fn read_starts(&self) {
        self.reads.fetch_add(1, Ordering::Relaxed);
    }

    /// The last read to end gives the kept blocks back. The shelf is only
    /// held for a few instructions, so a busy one is tried again a while;
    /// one left busy by a fork is left as it is.
    fn read_ends(&self) {
        if self.reads.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        let Some(release) = self.release.get() else {
            return;
        };
        for _ in 0..1000 {
            let mut blocks = [(0usize, 0usize); KEPT_AT_MOST];
            let taken = self.try_with(|kept| {
                let n = kept.len;
                blocks[..n].copy_from_slice(&kept.blocks[..n]);
                kept.len = 0;
                n
            });
            match taken {
                Some(n) => {
                    for &(address, _) in &blocks[..n] {
                        // SAFETY: each block was kept by `keep` from the
                        // allocator `release` belongs to, and is no one's.
                        unsafe { release(address as *mut u8) };
                    }
                    return;
                }
                None => std::thread::yield_now(),
            }
        }
    }

    fn should_keep(&self, size: usize) -> bool {
        size >= KEPT_FROM
            && FREEING_SPAN.with(Cell::get)
            && self.reads.load(Ordering::Relaxed) > 0
            && self.release.get().is_some()
    }

    /// # Safety
    /// As [`keep`].
    unsafe fn keep(&self, block: *mut u8, usable: usize) -> bool {
        let Some(release) = self.release.get() else {
            return false;
        };
        if usable > self.kept_bytes_at_most {
            return false;
        }
        let mut gone = [0usize; KEPT_AT_MOST];
        let n_gone = self.try_with(|kept| {
            // Asked again here: the last read may have ended, and given the
            // kept blocks back, since the caller asked `should_keep`.
            if self.reads.load(Ordering::Acquire) == 0 {
                return None;
            }
            // The oldest go back until the new block fits both bounds.
            let mut n = 0;
            while kept.len == KEPT_AT_MOST || kept.bytes() + usable > self.kept_bytes_at_most {
                gone[n] = kept.remove(0).0;
                n += 1;
            }
            kept.blocks[kept.len] = (block as usize, usable);
            kept.len += 1;
            Some(n)
        });
        match n_gone.flatten() {
            None => false,
            Some(n) => {
                for &oldest in &gone[..n] {
                    // SAFETY: kept by an earlier `keep` from that allocator.
                    unsafe { release(oldest as *mut u8) };
                }
                true
            }
        }
    }

    fn take(&self, size: usize, align: usize) -> *mut u8 {
        if size < KEPT_FROM || self.kept_now.load(Ordering::Relaxed) == 0 {
            return std::ptr::null_mut();
        }
        let taken = self.try_with(|kept| {
            let fits = |&(address, usable): &(usize, usize)| {
                usable >= size
                    && usable / SERVES_FROM_HALF <= size
                    && address.is_multiple_of(align.max(1))
            };
            let best = (0..kept.len)
                .filter(|&i| fits(&kept.blocks[i]))
                .min_by_key(|&i| kept.blocks[i].1)?;
            Some(kept.remove(best).0)
        });
        match taken.flatten() {
            Some(address) => {
                self.handed_out.fetch_add(size, Ordering::Relaxed);
                address as *mut u8
            }
            None => std::ptr::null_mut(),
        }
    }
}

/// Turns reuse on for the process: `release` gives a block back to the
/// allocator that made it (it must not call back into [`keep`]).
pub fn enable(release: unsafe fn(*mut u8)) {
    let _ = SHELF.release.set(release);
}

/// Whether reuse is on ([`enable`]).
pub fn enabled() -> bool {
    SHELF.release.get().is_some()
}

/// While alive, blocks of fetched spans freed on any thread are kept for
/// reuse; the last one to go gives the kept blocks back. One lives for each
/// read (in its [`crate::fetch::Fetcher`]).
#[must_use = "blocks are kept only while the guard lives"]
#[derive(Debug)]
pub(crate) struct ReadGoing(());

impl ReadGoing {
    pub(crate) fn new() -> Self {
        SHELF.read_starts();
        ReadGoing(())
    }
}

impl Drop for ReadGoing {
    fn drop(&mut self) {
        SHELF.read_ends();
    }
}

/// Marks what the calling thread frees while the guard lives as a fetched
/// span's block ([`should_keep`]).
pub(crate) struct FreeingSpan {
    was: bool,
}

impl FreeingSpan {
    pub(crate) fn new() -> Self {
        FreeingSpan {
            was: FREEING_SPAN.with(|flag| flag.replace(true)),
        }
    }
}

impl Drop for FreeingSpan {
    fn drop(&mut self) {
        FREEING_SPAN.with(|flag| flag.set(self.was));
    }
}

/// Whether the calling thread is freeing a fetched span now.
#[cfg(test)]
pub(crate) fn freeing_span() -> bool {
    FREEING_SPAN.with(Cell::get)
}

/// Whether a block of `size` bytes the calling thread frees now should be
/// offered to [`keep`]: reuse is on, a read goes, the block is large, and
/// it is a fetched span's. Allocates nothing.
pub fn should_keep(size: usize) -> bool {
    SHELF.should_keep(size)
}

/// Keeps `block` (`usable` bytes) for a later [`take`]; false when it was
/// not kept (the shelf busy, or reuse off), and the caller frees it as
/// usual. When [`KEPT_AT_MOST`] blocks wait, the oldest goes back to the
/// allocator.
///
/// # Safety
/// `block` must be a live block of the allocator that [`enable`] was given,
/// of at least `usable` bytes, which the caller gives up here.
pub unsafe fn keep(block: *mut u8, usable: usize) -> bool {
    // SAFETY: the caller's promise.
    unsafe { SHELF.keep(block, usable) }
}

/// A kept block for an allocation of `size` bytes aligned to `align`: the
/// smallest of at least `size` and at most twice it; null when none fits
/// (or the shelf is busy). Its bytes are what its span held.
pub fn take(size: usize, align: usize) -> *mut u8 {
    SHELF.take(size, align)
}

/// Bytes of the allocations served from kept blocks since the process
/// started.
pub fn handed_out() -> usize {
    SHELF.handed_out.load(Ordering::Relaxed)
}

/// How many blocks are kept now.
pub fn kept_now() -> usize {
    SHELF.kept_now.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use std::alloc::{alloc, dealloc, Layout};
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use super::*;

    const MIB: usize = 1 << 20;

    /// Blocks made by the tests, by address, with their sizes: each test's
    /// shelf gives its blocks back through `release`, which checks that it
    /// made them.
    static MADE: Mutex<BTreeMap<usize, usize>> = Mutex::new(BTreeMap::new());

    fn layout(size: usize) -> Layout {
        Layout::from_size_align(size, 16).unwrap()
    }

    fn block(size: usize) -> *mut u8 {
        // SAFETY: a non-zero size.
        let block = unsafe { alloc(layout(size)) };
        assert!(!block.is_null());
        MADE.lock().unwrap().insert(block as usize, size);
        block
    }

    unsafe fn release(block: *mut u8) {
        let size = MADE.lock().unwrap().remove(&(block as usize));
        let size = size.expect("a block a test made");
        // SAFETY: made by `block` with this layout.
        unsafe { dealloc(block, layout(size)) };
    }

    fn live(blocks: &[*mut u8]) -> usize {
        let made = MADE.lock().unwrap();
        blocks
            .iter()
            .filter(|b| made.contains_key(&(**b as usize)))
            .count()
    }

    /// A shelf of the test's own, turned on, with a read going.
    fn shelf() -> &'static Shelf {
        shelf_of(1 << 30)
    }

    /// ... keeping at most `bytes`.
    fn shelf_of(bytes: usize) -> &'static Shelf {
        let shelf: &'static Shelf = Box::leak(Box::new(Shelf::new(bytes)));
        shelf.release.set(release).unwrap();
        shelf.read_starts();
        shelf
    }

    #[test]
    fn a_kept_block_serves_an_allocation_of_half_its_size_up_and_the_smallest_fits() {
        let shelf = shelf();
        let (six, nine, seventeen) = (block(6 * MIB), block(9 * MIB), block(17 * MIB));
        for (b, size) in [(six, 6), (nine, 9), (seventeen, 17)] {
            // SAFETY: made above, given up here.
            assert!(unsafe { shelf.keep(b, size * MIB) });
        }
        assert_eq!(shelf.kept_now.load(Ordering::Relaxed), 3);
        assert!(
            shelf.take(KEPT_FROM - 1, 8).is_null(),
            "too small to be served"
        );
        assert!(
            shelf.take(2 * MIB, 8).is_null(),
            "under half of every block"
        );
        assert!(
            shelf.take(4 * MIB, 1 << 30).is_null(),
            "no block so aligned"
        );
        assert_eq!(shelf.take(4 * MIB, 8), six, "the smallest that fits");
        assert_eq!(shelf.take(8 * MIB, 8), nine);
        assert!(shelf.take(18 * MIB, 8).is_null(), "larger than every block");
        assert_eq!(shelf.take(17 * MIB, 8), seventeen);
        assert_eq!(shelf.kept_now.load(Ordering::Relaxed), 0);
        assert_eq!(shelf.handed_out.load(Ordering::Relaxed), 29 * MIB);
        for b in [six, nine, seventeen] {
            // SAFETY: handed out above, no one's now.
            unsafe { release(b) };
        }
    }

    #[test]
    fn the_oldest_block_goes_back_when_the_shelf_is_full_and_all_when_the_last_read_ends() {
        let shelf = shelf();
        shelf.read_starts(); // a second read
        let blocks: Vec<*mut u8> = (0..KEPT_AT_MOST + 2)
            .map(|i| block((2 + i) * MIB))
            .collect();
        for (i, &b) in blocks.iter().enumerate() {
            // SAFETY: made above, given up here.
            assert!(unsafe { shelf.keep(b, (2 + i) * MIB) });
        }
        assert_eq!(shelf.kept_now.load(Ordering::Relaxed), KEPT_AT_MOST);
        assert_eq!(live(&blocks[..2]), 0, "the two oldest went back");
        assert_eq!(live(&blocks[2..]), KEPT_AT_MOST);
        shelf.read_ends();
        assert_eq!(live(&blocks), KEPT_AT_MOST, "a read still goes");
        shelf.read_ends();
        assert_eq!(shelf.kept_now.load(Ordering::Relaxed), 0);
        assert_eq!(live(&blocks), 0, "every kept block went back");
    }

    #[test]
    fn the_oldest_blocks_go_back_to_stay_within_the_bytes_kept_and_a_larger_block_is_not_kept() {
        let shelf = shelf_of(20 * MIB);
        let blocks: Vec<*mut u8> = [6, 9, 4, 8, 21].iter().map(|m| block(m * MIB)).collect();
        for (&b, m) in blocks[..4].iter().zip([6, 9, 4, 8]) {
            // SAFETY: made above, given up here.
            assert!(unsafe { shelf.keep(b, m * MIB) });
        }
        // 6 + 9 + 4 = 19 MiB; the 8 MiB block sent the 6 and the 9 back.
        assert_eq!(live(&blocks[..2]), 0);
        assert_eq!(shelf.kept_now.load(Ordering::Relaxed), 2);
        // SAFETY: made above; refused, so still the caller's.
        assert!(
            !unsafe { shelf.keep(blocks[4], 21 * MIB) },
            "over the bound alone"
        );
        assert_eq!(shelf.kept_now.load(Ordering::Relaxed), 2);
        shelf.read_ends();
        assert_eq!(live(&blocks[..4]), 0);
        // SAFETY: never kept.
        unsafe { release(blocks[4]) };
    }

    #[test]
    fn only_a_large_span_freed_while_a_read_goes_is_offered() {
        let off = Box::leak(Box::new(Shelf::new(1 << 30)));
        off.read_starts();
        let _freeing = FreeingSpan::new();
        assert!(!off.should_keep(4 * MIB), "reuse not turned on");
        drop(_freeing);
        let shelf = shelf();
        assert!(!shelf.should_keep(4 * MIB), "not a span");
        {
            let _freeing = FreeingSpan::new();
            assert!(shelf.should_keep(4 * MIB));
            assert!(!shelf.should_keep(KEPT_FROM - 1), "too small");
            {
                let _inner = FreeingSpan::new();
            }
            assert!(
                shelf.should_keep(4 * MIB),
                "an inner guard restores the flag"
            );
        }
        assert!(!shelf.should_keep(4 * MIB), "the guard is gone");
        shelf.read_ends();
        let _freeing = FreeingSpan::new();
        assert!(!shelf.should_keep(4 * MIB), "the read ended");
    }

    #[test]
    fn a_block_freed_after_the_last_read_ended_is_not_kept() {
        let shelf = shelf();
        shelf.read_ends();
        let b = block(4 * MIB);
        // SAFETY: made above; refused, so still the caller's.
        assert!(!unsafe { shelf.keep(b, 4 * MIB) });
        assert_eq!(shelf.kept_now.load(Ordering::Relaxed), 0);
        // SAFETY: never kept.
        unsafe { release(b) };
    }

    #[test]
    fn a_busy_shelf_is_skipped_not_waited_for() {
        let shelf = shelf();
        let b = block(4 * MIB);
        shelf.busy.store(true, Ordering::Release);
        // SAFETY: made above; refused, so still the caller's.
        assert!(!unsafe { shelf.keep(b, 4 * MIB) });
        shelf.busy.store(false, Ordering::Release);
        // SAFETY: as above, kept now.
        assert!(unsafe { shelf.keep(b, 4 * MIB) });
        shelf.busy.store(true, Ordering::Release);
        assert!(shelf.take(4 * MIB, 8).is_null());
        shelf.busy.store(false, Ordering::Release);
        assert_eq!(shelf.take(4 * MIB, 8), b);
        // SAFETY: handed out above.
        unsafe { release(b) };
    }
}
