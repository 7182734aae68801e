//! The extension's allocator: mimalloc, set up for reads that allocate and
//! free hundreds of MB of buffers.
//!
//! - Why not glibc: it hands large blocks back to the kernel on free, so
//!   every read paid to fault in and zero fresh pages (half the CPU time of a
//!   local read, measured with perf). mimalloc keeps and reuses them.
//! - Freed memory is kept (see [`configure`]).
//! - No transparent huge pages for its memory (see [`set_up_at_load`]).
//! - Fresh pages of decoded output are faulted in a block at a time
//!   ([`Prefaulting`]).
//! - A fetched span's block, once decoded, goes to the next large
//!   allocation of about its size ([`fastingest::reuse`]).
//!
//! The first two are mimalloc's own options, so `MIMALLOC_PURGE_DELAY` and
//! `MIMALLOC_ALLOW_THP` in the environment still decide when set;
//! `FASTINGEST_PREFAULT=0` turns the third off, `FASTINGEST_REUSE_SPANS=0`
//! the fourth.

use std::alloc::{GlobalAlloc, Layout};

use fastingest::{memory, reuse};
use mimalloc::MiMalloc;
use pyo3::prelude::*;

#[global_allocator]
static ALLOCATOR: Prefaulting = Prefaulting;

/// mimalloc, with the fresh pages of mid-sized blocks allocated on the
/// decode threads faulted in at once (see [`fastingest::memory`]; turned
/// off by `FASTINGEST_PREFAULT=0`), and decoded spans' blocks reused (see
/// [`fastingest::reuse`]; off with `FASTINGEST_REUSE_SPANS=0`).
struct Prefaulting;

// SAFETY: every block is mimalloc's; `prefault` only faults in pages of the
// block mimalloc just returned, leaving their bytes as they were. A kept
// span's block is handed out whole to one allocation at most once between
// frees (see `reuse::take`), is at least as large and as aligned as asked,
// and is later freed or resized by mimalloc, which knows its true size.
unsafe impl GlobalAlloc for Prefaulting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= reuse::KEPT_FROM {
            let kept = reuse_kept(layout);
            if !kept.is_null() {
                // Written by the fetch: its pages are resident already.
                return kept;
            }
        }
        let block = unsafe { MiMalloc.alloc(layout) };
        if memory::should_prefault(layout.size()) {
            unsafe { memory::prefault(block, layout.size()) };
        }
        block
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let block = unsafe { MiMalloc.alloc_zeroed(layout) };
        if memory::should_prefault(layout.size()) {
            unsafe { memory::prefault(block, layout.size()) };
        }
        block
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // Only large blocks go further than a compare (every free passes here).
        if layout.size() >= reuse::KEPT_FROM
            && reuse::should_keep(layout.size())
            && unsafe { keep_for_reuse(ptr) }
        {
            return;
        }
        unsafe { MiMalloc.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let block = unsafe { MiMalloc.realloc(ptr, layout, new_size) };
        // The bytes kept were written; only the new tail may be fresh.
        if !block.is_null() && new_size > layout.size() && memory::should_prefault(new_size) {
            let old = layout.size();
            unsafe { memory::prefault(block.add(old), new_size - old) };
        }
        block
    }
}

// The reuse paths are out of line: inlined into the allocator's methods,
// rustc 1.95's LLVM crashed compiling the crate (SIGILL and SIGSEGV in code
// generation, every time).

/// A kept span's block for `layout`, or null.
#[inline(never)]
fn reuse_kept(layout: Layout) -> *mut u8 {
    reuse::take(layout.size(), layout.align())
}

/// Offers a freed span's block for reuse; false when it was not kept.
///
/// # Safety
/// `ptr` must be a live mimalloc block the caller is freeing.
#[inline(never)]
unsafe fn keep_for_reuse(ptr: *mut u8) -> bool {
    // SAFETY: a live mimalloc block.
    let usable = unsafe { libmimalloc_sys::mi_usable_size(ptr.cast()) };
    // SAFETY: the caller gives the block up.
    unsafe { reuse::keep(ptr, usable) }
}

/// Gives a kept block back to mimalloc.
///
/// # Safety
/// `ptr` must be a mimalloc block no one uses.
unsafe fn release_kept(ptr: *mut u8) {
    // SAFETY: the caller's promise.
    unsafe { libmimalloc_sys::mi_free(ptr.cast()) }
}

