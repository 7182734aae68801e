//! Faulting in the fresh pages of decoded output ahead, for an allocator to
//! call (the Python extension's does; a Rust service may wire it into its
//! own).
//!
//! Why: a read in a fresh process writes its output into memory the process
//! has never touched, and each 4 KiB page then costs a trap into the kernel
//! on first write (1.5-1.7 µs a page on this VM, measured; a 128 MB table is
//! 33 000 of them). `madvise(MADV_POPULATE_WRITE)` faults a block in a few
//! calls, at 1.0 µs a page. Each call holds the process's memory-map lock,
//! so the calls are short (32 pages), and none is made while the caller
//! maps much memory beside the read ([`PrefaultPaused`]). Only pages that are not yet resident are
//! populated ([`mincore`] first), so a process reusing freed memory pays
//! next to nothing (0.07 ms to ask about 128 MB).
//!
//! Only blocks allocated on the decode threads are faulted in: those are
//! output and page buffers, written through soon after. A fetch buffer,
//! filled by `pread` or the network on another thread, is left to fault as
//! the bytes arrive, in parallel with the I/O (faulting it in first delayed
//! the I/O: cold local reads took 5 % longer).
//!
//! [`mincore`]: https://man7.org/linux/man-pages/man2/mincore.2.html

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Blocks from this size up are faulted in ahead.
pub const PREFAULT_FROM: usize = 256 << 10;

/// ... and up to this size: a larger block is more likely a generous
/// reservation, most of it never written.
pub const PREFAULT_UP_TO: usize = 64 << 20;

/// Whether faulting in ahead is on: off once the kernel refused it (before
/// Linux 5.14), or when [`set_prefault`] turned it off.
static PREFAULT: AtomicBool = AtomicBool::new(cfg!(target_os = "linux"));

/// Turns faulting in ahead on or off for the process (the Python extension
/// turns it off when `FASTINGEST_PREFAULT=0`).
pub fn set_prefault(on: bool) {
    PREFAULT.store(on && cfg!(target_os = "linux"), Ordering::Relaxed);
}

/// Whether blocks are faulted in ahead.
pub fn prefault_enabled() -> bool {
    PREFAULT.load(Ordering::Relaxed) && PAUSES.load(Ordering::Relaxed) == 0
}

/// How many [`PrefaultPaused`] guards are alive.
static PAUSES: AtomicUsize = AtomicUsize::new(0);

/// While alive, blocks are not faulted in ahead: pages fault as they are
/// written instead.
///
/// For a caller about to map much memory itself, beside a read: populating
/// holds the process's memory-map lock, which every `mmap` must wait for,
/// while a page fault does not take it. A fresh process's first read
/// imports pyarrow beside it (its libraries are mapped one by one); with
/// faulting ahead on, that import waited for the lock hundreds of times and
/// the read took 121-163 ms against 103-118 without (the suite's `decimal`
/// file from the page cache, 6 interleaved processes each).
#[must_use = "faulting ahead resumes when the guard is dropped"]
pub struct PrefaultPaused(());

impl PrefaultPaused {
    /// Pauses faulting ahead until the guard is dropped.
    pub fn new() -> Self {
        PAUSES.fetch_add(1, Ordering::Relaxed);
        PrefaultPaused(())
    }
}