// Options that `libmimalloc-sys` names no constant for: their values in the
// `mi_option_t` enum of mimalloc 3.x, which it builds. (The tests check that
// each reads what its environment variable set.)
/// `mi_option_purge_delay`.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
/// `mi_option_allow_thp`.
const MI_OPTION_ALLOW_THP: libmimalloc_sys::mi_option_t = 43;

/// Sets the allocator up as the module loads.
///
/// Decoded spans' blocks are reused unless `FASTINGEST_REUSE_SPANS=0`.
///
/// With mimalloc's default 10 ms purge delay, buffers freed while a read is
/// still going are returned to the kernel and faulted in again (a cold read
/// measured 3x slower). Keep freed memory for reuse unless the user set
/// `MIMALLOC_PURGE_DELAY` (milliseconds; -1 never returns memory).
pub(crate) fn configure() {
    if std::env::var_os("FASTINGEST_REUSE_SPANS").is_none_or(|v| v != "0") {
        reuse::enable(release_kept);
    }
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets a process-wide allocator option; no memory is touched.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    }
}

/// Runs when the extension is loaded, before it allocates anything.
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static SET_UP_AT_LOAD: extern "C" fn() = set_up_at_load;

/// Keeps mimalloc from asking for transparent huge pages (`MADV_HUGEPAGE`)
/// for the memory it maps, unless `MIMALLOC_ALLOW_THP` is set (`=1` asks
/// for them again).
///
/// Why: a read in a fresh process touches a few hundred MB of new memory.
/// On a VM that hands free memory back to its host (free page reporting),
/// a new 2 MiB page is most often carved from memory the host took back and
/// must back again, in one fault, so the same read had two modes. Fresh
/// process per read, 128 MB files, medians (min-max) in ms, polars alongside:
/// from MinIO 122 (121-138) with 4 KiB pages against 206 (142-229) with
/// huge pages (polars 121); after another process freed 600 MB, 132
/// (115-151) against 281 (231-451) (polars 124); local and cold, 109
/// (96-119) against 103 (96-236) (polars 129). Steady reads in one process
/// take the same time either way, with 10-17 % less memory resident. The
/// cost: a fresh read of a ~20 MB local file takes more, small, faults:
/// 26-37 ms against 12-23 ms with huge pages (polars 14-21).
///
/// It must run before the first allocation: mimalloc maps its first arena
/// then, and advises huge pages for all of it. Setting the option before
/// mimalloc's own set-up would make that set-up turn huge pages off for the
/// whole process (`PR_SET_THP_DISABLE`), which is not ours to decide; so its
/// set-up is run first.
#[cfg(target_os = "linux")]
extern "C" fn set_up_at_load() {
    // SAFETY: mimalloc's set-up is idempotent and meant to be called early;
    // `getenv` reads the environment without allocating; setting an option
    // touches no memory.
    unsafe {
        libmimalloc_sys::mi_process_init();
        if libc::getenv(c"MIMALLOC_ALLOW_THP".as_ptr()).is_null() {
            libmimalloc_sys::mi_option_set(MI_OPTION_ALLOW_THP, 0);
        }
        let prefault = libc::getenv(c"FASTINGEST_PREFAULT".as_ptr());
        if !prefault.is_null() && *prefault == b'0' as libc::c_char {
            memory::set_prefault(false);
        }
    }
}

/// The allocator's purge delay, for tests.
#[pyfunction]
pub(crate) fn _allocator_purge_delay() -> i64 {
    // SAFETY: reads a process-wide allocator option.
    unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) as i64 }
}

/// Whether the allocator asks for transparent huge pages, for tests.
#[pyfunction]
pub(crate) fn _allocator_huge_pages() -> bool {
    // SAFETY: reads a process-wide allocator option.
    unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_ALLOW_THP) != 0 }
}

/// Bytes of allocations served from decoded spans' blocks so far, and how
/// many such blocks wait now, for tests.
#[pyfunction]
pub(crate) fn _allocator_reuse() -> (usize, usize) {
    (reuse::handed_out(), reuse::kept_now())
}

/// Whether decoded spans' blocks are reused, for tests.
#[pyfunction]
pub(crate) fn _allocator_reuses_spans() -> bool {
    reuse::enabled()
}

/// Whether the allocator faults in the fresh pages of decoded output ahead,
/// for tests.
#[pyfunction]
pub(crate) fn _allocator_prefaults() -> bool {
    memory::prefault_enabled()
}