impl Default for PrefaultPaused {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for PrefaultPaused {
    fn drop(&mut self) {
        PAUSES.fetch_sub(1, Ordering::Relaxed);
    }
}

thread_local! {
    /// Set on the decode threads (`pipeline::decode_threads`).
    static DECODE_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is one of the decode threads: what it
/// allocates is decoded output, written through soon after. Reads a
/// thread-local and allocates nothing, so an allocator may call it.
pub fn on_decode_thread() -> bool {
    DECODE_THREAD.with(Cell::get)
}

/// Marks the calling thread as a decode thread, for the rest of its life.
pub(crate) fn mark_decode_thread() {
    DECODE_THREAD.with(|flag| flag.set(true));
}

/// Runs `reserve` as if off the decode threads: for a buffer sized to an
/// upper bound of what it will hold, whose pages past what is written should
/// stay unbacked rather than be faulted in ahead.
pub(crate) fn reserve_unfaulted<R>(reserve: impl FnOnce() -> R) -> R {
    let was = DECODE_THREAD.with(|flag| flag.replace(false));
    let reserved = reserve();
    DECODE_THREAD.with(|flag| flag.set(was));
    reserved
}

/// The system's page size, looked up once (`sysconf` allocates nothing).
#[cfg(target_os = "linux")]
fn page_size() -> usize {
    static PAGE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    match PAGE.load(Ordering::Relaxed) {
        0 => {
            // SAFETY: `sysconf` only reads a system setting.
            let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
            let page = usize::try_from(page)
                .ok()
                .filter(|p| p.is_power_of_two())
                .unwrap_or(4096);
            PAGE.store(page, Ordering::Relaxed);
            page
        }
        known => known,
    }
}

/// Whether a block of `size` bytes, allocated now on this thread, should be
/// faulted in ahead. Allocates nothing: an allocator may call it.
pub fn should_prefault(size: usize) -> bool {
    worth_prefaulting(size) && on_decode_thread()
}

/// Whether faulting in ahead is on and `size` bytes are in the range it is
/// done for, whichever thread asks: for a caller that knows the bytes are
/// decoded output about to be written.
pub(crate) fn worth_prefaulting(size: usize) -> bool {
    (PREFAULT_FROM..=PREFAULT_UP_TO).contains(&size) && prefault_enabled()
}

/// Whether a buffer of `size` bytes allocated on this thread, which its
/// caller will write whole (decoded output sized from counts the pages
/// back), should be faulted in ahead: as [`should_prefault`], however large
/// it is. The allocator stops at [`PREFAULT_UP_TO`] because it cannot tell
/// a buffer about to be written from a generous reservation; a row group of
/// 20 M rows has columns of 80-160 MB, and their pages faulted one at a time
/// as they were written.
pub(crate) fn should_prefault_written(size: usize) -> bool {
    size >= PREFAULT_FROM && prefault_enabled() && on_decode_thread()
}

/// Faults in the pages of `[block, block + size)` that are not resident,
/// without changing what they hold. Allocates nothing.
///
/// # Safety
/// The range must lie within one live allocation of the caller's (so no
/// other mapping's pages are touched).
#[cfg(target_os = "linux")]
pub unsafe fn prefault(block: *mut u8, size: usize) {
    /// Not in every `libc` release's constants; the kernel's value.
    const MADV_POPULATE_WRITE: libc::c_int = 23;
    /// Pages asked about per `mincore` call (the answer lives on the stack).
    const ASKED: usize = 1024;
    /// Pages populated per `madvise` call. The call holds the process's
    /// memory-map lock while it faults its pages in (~1 µs each), and a
    /// thread mapping memory meanwhile waits for it, as do the faults
    /// queued behind that thread: a fresh process's first read, populating
    /// 4 MiB a call while `import pyarrow` mapped its libraries beside it,
    /// held that import up (27 waits for the lock in one read, perf
    /// `sched_switch`).
    const POPULATED_PER_CALL: usize = 32;
    if block.is_null() {
        return;
    }
    let page = page_size();
    // Whole pages inside the block only: the partial ones at its ends may
    // belong to a neighbour, which faults them itself.
    let start = (block as usize).next_multiple_of(page);
    let end = (block as usize + size) / page * page;
    let mut resident = [0u8; ASKED];
    let mut at = start;
    while at < end {
        let len = (end - at).min(ASKED * page);
        let pages = &mut resident[..len / page];
        // SAFETY: `[at, at + len)` lies within the caller's live block;
        // `mincore` only reads the page tables into `pages`.
        if unsafe { libc::mincore(at as *mut libc::c_void, len, pages.as_mut_ptr()) } != 0 {
            return;
        }
        let missing = |r: &u8| r & 1 == 0;
        if let (Some(first), Some(last)) = (
            pages.iter().position(missing),
            pages.iter().rposition(missing),
        ) {
            let mut from = at + first * page;
            let until = at + (last + 1) * page;
            while from < until {
                let step = (until - from).min(POPULATED_PER_CALL * page);
                // SAFETY: as above; populating faults the pages in writable
                // and leaves what they hold as it was.
                let refused =
                    unsafe { libc::madvise(from as *mut libc::c_void, step, MADV_POPULATE_WRITE) }
                        != 0;
                if refused && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
                    // A kernel without it: stop asking.
                    set_prefault(false);
                    return;
                }
                from += step;
            }
        }
        at += len;
    }
}

/// Faulting in ahead needs Linux: elsewhere, pages fault as written.
///
/// # Safety
/// None needed; kept `unsafe` to match the Linux version.
#[cfg(not(target_os = "linux"))]
pub unsafe fn prefault(_block: *mut u8, _size: usize) {}

/// Gives the whole pages inside `buf` back to the kernel (`MADV_DONTNEED`):
/// they no longer count as resident, and read as zero if touched again. The
/// pages at either end that `buf` shares with its neighbours are kept.
pub(crate) fn give_back_pages(buf: &mut [u8]) {
    #[cfg(target_os = "linux")]
    {
        let page = page_size();
        let start = buf.as_mut_ptr() as usize;
        let first = start.div_ceil(page) * page;
        let end = (start + buf.len()) / page * page;
        if end > first {
            // SAFETY: whole pages within `buf`, which this thread holds
            // mutably; private anonymous memory reads as zero afterwards.
            unsafe { libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_DONTNEED) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = buf;
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn resident_pages(at: *mut u8, len: usize) -> usize {
        let mut pages = vec![0u8; len / page_size()];
        // SAFETY: `at` is a live mapping of `len` bytes.
        assert_eq!(
            unsafe { libc::mincore(at.cast(), len, pages.as_mut_ptr()) },
            0
        );
        pages.iter().filter(|r| *r & 1 == 1).count()
    }

    /// Held by the tests that read or change whether faulting ahead is on
    /// (a process-wide setting), so that none sees another's change.
    static PREFAULT_SETTING: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn setting() -> std::sync::MutexGuard<'static, ()> {
        PREFAULT_SETTING.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[test]
    fn prefault_makes_a_fresh_mapping_resident_and_keeps_its_bytes() {
        let _setting = setting();
        let len = 8 << 20;
        // SAFETY: a fresh private anonymous mapping, unmapped below.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(at, libc::MAP_FAILED);
        let at = at.cast::<u8>();
        // One page written before: it must keep its byte.
        // SAFETY: inside the mapping.
        unsafe { *at.add(5 * 4096 + 7) = 42 };
        let page = page_size();
        assert_eq!(resident_pages(at, len), 1);
        // SAFETY: the range is the mapping.
        unsafe { prefault(at, len) };
        if prefault_enabled() {
            assert_eq!(resident_pages(at, len), len / page);
        }
        // SAFETY: inside the mapping.
        let bytes = unsafe { std::slice::from_raw_parts(at, len) };
        assert_eq!(bytes[5 * 4096 + 7], 42);
        assert_eq!(bytes.iter().filter(|b| **b != 0).count(), 1);
        // SAFETY: unmaps the mapping made above.
        unsafe { libc::munmap(at.cast(), len) };
    }

    #[test]
    fn only_mid_sized_blocks_on_decode_threads_are_prefaulted() {
        let _setting = setting();
        // The test's own thread is not a decode thread.
        assert!(!on_decode_thread());
        assert!(!should_prefault(1 << 20));
        // Marked, a mid-sized block is (when the kernel allows), a small or
        // huge one never; nor one reserved to an upper bound.
        std::thread::spawn(|| {
            mark_decode_thread();
            assert_eq!(should_prefault(1 << 20), prefault_enabled());
            assert!(!should_prefault(PREFAULT_FROM - 1));
            assert!(!should_prefault(PREFAULT_UP_TO + 1));
            assert!(!reserve_unfaulted(|| should_prefault(1 << 20)));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn faulting_ahead_pauses_while_any_guard_lives() {
        let _setting = setting();
        let on = prefault_enabled();
        std::thread::spawn(move || {
            mark_decode_thread();
            let first = PrefaultPaused::new();
            assert!(!prefault_enabled());
            assert!(!should_prefault(1 << 20));
            let second = PrefaultPaused::new();
            drop(first);
            // One guard is still alive.
            assert!(!should_prefault(1 << 20));
            drop(second);
            assert_eq!(should_prefault(1 << 20), on);
        })
        .join()
        .unwrap();
        assert_eq!(prefault_enabled(), on);
    }

    #[test]
    fn the_whole_pages_inside_a_buffer_are_given_back_and_its_ends_kept() {
        let page = page_size();
        let mut buf = vec![7u8; 9 * page];
        // A slice that starts and ends inside pages, with whole pages between.
        let base = buf.as_mut_ptr() as usize;
        let (from, to) = (page / 2, 8 * page + page / 2);
        let first = (base + from).div_ceil(page) * page - base;
        let last = (base + to) / page * page - base;
        assert!(last - first >= 7 * page, "{first}..{last}");
        let aligned = (base + first) as *mut u8;
        assert_eq!(resident_pages(aligned, last - first), (last - first) / page);
        give_back_pages(&mut buf[from..to]);
        assert_eq!(resident_pages(aligned, last - first), 0, "given back");
        assert!(buf[first..last].iter().all(|&b| b == 0), "and read as zero");
        assert!(
            buf[..first].iter().chain(&buf[last..]).all(|&b| b == 7),
            "the pages at the ends are kept"
        );
    }
}
